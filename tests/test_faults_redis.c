/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_faults_redis.c - Redis misbehaving while it is up: its script
 * cache flushed, its pub/sub clients killed, writes refused because
 * maxmemory is reached (OOM) or because it is a read-only replica.
 * Locks must keep working (NOSCRIPT fallback, re-check after a lost
 * push), or fail with EIO and the server's own message in
 * dist_lasterror(), and work again once the condition clears.
 */
#include "harness.h"
#include "harness_checker.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

/* "calls=" of one command in INFO commandstats of the suite server. */
static long long cmd_calls(const char *cmd)
{
    redisReply *r = th_cmd("INFO commandstats");
    long long n = 0;
    char pat[64];
    snprintf(pat, sizeof pat, "cmdstat_%s:calls=", cmd);
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) {
        const char *p = strstr(r->str, pat);
        if (p)
            n = strtoll(p + strlen(pat), NULL, 10);
    }
    freeReplyObject(r);
    return n;
}

/* ------------------------------------------------------------ SCRIPT FLUSH */

struct flush_tick { int every_ms; int64_t last; int flushes; };

static void flush_tick(void *arg, int64_t elapsed_ms, uint64_t done)
{
    struct flush_tick *t = arg;
    if (elapsed_ms - t->last >= t->every_ms) {
        th_cmd_do("SCRIPT FLUSH");
        t->flushes++;
        t->last = elapsed_ms;
    }
}

/* Busy runs (mutex, then rwlock: 4 processes x 3 threads) while the
 * script cache is flushed every 20 ms: every call works the first time
 * (the NOSCRIPT fallback sends the body: no EIO, no retry), no overlap, no
 * fence inversion, nothing left held; and the fallback was really used. */
static void test_script_flush_during_run(void **state)
{
    static const int kinds[2] = { CHK_MUTEX, CHK_RWLOCK };
    for (int k = 0; k < 2; k++) {
        char name[128];
        th_name(name, sizeof name, k ? "flush-rw" : "flush");
        struct flush_tick t = { 20, 0, 0 };
        chk_cfg_t c;
        memset(&c, 0, sizeof c);
        c.kind = kinds[k];
        c.procs = 4;
        c.threads = 3;
        c.ops = 3000;
        c.hold_us = 50;
        c.name = name;
        c.tick = flush_tick;
        c.tick_arg = &t;
        c.tick_ms = 5;
        c.verify_port = th_redis_port();
        long long eval0 = cmd_calls("eval");
        chk_report_t r;
        int rc = chk_run(&c, &r);
        long long evals = cmd_calls("eval") - eval0;
        chk_print(stderr, k ? "rwlock, SCRIPT FLUSH every 20 ms" : "mutex, SCRIPT FLUSH every 20 ms", &r);
        print_message("%d flushes, %lld EVAL fallbacks\n", t.flushes, evals);
        if (rc != 0)
            fail_msg("%s", r.first);
        assert_int_equal(r.holds, r.expected);
        assert_int_equal(r.lock_eio + r.lock_timedout + r.lock_other, 0);
        assert_int_equal(r.unlock_enolck + r.unlock_eio + r.unlock_other, 0);
        assert_int_equal(r.ownerdead, 0);
        assert_int_equal(r.redis_bad, 0);
        assert_int_equal(chk_keys_left(name), 0);
        if (t.flushes < 5)
            fail_msg("only %d flushes during the run: it was too short to test anything", t.flushes);
        if (evals < 2)
            fail_msg("%lld EVAL calls after %d flushes: the NOSCRIPT fallback was not exercised",
                     evals, t.flushes);
    }
}

/* ------------------------------------------------------ subscribers killed */

/* A thread killing every pub/sub connection every 3 ms, on its own
 * connection, until told to stop. */
struct killer { pthread_t th; int stop; long long killed; int port; };

static void *killer_main(void *p)
{
    struct killer *k = p;
    struct timeval tv = { 2, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", k->port, tv);
    while (c && !c->err && !__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE)) {
        redisReply *r = redisCommand(c, "CLIENT KILL TYPE pubsub");
        if (r) {
            if (r->type == REDIS_REPLY_INTEGER)
                k->killed += r->integer;
            freeReplyObject(r);
        }
        th_sleep_ms(3);
    }
    if (c)
        redisFree(c);
    return NULL;
}

/* Four processes wait for a mutex we hold; every pub/sub connection is
 * killed (CLIENT KILL TYPE pubsub) before we unlock, and again every 3 ms
 * while the lock goes from waiter to waiter (so grant pushes are lost and
 * subscribers keep reconnecting).  Each waiter in turn gets the lock (and
 * unlocks at once): no waiter is left behind, and each handoff takes at
 * most the re-check period (min(lease, 2 s)/3 = 667 ms) + 500 ms.  A
 * second round without kills: pushes work again (each handoff < 200 ms). */
static void test_subscribers_killed_waiters_woken(void **state)
{
    enum { NW = 4 };
    char name[128], qkey[300];
    th_name(name, sizeof name, "subkill");
    th_key(qkey, sizeof qkey, name, ":q");
    /* the holder is another process: this one keeps no library threads,
     * which the busy runs forked later would inherit the stacks of (and
     * ThreadSanitizer would take their new threads for old ones) */
    th_proc_t hp;
    assert_int_equal(th_proc_start(&hp, NULL), 0);
    th_proc_t w[NW];
    for (int i = 0; i < NW; i++)
        assert_int_equal(th_proc_start(&w[i], NULL), 0);
    for (int round = 0; round < 2; round++) {
        TH_ASSERT_RC(th_proc_opa(&hp, TH_M_LOCK, name, 0, NULL), 0);
        for (int i = 0; i < NW; i++)
            assert_int_equal(th_proc_opa_async(&w[i], TH_M_LOCK, name, 0), 0);
        if (!th_wait_zcard(qkey, NW, 5000))
            fail_msg("the waiters never queued");
        th_sleep_ms(20);
        long long killed = 0;
        struct killer k = { 0, 0, 0, th_redis_port() };
        if (round == 0) {
            killed = th_cmd_ll("CLIENT KILL TYPE pubsub");
            if (killed < NW)
                fail_msg("killed %lld pub/sub connections, want at least %d", killed, NW);
            assert_int_equal(pthread_create(&k.th, NULL, killer_main, &k), 0);
        }
        th_res_t rel;
        TH_ASSERT_RC(th_proc_opa(&hp, TH_M_UNLOCK, name, 0, &rel), 0);
        int64_t t_prev = rel.t_start_us;
        struct pollfd pf[NW];
        int served[NW] = { 0 };
        int64_t worst = 0;
        for (int n = 0; n < NW; n++) {
            for (int i = 0; i < NW; i++)
                pf[i] = (struct pollfd){ served[i] ? -1 : w[i].res_rd, POLLIN, 0 };
            int r = poll(pf, NW, 5000);
            if (r <= 0) {
                if (round == 0) {
                    __atomic_store_n(&k.stop, 1, __ATOMIC_RELEASE);
                    pthread_join(k.th, NULL);
                }
                fail_msg("round %d: %d of %d waiters were served, the others waited 5 s more",
                         round, n, NW);
            }
            int who = -1;
            for (int i = 0; i < NW && who < 0; i++)
                if (pf[i].revents)
                    who = i;
            th_res_t res;
            assert_int_equal(th_proc_recv(&w[who], &res, 2000), 0);
            TH_ASSERT_RC(res.rc, 0);
            int64_t el = (res.t_done_us - t_prev) / 1000;
            if (el > worst)
                worst = el;
            served[who] = 1;
            TH_ASSERT_RC(th_proc_opa(&w[who], TH_M_UNLOCK, name, 0, &res), 0);
            t_prev = res.t_done_us;
        }
        if (round == 0) {
            __atomic_store_n(&k.stop, 1, __ATOMIC_RELEASE);
            pthread_join(k.th, NULL);
            killed += k.killed;
        }
        print_message("round %d: %lld subscriber connection(s) killed; %d waiters served, "
                      "worst handoff %lld ms\n", round, killed, NW, (long long)worst);
        long bound = round == 0 ? 667 + 500 : 200;
        if (worst > bound)
            fail_msg("round %d: a handoff took %lld ms (bound %ld ms)", round, (long long)worst, bound);
    }
    for (int i = 0; i < NW; i++)
        assert_int_equal(th_proc_stop(&w[i]), 0);
    assert_int_equal(th_proc_stop(&hp), 0);
    assert_int_equal(chk_keys_left(name), 0);
}

struct subkill_tick { int64_t last; int kills; long long killed; };

static void subkill_tick(void *arg, int64_t elapsed_ms, uint64_t done)
{
    struct subkill_tick *t = arg;
    if (elapsed_ms - t->last >= 40) {
        t->killed += th_cmd_ll("CLIENT KILL TYPE pubsub");
        t->kills++;
        t->last = elapsed_ms;
    }
}

/* A busy fair-mutex run (every handoff between processes goes through a
 * push) while all pub/sub connections are killed every 40 ms: every
 * operation completes, no overlap, no fence inversion, the lock is never
 * idle longer than the re-check period + 500 ms. */
static void test_subscribers_killed_during_run(void **state)
{
    char name[128];
    th_name(name, sizeof name, "subkill-run");
    struct subkill_tick t = { 0, 0, 0 };
    chk_cfg_t c;
    memset(&c, 0, sizeof c);
    c.kind = CHK_MUTEX;
    c.fair = 1;
    c.procs = 4;
    c.threads = 2;
    c.ops = 4000;
    c.hold_us = 100;
    c.name = name;
    c.tick = subkill_tick;
    c.tick_arg = &t;
    chk_report_t r;
    int rc = chk_run(&c, &r);
    chk_print(stderr, "fair mutex, pub/sub connections killed every 40 ms", &r);
    print_message("%d kills, %lld connections killed\n", t.kills, t.killed);
    if (rc != 0)
        fail_msg("%s", r.first);
    assert_int_equal(r.holds, r.expected);
    assert_int_equal(r.lock_eio + r.lock_timedout + r.lock_other, 0);
    assert_int_equal(r.unlock_enolck + r.unlock_eio + r.unlock_other, 0);
    assert_int_equal(chk_keys_left(name), 0);
    if (t.killed < 20)
        fail_msg("only %lld pub/sub connections were killed", t.killed);
    if (r.longest_hold_gap_ms > 667 + 500)
        fail_msg("the lock was idle %lld ms while processes waited for it",
                 (long long)r.longest_hold_gap_ms);
}

/* --------------------------------------------------------------- OOM */

static long long at_ll(int port, const char *fmt, const char *a1)
{
    redisReply *r = th_cmd_at(port, fmt, a1);
    long long v = -3;
    if (r) {
        v = r->type == REDIS_REPLY_INTEGER ? r->integer : r->type == REDIS_REPLY_ERROR ? -2 : 0;
        freeReplyObject(r);
    }
    return v;
}

/* cmd: words separated by spaces, no %. */
static void at_do(int port, const char *cmd)
{
    redisReply *r = th_cmd_at(port, cmd);
    char err[200] = "";
    if (!r)
        snprintf(err, sizeof err, "no reply");
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(err, sizeof err, "%s", r->str);
    if (r)
        freeReplyObject(r);
    if (err[0])
        fail_msg("server on port %d: \"%s\": %s", port, cmd, err);
}

static void at_cmd(int port, const char *fmt, int arg)
{
    redisReply *r = th_cmd_at(port, fmt, arg);
    char err[200] = "";
    if (!r || r->type == REDIS_REPLY_ERROR)
        snprintf(err, sizeof err, "%s", r ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
    if (err[0])
        fail_msg("server on port %d: command failed: %s", port, err);
}

#define ASSERT_EIO_SAYS(rc, res, w1, w2, what) do { \
    if ((rc) != EIO || (!th_contains((res).err, w1) && !th_contains((res).err, w2))) \
        fail_msg("%s: %s \"%s\", want EIO with \"%s\" or \"%s\" in dist_lasterror()", what, \
                 th_errname(rc), (res).err, w1, w2); \
    if ((res).t_done_us - (res).t_start_us > 500000) \
        fail_msg("%s: took %lld ms for an error reply", what, \
                 (long long)(((res).t_done_us - (res).t_start_us) / 1000)); } while (0)

/* While the server refuses writes (it says w1 or w2): each kind of
 * acquisition by p, lock, trylock and timedlock (timed_ms) of the mutex m
 * and rdlock of the rwlock rw, gives EIO at once with the server's words.
 * tag: the condition, in the printed lock result. */
static void assert_acquisitions_refused(th_proc_t *p, const char *m, const char *rw, long timed_ms,
                                        const char *w1, const char *w2, const char *tag)
{
    th_res_t res;
    int rc = th_proc_opa(p, TH_M_LOCK, m, 0, &res);
    print_message("%s: lock: %s \"%s\"\n", tag, th_errname(rc), res.err);
    ASSERT_EIO_SAYS(rc, res, w1, w2, "lock");
    rc = th_proc_opa(p, TH_M_TRYLOCK, m, 0, &res);
    ASSERT_EIO_SAYS(rc, res, w1, w2, "trylock");
    rc = th_proc_opa(p, TH_M_TIMEDLOCK, m, timed_ms, &res);
    ASSERT_EIO_SAYS(rc, res, w1, w2, "timedlock");
    rc = th_proc_opa(p, TH_RW_RDLOCK, rw, 0, &res);
    ASSERT_EIO_SAYS(rc, res, w1, w2, "rdlock");
}

/* A separate server holding some data reaches maxmemory (CONFIG SET
 * maxmemory 1, noeviction): new writes are refused with OOM.  lock,
 * trylock, timedlock, rdlock and a blocking lock that has to queue all
 * return EIO at once, with the server's message (OOM / maxmemory) in
 * dist_lasterror(); a hold taken before is kept and unlocks with 0 (DEL
 * and PEXPIRE are allowed when out of memory); once maxmemory is lifted
 * every lock works again, in the same processes. */
static void test_oom_refused(void **state)
{
    th_server_t s;
    assert_int_equal(th_server_start(&s), 0);
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", s.url);
    const char *env[] = { url, "DISTLOCK_IO_TIMEOUT_MS=1000", "DISTLOCK_LEASE_MS=1500", NULL };
    th_proc_t p, q;
    assert_int_equal(th_proc_start(&p, env), 0);
    assert_int_equal(th_proc_start(&q, env), 0);
    char a[128], b[128], rw[128];
    th_name(a, sizeof a, "oom-a");
    th_name(b, sizeof b, "oom-b");
    th_name(rw, sizeof rw, "oom-rw");
    for (int i = 0; i < 200; i++) {            /* some data */
        char k[32];
        snprintf(k, sizeof k, "data:%d", i);
        redisReply *r = th_cmd_at(s.port, "SET %s %s", k, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        if (r)
            freeReplyObject(r);
    }
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_LOCK, a, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&q, TH_M_LOCK, b, 0, NULL), 0);     /* warm q, scripts cached */
    TH_ASSERT_RC(th_proc_opa(&q, TH_M_UNLOCK, b, 0, NULL), 0);

    at_do(s.port, "CONFIG SET maxmemory-policy noeviction");
    at_do(s.port, "CONFIG SET maxmemory 1");
    if (at_ll(s.port, "SET %s x", "oom-probe") != -2)
        fail_msg("the server still accepts writes with maxmemory 1");

    assert_acquisitions_refused(&q, b, rw, 5000, "OOM", "maxmemory", "OOM");
    th_res_t res;
    int rc = th_proc_opa(&q, TH_M_LOCK, a, 0, &res);             /* held by p: must queue */
    print_message("OOM: lock that must queue: %s \"%s\"\n", th_errname(rc), res.err);
    ASSERT_EIO_SAYS(rc, res, "OOM", "maxmemory", "lock that must queue");
    TH_ASSERT_RC(th_proc_opa(&q, TH_M_UNLOCK, b, 0, NULL), EPERM);   /* nothing was acquired */
    /* p's hold outlives a lease (renewals are allowed) and unlocks cleanly */
    th_sleep_ms(1700);
    rc = th_proc_opa(&p, TH_M_UNLOCK, a, 0, &res);
    print_message("OOM: unlock of a hold taken before: %s \"%s\"\n", th_errname(rc), res.err);
    TH_ASSERT_RC(rc, 0);

    at_do(s.port, "CONFIG SET maxmemory 0");
    TH_ASSERT_RC(th_proc_opa(&q, TH_M_LOCK, b, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&q, TH_RW_RDLOCK, rw, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_LOCK, a, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&q, TH_M_TRYLOCK, a, 0, NULL), EBUSY);
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_UNLOCK, a, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&q, TH_M_UNLOCK, b, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&q, TH_RW_UNLOCK, rw, 0, NULL), 0);
    assert_int_equal(chk_keys_left_at(s.port, a), 0);
    assert_int_equal(chk_keys_left_at(s.port, b), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    assert_int_equal(th_proc_stop(&q), 0);
    th_server_stop(&s);
}

/* ---------------------------------------------------------- read-only */

/* A process pointed at a read-only replica: lock, trylock, timedlock and
 * rdlock return EIO at once with READONLY in dist_lasterror().  After
 * REPLICAOF NO ONE (a promotion) the same process locks without being
 * restarted. */
static void test_readonly_replica(void **state)
{
    th_server_t m, r;
    assert_int_equal(th_server_start(&m), 0);
    assert_int_equal(th_server_start(&r), 0);
    at_cmd(r.port, "REPLICAOF 127.0.0.1 %d", m.port);
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", r.url);
    const char *env[] = { url, "DISTLOCK_IO_TIMEOUT_MS=1000", NULL };
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, env), 0);
    char a[128], rw[128];
    th_name(a, sizeof a, "ro");
    th_name(rw, sizeof rw, "ro-rw");
    assert_acquisitions_refused(&p, a, rw, 3000, "READONLY", "read only", "replica");
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_UNLOCK, a, 0, NULL), EPERM);

    at_do(r.port, "REPLICAOF NO ONE");
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_LOCK, a, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_RW_WRLOCK, rw, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_RW_UNLOCK, rw, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_UNLOCK, a, 0, NULL), 0);
    assert_int_equal(chk_keys_left_at(r.port, a), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    th_server_stop(&r);
    th_server_stop(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_script_flush_during_run),
        TH_TEST(test_subscribers_killed_waiters_woken),
        TH_TEST(test_subscribers_killed_during_run),
        TH_TEST(test_oom_refused),
        TH_TEST(test_readonly_replica),
    };
    if (getenv("TH_FILTER"))                 /* run only the tests matching a pattern */
        cmocka_set_test_filter(getenv("TH_FILTER"));
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
