/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.h - distlock-bench: the workloads of SPEC's bench/WORKLOADS.md,
 * run against a redis-server of its own next to two references measured in
 * the same run: the floor (redis-benchmark, one client, no pipelining) and
 * a naive lock (SET NX PX + compare-and-delete, see naive.c).
 *
 *   main.c      options, workload selection, the target checks
 *   server.c    the redis-server of the run: free port, start, stop, signals
 *   rconn.c     the run's server (its URL, as the library reads one) and
 *               plain connections to it (the library's): INFO, CLIENT LIST
 *   proc.c      forked workers: shared memory, start gates, progress, waits
 *   stats.c     clock, samples, percentiles
 *   output.c    RESULT lines, --json, the progress line
 *   locks.c     the library as the workloads use it: names, keys, warm-up
 *   naive.c     the naive lock
 *   floor.c     redis-benchmark floors (EVALSHA "return 1", PING)
 *   w_basic.c   W1 W2 W3 W3b (distlock and naive), W2's serial ceiling
 *   w_local.c   W4 and W4b (W2 with local threads)
 *   w_rw.c      W5
 *   w_scale.c   W6 W7
 *   w_preload.c W8
 *   w_lockall.c LA2 LA8 (lock-all)
 *   w_sem.c     S1 S1l (a semaphore's permits contended)
 *   w_cond.c    C1 (a condition's signal-to-wake latency)
 *   w_shard.c   SH (SH3, SH6): pushes in a cluster the bench starts, 3 and
 *               6 masters: bus publish messages per op, spread handoffs
 *   svg.c       the W3 latency chart
 *
 * Each file has its header of the same name; every file includes this
 * one, which includes them all.
 */
#ifndef DL_BENCH_H
#define DL_BENCH_H

#include "main.h"
#include "server.h"
#include "rconn.h"
#include "stats.h"
#include "proc.h"
#include "output.h"
#include "naive.h"
#include "locks.h"
#include "floor.h"
#include "w_basic.h"
#include "w_local.h"
#include "w_cond.h"
#include "w_rw.h"
#include "w_scale.h"
#include "w_preload.h"
#include "w_lockall.h"
#include "w_sem.h"
#include "w_shard.h"
#include "svg.h"

#endif
