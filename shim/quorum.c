/* SPDX-License-Identifier: BSD-3-Clause */
/* quorum.c - redlock://: the same scripts on N independent masters, with a
 * majority deciding (the Redlock algorithm).
 *
 * An acquisition asks every server at once and counts only if a majority
 * granted it and time remains of the lease after the elapsed time and an
 * allowance for clock drift; otherwise it is undone on every server (one
 * that failed mid-call may have granted it).  Holders renew and release on
 * every server.  Nobody queues: redlock waiters retry after a short random
 * pause (lock.c), since grants pushed by independent servers could go to
 * different waiters and none would reach a majority. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "script.h"

static long long elem(const redisReply *r, size_t i)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements ||
        r->element[i]->type != REDIS_REPLY_INTEGER)
        return -1;
    return r->element[i]->integer;
}

static void set_elem(redisReply *r, size_t i, long long v)
{
    if (r && r->type == REDIS_REPLY_ARRAY && i < r->elements &&
        r->element[i]->type == REDIS_REPLY_INTEGER)
        r->element[i]->integer = v;
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
    for (int i = 0; i < nodes; i++) {
        c[i].script = DL_SCRIPT_WITHDRAW;
        c[i].deadline = 0;
        c[i].keys = acq->keys;
        c[i].keylen = acq->keylen;
        c[i].nargs = 0;
        c[i].cmd.reply = NULL;
        for (int a = 0; a < 3; a++)        /* channel prefix, token, mode */
            dl_call_arg(&c[i], acq->args[a], acq->arglen[a]);
        dl_call_arg(&c[i], acq->args[6], acq->arglen[6]);   /* registration id */
    }
    run_all(conn, c, 1, nodes, granted);
    for (int i = 0; i < nodes; i++)
        dl_calls_free(&c[i], 1);
}

static unsigned long arg_ulong(const dl_call_t *c, int i)
{
    char buf[24];
    size_t n = c->arglen[i] < sizeof buf - 1 ? c->arglen[i] : sizeof buf - 1;
    memcpy(buf, c->args[i], n);
    buf[n] = 0;
    return strtoul(buf, NULL, 10);
}

/* A renewal held by a majority: 1 + the longest queue a server that renewed
 * it reports (renew.lua's reply), so a holder hears of waiters as from one
 * server.  Nobody queues with redlock today, so this is 1. */
static long long renewed_queue(dl_call_t *per, int n, int j, int nodes)
{
    long long most = 1;
    for (int i = 0; i < nodes; i++) {
        redisReply *r = per[(size_t)i * n + j].cmd.reply;
        if (r && r->type == REDIS_REPLY_INTEGER && r->integer > most)
            most = r->integer;
    }
    return most;
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
        if (calls[j].script == DL_SCRIPT_RENEW && calls[j].nargs == 5) {
            calls[j].arglen[4] = 0;
            dl_call_arg(&calls[j], "m", 1);
        }
}

int dl_quorum_run(dl_conn_t *conn, dl_call_t *calls, int n)
{
    int nodes = dl_conn_nodes(conn), need = nodes / 2 + 1;
    dl_call_t *per = malloc((size_t)nodes * (size_t)n * sizeof *per);
    char *granted = malloc((size_t)nodes);
    if (!per || !granted) {
        free(per), free(granted);
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
    for (int j = 0; j < n; j++) {
        dl_call_t *c = &calls[j];
        int answered = 0, yes = 0, firstyes = -1, firstno = -1;
        const char *why = "no reply";
        for (int i = 0; i < nodes; i++) {
            dl_call_t *pc = per + (size_t)i * n + j;
            redisReply *r = pc->cmd.reply;
            granted[i] = 0;
            if (!r) {
                why = pc->cmd.errmsg;
                /* It may have run before the connection failed. */
                granted[i] = c->script == DL_SCRIPT_ACQUIRE;
                continue;
            }
            answered++;
            int ok = r->type == REDIS_REPLY_INTEGER ? r->integer >= 1 : elem(r, 0) == 1;
            if (ok) {
                yes++;
                granted[i] = 1;
                if (firstyes < 0)
                    firstyes = i;
            } else if (firstno < 0) {
                firstno = i;
            }
        }
        redisReply *out = NULL;
        switch (c->script) {
        case DL_SCRIPT_ACQUIRE: {
            /* Validity: the lease, less the time spent asking and 1% + 2 ms
             * for the servers' clocks running at different rates. */
            unsigned long lease = arg_ulong(c, 3);
            uint64_t drift = lease / 100 + 2;
            if (yes >= need && elapsed + drift < lease) {
                out = per[(size_t)firstyes * n + j].cmd.reply;
                long long fence = 0, dead = 0, more = 0, claimed = 0;
                for (int i = 0; i < nodes; i++) {
                    redisReply *r = per[(size_t)i * n + j].cmd.reply;
                    if (!r || elem(r, 0) != 1)
                        continue;
                    fence = elem(r, 1) > fence ? elem(r, 1) : fence;
                    dead |= elem(r, 2) == 1;
                    more = elem(r, 3) > more ? elem(r, 3) : more;
                    claimed |= elem(r, 4) == 1;
                }
                set_elem(out, 1, fence);
                set_elem(out, 2, dead);
                set_elem(out, 3, more);
                set_elem(out, 4, claimed);
                break;
            }
            if (yes)
                undo(conn, c, granted, nodes);
            if (answered < need) {
                fail(c, "redlock: %d of %d servers answered (need %d): %s", answered, nodes, need, why);
                break;
            }
            /* Busy: report the shortest wait a busy server gave. */
            out = firstno >= 0 ? per[(size_t)firstno * n + j].cmd.reply
                               : per[(size_t)firstyes * n + j].cmd.reply;
            set_elem(out, 0, 0);
            if (firstno < 0)
                set_elem(out, 1, 1);
            break;
        }
        case DL_SCRIPT_RENEW:
            if (answered < need) {
                fail(c, "redlock: %d of %d servers answered (need %d): %s", answered, nodes, need, why);
                break;
            }
            out = per[(size_t)(firstyes >= 0 ? firstyes : firstno) * n + j].cmd.reply;
            out->type = REDIS_REPLY_INTEGER;
            out->integer = yes >= need ? renewed_queue(per, n, j, nodes) : 0;
            break;
        case DL_SCRIPT_RELEASE:
            if (answered < need) {
                fail(c, "redlock: %d of %d servers answered (need %d): %s", answered, nodes, need, why);
                break;
            }
            out = per[(size_t)(firstyes >= 0 ? firstyes : firstno) * n + j].cmd.reply;
            out->type = REDIS_REPLY_INTEGER;
            out->integer = yes >= need;
            break;
        case DL_SCRIPT_BREAK:
            if (!answered) {
                fail(c, "redlock: %d of %d servers answered (need %d): %s", answered, nodes, 1, why);
                break;
            }
            /* The holds removed: as many as the server that had the most
             * (each server holds a copy of the same holds). */
            out = per[(size_t)(firstyes >= 0 ? firstyes : firstno) * n + j].cmd.reply;
            for (int i = 0; i < nodes; i++) {
                redisReply *r = per[(size_t)i * n + j].cmd.reply;
                if (r && r->type == REDIS_REPLY_INTEGER && r->integer > out->integer)
                    out->integer = r->integer;
            }
            break;
        default:                      /* cancel: nobody queues with redlock */
            if (answered < need) {
                fail(c, "redlock: %d of %d servers answered (need %d): %s", answered, nodes, need, why);
                break;
            }
            out = per[(size_t)(yes >= need ? firstyes : firstno >= 0 ? firstno : firstyes) * n + j].cmd.reply;
            if (yes < need)
                set_elem(out, 0, 0);
            break;
        }
        /* Keep the merged reply, free the others. */
        for (int i = 0; i < nodes; i++) {
            redisReply *r = per[(size_t)i * n + j].cmd.reply;
            if (r && r != out)
                freeReplyObject(r);
        }
        if (out) {
            c->cmd.reply = out;
            c->cmd.err = 0;
            c->cmd.errmsg[0] = 0;
        } else {
            rc = EIO;
        }
        c->cmd.retried = 0;
        c->cmd.sent = 1;
    }
    free(per), free(granted);
    return rc;
}
