/* SPDX-License-Identifier: BSD-3-Clause */
/* call_withdraw_all.c - lua/withdraw_all.lua's entry (calls.h).  Sent only
 * as the undo of a lock-all request, behind it on its connection (on
 * redlock://, each server's copy behind that server's request: the
 * acquire_all entry's undo_for), never run as a call of its own on
 * several servers: no merge. */
#include "call_withdraw_all.h"
#include "calls.h"
#include "dl_script_list.h"

void dl_call_withdraw_all(dl_call_t *c, const dl_caller_t *who, const dl_withdraw_all_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_WITHDRAW_ALL, who);
    DL_ARGS(c, withdraw_all) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* KEYS: the first lock's six; 1 prefix, 2 token, 3 regid, 4 the locks */
    const dl_withdraw_all_args_t *a = &DL_ARGS(c, withdraw_all);
    dl_wire_lock(w, 1);
    dl_wire_num(w, a->regid);
    dl_wire_put(w, a->list, a->listlen);
}

static int parse(dl_call_t *c, redisReply *r)
{
    DL_REPLY(c, withdraw_all).released = dl_reply_int(r);
    return 0;
}

const dl_script_entry_t dl_entry_withdraw_all = { .wire = wire, .parse = parse };
