/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fair.c - fair mutexes grant in the order requests reached Redis,
 * across processes, without local handoff past a waiting process, and a
 * waiter that dies in the queue does not block it beyond its deadline.
 */
#include "harness.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

#define NW 5

/* Every request of these tests asks for a fair mutex: the attribute is
 * applied when the helper process first makes its object of that name. */
static void fair_req(th_req_t *q, int op, const char *name)
{
    th_proc_req(q, op, name);
    q->fair = 1;
}

static void init_fair(dist_mutex_t *m, const char *name)
{
    dist_mutexattr_t at;
    TH_ASSERT_RC(dist_mutexattr_init(&at), 0);
    TH_ASSERT_RC(dist_mutexattr_setfair(&at, 1), 0);
    TH_ASSERT_RC(dist_mutex_init(m, name, &at), 0);
    TH_ASSERT_RC(dist_mutexattr_destroy(&at), 0);
}

/* Each of the n procs in turn asks for the fair mutex name, and is seen in
 * its queue (qkey) before the next one asks: their arrival order in Redis
 * is 0..n-1.  pause_ms: a further pause after each one. */
static void queue_in_order(th_proc_t *p, int n, const char *name, const char *qkey, long pause_ms)
{
    th_req_t q;
    for (int i = 0; i < n; i++) {
        fair_req(&q, TH_M_LOCK, name);
        assert_int_equal(th_proc_send(&p[i], &q), 0);
        if (!th_wait_zcard(qkey, i + 1, 5000))
            fail_msg("waiter %d never showed up in %s", i, qkey);
        if (pause_ms)
            th_sleep_ms(pause_ms);
    }
}

/* Which of the n procs (skipping done[i]) answers first; -1 on time-out. */
static int first_answer(th_proc_t *p, const int *done, int n, long timeout_ms)
{
    struct pollfd pfd[16];
    int idx[16], k = 0;
    for (int i = 0; i < n; i++)
        if (!done[i]) {
            pfd[k].fd = p[i].res_rd;
            pfd[k].events = POLLIN;
            idx[k++] = i;
        }
    int r = poll(pfd, (nfds_t)k, (int)timeout_ms);
    if (r <= 0)
        return -1;
    int found = -1, count = 0;
    for (int j = 0; j < k; j++)
        if (pfd[j].revents) {
            if (found < 0)
                found = idx[j];
            count++;
        }
    if (count > 1)
        return -2;          /* two holders at once */
    return found;
}

/* Queues NW processes one after the other (each confirmed in Redis before
 * the next starts), then checks they acquire in exactly that order. */
static void test_fair_arrival_order(void **state)
{
    char name[128], qkey[300];
    th_name(name, sizeof name, "fair");
    th_key(qkey, sizeof qkey, name, ":q");
    dist_mutex_t m;
    init_fair(&m, name);
    th_proc_t p[NW];
    for (int i = 0; i < NW; i++)
        assert_int_equal(th_proc_start(&p[i], NULL), 0);

    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    queue_in_order(p, NW, name, qkey, 30);
    th_req_t q;
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);

    int done[NW] = { 0 };
    for (int k = 0; k < NW; k++) {
        int who = first_answer(p, done, NW, 10000);
        if (who == -2)
            fail_msg("two waiters acquired at once at step %d", k);
        if (who != k)
            fail_msg("acquisition %d went to waiter %d (arrival order 0..%d)", k, who, NW - 1);
        th_res_t r;
        assert_int_equal(th_proc_recv(&p[who], &r, 1000), 0);
        TH_ASSERT_RC(r.rc, 0);
        done[who] = 1;
        /* nobody else got it meanwhile */
        TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
        fair_req(&q, TH_M_UNLOCK, name);
        TH_ASSERT_RC(th_proc_call(&p[who], &q, NULL), 0);
    }
    for (int i = 0; i < NW; i++)
        assert_int_equal(th_proc_stop(&p[i]), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* A thread of the holding process that starts waiting after another process
 * queued must not get the lock first (no local handoff past it). */
static void test_fair_no_local_handoff_past_process(void **state)
{
    char name[128], qkey[300];
    th_name(name, sizeof name, "fairlocal");
    th_key(qkey, sizeof qkey, name, ":q");
    dist_mutex_t m;
    init_fair(&m, name);
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    th_actor_t *b = th_actor_new();
    th_lockcall_t c = { .m = &m };

    for (int round = 0; round < 3; round++) {
        TH_ASSERT_RC(dist_mutex_lock(&m), 0);
        th_req_t q;
        fair_req(&q, TH_M_LOCK, name);
        assert_int_equal(th_proc_send(&p, &q), 0);
        if (!th_wait_zcard(qkey, 1, 5000))
            fail_msg("the other process never queued");
        th_actor_post(b, th_do_lock, &c);
        th_sleep_ms(150);                          /* b now waits too */
        TH_ASSERT_RC(dist_mutex_unlock(&m), 0);

        th_res_t r;
        assert_int_equal(th_proc_recv(&p, &r, 10000), 0);
        TH_ASSERT_RC(r.rc, 0);
        int rc = -1;
        if (th_actor_wait(b, &rc, 200) == 0)
            fail_msg("round %d: the local thread got the lock (%s) while the other process, "
                     "queued first, was waiting or holding", round, th_errname(rc));
        fair_req(&q, TH_M_UNLOCK, name);
        TH_ASSERT_RC(th_proc_call(&p, &q, NULL), 0);
        assert_int_equal(th_actor_wait(b, &rc, 10000), 0);
        TH_ASSERT_RC(rc, 0);
        assert_true(c.t_done_us > r.t_done_us);
        TH_ASSERT_RC(th_actor_call(b, th_do_unlock, &c), 0);
    }
    th_actor_free(b);
    assert_int_equal(th_proc_stop(&p), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* A queued waiter is SIGKILLed: the rest, all with 1000 ms leases, still
 * acquire, in order, within a few seconds. */
static void test_fair_dead_waiter(void **state)
{
    static const char *const env[] = { "DISTLOCK_LEASE_MS=1000", NULL };
    char name[128], qkey[300];
    th_name(name, sizeof name, "fairdead");
    th_key(qkey, sizeof qkey, name, ":q");
    dist_mutex_t m;
    init_fair(&m, name);
    th_proc_t p[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(th_proc_start(&p[i], env), 0);

    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    queue_in_order(p, 4, name, qkey, 0);
    th_req_t q;
    th_proc_kill(&p[0]);                      /* the head of the queue dies */
    int64_t t0 = th_now_ms();
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);

    int done[4] = { 1, 0, 0, 0 };
    for (int k = 1; k < 4; k++) {
        int who = first_answer(p, done, 4, 10000);
        if (who == -2)
            fail_msg("two waiters acquired at once at step %d", k);
        if (who != k)
            fail_msg("acquisition %d went to waiter %d after %lld ms", k, who,
                     (long long)(th_now_ms() - t0));
        th_res_t r;
        assert_int_equal(th_proc_recv(&p[who], &r, 1000), 0);
        if (r.rc != 0 && !(k == 1 && r.rc == EOWNERDEAD))
            fail_msg("waiter %d: %s", who, th_errname(r.rc));
        done[who] = 1;
        fair_req(&q, TH_M_UNLOCK, name);
        TH_ASSERT_RC(th_proc_call(&p[who], &q, NULL), 0);
    }
    int64_t el = th_now_ms() - t0;
    print_message("all live waiters served %lld ms after the release\n", (long long)el);
    if (el > 5000)
        fail_msg("the dead waiter held up the queue for %lld ms", (long long)el);
    for (int i = 1; i < 4; i++)
        assert_int_equal(th_proc_stop(&p[i]), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* A waiter killed in the middle of the queue and then left past its own
 * registration deadline (1000 ms lease) is skipped at once: the waiter
 * behind it gets the lock by push, not after a grant to the dead one lapses. */
static void test_fair_expired_dead_waiter_skipped(void **state)
{
    static const char *const env[] = { "DISTLOCK_LEASE_MS=1000", NULL };
    char name[128], qkey[300];
    th_name(name, sizeof name, "fairexpired");
    th_key(qkey, sizeof qkey, name, ":q");
    dist_mutex_t m;
    init_fair(&m, name);
    th_proc_t p[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(th_proc_start(&p[i], env), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    queue_in_order(p, 3, name, qkey, 0);
    th_req_t q;
    th_proc_kill(&p[1]);
    th_sleep_ms(1800);                        /* past the dead one's deadline */
    int done[3] = { 0, 1, 0 };
    th_res_t r;
    int64_t t0 = th_now_us();
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    int who = first_answer(p, done, 3, 10000);
    assert_int_equal(who, 0);
    assert_int_equal(th_proc_recv(&p[0], &r, 1000), 0);
    TH_ASSERT_RC(r.rc, 0);
    done[0] = 1;
    t0 = th_now_us();
    fair_req(&q, TH_M_UNLOCK, name);
    TH_ASSERT_RC(th_proc_call(&p[0], &q, NULL), 0);
    who = first_answer(p, done, 3, 10000);
    assert_int_equal(who, 2);
    assert_int_equal(th_proc_recv(&p[2], &r, 1000), 0);
    TH_ASSERT_RC(r.rc, 0);                    /* nobody's lease ran out */
    int64_t el = (r.t_done_us - t0) / 1000;
    print_message("the waiter behind the expired dead one got the lock after %lld ms\n",
                  (long long)el);
    if (el > 500)
        fail_msg("the waiter behind an expired dead waiter got the lock after %lld ms",
                 (long long)el);
    TH_ASSERT_RC(th_proc_call(&p[2], &q, NULL), 0);
    assert_int_equal(th_proc_stop(&p[0]), 0);
    assert_int_equal(th_proc_stop(&p[2]), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* A timed waiter that gives up leaves the queue: it does not hold up those
 * behind it. */
static void test_fair_timed_out_waiter_leaves_queue(void **state)
{
    char name[128], qkey[300];
    th_name(name, sizeof name, "fairtimed");
    th_key(qkey, sizeof qkey, name, ":q");
    dist_mutex_t m;
    init_fair(&m, name);
    th_proc_t a, b;
    assert_int_equal(th_proc_start(&a, NULL), 0);
    assert_int_equal(th_proc_start(&b, NULL), 0);

    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    th_req_t q;
    fair_req(&q, TH_M_TIMEDLOCK, name);
    q.arg = 400;
    assert_int_equal(th_proc_send(&a, &q), 0);
    assert_true(th_wait_zcard(qkey, 1, 5000));
    fair_req(&q, TH_M_LOCK, name);
    assert_int_equal(th_proc_send(&b, &q), 0);
    assert_true(th_wait_zcard(qkey, 2, 5000));
    th_res_t r;
    assert_int_equal(th_proc_recv(&a, &r, 5000), 0);
    TH_ASSERT_RC(r.rc, ETIMEDOUT);
    int64_t t0 = th_now_ms();
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    assert_int_equal(th_proc_recv(&b, &r, 10000), 0);
    TH_ASSERT_RC(r.rc, 0);
    int64_t el = r.t_done_us / 1000 - t0;
    if (el > 1000)
        fail_msg("the waiter behind a timed-out one got the lock %lld ms after the release",
                 (long long)el);
    fair_req(&q, TH_M_UNLOCK, name);
    TH_ASSERT_RC(th_proc_call(&b, &q, NULL), 0);
    TH_ASSERT_RC(th_proc_call(&a, &q, NULL), EPERM);     /* a never got it */
    assert_int_equal(th_proc_stop(&a), 0);
    assert_int_equal(th_proc_stop(&b), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_fair_arrival_order),
        TH_TEST(test_fair_no_local_handoff_past_process),
        TH_TEST(test_fair_dead_waiter),
        TH_TEST(test_fair_expired_dead_waiter_skipped),
        TH_TEST(test_fair_timed_out_waiter_leaves_queue),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
