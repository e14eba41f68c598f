/* SPDX-License-Identifier: BSD-3-Clause */
/* lock.c - the local lock first, then the Redis hold.
 *
 * Inside a process a lock admits one writer thread or many reader threads,
 * and only one thread at a time (l->busy) talks to Redis for it.  The
 * process's Redis hold (l->rmode) outlives a local unlock only to be passed
 * to a thread of this process that is already waiting (local handoff), or
 * to the thread that just unlocked, when it loops over the lock: it locked
 * again at once after its previous unlock and held the lock briefly (the
 * hold lingers for DL_LINGER_US, and the watchdog releases it on time if no
 * lock call came).  Local handoffs happen while no other process waits;
 * once one does, both happen (unless fair) for a bounded while only:
 * DL_KEEP_US and DL_HANDOFF_MAX more holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlock.h"
#include "dl.h"
#include "lock.h"

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
 *    round trips (the lock's own, smoothed: l->rtt_us), and never more
 *    than DL_LINGER_HOLD_MAX_US.  Against a longer hold the pass saved is
 *    worth little, and a waiter that is kept out that long is better
 *    served at once (W3b in docs/PERFORMANCE.md: a thread that relocked at
 *    once and then held 2 ms cost each handoff 1.3 ms);
 *  - the cost: the linger lasts DL_LINGER_US, a loop's relock with room to
 *    spare and no more than a loopback round trip, and the watchdog ends it
 *    on time (woken for it, with a fine timer slack), so a wrong guess
 *    delays the waiting process by about one round trip. */
#define DL_RELOCK_US 50
#define DL_LINGER_US (2 * DL_RELOCK_US)
#define DL_LINGER_HOLD_RTTS 4
#define DL_LINGER_HOLD_MIN_US 100     /* (also before a round trip is measured) */
#define DL_LINGER_HOLD_MAX_US 1000

/* A thread that unlocks and locks again at once wins against the threads
 * it just woke; after this many holds in a row while they wait, it lets one
 * of them go first, so a process's threads share the lock and finish their
 * work together instead of one after another (the last alone, paying a
 * round trip per call). */
#define DL_LOCAL_STREAK 8

/* A waiter's registration lives this long (at most a lease) unless
 * refreshed, so a waiter that died leaves the queue that soon; a hold pushed
 * to a waiter first lives as long (its claim window) until the grantee's
 * watchdog extends it. */
#define DL_WAITER_TTL_MS 2000UL

/* redlock: how long a waiting writer's mark lives on a server unless its
 * next retry refreshes it (lua/common.lua, ww_set).  A few times the longest
 * pause between retries (25 ms) and a slow round trip: readers elsewhere
 * keep refusing while the writer waits, and a writer that died or vanished
 * holds them back this long at most (capped by the claim window). */
#define DL_WRITER_MARK_MS 250UL

/* The claim window of a hold with this lease (see above). */
static unsigned long claim_window(unsigned long lease_ms)
{
    return lease_ms < DL_WAITER_TTL_MS ? lease_ms : DL_WAITER_TTL_MS;
}

typedef struct dl_grant {
    uint64_t fence;
    int dead;
    int more;
    int claimed;              /* granted while we waited: only the claim ttl */
    int maybe;                /* failed, but an acquire or cancel may have run */
    uint64_t rid;             /* the registration id the hold was taken or claimed with */
    uint64_t valid_until;     /* see dl_lock_t; 0: unknown until renewed */
} dl_grant_t;

static const char *qname(const dl_lock_t *l, char *buf, size_t size)
{
    return dl_quote(l->name, l->namelen, buf, size);
}

/* May the process's Redis hold serve another local holder now? */
static int may_keep(const dl_lock_t *l)
{
    return l->rmode && !l->lost && l->renew && dl_hold_valid(l) &&
           (!l->remote_waiting || (!l->fair && l->handoffs < DL_HANDOFF_MAX &&
                                   dl_now_us() - l->waited_since < DL_KEEP_US));
}

/* A round trip of this lock's calls took us: smoothed into l->rtt_us, the
 * measure of a short hold.  Atomic: redis_take samples it without l->mu. */
static void rtt_sample(dl_lock_t *l, uint64_t us)
{
    uint64_t old = __atomic_load_n(&l->rtt_us, __ATOMIC_RELAXED);
    __atomic_store_n(&l->rtt_us, old ? (7 * old + us) / 8 : us, __ATOMIC_RELAXED);
}

/* Was the write hold that just ended short enough to linger after (l->mu
 * held)?  See DL_LINGER_HOLD_RTTS. */
static int short_hold(const dl_lock_t *l)
{
    uint64_t bound = DL_LINGER_HOLD_RTTS * __atomic_load_n(&l->rtt_us, __ATOMIC_RELAXED);
    if (bound < DL_LINGER_HOLD_MIN_US)
        bound = DL_LINGER_HOLD_MIN_US;
    if (bound > DL_LINGER_HOLD_MAX_US)
        bound = DL_LINGER_HOLD_MAX_US;
    return dl_now_us() - l->held_us <= bound;
}

/* Before a lingering hold serves a holder again (l->mu held): Redis must
 * know it is held once more, for EOWNERDEAD.  -1 if that cannot be posted
 * now: the caller then ends the hold and asks Redis like everyone else. */
static int claim_linger(dl_proc_t *p, dl_lock_t *l)
{
    if (!l->linger_until)
        return 0;
    /* After a cut, the same post restores the lease; the next linger cuts
     * anew. */
    if (dl_mark(p, l, 0, l->ttl_cut ? l->lease_ms : 0) != 0)
        return -1;
    l->linger_until = 0;
    l->ttl_cut = 0;
    return 0;
}

static void wait_until(dl_lock_t *l, uint64_t deadline)
{
    struct timespec ts;
    dl_timespec_at(deadline, &ts);
    pthread_cond_timedwait(&l->cv, &l->mu, &ts);
}

/* Ends the process's Redis hold, waiting for Redis until deadline (monotonic
 * ms; 0: the I/O time-out).  l->mu held on entry and exit; released around
 * the round trip while l->busy keeps other threads of the process away.  0,
 * ENOLCK (the hold had lapsed), EIO. */
static int release_redis(dl_proc_t *p, dl_lock_t *l, uint64_t deadline)
{
    int lost = l->lost, cut = l->ttl_cut;
    /* Names this hold, so that a copy of the call that reaches Redis late
     * (sent on a connection given up since) cannot end a later hold. */
    dl_release_args_t ra = { .mode = l->rmode, .fence = l->fence, .rid = l->hold_rid };
    dl_caller_t who = dl_caller(p, l);
    l->busy = 1;
    pthread_mutex_unlock(&l->mu);

    dl_call_t c;
    dl_call_release(&c, &who, &ra);
    c.deadline = deadline;
    uint64_t t0 = dl_now_us();
    int rc = dl_script_run(p->conn, &c, 1);
    if (!rc)
        rtt_sample(l, dl_now_us() - t0);
    char q[96];
    qname(l, q, sizeof q);
    if (rc && !lost) {
        rc = dl_fail(EIO, "unlock %s: %s; the hold lapses within %s", q, c.cmd.errmsg,
                     cut ? "its claim window (a lingering hold)" : "one lease");
        dl_log(DL_LOG_WARN, "%s", dist_lasterror());
    } else if (rc) {
        rc = 0;
    } else if (c.reply.release.result == 0) {
        /* Even for a resend: a first copy that ran left the release mark,
         * and the reply would be 2.  So a server that restarted empty under
         * us gives ENOLCK, and a cut connection does not. */
        lost = 1;
    }

    pthread_mutex_lock(&l->mu);
    if (lost) {
        rc = dl_fail(ENOLCK, "lock %s: the hold had lapsed in Redis before unlock "
                     "(lease ran out, or the key was deleted)", q);
        dl_log(DL_LOG_WARN, "hold on %s lost: it had lapsed in Redis before unlock "
               "(lease ran out, or the key was deleted)", q);
        DL_STAT_ADD(lost, 1);
    }
    l->busy = 0;
    l->rmode = 0;
    l->holdseq++;             /* late renew replies concern the old hold */
    l->renew_due = 0;
    l->lost = 0;
    l->remote_waiting = 0;
    l->handoffs = 0;
    l->linger_until = 0;
    pthread_cond_broadcast(&l->cv);
    return rc;
}

/* Called (l->mu held) when a thread stopped holding or waiting: releases
 * the Redis hold once no thread of the process uses or can use it.  linger:
 * the unlocking thread loops (it relocked at once, and its hold was short:
 * see DL_LINGER_HOLD_RTTS): keep the hold for its next lock call, but only
 * while another process waits.  That process would be handed the lock by
 * the release anyway, so nobody else could have taken it meanwhile; were
 * nobody waiting, the release would free the lock for any trylock
 * elsewhere, which a lingering hold would refuse. */
static int settle(dl_proc_t *p, dl_lock_t *l, int linger)
{
    if (!l->rmode || l->writer || l->rthreads || l->busy)
        return 0;
    if ((l->wwait || l->rwait) && may_keep(l)) {
        pthread_cond_broadcast(&l->cv);      /* a waiting thread takes it over */
        return 0;
    }
    /* The mark (mark.c) spares the next holder EOWNERDEAD should this
     * process end without passing the lock on, and cuts the hold's time in
     * Redis to a claim window: the others would wait that long at most. */
    unsigned long claim = claim_window(l->lease_ms);
    if (linger && l->rmode == 'w' && l->remote_waiting && may_keep(l) &&
        dl_mark(p, l, 1, l->ttl_cut ? 0 : claim) == 0) {
        if (!l->ttl_cut) {
            dl_hold_cut(l, claim);
            uint64_t due = dl_now_ms() + claim / 2;   /* renewed then if held again */
            if (!l->renew_due || l->renew_due > due)
                dl_watchdog_due(p, l, due);
            l->ttl_cut = 1;
        }
        l->linger_until = dl_now_us() + DL_LINGER_US;
        dl_watchdog_linger(p, l->linger_until);
        DL_STAT_ADD(lingers, 1);
        return 0;
    }
    return release_redis(p, l, 0);
}

/* Takes the Redis hold for l, waiting for a grant if rq allows.  Called
 * with l->busy set by the caller and l->mu not held. */
static int redis_take(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, dl_grant_t *g)
{
    unsigned long lease = rq->lease_ms ? rq->lease_ms : p->cfg.lease_ms;
    unsigned long wttl = claim_window(lease);
    unsigned long claim = rq->lease_ms ? lease : wttl;
    int queue = !rq->try_only && rq->deadline > dl_now_ms();
    /* Without a queue in Redis (redlock, see quorum.c) waiters retry; a
     * quorum of servers takes the writer mark below. */
    dl_caps_t caps = dl_conn_caps(p->conn);
    int redlock = caps.quorum;
    int enqueue = queue && caps.queue;
    char q[96];
    /* redlock: a reader that may wait subscribes too, to hear of a writer
     * that starts waiting while it holds (a push from the writer's mark,
     * acquire.lua), as readers hear of a queued writer elsewhere; only a
     * hint there (renewals say it too), so no failure to subscribe stops
     * the call. */
    int nrc = enqueue || (redlock && queue && rq->mode == 'r') ? dl_notify_ensure(p, rq->deadline) : 0;
    if (nrc && !enqueue)
        nrc = 0;
    if (nrc == EAGAIN)
        dl_log(DL_LOG_INFO, "lock %s: the subscriber is still connecting; waiting without "
               "pushes (asking again every %lu ms)", qname(l, q, sizeof q), wttl / 3);
    else if (nrc) {
        char why[200];
        snprintf(why, sizeof why, "%s", dist_lasterror());
        return dl_fail(EIO, "lock %s: cannot wait for it: %s", qname(l, q, sizeof q), why);
    }

    char info[200];
    dl_caller_t who = dl_caller(p, l);
    /* redlock: writer preference without a queue (acquire.lua's ARGV[10]):
     * a write that will wait marks the servers it finds busy, and every
     * read honours another process's mark. */
    unsigned long markms = 0;
    if (redlock && rq->mode == 'w' && queue)
        markms = DL_WRITER_MARK_MS < wttl ? DL_WRITER_MARK_MS : wttl;
    size_t infolen = dl_proc_info(p, info, sizeof info);
    uint64_t regid = __atomic_add_fetch(&p->regseq, 1, __ATOMIC_RELAXED);

    pthread_mutex_lock(&l->mu);
    l->regid = enqueue ? regid : 0;
    l->undo_rid = regid;
    l->granted = l->recheck = 0;
    pthread_mutex_unlock(&l->mu);

    int rc, asked_again = 0;
    uint64_t asked_at = 0;            /* when the last acquire was sent */
    for (;;) {
        dl_call_t c;
        if (asked_at) {
            /* Each ask registers anew: a push for an earlier registration
             * carries a grant made before this ask ran, which the ask
             * reports itself if it still stands ("mine") and which has
             * lapsed if the ask finds the lock busy.  Either way the push
             * is stale (notify.c drops it). */
            regid = __atomic_add_fetch(&p->regseq, 1, __ATOMIC_RELAXED);
            pthread_mutex_lock(&l->mu);
            l->regid = enqueue ? regid : 0;
            l->undo_rid = regid;
            l->granted = 0;
            pthread_mutex_unlock(&l->mu);
        }
        asked_at = dl_now_ms();
        dl_call_acquire(&c, &who, &(dl_acquire_args_t){
            .mode = rq->mode, .lease_ms = lease, .info = info, .infolen = infolen,
            .enqueue = enqueue, .regid = regid, .waiter_ttl_ms = wttl, .claim_ms = claim,
            .redlock = redlock, .writer_mark_ms = markms });
        /* A timed lock waits for a stalled server no longer than its deadline. */
        if (rq->deadline != DL_FOREVER && !rq->try_only) {
            /* (a round trip's worth at least, for a deadline already past) */
            uint64_t soonest = dl_now_ms() + 50;
            c.deadline = rq->deadline > soonest ? rq->deadline : soonest;
        }
        /* Should the link give up on a stalled server after sending this,
         * the server may run it when it resumes: the withdrawal of exactly
         * this request then runs right after it (lua/withdraw.lua). */
        dl_call_t undo;
        dl_call_withdraw(&undo, &who, &(dl_withdraw_args_t){ .mode = rq->mode, .regid = regid });
        uint64_t sent_us = dl_now_us();
        if (dl_script_run_undoable(p->conn, &c, &undo)) {
            /* A time-out says nothing of whether Redis ran it (a stalled
             * server runs it when it resumes): we may hold the lock, or be
             * queued, without knowing.  finish() has that withdrawn as
             * well, from a new connection: the undo above may not have
             * found room in the old one. */
            g->maybe = c.cmd.sent;
            if (c.deadline && dl_now_ms() >= c.deadline)
                rc = ETIMEDOUT;   /* finish() words it; the watchdog withdraws what was sent */
            else
                rc = dl_fail(EIO, "lock %s: %s", qname(l, q, sizeof q), c.cmd.errmsg);
            break;
        }
        rtt_sample(l, dl_now_us() - sent_us);
        const dl_acquire_reply_t *ar = &c.reply.acquire;
        if (ar->got == 1 && asked_again)
            DL_STAT_ADD(fallback_checks, 1);      /* had to find out by asking */
        if (ar->got == 1) {
            g->fence = ar->fence;
            g->dead = ar->dead;
            g->more = ar->waiters > 0;
            g->claimed = ar->claimed;
            /* Taken by this ask: it set the lease.  Found ours already (a
             * grant to an earlier request): its TTL is unknown until the
             * watchdog renews it, which finish() has done at once. */
            g->valid_until = g->claimed ? 0 : dl_hold_valid_until(asked_at, lease);
            rc = 0;
            break;
        }
        long long pttl = ar->pttl_ms;
        if (ar->got != 0) {
            rc = dl_fail(EIO, "lock %s: unexpected reply from Redis", qname(l, q, sizeof q));
            break;
        }
        if (!queue) {
            rc = EBUSY;
            break;
        }

        /* Queued.  Sleep until the grant is pushed, or until the holders'
         * leases run out (a holder that died sends nothing), or lease/3 at
         * most, which also refreshes our registration. */
        uint64_t now = dl_now_ms();
        uint64_t nap = wttl / 3 ? wttl / 3 : 1;
        if (!enqueue)                 /* redlock: a short random pause */
            nap = 2 + (uint64_t)(dl_random() % 24);
        if (pttl > 0 && (uint64_t)pttl + 1 < nap)
            nap = (uint64_t)pttl + 1;
        uint64_t wake = now + nap < rq->deadline ? now + nap : rq->deadline;
        pthread_mutex_lock(&l->mu);
        while (!l->granted && !l->recheck && dl_now_ms() < wake)
            wait_until(l, wake);
        if (l->granted) {
            g->fence = l->grant_fence;
            g->dead = l->grant_dead;
            g->more = l->grant_more;
            g->claimed = 1;
            /* Granted after our last ask was sent, for the claim window. */
            g->valid_until = dl_hold_valid_until(asked_at, claim);
            l->granted = 0;
            l->regid = 0;
            pthread_mutex_unlock(&l->mu);
            DL_STAT_ADD(grants, 1);
            /* The grant was made after our last acquire ran, and lives
             * `claim` ms unless our watchdog extends it (at claim/2 from
             * now).  A push read late (this process stalled, a slow
             * subscriber, a cluster bus behind) may carry a grant that has
             * lapsed, and the lock may be someone else's by now: confirm it
             * with the renewal it needs anyway, or wait again. */
            if (dl_now_ms() - asked_at >= claim / 2) {
                uint64_t renew_at = dl_now_ms();
                dl_call_renew(&c, &who, &(dl_renew_args_t){
                    .mode = rq->mode, .lease_ms = lease, .fence = g->fence });
                int rrc = dl_script_run(p->conn, &c, 1);
                long long kept = rrc ? -1 : c.reply.renew.held;
                char why[200];
                snprintf(why, sizeof why, "%s", rrc ? c.cmd.errmsg : "");
                if (kept == 0) {
                    dl_log(DL_LOG_INFO, "lock %s: a grant pushed %llu ms after we asked had lapsed: "
                           "waiting again", qname(l, q, sizeof q),
                           (unsigned long long)(dl_now_ms() - asked_at));
                    pthread_mutex_lock(&l->mu);
                    l->regid = regid;
                    pthread_mutex_unlock(&l->mu);
                    continue;
                }
                if (kept < 0) {
                    g->maybe = 1;
                    return dl_fail(EIO, "lock %s: confirming a late grant: %s", qname(l, q, sizeof q),
                                   why);
                }
                g->valid_until = dl_hold_valid_until(renew_at, lease);
            }
            g->rid = regid;
            return g->dead ? EOWNERDEAD : 0;
        }
        int pushed = l->recheck;
        l->recheck = 0;
        pthread_mutex_unlock(&l->mu);
        asked_again = !pushed;
        if (!pushed && enqueue)
            dl_log(DL_LOG_DEBUG, "lock %s: no push after %llu ms (holders' lease %lld ms): asking again",
                   qname(l, q, sizeof q), (unsigned long long)nap, pttl);

        if (dl_now_ms() >= rq->deadline && !enqueue) {
            rc = ETIMEDOUT;
            if (redlock && rq->mode == 'w') {
                /* Giving up: take our writer mark away now, rather than
                 * hold readers back until it lapses.  (Best effort: a
                 * server that misses it lets the mark lapse.) */
                dl_call_cancel(&c, &who, &(dl_cancel_args_t){
                    .mode = rq->mode, .regid = regid, .clear_mark = 1 });
                dl_script_run(p->conn, &c, 1);
            }
            break;
        }
        if (dl_now_ms() >= rq->deadline) {
            /* Withdraw; the lock may have been granted meanwhile. */
            dl_call_cancel(&c, &who, &(dl_cancel_args_t){ .mode = rq->mode, .regid = regid });
            rc = ETIMEDOUT;
            int crc = dl_script_run(p->conn, &c, 1);
            if (crc)
                g->maybe = 1;         /* still queued: a grant may come */
            if (crc == 0 && c.reply.cancel.granted == 1) {
                g->fence = c.reply.cancel.fence;
                g->dead = c.reply.cancel.dead;
                g->more = c.reply.cancel.waiters > 0;
                g->claimed = 1;
                g->valid_until = dl_hold_valid_until(asked_at, claim);
                rc = 0;
            }
            break;
        }
    }
    pthread_mutex_lock(&l->mu);
    l->regid = 0;
    l->granted = 0;
    pthread_mutex_unlock(&l->mu);
    if (rc == 0 && g->dead)
        rc = EOWNERDEAD;
    g->rid = regid;
    return rc;
}

/* ?wait=N: the acquisition counts once N replicas have it; else it is
 * undone, since a failover now could hand the lock to a second holder. */
static int confirm_replicas(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, const dl_grant_t *g)
{
    char q[96], err[200];
    unsigned long lease = rq->lease_ms ? rq->lease_ms : p->cfg.lease_ms;
    dl_caller_t who = dl_caller(p, l);
    dl_call_t c;
    if (g->claimed) {
        /* Granted by another client's release: WAIT covers only writes made
         * on our connection, so make one (the renewal the grant needs). */
        dl_call_renew(&c, &who, &(dl_renew_args_t){
            .mode = rq->mode, .lease_ms = lease, .fence = g->fence });
        dl_script_run(p->conn, &c, 1);
    }
    if (dl_conn_wait(p->conn, l->keys[0], l->keylen[0], err, sizeof err) == 0)
        return 0;
    /* Undo exactly this acquisition (named by its registration id: the same
     * on every redlock server, whose fences differ). */
    dl_call_withdraw(&c, &who, &(dl_withdraw_args_t){ .mode = rq->mode, .regid = g->rid });
    dl_script_run(p->conn, &c, 1);
    return dl_fail(EIO, "lock %s: %s; the acquisition was undone", qname(l, q, sizeof q), err);
}

static int redis_acquire(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, dl_grant_t *g)
{
    int rc = redis_take(p, l, rq, g);
    if ((rc == 0 || rc == EOWNERDEAD) && p->cfg.wait_replicas) {
        int wrc = confirm_replicas(p, l, rq, g);
        if (wrc)
            return wrc;
    }
    return rc;
}

/* Records a new Redis hold (l->mu held). */
static void took_redis(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, const dl_grant_t *g)
{
    l->rmode = rq->mode;
    l->fence = g->fence;
    l->hold_rid = g->rid;
    l->lease_ms = rq->lease_ms ? rq->lease_ms : p->cfg.lease_ms;
    l->renew = rq->lease_ms == 0;
    l->fair = rq->fair;
    l->lost = 0;
    l->holdseq++;
    l->handoffs = 0;
    l->ttl_cut = 0;
    l->cut_ttl = 0;
    l->valid_until = g->valid_until;
    /* redlock: nobody queues, so nobody can say they wait: bound local
     * handoffs of a write hold as if someone did.  A read hold is shared by
     * the process's readers (as on redis://) until a renewal reports a
     * writer's mark (renew.lua): the watchdog renews it every
     * DL_TENURE_RENEW_MS while readers join it (tenure.c). */
    if ((g->more || (!dl_conn_caps(p->conn).queue && rq->mode == 'w')) &&
        !l->remote_waiting) {
        l->remote_waiting = 1;
        l->waited_since = dl_now_us();
    }
}

static int busy_code(const dl_req_t *rq, const dl_lock_t *l)
{
    char q[96];
    if (rq->try_only)
        return dl_fail(EBUSY, "lock %s is held", dl_quote(l->name, l->namelen, q, sizeof q));
    return dl_fail(ETIMEDOUT, "lock %s: timed out", dl_quote(l->name, l->namelen, q, sizeof q));
}

/* A grant pushed to us (or found ours) lives only its claim window in
 * Redis: the full lease is posted at once, and the watchdog confirms it at
 * half the window (at once if the post could not be written, or if we do
 * not know when the grant was made).  l->mu held. */
static void claimed_grant(dl_proc_t *p, dl_lock_t *l)
{
    uint64_t now = dl_now_ms();
    int posted = dl_post_renew(p, l) == 0;
    dl_watchdog_due(p, l, posted && l->valid_until > now
                              ? now + claim_window(l->lease_ms) / 2 : now);
}

/* After a Redis acquisition: record it, or undo the local reservation. */
static int finish(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, pid_t tid, int rc,
                  const dl_grant_t *g)
{
    char q[96];
    pthread_mutex_lock(&l->mu);
    l->busy = 0;
    if (rc == 0 || rc == EOWNERDEAD)
        l->undo = 0;              /* whatever a failed call left is ours now */
    else if (g->maybe && !l->rmode) {
        l->undo = rq->mode;
        l->undo_checks = 2;
        dl_watchdog_ensure(p);
        dl_watchdog_due(p, l, dl_now_ms() + 50);
    }
    if (rc == 0 || rc == EOWNERDEAD) {
        took_redis(p, l, rq, g);
        l->held_us = dl_now_us();     /* the write hold starts (see short_hold) */
        int prc = dl_holder_push(l, tid, rq->mode);
        if (prc) {
            /* Could not record the hold: give it back rather than leak it. */
            if (rq->mode == 'w')
                l->writer = 0;
            release_redis(p, l, 0);
            rc = dl_fail(prc, "out of memory");
        } else {
            if (rq->mode == 'r')
                l->rthreads++;
            if (rc == EOWNERDEAD) {
                dl_seterr("lock %s: acquired, but the previous holder's lease ran out "
                          "before it unlocked; the protected state may be half-updated",
                          qname(l, q, sizeof q));
                dl_log(DL_LOG_INFO, "%s", dist_lasterror());
            }
            if (l->renew) {
                dl_watchdog_ensure(p);
                if (g->claimed)
                    claimed_grant(p, l);
            }
        }
    } else {
        if (rq->mode == 'w')
            l->writer = 0;
        if (rc == EBUSY || rc == ETIMEDOUT)
            rc = busy_code(rq, l);
        settle(p, l, 0);
    }
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

/* Counts the holds in a row of one thread while others wait (l->mu held,
 * the caller's wwait already dropped). */
/* tid is the writer now; quick: its lock call came right after its own
 * unlock (a loop: see settle).  Recorded for the writer only, so that a
 * lock call that fails meanwhile (a trylock) cannot change it. */
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

static int acquire_write(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, pid_t tid)
{
    char q[96];
    int rc;
    pthread_mutex_lock(&l->mu);
    dl_holder_t *h = dl_holder_find(l, tid);
    if (h && h->wcount) {
        if (rq->errorcheck)
            rc = dl_fail(EDEADLK, "lock %s: already held by this thread", qname(l, q, sizeof q));
        else if ((rc = dl_holder_push(l, tid, 'w')))
            dl_seterr("lock %s: %s", qname(l, q, sizeof q),
                      rc == EAGAIN ? "reentrancy count overflow" : "out of memory");
        pthread_mutex_unlock(&l->mu);
        return rc;
    }
    if (h && h->rcount) {
        pthread_mutex_unlock(&l->mu);
        return dl_fail(EDEADLK, "lock %s: this thread holds it for reading; "
                       "a write request would wait forever (no upgrades)", qname(l, q, sizeof q));
    }
    /* Relocking at once, as a loop around the lock does?  (see settle) */
    int quick = l->unlock_tid == tid && dl_now_us() - l->unlock_us <= DL_RELOCK_US;
    l->wwait++;
    for (;;) {
        if (!l->writer && !l->rthreads && !l->busy && l->last_writer == tid &&
            l->streak >= DL_LOCAL_STREAK && l->wwait > 1 && !rq->try_only &&
            dl_now_ms() < rq->deadline) {
            /* Our turn is over: the threads woken by our unlock go first. */
            wait_until(l, rq->deadline);
            continue;
        }
        if (!l->writer && !l->rthreads && !l->busy) {
            if (!l->rmode)
                break;
            if (l->rmode == 'w' && may_keep(l) && claim_linger(p, l) == 0) {
                /* Local handoff: the process's Redis hold passes to us. */
                l->wwait--;
                if ((rc = dl_holder_push(l, tid, 'w'))) {
                    settle(p, l, 0);
                    pthread_mutex_unlock(&l->mu);
                    return dl_fail(rc, "out of memory");
                }
                took_local(l, tid, quick);
                l->held_us = dl_now_us();
                if (l->remote_waiting)
                    l->handoffs++;
                dl_tenure_renew(p, l);
                DL_STAT_ADD(local_handoffs, 1);
                pthread_mutex_unlock(&l->mu);
                return 0;
            }
            /* A hold we cannot reuse (lost, past its validity, or others
             * have waited long enough): end it, then ask Redis like
             * everyone else. */
            release_redis(p, l, 0);
            continue;
        }
        if (rq->try_only || dl_now_ms() >= rq->deadline) {
            l->wwait--;
            settle(p, l, 0);
            pthread_cond_broadcast(&l->cv);   /* readers held back by us */
            pthread_mutex_unlock(&l->mu);
            return busy_code(rq, l);
        }
        dl_tenure_renew(p, l);           /* held by a thread of ours: kept busy */
        wait_until(l, rq->deadline);
    }
    l->wwait--;
    took_local(l, tid, quick);
    l->busy = 1;
    pthread_mutex_unlock(&l->mu);

    dl_grant_t g = { 0 };
    rc = redis_acquire(p, l, rq, &g);
    return finish(p, l, rq, tid, rc, &g);
}

static int acquire_read(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, pid_t tid)
{
    char q[96];
    int rc;
    pthread_mutex_lock(&l->mu);
    dl_holder_t *h = dl_holder_find(l, tid);
    if (h && (h->wcount || h->rcount)) {
        /* A thread that holds the lock may always read it again, even past
         * a waiting writer. */
        if ((rc = dl_holder_push(l, tid, 'r')))
            dl_seterr("lock %s: %s", qname(l, q, sizeof q),
                      rc == EAGAIN ? "reader count overflow" : "out of memory");
        pthread_mutex_unlock(&l->mu);
        return rc;
    }
    l->rwait++;
    for (;;) {
        if (!l->writer && !l->busy && !l->wwait) {
            if (!l->rmode)
                break;
            if ((l->rmode == 'r' && !l->lost && !l->remote_waiting && dl_hold_valid(l)) ||
                (l->rmode == 'w' && !l->rthreads && may_keep(l) && claim_linger(p, l) == 0) ||
                (l->rmode == 'w' && l->rthreads && !l->lost && !l->remote_waiting &&
                 dl_hold_valid(l))) {
                l->rwait--;
                if ((rc = dl_holder_push(l, tid, 'r'))) {
                    settle(p, l, 0);
                    pthread_mutex_unlock(&l->mu);
                    return dl_fail(rc, "out of memory");
                }
                if (l->rmode == 'w' && !l->rthreads) {
                    if (l->remote_waiting)
                        l->handoffs++;
                    DL_STAT_ADD(local_handoffs, 1);
                }
                l->rthreads++;
                dl_tenure_renew(p, l);
                pthread_mutex_unlock(&l->mu);
                return 0;
            }
            if (!l->rthreads) {
                release_redis(p, l, 0);
                continue;
            }
            /* Readers of this process still hold it, but a writer elsewhere
             * waits: new readers queue behind that writer, in Redis. */
        }
        if (rq->try_only || dl_now_ms() >= rq->deadline) {
            l->rwait--;
            settle(p, l, 0);
            pthread_mutex_unlock(&l->mu);
            return busy_code(rq, l);
        }
        dl_tenure_renew(p, l);           /* held by a thread of ours: kept busy */
        wait_until(l, rq->deadline);
    }
    l->rwait--;
    l->busy = 1;
    pthread_mutex_unlock(&l->mu);

    dl_grant_t g = { 0 };
    rc = redis_acquire(p, l, rq, &g);
    return finish(p, l, rq, tid, rc, &g);
}

int dl_lock_acquire(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq)
{
    pid_t tid = dl_tid();
    return rq->mode == 'w' ? acquire_write(p, l, rq, tid) : acquire_read(p, l, rq, tid);
}

/* A thread ends its part of a hold that other threads of the process keep
 * (l->mu held): its unlock may return 0 only if the hold was still Redis's
 * all along.  Within the hold's confirmed validity it was; past it (the
 * process stalled, or its renewals failed) a renewal asks Redis, which
 * also makes the hold valid again for the threads that keep it.  0,
 * ENOLCK (the hold is gone: the others' unlocks say so too), EIO. */
static int vouch(dl_proc_t *p, dl_lock_t *l)
{
    char q[96];
    if (!l->rmode || (!l->lost && dl_hold_valid(l)))
        return 0;
    if (!l->lost && !l->renew) {
        /* A fixed lease past its end has lapsed: that is what it is for. */
        l->lost = 1;
    }
    if (!l->lost) {
        unsigned long holdseq = l->holdseq;
        dl_caller_t who = dl_caller(p, l);
        dl_call_t c;
        dl_call_renew(&c, &who, &(dl_renew_args_t){
            .mode = l->rmode, .lease_ms = l->lease_ms, .fence = l->fence });
        l->busy = 1;
        pthread_mutex_unlock(&l->mu);
        uint64_t sent = dl_now_ms();
        int rc = dl_script_run(p->conn, &c, 1);
        long long kept = rc ? -1 : c.reply.renew.held;
        char why[200];
        snprintf(why, sizeof why, "%s", rc ? c.cmd.errmsg : "unexpected reply");
        pthread_mutex_lock(&l->mu);
        l->busy = 0;
        pthread_cond_broadcast(&l->cv);
        if (l->holdseq != holdseq)
            return 0;             /* (cannot happen while others hold it) */
        if (kept >= 1) {
            uint64_t v = dl_hold_valid_until(sent, dl_hold_ttl(l));
            if (v > l->valid_until)
                l->valid_until = v;
            return 0;
        }
        if (kept < 0)
            return dl_fail(EIO, "unlock %s: cannot confirm the hold with Redis: %s",
                           qname(l, q, sizeof q), why);
        l->lost = 1;
        DL_STAT_ADD(lost, 1);
    }
    dl_log(DL_LOG_WARN, "hold on %s lost: it had lapsed in Redis before unlock "
           "(lease ran out, or the key was deleted)", qname(l, q, sizeof q));
    return dl_fail(ENOLCK, "lock %s: the hold had lapsed in Redis before unlock "
                   "(lease ran out, or the key was deleted)", q);
}

int dl_lock_release(dl_proc_t *p, dl_lock_t *l, int write_only)
{
    char q[96];
    pid_t tid = dl_tid();
    pthread_mutex_lock(&l->mu);
    dl_holder_t *h = dl_holder_find(l, tid);
    if (!h || (write_only && !h->wcount)) {
        pthread_mutex_unlock(&l->mu);
        return dl_fail(EPERM, "lock %s: not held by this thread", qname(l, q, sizeof q));
    }
    int last;
    dl_holder_pop(l, tid, &last);
    int rc = 0;
    if (last) {
        /* Another thread's vouch() may be asking Redis about this hold:
         * what it learns decides this unlock too. */
        while (l->busy && l->rmode)
            wait_until(l, dl_now_ms() + 100);
        int wrote = l->writer == tid;
        if (wrote)
            l->writer = 0;
        else
            l->rthreads--;
        /* A lost hold is never kept: settle releases it and says ENOLCK.
         * While other threads of the process still hold it, settle does
         * not reach Redis: vouch for this thread's part of it here. */
        if (l->rmode && (l->writer || l->rthreads))
            rc = vouch(p, l);
        else
            rc = settle(p, l, wrote && l->quick && short_hold(l));
        if (wrote) {              /* when the unlock returns, not when it began */
            l->unlock_us = dl_now_us();
            l->unlock_tid = tid;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int dl_lock_getfence(dl_lock_t *l, uint64_t *fence)
{
    char q[96];
    pthread_mutex_lock(&l->mu);
    dl_holder_t *h = dl_holder_find(l, dl_tid());
    int held = h != NULL;
    if (held)
        *fence = l->fence;
    pthread_mutex_unlock(&l->mu);
    if (!held)
        return dl_fail(EPERM, "lock %s: not held by this thread", qname(l, q, sizeof q));
    return 0;
}

int dl_lock_linger_end(dl_proc_t *p, dl_lock_t *l, int now, uint64_t deadline)
{
    int rc = 0;
    pthread_mutex_lock(&l->mu);
    /* Now (destroy, exit): a release of the lingering hold already under
     * way (the watchdog's, or a lock call's that could not reuse it) is
     * waited for, so that the hold is gone when we return, not left to a
     * thread the process may end before it reaches Redis. */
    while (now && l->linger_until && l->busy && (!deadline || dl_now_ms() < deadline))
        wait_until(l, deadline ? deadline : DL_FOREVER);
    if (l->linger_until && !l->busy && !l->writer && !l->rthreads && l->rmode &&
        (now || dl_now_us() >= l->linger_until)) {
        /* Nobody relocked: pass the lock on, as the unlock would have. */
        DL_STAT_ADD(linger_ends, 1);
        rc = release_redis(p, l, deadline);
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

typedef struct pinned {
    dl_lock_t *v[64];
    size_t n;
} pinned_t;

static void pin_lingering(dl_lock_t *l, void *arg)
{
    pinned_t *pn = arg;
    if (l->linger_until && pn->n < 64) {
        l->refs++;                /* registry mutex held: see dl_registry_each */
        pn->v[pn->n++] = l;
    }
}

void dl_lock_flush_lingers(dl_proc_t *p)
{
    /* Exiting: pass the locks on now, but do not hang on a dead server
     * (the hold then lapses within its claim window). */
    uint64_t until = dl_now_ms() + 1000;
    pinned_t pn;
    do {                          /* 64 at a time; each release ends its linger */
        pn.n = 0;
        dl_registry_each(&p->reg, pin_lingering, &pn);
        for (size_t i = 0; i < pn.n; i++) {
            dl_lock_linger_end(p, pn.v[i], 1, until);
            dl_registry_put(&p->reg, pn.v[i]);
        }
    } while (pn.n == 64 && dl_now_ms() < until);
}
