/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * script.h - the embedded Lua scripts of lua/ and how they are called:
 * EVALSHA first, EVAL (which also caches the script) on NOSCRIPT.
 */
#ifndef DL_SCRIPT_H
#define DL_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "calls.h"
#include "conn.h"

/* One script: its text, as embedded, and its entry (calls.h). */
typedef struct dl_script {
    const char *name;         /* lua/<name>.lua */
    const char *sha;          /* SHA1 of body, computed at build time */
    const char *body;
    size_t len;
    int by_text;              /* sent with its text (EVAL) every time */
    const dl_script_entry_t *entry;
} dl_script_t;

/* Indexed by DL_SCRIPT_* (calls.h); generated from lua/ by
 * cmake/embed_lua.cmake (dl_scripts.c). */
extern const dl_script_t dl_scripts[];
/* The text of mark.lua (tests drive it directly). */
extern const char dl_mark_lua[];

/* Writes call's command as the library sends it: argv[0..1] EVALSHA sha
 * (by_sha, unless the script is sent with its text) or EVAL text, then
 * its keys and ARGV (dl_call_wire); call->argc.  For a caller that sends
 * it itself (the protocol fuzzer, the tests). */
void dl_script_argv(dl_call_t *call, int by_sha);

/* Runs calls[0..n) as one pipelined batch (redlock: quorum.c).  Each call
 * ends with its typed reply (call->reply, call->cmd.err 0) or with
 * call->cmd.err = EIO and errmsg ("redis HOST:PORT: <server's error>" for
 * error replies).  Returns 0 if every call has a reply, else EIO.  Blocks. */
int dl_script_run(dl_conn_t *conn, dl_call_t *calls, int n);

/* As dl_script_run for one call, with the call that undoes it should the
 * link give up on a stalled server after sending it (dl_cmd_t's undo).
 * undo is built by this call and must live until it returns. */
int dl_script_run_undoable(dl_conn_t *conn, dl_call_t *call, dl_call_t *undo);

/* As dl_script_run, on one redlock server (node -1: as dl_conn_exec). */
int dl_script_run_node(dl_conn_t *conn, int node, dl_call_t *calls, int n);

/* dl_script_run_node in two halves (dl_conn_start_node): redlock asks
 * every server before it reads a reply.  op must stay where it is between
 * the two; each start is followed by its finish, in the order of nodes,
 * with the same undo: NULL, or (n 1) the call that undoes calls[0] should
 * the link give up on a stalled server after sending it (as
 * dl_script_run_undoable; built by start, it must live until finish). */
typedef struct dl_script_op {
    dl_cmd_t one;             /* the command of a single call */
    dl_cmd_t *cmds;
    dl_link_op_t link;
    int send, failed;
} dl_script_op_t;
void dl_script_start_node(dl_conn_t *conn, int node, dl_call_t *calls, int n, dl_call_t *undo,
                          dl_script_op_t *op);
int dl_script_finish_node(dl_conn_t *conn, int node, dl_call_t *calls, int n, dl_call_t *undo,
                          dl_script_op_t *op);

/* Writes call's wire form as EVAL with the script's text (call->cmd:
 * argc, argv, argvlen), for a command sent later without the NOSCRIPT
 * fallback (redlock's retries in the background, conn.h dl_conn_defer):
 * argv[0] and argv[1] are static, the rest points into call and its
 * caller's strings. */
void dl_script_build_text(dl_call_t *call);

/* Posts one call (dl_conn_post: written now, its reply skipped, never
 * waits): for a call whose outcome nobody needs, which must reach Redis
 * ahead of what the process does next.  EVALSHA while the script is known
 * to be in the server's cache, else EVAL with its text.  0 when written;
 * EAGAIN, ENOTSUP as dl_conn_post. */
int dl_script_post(dl_conn_t *conn, dl_call_t *call);

#endif
