/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_wait.c - ?wait=N&wait_ms=M: after an acquisition the library WAITs
 * for N replicas; when fewer acknowledge within M ms the acquisition is
 * undone and the call returns EIO naming how many did.
 *
 * Topology: one master and one replica (harness_topo), 127.0.0.1, free
 * ports.  Every library call runs in a helper process (th_proc) started
 * with its own DISTLOCK_URL: the library reads the URL once per process.
 */
#include "harness_topo.h"

#include <errno.h>
#include <string.h>

static th_server_t g_master, g_replica;
static char g_sock[300];

static int group_setup(void **state)
{
    (void)state;
    tt_alarm(60);
    /* The master also listens on a unix socket (for unix://...?db=N&wait=N). */
    snprintf(g_sock, sizeof g_sock, "%s/master.sock", tt_dir());
    const char *extra[] = { "--unixsocket", g_sock, "--unixsocketperm", "700", NULL };
    if (tt_server_start(&g_master, extra) != 0)
        return -1;
    if (tt_replica_start(&g_replica, g_master.port) != 0)
        return -1;
    alarm(0);
    return 0;
}

/* The replica is back and in sync (a test may have stopped or killed it). */
static void ensure_replica(void)
{
    if (g_replica.pid && g_replica.stopped)
        th_server_resume(&g_replica);
    if (g_replica.pid && !th_server_up(&g_replica)) {
        tt_forget(g_replica.pid);           /* killed by an earlier test */
        g_replica.pid = 0;
    }
    if (!g_replica.pid) {
        assert_int_equal(tt_replica_start(&g_replica, g_master.port), 0);
        return;
    }
    char buf[32];
    int64_t end = th_now_ms() + 10000;
    while (th_now_ms() < end &&
           !(tt_info_field(g_replica.port, "replication", "master_link_status", buf, sizeof buf) &&
             strcmp(buf, "up") == 0))
        th_sleep_ms(10);
}

static void url(char *buf, size_t size, const char *tail)
{
    snprintf(buf, size, "DISTLOCK_URL=redis://127.0.0.1:%d%s", g_master.port, tail);
}

static void start(th_proc_t *p, const char *urlvar)
{
    const char *env[] = { urlvar, "DISTLOCK_IO_TIMEOUT_MS=3000", "DISTLOCK_LOG=error", NULL };
    assert_int_equal(th_proc_start(p, env), 0);
}

static long long wait_calls(void)
{
    redisReply *r = th_cmd_at(g_master.port, "INFO commandstats");
    long long n = 0;
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "cmdstat_wait:calls=");
        if (p)
            n = strtoll(p + 19, NULL, 10);
    }
    if (r)
        freeReplyObject(r);
    return n;
}

static long long exists(const char *name, const char *suffix)
{
    char key[300];
    snprintf(key, sizeof key, "distlock:{%s}%s", name, suffix);
    return th_cmd_at_ll(g_master.port, "EXISTS %s", key);
}

/* The URL forms the parser accepts, each doing a WAIT per acquisition. */
static void test_url_forms(void **state)
{
    (void)state;
    ensure_replica();
    static const char *tails[] = {
        "?wait=1&wait_ms=500", "/?wait=1&wait_ms=500", "/0?wait=1&wait_ms=500", "?wait=1",
        "/0?wait_ms=500&wait=1",
    };
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        char u[200], name[64];
        url(u, sizeof u, tails[i]);
        th_name(name, sizeof name, "waitform");
        th_proc_t p;
        start(&p, u);
        long long before = wait_calls();
        TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
        long long after = wait_calls();
        assert_int_equal(exists(name, ""), 1);
        TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
        char rwname[80];
        snprintf(rwname, sizeof rwname, "%s.rw", name);
        TH_ASSERT_RC(th_proc_op(&p, TH_RW_RDLOCK, rwname), 0);
        TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, rwname), 0);
        assert_int_equal(th_proc_stop(&p), 0);
        if (after <= before)
            fail_msg("%s: no WAIT reached the master during the lock call", u);
    }
    /* unix://: the query combines db=N with wait=N by '&'. */
    {
        char u[400], name[64];
        snprintf(u, sizeof u, "DISTLOCK_URL=unix://%s?db=3&wait=1&wait_ms=500", g_sock);
        th_name(name, sizeof name, "waitunix");
        th_proc_t p;
        start(&p, u);
        long long before = wait_calls();
        TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
        long long after = wait_calls();
        char key[128];
        snprintf(key, sizeof key, "distlock:{%s}", name);
        redisContext *c = redisConnect("127.0.0.1", g_master.port);
        assert_non_null(c);
        redisReply *r = redisCommand(c, "SELECT 3");
        freeReplyObject(r);
        r = redisCommand(c, "EXISTS %s", key);
        long long in_db3 = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        freeReplyObject(r);
        redisFree(c);
        TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
        assert_int_equal(th_proc_stop(&p), 0);
        if (after <= before)
            fail_msg("%s: no WAIT reached the master during the lock call", u);
        if (in_db3 != 1)
            fail_msg("%s: the hold is not in database 3", u);
    }
    /* Bad forms are EINVAL naming the variable. */
    static const char *bad[] = { "?wait=x", "?wait_ms=500", "?wait=1&wait_ms=0", "?wait=1&bogus=2" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char u[200];
        th_res_t r;
        url(u, sizeof u, bad[i]);
        th_proc_t p;
        start(&p, u);
        TH_ASSERT_RC(th_proc_opa(&p, TH_M_LOCK, "waitbad", 0, &r), EINVAL);
        if (!th_contains(r.err, "DISTLOCK_URL"))
            fail_msg("%s: EINVAL without naming DISTLOCK_URL: \"%s\"", u, r.err);
        assert_int_equal(th_proc_stop(&p), 0);
    }
}

/* With the replica up: lock/unlock cost, and a waiter granted by a
 * release (its grant is another client's write) is confirmed too. */
static void test_replica_up(void **state)
{
    (void)state;
    ensure_replica();
    char u[200], name[64];
    url(u, sizeof u, "?wait=1&wait_ms=500");
    th_name(name, sizeof name, "waitup");
    th_proc_t a, b;
    start(&a, u);
    start(&b, u);
    enum { N = 50 };
    int64_t lat[N];
    for (int i = 0; i < N; i++) {
        th_res_t r1, r2;
        TH_ASSERT_RC(th_proc_opa(&a, TH_M_LOCK, name, 0, &r1), 0);
        TH_ASSERT_RC(th_proc_opa(&a, TH_M_UNLOCK, name, 0, &r2), 0);
        lat[i] = r2.t_done_us - r1.t_start_us;
    }
    int64_t med = th_median(lat, N);
    print_message("wait=1: lock+unlock median %lld us with the replica up\n", (long long)med);

    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(&b, TH_M_LOCK, name), 0);
    char qkey[300];
    snprintf(qkey, sizeof qkey, "distlock:{%s}:q", name);
    th_wait_zcard_at(g_master.port, qkey, 1, 3000);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);
    th_res_t rb;
    assert_int_equal(th_proc_recv(&b, &rb, 10000), 0);
    TH_ASSERT_RC(rb.rc, 0);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&a), 0);
    assert_int_equal(th_proc_stop(&b), 0);
}

/* An acquisition that is not confirmed is EIO, takes about wait_ms, says
 * how many replicas acknowledged, and leaves nothing held. */
static void check_not_confirmed(th_proc_t *a, int op, const char *name, const char *what)
{
    th_res_t r;
    TH_ASSERT_RC(th_proc_opa(a, op, name, 0, &r), EIO);
    int64_t ms = (r.t_done_us - r.t_start_us) / 1000;
    print_message("%s: EIO after %lld ms: \"%s\"\n", what, (long long)ms, r.err);
    if (!th_contains(r.err, "replica") || !th_contains(r.err, "acknowledged"))
        fail_msg("%s: the message does not say how many replicas acknowledged: \"%s\"", what, r.err);
    if (!strstr(r.err, "0 of"))
        fail_msg("%s: expected \"0 of\" replicas in \"%s\"", what, r.err);
    if (ms < 400 || ms > 2500)
        fail_msg("%s: EIO after %lld ms, want about wait_ms = 500", what, (long long)ms);
    /* Nothing left held in Redis, nor in the process. */
    assert_int_equal(exists(name, ""), 0);
    assert_int_equal(exists(name, ":r"), 0);
    TH_ASSERT_RC(th_proc_op(a, op == TH_M_LOCK || op == TH_M_TRYLOCK ? TH_M_UNLOCK : TH_RW_UNLOCK, name),
                 EPERM);
}

static void test_replica_stopped(void **state)
{
    (void)state;
    ensure_replica();
    char u[200], name[64];
    url(u, sizeof u, "?wait=1&wait_ms=500");
    th_name(name, sizeof name, "waitstop");
    th_proc_t a, b;
    start(&a, u);
    start(&b, u);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);      /* connected, scripts loaded */
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);

    th_server_pause(&g_replica);
    check_not_confirmed(&a, TH_M_LOCK, name, "lock, replica stopped");
    check_not_confirmed(&a, TH_M_TRYLOCK, name, "trylock, replica stopped");
    char rwname[80];
    snprintf(rwname, sizeof rwname, "%s.rw", name);
    check_not_confirmed(&a, TH_RW_WRLOCK, rwname, "wrlock, replica stopped");
    check_not_confirmed(&a, TH_RW_RDLOCK, rwname, "rdlock, replica stopped");

    /* A waiter granted by a release: B holds, A waits, the replica stops,
     * B releases; A's grant cannot be confirmed: EIO, and nothing held. */
    th_server_resume(&g_replica);
    ensure_replica();
    TH_ASSERT_RC(th_proc_op(&b, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(&a, TH_M_LOCK, name), 0);
    th_sleep_ms(200);
    th_server_pause(&g_replica);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_UNLOCK, name), 0);
    th_res_t ra;
    assert_int_equal(th_proc_recv(&a, &ra, 10000), 0);
    print_message("granted waiter, replica stopped: %s after %lld ms: \"%s\"\n", th_errname(ra.rc),
                  (long long)((ra.t_done_us - ra.t_start_us) / 1000), ra.err);
    TH_ASSERT_RC(ra.rc, EIO);
    assert_int_equal(exists(name, ""), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), EPERM);

    /* The replica returns: another process takes the lock at once, the
     * failed one too afterwards. */
    th_server_resume(&g_replica);
    ensure_replica();
    TH_ASSERT_RC(th_proc_op(&b, TH_M_TRYLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_TRYLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&a), 0);
    assert_int_equal(th_proc_stop(&b), 0);
}

/* The replica dies: EIO too; a new replica makes locks work again. */
static void test_replica_killed(void **state)
{
    (void)state;
    ensure_replica();
    char u[200], name[64];
    url(u, sizeof u, "?wait=1&wait_ms=500");
    th_name(name, sizeof name, "waitkill");
    th_proc_t a;
    start(&a, u);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);
    pid_t old = g_replica.pid;
    th_server_kill(&g_replica);
    tt_forget(old);
    th_res_t r;
    TH_ASSERT_RC(th_proc_opa(&a, TH_M_LOCK, name, 0, &r), EIO);
    print_message("lock, replica killed: EIO after %lld ms: \"%s\"\n",
                  (long long)((r.t_done_us - r.t_start_us) / 1000), r.err);
    if (!th_contains(r.err, "replica"))
        fail_msg("no word about replicas in \"%s\"", r.err);
    assert_int_equal(exists(name, ""), 0);
    ensure_replica();                         /* a new one */
    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&a), 0);
}

/* wait=2 with one replica can never be confirmed. */
static void test_more_replicas_than_exist(void **state)
{
    (void)state;
    ensure_replica();
    char u[200], name[64];
    url(u, sizeof u, "?wait=2&wait_ms=300");
    th_name(name, sizeof name, "wait2");
    th_proc_t a, b;
    start(&a, u);
    th_res_t r;
    TH_ASSERT_RC(th_proc_opa(&a, TH_M_LOCK, name, 0, &r), EIO);
    int64_t ms = (r.t_done_us - r.t_start_us) / 1000;
    print_message("wait=2 with 1 replica: EIO after %lld ms: \"%s\"\n", (long long)ms, r.err);
    if (!th_contains(r.err, "replica") || !strstr(r.err, "1 of"))
        fail_msg("expected a message saying 1 replica acknowledged: \"%s\"", r.err);
    if (ms < 250 || ms > 2500)
        fail_msg("EIO after %lld ms, want about wait_ms = 300", (long long)ms);
    assert_int_equal(exists(name, ""), 0);
    /* A process with wait=1 takes the lock at once: nothing was left. */
    char u1[200];
    url(u1, sizeof u1, "?wait=1");
    start(&b, u1);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_TRYLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&a), 0);
    assert_int_equal(th_proc_stop(&b), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TT_TEST(test_url_forms),
        TT_TEST(test_replica_up),
        TT_TEST(test_replica_stopped),
        TT_TEST(test_replica_killed),
        TT_TEST(test_more_replicas_than_exist),
    };
    return th_run_tests(tests, group_setup, tt_group_teardown);
}
