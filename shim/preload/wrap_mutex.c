/* SPDX-License-Identifier: BSD-3-Clause */
/* wrap_mutex.c - the mutex kind: `NAME=mutex:SYMBOL` maps a global
 * pthread_mutex_t to the dist_mutex_t NAME.  pthread_mutex_lock, trylock,
 * timedlock, clocklock and unlock; the program's own mutex is taken first
 * and keeps its semantics (lockwrap.c).  pthread_cond_* waits on a mapped
 * mutex are wrap_cond.c's. */
#include <errno.h>
#include <time.h>

#include "preload.h"

DLP_OBJ_FITS(dist_mutex_t);

DLP_REAL_FN(int, pthread_mutex_timedlock, (pthread_mutex_t *m, const struct timespec *t), (m, t),
            NULL, dlp_real_missing, 0)
DLP_REAL_FN(int, pthread_mutex_clocklock,
            (pthread_mutex_t *m, clockid_t c, const struct timespec *t), (m, c, t),
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

/* ------------------------------------------------------------ the kind */

static int dist_acquire(dlp_entry_t *e, char mode, int how, const struct timespec *abstime)
{
    dist_mutex_t *m = DLP_OBJ(e, dist_mutex_t);
    switch (how) {
    case DLP_TRY: return dist_mutex_trylock(m);
    case DLP_TIMED: return dist_mutex_timedlock(m, abstime);
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
