/* SPDX-License-Identifier: BSD-3-Clause */
/* script.c - sends the calls of calls.h: EVALSHA with NOSCRIPT fallback,
 * batched; each reply read into its call's typed reply (the script's
 * entry, calls.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "dl_script_list.h"
#include "quorum.h"
#include "script.h"
#include "fault.h"

/* Builds call->cmd; with undo (built as EVAL: a server that lost the
 * script cache still runs it), as the command's undo (dl_cmd_t). */
void dl_script_argv(dl_call_t *call, int by_sha)
{
    const dl_script_t *sc = &dl_scripts[call->script];
    by_sha = by_sha && !sc->by_text;
    dl_call_wire(call);
    call->argv[0] = by_sha ? "EVALSHA" : "EVAL";
    call->argvlen[0] = by_sha ? 7 : 4;
    call->argv[1] = by_sha ? sc->sha : sc->body;
    call->argvlen[1] = by_sha ? 40 : sc->len;
}

static void build(dl_call_t *call, int by_sha, dl_call_t *undo)
{
    dl_script_argv(call, by_sha);
    call->cmd.argc = call->argc;
    call->cmd.argv = call->argv;
    call->cmd.argvlen = call->argvlen;
    /* Every key shares the lock's {name} tag: the first routes the call. */
    call->cmd.key = call->who.keys[0];
    call->cmd.keylen = call->who.keylen[0];
    call->cmd.deadline = call->deadline;
    call->cmd.once = call->once;
    call->cmd.undo_argc = 0;
    call->cmd.undo_argv = NULL;
    call->cmd.undo_argvlen = NULL;
    if (undo) {
        build(undo, 0, NULL);
        call->cmd.undo_argc = undo->cmd.argc;
        call->cmd.undo_argv = undo->argv;
        call->cmd.undo_argvlen = undo->argvlen;
    }
}

/* Scripts known to be in the server's cache, one bit each: set when one
 * ran, cleared by any NOSCRIPT (the cache was emptied: a restart, SCRIPT
 * FLUSH, a failover).  A posted call has no reply to fall back on after a
 * NOSCRIPT, so it goes by EVALSHA only while its script is known cached,
 * else with its text. */
static uint64_t dl_cached;
_Static_assert(DL_SCRIPT_COUNT <= 64, "dl_cached holds one bit per script");

static void note_cached(const dl_call_t *call, const redisReply *r)
{
    uint64_t bit = (uint64_t)1 << call->script;
    if (r && r->type != REDIS_REPLY_ERROR &&
        !(__atomic_load_n(&dl_cached, __ATOMIC_RELAXED) & bit))
        __atomic_fetch_or(&dl_cached, bit, __ATOMIC_RELAXED);
}

static int exec_on(dl_conn_t *conn, int node, dl_cmd_t *cmds, int n)
{
    return node < 0 ? dl_conn_exec(conn, cmds, n) : dl_conn_exec_node(conn, node, cmds, n);
}

static int is_noscript(const redisReply *r)
{
    return r && dl_fault_of(NULL, r) == DL_FAULT_NOSCRIPT;
}

/* The first half of a run on one node: builds calls[0..n) (undo: for
 * calls[0], n is then 1; or NULL) and starts them (dl_conn_start_node), or
 * with send 0 only queues them for the second half. */
static void start_node(dl_conn_t *conn, int node, dl_call_t *calls, int n, dl_call_t *undo,
                       dl_script_op_t *op, int send)
{
    for (int i = 0; i < n; i++)
        build(&calls[i], 1, i == 0 ? undo : NULL);
    op->send = send;
    op->failed = 0;
    /* dl_conn_exec takes an array of dl_cmd_t; a call embeds its cmd, so
     * gather them (one call: no allocation). */
    if (n == 1) {
        op->cmds = &op->one;
    } else if (!(op->cmds = malloc((size_t)n * sizeof *op->cmds))) {
        for (int i = 0; i < n; i++) {
            calls[i].cmd.err = EIO;
            snprintf(calls[i].cmd.errmsg, sizeof calls[i].cmd.errmsg, "out of memory");
            calls[i].cmd.reply = NULL;
        }
        op->failed = 1;
        return;
    }
    for (int i = 0; i < n; i++)
        op->cmds[i] = calls[i].cmd;
    if (send && node >= 0)
        dl_conn_start_node(conn, node, op->cmds, n, &op->link);
}

static int finish_node(dl_conn_t *conn, int node, dl_call_t *calls, int n, dl_call_t *undo,
                       dl_script_op_t *op)
{
    if (op->failed)
        return EIO;
    dl_cmd_t *cmds = op->cmds, one;
    if (op->send && node >= 0)
        dl_conn_finish_node(conn, node, cmds, n, &op->link);
    else
        exec_on(conn, node, cmds, n);

    /* Scripts missing from the server's cache (restart, SCRIPT FLUSH): send
     * the body, which caches it again for the next EVALSHA. */
    int missing = 0;
    for (int i = 0; i < n; i++)
        if (is_noscript(cmds[i].reply))
            missing++;
    if (missing) {
        __atomic_store_n(&dl_cached, 0, __ATOMIC_RELAXED);
        /* The cache was emptied: a restart, a failover, or SCRIPT FLUSH,
         * which may have lost holds too, or failed a post unseen. */
        dl_fault_note(DL_FAULT_NOSCRIPT, "redis: a script was missing from its cache (NOSCRIPT)");
        dl_cmd_t *again = missing == 1 ? &one : malloc((size_t)missing * sizeof *again);
        int *idx = malloc((size_t)missing * sizeof *idx);
        if (again && idx) {
            int m = 0;
            for (int i = 0; i < n; i++)
                if (is_noscript(cmds[i].reply)) {
                    freeReplyObject(cmds[i].reply);
                    cmds[i].reply = NULL;
                    build(&calls[i], 0, i == 0 ? undo : NULL);
                    idx[m] = i;
                    again[m++] = calls[i].cmd;
                }
            exec_on(conn, node, again, m);
            for (int j = 0; j < m; j++)
                cmds[idx[j]] = again[j];
        }
        if (again != &one)
            free(again);
        free(idx);
    }

    int rc = 0;
    for (int i = 0; i < n; i++) {
        dl_cmd_t *c = &cmds[i];
        /* An error reply that says the server may have lost what it had
         * (loading its data again after a restart, a replica now after a
         * failover: fault.h) is a sign. */
        if (!c->err && c->reply)
            dl_fault_note(dl_fault_of(NULL, c->reply), c->reply->str);
        if (!c->err && (!c->reply || c->reply->type == REDIS_REPLY_ERROR)) {
            c->err = EIO;
            snprintf(c->errmsg, sizeof c->errmsg, "redis: %s",
                     c->reply ? c->reply->str : "no reply (out of memory)");
            if (c->reply)
                freeReplyObject(c->reply);
            c->reply = NULL;
        }
        if (c->err) {
            rc = EIO;
            if (c->reply)
                freeReplyObject(c->reply);
            c->reply = NULL;
        } else {
            /* The typed reply (the script's entry, calls.h) is all a
             * caller reads; an entry may keep the reply (its parse says
             * so), freed with the typed reply (dl_call_free_reply). */
            note_cached(&calls[i], c->reply);
            if (!dl_call_parse(&calls[i], c->reply))
                freeReplyObject(c->reply);
            c->reply = NULL;
        }
        calls[i].cmd = *c;
    }
    if (cmds != &op->one)
        free(cmds);
    return rc;
}

static int run_node(dl_conn_t *conn, int node, dl_call_t *calls, int n, dl_call_t *undo)
{
    dl_script_op_t op;
    start_node(conn, node, calls, n, undo, &op, 0);
    return finish_node(conn, node, calls, n, undo, &op);
}

void dl_script_start_node(dl_conn_t *conn, int node, dl_call_t *calls, int n, dl_call_t *undo,
                          dl_script_op_t *op)
{
    start_node(conn, node, calls, n, undo, op, 1);
}

int dl_script_finish_node(dl_conn_t *conn, int node, dl_call_t *calls, int n, dl_call_t *undo,
                          dl_script_op_t *op)
{
    return finish_node(conn, node, calls, n, undo, op);
}

void dl_script_build_text(dl_call_t *call)
{
    build(call, 0, NULL);
}

int dl_script_run_node(dl_conn_t *conn, int node, dl_call_t *calls, int n)
{
    return run_node(conn, node, calls, n, NULL);
}

int dl_script_run_undoable(dl_conn_t *conn, dl_call_t *call, dl_call_t *undo)
{
    if (dl_conn_nodes(conn) > 1)
        return dl_quorum_run(conn, call, 1);   /* redlock undoes its own (quorum.c) */
    return run_node(conn, -1, call, 1, undo);
}

int dl_script_run(dl_conn_t *conn, dl_call_t *calls, int n)
{
    if (dl_conn_nodes(conn) > 1)
        return dl_quorum_run(conn, calls, n);
    return dl_script_run_node(conn, -1, calls, n);
}

int dl_script_post(dl_conn_t *conn, dl_call_t *call)
{
    build(call, (__atomic_load_n(&dl_cached, __ATOMIC_RELAXED) >> call->script) & 1, NULL);
    return dl_conn_post(conn, call->cmd.argc, call->argv, call->argvlen);
}
