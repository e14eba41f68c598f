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
 * different waiters and none would reach a majority.
 *
 * This file runs and counts; what each script's replies mean together,
 * and what a server that failed is owed, is its entry's (dl_quorum_op_t,
 * script/call_<name>.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "quorum.h"
#include "script.h"

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

void dl_quorum_on(dl_conn_t *conn, dl_call_t *calls, int nodes, const char *want)
{
    run_all(conn, calls, 1, nodes, want, NULL);
}

uint64_t dl_quorum_owed_until(dl_conn_t *conn, unsigned long lease_ms, int leases)
{
    const dl_config_t *cfg = dl_conn_config(conn);
    return dl_now_ms() + (uint64_t)leases * (lease_ms ? lease_ms : cfg->lease_ms) + cfg->io_timeout_ms;
}

void dl_quorum_owe(dl_conn_t *conn, int node, const dl_call_t *call, int looks, uint64_t until)
{
    dl_call_t c = *call;
    dl_script_build_text(&c);
    dl_conn_defer(conn, node, &c.cmd, looks, until);
}

void dl_quorum_owe_failed(const dl_tally_t *t, unsigned may, unsigned long lease_ms, int looks)
{
    uint64_t until = dl_quorum_owed_until(t->conn, lease_ms, looks);
    for (int i = 0; i < t->nodes; i++)
        if (t->failed[i] && (!may || (may >> i) & 1))
            dl_quorum_owe(t->conn, i, t->at[i], looks, until);
}

int dl_quorum_undecided(const dl_tally_t *t)
{
    return t->yes < t->need && t->yes + (t->nodes - t->answered) >= t->need;
}

int dl_quorum_fail(dl_call_t *c, const char *fmt, int got, const dl_tally_t *t)
{
    fail(c, fmt, got, t->nodes, t->need, t->why);
    return EIO;
}

static void count(dl_tally_t *t, const dl_quorum_op_t *q)
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
        if (q->said_yes(pc)) {
            t->yes++;
            t->granted[i] = 1;
            if (t->firstyes < 0)
                t->firstyes = i;
        } else if (t->firstno < 0) {
            t->firstno = i;
        }
    }
}

void dl_quorum_pick(dl_call_t *c, const dl_tally_t *t)
{
    int held = t->yes >= t->need;
    c->reply = t->at[held ? t->firstyes : t->firstno >= 0 ? t->firstno : t->firstyes]->reply;
}

/* The entry's merge of a call's script, or NULL (a bug of ours: it is
 * never to run on several servers as one call). */
static const dl_quorum_op_t *op_of(const dl_call_t *c)
{
    return dl_scripts[c->script].entry->quorum;
}

/* Server i's copies of calls[0..n), each prepared by its entry (a
 * server's own arguments). */
static dl_call_t *copies_for(dl_call_t *per, int i, const dl_call_t *calls, int n)
{
    dl_call_t *mine = per + (size_t)i * n;
    memcpy(mine, calls, (size_t)n * sizeof *calls);
    for (int j = 0; j < n; j++) {
        /* A server's copy may be sent to it again (dl_cmd_t.once): ended
         * there, it would count as a server that failed, and a call
         * without a majority says EIO, where its caller would ask again. */
        mine[j].once = 0;
        const dl_quorum_op_t *q = op_of(&mine[j]);
        if (q && q->prepare)
            q->prepare(&mine[j]);
    }
    return mine;
}

/* A server that failed within the last second is skipped (redlock.c: its
 * link's down window), so that a dead one costs a call nothing.  But when
 * the servers that were asked cannot decide a call without it (fewer than
 * a majority answered, or too few have the hold: one stalled, another
 * skipped for a failure a moment ago, perhaps a single slow reply on a
 * loaded machine), the call would fail, or a renewal lapse a hold a
 * majority still has: ask the skipped servers after all.  So does a call
 * that must reach every server (needs_all).  Costs at most one per-server
 * time-out, in a call that would otherwise have failed. */
static void ask_skipped(dl_conn_t *conn, const dl_call_t *calls, dl_call_t *per, int n, int nodes,
                        dl_call_t *undos)
{
    char want[DL_MAX_ENDPOINTS] = { 0 };
    int any = 0;
    for (int j = 0; j < n; j++) {
        const dl_quorum_op_t *q = op_of(&calls[j]);
        if (!q)
            continue;
        dl_tally_t t = { .conn = conn, .nodes = nodes, .need = nodes / 2 + 1 };
        for (int i = 0; i < nodes; i++)
            t.at[i] = per + (size_t)i * n + j;
        count(&t, q);
        int all = q->needs_all && q->needs_all(&calls[j]);
        if (t.answered >= t.need && !dl_quorum_undecided(&t) && !all)
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
        dl_call_t *mine = copies_for(per, i, calls, n);
        for (int j = 0; j < n; j++) {
            mine[j].cmd.err = 0;
            mine[j].cmd.sent = 0;
            mine[j].cmd.reply = NULL;
            mine[j].cmd.errmsg[0] = 0;
            mine[j].cmd.probe = 1;    /* past the link's down window */
        }
    }
    run_all(conn, per, n, nodes, want, undos);
}

int dl_quorum_run(dl_conn_t *conn, dl_call_t *calls, int n)
{
    int nodes = dl_conn_nodes(conn);
    /* A call run alone with an undo (an acquisition: dl_script_run_undoable)
     * gets one for each server's copy, which the link writes behind it. */
    const dl_quorum_op_t *q0 = n == 1 ? op_of(&calls[0]) : NULL;
    int undoable = q0 && q0->undo_for;
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
        copies_for(per, i, calls, n);
        if (undos)
            q0->undo_for(&undos[i], &calls[0]);
    }
    run_all(conn, per, n, nodes, NULL, undos);
    ask_skipped(conn, calls, per, n, nodes, undos);

    int rc = 0;
    dl_tally_t t = { .conn = conn, .elapsed = dl_now_ms() - start, .nodes = nodes,
                     .need = nodes / 2 + 1 };
    for (int j = 0; j < n; j++) {
        dl_call_t *c = &calls[j];
        const dl_quorum_op_t *q = op_of(c);
        for (int i = 0; i < nodes; i++)
            t.at[i] = per + (size_t)i * n + j;
        if (!q) {
            fail(c, "redlock: %d of %d servers, %d needed: %s", 0, nodes, t.need,
                 "this script is not run on several servers as one call");
            rc = EIO;
            continue;
        }
        count(&t, q);
        if (q->owe)
            q->owe(c, &t);
        int need = q->any_one ? 1 : t.need;
        if (t.answered < need) {
            if (q->undo)
                q->undo(c, &t);
            fail(c, "redlock: %d of %d servers answered (need %d): %s", t.answered, nodes, need,
                 t.why);
            rc = EIO;
        } else if (q->undecided && dl_quorum_undecided(&t)) {
            if (q->undecided(c, &t))
                rc = EIO;
            else {
                c->cmd.reply = NULL;
                c->cmd.err = 0;
                c->cmd.errmsg[0] = 0;
            }
        } else {
            q->merge(c, &t);
            c->cmd.reply = NULL;
            c->cmd.err = 0;
            c->cmd.errmsg[0] = 0;
        }
        c->cmd.retried = 0;
        c->cmd.sent = 1;
    }
    /* What a server's reply owns (the status views, acquire_all's
     * replies: an entry's free_reply) goes with its copy: a merge copies
     * what it keeps. */
    for (size_t k = 0; k < (size_t)nodes * (size_t)n; k++)
        dl_call_free_reply(&per[k]);
    free(per);
    return rc;
}
