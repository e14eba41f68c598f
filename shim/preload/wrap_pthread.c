/* SPDX-License-Identifier: BSD-3-Clause */
/* wrap_pthread.c - pthread_mutex_*, pthread_cond_* and pthread_rwlock_*
 * wrappers.
 *
 * A mapped pthread object stays the local lock and keeps its own semantics
 * (type, robustness, errorcheck answers): the real function is called
 * first, and only when it succeeds is the distributed lock of the entry
 * taken.  Unlocks go the other way round: the real unlock first (it decides
 * whether the caller may unlock), then the distributed release, which a
 * thread of this process already waiting on the local lock may receive
 * without a round trip.  A mapped condition (cond:SYMBOL) is a
 * dist_cond_t: its waits (on a mapped mutex) wait in Redis, its signals
 * wake waiters in every process.  Everything else goes straight to libc.  In a
 * dormant program (none of the map's symbols) every lookup gives the
 * DLP_DORMANT entry, and the first lock call stops the program; unlocks
 * and waits pass to libc. */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "condwait.h"
#include "dl.h"
#include "preload.h"


/* How the local lock is asked for: DLP_BLOCK, DLP_TRY, or DLP_TIMED with
 * an abstime on clk (-1: the function's own CLOCK_REALTIME variant). */
typedef struct how {
    int how;
    clockid_t clk;
    const struct timespec *abstime;
} how_t;

#define NOCLOCK ((clockid_t)-1)

/* The abstime of another clock, moved to CLOCK_REALTIME (which the
 * distributed calls take). */
static const struct timespec *realtime_of(const how_t *h, struct timespec *out)
{
    if (h->how != DLP_TIMED || h->clk == NOCLOCK || h->clk == CLOCK_REALTIME)
        return h->abstime;
    struct timespec now_c, now_r;
    clock_gettime(h->clk, &now_c);
    clock_gettime(CLOCK_REALTIME, &now_r);
    int64_t left = ((int64_t)h->abstime->tv_sec - now_c.tv_sec) * 1000000000LL +
                   (h->abstime->tv_nsec - now_c.tv_nsec);
    if (left < 0)
        left = 0;
    int64_t ns = (int64_t)now_r.tv_nsec + left % 1000000000LL;
    out->tv_sec = now_r.tv_sec + (time_t)(left / 1000000000LL) + (time_t)(ns / 1000000000LL);
    out->tv_nsec = (long)(ns % 1000000000LL);
    return out;
}

/* A release found no distributed hold of this thread.  After fork (the
 * child of a holder unlocking what it inherited) or for a lock taken before
 * the map applied that is expected; another thread of the holding process
 * unlocking is a legacy bug the distributed lock cannot follow. */
static void unheld(const dlp_entry_t *e)
{
    if (__atomic_load_n(&e->holder_pid, __ATOMIC_RELAXED) != getpid()) {
        dl_log(DL_LOG_DEBUG, "preload: unlock of \"%s\" inherited across fork: nothing to release",
               e->name);
        return;
    }
    dl_log(DL_LOG_WARN, "unlock of \"%s\" by a thread with no distributed hold on it (locked by "
           "another thread, before the map applied, or before fork): nothing released in Redis",
           e->name);
}

/* ------------------------------------------------- mutexes and rwlocks */

/* Does a lock call on e go to libc alone?  Yes when e is no lock of this
 * kind, or when the interposer itself is calling; a dormant program stops
 * here at its first lock instead (dlp_dormant_check). */
static int local_only(const dlp_entry_t *e, int kind, const char *what, const void *caller)
{
    if (e->kind == kind && !dlp_in)
        return 0;
    if (e->kind == DLP_DORMANT && !dlp_in)
        dlp_dormant_check(what, caller);
    return 1;
}

/* The distributed half of an acquisition whose local lock the caller now
 * holds; if it fails, the local lock is given back with unlock(obj).  0 or
 * the error of dlp_dist_acquire. */
static int acquire_dist(dlp_entry_t *e, char mode, const how_t *h, int (*unlock)(void *),
                        void *obj)
{
    struct timespec rt;
    const struct timespec *abstime = realtime_of(h, &rt);
    dlp_in = 1;
    int drc = dlp_dist_acquire(e, mode, h->how, abstime, NULL);
    if (drc)
        unlock(obj);
    else
        __atomic_store_n(&e->holder_pid, getpid(), __ATOMIC_RELAXED);
    dlp_in = 0;
    return drc;
}

/* An unlock of a mapped object: the real unlock(obj) first (it decides
 * whether the caller may unlock), then the distributed release. */
static int __attribute__((noinline)) release(dlp_entry_t *e, int kind, int (*unlock)(void *),
                                            void *obj)
{
    if (e->kind != kind || dlp_in)
        return unlock(obj);
    int saved = errno;
    int rc = unlock(obj);
    if (rc)
        return rc;
    dlp_in = 1;
    if (dlp_dist_release(e) == EPERM)
        unheld(e);
    dlp_in = 0;
    errno = saved;
    return 0;
}

/* An exported lock call: a mapped object goes to acquire(e, obj, mode, how,
 * the caller's address), anything else straight to the real function. */
#define LOCK_WRAP(fn, real, acquire, obj, mode, params, args, ...)              \
    DLP_EXPORT int fn params                                                    \
    {                                                                           \
        dlp_entry_t *e = dlp_lookup(obj);                                       \
        if (DLP_UNLIKELY(e != NULL))                                            \
            return acquire(e, obj, mode, (how_t){ __VA_ARGS__ },                \
                           __builtin_return_address(0));                        \
        return DLP_REAL(real) args;                                             \
    }

/* ---------------------------------------------------------------- mutex */

static int mutex_local(pthread_mutex_t *m, const how_t *h)
{
    switch (h->how) {
    case DLP_TRY: return DLP_REAL(mutex_trylock)(m);
    case DLP_TIMED:
        return h->clk == NOCLOCK ? DLP_REAL(mutex_timedlock)(m, h->abstime)
                                 : DLP_REAL(mutex_clocklock)(m, h->clk, h->abstime);
    default: return DLP_REAL(mutex_lock)(m);
    }
}

static int mutex_unlock_real(void *m)
{
    return DLP_REAL(mutex_unlock)(m);
}

static int __attribute__((noinline)) mutex_acquire(dlp_entry_t *e, pthread_mutex_t *m, char mode,
                                                  how_t h, const void *caller)
{
    if (local_only(e, DLP_MUTEX, "mutex", caller))
        return mutex_local(m, &h);
    int saved = errno;
    int rc = mutex_local(m, &h);
    if (rc != 0 && rc != EOWNERDEAD)      /* EOWNERDEAD: a robust mutex, now ours */
        return rc;
    int drc = acquire_dist(e, mode, &h, mutex_unlock_real, m);
    errno = saved;
    return drc ? drc : rc;
}

LOCK_WRAP(pthread_mutex_lock, mutex_lock, mutex_acquire, m, 'w', (pthread_mutex_t *m), (m),
          DLP_BLOCK, NOCLOCK, NULL)
LOCK_WRAP(pthread_mutex_trylock, mutex_trylock, mutex_acquire, m, 'w', (pthread_mutex_t *m), (m),
          DLP_TRY, NOCLOCK, NULL)
LOCK_WRAP(pthread_mutex_timedlock, mutex_timedlock, mutex_acquire, m, 'w',
          (pthread_mutex_t *m, const struct timespec *abstime), (m, abstime),
          DLP_TIMED, NOCLOCK, abstime)
LOCK_WRAP(pthread_mutex_clocklock, mutex_clocklock, mutex_acquire, m, 'w',
          (pthread_mutex_t *m, clockid_t clk, const struct timespec *abstime), (m, clk, abstime),
          DLP_TIMED, clk, abstime)

DLP_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    dlp_entry_t *e = dlp_lookup(m);
    if (DLP_UNLIKELY(e != NULL))
        return release(e, DLP_MUTEX, mutex_unlock_real, m);
    return DLP_REAL(mutex_unlock)(m);
}

/* -------------------------------------------------------------- condvar */

/* glibc retakes the mutex inside pthread_cond_wait without calling
 * pthread_mutex_lock, so the distributed half is handled here: released
 * before the wait (the local mutex is still held, so no thread of this
 * process can slip in), taken back after the real wait has retaken the
 * local mutex, also when the wait timed out, or when the thread is
 * cancelled in the wait (its cleanup handlers then see both held). */
typedef struct cwait {
    dlp_entry_t *e;
    int held;
} cwait_t;

static void cond_retake(void *arg)
{
    cwait_t *w = arg;
    if (!w->held)
        return;
    int saved = errno;
    dlp_in = 1;
    dlp_dist_acquire(w->e, 'w', DLP_BLOCK, NULL, NULL);
    dlp_in = 0;
    errno = saved;
}

static int __attribute__((noinline)) cond_wait_mapped(dlp_entry_t *e, pthread_cond_t *c,
                                                      pthread_mutex_t *m, clockid_t clk,
                                                      const struct timespec *abstime)
{
    if (e->kind != DLP_MUTEX || dlp_in) {
        if (!abstime)
            return DLP_REAL(cond_wait)(c, m);
        return clk == NOCLOCK ? DLP_REAL(cond_timedwait)(c, m, abstime)
                              : DLP_REAL(cond_clockwait)(c, m, clk, abstime);
    }
    int saved = errno;
    cwait_t w = { e, 0 };
    dlp_in = 1;
    w.held = dlp_dist_release(e) == 0;
    dlp_in = 0;
    int rc;
    pthread_cleanup_push(cond_retake, &w);
    if (!abstime)
        rc = DLP_REAL(cond_wait)(c, m);
    else if (clk == NOCLOCK)
        rc = DLP_REAL(cond_timedwait)(c, m, abstime);
    else
        rc = DLP_REAL(cond_clockwait)(c, m, clk, abstime);
    pthread_cleanup_pop(1);
    errno = saved;
    return rc;
}

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
    if (!em || em->kind != DLP_MUTEX)
        dlp_stop("condition \"%s\" (DISTLOCK_MAP cond:) is waited on with a pthread mutex that "
                 "is not in the map; map that mutex too (NAME=mutex:SYMBOL): waiters and "
                 "signallers in other processes must exclude each other by it", ec->name);
    int saved = errno;
    how_t h = { abstime ? DLP_TIMED : DLP_BLOCK, clk, abstime };
    struct timespec rt;
    const struct timespec *at = realtime_of(&h, &rt);
    dl_condwait_t cw;
    int quieted = 0, rc;
    dlp_in = 1;
    while ((rc = dl_condwait_begin(&cw, &ec->d.c, &em->d.m, at)) == EIO &&
           (rc = dlp_outage(ec, &quieted, h.how, at)) == 0)
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
    DLP_REAL(mutex_unlock)(m);
    int brc = dl_condwait_block(&cw);
    int lrc = DLP_REAL(mutex_lock)(m);
    int erc = dl_condwait_end(&cw, brc);
    if (erc == EIO) {
        /* Not held again: taken as a lock call of the program would be. */
        dlp_dist_acquire(em, 'w', DLP_BLOCK, NULL, NULL);
        dl_condwait_restore(&cw);
        erc = brc;
    }
    if (erc == EOWNERDEAD) {
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

/* signal, broadcast: the real call (no thread waits on the local object
 * of a mapped condition, but it costs nothing), then the distributed one,
 * which wakes a waiter of this process without a round trip. */
static int __attribute__((noinline)) cond_wake_dist(dlp_entry_t *e, pthread_cond_t *c, int all)
{
    int rc = all ? DLP_REAL(cond_broadcast)(c) : DLP_REAL(cond_signal)(c);
    int saved = errno;
    dlp_in = 1;
    dlp_dist_signal(e, all);
    dlp_in = 0;
    errno = saved;
    return rc;
}

/* A condition of the map, and not a call of the interposer's own? */
static inline dlp_entry_t *mapped_cond(const pthread_cond_t *c)
{
    dlp_entry_t *e = dlp_lookup(c);
    return DLP_UNLIKELY(e != NULL) && e->kind == DLP_COND && !dlp_in ? e : NULL;
}

DLP_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
    dlp_entry_t *e = mapped_cond(c);
    if (DLP_UNLIKELY(e != NULL))
        return cond_wake_dist(e, c, 0);
    return DLP_REAL(cond_signal)(c);
}

DLP_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
    dlp_entry_t *e = mapped_cond(c);
    if (DLP_UNLIKELY(e != NULL))
        return cond_wake_dist(e, c, 1);
    return DLP_REAL(cond_broadcast)(c);
}

DLP_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    dlp_entry_t *ec = mapped_cond(c);
    if (DLP_UNLIKELY(ec != NULL))
        return cond_wait_dist(ec, m, NOCLOCK, NULL);
    dlp_entry_t *e = dlp_lookup(m);
    if (DLP_UNLIKELY(e != NULL))
        return cond_wait_mapped(e, c, m, NOCLOCK, NULL);
    return DLP_REAL(cond_wait)(c, m);
}

DLP_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
    dlp_entry_t *ec = mapped_cond(c);
    if (DLP_UNLIKELY(ec != NULL))
        return cond_wait_dist(ec, m, NOCLOCK, abstime);
    dlp_entry_t *e = dlp_lookup(m);
    if (DLP_UNLIKELY(e != NULL))
        return cond_wait_mapped(e, c, m, NOCLOCK, abstime);
    return DLP_REAL(cond_timedwait)(c, m, abstime);
}

DLP_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                                      const struct timespec *abstime)
{
    dlp_entry_t *ec = mapped_cond(c);
    if (DLP_UNLIKELY(ec != NULL))
        return cond_wait_dist(ec, m, clk, abstime);
    dlp_entry_t *e = dlp_lookup(m);
    if (DLP_UNLIKELY(e != NULL))
        return cond_wait_mapped(e, c, m, clk, abstime);
    return DLP_REAL(cond_clockwait)(c, m, clk, abstime);
}

/* --------------------------------------------------------------- rwlock */

static int rw_local(pthread_rwlock_t *rw, char mode, const how_t *h)
{
    if (mode == 'r') {
        switch (h->how) {
        case DLP_TRY: return DLP_REAL(rw_tryrdlock)(rw);
        case DLP_TIMED:
            return h->clk == NOCLOCK ? DLP_REAL(rw_timedrdlock)(rw, h->abstime)
                                     : DLP_REAL(rw_clockrdlock)(rw, h->clk, h->abstime);
        default: return DLP_REAL(rw_rdlock)(rw);
        }
    }
    switch (h->how) {
    case DLP_TRY: return DLP_REAL(rw_trywrlock)(rw);
    case DLP_TIMED:
        return h->clk == NOCLOCK ? DLP_REAL(rw_timedwrlock)(rw, h->abstime)
                                 : DLP_REAL(rw_clockwrlock)(rw, h->clk, h->abstime);
    default: return DLP_REAL(rw_wrlock)(rw);
    }
}

static int rw_unlock_real(void *rw)
{
    return DLP_REAL(rw_unlock)(rw);
}

static int __attribute__((noinline)) rw_acquire(dlp_entry_t *e, pthread_rwlock_t *rw, char mode,
                                               how_t h, const void *caller)
{
    if (local_only(e, DLP_RWLOCK, "rwlock", caller))
        return rw_local(rw, mode, &h);
    int saved = errno;
    int rc = rw_local(rw, mode, &h);
    if (rc)
        return rc;
    int drc = acquire_dist(e, mode, &h, rw_unlock_real, rw);
    errno = saved;
    return drc;
}

#define RW_WRAP(fn, real, mode, params, args, ...) \
    LOCK_WRAP(fn, real, rw_acquire, rw, mode, params, args, __VA_ARGS__)

RW_WRAP(pthread_rwlock_rdlock, rw_rdlock, 'r', (pthread_rwlock_t *rw), (rw),
        DLP_BLOCK, NOCLOCK, NULL)
RW_WRAP(pthread_rwlock_tryrdlock, rw_tryrdlock, 'r', (pthread_rwlock_t *rw), (rw),
        DLP_TRY, NOCLOCK, NULL)
RW_WRAP(pthread_rwlock_timedrdlock, rw_timedrdlock, 'r',
        (pthread_rwlock_t *rw, const struct timespec *abstime), (rw, abstime),
        DLP_TIMED, NOCLOCK, abstime)
RW_WRAP(pthread_rwlock_clockrdlock, rw_clockrdlock, 'r',
        (pthread_rwlock_t *rw, clockid_t clk, const struct timespec *abstime), (rw, clk, abstime),
        DLP_TIMED, clk, abstime)
RW_WRAP(pthread_rwlock_wrlock, rw_wrlock, 'w', (pthread_rwlock_t *rw), (rw),
        DLP_BLOCK, NOCLOCK, NULL)
RW_WRAP(pthread_rwlock_trywrlock, rw_trywrlock, 'w', (pthread_rwlock_t *rw), (rw),
        DLP_TRY, NOCLOCK, NULL)
RW_WRAP(pthread_rwlock_timedwrlock, rw_timedwrlock, 'w',
        (pthread_rwlock_t *rw, const struct timespec *abstime), (rw, abstime),
        DLP_TIMED, NOCLOCK, abstime)
RW_WRAP(pthread_rwlock_clockwrlock, rw_clockwrlock, 'w',
        (pthread_rwlock_t *rw, clockid_t clk, const struct timespec *abstime), (rw, clk, abstime),
        DLP_TIMED, clk, abstime)

DLP_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
    dlp_entry_t *e = dlp_lookup(rw);
    if (DLP_UNLIKELY(e != NULL))
        return release(e, DLP_RWLOCK, rw_unlock_real, rw);
    return DLP_REAL(rw_unlock)(rw);
}
