/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockwrap.h - what the wrappers of the pthread lock kinds share
 * (lockwrap.c): how a local lock was asked for, the distributed half of a
 * mapped lock's acquisition and release around the program's own lock,
 * and the exported wrapper they are all written as (DLP_LOCK_WRAP).
 * Included through preload.h.
 */
#ifndef DLP_LOCKWRAP_H
#define DLP_LOCKWRAP_H

#include <time.h>

#pragma GCC visibility push(hidden)

/* How the local lock is asked for: DLP_BLOCK, DLP_TRY, or DLP_TIMED with
 * an abstime on clk (DLP_NOCLOCK: the function's own CLOCK_REALTIME
 * variant).  The distributed half waits on the same clock (the library's
 * clock calls): never early on it, whatever the other clock does. */
typedef struct dlp_how {
    int how;
    clockid_t clk;
    const struct timespec *abstime;
} dlp_how_t;

#define DLP_NOCLOCK ((clockid_t)-1)

/* The clock of h's abstime: clk, or CLOCK_REALTIME for DLP_NOCLOCK. */
static inline clockid_t dlp_clock_of(const dlp_how_t *h)
{
    return h->clk == DLP_NOCLOCK ? CLOCK_REALTIME : h->clk;
}

/* Does a lock call on e go to libc alone?  Yes when e is not of `kind`,
 * or when the interposer itself is calling; a dormant program stops here
 * at its first lock instead (dlp_dormant_check, naming kind->word;
 * caller: the wrapper's return address). */
int dlp_local_only(const dlp_entry_t *e, const dlp_kind_t *kind, const void *caller);

/* The distributed half of an acquisition whose local lock the caller now
 * holds; if it fails, the local lock is given back with unlock(obj).  0 or
 * the error of dlp_dist_acquire (EOWNERDEAD of a robust mutex: acquired,
 * both held). */
int dlp_acquire_dist(dlp_entry_t *e, char mode, const dlp_how_t *h, int (*unlock)(void *),
                     void *obj);

/* An unlock of obj, an object of e (of `kind`, else libc alone): the real
 * unlock(obj) first (it decides whether the caller may unlock), then the
 * distributed release. */
int dlp_release_dist(dlp_entry_t *e, const dlp_kind_t *kind, int (*unlock)(void *), void *obj);

/* An exported lock call: a mapped object goes to acquire(e, obj, mode, how,
 * the caller's address), anything else straight to the real function
 * (one range check: table.h). */
#define DLP_LOCK_WRAP(fn, acquire, obj, mode, params, args, ...)                 \
    DLP_EXPORT int fn params                                                    \
    {                                                                           \
        dlp_entry_t *e = dlp_lookup(obj);                                       \
        if (DLP_UNLIKELY(e != NULL))                                            \
            return acquire(e, obj, mode, (dlp_how_t){ __VA_ARGS__ },            \
                           __builtin_return_address(0));                        \
        return DLP_REAL(fn) args;                                               \
    }

#pragma GCC visibility pop

#endif
