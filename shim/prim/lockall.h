/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockall.h - several locks at once (lockall.c): dist_mutex_lockall,
 * _trylockall and _timedlockall's local admission and Redis holds, all or
 * none, on top of the lock primitive (lock.h) and the hold core.
 *
 * No caller that takes overlapping sets, in any order, deadlocks another:
 * the locks are always taken in one canonical order, by name bytes (the
 * same order in every process), and a caller waits, locally or in Redis,
 * only for a lock that comes after every lock it holds.  The one exception
 * is one call for the whole set (lua/acquire_all.lua), which takes every
 * lock if every one is free with nobody queued, and otherwise nothing: it
 * never waits while holding, so it cannot be part of a cycle either.
 *
 * lockall.c keeps no state: each lock's is lock.c's and the core's.
 */
#ifndef DL_LOCKALL_H
#define DL_LOCKALL_H

#include <stddef.h>

#include "lock.h"

/* One lock of a lock-all, and its request (mode 'w'). */
typedef struct dl_all_req {
    dl_lock_t *l;
    dl_req_t rq;
    size_t at;                /* its index in the caller's array */
    int od_was;               /* the caller's pending robust EOWNERDEAD on l before
                                 the call (lock.c), which an undo of a relock puts
                                 back (lockall.c) */
    int relock;               /* the caller held l before the call */
    int lapse_untold;         /* a relock of an undone attempt took l anew after a
                                 lapse (EOWNERDEAD), which no call has told yet */
    unsigned long epoch;      /* the trust epoch l's hold was last looked at in */
} dl_all_req_t;

/* Takes every lock of v[0..n) (n >= 1; v is sorted in place, the
 * canonical order) for the calling thread as v[i].rq say (all the same
 * try_only and deadline), or none of them.  0; EOWNERDEAD (all held, one
 * or more taken after a lapse; dist_lasterror names the first);
 * EINVAL (the same name twice); EDEADLK (a blocking or timed call, an
 * errorcheck lock the caller holds, or a lock it holds for reading);
 * EDEADLK also, for a blocking call, when the set cannot be held all at
 * once: DL_ALL_OUTLASTED attempts in a row, none of which waited for a
 * holder, each lasted longer than the fixed lease of the lock whose loss
 * undid it (lockall.c); a timed call attempts until its deadline;
 * EBUSY (a try: one cannot be taken at once, the one attempt could not
 * hold them all at once, or EDEADLK's cases);
 * ETIMEDOUT; EAGAIN (a count would overflow); EIO; ENOMEM.  A lock the
 * caller already holds (recursive) is counted once more, as its own lock
 * call would; on an error, a lapse its relock found is left to the
 * thread's next lock call on it (dl_lock_lapse_untold). */
int dl_lock_all(dl_proc_t *p, dl_all_req_t *v, size_t n);

#endif
