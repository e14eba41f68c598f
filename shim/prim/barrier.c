/* SPDX-License-Identifier: BSD-3-Clause */
/* barrier.c - the barrier primitive (barrier.h).
 *
 * A wait is one arrival in Redis (barrier_wait.lua), sent by the process's
 * one talker at a time.  The arrival that makes the count trips the
 * generation: its caller is the serial, and Redis pushes "k GEN KEY" once
 * to every other process with an arrival in it; the subscriber marks the
 * process's waiters of GEN released (barrier_woken).  Every reply about
 * the barrier (an arrival's, a check's) says where it is, its incarnation
 * and the generation under way, which releases every waiter of the
 * process in an earlier generation of that incarnation (learn): so a push
 * that was lost, or never sent (the subscriber away), costs a check, made
 * by one waiting thread for the whole process every third of a claim
 * window.
 *
 * A timed wait that runs out withdraws its arrival (barrier_leave.lua),
 * which Redis refuses once the generation tripped: the wait then returns
 * as released.  A request whose reply was lost (an arrival, a leave) is
 * kept and settled before the process's next operation on the barrier by
 * a leave of its arrival (which Redis orders after it: a copy of it still
 * on its way then does nothing): the arrival no longer counts, or Redis
 * says it was released.  A thread whose wait failed so, and that waits
 * again, is then released at once: its earlier arrival completed a
 * generation the others went on with.
 *
 * redlock:// is refused (api/barrier.c): its independent servers keep no
 * common order of arrivals, so they could disagree on which arrival trips
 * a generation, and a withdrawal that reaches some before the last arrival
 * and others after it would have released the others on a majority's word
 * while the withdrawn thread returned ETIMEDOUT.
 *
 * Here o is the barrier's core (&b->core).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "barrier.h"
#include "call_barrier_check.h"
#include "call_barrier_leave.h"
#include "call_barrier_open.h"
#include "call_barrier_wait.h"
#include "distlock.h"
#include "dl.h"
#include "notify.h"
#include "take.h"

static const char *qname(dl_barrier_t *b, char *buf, size_t size)
{
    return dl_core_qname(&b->core, buf, size);
}

/* How often a process whose threads wait asks Redis, without a push. */
static unsigned long check_every(const dl_proc_t *p)
{
    unsigned long w = dl_claim_window(p->cfg.lease_ms) / 3;
    return w ? w : 1;
}

/* o->mu held: this thread becomes the one that sends the barrier's
 * operations (their ids go out in the order Redis must see them). */
static void talk(dl_barrier_t *b)
{
    while (b->talking)
        dl_core_wait(&b->core, dl_now_ms() + 1000);
    b->talking = 1;
}

static void untalk(dl_barrier_t *b)
{
    b->talking = 0;
    dl_core_wake(&b->core);
}

/* Runs c with o->mu released (talking keeps the order).  0 or EIO. */
static int run(dl_proc_t *p, dl_barrier_t *b, dl_call_t *c)
{
    pthread_mutex_unlock(&b->core.mu);
    int rc = dl_script_run(p->conn, c, 1);
    pthread_mutex_lock(&b->core.mu);
    return rc;
}

static void unlist(dl_barrier_t *b, dl_bwait_t *w)
{
    for (dl_bwait_t **pp = &b->head; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            b->nwait--;
            return;
        }
}

/* o->mu held: Redis says the barrier is incarnation inc, with generation
 * gen under way: every waiter of that incarnation in an earlier one was
 * released, and every waiter of another incarnation lost its arrival.
 * The waiters listed as seq or before arrived before Redis answered (their
 * arrivals' replies had come when the answer was asked for): any other
 * incarnation was made after theirs, also one with a smaller id (Redis's
 * clock set back before it was made anew).  A later waiter may have
 * arrived after the answer was made: only a greater id, made after its
 * own, says it lost its arrival. */
static void learn(dl_barrier_t *b, uint64_t inc, uint64_t gen, unsigned long seq)
{
    int any = 0;
    for (dl_bwait_t *w = b->head; w; w = w->next) {
        if (w->state != DL_BW_WAITING)
            continue;
        if (inc != w->inc && (w->seq <= seq || inc > w->inc))
            w->state = DL_BW_LOST, any = 1;
        else if (inc == w->inc && gen > w->gen)
            w->state = DL_BW_TRIPPED, any = 1;
    }
    if (any)
        dl_core_wake(&b->core);
}

/* o->mu held: Redis had no barrier when a check was sent, with `seq`
 * waiters listed: those lost their arrivals (a later one may have made
 * the barrier anew). */
static void lose_all(dl_barrier_t *b, unsigned long seq)
{
    for (dl_bwait_t *w = b->head; w; w = w->next)
        if (w->state == DL_BW_WAITING && w->seq <= seq)
            w->state = DL_BW_LOST;
    dl_core_wake(&b->core);
}

/* o->mu held: request op of the calling thread, on arrival, got no reply:
 * kept until settled.  (More than DL_BARRIER_KEPT at once: the oldest is
 * forgotten, and its arrival counts as a dead process's would.) */
static void keep(dl_barrier_t *b, uint64_t op, uint64_t arrival, uint64_t gen, uint64_t inc)
{
    char q[96];
    if (b->nkept == DL_BARRIER_KEPT) {
        dl_log(DL_LOG_WARN, "barrier %s: too many requests without a reply; the arrival of the "
               "oldest may still count", qname(b, q, sizeof q));
        memmove(&b->kept[0], &b->kept[1], (DL_BARRIER_KEPT - 1) * sizeof b->kept[0]);
        b->nkept--;
    }
    b->kept[b->nkept++] = (dl_bkept_t){ op, arrival, gen, inc, dl_tid() };
}

/* o->mu held, talking: settles every kept request, oldest first (a leave
 * of its arrival, a new operation: Redis runs no copy of the request after
 * it).  0, or EIO (worded; what is left stays kept).  *mine: 1 if one was
 * the calling thread's, whose arrival Redis says was released. */
static int settle(dl_proc_t *p, dl_barrier_t *b, int *mine)
{
    char q[96];
    pid_t me = dl_tid();
    while (b->nkept) {
        dl_bkept_t k = b->kept[0];
        dl_caller_t who = dl_caller(p, &b->core);
        dl_call_t c;
        dl_call_barrier_leave(&c, &who, &(dl_barrier_leave_args_t){
            .arrival = k.arrival, .gen = k.gen, .inc = k.inc,
            .id = __atomic_add_fetch(&p->regseq, 1, __ATOMIC_RELAXED), .failed = k.op });
        if (run(p, b, &c) || DL_REPLY(&c, barrier_leave).result < 0)
            return dl_fail(EIO, "barrier %s: %s (settling an earlier request that got no reply)",
                           qname(b, q, sizeof q),
                           c.cmd.err ? c.cmd.errmsg : "unexpected reply");
        if (DL_REPLY(&c, barrier_leave).result == 2 && k.tid == me && mine)
            *mine = 1;
        memmove(&b->kept[0], &b->kept[1], (size_t)(b->nkept - 1) * sizeof b->kept[0]);
        b->nkept--;
    }
    return 0;
}

/* o->mu held, talking (settled): one arrival (barrier_wait.lua) with
 * operation id.  0 with *r, or EIO (worded: kept). */
static int arrive(dl_proc_t *p, dl_barrier_t *b, unsigned count, uint64_t id,
                  dl_barrier_wait_reply_t *r)
{
    char q[96];
    dl_caller_t who = dl_caller(p, &b->core);
    dl_call_t c;
    dl_call_barrier_wait(&c, &who, &(dl_barrier_wait_args_t){ .count = count, .id = id });
    DL_TALLY_ADD(&b->core, roundtrips, 1);
    if (run(p, b, &c)) {
        if (c.cmd.sent) {
            keep(b, id, id, 0, 0);
            return dl_fail(EIO, "barrier %s: %s; the arrival may have been counted: it is "
                           "withdrawn before this process's next call on the barrier (if this "
                           "thread waits again and it had completed its generation, that wait "
                           "returns at once)", qname(b, q, sizeof q), c.cmd.errmsg);
        }
        return dl_fail(EIO, "barrier %s: %s", qname(b, q, sizeof q), c.cmd.errmsg);
    }
    *r = DL_REPLY(&c, barrier_wait);
    DL_STAT_ADD(barrier_arrivals, 1);
    return 0;
}

/* o->mu held: w's time ran out (or it was stopped): its arrival leaves,
 * unless its generation tripped (then it returns as released).  0 (it
 * tripped), ETIMEDOUT or EINTR (why: withdrawn, or it no longer counted),
 * EIO. */
static int leave(dl_proc_t *p, dl_barrier_t *b, dl_bwait_t *w, int why)
{
    char q[96];
    talk(b);
    int rc = settle(p, b, NULL);
    dl_call_t c;
    uint64_t id = __atomic_add_fetch(&p->regseq, 1, __ATOMIC_RELAXED);
    if (rc == 0) {
        dl_caller_t who = dl_caller(p, &b->core);
        dl_call_barrier_leave(&c, &who, &(dl_barrier_leave_args_t){
            .arrival = w->id, .gen = w->gen, .inc = w->inc, .id = id });
        rc = run(p, b, &c);
        if (rc || DL_REPLY(&c, barrier_leave).result < 0) {
            /* It may still count: kept, and settled before the next. */
            if (!rc || c.cmd.sent)
                keep(b, id, w->id, w->gen, w->inc);
            else
                keep(b, 0, w->id, w->gen, w->inc);
            rc = dl_fail(EIO, "barrier %s: the %s, but withdrawing its arrival failed (%s): it "
                         "may still count until this process's next call on the barrier",
                         qname(b, q, sizeof q),
                         why == EINTR ? "wait was interrupted" : "timed wait ran out",
                         rc ? c.cmd.errmsg : "unexpected reply");
        }
    } else {
        keep(b, 0, w->id, w->gen, w->inc);
    }
    untalk(b);
    if (rc)
        return rc;
    /* Redis's word, not a push's or a check's learnt meanwhile: a push for
     * this generation may have come for the process's other waiters after
     * this arrival was withdrawn from it. */
    if (DL_REPLY(&c, barrier_leave).result == 2)
        return 0;                 /* released meanwhile: as a wait returns */
    if (why == EINTR)
        return dl_fail(EINTR, "barrier %s: the wait was interrupted; its arrival was withdrawn",
                       qname(b, q, sizeof q));
    return dl_fail(ETIMEDOUT, "barrier %s: timed out; its arrival was withdrawn",
                   qname(b, q, sizeof q));
}

/* Where the barrier is (o->mu released around the round trip, checking
 * set so that the process asks once for all its waiters).  The answer is
 * learnt; a failure is retried soon by the next waiter to look. */
static void check(dl_proc_t *p, dl_barrier_t *b, uint64_t deadline)
{
    dl_caller_t who = dl_caller(p, &b->core);
    dl_call_t c;
    dl_call_barrier_check(&c, &who);
    if (deadline != DL_FOREVER) {
        uint64_t soonest = dl_now_ms() + 50;  /* a round trip's worth at least */
        c.deadline = deadline > soonest ? deadline : soonest;
    }
    b->checking = 1;
    uint64_t sent = dl_now_ms();
    unsigned long seq = b->seq;
    pthread_mutex_unlock(&b->core.mu);
    int rc = dl_script_run(p->conn, &c, 1);
    DL_STAT_ADD(barrier_checks, 1);
    pthread_mutex_lock(&b->core.mu);
    b->checking = 0;
    dl_core_wake(&b->core);
    if (rc || DL_REPLY(&c, barrier_check).result < 0) {
        /* Ask again in a moment, not a whole period later. */
        uint64_t every = check_every(p), soon = every < 100 ? every : 100;
        b->checked_at = dl_now_ms() + soon - every;
        return;
    }
    b->checked_at = sent;
    int before = 0;
    for (dl_bwait_t *w = b->head; w; w = w->next)
        before += w->state == DL_BW_WAITING;
    if (DL_REPLY(&c, barrier_check).result == 0)
        lose_all(b, seq);
    else
        learn(b, DL_REPLY(&c, barrier_check).inc, DL_REPLY(&c, barrier_check).gen, seq);
    int after = 0;
    for (dl_bwait_t *w = b->head; w; w = w->next)
        after += w->state == DL_BW_WAITING;
    if (after < before)
        DL_STAT_ADD(barrier_found, (unsigned long)(before - after));
}

static int stopped(const dl_barrier_req_t *rq)
{
    return rq->stop && __atomic_load_n(rq->stop, __ATOMIC_ACQUIRE);
}

/* o->mu held: w waits until its generation trips, Redis loses it, or the
 * time runs out (never before abstime on CLOCK_REALTIME). */
static int block(dl_proc_t *p, dl_barrier_t *b, dl_bwait_t *w, const dl_barrier_req_t *rq)
{
    char q[96];
    uint64_t every = check_every(p);
    uint64_t deadline = DL_FOREVER;
    if (rq->abstime)
        dl_deadline_from_abstime(rq->abstime, &deadline);
    /* Not a cancellation point: a thread cancelled here would leave its
     * waiter (on its stack) listed, and o->mu held. */
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int rc = 0;
    while (w->state == DL_BW_WAITING) {
        uint64_t now = dl_now_ms();
        if (stopped(rq)) {
            rc = leave(p, b, w, EINTR);
            break;
        }
        if (now >= deadline) {
            /* Never ETIMEDOUT before abstime, even if the wall clock was
             * set back while we waited. */
            if (!dl_abstime_passed(rq->abstime)) {
                dl_deadline_from_abstime(rq->abstime, &deadline);
                if (deadline <= now)
                    deadline = now + 1;
                continue;
            }
            rc = leave(p, b, w, ETIMEDOUT);
            break;
        }
        if (!b->checking && (b->recheck || now >= b->checked_at + every)) {
            b->recheck = 0;
            check(p, b, deadline);
            continue;
        }
        uint64_t until = b->checking ? now + every : b->checked_at + every;
        dl_core_wait(&b->core, until < deadline ? until : deadline);
    }
    if (rc == 0 && w->state == DL_BW_LOST)
        rc = dl_fail(ENOLCK, "barrier %s: Redis lost the barrier while this thread waited on "
                     "it (a restart without persistence, a flush, eviction): its arrival no "
                     "longer counts, and whether its generation was complete is unknown",
                     qname(b, q, sizeof q));
    pthread_setcancelstate(cancel, NULL);
    return rc;
}

/* o->mu held: what an arrival's reply r says.  0: the caller waits (*w
 * set); else the call's result: DIST_BARRIER_SERIAL_THREAD, 1 released
 * (returns 0), -4 arrive again (a fresh id), or an error. */
static int took(dl_barrier_t *b, unsigned count, const dl_barrier_wait_reply_t *r)
{
    char q[96];
    switch (r->result) {
    case 2:
        /* The serial: the process's other waiters of this generation are
         * released too (Redis pushes to every process but ours). */
        learn(b, r->inc, r->gen + 1, b->seq);
        return DIST_BARRIER_SERIAL_THREAD;
    case 1:
        learn(b, r->inc, r->gen + 1, b->seq);
        return 1;
    case 0:
        learn(b, r->inc, r->gen, b->seq);
        return 0;
    case -2:
        return dl_fail(EINVAL, "barrier %s has count %lld in Redis; this object was "
                       "initialized with count %u (every process must use the same count)",
                       qname(b, q, sizeof q), r->count, count);
    case -4:
        return -4;
    case -3:
        /* A stale copy: cannot be (ours go one at a time). */
    default:
        return dl_fail(EIO, "barrier %s: unexpected reply from Redis", qname(b, q, sizeof q));
    }
}

int dl_barrier_wait(dl_proc_t *p, dl_barrier_t *b, const dl_barrier_req_t *rq)
{
    dl_core_t *o = &b->core;
    char q[96];
    /* Listening before arriving: no push can come before we listen.  A
     * subscriber still connecting is no reason to fail: the waiters ask
     * Redis every third of a claim window. */
    uint64_t ndl = DL_FOREVER;
    if (rq->abstime)
        dl_deadline_from_abstime(rq->abstime, &ndl);
    int rc = dl_notify_ensure(p, o, ndl);
    if (rc == EAGAIN) {
        rc = 0;
    } else if (rc) {
        char why[200];
        snprintf(why, sizeof why, "%s", dist_lasterror());
        return dl_fail(EIO, "barrier %s: cannot wait on it: %s", qname(b, q, sizeof q), why);
    }
    dl_bwait_t w;
    memset(&w, 0, sizeof w);
    pthread_mutex_lock(&o->mu);
    b->inside++;
    for (;;) {
        talk(b);
        int mine = 0;
        rc = settle(p, b, &mine);
        if (rc == 0 && mine) {
            /* This thread's earlier wait, which failed, had completed a
             * generation: this one is that wait's end. */
            untalk(b);
            rc = 1;
            break;
        }
        uint64_t id = __atomic_add_fetch(&p->regseq, 1, __ATOMIC_RELAXED);
        dl_barrier_wait_reply_t r = { 0 };
        if (rc == 0)
            rc = arrive(p, b, rq->count, id, &r);
        if (rc == 0) {
            rc = took(b, rq->count, &r);
            w.gen = r.gen;
            if (rc == 0) {
                /* Waiting: listed before the talk ends, so that a check
                 * or a push learnt from now on finds it. */
                w.id = id;
                w.gen = r.gen;
                w.inc = r.inc;
                w.state = r.gen <= b->pushed ? DL_BW_TRIPPED : DL_BW_WAITING;
                w.seq = ++b->seq;
                w.next = b->head;
                b->head = &w;
                b->nwait++;
                /* An answer as good as a check, for every waiter. */
                if (!b->checking)
                    b->checked_at = dl_now_ms();
            }
        }
        untalk(b);
        if (rc != -4)
            break;
        rc = 0;                   /* (cannot be: ids are never reused) arrive anew */
    }
    uint64_t gen = w.gen;         /* (0: a settle said released) */
    if (rc == 1) {
        rc = 0;
    } else if (rc == 0) {
        rc = block(p, b, &w, rq);
        unlist(b, &w);
        gen = w.gen;
    }
    if (rq->gen)
        *rq->gen = rc == 0 || rc == DIST_BARRIER_SERIAL_THREAD ? gen : 0;
    b->inside--;
    dl_core_wake(o);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

void dl_barrier_wake(dl_barrier_t *b)
{
    pthread_mutex_lock(&b->core.mu);
    dl_core_wake(&b->core);
    pthread_mutex_unlock(&b->core.mu);
}

int dl_barrier_open(dl_proc_t *p, dl_barrier_t *b, unsigned count)
{
    dl_core_t *o = &b->core;
    char q[96];
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    dl_call_barrier_open(&c, &who, &(dl_barrier_open_args_t){
        .count = count, .idle_ms = p->cfg.lease_ms });
    pthread_mutex_lock(&o->mu);
    b->inside++;
    int rc = run(p, b, &c);
    b->inside--;
    pthread_mutex_unlock(&o->mu);
    if (rc)
        return dl_fail(EIO, "barrier %s: %s", qname(b, q, sizeof q), c.cmd.errmsg);
    const dl_barrier_open_reply_t *r = &DL_REPLY(&c, barrier_open);
    switch (r->result) {
    case 1:
        return 0;
    case 2:
        dl_log(DL_LOG_INFO, "barrier %s: count %u replaces the count it had (nobody had used it "
               "for %lu ms)", qname(b, q, sizeof q), count, p->cfg.lease_ms);
        return 0;
    case -2:
        return dl_fail(EINVAL, "barrier %s has count %lld in Redis; this object was initialized "
                       "with count %u: every process must use the same count (%lld arrival%s "
                       "wait%s in it, last used %lld ms ago; another count is taken once nobody "
                       "waits and it has not been used for %lu ms)", qname(b, q, sizeof q),
                       r->count, count, r->waiting, r->waiting == 1 ? "" : "s",
                       r->waiting == 1 ? "s" : "", r->since_ms, p->cfg.lease_ms);
    default:
        return dl_fail(EIO, "barrier %s: unexpected reply from Redis", qname(b, q, sizeof q));
    }
}

/* --- the barrier's kind: what the registry and the subscriber ask --- */

/* A push: generation gen tripped (o->mu held).  Generations are numbered
 * apart in every incarnation, so it names the waiters it released. */
static void barrier_woken(dl_core_t *o, uint64_t gen)
{
    dl_barrier_t *b = dl_barrier_of(o);
    DL_STAT_ADD(barrier_pushes, 1);
    if (gen > b->pushed)
        b->pushed = gen;
    int any = 0;
    for (dl_bwait_t *w = b->head; w; w = w->next)
        if (w->state == DL_BW_WAITING && w->gen == gen) {
            w->state = DL_BW_TRIPPED;
            any = 1;
        }
    if (any)
        dl_core_wake(o);
}

/* The subscriber reconnected: pushes may have been lost (o->mu held). */
static void barrier_recheck(dl_core_t *o)
{
    dl_barrier_t *b = dl_barrier_of(o);
    if (b->nwait) {
        b->recheck = 1;
        dl_core_wake(o);
    }
}

static int barrier_none(const dl_core_t *o)
{
    (void)o;
    return 0;
}

/* A thread of the process is in a call on it: its last object may not be
 * destroyed. */
static int barrier_in_use(const dl_core_t *o)
{
    const dl_barrier_t *b = dl_barrier_of((dl_core_t *)o);
    return b->inside || b->nwait || b->talking;
}

const dl_kind_t dl_barrier_kind = {
    .id = DL_KIND_BARRIER,
    .size = sizeof(dl_barrier_t),
    .calls = NULL,                /* it never holds anything in Redis */
    .held = barrier_none,
    .waiting = barrier_none,
    .in_use = barrier_in_use,
    .woken = barrier_woken,
    .recheck = barrier_recheck,
};
