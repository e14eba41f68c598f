/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock.h - monotonic time, deadlines, sleeping, thread ids and the
 * library's threads (clock.c).
 *
 * Every deadline inside the library is on one clock, CLOCK_BOOTTIME (which
 * counts a suspend, as Redis's TTLs do), in ms or us; CLOCK_REALTIME
 * and CLOCK_MONOTONIC appear at the API (an abstime on the caller's
 * clock: the clock* calls), and CLOCK_MONOTONIC in the condition
 * variables' timespecs (dl_timespec_at), converted here.
 * clock.c keeps only per-thread caches (the thread id, the jitter seed).
 */
#ifndef DL_CLOCK_H
#define DL_CLOCK_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define DL_FOREVER UINT64_MAX   /* a deadline that never comes */

uint64_t dl_now_ms(void);                      /* CLOCK_BOOTTIME */
uint64_t dl_now_us(void);                      /* the same, in microseconds */
/* Converts a CLOCK_REALTIME abstime to a deadline in ms on dl_now_ms's
 * clock, rounded up: a wait that ends at the deadline never ends before
 * abstime (unless the wall clock is set back meanwhile: see
 * dl_abstime_passed).  EINVAL for tv_nsec outside [0, 1e9). */
int dl_deadline_from_abstime(const struct timespec *abstime, uint64_t *deadline);
/* Has CLOCK_REALTIME reached abstime?  A timed call asks before it says
 * ETIMEDOUT, and waits again if the clock was set back during its wait. */
int dl_abstime_passed(const struct timespec *abstime);
/* The same two on the caller's clock (the clock* calls): CLOCK_REALTIME
 * or CLOCK_MONOTONIC (dl_clock_ok).  A deadline from CLOCK_MONOTONIC may
 * come early by a suspend's length (the library's clock counts it, that
 * one does not): the check before ETIMEDOUT then sends the call back to
 * wait, as for a wall clock set back. */
int dl_clock_ok(clockid_t clock);
int dl_deadline_on(clockid_t clock, const struct timespec *abstime, uint64_t *deadline);
int dl_passed_on(clockid_t clock, const struct timespec *abstime);
/* A round trip's worth (ms): a timed call with less time left than this
 * has no time to wait, and its request to Redis is a try. */
#define DL_ROUND_TRIP_MS 50
/* When the link gives up on the round trip of a timed call's request
 * (dl_cmd_t's deadline; 0: at the I/O time-out alone): at the call's
 * deadline, when at least a round trip's worth is left; else never before
 * the I/O time-out, as a try call's.  A deadline already past (or about to
 * pass) must still try once (SPEC: like pthreads), and a try that Redis
 * ran must not be withdrawn and called a time-out because its reply took
 * longer than the time left: on a loaded machine or a slow network it
 * always would. */
uint64_t dl_round_trip_cut(uint64_t deadline);
/* The CLOCK_MONOTONIC timespec at which a deadline in ms of dl_now_ms's
 * clock comes (for condvars, whose clock is CLOCK_MONOTONIC). */
void dl_timespec_at(uint64_t deadline_ms, struct timespec *ts);
void dl_timespec_at_us(uint64_t deadline_us, struct timespec *ts);   /* the same, us */
void dl_sleep_ms(unsigned ms);
pid_t dl_tid(void);                            /* this thread's kernel id */
uint64_t dl_random(void);                      /* cheap per-thread jitter, not secret */
void dl_tid_forget(void);                      /* after fork, in the child */

/* Starts one of the library's threads: detached, with all signals blocked
 * (they take none of the host program's). */
int dl_thread_start(void *(*fn)(void *), void *arg);
/* The same with a stack of `stack` bytes (0: the default). */
int dl_thread_start_sized(void *(*fn)(void *), void *arg, size_t stack);

#endif
