/* SPDX-License-Identifier: BSD-3-Clause */
/* once.c - the once primitive (once.h).
 *
 * dist_once asks Redis whether the routine completed (once_check.lua);
 * if not, it takes the running state (take.c: the lock's acquire.lua on
 * the once's keys, waiting in the queue if another process runs it), asks
 * again (it may have completed while this one waited), runs the routine
 * with the hold renewed by the watchdog, keeps the completion
 * (once_done.lua) and releases the hold (release.lua), which grants it to
 * a process still queued: that one finds it complete and releases it in
 * turn.  A runner that dies leaves the hold to lapse: the next process in
 * the queue gets it (the grant says its holder died) and runs the routine
 * again, which must therefore tolerate a run cut short.
 *
 * Only the routine's own failure has no code (as pthread_once): a routine
 * that returns has completed.  A thread cancelled inside the routine gives
 * the running state back (cancelled), and another caller runs it, as
 * pthread_once does.  A routine that calls dist_once on its own once gets
 * EDEADLK, where pthread_once would deadlock.
 *
 * Here o is the once's core (&ob->core).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "call_acquire.h"
#include "call_cancel.h"
#include "call_mark.h"
#include "call_once_check.h"
#include "call_once_done.h"
#include "call_release.h"
#include "call_renew.h"
#include "call_renew_many.h"
#include "call_touch.h"
#include "call_withdraw.h"
#include "distlock.h"
#include "dl.h"
#include "hold.h"
#include "once.h"
#include "take.h"

static const char *qname(dl_once_t *ob, char *buf, size_t size)
{
    return dl_core_qname(&ob->core, buf, size);
}

/* o->mu held: it completed. */
static void complete(dl_once_t *ob)
{
    __atomic_store_n(&ob->done, 1, __ATOMIC_RELEASE);
    dl_core_wake(&ob->core);
}

/* Has it completed?  1 yes, 0 no, -1 EIO (worded).  o->mu not held. */
static int ask_done(dl_proc_t *p, dl_once_t *ob)
{
    char q[96];
    dl_caller_t who = dl_caller(p, &ob->core);
    dl_call_t c;
    dl_call_once_check(&c, &who);
    DL_TALLY_ADD(&ob->core, roundtrips, 1);
    if (dl_script_run(p->conn, &c, 1) || DL_REPLY(&c, once_check).done < 0) {
        dl_fail(EIO, "once %s: %s", qname(ob, q, sizeof q),
                c.cmd.err ? c.cmd.errmsg : "unexpected reply from Redis");
        return -1;
    }
    return DL_REPLY(&c, once_check).done;
}

/* o->mu held: the running state goes back to Redis (released, so that the
 * next process in the queue is granted it).  Its failure is the hold's
 * (logged by hold.c: it lapses within a lease). */
static void give_back(dl_proc_t *p, dl_once_t *ob)
{
    if (ob->core.hold.rmode) {
        char kept[DL_ERRMAX];
        snprintf(kept, sizeof kept, "%s", dist_lasterror());
        dl_hold_release(p, &ob->core, 0);
        dl_seterr("%s", kept);
    }
}

/* Takes the running state, waiting in Redis's queue while another process
 * holds it.  0 taken (*dead: its holder before died), EAGAIN: the
 * completion was pushed meanwhile (look again), EIO, ENOMEM (worded).  o->mu not
 * held. */
static int take_running(dl_proc_t *p, dl_once_t *ob, int *dead)
{
    dl_core_t *o = &ob->core;
    dl_req_t rq = { .mode = 'w', .deadline = DL_FOREVER, .stop = &ob->stop };
    dl_grant_t g;
    pthread_mutex_lock(&o->mu);
    __atomic_store_n(&ob->stop, 0, __ATOMIC_RELEASE);
    int rc = dl_hold_reserve(o);
    if (rc) {                     /* ENOMEM (worded), nothing sent */
        pthread_mutex_unlock(&o->mu);
        *dead = 0;
        return rc;
    }
    pthread_mutex_unlock(&o->mu);
    rc = dl_take(p, o, &rq, &g);
    pthread_mutex_lock(&o->mu);
    if (rc != 0 && rc != EOWNERDEAD && g.maybe)
        dl_hold_undo_later(p, o, 'w', g.rid);
    dl_hold_unreserve(o);
    if (rc == 0 || rc == EOWNERDEAD) {
        dl_hold_record(p, o, &rq, &g);
        dl_hold_watch(p, o, g.posted);
    }
    dl_hold_done(o);
    dl_core_wake(o);
    pthread_mutex_unlock(&o->mu);
    *dead = rc == EOWNERDEAD;
    if (rc == 0 || rc == EOWNERDEAD)
        return 0;
    if (rc == ETIMEDOUT)          /* (its only deadline: the stop flag) */
        return EAGAIN;
    return rc;                    /* EIO, worded by take.c */
}

/* What a thread cancelled in the routine leaves (pthread_cleanup_push):
 * the running state goes back, and this thread no longer counts as in the
 * call; another caller runs the routine. */
typedef struct cancel_ctx {
    dl_proc_t *p;
    dl_once_t *ob;
} cancel_ctx_t;

static void cancelled(void *arg)
{
    cancel_ctx_t *x = arg;
    dl_once_t *ob = x->ob;
    char q[96];
    pthread_mutex_lock(&ob->core.mu);
    dl_log(DL_LOG_INFO, "once %s: the thread running its routine was cancelled; another caller "
           "runs it", qname(ob, q, sizeof q));
    ob->runner = 0;
    give_back(x->p, ob);
    ob->active = 0;
    ob->inside--;
    dl_core_wake(&ob->core);
    pthread_mutex_unlock(&ob->core.mu);
}

/* Keeps the completion in Redis.  The reply of once_done.lua (1, 2, 3 kept
 * or completed already; 0 another process runs it now), or -1 EIO
 * (worded). */
static int keep_done(dl_proc_t *p, dl_once_t *ob)
{
    dl_core_t *o = &ob->core;
    char q[96], info[200];
    size_t infolen = dl_proc_info(p, info, sizeof info);
    dl_caller_t who = dl_caller(p, o);
    pthread_mutex_lock(&o->mu);
    dl_once_done_args_t a = { .fence = o->hold.fence, .rid = o->hold.rid, .info = info,
                              .infolen = infolen };
    pthread_mutex_unlock(&o->mu);
    dl_call_t c;
    dl_call_once_done(&c, &who, &a);
    DL_TALLY_ADD(o, roundtrips, 1);
    if (dl_script_run(p->conn, &c, 1) || DL_REPLY(&c, once_done).result < 0) {
        dl_fail(EIO, "once %s: the routine completed here, but Redis could not be told (%s); "
                "another process may run it again", qname(ob, q, sizeof q),
                c.cmd.err ? c.cmd.errmsg : "unexpected reply");
        return -1;
    }
    return DL_REPLY(&c, once_done).result;
}

/* This thread holds the running state: runs the routine and keeps its
 * completion.  0, EAGAIN (this process's hold lapsed meanwhile and
 * another process runs it now: wait for that one), EIO. */
static int run(dl_proc_t *p, dl_once_t *ob, void (*routine)(void), int dead)
{
    dl_core_t *o = &ob->core;
    char q[96];
    if (dead) {
        DL_STAT_ADD(once_takeovers, 1);
        dl_log(DL_LOG_INFO, "once %s: the process that was running its routine died (its "
               "running state lapsed) before completing it; running it again here",
               qname(ob, q, sizeof q));
    }
    DL_STAT_ADD(once_runs, 1);
    cancel_ctx_t x = { p, ob };
    pthread_mutex_lock(&o->mu);
    ob->runner = dl_tid();
    pthread_mutex_unlock(&o->mu);
    pthread_cleanup_push(cancelled, &x);
    routine();
    pthread_cleanup_pop(0);
    pthread_mutex_lock(&o->mu);
    ob->runner = 0;
    pthread_mutex_unlock(&o->mu);

    int kept = keep_done(p, ob);
    pthread_mutex_lock(&o->mu);
    int rc = 0;
    if (kept == 0) {
        dl_log(DL_LOG_WARN, "once %s: this process's running state lapsed while its routine "
               "ran (it stalled past its lease, or Redis lost it), and another process runs the "
               "routine again now; waiting for that one to complete", qname(ob, q, sizeof q));
        rc = EAGAIN;
    } else {
        /* It ran here: this process knows it complete, whatever Redis
         * could be told (EIO: worded by keep_done). */
        if (kept < 0)
            rc = EIO;
        complete(ob);
    }
    give_back(p, ob);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

/* The calling thread is the process's active one: until it completed,
 * here or elsewhere. */
static int attempt(dl_proc_t *p, dl_once_t *ob, void (*routine)(void))
{
    dl_core_t *o = &ob->core;
    for (;;) {
        int d = ask_done(p, ob);
        if (d < 0)
            return EIO;
        if (d == 0) {
            int dead = 0;
            int rc = take_running(p, ob, &dead);
            if (rc == EAGAIN)
                continue;
            if (rc)
                return rc;
            /* It may have completed while we waited for the hold. */
            if ((d = ask_done(p, ob)) == 0) {
                rc = run(p, ob, routine, dead);
                if (rc == EAGAIN)
                    continue;
                return rc;
            }
            pthread_mutex_lock(&o->mu);
            give_back(p, ob);
            pthread_mutex_unlock(&o->mu);
            if (d < 0)
                return EIO;
        }
        pthread_mutex_lock(&o->mu);
        complete(ob);
        pthread_mutex_unlock(&o->mu);
        return 0;
    }
}

int dl_once_run(dl_proc_t *p, dl_once_t *ob, void (*routine)(void))
{
    dl_core_t *o = &ob->core;
    char q[96];
    if (__atomic_load_n(&ob->done, __ATOMIC_ACQUIRE))
        return 0;
    pid_t me = dl_tid();
    int rc = 0;
    pthread_mutex_lock(&o->mu);
    ob->inside++;
    for (;;) {
        if (__atomic_load_n(&ob->done, __ATOMIC_ACQUIRE))
            goto out;
        if (ob->runner == me) {
            rc = dl_fail(EDEADLK, "once %s: its routine called dist_once on it (it would wait "
                         "for itself)", qname(ob, q, sizeof q));
            goto out;
        }
        if (!ob->active)
            break;
        /* Another thread of the process asks Redis, waits there or runs
         * the routine: wait for it here (the completion, or its giving up,
         * broadcasts). */
        dl_core_wait(o, dl_now_ms() + 1000);
    }
    ob->active = me;
    pthread_mutex_unlock(&o->mu);
    rc = attempt(p, ob, routine);
    pthread_mutex_lock(&o->mu);
    ob->active = 0;
    dl_core_wake(o);
out:
    ob->inside--;
    pthread_mutex_unlock(&o->mu);
    return rc;
}

/* --- the once's kind: what the registry, the core and the subscriber ask --- */

/* Its running state is a lock's write hold: taken, renewed and released
 * by the lock's scripts on the once's keys.  It never lingers and is
 * never taken with others. */
static const dl_hold_calls_t once_calls = {
    .acquire = dl_call_acquire,
    .cancel = dl_call_cancel,
    .withdraw = dl_call_withdraw,
    .renew = dl_call_renew,
    .touch = dl_call_touch,
    .release = dl_call_release,
    .mark = dl_call_mark,
    .acquire_all = NULL,
    .renew_many = dl_call_renew_many,
};

/* The routine runs: the hold is in use. */
static int once_held(const dl_core_t *o)
{
    return dl_once_of((dl_core_t *)o)->runner != 0;
}

/* Nobody waits for the hold itself in the process (its other threads wait
 * for the completion, not to run it). */
static int once_waiting(const dl_core_t *o)
{
    (void)o;
    return 0;
}

static int once_in_use(const dl_core_t *o)
{
    const dl_once_t *ob = dl_once_of((dl_core_t *)o);
    return ob->inside || ob->active;
}

/* A push: another process kept the completion (o->mu held): the thread
 * waiting for the running state stops waiting, and looks. */
static void once_woken(dl_core_t *o, uint64_t regid)
{
    (void)regid;
    __atomic_store_n(&dl_once_of(o)->stop, 1, __ATOMIC_RELEASE);
    dl_core_wake(o);
}

const dl_kind_t dl_once_kind = {
    .id = DL_KIND_ONCE,
    .size = sizeof(dl_once_t),
    .calls = &once_calls,
    .fini = NULL,
    .held = once_held,
    .waiting = once_waiting,
    .in_use = once_in_use,
    .woken = once_woken,
    .recheck = NULL,              /* the core's waiter asks again (take.c) */
};
