/* SPDX-License-Identifier: BSD-3-Clause */
/* rwlock.c - the pthread_rwlock_* mirror over lock.c. */
#include <errno.h>

#include "distlock.h"
#include "dl.h"
#include "lock.h"
#include "rwlock.h"
#include "take.h"
#include "object.h"

#define DL_MAGIC_RWLOCKATTR 0x44535241u   /* "DSRA" */

int dist_rwlockattr_init(dist_rwlockattr_t *attr)
{
    if (!attr)
        return dl_fail(EINVAL, "attribute object is NULL");
    attr->dl_magic = DL_MAGIC_RWLOCKATTR;
    attr->dl_lease_ms = 0;
    return 0;
}

static int attr_ok(const dist_rwlockattr_t *attr)
{
    if (!attr || attr->dl_magic != DL_MAGIC_RWLOCKATTR)
        return dl_fail(EINVAL, "attribute object is NULL or not initialized");
    return 0;
}

int dist_rwlockattr_destroy(dist_rwlockattr_t *attr)
{
    if (attr_ok(attr))
        return EINVAL;
    attr->dl_magic = 0;
    return 0;
}

int dist_rwlockattr_setlease(dist_rwlockattr_t *attr, unsigned long ms)
{
    if (attr_ok(attr))
        return EINVAL;
    if (ms > DL_LEASE_MAX)
        return dl_fail(EINVAL, "lease %lu ms: longer than 30 days", ms);
    if (ms && ms < DL_LEASE_MIN)
        return dl_fail(EINVAL, "lease %lu ms: shorter than %lu ms, it would run out before "
                       "Redis's answer could be trusted", ms, DL_LEASE_MIN);
    attr->dl_lease_ms = ms;
    return 0;
}

int dist_rwlock_init(dist_rwlock_t *rw, const char *name, const dist_rwlockattr_t *attr)
{
    if (attr && attr_ok(attr))
        return EINVAL;
    if (!rw)
        return dl_fail(EINVAL, "rwlock is NULL");
    int rc = dl_obj_init(&rw->dl_o, DL_MAGIC_RWLOCK, name);
    if (rc == 0 && attr)
        rw->dl_o.dl_lease_ms = attr->dl_lease_ms;
    return rc;
}

static int acquire_stop(dist_rwlock_t *rw, char mode, int try_only, uint64_t deadline,
                        const int *stop)
{
    dl_proc_t *p;
    dl_lock_t *l;
    int rc = dl_obj_resolve(rw ? &rw->dl_o : NULL, DL_MAGIC_RWLOCK, &p, &l);
    if (rc)
        return rc;
    dl_req_t rq = { mode, 0, 0, rw->dl_o.dl_lease_ms, try_only, deadline, stop, 0, NULL };
    rc = dl_lock_acquire(p, l, &rq);
    /* As pthread_rwlock_trywrlock: a try is never told EDEADLK, only that
     * the lock cannot be taken now (a reader's write request); the
     * blocking and timed calls keep EDEADLK, and dist_lasterror says why. */
    return try_only && rc == EDEADLK ? EBUSY : dl_refused_rc(rc);
}

static int acquire(dist_rwlock_t *rw, char mode, int try_only, uint64_t deadline)
{
    return acquire_stop(rw, mode, try_only, deadline, NULL);
}

int dl_rwlock_lock_stoppable(dist_rwlock_t *rw, char mode, const int *stop)
{
    int rc = acquire_stop(rw, mode, 0, DL_FOREVER, stop);
    return rc == ETIMEDOUT ? EINTR : rc;
}

void dl_rwlock_interrupt(dist_rwlock_t *rw)
{
    dl_proc_t *p;
    dl_lock_t *l;
    if (dl_obj_resolve(rw ? &rw->dl_o : NULL, DL_MAGIC_RWLOCK, &p, &l) == 0)
        dl_take_interrupt(&l->core);
}

static int timed(dist_rwlock_t *rw, char mode, clockid_t clock, const struct timespec *abstime)
{
    if (!dl_clock_ok(clock))
        return dl_fail(EINVAL, "clock %d: expected CLOCK_REALTIME or CLOCK_MONOTONIC", (int)clock);
    for (;;) {
        uint64_t deadline;
        if (dl_deadline_on(clock, abstime, &deadline))
            return dl_fail(EINVAL, "abstime is NULL or its tv_nsec is outside [0, 1e9)");
        int rc = acquire(rw, mode, 0, deadline);
        /* Never ETIMEDOUT before abstime on its clock, even if the wall
         * clock was set back (or the host suspended) while we waited. */
        if (rc != ETIMEDOUT || dl_passed_on(clock, abstime))
            return rc;
    }
}

int dist_rwlock_rdlock(dist_rwlock_t *rw) { return acquire(rw, 'r', 0, DL_FOREVER); }
int dist_rwlock_tryrdlock(dist_rwlock_t *rw) { return acquire(rw, 'r', 1, 0); }
int dist_rwlock_timedrdlock(dist_rwlock_t *rw, const struct timespec *abstime) { return timed(rw, 'r', CLOCK_REALTIME, abstime); }
int dist_rwlock_wrlock(dist_rwlock_t *rw) { return acquire(rw, 'w', 0, DL_FOREVER); }
int dist_rwlock_trywrlock(dist_rwlock_t *rw) { return acquire(rw, 'w', 1, 0); }
int dist_rwlock_timedwrlock(dist_rwlock_t *rw, const struct timespec *abstime) { return timed(rw, 'w', CLOCK_REALTIME, abstime); }

int dist_rwlock_clockrdlock(dist_rwlock_t *rw, clockid_t clock, const struct timespec *abstime)
{
    return timed(rw, 'r', clock, abstime);
}

int dist_rwlock_clockwrlock(dist_rwlock_t *rw, clockid_t clock, const struct timespec *abstime)
{
    return timed(rw, 'w', clock, abstime);
}

int dist_rwlock_unlock(dist_rwlock_t *rw)
{
    dl_proc_t *p;
    dl_lock_t *l;
    int rc = dl_obj_resolve(rw ? &rw->dl_o : NULL, DL_MAGIC_RWLOCK, &p, &l);
    return rc ? rc : dl_refused_rc(dl_lock_release(p, l, 0));
}

int dist_rwlock_destroy(dist_rwlock_t *rw)
{
    return dl_obj_destroy(rw ? &rw->dl_o : NULL, DL_MAGIC_RWLOCK);
}

int dist_rwlock_getfence(dist_rwlock_t *rw, uint64_t *fence)
{
    return dl_obj_getfence(rw ? &rw->dl_o : NULL, DL_MAGIC_RWLOCK, fence);
}

int dist_rwlock_getlease(dist_rwlock_t *rw, unsigned long *ms_left)
{
    return dl_obj_getlease(rw ? &rw->dl_o : NULL, DL_MAGIC_RWLOCK, ms_left);
}

int dl_rwlock_hold_lost(dist_rwlock_t *rw)
{
    return dl_obj_hold_lost(rw ? &rw->dl_o : NULL, DL_MAGIC_RWLOCK);
}
