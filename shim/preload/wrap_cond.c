/* SPDX-License-Identifier: BSD-3-Clause */
/* wrap_cond.c - pthread_cond_wait, timedwait, clockwait, signal,
 * broadcast, init and destroy: the cond kind, and waits on a mapped mutex.
 *
 * `NAME=cond:SYMBOL` maps a global pthread_cond_t to the dist_cond_t
 * NAME: its waits (on a mapped mutex) wait in Redis, its signals wake
 * waiters in every process.  A timed wait waits on its clock with the
 * library's clock calls: clockwait's, and timedwait's the condition's own
 * (CLOCK_REALTIME, or the clock of the attribute the program initialized
 * it with: pthread_condattr_setclock, then pthread_cond_init).  A wait
 * that takes back a robust mapped mutex after its holder died says
 * EOWNERDEAD, as pthread_cond_wait does.  A wait on an unmapped condition with a
 * mapped mutex (the mutex kind's) releases the distributed lock around
 * the real wait.  Everything else goes straight to libc; so do waits and
 * signals in a dormant program. */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "condwait.h"
#include "dl.h"
#include "preload.h"

DLP_OBJ_FITS(dist_cond_t);

DLP_REAL_FN(int, pthread_cond_clockwait,
            (pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, const struct timespec *t),
            (c, m, k, t), NULL, dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_cond_signal, (pthread_cond_t *c), (c), "GLIBC_2.3.2", dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_cond_broadcast, (pthread_cond_t *c), (c), "GLIBC_2.3.2",
            dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_cond_init, (pthread_cond_t *c, const pthread_condattr_t *a), (c, a),
            "GLIBC_2.3.2", dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_cond_destroy, (pthread_cond_t *c), (c), "GLIBC_2.3.2",
            dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_condattr_getclock, (const pthread_condattr_t *a, clockid_t *k), (a, k),
            NULL, dlp_real_missing, 0)

/* Is e's distributed mutex robust (the program hears EOWNERDEAD)? */
static int robust_mutex(dlp_entry_t *e)
{
    return e->kind->lock->robust && e->kind->lock->robust(e);
}

static int real_wait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                     const struct timespec *abstime)
{
    if (!abstime)
        return DLP_REAL(pthread_cond_wait)(c, m);
    return clk == DLP_NOCLOCK ? DLP_REAL(pthread_cond_timedwait)(c, m, abstime)
                              : DLP_REAL(pthread_cond_clockwait)(c, m, clk, abstime);
}

/* ------------------------------------- an unmapped condition, a mapped mutex */

/* glibc retakes the mutex inside pthread_cond_wait without calling
 * pthread_mutex_lock, so the distributed half is handled here: released
 * before the wait (the local mutex is still held, so no thread of this
 * process can slip in), taken back after the real wait has retaken the
 * local mutex, also when the wait timed out, or when the thread is
 * cancelled in the wait (its cleanup handlers then see both held). */
typedef struct cwait {
    dlp_entry_t *e;
    int held;
    int rc;                   /* the retake's: EOWNERDEAD of a robust mutex */
} cwait_t;

static void cond_retake(void *arg)
{
    cwait_t *w = arg;
    if (!w->held)
        return;
    int saved = errno;
    dlp_in = 1;
    w->rc = dlp_dist_acquire(w->e, 'w', DLP_BLOCK, CLOCK_REALTIME, NULL, NULL);
    dlp_in = 0;
    errno = saved;
}

static int __attribute__((noinline)) cond_wait_mapped(dlp_entry_t *e, pthread_cond_t *c,
                                                      pthread_mutex_t *m, clockid_t clk,
                                                      const struct timespec *abstime)
{
    if (e->kind != &dlp_kind_mutex || dlp_in)
        return real_wait(c, m, clk, abstime);
    int saved = errno;
    cwait_t w = { e, 0, 0 };
    dlp_in = 1;
    w.held = dlp_dist_release(e) == 0;
    dlp_in = 0;
    int rc;
    pthread_cleanup_push(cond_retake, &w);
    rc = real_wait(c, m, clk, abstime);
    pthread_cleanup_pop(1);
    errno = saved;
    if ((rc == 0 || rc == ETIMEDOUT) && w.rc == EOWNERDEAD)
        return EOWNERDEAD;
    return rc;
}

/* ------------------------------------------------------ a mapped condition */

/* A wait on a mapped condition: a dist_cond_t's wait, with the program's
 * own mutex released and retaken around it in the order the lock wrappers
 * take the two (local first), so that no thread holds one and waits for
 * the other against another thread (api/condwait.h).  The mutex must be
 * mapped too: waiters and signallers of other processes exclude each
 * other by it; a wait with one that is not stops the program. */
static int __attribute__((noinline)) cond_wait_dist(dlp_entry_t *ec, pthread_mutex_t *m,
                                                    clockid_t clk, const struct timespec *abstime)
{
    dlp_entry_t *em = dlp_lookup(m);
    if (!em || em->kind != &dlp_kind_mutex)
        dlp_stop("condition \"%s\" (DISTLOCK_MAP cond:) is waited on with a pthread mutex that "
                 "is not in the map; map that mutex too (NAME=mutex:SYMBOL): waiters and "
                 "signallers in other processes must exclude each other by it", ec->name);
    int saved = errno;
    int how = abstime ? DLP_TIMED : DLP_BLOCK;
    dist_cond_t *dc = DLP_OBJ(ec, dist_cond_t);
    /* timedwait: the condition's own clock (dist_cond_timedwait's). */
    if (clk == DLP_NOCLOCK)
        clk = (clockid_t)dc->dl_o.dl_type;
    dl_condwait_t cw;
    int quieted = 0, rc;
    dlp_in = 1;
    while ((rc = dl_condwait_begin_on(&cw, dc, DLP_OBJ(em, dist_mutex_t), clk, abstime)) == EIO &&
           (rc = dlp_outage(ec, &quieted, how, clk, abstime)) == 0)
        ;
    dlp_outage_end(ec, quieted, rc == 0);
    if (rc) {                     /* the wait did not start: both still held */
        if (rc == EPERM)
            dl_log(DL_LOG_WARN, "condition \"%s\": waited on by a thread with no distributed "
                   "hold on its mutex \"%s\" (locked before the map applied, or by another "
                   "thread)", ec->name, em->name);
        dlp_in = 0;
        errno = saved;
        return rc;
    }
    DLP_REAL(pthread_mutex_unlock)(m);
    int brc = dl_condwait_block(&cw);
    int lrc = DLP_REAL(pthread_mutex_lock)(m);
    int erc = dl_condwait_end(&cw, brc);
    if (erc == EIO) {
        /* Not held again: taken as a lock call of the program would be. */
        int trc = dlp_dist_acquire(em, 'w', DLP_BLOCK, CLOCK_REALTIME, NULL, NULL);
        dl_condwait_restore(&cw);
        erc = trc == EOWNERDEAD ? trc : brc;
    }
    if (erc == EOWNERDEAD && !robust_mutex(em)) {
        dl_log(DL_LOG_WARN, "lock \"%s\": taken again after a condition wait, after a hold on "
               "it lapsed (its holder crashed or stalled); the protected state may be "
               "half-updated", em->name);
        erc = brc;
    }
    __atomic_store_n(&em->holder_pid, getpid(), __ATOMIC_RELAXED);
    dlp_in = 0;
    errno = saved;
    return lrc ? lrc : erc;
}

/* signal, broadcast's distributed half, the policy applied (never fails
 * but under `abort`). */
static void dist_signal(dlp_entry_t *e, int all)
{
    dist_cond_t *c = DLP_OBJ(e, dist_cond_t);
    int quieted = 0, rc;
    while ((rc = all ? dist_cond_broadcast(c) : dist_cond_signal(c)) == EIO &&
           dlp_outage(e, &quieted, DLP_BLOCK, CLOCK_REALTIME, NULL) == 0)
        ;
    dlp_outage_end(e, quieted, rc == 0);
    if (rc) {
        char buf[700];
        dl_log(DL_LOG_WARN, "%s", dlp_why(e, buf, sizeof buf));
    }
}

/* signal, broadcast: the real call (no thread waits on the local object
 * of a mapped condition, but it costs nothing), then the distributed one,
 * which wakes a waiter of this process without a round trip. */
static int __attribute__((noinline)) cond_wake_dist(dlp_entry_t *e, pthread_cond_t *c, int all)
{
    int rc = all ? DLP_REAL(pthread_cond_broadcast)(c) : DLP_REAL(pthread_cond_signal)(c);
    int saved = errno;
    dlp_in = 1;
    dist_signal(e, all);
    dlp_in = 0;
    errno = saved;
    return rc;
}

/* A condition of the map, and not a call of the interposer's own? */
static inline dlp_entry_t *mapped_cond(const pthread_cond_t *c)
{
    dlp_entry_t *e = dlp_lookup(c);
    return DLP_UNLIKELY(e != NULL) && e->kind == &dlp_kind_cond && !dlp_in ? e : NULL;
}

/* ------------------------------------------------------------ wrappers */

DLP_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
    dlp_entry_t *e = mapped_cond(c);
    if (DLP_UNLIKELY(e != NULL))
        return cond_wake_dist(e, c, 0);
    return DLP_REAL(pthread_cond_signal)(c);
}

DLP_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
    dlp_entry_t *e = mapped_cond(c);
    if (DLP_UNLIKELY(e != NULL))
        return cond_wake_dist(e, c, 1);
    return DLP_REAL(pthread_cond_broadcast)(c);
}

/* A wait: a mapped condition's, an unmapped one's with a mapped mutex, or
 * libc's. */
#define COND_WAIT_WRAP(fn, params, clk, abstime, real_args)                    \
    DLP_EXPORT int fn params                                                  \
    {                                                                         \
        dlp_entry_t *ec = mapped_cond(c);                                     \
        if (DLP_UNLIKELY(ec != NULL))                                         \
            return cond_wait_dist(ec, m, clk, abstime);                       \
        dlp_entry_t *e = dlp_lookup(m);                                       \
        if (DLP_UNLIKELY(e != NULL))                                          \
            return cond_wait_mapped(e, c, m, clk, abstime);                   \
        return DLP_REAL(fn) real_args;                                        \
    }

COND_WAIT_WRAP(pthread_cond_wait, (pthread_cond_t *c, pthread_mutex_t *m), DLP_NOCLOCK, NULL,
               (c, m))
COND_WAIT_WRAP(pthread_cond_timedwait,
               (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime),
               DLP_NOCLOCK, abstime, (c, m, abstime))
COND_WAIT_WRAP(pthread_cond_clockwait,
               (pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                const struct timespec *abstime), clk, abstime, (c, m, clk, abstime))

/* The entry's dist_cond_t made again on clock: the old one ends (EBUSY
 * while a thread of this process waits on it: then it is kept). */
static void remake(dlp_entry_t *e, clockid_t clock, const char *why)
{
    dist_cond_t *dc = DLP_OBJ(e, dist_cond_t);
    if (dist_cond_destroy(dc)) {
        dl_log(DL_LOG_WARN, "condition \"%s\": %s: the distributed condition is kept as it "
               "was: %s", e->name, why, dist_lasterror());
        return;
    }
    dist_condattr_t a;
    dist_condattr_init(&a);
    dist_condattr_setclock(&a, clock);
    int rc = dist_cond_init(dc, e->name, &a);
    dist_condattr_destroy(&a);
    if (rc)                            /* never: the name was good before main */
        dlp_die("condition \"%s\": %s: %s", e->name, why, dist_lasterror());
}

static int __attribute__((noinline)) cond_init_dist(dlp_entry_t *e, pthread_cond_t *c,
                                                   const pthread_condattr_t *attr)
{
    int rc = DLP_REAL(pthread_cond_init)(c, attr);
    if (rc)
        return rc;                    /* a clock libc refuses: its answer */
    clockid_t clock = CLOCK_REALTIME;
    if (attr && DLP_REAL(pthread_condattr_getclock)(attr, &clock))
        clock = CLOCK_REALTIME;
    int saved = errno;
    dlp_in = 1;
    if ((clockid_t)DLP_OBJ(e, dist_cond_t)->dl_o.dl_type != clock)
        remake(e, clock, "pthread_cond_init");
    dlp_in = 0;
    errno = saved;
    return 0;
}

static int __attribute__((noinline)) cond_destroy_dist(dlp_entry_t *e, pthread_cond_t *c)
{
    int rc = DLP_REAL(pthread_cond_destroy)(c);
    if (rc)
        return rc;
    int saved = errno;
    dlp_in = 1;
    remake(e, CLOCK_REALTIME, "pthread_cond_destroy");
    dlp_in = 0;
    errno = saved;
    return 0;
}

DLP_EXPORT int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
    dlp_entry_t *e = mapped_cond(c);
    if (DLP_UNLIKELY(e != NULL))
        return cond_init_dist(e, c, attr);
    return DLP_REAL(pthread_cond_init)(c, attr);
}

DLP_EXPORT int pthread_cond_destroy(pthread_cond_t *c)
{
    dlp_entry_t *e = mapped_cond(c);
    if (DLP_UNLIKELY(e != NULL))
        return cond_destroy_dist(e, c);
    return DLP_REAL(pthread_cond_destroy)(c);
}

/* ------------------------------------------------------------ the kind */

static int init(dlp_entry_t *e)
{
    return dist_cond_init(DLP_OBJ(e, dist_cond_t), e->name, NULL);
}

const dlp_kind_t dlp_kind_cond = {
    .word = "cond",
    .target = DLP_BY_SYMBOL,
    .ctype = "pthread_cond_t",
    .csize = sizeof(pthread_cond_t),
    .calign = _Alignof(pthread_cond_t),
    .what = "condition",
    .space = DL_KIND_COND,
    .init = init,
};
