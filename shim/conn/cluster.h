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
 * Owner: cluster.c's state is its node table and slot map, under its own
 * mutex; nodes are added (a redirection to a new one) but never freed
 * before the end, so a link taken from the table stays valid.
 */
#ifndef DL_CLUSTER_H
#define DL_CLUSTER_H

#include <stddef.h>

#include "conn.h"

extern const dl_backend_t dl_backend_cluster;

/* The hash slot of a key (CRC16 of its {hash tag}, as Redis computes it). */
unsigned dl_key_slot(const char *key, size_t len);

#endif
