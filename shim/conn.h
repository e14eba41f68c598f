/*
 * conn.h - hiredis connections: connect (AUTH, SELECT, close-on-exec,
 * timeouts), and the one command connection a process shares.
 *
 * The shared connection pipelines automatically: a thread that finds no
 * other thread doing I/O becomes the leader, writes every queued command at
 * once and hands each reply back to the thread that asked; others wait.
 * So any number of threads use one socket, and a batch (the watchdog's
 * renewals) costs one round trip.
 */
#ifndef DL_CONN_H
#define DL_CONN_H

#include <hiredis/hiredis.h>
#include <pthread.h>

#include "config.h"

typedef struct dl_cmd {
    int argc;
    const char **argv;
    const size_t *argvlen;
    redisReply *reply;        /* set on success; the caller frees it */
    int err;                  /* 0, or EIO when no reply could be had */
    int retried;              /* sent again after a connection failure: the
                                 first copy may have run */
    char errmsg[200];         /* with err: "redis HOST:PORT: reason" */
    int done;                 /* internal */
} dl_cmd_t;

typedef struct dl_conn dl_conn_t;

/* Opens a connection to endpoint `i` of c within `timeout_ms`: connect,
 * AUTH, SELECT, FD_CLOEXEC, keepalive, and a command timeout of
 * timeout_ms.  NULL with a reason in err on failure.  Blocks. */
redisContext *dl_connect(const dl_config_t *c, int i, unsigned long timeout_ms,
                         char *err, size_t errlen);

dl_conn_t *dl_conn_new(const dl_config_t *c);

/* Sends cmds[0..n) (pipelined with other threads' commands) and waits for
 * every reply.  Reconnects and resends on connection failure until
 * DISTLOCK_IO_TIMEOUT_MS has passed since the failure began.  Returns 0 when
 * every command has a reply (which may be a Redis error reply), else EIO
 * (see each cmd's err/errmsg).  Blocks. */
int dl_conn_exec(dl_conn_t *c, dl_cmd_t *cmds, int n);

/* After fork, in the child: close the socket without sending anything. */
void dl_conn_abandon(dl_conn_t *c);

/* Block SIGPIPE in this thread around hiredis's own writes (connect-time
 * AUTH/SELECT) and swallow one they raised, so a vanished server never
 * kills the host program.  The command path sends with MSG_NOSIGNAL. */
void dl_sigpipe_block(sigset_t *old, int *pending_before);
void dl_sigpipe_restore(const sigset_t *old, int pending_before);

#endif
