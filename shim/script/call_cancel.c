/* SPDX-License-Identifier: BSD-3-Clause */
/* call_cancel.c - lua/cancel.lua's entry (calls.h). */
#include "call_cancel.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_cancel(dl_call_t *c, const dl_caller_t *who, const dl_cancel_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_CANCEL, who);
    DL_ARGS(c, cancel) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 mode, 4 registration id, 5 (redlock) 'm' */
    const dl_cancel_args_t *a = &DL_ARGS(c, cancel);
    dl_wire_lock(w, 1);
    dl_wire_put(w, &a->mode, 1);
    dl_wire_num(w, a->regid);
    if (a->clear_mark)
        dl_wire_put(w, "m", 1);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1, fence, ownerdead, waiters} granted meanwhile; {0} withdrawn */
    dl_cancel_reply_t *x = &DL_REPLY(c, cancel);
    x->granted = (int)dl_reply_elem(r, 0);
    x->fence = (uint64_t)dl_reply_elem(r, 1);
    x->dead = dl_reply_elem(r, 2) == 1;
    x->waiters = dl_reply_elem(r, 3);
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, cancel).granted == 1;
}

/* Nobody queues with redlock: a grant counts only from a majority. */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    dl_quorum_pick(c, t);
    if (t->yes < t->need)
        DL_REPLY(c, cancel).granted = 0;
}

static const dl_quorum_op_t quorum = { .said_yes = said_yes, .merge = merge };

const dl_script_entry_t dl_entry_cancel = { .wire = wire, .parse = parse, .quorum = &quorum };
