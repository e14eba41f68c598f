/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sem_api.h - sem_api.c: the semaphore API (include/distlock.h: dist_sem_*), and
 * what the interposer, the distlock tool and the tests ask of a semaphore
 * beyond it.  sem_api.c writes only the object (its magic, name, value and
 * flags, at init); the semaphore's state is the primitive's (prim/sem.h).
 */
#ifndef DL_SEM_API_H
#define DL_SEM_API_H

#include "distlock.h"

/* dist_sem_init with sem_open(3)'s choices: how 'c' creates the semaphore
 * if it does not exist (dist_sem_init), 'x' only if it does not (EEXIST
 * otherwise: O_CREAT|O_EXCL), 'o' only opens it (ENOENT if it does not
 * exist: no O_CREAT). */
int dl_sem_init_how(dist_sem_t *s, const char *name, unsigned int value, int flags, char how);

/* dist_sem_wait that another thread can stop: once *stop is set (atomic)
 * and dl_sem_interrupt(s) called, the wait ends as a timed one would at
 * its deadline (its registration withdrawn) and returns EINTR.  abstime:
 * NULL, or the deadline of a timed wait (ETIMEDOUT) on clock, as
 * dist_sem_clockwait's.  (The interposer's sem_wait: a signal handler
 * ran.) */
int dl_sem_wait_stoppable(dist_sem_t *s, clockid_t clock, const struct timespec *abstime,
                          const int *stop);
void dl_sem_interrupt(dist_sem_t *s);

/* 0 if semaphores can be used with this process's DISTLOCK_URL; EINVAL
 * (worded) with redlock://; the process's start-up errors. */
int dl_sem_check_mode(void);

/* A post that failed with EIO is kept: this makes it now.  0 once made
 * (or if none was kept), EIO while Redis does not answer. */
int dl_sem_flush(dist_sem_t *s);

/* Leased permits the calling process holds of s (as it last knew them:
 * 0 once they are known to have lapsed); -1 for a bad object. */
int dl_sem_held_count(dist_sem_t *s);

#endif
