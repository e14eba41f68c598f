/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lapse.c - SPEC, Return codes, ENOLCK: the unlock that ends a
 * thread's section on a lock (the one that brings its count back to zero)
 * returns ENOLCK when the hold the section began with lapsed at any time
 * before it, also where a relock inside the section took the lock anew
 * (that relock returned EOWNERDEAD; the lock is released all the same).
 * A 0 from it means no other holder could have been inside during the
 * section.  dist_onlost's function is still called once per lost hold.
 *
 * Each case loses the hold on purpose while its thread holds it, then
 * relocks reentrantly past the trust of the last confirmation (so the
 * relock asks Redis, finds the hold gone, and takes the lock anew):
 *   - a recursive mutex whose holder process is stopped (SIGSTOP) past its
 *     lease while another process takes and releases the lock (the
 *     scenario of issue 28); the others delete the lock's keys in Redis;
 *   - an rwlock held for writing, for reading, and for reading inside a
 *     write hold (a mixed section);
 *   - a mutex passed to a waiting thread of the process (a local handoff),
 *     and a read hold joined by a second reader thread;
 *   - a mutex taken by dist_mutex_lockall (the others of the set keep
 *     their codes);
 *   - a condition wait inside the section: a lapse before the wait (told
 *     to a relock, or found by the wait's release) still ends the section
 *     with ENOLCK.
 * In each: the relock says EOWNERDEAD, the unlocks inside the section
 * say 0, the one that ends it ENOLCK, the function is called once, the
 * lock is free afterwards, and a section without a lapse ends with 0.
 *
 * The library runs in each test's own process (the runner forks one per
 * test) or in the children it forks.
 */
#include "harness.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>

static int g_lost;

static void count_lost(const char *name, size_t len, uint64_t fence, void *arg)
{
    (void)name, (void)len, (void)fence, (void)arg;
    __atomic_add_fetch(&g_lost, 1, __ATOMIC_SEQ_CST);
}

static int lost_calls(void)
{
    return __atomic_load_n(&g_lost, __ATOMIC_SEQ_CST);
}

/* Redis loses the hold on name: its keys deleted (no sign reaches the
 * holder), then past the trust of the hold's last confirmation (40 ms), so
 * that the next relock asks Redis. */
static void lose(const char *name)
{
    th_lock_lose(0, name);
    th_sleep_ms(100);
}

/* The function was called `want` times by now, and no more a little later
 * (a second call would have come by then). */
static void told(int want, const char *what)
{
    for (int i = 0; i < 300 && lost_calls() < want; i++)
        th_sleep_ms(10);
    th_sleep_ms(300);
    if (lost_calls() != want)
        fail_msg("%s: dist_onlost's function was called %d times, want %d", what, lost_calls(),
                 want);
}

/* Nobody holds name: another process takes and releases it at once, and
 * is not told EOWNERDEAD (the section's end released it). */
static void free_now(const char *name, int rw)
{
    th_proc_t q;
    assert_int_equal(th_proc_start(&q, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&q, rw ? TH_RW_TRYWRLOCK : TH_M_TRYLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&q, rw ? TH_RW_UNLOCK : TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&q), 0);
}

static void init_recursive(dist_mutex_t *m, const char *name)
{
    dist_mutexattr_t a;
    assert_int_equal(dist_mutexattr_init(&a), 0);
    assert_int_equal(dist_mutexattr_settype(&a, DIST_MUTEX_RECURSIVE), 0);
    assert_int_equal(dist_mutex_init(m, name, &a), 0);
    dist_mutexattr_destroy(&a);
}

/* A section without a lapse, relocked inside: every unlock says 0. */
static void clean_mutex_section(dist_mutex_t *m)
{
    TH_ASSERT_RC(dist_mutex_lock(m), 0);
    TH_ASSERT_RC(dist_mutex_lock(m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(m), 0);
}

/* ------------------------------------------------------------------------
 * The holder process is stopped past its lease; another process takes and
 * releases the lock meanwhile; the holder resumes and relocks. */

enum { S_READY = 1, S_GO, S_DONE };

struct stopped {
    char name[96];
    int up, down;
};

static int stopped_child(void *arg)
{
    const struct stopped *s = arg;
    static const char *const env[] = { "DISTLOCK_LEASE_MS=1000", NULL };
    th_setenv_list(env);
    TH_CHECK_RC(dist_onlost(count_lost, NULL), 0);
    dist_mutex_t m;
    dist_mutexattr_t a;
    TH_CHECK_RC(dist_mutexattr_init(&a), 0);
    TH_CHECK_RC(dist_mutexattr_settype(&a, DIST_MUTEX_RECURSIVE), 0);
    TH_CHECK_RC(dist_mutex_init(&m, s->name, &a), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    th_send(s->up, S_READY, 0, 0, 0);
    th_msg_t msg;
    TH_CHECK(th_recv(s->down, &msg, 60000) == 0 && msg.tag == S_GO);
    int relock = dist_mutex_lock(&m);
    int inner = dist_mutex_unlock(&m);
    int last = dist_mutex_unlock(&m);
    for (int i = 0; i < 300 && lost_calls() < 1; i++)
        th_sleep_ms(10);
    th_sleep_ms(300);
    /* and the next section, without a lapse */
    int c1 = dist_mutex_lock(&m), c2 = dist_mutex_lock(&m);
    int c3 = dist_mutex_unlock(&m), c4 = dist_mutex_unlock(&m);
    th_send(s->up, S_DONE, relock | inner << 8 | last << 16, lost_calls(),
            c1 | c2 << 8 | c3 << 16 | c4 << 24);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static void test_mutex_holder_stopped(void **state)
{
    (void)state;
    static struct stopped s;
    th_name(s.name, sizeof s.name, "lapsestop");
    th_steered_t c;
    th_steer(&c, stopped_child, &s, &s.up, &s.down);
    th_msg_t m;
    if (th_recv(c.up.rd, &m, 30000) || m.tag != S_READY)
        fail_msg("the holder did not take the lock");
    kill(c.pid, SIGSTOP);
    /* Another process gets the lock once the stopped holder's lease (1 s)
     * has run out in Redis, and releases it. */
    th_proc_t q;
    assert_int_equal(th_proc_start(&q, NULL), 0);
    th_res_t r;
    int qrc = th_proc_opa(&q, TH_M_TIMEDLOCK, s.name, 10000, &r);
    if (qrc == 0 || qrc == EOWNERDEAD)
        TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, s.name), 0);
    kill(c.pid, SIGCONT);
    assert_int_equal(th_proc_stop(&q), 0);
    if (qrc != EOWNERDEAD)
        fail_msg("the other process's lock call said %s, want EOWNERDEAD (the stopped "
                 "holder's lease ran out)", th_errname(qrc));
    th_send(c.down.wr, S_GO, 0, 0, 0);
    if (th_recv(c.up.rd, &m, 30000) || m.tag != S_DONE)
        fail_msg("the holder did not report");
    int relock = (int)(m.a & 0xff), inner = (int)(m.a >> 8 & 0xff), last = (int)(m.a >> 16);
    print_message("stopped holder: relock %s, inner unlock %s, last unlock %s, told %lld\n",
                  th_errname(relock), th_errname(inner), th_errname(last), (long long)m.b);
    TH_ASSERT_RC(relock, EOWNERDEAD);
    TH_ASSERT_RC(inner, 0);
    if (last != ENOLCK)
        fail_msg("the unlock that ended the section said %s, want ENOLCK: another process "
                 "held the lock inside it", th_errname(last));
    assert_int_equal(m.b, 1);
    for (int i = 0; i < 4; i++)
        TH_ASSERT_RC((int)(m.c >> (8 * i) & 0xff), 0);
    TH_ASSERT_CHILD_OK(c.pid);
    free_now(s.name, 0);
}

/* ------------------------------------------------------------------------
 * A mutex, the keys deleted under its holder. */

static void test_mutex(void **state)
{
    (void)state;
    char name[96];
    th_name(name, sizeof name, "lapsemutex");
    assert_int_equal(dist_onlost(count_lost, NULL), 0);
    dist_mutex_t m;
    init_recursive(&m, name);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);          /* count 2 before the lapse */
    lose(name);
    TH_ASSERT_RC(dist_mutex_lock(&m), EOWNERDEAD);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), ENOLCK);
    told(1, "mutex");
    free_now(name, 0);
    clean_mutex_section(&m);
    assert_int_equal(lost_calls(), 1);
    assert_int_equal(dist_mutex_destroy(&m), 0);
}

/* ------------------------------------------------------------------------
 * An rwlock: held for writing, for reading, and for reading inside a
 * write hold. */

enum { RW_WRITE, RW_READ, RW_MIXED };

static void run_rwlock(int kind, const char *tag)
{
    char name[96];
    th_name(name, sizeof name, tag);
    assert_int_equal(dist_onlost(count_lost, NULL), 0);
    dist_rwlock_t rw;
    assert_int_equal(dist_rwlock_init(&rw, name, NULL), 0);
    int (*first)(dist_rwlock_t *) = kind == RW_READ ? dist_rwlock_rdlock : dist_rwlock_wrlock;
    int (*again)(dist_rwlock_t *) = kind == RW_WRITE ? dist_rwlock_wrlock : dist_rwlock_rdlock;
    TH_ASSERT_RC(first(&rw), 0);
    lose(name);
    TH_ASSERT_RC(again(&rw), EOWNERDEAD);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), ENOLCK);
    told(1, tag);
    free_now(name, 1);
    /* a section without a lapse */
    TH_ASSERT_RC(first(&rw), 0);
    TH_ASSERT_RC(again(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    assert_int_equal(lost_calls(), 1);
    assert_int_equal(dist_rwlock_destroy(&rw), 0);
}

static void test_rwlock_write(void **state)
{
    (void)state;
    run_rwlock(RW_WRITE, "lapsewr");
}

static void test_rwlock_read(void **state)
{
    (void)state;
    run_rwlock(RW_READ, "lapserd");
}

static void test_rwlock_mixed(void **state)
{
    (void)state;
    run_rwlock(RW_MIXED, "lapsemix");
}

/* ------------------------------------------------------------------------
 * A hold passed between the process's threads. */

struct pass {
    dist_mutex_t m;
    dist_rwlock_t rw;
    char name[96];
    sem_t held, go, done;
    int rc[4];
};

/* A thread that waits for the mutex held by the test's thread, gets it by
 * a local handoff, loses it, relocks and unlocks twice. */
static void *handoff_thread(void *p)
{
    struct pass *a = p;
    sem_post(&a->held);                   /* about to wait */
    a->rc[0] = dist_mutex_lock(&a->m);
    sem_post(&a->done);
    sem_wait(&a->go);
    a->rc[1] = dist_mutex_lock(&a->m);
    a->rc[2] = dist_mutex_unlock(&a->m);
    a->rc[3] = dist_mutex_unlock(&a->m);
    sem_post(&a->done);
    return NULL;
}

static void test_handoff(void **state)
{
    (void)state;
    static struct pass a;
    memset(&a, 0, sizeof a);
    th_name(a.name, sizeof a.name, "lapsehand");
    assert_int_equal(dist_onlost(count_lost, NULL), 0);
    init_recursive(&a.m, a.name);
    sem_init(&a.held, 0, 0);
    sem_init(&a.go, 0, 0);
    sem_init(&a.done, 0, 0);
    TH_ASSERT_RC(dist_mutex_lock(&a.m), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, handoff_thread, &a), 0);
    sem_wait(&a.held);
    th_sleep_ms(100);                     /* it waits in its lock call */
    dl_stats_t s0, s1;
    dl_stats_get(&s0);
    TH_ASSERT_RC(dist_mutex_unlock(&a.m), 0);
    sem_wait(&a.done);
    dl_stats_get(&s1);
    TH_ASSERT_RC(a.rc[0], 0);
    if (s1.local_handoffs != s0.local_handoffs + 1)
        fail_msg("the hold was not passed to the waiting thread locally (%lu handoffs)",
                 s1.local_handoffs - s0.local_handoffs);
    lose(a.name);
    sem_post(&a.go);
    sem_wait(&a.done);
    pthread_join(t, NULL);
    TH_ASSERT_RC(a.rc[1], EOWNERDEAD);
    TH_ASSERT_RC(a.rc[2], 0);
    TH_ASSERT_RC(a.rc[3], ENOLCK);
    told(1, "handoff");
    free_now(a.name, 0);
    clean_mutex_section(&a.m);
    assert_int_equal(dist_mutex_destroy(&a.m), 0);
}

/* A second reader thread joins the test thread's read hold; the hold is
 * lost; the joined reader reads again (EOWNERDEAD: it takes the lock
 * anew), and both sections end with ENOLCK: the joined one because its
 * relock saw the lapse, the first because its part was in the lost hold. */
static void *joiner_thread(void *p)
{
    struct pass *a = p;
    a->rc[0] = dist_rwlock_rdlock(&a->rw);
    sem_post(&a->done);
    sem_wait(&a->go);
    a->rc[1] = dist_rwlock_rdlock(&a->rw);
    a->rc[2] = dist_rwlock_unlock(&a->rw);
    a->rc[3] = dist_rwlock_unlock(&a->rw);
    sem_post(&a->done);
    return NULL;
}

static void test_reader_joined(void **state)
{
    (void)state;
    static struct pass a;
    memset(&a, 0, sizeof a);
    th_name(a.name, sizeof a.name, "lapsejoin");
    assert_int_equal(dist_onlost(count_lost, NULL), 0);
    assert_int_equal(dist_rwlock_init(&a.rw, a.name, NULL), 0);
    sem_init(&a.go, 0, 0);
    sem_init(&a.done, 0, 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&a.rw), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, joiner_thread, &a), 0);
    sem_wait(&a.done);
    TH_ASSERT_RC(a.rc[0], 0);
    lose(a.name);
    sem_post(&a.go);
    sem_wait(&a.done);
    pthread_join(t, NULL);
    TH_ASSERT_RC(a.rc[1], EOWNERDEAD);
    TH_ASSERT_RC(a.rc[2], 0);
    TH_ASSERT_RC(a.rc[3], ENOLCK);
    TH_ASSERT_RC(dist_rwlock_unlock(&a.rw), ENOLCK);
    told(1, "a joined reader");
    free_now(a.name, 1);
    assert_int_equal(dist_rwlock_destroy(&a.rw), 0);
}

/* ------------------------------------------------------------------------
 * A reader that leaves while another reader thread of the process stays.
 * Its unlock ends its section, but it is not the process's last: it used
 * to say 0 without asking Redis for as long as the hold's validity lasted
 * (up to a lease), even after a loss without a sign (keys deleted, a
 * flush, the server's clock jumping) had let a writer of another process
 * in.  Such an unlock asks Redis once the hold is past its trust (40 ms),
 * as a thread taking or joining it would. */

static void *leaver_thread(void *p)
{
    struct pass *a = p;
    a->rc[0] = dist_rwlock_rdlock(&a->rw);
    sem_post(&a->done);
    sem_wait(&a->go);
    a->rc[1] = dist_rwlock_unlock(&a->rw);
    sem_post(&a->done);
    return NULL;
}

static void run_leaver(struct pass *a, int lapse)
{
    TH_ASSERT_RC(dist_rwlock_rdlock(&a->rw), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, leaver_thread, a), 0);
    sem_wait(&a->done);
    TH_ASSERT_RC(a->rc[0], 0);
    /* past the renewal that the second reader's join asks for (20 ms):
     * the watchdog's next one is a third of the lease (30 s) away */
    th_sleep_ms(150);
    int wr = -1, wu = -1;
    if (lapse) {
        lose(a->name);
        th_proc_t q;
        assert_int_equal(th_proc_start(&q, NULL), 0);
        wr = th_proc_op(&q, TH_RW_TRYWRLOCK, a->name);
        if (wr == 0 || wr == EOWNERDEAD)
            wu = th_proc_op(&q, TH_RW_UNLOCK, a->name);
        assert_int_equal(th_proc_stop(&q), 0);
    } else {
        th_sleep_ms(100);
    }
    sem_post(&a->go);
    sem_wait(&a->done);
    pthread_join(t, NULL);
    int last = dist_rwlock_unlock(&a->rw);
    if (!lapse) {
        print_message("no lapse: the leaving reader's unlock %s, the last reader's %s\n",
                      th_errname(a->rc[1]), th_errname(last));
        TH_ASSERT_RC(a->rc[1], 0);
        TH_ASSERT_RC(last, 0);
        return;
    }
    print_message("keys deleted: another process's trywrlock %s, unlock %s; the leaving "
                  "reader's unlock %s, the last reader's %s\n", th_errname(wr), th_errname(wu),
                  th_errname(a->rc[1]), th_errname(last));
    TH_ASSERT_RC(wr, 0);
    TH_ASSERT_RC(wu, 0);
    if (a->rc[1] != ENOLCK)
        fail_msg("the reader that left beside another said %s, want ENOLCK: a writer of "
                 "another process held the lock inside its section", th_errname(a->rc[1]));
    TH_ASSERT_RC(last, ENOLCK);
}

static void test_reader_left_beside_another(void **state)
{
    (void)state;
    static struct pass a;
    memset(&a, 0, sizeof a);
    th_name(a.name, sizeof a.name, "lapseleave");
    assert_int_equal(dist_onlost(count_lost, NULL), 0);
    assert_int_equal(dist_rwlock_init(&a.rw, a.name, NULL), 0);
    sem_init(&a.go, 0, 0);
    sem_init(&a.done, 0, 0);
    run_leaver(&a, 1);
    told(1, "a reader left beside another");
    free_now(a.name, 1);
    run_leaver(&a, 0);
    assert_int_equal(lost_calls(), 1);
    assert_int_equal(dist_rwlock_destroy(&a.rw), 0);
}

/* ------------------------------------------------------------------------
 * Locks taken by dist_mutex_lockall: the one that lapsed and was relocked
 * ends its section with ENOLCK, the other keeps its 0. */

static void test_lockall(void **state)
{
    (void)state;
    char base[64], names[2][96];
    th_name(base, sizeof base, "lapseall");
    for (int i = 0; i < 2; i++)
        snprintf(names[i], sizeof names[i], "%s}%c", base, 'a' + i);   /* one slot */
    assert_int_equal(dist_onlost(count_lost, NULL), 0);
    dist_mutex_t m[2];
    init_recursive(&m[0], names[0]);
    init_recursive(&m[1], names[1]);
    dist_mutex_t *const ms[2] = { &m[0], &m[1] };
    TH_ASSERT_RC(dist_mutex_lockall(ms, 2), 0);
    lose(names[0]);
    TH_ASSERT_RC(dist_mutex_lock(&m[0]), EOWNERDEAD);
    TH_ASSERT_RC(dist_mutex_unlock(&m[0]), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m[0]), ENOLCK);
    TH_ASSERT_RC(dist_mutex_unlock(&m[1]), 0);
    told(1, "lock-all");
    free_now(names[0], 0);
    free_now(names[1], 0);
    /* a set taken again without a lapse, relocked inside */
    TH_ASSERT_RC(dist_mutex_lockall(ms, 2), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m[0]), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m[0]), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m[0]), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m[1]), 0);
    assert_int_equal(lost_calls(), 1);
    for (int i = 0; i < 2; i++)
        assert_int_equal(dist_mutex_destroy(&m[i]), 0);
}

/* ------------------------------------------------------------------------
 * A condition wait inside the section does not end it: a lapse before the
 * wait still ends the section with ENOLCK.  told: a relock was told of the
 * lapse before the wait (the wait then says what it waited for); else the
 * wait's own release finds it (the wait says EOWNERDEAD). */

static void run_cond(int relock_first, const char *tag)
{
    char name[96], cname[110];
    th_name(name, sizeof name, tag);
    snprintf(cname, sizeof cname, "%s.cv", name);
    assert_int_equal(dist_onlost(count_lost, NULL), 0);
    dist_mutex_t m;
    dist_cond_t c;
    init_recursive(&m, name);
    assert_int_equal(dist_cond_init(&c, cname, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    lose(name);
    if (relock_first)
        TH_ASSERT_RC(dist_mutex_lock(&m), EOWNERDEAD);
    struct timespec at = th_abstime_ms(50);
    TH_ASSERT_RC(dist_cond_timedwait(&c, &m, &at), relock_first ? ETIMEDOUT : EOWNERDEAD);
    if (relock_first)
        TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    int last = dist_mutex_unlock(&m);
    if (last != ENOLCK)
        fail_msg("the unlock that ended the section after a condition wait said %s, want "
                 "ENOLCK (the hold lapsed before the wait)", th_errname(last));
    told(1, tag);
    free_now(name, 0);
    /* a section with a wait and no lapse */
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    at = th_abstime_ms(50);
    TH_ASSERT_RC(dist_cond_timedwait(&c, &m, &at), ETIMEDOUT);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    assert_int_equal(lost_calls(), 1);
    assert_int_equal(dist_cond_destroy(&c), 0);
    assert_int_equal(dist_mutex_destroy(&m), 0);
}

static void test_cond_relocked_before_wait(void **state)
{
    (void)state;
    run_cond(1, "lapsecvr");
}

static void test_cond_found_by_wait(void **state)
{
    (void)state;
    run_cond(0, "lapsecvw");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_mutex_holder_stopped),
        TH_TEST(test_mutex),
        TH_TEST(test_rwlock_write),
        TH_TEST(test_rwlock_read),
        TH_TEST(test_rwlock_mixed),
        TH_TEST(test_handoff),
        TH_TEST(test_reader_joined),
        TH_TEST(test_reader_left_beside_another),
        TH_TEST(test_lockall),
        TH_TEST(test_cond_relocked_before_wait),
        TH_TEST(test_cond_found_by_wait),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
