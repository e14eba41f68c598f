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
    dlp_in = 1;
    int drc = dlp_dist_acquire(e, mode, h->how, dlp_clock_of(h), h->abstime, NULL);
    if (drc && drc != EOWNERDEAD)
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
