/* SPDX-License-Identifier: BSD-3-Clause */
/* call_withdraw.c - lua/withdraw.lua's entry (calls.h). */
#include "calls.h"
#include "quorum.h"

void dl_call_withdraw(dl_call_t *c, const dl_caller_t *who, const dl_withdraw_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_WITHDRAW, who);
    c->arg.withdraw = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 mode, 4 registration id */
    const dl_withdraw_args_t *a = &c->arg.withdraw;
    dl_wire_lock(w, 1);
    dl_wire_put(w, &a->mode, 1);
    dl_wire_num(w, a->regid);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* 1 a hold released, 2 a queue place withdrawn, 0 nothing */
    c->reply.withdraw.result = (int)dl_reply_int(r);
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return c->reply.withdraw.result >= 1;
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .merge = dl_quorum_pick };

const dl_script_entry_t dl_entry_withdraw = { .wire = wire, .parse = parse, .quorum = &quorum };
