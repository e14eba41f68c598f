/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_posix.c - where the mirror must answer as pthreads do, as a public
 * conformance suite checks it: a timed call never says ETIMEDOUT before
 * its abstime has passed on CLOCK_REALTIME; a try* call says EBUSY, never
 * EDEADLK; and a lock object in MAP_SHARED memory, initialized before fork
 * and used by forked siblings, excludes one sibling from the other.
 */
#include "harness.h"

#include <errno.h>
#include <string.h>

/* ----------------------------------------------------- timed: never early */

/* How far before abstime (ns) CLOCK_REALTIME was when the call returned;
 * 0 if it was at or past abstime. */
static int64_t early_ns(const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t d = ((int64_t)abstime->tv_sec - now.tv_sec) * 1000000000LL +
                (abstime->tv_nsec - now.tv_nsec);
    return d > 0 ? d : 0;
}

/* A timed call of kind k on a lock somebody else holds, `rounds` times,
 * each with an abstime a few ms ahead at an arbitrary fraction of a ms;
 * every one must say ETIMEDOUT, and none before its abstime. */
enum { T_MUTEX, T_RD, T_WR };

static void timed_rounds(dist_mutex_t *m, dist_rwlock_t *rw, int k, int rounds, const char *who)
{
    int early = 0;
    int64_t worst = 0;
    for (int i = 0; i < rounds; i++) {
        /* 3..9 ms ahead, and a sub-ms part that differs each time */
        struct timespec ts = th_abstime_ms(3 + i % 7);
        ts.tv_nsec = (ts.tv_nsec / 1000000) * 1000000 + (i * 137777) % 1000000;
        int rc = k == T_MUTEX ? dist_mutex_timedlock(m, &ts)
               : k == T_RD ? dist_rwlock_timedrdlock(rw, &ts)
                           : dist_rwlock_timedwrlock(rw, &ts);
        int64_t e = early_ns(&ts);
        TH_ASSERT_RC(rc, ETIMEDOUT);
        if (e > 0) {
            early++;
            if (e > worst)
                worst = e;
        }
    }
    static const char *what[] = { "timedlock", "timedrdlock", "timedwrlock" };
    if (early)
        fail_msg("%s (%s): %d of %d calls said ETIMEDOUT before abstime, up to %lld us early",
                 what[k], who, early, rounds, (long long)(worst / 1000));
}

/* Held by another process: the wait is in Redis (take.c). */
static void test_timed_never_early_remote(void **state)
{
    char mname[128], rwname[128];
    th_name(mname, sizeof mname, "early-m");
    th_name(rwname, sizeof rwname, "early-rw");
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, mname), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_RW_WRLOCK, rwname), 0);
    dist_mutex_t m;
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_mutex_init(&m, mname, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_init(&rw, rwname, NULL), 0);

    timed_rounds(&m, NULL, T_MUTEX, 40, "held by another process");
    timed_rounds(NULL, &rw, T_RD, 40, "written by another process");
    timed_rounds(NULL, &rw, T_WR, 40, "written by another process");

    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, mname), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_RW_UNLOCK, rwname), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* Held by another thread of this process: the wait is local (lock.c). */
static void test_timed_never_early_local(void **state)
{
    char mname[128], rwname[128];
    th_name(mname, sizeof mname, "early-lm");
    th_name(rwname, sizeof rwname, "early-lrw");
    dist_mutex_t m;
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_mutex_init(&m, mname, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_init(&rw, rwname, NULL), 0);
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .m = &m, .rw = &rw };
    TH_ASSERT_RC(th_actor_call(t, th_do_lock, &c), 0);
    TH_ASSERT_RC(th_actor_call(t, th_do_wrlock, &c), 0);

    timed_rounds(&m, NULL, T_MUTEX, 40, "held by another thread");
    timed_rounds(NULL, &rw, T_RD, 40, "written by another thread");
    timed_rounds(NULL, &rw, T_WR, 40, "written by another thread");

    TH_ASSERT_RC(th_actor_call(t, th_do_unlock, &c), 0);
    TH_ASSERT_RC(th_actor_call(t, th_do_rwunlock, &c), 0);
    th_actor_free(t);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* ------------------------------------------------ try*: EBUSY, not EDEADLK */

static void test_try_says_ebusy(void **state)
{
    char mname[128], rwname[128];
    th_name(mname, sizeof mname, "try-ec");
    th_name(rwname, sizeof rwname, "try-rw");
    dist_mutexattr_t at;
    TH_ASSERT_RC(dist_mutexattr_init(&at), 0);
    TH_ASSERT_RC(dist_mutexattr_settype(&at, DIST_MUTEX_ERRORCHECK), 0);
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, mname, &at), 0);
    TH_ASSERT_RC(dist_mutexattr_destroy(&at), 0);

    /* The owner of an errorcheck mutex: the try says EBUSY (as
     * pthread_mutex_trylock); the blocking and timed calls EDEADLK. */
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
    TH_ASSERT_RC(dist_mutex_lock(&m), EDEADLK);
    struct timespec ts = th_abstime_ms(200);
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &ts), EDEADLK);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);               /* one hold only */
    TH_ASSERT_RC(dist_mutex_unlock(&m), EPERM);

    /* A reader asking to write: the try says EBUSY (as
     * pthread_rwlock_trywrlock); the blocking and timed calls EDEADLK. */
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, rwname, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_trywrlock(&rw), EBUSY);
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), EDEADLK);
    ts = th_abstime_ms(200);
    TH_ASSERT_RC(dist_rwlock_timedwrlock(&rw, &ts), EDEADLK);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);             /* the read hold, intact */
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), EPERM);

    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_timed_never_early_remote),
        TH_TEST(test_timed_never_early_local),
        TH_TEST(test_try_says_ebusy),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
