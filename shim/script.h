/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * script.h - the embedded Lua scripts of lua/ and how they are called:
 * EVALSHA first, EVAL (which also caches the script) on NOSCRIPT.
 */
#ifndef DL_SCRIPT_H
#define DL_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"

typedef struct dl_script {
    const char *name;
    const char *sha;          /* SHA1 of body, computed at build time */
    const char *body;
    size_t len;
} dl_script_t;

/* In the order of cmake's DL_LUA_OPS. */
enum {
    DL_SCRIPT_ACQUIRE,
    DL_SCRIPT_RELEASE,
    DL_SCRIPT_RENEW,
    DL_SCRIPT_CANCEL,
    DL_SCRIPT_BREAK,
    DL_SCRIPT_WITHDRAW,
    DL_SCRIPT_STATUS          /* read-only: distlock status (tools/cli) */
};
extern const dl_script_t dl_scripts[];

#define DL_NKEYS 6
#define DL_MAX_ARGS 12

/* One script call on one lock. */
typedef struct dl_call {
    int script;
    const char *const *keys;        /* DL_NKEYS keys */
    const size_t *keylen;
    int nargs;
    uint64_t deadline;              /* monotonic ms, 0 none: see dl_cmd_t */
    const char *args[DL_MAX_ARGS];
    size_t arglen[DL_MAX_ARGS];
    /* internal */
    const char *argv[3 + DL_NKEYS + DL_MAX_ARGS];
    size_t argvlen[3 + DL_NKEYS + DL_MAX_ARGS];
    dl_cmd_t cmd;
} dl_call_t;

/* Adds a string argument to a call. */
void dl_call_arg(dl_call_t *call, const char *s, size_t len);

/* Runs calls[0..n) as one pipelined batch.  Each call ends with
 * call->cmd.reply set (not an error reply) or call->cmd.err = EIO with
 * errmsg ("redis HOST:PORT: <server's error>" for error replies).  Returns 0
 * if every call has a reply, else EIO.  Blocks. */
int dl_script_run(dl_conn_t *conn, dl_call_t *calls, int n);

/* As dl_script_run for one call, with the call that undoes it should the
 * link give up on a stalled server after sending it (dl_cmd_t's undo).
 * undo is built by this call and must live until it returns. */
int dl_script_run_undoable(dl_conn_t *conn, dl_call_t *call, dl_call_t *undo);

/* As dl_script_run, on one redlock server (node -1: as dl_conn_exec). */
int dl_script_run_node(dl_conn_t *conn, int node, dl_call_t *calls, int n);

/* dl_script_run_node in two halves (dl_conn_start_node): redlock asks
 * every server before it reads a reply.  op must stay where it is between
 * the two; each start is followed by its finish, in the order of nodes. */
typedef struct dl_script_op {
    dl_cmd_t one;             /* the command of a single call */
    dl_cmd_t *cmds;
    dl_link_op_t link;
    int send, failed;
} dl_script_op_t;
void dl_script_start_node(dl_conn_t *conn, int node, dl_call_t *calls, int n, dl_script_op_t *op);
int dl_script_finish_node(dl_conn_t *conn, int node, dl_call_t *calls, int n, dl_script_op_t *op);

/* Posts one call (dl_conn_post: written now, its reply skipped, never
 * waits): for a call whose outcome nobody needs, which must reach Redis
 * ahead of what the process does next.  EVALSHA while the script is known
 * to be in the server's cache, else EVAL with its text.  0 when written;
 * EAGAIN, ENOTSUP as dl_conn_post. */
int dl_script_post(dl_conn_t *conn, dl_call_t *call);

/* quorum.c: redlock://.  Runs each call on every server and merges the
 * replies into the one a single server would give: an acquisition counts
 * when a majority granted it within the lease's validity (else it is undone
 * everywhere and reported busy, or EIO when no majority answered); a release
 * or renewal reports the hold held when a majority still had it. */
int dl_quorum_run(dl_conn_t *conn, dl_call_t *calls, int n);

/* Frees the replies of calls[0..n). */
void dl_calls_free(dl_call_t *calls, int n);

#endif
