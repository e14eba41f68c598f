/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shardsub.h - redis-cluster://: the subscriber's connections, one per
 * node that serves a slot the process uses (shardsub.c).
 *
 * Pushes on a cluster go on a channel per slot and process (channel.h),
 * published with SPUBLISH inside the shard of the slot, never over the
 * whole cluster bus.  The process listens with SSUBSCRIBE on the node
 * serving each slot it asked for (dl_shardsub_want), on one connection
 * per node, all read by one thread (dl_shardsub_run, the subscriber
 * thread of core/notify.c).  The subscriptions follow the slots:
 *  - SSUBSCRIBE answered MOVED: the slot has another owner (a sign,
 *    fault.h): subscribed there;
 *  - an `sunsubscribe` Redis sends unasked: the slot left the node (a
 *    reshard closed, or the node is a replica now): the map is reloaded,
 *    the slot subscribed where it went, a sign;
 *  - a node's connection lost (a failover, a restart, CLIENT KILL): its
 *    slots subscribed again where the map reloaded says, a sign;
 *  - a node that does not know SSUBSCRIBE (before Redis 7): the scripts
 *    publish there on the classic channel (lua/common.lua), which one
 *    SUBSCRIBE of the process, on such a node, hears.
 * A slot subscribed again after it was lost is told to the hook
 * (`resubscribed`): the pushes sent meanwhile are lost, and its waiters
 * ask Redis.  A slot asked for no more is unsubscribed some seconds later
 * (DL_SUB_IDLE_MS: a name used again at once keeps its subscription),
 * and a node's connection left with nothing subscribed is closed as late.
 *
 * Owner: the state below is shardsub.c's, under its own mutex; the
 * connections' I/O is the running thread's alone.  Lock order: whatever
 * the caller holds (the registry mutex, shim/core/notify.c) before this
 * mutex; the hooks are called with no lock of it held.
 */
#ifndef DL_SHARDSUB_H
#define DL_SHARDSUB_H

#include <stddef.h>
#include <stdint.h>

#include "channel.h"
#include "conn.h"

/* How long a slot nobody asks for any more stays subscribed, and an empty
 * node's connection open (ms). */
#define DL_SUB_IDLE_MS 2000

typedef struct dl_shardsub_hooks {
    /* A push (the message of an smessage, or of a classic message). */
    void (*message)(void *arg, const char *msg, size_t len);
    /* slots (a bitmap of DL_SLOTS bits) are subscribed again after their
     * subscription was lost: pushes of theirs may have been lost. */
    void (*resubscribed)(void *arg, const unsigned char *slots);
    void *arg;
} dl_shardsub_hooks_t;

typedef struct dl_shardsub dl_shardsub_t;

/* The subscriber of the process's channels ch (by slot) on conn's nodes.
 * NULL: ENOMEM.  Opens nothing yet. */
dl_shardsub_t *dl_shardsub_new(dl_conn_t *conn, const dl_config_t *cfg, const dl_chans_t *ch,
                               const dl_shardsub_hooks_t *hooks);
/* slot is needed (on: a waiter will register on an object of it) or no
 * longer (no object of the process is in it).  Never blocks. */
void dl_shardsub_want(dl_shardsub_t *s, unsigned slot, int on);
/* Waits until slot is subscribed, at most until `until` (monotonic ms).
 * 0; or EAGAIN when not yet, with the last failure in err ("" none): the
 * slot's node may be failing over, and the command path, which waits that
 * out, says whether the cluster can be reached; the slot's waiters ask
 * Redis once it is subscribed. */
int dl_shardsub_wait(dl_shardsub_t *s, unsigned slot, uint64_t until, char *err, size_t errlen);
/* The subscriber's loop; never returns.  Blocks. */
void dl_shardsub_run(dl_shardsub_t *s);
/* How many nodes it has a connection to, and how many slots are
 * subscribed (for tests and the metrics). */
void dl_shardsub_count(dl_shardsub_t *s, int *nodes, int *slots);
/* After fork, in the child: closes the sockets without sending. */
void dl_shardsub_abandon(dl_shardsub_t *s);

#endif
