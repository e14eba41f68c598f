/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * barrier_api.h - barrier.c: the barrier API (include/distlock.h:
 * dist_barrier_*), and what the interposer (a `barrier:SYMBOL` entry: a
 * global pthread_barrier_t made a dist_barrier_t) and the tests ask of a
 * barrier beyond it.  barrier.c writes only the object (its magic, name
 * and count, at init); the barrier's state is the primitive's
 * (prim/barrier.h).
 */
#ifndef DL_BARRIER_API_H
#define DL_BARRIER_API_H

#include <time.h>

#include "distlock.h"

/* 0 if barriers can be used with this process's DISTLOCK_URL; EINVAL
 * (worded) with redlock://; the process's start-up errors.  (The
 * interposer refuses a map entry with it, before main.) */
int dl_barrier_check_mode(void);

/* dist_barrier_wait that another thread can stop: once *stop is set
 * (atomic) and dl_barrier_interrupt(b) called, the wait ends as a timed
 * one would at its deadline (its arrival withdrawn, unless its generation
 * tripped) and returns EINTR.  abstime: NULL, or the deadline of a timed
 * wait (ETIMEDOUT).  The same thread's next wait after an EIO continues
 * the arrival that got no reply (Redis counts it once): a retry of the
 * wait, as the interposer's DISTLOCK_ON_ERROR=wait makes, is the same
 * arrival. */
int dl_barrier_wait_stoppable(dist_barrier_t *b, const struct timespec *abstime, const int *stop);
void dl_barrier_interrupt(dist_barrier_t *b);

/* dist_barrier_wait (abstime NULL) or timedwait that also gives, once
 * released, the generation it was released in (Redis's number of it, the
 * same in every process; 0 if unknown): the nemesis's checks group
 * releases by it. */
int dl_barrier_wait_gen(dist_barrier_t *b, const struct timespec *abstime, uint64_t *gen);

#endif
