/* SPDX-License-Identifier: BSD-3-Clause */
/* call_cond_signal.c - lua/cond_signal.lua's entry (calls.h). */
#include "call_cond_signal.h"
#include "calls.h"
#include "cond_wire.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_cond_signal(dl_call_t *c, const dl_caller_t *who, const dl_cond_signal_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_COND_SIGNAL, who);
    DL_ARGS(c, cond_signal) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 's' the oldest waiter | 'a' every waiter */
    dl_wire_cond(w);
    dl_wire_put(w, DL_ARGS(c, cond_signal).all ? "a" : "s", 1);
}

static int parse(dl_call_t *c, redisReply *r)
{
    DL_REPLY(c, cond_signal).woken = dl_reply_int(r);
    return 0;
}

/* redlock: a signal wakes every waiter.  Independent servers keep no
 * common order of waiters, so one signal run on each would take the
 * oldest waiter of each server, and where that one was woken already by
 * an earlier signal that reached another majority the signal would wake
 * nobody: lost.  Every waiter is registered on a majority and every
 * signal runs on one, so taking them all on each server wakes each waiter
 * that waited (pthreads allows a signal to wake more than one). */
static void prepare(dl_call_t *c)
{
    DL_ARGS(c, cond_signal).all = 1;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, cond_signal).woken >= 0;
}

/* The most any server woke (each wakes its own copies of the same waiters). */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    long long *woken = &DL_REPLY(c, cond_signal).woken;
    *woken = 0;
    for (int i = 0; i < t->nodes; i++)
        if (!t->at[i]->cmd.err && DL_REPLY(t->at[i], cond_signal).woken > *woken)
            *woken = DL_REPLY(t->at[i], cond_signal).woken;
}

static const dl_quorum_op_t quorum = { .prepare = prepare, .said_yes = said_yes, .merge = merge };

const dl_script_entry_t dl_entry_cond_signal = { .wire = wire, .parse = parse, .quorum = &quorum };
