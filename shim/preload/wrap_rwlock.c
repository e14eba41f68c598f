/* SPDX-License-Identifier: BSD-3-Clause */
/* wrap_rwlock.c - the rwlock kind: `NAME=rwlock:SYMBOL` maps a global
 * pthread_rwlock_t to the dist_rwlock_t NAME.  pthread_rwlock_rdlock,
 * wrlock and their try, timed and clock variants (on their clock: the
 * library's dist_rwlock_clock*lock), and unlock; the
 * program's own rwlock is taken first and keeps its semantics
 * (lockwrap.c).  Its distributed half, dlp_rwlock_ops, is the file locks'
 * too (wrap_file.c). */
#include <errno.h>
#include <time.h>

#include "preload.h"
#include "rwlock.h"

DLP_OBJ_FITS(dist_rwlock_t);

#define RW_REAL(f, params, args) DLP_REAL_FN(int, f, params, args, NULL, dlp_real_missing, 0)
RW_REAL(pthread_rwlock_rdlock, (pthread_rwlock_t *r), (r))
RW_REAL(pthread_rwlock_tryrdlock, (pthread_rwlock_t *r), (r))
RW_REAL(pthread_rwlock_timedrdlock, (pthread_rwlock_t *r, const struct timespec *t), (r, t))
RW_REAL(pthread_rwlock_clockrdlock, (pthread_rwlock_t *r, clockid_t c, const struct timespec *t),
        (r, c, t))
RW_REAL(pthread_rwlock_wrlock, (pthread_rwlock_t *r), (r))
RW_REAL(pthread_rwlock_trywrlock, (pthread_rwlock_t *r), (r))
RW_REAL(pthread_rwlock_timedwrlock, (pthread_rwlock_t *r, const struct timespec *t), (r, t))
RW_REAL(pthread_rwlock_clockwrlock, (pthread_rwlock_t *r, clockid_t c, const struct timespec *t),
        (r, c, t))
RW_REAL(pthread_rwlock_unlock, (pthread_rwlock_t *r), (r))

static int rw_local(pthread_rwlock_t *rw, char mode, const dlp_how_t *h)
{
    if (mode == 'r') {
        switch (h->how) {
        case DLP_TRY: return DLP_REAL(pthread_rwlock_tryrdlock)(rw);
        case DLP_TIMED:
            return h->clk == DLP_NOCLOCK
                       ? DLP_REAL(pthread_rwlock_timedrdlock)(rw, h->abstime)
                       : DLP_REAL(pthread_rwlock_clockrdlock)(rw, h->clk, h->abstime);
        default: return DLP_REAL(pthread_rwlock_rdlock)(rw);
        }
    }
    switch (h->how) {
    case DLP_TRY: return DLP_REAL(pthread_rwlock_trywrlock)(rw);
    case DLP_TIMED:
        return h->clk == DLP_NOCLOCK ? DLP_REAL(pthread_rwlock_timedwrlock)(rw, h->abstime)
                                     : DLP_REAL(pthread_rwlock_clockwrlock)(rw, h->clk, h->abstime);
    default: return DLP_REAL(pthread_rwlock_wrlock)(rw);
    }
}

static int rw_unlock_real(void *rw)
{
    return DLP_REAL(pthread_rwlock_unlock)(rw);
}

static int __attribute__((noinline)) rw_acquire(dlp_entry_t *e, pthread_rwlock_t *rw, char mode,
                                               dlp_how_t h, const void *caller)
{
    if (dlp_local_only(e, &dlp_kind_rwlock, caller))
        return rw_local(rw, mode, &h);
    int saved = errno;
    int rc = rw_local(rw, mode, &h);
    if (rc)
        return rc;
    int drc = dlp_acquire_dist(e, mode, &h, rw_unlock_real, rw);
    errno = saved;
    return drc;
}

#define RW_WRAP(fn, mode, params, args, ...) \
    DLP_LOCK_WRAP(fn, rw_acquire, rw, mode, params, args, __VA_ARGS__)

RW_WRAP(pthread_rwlock_rdlock, 'r', (pthread_rwlock_t *rw), (rw), DLP_BLOCK, DLP_NOCLOCK, NULL)
RW_WRAP(pthread_rwlock_tryrdlock, 'r', (pthread_rwlock_t *rw), (rw), DLP_TRY, DLP_NOCLOCK, NULL)
RW_WRAP(pthread_rwlock_timedrdlock, 'r', (pthread_rwlock_t *rw, const struct timespec *abstime),
        (rw, abstime), DLP_TIMED, DLP_NOCLOCK, abstime)
RW_WRAP(pthread_rwlock_clockrdlock, 'r',
        (pthread_rwlock_t *rw, clockid_t clk, const struct timespec *abstime), (rw, clk, abstime),
        DLP_TIMED, clk, abstime)
RW_WRAP(pthread_rwlock_wrlock, 'w', (pthread_rwlock_t *rw), (rw), DLP_BLOCK, DLP_NOCLOCK, NULL)
RW_WRAP(pthread_rwlock_trywrlock, 'w', (pthread_rwlock_t *rw), (rw), DLP_TRY, DLP_NOCLOCK, NULL)
RW_WRAP(pthread_rwlock_timedwrlock, 'w', (pthread_rwlock_t *rw, const struct timespec *abstime),
        (rw, abstime), DLP_TIMED, DLP_NOCLOCK, abstime)
RW_WRAP(pthread_rwlock_clockwrlock, 'w',
        (pthread_rwlock_t *rw, clockid_t clk, const struct timespec *abstime), (rw, clk, abstime),
        DLP_TIMED, clk, abstime)

DLP_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
    dlp_entry_t *e = dlp_lookup(rw);
    if (DLP_UNLIKELY(e != NULL))
        return dlp_release_dist(e, &dlp_kind_rwlock, rw_unlock_real, rw);
    return DLP_REAL(pthread_rwlock_unlock)(rw);
}

/* ------------------------------------------------------------ the kind */

static int dist_acquire(dlp_entry_t *e, char mode, int how, clockid_t clk,
                        const struct timespec *abstime)
{
    dist_rwlock_t *rw = DLP_OBJ(e, dist_rwlock_t);
    if (mode == 'r') {
        switch (how) {
        case DLP_TRY: return dist_rwlock_tryrdlock(rw);
        case DLP_TIMED: return dist_rwlock_clockrdlock(rw, clk, abstime);
        default: return dist_rwlock_rdlock(rw);
        }
    }
    switch (how) {
    case DLP_TRY: return dist_rwlock_trywrlock(rw);
    case DLP_TIMED: return dist_rwlock_clockwrlock(rw, clk, abstime);
    default: return dist_rwlock_wrlock(rw);
    }
}

static int dist_acquire_stoppable(dlp_entry_t *e, char mode, const int *stop)
{
    return dl_rwlock_lock_stoppable(DLP_OBJ(e, dist_rwlock_t), mode, stop);
}

static void dist_interrupt(dlp_entry_t *e)
{
    dl_rwlock_interrupt(DLP_OBJ(e, dist_rwlock_t));
}

static int dist_release(dlp_entry_t *e)
{
    return dist_rwlock_unlock(DLP_OBJ(e, dist_rwlock_t));
}

static int init(dlp_entry_t *e)
{
    return dist_rwlock_init(DLP_OBJ(e, dist_rwlock_t), e->name, NULL);
}

const dlp_lockops_t dlp_rwlock_ops = {
    .acquire = dist_acquire,
    .acquire_stoppable = dist_acquire_stoppable,
    .interrupt = dist_interrupt,
    .release = dist_release,
};

const dlp_kind_t dlp_kind_rwlock = {
    .word = "rwlock",
    .target = DLP_BY_SYMBOL,
    .ctype = "pthread_rwlock_t",
    .csize = sizeof(pthread_rwlock_t),
    .calign = _Alignof(pthread_rwlock_t),
    .what = "lock",
    .space = DL_KIND_LOCK,
    .shape = 'r',
    .init = init,
    .lock = &dlp_rwlock_ops,
};
