/* SPDX-License-Identifier: BSD-3-Clause */
/* mutex.c - the pthread_mutex_* mirror: a write-only use of lock.c. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "distlock.h"
#include "dl.h"
#include "lock.h"
#include "lockall.h"
#include "mutex.h"
#include "object.h"

#define DL_MAGIC_MUTEXATTR 0x44534d41u   /* "DSMA" */

int dist_mutexattr_init(dist_mutexattr_t *attr)
{
    if (!attr)
        return dl_fail(EINVAL, "attribute object is NULL");
    attr->dl_magic = DL_MAGIC_MUTEXATTR;
    attr->dl_type = DIST_MUTEX_RECURSIVE;
    attr->dl_fair = 0;
    attr->dl_lease_ms = 0;
    attr->dl_robust = DIST_MUTEX_LENIENT;
    return 0;
}

static int attr_ok(const dist_mutexattr_t *attr)
{
    if (!attr || attr->dl_magic != DL_MAGIC_MUTEXATTR)
        return dl_fail(EINVAL, "attribute object is NULL or not initialized");
    return 0;
}

int dist_mutexattr_destroy(dist_mutexattr_t *attr)
{
    if (attr_ok(attr))
        return EINVAL;
    attr->dl_magic = 0;
    return 0;
}

int dist_mutexattr_settype(dist_mutexattr_t *attr, int type)
{
    if (attr_ok(attr))
        return EINVAL;
    if (type != DIST_MUTEX_RECURSIVE && type != DIST_MUTEX_ERRORCHECK)
        return dl_fail(EINVAL, "mutex type %d: expected DIST_MUTEX_RECURSIVE or DIST_MUTEX_ERRORCHECK", type);
    attr->dl_type = type;
    return 0;
}

int dist_mutexattr_setfair(dist_mutexattr_t *attr, int fair)
{
    if (attr_ok(attr))
        return EINVAL;
    if (fair != 0 && fair != 1)
        return dl_fail(EINVAL, "fair %d: expected 0 or 1", fair);
    attr->dl_fair = fair;
    return 0;
}

int dist_mutexattr_setlease(dist_mutexattr_t *attr, unsigned long ms)
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

int dist_mutexattr_setrobust(dist_mutexattr_t *attr, int robust)
{
    if (attr_ok(attr))
        return EINVAL;
    if (robust != DIST_MUTEX_LENIENT && robust != DIST_MUTEX_ROBUST)
        return dl_fail(EINVAL, "robust %d: expected DIST_MUTEX_LENIENT or DIST_MUTEX_ROBUST",
                       robust);
    attr->dl_robust = robust;
    return 0;
}

int dist_mutexattr_getrobust(const dist_mutexattr_t *attr, int *robust)
{
    if (attr_ok(attr))
        return EINVAL;
    if (!robust)
        return dl_fail(EINVAL, "robust is NULL");
    *robust = attr->dl_robust;
    return 0;
}

int dist_mutexattr_gettype(const dist_mutexattr_t *attr, int *type)
{
    if (attr_ok(attr))
        return EINVAL;
    if (!type)
        return dl_fail(EINVAL, "type is NULL");
    *type = attr->dl_type;
    return 0;
}

int dist_mutex_init(dist_mutex_t *m, const char *name, const dist_mutexattr_t *attr)
{
    if (attr && attr_ok(attr))
        return EINVAL;
    if (!m)
        return dl_fail(EINVAL, "mutex is NULL");
    if (attr && attr->dl_fair) {
        /* A fair mutex is a FIFO queue in Redis; redlock's independent
         * servers keep no common queue. */
        int err = 0;
        dl_proc_t *p = dl_proc_get(&err);
        if (!p)
            return err;
        if (!dl_conn_caps(p->conn).queue)
            return dl_fail(EINVAL, "fair mutexes are not supported with redlock:// "
                           "(independent servers keep no common queue)");
    }
    int rc = dl_obj_init(&m->dl_o, DL_MAGIC_MUTEX, name);
    if (rc == 0 && attr) {
        m->dl_o.dl_type = attr->dl_type;
        m->dl_o.dl_fair = attr->dl_fair;
        m->dl_o.dl_lease_ms = attr->dl_lease_ms;
        m->dl_o.dl_robust = attr->dl_robust;
    }
    return rc;
}

static int acquire(dist_mutex_t *m, int try_only, uint64_t deadline)
{
    dl_proc_t *p;
    dl_lock_t *l;
    int rc = dl_obj_resolve(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX, &p, &l);
    if (rc)
        return rc;
    dl_req_t rq = { 'w', m->dl_o.dl_type == DIST_MUTEX_ERRORCHECK, m->dl_o.dl_fair,
                    m->dl_o.dl_lease_ms, try_only, deadline, NULL,
                    m->dl_o.dl_robust == DIST_MUTEX_ROBUST, NULL };
    rc = dl_lock_acquire(p, l, &rq);
    /* As pthread_mutex_trylock: a try is never told EDEADLK, only that the
     * lock cannot be taken now (the owner's relock of an errorcheck
     * mutex); dist_lasterror still says why. */
    return try_only && rc == EDEADLK ? EBUSY : dl_refused_rc(rc);
}

int dist_mutex_lock(dist_mutex_t *m)
{
    return acquire(m, 0, DL_FOREVER);
}

int dist_mutex_trylock(dist_mutex_t *m)
{
    return acquire(m, 1, 0);
}

int dist_mutex_clocklock(dist_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
    if (!dl_clock_ok(clock))
        return dl_fail(EINVAL, "clock %d: expected CLOCK_REALTIME or CLOCK_MONOTONIC", (int)clock);
    for (;;) {
        uint64_t deadline;
        if (dl_deadline_on(clock, abstime, &deadline))
            return dl_fail(EINVAL, "abstime is NULL or its tv_nsec is outside [0, 1e9)");
        int rc = acquire(m, 0, deadline);
        /* Never ETIMEDOUT before abstime on its clock, even if the wall
         * clock was set back (or the host suspended) while we waited. */
        if (rc != ETIMEDOUT || dl_passed_on(clock, abstime))
            return rc;
    }
}

int dist_mutex_timedlock(dist_mutex_t *m, const struct timespec *abstime)
{
    return dist_mutex_clocklock(m, CLOCK_REALTIME, abstime);
}

/* dist_mutex_*lockall: each object resolved and its request made as a
 * lock call would, then lockall.c takes them all or none. */
static int lockall(dist_mutex_t *const ms[], size_t n, int try_only, uint64_t deadline)
{
    if (!ms)
        return dl_fail(EINVAL, "lock-all: the array of mutexes is NULL");
    if (n == 0)
        return dl_fail(EINVAL, "lock-all: no mutexes (n is 0)");
    if (n > INT_MAX)
        return dl_fail(EINVAL, "lock-all: %zu mutexes: more than INT_MAX", n);
    dl_all_req_t *v = malloc(n * sizeof *v);
    if (!v)
        return dl_fail(ENOMEM, "out of memory");
    dl_proc_t *p = NULL;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        dist_mutex_t *m = ms[i];
        if (!m) {
            rc = dl_fail(EINVAL, "lock-all: ms[%zu] is NULL", i);
            break;
        }
        if ((rc = dl_obj_resolve(&m->dl_o, DL_MAGIC_MUTEX, &p, &v[i].l))) {
            char why[DL_ERRMAX];
            snprintf(why, sizeof why, "%s", dist_lasterror());
            dl_seterr("lock-all: ms[%zu]: %s", i, why);
            break;
        }
        v[i].rq = (dl_req_t){ 'w', m->dl_o.dl_type == DIST_MUTEX_ERRORCHECK, m->dl_o.dl_fair,
                              m->dl_o.dl_lease_ms, try_only, deadline, NULL,
                              m->dl_o.dl_robust == DIST_MUTEX_ROBUST, NULL };
        v[i].at = i;
    }
    if (!rc)
        rc = dl_refused_rc(dl_lock_all(p, v, n));
    free(v);
    return rc;
}

int dist_mutex_lockall(dist_mutex_t *const ms[], size_t n)
{
    return lockall(ms, n, 0, DL_FOREVER);
}

int dist_mutex_trylockall(dist_mutex_t *const ms[], size_t n)
{
    return lockall(ms, n, 1, 0);
}

int dist_mutex_timedlockall(dist_mutex_t *const ms[], size_t n, const struct timespec *abstime)
{
    for (;;) {
        uint64_t deadline;
        if (dl_deadline_from_abstime(abstime, &deadline))
            return dl_fail(EINVAL, "abstime is NULL or its tv_nsec is outside [0, 1e9)");
        int rc = lockall(ms, n, 0, deadline);
        /* Never ETIMEDOUT before abstime on CLOCK_REALTIME (see
         * dist_mutex_timedlock). */
        if (rc != ETIMEDOUT || dl_abstime_passed(abstime))
            return rc;
    }
}

int dist_mutex_unlock(dist_mutex_t *m)
{
    dl_proc_t *p;
    dl_lock_t *l;
    int rc = dl_obj_resolve(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX, &p, &l);
    return rc ? rc : dl_refused_rc(dl_lock_release(p, l, 1));
}

int dist_mutex_consistent(dist_mutex_t *m)
{
    dl_proc_t *p;
    dl_lock_t *l;
    int rc = dl_obj_resolve(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX, &p, &l);
    return rc ? rc : dl_lock_consistent(l);
}

int dist_mutex_destroy(dist_mutex_t *m)
{
    return dl_obj_destroy(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX);
}

int dist_mutex_getfence(dist_mutex_t *m, uint64_t *fence)
{
    return dl_obj_getfence(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX, fence);
}

int dist_mutex_getlease(dist_mutex_t *m, unsigned long *ms_left)
{
    return dl_obj_getlease(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX, ms_left);
}

int dl_mutex_hold_lost(dist_mutex_t *m)
{
    return dl_obj_hold_lost(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX);
}
