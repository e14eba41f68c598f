/* SPDX-License-Identifier: BSD-3-Clause */
/* rcluster.h - a Redis Cluster of the bench's own (rcluster.c): n masters
 * on free ports of 127.0.0.1, no replicas, the slots split evenly, started
 * for a workload and stopped after it (SH, W9). */
#ifndef BENCH_RCLUSTER_H
#define BENCH_RCLUSTER_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "launch.h"

#define RCL_MAX 6
typedef struct rcluster {
    int n;
    dl_launched_t node[RCL_MAX];
    int bus[RCL_MAX];
    char dir[64];
    char url[400];            /* redis-cluster://127.0.0.1:P1,... */
    char wl[8];               /* the workload, in messages */
} rcluster_t;

/* Starts n masters (n <= RCL_MAX; master i serves slots [i*16384/n,
 * (i+1)*16384/n)), met through the first, and waits until every node says
 * cluster_state:ok and knows all n.  wl names the workload in messages.
 * 0, or -1 (said on stderr; rcl_stop still cleans up). */
int rcl_start(rcluster_t *c, int n, const char *wl);
void rcl_stop(rcluster_t *c);
/* One command on a fresh connection to 127.0.0.1:port (5 s time-out);
 * the reply or NULL. */
redisReply *rcl_at(int port, const char *fmt, ...);
/* A plain connection to master i, named like rc_connect's; NULL + said. */
redisContext *rcl_connect(const rcluster_t *c, int i, const char *name);
/* The master that serves key. */
int rcl_master_of(const rcluster_t *c, const char *key);
/* A lock name (lock_name(wl, "<tag><k>.<j>")) whose slot master m serves. */
void rcl_name_on(const rcluster_t *c, int m, const char *wl, const char *tag, int k, char *buf,
                 size_t size);

#endif
