/* SPDX-License-Identifier: BSD-3-Clause */
/* wrap_barrier.c - the barrier kind: `NAME=barrier:SYMBOL` maps a global
 * pthread_barrier_t to the dist_barrier_t NAME.
 *
 * pthread_barrier_init's count is the number of waiters across every
 * process (as for the program's threads on one host, now its threads on
 * every host): each process inits with the same count, and a generation
 * trips when that many waits were made anywhere.  pthread_barrier_wait
 * returns PTHREAD_BARRIER_SERIAL_THREAD to exactly one waiter of each
 * generation, in whichever process; pthread_barrier_destroy ends the
 * process's use (EBUSY while a thread of the process waits on it).  The
 * program's own barrier is initialized and destroyed too (its checks of
 * count and attribute are libc's), but never waited on: its count is the
 * whole count, which this process alone would never reach.
 *
 * Redis unreachable: DISTLOCK_ON_ERROR (wait: the wait is retried, and the
 * arrival that got no reply is the one the retry continues, counted once;
 * abort).  Redis lost the barrier while a thread waited (ENOLCK: its
 * arrival no longer counts, and whether its generation tripped is
 * unknown): DISTLOCK_ON_LOSS, as for a lock's lost hold (warn: the wait
 * returns 0 and the program goes on; abort; exit:N).  A count that is not
 * the one the other processes use stops the program: its waits would
 * never trip, or trip early.  Everything else goes straight to libc; so
 * do calls in a dormant program, except that its first barrier wait or
 * init stops it, as its first lock does. */
#include <errno.h>

#include "barrier_api.h"
#include "dl.h"
#include "preload.h"

DLP_OBJ_FITS(dist_barrier_t);

#define BAR_REAL(f, params, args) DLP_REAL_FN(int, f, params, args, NULL, dlp_real_missing, 0)
BAR_REAL(pthread_barrier_init,
         (pthread_barrier_t *b, const pthread_barrierattr_t *a, unsigned n), (b, a, n))
BAR_REAL(pthread_barrier_wait, (pthread_barrier_t *b), (b))
BAR_REAL(pthread_barrier_destroy, (pthread_barrier_t *b), (b))

/* A barrier of the map, and not a call of the interposer's own?  A dormant
 * program stops here (its first barrier call). */
static inline dlp_entry_t *mapped_barrier(const pthread_barrier_t *b, const char *call,
                                          const void *caller)
{
    dlp_entry_t *e = dlp_lookup(b);
    if (DLP_LIKELY(e == NULL) || dlp_in)
        return NULL;
    if (e->kind == &dlp_kind_barrier)
        return e;
    if (e->kind == &dlp_kind_dormant)
        dlp_dormant_check("barrier", call, caller);
    return NULL;
}

/* The arrival of a wait found lost (ENOLCK): what DISTLOCK_ON_LOSS says
 * (policy.c); under warn the wait returns as released. */
static int lost(dlp_entry_t *e)
{
    char buf[700];
    dlp_loss_act(dlp_why(e, buf, sizeof buf));
    return 0;
}

static int __attribute__((noinline)) barrier_wait_dist(dlp_entry_t *e)
{
    int saved = errno, quieted = 0, rc;
    dlp_in = 1;
    /* A retry after EIO continues the same arrival (barrier_api.h). */
    while ((rc = dist_barrier_wait(DLP_OBJ(e, dist_barrier_t))) == EIO &&
           dlp_outage(e, &quieted, DLP_BLOCK, CLOCK_REALTIME, NULL) == 0)
        ;
    dlp_outage_end(e, quieted, rc == 0 || rc == DIST_BARRIER_SERIAL_THREAD);
    if (rc == ENOLCK)
        rc = lost(e);
    else if (rc == DIST_BARRIER_SERIAL_THREAD)
        rc = PTHREAD_BARRIER_SERIAL_THREAD;
    else if (rc == EINVAL)
        dl_log(DL_LOG_WARN, "preload: %s", dist_lasterror());
    dlp_in = 0;
    errno = saved;
    return rc;
}

static int __attribute__((noinline)) barrier_init_dist(dlp_entry_t *e, pthread_barrier_t *b,
                                                       const pthread_barrierattr_t *attr,
                                                       unsigned count)
{
    int rc = DLP_REAL(pthread_barrier_init)(b, attr, count);
    if (rc)
        return rc;                    /* count 0, a bad attribute: libc's answer */
    int saved = errno, quieted = 0;
    dlp_in = 1;
    while ((rc = dist_barrier_init(DLP_OBJ(e, dist_barrier_t), e->name, NULL, count)) == EIO &&
           dlp_outage(e, &quieted, DLP_BLOCK, CLOCK_REALTIME, NULL) == 0)
        ;
    dlp_outage_end(e, quieted, rc == 0);
    if (rc == EINVAL) {
        char buf[700];
        dlp_stop("%s (pthread_barrier_init with count %u)", dlp_why(e, buf, sizeof buf), count);
    }
    dlp_in = 0;
    errno = saved;
    if (rc)
        DLP_REAL(pthread_barrier_destroy)(b);
    return rc;
}

static int __attribute__((noinline)) barrier_destroy_dist(dlp_entry_t *e, pthread_barrier_t *b)
{
    int saved = errno;
    dlp_in = 1;
    int rc = dist_barrier_destroy(DLP_OBJ(e, dist_barrier_t));
    dlp_in = 0;
    errno = saved;
    if (rc)
        return rc;                    /* EBUSY: waited on here; EINVAL: not initialized */
    return DLP_REAL(pthread_barrier_destroy)(b);
}

/* ------------------------------------------------------------ wrappers */

DLP_EXPORT int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr,
                                    unsigned count)
{
    dlp_entry_t *e = mapped_barrier(b, "init", __builtin_return_address(0));
    if (DLP_UNLIKELY(e != NULL))
        return barrier_init_dist(e, b, attr, count);
    return DLP_REAL(pthread_barrier_init)(b, attr, count);
}

DLP_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    dlp_entry_t *e = mapped_barrier(b, "wait", __builtin_return_address(0));
    if (DLP_UNLIKELY(e != NULL))
        return barrier_wait_dist(e);
    return DLP_REAL(pthread_barrier_wait)(b);
}

DLP_EXPORT int pthread_barrier_destroy(pthread_barrier_t *b)
{
    dlp_entry_t *e = mapped_barrier(b, "destroy", __builtin_return_address(0));
    if (DLP_UNLIKELY(e != NULL))
        return barrier_destroy_dist(e, b);
    return DLP_REAL(pthread_barrier_destroy)(b);
}

/* ------------------------------------------------------------ the kind */

/* Before main: redlock:// cannot keep a barrier (barrier_api.h); the
 * object itself is made by the program's pthread_barrier_init, which has
 * the count. */
static int check(dlp_entry_t *e)
{
    (void)e;
    return dl_barrier_check_mode();
}

const dlp_kind_t dlp_kind_barrier = {
    .word = "barrier",
    .target = DLP_BY_SYMBOL,
    .ctype = "pthread_barrier_t",
    .csize = sizeof(pthread_barrier_t),
    .calign = _Alignof(pthread_barrier_t),
    .what = "barrier",
    .space = DL_KIND_BARRIER,
    .init = check,
};
