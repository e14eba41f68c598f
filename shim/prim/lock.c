/* SPDX-License-Identifier: BSD-3-Clause */
/* lock.c - the lock primitive: the local lock first, then the Redis hold
 * (lock.h).  Local admission and handoff on top of the hold core.
 *
 * Inside a process a lock admits one writer thread or many reader threads,
 * and only one thread at a time (o->hold.busy) talks to Redis for it.  The
 * process's Redis hold (o->hold.rmode, core/hold.c) outlives a local
 * unlock only to be passed to a thread of this process that is already
 * waiting (local handoff), or to the thread that just unlocked, when it
 * loops over the lock: it locked again at once after its previous unlock
 * and held the lock briefly (the hold lingers for DL_LINGER_US, and the
 * lingerer releases it on time if no lock call came).  Local handoffs
 * happen while no other process waits; once one does, both happen (unless
 * fair) for a bounded while only: DL_KEEP_US and DL_HANDOFF_MAX more holds.
 *
 * This file writes the lock's local fields (writer ... held_us: see
 * dl_lock_t); the hold core takes the hold (take.c) and records, releases,
 * vouches for it and makes it linger (hold.c).  Here o is the lock's core
 * (&l->core).  The lock's kind (dl_lock_kind, at the end) tells the core
 * which scripts carry out its hold and what its admission knows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_acquire.h"
#include "call_acquire_all.h"
#include "call_cancel.h"
#include "call_mark.h"
#include "call_recover.h"
#include "call_release.h"
#include "call_renew.h"
#include "call_renew_many.h"
#include "call_touch.h"
#include "call_withdraw.h"
#include "call_withdraw_all.h"
#include "distlock.h"
#include "dl.h"
#include "hold.h"
#include "holds.h"
#include "lock.h"
#include "loss.h"
#include "take.h"
#include "tenure.h"
#include "trust.h"

/* Once another process is known to wait, this process keeps the lock (local
 * handoffs, relocks of a lingering hold) for at most DL_KEEP_US more and at
 * most DL_HANDOFF_MAX more holds; then it goes to the head of Redis's queue.
 * Passing a lock to another process costs a release, a push and two
 * wake-ups; a few holds in a row amortise that (W2 in docs/PERFORMANCE.md)
 * while the waiting process is kept out no longer than this bound. */
#define DL_HANDOFF_MAX 32
#define DL_KEEP_US 5000

/* The lingering unlock is a guess that the unlocking thread loops over the
 * lock and relocks at once.  Right, it spares the loop a pass of the lock
 * to the waiting process and back (a release, a push, two wake-ups, a
 * queued acquire) per iteration; wrong, the waiting process waits for
 * nothing.  So it is made only where it saves much and costs little:
 *  - the gap: the thread locked again within DL_RELOCK_US of its previous
 *    unlock (a loop relocks within microseconds; a program that waits for
 *    something between the two does not);
 *  - the hold: the hold that just ended lasted at most DL_LINGER_HOLD_RTTS
 *    round trips (the lock's own, smoothed: o->hold.rtt_us), and never more
 *    than DL_LINGER_HOLD_MAX_US.  Against a longer hold the pass saved is
 *    worth little, and a waiter that is kept out that long is better
 *    served at once (W3b in docs/PERFORMANCE.md: a thread that relocked at
 *    once and then held 2 ms cost each handoff 1.3 ms);
 *  - the cost: the linger lasts DL_LINGER_US (hold.h: twice the gap), a
 *    loop's relock with room to spare and no more than a loopback round
 *    trip, and the watchdog ends it on time (woken for it, with a fine
 *    timer slack), so a wrong guess delays the waiting process by about one
 *    round trip. */
#define DL_RELOCK_US (DL_LINGER_US / 2)
#define DL_LINGER_HOLD_RTTS 4
#define DL_LINGER_HOLD_MIN_US 100     /* (also before a round trip is measured) */
#define DL_LINGER_HOLD_MAX_US 1000

/* A thread that unlocks and locks again at once wins against the threads
 * it just woke; after this many holds in a row while they wait, it lets one
 * of them go first, so a process's threads share the lock and finish their
 * work together instead of one after another (the last alone, paying a
 * round trip per call).  Each turn costs a wake-up that waits for a CPU
 * on a busy host: 32 holds a turn (some 10 us of W4's) amortise it where
 * 8 did not, and still share the lock finely (docs/PERFORMANCE.md, W4). */
#define DL_LOCAL_STREAK 32

/* A waiter in the lock's queue looks at the lock at least this often
 * (queue_wait), woken or not. */
#define DL_QUEUE_LOOK_MS 100

/* Would the process keep its Redis hold for another local holder, as far
 * as other processes go?  (Whether it may, without asking Redis first, is
 * tenure.c's: dl_tenure_trusted.) */
static int keepable(const dl_lock_t *l)
{
    const dl_core_t *o = &l->core;
    const dl_hold_t *h = &o->hold;
    return h->rmode && !h->lost && h->renew &&
           (!h->remote_waiting || (!h->fair && h->handoffs < DL_HANDOFF_MAX &&
                                   dl_now_us() - h->waited_since < DL_KEEP_US));
}

/* The hold would serve another thread of the process, but is not trusted
 * (a sign of lost state, or not confirmed lately): confirm it with Redis
 * (o->mu released meanwhile; the caller looks at the lock anew after).
 * A hold that cannot be confirmed and that no thread holds is released,
 * so that the caller asks Redis like everyone else.  0, ENOLCK, EIO. */
static int confirm(dl_proc_t *p, dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    int rc = dl_hold_confirm(p, o);
    if (rc == EIO && !l->writer && !l->rthreads && !o->hold.busy && o->hold.rmode)
        dl_hold_release(p, o, 0);
    return rc;
}

/* Trusted (tenure.c), or just confirmed by this thread (*fresh), which is
 * used up by asking. */
static int trusted(const dl_lock_t *l, int *fresh)
{
    const dl_core_t *o = &l->core;
    int ok = dl_tenure_trusted(o, *fresh);
    *fresh = 0;
    return ok;
}

/* Was the write hold that just ended short enough to linger after (o->mu
 * held)?  See DL_LINGER_HOLD_RTTS. */
static int short_hold(const dl_lock_t *l)
{
    const dl_core_t *o = &l->core;
    uint64_t bound = DL_LINGER_HOLD_RTTS *
                     (uint64_t)__atomic_load_n(&o->hold.rtt_us, __ATOMIC_RELAXED);
    if (bound < DL_LINGER_HOLD_MIN_US)
        bound = DL_LINGER_HOLD_MIN_US;
    if (bound > DL_LINGER_HOLD_MAX_US)
        bound = DL_LINGER_HOLD_MAX_US;
    return dl_now_us() - l->held_us <= bound;
}

/* The lock is free for a thread of the process that waits for it (o->mu
 * held): one of them must look at it.  Waking them all (as dl_core_wake
 * does) is what W4 spent most of its time on: each unlock of a thread that
 * relocks at once woke every waiter, to find the lock held again and
 * sleep anew.  So, while only writers wait, one of them is woken, and no
 * other until it has looked (l->woken, cleared by every waiter that wakes
 * or goes to sleep: queue_wait).  While l->woken is set, that thread will
 * look after this moment, or, if no thread was asleep when it was set,
 * none has slept since and every waiter will.  A reader waiting may be
 * held back by a waiting writer (readers queue behind it): all look. */
static void admit_next(dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    if (l->rwait) {
        dl_core_wake(o);
    } else if (!l->woken) {
        l->woken = 1;
        dl_core_queue_wake_one(o);
    }
}

/* The deadline of one sleep in the lock's queue: the caller's, or
 * DL_QUEUE_LOOK_MS from now if sooner.  A wake-up lost by the C library
 * (as glibc's bug 25847 can) would leave l->woken set and nobody ever
 * woken: every waiter looks again after DL_QUEUE_LOOK_MS at most, and
 * clears it. */
static uint64_t look_deadline(uint64_t deadline)
{
    uint64_t look = dl_now_ms() + DL_QUEUE_LOOK_MS;
    return deadline < look ? deadline : look;
}

/* A thread waits in the lock's queue (o->mu held), having looked at the
 * lock just now: what it saw is current, so an unlock after this wakes
 * anew; so does one after it wakes (admit_next). */
static void queue_wait(dl_lock_t *l, uint64_t deadline)
{
    l->woken = 0;
    dl_core_queue_wait(&l->core, look_deadline(deadline));
    l->woken = 0;
}

/* Called (o->mu held) when a thread stopped holding or waiting: releases
 * the Redis hold once no thread of the process uses or can use it.  linger:
 * the unlocking thread loops (it relocked at once, and its hold was short:
 * see DL_LINGER_HOLD_RTTS): keep the hold for its next lock call, but only
 * while another process waits.  That process would be handed the lock by
 * the release anyway, so nobody else could have taken it meanwhile; were
 * nobody waiting, the release would free the lock for any trylock
 * elsewhere, which a lingering hold would refuse. */
static int settle(dl_proc_t *p, dl_lock_t *l, int linger)
{
    dl_core_t *o = &l->core;
    int fresh = 0;
    for (;;) {
        if (!o->hold.rmode || l->writer || l->rthreads || o->hold.busy)
            return 0;
        if (!((l->wwait || l->rwait) && keepable(l)))
            break;
        if (dl_tenure_trusted(o, fresh)) {
            /* A waiting thread takes it over (having been confirmed just
             * now, it is trusted for the next DL_TRUST_MS). */
            admit_next(l);
            return 0;
        }
        if (fresh)
            break;                /* a sign came during our confirmation */
        /* Not to be passed on unconfirmed: this (last) unlock confirms it,
         * and learns so whether its own hold had lapsed. */
        int rc = dl_hold_confirm(p, o);
        if (rc == EIO)
            break;
        if (rc == ENOLCK)
            return dl_hold_release(p, o, 0);   /* says ENOLCK */
        fresh = 1;
    }
    if (linger && o->hold.rmode == 'w' && o->hold.remote_waiting && keepable(l) &&
        dl_tenure_trusted(o, 0) && dl_hold_linger(p, o) == 0)
        return 0;
    return dl_hold_release(p, o, 0);
}

/* The unlock that ends a section with a robust EOWNERDEAD pending (no
 * dist_mutex_consistent): the hold is never handed on, kept nor left to
 * linger, but released with the unrecoverable mark (or, lapsed already,
 * with its death trace kept); the threads of the process that wait for it
 * ask Redis, and are refused.  o->mu held.  0, ENOLCK, EIO. */
static int unrecoverable(dl_proc_t *p, dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    char q[96];
    int rc = dl_hold_release_unrecoverable(p, o);
    dl_core_wake(o);
    dl_core_qname(o, q, sizeof q);
    if (rc == 0)
        dl_log(DL_LOG_WARN, "lock %s: unlocked after EOWNERDEAD without dist_mutex_consistent: "
               "it is unrecoverable (ENOTRECOVERABLE for every lock call) until a process "
               "told so destroys its object and initializes it again", q);
    else if (rc == ENOLCK)
        dl_log(DL_LOG_WARN, "lock %s: unlocked after EOWNERDEAD without dist_mutex_consistent, "
               "but its hold had lapsed: the next holder is told EOWNERDEAD", q);
    return rc;
}

static int busy_code(const dl_req_t *rq, const dl_lock_t *l)
{
    const dl_core_t *o = &l->core;
    char q[96];
    if (rq->try_only)
        return dl_fail(EBUSY, "lock %s is held", dl_core_qname(o, q, sizeof q));
    return dl_fail(ETIMEDOUT, "lock %s: timed out", dl_core_qname(o, q, sizeof q));
}

/* After taking the Redis hold (take.c): record it, or undo the local
 * reservation. */
static int finish(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, pid_t tid, int rc,
                  const dl_grant_t *g)
{
    dl_core_t *o = &l->core;
    char q[96];
    pthread_mutex_lock(&o->mu);
    /* A request that failed but may have run is withdrawn later, whatever
     * happens next (written in the room dl_hold_reserve made). */
    if (rc != 0 && rc != EOWNERDEAD && g->maybe)
        dl_hold_undo_later(p, o, rq->mode, g->rid);
    dl_hold_unreserve(o);
    /* Our own hold, claimed back after its unlock failed: its EOWNERDEAD
     * was told to the lock call that took it. */
    if (rc == EOWNERDEAD && g->claimed && g->was && g->was == dl_hold_told_fence(o))
        rc = 0;
    if (rc == 0 || rc == EOWNERDEAD) {
        dl_hold_record(p, o, rq, g);
        l->held_us = dl_now_us();     /* the write hold starts (see short_hold) */
        int prc = dl_holder_push(l, tid, rq->mode);
        if (prc) {
            /* Could not record the hold: give it back rather than leak it. */
            if (rq->mode == 'w')
                l->writer = 0;
            dl_hold_release(p, o, 0);
            rc = dl_fail(prc, "out of memory");
        } else {
            if (rq->mode == 'r')
                l->rthreads++;
            if (rc == EOWNERDEAD) {
                if (rq->robust)
                    dl_holder_owner_dead(dl_holder_find(l, tid));
                dl_seterr("lock %s: acquired, but the previous holder's lease ran out "
                          "before it unlocked; the protected state may be half-updated%s",
                          dl_core_qname(o, q, sizeof q),
                          rq->robust ? " (robust: make it consistent before unlocking)" : "");
                dl_log(DL_LOG_INFO, "%s", dist_lasterror());
            }
            dl_hold_watch(p, o, g->posted);
        }
    } else {
        if (rc == ENOTRECOVERABLE && g->unrec)
            dl_hold_set_unrec(o, g->unrec);  /* what this process's destroy may clear */
        if (rq->mode == 'w')
            l->writer = 0;
        if (rc == EBUSY || rc == ETIMEDOUT)
            rc = busy_code(rq, l);
        settle(p, l, 0);
    }
    dl_hold_done(o);
    dl_core_wake(o);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

/* The calling thread holds l, and relocks it, but the process's hold is
 * lost (or a fixed lease past its validity): the thread asks Redis anew,
 * as a lock call of its kind would, keeping its local hold meanwhile (no
 * other thread of the process gets in).  Taken, it says EOWNERDEAD: the
 * caller's own earlier hold lapsed, and what it protects may be
 * half-updated; its section has seen that lapse, and the unlock that ends
 * it says ENOLCK (another holder may have been inside meanwhile).  Not
 * taken (EBUSY, ETIMEDOUT, EIO), the hold stays lost: its unlocks say
 * ENOLCK.  o->mu held. */
static int retake(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq)
{
    dl_core_t *o = &l->core;
    char q[96];
    dl_req_t rr = *rq;
    rr.mode = o->hold.rmode ? o->hold.rmode : rq->mode;
    rr.lease_ms = o->hold.renew ? 0 : o->hold.lease_ms;
    rr.fair = o->hold.fair;
    int rc = dl_hold_reserve(o);
    if (rc)
        return rc;                /* ENOMEM, nothing sent: the hold stays lost */
    pthread_mutex_unlock(&o->mu);
    dl_grant_t g = { 0 };
    rc = dl_take(p, o, &rr, &g);
    pthread_mutex_lock(&o->mu);
    if (rc != 0 && rc != EOWNERDEAD && g.maybe)
        dl_hold_undo_later(p, o, rr.mode, g.rid);
    dl_hold_unreserve(o);
    if (rc == 0 || rc == EOWNERDEAD) {
        dl_hold_record(p, o, &rr, &g);
        dl_hold_watch(p, o, g.posted);
        /* This thread's holds are in the new hold, and its section has
         * seen the lapse; other threads' (readers sharing the lost one)
         * are not: their unlocks say ENOLCK. */
        dl_holder_t *mine = dl_holder_find(l, dl_tid());
        if (mine)
            dl_holder_moved(mine, o->hold.fence);
        rc = EOWNERDEAD;
        dl_seterr("lock %s: relocked, but this thread's hold had lapsed in Redis (lease ran "
                  "out, or the server lost it) and was taken again; the protected state may "
                  "be half-updated", dl_core_qname(o, q, sizeof q));
        dl_log(DL_LOG_INFO, "%s", dist_lasterror());
    } else {
        if (rc == ENOTRECOVERABLE)
            dl_hold_set_unrec(o, g.unrec);
        if (rc == EBUSY || rc == ETIMEDOUT)
            rc = busy_code(rq, l);
    }
    dl_hold_done(o);
    dl_core_wake(o);
    return rc;
}

/* The calling thread relocks a hold the process has (trusted): 0, or,
 * when the thread's part was in a hold that another thread of the process
 * took anew after it was lost (retake), EOWNERDEAD as the retaking
 * thread was told, and the thread's part is in the new hold from now on
 * (its section has seen the lapse: its last unlock says ENOLCK).
 * o->mu held. */
static int rejoin(dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    char q[96];
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    if (!h || h->fence == o->hold.fence)
        return 0;
    dl_holder_moved(h, o->hold.fence);
    return dl_fail(EOWNERDEAD, "lock %s: relocked, but this thread's hold had lapsed in Redis "
                   "(another thread of the process took the lock again since); the "
                   "protected state may be half-updated", dl_core_qname(o, q, sizeof q));
}

/* A thread that holds l locks it again (reentrant, or reading again): no
 * round trip while the process's hold is trusted (tenure.c); else it is
 * confirmed with Redis first, and taken again if Redis lost it (retake).
 * SPEC, "Local trust": no relock of a hold without Redis once it may be
 * lost.  o->mu held.  0, EOWNERDEAD, or retake's error; EIO when Redis
 * cannot be asked (the hold stays as it is). */
static int relock(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq)
{
    dl_core_t *o = &l->core;
    int fresh = 0;
    for (;;) {
        if (o->hold.busy) {       /* another thread asks Redis about it: its answer decides */
            dl_core_wait(o, dl_now_ms() + 100);
            continue;
        }
        if (o->hold.rmode && dl_tenure_trusted(o, fresh))
            return rejoin(l);
        if (!o->hold.rmode || o->hold.lost ||
            (!o->hold.renew && dl_now_ms() >= o->tenure.valid_until)) {
            if (o->hold.rmode)
                dl_hold_lapsed(o);    /* a fixed lease past its end: told now */
            return retake(p, l, rq);
        }
        int rc = dl_hold_confirm(p, o);
        if (rc == EIO)
            return EIO;
        fresh = rc == 0;
    }
}

/* tid is the writer now; quick: its lock call came right after its own
 * unlock (a loop: see settle).  Recorded for the writer only, so that a
 * lock call that fails meanwhile (a trylock) cannot change it.  Counts the
 * holds in a row of one thread while others wait (the caller's wwait
 * already dropped). */
static void took_local(dl_lock_t *l, pid_t tid, int quick)
{
    l->writer = tid;
    l->quick = quick;
    if (l->last_writer == tid && l->wwait)
        l->streak++;
    else
        l->streak = 1;
    l->last_writer = tid;
}

/* o->mu held: the calling thread holds the lock already (h).  A writer
 * relocks it (EDEADLK for errorcheck), a reader reads it again, even past
 * a waiting writer; a reader asking to write would wait forever (no
 * upgrades): EDEADLK. */
static int acquire_again(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, pid_t tid)
{
    dl_core_t *o = &l->core;
    char q[96];
    int w = rq->mode == 'w';
    dl_holder_t *h = dl_holder_find(l, tid);
    if (w && rq->errorcheck && h->wcount)
        return dl_fail(EDEADLK, "lock %s: already held by this thread",
                       dl_core_qname(o, q, sizeof q));
    if (w && !h->wcount)
        return dl_fail(EDEADLK, "lock %s: this thread holds it for reading; "
                       "a write request would wait forever (no upgrades)",
                       dl_core_qname(o, q, sizeof q));
    int rc = relock(p, l, rq);
    if (rc == 0 || rc == EOWNERDEAD) {
        int prc = dl_holder_push(l, tid, rq->mode);
        if (prc)
            rc = dl_fail(prc, "lock %s: %s", dl_core_qname(o, q, sizeof q),
                         prc == EAGAIN ? (w ? "reentrancy count overflow" : "reader count overflow")
                                       : "out of memory");
        /* A relock told EOWNERDEAD (its hold lapsed and was taken anew)
         * through a robust object: the section's state is as after a
         * death, to be made consistent before its end (even should the
         * count not go up: the lock is held anew). */
        if (w && rc == EOWNERDEAD && rq->robust)
            dl_holder_owner_dead(dl_holder_find(l, tid));
    }
    return rc;
}

/* o->mu held: the process's Redis hold passes to the calling thread with
 * no round trip (a local handoff; a reader joins the process's readers).
 * 0, or ENOMEM. */
static int take_local(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, pid_t tid, int quick)
{
    dl_core_t *o = &l->core;
    int w = rq->mode == 'w';
    int rc = dl_holder_push(l, tid, rq->mode);
    if (rc) {
        settle(p, l, 0);
        return dl_fail(rc, "out of memory");
    }
    if (w) {
        took_local(l, tid, quick);
        l->held_us = dl_now_us();
        dl_hold_handoff(o);
    } else {
        if (o->hold.rmode == 'w' && !l->rthreads)
            dl_hold_handoff(o);
        l->rthreads++;
    }
    dl_tenure_renew(p, o);
    return 0;
}

/* A writer whose holds came DL_LOCAL_STREAK times in a row while others
 * waited: its turn is over, the threads woken by its unlock go first. */
static int steps_aside(const dl_lock_t *l, const dl_req_t *rq, pid_t tid)
{
    return l->last_writer == tid && l->streak >= DL_LOCAL_STREAK && l->wwait > 1 &&
           !rq->try_only && dl_now_ms() < rq->deadline;
}

/* A lock call of a thread that does not hold the lock: it waits in the
 * lock's queue (o->cv[1]) while other threads of the process hold the
 * lock in a way that keeps it out, or talk to Redis for it; then it takes
 * the process's Redis hold locally if the hold may serve it (keepable,
 * trusted: else confirmed first), or reserves the one talker and asks
 * Redis (dl_take).  A writer
 * waits for every local holder, and steps aside after a streak of its own
 * while others wait; a reader waits for a writer of the process, and for
 * one that waits: new readers queue behind it, locally or in Redis. */
static int acquire(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, pid_t tid)
{
    dl_core_t *o = &l->core;
    int w = rq->mode == 'w';
    int rc;
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, tid);
    if (h && (h->wcount || h->rcount)) {
        rc = acquire_again(p, l, rq, tid);
        pthread_mutex_unlock(&o->mu);
        return rc;
    }
    /* Relocking at once, as a loop around the lock does?  (see settle) */
    int quick = w && l->unlock_tid == tid && dl_now_us() - l->unlock_us <= DL_RELOCK_US;
    int fresh = 0;            /* this thread confirmed the hold just now */
    int *waiting = w ? &l->wwait : &l->rwait;
    ++*waiting;
    for (;;) {
        int clear = !l->writer && !o->hold.busy && (w ? !l->rthreads : !l->wwait);
        if (clear && w && steps_aside(l, rq, tid)) {
            fresh = 0;
            if (rq->waited)
                *rq->waited = 1;
            /* Free, and left to another waiter: one of them looks (the
             * one the unlock woke, or one woken now: admit_next). */
            admit_next(l);
            dl_core_queue_wait(o, look_deadline(rq->deadline));
            l->woken = 0;
            continue;
        }
        if (clear) {
            if (!o->hold.rmode)
                break;
            /* A writer takes over a write hold that no thread uses; a
             * reader joins the process's readers too, or takes over such
             * a hold, if other processes allow it... */
            int joins = !w && (o->hold.rmode == 'r' || l->rthreads);
            int keep = joins ? !o->hold.lost && !o->hold.remote_waiting
                             : (!w || o->hold.rmode == 'w') && keepable(l);
            /* ... and once Redis has confirmed the hold lately. */
            if (keep && !trusted(l, &fresh)) {
                int crc = confirm(p, l);
                if (crc == EIO && !w && l->rthreads) {
                    --*waiting;
                    dl_core_wake(o);
                    pthread_mutex_unlock(&o->mu);
                    return EIO;       /* worded by dl_hold_confirm */
                }
                fresh = crc == 0;
                continue;
            }
            if (keep && (joins || dl_hold_claim_linger(p, o) == 0)) {
                --*waiting;
                rc = take_local(p, l, rq, tid, quick);
                pthread_mutex_unlock(&o->mu);
                return rc;
            }
            /* A hold we cannot reuse (lost, a fixed lease, or others have
             * waited long enough): end it, then ask Redis like everyone
             * else.  While readers of this process still hold it but a
             * writer elsewhere waits, new readers queue behind that
             * writer, in Redis. */
            if (w || !l->rthreads) {
                dl_hold_release(p, o, 0);
                continue;
            }
        }
        if (rq->try_only || dl_req_over(rq)) {
            --*waiting;
            settle(p, l, 0);
            if (w)
                dl_core_wake(o);   /* readers held back by us */
            pthread_mutex_unlock(&o->mu);
            return busy_code(rq, l);
        }
        dl_tenure_renew(p, o);           /* held by a thread of ours: kept busy */
        fresh = 0;
        if (rq->waited && (l->writer || l->rthreads))
            *rq->waited = 1;      /* (not for the watchdog's look at the hold) */
        queue_wait(l, rq->deadline);
    }
    --*waiting;
    /* The one talker, with room for the undo of its request made first:
     * out of memory, nothing is sent (ENOMEM). */
    if ((rc = dl_hold_reserve(o))) {
        settle(p, l, 0);
        if (w)
            dl_core_wake(o);   /* readers held back by us */
        pthread_mutex_unlock(&o->mu);
        return rc;
    }
    if (w)
        took_local(l, tid, quick);
    pthread_mutex_unlock(&o->mu);

    dl_grant_t g = { 0 };
    rc = dl_take(p, o, rq, &g);
    return finish(p, l, rq, tid, rc, &g);
}

/* A hold just taken by the calling thread (rc 0 or EOWNERDEAD) is in a
 * section that carries a lapse told to nobody: one that goes on from a
 * condition wait that could not take the lock again (dl_lock_carry), or
 * one whose relock inside a lock-all took the lock anew and the lock-all
 * then failed (dl_lock_lapse_untold).  This call says it (EOWNERDEAD), as
 * the call that found it would have. */
static int tell_carried(dl_lock_t *l, const dl_req_t *rq, int rc)
{
    dl_core_t *o = &l->core;
    char q[96];
    if (rc != 0 && rc != EOWNERDEAD)
        return rc;
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    int untold = h && h->untold;
    if (untold) {
        h->untold = 0;
        if (rq->robust)
            dl_holder_owner_dead(h);
    }
    pthread_mutex_unlock(&o->mu);
    if (untold && rc == 0)
        rc = dl_fail(EOWNERDEAD, "lock %s: acquired, but this thread's hold had lapsed, and "
                     "the call that found it failed without saying so (a condition wait that "
                     "could not take the lock again, or a lock-all that could not take the "
                     "others); the protected state may be half-updated",
                     dl_core_qname(o, q, sizeof q));
    return rc;
}

int dl_lock_acquire(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq)
{
    if (dl_loss_in_callback()) {
        /* The thread that tells of lost holds must not block (a try is
         * told EBUSY by the API, as for any EDEADLK). */
        char q[96];
        return dl_fail(EDEADLK, "lock %s: lock calls are refused inside the dist_onlost "
                       "function (it must not block)", dl_core_qname(&l->core, q, sizeof q));
    }
    pid_t tid = dl_tid();
    uint64_t t0 = dl_tally_start();
    int rc = tell_carried(l, rq, acquire(p, l, rq, tid));
    dl_tally_call(&l->core, rc, t0);
    return rc;
}

int dl_lock_release(dl_proc_t *p, dl_lock_t *l, int write_only)
{
    dl_core_t *o = &l->core;
    char q[96];
    pid_t tid = dl_tid();
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, tid);
    if (!h || (write_only && !h->wcount)) {
        pthread_mutex_unlock(&o->mu);
        return dl_fail(EPERM, "lock %s: not held by this thread", dl_core_qname(o, q, sizeof q));
    }
    int last, lapsed, od;
    uint64_t in_hold = h->fence;
    uint64_t since;
    dl_holder_pop(l, tid, &last, &since, &lapsed, &od);
    int rc = 0;
    if (last) {
        dl_tally_held(o, since);
        /* Another thread's dl_hold_vouch may be asking Redis about this hold:
         * what it learns decides this unlock too. */
        while (o->hold.busy && o->hold.rmode)
            dl_core_wait(o, dl_now_ms() + 100);
        int wrote = l->writer == tid;
        if (wrote)
            l->writer = 0;
        else
            l->rthreads--;
        /* A lost hold is never kept: settle releases it and says ENOLCK.
         * While other threads of the process still hold it, settle does
         * not reach Redis: vouch for this thread's part of it here. */
        /* Another thread of the process took the lock anew after the hold
         * this thread's part was in had been lost (retake): that part
         * lapsed, whatever becomes of the new hold. */
        int left_behind = o->hold.rmode && in_hold != o->hold.fence;
        if (left_behind && (l->writer || l->rthreads))
            rc = 0;               /* ENOLCK below; the others' hold is theirs to vouch for */
        else if (o->hold.rmode && (l->writer || l->rthreads))
            rc = dl_hold_vouch(p, o);
        else if (od && wrote && o->hold.rmode == 'w')
            rc = unrecoverable(p, l);
        else
            rc = settle(p, l, wrote && l->quick && short_hold(l));
        if (left_behind && rc != ENOLCK)
            rc = dl_fail(ENOLCK, "lock %s: this thread's hold had lapsed in Redis (lease ran "
                         "out, or the server lost it) before unlock; another thread of the "
                         "process has taken the lock again since", dl_core_qname(o, q, sizeof q));
        /* The section that ends here saw a lapse (a relock took the lock
         * anew and said EOWNERDEAD, or a condition wait carried one over):
         * its hold is released all the same, but another holder may have
         * been inside it, and its end says so (SPEC, ENOLCK). */
        else if (lapsed && rc != ENOLCK)
            rc = dl_fail(ENOLCK, "lock %s: the hold this thread's section began with had "
                         "lapsed in Redis before this unlock (a relock took the lock anew and "
                         "said EOWNERDEAD); another holder may have been inside meanwhile; "
                         "the lock is released", dl_core_qname(o, q, sizeof q));
        if (wrote) {              /* when the unlock returns, not when it began */
            l->unlock_us = dl_now_us();
            l->unlock_tid = tid;
        }
    }
    pthread_mutex_unlock(&o->mu);
    dl_tally_unlock(o, rc);
    return rc;
}

int dl_lock_getfence(dl_lock_t *l, uint64_t *fence)
{
    dl_core_t *o = &l->core;
    char q[96];
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    int held = h != NULL;
    if (held)
        *fence = h->fence;        /* the hold this thread's part is in (left behind: the lost one) */
    pthread_mutex_unlock(&o->mu);
    if (!held)
        return dl_fail(EPERM, "lock %s: not held by this thread", dl_core_qname(o, q, sizeof q));
    return 0;
}

int dl_lock_getlease(dl_lock_t *l, unsigned long *ms_left)
{
    dl_core_t *o = &l->core;
    char q[96];
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    int rc = !h ? EPERM : o->hold.rmode && h->fence != o->hold.fence ? ENOLCK
                        : dl_tenure_lease(o, ms_left);
    if (rc == ENOLCK)
        *ms_left = 0;
    pthread_mutex_unlock(&o->mu);
    if (rc == EPERM)
        return dl_fail(EPERM, "lock %s: not held by this thread", dl_core_qname(o, q, sizeof q));
    if (rc == ENOLCK)
        return dl_fail(ENOLCK, "lock %s: the hold is known to have lapsed in Redis (a round "
                       "trip found it gone, or its fixed lease ended)",
                       dl_core_qname(o, q, sizeof q));
    return 0;
}

int dl_lock_hold_lost(dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    pthread_mutex_lock(&o->mu);
    int rc = -1;
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    if (h)
        rc = o->hold.lost || (!o->hold.rmode && !o->hold.busy) ||
             (o->hold.rmode && h->fence != o->hold.fence);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

int dl_lock_consistent(dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    char q[96];
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    int rc = !h || !h->wcount ? EPERM : !h->od ? EINVAL : 0;
    if (rc == 0)
        h->od = 0;
    pthread_mutex_unlock(&o->mu);
    dl_core_qname(o, q, sizeof q);
    if (rc == EPERM)
        return dl_fail(EPERM, "lock %s: not held by this thread", q);
    if (rc == EINVAL)
        return dl_fail(EINVAL, "lock %s: no EOWNERDEAD to make consistent (this thread's section "
                       "was told none by a lock call through a robust mutex, or made it "
                       "consistent already)", q);
    return 0;
}

int dl_lock_recover(dl_proc_t *p, dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    char q[96];
    pthread_mutex_lock(&o->mu);
    uint64_t mark = dl_hold_unrec(o);
    pthread_mutex_unlock(&o->mu);
    if (!mark)
        return 0;
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    dl_call_recover(&c, &who, &(dl_recover_args_t){ .mark = mark });
    DL_TALLY_ADD(o, roundtrips, 1);
    if (dl_script_run(p->conn, &c, 1) || DL_REPLY(&c, recover).result < 0)
        return dl_fail(EIO, "lock %s: clearing its unrecoverable state: %s",
                       dl_core_qname(o, q, sizeof q),
                       c.cmd.err ? c.cmd.errmsg : "unexpected reply from Redis");
    pthread_mutex_lock(&o->mu);
    if (dl_hold_unrec(o) == mark)
        dl_hold_set_unrec(o, 0);
    pthread_mutex_unlock(&o->mu);
    if (DL_REPLY(&c, recover).result == 1)
        dl_log(DL_LOG_INFO, "lock %s: recovered (its unrecoverable state cleared)",
               dl_core_qname(o, q, sizeof q));
    return 0;
}

/* --- several locks at once (prim/lockall.c) --- */

int dl_lock_deadlocks(dl_lock_t *l, const dl_req_t *rq)
{
    dl_core_t *o = &l->core;
    char q[96];
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    int rc = 0;
    if (h && h->wcount && rq->errorcheck)
        rc = dl_fail(EDEADLK, "lock %s: already held by this thread", dl_core_qname(o, q, sizeof q));
    else if (h && !h->wcount && h->rcount)
        rc = dl_fail(EDEADLK, "lock %s: this thread holds it for reading; a write request "
                     "would wait forever (no upgrades)", dl_core_qname(o, q, sizeof q));
    pthread_mutex_unlock(&o->mu);
    return rc;
}

int dl_lock_reserve(dl_lock_t *l, pid_t tid)
{
    dl_core_t *o = &l->core;
    pthread_mutex_lock(&o->mu);
    int free_here = !l->writer && !l->rthreads && !o->hold.busy && !o->hold.rmode &&
                    !dl_holder_find(l, tid);
    /* As a writer's acquire before it asks Redis: the lock's one talker
     * (with room for its undo: none, ENOMEM), and the writer to be. */
    if (free_here && dl_hold_reserve(o))
        free_here = -1;
    if (free_here == 1)
        took_local(l, tid, l->unlock_tid == tid && dl_now_us() - l->unlock_us <= DL_RELOCK_US);
    pthread_mutex_unlock(&o->mu);
    return free_here;
}

int dl_lock_finish(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, pid_t tid, int rc,
                   const dl_grant_t *g)
{
    return tell_carried(l, rq, finish(p, l, rq, tid, rc, g));
}

int dl_lock_owner_dead_pending(dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    int od = h && h->wcount && h->od;
    pthread_mutex_unlock(&o->mu);
    return od;
}

void dl_lock_lapse_told(dl_lock_t *l, const dl_req_t *rq)
{
    dl_core_t *o = &l->core;
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    if (h && h->wcount) {
        dl_holder_mark_lapsed(h);
        if (rq->robust)
            dl_holder_owner_dead(h);
    }
    pthread_mutex_unlock(&o->mu);
}

void dl_lock_lapse_untold(dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    if (h && h->wcount) {
        dl_holder_mark_lapsed(h);
        h->untold = 1;
    }
    pthread_mutex_unlock(&o->mu);
}

int dl_lock_undo(dl_proc_t *p, dl_lock_t *l, int dead, int od_was)
{
    dl_core_t *o = &l->core;
    pid_t tid = dl_tid();
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, tid);
    if (!h || !h->wcount) {
        pthread_mutex_unlock(&o->mu);
        return EPERM;
    }
    int last, lapsed, od, rc = 0;
    uint64_t since;               /* (never the program's hold: no hold time) */
    dl_holder_pop(l, tid, &last, &since, &lapsed, &od);
    if (!last) {
        /* A relock of a hold the thread keeps: its section's pending
         * EOWNERDEAD as before the call (h is still its record). */
        h->od = od_was;
    } else {
        while (o->hold.busy && o->hold.rmode)
            dl_core_wait(o, dl_now_ms() + 100);
        l->writer = 0;
        /* Taken from Redis by the call being undone, over a lapse nobody
         * was told of: its death trace goes back.  Else an unlock's
         * release, but never a linger (nothing of a failed call stays). */
        if (dead && o->hold.rmode == 'w' && !o->hold.busy && !l->rthreads)
            rc = dl_hold_give_back(p, o);
        else
            rc = settle(p, l, 0);
    }
    dl_core_wake(o);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

/* The thread's write hold on l, as its record says (o->mu held): NULL when
 * its part was left in a lost hold, or the process holds nothing. */
static dl_holder_t *own_hold(dl_lock_t *l, pid_t tid)
{
    dl_holder_t *h = dl_holder_find(l, tid);
    return h && l->core.hold.rmode && h->fence == l->core.hold.fence ? h : NULL;
}

/* Within its validity and not known lost (o->mu held). */
static int in_validity(const dl_core_t *o)
{
    return o->hold.rmode && !o->hold.lost && dl_now_ms() < o->tenure.valid_until;
}

int dl_lock_reconfirm(dl_proc_t *p, dl_lock_t *l, int how, int *asked)
{
    dl_core_t *o = &l->core;
    pid_t tid = dl_tid();
    int rc = 0, confirmed = 0;
    char q[96];
    pthread_mutex_lock(&o->mu);
    for (;;) {
        if (!own_hold(l, tid)) {
            rc = ENOLCK;
            break;
        }
        if (o->hold.busy) {       /* another thread asks Redis about it: its answer decides */
            /* That round trip takes as long as one of ours, and the
             * caller's other holds age as much meanwhile: it counts as
             * asked (lockall.c's confirm_all then trusts no later hold on
             * its validity alone, and checks every one's validity after). */
            *asked = 1;
            dl_core_wait(o, dl_now_ms() + 100);
            continue;
        }
        /* A confirmation is checked like the reply it confirms: answered
         * after the validity it set (a slow reply, a stall between sending
         * and reading), it vouches for nothing now.  (A sign during it
         * asks for no other: as take.c's take_in_time.) */
        if (confirmed) {
            if (!in_validity(o))
                rc = dl_fail(ENOLCK, "lock %s: its confirmation was answered after the "
                             "validity it set", dl_core_qname(o, q, sizeof q));
            break;
        }
        if (how == DL_RECONFIRM_TRUSTED ? dl_tenure_trusted(o, 0)
                                        : in_validity(o) &&
                                              o->tenure.trust_epoch == dl_trust_epoch())
            break;
        *asked = 1;
        if ((rc = dl_hold_confirm(p, o)))
            break;
        confirmed = 1;            /* looked at anew: the hold's record may have moved */
    }
    pthread_mutex_unlock(&o->mu);
    return rc;
}

int dl_lock_valid(dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    pthread_mutex_lock(&o->mu);
    int ok = own_hold(l, dl_tid()) && in_validity(o);
    pthread_mutex_unlock(&o->mu);
    return ok;
}

/* --- a condition's wait on a mutex (prim/cond.c, api/cond.c) --- */

unsigned dl_lock_held_count(dl_lock_t *l)
{
    dl_core_t *o = &l->core;
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    unsigned n = h ? h->wcount : 0;
    pthread_mutex_unlock(&o->mu);
    return n;
}

int dl_lock_release_all(dl_proc_t *p, dl_lock_t *l, int *seen, int *od)
{
    dl_core_t *o = &l->core;
    pid_t tid = dl_tid();
    pthread_mutex_lock(&o->mu);
    dl_holder_t *h = dl_holder_find(l, tid);
    /* Every reentrant hold but the last is counted here only: the thread
     * stays the writer meanwhile, so no other thread gets in between. */
    while (h && h->wcount > 1) {
        int last, lapsed, pod;
        uint64_t since;
        dl_holder_pop(l, tid, &last, &since, &lapsed, &pod);
        h = dl_holder_find(l, tid);
    }
    /* A lapse the section saw already (its relock was told EOWNERDEAD)
     * goes with the caller through the wait, not into this release's
     * code: that says ENOLCK only for a lapse found now. */
    *seen = h && h->lapsed;
    if (h)
        h->lapsed = 0;
    /* So does a robust EOWNERDEAD still to be made consistent: the wait's
     * release does not end the section, so it leaves nothing
     * unrecoverable. */
    *od = h && h->od;
    if (h)
        h->od = 0;
    pthread_mutex_unlock(&o->mu);
    return dl_lock_release(p, l, 1);
}

int dl_lock_restore(dl_lock_t *l, unsigned count, int lapsed, int od)
{
    dl_core_t *o = &l->core;
    pid_t tid = dl_tid();
    int rc = 0;
    pthread_mutex_lock(&o->mu);
    for (unsigned i = 1; i < count && rc == 0; i++)
        rc = dl_holder_push(l, tid, 'w');
    dl_holder_t *h = dl_holder_find(l, tid);
    if (h && lapsed)
        dl_holder_mark_lapsed(h);
    if (h && od)
        dl_holder_owner_dead(h);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

int dl_lock_carry(dl_lock_t *l, int lapsed, int od, int untold)
{
    dl_core_t *o = &l->core;
    char q[96];
    if (!lapsed && !od && !untold)
        return 0;
    pthread_mutex_lock(&o->mu);
    int rc = dl_holder_carry(l, dl_tid(), lapsed, od, untold);
    pthread_mutex_unlock(&o->mu);
    if (rc)
        return dl_fail(rc, "lock %s: out of memory keeping what the caller's section had seen",
                       dl_core_qname(o, q, sizeof q));
    return 0;
}

/* --- the lock's kind: what the registry and the hold core ask of it --- */

static const dl_hold_calls_t lock_calls = {
    .acquire = dl_call_acquire,
    .cancel = dl_call_cancel,
    .withdraw = dl_call_withdraw,
    .renew = dl_call_renew,
    .touch = dl_call_touch,
    .release = dl_call_release,
    .mark = dl_call_mark,
    .acquire_all = dl_call_acquire_all,
    .withdraw_all = dl_call_withdraw_all,
    .renew_many = dl_call_renew_many,
};

static void lock_fini(dl_core_t *o)
{
    dl_lock_t *l = dl_lock_of(o);
    if (l->holders != &l->holder1)
        free(l->holders);
    free(l->carries);
}

/* A thread of the process holds the lock now (a lingering hold stays). */
static int lock_held(const dl_core_t *o)
{
    const dl_lock_t *l = dl_lock_of((dl_core_t *)o);
    return l->writer || l->rthreads;
}

/* Threads of the process wait for it locally (the watchdog keeps the
 * hold confirmed while they do). */
static int lock_waiting(const dl_core_t *o)
{
    const dl_lock_t *l = dl_lock_of((dl_core_t *)o);
    return l->wwait || l->rwait;
}

/* A thread holds it or waits for it locally (the core adds a thread
 * talking to Redis for it, or waiting in Redis's queue: dl_core_in_use). */
static int lock_in_use(const dl_core_t *o)
{
    const dl_lock_t *l = dl_lock_of((dl_core_t *)o);
    return l->nholders || l->wwait || l->rwait;
}

/* The budget of a held lock's memory (lock.h). */
_Static_assert(sizeof(dl_lock_t) <= DL_LOCK_SIZE_MAX,
               "dl_lock_t outgrew its budget (DL_LOCK_SIZE_MAX, lock.h)");

const dl_kind_t dl_lock_kind = {
    .id = DL_KIND_LOCK,
    .size = sizeof(dl_lock_t),
    .queue = 1,
    .calls = &lock_calls,
    .fini = lock_fini,
    .held = lock_held,
    .waiting = lock_waiting,
    .in_use = lock_in_use,
};
