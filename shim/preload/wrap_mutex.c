/* SPDX-License-Identifier: BSD-3-Clause */
/* wrap_mutex.c - the mutex kind: `NAME=mutex:SYMBOL` maps a global
 * pthread_mutex_t to the dist_mutex_t NAME.  pthread_mutex_lock, trylock,
 * timedlock, clocklock (on its clock: dist_mutex_clocklock) and unlock;
 * the program's own mutex is taken first and keeps its semantics
 * (lockwrap.c).  pthread_cond_* waits on a mapped mutex are wrap_cond.c's.
 *
 * Robust mutexes: a mapped mutex that the program initializes with a
 * robust attribute (pthread_mutexattr_setrobust, then pthread_mutex_init)
 * is made a DIST_MUTEX_ROBUST lock of its name: a lock call after its
 * holder's process died gets EOWNERDEAD, pthread_mutex_consistent marks
 * the state repaired (dist_mutex_consistent), and an unlock without it
 * leaves the lock unrecoverable: ENOTRECOVERABLE for every later lock
 * call in every process, until a process that was told so destroys the
 * mutex (pthread_mutex_destroy) and initializes it again.  Any other
 * mapped mutex keeps the library's default (EOWNERDEAD taken as acquired,
 * with a warning: the program never asked to hear it). */
#include <errno.h>
#include <time.h>

#include "dl.h"
#include "preload.h"

DLP_OBJ_FITS(dist_mutex_t);

DLP_REAL_FN(int, pthread_mutex_timedlock, (pthread_mutex_t *m, const struct timespec *t), (m, t),
            NULL, dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_mutex_clocklock,
            (pthread_mutex_t *m, clockid_t c, const struct timespec *t), (m, c, t),
            NULL, dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_mutex_init, (pthread_mutex_t *m, const pthread_mutexattr_t *a), (m, a),
            NULL, dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_mutex_destroy, (pthread_mutex_t *m), (m), NULL, dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_mutex_consistent, (pthread_mutex_t *m), (m), NULL, dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_mutexattr_getrobust, (const pthread_mutexattr_t *a, int *r), (a, r),
            NULL, dlp_real_missing, 0)

static int mutex_local(pthread_mutex_t *m, const dlp_how_t *h)
{
    switch (h->how) {
    case DLP_TRY: return DLP_REAL(pthread_mutex_trylock)(m);
    case DLP_TIMED:
        return h->clk == DLP_NOCLOCK ? DLP_REAL(pthread_mutex_timedlock)(m, h->abstime)
                                     : DLP_REAL(pthread_mutex_clocklock)(m, h->clk, h->abstime);
    default: return DLP_REAL(pthread_mutex_lock)(m);
    }
}

static int mutex_unlock_real(void *m)
{
    return DLP_REAL(pthread_mutex_unlock)(m);
}

static int __attribute__((noinline)) mutex_acquire(dlp_entry_t *e, pthread_mutex_t *m, char mode,
                                                  dlp_how_t h, const void *caller)
{
    if (dlp_local_only(e, &dlp_kind_mutex, caller))
        return mutex_local(m, &h);
    int saved = errno;
    int rc = mutex_local(m, &h);
    if (rc != 0 && rc != EOWNERDEAD)      /* EOWNERDEAD: a robust mutex, now ours */
        return rc;
    int drc = dlp_acquire_dist(e, mode, &h, mutex_unlock_real, m);
    errno = saved;
    return drc ? drc : rc;
}

DLP_LOCK_WRAP(pthread_mutex_lock, mutex_acquire, m, 'w', (pthread_mutex_t *m), (m),
              DLP_BLOCK, DLP_NOCLOCK, NULL)
DLP_LOCK_WRAP(pthread_mutex_trylock, mutex_acquire, m, 'w', (pthread_mutex_t *m), (m),
              DLP_TRY, DLP_NOCLOCK, NULL)
DLP_LOCK_WRAP(pthread_mutex_timedlock, mutex_acquire, m, 'w',
              (pthread_mutex_t *m, const struct timespec *abstime), (m, abstime),
              DLP_TIMED, DLP_NOCLOCK, abstime)
DLP_LOCK_WRAP(pthread_mutex_clocklock, mutex_acquire, m, 'w',
              (pthread_mutex_t *m, clockid_t clk, const struct timespec *abstime),
              (m, clk, abstime), DLP_TIMED, clk, abstime)

DLP_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    dlp_entry_t *e = dlp_lookup(m);
    if (DLP_UNLIKELY(e != NULL))
        return dlp_release_dist(e, &dlp_kind_mutex, mutex_unlock_real, m);
    return DLP_REAL(pthread_mutex_unlock)(m);
}

/* ------------------------------------ init, destroy, robust consistency */

static int robust_of(dlp_entry_t *e)
{
    return DLP_OBJ(e, dist_mutex_t)->dl_o.dl_robust == DIST_MUTEX_ROBUST;
}

/* The entry's dist_mutex_t made again, robust or not: the old one ends
 * (dist_mutex_destroy: EBUSY while a thread of this process holds or
 * waits for it, then it is kept; an unrecoverable state this process was
 * told of is cleared in Redis), and a new one of the same name begins. */
static int remake(dlp_entry_t *e, int robust, const char *why)
{
    dist_mutex_t *dm = DLP_OBJ(e, dist_mutex_t);
    int quieted = 0, rc;
    while ((rc = dist_mutex_destroy(dm)) == EIO &&
           dlp_outage(e, &quieted, DLP_BLOCK, CLOCK_REALTIME, NULL) == 0)
        ;
    dlp_outage_end(e, quieted, rc == 0);
    if (rc) {
        dl_log(DL_LOG_WARN, "lock \"%s\": %s: the distributed lock is kept as it was: %s", e->name,
               why, dist_lasterror());
        return rc;
    }
    dist_mutexattr_t a;
    dist_mutexattr_init(&a);
    dist_mutexattr_setrobust(&a, robust ? DIST_MUTEX_ROBUST : DIST_MUTEX_LENIENT);
    rc = dist_mutex_init(dm, e->name, &a);
    dist_mutexattr_destroy(&a);
    if (rc)                            /* never: the name was good before main */
        dlp_die("lock \"%s\": %s: %s", e->name, why, dist_lasterror());
    return 0;
}

static int __attribute__((noinline)) mutex_init_dist(dlp_entry_t *e, pthread_mutex_t *m,
                                                    const pthread_mutexattr_t *attr)
{
    int rc = DLP_REAL(pthread_mutex_init)(m, attr);
    if (rc)
        return rc;
    int robust = 0, saved = errno;
    if (attr && DLP_REAL(pthread_mutexattr_getrobust)(attr, &robust))
        robust = 0;
    dlp_in = 1;
    if ((robust == PTHREAD_MUTEX_ROBUST) != robust_of(e))
        remake(e, robust == PTHREAD_MUTEX_ROBUST, "pthread_mutex_init");
    dlp_in = 0;
    errno = saved;
    return 0;
}

static int __attribute__((noinline)) mutex_destroy_dist(dlp_entry_t *e, pthread_mutex_t *m)
{
    int rc = DLP_REAL(pthread_mutex_destroy)(m);
    if (rc)
        return rc;                    /* EBUSY: locked here */
    int saved = errno;
    dlp_in = 1;
    /* A new object at once: later calls find a lock (the library's
     * default, until an init says robust), and a name this process was
     * told is unrecoverable is usable again. */
    remake(e, 0, "pthread_mutex_destroy");
    dlp_in = 0;
    errno = saved;
    return 0;
}

/* A robust mapped mutex: both halves made consistent; 0 if either was
 * owed it (the local one when a thread of this process died holding it,
 * the distributed one when another process's holder did). */
static int __attribute__((noinline)) mutex_consistent_dist(dlp_entry_t *e, pthread_mutex_t *m)
{
    int rl = DLP_REAL(pthread_mutex_consistent)(m);
    if (!robust_of(e))
        return rl;
    int saved = errno;
    dlp_in = 1;
    int rd = dist_mutex_consistent(DLP_OBJ(e, dist_mutex_t));
    dlp_in = 0;
    errno = saved;
    return rd == 0 || rl == 0 ? 0 : rd;
}

/* A mutex of the map, and not a call of the interposer's own? */
static inline dlp_entry_t *mapped_mutex(const pthread_mutex_t *m)
{
    dlp_entry_t *e = dlp_lookup(m);
    return DLP_UNLIKELY(e != NULL) && e->kind == &dlp_kind_mutex && !dlp_in ? e : NULL;
}

DLP_EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
    dlp_entry_t *e = mapped_mutex(m);
    if (DLP_UNLIKELY(e != NULL))
        return mutex_init_dist(e, m, attr);
    return DLP_REAL(pthread_mutex_init)(m, attr);
}

DLP_EXPORT int pthread_mutex_destroy(pthread_mutex_t *m)
{
    dlp_entry_t *e = mapped_mutex(m);
    if (DLP_UNLIKELY(e != NULL))
        return mutex_destroy_dist(e, m);
    return DLP_REAL(pthread_mutex_destroy)(m);
}

DLP_EXPORT int pthread_mutex_consistent(pthread_mutex_t *m)
{
    dlp_entry_t *e = mapped_mutex(m);
    if (DLP_UNLIKELY(e != NULL))
        return mutex_consistent_dist(e, m);
    return DLP_REAL(pthread_mutex_consistent)(m);
}

/* ------------------------------------------------------------ the kind */

static int dist_acquire(dlp_entry_t *e, char mode, int how, clockid_t clk,
                        const struct timespec *abstime)
{
    (void)mode;
    dist_mutex_t *m = DLP_OBJ(e, dist_mutex_t);
    switch (how) {
    case DLP_TRY: return dist_mutex_trylock(m);
    case DLP_TIMED: return dist_mutex_clocklock(m, clk, abstime);
    default: return dist_mutex_lock(m);
    }
}

static int dist_release(dlp_entry_t *e)
{
    return dist_mutex_unlock(DLP_OBJ(e, dist_mutex_t));
}

static int init(dlp_entry_t *e)
{
    return dist_mutex_init(DLP_OBJ(e, dist_mutex_t), e->name, NULL);
}

static const dlp_lockops_t ops = {
    .acquire = dist_acquire,
    .release = dist_release,
    .robust = robust_of,
};

const dlp_kind_t dlp_kind_mutex = {
    .word = "mutex",
    .target = DLP_BY_SYMBOL,
    .ctype = "pthread_mutex_t",
    .csize = sizeof(pthread_mutex_t),
    .calign = _Alignof(pthread_mutex_t),
    .what = "lock",
    .space = DL_KIND_LOCK,
    .shape = 'm',
    .init = init,
    .lock = &ops,
};
