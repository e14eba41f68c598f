/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tally.h - an object's counters (dl_core_tally: core.h), which the metrics
 * file reports by name (metrics.c).  Counted only while the process
 * writes a metrics file (DISTLOCK_METRICS_FILE): with the variable unset,
 * each counting point costs a load of one flag that never changes, and
 * no clock is read for it.
 *
 * Any thread adds to an object's counters, with relaxed atomics, through
 * the calls below (no lock needed: a primitive's call counts as it
 * returns, the core as its round trips and losses happen); metrics.c reads
 * them, and alone writes `slot`.
 */
#ifndef DL_TALLY_H
#define DL_TALLY_H

#include <stdint.h>

struct dl_core;

/* The histograms' buckets: the upper bounds (us) of all but the last,
 * which is +Inf.  From a local handoff (well under 10 us) to a lock held
 * or waited for minutes. */
#define DL_TALLY_BUCKETS 12
extern const uint64_t dl_tally_le_us[DL_TALLY_BUCKETS - 1];

typedef struct dl_hist {
    unsigned long n[DL_TALLY_BUCKETS];  /* per bucket (not cumulative) */
    unsigned long long sum_us;
} dl_hist_t;

typedef struct dl_tally {
    unsigned long acquired;   /* lock calls that returned holding it (0, EOWNERDEAD) */
    unsigned long ownerdead;  /* of which EOWNERDEAD */
    unsigned long enolck;     /* unlocks that returned ENOLCK */
    unsigned long eio;        /* calls that returned EIO */
    unsigned long lost;       /* holds found lapsed while held (dist_onlost's) */
    unsigned long roundtrips; /* round trips the process's threads made for it (not
                                 the watchdog's batched renewals) */
    unsigned long handoffs;   /* holds passed between threads without Redis */
    dl_hist_t wait;           /* from a lock call to its return holding the lock */
    dl_hist_t hold;           /* from a thread's first hold to its last unlock */
    int slot;                 /* metrics.c's: where its counts are written */
} dl_tally_t;

/* Set once, when the process's state is created with a metrics file. */
extern int dl_tally_enabled;

static inline int dl_tally_on(void)
{
    return __builtin_expect(__atomic_load_n(&dl_tally_enabled, __ATOMIC_RELAXED), 0);
}

/* Adds n to a counter of o's (a field of dl_tally_t), when counting. */
#define DL_TALLY_ADD(o, field, n) do { \
        dl_tally_t *t_ = dl_tally_on() ? dl_core_tally(o) : NULL; \
        if (t_) \
            __atomic_fetch_add(&t_->field, (unsigned long)(n), __ATOMIC_RELAXED); \
    } while (0)

/* When a timed span starts: now (us), or 0 when not counting. */
uint64_t dl_tally_start(void);
/* A lock call on o that began at since (dl_tally_start) returned rc: an
 * acquisition (0, EOWNERDEAD: its wait into the histogram), EOWNERDEAD,
 * EIO.  Nothing when since is 0. */
void dl_tally_call(struct dl_core *o, int rc, uint64_t since);
/* An unlock of o returned rc (ENOLCK, EIO are counted). */
void dl_tally_unlock(struct dl_core *o, int rc);
/* A thread's hold on o that began at since ended (its last unlock). */
void dl_tally_held(struct dl_core *o, uint64_t since);
/* The bucket of a span of us microseconds. */
int dl_tally_bucket(uint64_t us);

#endif
