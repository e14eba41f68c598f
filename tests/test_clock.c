/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_clock.c - the clock variants across processes, in the mode
 * TH_CLOCK_MODE names (single, the default; sentinel, cluster, tls,
 * redlock: CMake runs the suite once per mode): dist_mutex_clocklock,
 * dist_rwlock_clockrdlock and clockwrlock, dist_cond_clockwait,
 * dist_cond_timedwait on a condition made with dist_condattr_setclock, and
 * dist_sem_clockwait, each on CLOCK_REALTIME and CLOCK_MONOTONIC.
 *
 *  - never early: on a lock another process holds, a condition nobody
 *    signals, a semaphore without a permit, each call says ETIMEDOUT, and
 *    not before its abstime on the clock it was given;
 *  - woken: with an abstime far ahead, each call returns 0 once another
 *    process unlocks, signals or posts, and not before it did (a lock is
 *    not granted while the other process still holds it);
 *  - other clocks: EINVAL in every mode, nothing taken or released;
 *  - redlock:// has no semaphores: dist_sem_init is EINVAL, and so is
 *    dist_sem_clockwait on a statically initialized one.
 *
 * Every library call runs in a forked process with the mode's environment
 * (the library reads it once per process).  test_posix checks the same
 * calls at more rounds against one server, and against a thread of the
 * same process.
 */
#include "harness_mode.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

enum { K_MUTEX, K_RD, K_WR, K_COND, K_CONDATTR, K_SEM, K_KINDS };
static const char *const g_what[] = { "dist_mutex_clocklock", "dist_rwlock_clockrdlock",
                                      "dist_rwlock_clockwrlock", "dist_cond_clockwait",
                                      "dist_cond_timedwait (condattr_setclock)",
                                      "dist_sem_clockwait" };
static const clockid_t g_clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
static const char *const g_clock_names[] = { "CLOCK_REALTIME", "CLOCK_MONOTONIC" };

static int sems_work(void) { return tm_mode != TM_REDLOCK; }

/* now + ms on clock, at a sub-ms part that differs with i. */
static struct timespec abstime_on(clockid_t clock, long ms, int i)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec = (ts.tv_nsec / 1000000) * 1000000 + (ms % 1000) * 1000000L +
                 (i * 137777L) % 1000000;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

/* How far before abstime (ns) clock was when the call returned; 0 if at
 * or past it. */
static int64_t early_on(clockid_t clock, const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(clock, &now);
    int64_t d = ((int64_t)abstime->tv_sec - now.tv_sec) * 1000000000LL +
                (abstime->tv_nsec - now.tv_nsec);
    return d > 0 ? d : 0;
}

/* The objects of one test, by name, in every process that uses them. */
typedef struct objs {
    char m[64], rw[64], c[64], sem[64];
    th_pipe_t go, back;       /* waiter -> holder; holder -> waiter */
    int64_t *released_us;     /* shared: when the holder let go (th_now_us) */
} objs_t;

static void names(objs_t *o, const char *tag)
{
    char t[32];
    snprintf(t, sizeof t, "%s-m", tag);
    th_name(o->m, sizeof o->m, t);
    snprintf(t, sizeof t, "%s-rw", tag);
    th_name(o->rw, sizeof o->rw, t);
    snprintf(t, sizeof t, "%s-c", tag);
    th_name(o->c, sizeof o->c, t);
    snprintf(t, sizeof t, "%s-s", tag);
    th_name(o->sem, sizeof o->sem, t);
}

/* One call of kind k with abstime ts on clock.  own: a mutex the caller
 * holds (the conditions'); cattr: the condition made with that clock. */
static int clock_call(int k, clockid_t clock, const struct timespec *ts, dist_mutex_t *m,
                      dist_rwlock_t *rw, dist_cond_t *c, dist_cond_t *cattr, dist_mutex_t *own,
                      dist_sem_t *sem)
{
    switch (k) {
    case K_MUTEX: return dist_mutex_clocklock(m, clock, ts);
    case K_RD: return dist_rwlock_clockrdlock(rw, clock, ts);
    case K_WR: return dist_rwlock_clockwrlock(rw, clock, ts);
    case K_COND: return dist_cond_clockwait(c, own, clock, ts);
    case K_CONDATTR: return dist_cond_timedwait(cattr, own, ts);
    default: return dist_sem_clockwait(sem, clock, ts);
    }
}

static void cond_with_clock(dist_cond_t *c, const char *name, clockid_t clock)
{
    dist_condattr_t ca;
    clockid_t got = -1;
    TH_CHECK_RC(dist_condattr_init(&ca), 0);
    TH_CHECK_RC(dist_condattr_setclock(&ca, clock), 0);
    TH_CHECK_RC(dist_condattr_getclock(&ca, &got), 0);
    TH_CHECK(got == clock);
    TH_CHECK_RC(dist_cond_init(c, name, &ca), 0);
    TH_CHECK_RC(dist_condattr_destroy(&ca), 0);
}

/* ------------------------------------------------------ the holder */

/* Holds the mutex and the rwlock (write) and has the semaphore at 0; on
 * each request of the waiter (tag: the kind) lets go after a while (an
 * unlock, a signal until the waiter says it woke, a post), stamping the
 * moment first, and takes the lock back once the waiter is done with it.
 * Tag -1 ends it. */
static int holder_child(void *arg)
{
    objs_t *o = arg;
    th_setenv_list(tm_env());
    dist_mutex_t m;
    dist_rwlock_t rw;
    dist_cond_t c;
    dist_sem_t sem;
    TH_CHECK_RC(dist_mutex_init(&m, o->m, NULL), 0);
    TH_CHECK_RC(dist_rwlock_init(&rw, o->rw, NULL), 0);
    TH_CHECK_RC(dist_cond_init(&c, o->c, NULL), 0);
    if (sems_work())
        TH_CHECK_RC(dist_sem_init(&sem, o->sem, 0, 0), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_rwlock_wrlock(&rw), 0);
    th_send(o->back.wr, 0, 0, 0, 0);                   /* held */
    for (;;) {
        th_msg_t msg;
        TH_CHECK(th_recv(o->go.rd, &msg, 30000) == 0);
        if (msg.tag < 0)
            break;
        if (msg.a == 0) {                               /* let go */
            th_sleep_ms(300);                           /* the waiter is waiting by now */
            __atomic_store_n(o->released_us, th_now_us(), __ATOMIC_SEQ_CST);
            switch (msg.tag) {
            case K_MUTEX: TH_CHECK_RC(dist_mutex_unlock(&m), 0); break;
            case K_RD:
            case K_WR: TH_CHECK_RC(dist_rwlock_unlock(&rw), 0); break;
            case K_COND:
            case K_CONDATTR:
                /* A signal before the wait registered wakes nobody: again
                 * until the waiter says it woke. */
                for (int i = 0; i < 200; i++) {
                    TH_CHECK_RC(dist_cond_signal(&c), 0);
                    if (th_recv(o->go.rd, &msg, 100) == 0)
                        break;
                }
                TH_CHECK(msg.a == 1);
                break;
            case K_SEM: TH_CHECK_RC(dist_sem_post(&sem), 0); break;
            }
            if (msg.tag != K_COND && msg.tag != K_CONDATTR)
                TH_CHECK(th_recv(o->go.rd, &msg, 30000) == 0 && msg.a == 1);   /* done */
            /* Take it back for the next round. */
            if (msg.tag == K_MUTEX)
                TH_CHECK_RC(dist_mutex_lock(&m), 0);
            else if (msg.tag == K_RD || msg.tag == K_WR)
                TH_CHECK_RC(dist_rwlock_wrlock(&rw), 0);
            th_send(o->back.wr, 0, 0, 0, 0);
        }
    }
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    TH_CHECK_RC(dist_rwlock_destroy(&rw), 0);
    TH_CHECK_RC(dist_cond_destroy(&c), 0);
    if (sems_work())
        TH_CHECK_RC(dist_sem_destroy(&sem), 0);
    return 0;
}

/* The waiter's objects. */
typedef struct side {
    dist_mutex_t m, own;
    dist_rwlock_t rw;
    dist_cond_t c;
    dist_sem_t sem;
    char own_name[80];
} side_t;

static void side_init(side_t *s, const objs_t *o)
{
    TH_CHECK_RC(dist_mutex_init(&s->m, o->m, NULL), 0);
    TH_CHECK_RC(dist_rwlock_init(&s->rw, o->rw, NULL), 0);
    TH_CHECK_RC(dist_cond_init(&s->c, o->c, NULL), 0);
    snprintf(s->own_name, sizeof s->own_name, "%s.own", o->m);
    TH_CHECK_RC(dist_mutex_init(&s->own, s->own_name, NULL), 0);
    if (sems_work())
        TH_CHECK_RC(dist_sem_init(&s->sem, o->sem, 0, 0), 0);
}

static void side_destroy(side_t *s)
{
    TH_CHECK_RC(dist_mutex_destroy(&s->m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&s->own), 0);
    TH_CHECK_RC(dist_rwlock_destroy(&s->rw), 0);
    TH_CHECK_RC(dist_cond_destroy(&s->c), 0);
    if (sems_work())
        TH_CHECK_RC(dist_sem_destroy(&s->sem), 0);
}

static int kinds(void) { return sems_work() ? K_KINDS : K_SEM; }

/* ------------------------------------------------------- never early */

static int early_child(void *arg)
{
    objs_t *o = arg;
    th_setenv_list(tm_env());
    side_t s;
    side_init(&s, o);
    TH_CHECK_RC(dist_mutex_lock(&s.own), 0);
    for (int ci = 0; ci < 2; ci++) {
        dist_cond_t cattr;
        cond_with_clock(&cattr, o->c, g_clocks[ci]);
        for (int k = 0; k < kinds(); k++) {
            for (int i = 0; i < 6; i++) {
                /* 3..8 ms ahead, a sub-ms part that differs each time */
                struct timespec ts = abstime_on(g_clocks[ci], 3 + i, i);
                int rc = clock_call(k, g_clocks[ci], &ts, &s.m, &s.rw, &s.c, &cattr, &s.own,
                                    &s.sem);
                int64_t e = early_on(g_clocks[ci], &ts);
                if (rc != ETIMEDOUT || e > 0) {
                    fprintf(stderr, "%s: %s on %s: %s, %lld us before its abstime\n",
                            tm_mode_name, g_what[k], g_clock_names[ci], th_errname(rc),
                            (long long)(e / 1000));
                    return TH_CHILD_FAIL;
                }
            }
        }
        TH_CHECK_RC(dist_cond_destroy(&cattr), 0);
    }
    TH_CHECK_RC(dist_mutex_unlock(&s.own), 0);
    side_destroy(&s);
    return 0;
}

static objs_t *objs_new(const char *tag)
{
    objs_t *o = mmap(NULL, sizeof *o + sizeof(int64_t), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(o != MAP_FAILED);
    memset(o, 0, sizeof *o);
    o->released_us = (int64_t *)(o + 1);
    names(o, tag);
    th_pipe_open(&o->go);
    th_pipe_open(&o->back);
    return o;
}

static void objs_free(objs_t *o)
{
    th_pipe_close(&o->go);
    th_pipe_close(&o->back);
    munmap(o, sizeof *o + sizeof(int64_t));
}

/* Every clock call on both clocks, against a holder in another process:
 * ETIMEDOUT, never before abstime on that clock. */
static void test_never_early(void **state)
{
    (void)state;
    objs_t *o = objs_new("clk-early");
    pid_t h = th_fork_child(holder_child, o);
    th_msg_t msg;
    assert_int_equal(th_recv(o->back.rd, &msg, 30000), 0);
    TH_ASSERT_CHILD_OK(th_fork_child(early_child, o));
    th_send(o->go.wr, -1, 0, 0, 0);
    TH_ASSERT_CHILD_OK(h);
    objs_free(o);
}

/* ------------------------------------------------------------ woken */

static int woken_child(void *arg)
{
    objs_t *o = arg;
    th_setenv_list(tm_env());
    side_t s;
    side_init(&s, o);
    for (int ci = 0; ci < 2; ci++) {
        dist_cond_t cattr;
        cond_with_clock(&cattr, o->c, g_clocks[ci]);
        for (int k = 0; k < kinds(); k++) {
            if (k == K_COND || k == K_CONDATTR)
                TH_CHECK_RC(dist_mutex_lock(&s.own), 0);
            /* Far ahead: only the other process's letting go ends it. */
            struct timespec ts = abstime_on(g_clocks[ci], 20000, k);
            th_send(o->go.wr, k, 0, 0, 0);
            int rc = clock_call(k, g_clocks[ci], &ts, &s.m, &s.rw, &s.c, &cattr, &s.own, &s.sem);
            /* A condition may wake spuriously: its callers wait again while
             * their predicate (here: the other process signalled) is false. */
            while ((k == K_COND || k == K_CONDATTR) && rc == 0 &&
                   __atomic_load_n(o->released_us, __ATOMIC_SEQ_CST) == 0)
                rc = clock_call(k, g_clocks[ci], &ts, &s.m, &s.rw, &s.c, &cattr, &s.own, &s.sem);
            int64_t now = th_now_us(), let_go = __atomic_load_n(o->released_us, __ATOMIC_SEQ_CST);
            if (rc != 0 || let_go == 0 || now < let_go) {
                fprintf(stderr, "%s: %s on %s, abstime 20 s ahead: %s, want 0 once the other "
                        "process let go; it returned %s\n", tm_mode_name, g_what[k],
                        g_clock_names[ci], th_errname(rc),
                        let_go == 0 || now < let_go ? "before it did" : "after it did");
                return TH_CHILD_FAIL;
            }
            __atomic_store_n(o->released_us, 0, __ATOMIC_SEQ_CST);
            switch (k) {
            case K_MUTEX: TH_CHECK_RC(dist_mutex_unlock(&s.m), 0); break;
            case K_RD:
            case K_WR: TH_CHECK_RC(dist_rwlock_unlock(&s.rw), 0); break;
            case K_COND:
            case K_CONDATTR: TH_CHECK_RC(dist_mutex_unlock(&s.own), 0); break;
            default: break;
            }
            th_send(o->go.wr, k, 1, 0, 0);              /* done */
            th_msg_t msg;
            TH_CHECK(th_recv(o->back.rd, &msg, 30000) == 0);   /* taken back */
        }
        TH_CHECK_RC(dist_cond_destroy(&cattr), 0);
    }
    side_destroy(&s);
    return 0;
}

/* Every clock call on both clocks, abstime 20 s ahead: 0 once the holder
 * in another process unlocks, signals or posts, and not before it did. */
static void test_woken(void **state)
{
    (void)state;
    objs_t *o = objs_new("clk-woken");
    pid_t h = th_fork_child(holder_child, o);
    th_msg_t msg;
    assert_int_equal(th_recv(o->back.rd, &msg, 30000), 0);
    TH_ASSERT_CHILD_OK(th_fork_child(woken_child, o));
    th_send(o->go.wr, -1, 0, 0, 0);
    TH_ASSERT_CHILD_OK(h);
    objs_free(o);
}

/* ------------------------------------------------------ other clocks */

static dist_sem_t g_static_sem = DIST_SEM_INITIALIZER("clk.static.sem", 1);

static int other_child(void *arg)
{
    objs_t *o = arg;
    th_setenv_list(tm_env());
    side_t s;
    side_init(&s, o);
    if (sems_work())
        TH_CHECK_RC(dist_sem_post(&s.sem), 0);
    struct timespec ts = th_abstime_ms(1000);
    static const clockid_t bad[] = { CLOCK_PROCESS_CPUTIME_ID, CLOCK_BOOTTIME,
                                     CLOCK_MONOTONIC_RAW, -1 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        TH_CHECK_RC(dist_mutex_clocklock(&s.m, bad[i], &ts), EINVAL);
        TH_CHECK_RC(dist_rwlock_clockrdlock(&s.rw, bad[i], &ts), EINVAL);
        TH_CHECK_RC(dist_rwlock_clockwrlock(&s.rw, bad[i], &ts), EINVAL);
        if (sems_work())
            TH_CHECK_RC(dist_sem_clockwait(&s.sem, bad[i], &ts), EINVAL);
        TH_CHECK_RC(dist_mutex_lock(&s.own), 0);
        TH_CHECK_RC(dist_cond_clockwait(&s.c, &s.own, bad[i], &ts), EINVAL);
        TH_CHECK_RC(dist_mutex_unlock(&s.own), 0);      /* still held, once */
        TH_CHECK_RC(dist_mutex_unlock(&s.own), EPERM);
        dist_condattr_t ca;
        clockid_t got = -1;
        TH_CHECK_RC(dist_condattr_init(&ca), 0);
        TH_CHECK_RC(dist_condattr_setclock(&ca, bad[i]), EINVAL);
        TH_CHECK_RC(dist_condattr_getclock(&ca, &got), 0);
        TH_CHECK(got == CLOCK_REALTIME);
        TH_CHECK_RC(dist_condattr_destroy(&ca), 0);
    }
    /* Nothing was taken: free for the taking, the permit still there. */
    TH_CHECK_RC(dist_mutex_trylock(&s.m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&s.m), 0);
    TH_CHECK_RC(dist_rwlock_trywrlock(&s.rw), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&s.rw), 0);
    if (sems_work()) {
        TH_CHECK_RC(dist_sem_trywait(&s.sem), 0);
        TH_CHECK_RC(dist_sem_trywait(&s.sem), EAGAIN);
    } else {
        /* No semaphores on redlock://: a static one is refused at its
         * first use, the clock variant included. */
        TH_CHECK_RC(dist_sem_init(&s.sem, o->sem, 0, 0), EINVAL);
        TH_CHECK(th_contains(dist_lasterror(), "redlock"));
        TH_CHECK_RC(dist_sem_clockwait(&g_static_sem, CLOCK_MONOTONIC, &ts), EINVAL);
        TH_CHECK(th_contains(dist_lasterror(), "redlock"));
    }
    side_destroy(&s);
    return 0;
}

/* A clock other than CLOCK_REALTIME and CLOCK_MONOTONIC: EINVAL in every
 * mode, nothing taken; redlock: the semaphore's refusal. */
static void test_other_clocks(void **state)
{
    (void)state;
    objs_t *o = objs_new("clk-other");
    TH_ASSERT_CHILD_OK(th_fork_child(other_child, o));
    objs_free(o);
}

int main(void)
{
    tm_pick("TH_CLOCK_MODE");
    static const struct CMUnitTest all[] = {
        TT_TEST(test_never_early),
        TT_TEST(test_woken),
        TT_TEST(test_other_clocks),
    };
    return th_run_group("clock", all, sizeof all / sizeof all[0], tm_group_setup,
                        tt_group_teardown);
}
