/* SPDX-License-Identifier: BSD-3-Clause */
/* hold.c - the process's Redis hold on an object once taken (hold.h).
 *
 * The hold (o->hold.rmode) is recorded when take.c took it, and ends with
 * a release (the kind's release script: release.lua for a lock) when no
 * thread of the process uses or can use it (the primitive decides when),
 * or lapses in Redis (the watchdog or an unlock finds it lost).  Between
 * its last unlock and a quick relock it may linger: to the application
 * released, to Redis still held but marked so (mark.c), and ended by the
 * lingerer on time if no relock came.
 *
 * Only one thread of the process talks to Redis for an object at a time
 * (o->hold.busy): a thread taking the hold, a thread releasing or vouching
 * for it, or the watchdog withdrawing a failed acquisition.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_release.h"
#include "call_renew.h"
#include "call_withdraw.h"
#include "distlock.h"
#include "dl.h"
#include "hold.h"
#include "lingerer.h"
#include "loss.h"
#include "mark.h"
#include "tenure.h"
#include "trust.h"
#include "watchdog.h"

/* --- what a hold keeps only while it needs it (o->hold.rare) --- */

static dl_hold_rare_t *rare_make(dl_core_t *o)
{
    if (!o->hold.rare)
        o->hold.rare = calloc(1, sizeof *o->hold.rare);
    return o->hold.rare;
}

/* Is anything in o->hold.rare needed, now or by what may come?  A talker
 * may write an undo (pins), an undo is due or under way, a failed
 * release's fence is kept, the TTL was cut, or the hold was taken after
 * a lapse (its release may fail: its fence is then kept; under redlock
 * the fence of a death told stays for good: told_older). */
static int rare_needed(const dl_core_t *o)
{
    const dl_hold_rare_t *r = o->hold.rare;
    return r->pins || r->undo[0] || r->undo[1] || r->undoing || r->told_fence || r->told_older ||
           r->cut_ttl || r->ttl_cut || r->unrec || (o->hold.rmode && o->hold.od_told);
}

/* Frees o->hold.rare once nothing in it is needed. */
static void rare_trim(dl_core_t *o)
{
    if (o->hold.rare && !rare_needed(o)) {
        free(o->hold.rare);
        o->hold.rare = NULL;
    }
}

int dl_hold_reserve(dl_core_t *o)
{
    /* Room for the undo of what this talker sends, made before it sends
     * anything: its failure path (dl_hold_undo_later) must not fail. */
    if (!rare_make(o))
        return dl_fail(ENOMEM, "%s: out of memory", dl_core_what(o));
    o->hold.rare->pins++;
    o->hold.busy = 1;
    return 0;
}

void dl_hold_unreserve(dl_core_t *o)
{
    o->hold.busy = 0;
}

void dl_hold_set_unrec(dl_core_t *o, uint64_t mark)
{
    /* Set by a talker (its room there), cleared by anyone. */
    if (mark && !rare_make(o))
        return;                   /* (cannot happen: see above) */
    if (o->hold.rare)
        o->hold.rare->unrec = mark;
    rare_trim(o);
}

void dl_hold_done(dl_core_t *o)
{
    if (o->hold.rare && o->hold.rare->pins)
        o->hold.rare->pins--;
    rare_trim(o);
}

void dl_hold_rtt(dl_core_t *o, uint64_t us)
{
    uint64_t old = __atomic_load_n(&o->hold.rtt_us, __ATOMIC_RELAXED);
    uint64_t rtt = old ? (7 * old + us) / 8 : us;
    __atomic_store_n(&o->hold.rtt_us, rtt < UINT32_MAX ? (uint32_t)rtt : UINT32_MAX,
                     __ATOMIC_RELAXED);
}

/* Another process waits for the object: from now on local handoffs and
 * relocks are bounded (prim/lock.c: keepable). */
static void waited(dl_core_t *o)
{
    if (!o->hold.remote_waiting) {
        o->hold.remote_waiting = 1;
        o->hold.waited_since = dl_now_us();
    }
}

void dl_hold_lapsed(dl_core_t *o)
{
    o->hold.lost = 1;
    if (o->hold.lost_told || !o->hold.rmode)
        return;
    /* Once per hold, whichever finds it first (the watchdog, a thread
     * confirming, releasing or relocking it): counted, and told to the
     * program's dist_onlost function by the library's own thread. */
    o->hold.lost_told = 1;
    DL_STAT_ADD(lost, 1);
    DL_TALLY_ADD(o, lost, 1);
    dl_loss_tell(dl_core_name(o), o->namelen, o->hold.fence);
}

void dl_hold_record(dl_proc_t *p, dl_core_t *o, const dl_req_t *rq, const dl_grant_t *g)
{
    o->hold.rmode = rq->mode;
    o->hold.od_told = g->dead;
    o->hold.fence = g->fence;
    o->hold.rid = g->rid;
    o->hold.servers = g->servers;
    /* (both at most DL_LEASE_MAX: 32 bits) */
    o->hold.lease_ms = (uint32_t)(rq->lease_ms ? rq->lease_ms : p->cfg.lease_ms);
    o->hold.renew = rq->lease_ms == 0;
    o->hold.fair = rq->fair;
    o->hold.lost = 0;
    o->hold.lost_told = 0;
    o->hold.seq++;
    o->hold.handoffs = 0;
    if (o->hold.rare) {
        o->hold.rare->told_fence = 0;
        o->hold.rare->ttl_cut = 0;
    }
    dl_tenure_fresh(o, g->valid_until, g->sent_ms, g->epoch);
    /* redlock: nobody queues, so nobody can say they wait: bound local
     * handoffs of a write hold as if someone did.  A read hold is shared by
     * the process's readers (as on redis://) until a renewal reports a
     * writer's mark (renew.lua): the watchdog renews it every
     * DL_TENURE_RENEW_MS while readers join it (tenure.c). */
    if (g->more || (!dl_conn_caps(p->conn).queue && rq->mode == 'w'))
        waited(o);
}

void dl_hold_watch(dl_proc_t *p, dl_core_t *o, int posted)
{
    dl_watchdog_ensure(p);
    if (!o->hold.renew) {
        /* Released in time, it is never asked about; held past its end,
         * the watchdog finds it gone soon after (dl_hold_checked). */
        dl_watchdog_due(p, o, dl_tenure_fixed_end(o) + 1);
        return;
    }
    if (!posted)
        return;
    /* A grant pushed to us (or found ours) lives only its claim window in
     * Redis until the renewal take.c posted reaches it: the watchdog
     * confirms it at half the window, which also sets its validity. */
    dl_watchdog_due(p, o, dl_now_ms() + dl_claim_window(o->hold.lease_ms) / 2);
}

void dl_hold_undo_later(dl_proc_t *p, dl_core_t *o, char mode, uint64_t rid)
{
    dl_hold_undo_later_in(p, o, mode, rid, 0);
}

void dl_hold_undo_later_in(dl_proc_t *p, dl_core_t *o, char mode, uint64_t rid,
                           uint64_t incarn)
{
    /* Kept whatever the process does next: a later request (a hold taken,
     * a wait) has a greater id, which no withdrawal of this one touches.
     * Its room was made before the request was sent (dl_hold_reserve, or
     * kept by its kind); should it be missing all the same (a bug), the
     * request lapses in Redis within its life, unwithdrawn. */
    dl_hold_rare_t *r = o->hold.rare;
    if (!r && !(r = rare_make(o))) {
        char q[96];
        dl_log(DL_LOG_WARN, "%s %s: no memory to record the withdrawal of a failed request; "
               "it lapses in Redis within its lease", dl_core_what(o),
               dl_core_qname(o, q, sizeof q));
        return;
    }
    int m = mode == 'r';
    if (rid > r->undo[m]) {
        r->undo[m] = rid;
        r->undo_inc[m] = incarn;
    }
    r->undo_checks[m] = 2;
    r->undo_at = dl_now_ms() + 50;
    dl_watchdog_ensure(p);
    dl_watchdog_due(p, o, r->undo_at);
}

void dl_hold_handoff(dl_core_t *o)
{
    if (o->hold.remote_waiting)
        o->hold.handoffs++;
    DL_STAT_ADD(local_handoffs, 1);
    DL_TALLY_ADD(o, handoffs, 1);
}

/* The process no longer has o's hold (released, given back): its state
 * is that of an object never held, and its waiters look again. */
static void forget(dl_core_t *o)
{
    o->hold.rmode = 0;
    o->hold.seq++;             /* late renew replies concern the old hold */
    dl_watchdog_undue(o);
    o->hold.lost = 0;
    o->hold.lost_told = 0;
    o->hold.remote_waiting = 0;
    o->hold.handoffs = 0;
    o->hold.linger_until = 0;
    if (o->hold.rare) {           /* no cut of a hold that is gone */
        o->hold.rare->cut_ttl = 0;
        o->hold.rare->ttl_cut = 0;
    }
    rare_trim(o);
    dl_core_wake(o);
}

/* ... after a round trip of its own (o->hold.busy). */
static void ended(dl_core_t *o)
{
    o->hold.busy = 0;
    forget(o);
}

static int release_with(dl_proc_t *p, dl_core_t *o, uint64_t deadline, int unrecoverable)
{
    int lost = o->hold.lost, cut = dl_hold_ttl_cut(o);
    uint64_t valid_until = o->tenure.valid_until;
    /* Names this hold, so that a copy of the call that reaches Redis late
     * (sent on a connection given up since) cannot end a later hold.  The
     * mark of an unrecoverable lock is named by the hold's fence as the
     * process knows it (on redlock://, its quorum's largest): the same on
     * every server. */
    dl_release_args_t ra = { .mode = o->hold.rmode, .fence = o->hold.fence, .rid = o->hold.rid,
                             .servers = o->hold.servers, .lease_ms = o->hold.lease_ms,
                             .told = o->hold.od_told || unrecoverable,
                             .unrecoverable = unrecoverable ? o->hold.fence : 0 };
    dl_caller_t who = dl_caller(p, o);
    /* redlock: a release owed to a server (unreachable now) leaves the
     * told lapse's trace there until it arrives; the process's own next
     * acquisitions must not hear of that lapse again meanwhile. */
    if (ra.told && !unrecoverable && dl_conn_caps(p->conn).quorum && o->hold.rare)
        o->hold.rare->told_older = ra.fence;   /* (kept: od_told, rare_needed) */
    o->hold.busy = 1;
    pthread_mutex_unlock(&o->mu);

    dl_call_t c;
    o->kind->calls->release(&c, &who, &ra);
    c.deadline = deadline;
    uint64_t t0 = dl_now_us();
    int was_valid = t0 / 1000 < valid_until;
#ifdef DISTLOCK_MUTANT_RELEASE
    int rc = 0;                   /* mutant (tools/mutants.sh): the release is skipped */
    DL_REPLY(&c, release).result = 1;
#else
    int rc = dl_script_run(p->conn, &c, 1);
#endif
    DL_TALLY_ADD(o, roundtrips, 1);
    if (!rc)
        dl_hold_rtt(o, dl_now_us() - t0);
    char q[96];
    const char *what = dl_core_what(o);
    dl_core_qname(o, q, sizeof q);
    int failed = rc != 0;
    if (rc && !lost) {
        rc = dl_fail(EIO, "unlock %s: %s; the hold lapses within %s", q, c.cmd.errmsg,
                     cut ? "its claim window (a lingering hold)" : "one lease");
        dl_log(DL_LOG_WARN, "%s", dist_lasterror());
    } else if (rc) {
        rc = 0;
    } else if (DL_REPLY(&c, release).result == DL_RELEASE_UNDECIDED) {
        /* redlock: the servers that did not answer may hold it (they are
         * owed the release).  Within its validity a majority had it: no
         * one else could hold the lock meanwhile, and the release stands;
         * past it, it may have lapsed there. */
        lost |= !was_valid;
    } else if (DL_REPLY(&c, release).result == 0) {
        /* Even for a resend: a first copy that ran left the release mark,
         * and the reply would be 2.  So a server that restarted empty under
         * us gives ENOLCK, and a cut connection does not. */
        lost = 1;
    }

    pthread_mutex_lock(&o->mu);
    if (lost) {
#ifndef DISTLOCK_MUTANT_ENOLCK     /* mutant (tools/mutants.sh): the ENOLCK not reported */
        rc = dl_fail(ENOLCK, "%s %s: the hold had lapsed in Redis before unlock "
                     "(lease ran out, or the key was deleted)", what, q);
#endif
        dl_log(DL_LOG_WARN, "hold on %s lost: it had lapsed in Redis before unlock "
               "(lease ran out, or the key was deleted)", q);
        dl_hold_lapsed(o);        /* told now, unless found earlier */
    }
    /* A hold told EOWNERDEAD that may still be in Redis: the next lock call
     * may claim it back ("mine"), and must not be told again.  (Such a
     * hold kept its rare record: rare_needed.) */
    if (o->hold.rare)
        o->hold.rare->told_fence = failed && o->hold.od_told ? ra.fence : 0;
    ended(o);
    return rc;
}

int dl_hold_release(dl_proc_t *p, dl_core_t *o, uint64_t deadline)
{
    return release_with(p, o, deadline, 0);
}

int dl_hold_release_unrecoverable(dl_proc_t *p, dl_core_t *o)
{
    return release_with(p, o, 0, 1);
}

int dl_hold_give_back(dl_proc_t *p, dl_core_t *o)
{
    char mode = o->hold.rmode;
    uint64_t rid = o->hold.rid;
    dl_caller_t who = dl_caller(p, o);
    /* Room for its undo before it is sent.  None to be had: should the
     * withdrawal fail too, the hold lapses in Redis within its lease, and
     * the next holder is told of that lapse (EOWNERDEAD) as it would have
     * been of the one the withdrawal puts back. */
    int pinned = rare_make(o) != NULL;
    if (pinned)
        o->hold.rare->pins++;
    o->hold.busy = 1;
    pthread_mutex_unlock(&o->mu);
    dl_call_t c;
    o->kind->calls->withdraw(&c, &who, &(dl_withdraw_args_t){ .mode = mode, .regid = rid });
    int rc = dl_script_run(p->conn, &c, 1);
    pthread_mutex_lock(&o->mu);
    /* Not reached: the watchdog withdraws it (by the same id) until it is;
     * the hold lapses meanwhile within a lease at most. */
    if (rc && pinned)
        dl_hold_undo_later(p, o, mode, rid);
    else if (rc)
        dl_log(DL_LOG_WARN, "%s: its withdrawal failed and no memory was had to retry it; "
               "the hold lapses in Redis within its lease", dl_core_what(o));
    if (o->hold.rare) {
        o->hold.rare->told_fence = 0;
        if (pinned)
            o->hold.rare->pins--;
    }
    ended(o);
    return 0;
}

void dl_hold_dropped(dl_core_t *o)
{
    if (o->hold.rare)
        o->hold.rare->told_fence = 0;
    forget(o);
}

static int lost_code(dl_core_t *o)
{
    char q[96];
    dl_log(DL_LOG_WARN, "hold on %s lost: it had lapsed in Redis before unlock "
           "(lease ran out, or the key was deleted)", dl_core_qname(o, q, sizeof q));
    return dl_fail(ENOLCK, "%s %s: the hold had lapsed in Redis before unlock "
                   "(lease ran out, or the key was deleted)", dl_core_what(o), q);
}

int dl_hold_confirm(dl_proc_t *p, dl_core_t *o)
{
    char q[96];
    if (o->hold.lost)
        return ENOLCK;
    unsigned long holdseq = o->hold.seq, cuts = o->cuts, epoch = dl_trust_epoch();
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    /* A fixed lease is only checked: renewing it would make it outlive
     * what its holder asked for. */
    o->kind->calls->renew(&c, &who, &(dl_renew_args_t){
        .mode = o->hold.rmode, .lease_ms = o->hold.renew ? o->hold.lease_ms : 0,
        .fence = o->hold.fence });
    o->hold.busy = 1;
    pthread_mutex_unlock(&o->mu);
    uint64_t sent = dl_now_ms();
    int rc = dl_script_run(p->conn, &c, 1);
    DL_STAT_ADD(confirms, 1);
    DL_TALLY_ADD(o, roundtrips, 1);
    long long held = rc ? -1 : DL_REPLY(&c, renew).held;
    char why[200];
    snprintf(why, sizeof why, "%s", rc ? c.cmd.errmsg : "unexpected reply");
    pthread_mutex_lock(&o->mu);
    o->hold.busy = 0;
    dl_core_wake(o);
    if (o->hold.seq != holdseq || !o->hold.rmode)
        return 0;                 /* (cannot happen: busy kept it) */
    if (held == 1) {
        if (o->hold.renew)
            dl_hold_renewing(o);  /* its TTL is the lease again */
        dl_tenure_confirmed(o, sent, cuts, epoch, o->hold.renew);
        if (DL_REPLY(&c, renew).queued > 0)
            waited(o);
        return 0;
    }
    if (held < 0)
        return dl_fail(EIO, "%s %s: cannot confirm the hold with Redis: %s", dl_core_what(o),
                       dl_core_qname(o, q, sizeof q), why);
    if (!o->hold.lost)
        dl_log(DL_LOG_WARN, "hold on %s lost: Redis no longer has it (lease ran out, the key "
               "was deleted, or the server lost it)", dl_core_qname(o, q, sizeof q));
    dl_hold_lapsed(o);
    return ENOLCK;
}

int dl_hold_vouch(dl_proc_t *p, dl_core_t *o)
{
    if (!o->hold.rmode)
        return 0;
    /* A reader leaving beside others ends its section: its 0 says that no
     * writer could have been inside (SPEC, ENOLCK).  A loss that gives no
     * sign (keys deleted, a flush, the server's clock jumping) leaves the
     * hold valid as far as the process knows, for up to a lease: so the
     * unlock is free only while the hold is trusted (confirmed within
     * DL_TRUST_MS, as for a thread taking or joining it), and asks Redis
     * otherwise.  A confirmation that finds the hold there proves it was
     * there all along: its fence names it, and a lost hold never comes
     * back under the same fence. */
    if (dl_tenure_trusted(o, 0))
        return 0;
    int rc = dl_hold_confirm(p, o);
    return rc == ENOLCK ? lost_code(o) : rc;
}

/* --- lingering --- */

int dl_hold_linger(dl_proc_t *p, dl_core_t *o)
{
    /* The mark (mark.c) spares the next holder EOWNERDEAD should this
     * process end without passing the hold on, and cuts the hold's time in
     * Redis to a claim window: the others would wait that long at most. */
    unsigned long claim = dl_claim_window(o->hold.lease_ms);
    int cut = dl_hold_ttl_cut(o);
    /* The cut is kept in o->hold.rare: room for it before the mark is
     * posted (none: no linger, the hold is passed on now). */
    if (!cut && !rare_make(o))
        return -1;
    if (!cut)
        o->hold.rare->pins++;
    int mrc = dl_mark(p, o, 1, cut ? 0 : claim);
    if (!cut && mrc == 0) {
        dl_tenure_cut(o, claim);
        uint64_t due = dl_now_ms() + claim / 2;   /* renewed then if held again */
        if (!o->renew_due || o->renew_due > due)
            dl_watchdog_due(p, o, due);
        o->hold.rare->ttl_cut = 1;
    }
    if (!cut)
        dl_hold_done(o);
    if (mrc != 0)
        return -1;
    o->hold.linger_until = dl_now_us() + DL_LINGER_US;
    if (dl_lingerer_watch(p, o, o->hold.linger_until)) {
        o->hold.linger_until = 0; /* nobody would end it: pass the hold on now */
        return -1;
    }
    DL_STAT_ADD(lingers, 1);
    return 0;
}

int dl_hold_claim_linger(dl_proc_t *p, dl_core_t *o)
{
    if (!o->hold.linger_until)
        return 0;
    /* After a cut, the same post restores the lease; the next linger cuts
     * anew. */
    if (dl_mark(p, o, 0, dl_hold_ttl_cut(o) ? o->hold.lease_ms : 0) != 0)
        return -1;
    o->hold.linger_until = 0;
    if (o->hold.rare)
        o->hold.rare->ttl_cut = 0;   /* (its cut_ttl stays: dl_tenure_ttl) */
    return 0;
}

int dl_hold_linger_end(dl_proc_t *p, dl_core_t *o, int now, uint64_t deadline)
{
    int rc = 0;
    pthread_mutex_lock(&o->mu);
    /* Now (destroy, exit): a release of the lingering hold already under
     * way (the lingerer's, or a lock call's that could not reuse it) is
     * waited for, so that the hold is gone when we return, not left to a
     * thread the process may end before it reaches Redis. */
    while (now && o->hold.linger_until && o->hold.busy && (!deadline || dl_now_ms() < deadline))
        dl_core_wait(o, deadline ? deadline : DL_FOREVER);
    if (o->hold.linger_until && !o->hold.busy && !o->kind->held(o) && o->hold.rmode &&
        (now || dl_now_us() >= o->hold.linger_until)) {
        /* Nobody relocked: pass the hold on, as the unlock would have. */
        DL_STAT_ADD(linger_ends, 1);
        rc = dl_hold_release(p, o, deadline);
    }
    pthread_mutex_unlock(&o->mu);
    return rc;
}

typedef struct pinned {
    dl_core_t *v[64];
    size_t n;
} pinned_t;

static void pin_lingering(dl_core_t *o, void *arg)
{
    pinned_t *pn = arg;
    if (o->hold.linger_until && pn->n < 64) {
        dl_registry_pin(o);
        pn->v[pn->n++] = o;
    }
}

void dl_hold_flush_lingers(dl_proc_t *p)
{
    /* Exiting: pass the holds on now, but do not hang on a dead server
     * (the hold then lapses within its claim window). */
    uint64_t until = dl_now_ms() + 1000;
    pinned_t pn;
    do {                          /* 64 at a time; each release ends its linger */
        pn.n = 0;
        dl_registry_each(&p->reg, pin_lingering, &pn);
        for (size_t i = 0; i < pn.n; i++) {
            dl_hold_linger_end(p, pn.v[i], 1, until);
            dl_registry_put(&p->reg, pn.v[i]);
        }
    } while (pn.n == 64 && dl_now_ms() < until);
}

/* --- what the subscriber and the watchdog tell the hold --- */

void dl_hold_waited_on(dl_core_t *o)
{
    if (o->hold.rmode || o->hold.busy)
        waited(o);
}

void dl_hold_renewing(dl_core_t *o)
{
    if (o->hold.rare)
        o->hold.rare->ttl_cut = 0;     /* renewed to the lease */
}

int dl_hold_undo_pending(const dl_core_t *o)
{
    const dl_hold_rare_t *r = o->hold.rare;
    return r && (r->undo[0] || r->undo[1]);
}

uint64_t dl_hold_undo_due(const dl_core_t *o)
{
    const dl_hold_rare_t *r = o->hold.rare;
    return dl_hold_undo_pending(o) && !r->undoing ? r->undo_at : 0;
}

void dl_hold_undo_begin(dl_core_t *o, char *mode, uint64_t *rid, uint64_t *incarn)
{
    dl_hold_rare_t *r = o->hold.rare;   /* (due: there) */
    int m = r->undo[0] ? 0 : 1;
    *mode = m ? 'r' : 'w';
    *rid = r->undo[m];
    *incarn = r->undo_inc[m];
    r->undoing = 1;
}

void dl_hold_renewed(dl_proc_t *p, dl_core_t *o, unsigned long seq, unsigned long cuts,
                     uint64_t sent, unsigned long epoch, long long queued)
{
    pthread_mutex_lock(&o->mu);
    if (o->hold.seq == seq && o->hold.rmode) {
        int was = dl_tenure_trusted(o, 0);
        dl_tenure_confirmed(o, sent, cuts, epoch, 1);
        /* Threads that found it untrusted wait for it (a reader beside the
         * process's readers): it may serve them now. */
        if (!was && dl_tenure_trusted(o, 0))
            dl_core_wake(o);
        /* Others wait: local handoffs are bounded from now on, pushes or
         * not. */
        if (queued > 0)
            waited(o);
        /* Threads of ours still wait for the hold: keep it confirmed (and
         * keep learning whether other processes wait) while they do. */
        if (o->kind->waiting(o))
            dl_tenure_renew(p, o);
    }
    pthread_mutex_unlock(&o->mu);
}

void dl_hold_gone(dl_core_t *o, unsigned long seq)
{
    pthread_mutex_lock(&o->mu);
    /* A release of this very hold may have reached Redis first: that is an
     * unlock, not a loss. */
    if (o->hold.seq == seq && o->hold.rmode && !o->hold.lost && !o->hold.busy) {
        char q[96];
        dl_log(DL_LOG_WARN, "hold on %s lost: Redis no longer has it (lease ran out "
               "or the key was deleted); its unlock will return ENOLCK",
               dl_core_qname(o, q, sizeof q));
        dl_hold_lapsed(o);
    }
    pthread_mutex_unlock(&o->mu);
}

void dl_hold_unanswered(dl_proc_t *p, dl_core_t *o, unsigned long seq)
{
    pthread_mutex_lock(&o->mu);
    if (o->hold.seq == seq && o->hold.rmode && !o->hold.lost &&
        o->tenure.trust_epoch != dl_trust_epoch()) {
        uint64_t due = dl_now_ms() + DL_UNANSWERED_AGAIN_MS;
        if (!o->renew_due || o->renew_due > due)
            dl_watchdog_due(p, o, due);
    }
    pthread_mutex_unlock(&o->mu);
}

void dl_hold_checked(dl_proc_t *p, dl_core_t *o, unsigned long seq, unsigned long cuts,
                     uint64_t sent, unsigned long epoch)
{
    pthread_mutex_lock(&o->mu);
    if (o->hold.seq == seq && o->hold.rmode && !o->hold.lost) {
        dl_tenure_confirmed(o, sent, cuts, epoch, 0);
        uint64_t end = dl_tenure_fixed_end(o), now = dl_now_ms();
        dl_watchdog_due(p, o, now < end ? end + 1 : now + DL_FIXED_AGAIN_MS);
    }
    pthread_mutex_unlock(&o->mu);
}

int dl_hold_undo_end(dl_core_t *o, char mode, uint64_t rid, int reached, int had)
{
    pthread_mutex_lock(&o->mu);
    dl_hold_rare_t *r = o->hold.rare;   /* (undoing: there) */
    int m = mode == 'r';
    /* Found nothing: the request may not have run yet.  A resumed server
     * serves its connections in no set order, so this withdrawal (on a new
     * connection) can run before the request left on the old one: look
     * once more a little later.  A request that failed meanwhile (a later
     * id) is withdrawn next, with its own checks. */
    int again = !reached || (!had && --r->undo_checks[m] > 0);
    if (!again && r->undo[m] == rid) {
        r->undo[m] = 0;
        if (had) {
            char q[96];
            dl_log(DL_LOG_INFO, "%s %s: a lock call that failed (EIO) had reached Redis "
                   "after all; what it took is released", dl_core_what(o),
                   dl_core_qname(o, q, sizeof q));
        }
    }
    r->undoing = 0;
    again |= r->undo[0] || r->undo[1];
    if (again)
        r->undo_at = dl_now_ms() + DL_UNDO_AGAIN_MS;
    else
        rare_trim(o);
    pthread_mutex_unlock(&o->mu);
    return again;
}
