/* SPDX-License-Identifier: BSD-3-Clause */
/* barrier.c - the pthread_barrier_* mirror (distlock.h: dist_barrier_*), on
 * the barrier primitive (prim/barrier.h).  The object is a lock object
 * (api/object.c: its name, who initialized it) with its count. */
#include <errno.h>
#include <string.h>

#include "barrier.h"              /* prim/: the barrier primitive */
#include "barrier_api.h"
#include "distlock.h"
#include "dl.h"
#include "object.h"
#include "process.h"

#define DL_MAGIC_BARRIERATTR 0x44534241u   /* "DSBA" */

int dist_barrierattr_init(dist_barrierattr_t *attr)
{
    if (!attr)
        return dl_fail(EINVAL, "attribute object is NULL");
    attr->dl_magic = DL_MAGIC_BARRIERATTR;
    return 0;
}

static int attr_ok(const dist_barrierattr_t *attr)
{
    if (!attr || attr->dl_magic != DL_MAGIC_BARRIERATTR)
        return dl_fail(EINVAL, "attribute object is NULL or not initialized");
    return 0;
}

int dist_barrierattr_destroy(dist_barrierattr_t *attr)
{
    if (attr_ok(attr))
        return EINVAL;
    attr->dl_magic = 0;
    return 0;
}

/* The object's own checks, worded for a barrier (object.c checks again).
 * There is no static initializer: an object is a barrier once init made
 * it one. */
static int valid(const dist_barrier_t *b)
{
    if (!b)
        return dl_fail(EINVAL, "barrier is NULL");
    if (b->dl_o.dl_magic == DL_MAGIC_DEAD)
        return dl_fail(EINVAL, "barrier was destroyed");
    if (b->dl_o.dl_magic != DL_MAGIC_BARRIER || b->dl_count == 0)
        return dl_fail(EINVAL, "barrier is not initialized");
    return 0;
}

/* redlock://'s independent servers keep no common order of arrivals: they
 * could each see another arrival complete a generation (two serials), and
 * a timed wait's withdrawal that reaches some servers before the last
 * arrival and others after it would release the others on a majority's
 * word while the withdrawn caller returned ETIMEDOUT.  So barriers refuse
 * it, at init and at first use. */
static int mode_ok(dl_proc_t *p)
{
    if (dl_conn_caps(p->conn).quorum)
        return dl_fail(EINVAL, "barriers are not supported with redlock:// (independent "
                       "servers keep no common order of arrivals: they could disagree on which "
                       "arrival completes a generation, or release one without a withdrawn "
                       "arrival that another majority still counted)");
    return 0;
}

int dl_barrier_check_mode(void)
{
    int err = 0;
    dl_proc_t *p = dl_proc_get(&err);
    if (!p)
        return err;
    return mode_ok(p) ? EINVAL : 0;
}

static int resolve(dist_barrier_t *b, dl_proc_t **pp, dl_barrier_t **bp)
{
    if (valid(b))
        return EINVAL;
    dl_core_t *c = NULL;
    int rc = dl_obj_resolve_kind(&b->dl_o, DL_MAGIC_BARRIER, &dl_barrier_kind, pp, &c);
    if (rc)
        return rc;
    if ((rc = mode_ok(*pp)))
        return rc;
    *bp = dl_barrier_of(c);
    return 0;
}

int dist_barrier_init(dist_barrier_t *b, const char *name, const dist_barrierattr_t *attr,
                      unsigned count)
{
    if (attr && attr_ok(attr))
        return EINVAL;
    if (!b)
        return dl_fail(EINVAL, "barrier is NULL");
    if (count == 0)
        return dl_fail(EINVAL, "barrier count is 0 (it must be at least 1)");
    int err = 0;
    dl_proc_t *p = dl_proc_get(&err);
    if (!p)
        return err;
    if (mode_ok(p))
        return EINVAL;
    int rc = dl_obj_init(&b->dl_o, DL_MAGIC_BARRIER, name);
    if (rc)
        return rc;
    b->dl_count = count;
    dl_barrier_t *bar;
    if ((rc = resolve(b, &p, &bar)) == 0)
        rc = dl_barrier_open(p, bar, count);
    if (rc) {
        /* Not made: the object is as before init (uninitialized). */
        char kept[DL_ERRMAX];
        memcpy(kept, dist_lasterror(), sizeof kept);
        kept[sizeof kept - 1] = 0;
        dl_obj_destroy(&b->dl_o, DL_MAGIC_BARRIER);
        b->dl_o.dl_magic = 0;
        b->dl_count = 0;
        dl_seterr("%s", kept);
    }
    return rc;
}

static int wait_for(dist_barrier_t *b, const struct timespec *abstime, const int *stop,
                    uint64_t *gen)
{
    uint64_t deadline;
    if (abstime && dl_deadline_from_abstime(abstime, &deadline))
        return dl_fail(EINVAL, "abstime is NULL or its tv_nsec is outside [0, 1e9)");
    dl_proc_t *p;
    dl_barrier_t *bar;
    int rc = resolve(b, &p, &bar);
    if (rc)
        return rc;
    dl_barrier_req_t rq = { b->dl_count, abstime, stop, gen };
    return dl_barrier_wait(p, bar, &rq);
}

int dist_barrier_wait(dist_barrier_t *b)
{
    return wait_for(b, NULL, NULL, NULL);
}

int dist_barrier_timedwait(dist_barrier_t *b, const struct timespec *abstime)
{
    if (!abstime)
        return dl_fail(EINVAL, "abstime is NULL or its tv_nsec is outside [0, 1e9)");
    return wait_for(b, abstime, NULL, NULL);
}

int dl_barrier_wait_stoppable(dist_barrier_t *b, const struct timespec *abstime, const int *stop)
{
    return wait_for(b, abstime, stop, NULL);
}

int dl_barrier_wait_gen(dist_barrier_t *b, const struct timespec *abstime, uint64_t *gen)
{
    if (gen)
        *gen = 0;
    return wait_for(b, abstime, NULL, gen);
}

void dl_barrier_interrupt(dist_barrier_t *b)
{
    dl_proc_t *p;
    dl_barrier_t *bar;
    if (resolve(b, &p, &bar) == 0)
        dl_barrier_wake(bar);
}

int dist_barrier_destroy(dist_barrier_t *b)
{
    if (valid(b))
        return EINVAL;
    int rc = dl_obj_destroy(&b->dl_o, DL_MAGIC_BARRIER);
    if (rc == EBUSY)
        return dl_fail(EBUSY, "barrier is waited on in this process");
    if (rc == 0)
        b->dl_count = 0;
    return rc;
}
