/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_actor.h - helper threads ("actors") of the test process that run
 * calls on request, and the lock calls they are usually asked to make.
 */
#ifndef TH_HARNESS_ACTOR_H
#define TH_HARNESS_ACTOR_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "distlock.h"
#include "harness_util.h"

/* ------------------------------------------------------------------- actors */

/* A helper thread of this process that runs calls on request, so a test
 * can make "another thread" take and hold a lock. */
typedef struct th_actor th_actor_t;
typedef int (*th_fn)(void *arg);

th_actor_t *th_actor_new(void);
/* Starts fn(arg) in the actor; returns at once. */
void th_actor_post(th_actor_t *a, th_fn fn, void *arg);
/* Waits for the posted call: 0 and *rc, or -1 on time-out. */
int th_actor_wait(th_actor_t *a, int *rc, long timeout_ms);
/* post + wait (10 s); returns the call's result or TH_WAIT_TIMEOUT. */
int th_actor_call(th_actor_t *a, th_fn fn, void *arg);
/* Joins the thread (waits for a posted call first). */
void th_actor_free(th_actor_t *a);
/* Kernel tid of the actor thread. */
pid_t th_actor_tid(th_actor_t *a);

/* A lock call for an actor to make (th_actor_post/call with one of the
 * th_do_* below as fn): the lock, the abstime of a timed call, and when a
 * call that may wait returned (CLOCK_MONOTONIC us), which tests compare
 * with the moment they released the lock. */
typedef struct th_lockcall {
    dist_mutex_t *m;
    dist_rwlock_t *rw;
    struct timespec ts;
    int64_t t_done_us;
} th_lockcall_t;

int th_do_lock(void *c);                    /* dist_mutex_lock, sets t_done_us */
int th_do_timedlock(void *c);               /* dist_mutex_timedlock(ts), sets t_done_us */
int th_do_trylock(void *c);
int th_do_unlock(void *c);
int th_do_rdlock(void *c);                  /* dist_rwlock_rdlock, sets t_done_us */
int th_do_wrlock(void *c);                  /* dist_rwlock_wrlock, sets t_done_us */
int th_do_tryrdlock(void *c);
int th_do_trywrlock(void *c);
int th_do_rwunlock(void *c);

#endif
