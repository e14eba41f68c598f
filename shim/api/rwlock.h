/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rwlock.h - rwlock.c: the pthread_rwlock_* mirror, whose API is the public
 * one (include/distlock.h: dist_rwlock_*, dist_rwlockattr_*), and what
 * the distlock tool and the tests ask of a rwlock beyond it.  rwlock.c
 * writes only its attribute objects and, at init, the object's
 * attributes; the lock state is the lock primitive's (prim/lock.h).
 */
#ifndef DL_RWLOCK_H
#define DL_RWLOCK_H

#include "distlock.h"

/* 1 when the calling thread holds rw but Redis no longer has the hold
 * (the watchdog found it gone: lease lapsed, key deleted, server lost it);
 * 0 while it is fine; -1 when the thread holds nothing or the object is
 * bad.  Never blocks. */
int dl_rwlock_hold_lost(dist_rwlock_t *rw);

/* rdlock (mode 'r') or wrlock ('w') that another thread can stop: once
 * *stop is set (atomic) and dl_rwlock_interrupt(rw) called, the wait ends
 * as a timed one would at its deadline (a request queued in Redis is
 * withdrawn) and the call returns EINTR.  Else as dist_rwlock_rdlock /
 * _wrlock.  (The interposer's blocking file locks: a signal handler ran.) */
int dl_rwlock_lock_stoppable(dist_rwlock_t *rw, char mode, const int *stop);
void dl_rwlock_interrupt(dist_rwlock_t *rw);

#endif
