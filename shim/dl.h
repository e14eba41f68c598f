/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dl.h - small internals every file of the library uses: time, the
 * per-thread last error, logging and the statistics counters.
 */
#ifndef DL_H
#define DL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "dl_stats.h"

#define DL_FOREVER UINT64_MAX   /* a deadline that never comes */

/* --- clock.c --- */
uint64_t dl_now_ms(void);                      /* CLOCK_MONOTONIC */
uint64_t dl_now_us(void);                      /* the same, in microseconds */
/* Converts a CLOCK_REALTIME abstime to a monotonic deadline in ms.
 * EINVAL for tv_nsec outside [0, 1e9). */
int dl_deadline_from_abstime(const struct timespec *abstime, uint64_t *deadline);
/* CLOCK_MONOTONIC timespec for a deadline in ms (for condvars). */
void dl_timespec_at(uint64_t deadline_ms, struct timespec *ts);
void dl_timespec_at_us(uint64_t deadline_us, struct timespec *ts);   /* the same, us */
void dl_sleep_ms(unsigned ms);
pid_t dl_tid(void);                            /* this thread's kernel id */
uint64_t dl_random(void);                      /* cheap per-thread jitter, not secret */
void dl_tid_forget(void);                      /* after fork, in the child */

/* --- error.c --- */
enum { DL_LOG_OFF, DL_LOG_ERROR, DL_LOG_WARN, DL_LOG_INFO, DL_LOG_DEBUG };
extern int dl_log_level;
/* The level dl_log prints up to: DISTLOCK_LOG as the library loaded it
 * (process.c), or what a tool or the interposer chose; the setter returns
 * the level it replaced. */
int dl_log_set_level(int level);
int dl_log_get_level(void);
/* Size of the per-thread last error (dist_lasterror). */
#define DL_ERRMAX 512
/* Sets this thread's dist_lasterror() text. */
void dl_seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sets it and returns code, for `return dl_fail(EINVAL, "...")`. */
int dl_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Quotes a lock name for messages: printable, truncated, never binary. */
const char *dl_quote(const char *name, size_t len, char *buf, size_t size);

/* --- status.c --- */
extern dl_stats_t dl_stats_g;
#define DL_STAT_ADD(field, n) __atomic_fetch_add(&dl_stats_g.field, (unsigned long)(n), __ATOMIC_RELAXED)

#endif
