/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tenure.c - how long a process may use a Redis hold without asking
 * Redis again:
 *   - a hold whose last confirmed validity has passed (the process stalled
 *     longer than its lease) is never passed to another thread of the
 *     process; the stale holder's unlock says ENOLCK;
 *   - a hold pushed to a waiter lives the full lease at once, not only its
 *     claim window: a pause right after the handoff does not lose it;
 *   - a process whose threads keep a lock busy among themselves lets a
 *     waiting process in soon even when that process's push never reached
 *     it (here: it never subscribed).
 * The library runs only in helper processes, never in the test process,
 * which forks threaded children.
 */
#include "harness.h"
#include "harness_proxy.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * A lapsed hold is not passed on locally.  The child holds the lock in one
 * thread while a second thread waits for it locally; the whole child is
 * stopped for longer than its lease, another process takes the lock, the
 * child resumes and its holder unlocks.  Renewals that would tell the child
 * the hold is gone are slowed by the proxy, so only the hold's own validity
 * can stop the local handoff. */

enum { LAPSE_READY = 1, LAPSE_T2_GOT, LAPSE_T2_UNLOCKED, LAPSE_T1_UNLOCKED };

struct lapse_arg {
    char name[96];
    char url[64];
    int up, down;             /* to the parent, from it */
};

static dist_mutex_t lapse_m;
static int lapse_t2_started;

static void *lapse_t2(void *p)
{
    const struct lapse_arg *a = p;
    __atomic_store_n(&lapse_t2_started, 1, __ATOMIC_RELEASE);
    int rc = dist_mutex_lock(&lapse_m);
    th_send(a->up, LAPSE_T2_GOT, rc, th_now_us(), 0);
    if (rc == 0 || rc == EOWNERDEAD)
        th_send(a->up, LAPSE_T2_UNLOCKED, dist_mutex_unlock(&lapse_m), 0, 0);
    return NULL;
}

static int lapse_child(void *p)
{
    const struct lapse_arg *a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_LEASE_MS", "1000", 1);
    TH_CHECK_RC(dist_mutex_init(&lapse_m, a->name, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&lapse_m), 0);
    pthread_t t;
    TH_CHECK(pthread_create(&t, NULL, lapse_t2, (void *)a) == 0);
    while (!__atomic_load_n(&lapse_t2_started, __ATOMIC_ACQUIRE))
        th_sleep_ms(1);
    th_sleep_ms(100);                     /* t2 waits in the lock call */
    th_send(a->up, LAPSE_READY, 0, 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    th_send(a->up, LAPSE_T1_UNLOCKED, dist_mutex_unlock(&lapse_m), 0, 0);
    pthread_join(t, NULL);
    return 0;
}

static void test_lapsed_hold_not_passed_locally(void **state)
{
    static struct lapse_arg a;
    th_name(a.name, sizeof a.name, "lapse");
    th_proxy_t *px = th_proxy_url_for(a.url, sizeof a.url);
    th_steered_t c;
    char key[300];
    th_key(key, sizeof key, a.name, "");

    th_proc_t o;                          /* the other process */
    assert_int_equal(th_proc_start(&o, NULL), 0);
    th_steer(&c, lapse_child, &a, &a.up, &a.down);
    th_msg_t msg;
    th_steered_expect(&c, LAPSE_READY, &msg, 20000);

    /* Stalled past its lease: Redis lets the hold lapse, we take the lock. */
    kill(c.pid, SIGSTOP);
    th_proxy_mode(px, TH_PROXY_SLOW, 300);
    if (!th_wait_exists(key, 0, 10000))
        fail_msg("the stopped child's hold did not lapse (lease 1000 ms)");
    int rc = th_proc_op(&o, TH_M_TRYLOCK, a.name);
    if (rc != 0 && rc != EOWNERDEAD)
        fail_msg("trylock after the child's hold lapsed: %s", th_errname(rc));

    kill(c.pid, SIGCONT);
    th_send(c.down.wr, 1, 0, 0, 0);
    /* The stale holder learns it lost the lock; its waiting thread must not
     * be handed the lock while we hold it. */
    assert_int_equal(th_recv(c.up.rd, &msg, 10000), 0);
    if (msg.tag == LAPSE_T2_GOT)
        fail_msg("a thread of the stalled process got the lock (%s) while another "
                 "process held it", th_errname((int)msg.a));
    assert_int_equal(msg.tag, LAPSE_T1_UNLOCKED);
    if (msg.a != ENOLCK)
        fail_msg("the stale holder's unlock returned %s, want ENOLCK", th_errname((int)msg.a));
    if (th_recv(c.up.rd, &msg, 500) == 0)
        fail_msg("message %lld from the child while we hold the lock (%s)",
                 (long long)msg.tag, th_errname((int)msg.a));

    th_proxy_mode(px, TH_PROXY_PASS, 0);
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(&o, TH_M_UNLOCK, a.name), 0);
    th_steered_expect(&c, LAPSE_T2_GOT, &msg, 15000);
    TH_ASSERT_RC((int)msg.a, 0);
    assert_true(msg.b >= t_rel);
    th_steered_expect(&c, LAPSE_T2_UNLOCKED, &msg, 10000);
    TH_ASSERT_RC((int)msg.a, 0);
    th_steered_end(&c);
    assert_int_equal(th_proc_stop(&o), 0);
    th_proxy_stop(px);
}

/* ------------------------------------------------------------------------
 * A pushed grant survives a pause longer than its claim window (2 s) and
 * shorter than its lease (6 s): the grantee restored the lease at once. */
static void test_grant_survives_pause_after_handoff(void **state)
{
    static const char *const lease6000[] = { "DISTLOCK_LEASE_MS=6000", NULL };
    char name[128], key[300];
    th_name(name, sizeof name, "claimpause");
    th_key(key, sizeof key, name, "");
    th_proc_t h, g, o;                    /* holder, grantee, onlooker */
    assert_int_equal(th_proc_start(&h, NULL), 0);
    assert_int_equal(th_proc_start(&g, lease6000), 0);
    assert_int_equal(th_proc_start(&o, NULL), 0);

    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(&g, TH_M_LOCK, name), 0);
    th_wait_queued(name, 1);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, name), 0);   /* pushed to g */
    th_res_t res;
    assert_int_equal(th_proc_recv(&g, &res, 15000), 0);
    TH_ASSERT_RC(res.rc, 0);
    kill(g.pid, SIGSTOP);                                  /* right after the handoff */
    int64_t t_stop = th_now_ms();

    th_sleep_ms(2500 - (th_now_ms() - t_stop));
    long long pttl = th_cmd_ll("PTTL %s", key);
    int trc = th_proc_op(&o, TH_M_TRYLOCK, name);
    if (trc == 0 || trc == EOWNERDEAD)
        th_proc_op(&o, TH_M_UNLOCK, name);
    kill(g.pid, SIGCONT);
    if (trc != EBUSY)
        fail_msg("2.5 s into a pause of the grantee the lock was free (trylock %s, PTTL %lld; "
                 "lease 6 s)", th_errname(trc), pttl);
    assert_true(pttl > 0);
    TH_ASSERT_RC(th_proc_op(&g, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&o, TH_M_TRYLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&o, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&g), 0);
    assert_int_equal(th_proc_stop(&o), 0);
}

/* ------------------------------------------------------------------------
 * No starvation without pushes.  The child's first hold comes from a
 * trylock, so it never subscribes and hears no push; three threads then
 * loop over the lock with overlapping holds, passing the hold among
 * themselves.  A process that waits for the lock must get it while they
 * still loop. */

struct busy_arg {
    char name[96];
    char url[64];             /* "": the suite's server */
    int subscribe;            /* first hold by lock (subscribed), not trylock */
    int up, down;
};

static dist_mutex_t busy_m;
static int busy_stop;
static unsigned long busy_iters[3];
static int busy_err;

static void *busy_loop(void *p)
{
    unsigned long *n = p;
    while (!__atomic_load_n(&busy_stop, __ATOMIC_ACQUIRE)) {
        int rc = dist_mutex_lock(&busy_m);
        if (rc != 0 && rc != EOWNERDEAD) {
            __atomic_store_n(&busy_err, rc, __ATOMIC_RELAXED);
            break;
        }
        th_sleep_us(500);
        __atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
        if ((rc = dist_mutex_unlock(&busy_m)) != 0) {
            __atomic_store_n(&busy_err, rc, __ATOMIC_RELAXED);
            break;
        }
    }
    return NULL;
}

static int busy_child(void *p)
{
    const struct busy_arg *a = p;
    if (a->url[0])
        setenv("DISTLOCK_URL", a->url, 1);
    TH_CHECK_RC(dist_mutex_init(&busy_m, a->name, NULL), 0);
    TH_CHECK_RC(a->subscribe ? dist_mutex_lock(&busy_m) : dist_mutex_trylock(&busy_m), 0);
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        TH_CHECK(pthread_create(&t[i], NULL, busy_loop, &busy_iters[i]) == 0);
    th_sleep_ms(50);                      /* they wait: the hold passes to them */
    TH_CHECK_RC(dist_mutex_unlock(&busy_m), 0);
    while (__atomic_load_n(&busy_iters[0], __ATOMIC_RELAXED) + __atomic_load_n(&busy_iters[1], __ATOMIC_RELAXED) +
           __atomic_load_n(&busy_iters[2], __ATOMIC_RELAXED) < 100 && !__atomic_load_n(&busy_err, __ATOMIC_RELAXED))
        th_sleep_ms(1);
    th_send(a->up, 1, 0, 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    __atomic_store_n(&busy_stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    TH_CHECK_RC(busy_err, 0);
    th_send(a->up, 2, (int64_t)(busy_iters[0] + busy_iters[1] + busy_iters[2]), 0, 0);
    TH_CHECK_RC(dist_mutex_destroy(&busy_m), 0);
    return 0;
}

/* px: NULL, or the proxy the child goes through, whose pushes it mutes
 * once the child's threads loop. */
static void check_not_starved(const struct busy_arg *in, th_proxy_t *px)
{
    struct busy_arg a = *in;  /* the pipes are this call's */
    th_steered_t c;
    th_proc_t b;
    assert_int_equal(th_proc_start(&b, NULL), 0);
    th_steer(&c, busy_child, &a, &a.up, &a.down);
    th_msg_t msg;
    th_steered_expect(&c, 1, &msg, 20000);
    if (px)
        th_proxy_mute_pushes(px, 1);

    /* The child's threads loop until told to stop; b must get in meanwhile. */
    assert_int_equal(th_proc_op_async(&b, TH_M_LOCK, a.name), 0);
    th_res_t res;
    int got = th_proc_recv(&b, &res, 3000) == 0;
    th_send(c.down.wr, 1, 0, 0, 0);
    if (!got) {
        assert_int_equal(th_proc_recv(&b, &res, 15000), 0);
        fail_msg("a waiting process got the lock only after the local threads of the "
                 "holder stopped looping (%lld ms)",
                 (long long)((res.t_done_us - res.t_start_us) / 1000));
    }
    TH_ASSERT_RC(res.rc, 0);
    print_message("a process waiting for a lock kept busy by another's threads (%s) "
                  "got it after %lld ms\n", px ? "pushes muted" : "never subscribed",
                  (long long)((res.t_done_us - res.t_start_us) / 1000));
    TH_ASSERT_RC(th_proc_op(&b, TH_M_UNLOCK, a.name), 0);
    th_steered_expect(&c, 2, &msg, 20000);
    th_steered_end(&c);
    assert_int_equal(th_proc_stop(&b), 0);
}

static void test_remote_waiter_not_starved_without_push(void **state)
{
    static struct busy_arg a;
    th_name(a.name, sizeof a.name, "busy");
    check_not_starved(&a, NULL);
}

/* The same with a subscribed holder whose pushes are lost. */
static void test_remote_waiter_not_starved_pushes_muted(void **state)
{
    static struct busy_arg a;
    th_name(a.name, sizeof a.name, "busymute");
    th_proxy_t *px = th_proxy_url_for(a.url, sizeof a.url);
    a.subscribe = 1;
    check_not_starved(&a, px);
    th_proxy_stop(px);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_lapsed_hold_not_passed_locally),
        TH_TEST(test_grant_survives_pause_after_handoff),
        TH_TEST(test_remote_waiter_not_starved_without_push),
        TH_TEST(test_remote_waiter_not_starved_pushes_muted),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
