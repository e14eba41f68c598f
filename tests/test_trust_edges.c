/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_trust_edges.c - the edges of the trust rule (SPEC "Local trust")
 * that a review of the first version found, each failing then:
 *   - a fixed-lease hold granted by push is claimed in the death trace, so
 *     its holder's death is reported;
 *   - a reply after the validity, given up and asked again, does not lose
 *     the death its first answer found;
 *   - a reentrant relock of a hold past its validity, or one Redis lost
 *     while its process was stopped, does not return 0: it takes the lock
 *     again (EOWNERDEAD) once it is free;
 *   - one slow round trip does not widen the trust window for good;
 *   - a sign that persists (READONLY after a failover) does not make the
 *     watchdog spin.
 * A failure is what the first version did.
 */
#include "harness.h"
#include "harness_proxy.h"
#include "harness_script.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "calls.h"
#include "process.h"

static void meta_wh(const char *name, char *out, size_t size)
{
    char k[300];
    th_key(k, sizeof k, name, ":m");
    redisReply *r = th_cmd("HGET %s wh", k);
    snprintf(out, size, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "(nil)");
    if (r)
        freeReplyObject(r);
}

/* ------------------------------------------------------------------------
 * A write hold with a FIXED lease granted by push is never "claimed" in
 * the death trace (touch.lua is posted only for renewable holds, and a
 * fixed lease is never renewed), so the trace stays 'g:'..token.  When its
 * holder dies holding it, the next holder is not told EOWNERDEAD. */
static void test_fixed_lease_grantee_death_reported(void **state)
{
    (void)state;
    char name[96];
    th_name(name, sizeof name, "fixgrant");
    th_proc_t h, w, n;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    assert_int_equal(th_proc_start(&w, NULL), 0);
    assert_int_equal(th_proc_start(&n, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
    th_req_t rq;
    th_proc_req(&rq, TH_M_LOCK, name);
    rq.lease_ms = 1500;                   /* fixed lease */
    assert_int_equal(th_proc_send(&w, &rq), 0);
    th_wait_queued(name, 1);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, name), 0);
    th_res_t res;
    assert_int_equal(th_proc_recv(&w, &res, 10000), 0);
    TH_ASSERT_RC(res.rc, 0);              /* W holds the lock (granted by push) */
    th_sleep_ms(100);                     /* anything W posted has run */
    char wh[128];
    meta_wh(name, wh, sizeof wh);
    print_message("death trace while W holds: wh=%s\n", wh);
    th_proc_kill(&w);                     /* W dies holding it */
    th_proc_req(&rq, TH_M_TIMEDLOCK, name);
    rq.arg = 10000;
    int rc = th_proc_call(&n, &rq, &res);
    if (rc != EOWNERDEAD)
        fail_msg("W held the lock (fixed lease, granted by push) and died holding it; the "
                 "next holder got %s, want EOWNERDEAD (trace while held: wh=%s)",
                 th_errname(rc), wh);
    TH_ASSERT_RC(th_proc_op(&n, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&n), 0);
}

/* ------------------------------------------------------------------------
 * A lock call whose reply comes after its validity (fixed lease) gives
 * the hold up by its fence and asks again (take.c, take_in_time).  The
 * release clears the death trace, including the trace of a REAL death that
 * the late acquisition had found: the retry then returns 0, and nobody is
 * ever told that the previous holder died in its critical section. */

struct ld_arg {
    char name[96];
    char url[64];
    int up, down;
};

static int ld_child(void *p)
{
    const struct ld_arg *a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    dist_mutexattr_t at;
    dist_mutex_t m, warm;
    char wname[128];
    snprintf(wname, sizeof wname, "%s.warm", a->name);
    TH_CHECK_RC(dist_mutex_init(&warm, wname, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&warm), 0);      /* connected */
    TH_CHECK_RC(dist_mutex_unlock(&warm), 0);
    TH_CHECK_RC(dist_mutexattr_init(&at), 0);
    TH_CHECK_RC(dist_mutexattr_setlease(&at, 500), 0);
    TH_CHECK_RC(dist_mutex_init(&m, a->name, &at), 0);
    th_send(a->up, 0, 0, 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    int rc = dist_mutex_lock(&m);
    th_send(a->up, 1, rc, 0, 0);
    if (rc == 0 || rc == EOWNERDEAD)
        dist_mutex_unlock(&m);
    return 0;
}

static void test_late_reply_keeps_ownerdead(void **state)
{
    (void)state;
    static struct ld_arg a;
    th_name(a.name, sizeof a.name, "latedead");
    char key[300];
    th_key(key, sizeof key, a.name, "");
    /* D dies holding the lock; its hold lapses. */
    const char *denv[] = { "DISTLOCK_LEASE_MS=300", NULL };
    th_proc_t d;
    assert_int_equal(th_proc_start(&d, denv), 0);
    TH_ASSERT_RC(th_proc_op(&d, TH_M_LOCK, a.name), 0);
    th_proc_kill(&d);
    assert_true(th_wait_exists(key, 0, 5000));

    th_proxy_t *px = th_proxy_url_for(a.url, sizeof a.url);
    th_steered_t c;
    th_steer(&c, ld_child, &a, &a.up, &a.down);
    th_msg_t msg;
    assert_int_equal(th_recv(c.up.rd, &msg, 20000), 0);
    /* P's acquisition reaches Redis 400 ms late; its reply comes 800 ms
     * after it was sent, past its 500 ms fixed lease's validity. */
    th_proxy_mode(px, TH_PROXY_SLOW, 400);
    th_send(c.down.wr, 1, 0, 0, 0);
    assert_true(th_wait_exists(key, 1, 5000));
    th_proxy_mode(px, TH_PROXY_PASS, 0);  /* the retry is fast */
    assert_int_equal(th_recv(c.up.rd, &msg, 20000), 0);
    int rc = (int)msg.a;
    th_steered_end(&c);
    th_proxy_stop(px);
    if (rc != EOWNERDEAD)
        fail_msg("the previous holder died holding the lock; the first lock call after it "
                 "returned %s (its first acquisition's reply came late and was given up), "
                 "want EOWNERDEAD", th_errname(rc));
}

/* ------------------------------------------------------------------------
 * A reentrant relock (or a read relock by a holder) returns 0 for a
 * hold past its validity: SPEC "Local trust" says a call returns 0 only
 * for a hold whose confirmed validity has not passed at return. */
static int reent_child(void *p)
{
    (void)p;
    dist_mutexattr_t at;
    dist_mutex_t m;
    char name[96];
    th_name(name, sizeof name, "reentfix");
    TH_CHECK_RC(dist_mutexattr_init(&at), 0);
    TH_CHECK_RC(dist_mutexattr_setlease(&at, 100), 0);
    TH_CHECK_RC(dist_mutex_init(&m, name, &at), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    th_sleep_ms(300);                     /* the fixed lease has run out */
    int rc = dist_mutex_lock(&m);
    if (rc != EOWNERDEAD) {
        fprintf(stderr, "a reentrant relock 200 ms past its fixed lease (100 ms) "
                "returned %s, want EOWNERDEAD (taken again)\n", th_errname(rc));
        _exit(TH_CHILD_FAIL);
    }
    rc = dist_mutex_unlock(&m);
    TH_CHECK(rc == 0 || rc == ENOLCK);
    rc = dist_mutex_unlock(&m);
    TH_CHECK(rc == 0 || rc == ENOLCK);
    TH_CHECK_RC(dist_mutex_unlock(&m), EPERM);
    return 0;
}

/* The holder's process is stopped past its lease; another process takes
 * the lock; the holder resumes and relocks: the relock must not return
 * while the other process holds the lock, and says EOWNERDEAD once it has
 * the lock again. */
struct stall_arg {
    char name[96];
    int up, down;
};

static int stall_child(void *arg)
{
    const struct stall_arg *a = arg;
    setenv("DISTLOCK_LEASE_MS", "1000", 1);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, a->name, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    th_send(a->up, 1, 0, 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);      /* after the stop */
    int rc = dist_mutex_lock(&m);
    th_send(a->up, 2, rc, th_now_us(), 0);
    dist_mutex_unlock(&m);
    dist_mutex_unlock(&m);
    return 0;
}

static void test_relock_after_stall(void **state)
{
    (void)state;
    static struct stall_arg a;
    th_name(a.name, sizeof a.name, "relockstall");
    char key[300];
    th_key(key, sizeof key, a.name, "");
    th_steered_t c;
    th_proc_t q;
    assert_int_equal(th_proc_start(&q, NULL), 0);
    th_steer(&c, stall_child, &a, &a.up, &a.down);
    th_msg_t msg;
    assert_int_equal(th_recv(c.up.rd, &msg, 20000), 0);
    kill(c.pid, SIGSTOP);
    if (!th_wait_exists(key, 0, 10000))
        fail_msg("the stopped holder's hold did not lapse (lease 1000 ms)");
    int rc = th_proc_op(&q, TH_M_LOCK, a.name);
    if (rc != EOWNERDEAD && rc != 0)
        fail_msg("the other process could not take the lapsed lock: %s", th_errname(rc));
    kill(c.pid, SIGCONT);
    th_send(c.down.wr, 1, 0, 0, 0);
    if (th_recv(c.up.rd, &msg, 700) == 0)
        fail_msg("the stalled holder's relock returned %s while another process held the "
                 "lock", th_errname((int)msg.a));
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, a.name), 0);
    th_steered_expect(&c, 2, &msg, 20000);
    if (msg.a != EOWNERDEAD)
        fail_msg("the relock of a hold that lapsed said %s, want EOWNERDEAD",
                 th_errname((int)msg.a));
    assert_true(msg.b >= t_rel);
    th_steered_end(&c);
    assert_int_equal(th_proc_stop(&q), 0);
}

static void test_reentrant_relock_past_validity(void **state)
{
    (void)state;
    TH_ASSERT_CHILD_OK(th_fork_child(reent_child, NULL));
}

/* ------------------------------------------------------------------------
 * The trust window is DL_TRUST_MS plus the lock's smoothed round trip
 * (tenure.c, dl_tenure_trusted).  One slow acquisition (a first sample is
 * taken whole) widens it for as long as no other sample comes, even once
 * the link is fast again: a reader of the process joins a hold Redis lost
 * (DEL) hundreds of ms after the loss, while another process writes. */

struct rtt_arg {
    char name[96];
    char url[64];
    int up, down;
};

static dist_rwlock_t rtt_rw;
static const struct rtt_arg *rtt_a;

static void *rtt_r2(void *p)
{
    (void)p;
    int rc = dist_rwlock_rdlock(&rtt_rw);
    if (rc == 0)
        dist_rwlock_unlock(&rtt_rw);
    th_send(rtt_a->up, 2, rc, 0, 0);
    return NULL;
}

static void *rtt_r3(void *p)
{
    (void)p;
    int rc = dist_rwlock_rdlock(&rtt_rw);
    th_send(rtt_a->up, 3, rc, th_now_us(), 0);
    if (rc == 0 || rc == EOWNERDEAD)
        dist_rwlock_unlock(&rtt_rw);
    return NULL;
}

static int rtt_child(void *p)
{
    const struct rtt_arg *a = rtt_a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    TH_CHECK_RC(dist_rwlock_init(&rtt_rw, a->name, NULL), 0);
    dist_rwlock_t warm;
    char wname[128];
    snprintf(wname, sizeof wname, "%s.warm", a->name);
    TH_CHECK_RC(dist_rwlock_init(&warm, wname, NULL), 0);
    TH_CHECK_RC(dist_rwlock_rdlock(&warm), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&warm), 0);
    th_send(a->up, 0, 0, 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    TH_CHECK_RC(dist_rwlock_rdlock(&rtt_rw), 0);   /* R1, slow: rtt ~1 s */
    th_send(a->up, 1, 0, 0, 0);
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    pthread_t t;
    TH_CHECK(pthread_create(&t, NULL, rtt_r2, NULL) == 0);   /* fast now */
    pthread_join(t, NULL);
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    TH_CHECK(pthread_create(&t, NULL, rtt_r3, NULL) == 0);
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    th_send(a->up, 4, dist_rwlock_unlock(&rtt_rw), 0, 0);
    pthread_join(t, NULL);
    return 0;
}

static void test_slow_sample_widens_trust(void **state)
{
    (void)state;
    static struct rtt_arg a;
    th_name(a.name, sizeof a.name, "rttwide");
    th_proxy_t *px = th_proxy_url_for(a.url, sizeof a.url);
    th_steered_t c;
    th_proc_t q;
    assert_int_equal(th_proc_start(&q, NULL), 0);
    th_steer(&c, rtt_child, &a, &a.up, &a.down);
    th_msg_t msg;
    assert_int_equal(th_recv(c.up.rd, &msg, 20000), 0);
    th_proxy_mode(px, TH_PROXY_SLOW, 500);
    th_send(c.down.wr, 1, 0, 0, 0);
    assert_int_equal(th_recv(c.up.rd, &msg, 20000), 0);   /* R1 reads */
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    th_sleep_ms(50);                      /* what was queued has gone through */
    th_send(c.down.wr, 1, 0, 0, 0);
    assert_int_equal(th_recv(c.up.rd, &msg, 20000), 0);   /* R2 joined and left */
    assert_int_equal(msg.tag, 2);
    TH_ASSERT_RC((int)msg.a, 0);
    th_sleep_ms(60);                      /* R2's renewal (within 20 ms) ran */
    th_lock_lose(0, a.name);              /* Redis loses P's read hold */
    int64_t lost = th_now_us();
    TH_ASSERT_RC(th_proc_op(&q, TH_RW_TRYWRLOCK, a.name), 0);
    th_sleep_ms(150);                     /* well past the 50 ms bound */
    th_send(c.down.wr, 1, 0, 0, 0);       /* R3 asks to read */
    int joined = th_recv(c.up.rd, &msg, 700) == 0;
    int64_t at = msg.b;
    TH_ASSERT_RC(th_proc_op(&q, TH_RW_UNLOCK, a.name), 0);
    th_send(c.down.wr, 1, 0, 0, 0);
    th_sleep_ms(200);
    th_kill_child(c.pid);
    assert_int_equal(th_proc_stop(&q), 0);
    th_pipe_close(&c.up);
    th_pipe_close(&c.down);
    th_proxy_stop(px);
    if (joined && msg.tag == 3)
        fail_msg("a reader of the process joined (%s) a hold Redis had lost %lld ms before, "
                 "while another process held the lock for writing",
                 th_errname((int)msg.a), (long long)(at - lost) / 1000);
}

/* ------------------------------------------------------------------------
 * A sign whose cause persists makes the watchdog spin.  After a
 * failover, a process pinned to the old master (redis://) renews its hold
 * there: renew.lua's PEXPIRE meets READONLY (the hold is still on the
 * demoted server, replicated back), script.c calls dl_trust_end, whose hook
 * (dl_watchdog_confirm_all) sets wall=1 / wnext=0, and the watchdog renews
 * every hold again at once, meets READONLY again... as fast as round trips
 * go, for as long as the process holds a renewable lock.  Before the change
 * the renewal failed once per tick (lease/3). */

static long long script_calls(int port)
{
    redisReply *r = th_cmd_at(port, "INFO commandstats");
    long long n = 0;
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *k[] = { "cmdstat_evalsha:calls=", "cmdstat_eval:calls=" };
        for (int i = 0; i < 2; i++) {
            const char *p = strstr(r->str, k[i]);
            if (p)
                n += strtoll(p + strlen(k[i]), NULL, 10);
        }
    }
    if (r)
        freeReplyObject(r);
    return n;
}

static int synced(int port)
{
    redisReply *r = th_cmd_at(port, "INFO replication");
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "master_link_status:up");
    if (r)
        freeReplyObject(r);
    return ok;
}

static void test_readonly_sign_spins_watchdog(void **state)
{
    (void)state;
    static th_server_t a, b;
    assert_int_equal(th_server_start(&a), 0);
    assert_int_equal(th_server_start(&b), 0);
    th_cmd_at_ll(b.port, "REPLICAOF 127.0.0.1 %d", a.port);
    int64_t end = th_now_ms() + 10000;
    while (!synced(b.port) && th_now_ms() < end)
        th_sleep_ms(20);
    assert_true(synced(b.port));
    char name[96];
    th_name(name, sizeof name, "rospin");
    char envurl[96];
    snprintf(envurl, sizeof envurl, "DISTLOCK_URL=%s", a.url);
    const char *env[] = { envurl, "DISTLOCK_LEASE_MS=10000", "DISTLOCK_LOG=error", NULL };
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, env), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    int64_t locked = th_now_ms();
    th_sleep_ms(200);
    /* failover: b is the master now, a its replica (with the hold) */
    th_cmd_at_ll(b.port, "REPLICAOF NO ONE");
    th_cmd_at_ll(a.port, "REPLICAOF 127.0.0.1 %d", b.port);
    end = th_now_ms() + 10000;
    while (!synced(a.port) && th_now_ms() < end)
        th_sleep_ms(20);
    assert_true(synced(a.port));
    /* past the first tick (lease/3 = 3.3 s) after the failover, within the
     * lease the hold still has on the demoted server */
    int64_t wake = locked + 3600 - th_now_ms();
    if (wake > 0)
        th_sleep_ms(wake);
    long long c0 = script_calls(a.port);
    th_sleep_ms(2000);
    long long c1 = script_calls(a.port);
    th_proc_kill(&p);
    th_server_stop(&a);
    th_server_stop(&b);
    print_message("scripts run on the demoted server in 2 s: %lld\n", c1 - c0);
    /* A tick is 3.3 s: one renewal or none in those 2 s. */
    if (c1 - c0 > 100)
        fail_msg("the demoted server received %lld scripts in 2 s from one process holding "
                 "one lock: the watchdog spins on a persistent READONLY", c1 - c0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_fixed_lease_grantee_death_reported),
        TH_TEST(test_late_reply_keeps_ownerdead),
        TH_TEST(test_reentrant_relock_past_validity),
        TH_TEST(test_relock_after_stall),
        TH_TEST(test_slow_sample_widens_trust),
        TH_TEST(test_readonly_sign_spins_watchdog),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
