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
 * *last is set when tid now holds nothing on l (its section ends), *since
 * then to when its first hold began (dl_holder_t.since), *lapsed to
 * whether the section saw a lapse (dl_holder_t.lapsed), and *od to whether
 * a robust EOWNERDEAD is pending in it (dl_holder_t.od). */
char dl_holder_pop(dl_lock_t *l, pid_t tid, int *last, uint64_t *since, int *lapsed, int *od);
/* h's holds are in the process's hold of `fence` from now on, after the
 * hold they were in lapsed (taken anew by a relock, or by another thread):
 * h's section has seen a lapse, and the unlock that ends it says so. */
void dl_holder_moved(dl_holder_t *h, uint64_t fence);
/* h's section carries a lapse from before a condition wait, which ended
 * its earlier record (dl_lock_restore). */
void dl_holder_mark_lapsed(dl_holder_t *h);
/* A lock call of h's thread through a robust object returned EOWNERDEAD:
 * pending until dist_mutex_consistent (dl_holder_t.od). */
void dl_holder_owner_dead(dl_holder_t *h);

#endif
