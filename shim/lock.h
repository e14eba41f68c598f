/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.h - acquiring and releasing a lock: the local lock first, then the
 * Redis hold (RedisLockRegistry's localLock + obtainLock).  Shared by the
 * mutex (write mode only) and the rwlock.
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
} dl_req_t;

/* Blocks as rq says.  0, EOWNERDEAD, EBUSY, ETIMEDOUT, EDEADLK, EAGAIN,
 * EIO, ENOMEM. */
int dl_lock_acquire(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq);
/* Releases the calling thread's most recent hold (write_only: the mutex's
 * only kind).  0, EPERM, ENOLCK, EIO. */
int dl_lock_release(dl_proc_t *p, dl_lock_t *l, int write_only);
/* The caller's fence; EPERM if it holds nothing.  Never blocks. */
int dl_lock_getfence(dl_lock_t *l, uint64_t *fence);

/* Ends l's lingering hold (see lock.c) if it is due, or at once if now,
 * waiting for Redis until deadline (ms, 0: the I/O time-out).  Takes l->mu.
 * 0, ENOLCK, EIO (logged: no caller waits for it). */
int dl_lock_linger_end(dl_proc_t *p, dl_lock_t *l, int now, uint64_t deadline);
/* Ends every lingering hold of the process at once (at exit). */
void dl_lock_flush_lingers(dl_proc_t *p);

/* What the subscriber (notify.c) learns, told to the lock (l->mu held;
 * never block).  A grant pushed for registration regid: wakes the thread
 * waiting in Redis's queue with it, if it still does. */
void dl_lock_granted(dl_lock_t *l, uint64_t regid, uint64_t fence, int dead, int more);
/* Pushes may have been lost (the subscriber reconnected): a thread waiting
 * in Redis's queue asks Redis again. */
void dl_lock_recheck(dl_lock_t *l);
/* Another process queued for l: if this process holds it or is taking it,
 * local handoffs are bounded from now on. */
void dl_lock_waited_on(dl_lock_t *l);

/* mark.c: posts the mark that l's Redis hold now lingers (lingering; with
 * ms, its time in Redis is also cut to that) or is held again (with ms, its
 * TTL is restored to that lease), so that its lapse means EOWNERDEAD only
 * when held.  0 when written; else the caller must not linger, or relock
 * without Redis. */
int dl_mark(dl_proc_t *p, const dl_lock_t *l, int lingering, unsigned long ms);
/* The script of those marks (tests drive it directly). */
extern const char dl_mark_lua[];

/* tenure.c: what the process knows of its Redis hold's life (l->mu held
 * for all but dl_hold_valid_until).
 * Until when a hold is surely still in Redis (monotonic ms), when the call
 * that set its TTL to ttl_ms was sent at sent_ms: less a clock-drift
 * allowance (1% + 2 ms, as redlock's); 0 for a TTL too short to count. */
uint64_t dl_hold_valid_until(uint64_t sent_ms, unsigned long ttl_ms);
/* Whether l's hold is within its validity: only then may it serve another
 * local holder. */
int dl_hold_valid(const dl_lock_t *l);
/* A linger just cut the hold's TTL to ttl_ms: lowers its validity to that. */
void dl_hold_cut(dl_lock_t *l, unsigned long ttl_ms);
/* The TTL a confirmed renewal of l's hold vouches for: its lease, or once
 * a linger cut it, no more than the cut (a cut may run after the renewal). */
unsigned long dl_hold_ttl(const dl_lock_t *l);
/* A thread of the process takes over, or waits for, the process's hold:
 * has the watchdog renew it soon (whose reply says if others wait). */
void dl_tenure_renew(dl_proc_t *p, dl_lock_t *l);
/* Posts (conn.h) the renewal of l's hold, named by its fence, to its lease
 * (a relock of a lingering hold restores it with its mark instead: mark.c).
 * The reply is never read: l->valid_until stays.  0 when written. */
int dl_post_renew(dl_proc_t *p, const dl_lock_t *l);

/* notify.c: starts the subscriber if needed and waits until this process's
 * grant channel is subscribed (a waiter should be listening before it
 * registers), at most until `until` (monotonic ms) or the I/O timeout.  0
 * when subscribed; EIO when the subscriber failed to reach Redis; EAGAIN
 * when it is still connecting (a waiter may then go on and find its grant
 * by asking again: slower, never wrong).  Sets dist_lasterror on EIO. */
int dl_notify_ensure(dl_proc_t *p, uint64_t until);
/* watchdog.c: starts the renewing thread if needed.  Never blocks. */
void dl_watchdog_ensure(dl_proc_t *p);
/* Asks for l's hold to be renewed by `due` (monotonic ms), before the next
 * regular tick.  l->mu held.  Never blocks. */
void dl_watchdog_due(dl_proc_t *p, dl_lock_t *l, uint64_t due);
/* A hold lingers until `until` (monotonic us): the watchdog looks at the
 * lingering holds then, and ends those that no relock claimed.  Never
 * blocks. */
void dl_watchdog_linger(dl_proc_t *p, uint64_t until);

#endif
