/* SPDX-License-Identifier: BSD-3-Clause */
/* call_withdraw.c - lua/withdraw.lua's entry (calls.h). */
#include "call_withdraw.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_withdraw(dl_call_t *c, const dl_caller_t *who, const dl_withdraw_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_WITHDRAW, who);
    DL_ARGS(c, withdraw) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 mode, 4 registration id, 5 (redlock) the
     * fence of an acquisition that counted elsewhere */
    const dl_withdraw_args_t *a = &DL_ARGS(c, withdraw);
    dl_wire_lock(w, 1);
    dl_wire_put(w, &a->mode, 1);
    dl_wire_num(w, a->regid);
    if (a->older)
        dl_wire_num(w, a->older);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* 1 a hold released, 2 a queue place withdrawn, 0 nothing */
    DL_REPLY(c, withdraw).result = (int)dl_reply_int(r);
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, withdraw).result >= 1;
}

/* A server that failed gets the withdrawal in the background, looked at
 * twice: the request may still wait in a connection the server serves
 * after the new one. */
static void owe(const dl_call_t *c, const dl_tally_t *t)
{
    (void)c;
    dl_quorum_owe_failed(t, 0, 0, 2);
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .owe = owe, .merge = dl_quorum_pick };

const dl_script_entry_t dl_entry_withdraw = { .wire = wire, .parse = parse, .quorum = &quorum };
