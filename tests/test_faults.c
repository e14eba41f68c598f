/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_faults.c - the promises kept when processes and servers fail:
 * a holder SIGKILLed (alone, and in the middle of a busy run), the
 * redis-server restarted without persistence, stalled by SIGSTOP for 3 s,
 * and killed under many threads with the default SIGPIPE disposition.
 *
 * test_lease.c / test_wakeup.c / test_errors.c cover the single-call
 * versions of some of these; here each case asserts the precise bound and
 * runs with several waiters, processes and lock kinds at once.  Every
 * server other than the suite's is a private one (th_server_start:
 * 127.0.0.1, free port, --save '' --appendonly no), stopped by pid.
 */
#include "harness.h"
#include "harness_checker.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

/* The first of n procs to answer: its index, or -1 after timeout_ms. */
static int recv_any(th_proc_t **ps, int n, long timeout_ms, th_res_t *res)
{
    struct pollfd pf[16];
    for (int i = 0; i < n; i++)
        pf[i] = (struct pollfd){ ps[i]->res_rd, POLLIN, 0 };
    int64_t deadline = th_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - th_now_ms();
        if (left <= 0)
            return -1;
        int r = poll(pf, (nfds_t)n, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        for (int i = 0; i < n; i++)
            if (pf[i].revents)
                return th_proc_recv(ps[i], res, 2000) == 0 ? i : -1;
    }
}

static void wait_queued(const char *name, long long n)
{
    char qkey[300];
    th_key(qkey, sizeof qkey, name, ":q");
    if (!th_wait_zcard(qkey, n, 5000))
        fail_msg("%lld waiter(s) never queued on \"%s\"", n, name);
}

/* ------------------------------------------------------- killed holder */

/* A holder with a 1000 ms lease is SIGKILLed while two processes wait on
 * its mutex (one blocking, one timed with a deadline 2.5 s away) and two
 * wait to read its rwlock.  Bound: each lock is acquired again within
 * lease + 1 s of the kill, the first acquirer gets EOWNERDEAD, the next
 * one 0; of the two readers (granted together) exactly one is told. */
static void test_killed_holder_bound(void **state)
{
    enum { LEASE = 1000, BOUND = LEASE + 1000 };
    static const char *const lease_env[] = { "DISTLOCK_LEASE_MS=1000", NULL };
    char m[128], rw[128];
    th_name(m, sizeof m, "kill-m");
    th_name(rw, sizeof rw, "kill-rw");
    th_proc_t h, w1, w2, r1, r2;
    assert_int_equal(th_proc_start(&h, lease_env), 0);
    assert_int_equal(th_proc_start(&w1, NULL), 0);
    assert_int_equal(th_proc_start(&w2, NULL), 0);
    assert_int_equal(th_proc_start(&r1, NULL), 0);
    assert_int_equal(th_proc_start(&r2, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&h, TH_M_LOCK, m, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&h, TH_RW_WRLOCK, rw, 0, NULL), 0);
    th_res_t res;
    uint64_t f0 = 0;
    TH_ASSERT_RC(th_proc_opa(&h, TH_M_FENCE, m, 0, &res), 0);
    f0 = res.fence;

    assert_int_equal(th_proc_opa_async(&w1, TH_M_LOCK, m, 0), 0);
    assert_int_equal(th_proc_opa_async(&w2, TH_M_TIMEDLOCK, m, LEASE + 1500), 0);
    assert_int_equal(th_proc_opa_async(&r1, TH_RW_RDLOCK, rw, 0), 0);
    assert_int_equal(th_proc_opa_async(&r2, TH_RW_RDLOCK, rw, 0), 0);
    wait_queued(m, 2);
    wait_queued(rw, 2);

    int64_t t_kill = th_now_us();
    th_proc_kill(&h);

    /* the mutex: one of the two waiters, EOWNERDEAD, in time */
    th_proc_t *ws[2] = { &w1, &w2 };
    int first = recv_any(ws, 2, 5000, &res);
    if (first < 0)
        fail_msg("no waiter got the mutex within 5 s of its holder's death (lease %d ms)", LEASE);
    int64_t el = (res.t_done_us - t_kill) / 1000;
    print_message("mutex: waiter %d got it %lld ms after the kill: %s\n", first, (long long)el,
                  th_errname(res.rc));
    TH_ASSERT_RC(res.rc, EOWNERDEAD);
    if (el > BOUND)
        fail_msg("mutex acquired %lld ms after its holder died (lease %d ms, bound %d ms)",
                 (long long)el, LEASE, BOUND);
    th_proc_t *a = ws[first], *b = ws[!first];
    TH_ASSERT_RC(th_proc_opa(a, TH_M_FENCE, m, 0, &res), 0);
    if (res.fence <= f0)
        fail_msg("fence after the take-over %llu is not above the dead holder's %llu",
                 (unsigned long long)res.fence, (unsigned long long)f0);
    /* the other is still waiting: EOWNERDEAD meant acquired */
    th_res_t other;
    if (recv_any(&b, 1, 100, &other) >= 0)
        fail_msg("the second waiter returned %s while the first held the mutex",
                 th_errname(other.rc));
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(th_proc_opa(a, TH_M_UNLOCK, m, 0, NULL), 0);
    if (recv_any(&b, 1, 3000, &other) < 0)
        fail_msg("the second waiter was not served after the first unlocked");
    TH_ASSERT_RC(other.rc, 0);                  /* told once is enough */
    print_message("mutex: second waiter served %lld ms after the unlock\n",
                  (long long)((other.t_done_us - t_rel) / 1000));
    TH_ASSERT_RC(th_proc_opa(b, TH_M_UNLOCK, m, 0, NULL), 0);

    /* the rwlock: both readers, together, exactly one told */
    th_res_t rr1, rr2;
    assert_int_equal(th_proc_recv(&r1, &rr1, 5000), 0);
    assert_int_equal(th_proc_recv(&r2, &rr2, 5000), 0);
    int64_t e1 = (rr1.t_done_us - t_kill) / 1000, e2 = (rr2.t_done_us - t_kill) / 1000;
    print_message("rwlock: readers got it %lld and %lld ms after the kill: %s, %s\n",
                  (long long)e1, (long long)e2, th_errname(rr1.rc), th_errname(rr2.rc));
    if ((rr1.rc != 0 && rr1.rc != EOWNERDEAD) || (rr2.rc != 0 && rr2.rc != EOWNERDEAD))
        fail_msg("readers: %s and %s", th_errname(rr1.rc), th_errname(rr2.rc));
    if ((rr1.rc == EOWNERDEAD) + (rr2.rc == EOWNERDEAD) != 1)
        fail_msg("%d of the two readers were told EOWNERDEAD, want exactly 1",
                 (rr1.rc == EOWNERDEAD) + (rr2.rc == EOWNERDEAD));
    if (e1 > BOUND || e2 > BOUND)
        fail_msg("readers waited %lld / %lld ms after the writer died (bound %d ms)",
                 (long long)e1, (long long)e2, BOUND);
    TH_ASSERT_RC(th_proc_opa(&r1, TH_RW_UNLOCK, rw, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&r2, TH_RW_UNLOCK, rw, 0, NULL), 0);
    assert_int_equal(chk_keys_left(m), 0);
    assert_int_equal(chk_keys_left(rw), 0);
    assert_int_equal(th_proc_stop(&w1), 0);
    assert_int_equal(th_proc_stop(&w2), 0);
    assert_int_equal(th_proc_stop(&r1), 0);
    assert_int_equal(th_proc_stop(&r2), 0);
}

/* A busy run (3 processes x 2 threads, lease 1000 ms, 2 ms holds): one
 * process is SIGKILLed in the middle, while one of its threads is inside
 * a hold.  The others finish every operation, nobody overlaps, fences
 * keep growing, exactly one acquirer is told EOWNERDEAD, and the lock
 * stays unused at most lease + 1 s (and at least half a lease: the kill
 * did hit a hold). */
struct kill_tick { pid_t *pids; int killed; int64_t at_ms; };

static void kill_tick(void *arg, int64_t elapsed_ms, uint64_t done)
{
    struct kill_tick *k = arg;
    if (!k->killed && elapsed_ms >= 300 && done >= 50 && chk_writer_now() == k->pids[0]) {
        kill(k->pids[0], SIGKILL);
        k->killed = 1;
        k->at_ms = elapsed_ms;
    }
}

static void test_killed_holder_in_busy_run(void **state)
{
    static const char *const env[] = { "DISTLOCK_LEASE_MS=1000", NULL };
    char name[128];
    th_name(name, sizeof name, "kill-run");
    pid_t pids[3];
    struct kill_tick k = { pids, 0, 0 };
    chk_cfg_t c;
    memset(&c, 0, sizeof c);
    c.kind = CHK_MUTEX;
    c.procs = 3;
    c.threads = 2;
    c.ops = 1200;
    c.hold_us = 2000;
    c.name = name;
    c.env = env;
    c.pids_out = pids;
    c.tick = kill_tick;
    c.tick_arg = &k;
    c.tick_ms = 1;
    chk_report_t r;
    chk_run(&c, &r);
    chk_print(stderr, "busy run, one process SIGKILLed", &r);
    assert_true(k.killed);
    assert_int_equal(r.children_failed, 1);         /* the one we killed */
    assert_int_equal(r.overlaps, 0);
    assert_int_equal(r.excused, 0);
    assert_int_equal(r.fence_inversions, 0);
    assert_int_equal(r.lost_updates, 0);
    print_message("killed at %lld ms; the lock was unused for %lld ms at most\n",
                  (long long)k.at_ms, (long long)r.longest_hold_gap_ms);
    assert_int_equal(r.ownerdead, 1);
    assert_int_equal(r.lock_eio + r.lock_other + r.unlock_eio + r.unlock_other + r.unlock_enolck, 0);
    /* the survivors did all of theirs (4 threads x 200) */
    if (r.holds < 800 || r.holds >= 1200)
        fail_msg("%llu holds recorded; the 4 surviving threads owe 800",
                 (unsigned long long)r.holds);
    if (r.longest_hold_gap_ms > 2000 || r.longest_hold_gap_ms < 500)
        fail_msg("the lock stayed unused %lld ms after the kill (lease 1000 ms: want 500..2000)",
                 (long long)r.longest_hold_gap_ms);
    assert_int_equal(chk_keys_left(name), 0);
}

/* ------------------------------------------------------ server restarted */

/* Waits until ZCARD of key on port reaches n (5 s at most). */
static void wait_zcard_at(int port, const char *key, long long n)
{
    if (!th_wait_zcard_at(port, key, n, 5000))
        fail_msg("%lld waiter(s) never queued in %s", n, key);
}

/* A separate server, restarted (SIGTERM, no persistence: all data gone)
 * on the same port while one process holds a mutex and a read lock and
 * another waits for the mutex.  No client hangs or dies; the waiter gets
 * the mutex on the new server within 3 s, with a fence above the lost
 * hold's; once the holder's watchdog has run (lease 3 s: every 1 s) its
 * vanished holds say ENOLCK at unlock, with a dist_lasterror(); the locks
 * work as before without restarting anyone. */
static void test_server_restart_holds(void **state)
{
    th_server_t s;
    assert_int_equal(th_server_start(&s), 0);
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", s.url);
    const char *env[] = { url, "DISTLOCK_LEASE_MS=3000", "DISTLOCK_IO_TIMEOUT_MS=2000", NULL };
    char m[128], rw[128], qkey[300];
    th_name(m, sizeof m, "restart-m");
    th_name(rw, sizeof rw, "restart-rw");
    th_proc_t h, w;
    assert_int_equal(th_proc_start(&h, env), 0);
    assert_int_equal(th_proc_start(&w, env), 0);
    th_res_t res;
    TH_ASSERT_RC(th_proc_opa(&h, TH_M_LOCK, m, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&h, TH_M_FENCE, m, 0, &res), 0);
    uint64_t f_old = res.fence;
    TH_ASSERT_RC(th_proc_opa(&h, TH_RW_RDLOCK, rw, 0, NULL), 0);
    assert_int_equal(th_proc_opa_async(&w, TH_M_LOCK, m, 0), 0);
    wait_zcard_at(s.port, th_key(qkey, sizeof qkey, m, ":q"), 1);

    int64_t t0 = th_now_us();
    assert_int_equal(th_server_restart(&s), 0);
    int64_t t_up = th_now_us();
    print_message("server restarted in %lld ms\n", (long long)((t_up - t0) / 1000));

    /* the waiter: the mutex is free on the new server */
    if (th_proc_recv(&w, &res, 8000) != 0)
        fail_msg("the waiter hung after the server restart");
    int64_t el = (res.t_done_us - t_up) / 1000;
    print_message("waiter got the mutex %lld ms after the restart: %s\n", (long long)el,
                  th_errname(res.rc));
    TH_ASSERT_RC(res.rc, 0);
    if (el > 3000)
        fail_msg("waiter needed %lld ms after the restart", (long long)el);
    TH_ASSERT_RC(th_proc_opa(&w, TH_M_FENCE, m, 0, &res), 0);
    if (res.fence <= f_old)
        fail_msg("fence on the new server %llu is not above the lost hold's %llu",
                 (unsigned long long)res.fence, (unsigned long long)f_old);

    /* the old holder: its holds vanished (its watchdog has looked by now) */
    th_sleep_ms(1500);
    TH_ASSERT_RC(th_proc_opa(&h, TH_M_UNLOCK, m, 0, &res), ENOLCK);
    if (!res.err[0])
        fail_msg("ENOLCK without a dist_lasterror()");
    TH_ASSERT_RC(th_proc_opa(&h, TH_RW_UNLOCK, rw, 0, NULL), ENOLCK);
    /* its late unlock did not free the waiter's hold */
    TH_ASSERT_RC(th_proc_opa(&h, TH_M_TRYLOCK, m, 0, NULL), EBUSY);
    /* and the locks work as before, without restarting anyone */
    TH_ASSERT_RC(th_proc_opa(&w, TH_M_UNLOCK, m, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&h, TH_M_LOCK, m, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&h, TH_RW_WRLOCK, rw, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&w, TH_RW_TRYRDLOCK, rw, 0, NULL), EBUSY);
    TH_ASSERT_RC(th_proc_opa(&h, TH_RW_UNLOCK, rw, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&h, TH_M_UNLOCK, m, 0, NULL), 0);
    assert_int_equal(chk_keys_left_at(s.port, m), 0);
    assert_int_equal(chk_keys_left_at(s.port, rw), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&w), 0);
    th_server_stop(&s);
}

/* The same restart, but the holder (default 30 s lease, so its watchdog
 * has not looked yet) unlocks right away, while another process already
 * holds the lock on the new server.  The SPEC wants ENOLCK (the hold
 * vanished: "server lost it").
 * Regression test: this found a bug (fixed with the release mark, ARGV[4]
 * of lua/release.lua; /tmp/h1-fix-enolck-after-reconnect.diff): the
 * library answered 0, because the release was sent again on a new
 * connection ("retried") and a 0 reply to a retried release was taken
 * for the echo of a first copy that ran.
 * (When the new server answers the resend NOSCRIPT, the EVAL fallback
 * happens to clear "retried" and ENOLCK comes out right; so the test lets
 * another process run a release first, as busy systems do.) */
static void test_server_restart_unlock_first(void **state)
{
    th_server_t s;
    assert_int_equal(th_server_start(&s), 0);
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", s.url);
    const char *env[] = { url, "DISTLOCK_IO_TIMEOUT_MS=2000", NULL };
    char m[128], rw[128], qkey[300];
    th_name(m, sizeof m, "restart1-m");
    th_name(rw, sizeof rw, "restart1-rw");
    th_proc_t h, w;
    assert_int_equal(th_proc_start(&h, env), 0);
    assert_int_equal(th_proc_start(&w, env), 0);
    TH_ASSERT_RC(th_proc_opa(&h, TH_M_LOCK, m, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&h, TH_RW_WRLOCK, rw, 0, NULL), 0);
    assert_int_equal(th_proc_opa_async(&w, TH_M_LOCK, m, 0), 0);
    wait_zcard_at(s.port, th_key(qkey, sizeof qkey, m, ":q"), 1);
    assert_int_equal(th_server_restart(&s), 0);
    th_res_t res;
    if (th_proc_recv(&w, &res, 8000) != 0)
        fail_msg("the waiter hung after the server restart");
    TH_ASSERT_RC(res.rc, 0);
    /* other processes go on working: the new server has every script
     * cached again (so h's resent release is not answered NOSCRIPT, whose
     * EVAL fallback would hide the problem by clearing "retried") */
    char other[128];
    th_name(other, sizeof other, "restart1-other");
    TH_ASSERT_RC(th_proc_opa(&w, TH_RW_WRLOCK, other, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&w, TH_RW_UNLOCK, other, 0, NULL), 0);
    /* two holders at once now: h must be told */
    int rc_m = th_proc_opa(&h, TH_M_UNLOCK, m, 0, NULL);
    int rc_rw = th_proc_opa(&h, TH_RW_UNLOCK, rw, 0, NULL);
    print_message("unlock right after the restart: mutex %s, rwlock %s (want ENOLCK)\n",
                  th_errname(rc_m), th_errname(rc_rw));
    TH_ASSERT_RC(th_proc_opa(&w, TH_M_UNLOCK, m, 0, NULL), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&w), 0);
    th_server_stop(&s);
    if (rc_m != ENOLCK || rc_rw != ENOLCK)
        fail_msg("holds lost with the server's data: unlock said mutex %s, rwlock %s, want ENOLCK "
                 "(another process held the mutex meanwhile)", th_errname(rc_m), th_errname(rc_rw));
}

/* A busy run against a separate server restarted in the middle: every
 * process finishes every operation (failed calls are retried and
 * counted), nobody crashes or hangs, no overlap the library did not
 * report (an overlap is excused only if the earlier hold's unlock said
 * ENOLCK), fences keep growing across the restart, nothing is left held.
 *
 * Lost updates: a restart without persistence drops the holds of threads
 * that are inside their critical section at that moment; no client can
 * stop such a thread, and another process may take the lock on the new
 * server before it leaves.  That is the loss SPEC allows (the unlock says
 * ENOLCK), and the counter update of the later hold can then be written
 * over by the lapsed one's.  Each lost update needs such an overlap: in
 * a group of k holds that overlap one another, at most k - 1 writes are
 * lost, and k - 1 of them began while another ran, which the checker
 * counts (excused when only holds unlocked with ENOLCK/EIO were running,
 * a violation otherwise).  So: no unexcused overlap, and no more lost
 * updates than excused overlaps.  Seen once under load: 2 holds reported
 * lost, 1 excused overlap, 1 lost update.  And only holds the restart
 * took away may be lost (lost_after_restart): an excused overlap is never
 * one the library could have avoided. */
struct restart_tick { th_server_t *s; int done; int64_t down_ms, stop_us, up_us; };

static void restart_tick(void *arg, int64_t elapsed_ms, uint64_t done)
{
    struct restart_tick *t = arg;
    if (!t->done && elapsed_ms >= 400) {
        int64_t t0 = th_now_ms();
        t->stop_us = th_now_us();      /* SIGTERM: it serves on until its next cron tick */
        if (th_server_restart(t->s) != 0)
            fprintf(stderr, "restart_tick: could not restart the server\n");
        t->down_ms = th_now_ms() - t0;
        t->up_us = th_now_us();
        t->done = 1;
    }
}

/* Holds that the restart does not explain: reported lost (ENOLCK) though
 * they began more than RESTART_SLACK_MS after the restarted server
 * answered.  The loss happened before (at the SIGTERM, or when the old
 * server exited: it serves on until its next cron tick), and SPEC's local
 * trust lets no thread take or be handed a lost hold later than 50 ms
 * after a silent loss, at once after a sign (the connections dropped).
 * The slack covers a thread held up between its lock call's return and
 * the checker's clock reading: beside two CPU burners, the latest hold
 * reported lost began 0 to 96 ms after the SIGTERM and at least 22 ms
 * before the server answered again (78 of 80 mutex and rwlock runs). */
#define RESTART_SLACK_MS 100
static uint64_t lost_after_restart(const chk_hold_t *h, uint64_t n, int64_t stop_us,
                                   int64_t up_us, char *why, size_t size)
{
    uint64_t bad = 0;
    int64_t latest = INT64_MIN;
    for (uint64_t i = 0; i < n; i++)
        if (h[i].unlock_rc == ENOLCK && h[i].t_start_ns / 1000 > latest)
            latest = h[i].t_start_ns / 1000;
    if (latest > INT64_MIN)
        print_message("the latest hold reported lost began %+lld ms from the SIGTERM, %lld ms "
                      "before the server was up again\n", (long long)(latest - stop_us) / 1000,
                      (long long)(up_us - latest) / 1000);
    for (uint64_t i = 0; i < n; i++)
        if (h[i].unlock_rc == ENOLCK &&
            h[i].t_start_ns / 1000 > up_us + RESTART_SLACK_MS * 1000) {
            if (!bad++)
                snprintf(why, size, "pid %d tid %d: a hold begun %lld us after the server "
                         "answered again (fence %llu) was reported lost", (int)h[i].pid,
                         (int)h[i].tid, (long long)(h[i].t_start_ns / 1000 - up_us),
                         (unsigned long long)h[i].fence);
        }
    return bad;
}

static void test_server_restart_busy_run(void **state)
{
    th_server_t s;
    assert_int_equal(th_server_start(&s), 0);
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", s.url);
    const char *env[] = { url, "DISTLOCK_LEASE_MS=3000", "DISTLOCK_IO_TIMEOUT_MS=2000", NULL };
    static const int kinds[2] = { CHK_MUTEX, CHK_RWLOCK };
    for (int k = 0; k < 2; k++) {
        char name[128];
        th_name(name, sizeof name, k ? "restart-run-rw" : "restart-run");
        struct restart_tick t = { &s, 0, 0, 0, 0 };
        chk_hold_t *holds = NULL;
        uint64_t nholds = 0;
        chk_cfg_t c;
        memset(&c, 0, sizeof c);
        c.kind = kinds[k];
        c.procs = 3;
        c.threads = 2;
        c.ops = 2400;
        c.hold_us = 300;
        c.name = name;
        c.env = env;
        c.retry_errors = 1;
        c.retry_sleep_ms = 20;
        c.quiet = 1;
        c.tick = restart_tick;
        c.tick_arg = &t;
        c.holds_out = &holds;
        c.nholds_out = &nholds;
        chk_report_t r;
        int rc = chk_run(&c, &r);
        char why[200] = "";
        uint64_t late = lost_after_restart(holds, nholds, t.stop_us, t.up_us, why, sizeof why);
        free(holds);
        chk_print(stderr, k ? "rwlock, server restarted mid-run" : "mutex, server restarted mid-run", &r);
        print_message("server down for %lld ms\n", (long long)t.down_ms);
        assert_true(t.done);
        if (rc != 0)
            fail_msg("%s", r.first);
        assert_int_equal(r.children_failed, 0);
        assert_int_equal(r.holds, r.expected);
        assert_int_equal(r.overlaps, 0);
        assert_int_equal(r.fence_inversions, 0);
        if (late)
            fail_msg("%llu holds begun well after the restart were reported lost; first: %s",
                     (unsigned long long)late, why);
        if (r.lost_updates > r.excused)
            fail_msg("%llu lost updates, more than the %llu overlaps excused by a hold reported "
                     "lost (ENOLCK)", (unsigned long long)r.lost_updates,
                     (unsigned long long)r.excused);
        assert_int_equal(r.unlock_other, 0);
        assert_int_equal(chk_keys_left_at(s.port, name), 0);
    }
    th_server_stop(&s);
}

/* ------------------------------------------------------ server stalled */

/* The scenario of the three tests below: a separate server SIGSTOPped for
 * 3 s, DISTLOCK_IO_TIMEOUT_MS=1000, lease 8 s; one process per call, each
 * with warm connections.  Before the stall one process holds a lock that
 * another one waits for, and a third holds a lock it will unlock during
 * the stall.  During the stall: lock, trylock, timedlock (+2500 ms and
 * +300 ms), rdlock and that unlock.  Then SIGCONT. */
enum { ST_IO = 1000, ST_SLACK = 700, ST_STALL = 3000 };
enum { ST_HOLD, ST_LOCK, ST_TRY, ST_TIMED_LONG, ST_TIMED_SHORT, ST_RD, ST_UNLOCK, ST_WAITER, ST_NP };
static const char *const st_what[ST_NP] = {
    "holder", "lock", "trylock", "timedlock (+2500 ms)", "timedlock (+300 ms)", "rdlock",
    "unlock", "blocked waiter" };

struct stall {
    th_server_t s;
    th_proc_t p[ST_NP];
    th_res_t res[ST_NP];
    int got[ST_NP];             /* 1 during the stall, 2 only after SIGCONT */
    int64_t el[ST_NP];          /* ms from the stall (or the call) to the answer */
    char held[128], m[128], rw[128], u[128];
};

static void stall_run(struct stall *st)
{
    memset(st, 0, sizeof *st);
    assert_int_equal(th_server_start(&st->s), 0);
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", st->s.url);
    const char *env[] = { url, "DISTLOCK_LEASE_MS=8000", "DISTLOCK_IO_TIMEOUT_MS=1000", NULL };
    for (int i = 0; i < ST_NP; i++)
        assert_int_equal(th_proc_start(&st->p[i], env), 0);
    th_name(st->held, sizeof st->held, "stall-held");
    th_name(st->m, sizeof st->m, "stall-m");
    th_name(st->rw, sizeof st->rw, "stall-rw");
    th_name(st->u, sizeof st->u, "stall-u");
    for (int i = 0; i < ST_NP; i++) {           /* warm every process's connections */
        TH_ASSERT_RC(th_proc_opa(&st->p[i], TH_M_LOCK, st->m, 0, NULL), 0);
        TH_ASSERT_RC(th_proc_opa(&st->p[i], TH_M_UNLOCK, st->m, 0, NULL), 0);
    }
    TH_ASSERT_RC(th_proc_opa(&st->p[ST_HOLD], TH_M_LOCK, st->held, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&st->p[ST_UNLOCK], TH_M_LOCK, st->u, 0, NULL), 0);
    assert_int_equal(th_proc_opa_async(&st->p[ST_WAITER], TH_M_LOCK, st->held, 0), 0);
    th_sleep_ms(100);

    th_server_pause(&st->s);
    int64_t t_stop = th_now_us();
    assert_int_equal(th_proc_opa_async(&st->p[ST_LOCK], TH_M_LOCK, st->m, 0), 0);
    assert_int_equal(th_proc_opa_async(&st->p[ST_TRY], TH_M_TRYLOCK, st->m, 0), 0);
    assert_int_equal(th_proc_opa_async(&st->p[ST_TIMED_LONG], TH_M_TIMEDLOCK, st->m, 2500), 0);
    assert_int_equal(th_proc_opa_async(&st->p[ST_TIMED_SHORT], TH_M_TIMEDLOCK, st->m, 300), 0);
    assert_int_equal(th_proc_opa_async(&st->p[ST_RD], TH_RW_RDLOCK, st->rw, 0), 0);
    assert_int_equal(th_proc_opa_async(&st->p[ST_UNLOCK], TH_M_UNLOCK, st->u, 0), 0);
    int64_t until = th_now_ms() + ST_STALL;
    while (th_now_ms() < until) {
        for (int i = ST_LOCK; i < ST_NP; i++)
            if (!st->got[i] && th_proc_recv(&st->p[i], &st->res[i], 1) == 0)
                st->got[i] = 1;
        th_sleep_ms(5);
    }
    th_server_resume(&st->s);
    for (int i = ST_LOCK; i < ST_NP; i++)
        if (!st->got[i] && th_proc_recv(&st->p[i], &st->res[i], 5000) == 0)
            st->got[i] = 2;
    for (int i = ST_LOCK; i < ST_NP; i++) {
        if (!st->got[i])
            continue;
        int64_t start = st->res[i].t_start_us > t_stop ? st->res[i].t_start_us : t_stop;
        st->el[i] = (st->res[i].t_done_us - start) / 1000;
        print_message("stalled: %-22s %-9s after %5lld ms%s  \"%s\"\n", st_what[i],
                      th_errname(st->res[i].rc), (long long)st->el[i],
                      st->got[i] == 2 ? " [after SIGCONT]" : "", st->res[i].err);
    }
}

static void stall_end(struct stall *st)
{
    for (int i = 0; i < ST_NP; i++)
        th_proc_stop(&st->p[i]);
    th_server_stop(&st->s);
}

/* During the stall every call gives EIO, with a dist_lasterror(), within
 * the I/O time-out + 700 ms (the blocked waiter: + its re-check period,
 * min(lease, 2 s)/3, too).
 * Regression test: this found a bug (fixed in shim/conn/cmdlink_io.c;
 * /tmp/h1-fix-io-timeout.diff): the calls took twice the I/O time-out,
 * because the time-out was counted from when the failure was noticed, and
 * a stalled server is noticed only when a read times out. */
static void test_server_stalled_eio_bound(void **state)
{
    static struct stall st;
    stall_run(&st);
    int failures = 0;
    for (int i = ST_LOCK; i < ST_NP; i++) {
        if (i == ST_TIMED_SHORT)
            continue;                           /* next test */
        long bound = i == ST_WAITER ? ST_IO + ST_SLACK + 667 : ST_IO + ST_SLACK;
        if (st.got[i] != 1 || st.res[i].rc != EIO || st.el[i] > bound || !st.res[i].err[0]) {
            print_error("%s: %s after %lld ms%s, want EIO within %ld ms with a dist_lasterror()\n",
                        st_what[i], st.got[i] ? th_errname(st.res[i].rc) : "no answer",
                        (long long)st.el[i], st.got[i] == 2 ? " (after SIGCONT)" : "", bound);
            failures++;
        }
    }
    stall_end(&st);
    if (failures)
        fail_msg("%d th_proc_opa(s) did not give EIO within their bound while the server was stalled",
                 failures);
}

/* A timed lock whose deadline (+300 ms) comes before the I/O time-out
 * returns ETIMEDOUT (or EIO) by its deadline + 700 ms, as pthreads
 * callers expect of abstime.
 * KNOWN BUG, FAILS TODAY (library, no patch): the call returns EIO only
 * at the I/O time-out (1 s here): a round trip in progress is not cut
 * short at the caller's deadline.  Fixing it needs a per-call deadline in
 * dl_link_exec (the leader's socket time-out, or a follower leaving the
 * queue, at min(deadline, I/O time-out)); the acquisition that may have
 * run is then withdrawn like any other failed one (o->hold.undo). */
static void test_server_stalled_timedlock_deadline(void **state)
{
    static struct stall st;
    stall_run(&st);
    int i = ST_TIMED_SHORT;
    int ok = st.got[i] == 1 && (st.res[i].rc == ETIMEDOUT || st.res[i].rc == EIO) &&
             st.el[i] <= 300 + ST_SLACK && st.res[i].err[0];
    int rc = st.res[i].rc;
    int64_t el = st.el[i];
    stall_end(&st);
    if (!ok)
        fail_msg("timedlock with a deadline 300 ms away on a stalled server: %s after %lld ms, "
                 "want ETIMEDOUT or EIO within %d ms", th_errname(rc), (long long)el, 300 + ST_SLACK);
}

/* After SIGCONT: the hold kept across the stall (its lease outlived it)
 * unlocks with 0; every process takes the lock its call failed on within
 * the I/O time-out + 700 ms, with 0 (nothing was acquired by the failed
 * calls: EIO means "nothing was acquired"); the lock unlocked with EIO
 * during the stall is free as well.
 * Regression test: this found a bug: the stalled server runs the lock
 * requests it had buffered when it resumes, so a process that was told
 * EIO held the lock in Redis without knowing it, for a whole lease, and
 * the next holder was told EOWNERDEAD.  Fixed by withdrawing such requests:
 * the link's undo behind each on its own connection
 * (shim/conn/cmdlink_io.c), and the watchdog's withdrawal (o->hold.undo)
 * from a new one. */
static void test_server_stalled_recovers(void **state)
{
    static struct stall st;
    stall_run(&st);
    int failures = 0;
    th_res_t r;
    TH_ASSERT_RC(th_proc_opa(&st.p[ST_HOLD], TH_M_UNLOCK, st.held, 0, NULL), 0);
    for (int i = ST_LOCK; i < ST_NP; i++) {
        const char *name = i == ST_RD ? st.rw : i == ST_WAITER ? st.held : st.m;
        int op = i == ST_RD ? TH_RW_TIMEDRDLOCK : TH_M_TIMEDLOCK;
        /* A request sent before the stall runs only when the server
         * resumes, after its process gave up on it; the undo the link wrote
         * behind it on the same connection runs right after it (a
         * withdrawal from a new connection could run before it: see
         * test_faults_net's test_stale_requests_undone).  So nothing is
         * left held or queued, and nobody is told EOWNERDEAD. */
        int rc = th_proc_opa(&st.p[i], op, name, ST_IO + ST_SLACK, &r);
        int64_t el = (r.t_done_us - r.t_start_us) / 1000;
        print_message("after SIGCONT: %-22s takes its lock: %s after %lld ms\n", st_what[i],
                      th_errname(rc), (long long)el);
        if (rc == 0 || rc == EOWNERDEAD)
            TH_ASSERT_RC(th_proc_opa(&st.p[i], i == ST_RD ? TH_RW_UNLOCK : TH_M_UNLOCK, name, 0, NULL), 0);
        if (rc != 0) {
            print_error("%s: after SIGCONT its lock gave %s after %lld ms (%s), want 0\n",
                        st_what[i], th_errname(rc), (long long)el, r.err);
            failures++;
        }
    }
    int rc = th_proc_opa(&st.p[ST_LOCK], TH_M_TIMEDLOCK, st.u, ST_IO + ST_SLACK, &r);
    print_message("the lock unlocked with EIO during the stall: %s\n", th_errname(rc));
    if (rc == 0 || rc == EOWNERDEAD)
        TH_ASSERT_RC(th_proc_opa(&st.p[ST_LOCK], TH_M_UNLOCK, st.u, 0, NULL), 0);
    else
        failures++;
    stall_end(&st);
    if (failures)
        fail_msg("%d process(es) could not take their lock promptly after the stall", failures);
}

/* ------------------------------------------------------------- SIGPIPE */

/* 8 threads lock and unlock (and 2 wait on a lock another process holds)
 * with SIGPIPE at its default disposition and unblocked; the server is
 * stalled (so requests pile up unread), then SIGKILLed (so the sockets are
 * reset), and the threads keep calling for a second.  The process must
 * survive, every failed call must be EIO with a dist_lasterror(), and
 * once the server is back every thread locks again. */
struct pipe_arg { const char *url; const char *name, *held; int up, down; };
struct pipe_thread { struct pipe_arg *a; int id; int *phase; long eio, ok, other; char err[256]; };

static void *pipe_worker(void *p)
{
    struct pipe_thread *t = p;
    dist_mutex_t m;
    const char *name = t->id >= 8 ? t->a->held : t->a->name;
    if (dist_mutex_init(&m, name, NULL) != 0) {
        t->other++;
        return NULL;
    }
    while (__atomic_load_n(t->phase, __ATOMIC_ACQUIRE) < 3) {
        int rc = dist_mutex_lock(&m);
        if (rc == 0 || rc == EOWNERDEAD) {
            t->ok++;
            rc = dist_mutex_unlock(&m);
        }
        if (rc == EIO) {
            t->eio++;
            if (!dist_lasterror()[0])
                t->other++;
            snprintf(t->err, sizeof t->err, "%s", dist_lasterror());
            th_sleep_ms(5);
        } else if (rc != 0 && rc != ENOLCK) {
            t->other++;
            snprintf(t->err, sizeof t->err, "%s: %s", th_errname(rc), dist_lasterror());
        }
    }
    /* phase 3: the server is back; each thread must lock again */
    int rc = EIO;
    for (int i = 0; i < 100 && rc == EIO; i++)
        rc = dist_mutex_lock(&m);
    if (rc == 0 || rc == EOWNERDEAD) {
        dist_mutex_unlock(&m);
        t->ok = -t->ok - 1;                  /* marks "recovered" */
    }
    dist_mutex_destroy(&m);
    return NULL;
}

static int sigpipe_child(void *p)
{
    struct pipe_arg *a = p;
    th_sigpipe_default();
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "300", 1);
    setenv("DISTLOCK_LEASE_MS", "900", 1);
    enum { NT = 10 };
    static struct pipe_thread ts[NT];
    static int phase;
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
        ts[i] = (struct pipe_thread){ a, i, &phase, 0, 0, 0, "" };
        TH_CHECK(pthread_create(&th[i], NULL, pipe_worker, &ts[i]) == 0);
    }
    th_sleep_ms(300);
    th_send(a->up, 1, 0, 0, 0);                  /* busy: stall and kill the server */
    th_msg_t msg;
    TH_CHECK(th_recv(a->down, &msg, 20000) == 0);   /* it is dead */
    th_sleep_ms(1000);                            /* keep calling into the void */
    __atomic_store_n(&phase, 2, __ATOMIC_RELEASE);
    th_send(a->up, 2, 0, 0, 0);
    TH_CHECK(th_recv(a->down, &msg, 20000) == 0);   /* it is back */
    __atomic_store_n(&phase, 3, __ATOMIC_RELEASE);
    long eio = 0, other = 0, recovered = 0;
    const char *sample = "";
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        if (ts[i].eio && !sample[0])
            sample = ts[i].err;
        eio += ts[i].eio;
        other += ts[i].other;
        recovered += ts[i].ok < 0;
        if (ts[i].other)
            fprintf(stderr, "thread %d: %ld unexpected results, last: %s\n", i, ts[i].other, ts[i].err);
    }
    fprintf(stderr, "sigpipe child: %ld EIO, %ld unexpected, %ld of %d threads recovered; "
            "an EIO said \"%s\"\n", eio, other, recovered, NT, sample);
    TH_CHECK(eio > 0);
    TH_CHECK(other == 0);
    TH_CHECK(recovered == NT);
    return 0;
}

static void test_no_sigpipe_when_server_dies(void **state)
{
    th_server_t s;
    assert_int_equal(th_server_start(&s), 0);
    char name[128], held[128];
    th_name(name, sizeof name, "pipe");
    th_name(held, sizeof held, "pipe-held");
    th_proc_t h;
    char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", s.url);
    const char *env[] = { url, NULL };
    assert_int_equal(th_proc_start(&h, env), 0);
    TH_ASSERT_RC(th_proc_opa(&h, TH_M_LOCK, held, 0, NULL), 0);     /* threads 8, 9 wait on it */
    th_pipe_t up, down;
    th_pipe_open(&up);
    th_pipe_open(&down);
    struct pipe_arg a = { s.url, name, held, up.wr, down.rd };
    pid_t pid = th_fork_child(sigpipe_child, &a);
    th_msg_t msg;
    int ok = th_recv(up.rd, &msg, 20000) == 0;
    if (ok) {
        th_server_pause(&s);
        th_sleep_ms(400);
        th_server_kill(&s);
        th_send(down.wr, 1, 0, 0, 0);
        ok = th_recv(up.rd, &msg, 20000) == 0;
    }
    if (ok) {
        assert_int_equal(th_server_restart(&s), 0);
        th_send(down.wr, 2, 0, 0, 0);
    }
    int st = th_wait_child(pid);
    th_proc_kill(&h);
    th_server_stop(&s);
    th_pipe_close(&up);
    th_pipe_close(&down);
    if (st != 0)
        fail_msg("child status %d%s", st, st == 128 + SIGPIPE ? " (killed by SIGPIPE)" : "");
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_killed_holder_bound),
        TH_TEST(test_killed_holder_in_busy_run),
        TH_TEST(test_server_restart_holds),
        TH_TEST(test_server_restart_unlock_first),
        TH_TEST(test_server_restart_busy_run),
        TH_TEST(test_server_stalled_eio_bound),
        TH_TEST(test_server_stalled_timedlock_deadline),
        TH_TEST(test_server_stalled_recovers),
        TH_TEST(test_no_sigpipe_when_server_dies),
    };
    if (getenv("TH_FILTER"))                 /* run only the tests matching a pattern */
        cmocka_set_test_filter(getenv("TH_FILTER"));
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
