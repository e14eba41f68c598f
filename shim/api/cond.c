/* SPDX-License-Identifier: BSD-3-Clause */
/* cond.c - the pthread_cond_* mirror: a wait is the condition's
 * registration (prim/cond.c), the release of the caller's holds on its
 * mutex, the wait itself, and the mutex taken again with its count
 * (prim/lock.c). */
#include <errno.h>
#include <stdio.h>

#include "distlock.h"
#include "dl.h"
#include "lock.h"
#include "object.h"
#include "cond.h"               /* prim/: the condition primitive */
#include "condwait.h"

#define DL_MAGIC_CONDATTR 0x44534341u   /* "DSCA" */

int dist_condattr_init(dist_condattr_t *attr)
{
    if (!attr)
        return dl_fail(EINVAL, "attribute object is NULL");
    attr->dl_magic = DL_MAGIC_CONDATTR;
    attr->dl_clock = CLOCK_REALTIME;
    return 0;
}

static int attr_ok(const dist_condattr_t *attr)
{
    if (!attr || attr->dl_magic != DL_MAGIC_CONDATTR)
        return dl_fail(EINVAL, "attribute object is NULL or not initialized");
    return 0;
}

int dist_condattr_destroy(dist_condattr_t *attr)
{
    if (attr_ok(attr))
        return EINVAL;
    attr->dl_magic = 0;
    return 0;
}

int dist_condattr_setclock(dist_condattr_t *attr, clockid_t clock)
{
    if (attr_ok(attr))
        return EINVAL;
    if (!dl_clock_ok(clock))
        return dl_fail(EINVAL, "clock %d: expected CLOCK_REALTIME or CLOCK_MONOTONIC", (int)clock);
    attr->dl_clock = (int)clock;
    return 0;
}

int dist_condattr_getclock(const dist_condattr_t *attr, clockid_t *clock)
{
    if (attr_ok(attr))
        return EINVAL;
    if (!clock)
        return dl_fail(EINVAL, "clock is NULL");
    *clock = (clockid_t)attr->dl_clock;
    return 0;
}

/* A condition keeps the clock of its timed waits in its object's dl_type
 * (a lock's type; 0, CLOCK_REALTIME, in DIST_COND_INITIALIZER). */
int dist_cond_init(dist_cond_t *c, const char *name, const dist_condattr_t *attr)
{
    if (attr && attr_ok(attr))
        return EINVAL;
    if (!c)
        return dl_fail(EINVAL, "condition is NULL");
    int rc = dl_obj_init(&c->dl_o, DL_MAGIC_COND, name);
    if (rc == 0)
        c->dl_o.dl_type = attr ? attr->dl_clock : CLOCK_REALTIME;
    return rc;
}

int dist_cond_destroy(dist_cond_t *c)
{
    return dl_obj_destroy(c ? &c->dl_o : NULL, DL_MAGIC_COND);
}

static int resolve(dist_cond_t *c, dl_proc_t **pp, dl_cond_t **cp)
{
    dl_core_t *o = NULL;
    int rc = dl_obj_resolve_kind(c ? &c->dl_o : NULL, DL_MAGIC_COND, &dl_cond_kind, pp, &o);
    if (rc == 0)
        *cp = dl_cond_of(o);
    return rc;
}

static int wake(dist_cond_t *c, int all)
{
    dl_proc_t *p;
    dl_cond_t *cv;
    int rc = resolve(c, &p, &cv);
    return rc ? rc : dl_refused_rc(dl_cond_signal(p, cv, all));
}

int dist_cond_signal(dist_cond_t *c)
{
    return wake(c, 0);
}

int dist_cond_broadcast(dist_cond_t *c)
{
    return wake(c, 1);
}

/* Takes m again after the wait, as its own lock call would (its type,
 * fairness and lease), blocking until it has it.  0, EOWNERDEAD, EIO (m
 * not held). */
static int retake(dl_condwait_t *cw)
{
    dist_mutex_t *m = cw->m;
    dl_req_t rq = { 'w', 0, m->dl_o.dl_fair, m->dl_o.dl_lease_ms, 0, DL_FOREVER, NULL,
                    m->dl_o.dl_robust == DIST_MUTEX_ROBUST, NULL };
    char q[96];
    int rc = dl_lock_acquire(cw->p, cw->l, &rq);
    if (rc != 0 && rc != EOWNERDEAD) {
        char why[DL_ERRMAX];
        snprintf(why, sizeof why, "%s", dist_lasterror());
        return dl_fail(rc, "condition wait: taking the mutex %s again failed, the caller does "
                       "not hold it: %s", dl_quote(dl_core_name(&cw->l->core), cw->l->core.namelen, q,
                                                   sizeof q), why);
    }
    return rc;
}

int dl_condwait_restore(dl_condwait_t *cw)
{
    char q[96];
    int prc = dl_lock_restore(cw->l, cw->count, cw->carried, cw->od);
    if (prc)
        dl_log(DL_LOG_ERROR, "condition wait: the mutex %s is held again, but its count of %u "
               "could not be restored (%s)", dl_quote(dl_core_name(&cw->l->core), cw->l->core.namelen, q,
                                                      sizeof q),
               cw->count, prc == EAGAIN ? "count overflow" : "out of memory");
    return prc;
}

int dl_condwait_begin_on(dl_condwait_t *cw, dist_cond_t *c, dist_mutex_t *m, clockid_t clock,
                         const struct timespec *abstime)
{
    dl_proc_t *pm;
    char q[96], qm[96];
    uint64_t deadline = DL_FOREVER;
    cw->abstime = abstime;
    cw->clock = clock;
    cw->m = m;
    cw->lapsed = 0;
    cw->carried = 0;
    cw->od = 0;
    if (!dl_clock_ok(clock))
        return dl_fail(EINVAL, "clock %d: expected CLOCK_REALTIME or CLOCK_MONOTONIC", (int)clock);
    if (abstime && dl_deadline_on(clock, abstime, &deadline))
        return dl_fail(EINVAL, "abstime is NULL or its tv_nsec is outside [0, 1e9)");
    int rc = resolve(c, &cw->p, &cw->cv);
    if (rc)
        return rc;
    if ((rc = dl_obj_resolve(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX, &pm, &cw->l)))
        return rc;
    cw->count = dl_lock_held_count(cw->l);
    if (!cw->count)
        return dl_fail(EPERM, "condition %s: the mutex %s is not held by this thread",
                       dl_core_qname(&cw->cv->core, q, sizeof q),
                       dl_quote(dl_core_name(&cw->l->core), cw->l->core.namelen, qm, sizeof qm));
    if ((rc = dl_cond_enter(cw->p, cw->cv, &cw->w, deadline)))
        return dl_refused_rc(rc);         /* m untouched */
    int seen = 0;
    if (dl_lock_release_all(cw->p, cw->l, &seen, &cw->od) == ENOLCK) {
        cw->lapsed = 1;
        snprintf(cw->lapse, sizeof cw->lapse, "%s", dist_lasterror());
    }
    /* The wait does not end the section: a lapse in it, told already or
     * found now, still ends it with ENOLCK (restore). */
    cw->carried = seen || cw->lapsed;
    return 0;
}

int dl_condwait_begin(dl_condwait_t *cw, dist_cond_t *c, dist_mutex_t *m,
                      const struct timespec *abstime)
{
    return dl_condwait_begin_on(cw, c, m, CLOCK_REALTIME, abstime);
}

int dl_condwait_block(dl_condwait_t *cw)
{
    return dl_cond_block(cw->p, cw->cv, &cw->w, cw->clock, cw->abstime);
}

int dl_condwait_end(dl_condwait_t *cw, int brc)
{
    char q[96];
    int trc = retake(cw);
    /* The wait says EOWNERDEAD for a lapse its release found: through a
     * robust mutex, that is one more to make consistent. */
    if (cw->lapsed && cw->m->dl_o.dl_robust == DIST_MUTEX_ROBUST)
        cw->od = 1;
    if (trc != 0 && trc != EOWNERDEAD) {
        /* m not held, and no unlock ended the caller's section: it goes on
         * in the caller's next hold of m, whoever's lock call takes it (the
         * program's, or the interposer's before restore), with what it had
         * seen.  A lapse the release found and nobody was told of (this
         * wait says EIO) is told by that lock call. */
        char kept[DL_ERRMAX];
        snprintf(kept, sizeof kept, "%s", dist_lasterror());
        if (dl_lock_carry(cw->l, cw->carried, cw->od, cw->lapsed))
            dl_log(DL_LOG_ERROR, "condition wait: %s", dist_lasterror());
        dl_seterr("%s", kept);
        return trc;
    }
    dl_condwait_restore(cw);
    if (trc == EOWNERDEAD)
        return EOWNERDEAD;        /* worded by the lock */
    if (cw->lapsed)
        return dl_fail(EOWNERDEAD, "condition wait: the mutex is held again, but the caller's "
                       "hold had lapsed before the wait released it (%s); the protected state "
                       "may be half-updated", cw->lapse);
    if (brc == ETIMEDOUT)
        return dl_fail(ETIMEDOUT, "condition %s: timed out",
                       dl_core_qname(&cw->cv->core, q, sizeof q));
    return brc;
}

static int wait_on(dist_cond_t *c, dist_mutex_t *m, clockid_t clock,
                   const struct timespec *abstime)
{
    dl_condwait_t cw;
    int rc = dl_condwait_begin_on(&cw, c, m, clock, abstime);
    if (rc)
        return rc;
    return dl_condwait_end(&cw, dl_condwait_block(&cw));
}

int dist_cond_wait(dist_cond_t *c, dist_mutex_t *m)
{
    return wait_on(c, m, CLOCK_REALTIME, NULL);
}

int dist_cond_clockwait(dist_cond_t *c, dist_mutex_t *m, clockid_t clock,
                        const struct timespec *abstime)
{
    if (!abstime)
        return dl_fail(EINVAL, "abstime is NULL or its tv_nsec is outside [0, 1e9)");
    return wait_on(c, m, clock, abstime);
}

/* On the condition's own clock (its attribute's, kept at init). */
int dist_cond_timedwait(dist_cond_t *c, dist_mutex_t *m, const struct timespec *abstime)
{
    if (!c)
        return dl_fail(EINVAL, "condition is NULL");
    return dist_cond_clockwait(c, m, (clockid_t)c->dl_o.dl_type, abstime);
}
