/* SPDX-License-Identifier: BSD-3-Clause */
/* call_acquire.c - lua/acquire.lua's entry: its ARGV, its reply, and its
 * majority on redlock:// (calls.h). */
#include "calls.h"
#include "quorum.h"

void dl_call_acquire(dl_call_t *c, const dl_caller_t *who, const dl_acquire_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_ACQUIRE, who);
    c->arg.acquire = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 mode, 4 lease, 5 info, 6 enqueue, 7 regid,
     * 8 waiter ttl, 9 claim, 10 (redlock) writer mark ttl */
    const dl_acquire_args_t *a = &c->arg.acquire;
    dl_wire_lock(w, 1);
    dl_wire_put(w, &a->mode, 1);  /* (the call holds its arguments) */
    dl_wire_num(w, a->lease_ms);
    dl_wire_put(w, a->info, a->infolen);
    dl_wire_put(w, a->enqueue ? "1" : "0", 1);
    dl_wire_num(w, a->regid);
    dl_wire_num(w, a->waiter_ttl_ms);
    dl_wire_num(w, a->claim_ms);
    if (a->redlock)
        dl_wire_num(w, a->writer_mark_ms);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1, fence, ownerdead, waiters, claimed, was} acquired; {0, pttl} busy */
    dl_acquire_reply_t *x = &c->reply.acquire;
    x->got = (int)dl_reply_elem(r, 0);
    x->fence = (uint64_t)dl_reply_elem(r, 1);
    x->pttl_ms = dl_reply_elem(r, 1);
    x->dead = dl_reply_elem(r, 2) == 1;
    x->waiters = dl_reply_elem(r, 3);
    x->claimed = dl_reply_elem(r, 4) == 1;
    x->was = dl_reply_elem(r, 5) > 0 ? (uint64_t)dl_reply_elem(r, 5) : 0;
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return c->reply.acquire.got == 1;
}

/* The withdraw script with the acquisition's keys, token, mode and
 * registration id: undoes exactly that grant on the servers where it may
 * have happened (the fence would not name it: each server gave its own). */
static void undo(const dl_call_t *c, const dl_tally_t *t)
{
    dl_call_t w[DL_MAX_ENDPOINTS];
    dl_withdraw_args_t a = { c->arg.acquire.mode, c->arg.acquire.regid };
    for (int i = 0; i < t->nodes; i++)
        dl_call_withdraw(&w[i], &c->who, &a);
    dl_quorum_on(t->conn, w, t->nodes, t->granted);
}

/* Granted by a majority within the lease's validity, with the largest
 * fence (the caller keeps it) and what any granting server said of a dead
 * holder, waiters, a claim; else undone where it may have run, and busy. */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    /* Validity: the lease, less the time spent asking and 1% + 2 ms for the
     * servers' clocks running at different rates. */
    unsigned long lease = c->arg.acquire.lease_ms;
    uint64_t drift = lease / 100 + 2;
    dl_acquire_reply_t *out = &c->reply.acquire;
    if (t->yes >= t->need && t->elapsed + drift < lease) {
        *out = t->at[t->firstyes]->reply.acquire;
        out->fence = 0, out->dead = 0, out->waiters = 0, out->claimed = 0;
        out->was = 0;             /* (each server numbers holds itself) */
        for (int i = 0; i < t->nodes; i++) {
            const dl_acquire_reply_t *r = &t->at[i]->reply.acquire;
            if (t->at[i]->cmd.err || r->got != 1)
                continue;
            out->fence = r->fence > out->fence ? r->fence : out->fence;
            out->dead |= r->dead;
            out->waiters = r->waiters > out->waiters ? r->waiters : out->waiters;
            out->claimed |= r->claimed;
        }
        return;
    }
    if (t->yes)
        undo(c, t);
    /* Busy: report the shortest wait a busy server gave. */
    *out = t->at[t->firstno >= 0 ? t->firstno : t->firstyes]->reply.acquire;
    out->got = 0;
    if (t->firstno < 0)
        out->pttl_ms = 1;
}

static const dl_quorum_op_t quorum = {
    .said_yes = said_yes,
    .merge = merge,
    .undo = undo,
};

const dl_script_entry_t dl_entry_acquire = { .wire = wire, .parse = parse, .quorum = &quorum };
