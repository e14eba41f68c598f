/* SPDX-License-Identifier: BSD-3-Clause */
/* hold.c - the process's Redis hold on a lock once taken (hold.h).
 *
 * The hold (l->rmode) is recorded when take.c took it, and ends with a
 * release (release.lua) when no thread of the process uses or can use it
 * (lock.c decides when), or lapses in Redis (the watchdog or an unlock
 * finds it lost).  Between its last unlock and a quick relock it may
 * linger: to the application released, to Redis still held but marked so
 * (mark.c), and ended by the watchdog on time if no relock came.
 *
 * Only one thread of the process talks to Redis for a lock at a time
 * (l->busy): a thread taking the hold, a thread releasing or vouching for
 * it, or the watchdog withdrawing a failed acquisition.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "distlock.h"
#include "dl.h"
#include "hold.h"
#include "lingerer.h"
#include "mark.h"
#include "tenure.h"
#include "trust.h"
#include "watchdog.h"

void dl_hold_reserve(dl_lock_t *l)
{
    l->busy = 1;
}

void dl_hold_unreserve(dl_lock_t *l)
{
    l->busy = 0;
}

void dl_hold_rtt(dl_lock_t *l, uint64_t us)
{
    uint64_t old = __atomic_load_n(&l->rtt_us, __ATOMIC_RELAXED);
    __atomic_store_n(&l->rtt_us, old ? (7 * old + us) / 8 : us, __ATOMIC_RELAXED);
}

/* Another process waits for the lock: from now on local handoffs and
 * relocks are bounded (lock.c: may_keep). */
static void waited(dl_lock_t *l)
{
    if (!l->remote_waiting) {
        l->remote_waiting = 1;
        l->waited_since = dl_now_us();
    }
}

void dl_hold_record(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, const dl_grant_t *g)
{
    l->rmode = rq->mode;
    l->od_told = g->dead;
    l->told_fence = 0;
    l->fence = g->fence;
    l->hold_rid = g->rid;
    l->servers = g->servers;
    l->lease_ms = rq->lease_ms ? rq->lease_ms : p->cfg.lease_ms;
    l->renew = rq->lease_ms == 0;
    l->fair = rq->fair;
    l->lost = 0;
    l->holdseq++;
    l->handoffs = 0;
    l->ttl_cut = 0;
    dl_hold_fresh(l, g->valid_until, g->sent_ms, g->epoch);
    /* redlock: nobody queues, so nobody can say they wait: bound local
     * handoffs of a write hold as if someone did.  A read hold is shared by
     * the process's readers (as on redis://) until a renewal reports a
     * writer's mark (renew.lua): the watchdog renews it every
     * DL_TENURE_RENEW_MS while readers join it (tenure.c). */
    if (g->more || (!dl_conn_caps(p->conn).queue && rq->mode == 'w'))
        waited(l);
}

void dl_hold_watch(dl_proc_t *p, dl_lock_t *l, int posted)
{
    if (!l->renew)
        return;
    dl_watchdog_ensure(p);
    if (!posted)
        return;
    /* A grant pushed to us (or found ours) lives only its claim window in
     * Redis until the renewal take.c posted reaches it: the watchdog
     * confirms it at half the window, which also sets its validity. */
    dl_watchdog_due(p, l, dl_now_ms() + dl_claim_window(l->lease_ms) / 2);
}

void dl_hold_undo_later(dl_proc_t *p, dl_lock_t *l, char mode, uint64_t rid)
{
    /* Kept whatever the process does next: a later request (a hold taken,
     * a wait) has a greater id, which no withdrawal of this one touches. */
    int m = mode == 'r';
    if (rid > l->undo[m])
        l->undo[m] = rid;
    l->undo_checks[m] = 2;
    l->undo_at = dl_now_ms() + 50;
    dl_watchdog_ensure(p);
    dl_watchdog_due(p, l, l->undo_at);
}

void dl_hold_handoff(dl_lock_t *l)
{
    if (l->remote_waiting)
        l->handoffs++;
    DL_STAT_ADD(local_handoffs, 1);
}

int dl_hold_release(dl_proc_t *p, dl_lock_t *l, uint64_t deadline)
{
    int lost = l->lost, cut = l->ttl_cut;
    uint64_t valid_until = l->valid_until;
    /* Names this hold, so that a copy of the call that reaches Redis late
     * (sent on a connection given up since) cannot end a later hold. */
    dl_release_args_t ra = { .mode = l->rmode, .fence = l->fence, .rid = l->hold_rid,
                             .servers = l->servers, .lease_ms = l->lease_ms,
                             .told = l->od_told };
    dl_caller_t who = dl_caller(p, l);
    l->busy = 1;
    pthread_mutex_unlock(&l->mu);

    dl_call_t c;
    dl_call_release(&c, &who, &ra);
    c.deadline = deadline;
    uint64_t t0 = dl_now_us();
    int was_valid = t0 / 1000 < valid_until;
    int rc = dl_script_run(p->conn, &c, 1);
    if (!rc)
        dl_hold_rtt(l, dl_now_us() - t0);
    char q[96];
    dl_lock_qname(l, q, sizeof q);
    int failed = rc != 0;
    if (rc && !lost) {
        rc = dl_fail(EIO, "unlock %s: %s; the hold lapses within %s", q, c.cmd.errmsg,
                     cut ? "its claim window (a lingering hold)" : "one lease");
        dl_log(DL_LOG_WARN, "%s", dist_lasterror());
    } else if (rc) {
        rc = 0;
    } else if (c.reply.release.result == DL_RELEASE_UNDECIDED) {
        /* redlock: the servers that did not answer may hold it (they are
         * owed the release).  Within its validity a majority had it: no
         * one else could hold the lock meanwhile, and the release stands;
         * past it, it may have lapsed there. */
        lost |= !was_valid;
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
    /* A hold told EOWNERDEAD that may still be in Redis: the next lock call
     * may claim it back ("mine"), and must not be told again. */
    l->told_fence = failed && l->od_told ? ra.fence : 0;
    l->busy = 0;
    l->rmode = 0;
    l->holdseq++;             /* late renew replies concern the old hold */
    dl_watchdog_undue(l);
    l->lost = 0;
    l->remote_waiting = 0;
    l->handoffs = 0;
    l->linger_until = 0;
    pthread_cond_broadcast(&l->cv);
    return rc;
}

static int lost_code(dl_lock_t *l)
{
    char q[96];
    dl_log(DL_LOG_WARN, "hold on %s lost: it had lapsed in Redis before unlock "
           "(lease ran out, or the key was deleted)", dl_lock_qname(l, q, sizeof q));
    return dl_fail(ENOLCK, "lock %s: the hold had lapsed in Redis before unlock "
                   "(lease ran out, or the key was deleted)", q);
}

int dl_hold_confirm(dl_proc_t *p, dl_lock_t *l)
{
    char q[96];
    if (l->lost)
        return ENOLCK;
    unsigned long holdseq = l->holdseq, cuts = l->cuts, epoch = dl_trust_epoch();
    dl_caller_t who = dl_caller(p, l);
    dl_call_t c;
    /* A fixed lease is only checked: renewing it would make it outlive
     * what its holder asked for. */
    dl_call_renew(&c, &who, &(dl_renew_args_t){
        .mode = l->rmode, .lease_ms = l->renew ? l->lease_ms : 0, .fence = l->fence });
    l->busy = 1;
    pthread_mutex_unlock(&l->mu);
    uint64_t sent = dl_now_ms();
    int rc = dl_script_run(p->conn, &c, 1);
    DL_STAT_ADD(confirms, 1);
    long long held = rc ? -1 : c.reply.renew.held;
    char why[200];
    snprintf(why, sizeof why, "%s", rc ? c.cmd.errmsg : "unexpected reply");
    pthread_mutex_lock(&l->mu);
    l->busy = 0;
    pthread_cond_broadcast(&l->cv);
    if (l->holdseq != holdseq || !l->rmode)
        return 0;                 /* (cannot happen: busy kept it) */
    if (held == 1) {
        if (l->renew)
            dl_lock_renewing(l);  /* its TTL is the lease again */
        dl_hold_confirmed(l, sent, cuts, epoch, l->renew);
        if (c.reply.renew.queued > 0)
            waited(l);
        return 0;
    }
    if (held < 0)
        return dl_fail(EIO, "lock %s: cannot confirm the hold with Redis: %s",
                       dl_lock_qname(l, q, sizeof q), why);
    l->lost = 1;
    DL_STAT_ADD(lost, 1);
    dl_log(DL_LOG_WARN, "hold on %s lost: Redis no longer has it (lease ran out, the key "
           "was deleted, or the server lost it)", dl_lock_qname(l, q, sizeof q));
    return ENOLCK;
}

int dl_hold_vouch(dl_proc_t *p, dl_lock_t *l)
{
    if (!l->rmode)
        return 0;
    /* Only a sign of lost state, or the end of the hold's validity, makes
     * an unlock ask: a reader leaving beside others is no reuse of the
     * hold, and its unlock stays free while Redis gave no sign. */
    if (!l->lost && dl_hold_valid(l) && l->trust_epoch == dl_trust_epoch())
        return 0;
    int rc = dl_hold_confirm(p, l);
    return rc == ENOLCK ? lost_code(l) : rc;
}

/* --- lingering --- */

int dl_hold_linger(dl_proc_t *p, dl_lock_t *l)
{
    /* The mark (mark.c) spares the next holder EOWNERDEAD should this
     * process end without passing the lock on, and cuts the hold's time in
     * Redis to a claim window: the others would wait that long at most. */
    unsigned long claim = dl_claim_window(l->lease_ms);
    if (dl_mark(p, l, 1, l->ttl_cut ? 0 : claim) != 0)
        return -1;
    if (!l->ttl_cut) {
        dl_hold_cut(l, claim);
        uint64_t due = dl_now_ms() + claim / 2;   /* renewed then if held again */
        if (!l->renew_due || l->renew_due > due)
            dl_watchdog_due(p, l, due);
        l->ttl_cut = 1;
    }
    l->linger_until = dl_now_us() + DL_LINGER_US;
    if (dl_lingerer_watch(p, l, l->linger_until)) {
        l->linger_until = 0;      /* nobody would end it: pass the lock on now */
        return -1;
    }
    DL_STAT_ADD(lingers, 1);
    return 0;
}

int dl_hold_claim_linger(dl_proc_t *p, dl_lock_t *l)
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

int dl_lock_linger_end(dl_proc_t *p, dl_lock_t *l, int now, uint64_t deadline)
{
    int rc = 0;
    pthread_mutex_lock(&l->mu);
    /* Now (destroy, exit): a release of the lingering hold already under
     * way (the watchdog's, or a lock call's that could not reuse it) is
     * waited for, so that the hold is gone when we return, not left to a
     * thread the process may end before it reaches Redis. */
    while (now && l->linger_until && l->busy && (!deadline || dl_now_ms() < deadline))
        dl_lock_wait(l, deadline ? deadline : DL_FOREVER);
    if (l->linger_until && !l->busy && !l->writer && !l->rthreads && l->rmode &&
        (now || dl_now_us() >= l->linger_until)) {
        /* Nobody relocked: pass the lock on, as the unlock would have. */
        DL_STAT_ADD(linger_ends, 1);
        rc = dl_hold_release(p, l, deadline);
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
        dl_registry_pin(l);
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

/* --- what the subscriber and the watchdog tell the hold --- */

void dl_lock_waited_on(dl_lock_t *l)
{
    if (l->rmode || l->busy)
        waited(l);
}

void dl_lock_renewing(dl_lock_t *l)
{
    l->ttl_cut = 0;               /* renewed to the lease */
}

uint64_t dl_lock_undo_due(const dl_lock_t *l)
{
    return (l->undo[0] || l->undo[1]) && !l->undoing ? l->undo_at : 0;
}

void dl_lock_undo_begin(dl_lock_t *l, char *mode, uint64_t *rid)
{
    int m = l->undo[0] ? 0 : 1;
    *mode = m ? 'r' : 'w';
    *rid = l->undo[m];
    l->undoing = 1;
}

void dl_lock_renewed(dl_proc_t *p, dl_lock_t *l, unsigned long holdseq, unsigned long cuts,
                     uint64_t sent, unsigned long epoch, long long queued)
{
    pthread_mutex_lock(&l->mu);
    if (l->holdseq == holdseq && l->rmode) {
        int was = dl_hold_trusted(l, 0);
        dl_hold_confirmed(l, sent, cuts, epoch, 1);
        /* Threads that found it untrusted wait for it (a reader beside the
         * process's readers): it may serve them now. */
        if (!was && dl_hold_trusted(l, 0))
            pthread_cond_broadcast(&l->cv);
        /* Others wait: local handoffs are bounded from now on, pushes or
         * not. */
        if (queued > 0)
            waited(l);
        /* Threads of ours still wait for the hold: keep it confirmed (and
         * keep learning whether other processes wait) while they do. */
        if (l->wwait || l->rwait)
            dl_tenure_renew(p, l);
    }
    pthread_mutex_unlock(&l->mu);
}

void dl_lock_gone(dl_lock_t *l, unsigned long holdseq)
{
    pthread_mutex_lock(&l->mu);
    /* A release of this very hold may have reached Redis first: that is an
     * unlock, not a loss. */
    if (l->holdseq == holdseq && l->rmode && !l->lost && !l->busy) {
        char q[96];
        l->lost = 1;
        DL_STAT_ADD(lost, 1);
        dl_log(DL_LOG_WARN, "hold on %s lost: Redis no longer has it (lease ran out "
               "or the key was deleted); its unlock will return ENOLCK",
               dl_lock_qname(l, q, sizeof q));
    }
    pthread_mutex_unlock(&l->mu);
}

int dl_lock_undo_end(dl_lock_t *l, char mode, uint64_t rid, int reached, int had)
{
    pthread_mutex_lock(&l->mu);
    int m = mode == 'r';
    /* Found nothing: the request may not have run yet.  A resumed server
     * serves its connections in no set order, so this withdrawal (on a new
     * connection) can run before the request left on the old one: look
     * once more a little later.  A request that failed meanwhile (a later
     * id) is withdrawn next, with its own checks. */
    int again = !reached || (!had && --l->undo_checks[m] > 0);
    if (!again && l->undo[m] == rid) {
        l->undo[m] = 0;
        if (had) {
            char q[96];
            dl_log(DL_LOG_INFO, "lock %s: a lock call that failed (EIO) had reached Redis "
                   "after all; what it took is released", dl_lock_qname(l, q, sizeof q));
        }
    }
    l->undoing = 0;
    again |= l->undo[0] || l->undo[1];
    if (again)
        l->undo_at = dl_now_ms() + DL_UNDO_AGAIN_MS;
    pthread_mutex_unlock(&l->mu);
    return again;
}
