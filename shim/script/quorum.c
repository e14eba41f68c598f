/* SPDX-License-Identifier: BSD-3-Clause */
/* quorum.c - redlock://: the same scripts on N independent masters, with a
 * majority deciding (the Redlock algorithm).
 *
 * An acquisition asks every server at once and counts only if a majority
 * granted it and time remains of the lease after the elapsed time and an
 * allowance for clock drift; otherwise it is undone on every server (one
 * that failed mid-call may have granted it).  Holders renew and release on
 * every server.  Nobody queues: redlock waiters retry after a short random
 * pause (take.c), since grants pushed by independent servers could go to
 * different waiters and none would reach a majority. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "quorum.h"
#include "script.h"

/* Did a server's reply say yes: the call did what it asked for there? */
static int said_yes(const dl_call_t *c)
{
    switch (c->script) {
    case DL_SCRIPT_ACQUIRE:
        return c->reply.acquire.got == 1;
    case DL_SCRIPT_RELEASE:
        return c->reply.release.result >= 1;
    case DL_SCRIPT_RENEW:
        return c->reply.renew.held == 1;
    case DL_SCRIPT_CANCEL:
        return c->reply.cancel.granted == 1;
    case DL_SCRIPT_BREAK:
        return c->reply.brk.removed >= 1;
    case DL_SCRIPT_WITHDRAW:
        return c->reply.withdraw.result >= 1;
    default:
        return c->reply.mark.marked >= 1;
    }
}

static void fail(dl_call_t *c, const char *fmt, int got, int nodes, int need, const char *why)
{
    c->cmd.err = EIO;
    c->cmd.reply = NULL;
    c->cmd.sent = 1;          /* some server may have run it */
    snprintf(c->cmd.errmsg, sizeof c->cmd.errmsg, fmt, got, nodes, need, why);
}

/* Runs per[i * n .. i * n + n) on every server i with want[i] (NULL: all)
 * at once: each server's batch is written before any reply is read, so a
 * call costs the slowest server's round trip, not the sum of them.  Each
 * server has its own link (conn.c); a server that is down fails at once. */
static void run_all(dl_conn_t *conn, dl_call_t *per, int n, int nodes, const char *want)
{
    dl_script_op_t ops[DL_MAX_ENDPOINTS];
    for (int i = 0; i < nodes; i++)
        if (!want || want[i])
            dl_script_start_node(conn, i, per + (size_t)i * n, n, &ops[i]);
    for (int i = 0; i < nodes; i++)
        if (!want || want[i])
            dl_script_finish_node(conn, i, per + (size_t)i * n, n, &ops[i]);
}

/* The withdraw script with the acquisition's keys, token, mode and
 * registration id: undoes exactly that grant on the servers where it may
 * have happened (the fence would not name it: each server gave its own). */
static void undo(dl_conn_t *conn, const dl_call_t *acq, const char *granted, int nodes)
{
    dl_call_t c[DL_MAX_ENDPOINTS];
    dl_withdraw_args_t w = { acq->arg.acquire.mode, acq->arg.acquire.regid };
    for (int i = 0; i < nodes; i++)
        dl_call_withdraw(&c[i], &acq->who, &w);
    run_all(conn, c, 1, nodes, granted);
}

/* Each server numbers its holds itself, so one hold's fence differs from
 * server to server (the caller keeps the largest): a renewal is sent there
 * without it (renew.lua's ARGV[5] ''), for the caller's hold in its mode.
 * And it counts a live writer mark of another process as a waiter
 * (ARGV[6] 'm'): so a process whose threads share a read hold learns that
 * a writer elsewhere waits, and stops letting new readers join. */
static void redlock_renewals(dl_call_t *calls, int n)
{
    for (int j = 0; j < n; j++)
        if (calls[j].script == DL_SCRIPT_RENEW)
            calls[j].arg.renew.redlock = 1;
}

/* What the servers said to one call. */
typedef struct tally {
    const dl_call_t *at[DL_MAX_ENDPOINTS];   /* each server's copy of the call */
    char granted[DL_MAX_ENDPOINTS];          /* may have run there (acquire) */
    int nodes, need, answered, yes, firstyes, firstno;
    const char *why;                         /* an error, when one failed */
} tally_t;

static void count(tally_t *t, const dl_call_t *c)
{
    t->answered = t->yes = 0;
    t->firstyes = t->firstno = -1;
    t->why = "no reply";
    for (int i = 0; i < t->nodes; i++) {
        const dl_call_t *pc = t->at[i];
        t->granted[i] = 0;
        if (pc->cmd.err) {
            t->why = pc->cmd.errmsg;
            /* It may have run before the connection failed. */
            t->granted[i] = c->script == DL_SCRIPT_ACQUIRE;
            continue;
        }
        t->answered++;
        if (said_yes(pc)) {
            t->yes++;
            t->granted[i] = 1;
            if (t->firstyes < 0)
                t->firstyes = i;
        } else if (t->firstno < 0) {
            t->firstno = i;
        }
    }
}

/* An acquisition: granted by a majority within the lease's validity, with
 * the largest fence (the caller keeps it) and what any granting server said
 * of a dead holder, waiters, a claim; else undone where it may have run. */
static void merge_acquire(dl_conn_t *conn, dl_call_t *c, tally_t *t, uint64_t elapsed)
{
    /* Validity: the lease, less the time spent asking and 1% + 2 ms for the
     * servers' clocks running at different rates. */
    unsigned long lease = c->arg.acquire.lease_ms;
    uint64_t drift = lease / 100 + 2;
    dl_acquire_reply_t *out = &c->reply.acquire;
    if (t->yes >= t->need && elapsed + drift < lease) {
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
        undo(conn, c, t->granted, t->nodes);
    /* Busy: report the shortest wait a busy server gave. */
    *out = t->at[t->firstno >= 0 ? t->firstno : t->firstyes]->reply.acquire;
    out->got = 0;
    if (t->firstno < 0)
        out->pttl_ms = 1;
}

/* Any other call, answered by enough servers. */
static void merge(dl_call_t *c, const tally_t *t)
{
    int held = t->yes >= t->need;
    switch (c->script) {
    case DL_SCRIPT_RENEW:
        /* The longest queue a server that renewed it reports, so a holder
         * hears of waiters as from one server (nobody queues with redlock
         * today: 0). */
        c->reply.renew.held = held;
        c->reply.renew.queued = 0;
        for (int i = 0; held && i < t->nodes; i++) {
            const dl_renew_reply_t *r = &t->at[i]->reply.renew;
            if (!t->at[i]->cmd.err && r->held == 1 && r->queued > c->reply.renew.queued)
                c->reply.renew.queued = r->queued;
        }
        break;
    case DL_SCRIPT_RELEASE:
        c->reply.release.result = held;
        break;
    case DL_SCRIPT_BREAK:
        /* The holds removed: as many as the server that had the most (each
         * server holds a copy of the same holds). */
        c->reply.brk.removed = -1;
        for (int i = 0; i < t->nodes; i++)
            if (!t->at[i]->cmd.err && t->at[i]->reply.brk.removed > c->reply.brk.removed)
                c->reply.brk.removed = t->at[i]->reply.brk.removed;
        break;
    default:                      /* cancel, withdraw: nobody queues with redlock */
        c->reply = t->at[held ? t->firstyes : t->firstno >= 0 ? t->firstno : t->firstyes]->reply;
        if (!held && c->script == DL_SCRIPT_CANCEL)
            c->reply.cancel.granted = 0;
        break;
    }
}

int dl_quorum_run(dl_conn_t *conn, dl_call_t *calls, int n)
{
    int nodes = dl_conn_nodes(conn);
    dl_call_t *per = malloc((size_t)nodes * (size_t)n * sizeof *per);
    if (!per) {
        for (int j = 0; j < n; j++) {
            calls[j].cmd.err = EIO;
            calls[j].cmd.reply = NULL;
            snprintf(calls[j].cmd.errmsg, sizeof calls[j].cmd.errmsg, "out of memory");
        }
        return EIO;
    }
    /* All at once: a server that is down fails at once (see conn.c). */
    uint64_t start = dl_now_ms();
    for (int i = 0; i < nodes; i++) {
        memcpy(per + (size_t)i * n, calls, (size_t)n * sizeof *calls);
        redlock_renewals(per + (size_t)i * n, n);
    }
    run_all(conn, per, n, nodes, NULL);
    uint64_t elapsed = dl_now_ms() - start;

    int rc = 0;
    tally_t t = { .nodes = nodes, .need = nodes / 2 + 1 };
    for (int j = 0; j < n; j++) {
        dl_call_t *c = &calls[j];
        for (int i = 0; i < nodes; i++)
            t.at[i] = per + (size_t)i * n + j;
        count(&t, c);
        /* break: what any server removed was removed. */
        int need = c->script == DL_SCRIPT_BREAK ? 1 : t.need;
        if (t.answered < need) {
            if (c->script == DL_SCRIPT_ACQUIRE && t.yes)
                undo(conn, c, t.granted, nodes);
            fail(c, "redlock: %d of %d servers answered (need %d): %s", t.answered, nodes, need,
                 t.why);
            rc = EIO;
        } else {
            if (c->script == DL_SCRIPT_ACQUIRE)
                merge_acquire(conn, c, &t, elapsed);
            else
                merge(c, &t);
            c->cmd.reply = NULL;
            c->cmd.err = 0;
            c->cmd.errmsg[0] = 0;
        }
        c->cmd.retried = 0;
        c->cmd.sent = 1;
    }
    free(per);
    return rc;
}
