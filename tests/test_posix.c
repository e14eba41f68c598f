/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_posix.c - where the mirror must answer as pthreads do, as a public
 * conformance suite checks it: a timed call never says ETIMEDOUT before
 * its abstime has passed on CLOCK_REALTIME, nor a clock* call (and a
 * condition's timedwait on its attribute's clock) before its abstime on
 * CLOCK_REALTIME or CLOCK_MONOTONIC, which are the only clocks taken
 * (EINVAL for others); a try* call says EBUSY, never
 * EDEADLK; and a lock object in MAP_SHARED memory, initialized before fork
 * and used by forked siblings, excludes one sibling from the other, as does
 * one that a sibling initializes after the fork (its name in the object).
 */
#include "harness.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

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

/* ------------------------------------------- clock variants: never early */

/* How far before abstime (ns) `clock` was when the call returned. */
static int64_t early_on(clockid_t clock, const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(clock, &now);
    int64_t d = ((int64_t)abstime->tv_sec - now.tv_sec) * 1000000000LL +
                (abstime->tv_nsec - now.tv_nsec);
    return d > 0 ? d : 0;
}

/* now + ms on clock, at a sub-ms part that differs with i. */
static struct timespec abstime_on(clockid_t clock, long ms, int i)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_nsec += (ms % 1000) * 1000000L;
    ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    ts.tv_nsec = (ts.tv_nsec / 1000000) * 1000000 + (i * 137777) % 1000000;
    return ts;
}

enum { C_MUTEX, C_RD, C_WR, C_COND, C_COND_ATTR, C_SEM, C_KINDS };

typedef struct clocked {
    dist_mutex_t *m;          /* held by somebody else (C_MUTEX) */
    dist_rwlock_t *rw;        /* written by somebody else */
    dist_mutex_t *own;        /* held by the caller (the conditions') */
    dist_cond_t *c;           /* never signalled; created with CLOCK_REALTIME */
    dist_cond_t *cattr;       /* never signalled; created with the clock tested */
    dist_sem_t *sem;          /* no permit */
} clocked_t;

/* 20 calls of kind k with an abstime 3..9 ms ahead on clock: each says
 * ETIMEDOUT, none before abstime on that clock. */
static void clock_rounds(const clocked_t *o, int k, clockid_t clock, const char *clockname)
{
    static const char *what[] = { "dist_mutex_clocklock", "dist_rwlock_clockrdlock",
                                  "dist_rwlock_clockwrlock", "dist_cond_clockwait",
                                  "dist_cond_timedwait (condattr_setclock)",
                                  "dist_sem_clockwait" };
    int early = 0;
    int64_t worst = 0;
    for (int i = 0; i < 20; i++) {
        struct timespec ts = abstime_on(clock, 3 + i % 7, i);
        int rc = k == C_MUTEX ? dist_mutex_clocklock(o->m, clock, &ts)
               : k == C_RD ? dist_rwlock_clockrdlock(o->rw, clock, &ts)
               : k == C_WR ? dist_rwlock_clockwrlock(o->rw, clock, &ts)
               : k == C_COND ? dist_cond_clockwait(o->c, o->own, clock, &ts)
               : k == C_COND_ATTR ? dist_cond_timedwait(o->cattr, o->own, &ts)
                                  : dist_sem_clockwait(o->sem, clock, &ts);
        int64_t e = early_on(clock, &ts);
        if (rc != ETIMEDOUT)
            fail_msg("%s on %s: %s (%s), expected ETIMEDOUT", what[k], clockname,
                     th_errname(rc), dist_lasterror());
        if (e > 0) {
            early++;
            if (e > worst)
                worst = e;
        }
    }
    if (early)
        fail_msg("%s on %s: %d of 20 calls said ETIMEDOUT before abstime, up to %lld us early",
                 what[k], clockname, early, (long long)(worst / 1000));
}

/* Every clock* call, and a condition's timedwait on its attribute's clock,
 * on CLOCK_REALTIME and CLOCK_MONOTONIC: the locks held by another
 * process (the wait is in Redis), the conditions never signalled, the
 * semaphore without a permit. */
static void test_clock_never_early(void **state)
{
    char mname[128], rwname[128], own[128], cname[128], sname[128];
    th_name(mname, sizeof mname, "clk-m");
    th_name(rwname, sizeof rwname, "clk-rw");
    th_name(own, sizeof own, "clk-own");
    th_name(cname, sizeof cname, "clk-c");
    th_name(sname, sizeof sname, "clk-s");
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, mname), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_RW_WRLOCK, rwname), 0);
    dist_mutex_t m, mo;
    dist_rwlock_t rw;
    dist_cond_t c;
    dist_sem_t sem;
    TH_ASSERT_RC(dist_mutex_init(&m, mname, NULL), 0);
    TH_ASSERT_RC(dist_mutex_init(&mo, own, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_init(&rw, rwname, NULL), 0);
    TH_ASSERT_RC(dist_cond_init(&c, cname, NULL), 0);
    TH_ASSERT_RC(dist_sem_init(&sem, sname, 0, 0), 0);
    TH_ASSERT_RC(dist_mutex_lock(&mo), 0);
    static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
    static const char *names[] = { "CLOCK_REALTIME", "CLOCK_MONOTONIC" };
    for (int ci = 0; ci < 2; ci++) {
        dist_condattr_t ca;
        dist_cond_t cattr;
        clockid_t got = -1;
        TH_ASSERT_RC(dist_condattr_init(&ca), 0);
        TH_ASSERT_RC(dist_condattr_setclock(&ca, clocks[ci]), 0);
        TH_ASSERT_RC(dist_condattr_getclock(&ca, &got), 0);
        assert_int_equal(got, clocks[ci]);
        TH_ASSERT_RC(dist_cond_init(&cattr, cname, &ca), 0);
        TH_ASSERT_RC(dist_condattr_destroy(&ca), 0);
        clocked_t o = { &m, &rw, &mo, &c, &cattr, &sem };
        for (int k = 0; k < C_KINDS; k++)
            clock_rounds(&o, k, clocks[ci], names[ci]);
        TH_ASSERT_RC(dist_cond_destroy(&cattr), 0);
    }
    TH_ASSERT_RC(dist_mutex_unlock(&mo), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, mname), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_RW_UNLOCK, rwname), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&mo), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
    TH_ASSERT_RC(dist_cond_destroy(&c), 0);
    TH_ASSERT_RC(dist_sem_destroy(&sem), 0);
}

/* A clock other than CLOCK_REALTIME and CLOCK_MONOTONIC is EINVAL, and
 * nothing is taken; a condition's attribute refuses it too. */
static void test_clock_other_einval(void **state)
{
    char name[128];
    th_name(name, sizeof name, "clk-bad");
    dist_mutex_t m;
    dist_rwlock_t rw;
    dist_cond_t c;
    dist_sem_t sem;
    dist_condattr_t ca;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    TH_ASSERT_RC(dist_cond_init(&c, name, NULL), 0);
    TH_ASSERT_RC(dist_sem_init(&sem, name, 1, 0), 0);
    struct timespec ts = th_abstime_ms(1000);
    static const clockid_t bad[] = { CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
                                     CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW, -1, 12345 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        TH_ASSERT_RC(dist_mutex_clocklock(&m, bad[i], &ts), EINVAL);
        TH_ASSERT_RC(dist_rwlock_clockrdlock(&rw, bad[i], &ts), EINVAL);
        TH_ASSERT_RC(dist_rwlock_clockwrlock(&rw, bad[i], &ts), EINVAL);
        TH_ASSERT_RC(dist_sem_clockwait(&sem, bad[i], &ts), EINVAL);
        TH_ASSERT_RC(dist_mutex_lock(&m), 0);
        TH_ASSERT_RC(dist_cond_clockwait(&c, &m, bad[i], &ts), EINVAL);
        TH_ASSERT_RC(dist_mutex_unlock(&m), 0);     /* still held, once */
        TH_ASSERT_RC(dist_mutex_unlock(&m), EPERM);
        TH_ASSERT_RC(dist_condattr_init(&ca), 0);
        TH_ASSERT_RC(dist_condattr_setclock(&ca, bad[i]), EINVAL);
        clockid_t got = -1;
        TH_ASSERT_RC(dist_condattr_getclock(&ca, &got), 0);
        assert_int_equal(got, CLOCK_REALTIME);      /* the default, unchanged */
        TH_ASSERT_RC(dist_condattr_destroy(&ca), 0);
    }
    int v = -1;
    TH_ASSERT_RC(dist_sem_getvalue(&sem, &v), 0);
    assert_int_equal(v, 1);                         /* no permit taken */
    TH_ASSERT_RC(dist_mutex_trylock(&m), 0);        /* nobody holds it */
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
    TH_ASSERT_RC(dist_cond_destroy(&c), 0);
    TH_ASSERT_RC(dist_sem_destroy(&sem), 0);
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

/* ------------------------------------ a shared-memory object across fork */

/* What the parent puts in MAP_SHARED memory before it forks. */
typedef struct shared {
    dist_mutex_t m;
    dist_rwlock_t rw;
    dist_mutex_t late;        /* initialized by child A after the fork */
    dist_mutex_t late_long;   /* the same, with a name too long for the object */
    int late_ready;
} shared_t;

static shared_t *g_sh;
static char g_late_tag[64];   /* a fresh name for the late objects of a round */

struct sib { int up, down; int late; };

/* Waits for the parent's go-ahead with tag `want`. */
#define SIB_WAIT(a, want) do { th_msg_t m_; TH_CHECK(th_recv((a)->down, &m_, 20000) == 0); \
    TH_CHECK(m_.tag == (want)); } while (0)

/* Child A: takes each lock the parent asks for, holds it until told. */
static int sibling_a(void *p)
{
    struct sib *a = p;
    TH_CHECK_RC(dist_mutex_lock(&g_sh->m), 0);
    th_send(a->up, 1, 0, 0, 0);                   /* A holds m */
    SIB_WAIT(a, 2);
    TH_CHECK_RC(dist_mutex_unlock(&g_sh->m), 0);
    TH_CHECK_RC(dist_rwlock_wrlock(&g_sh->rw), 0);
    th_send(a->up, 3, 0, 0, 0);                   /* A writes rw */
    SIB_WAIT(a, 4);
    TH_CHECK_RC(dist_rwlock_unlock(&g_sh->rw), 0);
    TH_CHECK_RC(dist_rwlock_rdlock(&g_sh->rw), 0);
    if (a->late) {
        /* Objects this child initializes in the shared memory now: a short
         * name is in the object, a long one in this child's memory only. */
        char lname[128], llong[256];
        snprintf(lname, sizeof lname, "%s-late", g_late_tag);
        snprintf(llong, sizeof llong, "%s-late-%0100d", g_late_tag, 0);
        TH_CHECK_RC(dist_mutex_init(&g_sh->late, lname, NULL), 0);
        TH_CHECK_RC(dist_mutex_init(&g_sh->late_long, llong, NULL), 0);
        TH_CHECK_RC(dist_mutex_lock(&g_sh->late), 0);
        __atomic_store_n(&g_sh->late_ready, 1, __ATOMIC_RELEASE);
    }
    th_send(a->up, 5, 0, 0, 0);                   /* A reads rw */
    SIB_WAIT(a, 6);
    TH_CHECK_RC(dist_rwlock_unlock(&g_sh->rw), 0);
    if (a->late)
        TH_CHECK_RC(dist_mutex_unlock(&g_sh->late), 0);
    th_send(a->up, 7, 0, 0, 0);                   /* A let go of everything */
    SIB_WAIT(a, 8);
    return 0;
}

/* Child B: while A holds, B's tries must fail; once A let go, succeed. */
static int sibling_b(void *p)
{
    struct sib *a = p;
    SIB_WAIT(a, 1);                               /* A holds m */
    TH_CHECK_RC(dist_mutex_trylock(&g_sh->m), EBUSY);
    struct timespec ts = th_abstime_ms(100);
    TH_CHECK_RC(dist_mutex_timedlock(&g_sh->m, &ts), ETIMEDOUT);
    TH_CHECK_RC(dist_mutex_unlock(&g_sh->m), EPERM);
    th_send(a->up, 1, 0, 0, 0);
    SIB_WAIT(a, 3);                               /* A writes rw */
    TH_CHECK_RC(dist_rwlock_tryrdlock(&g_sh->rw), EBUSY);
    TH_CHECK_RC(dist_rwlock_trywrlock(&g_sh->rw), EBUSY);
    TH_CHECK_RC(dist_mutex_trylock(&g_sh->m), 0);  /* A let go of m */
    TH_CHECK_RC(dist_mutex_unlock(&g_sh->m), 0);
    th_send(a->up, 3, 0, 0, 0);
    SIB_WAIT(a, 5);                               /* A reads rw */
    TH_CHECK_RC(dist_rwlock_trywrlock(&g_sh->rw), EBUSY);
    TH_CHECK_RC(dist_rwlock_tryrdlock(&g_sh->rw), 0);   /* readers share */
    TH_CHECK_RC(dist_rwlock_unlock(&g_sh->rw), 0);
    if (a->late) {
        /* A's objects: the one with a short name is A's lock here too (A
         * holds it); the long name B cannot read, and must say so rather
         * than follow A's pointer. */
        TH_CHECK(__atomic_load_n(&g_sh->late_ready, __ATOMIC_ACQUIRE));
        TH_CHECK_RC(dist_mutex_trylock(&g_sh->late), EBUSY);
        TH_CHECK_RC(dist_mutex_trylock(&g_sh->late_long), EINVAL);
        TH_CHECK(th_contains(dist_lasterror(), "initialize a shared object before fork"));
    }
    th_send(a->up, 5, 0, 0, 0);
    SIB_WAIT(a, 7);                               /* A let go */
    TH_CHECK_RC(dist_rwlock_trywrlock(&g_sh->rw), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&g_sh->rw), 0);
    TH_CHECK_RC(dist_mutex_lock(&g_sh->m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&g_sh->m), 0);
    if (a->late) {
        TH_CHECK_RC(dist_mutex_trylock(&g_sh->late), 0);  /* A let go of it */
        TH_CHECK_RC(dist_mutex_unlock(&g_sh->late), 0);
    }
    return 0;
}

/* Keys in Redis outside the prefix: the library must never make any. */
static long long keys_outside_prefix(void)
{
    redisReply *r = th_cmd("KEYS *");
    long long n = 0;
    size_t plen = strlen(th_prefix());
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
        if (r->element[i]->len < plen || memcmp(r->element[i]->str, th_prefix(), plen) != 0)
            n++;
    freeReplyObject(r);
    return n;
}

static void test_shared_object_siblings(void **state)
{
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(g_sh != MAP_FAILED);
    long long outside = keys_outside_prefix();
    /* Three times, each on fresh keys: a sibling that trusted the other's
     * process-local state was wrong at its first try. */
    for (int round = 0; round < 3; round++) {
        char mname[128], rwname[128];
        th_name(mname, sizeof mname, "shm-m");
        th_name(g_late_tag, sizeof g_late_tag, "shm");
        th_name(rwname, sizeof rwname, "shm-rw");
        memset(g_sh, 0, sizeof *g_sh);
        TH_ASSERT_RC(dist_mutex_init(&g_sh->m, mname, NULL), 0);
        TH_ASSERT_RC(dist_rwlock_init(&g_sh->rw, rwname, NULL), 0);

        th_pipe_t aup, adown, bup, bdown;
        th_pipe_open(&aup);
        th_pipe_open(&adown);
        th_pipe_open(&bup);
        th_pipe_open(&bdown);
        struct sib sa = { aup.wr, adown.rd, round == 0 }, sb = { bup.wr, bdown.rd, round == 0 };
        pid_t a = th_fork_child(sibling_a, &sa);
        pid_t b = th_fork_child(sibling_b, &sb);
        th_msg_t msg;
        /* Relay each step of A to B, and B's answer back to A. */
        for (int step = 1; step <= 7; step += 2) {
            if (th_recv(aup.rd, &msg, 20000) != 0 || msg.tag != step)
                fail_msg("round %d: child A did not reach step %d (status %d)", round, step,
                         th_wait_child_ms(a, 1000));
            th_send(bdown.wr, step, 0, 0, 0);
            if (step == 7)
                break;
            if (th_recv(bup.rd, &msg, 20000) != 0 || msg.tag != step)
                fail_msg("round %d: child B failed at step %d (status %d)", round, step,
                         th_wait_child_ms(b, 1000));
            if (step == 1) {
                /* The parent, too, is kept out while A holds (asked only
                 * after B: B must meet the object as A left it). */
                TH_ASSERT_RC(dist_mutex_trylock(&g_sh->m), EBUSY);
            }
            th_send(adown.wr, step + 1, 0, 0, 0);
        }
        TH_ASSERT_CHILD_OK(b);
        th_send(adown.wr, 8, 0, 0, 0);
        TH_ASSERT_CHILD_OK(a);
        /* The parent uses the same objects afterwards. */
        TH_ASSERT_RC(dist_mutex_trylock(&g_sh->m), 0);
        TH_ASSERT_RC(dist_mutex_unlock(&g_sh->m), 0);
        TH_ASSERT_RC(dist_rwlock_trywrlock(&g_sh->rw), 0);
        TH_ASSERT_RC(dist_rwlock_unlock(&g_sh->rw), 0);
        TH_ASSERT_RC(dist_mutex_destroy(&g_sh->m), 0);
        TH_ASSERT_RC(dist_rwlock_destroy(&g_sh->rw), 0);
        th_pipe_close(&aup);
        th_pipe_close(&adown);
        th_pipe_close(&bup);
        th_pipe_close(&bdown);
        long long now_outside = keys_outside_prefix();
        if (now_outside != outside)
            fail_msg("round %d: %lld keys appeared outside the prefix %s", round,
                     now_outside - outside, th_prefix());
    }
    munmap(g_sh, sizeof *g_sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_timed_never_early_remote),
        TH_TEST(test_timed_never_early_local),
        TH_TEST(test_clock_never_early),
        TH_TEST(test_clock_other_einval),
        TH_TEST(test_try_says_ebusy),
        TH_TEST(test_shared_object_siblings),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
