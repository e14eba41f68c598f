/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mutex.h - mutex.c: the pthread_mutex_* mirror, whose API is the public
 * one (include/distlock.h: dist_mutex_*, dist_mutexattr_*), and what
 * the distlock tool and the tests ask of a mutex beyond it.  mutex.c
 * writes only its attribute objects and, at init, the object's
 * attributes; the lock state is the lock primitive's (prim/lock.h).
 */
#ifndef DL_MUTEX_H
#define DL_MUTEX_H

#include "distlock.h"

/* 1 when the calling thread holds m but Redis no longer has the hold
 * (the watchdog found it gone: lease lapsed, key deleted, server lost it);
 * 0 while it is fine; -1 when the thread holds nothing or the object is
 * bad.  Never blocks. */
int dl_mutex_hold_lost(dist_mutex_t *m);

#endif
