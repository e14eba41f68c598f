/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mutex.c - dist_mutex_t as a pthread mutex: reentrancy, ownership by
 * thread, exclusion across threads and processes, timedlock, errorcheck,
 * init/destroy rules, progress of the threads queued for a mutex,
 * invalid objects and names, dist_strerror.
 */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

/* ------------------------------------------------------------------- tests */

static void test_reentrant_counts(void **state)
{
    char name[128];
    th_name(name, sizeof name, "reent");
    th_proc_t other;
    assert_int_equal(th_proc_start(&other, NULL), 0);

    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), 0);          /* third hold */
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    /* one hold left: still held for everyone else */
    TH_ASSERT_RC(th_proc_op(&other, TH_M_TRYLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), EPERM);       /* the 4th unlock */
    /* released for real */
    TH_ASSERT_RC(th_proc_op(&other, TH_M_TRYLOCK, name), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
    TH_ASSERT_RC(th_proc_op(&other, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    assert_int_equal(th_proc_stop(&other), 0);
}

/* Children increment a counter in Redis with GET then SET under the lock:
 * any overlap loses an increment. */
struct excl_arg { const char *name; const char *counter; const char *inside; int iters; int threads; };

static int excl_worker(struct excl_arg *a)
{
    dist_mutex_t m;
    int rc = dist_mutex_init(&m, a->name, NULL);
    if (rc)
        return rc;
    for (int i = 0; i < a->iters; i++) {
        rc = dist_mutex_lock(&m);
        if (rc) {
            fprintf(stderr, "lock: %s (%s)\n", th_errname(rc), dist_lasterror());
            return -1;
        }
        if (th_cmd_ll("INCR %s", a->inside) != 1) {
            fprintf(stderr, "[%d] two holders at once\n", (int)getpid());
            return -2;
        }
        long long v = th_cmd_ll("GET %s", a->counter);
        if (v < 0)
            v = 0;
        if (i % 3 == 0)
            th_sleep_us(300);
        th_cmd_do("SET %s %lld", a->counter, v + 1);
        th_cmd_ll("DECR %s", a->inside);
        rc = dist_mutex_unlock(&m);
        if (rc) {
            fprintf(stderr, "unlock: %s (%s)\n", th_errname(rc), dist_lasterror());
            return -3;
        }
    }
    return dist_mutex_destroy(&m);
}

static void *excl_thread(void *p)
{
    return (void *)(intptr_t)excl_worker(p);
}

static int excl_child(void *p)
{
    struct excl_arg *a = p;
    if (a->threads <= 1)
        return excl_worker(a) == 0 ? 0 : TH_CHILD_FAIL;
    pthread_t t[8];
    for (int i = 0; i < a->threads; i++)
        pthread_create(&t[i], NULL, excl_thread, a);
    int bad = 0;
    for (int i = 0; i < a->threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        if (r)
            bad = 1;
    }
    return bad ? TH_CHILD_FAIL : 0;
}

static void run_exclusion(int procs, int threads, int iters)
{
    char name[128], counter[160], inside[160];
    th_name(name, sizeof name, "excl");
    snprintf(counter, sizeof counter, "test:%s:counter", name);
    snprintf(inside, sizeof inside, "test:%s:inside", name);
    struct excl_arg a = { name, counter, inside, iters, threads };
    pid_t pids[8];
    for (int i = 0; i < procs; i++)
        pids[i] = th_fork_child(excl_child, &a);
    for (int i = 0; i < procs; i++)
        TH_ASSERT_CHILD_OK(pids[i]);
    assert_int_equal(th_cmd_ll("GET %s", counter), (long long)procs * threads * iters);
    assert_int_equal(th_cmd_ll("GET %s", inside), 0);
}

static void test_cross_process_exclusion(void **state)
{
    run_exclusion(4, 1, 40);
}

static void test_threads_and_processes_exclusion(void **state)
{
    run_exclusion(2, 3, 15);
}

static void test_other_thread_busy_and_eperm(void **state)
{
    char name[128];
    th_name(name, sizeof name, "othread");
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .m = &m };

    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(th_actor_call(t, th_do_trylock, &c), EBUSY);
    TH_ASSERT_RC(th_actor_call(t, th_do_unlock, &c), EPERM);
    c.ts = th_abstime_ms(-10);
    TH_ASSERT_RC(th_actor_call(t, th_do_timedlock, &c), ETIMEDOUT);
    /* the failed unlock by the other thread did not release it */
    TH_ASSERT_RC(th_actor_call(t, th_do_trylock, &c), EBUSY);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);

    /* and the other way round */
    TH_ASSERT_RC(th_actor_call(t, th_do_trylock, &c), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
    TH_ASSERT_RC(dist_mutex_unlock(&m), EPERM);
    TH_ASSERT_RC(th_actor_call(t, th_do_unlock, &c), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);

    th_actor_free(t);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

static void test_two_objects_one_name(void **state)
{
    char name[128];
    th_name(name, sizeof name, "twoobj");
    dist_mutex_t m1, m2;
    TH_ASSERT_RC(dist_mutex_init(&m1, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_init(&m2, name, NULL), 0);
    th_actor_t *t = th_actor_new();
    th_lockcall_t c2 = { .m = &m2 }, c1 = { .m = &m1 };

    TH_ASSERT_RC(dist_mutex_lock(&m1), 0);
    TH_ASSERT_RC(th_actor_call(t, th_do_trylock, &c2), EBUSY);   /* one lock */
    TH_ASSERT_RC(dist_mutex_lock(&m2), 0);                    /* reentrant */
    TH_ASSERT_RC(dist_mutex_unlock(&m2), 0);
    TH_ASSERT_RC(th_actor_call(t, th_do_trylock, &c2), EBUSY);   /* one hold left */
    TH_ASSERT_RC(dist_mutex_unlock(&m1), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m2), EPERM);
    TH_ASSERT_RC(dist_mutex_unlock(&m1), EPERM);

    TH_ASSERT_RC(th_actor_call(t, th_do_trylock, &c2), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m1), EBUSY);
    TH_ASSERT_RC(th_actor_call(t, th_do_unlock, &c1), 0);     /* unlock through the other object */
    TH_ASSERT_RC(dist_mutex_trylock(&m1), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m1), 0);

    th_actor_free(t);
    TH_ASSERT_RC(dist_mutex_destroy(&m1), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m2), 0);
}

static void test_trylock_other_process(void **state)
{
    char name[128];
    th_name(name, sizeof name, "tryproc");
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);

    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
    TH_ASSERT_RC(dist_mutex_unlock(&m), EPERM);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_TRYLOCK, name), EBUSY);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), EPERM);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_TRYLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    assert_int_equal(th_proc_stop(&p), 0);
}

/* trylock is one attempt, and a past abstime one attempt too, even while
 * another thread of this process is blocked waiting for the lock. */
static void test_trylock_does_not_wait_behind_waiter(void **state)
{
    char name[128];
    th_name(name, sizeof name, "trywait");
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .m = &m };
    th_actor_post(t, th_do_lock, &c);
    th_wait_queued(name, 1);
    for (int i = 0; i < 3; i++) {
        int64_t t0 = th_now_ms();
        TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
        struct timespec past = th_abstime_ms(-1);
        TH_ASSERT_RC(dist_mutex_timedlock(&m, &past), ETIMEDOUT);
        int64_t el = th_now_ms() - t0;
        if (el > 1000)
            fail_msg("trylock + timedlock(past) took %lld ms behind a waiting thread", (long long)el);
    }
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    int rc = -1;
    assert_int_equal(th_actor_wait(t, &rc, 10000), 0);
    TH_ASSERT_RC(rc, 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
    TH_ASSERT_RC(th_actor_call(t, th_do_unlock, &c), 0);
    th_actor_free(t);
    assert_int_equal(th_proc_stop(&p), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

static void test_timedlock(void **state)
{
    char name[128];
    th_name(name, sizeof name, "timed");
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);

    /* bad timespecs, checked whether or not the lock is free */
    struct timespec bad = th_abstime_ms(1000);
    bad.tv_nsec = 1000000000L;
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &bad), EINVAL);
    bad.tv_nsec = -1;
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &bad), EINVAL);
    TH_ASSERT_RC(dist_mutex_timedlock(&m, NULL), EINVAL);

    /* past abstime on a free lock: one attempt, which succeeds */
    struct timespec past = th_abstime_ms(-5000);
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &past), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    past.tv_sec = 0;           /* 1970 */
    past.tv_nsec = 0;
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &past), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);

    /* held by another process */
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    bad = th_abstime_ms(1000);
    bad.tv_nsec = 1000000000L;
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &bad), EINVAL);
    int64_t t0 = th_now_ms();
    past = th_abstime_ms(-1000);
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &past), ETIMEDOUT);
    int64_t el = th_now_ms() - t0;
    if (el > 1500)
        fail_msg("timedlock with a past abstime took %lld ms", (long long)el);

    t0 = th_now_ms();
    struct timespec ts = th_abstime_ms(700);
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &ts), ETIMEDOUT);
    el = th_now_ms() - t0;
    if (el < 650 || el > 2500)
        fail_msg("timedlock(now+700ms) returned ETIMEDOUT after %lld ms", (long long)el);
    TH_ASSERT_RC(dist_mutex_unlock(&m), EPERM);          /* nothing was acquired */

    /* released during the wait: acquired well before abstime */
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .m = &m, .ts = th_abstime_ms(8000) };
    th_actor_post(t, th_do_timedlock, &c);
    th_sleep_ms(150);
    int64_t t_rel = th_now_ms();
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    int rc = -1;
    assert_int_equal(th_actor_wait(t, &rc, 10000), 0);
    TH_ASSERT_RC(rc, 0);
    if (c.t_done_us / 1000 - t_rel > 2000)
        fail_msg("timedlock got a released lock only after %lld ms",
                 (long long)(c.t_done_us / 1000 - t_rel));
    TH_ASSERT_RC(th_actor_call(t, th_do_unlock, &c), 0);
    th_actor_free(t);

    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    assert_int_equal(th_proc_stop(&p), 0);
}

/* One deadline covers the local wait (another thread of this process holds)
 * and the Redis wait (then another process holds). */
static void test_timedlock_one_deadline(void **state)
{
    char name[128];
    th_name(name, sizeof name, "deadline");
    dist_mutexattr_t at;
    TH_ASSERT_RC(dist_mutexattr_init(&at), 0);
    TH_ASSERT_RC(dist_mutexattr_setfair(&at, 1), 0);
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, &at), 0);
    TH_ASSERT_RC(dist_mutexattr_destroy(&at), 0);

    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    char q[300];
    th_key(q, sizeof q, name, ":q");

    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    /* another process queues first (fair: it is next) */
    th_req_t req;
    th_proc_req(&req, TH_M_LOCK, name);
    req.fair = 1;
    assert_int_equal(th_proc_send(&p, &req), 0);
    assert_true(th_wait_zcard(q, 1, 5000));

    /* another thread of ours waits with a 1200 ms deadline */
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .m = &m, .ts = th_abstime_ms(1200) };
    int64_t t0 = th_now_ms();
    th_actor_post(t, th_do_timedlock, &c);
    th_sleep_ms(1000);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);   /* the other process gets it, and holds it */

    th_res_t res;
    assert_int_equal(th_proc_recv(&p, &res, 5000), 0);
    TH_ASSERT_RC(res.rc, 0);
    int rc = -1;
    assert_int_equal(th_actor_wait(t, &rc, 10000), 0);
    TH_ASSERT_RC(rc, ETIMEDOUT);
    int64_t el = c.t_done_us / 1000 - t0;
    if (el < 1100 || el > 1900)
        fail_msg("timedlock(now+1200ms) returned after %lld ms (2200 = deadline applied twice)",
                 (long long)el);
    th_actor_free(t);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

static void test_errorcheck(void **state)
{
    char name[128];
    th_name(name, sizeof name, "errchk");
    dist_mutexattr_t at;
    TH_ASSERT_RC(dist_mutexattr_init(&at), 0);
    TH_ASSERT_RC(dist_mutexattr_settype(&at, DIST_MUTEX_ERRORCHECK), 0);
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, &at), 0);
    TH_ASSERT_RC(dist_mutexattr_destroy(&at), 0);

    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), EDEADLK);
    struct timespec ts = th_abstime_ms(300);
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &ts), EDEADLK);
    /* as pthread_mutex_trylock: a try never says EDEADLK */
    TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);          /* one hold only */
    TH_ASSERT_RC(dist_mutex_unlock(&m), EPERM);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);

    /* the default type is recursive; an explicit RECURSIVE too */
    TH_ASSERT_RC(dist_mutexattr_init(&at), 0);
    TH_ASSERT_RC(dist_mutexattr_settype(&at, DIST_MUTEX_RECURSIVE), 0);
    TH_ASSERT_RC(dist_mutex_init(&m, name, &at), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    TH_ASSERT_RC(dist_mutexattr_destroy(&at), 0);
}

static void test_destroy_rules(void **state)
{
    char name[128];
    th_name(name, sizeof name, "destroy");
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), EBUSY);        /* held */
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);             /* still usable after EBUSY */

    /* waited on by another thread of this process (held by another process) */
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .m = &m };
    th_actor_post(t, th_do_lock, &c);
    char q[300];
    th_key(q, sizeof q, name, ":q");
    if (!th_wait_zcard(q, 1, 3000))
        th_sleep_ms(300);                                /* give the waiter time anyway */
    TH_ASSERT_RC(dist_mutex_destroy(&m), EBUSY);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    int rc = -1;
    assert_int_equal(th_actor_wait(t, &rc, 10000), 0);
    TH_ASSERT_RC(rc, 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), EBUSY);        /* held by the other thread */
    TH_ASSERT_RC(th_actor_call(t, th_do_unlock, &c), 0);
    th_actor_free(t);
    assert_int_equal(th_proc_stop(&p), 0);

    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), EINVAL);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EINVAL);
    struct timespec ts = th_abstime_ms(100);
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &ts), EINVAL);
    TH_ASSERT_RC(dist_mutex_unlock(&m), EINVAL);
    uint64_t f;
    TH_ASSERT_RC(dist_mutex_getfence(&m, &f), EINVAL);
    TH_ASSERT_RC(dist_mutex_destroy(&m), EINVAL);       /* double destroy */

    /* a destroyed object may be initialized again */
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);

    /* the same for the rwlock */
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), EBUSY);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), EINVAL);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), EINVAL);
}

/* The names are filled in (with the pid, for uniqueness) before first use;
 * the initializers only need a string that outlives the lock. */
static char static_m_name[64], static_rw_name[64], static_race_name[64];
static dist_mutex_t static_m = DIST_MUTEX_INITIALIZER(static_m_name);
static dist_rwlock_t static_rw = DIST_RWLOCK_INITIALIZER(static_rw_name);

static void test_static_initializer(void **state)
{
    snprintf(static_m_name, sizeof static_m_name, "static-mutex.%d", (int)getpid());
    snprintf(static_rw_name, sizeof static_rw_name, "static-rwlock.%d", (int)getpid());
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&static_m), 0);
    TH_ASSERT_RC(dist_mutex_lock(&static_m), 0);        /* recursive by default */
    TH_ASSERT_RC(th_proc_op(&p, TH_M_TRYLOCK, static_m_name), EBUSY);
    uint64_t f = 0;
    TH_ASSERT_RC(dist_mutex_getfence(&static_m, &f), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&static_m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&static_m), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_TRYLOCK, static_m_name), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&static_m), EBUSY);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, static_m_name), 0);

    TH_ASSERT_RC(dist_rwlock_wrlock(&static_rw), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, static_rw_name), EBUSY);
    TH_ASSERT_RC(dist_rwlock_unlock(&static_rw), 0);
    TH_ASSERT_RC(dist_rwlock_tryrdlock(&static_rw), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, static_rw_name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, static_rw_name), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&static_rw), 0);

    /* a static lock can be destroyed like a pthread one */
    TH_ASSERT_RC(dist_mutex_destroy(&static_m), 0);
    TH_ASSERT_RC(dist_mutex_lock(&static_m), EINVAL);
    TH_ASSERT_RC(dist_rwlock_destroy(&static_rw), 0);
    assert_int_equal(th_proc_stop(&p), 0);
}

/* A statically initialized lock used first from many threads at once. */
static dist_mutex_t static_race = DIST_MUTEX_INITIALIZER(static_race_name);
static long static_race_count;

static void *static_race_thread(void *p)
{
    for (int i = 0; i < 20; i++) {
        if (dist_mutex_lock(&static_race) != 0)
            return (void *)1;
        long v = static_race_count;
        if (i % 4 == 0)
            th_sleep_us(100);
        static_race_count = v + 1;
        if (dist_mutex_unlock(&static_race) != 0)
            return (void *)2;
    }
    return NULL;
}

static void test_static_first_use_race(void **state)
{
    snprintf(static_race_name, sizeof static_race_name, "static-race.%d", (int)getpid());
    pthread_t t[6];
    for (int i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, static_race_thread, NULL);
    for (int i = 0; i < 6; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_null(r);
    }
    assert_int_equal(static_race_count, 6 * 20);
}

/* Threads of one process queue for one mutex in every way a lock call
 * can: tight loops (an unlock that relocks at once, a streak that steps
 * aside for the others), a thread that unlocks and stays away for a while
 * (its unlock must wake a waiter: nobody else will), one that holds the
 * lock a while, timed waits that give up and leave the queue, and
 * trylocks that never join it.  An unlock
 * wakes one waiter of the queue, and no other until that one has looked
 * (lock.c, admit_next): a wake-up lost on any of these paths leaves the
 * lock free and its waiters asleep, and the test runs out of time. */
#define QP_THREADS 6
#define QP_ITERS 400

typedef struct qp {
    dist_mutex_t m;
    int inside;                   /* threads inside the lock (atomic) */
    long count;                   /* under the lock */
    int overlaps, failures;       /* atomic */
    unsigned long timeouts, busies;
    int done;                     /* threads finished (atomic) */
} qp_t;

typedef struct qp_thread {
    qp_t *q;
    int idx;
    int mixed;                    /* threads 1 and 2 time out and try */
} qp_thread_t;

static int qp_lock(qp_t *q, int idx, int mixed)
{
    if (mixed && idx == 1) {               /* timed waits that give up now and then */
        for (;;) {
            struct timespec at = th_abstime_ms(1);
            int rc = dist_mutex_timedlock(&q->m, &at);
            if (rc != ETIMEDOUT)
                return rc;
            __atomic_add_fetch(&q->timeouts, 1, __ATOMIC_RELAXED);
        }
    }
    if (mixed && idx == 2) {      /* never queues */
        for (;;) {
            int rc = dist_mutex_trylock(&q->m);
            if (rc != EBUSY)
                return rc;
            __atomic_add_fetch(&q->busies, 1, __ATOMIC_RELAXED);
            sched_yield();
        }
    }
    return dist_mutex_lock(&q->m);
}

static void *qp_thread(void *arg)
{
    qp_thread_t *t = arg;
    qp_t *q = t->q;
    for (int i = 0; i < QP_ITERS; i++) {
        int rc = qp_lock(q, t->idx, t->mixed);
        if (rc) {
            fprintf(stderr, "thread %d: lock: %s (%s)\n", t->idx, th_errname(rc),
                    dist_lasterror());
            __atomic_add_fetch(&q->failures, 1, __ATOMIC_RELAXED);
            break;
        }
        if (__atomic_add_fetch(&q->inside, 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_add_fetch(&q->overlaps, 1, __ATOMIC_RELAXED);
        q->count++;
        /* Thread 3 holds the lock a while now and then: the others wait
         * in the queue, and the timed waits give up. */
        if (t->idx == 3 && i % 40 == 0)
            th_sleep_us(3000);
        __atomic_sub_fetch(&q->inside, 1, __ATOMIC_SEQ_CST);
        rc = dist_mutex_unlock(&q->m);
        if (rc) {
            fprintf(stderr, "thread %d: unlock: %s (%s)\n", t->idx, th_errname(rc),
                    dist_lasterror());
            __atomic_add_fetch(&q->failures, 1, __ATOMIC_RELAXED);
            break;
        }
        /* Thread 0 stays away after some unlocks: the threads queued
         * behind it are woken by that unlock or by nothing. */
        if (t->idx == 0 && i % 40 == 0)
            th_sleep_us(2000);
    }
    __atomic_add_fetch(&q->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void run_queue_progress(int mixed)
{
    char name[128];
    th_name(name, sizeof name, mixed ? "queue-mixed" : "queue");
    static qp_t q;
    memset(&q, 0, sizeof q);
    TH_ASSERT_RC(dist_mutex_init(&q.m, name, NULL), 0);
    pthread_t th[QP_THREADS];
    qp_thread_t ta[QP_THREADS];
    for (int i = 0; i < QP_THREADS; i++) {
        ta[i] = (qp_thread_t){ &q, i, mixed };
        pthread_create(&th[i], NULL, qp_thread, &ta[i]);
    }
    /* Far more than the work needs (well under a second on a quiet
     * host), within the test's alarm. */
    int64_t until = th_now_ms() + 20000;
    while (__atomic_load_n(&q.done, __ATOMIC_SEQ_CST) < QP_THREADS && th_now_ms() < until)
        th_sleep_us(10000);
    int done = __atomic_load_n(&q.done, __ATOMIC_SEQ_CST);
    if (done < QP_THREADS)
        fail_msg("%s: %d of %d threads still in their loops after 20 s, %ld of %d holds "
                 "done: waiters of a free lock were left asleep", name, QP_THREADS - done,
                 QP_THREADS, q.count, QP_THREADS * QP_ITERS);
    for (int i = 0; i < QP_THREADS; i++)
        pthread_join(th[i], NULL);
    fprintf(stderr, "%s: %ld holds, %lu timed waits gave up, %lu trylocks found it busy\n",
            name, q.count, q.timeouts, q.busies);
    assert_int_equal(q.failures, 0);
    assert_int_equal(q.overlaps, 0);
    assert_int_equal(q.count, QP_THREADS * QP_ITERS);
    TH_ASSERT_RC(dist_mutex_destroy(&q.m), 0);
}

static void test_local_queue_progress(void **state)
{
    run_queue_progress(0);        /* every thread waits in the queue */
    run_queue_progress(1);
}

static void test_invalid_objects(void **state)
{
    dist_mutex_t zm;
    memset(&zm, 0, sizeof zm);
    dist_rwlock_t zrw;
    memset(&zrw, 0, sizeof zrw);
    struct timespec ts = th_abstime_ms(100);
    uint64_t f;

    TH_ASSERT_RC(dist_mutex_lock(NULL), EINVAL);
    TH_ASSERT_RC(dist_mutex_trylock(NULL), EINVAL);
    TH_ASSERT_RC(dist_mutex_timedlock(NULL, &ts), EINVAL);
    TH_ASSERT_RC(dist_mutex_unlock(NULL), EINVAL);
    TH_ASSERT_RC(dist_mutex_destroy(NULL), EINVAL);
    TH_ASSERT_RC(dist_mutex_getfence(NULL, &f), EINVAL);
    TH_ASSERT_RC(dist_mutex_lock(&zm), EINVAL);
    TH_ASSERT_RC(dist_mutex_trylock(&zm), EINVAL);
    TH_ASSERT_RC(dist_mutex_timedlock(&zm, &ts), EINVAL);
    TH_ASSERT_RC(dist_mutex_unlock(&zm), EINVAL);
    TH_ASSERT_RC(dist_mutex_destroy(&zm), EINVAL);
    TH_ASSERT_RC(dist_mutex_getfence(&zm, &f), EINVAL);

    TH_ASSERT_RC(dist_rwlock_rdlock(NULL), EINVAL);
    TH_ASSERT_RC(dist_rwlock_wrlock(NULL), EINVAL);
    TH_ASSERT_RC(dist_rwlock_tryrdlock(NULL), EINVAL);
    TH_ASSERT_RC(dist_rwlock_trywrlock(NULL), EINVAL);
    TH_ASSERT_RC(dist_rwlock_timedrdlock(NULL, &ts), EINVAL);
    TH_ASSERT_RC(dist_rwlock_timedwrlock(NULL, &ts), EINVAL);
    TH_ASSERT_RC(dist_rwlock_unlock(NULL), EINVAL);
    TH_ASSERT_RC(dist_rwlock_destroy(NULL), EINVAL);
    TH_ASSERT_RC(dist_rwlock_getfence(NULL, &f), EINVAL);
    TH_ASSERT_RC(dist_rwlock_rdlock(&zrw), EINVAL);
    TH_ASSERT_RC(dist_rwlock_wrlock(&zrw), EINVAL);
    TH_ASSERT_RC(dist_rwlock_tryrdlock(&zrw), EINVAL);
    TH_ASSERT_RC(dist_rwlock_trywrlock(&zrw), EINVAL);
    TH_ASSERT_RC(dist_rwlock_unlock(&zrw), EINVAL);
    TH_ASSERT_RC(dist_rwlock_destroy(&zrw), EINVAL);

    /* garbage is not a lock either */
    dist_mutex_t gm;
    memset(&gm, 0xa5, sizeof gm);
    TH_ASSERT_RC(dist_mutex_trylock(&gm), EINVAL);
    TH_ASSERT_RC(dist_mutex_unlock(&gm), EINVAL);

    /* attributes */
    dist_mutexattr_t ma, zma;
    memset(&zma, 0, sizeof zma);
    dist_rwlockattr_t ra, zra;
    memset(&zra, 0, sizeof zra);
    TH_ASSERT_RC(dist_mutexattr_init(NULL), EINVAL);
    TH_ASSERT_RC(dist_mutexattr_destroy(NULL), EINVAL);
    TH_ASSERT_RC(dist_mutexattr_settype(NULL, DIST_MUTEX_RECURSIVE), EINVAL);
    TH_ASSERT_RC(dist_mutexattr_setfair(NULL, 1), EINVAL);
    TH_ASSERT_RC(dist_mutexattr_setlease(NULL, 100), EINVAL);
    TH_ASSERT_RC(dist_rwlockattr_init(NULL), EINVAL);
    TH_ASSERT_RC(dist_rwlockattr_destroy(NULL), EINVAL);
    TH_ASSERT_RC(dist_rwlockattr_setlease(NULL, 100), EINVAL);
    TH_ASSERT_RC(dist_mutexattr_settype(&zma, DIST_MUTEX_RECURSIVE), EINVAL);
    TH_ASSERT_RC(dist_rwlockattr_setlease(&zra, 100), EINVAL);
    TH_ASSERT_RC(dist_mutexattr_init(&ma), 0);
    TH_ASSERT_RC(dist_mutexattr_settype(&ma, 99), EINVAL);
    TH_ASSERT_RC(dist_mutexattr_settype(&ma, -1), EINVAL);
    TH_ASSERT_RC(dist_mutexattr_setfair(&ma, 0), 0);
    TH_ASSERT_RC(dist_mutexattr_setfair(&ma, 1), 0);
    TH_ASSERT_RC(dist_mutexattr_setlease(&ma, 0), 0);
    TH_ASSERT_RC(dist_mutexattr_setlease(&ma, 500), 0);
    TH_ASSERT_RC(dist_rwlockattr_init(&ra), 0);
    TH_ASSERT_RC(dist_rwlockattr_setlease(&ra, 0), 0);

    char name[128];
    th_name(name, sizeof name, "inval");
    TH_ASSERT_RC(dist_mutex_init(NULL, name, NULL), EINVAL);
    TH_ASSERT_RC(dist_mutex_init(&zm, NULL, NULL), EINVAL);
    TH_ASSERT_RC(dist_mutex_init(&zm, name, &zma), EINVAL);   /* uninitialized attr */
    TH_ASSERT_RC(dist_rwlock_init(NULL, name, NULL), EINVAL);
    TH_ASSERT_RC(dist_rwlock_init(&zrw, NULL, NULL), EINVAL);
    TH_ASSERT_RC(dist_rwlock_init(&zrw, name, &zra), EINVAL);

    /* attributes are copied at init: destroying them afterwards is fine */
    TH_ASSERT_RC(dist_mutex_init(&zm, name, &ma), 0);
    TH_ASSERT_RC(dist_mutexattr_destroy(&ma), 0);
    TH_ASSERT_RC(dist_mutexattr_settype(&ma, DIST_MUTEX_RECURSIVE), EINVAL); /* destroyed attr */
    TH_ASSERT_RC(dist_mutex_lock(&zm), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&zm), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&zm), 0);
    TH_ASSERT_RC(dist_rwlockattr_destroy(&ra), 0);
}

static void test_bad_names(void **state)
{
    dist_mutex_t m;
    dist_rwlock_t rw;
    char big[DIST_NAME_MAX + 2];
    memset(big, 'n', sizeof big - 1);
    big[sizeof big - 1] = 0;                         /* 513 bytes */
    assert_int_equal(strlen(big), DIST_NAME_MAX + 1);

    int rc = dist_mutex_init(&m, "", NULL);
    if (rc == 0)
        rc = dist_mutex_lock(&m);
    TH_ASSERT_RC(rc, EINVAL);
    rc = dist_mutex_init(&m, big, NULL);
    if (rc == 0)
        rc = dist_mutex_lock(&m);
    TH_ASSERT_RC(rc, EINVAL);
    rc = dist_rwlock_init(&rw, "", NULL);
    if (rc == 0)
        rc = dist_rwlock_rdlock(&rw);
    TH_ASSERT_RC(rc, EINVAL);
    rc = dist_rwlock_init(&rw, big, NULL);
    if (rc == 0)
        rc = dist_rwlock_wrlock(&rw);
    TH_ASSERT_RC(rc, EINVAL);

    /* static initializers with bad names fail at first use */
    dist_mutex_t sm = DIST_MUTEX_INITIALIZER("");
    TH_ASSERT_RC(dist_mutex_lock(&sm), EINVAL);
    dist_mutex_t sn = DIST_MUTEX_INITIALIZER(NULL);
    TH_ASSERT_RC(dist_mutex_lock(&sn), EINVAL);
}

static void test_strerror(void **state)
{
    int codes[] = { EINVAL, EBUSY, ETIMEDOUT, EDEADLK, EPERM, EOWNERDEAD, ENOLCK,
                    EAGAIN, EIO, ENOMEM };
    int n = (int)(sizeof codes / sizeof codes[0]);
    for (int i = 0; i < n; i++) {
        const char *s = dist_strerror(codes[i]);
        assert_non_null(s);
        if (!*s)
            fail_msg("dist_strerror(%s) is empty", th_errname(codes[i]));
        for (int j = 0; j < i; j++)
            if (strcmp(s, dist_strerror(codes[j])) == 0)
                fail_msg("dist_strerror(%s) == dist_strerror(%s)", th_errname(codes[i]),
                         th_errname(codes[j]));
    }
    assert_non_null(dist_strerror(0));
    assert_non_null(dist_strerror(12345));
    assert_non_null(dist_strerror(-1));
    assert_non_null(dist_lasterror());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_reentrant_counts),
        TH_TEST(test_cross_process_exclusion),
        TH_TEST(test_threads_and_processes_exclusion),
        TH_TEST(test_other_thread_busy_and_eperm),
        TH_TEST(test_two_objects_one_name),
        TH_TEST(test_trylock_other_process),
        TH_TEST(test_trylock_does_not_wait_behind_waiter),
        TH_TEST(test_timedlock),
        TH_TEST(test_timedlock_one_deadline),
        TH_TEST(test_errorcheck),
        TH_TEST(test_destroy_rules),
        TH_TEST(test_static_initializer),
        TH_TEST(test_static_first_use_race),
        TH_TEST(test_local_queue_progress),
        TH_TEST(test_invalid_objects),
        TH_TEST(test_bad_names),
        TH_TEST(test_strerror),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
