/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_cluster.h - a 3-master/3-replica Redis Cluster made with
 * `redis-cli --cluster create`, its slot map, and a live `redis-cli
 * --cluster reshard` in the background.  Nodes are tt_server_start()
 * servers (harness_topo.h).
 */
#ifndef TH_HARNESS_CLUSTER_H
#define TH_HARNESS_CLUSTER_H

#include <stddef.h>
#include <sys/types.h>
#include "harness_server.h"

/* ------------------------------------------------------------- cluster */

#define TT_CLUSTER_NODES 6

typedef struct tt_cluster {
    th_server_t node[TT_CLUSTER_NODES];
    int bus[TT_CLUSTER_NODES];
    char id[TT_CLUSTER_NODES][48];   /* CLUSTER MYID */
} tt_cluster_t;

/* Six nodes (cluster-enabled, node timeout 3000), joined by `redis-cli
 * --cluster create ... --cluster-replicas 1 --cluster-yes`; waits (up to
 * 30 s) for cluster_state:ok on every node and a CLUSTER SLOTS that every
 * node agrees on.  0 or -1. */
int tt_cluster_start(tt_cluster_t *c);
/* The same, every node started with the options more[] too (NULL-
 * terminated, 15 at most: e.g. a --rename-command). */
int tt_cluster_start_with(tt_cluster_t *c, const char *const *more);
void tt_cluster_stop(tt_cluster_t *c);
/* Waits until every node says cluster_state:ok and all agree on the slot
 * map; 1 if so, 0 on time-out. */
int tt_cluster_wait_ok(const tt_cluster_t *c, long timeout_ms);
/* Slot -> master port, from CLUSTER SLOTS of node i (16384 entries, 0 for
 * an unserved slot).  0 or -1. */
int tt_cluster_slot_map(const tt_cluster_t *c, int i, int *map);
/* Indexes (into c->node) of the masters, as CLUSTER SLOTS of node 0 says;
 * returns how many (up to max). */
int tt_cluster_masters(const tt_cluster_t *c, int *idx, int max);
/* Index of the node listening on port, -1. */
int tt_cluster_index(const tt_cluster_t *c, int port);
/* "redis-cluster://127.0.0.1:P1,...,127.0.0.1:P6" (or only the first
 * `seeds` nodes) into buf. */
char *tt_cluster_url(const tt_cluster_t *c, int seeds, char *buf, size_t size);
/* `redis-cli --cluster reshard` moving `slots` slots from node `from` to
 * node `to` (indexes), in the background.  The pid, or -1; its output in
 * logpath. */
pid_t tt_reshard_start(const tt_cluster_t *c, int from, int to, int slots, int pipeline,
                       char *logpath, size_t logsize);
/* `redis-cli --cluster check`: 0 when the cluster is consistent and every
 * slot is covered (output into *out if not NULL). */
int tt_cluster_check(const tt_cluster_t *c, char **out);

/* The Redis Cluster hash slot of a key (CRC16-XMODEM of its {hash tag}),
 * computed independently of the library. */
unsigned tt_key_slot(const char *key, size_t len);

#endif
