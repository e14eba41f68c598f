/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.h - the process's command connections to Redis.
 *
 * A link is one socket to one server, shared by every thread of the
 * process and pipelined automatically: a thread that finds no other thread
 * doing I/O on it becomes the leader, writes every queued command at once
 * and hands each reply back to the thread that asked; others wait.  So any
 * number of threads use one socket, and a batch (the watchdog's renewals)
 * costs one round trip.
 *
 * A dl_conn_t is what the rest of the library talks to: one link for
 * redis://, unix:// and redis-sentinel:// (whose link finds the master
 * through the sentinels at each connect); one link per node for
 * redis-cluster://, with commands routed by the slot of their key; one link
 * per server for redlock://, where the script layer asks them all at once.
 */
#ifndef DL_CONN_H
#define DL_CONN_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "config.h"

typedef struct dl_cmd {
    int argc;
    const char **argv;
    const size_t *argvlen;
    const char *key;          /* routes the command in a cluster; NULL: any node */
    size_t keylen;
    redisReply *reply;        /* set on success; the caller frees it */
    int err;                  /* 0, or EIO when no reply could be had */
    int retried;              /* sent again after a connection failure: the
                                 first copy may have run */
    int sent;                 /* written to a server at least once: with err,
                                 it may still have run there */
    uint64_t deadline;        /* monotonic ms: give up waiting for the reply
                                 then (EIO, errmsg says "timed out"); 0 none */
    /* What undoes this command, should the link give up on it after sending
     * it to a server that timed out (a stalled server runs it when it
     * resumes): written right behind it on the same connection, so the
     * server runs it right after.  undo_argc 0: none. */
    int undo_argc;
    const char **undo_argv;
    const size_t *undo_argvlen;
    char errmsg[200];         /* with err: "redis HOST:PORT: reason" */
    int done;                 /* internal */
} dl_cmd_t;

typedef struct dl_conn dl_conn_t;

/* A batch started on one link and not yet collected (dl_conn_start_node,
 * dl_conn_finish_node): whether this thread leads the link for it, and the
 * batch it took. */
typedef struct dl_link_op {
    dl_cmd_t **batch;
    size_t bn, bcap;
    int leading;
    int written;              /* the batch went out on the live connection */
    int failed;               /* out of memory: the commands failed at once */
} dl_link_op_t;

/* --- connect.c ------------------------------------------------------- */

/* Opens a connection to endpoint ep within `timeout_ms`: connect, AUTH,
 * SELECT, FD_CLOEXEC, keepalive, and a command timeout of timeout_ms.  NULL
 * with a reason in err on failure.  Blocks. */
redisContext *dl_connect_ep(const dl_config_t *c, const dl_endpoint_t *ep,
                            unsigned long timeout_ms, char *err, size_t errlen);
/* Endpoint i of c; for redis-sentinel:// the master the sentinels name
 * (confirmed by ROLE), whatever i. */
redisContext *dl_connect(const dl_config_t *c, int i, unsigned long timeout_ms,
                         char *err, size_t errlen);
/* Any server that answers: the (sentinel-resolved) server, or the first
 * reachable cluster node or redlock server.  For the subscriber: classic
 * pub/sub reaches every node of a cluster. */
redisContext *dl_connect_any(const dl_config_t *c, unsigned long timeout_ms,
                             char *err, size_t errlen);

/* A hint for a plain connection that failed before its first reply, the
 * way a TLS port treats plain text: " (a TLS port? use rediss://)" or "". */
const char *dl_plain_hint(const dl_config_t *c, const redisContext *ctx);

/* Block SIGPIPE in this thread around hiredis's own writes (connect-time
 * AUTH/SELECT) and swallow one they raised, so a vanished server never
 * kills the host program.  The command path sends with MSG_NOSIGNAL. */
void dl_sigpipe_block(sigset_t *old, int *pending_before);
void dl_sigpipe_restore(const sigset_t *old, int pending_before);

/* --- conn.c ---------------------------------------------------------- */

dl_conn_t *dl_conn_new(const dl_config_t *c);

/* What the topology behind a connection can do.  The layers above ask for
 * these, never for the scheme of the URL. */
typedef struct dl_caps {
    /* Waiters queue in Redis (fair mode, pushed grants, renewals that say
     * another process waits).  Without it (redlock's independent servers
     * keep no common queue) waiters ask again, and a write hold is handed
     * on locally as if another process waited. */
    unsigned queue : 1;
    /* Holds span several servers, whose quorum decides: a write that waits
     * marks the servers it finds busy (the writer mark), and read holds
     * learn of it from their renewals. */
    unsigned quorum : 1;
} dl_caps_t;
dl_caps_t dl_conn_caps(const dl_conn_t *c);

/* Sends cmds[0..n) (pipelined with other threads' commands) and waits for
 * every reply.  Reconnects and resends on connection failure until
 * DISTLOCK_IO_TIMEOUT_MS has passed since the failure began; in a cluster
 * follows MOVED and ASK, and waits out TRYAGAIN and CLUSTERDOWN as long.
 * Returns 0 when every command has a reply (which may be a Redis error
 * reply), else EIO (see each cmd's err/errmsg).  Blocks. */
int dl_conn_exec(dl_conn_t *c, dl_cmd_t *cmds, int n);

/* Writes one command on the connection before returning, with no reply
 * to wait for or read (it is sent after CLIENT REPLY SKIP): for a message
 * that must reach Redis ahead of anything the process does next, even if
 * the process then ends, but whose outcome nobody needs.  Never connects
 * and never waits for another thread's round trip: EAGAIN when it cannot
 * write at once (no live connection, another thread's round trip under
 * way), ENOTSUP for redis-cluster:// and redlock://.  0 when written. */
int dl_conn_post(dl_conn_t *c, int argc, const char **argv, const size_t *argvlen);

/* redlock://: the number of independent servers, and a batch on one of
 * them.  A server that fails is not retried for a while: the quorum goes
 * on without it.  Other schemes: 1 node, the one connection. */
int dl_conn_nodes(const dl_conn_t *c);
int dl_conn_exec_node(dl_conn_t *c, int node, dl_cmd_t *cmds, int n);
/* dl_conn_exec_node in two halves, so that one thread asks every redlock
 * server at once: start writes the batch (when no other thread is doing
 * I/O on that server's link; else it is queued for the next batch), finish
 * reads its replies, or leads or waits as dl_conn_exec does.  Every start
 * must be followed by its finish, in the order of the nodes (a thread
 * leading one link never waits for a link of a lower index). */
void dl_conn_start_node(dl_conn_t *c, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op);
int dl_conn_finish_node(dl_conn_t *c, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op);

/* ?wait=N: WAIT for the configured replicas after a write on key's server
 * (for redlock, on every server: a quorum of them must confirm).  0, or EIO
 * with a reason in err.  Blocks up to wait_ms. */
int dl_conn_wait(dl_conn_t *c, const char *key, size_t keylen, char *err, size_t errlen);

/* After fork, in the child: close the sockets without sending anything. */
void dl_conn_abandon(dl_conn_t *c);

/* Closes the connections and frees c (NULL: nothing).  No other thread may
 * be using it.  For short-lived users such as the distlock command's
 * status/list/break; the library keeps its own conn for the process. */
void dl_conn_free(dl_conn_t *c);

/* --- cluster.c (used by conn.c) -------------------------------------- */

/* The hash slot of a key (CRC16 of its {hash tag}, as Redis computes it). */
unsigned dl_key_slot(const char *key, size_t len);

#endif
