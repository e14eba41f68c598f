/* SPDX-License-Identifier: BSD-3-Clause */
/* lockwrap.c - what the pthread lock kinds' wrappers share (lockwrap.h).
 *
 * A mapped pthread object stays the local lock and keeps its own semantics
 * (type, robustness, errorcheck answers): the real function is called
 * first, and only when it succeeds is the distributed lock of the entry
 * taken.  Unlocks go the other way round: the real unlock first (it decides
 * whether the caller may unlock), then the distributed release, which a
 * thread of this process already waiting on the local lock may receive
 * without a round trip. */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "dl.h"
#include "preload.h"

const struct timespec *dlp_realtime_of(const dlp_how_t *h, struct timespec *out)
{
    if (h->how != DLP_TIMED || h->clk == DLP_NOCLOCK || h->clk == CLOCK_REALTIME)
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

int dlp_local_only(const dlp_entry_t *e, const dlp_kind_t *kind, const void *caller)
{
    if (e->kind == kind && !dlp_in)
        return 0;
    if (e->kind == &dlp_kind_dormant && !dlp_in)
        dlp_dormant_check(kind->word, "lock", caller);
    return 1;
}

int dlp_acquire_dist(dlp_entry_t *e, char mode, const dlp_how_t *h, int (*unlock)(void *),
                     void *obj)
{
    struct timespec rt;
    const struct timespec *abstime = dlp_realtime_of(h, &rt);
    dlp_in = 1;
    int drc = dlp_dist_acquire(e, mode, h->how, abstime, NULL);
    if (drc)
        unlock(obj);
    else
        __atomic_store_n(&e->holder_pid, getpid(), __ATOMIC_RELAXED);
    dlp_in = 0;
    return drc;
}

int dlp_release_dist(dlp_entry_t *e, const dlp_kind_t *kind, int (*unlock)(void *), void *obj)
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
