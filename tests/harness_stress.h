/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_stress.h - a stress run over several lock names.
 */
#ifndef TH_HARNESS_STRESS_H
#define TH_HARNESS_STRESS_H

#include <stdint.h>

/* P processes x T threads take and release mutexes named names[0..n) (in
 * turn, starting at a per-thread offset) until told to stop or `ops` holds
 * per thread are done.  Inside each hold the holder increments the name's
 * counter in shared memory non-atomically (read, pause hold_us, write) and
 * records the hold: start (after the lock call) and end (before the unlock
 * call), CLOCK_MONOTONIC, comparable across processes; fence; pid/tid; the
 * lock and unlock return codes.  A failed lock call (EIO, ETIMEDOUT, ...)
 * is counted, its dist_lasterror() kept, and retried after 10 ms; the
 * longest lock call is recorded. */

#define TT_MAX_NAMES 16

typedef struct tt_hold {
    int64_t start_us, end_us;
    uint64_t fence;
    int32_t pid, tid;
    int16_t name, lock_rc, unlock_rc, filled;
} tt_hold_t;

typedef struct tt_stress_cfg {
    int procs, threads;
    int nnames;
    char names[TT_MAX_NAMES][64];
    long ops;                     /* per thread; 0: until tt_stress_stop() */
    long hold_us;                 /* pause inside each hold */
    long timed_ms;                /* >0: dist_mutex_timedlock(now + timed_ms); 0: lock */
    long lease_ms;                /* >0: fixed lease attribute */
    const char *const *env;       /* "VAR=value" set in each child before its first call */
    uint64_t cap;                 /* hold records (default 200000) */
} tt_stress_cfg_t;

typedef struct tt_stress tt_stress_t;

typedef struct tt_stress_report {
    uint64_t holds, ownerdead;
    uint64_t overlaps, excused;        /* not excused / excused by a non-0 unlock */
    uint64_t fence_inversions;
    uint64_t lost_updates;             /* holds - counters, over all names */
    uint64_t unlock_enolck, unlock_eio, unlock_other;
    uint64_t lock_eio, lock_timedout, lock_other;
    int64_t max_call_ms;               /* longest lock call (any result) */
    int64_t max_gap_ms;                /* longest time between two successful acquisitions */
    int64_t gap_from_us, gap_to_us;    /* where that gap was (CLOCK_MONOTONIC) */
    int64_t name_gap_ms[TT_MAX_NAMES]; /* the same per lock name */
    uint64_t redirects, reconnects;    /* the workers' dl_stats: cluster MOVED/ASK followed, reconnections */
    int children_failed;
    char first[300];                   /* first violation */
    char first_error[256];             /* a dist_lasterror() of a failed lock call */
} tt_stress_report_t;

/* Forks the workers; returns at once (NULL on failure). */
tt_stress_t *tt_stress_start(const tt_stress_cfg_t *cfg);
/* Successful holds recorded so far. */
uint64_t tt_stress_holds(const tt_stress_t *s);
/* Successful acquisitions that started at or after t_us (CLOCK_MONOTONIC
 * µs), and how many distinct processes made them. */
uint64_t tt_stress_holds_since(const tt_stress_t *s, int64_t t_us, int *procs);
/* First successful acquisition at or after t_us, or -1. */
int64_t tt_stress_first_since(const tt_stress_t *s, int64_t t_us);
/* Tells the workers to stop, waits (timeout_ms) for them, verifies. */
void tt_stress_finish(tt_stress_t *s, long timeout_ms, tt_stress_report_t *rep);
void tt_stress_free(tt_stress_t *s);
void tt_stress_print(const char *title, const tt_stress_report_t *rep);

#endif
