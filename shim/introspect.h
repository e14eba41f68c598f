/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * introspect.h - internal questions about this process's holds, for the
 * distlock tool and the interposer (static linking; not in distlock.h).
 */
#ifndef DL_INTROSPECT_H
#define DL_INTROSPECT_H

#include "distlock.h"

/* 1 when the calling thread holds m (or rw) but Redis no longer has the
 * hold (the watchdog found it gone: lease lapsed, key deleted, server lost
 * it); 0 while it is fine; EPERM-like -1 when the thread holds nothing or
 * the object is bad.  Never blocks. */
int dl_mutex_hold_lost(dist_mutex_t *m);
int dl_rwlock_hold_lost(dist_rwlock_t *rw);

#endif
