/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness.h - what every distlock test suite shares; one include for the
 * modules of the harness, each with its own header:
 *
 *   harness_runner   each test in a process of its own, with a time limit
 *   harness_util     clocks, polling waits, pipes, error names
 *   harness_server   the suite's redis-server on a free port of 127.0.0.1,
 *                    and other servers a test starts, stops, kills, pauses
 *   harness_redis    the tests' own connection to it, keys, waits on Redis
 *   harness_child    forked children, TH_CHECK* / TH_ASSERT_*, fixtures
 *   harness_actor    helper threads running lock calls on request
 *   harness_proc     helper processes running lock calls on request
 *
 * and, included by the suites that use them:
 *
 *   harness_checker  the mutual-exclusion checker: processes x threads
 *                    taking locks and recording every hold (the workload
 *                    in harness_checker_work, the checks in harness_verify)
 *   harness_proxy    a TCP proxy injecting network faults (its forwarding
 *                    thread in harness_proxy_loop)
 *   harness_topo     replicas and sentinels (harness_topo_proc: processes,
 *                    ports, registry; harness_cluster: a Redis Cluster)
 *   harness_script   the library's scripts run directly
 *
 * Tests synchronise on messages (actors, procs, pipes) instead of sleeps.
 */
#ifndef TH_HARNESS_H
#define TH_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "distlock.h"

#include "harness_util.h"
#include "harness_server.h"
#include "harness_redis.h"
#include "harness_child.h"
#include "harness_actor.h"
#include "harness_proc.h"
#include "harness_runner.h"

#endif
