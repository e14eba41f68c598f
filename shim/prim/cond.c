/* SPDX-License-Identifier: BSD-3-Clause */
/* cond.c - the condition primitive (cond.h).
 *
 * A waiter registers in Redis (cond_enter.lua) before its mutex is
 * released, so a signal sent after the release finds it; a signal takes
 * the oldest registration (a broadcast every one) and pushes "k REGID KEY"
 * to its process (cond_signal.lua), whose subscriber wakes the thread
 * (cond_woken).  The waiter asks Redis every third of its registration's
 * life whether it is still registered (cond_check.lua): that refreshes the
 * registration, so that one whose process died lapses within the claim
 * window and no signal is spent on it, and finds a wake-up whose push was
 * lost.  Gone from Redis means woken: a spurious wake-up at worst (Redis
 * lost it), never a signal slept through.
 *
 * A signal of the process itself wakes the oldest of the process's own
 * waiters without a round trip (DL_CW_LOCAL).  That waiter's registration
 * is still in Redis, where a signal of another process could take it
 * before it is removed and would wake nobody else: so the waiter removes
 * it (cond_leave.lua) before it returns, and if a signal had taken it
 * meanwhile, the waiter passes that signal on (it signals through Redis).
 * Where that removal fails (Redis unreachable for the I/O time-out), the
 * registration lapses within the claim window, and a signal of another
 * process that takes it before then wakes nobody: the one case where a
 * wake-up can be lost, said in docs/PROTOCOL.md.
 *
 * redlock://: a waiter registers on a majority, and a signal wakes every
 * waiter (call_cond_signal.c says why); a registration taken on any
 * server it was made on counts as woken.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "call_cond_check.h"
#include "call_cond_enter.h"
#include "call_cond_leave.h"
#include "call_cond_signal.h"
#include "cond.h"
#include "distlock.h"
#include "dl.h"
#include "notify.h"
#include "take.h"

/* The life of a registration unless its waiter refreshes it (the claim
 * window of a lock's waiter: a waiter that died stops counting that soon). */
static unsigned long reg_ttl(const dl_proc_t *p)
{
    return dl_claim_window(p->cfg.lease_ms);
}

static void unlist(dl_cond_t *c, dl_cwait_t *w)
{
    for (dl_cwait_t **pp = &c->head; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            c->nwait--;
            return;
        }
}

/* The signal through Redis: the oldest waiter anywhere, or all of them.
 * 0, EIO. */
static int signal_redis(dl_proc_t *p, dl_cond_t *c, int all)
{
    dl_core_t *o = &c->core;
    char q[96];
    dl_caller_t who = dl_caller(p, o);
    dl_call_t call;
    dl_call_cond_signal(&call, &who, &(dl_cond_signal_args_t){ .all = all });
    if (dl_script_run(p->conn, &call, 1))
        return dl_fail(EIO, "condition %s: %s: %s", dl_core_qname(o, q, sizeof q),
                       all ? "broadcast" : "signal", call.cmd.errmsg);
    if (DL_REPLY(&call, cond_signal).woken < 0)
        return dl_fail(EIO, "condition %s: unexpected reply from Redis",
                       dl_core_qname(o, q, sizeof q));
    return 0;
}

/* w stops waiting without a signal from Redis: its registration goes.  1:
 * it was still registered; 0: a signal took it meanwhile (forward: that
 * signal is passed on, since a signal of this process woke w already);
 * -1: Redis could not be asked (the registration lapses on its own). */
static int leave(dl_proc_t *p, dl_cond_t *c, const dl_cwait_t *w, int forward)
{
    dl_core_t *o = &c->core;
    char q[96];
    dl_caller_t who = dl_caller(p, o);
    dl_call_t call;
    dl_call_cond_leave(&call, &who, &(dl_cond_leave_args_t){
        .regid = w->regid, .servers = w->servers });
    if (dl_script_run(p->conn, &call, 1) || DL_REPLY(&call, cond_leave).waiting < 0) {
        dl_log(DL_LOG_WARN, "condition %s: removing a registration failed (%s); it lapses "
               "within %lu ms, and a signal of another process that takes it before then "
               "wakes nobody", dl_core_qname(o, q, sizeof q),
               call.cmd.err ? call.cmd.errmsg : "unexpected reply", reg_ttl(p));
        return -1;
    }
    if (DL_REPLY(&call, cond_leave).waiting == 0 && forward) {
        DL_STAT_ADD(cond_forwards, 1);
        if (signal_redis(p, c, 0))
            dl_log(DL_LOG_WARN, "condition %s: passing on a signal that took a waiter woken "
                   "by its own process failed: %s", dl_core_qname(o, q, sizeof q),
                   dist_lasterror());
    }
    return DL_REPLY(&call, cond_leave).waiting;
}

int dl_cond_enter(dl_proc_t *p, dl_cond_t *c, dl_cwait_t *w, uint64_t deadline)
{
    dl_core_t *o = &c->core;
    char q[96];
    memset(w, 0, sizeof *w);
    /* Listening before registering: no push can come before we listen. */
    int nrc = dl_notify_ensure(p, o, deadline);
    if (nrc == EAGAIN) {
        dl_log(DL_LOG_INFO, "condition %s: the subscriber is still connecting; waiting without "
               "pushes (asking again every %lu ms)", dl_core_qname(o, q, sizeof q), reg_ttl(p) / 3);
    } else if (nrc) {
        char why[200];
        snprintf(why, sizeof why, "%s", dist_lasterror());
        return dl_fail(EIO, "condition %s: cannot wait on it: %s", dl_core_qname(o, q, sizeof q),
                       why);
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    w->regid = __atomic_add_fetch(&p->regseq, 1, __ATOMIC_RELAXED);
    w->state = DL_CW_ENTERING;
    pthread_mutex_lock(&o->mu);
    w->next = NULL;
    dl_cwait_t **pp = &c->head;
    while (*pp)
        pp = &(*pp)->next;
    *pp = w;
    c->nwait++;
    pthread_mutex_unlock(&o->mu);

    dl_caller_t who = dl_caller(p, o);
    dl_call_t call;
    dl_call_cond_enter(&call, &who, &(dl_cond_enter_args_t){ .regid = w->regid,
                                                             .ttl_ms = reg_ttl(p) });
    uint64_t sent = dl_now_ms();
    int rc = dl_script_run(p->conn, &call, 1);
    if (rc == 0 && DL_REPLY(&call, cond_enter).ok != 1)
        rc = dl_fail(EIO, "condition %s: unexpected reply from Redis",
                     dl_core_qname(o, q, sizeof q));
    else if (rc)
        rc = dl_fail(EIO, "condition %s: registering a waiter: %s", dl_core_qname(o, q, sizeof q),
                     call.cmd.errmsg);
    pthread_mutex_lock(&o->mu);
    if (rc) {
        unlist(c, w);
        pthread_mutex_unlock(&o->mu);
        if (call.cmd.sent) {
            /* It may have run: take it back, and pass on a signal that
             * found it meanwhile (best effort: Redis failed just now). */
            char kept[DL_ERRMAX];
            snprintf(kept, sizeof kept, "%s", dist_lasterror());
            leave(p, c, w, 1);
            dl_seterr("%s", kept);
        }
        pthread_cond_destroy(&w->cv);
        return rc;
    }
    w->servers = DL_REPLY(&call, cond_enter).servers;
    w->checked_at = sent;
    w->seq = ++c->seq;
    DL_STAT_ADD(cond_waits, 1);
    if (w->state == DL_CW_ENTERING)   /* (a push may have taken it already) */
        w->state = DL_CW_WAITING;
    pthread_mutex_unlock(&o->mu);
    return 0;
}

/* Is w still registered?  Asks Redis (o->mu not held): 1 yes (refreshed),
 * 0 no (woken), -1 no answer by deadline or the I/O time-out. */
static int check(dl_proc_t *p, dl_cond_t *c, dl_cwait_t *w, uint64_t deadline)
{
    dl_core_t *o = &c->core;
    dl_caller_t who = dl_caller(p, o);
    dl_call_t call;
    dl_call_cond_check(&call, &who, &(dl_cond_check_args_t){
        .regid = w->regid, .ttl_ms = reg_ttl(p), .servers = w->servers });
    if (deadline != DL_FOREVER) {
        uint64_t soonest = dl_now_ms() + 50;   /* a round trip's worth at least */
        call.deadline = deadline > soonest ? deadline : soonest;
    }
    uint64_t sent = dl_now_ms();
    if (dl_script_run(p->conn, &call, 1) || DL_REPLY(&call, cond_check).waiting < 0)
        return -1;
    if (DL_REPLY(&call, cond_check).waiting == 1)
        w->checked_at = sent;
    else
        DL_STAT_ADD(cond_found, 1);           /* woken, and found out by asking */
    return DL_REPLY(&call, cond_check).waiting;
}

int dl_cond_block(dl_proc_t *p, dl_cond_t *c, dl_cwait_t *w, clockid_t clock,
                  const struct timespec *abstime)
{
    dl_core_t *o = &c->core;
    unsigned long every = reg_ttl(p) / 3 ? reg_ttl(p) / 3 : 1;
    uint64_t deadline = DL_FOREVER;
    if (abstime)
        dl_deadline_on(clock, abstime, &deadline);
    uint64_t next_check = w->checked_at + every;
    /* Not a cancellation point: a thread cancelled in the wait would leave
     * its waiter (on its stack) listed, and o->mu held. */
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    pthread_mutex_lock(&o->mu);
    while (w->state == DL_CW_WAITING) {
        uint64_t now = dl_now_ms();
        if (now >= deadline) {
            /* Never ETIMEDOUT before abstime on its clock, even if the
             * wall clock was set back (or the host suspended) while we
             * waited. */
            if (!dl_passed_on(clock, abstime)) {
                dl_deadline_on(clock, abstime, &deadline);
                if (deadline <= now)
                    deadline = now + 1;
                continue;
            }
            w->state = DL_CW_TIMEDOUT;
            break;
        }
        if (w->recheck || now >= next_check) {
            w->recheck = 0;
            pthread_mutex_unlock(&o->mu);
            int rc = check(p, c, w, deadline);
            pthread_mutex_lock(&o->mu);
            if (rc == 0 && w->state == DL_CW_WAITING)
                w->state = DL_CW_TAKEN;
            /* Redis did not answer: ask again soon (the registration may
             * lapse meanwhile; the next answer then wakes us). */
            next_check = rc == 1 ? w->checked_at + every : dl_now_ms() + (every < 100 ? every : 100);
            continue;
        }
        struct timespec ts;
        dl_timespec_at(next_check < deadline ? next_check : deadline, &ts);
        pthread_cond_timedwait(&w->cv, &o->mu, &ts);
    }
    int state = w->state;
    unlist(c, w);
    pthread_mutex_unlock(&o->mu);
    pthread_setcancelstate(cancel, NULL);
    pthread_cond_destroy(&w->cv);

    int rc = 0;
    if (state == DL_CW_LOCAL) {
        leave(p, c, w, 1);
    } else if (state == DL_CW_TIMEDOUT) {
        /* Taken by a signal as the time ran out: that signal woke us, and
         * would be lost if we said ETIMEDOUT. */
        rc = leave(p, c, w, 0) == 0 ? 0 : ETIMEDOUT;
    }
    return rc;
}

int dl_cond_signal(dl_proc_t *p, dl_cond_t *c, int all)
{
    dl_core_t *o = &c->core;
    pthread_mutex_lock(&o->mu);
    if (!all) {
        for (dl_cwait_t *w = c->head; w; w = w->next)
            if (w->state == DL_CW_WAITING) {
                w->state = DL_CW_LOCAL;
                pthread_cond_signal(&w->cv);
                pthread_mutex_unlock(&o->mu);
                DL_STAT_ADD(cond_local_wakes, 1);
                return 0;
            }
    }
    /* The process's waiters registered before the broadcast is sent are
     * among those it takes in Redis: woken here at once, not by their
     * push. */
    unsigned long upto = c->seq;
    pthread_mutex_unlock(&o->mu);
    int rc = signal_redis(p, c, all);
    if (rc == 0 && all) {
        pthread_mutex_lock(&o->mu);
        for (dl_cwait_t *w = c->head; w; w = w->next)
            if (w->state == DL_CW_WAITING && w->seq <= upto) {
                w->state = DL_CW_TAKEN;
                pthread_cond_signal(&w->cv);
            }
        pthread_mutex_unlock(&o->mu);
    }
    return rc;
}

/* --- the condition's kind: what the registry and the subscriber ask --- */

/* A push: registration regid was taken by a signal (o->mu held). */
static void cond_woken(dl_core_t *o, uint64_t regid)
{
    dl_cond_t *c = dl_cond_of(o);
    for (dl_cwait_t *w = c->head; w; w = w->next)
        if (w->regid == regid) {
            if (w->state == DL_CW_WAITING || w->state == DL_CW_ENTERING) {
                DL_STAT_ADD(cond_pushes, 1);
                w->state = DL_CW_TAKEN;
                pthread_cond_signal(&w->cv);
            }
            return;
        }
}

/* The subscriber reconnected: pushes may have been lost (o->mu held). */
static void cond_recheck(dl_core_t *o)
{
    dl_cond_t *c = dl_cond_of(o);
    for (dl_cwait_t *w = c->head; w; w = w->next)
        if (w->state == DL_CW_WAITING) {
            w->recheck = 1;
            pthread_cond_signal(&w->cv);
        }
}

static int cond_none(const dl_core_t *o)
{
    (void)o;
    return 0;
}

/* A thread of the process waits on it: its last object may not be
 * destroyed. */
static int cond_in_use(const dl_core_t *o)
{
    return dl_cond_of((dl_core_t *)o)->nwait > 0;
}

const dl_kind_t dl_cond_kind = {
    .id = DL_KIND_COND,
    .size = sizeof(dl_cond_t),
    .calls = NULL,                /* it never holds anything in Redis */
    .held = cond_none,
    .waiting = cond_none,
    .in_use = cond_in_use,
    .woken = cond_woken,
    .recheck = cond_recheck,
};
