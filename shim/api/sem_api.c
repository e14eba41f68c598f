/* SPDX-License-Identifier: BSD-3-Clause */
/* sem_api.c - the semaphore API (distlock.h: dist_sem_*), on the semaphore
 * primitive (prim/sem.h).  The object is a lock object (api/object.c: its
 * name, who initialized it) with the value and flags it was made with. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "distlock.h"
#include "dl.h"
#include "object.h"
#include "process.h"
#include "sem.h"
#include "sem_api.h"


/* The object's own checks, worded for a semaphore (object.c checks again). */
static int valid(const dist_sem_t *s)
{
    if (!s)
        return dl_fail(EINVAL, "semaphore is NULL");
    if (s->dl_o.dl_magic == DL_MAGIC_DEAD)
        return dl_fail(EINVAL, "semaphore was destroyed");
    if (s->dl_o.dl_magic != DL_MAGIC_SEM && s->dl_o.dl_magic != DIST_PRIV_MAGIC_STATIC)
        return dl_fail(EINVAL, "semaphore is not initialized");
    if (s->dl_value > INT_MAX)
        return dl_fail(EINVAL, "semaphore value %u: above INT_MAX", s->dl_value);
    if (s->dl_flags != 0 && s->dl_flags != DIST_SEM_LEASED)
        return dl_fail(EINVAL, "semaphore flags %d: expected 0 or DIST_SEM_LEASED", s->dl_flags);
    return 0;
}

/* redlock://'s independent servers cannot keep one count: a permit taken
 * on a majority leaves the others' counts above the truth, and enough such
 * takes over different majorities grant more permits than there are (two
 * permits on three servers: {1,2}, {1,3} and {2,3} each find a permit on
 * two servers).  So semaphores refuse it, at init and at first use. */
static int mode_ok(dl_proc_t *p)
{
    if (dl_conn_caps(p->conn).quorum)
        return dl_fail(EINVAL, "semaphores are not supported with redlock:// (independent "
                       "servers cannot keep one count of permits: majorities taking permits "
                       "on different servers would grant more than there are)");
    return 0;
}

int dl_sem_check_mode(void)
{
    int err = 0;
    dl_proc_t *p = dl_proc_get(&err);
    if (!p)
        return err;
    return mode_ok(p) ? EINVAL : 0;
}

static char kind_of(const dist_sem_t *s)
{
    return s->dl_flags == DIST_SEM_LEASED ? 'l' : 'c';
}

static int resolve(dist_sem_t *s, dl_proc_t **pp, dl_sem_t **sp)
{
    if (valid(s))
        return EINVAL;
    dl_core_t *c = NULL;
    int rc = dl_obj_resolve_kind(&s->dl_o, DL_MAGIC_SEM, &dl_sem_kind, pp, &c);
    if (rc)
        return rc;
    if ((rc = mode_ok(*pp)))
        return rc;
    *sp = dl_sem_of(c);
    return 0;
}

int dl_sem_init_how(dist_sem_t *s, const char *name, unsigned int value, int flags, char how)
{
    if (!s)
        return dl_fail(EINVAL, "semaphore is NULL");
    if (flags != 0 && flags != DIST_SEM_LEASED)
        return dl_fail(EINVAL, "semaphore flags %d: expected 0 or DIST_SEM_LEASED", flags);
    if (value > INT_MAX)
        return dl_fail(EINVAL, "semaphore value %u: above INT_MAX (SEM_VALUE_MAX)", value);
    if (flags == DIST_SEM_LEASED && value == 0)
        return dl_fail(EINVAL, "a leased semaphore needs at least one permit (value 0)");
    if (!name)
        return dl_fail(EINVAL, "semaphore name is NULL");
    size_t n = strnlen(name, DIST_NAME_MAX + 1);
    if (n == 0)
        return dl_fail(EINVAL, "semaphore name is empty");
    if (n > DIST_NAME_MAX)
        return dl_fail(EINVAL, "semaphore name is longer than DIST_NAME_MAX (%d bytes)",
                       DIST_NAME_MAX);
    int err = 0;
    dl_proc_t *p = dl_proc_get(&err);
    if (!p)
        return err;
    if (mode_ok(p))
        return EINVAL;
    int rc = dl_obj_init(&s->dl_o, DL_MAGIC_SEM, name);
    if (rc)
        return rc;
    s->dl_value = value;
    s->dl_flags = flags;
    dl_sem_t *sem;
    if ((rc = resolve(s, &p, &sem)) == 0)
        rc = dl_refused_rc(dl_sem_open(p, sem, kind_of(s), value, how));
    if (rc) {
        /* Not made: the object is as before init (uninitialized). */
        char kept[DL_ERRMAX];
        memcpy(kept, dist_lasterror(), sizeof kept);
        kept[sizeof kept - 1] = 0;
        dl_obj_destroy(&s->dl_o, DL_MAGIC_SEM);
        s->dl_o.dl_magic = 0;
        dl_seterr("%s", kept);
    }
    return rc;
}

int dist_sem_init(dist_sem_t *s, const char *name, unsigned int value, int flags)
{
    return dl_sem_init_how(s, name, value, flags, 'c');
}

static int wait_for(dist_sem_t *s, int try_only, uint64_t deadline, const int *stop)
{
    dl_proc_t *p;
    dl_sem_t *sem;
    int rc = resolve(s, &p, &sem);
    if (rc)
        return rc;
    dl_sem_req_t rq = { kind_of(s), s->dl_value, try_only, deadline, stop };
    return dl_refused_rc(dl_sem_wait(p, sem, &rq));
}

int dist_sem_wait(dist_sem_t *s)
{
    return wait_for(s, 0, DL_FOREVER, NULL);
}

int dist_sem_trywait(dist_sem_t *s)
{
    return wait_for(s, 1, 0, NULL);
}

static int timed(dist_sem_t *s, clockid_t clock, const struct timespec *abstime, const int *stop)
{
    if (!dl_clock_ok(clock))
        return dl_fail(EINVAL, "clock %d: expected CLOCK_REALTIME or CLOCK_MONOTONIC", (int)clock);
    for (;;) {
        uint64_t deadline;
        if (dl_deadline_on(clock, abstime, &deadline))
            return dl_fail(EINVAL, "abstime is NULL or its tv_nsec is outside [0, 1e9)");
        int rc = wait_for(s, 0, deadline, stop);
        /* Never ETIMEDOUT before abstime on its clock, even if the wall
         * clock was set back (or the host suspended) while we waited. */
        if (rc != ETIMEDOUT || dl_passed_on(clock, abstime))
            return rc;
    }
}

int dist_sem_timedwait(dist_sem_t *s, const struct timespec *abstime)
{
    return timed(s, CLOCK_REALTIME, abstime, NULL);
}

int dist_sem_clockwait(dist_sem_t *s, clockid_t clock, const struct timespec *abstime)
{
    return timed(s, clock, abstime, NULL);
}

int dl_sem_wait_stoppable(dist_sem_t *s, clockid_t clock, const struct timespec *abstime,
                          const int *stop)
{
    return abstime ? timed(s, clock, abstime, stop) : wait_for(s, 0, DL_FOREVER, stop);
}

void dl_sem_interrupt(dist_sem_t *s)
{
    dl_proc_t *p;
    dl_sem_t *sem;
    if (resolve(s, &p, &sem) == 0)
        dl_take_interrupt(&sem->core);
}

int dist_sem_post(dist_sem_t *s)
{
    dl_proc_t *p;
    dl_sem_t *sem;
    int rc = resolve(s, &p, &sem);
    return rc ? rc : dl_refused_rc(dl_sem_post(p, sem, kind_of(s), s->dl_value));
}

int dist_sem_getvalue(dist_sem_t *s, int *value)
{
    if (!value)
        return dl_fail(EINVAL, "value is NULL");
    dl_proc_t *p;
    dl_sem_t *sem;
    int rc = resolve(s, &p, &sem);
    return rc ? rc : dl_refused_rc(dl_sem_getvalue(p, sem, kind_of(s), s->dl_value, value));
}

int dist_sem_destroy(dist_sem_t *s)
{
    if (valid(s))
        return EINVAL;
    int rc = dl_obj_destroy(&s->dl_o, DL_MAGIC_SEM);
    if (rc == EBUSY)
        return dl_fail(EBUSY, "semaphore is waited on in this process, or the process holds "
                       "leased permits of it");
    return rc;
}

/* The name's semaphore in this process, through an object of the call's
 * own (as an init would make it, without creating anything in Redis). */
int dist_sem_unlink(const char *name)
{
    if (!name)
        return dl_fail(EINVAL, "semaphore name is NULL");
    size_t n = strnlen(name, DIST_NAME_MAX + 1);
    if (n == 0)
        return dl_fail(EINVAL, "semaphore name is empty");
    if (n > DIST_NAME_MAX)
        return dl_fail(EINVAL, "semaphore name is longer than DIST_NAME_MAX (%d bytes)",
                       DIST_NAME_MAX);
    int err = 0;
    dl_proc_t *p = dl_proc_get(&err);
    if (!p)
        return err;
    if (mode_ok(p))
        return EINVAL;
    dist_sem_t s;
    memset(&s, 0, sizeof s);
    int rc = dl_obj_init(&s.dl_o, DL_MAGIC_SEM, name);
    if (rc)
        return rc;
    dl_sem_t *sem;
    if ((rc = resolve(&s, &p, &sem)) == 0)
        rc = dl_sem_unlink(p, sem);
    char kept[DL_ERRMAX];
    memcpy(kept, dist_lasterror(), sizeof kept);
    kept[sizeof kept - 1] = 0;
    dl_obj_destroy(&s.dl_o, DL_MAGIC_SEM);   /* (never busy: the call's own object) */
    if (rc)
        dl_seterr("%s", kept);
    return rc;
}

int dl_sem_flush(dist_sem_t *s)
{
    dl_proc_t *p;
    dl_sem_t *sem;
    int rc = resolve(s, &p, &sem);
    return rc ? rc : dl_sem_settle(p, sem);
}

int dl_sem_held_count(dist_sem_t *s)
{
    dl_proc_t *p;
    dl_sem_t *sem;
    if (resolve(s, &p, &sem))
        return -1;
    return (int)dl_sem_held(sem);
}
