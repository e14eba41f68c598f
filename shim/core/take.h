/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * take.h - taking the process's Redis hold on an object (take.c): one
 * acquire and, when the object is busy and the caller may wait, the wait
 * in Redis's queue for the grant pushed to this process (notify.c), late
 * grants confirmed, a time-out withdrawn, and ?wait=N's replicas counted.
 *
 * take.c writes an object's waiter fields (o->wait: core.h); the
 * subscriber changes them only through dl_take_granted and
 * dl_take_recheck.  What was taken comes back in a dl_grant_t, which
 * hold.c records (dl_hold_record).
 */
#ifndef DL_TAKE_H
#define DL_TAKE_H

#include "process.h"

/* A waiter's registration lives this long (at most a lease) unless
 * refreshed, so a waiter that died leaves the queue that soon; a hold pushed
 * to a waiter first lives as long (its claim window) until the grantee's
 * watchdog extends it. */
#define DL_WAITER_TTL_MS 2000UL

/* The claim window of a hold with this lease (see above). */
static inline unsigned long dl_claim_window(unsigned long lease_ms)
{
    return lease_ms < DL_WAITER_TTL_MS ? lease_ms : DL_WAITER_TTL_MS;
}

/* A request for the hold, as a primitive's call asks it. */
typedef struct dl_req {
    char mode;                /* 'w' or 'r' */
    int errorcheck;           /* (the lock's admission) relock by the owner ->
                                 EDEADLK */
    int fair;                 /* no local handoff past a waiting process */
    unsigned long lease_ms;   /* 0: DISTLOCK_LEASE_MS, renewed; else fixed */
    int try_only;             /* one attempt, EBUSY */
    uint64_t deadline;        /* DL_FOREVER, or monotonic ms: ETIMEDOUT */
    const int *stop;          /* NULL, or set (atomic) by another thread to end
                                 the wait as at the deadline: dl_take_interrupt */
    int robust;               /* (the lock's admission) an EOWNERDEAD it returns
                                 must be made consistent (DIST_MUTEX_ROBUST) */
    int *waited;              /* NULL, or set to 1 when the call waits for a
                                 holder (another thread of the process, or
                                 Redis's queue): a lock-all's attempt that
                                 waited outlasts a lease for a reason other
                                 than its own pace (lockall.c) */
} dl_req_t;

/* Has rq run out: its deadline passed, or its caller asked it to stop? */
static inline int dl_req_over(const dl_req_t *rq)
{
    return dl_now_ms() >= rq->deadline || (rq->stop && __atomic_load_n(rq->stop, __ATOMIC_ACQUIRE));
}

/* What taking the hold found. */
typedef struct dl_grant {
    uint64_t fence;
    int dead;
    int more;
    int claimed;              /* granted while we waited: only the claim ttl */
    int posted;               /* claimed: its renewal to the lease was posted
                                 (take_extend), not yet confirmed */
    int maybe;                /* failed, but an acquire or cancel may have run */
    uint64_t rid;             /* the registration id the hold was taken or claimed with */
    uint64_t valid_until;     /* see dl_tenure_t; 0: unknown until renewed */
    uint64_t was;             /* claimed: the hold's fence when found (acquire.lua) */
    uint64_t sent_ms;         /* when the call that confirmed it was sent */
    unsigned long epoch;      /* the trust epoch then (trust.h) */
    unsigned servers;         /* redlock: where the hold may be (0: any) */
    uint64_t unrec;           /* ENOTRECOVERABLE: the lock's mark (recover.lua) */
} dl_grant_t;

/* Takes the Redis hold for o as rq says, waiting for a grant if rq allows,
 * then (?wait=N) for replicas.  Called with o->hold.busy set by the caller
 * and o->mu not held.  0, EOWNERDEAD, EBUSY, ETIMEDOUT (the caller words
 * those two), ENOTRECOVERABLE (g->unrec: the lock's mark), EIO; *g says
 * what was taken, or whether a failed call may have run. */
int dl_take(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, dl_grant_t *g);

/* A request's stop flag (dl_req_t.stop) was just set: wakes the threads
 * waiting for o, locally or in Redis's queue, so that the one it stops
 * gives up as at its deadline (a queued one withdraws: cancel.lua).
 * o->mu not held; never blocks on the network. */
void dl_take_interrupt(dl_core_t *o);

/* A primitive's own waiting in Redis's queue, on the core's registration
 * (a semaphore's: prim/sem.c), for a primitive whose asks are its own
 * scripts rather than dl_take's: one thread of the process at a time, o->mu
 * held.  The registration's id is now regid (pushes for another are
 * dropped); sleep until a push for it (or a recheck: pushes may have been
 * lost) or until `until` (monotonic ms) or *stop: 1 if woken by a push or
 * a recheck; leave: no registration.  The wait's state is w, on the
 * waiting thread's stack, until leave (a held object keeps none). */
void dl_take_listen(dl_core_t *o, dl_waiter_t *w, uint64_t regid);
int dl_take_sleep(dl_core_t *o, uint64_t until, const int *stop);
void dl_take_leave(dl_core_t *o);

/* What the subscriber (notify.c) learns, told to the waiter (o->mu held;
 * never block).  A grant pushed for registration regid: wakes the thread
 * waiting in Redis's queue with it, if it still does. */
void dl_take_granted(dl_core_t *o, uint64_t regid, uint64_t fence, int dead, int more);
/* Pushes may have been lost (the subscriber reconnected): a thread waiting
 * in Redis's queue asks Redis again. */
void dl_take_recheck(dl_core_t *o);

#endif
