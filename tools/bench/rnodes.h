/* SPDX-License-Identifier: BSD-3-Clause */
/* rnodes.h - the servers a workload runs on, the run's server or the
 * masters of a cluster of the bench's (rcluster.h), and what it reads off
 * them summed over all: CPU, memory, clients (rnodes.c). */
#ifndef BENCH_RNODES_H
#define BENCH_RNODES_H

#include <hiredis/hiredis.h>

#include "rcluster.h"

typedef struct rnodes {
    const rcluster_t *cl;     /* NULL: the run's server (g_redis) */
    int n;                    /* 1, or the cluster's masters */
} rnodes_t;

void rnodes_single(rnodes_t *s);
void rnodes_cluster(rnodes_t *s, const rcluster_t *cl);
/* A plain connection to node i (rc_connect or rcl_connect). */
redisContext *rnodes_connect(const rnodes_t *s, int i, const char *name);
/* The node that serves key (0 on one server). */
int rnodes_of(const rnodes_t *s, const char *key);

/* INFO figures summed over the nodes. */
typedef struct rsnap {
    double cpu_s;             /* used_cpu_sys + used_cpu_user */
    long long used_memory;
    long long calls;          /* INFO commandstats: every command but INFO (those
                                 the scripts run too) */
    long long scripts;        /* EVALSHA, EVAL and their _RO calls */
} rsnap_t;
int rnodes_snap(const rnodes_t *s, rsnap_t *out);
/* The nodes' CPU seconds per second while nobody works (the cron, a
 * cluster bus's pings), measured over `us`. */
double rnodes_idle_cpu(const rnodes_t *s, unsigned long us);

/* CLIENT LIST over the nodes: every connection, those named `bench-ctl`
 * (the bench's own control connections), those named another bench-*
 * (the workloads' plain connections and the naive lock's) and the rest
 * (the library's).  0 or -1. */
typedef struct rclients {
    long total, ctl, bench, library;
} rclients_t;
int rnodes_clients(const rnodes_t *s, rclients_t *out);

#endif
