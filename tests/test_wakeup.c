/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_wakeup.c - waiters are woken by a push, not by polling: latency of a
 * handoff with the default 30 s lease (fallback every 10 s), recovery from a
 * dead holder, the release/subscribe race, lost notifications, and a fixed
 * number of connections however many threads wait.
 */
#include "harness.h"
#include "status.h"

#include <errno.h>
#include <string.h>

/* We hold m, and the process w asks for it: returns once w waits in
 * Redis's queue, so that what follows is a handoff to a waiter. */
static void hold_with_waiter(dist_mutex_t *m, th_proc_t *w, const char *name)
{
    TH_ASSERT_RC(dist_mutex_lock(m), 0);
    assert_int_equal(th_proc_op_async(w, TH_M_LOCK, name), 0);
    th_wait_queued(name, 1);
}

/* We release m and the waiting process w must get it: the ms from our
 * release to the return of w's lock call. */
static int64_t release_to_waiter(dist_mutex_t *m, th_proc_t *w)
{
    th_res_t r;
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(dist_mutex_unlock(m), 0);
    assert_int_equal(th_proc_recv(w, &r, 15000), 0);
    TH_ASSERT_RC(r.rc, 0);
    return (r.t_done_us - t_rel) / 1000;
}

static void test_push_wakeup_latency(void **state)
{
    enum { ROUNDS = 9 };
    char name[128];
    th_name(name, sizeof name, "push");
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    th_proc_t w;
    assert_int_equal(th_proc_start(&w, NULL), 0);
    th_res_t r;
    int64_t lat[ROUNDS];

    for (int i = 0; i < ROUNDS; i++) {
        hold_with_waiter(&m, &w, name);
        lat[i] = release_to_waiter(&m, &w);
        TH_ASSERT_RC(th_proc_op(&w, TH_M_UNLOCK, name), 0);
    }
    int64_t worst = 0;
    for (int i = 0; i < ROUNDS; i++)
        if (lat[i] > worst)
            worst = lat[i];
    int64_t med = th_median(lat, ROUNDS);
    print_message("handoff to a waiting process: median %lld ms, worst %lld ms\n",
                  (long long)med, (long long)worst);
    if (worst >= 200)
        fail_msg("a waiter got a released lock only after %lld ms (lease 30 s)", (long long)worst);
    if (med >= 50)
        fail_msg("median handoff %lld ms", (long long)med);
    TH_ASSERT_RC(th_proc_opa(&w, TH_STATS, name, 0, &r), 0);
    if (r.fence != 0)
        fail_msg("%llu waits of the waiter ended by the fallback timer, not a push",
                 (unsigned long long)r.fence);
    assert_int_equal(th_proc_stop(&w), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* The holder (1000 ms lease) is SIGKILLed while we wait: no release is
 * ever published, yet we get the lock within the lease plus a second. */
static void test_waiter_recovers_from_dead_holder(void **state)
{
    static const char *const env[] = { "DISTLOCK_LEASE_MS=1000", NULL };
    char name[128];
    th_name(name, sizeof name, "deadholder");
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, env), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    th_actor_t *a = th_actor_new();
    th_lockcall_t c = { .m = &m };
    th_actor_post(a, th_do_lock, &c);
    th_wait_queued(name, 1);
    int64_t t_kill = th_now_us();
    th_proc_kill(&h);
    int rc = -1;
    assert_int_equal(th_actor_wait(a, &rc, 15000), 0);
    TH_ASSERT_RC(rc, EOWNERDEAD);
    int64_t el = (c.t_done_us - t_kill) / 1000;
    print_message("got the lock %lld ms after its holder died\n", (long long)el);
    if (el > 2000)
        fail_msg("waited %lld ms for a lock whose holder died (lease 1000 ms)", (long long)el);
    TH_ASSERT_RC(th_actor_call(a, th_do_unlock, &c), 0);
    th_actor_free(a);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* 0-2 ms, but most often within the first 300 us, where the release
 * meets the waiter's attempt in Redis. */
static long race_offset_us(void)
{
    return rand() % 3 == 0 ? rand() % 2000 : rand() % 300;
}

/* Many rounds in which the release lands within 0-2 ms of the waiter
 * starting to wait, both ways round; every wait must end by the push (or
 * the attempt), never by the 10 s fallback: the library's count of waits
 * the fallback ended says so, and each wait must end well before it.
 * (Under valgrind, beside other CI work on 2 cores, a first wait ended by
 * its push took 234 ms: the bound is a fifth of the fallback, not a
 * speed target.) */
#define RACE_BOUND_MS 2000
static void test_release_wait_race(void **state)
{
    enum { ROUNDS = 400 };
    char name[128];
    th_name(name, sizeof name, "race");
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    th_proc_t o;
    assert_int_equal(th_proc_start(&o, NULL), 0);
    th_req_t q;
    th_res_t r;

    /* No warm-up: the first wait of each process (subscriber just being
     * set up) is part of the race too. */
    TH_ASSERT_RC(th_proc_opa(&o, TH_STATS, name, 0, &r), 0);
    uint64_t other_fb0 = r.fence;

    dl_stats_t s0, s1;
    dl_stats_get(&s0);
    srand((unsigned)getpid());
    int64_t worst = 0;

    for (int i = 0; i < ROUNDS; i++) {
        if (i % 2 == 0) {
            /* the other process holds and releases; we wait */
            TH_ASSERT_RC(th_proc_op(&o, TH_M_LOCK, name), 0);
            th_proc_req(&q, TH_M_UNLOCK, name);
            q.delay_us = race_offset_us();
            assert_int_equal(th_proc_send(&o, &q), 0);
            if (rand() % 3 == 0)
                th_sleep_us(rand() % 1000);
            int64_t t0 = th_now_us();
            TH_ASSERT_RC(dist_mutex_lock(&m), 0);
            int64_t el = (th_now_us() - t0) / 1000;
            if (el > worst)
                worst = el;
            if (el >= RACE_BOUND_MS)
                fail_msg("round %d: lock took %lld ms after a release %ld us away",
                         i, (long long)el, q.delay_us);
            assert_int_equal(th_proc_recv(&o, &r, 5000), 0);
            TH_ASSERT_RC(r.rc, 0);
            TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
        } else {
            /* we hold and release; the other process waits */
            TH_ASSERT_RC(dist_mutex_lock(&m), 0);
            assert_int_equal(th_proc_op_async(&o, TH_M_LOCK, name), 0);
            th_sleep_us(race_offset_us());
            int64_t t_rel = th_now_us();
            TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
            assert_int_equal(th_proc_recv(&o, &r, 15000), 0);
            TH_ASSERT_RC(r.rc, 0);
            int64_t el = (r.t_done_us - (r.t_start_us > t_rel ? r.t_start_us : t_rel)) / 1000;
            if (el > worst)
                worst = el;
            if (el >= RACE_BOUND_MS)
                fail_msg("round %d: the other process got the lock %lld ms after the release",
                         i, (long long)el);
            TH_ASSERT_RC(th_proc_op(&o, TH_M_UNLOCK, name), 0);
        }
    }
    dl_stats_get(&s1);
    print_message("%d rounds, worst wait %lld ms\n", ROUNDS, (long long)worst);
    if (s1.fallback_checks != s0.fallback_checks)
        fail_msg("%lu of our waits ended by the fallback timer, not a push",
                 s1.fallback_checks - s0.fallback_checks);
    TH_ASSERT_RC(th_proc_opa(&o, TH_STATS, name, 0, &r), 0);
    if (r.fence != other_fb0)
        fail_msg("%llu of the other process's waits ended by the fallback timer, not a push",
                 (unsigned long long)(r.fence - other_fb0));
    assert_int_equal(th_proc_stop(&o), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* The waiter's subscriber connection is killed just before the release:
 * the waiter must notice and get the lock well before lease/3 (10 s). */
static void test_lost_notification_subscriber_killed(void **state)
{
    char name[128];
    th_name(name, sizeof name, "subkill");
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    th_proc_t w;
    assert_int_equal(th_proc_start(&w, NULL), 0);

    for (int round = 0; round < 3; round++) {
        hold_with_waiter(&m, &w, name);
        th_sleep_ms(20);
        long long killed = th_kill_subscribers_of(w.pid);
        if (killed < 1)
            fail_msg("round %d: found no pub/sub connection of the waiting process to kill", round);
        if (round == 1)
            th_sleep_ms(30);        /* let it reconnect first, this time */
        int64_t el = release_to_waiter(&m, &w);
        print_message("round %d: %lld subscriber(s) killed, waiter got the lock after %lld ms\n",
                      round, killed, (long long)el);
        if (el > 3000)
            fail_msg("after a lost release notification the waiter waited %lld ms", (long long)el);
        TH_ASSERT_RC(th_proc_op(&w, TH_M_UNLOCK, name), 0);
    }

    /* and pushes work again afterwards */
    hold_with_waiter(&m, &w, name);
    th_sleep_ms(100);
    int64_t el = release_to_waiter(&m, &w);
    if (el >= 200)
        fail_msg("after the subscriber came back a handoff took %lld ms", (long long)el);
    TH_ASSERT_RC(th_proc_op(&w, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&w), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* The lock key is deleted behind everyone's back (no notification at all):
 * a waiter with a 1500 ms lease finds out by its fallback check (500 ms). */
static void test_lost_notification_key_deleted(void **state)
{
    static const char *const env[] = { "DISTLOCK_LEASE_MS=1500", NULL };
    char name[128], key[300];
    th_name(name, sizeof name, "keydel");
    th_key(key, sizeof key, name, "");
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    th_proc_t w;
    assert_int_equal(th_proc_start(&w, env), 0);
    th_res_t r;

    hold_with_waiter(&m, &w, name);             /* ours: a 30 s lease */
    th_sleep_ms(50);
    int64_t t_del = th_now_us();
    assert_int_equal(th_cmd_ll("DEL %s", key), 1);
    assert_int_equal(th_proc_recv(&w, &r, 15000), 0);
    if (r.rc != 0 && r.rc != EOWNERDEAD)
        fail_msg("waiter: %s", th_errname(r.rc));
    int64_t el = (r.t_done_us - t_del) / 1000;
    print_message("waiter got the deleted lock after %lld ms\n", (long long)el);
    if (el > 2000)
        fail_msg("waiter (lease 1500 ms, fallback 500 ms) needed %lld ms", (long long)el);
    TH_ASSERT_RC(dist_mutex_unlock(&m), ENOLCK);
    TH_ASSERT_RC(th_proc_op(&w, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    assert_int_equal(th_proc_stop(&w), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* TCP connections of this process to the suite's server. */
static long long connected_clients(void)
{
    return th_proc_sockets(0, th_redis_port(), NULL, 0);
}

/* 16 threads waiting on 16 locks use no more connections than one does,
 * and all are woken when the locks are released. */
static void test_connections_fixed(void **state)
{
    enum { NT = 16 };
    char names[NT][96];
    dist_mutex_t m[NT];
    th_actor_t *a[NT];
    th_lockcall_t c[NT];
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    for (int i = 0; i < NT; i++) {
        th_name(names[i], sizeof names[i], "conns");
        TH_ASSERT_RC(dist_mutex_init(&m[i], names[i], NULL), 0);
        TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, names[i]), 0);
        a[i] = th_actor_new();
        c[i] = (th_lockcall_t){ .m = &m[i] };
    }
    th_actor_post(a[0], th_do_lock, &c[0]);
    th_wait_queued(names[0], 1);
    th_sleep_ms(100);
    long long c1 = connected_clients();
    for (int i = 1; i < NT; i++)
        th_actor_post(a[i], th_do_lock, &c[i]);
    for (int i = 1; i < NT; i++)
        th_wait_queued(names[i], 1);
    th_sleep_ms(100);
    long long cn = connected_clients();
    print_message("our connections with 1 waiting thread: %lld, with %d: %lld\n", c1, NT, cn);
    assert_true(c1 >= 2);                /* ours for inspection, and the library's */
    if (cn > c1 + 1)
        fail_msg("%d waiting threads opened %lld more connections than one", NT, cn - c1);
    int64_t t_rel = th_now_us();
    for (int i = 0; i < NT; i++)
        TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, names[i]), 0);
    for (int i = 0; i < NT; i++) {
        int rc = -1;
        assert_int_equal(th_actor_wait(a[i], &rc, 15000), 0);
        TH_ASSERT_RC(rc, 0);
        if ((c[i].t_done_us - t_rel) / 1000 > 2000)
            fail_msg("thread %d woke %lld ms after the release", i,
                     (long long)((c[i].t_done_us - t_rel) / 1000));
        TH_ASSERT_RC(th_actor_call(a[i], th_do_unlock, &c[i]), 0);
        th_actor_free(a[i]);
        TH_ASSERT_RC(dist_mutex_destroy(&m[i]), 0);
    }
    assert_int_equal(th_proc_stop(&h), 0);
}

/* Several threads of this process wait on one lock held by another
 * process: each gets it in turn, promptly. */
static void test_local_waiters_all_served(void **state)
{
    enum { NT = 4 };
    char name[128];
    th_name(name, sizeof name, "localwait");
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
    th_actor_t *a[NT];
    th_lockcall_t c[NT];
    for (int i = 0; i < NT; i++) {
        a[i] = th_actor_new();
        c[i] = (th_lockcall_t){ .m = &m };
        th_actor_post(a[i], th_do_lock, &c[i]);
    }
    th_wait_queued(name, 1);
    th_sleep_ms(100);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, name), 0);
    int served[NT] = { 0 };
    for (int k = 0; k < NT; k++) {
        int who = -1, rc = -1;
        int64_t deadline = th_now_ms() + 3000;
        while (who < 0 && th_now_ms() < deadline) {
            for (int i = 0; i < NT && who < 0; i++)
                if (!served[i] && th_actor_wait(a[i], &rc, 1) == 0)
                    who = i;
        }
        if (who < 0)
            fail_msg("only %d of %d waiting threads got the lock within 3 s each", k, NT);
        TH_ASSERT_RC(rc, 0);
        served[who] = 1;
        TH_ASSERT_RC(th_proc_op(&h, TH_M_TRYLOCK, name), EBUSY);
        TH_ASSERT_RC(th_actor_call(a[who], th_do_unlock, &c[who]), 0);
    }
    for (int i = 0; i < NT; i++)
        th_actor_free(a[i]);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_TRYLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_push_wakeup_latency),
        TH_TEST(test_waiter_recovers_from_dead_holder),
        TH_TEST(test_release_wait_race),
        TH_TEST(test_lost_notification_subscriber_killed),
        TH_TEST(test_lost_notification_key_deleted),
        TH_TEST(test_connections_fixed),
        TH_TEST(test_local_waiters_all_served),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
