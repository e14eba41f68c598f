/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lease.c - leases: a killed holder frees the lock within one lease
 * and its successor learns it (EOWNERDEAD); a fixed lease lapses and the
 * holder learns it at unlock (ENOLCK, log line); the default lease is
 * renewed by one batched watchdog round trip per tick; a hold lost while
 * held is detected.
 */
#include "harness.h"
#include "status.h"

#include <errno.h>
#include <string.h>

static const char *const lease1000[] = { "DISTLOCK_LEASE_MS=1000", NULL };

/* A holder with a 1000 ms lease is SIGKILLed: the next acquirer gets the
 * lock within about a lease, with EOWNERDEAD; the one after gets 0. */
static void test_killed_holder_ownerdead(void **state)
{
    char name[128];
    th_name(name, sizeof name, "killed");
    th_proc_t h, next;
    assert_int_equal(th_proc_start(&h, lease1000), 0);
    assert_int_equal(th_proc_start(&next, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);

    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
    int64_t t0 = th_now_ms();
    th_proc_kill(&h);
    TH_ASSERT_RC(dist_mutex_lock(&m), EOWNERDEAD);
    int64_t el = th_now_ms() - t0;
    if (el > 2500)
        fail_msg("lock after the holder died took %lld ms (lease 1000 ms)", (long long)el);
    /* EOWNERDEAD means acquired: the caller holds it */
    TH_ASSERT_RC(th_proc_op(&next, TH_M_TRYLOCK, name), EBUSY);
    uint64_t f;
    TH_ASSERT_RC(dist_mutex_getfence(&m, &f), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(th_proc_op(&next, TH_M_LOCK, name), 0);    /* a clean release before */
    TH_ASSERT_RC(th_proc_op(&next, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    assert_int_equal(th_proc_stop(&next), 0);
}

/* The same seen by trylock, and by the rwlock in both modes. */
static void test_killed_holder_trylock_and_rwlock(void **state)
{
    char name[128], rwname[128];
    th_name(name, sizeof name, "killedtry");
    th_name(rwname, sizeof rwname, "killedrw");
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, lease1000), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_RW_WRLOCK, rwname), 0);
    th_proc_kill(&h);

    dist_mutex_t m;
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_init(&rw, rwname, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_tryrdlock(&rw), EBUSY);        /* the lease still runs */
    th_sleep_ms(1300);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EOWNERDEAD);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    /* a dead writer: the next acquirer, a reader here, is told */
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), EOWNERDEAD);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* A fixed lease of 300 ms held for 800 ms: not renewed, lapses, unlock says
 * ENOLCK and a warning line names the lock. */
struct fixed_arg { const char *name; };

static int fixed_lease_child(void *p)
{
    struct fixed_arg *a = p;
    unsetenv("DISTLOCK_LOG");                 /* default: warn */
    char key[300];
    th_key(key, sizeof key, a->name, "");
    dist_mutexattr_t at;
    TH_CHECK_RC(dist_mutexattr_init(&at), 0);
    TH_CHECK_RC(dist_mutexattr_setlease(&at, 300), 0);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, a->name, &at), 0);
    int64_t t0 = th_now_ms();
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK(th_cmd_ll("EXISTS %s", key) == 1);
    long long pttl = th_cmd_ll("PTTL %s", key);
    TH_CHECK(pttl > 0 && pttl <= 300);
    th_sleep_ms(800 - (th_now_ms() - t0));
    TH_CHECK(th_cmd_ll("EXISTS %s", key) == 0);       /* not renewed */
    TH_CHECK_RC(dist_mutex_unlock(&m), ENOLCK);
    TH_CHECK(dist_lasterror()[0] != 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), EPERM);        /* the local hold was released */
    int rc = dist_mutex_trylock(&m);
    TH_CHECK(rc == 0 || rc == EOWNERDEAD);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    dl_stats_t s;
    dl_stats_get(&s);
    TH_CHECK(s.lost >= 1);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static void test_fixed_lease_lapses(void **state)
{
    char name[128];
    th_name(name, sizeof name, "fixed");
    struct fixed_arg a = { name };
    char *err = NULL;
    int st = th_run_capture_stderr(fixed_lease_child, &a, &err, 15000);
    if (st != 0)
        fail_msg("child status %d; its stderr:\n%s", st, err);
    /* one line that names the lock and says the hold was lost */
    int found = 0;
    for (char *line = strtok(err, "\n"); line; line = strtok(NULL, "\n"))
        if (strstr(line, name) &&
            (th_contains(line, "lost") || th_contains(line, "laps") || th_contains(line, "expire")))
            found = 1;
    if (!found)
        fail_msg("no log line says the hold of \"%s\" was lost; stderr was:\n%s", name, err);
    free(err);
}

/* While a fixed lease has lapsed, another process may take the lock (with
 * EOWNERDEAD and a greater fence); the late unlock of the first holder says
 * ENOLCK and does not release the new hold. */
static void test_fixed_lease_taken_over(void **state)
{
    char name[128];
    th_name(name, sizeof name, "takeover");
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    th_req_t q;
    th_proc_req(&q, TH_M_LOCK, name);
    q.lease_ms = 300;
    TH_ASSERT_RC(th_proc_call(&h, &q, NULL), 0);
    th_res_t res;
    q.op = TH_M_FENCE;
    TH_ASSERT_RC(th_proc_call(&h, &q, &res), 0);
    uint64_t f1 = res.fence;

    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
    th_sleep_ms(600);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EOWNERDEAD);
    uint64_t f2 = 0;
    TH_ASSERT_RC(dist_mutex_getfence(&m, &f2), 0);
    if (f2 <= f1)
        fail_msg("fence after take-over %llu is not above the lapsed holder's %llu",
                 (unsigned long long)f2, (unsigned long long)f1);
    q.op = TH_M_UNLOCK;
    TH_ASSERT_RC(th_proc_call(&h, &q, NULL), ENOLCK);
    q.op = TH_M_TRYLOCK;
    TH_ASSERT_RC(th_proc_call(&h, &q, NULL), EBUSY);      /* still ours */
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(th_proc_call(&h, &q, NULL), 0);
    q.op = TH_M_UNLOCK;
    TH_ASSERT_RC(th_proc_call(&h, &q, NULL), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    assert_int_equal(th_proc_stop(&h), 0);
}

/* Default lease 600 ms, 20 mutexes and one read hold kept for 2 s: all stay
 * held, and the watchdog renews them with about one round trip per tick. */
#define NLOCKS 20
struct renew_arg { char names[NLOCKS][96]; char rwname[96]; int to_parent, from_parent; };

static int renew_child(void *p)
{
    struct renew_arg *a = p;
    setenv("DISTLOCK_LEASE_MS", "600", 1);
    static dist_mutex_t m[NLOCKS];
    dist_rwlock_t rw;
    for (int i = 0; i < NLOCKS; i++) {
        TH_CHECK_RC(dist_mutex_init(&m[i], a->names[i], NULL), 0);
        TH_CHECK_RC(dist_mutex_lock(&m[i]), 0);
    }
    TH_CHECK_RC(dist_rwlock_init(&rw, a->rwname, NULL), 0);
    TH_CHECK_RC(dist_rwlock_rdlock(&rw), 0);
    dl_stats_t s0, s1;
    dl_stats_get(&s0);
    th_send(a->to_parent, 1, 0, 0, 0);
    th_sleep_ms(2000);
    dl_stats_get(&s1);
    th_send(a->to_parent, 2, (int64_t)(s1.watchdog_ticks - s0.watchdog_ticks),
            (int64_t)(s1.watchdog_roundtrips - s0.watchdog_roundtrips),
            (int64_t)(s1.renewed - s0.renewed));
    th_send(a->to_parent, 3, (int64_t)(s1.lost - s0.lost), 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->from_parent, &go, 20000) == 0);
    for (int i = 0; i < NLOCKS; i++)
        TH_CHECK_RC(dist_mutex_unlock(&m[i]), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    return 0;
}

static void test_default_lease_renewed(void **state)
{
    static struct renew_arg a;
    for (int i = 0; i < NLOCKS; i++)
        th_name(a.names[i], sizeof a.names[i], "renew");
    th_name(a.rwname, sizeof a.rwname, "renewrw");
    th_pipe_t up, down;
    th_pipe_open(&up);
    th_pipe_open(&down);
    a.to_parent = up.wr;
    a.from_parent = down.rd;
    th_proc_t other;
    assert_int_equal(th_proc_start(&other, NULL), 0);
    pid_t pid = th_fork_child(renew_child, &a);

    th_msg_t msg;
    assert_int_equal(th_recv(up.rd, &msg, 20000), 0);
    assert_int_equal(msg.tag, 1);
    int64_t t_end = th_now_ms() + 1900;
    int checks = 0;
    char key[300];
    while (th_now_ms() < t_end) {
        for (int i = 0; i < NLOCKS; i++) {
            th_key(key, sizeof key, a.names[i], "");
            long long pttl = th_cmd_ll("PTTL %s", key);
            if (pttl <= 0 || pttl > 600)
                fail_msg("lock %d: PTTL %lld after %d checks (lease 600 ms, renewed?)", i, pttl, checks);
        }
        TH_ASSERT_RC(th_proc_op(&other, TH_M_TRYLOCK, a.names[checks % NLOCKS]), EBUSY);
        TH_ASSERT_RC(th_proc_op(&other, TH_RW_TRYWRLOCK, a.rwname), EBUSY);
        checks++;
        th_sleep_ms(50);
    }
    assert_true(checks >= 5);
    assert_int_equal(th_recv(up.rd, &msg, 5000), 0);
    assert_int_equal(msg.tag, 2);
    long long ticks = msg.a, rtrips = msg.b, renewed = msg.c;
    assert_int_equal(th_recv(up.rd, &msg, 5000), 0);
    long long lost = msg.a;
    print_message("watchdog over 2 s: ticks %lld, round trips %lld, renewed %lld, lost %lld\n",
                  ticks, rtrips, renewed, lost);
    if (ticks < 3)
        fail_msg("only %lld watchdog ticks in 2 s with a 600 ms lease", ticks);
    if (rtrips > ticks + 1)
        fail_msg("%lld watchdog round trips for %lld ticks: renewals are not batched", rtrips, ticks);
    if (renewed < (NLOCKS + 1) * (ticks - 1))
        fail_msg("renewed %lld holds in %lld ticks with %d held", renewed, ticks, NLOCKS + 1);
    assert_int_equal(lost, 0);
    th_send(down.wr, 1, 0, 0, 0);
    TH_ASSERT_CHILD_OK(pid);
    /* released: free for others */
    TH_ASSERT_RC(th_proc_op(&other, TH_M_TRYLOCK, a.names[0]), 0);
    TH_ASSERT_RC(th_proc_op(&other, TH_M_UNLOCK, a.names[0]), 0);
    assert_int_equal(th_proc_stop(&other), 0);
    th_pipe_close(&up);
    th_pipe_close(&down);
}

/* A hold deleted behind the holder's back is found lost by the watchdog,
 * logged, and unlock says ENOLCK. */
static int lost_child(void *p)
{
    const char *name = p;
    setenv("DISTLOCK_LEASE_MS", "600", 1);
    unsetenv("DISTLOCK_LOG");
    char key[300];
    th_key(key, sizeof key, name, "");
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK(th_cmd_ll("DEL %s", key) == 1);
    dl_stats_t s;
    int64_t deadline = th_now_ms() + 3000;
    do {
        th_sleep_ms(50);
        dl_stats_get(&s);
    } while (s.lost == 0 && th_now_ms() < deadline);
    TH_CHECK(s.lost >= 1);                        /* the watchdog saw it */
    TH_CHECK_RC(dist_mutex_unlock(&m), ENOLCK);
    TH_CHECK_RC(dist_mutex_trylock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    return 0;
}

static void test_lost_hold_detected(void **state)
{
    char name[128];
    th_name(name, sizeof name, "lost");
    char *err = NULL;
    int st = th_run_capture_stderr(lost_child, name, &err, 15000);
    if (st != 0)
        fail_msg("child status %d; its stderr:\n%s", st, err);
    if (!strstr(err, name))
        fail_msg("no log line names the lost lock \"%s\"; stderr was:\n%s", name, err);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_killed_holder_ownerdead),
        TH_TEST(test_killed_holder_trylock_and_rwlock),
        TH_TEST(test_fixed_lease_lapses),
        TH_TEST(test_fixed_lease_taken_over),
        TH_TEST(test_default_lease_renewed),
        TH_TEST(test_lost_hold_detected),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
