/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster.h - the backend of redis-cluster://: a link per node (cmdlink.h,
 * each failing fast), commands routed by the hash slot of their key, the
 * slot map from CLUSTER SLOTS, and the redirections of a live cluster
 * (MOVED, ASK, TRYAGAIN, CLUSTERDOWN), retried for the I/O timeout.
 *
 * Every key of a lock shares its {name} hash tag, so each script call has
 * one slot.  Redirected commands did not run; a command whose node failed
 * mid-flight may have, and is marked retried.  To the layers above the
 * cluster is one node; it takes no posts (dl_caps_t).
 *
 * While a lock's slot migrates, its script is never run where only part of
 * the lock's keys are: it declares a key that never exists besides the
 * lock's, the client moves the lock's keys to the importing node together
 * (MIGRATE ... KEYS) when the source still has some, and runs the script
 * there under ASK with the lock's first key declared (cluster.c's top
 * comment says why each step is sound).
 *
 * Owner: cluster.c's state is its node table, slot map and the node each
 * migrating slot's last ASK went to (for WAIT), under its own mutex;
 * nodes are added (a redirection to a new one) but never freed before the
 * end, so a link taken from the table stays valid.
 */
#ifndef DL_CLUSTER_H
#define DL_CLUSTER_H

#include <stddef.h>

#include "conn.h"

extern const dl_backend_t dl_backend_cluster;

/* The hash slot of a key (CRC16 of its {hash tag}, as Redis computes it). */
unsigned dl_cluster_slot(const char *key, size_t len);

#endif
