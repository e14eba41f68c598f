/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_faults_net.c - the network between the library and Redis failing,
 * through a loopback TCP proxy (harness_proxy.h) that the processes under
 * test reach via DISTLOCK_URL: replies lost after Redis ran the command,
 * requests cut half-way, connections dropped, refused, black-holed,
 * slowed down, and pub/sub messages lost on a connection that stays up.
 *
 * What must hold: every call ends (reconnect and resend); a resent
 * command never makes two holders or a hold the library does not know
 * of (checked in Redis, directly, during every hold); an unlock whose
 * reply was lost still reports success and frees the lock; nothing is
 * left held at the end; the process never dies of SIGPIPE.
 */
#include "harness.h"
#include "harness_checker.h"
#include "harness_proxy.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

/* Redis (directly, not through the proxy) has the write hold of fence f. */
static void assert_redis_hold(const char *name, uint64_t f, const char *what)
{
    char key[300];
    th_key(key, sizeof key, name, "");
    redisReply *r = th_cmd("HGET %s fence", key);
    unsigned long long got = r->type == REDIS_REPLY_STRING ? strtoull(r->str, NULL, 10) : 0;
    int nil = r->type == REDIS_REPLY_NIL;
    freeReplyObject(r);
    if (nil || got != f)
        fail_msg("%s: the library says we hold \"%s\" with fence %llu, Redis says %s %llu", what,
                 name, (unsigned long long)f, nil ? "nobody holds it" : "fence", got);
}

static void assert_free(const char *name, const char *what)
{
    int left = chk_keys_left(name);
    if (left)
        fail_msg("%s: %d key(s) of \"%s\" still exist after unlock", what, left, name);
}

enum { CUT_REPLY, CUT_REQUEST };

static uint64_t cuts_of(th_proxy_t *px, int how)
{
    th_proxy_stats_t s;
    th_proxy_get_stats(px, &s);
    return how == CUT_REPLY ? s.replies_cut : s.requests_cut;
}

/* One call with the next reply (or request) cut; the cut must happen,
 * and the call must still give want. */
static void cut_call(th_proxy_t *px, int how, th_proc_t *p, int op, const char *name, long arg,
                     int want, const char *what)
{
    uint64_t c0 = cuts_of(px, how);
    if (how == CUT_REPLY)
        th_proxy_cut_replies(px, 1);
    else
        th_proxy_cut_requests(px, 1);
    th_res_t res;
    int rc = th_proc_opa(p, op, name, arg, &res);
    uint64_t c1 = cuts_of(px, how);
    print_message("%s cut: %-28s %s after %lld ms\n", how == CUT_REPLY ? "reply  " : "request",
                  what, th_errname(rc), (long long)((res.t_done_us - res.t_start_us) / 1000));
    if (rc != want)
        fail_msg("%s with its %s cut: %s (%s), want %s", what,
                 how == CUT_REPLY ? "reply" : "request", th_errname(rc), res.err, th_errname(want));
    if (c1 != c0 + 1) {
        /* the cut fell on another connection's traffic: use it up */
        th_proxy_cut_replies(px, 0);
        fail_msg("%s: the proxy made %llu cut(s), want 1", what, (unsigned long long)(c1 - c0));
    }
    if ((res.t_done_us - res.t_start_us) / 1000 > 1500)
        fail_msg("%s took %lld ms to recover from a cut connection", what,
                 (long long)((res.t_done_us - res.t_start_us) / 1000));
}

static void run_cuts(int how)
{
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", th_proxy_url(px));
    const char *env[] = { url, "DISTLOCK_IO_TIMEOUT_MS=2000", NULL };
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, env), 0);
    char m[128], rw[128];
    th_name(m, sizeof m, how == CUT_REPLY ? "cutrep" : "cutreq");
    th_name(rw, sizeof rw, how == CUT_REPLY ? "cutrep-rw" : "cutreq-rw");
    th_res_t res;
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_LOCK, m, 0, NULL), 0);          /* warm up */
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_UNLOCK, m, 0, NULL), 0);

    cut_call(px, how, &p, TH_M_LOCK, m, 0, 0, "lock");
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_FENCE, m, 0, &res), 0);
    assert_redis_hold(m, res.fence, "lock");
    cut_call(px, how, &p, TH_M_UNLOCK, m, 0, 0, "unlock");
    assert_free(m, "unlock");
    cut_call(px, how, &p, TH_M_TRYLOCK, m, 0, 0, "trylock");
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_FENCE, m, 0, &res), 0);
    assert_redis_hold(m, res.fence, "trylock");
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_UNLOCK, m, 0, NULL), 0);
    cut_call(px, how, &p, TH_M_TIMEDLOCK, m, 3000, 0, "timedlock");
    cut_call(px, how, &p, TH_M_UNLOCK, m, 0, 0, "unlock after timedlock");
    assert_free(m, "unlock after timedlock");
    cut_call(px, how, &p, TH_RW_RDLOCK, rw, 0, 0, "rdlock");
    cut_call(px, how, &p, TH_RW_UNLOCK, rw, 0, 0, "unlock of a read hold");
    assert_free(rw, "unlock of a read hold");
    cut_call(px, how, &p, TH_RW_WRLOCK, rw, 0, 0, "wrlock");
    TH_ASSERT_RC(th_proc_opa(&p, TH_RW_FENCE, rw, 0, &res), 0);
    assert_redis_hold(rw, res.fence, "wrlock");
    cut_call(px, how, &p, TH_RW_UNLOCK, rw, 0, 0, "unlock of a write hold");
    assert_free(rw, "unlock of a write hold");

    /* A lock that must queue: another process holds it (directly on
     * Redis); the cut falls on p's registration, its refresh or the grant
     * pushed to it.  (Not this process: see "fork" in harness_proxy.c.) */
    th_proc_t hp;
    assert_int_equal(th_proc_start(&hp, NULL), 0);
    for (int round = 0; round < 3; round++) {
        TH_ASSERT_RC(th_proc_opa(&hp, TH_M_LOCK, m, 0, NULL), 0);
        uint64_t c0 = cuts_of(px, how);
        if (round == 0) {                       /* the registration */
            if (how == CUT_REPLY)
                th_proxy_cut_replies(px, 1);
            else
                th_proxy_cut_requests(px, 1);
        }
        assert_int_equal(th_proc_opa_async(&p, TH_M_LOCK, m, 0), 0);
        char qkey[300];
        if (!th_wait_zcard(th_key(qkey, sizeof qkey, m, ":q"), 1, 5000))
            fail_msg("round %d: the waiter never queued", round);
        if (round == 1 && how == CUT_REPLY)
            th_proxy_cut_replies(px, 1);        /* the grant push */
        if (round == 2)                         /* everything at the release */
            th_proxy_cut_all(px);
        th_sleep_ms(30);
        th_res_t rel;
        TH_ASSERT_RC(th_proc_opa(&hp, TH_M_UNLOCK, m, 0, &rel), 0);
        int64_t t_rel = rel.t_start_us;
        if (th_proc_recv(&p, &res, 5000) != 0)
            fail_msg("round %d: the waiter was never served", round);
        int64_t el = (res.t_done_us - t_rel) / 1000;
        th_proxy_stats_t sr;
        th_proxy_get_stats(px, &sr);
        print_message("queued waiter, round %d: %s %lld ms after the release (%llu targeted cut(s), "
                      "%llu connections cut so far)\n", round, th_errname(res.rc), (long long)el,
                      (unsigned long long)(cuts_of(px, how) - c0), (unsigned long long)sr.cuts);
        TH_ASSERT_RC(res.rc, 0);
        if (el > 1500)
            fail_msg("round %d: the waiter needed %lld ms", round, (long long)el);
        TH_ASSERT_RC(th_proc_opa(&p, TH_M_FENCE, m, 0, &res), 0);
        assert_redis_hold(m, res.fence, "queued waiter");
        TH_ASSERT_RC(th_proc_opa(&hp, TH_M_TRYLOCK, m, 0, NULL), EBUSY);
        TH_ASSERT_RC(th_proc_opa(&p, TH_M_UNLOCK, m, 0, NULL), 0);
        assert_free(m, "queued waiter's unlock");
    }
    th_proxy_stats_t st;
    th_proxy_get_stats(px, &st);
    print_message("proxy: %llu connections, %llu cuts\n", (unsigned long long)st.accepted,
                  (unsigned long long)st.cuts);
    assert_int_equal(th_proc_stop(&hp), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    th_proxy_stop(px);
}

/* The reply of each kind of call is lost after Redis ran the command
 * (the connection is cut instead): the call reconnects, resends and
 * returns what it would have returned (0), within 1.5 s; Redis has
 * exactly the hold the library reports; an unlock whose reply was lost
 * returns 0 (not ENOLCK) and leaves nothing behind.  Also for a waiter
 * whose registration reply, grant push, or every connection is lost. */
static void test_reply_lost(void **state)
{
    run_cuts(CUT_REPLY);
}

/* The same with the request cut half-way (Redis never runs it). */
static void test_request_cut(void **state)
{
    run_cuts(CUT_REQUEST);
}

/* ------------------------------------------------- busy run with faults */

struct net_tick { th_proxy_t *px; int64_t next; int step; int faults[8]; };

static const char *const fault_names[8] = {
    "cut all", "3 replies lost", "3 requests cut", "drop 100 ms", "blackhole 300 ms",
    "slow 20 ms for 300 ms", "pushes muted 300 ms", "pass" };

/* Every 150 ms the next fault, round robin; DROP, BLACKHOLE, SLOW and the
 * muting last until the next step. */
static void net_tick(void *arg, int64_t elapsed_ms, uint64_t done)
{
    struct net_tick *t = arg;
    if (elapsed_ms < t->next)
        return;
    int f = t->step++ % 8;
    th_proxy_mute_pushes(t->px, 0);
    th_proxy_mode(t->px, TH_PROXY_PASS, 0);
    long len = 150;
    switch (f) {
    case 0: th_proxy_cut_all(t->px); break;
    case 1: th_proxy_cut_replies(t->px, 3); break;
    case 2: th_proxy_cut_requests(t->px, 3); break;
    case 3: th_proxy_mode(t->px, TH_PROXY_DROP, 0); len = 100; break;
    case 4: th_proxy_mode(t->px, TH_PROXY_BLACKHOLE, 0); len = 300; break;
    case 5: th_proxy_mode(t->px, TH_PROXY_SLOW, 20); len = 300; break;
    case 6: th_proxy_mute_pushes(t->px, 1); len = 300; break;
    default: break;
    }
    t->faults[f]++;
    t->next = elapsed_ms + len;
}

/* Busy runs through the proxy (3 processes x 2 threads, mutex then
 * rwlock, I/O time-out 1.5 s, lease 5 s) while the network fails in turn
 * in every way above, 8 kinds of fault in a cycle of 1.5 s.  Every
 * operation completes; no call fails (each fault is shorter than the I/O
 * time-out: reconnect and resend hide it); no overlap, no fence
 * inversion, no lost update; during every hold Redis has the hold the
 * library reports (checked directly); no lease ever lapses (no
 * EOWNERDEAD, no ENOLCK); nothing is left held at the end. */
static void test_busy_run_network_faults(void **state)
{
    /* Two runs of a fixed number of holds: a busy machine takes longer
     * (79 holds/s beside a CPU hog, where 35 s were not enough). */
    th_time_limit(200);
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", th_proxy_url(px));
    const char *env[] = { url, "DISTLOCK_IO_TIMEOUT_MS=1500", "DISTLOCK_LEASE_MS=5000", NULL };
    static const int kinds[2] = { CHK_MUTEX, CHK_RWLOCK };
    for (int k = 0; k < 2; k++) {
        char name[128];
        th_name(name, sizeof name, k ? "net-rw" : "net");
        struct net_tick t;
        memset(&t, 0, sizeof t);
        t.px = px;
        chk_cfg_t c;
        memset(&c, 0, sizeof c);
        c.kind = kinds[k];
        c.procs = 3;
        c.threads = 2;
        c.ops = 3000;
        c.hold_us = 200;
        c.name = name;
        c.env = env;
        c.retry_errors = 1;
        c.quiet = 1;
        c.verify_port = th_redis_port();
        c.tick = net_tick;
        c.tick_arg = &t;
        c.tick_ms = 5;
        c.max_ms = 90000;
        c.child_alarm_s = 100;      /* max_ms governs (th_fork_child's 40 s did: 45 holds/s) */
        chk_report_t r;
        int rc = chk_run(&c, &r);
        th_proxy_mute_pushes(px, 0);
        th_proxy_mode(px, TH_PROXY_PASS, 0);
        chk_print(stderr, k ? "rwlock through a failing network" : "mutex through a failing network", &r);
        th_proxy_stats_t st;
        th_proxy_get_stats(px, &st);
        print_message("faults:");
        for (int f = 0; f < 8; f++)
            print_message(" %s x%d%s", fault_names[f], t.faults[f], f < 7 ? "," : "\n");
        print_message("proxy: %llu connections (%llu refused), %llu cut, %llu replies and %llu "
                      "requests cut, %llu push chunks muted\n", (unsigned long long)st.accepted,
                      (unsigned long long)st.refused, (unsigned long long)st.cuts,
                      (unsigned long long)st.replies_cut, (unsigned long long)st.requests_cut,
                      (unsigned long long)st.pushes_muted);
        if (rc != 0)
            fail_msg("%s", r.first);
        assert_int_equal(r.holds, r.expected);
        assert_int_equal(r.overlaps + r.excused, 0);
        assert_int_equal(r.fence_inversions, 0);
        assert_int_equal(r.redis_bad + r.redis_bad_excused, 0);
        assert_int_equal(r.lock_eio + r.lock_timedout + r.lock_other, 0);
        assert_int_equal(r.unlock_enolck + r.unlock_eio + r.unlock_other, 0);
        assert_int_equal(r.ownerdead, 0);
        assert_int_equal(chk_keys_left(name), 0);
        if (t.step < 8)
            fail_msg("the run ended after %d faults: too short to go through each kind", t.step);
    }
    th_proxy_stop(px);
}

/* -------------------------------------------------------- pushes lost */

/* Every pub/sub message is lost (the connection stays up, so nothing
 * tells the waiters): four processes (lease 1500 ms: re-check every
 * 500 ms) waiting for a mutex are still served one after the other, each
 * within the re-check period + 300 ms, by asking Redis again; and they
 * say so (fallback_checks). */
static void test_pushes_lost_waiters_recheck(void **state)
{
    enum { NW = 4, RECHECK = 500 };
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", th_proxy_url(px));
    const char *env[] = { url, "DISTLOCK_LEASE_MS=1500", NULL };
    char name[128], qkey[300];
    th_name(name, sizeof name, "muted");
    th_key(qkey, sizeof qkey, name, ":q");
    th_proc_t w[NW];
    for (int i = 0; i < NW; i++)
        assert_int_equal(th_proc_start(&w[i], env), 0);
    th_proc_t hp;                               /* the holder, directly on Redis */
    assert_int_equal(th_proc_start(&hp, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&hp, TH_M_LOCK, name, 0, NULL), 0);
    for (int i = 0; i < NW; i++)
        assert_int_equal(th_proc_opa_async(&w[i], TH_M_LOCK, name, 0), 0);
    if (!th_wait_zcard(qkey, NW, 5000))
        fail_msg("the waiters never queued");
    th_proxy_mute_pushes(px, 1);
    th_res_t rel;
    TH_ASSERT_RC(th_proc_opa(&hp, TH_M_UNLOCK, name, 0, &rel), 0);
    int64_t t_prev = rel.t_start_us;
    int served[NW] = { 0 };
    int64_t worst = 0;
    for (int k = 0; k < NW; k++) {
        struct pollfd pf[NW];
        for (int i = 0; i < NW; i++)
            pf[i] = (struct pollfd){ served[i] ? -1 : w[i].res_rd, POLLIN, 0 };
        if (poll(pf, NW, 5000) <= 0)
            fail_msg("%d of %d waiters served; the others waited 5 s more", k, NW);
        int who = 0;
        while (!pf[who].revents)
            who++;
        th_res_t res;
        assert_int_equal(th_proc_recv(&w[who], &res, 2000), 0);
        TH_ASSERT_RC(res.rc, 0);
        int64_t el = (res.t_done_us - t_prev) / 1000;
        worst = el > worst ? el : worst;
        served[who] = 1;
        TH_ASSERT_RC(th_proc_opa(&w[who], TH_M_UNLOCK, name, 0, &res), 0);
        t_prev = res.t_done_us;
    }
    th_proxy_stats_t st;
    th_proxy_get_stats(px, &st);
    unsigned long long fallbacks = 0;
    for (int i = 0; i < NW; i++) {
        th_res_t res;
        TH_ASSERT_RC(th_proc_opa(&w[i], TH_STATS, name, 0, &res), 0);
        fallbacks += res.fence;
    }
    print_message("pushes muted: %llu push chunks lost, %d waiters served, worst handoff %lld ms, "
                  "%llu waits ended by re-checking\n", (unsigned long long)st.pushes_muted, NW,
                  (long long)worst, fallbacks);
    if (st.pushes_muted < 1)
        fail_msg("no push was muted: the test tested nothing");
    if (worst > RECHECK + 300)
        fail_msg("a handoff took %lld ms with pushes lost (re-check every %d ms)", (long long)worst,
                 RECHECK);
    assert_true(fallbacks >= 1);
    for (int i = 0; i < NW; i++)
        assert_int_equal(th_proc_stop(&w[i]), 0);
    assert_int_equal(th_proc_stop(&hp), 0);
    assert_int_equal(chk_keys_left(name), 0);
    th_proxy_stop(px);
}

/* ------------------------------------------- a call behind a slow one */

/* Two threads of one process share its connection: a call made while
 * another thread's round trip is in flight waits for it in the queue.  A
 * timed call waits there until its deadline, no shorter: a lock with a
 * deadline 5 s away, queued behind a round trip the network slows to
 * about 600 ms, is taken (0), not failed with EIO at once.
 * Regression test: the queue's condition variable was on CLOCK_REALTIME
 * while deadlines are monotonic, so such a wait ended at once ("timed out
 * waiting for redis (a round trip before it is stuck)"); the busy run
 * above failed with that EIO now and then, when a timed lock met a
 * renewal slowed by a fault. */
enum { SLOWRT_DELAY = 300 };

struct slowrt_arg { const char *url, *a, *b; th_pipe_t to_parent, to_child; };
struct slowrt_thread { dist_mutex_t *m; th_pipe_t *started, *done; int rc, urc; };

static void *slowrt_trylock(void *p)
{
    struct slowrt_thread *t = p;
    TH_CHECK(th_send(t->started->wr, 2, 0, 0, 0) == 0);
    t->rc = dist_mutex_trylock(t->m);    /* its round trip: 2 x SLOWRT_DELAY */
    th_msg_t m;
    TH_CHECK(th_recv(t->done->rd, &m, 20000) == 0);
    if (t->rc == 0)
        t->urc = dist_mutex_unlock(t->m);
    return NULL;
}

static int slowrt_child(void *p)
{
    struct slowrt_arg *a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "4000", 1);
    dist_mutex_t ma, mb;
    TH_CHECK_RC(dist_mutex_init(&ma, a->a, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&mb, a->b, NULL), 0);
    /* connect and subscribe while the network is fast */
    TH_CHECK_RC(dist_mutex_lock(&ma), 0);
    TH_CHECK_RC(dist_mutex_unlock(&ma), 0);
    th_msg_t m;
    TH_CHECK(th_send(a->to_parent.wr, 1, 0, 0, 0) == 0);
    TH_CHECK(th_recv(a->to_child.rd, &m, 10000) == 0);     /* the proxy is slow now */
    th_pipe_t started, done;
    th_pipe_open(&started);
    th_pipe_open(&done);
    struct slowrt_thread t = { &ma, &started, &done, -1, -1 };
    pthread_t th;
    TH_CHECK(pthread_create(&th, NULL, slowrt_trylock, &t) == 0);
    TH_CHECK(th_recv(started.rd, &m, 10000) == 0);
    th_sleep_ms(100);                    /* its round trip is under way */
    struct timespec ts = th_abstime_ms(5000);
    int64_t t0 = th_now_ms();
    int rc = dist_mutex_timedlock(&mb, &ts);
    int64_t el = th_now_ms() - t0;
    TH_CHECK(th_send(done.wr, 1, 0, 0, 0) == 0);
    pthread_join(th, NULL);
    fprintf(stderr, "slow round trip: the other thread's trylock %s, the timed lock behind it %s "
            "after %lld ms%s%s\n", th_errname(t.rc), th_errname(rc), (long long)el,
            rc ? ": " : "", rc ? dist_lasterror() : "");
    TH_CHECK_RC(t.rc, 0);
    TH_CHECK_RC(rc, 0);
    TH_CHECK_RC(t.urc, 0);
    TH_CHECK_RC(dist_mutex_unlock(&mb), 0);
    th_pipe_close(&started);
    th_pipe_close(&done);
    return 0;
}

static void test_timed_call_behind_slow_round_trip(void **state)
{
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char a[128], b[128];
    th_name(a, sizeof a, "slowrt-a");
    th_name(b, sizeof b, "slowrt-b");
    struct slowrt_arg arg = { th_proxy_url(px), a, b, { -1, -1 }, { -1, -1 } };
    th_pipe_open(&arg.to_parent);
    th_pipe_open(&arg.to_child);
    pid_t pid = th_fork_child(slowrt_child, &arg);
    th_msg_t m;
    int ready = th_recv(arg.to_parent.rd, &m, 10000) == 0;
    if (ready) {
        th_proxy_mode(px, TH_PROXY_SLOW, SLOWRT_DELAY);
        th_send(arg.to_child.wr, 1, 0, 0, 0);
    }
    int st = th_wait_child_ms(pid, 20000);
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    th_pipe_close(&arg.to_parent);
    th_pipe_close(&arg.to_child);
    th_proxy_stop(px);
    if (!ready)
        fail_msg("the child never got ready (status %d)", st);
    if (st != 0)
        fail_msg("child: status %d (%s)", st, st == TH_CHILD_FAIL ? "a check failed, see above"
                 : st == TH_WAIT_TIMEOUT ? "time-out, killed" : "died");
    assert_int_equal(chk_keys_left(a), 0);
    assert_int_equal(chk_keys_left(b), 0);
}

/* ------------------------------------------ an abstime already past */

/* An abstime already past still tries once (SPEC, like pthreads), and
 * that try gets its answer however slow the round trip, as a try call's
 * does: on a link that delays each chunk PAST_DELAY ms each way, a
 * semaphore of value 1 (counting, then leased) gives 0 and then
 * ETIMEDOUT to timed waits with an abstime in 1969; a free mutex, a free
 * rwlock (write, then read) and a free set of mutexes give 0 to their
 * timed locks.  Each call takes about one slow round trip.
 * Regression test: such a call's round trip was cut 50 ms after it was
 * sent (a deadline already past got "a round trip's worth at least"),
 * so on a loaded machine or a slow network the try ran in Redis, its
 * permit or lock was withdrawn, and the call said ETIMEDOUT; the next
 * call then took it (test_badinput's test_sem_inputs saw ETIMEDOUT, then
 * 0, once under load). */
enum { PAST_DELAY = 150 };

struct past_arg { const char *url, *name; th_pipe_t to_parent, to_child; };

static int past_child(void *p)
{
    struct past_arg *a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "4000", 1);
    char sc[160], sl[160], rwn[160], m2[160];
    snprintf(sc, sizeof sc, "%s-sc", a->name);
    snprintf(sl, sizeof sl, "%s-sl", a->name);
    snprintf(rwn, sizeof rwn, "%s-rw", a->name);
    snprintf(m2, sizeof m2, "%s-m2", a->name);
    dist_sem_t c, l;
    dist_mutex_t m, n;
    dist_rwlock_t rw;
    TH_CHECK_RC(dist_sem_init(&c, sc, 1, 0), 0);
    TH_CHECK_RC(dist_sem_init(&l, sl, 1, DIST_SEM_LEASED), 0);
    TH_CHECK_RC(dist_mutex_init(&m, a->name, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&n, m2, NULL), 0);
    TH_CHECK_RC(dist_rwlock_init(&rw, rwn, NULL), 0);
    /* connect (and subscribe) while the network is fast */
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    th_msg_t msg;
    TH_CHECK(th_send(a->to_parent.wr, 1, 0, 0, 0) == 0);
    TH_CHECK(th_recv(a->to_child.rd, &msg, 10000) == 0);     /* the link is slow now */
    struct timespec past = { .tv_sec = -1, .tv_nsec = 0 };
    dist_sem_t *sems[2] = { &c, &l };
    for (int i = 0; i < 2; i++) {
        int64_t t0 = th_now_ms();
        int rc = dist_sem_timedwait(sems[i], &past);
        int64_t el = th_now_ms() - t0;
        fprintf(stderr, "past abstime, %s semaphore of value 1: %s after %lld ms%s%s\n",
                i ? "leased" : "counting", th_errname(rc), (long long)el, rc ? ": " : "",
                rc ? dist_lasterror() : "");
        TH_CHECK_RC(rc, 0);
        TH_CHECK_RC(dist_sem_timedwait(sems[i], &past), ETIMEDOUT);
        TH_CHECK_RC(dist_sem_post(sems[i]), 0);
        int v = -1;
        TH_CHECK_RC(dist_sem_getvalue(sems[i], &v), 0);
        TH_CHECK(v == 1);
    }
    int64_t t0 = th_now_ms();
    int rc = dist_mutex_timedlock(&m, &past);
    fprintf(stderr, "past abstime, a free mutex: %s after %lld ms%s%s\n", th_errname(rc),
            (long long)(th_now_ms() - t0), rc ? ": " : "", rc ? dist_lasterror() : "");
    TH_CHECK_RC(rc, 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_rwlock_timedwrlock(&rw, &past), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    TH_CHECK_RC(dist_rwlock_timedrdlock(&rw, &past), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    dist_mutex_t *set[2] = { &m, &n };
    TH_CHECK_RC(dist_mutex_timedlockall(set, 2, &past), 0);
    TH_CHECK_RC(dist_mutex_unlock(&n), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_rwlock_destroy(&rw), 0);
    TH_CHECK_RC(dist_mutex_destroy(&n), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    TH_CHECK_RC(dist_sem_destroy(&l), 0);
    TH_CHECK_RC(dist_sem_destroy(&c), 0);
    return 0;
}

static void test_past_abstime_tries_once_on_slow_link(void **state)
{
    (void)state;
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char name[128];
    th_name(name, sizeof name, "pastabs");
    struct past_arg arg = { th_proxy_url(px), name, { -1, -1 }, { -1, -1 } };
    th_pipe_open(&arg.to_parent);
    th_pipe_open(&arg.to_child);
    pid_t pid = th_fork_child(past_child, &arg);
    th_msg_t m;
    int ready = th_recv(arg.to_parent.rd, &m, 10000) == 0;
    if (ready) {
        th_proxy_mode(px, TH_PROXY_SLOW, PAST_DELAY);
        th_send(arg.to_child.wr, 1, 0, 0, 0);
    }
    int st = th_wait_child_ms(pid, 30000);
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    th_pipe_close(&arg.to_parent);
    th_pipe_close(&arg.to_child);
    th_proxy_stop(px);
    if (!ready)
        fail_msg("the child never got ready (status %d)", st);
    if (st != 0)
        fail_msg("child: status %d (%s)", st, st == TH_CHILD_FAIL ? "a check failed, see above"
                 : st == TH_WAIT_TIMEOUT ? "time-out, killed" : "died");
    static const char *const locks[] = { "", "-m2", "-rw" };
    for (int i = 0; i < 3; i++) {
        char n[160];
        snprintf(n, sizeof n, "%s%s", name, locks[i]);
        if (chk_keys_left(n))
            fail_msg("lock %s: keys left in Redis after its unlock", n);
    }
}

/* ------------------------------------------------------------- SIGPIPE */

/* Connections reset by the peer at every moment: for 1.5 s the proxy
 * lets connections in for 3 ms, then cuts them all and resets new ones at
 * accept for 7 ms, while 4 processes with the default SIGPIPE disposition
 * run 2 threads that lock and unlock and one that waits for a lock we
 * hold (so their subscribers keep reconnecting and subscribing).  It must not die; its calls fail with
 * EIO (with a dist_lasterror()) or succeed; once the network is back,
 * every thread locks again. */
struct rst_arg { const char *url, *name, *held; };
struct rst_thread { dist_mutex_t *m; long ok, eio, bad; };

static void *rst_worker(void *p)
{
    struct rst_thread *t = p;
    int64_t end = th_now_ms() + 2500;
    while (th_now_ms() < end) {
        int rc = dist_mutex_lock(t->m);
        if (rc == 0 || rc == EOWNERDEAD) {
            t->ok++;
            rc = dist_mutex_unlock(t->m);
        }
        if (rc == EIO) {
            t->eio++;
            if (!dist_lasterror()[0])
                t->bad++;
        } else if (rc != 0 && rc != ENOLCK) {
            t->bad++;
            fprintf(stderr, "rst child: %s: %s\n", th_errname(rc), dist_lasterror());
        }
    }
    return NULL;
}

static int rst_child(void *p)
{
    struct rst_arg *a = p;
    th_sigpipe_default();
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "200", 1);
    dist_mutex_t m, h;
    TH_CHECK_RC(dist_mutex_init(&m, a->name, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&h, a->held, NULL), 0);
    /* two threads lock and unlock; one waits for a lock held elsewhere */
    struct rst_thread ts[3] = { { &m, 0, 0, 0 }, { &m, 0, 0, 0 }, { &h, 0, 0, 0 } };
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        TH_CHECK(pthread_create(&th[i], NULL, rst_worker, &ts[i]) == 0);
    long ok = 0, eio = 0, bad = 0;
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        ok += ts[i].ok;
        eio += ts[i].eio;
        bad += ts[i].bad;
    }
    fprintf(stderr, "rst child %d: %ld ok, %ld EIO, %ld unexpected\n", (int)getpid(), ok, eio, bad);
    TH_CHECK(bad == 0);
    TH_CHECK(ts[0].ok + ts[1].ok > 0);
    return 0;
}

/* Requests that reach Redis only after their callers gave up on them (a
 * timed lock whose deadline passed, a lock whose I/O time-out passed) must
 * leave no hold and no queue place behind, even when the callers' own
 * withdrawals, sent on new connections, run before them; and must not end
 * the hold a caller took meanwhile by asking again.  The proxy delays
 * the old connections' bytes by STALE_MS and passes the new ones' at once:
 * the worst order.  The link writes the undo of each such request right
 * behind it on its old connection (lua/withdraw.lua), so Redis runs it
 * right after the request, whatever the order of connections. */
static void test_stale_requests_undone(void **state)
{
    (void)state;
    enum { STALE_MS = 1500, DEADLINE_MS = 300, IO_MS = 400 };
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", th_proxy_url(px));
    const char *env[] = { url, "DISTLOCK_IO_TIMEOUT_MS=400", NULL };
    /* free: a timed lock on a free lock (the stale request takes it);
     * held: a timed lock on a held one (it queues); blocking: a lock with no
     * deadline on a free one (the I/O time-out ends it); again: as free,
     * then the process locks again at once, and holds that lock when its
     * stale request arrives ("mine", to Redis) */
    enum { FREE, HELD, BLOCKING, AGAIN, N };
    static const char *const tags[N] = { "stalefree", "staleheld", "staleio", "staleagain" };
    char name[N][128], key[N][300], qkey[N][300];
    th_proc_t p[N], hp;
    for (int i = 0; i < N; i++) {
        th_name(name[i], sizeof name[i], tags[i]);
        th_key(key[i], sizeof key[i], name[i], "");
        th_key(qkey[i], sizeof qkey[i], name[i], ":q");
        assert_int_equal(th_proc_start(&p[i], env), 0);
        /* connected, scripts cached: the next request is a single write */
        TH_ASSERT_RC(th_proc_opa(&p[i], TH_M_LOCK, name[i], 0, NULL), 0);
        TH_ASSERT_RC(th_proc_opa(&p[i], TH_M_UNLOCK, name[i], 0, NULL), 0);
    }
    assert_int_equal(th_proc_start(&hp, NULL), 0);     /* directly on Redis */
    TH_ASSERT_RC(th_proc_opa(&hp, TH_M_LOCK, name[HELD], 0, NULL), 0);

    th_proxy_mode(px, TH_PROXY_SLOW, STALE_MS);
    int64_t t0 = th_now_ms();
    assert_int_equal(th_proc_opa_async(&p[FREE], TH_M_TIMEDLOCK, name[FREE], DEADLINE_MS), 0);
    assert_int_equal(th_proc_opa_async(&p[HELD], TH_M_TIMEDLOCK, name[HELD], DEADLINE_MS), 0);
    assert_int_equal(th_proc_opa_async(&p[BLOCKING], TH_M_LOCK, name[BLOCKING], 0), 0);
    assert_int_equal(th_proc_opa_async(&p[AGAIN], TH_M_TIMEDLOCK, name[AGAIN], DEADLINE_MS), 0);
    /* Once the proxy has the requests (due STALE_MS on), what follows them
     * passes at once: the withdrawals the processes send from new
     * connections run before the stale requests.  (What follows them on
     * their own connections waits behind them: the proxy keeps order.) */
    th_sleep_ms(50);
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    for (int i = 0; i < N; i++) {
        th_res_t r;
        assert_int_equal(th_proc_recv(&p[i], &r, STALE_MS - 200), 0);
        print_message("%-9s: %s after %lld ms (%s)\n", tags[i], th_errname(r.rc),
                      (long long)(r.t_done_us - r.t_start_us) / 1000, r.err);
        if (r.rc != ETIMEDOUT && r.rc != EIO)
            fail_msg("%s: the call gave %s, want ETIMEDOUT or EIO", tags[i], th_errname(r.rc));
    }
    TH_ASSERT_RC(th_proc_opa(&p[AGAIN], TH_M_LOCK, name[AGAIN], 0, NULL), 0);
    int64_t arrive = t0 + STALE_MS + IO_MS + 200;
    if (th_now_ms() > arrive - STALE_MS / 2)
        fail_msg("the calls took too long for the stale requests to arrive last");
    while (th_now_ms() < arrive)
        th_sleep_ms(20);
    th_proxy_stats_t st;
    th_proxy_get_stats(px, &st);
    long long hold_free = th_cmd_ll("EXISTS %s", key[FREE]);
    long long hold_io = th_cmd_ll("EXISTS %s", key[BLOCKING]);
    long long queued = th_cmd_ll("ZCARD %s", qkey[HELD]);
    long long hold_again = th_cmd_ll("EXISTS %s", key[AGAIN]);
    print_message("after the stale requests arrived: free lock held %lld, blocking lock held "
                  "%lld, %lld queued for the held lock, the lock taken again held %lld; %llu "
                  "proxied connections open\n", hold_free, hold_io, queued, hold_again,
                  (unsigned long long)st.open);
    if (hold_free || hold_io)
        fail_msg("a request its caller gave up on left a hold in Redis");
    if (queued)
        fail_msg("a request its caller gave up on left a place in the queue");
    if (!hold_again)
        fail_msg("the undo of a stale request ended the hold its process took afterwards");
    TH_ASSERT_RC(th_proc_opa(&p[AGAIN], TH_M_UNLOCK, name[AGAIN], 0, NULL), 0);
    /* and the locks work as before: no EOWNERDEAD, nobody in the way */
    TH_ASSERT_RC(th_proc_opa(&hp, TH_M_UNLOCK, name[HELD], 0, NULL), 0);
    for (int i = 0; i < N; i++) {
        TH_ASSERT_RC(th_proc_opa(&p[i], TH_M_TIMEDLOCK, name[i], 1000, NULL), 0);
        TH_ASSERT_RC(th_proc_opa(&p[i], TH_M_UNLOCK, name[i], 0, NULL), 0);
        assert_int_equal(th_proc_stop(&p[i]), 0);
    }
    assert_int_equal(th_proc_stop(&hp), 0);
    th_proxy_stop(px);
}

/* A stale request that arrives after its process asked again and is queued
 * (the lock is held): it must not take the process's later registration
 * over, or its undo would take the live waiter out of the queue, and a
 * waiter queued behind it would be served first. */
static void test_stale_request_keeps_queue_place(void **state)
{
    (void)state;
    enum { STALE_MS = 1500, DEADLINE_MS = 300 };
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char url[96], name[128], qkey[300];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", th_proxy_url(px));
    const char *env[] = { url, NULL };
    th_name(name, sizeof name, "staleorder");
    th_key(qkey, sizeof qkey, name, ":q");
    th_proc_t p, later, hp;
    assert_int_equal(th_proc_start(&p, env), 0);
    assert_int_equal(th_proc_start(&later, NULL), 0);
    assert_int_equal(th_proc_start(&hp, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&hp, TH_M_LOCK, name, 0, NULL), 0);
    /* connected, subscribed, scripts cached: the next request is one write */
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_TIMEDLOCK, name, 200, NULL), ETIMEDOUT);

    th_proxy_mode(px, TH_PROXY_SLOW, STALE_MS);
    int64_t t0 = th_now_ms();
    assert_int_equal(th_proc_opa_async(&p, TH_M_TIMEDLOCK, name, DEADLINE_MS), 0);
    th_sleep_ms(50);
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    th_res_t r;
    assert_int_equal(th_proc_recv(&p, &r, STALE_MS - 200), 0);
    if (r.rc != ETIMEDOUT && r.rc != EIO)
        fail_msg("the timed lock gave %s, want ETIMEDOUT or EIO", th_errname(r.rc));
    /* asks again, and queues first; then another process queues */
    assert_int_equal(th_proc_opa_async(&p, TH_M_LOCK, name, 0), 0);
    if (!th_wait_zcard(qkey, 1, 1000))
        fail_msg("the process did not queue again");
    assert_int_equal(th_proc_opa_async(&later, TH_M_LOCK, name, 0), 0);
    if (!th_wait_zcard(qkey, 2, 1000))
        fail_msg("the second waiter did not queue");
    if (th_now_ms() > t0 + STALE_MS - 100)
        fail_msg("too slow: both waiters had to queue before the stale request arrived");
    while (th_now_ms() < t0 + STALE_MS + 300)
        th_sleep_ms(20);                        /* the stale request and its undo ran */
    long long queued = th_cmd_ll("ZCARD %s", qkey);
    print_message("after the stale request arrived: %lld queued (want 2)\n", queued);
    TH_ASSERT_RC(th_proc_opa(&hp, TH_M_UNLOCK, name, 0, NULL), 0);
    /* first come, first served: the process that asked again first */
    if (th_proc_recv(&p, &r, 2000) != 0)
        fail_msg("the first waiter was not served (queued %lld after the stale request)", queued);
    TH_ASSERT_RC(r.rc, 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_UNLOCK, name, 0, NULL), 0);
    assert_int_equal(th_proc_recv(&later, &r, 2000), 0);
    TH_ASSERT_RC(r.rc, 0);
    TH_ASSERT_RC(th_proc_opa(&later, TH_M_UNLOCK, name, 0, NULL), 0);
    assert_int_equal(queued, 2);
    assert_int_equal(th_proc_stop(&p), 0);
    assert_int_equal(th_proc_stop(&later), 0);
    assert_int_equal(th_proc_stop(&hp), 0);
    th_proxy_stop(px);
}

static void test_no_sigpipe_connections_reset(void **state)
{
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char name[128], held[128];
    th_name(name, sizeof name, "rst");
    th_name(held, sizeof held, "rst-held");
    /* another process holds it, so that the children wait and subscribe
     * (not this one: its library threads must not be allocating when we
     * fork, see harness_proxy.c) */
    th_proc_t hp;
    assert_int_equal(th_proc_start(&hp, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&hp, TH_M_LOCK, held, 0, NULL), 0);
    struct rst_arg a = { th_proxy_url(px), name, held };
    enum { NC = 4 };
    pid_t pids[NC];
    for (int i = 0; i < NC; i++)
        pids[i] = th_fork_child(rst_child, &a);
    th_sleep_ms(200);
    th_proxy_stats_t s0, s1;
    th_proxy_get_stats(px, &s0);
    int64_t end = th_now_ms() + 1500;
    th_proxy_mode(px, TH_PROXY_DROP, 0);
    while (th_now_ms() < end) {
        th_proxy_mode(px, TH_PROXY_PASS, 0);     /* let some connect ... */
        th_sleep_ms(3);
        th_proxy_mode(px, TH_PROXY_DROP, 0);     /* ... and reset them */
        th_sleep_ms(7);
    }
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    TH_ASSERT_RC(th_proc_opa(&hp, TH_M_UNLOCK, held, 0, NULL), 0);
    th_proxy_get_stats(px, &s1);
    int failed = 0;
    for (int i = 0; i < NC; i++) {
        int st = th_wait_child_ms(pids[i], 15000);
        if (st != 0) {
            print_error("child %d: status %d%s\n", (int)pids[i], st,
                        st == 128 + SIGPIPE ? " (killed by SIGPIPE)" : "");
            failed++;
        }
    }
    print_message("proxy: %llu connections accepted, %llu reset at once, %llu cut\n",
                  (unsigned long long)(s1.accepted - s0.accepted),
                  (unsigned long long)(s1.refused - s0.refused),
                  (unsigned long long)(s1.cuts - s0.cuts));
    assert_int_equal(th_proc_stop(&hp), 0);
    th_proxy_stop(px);
    if (failed)
        fail_msg("%d of %d processes died or failed with connections reset under them", failed, NC);
    assert_true(s1.refused - s0.refused > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_reply_lost),
        TH_TEST(test_request_cut),
        TH_TEST(test_busy_run_network_faults),
        TH_TEST(test_pushes_lost_waiters_recheck),
        TH_TEST(test_stale_requests_undone),
        TH_TEST(test_stale_request_keeps_queue_place),
        TH_TEST(test_timed_call_behind_slow_round_trip),
        TH_TEST(test_past_abstime_tries_once_on_slow_link),
        TH_TEST(test_no_sigpipe_connections_reset),
    };
    if (getenv("TH_FILTER"))                 /* run only the tests matching a pattern */
        cmocka_set_test_filter(getenv("TH_FILTER"));
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
