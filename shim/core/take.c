/* SPDX-License-Identifier: BSD-3-Clause */
/* take.c - taking the process's Redis hold on an object (take.h).
 *
 * One thread of the process at a time takes it (o->hold.busy, which the
 * primitive reserves: dl_hold_reserve), without o->mu held but around the
 * waiter fields it owns.  A taking is a loop of asks (the kind's acquire
 * script: acquire.lua for a lock): each ask registers anew; when the
 * object is busy and the caller may wait, the thread sleeps until the
 * grant is pushed (notify.c: dl_take_granted), until pushes may have been
 * lost (dl_take_recheck), or until it is time to ask again.  redlock
 * keeps no queue: its waiters retry after a short random pause.
 *
 * Every call is built by the object's kind (o->kind->calls: core.h), so
 * another primitive's hold is taken here with its own scripts.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "call_acquire.h"
#include "call_cancel.h"
#include "call_renew.h"
#include "call_touch.h"
#include "call_withdraw.h"
#include "distlock.h"
#include "dl.h"
#include "hold.h"
#include "mark.h"
#include "notify.h"
#include "take.h"
#include "tenure.h"
#include "trust.h"

/* redlock: how long a waiting writer's mark lives on a server unless its
 * next retry refreshes it (lua/common.lua, ww_set).  A few times the longest
 * pause between retries (25 ms) and a slow round trip: readers elsewhere
 * keep refusing while the writer waits, and a writer that died or vanished
 * holds them back this long at most (capped by the claim window). */
#define DL_WRITER_MARK_MS 250UL

/* One taking of a hold: what each of its asks sends, and how it went. */
typedef struct take {
    unsigned long lease, wttl, claim;
    int queue;                /* the caller may wait */
    int enqueue;              /* ... in Redis's queue (else it retries: redlock) */
    int redlock;
    int fixed;                /* a fixed lease: never renewed, only checked */
    char mode;
    dl_caller_t who;
    const dl_hold_calls_t *calls; /* the kind's scripts */
    char info[200];           /* holder info */
    size_t infolen;
    unsigned long markms;     /* redlock: a waiting writer's mark; 0 none */
    uint64_t told;            /* dl_hold_rare_t.told_fence when the taking began */
    uint64_t older;           /* dl_hold_rare_t.told_older then (redlock) */
    dl_waiter_t w;            /* its wait in Redis's queue (o->wait while it
                                 takes: a held object keeps none) */
    uint64_t regid;           /* of the last ask */
    uint64_t asked_at;        /* when the last acquire was sent */
    unsigned long asked_epoch; /* the trust epoch then (trust.h) */
    int asked_again;          /* it was sent for want of a push */
} take_t;

/* What every ask of this taking sends. */
static void take_init(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, take_t *t)
{
    memset(t, 0, sizeof *t);
    t->lease = rq->lease_ms ? rq->lease_ms : p->cfg.lease_ms;
    t->wttl = dl_claim_window(t->lease);
    t->fixed = rq->lease_ms != 0;
    t->claim = t->fixed ? t->lease : t->wttl;
    t->queue = !rq->try_only && rq->deadline > dl_now_ms();
    /* Without a queue in Redis (redlock, see quorum.c) waiters retry; a
     * quorum of servers takes the writer mark below. */
    dl_caps_t caps = dl_conn_caps(p->conn);
    t->redlock = caps.quorum;
    t->enqueue = t->queue && caps.queue;
    t->mode = rq->mode;
    t->who = dl_caller(p, o);
    t->calls = o->kind->calls;
    /* redlock: writer preference without a queue (acquire.lua's ARGV[10]):
     * a write that will wait marks the servers it finds busy, and every
     * read honours another process's mark. */
    if (t->redlock && rq->mode == 'w' && t->queue)
        t->markms = DL_WRITER_MARK_MS < t->wttl ? DL_WRITER_MARK_MS : t->wttl;
    t->infolen = dl_proc_info(p, t->info, sizeof t->info);
    /* A hold whose death the caller was told, its release failed: a claim
     * of it takes that death as told (acquire.lua's ARGV[11]), so that
     * neither an ask again nor this ask's withdrawal tells it twice. */
    pthread_mutex_lock(&o->mu);
    t->told = dl_hold_told_fence(o);
    t->older = dl_hold_told_older(o);
    o->wait = &t->w;
    pthread_mutex_unlock(&o->mu);
}

/* A taking that may wait listens for its grant before it registers.  0, or
 * EIO. */
static int take_subscribe(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, const take_t *t)
{
    char q[96];
    /* redlock: a reader that may wait subscribes too, to hear of a writer
     * that starts waiting while it holds (a push from the writer's mark,
     * acquire.lua), as readers hear of a queued writer elsewhere; only a
     * hint there (renewals say it too), so no failure to subscribe stops
     * the call. */
    int nrc = t->enqueue || (t->redlock && t->queue && rq->mode == 'r')
                  ? dl_notify_ensure(p, o, rq->deadline) : 0;
    if (nrc && !t->enqueue)
        nrc = 0;
    if (nrc == EAGAIN)
        dl_log(DL_LOG_INFO, "%s %s: the subscriber is still connecting; waiting without "
               "pushes (asking again every %lu ms)", dl_core_what(o), dl_core_qname(o, q, sizeof q),
               t->wttl / 3);
    else if (nrc) {
        char why[DL_ERRMAX];
        snprintf(why, sizeof why, "%s", dist_lasterror());
        return dl_fail(EIO, "%s %s: %s", dl_core_what(o),
                       dl_core_qname(o, q, sizeof q), why);
    }
    return 0;
}

/* A new registration id for the next ask; first: of this taking, which
 * also drops a recheck left from an earlier one.  o->mu not held. */
static void take_register(dl_proc_t *p, dl_core_t *o, take_t *t, int first)
{
    t->regid = __atomic_add_fetch(&p->regseq, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&o->mu);
    t->w.regid = t->enqueue ? t->regid : 0;
    t->w.granted = 0;
    if (first)
        t->w.recheck = 0;
    pthread_mutex_unlock(&o->mu);
}

/* An ask the link ended unanswered, its undo written behind it, rather
 * than send it twice (dl_cmd_t.once): asked again under a new id.  (Never
 * a code a caller sees.) */
#define ASK_AGAIN (-1)
/* How many times in a row one taking asks again so: each is a round trip
 * cut short by another thread's deadline on a stalled connection. */
#define DL_ASKS_AGAIN_MAX 8

/* One ask (acquire.lua).  0: taken, *g says what; EBUSY: busy, for *pttl ms
 * at most; ASK_AGAIN (*cut: the id it was sent under); else the error
 * (ETIMEDOUT unworded: the caller words it), with g->maybe set if the ask
 * may have run. */
static int take_ask(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, take_t *t, dl_grant_t *g,
                    long long *pttl, uint64_t *cut)
{
    char q[96];
    dl_call_t c;
    t->asked_epoch = dl_trust_epoch();
    t->asked_at = dl_now_ms();
    t->calls->acquire(&c, &t->who, &(dl_acquire_args_t){
        .mode = t->mode, .lease_ms = t->lease, .info = t->info, .infolen = t->infolen,
        .enqueue = t->enqueue, .regid = t->regid, .waiter_ttl_ms = t->wttl,
        .claim_ms = t->claim, .redlock = t->redlock, .writer_mark_ms = t->markms,
        .told = t->told, .older = t->older });
    /* A timed lock waits for a stalled server no longer than its deadline;
     * one already past (or too near for a wait) asks once, as a trylock. */
    if (!rq->try_only)
        c.deadline = dl_round_trip_cut(rq->deadline);
    /* Should the link give up on a stalled server after sending this,
     * the server may run it when it resumes: the withdrawal of exactly
     * this request then runs right after it (lua/withdraw.lua).  Nor is
     * it sent twice: a second copy answered "busy" while the first still
     * waits in a stalled connection would leave the lock to the first. */
    dl_call_t undo;
    t->calls->withdraw(&undo, &t->who, &(dl_withdraw_args_t){ .mode = t->mode, .regid = t->regid });
    c.once = 1;
    uint64_t sent_us = dl_now_us();
    DL_TALLY_ADD(o, roundtrips, 1);
    if (dl_script_run_undoable(p->conn, &c, &undo)) {
        if (c.cmd.err == EAGAIN) {
            *cut = t->regid;
            return ASK_AGAIN;
        }
        /* A time-out says nothing of whether Redis ran it (a stalled
         * server runs it when it resumes): we may hold the lock, or be
         * queued, without knowing.  The caller has that withdrawn as
         * well, from a new connection: the undo above may not have
         * found room in the old one. */
        g->maybe = c.cmd.sent;
        if (c.deadline && dl_now_ms() >= c.deadline)
            return ETIMEDOUT;     /* the watchdog withdraws what was sent */
        return dl_fail(EIO, "%s %s: %s", dl_core_what(o), dl_core_qname(o, q, sizeof q),
                       c.cmd.errmsg);
    }
    dl_hold_rtt(o, dl_now_us() - sent_us);
    const dl_acquire_reply_t *ar = &DL_REPLY(&c, acquire);
    if (ar->got == 1 && t->asked_again)
        DL_STAT_ADD(fallback_checks, 1);      /* had to find out by asking */
    if (ar->got == 1) {
        g->fence = ar->fence;
        g->dead = ar->dead;
        g->more = ar->waiters > 0;
        g->claimed = ar->claimed;
        g->was = ar->was;
        g->servers = ar->servers;
        /* Taken by this ask: it set the lease.  Found ours already (a
         * grant to an earlier request, now claimed by this one: acquire.lua
         * set its TTL to the lease; or this very request, resent: the TTL
         * it set was at least a claim window), after this ask was sent. */
        g->valid_until = dl_tenure_valid_until(t->asked_at, g->claimed ? t->claim : t->lease);
        g->sent_ms = t->asked_at;
        g->epoch = t->asked_epoch;
        return 0;
    }
    *pttl = ar->pttl_ms;
    if (ar->got == 3) {
        g->unrec = ar->mark;
        return dl_fail(ENOTRECOVERABLE, "%s %s: unrecoverable: a robust holder unlocked it after "
                       "EOWNERDEAD without dist_mutex_consistent; refused until a process told "
                       "so destroys its object and initializes it again", dl_core_what(o),
                       dl_core_qname(o, q, sizeof q));
    }
    if (ar->got != 0)
        return dl_fail(EIO, "%s %s: unexpected reply from Redis", dl_core_what(o),
                       dl_core_qname(o, q, sizeof q));
    return EBUSY;
}

/* Queued.  Sleeps until the grant is pushed, or until the holders' leases
 * run out (a holder that died sends nothing), or lease/3 at most, which
 * also refreshes our registration.  1: granted, *g says what. */
static int take_wait(dl_core_t *o, const dl_req_t *rq, take_t *t, long long pttl, dl_grant_t *g)
{
    char q[96];
    uint64_t now = dl_now_ms();
    uint64_t nap = t->wttl / 3 ? t->wttl / 3 : 1;
    if (!t->enqueue)              /* redlock: a short random pause */
        nap = 2 + (uint64_t)(dl_random() % 24);
    if (pttl > 0 && (uint64_t)pttl + 1 < nap)
        nap = (uint64_t)pttl + 1;
    uint64_t wake = now + nap < rq->deadline ? now + nap : rq->deadline;
    pthread_mutex_lock(&o->mu);
    while (!t->w.granted && !t->w.recheck && dl_now_ms() < wake && !dl_req_over(rq))
        dl_core_wait(o, wake);
    if (t->w.granted) {
        g->fence = t->w.grant_fence;
        g->dead = t->w.grant_dead;
        g->more = t->w.grant_more;
        g->claimed = 1;
        /* Granted after our last ask was sent, for the claim window. */
        g->valid_until = dl_tenure_valid_until(t->asked_at, t->claim);
        g->sent_ms = t->asked_at;
        g->epoch = t->asked_epoch;
        t->w.granted = 0;
        t->w.regid = 0;
        pthread_mutex_unlock(&o->mu);
        DL_STAT_ADD(grants, 1);
        return 1;
    }
    int pushed = t->w.recheck;
    t->w.recheck = 0;
    pthread_mutex_unlock(&o->mu);
    t->asked_again = !pushed;
    if (!pushed && t->enqueue)
        dl_log(DL_LOG_DEBUG, "%s %s: no push after %llu ms (holders' lease %lld ms): asking again",
               dl_core_what(o), dl_core_qname(o, q, sizeof q), (unsigned long long)nap, pttl);
    return 0;
}

/* The grant was made after our last acquire ran, and lives `claim` ms
 * unless our watchdog extends it (at claim/2 from now).  A push read late
 * (this process stalled, a slow subscriber, a cluster bus behind) may carry
 * a grant that has lapsed, and the lock may be someone else's by now:
 * confirm it with the renewal it needs anyway.  0: it stands; EAGAIN: it
 * had lapsed (wait again); EIO. */
static int take_confirm_late(dl_proc_t *p, dl_core_t *o, take_t *t, dl_grant_t *g)
{
    char q[96];
    if (dl_now_ms() - t->asked_at < t->claim / 2)
        return 0;
    dl_call_t c;
    unsigned long epoch = dl_trust_epoch();
    uint64_t renew_at = dl_now_ms();
    t->calls->renew(&c, &t->who, &(dl_renew_args_t){
        .mode = t->mode, .lease_ms = t->fixed ? 0 : t->lease, .fence = g->fence });
    int rrc = dl_script_run(p->conn, &c, 1);
    DL_TALLY_ADD(o, roundtrips, 1);
    long long kept = rrc ? -1 : DL_REPLY(&c, renew).held;
    char why[200];
    snprintf(why, sizeof why, "%s", rrc ? c.cmd.errmsg : "");
    if (kept == 0) {
        dl_log(DL_LOG_INFO, "%s %s: a grant pushed %llu ms after we asked had lapsed: "
               "waiting again", dl_core_what(o), dl_core_qname(o, q, sizeof q),
               (unsigned long long)(dl_now_ms() - t->asked_at));
        pthread_mutex_lock(&o->mu);
        t->w.regid = t->regid;
        pthread_mutex_unlock(&o->mu);
        return EAGAIN;
    }
    if (kept < 0) {
        g->maybe = 1;
        return dl_fail(EIO, "%s %s: confirming a late grant: %s", dl_core_what(o),
                       dl_core_qname(o, q, sizeof q), why);
    }
    if (!t->fixed)
        g->valid_until = dl_tenure_valid_until(renew_at, t->lease);
    g->sent_ms = renew_at;
    g->epoch = epoch;
    return 0;
}

/* The deadline passed while waiting.  ETIMEDOUT (unworded), or 0 if the
 * lock was granted meanwhile (*g says what). */
static int take_give_up(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, const take_t *t,
                        dl_grant_t *g)
{
    dl_call_t c;
    if (!t->enqueue) {
        if (t->redlock && rq->mode == 'w') {
            /* Giving up: take our writer mark away now, rather than hold
             * readers back until it lapses.  (Best effort: a server that
             * misses it lets the mark lapse.) */
            t->calls->cancel(&c, &t->who, &(dl_cancel_args_t){
                .mode = t->mode, .regid = t->regid, .clear_mark = 1 });
            dl_script_run(p->conn, &c, 1);
            DL_TALLY_ADD(o, roundtrips, 1);
        }
        return ETIMEDOUT;
    }
    /* Withdraw; the lock may have been granted meanwhile. */
    t->calls->cancel(&c, &t->who, &(dl_cancel_args_t){ .mode = t->mode, .regid = t->regid });
    int rc = ETIMEDOUT;
    int crc = dl_script_run(p->conn, &c, 1);
    DL_TALLY_ADD(o, roundtrips, 1);
    if (crc)
        g->maybe = 1;             /* still queued: a grant may come */
    if (crc == 0 && DL_REPLY(&c, cancel).granted == 1) {
        g->fence = DL_REPLY(&c, cancel).fence;
        g->dead = DL_REPLY(&c, cancel).dead;
        g->more = DL_REPLY(&c, cancel).waiters > 0;
        g->claimed = 1;
        g->valid_until = dl_tenure_valid_until(t->asked_at, t->claim);
        g->sent_ms = t->asked_at;
        g->epoch = t->asked_epoch;
        rc = 0;
    }
    return rc;
}

/* Takes the Redis hold for o, waiting for a grant if rq allows. */
static int redis_take(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, dl_grant_t *g)
{
    take_t t;
    take_init(p, o, rq, &t);
    int rc = take_subscribe(p, o, rq, &t);
    if (rc)
        goto out;
    take_register(p, o, &t, 1);
    int agains = 0;
    for (;;) {
        if (t.asked_at) {
            /* Each ask registers anew: a push for an earlier registration
             * carries a grant made before this ask ran, which the ask
             * reports itself if it still stands ("mine") and which has
             * lapsed if the ask finds the lock busy.  Either way the push
             * is stale (dl_take_granted drops it). */
            take_register(p, o, &t, 0);
        }
        long long pttl = 0;
        uint64_t cut = 0;
        rc = take_ask(p, o, rq, &t, g, &pttl, &cut);
        if (rc == ASK_AGAIN) {
            /* Its undo went behind it; the watchdog withdraws it as well,
             * by its id, should that undo have found no room: what this
             * taking asks next has a greater id, which that leaves alone. */
            pthread_mutex_lock(&o->mu);
            dl_hold_undo_later(p, o, t.mode, cut);
            pthread_mutex_unlock(&o->mu);
            if (++agains <= DL_ASKS_AGAIN_MAX)
                continue;
            char q[96];
            rc = dl_fail(EIO, "%s %s: every ask was cut short by other calls' deadlines on a "
                         "stalled connection", dl_core_what(o), dl_core_qname(o, q, sizeof q));
            break;
        }
        if (rc != EBUSY || !t.queue)
            break;
        /* Held elsewhere (pttl: the holder's time left), this call waits;
         * a redlock ask granted by a majority too late for the lease's
         * validity says busy with pttl 1 and no holder (call_acquire.c):
         * the call's own pace, no wait for another. */
        if (rq->waited && pttl > 1)
            *rq->waited = 1;
        if (take_wait(o, rq, &t, pttl, g)) {
            rc = take_confirm_late(p, o, &t, g);
            if (rc == EAGAIN)
                continue;
            g->rid = t.regid;
            if (!rc && g->dead)
                rc = EOWNERDEAD;
            goto out;
        }
        if (dl_req_over(rq)) {
            rc = take_give_up(p, o, rq, &t, g);
            break;
        }
    }
    if (rc == 0 && g->dead)
        rc = EOWNERDEAD;
    g->rid = t.regid;
out:
    /* The wait (t.w, on this stack) ends with the taking. */
    pthread_mutex_lock(&o->mu);
    o->wait = NULL;
    pthread_mutex_unlock(&o->mu);
    return rc;
}

/* ?wait=N: the acquisition counts once N replicas have it; else it is
 * undone, since a failover now could hand the lock to a second holder. */
static int confirm_replicas(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, const dl_grant_t *g)
{
    char q[96], err[200];
    unsigned long lease = rq->lease_ms ? rq->lease_ms : p->cfg.lease_ms;
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    if (g->claimed) {
        /* Granted by another client's release: WAIT covers only writes made
         * on our connection, so make one (the renewal the grant needs). */
        o->kind->calls->renew(&c, &who, &(dl_renew_args_t){
            .mode = rq->mode, .lease_ms = lease, .fence = g->fence });
        dl_script_run(p->conn, &c, 1);
        DL_TALLY_ADD(o, roundtrips, 1);
    }
    if (dl_conn_wait(p->conn, dl_core_key(o), o->keylen, err, sizeof err) == 0)
        return 0;
    /* Undo exactly this acquisition (named by its registration id: the same
     * on every redlock server, whose fences differ). */
    o->kind->calls->withdraw(&c, &who, &(dl_withdraw_args_t){ .mode = rq->mode, .regid = g->rid });
    dl_script_run(p->conn, &c, 1);
    DL_TALLY_ADD(o, roundtrips, 1);
    return dl_fail(EIO, "%s %s: %s; the acquisition was undone", dl_core_what(o),
                   dl_core_qname(o, q, sizeof q), err);
}

/* A call returns a hold only within its validity (SPEC "Local trust"), and
 * only as far as Redis has confirmed it: a reply that came back after the
 * validity (a slow or stalled server, a process that stalled, a WAIT for
 * replicas) may tell of a hold that has lapsed and that another process
 * holds by now, and a sign of lost state since the call was sent (a
 * restart, a break: trust.h) may have taken it.  The hold is asked about
 * by its fence: a renewable hold is renewed, a fixed lease only checked
 * and never extended (so past its validity it is lapsed as far as its
 * caller may know).  A confirmation is checked like the reply it
 * confirms: one answered after the validity it set is given up.  0: it
 * stands (*g updated); EAGAIN: lapsed, and
 * withdrawn by its registration id (which puts back the death trace it
 * consumed, so the death it found is not lost with it: the next holder,
 * this caller's next ask perhaps, is told); EIO. */
static int take_in_time(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, dl_grant_t *g)
{
    char q[96];
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    int late, confirmed = 0;
    for (;;) {
        late = dl_now_ms() >= g->valid_until;
        /* (A sign during the confirmation does not ask for another: with
         * redlock every time-out of a stalled server is one, and each
         * confirmation would meet the next.) */
        if (!late && (confirmed || g->epoch == dl_trust_epoch()))
            return 0;
        /* A confirmation answered after the validity it set (the process
         * stalled between sending it and reading its reply, or the reply
         * was that slow) vouches for nothing now: given up, as a late
         * reply is, rather than confirmed again and again. */
        if (confirmed && late)
            break;
        if (rq->lease_ms && late)
            break;
        dl_core_qname(o, q, sizeof q);
        unsigned long lease = rq->lease_ms ? 0 : p->cfg.lease_ms, epoch = dl_trust_epoch();
        uint64_t sent = dl_now_ms();
        o->kind->calls->renew(&c, &who, &(dl_renew_args_t){
            .mode = rq->mode, .lease_ms = lease, .fence = g->fence });
        DL_TALLY_ADD(o, roundtrips, 1);
        if (dl_script_run(p->conn, &c, 1)) {
            g->maybe = 1;
            return dl_fail(EIO, "%s %s: confirming the hold taken (%s) failed: %s",
                           dl_core_what(o), q,
                           late ? "Redis answered after its validity"
                                : "Redis may have lost state meanwhile",
                           c.cmd.errmsg);
        }
        if (DL_REPLY(&c, renew).held != 1)
            break;
        if (lease)
            g->valid_until = dl_tenure_valid_until(sent, lease);
        g->sent_ms = sent;
        g->epoch = epoch;
        confirmed = 1;            /* checked again: the reply may have come late */
    }
    dl_core_qname(o, q, sizeof q);
    dl_log(DL_LOG_INFO, "%s %s: %s; the hold is given up and asked for again", dl_core_what(o), q,
           late ? "Redis answered after the hold's validity ended"
                : "Redis lost the hold while the call was under way");
    o->kind->calls->withdraw(&c, &who, &(dl_withdraw_args_t){ .mode = rq->mode, .regid = g->rid });
    DL_TALLY_ADD(o, roundtrips, 1);
    if (dl_script_run(p->conn, &c, 1)) {
        pthread_mutex_lock(&o->mu);
        dl_hold_undo_later(p, o, rq->mode, g->rid);
        pthread_mutex_unlock(&o->mu);
    }
    return EAGAIN;
}

/* A hold granted by push, or found ours (a claim), may live only its claim
 * window in Redis until its holder renews it to the lease; the lock call
 * does not return before that renewal is on its way, or a pause of the
 * caller right after its grant would lose the lock at the end of the
 * window.  Posted (the kind's touch: touch.lua, written before we return)
 * where the connection takes posts and no other round trip is on it; else
 * sent and waited for.  A fixed lease's claim is its whole lease: nothing
 * to extend.  0 (g->posted says which), EAGAIN: the grant had lapsed,
 * EIO. */
static int take_extend(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, dl_grant_t *g)
{
    if (!g->claimed)
        return 0;
    char q[96];
    /* A fixed lease's claim is its whole lease: it is not extended, but
     * claimed all the same (its holder named in the death trace). */
    unsigned long lease = rq->lease_ms ? 0 : p->cfg.lease_ms;
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    o->kind->calls->touch(&c, &who, &(dl_touch_args_t){
        .mode = rq->mode, .lease_ms = lease, .fence = g->fence, .seq = dl_mark_next() });
    if (dl_script_post(p->conn, &c) == 0) {
        g->posted = 1;
        return 0;
    }
    unsigned long epoch = dl_trust_epoch();
    uint64_t sent = dl_now_ms();
    o->kind->calls->renew(&c, &who, &(dl_renew_args_t){
        .mode = rq->mode, .lease_ms = lease, .fence = g->fence });
    DL_TALLY_ADD(o, roundtrips, 1);
    if (dl_script_run(p->conn, &c, 1)) {
        g->maybe = 1;
        return dl_fail(EIO, "%s %s: renewing the hold it was granted: %s", dl_core_what(o),
                       dl_core_qname(o, q, sizeof q), c.cmd.errmsg);
    }
    if (DL_REPLY(&c, renew).held != 1)
        return EAGAIN;
    if (lease)
        g->valid_until = dl_tenure_valid_until(sent, lease);
    g->sent_ms = sent;
    g->epoch = epoch;
    return 0;
}

int dl_take(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, dl_grant_t *g)
{
    int rc;
    for (;;) {
        memset(g, 0, sizeof *g);
        rc = redis_take(p, o, rq, g);
        if (rc != 0 && rc != EOWNERDEAD)
            return rc;
        /* The claim's renewal, then the replicas, and last the validity
         * and trust of what is returned (the WAIT takes time too). */
        int trc = take_extend(p, o, rq, g);
        if (trc == 0 && p->cfg.wait_replicas && (trc = confirm_replicas(p, o, rq, g)))
            return trc;
        if (trc == 0)
            trc = take_in_time(p, o, rq, g);
        if (trc == 0)
            break;
        if (trc != EAGAIN)
            return trc;
        if (rq->try_only || dl_now_ms() >= rq->deadline)
            return rq->try_only ? EBUSY : ETIMEDOUT;
    }
    return rc;
}

/* --- a primitive's own waiting on the registration; o->mu held --- */

void dl_take_listen(dl_core_t *o, dl_waiter_t *w, uint64_t regid)
{
    if (o->wait != w) {
        memset(w, 0, sizeof *w);
        o->wait = w;
    }
    w->regid = regid;
    w->granted = 0;
}

int dl_take_sleep(dl_core_t *o, uint64_t until, const int *stop)
{
    dl_waiter_t *w = o->wait;
    if (!w)
        return 0;
    while (!w->granted && !w->recheck && dl_now_ms() < until &&
           !(stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE)))
        dl_core_wait(o, until);
    int woken = w->granted || w->recheck;
    w->granted = 0;
    w->recheck = 0;
    return woken;
}

void dl_take_leave(dl_core_t *o)
{
    o->wait = NULL;
}

/* --- what the subscriber (notify.c) tells a waiting object; o->mu held --- */

void dl_take_granted(dl_core_t *o, uint64_t regid, uint64_t fence, int dead, int more)
{
    /* A grant for a registration that gave up is stale: the cancel script
     * already told that thread. */
    dl_waiter_t *w = o->wait;
    if (!w || w->regid != regid)
        return;
    w->granted = 1;
    w->grant_fence = fence;
    w->grant_dead = dead;
    w->grant_more = more;
    dl_core_wake(o);
}

void dl_take_interrupt(dl_core_t *o)
{
    pthread_mutex_lock(&o->mu);
    dl_core_wake(o);
    pthread_mutex_unlock(&o->mu);
}

void dl_take_recheck(dl_core_t *o)
{
    if (o->wait && o->wait->regid) {
        o->wait->recheck = 1;
        dl_core_wake(o);
    }
}
