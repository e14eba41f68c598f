/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pf_barrier.h - the protocol fuzzer for the barrier's scripts
 * (lua/barrier_*.lua), pf_barrier.c: simulated processes, each with
 * several threads, drive them directly with the library's own typed calls,
 * as prim/barrier.c sends them: arrivals (one at a time per process, ids
 * that grow), timed waits leaving, checks, replies lost (the request ran,
 * or was held back on a given-up connection and runs late, after the
 * process's later operations), an arrival that got no reply continued by
 * its thread's next wait (the same id sent again) or withdrawn by another
 * thread's (barrier_leave.lua), arrivals with another count, and the
 * KEYS declared in full or, as under a cluster's ASK, only the first.
 *
 * A model of the barrier follows every script that ran (the generation
 * under way and its arrivals, each process's last operation as Redis keeps
 * it), and after every step:
 *   - every reply read is the model's (an arrival waits, trips, or is told
 *     what became of it when resent; a stale copy does nothing);
 *   - Redis's count of arrivals, its list of them and its generation are
 *     the model's (no arrival counted twice, none lost, a withdrawn one
 *     gone);
 *   - every generation released exactly `count` arrivals, one of them the
 *     serial, and no withdrawn one;
 *   - a trip pushed "k GEN KEY" once to every other process with an
 *     arrival in it, and to nobody else;
 *   - a leave says "released" only for an arrival whose generation
 *     tripped, and "withdrawn" only for one still waiting;
 *   - a check never shows a waiter's generation passed unless it tripped.
 * At the end every lost request is settled or delivered and every waiter
 * leaves: no arrival is left.
 */
#ifndef PF_BARRIER_H
#define PF_BARRIER_H

#include <stdint.h>
#include <stdio.h>

typedef struct pf_barrier_opts {
    uint64_t seed;
    int steps;
    int procs;                 /* 2..8 */
    unsigned count;            /* the barrier's count, 1..8 */
    const char *host;
    int port;
    long max_ms;               /* >0: stop after this long (passes) */
    FILE *trace;               /* non-NULL: one line per step */
} pf_barrier_opts_t;

/* 0 every invariant held; 1 one broke (why: which, at which step); -1 the
 * server could not be used (why). */
int pf_barrier_fuzz(const pf_barrier_opts_t *o, int *steps_done, char *why, size_t whylen);

#endif
