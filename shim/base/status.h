/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * status.h - process-wide counters of what the library sent to Redis
 * (status.c, which owns them: every file adds with DL_STAT_ADD, relaxed
 * atomics, and nobody resets them).
 *
 * Internal (not in distlock.h): the tests and distlock-bench link the static
 * library and read these to check protocol costs (round trips per operation,
 * watchdog batching, local handoffs) without guessing from timings.
 */
#ifndef DL_STATUS_H
#define DL_STATUS_H

typedef struct dl_stats {
    unsigned long roundtrips;        /* batches written+read on the command connection */
    unsigned long commands;          /* commands sent on the command connection */
    unsigned long reconnects;        /* command + subscriber reconnections (not
                                        a link's first connection) */
    unsigned long redirects;         /* cluster MOVED and ASK followed */
    unsigned long watchdog_ticks;    /* watchdog wake-ups that renewed at least one hold */
    unsigned long watchdog_roundtrips; /* round trips the watchdog made (pipelined batches) */
    unsigned long renewed;           /* holds renewed */
    unsigned long renewals_late;     /* renewals sent with less than a third of their hold's
                                        lease left: the watchdog fell behind (watchdog.c) */
    unsigned long watchdog_behind;   /* watchdog passes over every hold that took longer
                                        than a tick */
    unsigned long lost;              /* holds found lost (renew or release) */
    unsigned long grants;            /* grants received by push */
    unsigned long local_handoffs;    /* holds passed between threads without Redis */
    unsigned long lingers;           /* unlocks that kept the Redis hold for a relock */
    unsigned long linger_ends;       /* of which ended by the watchdog (nobody relocked) */
    unsigned long fallback_checks;   /* waits that got the lock by asking again after a
                                        timer, not by a push (a missed or absent push) */
    unsigned long trust_ends;        /* signs that Redis may have lost state (trust.c) */
    unsigned long confirms;          /* round trips that confirmed a hold before it
                                        served another thread (hold.c) */
    unsigned long undos_written;     /* connections given up on with undos written behind
                                        their unanswered requests (cmdlink_io.c) */
    unsigned long cond_waits;        /* condition waits registered in Redis */
    unsigned long cond_pushes;       /* condition waiters woken by a pushed signal */
    unsigned long cond_found;        /* condition waiters that found by asking Redis that
                                        they were woken (a push lost) or lapsed */
    unsigned long cond_local_wakes;  /* signals that woke a waiter of their own process
                                        without a round trip (prim/cond.c) */
    unsigned long cond_forwards;     /* signals passed on by such a waiter, whose
                                        registration another signal had taken */
    unsigned long barrier_arrivals;  /* arrivals at barriers counted in Redis */
    unsigned long barrier_pushes;    /* pushes received that a barrier generation was
                                        released (one per process and generation) */
    unsigned long barrier_checks;    /* checks of where a barrier is, by a process
                                        whose threads waited without a push */
    unsigned long barrier_found;     /* barrier waiters released (or told of a loss)
                                        by such a check: a push lost or not sent */
    unsigned long once_runs;         /* once routines this process ran */
    unsigned long once_takeovers;    /* ... after the process running it died */
} dl_stats_t;

extern dl_stats_t dl_stats_g;
#define DL_STAT_ADD(field, n) __atomic_fetch_add(&dl_stats_g.field, (unsigned long)(n), __ATOMIC_RELAXED)

/* Copies the counters of this process (never blocks). */
void dl_stats_get(dl_stats_t *out);

/* The calling thread's round trips: each round trip that carried a
 * command of this thread counts once, whichever thread wrote and read it
 * (a link pipelines every thread's commands).  What a call cost, read
 * apart from what the library's own threads (the watchdog, the lingerer,
 * the subscriber's slot-map reloads) add to `roundtrips` meanwhile. */
unsigned long dl_stats_thread_roundtrips(void);
/* Where the link counts them (cmdlink.c, cmdlink_io.c): this thread's. */
unsigned long *dl_stats_thread_trips(void);

#endif
