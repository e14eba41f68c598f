/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pf_sem.h - the protocol fuzzer for the semaphore's scripts
 * (lua/sem_*.lua), pf_sem.c: simulated processes drive them directly,
 * with the library's own typed calls, in seeded random interleavings of
 * waits and tries (registering or not), posts, cancels, renewals (leased),
 * replies lost (the request ran, or was held back and runs late, a wait
 * with its withdrawal right behind it as the command link writes it), the
 * settling of a lost request before the process's next one (as
 * prim/sem.c does), time passing (short leases), and Redis losing the
 * semaphore (its keys deleted, as a restart without persistence or a
 * flush would): each process knows the incarnation it opened and sends
 * it with every operation, and one told its semaphore is lost opens the
 * new one (as a program destroys and initializes it again).
 *
 * Invariants, after every step:
 *   - no script fails;
 *   - the queue's three keys agree (every queued process has a deadline
 *     and a registration, and nothing else does);
 *   - counting: the value is never negative, and whenever no request sent
 *     to the semaphore's present incarnation is unsettled or held back it
 *     is exactly the first value + the posts confirmed - the permits
 *     confirmed taken since that incarnation was made (a post never lost
 *     nor counted twice, a permit never taken twice for one wait, and
 *     nothing sent to a lost incarnation, settled or run late, ever
 *     counted in the new one);
 *   - an operation sent with an incarnation that Redis lost is answered
 *     so (never done), and one sent with the present one is never told it
 *     is lost;
 *   - leased: `used` is the sum of the holders' counts and at most the
 *     permits; the permits the processes believe valid (taken or renewed
 *     at t, valid until t + lease less a margin) are at most the permits,
 *     and each such process is a holder in Redis with at least that many.
 * At the end every request is settled or delivered and every permit
 * given back (or left to lapse): the value must be the first one.
 */
#ifndef PF_SEM_H
#define PF_SEM_H

#include <stdint.h>
#include <stdio.h>

typedef struct pf_sem_opts {
    uint64_t seed;
    int steps;
    int procs;                 /* 2..8 */
    int leased;                /* DIST_SEM_LEASED */
    unsigned value;            /* the first value (permits) */
    const char *host;
    int port;
    long max_ms;               /* >0: stop after this long (passes) */
    FILE *trace;               /* non-NULL: one line per step */
} pf_sem_opts_t;

/* 0 every invariant held; 1 one broke (why: which, at which step); -1 the
 * server could not be used (why). */
int pf_sem_fuzz(const pf_sem_opts_t *o, int *steps_done, char *why, size_t whylen);

#endif
