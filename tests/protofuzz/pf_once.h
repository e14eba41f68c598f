/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pf_once.h - the protocol fuzzer for the once's scripts (lua/once_*.lua),
 * pf_once.c.  Simulated processes drive them as prim/once.c does, with the
 * lock's scripts for the running state (acquire.lua on the once's keys:
 * tries, or queued; renew.lua; release.lua), short leases that lapse (a
 * process that stops renewing is a process that died mid-routine), the
 * completion's reply lost (sent again: told so), and pushes read.
 *
 * Invariants, after every step:
 *   - once_check says complete exactly when a once_done said it kept the
 *     completion (1 or 2), and never forgets it; the completion key never
 *     expires;
 *   - once_done keeps it only when the caller holds the running state (1)
 *     or nobody does (2), and refuses (0) when another process holds it,
 *     judged against the running state Redis had just before (a hold near
 *     the end of its lease is judged either way);
 *   - a process "runs the routine" only holding the running state with
 *     once_check saying not complete; after a completion nobody does;
 *   - a completion kept pushes "k 0 KEY" once to every other process that
 *     was queued for the running state, and to nobody else.
 */
#ifndef PF_ONCE_H
#define PF_ONCE_H

#include <stdint.h>
#include <stdio.h>

typedef struct pf_once_opts {
    uint64_t seed;
    int steps;
    int procs;                 /* 2..8 */
    const char *host;
    int port;
    long max_ms;               /* >0: stop after this long (passes) */
    FILE *trace;               /* non-NULL: one line per step */
} pf_once_opts_t;

/* 0 every invariant held; 1 one broke (why); -1 the server could not be
 * used (why). */
int pf_once_fuzz(const pf_once_opts_t *o, int *steps_done, char *why, size_t whylen);

#endif
