/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_trust_wait.c - a lock call with ?wait=N returns a hold only within
 * its validity, and only if Redis gave no sign of lost state meanwhile,
 * however long the replicas took to acknowledge it: a slow replica made a
 * fixed lease run out (or a break removed the hold) while the call waited,
 * and the first version returned 0 all the same, while another process
 * held the lock.
 * Topology: a master, and a replica that replicates through a proxy (so
 * its acknowledgements can be slowed while the client's link stays fast).
 */
#include "harness_topo.h"
#include "harness_proxy.h"

#include <errno.h>
#include <string.h>

static th_server_t g_master, g_replica;
static th_proxy_t *g_px;

static int group_setup(void **state)
{
    (void)state;
    tt_alarm(60);
    if (tt_server_start(&g_master, NULL) != 0)
        return -1;
    alarm(0);
    return 0;
}

static void test_wait_after_validity(void **state)
{
    (void)state;
    /* the proxy is a thread: started in the test's own process */
    g_px = th_proxy_start(g_master.port);
    assert_non_null(g_px);
    assert_int_equal(tt_replica_start(&g_replica, th_proxy_port(g_px)), 0);
    char name[96];
    th_name(name, sizeof name, "waitlate");
    char pu[128], qu[128];
    snprintf(pu, sizeof pu, "DISTLOCK_URL=redis://127.0.0.1:%d?wait=1&wait_ms=5000",
             g_master.port);
    snprintf(qu, sizeof qu, "DISTLOCK_URL=redis://127.0.0.1:%d", g_master.port);
    const char *penv[] = { pu, "DISTLOCK_IO_TIMEOUT_MS=8000", NULL };
    const char *qenv[] = { qu, NULL };
    th_proc_t p, q;
    assert_int_equal(th_proc_start(&p, penv), 0);
    assert_int_equal(th_proc_start(&q, qenv), 0);
    /* warm P's connection */
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, "warm"), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, "warm"), 0);

    th_proxy_mode(g_px, TH_PROXY_SLOW, 800);   /* the replica acks ~1.6 s late */
    th_req_t rq;
    th_proc_req(&rq, TH_M_LOCK, name);
    rq.lease_ms = 1000;                        /* fixed lease */
    int64_t t0 = th_now_us();
    assert_int_equal(th_proc_send(&p, &rq), 0);
    /* Q takes the lock once P's fixed lease has run out in Redis. */
    th_res_t qr;
    int qrc = EBUSY;
    int64_t q_at = 0;
    while (th_now_us() - t0 < 4000000) {
        qrc = th_proc_opa(&q, TH_M_TRYLOCK, name, 0, &qr);
        if (qrc != EBUSY) {
            q_at = qr.t_done_us;
            break;
        }
        th_sleep_ms(20);
    }
    if (qrc != 0 && qrc != EOWNERDEAD)
        fail_msg("Q never took the lock once P's fixed lease ran out: %s", th_errname(qrc));
    TH_ASSERT_RC(th_proc_opa(&q, TH_M_FENCE, name, 0, &qr), 0);
    /* While Q holds and the replica is slow, P must not return a hold: each
     * of its acquisitions runs out before its WAIT ends. */
    th_res_t pr;
    if (th_proc_recv(&p, &pr, 2000) == 0)
        fail_msg("P's lock call returned %s %lld ms after it began (fixed lease 1000 ms) "
                 "while Q held the lock since %lld ms", th_errname(pr.rc),
                 (long long)(pr.t_done_us - t0) / 1000, (long long)(q_at - t0) / 1000);
    th_proxy_mode(g_px, TH_PROXY_PASS, 0);
    int64_t q_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_recv(&p, &pr, 20000), 0);
    if (pr.rc != 0 && pr.rc != EOWNERDEAD)
        fail_msg("P's lock call once the replica was fast again: %s", th_errname(pr.rc));
    assert_true(pr.t_done_us >= q_rel);
    th_res_t pf;
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_FENCE, name, 0, &pf), 0);
    assert_true(pf.fence > qr.fence);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    redisReply *r = th_cmd_at(g_master.port, "INFO commandstats");
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *w = strstr(r->str, "cmdstat_wait:");
        print_message("%.80s\n", w ? w : "no WAIT ran");
    }
    if (r)
        freeReplyObject(r);
    th_proc_stop(&p);
    th_proc_stop(&q);
}

/* The lock call's WAIT is under way when `distlock break` removes the hold
 * (its revocation push ends the process's trust: trust.h).  Another
 * process takes the lock.  The lock call must not then return 0: it
 * returns a hold Redis lost, after a sign, without confirming it. */
static void test_break_during_wait(void **state)
{
    (void)state;
    g_px = th_proxy_start(g_master.port);
    assert_non_null(g_px);
    assert_int_equal(tt_replica_start(&g_replica, th_proxy_port(g_px)), 0);
    char name[96];
    th_name(name, sizeof name, "waitbreak");
    char pu[128], qu[128];
    snprintf(pu, sizeof pu, "DISTLOCK_URL=redis://127.0.0.1:%d?wait=1&wait_ms=5000",
             g_master.port);
    snprintf(qu, sizeof qu, "DISTLOCK_URL=redis://127.0.0.1:%d", g_master.port);
    const char *penv[] = { pu, "DISTLOCK_IO_TIMEOUT_MS=8000", NULL };
    const char *qenv[] = { qu, NULL };
    th_proc_t p, q;
    assert_int_equal(th_proc_start(&p, penv), 0);
    assert_int_equal(th_proc_start(&q, qenv), 0);
    /* P subscribed (a lock call that waited once), so the push reaches it */
    TH_ASSERT_RC(th_proc_op(&q, TH_M_LOCK, "warmb"), 0);
    assert_int_equal(th_proc_op_async(&p, TH_M_LOCK, "warmb"), 0);
    th_sleep_ms(200);
    TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, "warmb"), 0);
    th_res_t pr;
    assert_int_equal(th_proc_recv(&p, &pr, 10000), 0);
    TH_ASSERT_RC(pr.rc, 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, "warmb"), 0);

    th_proxy_mode(g_px, TH_PROXY_SLOW, 800);   /* the replica acks ~1.6 s late */
    char key[300];
    snprintf(key, sizeof key, "%s{%s}", th_prefix(), name);
    assert_int_equal(th_proc_op_async(&p, TH_M_LOCK, name), 0);
    int64_t end = th_now_ms() + 3000;
    while (th_cmd_at_ll(g_master.port, "EXISTS %s", key) != 1 && th_now_ms() < end)
        th_sleep_ms(5);
    th_sleep_ms(100);                          /* P waits in WAIT */
    char exe[512], cmd[1200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = 0;
    *strrchr(exe, '/') = 0;
    snprintf(cmd, sizeof cmd, "DISTLOCK_PREFIX='%s' %s/distlock --url redis://127.0.0.1:%d "
             "break %s --force >/dev/null", th_prefix(), exe, g_master.port, name);
    assert_int_equal(system(cmd), 0);
    th_res_t qr;
    int qrc = th_proc_opa(&q, TH_M_TRYLOCK, name, 0, &qr);
    if (qrc != 0 && qrc != EOWNERDEAD)
        fail_msg("Q could not take the lock after the break: %s", th_errname(qrc));
    /* P's call must not return the hold the break removed while Q holds. */
    if (th_proc_recv(&p, &pr, 3000) == 0)
        fail_msg("P's lock call returned %s %lld ms after Q took the lock: `distlock break` "
                 "removed P's hold (a sign) while P's call waited for its replica",
                 th_errname(pr.rc), (long long)(pr.t_done_us - qr.t_done_us) / 1000);
    th_proxy_mode(g_px, TH_PROXY_PASS, 0);
    int64_t q_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_recv(&p, &pr, 20000), 0);
    if (pr.rc != 0 && pr.rc != EOWNERDEAD)
        fail_msg("P's lock call once Q unlocked: %s", th_errname(pr.rc));
    assert_true(pr.t_done_us >= q_rel);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    th_proc_stop(&p);
    th_proc_stop(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TT_TEST(test_wait_after_validity),
        TT_TEST(test_break_during_wait),
    };
    return th_run_tests(tests, group_setup, tt_group_teardown);
}
