/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.h - acquiring and releasing a lock: the local lock first, then the
 * Redis hold (RedisLockRegistry's localLock + obtainLock).  Shared by the
 * mutex (write mode only) and the rwlock: the entry of the lock module.
 *
 * The lock module, by file (each writes its own group of dl_lock_t's
 * fields, registry.h):
 *   lock.c     local admission and handoff: holders, local waiters,
 *              handoff fairness, quick relocks (this header)
 *   take.c     taking the Redis hold: asks, the wait for a grant, late
 *              grants, time-outs, ?wait=N's replicas (take.h)
 *   hold.c     the Redis hold once taken: record, vouch, release, linger,
 *              what the watchdog and the subscriber learn of it (hold.h)
 *   tenure.c   how long the hold serves without asking Redis (tenure.h)
 *   mark.c     the lingering mark posted to Redis (mark.h)
 *   holds.c    each thread's stack of holds (holds.h)
 */
#ifndef DL_LOCK_H
#define DL_LOCK_H

#include "process.h"

typedef struct dl_req {
    char mode;                /* 'w' or 'r' */
    int errorcheck;           /* relock by the owner -> EDEADLK */
    int fair;                 /* no local handoff past a waiting process */
    unsigned long lease_ms;   /* 0: DISTLOCK_LEASE_MS, renewed; else fixed */
    int try_only;             /* one attempt, EBUSY */
    uint64_t deadline;        /* DL_FOREVER, or monotonic ms: ETIMEDOUT */
    const int *stop;          /* NULL, or set (atomic) by another thread to end
                                 the wait as at the deadline: dl_lock_interrupt */
} dl_req_t;

/* Has rq run out: its deadline passed, or its caller asked it to stop? */
static inline int dl_req_over(const dl_req_t *rq)
{
    return dl_now_ms() >= rq->deadline || (rq->stop && __atomic_load_n(rq->stop, __ATOMIC_ACQUIRE));
}

/* Blocks as rq says.  0, EOWNERDEAD, EBUSY, ETIMEDOUT, EDEADLK, EAGAIN,
 * EIO, ENOMEM. */
int dl_lock_acquire(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq);
/* Releases the calling thread's most recent hold (write_only: the mutex's
 * only kind).  0, EPERM, ENOLCK, EIO. */
int dl_lock_release(dl_proc_t *p, dl_lock_t *l, int write_only);
/* The caller's fence; EPERM if it holds nothing.  Never blocks. */
int dl_lock_getfence(dl_lock_t *l, uint64_t *fence);
/* Whether a thread of the process holds l, waits for it or talks to Redis
 * for it (l->mu held): then its last object may not be destroyed. */
int dl_lock_in_use(const dl_lock_t *l);

#endif
