/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.h - the process's command connections to Redis: the one interface
 * the layers above (script/, core/, prim/, the distlock command) talk to,
 * whatever the topology.
 *
 * A dl_conn_t holds one backend, chosen once from the URL's scheme (the
 * only place outside config.c that tells topologies apart by it):
 *   single.c    redis://, unix://, rediss://: one link (cmdlink.h)
 *   sentinel.c  redis-sentinel://: one link, to the master the sentinels
 *               name at each connect, left when it steps down
 *   cluster.c   redis-cluster://: a link per node, commands routed by the
 *               slot of their key, following MOVED/ASK/TRYAGAIN
 *   redlock.c   redlock://: a link per independent server, the script
 *               layer asks them all at once (quorum.c); a server that
 *               fails is skipped for a while
 * The layers above ask what the topology can do (dl_conn_caps), never for
 * the scheme.  conn.c owns nothing but the choice; each backend owns its
 * links.
 *
 * File map of the connection layer (shim/conn/):
 *   cmd.h           dl_cmd_t, one command and its outcome
 *   conn.c          this interface, dispatching to the backend
 *   single.c, sentinel.c, cluster.c, redlock.c   the backends
 *   lockform.c, migrate.c   the cluster's forms of a lock's script, and
 *                   its keys moved together to a slot's importing node
 *   channel.c       the channels pushes go on (classic, or one per slot)
 *   shardsub.c      the cluster's subscriber connections, one per node
 *   deferred.c      redlock's commands owed to a server that failed
 *   cmdlink.c       a link: the queue of commands and who leads its I/O
 *   cmdlink_io.c    a link's connection and one batch's round trip
 *   transport.c     a link's bytes: plain (here) or TLS (tls_direct.c)
 *   fault.c         what a failed exchange means; which faults end trust
 *   backoff.c       the pause between tries
 *   connect.c       opening one connection (AUTH, SELECT, TLS)
 *   tls.c, tls_relay.c   TLS: contexts, handshake, relay threads
 */
#ifndef DL_CONN_H
#define DL_CONN_H

#include <hiredis/hiredis.h>

#include "cmd.h"
#include "config.h"
#include "connect.h"    /* for the users that open a connection of their own */

typedef struct dl_conn dl_conn_t;

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
    /* Posts (dl_conn_post) can be written: one connection carries every
     * command of the process, so a post reaches Redis ahead of the next
     * one.  Holds linger after an unlock only where their mark (mark.c)
     * can be posted, and renewals are posted only here. */
    unsigned post : 1;
    /* Keys are spread over hash slots, each served by one node: a script
     * may touch only keys of one slot (dl_conn_together). */
    unsigned slots : 1;
} dl_caps_t;
dl_caps_t dl_conn_caps(const dl_conn_t *c);

/* Whether one script call may touch every key of keys[0..n): always, but
 * where keys are spread over slots (caps.slots), only keys of one slot.
 * Never blocks. */
int dl_conn_together(const dl_conn_t *c, const char *const *keys, const size_t *lens, int n);

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
 * way), ENOTSUP without caps.post.  0 when written. */
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

/* redlock://: sends cmd (its argv[0..1] static, e.g. EVAL and a script's
 * text; the rest is copied) to server `node` in the background, again and
 * again until it has had `looks` replies (each at least DL_DEFER_GAP_MS
 * after the one before: a stalled server that resumes serves its
 * connections in no set order, so a second look runs after whatever the
 * first could have overtaken), or until give_up (monotonic ms).  For what
 * must reach a server that failed: a release, the withdrawal of an
 * acquisition that did not count there.  Never blocks on the server.  0;
 * ENOMEM (or too many pending: logged); ENOTSUP without a quorum. */
#define DL_DEFER_GAP_MS 200
int dl_conn_defer(dl_conn_t *c, int node, const dl_cmd_t *cmd, int looks, uint64_t give_up);

/* The configuration c was made from. */
const dl_config_t *dl_conn_config(const dl_conn_t *c);

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

/* A connection of its own to any server of c's topology that answers: the
 * server, the master the sentinels name, or the first reachable cluster
 * node or redlock server.  For the classic subscriber (a cluster's is per
 * node: shardsub.h).  Blocks. */
redisContext *dl_connect_any(const dl_config_t *c, unsigned long timeout_ms,
                             char *err, size_t errlen);

/* caps.slots: the node serving `slot`, as the slot map says (loaded first
 * if it has no node for it; reloaded first with `reload`, after a sign
 * that it changed): for the subscriber's connection per node
 * (shardsub.h).  0, or EIO with a reason in err; ENOTSUP without
 * slots.  Blocks when it loads the map. */
int dl_conn_locate(dl_conn_t *c, unsigned slot, int reload, dl_endpoint_t *ep, char *err,
                   size_t errlen);

/* --- what a backend provides (single.h, sentinel.h, cluster.h, redlock.h) */

/* Each function gets the state its open returned.  node: which of
 * nodes() servers (exec: -1 for "route it yourself", as dl_conn_exec).
 * conn.c clears each command's retried and sent before exec and start. */
typedef struct dl_backend {
    dl_caps_t caps;
    void *(*open)(const dl_config_t *cfg);        /* NULL: ENOMEM */
    int (*nodes)(const void *b);
    int (*exec)(void *b, int node, dl_cmd_t *cmds, int n);
    void (*start)(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op);
    int (*finish)(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op);
    /* Only with caps.post. */
    int (*post)(void *b, int argc, const char **argv, const size_t *argvlen);
    /* Only with caps.quorum (dl_conn_defer). */
    int (*defer)(void *b, int node, const dl_cmd_t *cmd, int looks, uint64_t give_up);
    /* dl_connect_any for this topology. */
    redisContext *(*connect_any)(const dl_config_t *cfg, unsigned long timeout_ms,
                                 char *err, size_t errlen);
    /* Only with caps.slots (dl_conn_locate). */
    int (*locate)(void *b, unsigned slot, int reload, dl_endpoint_t *ep, char *err, size_t errlen);
    void (*abandon)(void *b);
    void (*free)(void *b);
} dl_backend_t;

#endif
