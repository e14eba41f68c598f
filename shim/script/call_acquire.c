/* SPDX-License-Identifier: BSD-3-Clause */
/* call_acquire.c - lua/acquire.lua's entry: its ARGV, its reply, and its
 * majority on redlock:// (calls.h). */
#include "call_acquire.h"
#include "call_withdraw.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_acquire(dl_call_t *c, const dl_caller_t *who, const dl_acquire_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_ACQUIRE, who);
    DL_ARGS(c, acquire) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 mode, 4 lease, 5 info, 6 enqueue, 7 regid,
     * 8 waiter ttl, 9 claim, 10 (redlock) writer mark ttl ('' elsewhere
     * when 11 follows), 11 (optional) the fence of a hold whose death the
     * caller was told ('' when 12 follows), 12 (redlock, optional) the
     * fence of the caller's last hold told EOWNERDEAD, released since */
    const dl_acquire_args_t *a = &DL_ARGS(c, acquire);
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
    else if (a->told)
        dl_wire_put(w, "", 0);
    if (a->told)
        dl_wire_num(w, a->told);
    else if (a->redlock && a->older)
        dl_wire_put(w, "", 0);
    if (a->redlock && a->older)
        dl_wire_num(w, a->older);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1, fence, ownerdead, waiters, claimed, was} acquired; {0, pttl} busy;
     * {3, mark} unrecoverable */
    dl_acquire_reply_t *x = &DL_REPLY(c, acquire);
    x->got = (int)dl_reply_elem(r, 0);
    x->fence = (uint64_t)dl_reply_elem(r, 1);
    x->pttl_ms = dl_reply_elem(r, 1);
    x->dead = dl_reply_elem(r, 2) == 1;
    x->waiters = dl_reply_elem(r, 3);
    x->claimed = dl_reply_elem(r, 4) == 1;
    x->was = dl_reply_elem(r, 5) > 0 ? (uint64_t)dl_reply_elem(r, 5) : 0;
    x->servers = 0;               /* (the quorum's merge sets them) */
    x->mark = x->got == 3 ? (uint64_t)dl_reply_elem(r, 1) : 0;
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, acquire).got == 1;
}

/* The withdrawal of acquisition acq by its registration id (the same on
 * every server, whose fences differ).  older: the fence it got from its
 * quorum when it counted (0: it did not). */
static void withdrawal(dl_call_t *w, const dl_call_t *acq, uint64_t older)
{
    dl_call_withdraw(w, &acq->who, &(dl_withdraw_args_t){
        .mode = DL_ARGS(acq, acquire).mode, .regid = DL_ARGS(acq, acquire).regid, .older = older });
}

/* Each server's undo, which its link writes behind the acquisition should
 * it give up on a stalled server after sending it. */
static void undo_for(dl_call_t *w, const dl_call_t *acq)
{
    withdrawal(w, acq, 0);
}

/* Owes the withdrawal of acq to each server in `owed`: twice, the second
 * look a little after the first answer, since the request may still wait
 * in a connection the server serves after the new one. */
static void owe_withdrawals(const dl_call_t *acq, const dl_tally_t *t, const char *owed,
                            uint64_t older)
{
    dl_call_t w;
    withdrawal(&w, acq, older);
    uint64_t until = dl_quorum_owed_until(t->conn, DL_ARGS(acq, acquire).lease_ms, 2);
    for (int i = 0; i < t->nodes; i++)
        if (owed[i])
            dl_quorum_owe(t->conn, i, &w, 2, until);
}

/* An acquisition that did not count: withdrawn at once from the servers
 * that granted it (all at once), and in the background from those whose
 * answer never came but which were sent it, and from any granting server
 * the withdrawal did not reach. */
static void undo(const dl_call_t *acq, const dl_tally_t *t)
{
    dl_call_t c[DL_MAX_ENDPOINTS];
    char owed[DL_MAX_ENDPOINTS];
    int any = 0;
    for (int i = 0; i < t->nodes; i++) {
        withdrawal(&c[i], acq, 0);
        any |= t->granted[i];
    }
    if (any)
        dl_quorum_on(t->conn, c, t->nodes, t->granted);
    for (int i = 0; i < t->nodes; i++)
        owed[i] = t->unanswered[i] || (t->granted[i] && c[i].cmd.err);
    owe_withdrawals(acq, t, owed, 0);
}

/* Granted by a majority within the lease's validity, with the largest
 * fence (the caller keeps it) and what any granting server said of a dead
 * holder, waiters, a claim; else undone where it may have run, and busy.
 * Either way a server that was sent it but never answered owes its
 * withdrawal: it did not count. */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    /* Validity: the lease, less the time spent asking and 1% + 2 ms for the
     * servers' clocks running at different rates. */
    unsigned long lease = DL_ARGS(c, acquire).lease_ms;
    uint64_t drift = lease / 100 + 2;
    dl_acquire_reply_t *out = &DL_REPLY(c, acquire);
    if (t->yes >= t->need && t->elapsed + drift < lease) {
        *out = DL_REPLY(t->at[t->firstyes], acquire);
        out->fence = 0, out->dead = 0, out->waiters = 0, out->claimed = 0, out->servers = 0;
        out->was = 0;             /* (each server numbers holds itself) */
        for (int i = 0; i < t->nodes; i++) {
            if (t->unanswered[i])
                out->servers |= 1u << i;
            if (!t->granted[i])
                continue;
            const dl_acquire_reply_t *r = &DL_REPLY(t->at[i], acquire);
            out->servers |= 1u << i;
            out->fence = r->fence > out->fence ? r->fence : out->fence;
            out->dead |= r->dead;
            out->waiters = r->waiters > out->waiters ? r->waiters : out->waiters;
            out->claimed |= r->claimed;
        }
        /* The servers that did not answer lose it (the caller was told of
         * any lapse the quorum knew, so their older traces go too). */
        owe_withdrawals(c, t, t->unanswered, out->fence);
        return;
    }
    undo(c, t);
    /* Unrecoverable where a majority says so (the mark is the same on
     * every server: its holder's fence); else busy (a minority's mark, its
     * release still owed to the others, or one that was recovered where
     * the recovery reached). */
    int unrec = 0, first = -1;
    for (int i = 0; i < t->nodes; i++)
        if (!t->failed[i] && DL_REPLY(t->at[i], acquire).got == 3 && (unrec++, first < 0))
            first = i;
    if (unrec >= t->need) {
        *out = DL_REPLY(t->at[first], acquire);
        out->servers = 0;
        return;
    }
    /* Busy: report the shortest wait a busy server gave. */
    *out = DL_REPLY(t->at[t->firstno >= 0 ? t->firstno : t->firstyes], acquire);
    out->got = 0;
    out->servers = 0;
    if (t->firstno < 0)
        out->pttl_ms = 1;
}

static const dl_quorum_op_t quorum = {
    .undo_for = undo_for,
    .said_yes = said_yes,
    .merge = merge,
    .undo = undo,
};

const dl_script_entry_t dl_entry_acquire = { .wire = wire, .parse = parse, .quorum = &quorum };
