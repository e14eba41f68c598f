/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * holds.h - each thread's stack of holds on a lock (holds.c), the only
 * writer of l->holders: "unlock releases the calling thread's most recent
 * hold".  All with l->core.mu held.
 */
#ifndef DL_HOLDS_H
#define DL_HOLDS_H

#include "lock.h"

dl_holder_t *dl_holder_find(dl_lock_t *l, pid_t tid);
/* Pushes a hold of mode for tid: EAGAIN on count overflow, ENOMEM. */
int dl_holder_push(dl_lock_t *l, pid_t tid, char mode);
/* Pops tid's most recent hold; returns its mode, 0 if tid holds nothing.
 * *last is set when tid now holds nothing on l, and *since then to when
 * its first hold began (dl_holder_t.since). */
char dl_holder_pop(dl_lock_t *l, pid_t tid, int *last, uint64_t *since);

#endif
