/* SPDX-License-Identifier: BSD-3-Clause */
/* quorum.c - redlock://: the same scripts on N independent masters, with a
 * majority deciding (the Redlock algorithm).
 *
 * An acquisition asks every server at once and counts only if a majority
 * granted it and time remains of the lease after the elapsed time and an
 * allowance for clock drift.  Whatever it left on a server that did not
 * count is undone: at once where a server granted it and the acquisition
 * failed, and in the background (conn.h, dl_conn_defer) where a server's
 * reply never came (a stalled server runs the request when it resumes;
 * the link also writes the withdrawal right behind it on the connection it
 * gives up, where there is room).  A release reaches every server that may
 * hold: those that failed get it in the background, until they answer or
 * the hold's lease has surely ended there.  Holders renew on every server.
 * Nobody queues: redlock waiters retry after a short random pause
 * (take.c), since grants pushed by independent servers could go to
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
 * server has its own link (conn.c); a server that is down fails at once.
 * undo: NULL, or (n 1) undo[i] undoes per[i] should server i's link give
 * up on it after sending it (dl_cmd_t's undo). */
static void run_all(dl_conn_t *conn, dl_call_t *per, int n, int nodes, const char *want,
                    dl_call_t *undo)
{
    dl_script_op_t ops[DL_MAX_ENDPOINTS];
    for (int i = 0; i < nodes; i++)
        if (!want || want[i])
            dl_script_start_node(conn, i, per + (size_t)i * n, n, undo ? &undo[i] : NULL, &ops[i]);
    for (int i = 0; i < nodes; i++)
        if (!want || want[i])
            dl_script_finish_node(conn, i, per + (size_t)i * n, n, undo ? &undo[i] : NULL, &ops[i]);
}

/* How long a server that failed may still keep what it was sent: a hold's
 * lease from its last renewal or grant there, plus the I/O time-out for a
 * command still on its way.  A withdrawal waits twice the lease: a stalled
 * server runs a request it had buffered only when it resumes, and gives
 * the hold a lease from then. */
static uint64_t owed_until(dl_conn_t *conn, unsigned long lease_ms, int leases)
{
    const dl_config_t *cfg = dl_conn_config(conn);
    return dl_now_ms() + (uint64_t)leases * (lease_ms ? lease_ms : cfg->lease_ms) + cfg->io_timeout_ms;
}

/* Sends call to server `node` in the background until it answers `looks`
 * times (dl_conn_defer), with the script's text: a server that failed
 * may come back without its script cache. */
static void owe(dl_conn_t *conn, int node, const dl_call_t *call, int looks, uint64_t until)
{
    dl_call_t c = *call;
    dl_script_build_text(&c);
    dl_conn_defer(conn, node, &c.cmd, looks, until);
}

/* The withdrawal of acquisition acq by its registration id (the same on
 * every server, whose fences differ).  older: the fence it got from its
 * quorum when it counted (0: it did not). */
static void withdrawal(dl_call_t *w, const dl_call_t *acq, uint64_t older)
{
    dl_call_withdraw(w, &acq->who, &(dl_withdraw_args_t){
        .mode = acq->arg.acquire.mode, .regid = acq->arg.acquire.regid, .older = older });
}

/* Owes the withdrawal of acq to each server in `owed`: twice, the second
 * look a little after the first answer, since the request may still wait
 * in a connection the server serves after the new one. */
static void owe_withdrawals(dl_conn_t *conn, const dl_call_t *acq, const char *owed, int nodes,
                            uint64_t older)
{
    dl_call_t w;
    withdrawal(&w, acq, older);
    uint64_t until = owed_until(conn, acq->arg.acquire.lease_ms, 2);
    for (int i = 0; i < nodes; i++)
        if (owed[i])
            owe(conn, i, &w, 2, until);
}

/* An acquisition that did not count: withdrawn at once from the servers
 * that granted it (all at once), and in the background from those whose
 * answer never came but which were sent it, and from any granting server
 * the withdrawal did not reach. */
static void undo(dl_conn_t *conn, const dl_call_t *acq, const char *granted, const char *unanswered,
                 int nodes)
{
    dl_call_t c[DL_MAX_ENDPOINTS];
    char owed[DL_MAX_ENDPOINTS];
    int any = 0;
    for (int i = 0; i < nodes; i++) {
        withdrawal(&c[i], acq, 0);
        any |= granted[i];
    }
    if (any)
        run_all(conn, c, 1, nodes, granted, NULL);
    for (int i = 0; i < nodes; i++)
        owed[i] = unanswered[i] || (granted[i] && c[i].cmd.err);
    owe_withdrawals(conn, acq, owed, nodes, 0);
}

/* What quorum.c adds to the calls of every server: each server numbers its
 * holds itself, so one hold's fence differs from server to server (the
 * caller keeps the largest).
 *  - A renewal is sent without it (renew.lua's ARGV[5] ''), for the
 *    caller's hold in its mode, and counts a live writer mark of another
 *    process as a waiter (ARGV[6] 'm'): so a process whose threads share a
 *    read hold learns that a writer elsewhere waits, and stops letting new
 *    readers join.
 *  - A release names the hold by its registration id as well (the caller
 *    sends it), and clears a death trace older than the hold where it
 *    holds nothing (release.lua's ARGV[6] 'o'). */
static void redlock_args(dl_call_t *calls, int n)
{
    for (int j = 0; j < n; j++) {
        if (calls[j].script == DL_SCRIPT_RENEW)
            calls[j].arg.renew.redlock = 1;
        if (calls[j].script == DL_SCRIPT_RELEASE)
            calls[j].arg.release.redlock = 1;
    }
}

/* What the servers said to one call. */
typedef struct tally {
    const dl_call_t *at[DL_MAX_ENDPOINTS];   /* each server's copy of the call */
    char granted[DL_MAX_ENDPOINTS];          /* said yes */
    char unanswered[DL_MAX_ENDPOINTS];       /* no reply, but it was sent: it may
                                                have run, or may yet */
    char failed[DL_MAX_ENDPOINTS];           /* no reply (sent or not) */
    int nodes, need, answered, yes, firstyes, firstno;
    const char *why;                         /* an error, when one failed */
} tally_t;

static void count(tally_t *t)
{
    t->answered = t->yes = 0;
    t->firstyes = t->firstno = -1;
    t->why = "no reply";
    for (int i = 0; i < t->nodes; i++) {
        const dl_call_t *pc = t->at[i];
        t->granted[i] = t->unanswered[i] = t->failed[i] = 0;
        if (pc->cmd.err) {
            t->why = pc->cmd.errmsg;
            t->failed[i] = 1;
            t->unanswered[i] = pc->cmd.sent != 0;
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
 * of a dead holder, waiters, a claim; else undone where it may have run.
 * Either way a server that was sent it but never answered owes its
 * withdrawal: it did not count. */
static void merge_acquire(dl_conn_t *conn, dl_call_t *c, tally_t *t, uint64_t elapsed)
{
    /* Validity: the lease, less the time spent asking and 1% + 2 ms for the
     * servers' clocks running at different rates. */
    unsigned long lease = c->arg.acquire.lease_ms;
    uint64_t drift = lease / 100 + 2;
    dl_acquire_reply_t *out = &c->reply.acquire;
    if (t->yes >= t->need && elapsed + drift < lease) {
        *out = t->at[t->firstyes]->reply.acquire;
        out->fence = 0, out->dead = 0, out->waiters = 0, out->claimed = 0, out->servers = 0;
        out->was = 0;             /* (each server numbers holds itself) */
        for (int i = 0; i < t->nodes; i++) {
            if (t->unanswered[i])
                out->servers |= 1u << i;
            if (!t->granted[i])
                continue;
            const dl_acquire_reply_t *r = &t->at[i]->reply.acquire;
            out->servers |= 1u << i;
            out->fence = r->fence > out->fence ? r->fence : out->fence;
            out->dead |= r->dead;
            out->waiters = r->waiters > out->waiters ? r->waiters : out->waiters;
            out->claimed |= r->claimed;
        }
        /* The servers that did not answer lose it (the caller was told of
         * any lapse the quorum knew, so their older traces go too). */
        owe_withdrawals(conn, c, t->unanswered, t->nodes, out->fence);
        return;
    }
    undo(conn, c, t->granted, t->unanswered, t->nodes);
    /* Busy: report the shortest wait a busy server gave. */
    *out = t->at[t->firstno >= 0 ? t->firstno : t->firstyes]->reply.acquire;
    out->got = 0;
    out->servers = 0;
    if (t->firstno < 0)
        out->pttl_ms = 1;
}

/* What a release or withdrawal could not do on a server that failed is
 * owed to it: a release to every server that may hold (the acquisition's,
 * when known), a withdrawal to every one. */
static void owe_failed(dl_conn_t *conn, const tally_t *t)
{
    const dl_call_t *c = t->at[0];
    /* (a hold taken with EOWNERDEAD: every server, for the trace) */
    unsigned may = c->script == DL_SCRIPT_RELEASE && !c->arg.release.told ? c->arg.release.servers : 0;
    unsigned long lease = c->script == DL_SCRIPT_RELEASE ? c->arg.release.lease_ms : 0;
    int looks = c->script == DL_SCRIPT_WITHDRAW ? 2 : 1;
    uint64_t until = owed_until(conn, lease, looks);
    for (int i = 0; i < t->nodes; i++)
        if (t->failed[i] && (!may || (may >> i) & 1))
            owe(conn, i, t->at[i], looks, until);
}

/* A majority answered, too few of them have the hold, and the servers
 * that did not answer could make up the majority: whether a majority had
 * the hold is unknown, not "no".  A server stalled or cut (or skipped
 * for its failure within the last second) may well keep a hold that was
 * granted by a bare majority: its copy is as good as ever, and the hold
 * with it, until its validity ends. */
static int undecided(const tally_t *t)
{
    return t->yes < t->need && t->yes + (t->nodes - t->answered) >= t->need;
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

/* A server that failed within the last second is skipped (redlock.c: its
 * link's down window), so that a dead one costs a call nothing.  But when
 * the servers that were asked cannot decide a call without it (fewer than
 * a majority answered, or too few have the hold: one stalled, another
 * skipped for a failure a moment ago, perhaps a single slow reply on a
 * loaded machine), the call would fail, or a renewal lapse a hold a
 * majority still has: ask the skipped servers after all.  Costs at most
 * one per-server time-out, in a call that would otherwise have failed (or
 * in the rare release of a hold taken with EOWNERDEAD). */
static void ask_skipped(dl_conn_t *conn, const dl_call_t *calls, dl_call_t *per, int n, int nodes,
                        dl_call_t *undos)
{
    char want[DL_MAX_ENDPOINTS] = { 0 };
    int any = 0;
    for (int j = 0; j < n; j++) {
        tally_t t = { .nodes = nodes, .need = nodes / 2 + 1 };
        for (int i = 0; i < nodes; i++)
            t.at[i] = per + (size_t)i * n + j;
        count(&t);
        /* The release of a hold taken with EOWNERDEAD: the lapse it was
         * told of may have left a trace on a server its quorum did not
         * count (skipped, or its copy lapsing later there); the release
         * clears it ('o'), or the next holder to count that server is
         * told of the same lapse again. */
        int told = calls[j].script == DL_SCRIPT_RELEASE && calls[j].arg.release.told;
        if (t.answered >= t.need && !undecided(&t) && !told)
            continue;
        for (int i = 0; i < nodes; i++)
            if (t.failed[i] && !t.unanswered[i]) {     /* never sent: skipped */
                want[i] = 1;
                any = 1;
            }
    }
    if (!any)
        return;
    for (int i = 0; i < nodes; i++) {
        if (!want[i])
            continue;
        dl_call_t *pi = per + (size_t)i * n;
        memcpy(pi, calls, (size_t)n * sizeof *calls);
        redlock_args(pi, n);
        for (int j = 0; j < n; j++) {
            pi[j].cmd.err = 0;
            pi[j].cmd.sent = 0;
            pi[j].cmd.reply = NULL;
            pi[j].cmd.errmsg[0] = 0;
            pi[j].cmd.probe = 1;
        }
    }
    run_all(conn, per, n, nodes, want, undos);
}

int dl_quorum_run(dl_conn_t *conn, dl_call_t *calls, int n)
{
    int nodes = dl_conn_nodes(conn);
    /* An acquisition runs alone (dl_script_run_undoable): each server's
     * copy gets its withdrawal as the undo the link writes behind it. */
    int undoable = n == 1 && calls[0].script == DL_SCRIPT_ACQUIRE;
    dl_call_t *per = malloc((size_t)nodes * ((size_t)n + (size_t)undoable) * sizeof *per);
    if (!per) {
        for (int j = 0; j < n; j++) {
            calls[j].cmd.err = EIO;
            calls[j].cmd.reply = NULL;
            snprintf(calls[j].cmd.errmsg, sizeof calls[j].cmd.errmsg, "out of memory");
        }
        return EIO;
    }
    dl_call_t *undos = undoable ? per + (size_t)nodes * (size_t)n : NULL;
    /* All at once: a server that is down fails at once (see conn.c). */
    uint64_t start = dl_now_ms();
    for (int i = 0; i < nodes; i++) {
        memcpy(per + (size_t)i * n, calls, (size_t)n * sizeof *calls);
        redlock_args(per + (size_t)i * n, n);
        if (undos)
            withdrawal(&undos[i], &calls[0], 0);
    }
    run_all(conn, per, n, nodes, NULL, undos);
    ask_skipped(conn, calls, per, n, nodes, undos);
    uint64_t elapsed = dl_now_ms() - start;

    int rc = 0;
    tally_t t = { .nodes = nodes, .need = nodes / 2 + 1 };
    for (int j = 0; j < n; j++) {
        dl_call_t *c = &calls[j];
        for (int i = 0; i < nodes; i++)
            t.at[i] = per + (size_t)i * n + j;
        count(&t);
        if (c->script == DL_SCRIPT_RELEASE || c->script == DL_SCRIPT_WITHDRAW)
            owe_failed(conn, &t);
        /* break: what any server removed was removed. */
        int need = c->script == DL_SCRIPT_BREAK ? 1 : t.need;
        if (t.answered < need) {
            if (c->script == DL_SCRIPT_ACQUIRE)
                undo(conn, c, t.granted, t.unanswered, nodes);
            fail(c, "redlock: %d of %d servers answered (need %d): %s", t.answered, nodes, need,
                 t.why);
            rc = EIO;
        } else if (undecided(&t) && c->script == DL_SCRIPT_RENEW) {
            /* Not "gone": the servers that did not answer may have it.  The
             * hold stays what its validity says; the caller asks again. */
            fail(c, "redlock: %d of %d servers have the hold, too few to know (need %d): %s",
                 t.yes, nodes, t.need, t.why);
            rc = EIO;
        } else if (undecided(&t) && c->script == DL_SCRIPT_RELEASE) {
            c->reply.release.result = DL_RELEASE_UNDECIDED;
            c->cmd.reply = NULL;
            c->cmd.err = 0;
            c->cmd.errmsg[0] = 0;
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
