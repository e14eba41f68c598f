/* SPDX-License-Identifier: BSD-3-Clause */
/* sem.c - the semaphore primitive (sem.h): counting semaphores and leased
 * permits on the hold core.
 *
 * Nothing of a semaphore's value is kept in the process: every wait, try
 * and post is one round trip (lua/sem_wait.lua, sem_post.lua), so a post
 * is seen at once by every process and getvalue is exact.  What the
 * process keeps is whose turn it is among its own threads (one talks to
 * Redis for the semaphore at a time: `talking`; one waits in Redis's queue:
 * `waiter`), how many leased permits it holds (one hold of the core, renewed
 * by the watchdog), and an operation that failed with no reply, which is
 * settled before anything else is sent (`pend`): Redis keeps the last
 * operation of each process and its outcome, so a resent copy does nothing
 * twice and a withdrawal finds what it undoes.  Every operation names the
 * incarnation of the semaphore the process uses (`inc`), and one that
 * Redis lost stays lost to the process (`gone`: ENOLCK) until an init.
 *
 * Here o is the semaphore's core (&s->core).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "call_renew.h"
#include "call_sem_cancel.h"
#include "call_sem_open.h"
#include "call_sem_post.h"
#include "call_sem_renew.h"
#include "call_sem_unlink.h"
#include "call_sem_value.h"
#include "call_sem_wait.h"
#include "call_sem_withdraw.h"
#include "call_withdraw.h"
#include "distlock.h"
#include "dl.h"
#include "hold.h"
#include "loss.h"
#include "notify.h"
#include "sem.h"
#include "sem_calls.h"
#include "take.h"
#include "tenure.h"
#include "trust.h"

static const char *qname(dl_sem_t *s, char *buf, size_t size)
{
    return dl_core_qname(&s->core, buf, size);
}

static const char *kind_word(char k)
{
    return k == 'l' ? "leased" : "counting";
}

/* A reply -2: the semaphore exists in Redis as the other kind. */
static int other_kind(dl_sem_t *s, char mine, char other)
{
    char q[96];
    return dl_fail(EINVAL, "semaphore %s exists as a %s semaphore; this object is %s "
                   "(DIST_SEM_LEASED must be the same everywhere a name is used)",
                   qname(s, q, sizeof q), kind_word(other ? other : mine == 'l' ? 'c' : 'l'),
                   mine == 'l' ? "leased" : "a counting one");
}

static int unexpected(dl_sem_t *s)
{
    char q[96];
    return dl_fail(EIO, "semaphore %s: unexpected reply from Redis", qname(s, q, sizeof q));
}

static void lapse_all(dl_sem_t *s, const char *why);

/* o->mu held: a call on a semaphore the process found lost. */
static int gone_code(dl_sem_t *s)
{
    char q[96];
    return dl_fail(ENOLCK, "semaphore %s: the semaphore this process used is gone from Redis "
                   "(a restart without persistence, a flush, eviction, or a reset by distlock "
                   "break) and may have been made anew with its first value; destroy and "
                   "initialize it again to use that one", qname(s, q, sizeof q));
}

/* o->mu held: Redis lost the semaphore the process used; told once.  Its
 * leased permits lapse, told as a lock's lost hold is (with their fence);
 * otherwise dist_onlost's function is called with the name (fence 0),
 * unless the lapse of the process's hold was told already.  Nothing is
 * owed to the lost semaphore any more (a post or a wait that got no
 * reply went with it). */
static void tell_lost(dl_sem_t *s)
{
    dl_core_t *o = &s->core;
    int told = s->lapse_told;
    if (o->hold.rmode || s->permits) {
        lapse_all(s, "Redis lost the semaphore");
        told = 1;
    }
    if (!told) {
        DL_STAT_ADD(lost, 1);
        DL_TALLY_ADD(o, lost, 1);
        dl_loss_tell(dl_core_name(o), o->namelen, 0);
        s->lapse_told = 1;
    }
    s->pend = 0;
}

/* o->mu held: a reply said the semaphore in Redis is not the incarnation
 * the process used (or there is none).  ENOLCK, worded. */
static int found_lost(dl_sem_t *s)
{
    char q[96];
    if (!s->gone) {
        s->gone = 1;
        dl_log(DL_LOG_WARN, "semaphore %s: Redis lost it since this process used it (a restart "
               "without persistence, a flush, eviction, or 30 days unused), or distlock break "
               "reset it: its count may have started again; every call on it returns ENOLCK "
               "until it is destroyed and initialized again", qname(s, q, sizeof q));
        tell_lost(s);
    }
    return gone_code(s);
}

/* o->mu held: a reply named the semaphore's incarnation: the process uses
 * that one if it knew none (its first operation may have made it). */
static void learn(dl_sem_t *s, uint64_t inc)
{
    if (!s->inc)
        s->inc = inc;
}

/* o->mu held, talking: an init found (or made) incarnation inc; the
 * process uses it from now on.  One that is not the incarnation it used
 * means Redis lost that one: told now unless a call found it already. */
static void adopt(dl_sem_t *s, uint64_t inc)
{
    char q[96];
    if (s->inc && s->inc != inc) {
        if (!s->gone) {
            dl_log(DL_LOG_WARN, "semaphore %s: Redis lost it since this process used it (a "
                   "restart without persistence, a flush, eviction, or 30 days unused), or "
                   "distlock break reset it; initialized again, the process now uses the one "
                   "Redis has",
                   qname(s, q, sizeof q));
            tell_lost(s);
        }
        s->pend = 0;
    }
    s->inc = inc;
    s->gone = 0;
    s->lapse_told = 0;
}

/* o->mu held: this thread becomes the one that sends the semaphore's
 * operations (their ids go out in the order Redis must see them). */
static void talk(dl_sem_t *s)
{
    while (s->talking)
        dl_core_wait(&s->core, dl_now_ms() + 1000);
    s->talking = 1;
}

static void untalk(dl_sem_t *s)
{
    s->talking = 0;
    dl_core_wake(&s->core);
}

/* o->mu held, talking: the next operation's id. */
static uint64_t next_id(dl_proc_t *p)
{
    return __atomic_add_fetch(&p->regseq, 1, __ATOMIC_RELAXED);
}

/* Runs c (o->mu released meanwhile; talking keeps the order).  undo: the
 * call the link writes behind c should it give up on a stalled server. */
static int run(dl_proc_t *p, dl_sem_t *s, dl_call_t *c, dl_call_t *undo)
{
    pthread_mutex_unlock(&s->core.mu);
    uint64_t t0 = dl_now_us();
    int rc = undo ? dl_script_run_undoable(p->conn, c, undo) : dl_script_run(p->conn, c, 1);
    if (!rc)
        dl_hold_rtt(&s->core, dl_now_us() - t0);
    pthread_mutex_lock(&s->core.mu);
    return rc;
}

/* o->mu held, talking: an operation id sent to incarnation inc failed with
 * no reply, and may have run (or may still: a stalled server): what = 'w',
 * a wait or try, is withdrawn; 'r', a post, is completed; on that
 * incarnation only.  Settled before the next operation, and by the
 * watchdog meanwhile (the core's undo slots). */
static void pending(dl_proc_t *p, dl_sem_t *s, char what, uint64_t id, uint64_t inc)
{
    s->pend = what;
    s->pend_id = id;
    s->pend_inc = inc;
    dl_hold_undo_later_in(p, &s->core, what, id, inc);
}

/* o->mu held, talking: with ?wait=N, the change the call just made (a
 * permit taken, a post) counts once N replicas have it, so that a
 * failover to one of them does not undo it (WAIT covers the writes of our
 * connection).  0, or EIO worded (what). */
static int replicated(dl_proc_t *p, dl_sem_t *s, const char *what)
{
    char q[96], err[200];
    if (!p->cfg.wait_replicas)
        return 0;
    pthread_mutex_unlock(&s->core.mu);
    int rc = dl_conn_wait(p->conn, dl_core_key(&s->core), s->core.keylen, err, sizeof err);
    pthread_mutex_lock(&s->core.mu);
    return rc ? dl_fail(EIO, "semaphore %s: %s; %s", qname(s, q, sizeof q), err, what) : 0;
}

static int settle(dl_proc_t *p, dl_sem_t *s);

/* o->mu held, talking: settles an operation that failed (pending) before
 * anything else is sent.  0, or EIO (worded), ENOLCK (the semaphore is
 * lost, or was found lost now). */
static int settle(dl_proc_t *p, dl_sem_t *s)
{
    char q[96];
    if (s->gone)
        return gone_code(s);
    if (!s->pend)
        return 0;
    dl_caller_t who = dl_caller(p, &s->core);
    dl_call_t c;
    char what = s->pend;
    uint64_t id = s->pend_id;
#ifdef DISTLOCK_MUTANT_SEMPOST
    /* mutant (tools/mutants.sh): a post that got no reply is completed as
     * a new one, so counted twice when the first ran */
    dl_call_sem_withdraw(&c, &who, &(dl_withdraw_args_t){ .mode = what,
                                                          .regid = what == 'r' ? next_id(p) : id,
                                                          .incarn = s->pend_inc });
#else
    dl_call_sem_withdraw(&c, &who, &(dl_withdraw_args_t){ .mode = what, .regid = id,
                                                          .incarn = s->pend_inc });
#endif
    if (run(p, s, &c, NULL))
        return dl_fail(EIO, "semaphore %s: %s (settling an earlier %s that got no reply)",
                       qname(s, q, sizeof q), c.cmd.errmsg, what == 'r' ? "post" : "wait");
    if (s->pend == what && s->pend_id == id)
        s->pend = 0;
    if (DL_REPLY(&c, withdraw).result == DL_SEM_LOST)
        return found_lost(s);
    if (what == 'r' && DL_REPLY(&c, withdraw).result == -4)
        dl_log(DL_LOG_WARN, "semaphore %s: a post that got no reply could not be made: the value "
               "is INT_MAX", qname(s, q, sizeof q));
    return 0;
}

int dl_sem_settle(dl_proc_t *p, dl_sem_t *s)
{
    dl_core_t *o = &s->core;
    pthread_mutex_lock(&o->mu);
    talk(s);
    int rc = settle(p, s);
    untalk(s);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

/* o->mu held: the process's leased hold lapsed in Redis, with all its
 * permits: each post of one says ENOLCK from now on. */
static void lapse_all(dl_sem_t *s, const char *why)
{
    dl_core_t *o = &s->core;
    char q[96];
    if (s->permits && !o->hold.lost)
        dl_log(DL_LOG_WARN, "semaphore %s: the %u leased permit%s of this process lapsed in Redis "
               "(%s); each post of one returns ENOLCK", qname(s, q, sizeof q), s->permits,
               s->permits == 1 ? "" : "s", why);
    s->lapsed += s->permits;
    s->permits = 0;
    if (o->hold.rmode) {
        /* Told as a lock's lost hold is: once, with its fence. */
        dl_hold_lapsed(o);
        s->lapse_told = 1;
        dl_hold_dropped(o);
    }
}

/* o->mu held, talking: a leased permit was taken by the call sent at sent
 * (ms) in trust epoch `epoch`.  A call returns a permit only within its
 * validity (SPEC "Local trust"): a reply that came after it, or after a
 * sign of lost state, is confirmed first (sem_renew.lua, by the hold's
 * fence).  Records the hold, or counts one more permit of it.  0; EAGAIN:
 * the hold lapsed (ask again); EIO (the permit is withdrawn). */
static int took_leased(dl_proc_t *p, dl_sem_t *s, uint64_t id, const dl_sem_wait_reply_t *r,
                       uint64_t sent, unsigned long epoch)
{
    dl_core_t *o = &s->core;
    char q[96];
    unsigned long lease = p->cfg.lease_ms;
    uint64_t valid_until = dl_tenure_valid_until(sent, lease);
    if (dl_now_ms() >= valid_until || epoch != dl_trust_epoch()) {
        int late = dl_now_ms() >= valid_until;
        dl_caller_t who = dl_caller(p, o);
        dl_call_t c;
        dl_call_sem_renew(&c, &who, &(dl_renew_args_t){
            .mode = 'w', .lease_ms = lease, .fence = r->fence });
        epoch = dl_trust_epoch();
        sent = dl_now_ms();
        if (run(p, s, &c, NULL)) {
            pending(p, s, 'w', id, r->inc);
            return dl_fail(EIO, "semaphore %s: confirming the permit taken (%s) failed: %s",
                           qname(s, q, sizeof q),
                           late ? "Redis answered after its validity"
                                : "Redis may have lost state meanwhile", c.cmd.errmsg);
        }
        if (DL_REPLY(&c, renew).held != 1) {
            dl_log(DL_LOG_INFO, "semaphore %s: %s; asking again", qname(s, q, sizeof q),
                   late ? "Redis answered after the permit's validity ended"
                        : "Redis lost the permit while the call was under way");
            lapse_all(s, "Redis lost them");
            return EAGAIN;
        }
        valid_until = dl_tenure_valid_until(sent, lease);
    }
    /* A hold in Redis that is not the one we had: ours lapsed, with its
     * permits (the watchdog may not have noticed yet). */
    if (o->hold.rmode && (r->fresh || r->fence != o->hold.fence))
        lapse_all(s, "their lease ran out, or the server lost them");
    if (!o->hold.rmode) {
        dl_req_t rq = { 'w', 0, 0, 0, 0, DL_FOREVER, NULL, 0, NULL };
        dl_grant_t g = { .fence = r->fence, .rid = id, .valid_until = valid_until,
                         .sent_ms = sent, .epoch = epoch };
        dl_hold_record(p, o, &rq, &g);
        dl_hold_watch(p, o, 0);
        s->lapse_told = 0;
    } else {
        dl_tenure_confirmed(o, sent, o->cuts, epoch, 1);
    }
    s->permits = r->count > 0 ? (unsigned)r->count : s->permits + 1;
    return 0;
}

/* o->mu held, talking (settled): one sem_wait.lua, as id.  wait: register
 * if no permit is free.  0 with *r (taken: r->got 1, recorded), or the
 * error: EINVAL, EIO, ETIMEDOUT (a stalled server past the deadline). */
static int ask(dl_proc_t *p, dl_sem_t *s, const dl_sem_req_t *rq, int wait, uint64_t id,
               dl_sem_wait_reply_t *r)
{
    dl_core_t *o = &s->core;
    char q[96], info[200];
    size_t infolen = dl_proc_info(p, info, sizeof info);
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c, undo;
    uint64_t inc = s->inc;
    dl_call_sem_wait(&c, &who, &(dl_sem_wait_args_t){
        .op = { rq->kind, rq->value, id, inc }, .wait = wait,
        .waiter_ttl_ms = dl_claim_window(p->cfg.lease_ms), .lease_ms = p->cfg.lease_ms,
        .info = info, .infolen = infolen });
    /* A timed wait waits for a stalled server no longer than its deadline;
     * one already past (or too near for a wait) asks once, as trywait. */
    if (!rq->try_only)
        c.deadline = dl_round_trip_cut(rq->deadline);
    /* Should the link give up on a stalled server after sending it, the
     * server may run it when it resumes: its withdrawal runs right after. */
    dl_call_sem_withdraw(&undo, &who, &(dl_withdraw_args_t){ .mode = 'w', .regid = id,
                                                             .incarn = inc });
    unsigned long epoch = dl_trust_epoch();
    uint64_t sent = dl_now_ms();
    if (run(p, s, &c, &undo)) {
        if (c.cmd.sent)
            pending(p, s, 'w', id, inc);
        if (c.deadline && dl_now_ms() >= c.deadline)
            return dl_fail(ETIMEDOUT, "semaphore %s: timed out (Redis did not answer by the "
                           "deadline; a permit the request may take is given back)",
                           qname(s, q, sizeof q));
        return dl_fail(EIO, "semaphore %s: %s", qname(s, q, sizeof q), c.cmd.errmsg);
    }
    *r = DL_REPLY(&c, sem_wait);
    if (r->got >= 0)
        learn(s, r->inc);
    switch (r->got) {
    case DL_SEM_LOST:
        return found_lost(s);
    case 1:
        if (replicated(p, s, "the permit taken is given back")) {
            /* Given back now (or by the watchdog, should Redis not answer). */
            char kept[DL_ERRMAX];
            snprintf(kept, sizeof kept, "%s", dist_lasterror());
            pending(p, s, 'w', id, r->inc);
            settle(p, s);
            return dl_fail(EIO, "%s", kept);
        }
        if (rq->kind == 'l') {
            int rc = took_leased(p, s, id, r, sent, epoch);
            if (rc == EAGAIN)
                r->got = 0;
            else if (rc)
                return rc;
        }
        return 0;
    case 0:
        return 0;
    case -3:
        /* A stale copy: cannot be (ours go one at a time); as busy. */
        dl_log(DL_LOG_DEBUG, "semaphore %s: a wait found a later operation of ours",
               qname(s, q, sizeof q));
        r->got = 0;
        return 0;
    case -2:
        return other_kind(s, rq->kind, r->other);
    default:
        return unexpected(s);
    }
}

/* o->mu held: one try.  0 taken, EAGAIN, or the error. */
static int try_once(dl_proc_t *p, dl_sem_t *s, const dl_sem_req_t *rq)
{
    char q[96];
    talk(s);
    int rc = settle(p, s);
    dl_sem_wait_reply_t r;
    if (rc == 0)
        rc = ask(p, s, rq, 0, next_id(p), &r);
    untalk(s);
    if (rc == 0 && r.got != 1)
        rc = dl_fail(EAGAIN, "semaphore %s: no permit free", qname(s, q, sizeof q));
    return rc;
}

static int stopped(const dl_sem_req_t *rq)
{
    return rq->stop && __atomic_load_n(rq->stop, __ATOMIC_ACQUIRE);
}

static int over(const dl_sem_req_t *rq)
{
    return dl_now_ms() >= rq->deadline || stopped(rq);
}

static int over_code(dl_sem_t *s, const dl_sem_req_t *rq)
{
    char q[96];
    if (stopped(rq))
        return dl_fail(EINTR, "semaphore %s: the wait was interrupted", qname(s, q, sizeof q));
    return dl_fail(ETIMEDOUT, "semaphore %s: timed out", qname(s, q, sizeof q));
}

/* o->mu held: the wait ran out (or was stopped) while registered by the
 * sem_wait numbered `last`: the registration goes (sem_cancel.lua).  A
 * cancel that fails leaves it to lapse within its life (a claim window),
 * and to be withdrawn before the next operation. */
static void give_up(dl_proc_t *p, dl_sem_t *s, const dl_sem_req_t *rq, uint64_t last)
{
    dl_core_t *o = &s->core;
    talk(s);
    if (settle(p, s) == 0) {
        dl_caller_t who = dl_caller(p, o);
        dl_call_t c;
        uint64_t inc = s->inc;
        dl_call_sem_cancel(&c, &who, &(dl_sem_cancel_args_t){
            .op = { rq->kind, rq->value, next_id(p), inc }, .upto = last });
        if (run(p, s, &c, NULL))
            pending(p, s, 'w', last, inc);
        else if (DL_REPLY(&c, sem_cancel).result == DL_SEM_LOST)
            found_lost(s);        /* (its next call says so) */
    }
    untalk(s);
}

/* o->mu held, this thread the process's waiter in Redis: asks, and
 * between asks sleeps until a push says a permit may be free, a holder's
 * lease runs out, or a third of the registration's life passed (which
 * also refreshes it: a waiter that dies leaves the queue within its life). */
static int wait_in_queue(dl_proc_t *p, dl_sem_t *s, const dl_sem_req_t *rq, dl_waiter_t *w)
{
    dl_core_t *o = &s->core;
    unsigned long wttl = dl_claim_window(p->cfg.lease_ms);
    uint64_t last = 0;
    int slept = 0, pushed = 0;    /* how the last sleep ended */
    for (;;) {
        talk(s);
        int rc = settle(p, s);
        dl_sem_wait_reply_t r;
        if (rc == 0) {
            uint64_t id = next_id(p);
            dl_take_listen(o, w, id);
            rc = ask(p, s, rq, 1, id, &r);
            last = id;
        }
        untalk(s);
        if (rc)
            return rc;
        if (r.got == 1) {
            if (slept && pushed)
                DL_STAT_ADD(grants, 1);
            else if (slept)
                DL_STAT_ADD(fallback_checks, 1);  /* had to find out by asking */
            return 0;
        }
        if (over(rq)) {
            give_up(p, s, rq, last);
            return over_code(s, rq);
        }
        uint64_t nap = wttl / 3 ? wttl / 3 : 1;
        if (r.nap_ms > 0 && (uint64_t)r.nap_ms + 1 < nap)
            nap = (uint64_t)r.nap_ms + 1;
        uint64_t now = dl_now_ms();
        uint64_t until = now + nap < rq->deadline ? now + nap : rq->deadline;
        pushed = dl_take_sleep(o, until, rq->stop);
        slept = 1;
        if (!pushed && over(rq)) {
            give_up(p, s, rq, last);
            return over_code(s, rq);
        }
    }
}

int dl_sem_wait(dl_proc_t *p, dl_sem_t *s, const dl_sem_req_t *rq)
{
    dl_core_t *o = &s->core;
    char q[96];
    int rc;
    pthread_mutex_lock(&o->mu);
    s->inside++;
    if (s->gone) {
        rc = gone_code(s);
        goto out;
    }
    if (rq->try_only || over(rq)) {
        /* A deadline already past: one try (never queued), as trywait;
         * its EAGAIN is the time-out. */
        rc = try_once(p, s, rq);
        if (rc == EAGAIN && !rq->try_only)
            rc = over_code(s, rq);
        goto out;
    }
    /* One thread of the process waits in Redis's queue (the core's one
     * registration); the others wait here for their turn, and one whose
     * time runs out meanwhile still tries once. */
    while (s->waiter) {
        if (s->gone) {
            rc = gone_code(s);
            goto out;
        }
        if (over(rq)) {
            rc = try_once(p, s, rq);
            if (rc == EAGAIN)
                rc = over_code(s, rq);
            goto out;
        }
        uint64_t until = dl_now_ms() + 100;
        dl_core_wait(o, rq->deadline < until ? rq->deadline : until);
    }
    s->waiter = 1;
    pthread_mutex_unlock(&o->mu);
    /* Listening before registering: no wake-up can be missed.  A
     * subscriber still connecting is no reason to fail: the waiter asks
     * again every third of its registration's life. */
    rc = dl_notify_ensure(p, o, rq->deadline);
    if (rc == EAGAIN)
        rc = 0;
    else if (rc) {
        char why[DL_ERRMAX];
        snprintf(why, sizeof why, "%s", dist_lasterror());
        rc = dl_fail(EIO, "semaphore %s: %s", qname(s, q, sizeof q), why);
    }
    pthread_mutex_lock(&o->mu);
    dl_waiter_t w;                /* (the core's o->wait while it waits) */
    if (rc == 0)
        rc = wait_in_queue(p, s, rq, &w);
    dl_take_leave(o);
    s->waiter = 0;
    dl_core_wake(o);
out:
    s->inside--;
    pthread_mutex_unlock(&o->mu);
    return rc;
}

/* o->mu held: a leased post of a permit the process no longer has in
 * Redis. */
static int lapsed_code(dl_sem_t *s)
{
    char q[96];
    return dl_fail(ENOLCK, "semaphore %s: this process's leased permit had lapsed in Redis "
                   "(its lease ran out, or the server lost it): there was nothing to give back",
                   qname(s, q, sizeof q));
}

/* o->mu held: the process holds one permit fewer. */
static void one_fewer(dl_sem_t *s)
{
    if (s->permits && --s->permits == 0 && s->core.hold.rmode)
        dl_hold_dropped(&s->core);
}

/* o->mu held, this thread the talker: one post (sem_post.lua, the
 * operation op), of a permit of the process's leased hold (kind 'l') or
 * of the value; its answer in *r.  0, or EIO: perhaps made, perhaps not, the post is kept
 * and made once Redis answers (before the process's next operation on
 * the semaphore, or by its watchdog), and never twice; a leased permit is
 * given back as far as the process goes. */
static int send_post(dl_proc_t *p, dl_sem_t *s, const dl_sem_op_t *op,
                     dl_sem_post_reply_t *r)
{
    dl_core_t *o = &s->core;
    char q[96];
    int leased = op->kind == 'l';
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    dl_call_sem_post(&c, &who, &(dl_sem_post_args_t){
        .op = *op, .fence = leased ? o->hold.fence : 0 });
    /* The watchdog must not take a renewal that finds the hold just ended
     * by this post for a loss. */
    if (leased)
        (void)dl_hold_reserve(o);   /* (never fails: a semaphore keeps its room) */
    int rc = run(p, s, &c, NULL);
    if (leased) {
        dl_hold_unreserve(o);
        dl_hold_done(o);
    }
    if (rc == 0) {
        *r = DL_REPLY(&c, sem_post);
        if (r->result >= 0)
            learn(s, r->inc);
        return 0;
    }
    pending(p, s, 'r', op->id, op->inc);
    if (!leased)
        return dl_fail(EIO, "semaphore %s: %s; the post is kept and made once Redis answers "
                       "(never twice)", qname(s, q, sizeof q), c.cmd.errmsg);
    one_fewer(s);
    return dl_fail(EIO, "semaphore %s: %s; the permit is given back once Redis answers",
                   qname(s, q, sizeof q), c.cmd.errmsg);
}

static int post_leased(dl_proc_t *p, dl_sem_t *s, char kind, unsigned value)
{
    dl_core_t *o = &s->core;
    char q[96];
    if (s->gone) {
        /* (one of the permits it lapsed is told so now) */
        if (s->lapsed)
            s->lapsed--;
        return gone_code(s);
    }
    /* A lapse is told to the first posts after it, one per permit lost. */
    if (s->lapsed) {
        s->lapsed--;
        return lapsed_code(s);
    }
    if (!s->permits)
        return dl_fail(EPERM, "semaphore %s: this process holds none of its leased permits",
                       qname(s, q, sizeof q));
    if (o->hold.lost) {
        lapse_all(s, "found gone by a renewal");
        s->lapsed--;
        return lapsed_code(s);
    }
    talk(s);
    int rc = settle(p, s);
    if (rc) {
        /* Found lost while this post waited its turn (another thread's call,
         * or the settling): one of the permits that lapsed is this post's,
         * told now, as above; else a permit taken from the semaphore
         * initialized again would be told it instead (and kept). */
        if (s->gone && s->lapsed)
            s->lapsed--;
        untalk(s);
        return rc;
    }
    /* Changed while this post waited its turn: the hold lapsed (found by
     * the watchdog, the settling, or another thread's call: a permit taken
     * meanwhile under a new hold tells the old one's lapse, with its
     * permits, this post's among them).  Asked again from the top, so the
     * lapse is told to this post; sending it would give back the new
     * hold's permit with 0, and the lapse would be told to that permit's
     * post instead (issue 28: three inside a semaphore of two, nobody
     * told). */
    if (s->lapsed || !s->permits || o->hold.lost) {
        untalk(s);
        return post_leased(p, s, kind, value);
    }
    dl_sem_op_t op = { kind, value, next_id(p), s->inc };
    dl_sem_post_reply_t r;
    if ((rc = send_post(p, s, &op, &r)) == 0) {
        switch (r.result) {
        case DL_SEM_LOST:
            rc = found_lost(s);
            if (s->lapsed)
                s->lapsed--;          /* (this post's permit: told now) */
            break;
        case 1:
        case 2:
            one_fewer(s);
            /* Not on the replicas: made again (once) wherever Redis is. */
            if ((rc = replicated(p, s, "the post is made again once Redis answers (never twice)")))
                pending(p, s, 'r', op.id, op.inc);
            break;
        case 0:
            lapse_all(s, "found gone by this post");
            s->lapsed--;
            rc = lapsed_code(s);
            break;
        case -2:
            rc = other_kind(s, kind, r.other);
            break;
        case -3:
            one_fewer(s);             /* (cannot be: ours go one at a time) */
            break;
        default:
            rc = unexpected(s);
            break;
        }
    }
    untalk(s);
    return rc;
}

static int post_counting(dl_proc_t *p, dl_sem_t *s, char kind, unsigned value)
{
    char q[96];
    /* The incarnation this post gives back to: the one the process used
     * when the call began.  Redis may lose it while the post waits its
     * turn behind another thread's call, which finds the loss, and the
     * process may make the semaphore again meanwhile (another of its
     * objects of the name, initialized again): the post must not then go
     * into the new one, where it would be a permit more than its value
     * (the nemesis's sem-count, netns seed 201). */
    uint64_t inc = s->inc;
    talk(s);
    int rc = settle(p, s);
    if (rc) {
        untalk(s);
        return rc;
    }
    if (inc && s->inc != inc) {
        untalk(s);
        return dl_fail(ENOLCK, "semaphore %s: Redis lost the semaphore this post was for while "
                       "it waited its turn, and the process has initialized it again since: "
                       "nothing posted (the post adds nothing to the new one)",
                       qname(s, q, sizeof q));
    }
    dl_sem_op_t op = { kind, value, next_id(p), s->inc };
    dl_sem_post_reply_t r;
    if ((rc = send_post(p, s, &op, &r)) == 0) {
        switch (r.result) {
        case DL_SEM_LOST:
            rc = found_lost(s);
            break;
        case 1:
        case 2:
            if ((rc = replicated(p, s, "the post is made again once Redis answers (never twice)")))
                pending(p, s, 'r', op.id, op.inc);
            break;
        case -3:
            break;
        case -4:
            rc = dl_fail(EOVERFLOW, "semaphore %s: the value is INT_MAX already; not posted",
                         qname(s, q, sizeof q));
            break;
        case -2:
            rc = other_kind(s, kind, r.other);
            break;
        default:
            rc = unexpected(s);
            break;
        }
    }
    untalk(s);
    return rc;
}

int dl_sem_post(dl_proc_t *p, dl_sem_t *s, char kind, unsigned value)
{
    dl_core_t *o = &s->core;
    pthread_mutex_lock(&o->mu);
    s->inside++;
    int rc = kind == 'l' ? post_leased(p, s, kind, value) : post_counting(p, s, kind, value);
    s->inside--;
    pthread_mutex_unlock(&o->mu);
    return rc;
}

int dl_sem_getvalue(dl_proc_t *p, dl_sem_t *s, char kind, unsigned value, int *out)
{
    dl_core_t *o = &s->core;
    char q[96];
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    pthread_mutex_lock(&o->mu);
    if (s->gone) {
        int rc = gone_code(s);
        pthread_mutex_unlock(&o->mu);
        return rc;
    }
    dl_call_sem_value(&c, &who, &(dl_sem_value_args_t){ kind, value, s->inc });
    s->inside++;
    int rc = run(p, s, &c, NULL), lost = 0;
    s->inside--;
    if (!rc && DL_REPLY(&c, sem_value).result == DL_SEM_LOST)
        lost = found_lost(s);
    else if (!rc && DL_REPLY(&c, sem_value).result == 1)
        learn(s, DL_REPLY(&c, sem_value).inc);
    pthread_mutex_unlock(&o->mu);
    if (lost)
        return lost;
    if (rc)
        return dl_fail(EIO, "semaphore %s: %s", qname(s, q, sizeof q), c.cmd.errmsg);
    if (DL_REPLY(&c, sem_value).result == -2)
        return other_kind(s, kind, DL_REPLY(&c, sem_value).other);
    if (DL_REPLY(&c, sem_value).result != 1)
        return unexpected(s);
    long long v = DL_REPLY(&c, sem_value).value;
    *out = v < 0 ? 0 : v > 2147483647LL ? 2147483647 : (int)v;
    return 0;
}

int dl_sem_open(dl_proc_t *p, dl_sem_t *s, char kind, unsigned value, char how)
{
    dl_core_t *o = &s->core;
    char q[96];
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    pthread_mutex_lock(&o->mu);
    s->inside++;
    /* (talking: the incarnation it adopts changes under no operation) */
    talk(s);
    dl_call_sem_open(&c, &who, &(dl_sem_open_args_t){ kind, value, how, next_id(p) });
    int rc = run(p, s, &c, NULL);
    if (!rc && (DL_REPLY(&c, sem_open).result == 1 || DL_REPLY(&c, sem_open).result == 0))
        adopt(s, DL_REPLY(&c, sem_open).inc);
    untalk(s);
    s->inside--;
    pthread_mutex_unlock(&o->mu);
    if (rc)
        return dl_fail(EIO, "semaphore %s: %s", qname(s, q, sizeof q), c.cmd.errmsg);
    switch (DL_REPLY(&c, sem_open).result) {
    case 1:
    case 0:
        return 0;
    case -1:
        return dl_fail(ENOENT, "semaphore %s does not exist", qname(s, q, sizeof q));
    case -5:
        return dl_fail(EEXIST, "semaphore %s exists already", qname(s, q, sizeof q));
    case -2:
        return other_kind(s, kind, DL_REPLY(&c, sem_open).other);
    default:
        return unexpected(s);
    }
}

int dl_sem_unlink(dl_proc_t *p, dl_sem_t *s)
{
    dl_core_t *o = &s->core;
    char q[96];
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    dl_call_sem_unlink(&c, &who);
    pthread_mutex_lock(&o->mu);
    s->inside++;
    int rc = run(p, s, &c, NULL);
    s->inside--;
    pthread_mutex_unlock(&o->mu);
    if (rc)
        return dl_fail(EIO, "semaphore %s: %s", qname(s, q, sizeof q), c.cmd.errmsg);
    switch (DL_REPLY(&c, sem_unlink).result) {
    case 1:
        return 0;
    case 0:
        return dl_fail(ENOENT, "semaphore %s does not exist", qname(s, q, sizeof q));
    default:
        return unexpected(s);
    }
}

unsigned dl_sem_held(dl_sem_t *s)
{
    pthread_mutex_lock(&s->core.mu);
    unsigned n = s->core.hold.lost ? 0 : s->permits;
    pthread_mutex_unlock(&s->core.mu);
    return n;
}

/* --- the semaphore's kind: what the registry and the hold core ask of it --- */

/* The core builds a leased hold's renewals (the watchdog's) and settles
 * failed operations (the watchdog's withdrawals) with these.  Its other
 * steps are the semaphore's own (sem_wait.lua, sem_post.lua): a semaphore's
 * hold is never taken by dl_take, released by dl_hold_release, nor left to
 * linger. */
static const dl_hold_calls_t sem_calls = {
    .renew = dl_call_sem_renew,
    .withdraw = dl_call_sem_withdraw,
};

/* The process holds leased permits of it. */
static int sem_held(const dl_core_t *o)
{
    const dl_sem_t *s = dl_sem_of((dl_core_t *)o);
    return s->permits != 0;
}

/* No thread waits for the hold itself (a permit more is its own ask). */
static int sem_waiting(const dl_core_t *o)
{
    (void)o;
    return 0;
}

/* A thread is in a call on it, or the process holds permits of it. */
static int sem_in_use(const dl_core_t *o)
{
    const dl_sem_t *s = dl_sem_of((dl_core_t *)o);
    return s->inside || s->talking || s->waiter || s->permits;
}

const dl_kind_t dl_sem_kind = {
    .id = DL_KIND_SEM,
    .size = sizeof(dl_sem_t),
    .keeps_rare = 1,          /* its undos (pending) come from untalk()ed calls */
    .calls = &sem_calls,
    .fini = NULL,
    .held = sem_held,
    .waiting = sem_waiting,
    .in_use = sem_in_use,
};
