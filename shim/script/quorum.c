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
 * different waiters and none would reach a majority.
 *
 * This file counts; what each script's replies mean together is its
 * entry's (dl_quorum_op_t, script/call_<name>.c). */
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

void dl_quorum_on(dl_conn_t *conn, dl_call_t *calls, int nodes, const char *want)
{
    run_all(conn, calls, 1, nodes, want);
}

static void count(dl_tally_t *t, const dl_quorum_op_t *q)
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
            t->granted[i] = q->undo != NULL;
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
        dl_call_t *mine = per + (size_t)i * n;
        memcpy(mine, calls, (size_t)n * sizeof *calls);
        for (int j = 0; j < n; j++) {
            const dl_quorum_op_t *q = dl_scripts[mine[j].script].entry->quorum;
            if (q && q->prepare)
                q->prepare(&mine[j]);
        }
    }
    run_all(conn, per, n, nodes, NULL);

    int rc = 0;
    dl_tally_t t = { .conn = conn, .elapsed = dl_now_ms() - start, .nodes = nodes,
                     .need = nodes / 2 + 1 };
    for (int j = 0; j < n; j++) {
        dl_call_t *c = &calls[j];
        const dl_quorum_op_t *q = dl_scripts[c->script].entry->quorum;
        for (int i = 0; i < nodes; i++)
            t.at[i] = per + (size_t)i * n + j;
        if (!q) {
            /* (a bug of ours: the script's entry has no merge) */
            fail(c, "redlock: %d of %d servers, %d needed: %s", 0, nodes, t.need,
                 "this script is not run on several servers as one call");
            rc = EIO;
            continue;
        }
        count(&t, q);
        int need = q->any_one ? 1 : t.need;
        if (t.answered < need) {
            if (q->undo && t.yes)
                q->undo(c, &t);
            fail(c, "redlock: %d of %d servers answered (need %d): %s", t.answered, nodes, need,
                 t.why);
            rc = EIO;
        } else {
            q->merge(c, &t);
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
