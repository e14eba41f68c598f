/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_checker.c - mutual exclusion, checked from the outside: P processes
 * x T threads take one lock over and over and record every hold (start,
 * end, fence, holder) into shared memory; the parent then checks that no
 * two holds overlap where they must not, that fences grow in acquisition
 * order, that no update under the lock was lost and that every operation
 * was recorded.  See harness_checker.h for exactly what is checked.
 *
 * Sizes (CI defaults in brackets) come from the environment, so the soak
 * tool (tools/soak.sh) reuses this program:
 *   CHECKER_PROCS [4]  CHECKER_THREADS [3]  CHECKER_OPS [3000, total]
 *   CHECKER_WRITE_PCT [25]  CHECKER_HOLD_US [0]
 * With CHECKER_SOAK=1 the program runs no cmocka tests: it runs the
 * checker once per CHECKER_KIND (mutex, rwlock or both [both]) with
 * progress lines and totals, and exits 0 only if nothing was violated.
 */
#include "harness.h"
#include "harness_checker.h"

#include <errno.h>
#include <string.h>

static long env_long(const char *var, long def)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return def;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x < 0 ? def : x;
}

static void base_cfg(chk_cfg_t *c, int kind, const char *name)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->procs = (int)env_long("CHECKER_PROCS", 4);
    c->threads = (int)env_long("CHECKER_THREADS", 3);
    c->ops = env_long("CHECKER_OPS", 3000);
    c->write_pct = (int)env_long("CHECKER_WRITE_PCT", 25);
    c->hold_us = env_long("CHECKER_HOLD_US", 0);
    c->name = name;
    if (c->procs < 1)
        c->procs = 1;
    if (c->threads < 1)
        c->threads = 1;
}

/* ---------------------------------------------------- the checker's logic */

static chk_hold_t H(int64_t s, int64_t e, uint64_t fence, int pid, char mode)
{
    chk_hold_t h;
    memset(&h, 0, sizeof h);
    h.t_start_ns = s;
    h.t_end_ns = e;
    h.fence = fence;
    h.pid = pid;
    h.tid = pid;
    h.mode = mode;
    h.filled = 1;
    return h;
}

static uint64_t verify(chk_hold_t *v, int n, chk_report_t *r)
{
    memset(r, 0, sizeof *r);
    return chk_verify(v, (uint64_t)n, r);
}

/* The checker must be able to fail: each kind of violation, fed to it by
 * hand, is found; and legal histories pass. */
static void test_verify_detects_violations(void **state)
{
    chk_report_t r;
    /* a legal mutex history, given out of order; one process passes the
     * hold between its threads (same fence) */
    chk_hold_t ok[] = { H(30, 40, 7, 2, 'w'), H(10, 20, 5, 1, 'w'), H(21, 29, 5, 1, 'w'),
                        H(41, 50, 8, 1, 'w') };
    assert_int_equal(verify(ok, 4, &r), 0);
    assert_int_equal(r.writes, 4);

    chk_hold_t ov[] = { H(10, 20, 5, 1, 'w'), H(19, 30, 6, 2, 'w') };
    assert_int_equal(verify(ov, 2, &r), 1);
    assert_int_equal(r.overlaps, 1);
    assert_non_null(strstr(r.first, "overlapping"));

    /* a hold nested entirely inside a long one */
    chk_hold_t nest[] = { H(10, 100, 5, 1, 'w'), H(20, 30, 6, 2, 'w'), H(40, 50, 7, 3, 'w') };
    assert_int_equal(verify(nest, 3, &r), 2);
    assert_int_equal(r.overlaps, 2);

    /* the same overlap after a hold reported lost at unlock: excused */
    ov[0] = H(10, 20, 5, 1, 'w');
    ov[0].unlock_rc = ENOLCK;
    ov[1] = H(19, 30, 6, 2, 'w');
    assert_int_equal(verify(ov, 2, &r), 0);
    assert_int_equal(r.excused, 1);
    assert_int_equal(r.unlock_enolck, 1);

    /* ... or EIO (Redis could not be asked: the hold lapses within a lease) */
    ov[0].unlock_rc = EIO;
    assert_int_equal(verify(ov, 2, &r), 0);
    assert_int_equal(r.excused, 1);
    assert_int_equal(r.unlock_eio, 1);
    /* but a later hold that turned out lapsed does not excuse the earlier
     * one unlocked with 0: that one vouched for its whole time */
    ov[0].unlock_rc = 0;
    ov[1].unlock_rc = ENOLCK;
    assert_int_equal(verify(ov, 2, &r), 1);
    assert_int_equal(r.overlaps, 1);
    /* a hold unlocked with 0 is not hidden by a lapsed one that ends later:
     * two readers, the one that ends last lapsed, and a writer inside both */
    chk_hold_t hid[] = { H(10, 100, 5, 1, 'r'), H(20, 200, 5, 2, 'r'), H(50, 60, 6, 3, 'w') };
    hid[1].unlock_rc = ENOLCK;
    assert_int_equal(verify(hid, 3, &r), 1);
    assert_int_equal(r.overlaps, 1);
    assert_int_equal(r.excused, 0);
    assert_non_null(strstr(r.first, "pid 1"));
    hid[0].unlock_rc = EIO;                 /* both lapsed: excused */
    hid[1].unlock_rc = ENOLCK;
    hid[2] = H(50, 60, 6, 3, 'w');
    assert_int_equal(verify(hid, 3, &r), 0);
    assert_int_equal(r.excused, 1);

    /* fences going down, or equal across processes */
    chk_hold_t inv[] = { H(10, 20, 6, 1, 'w'), H(21, 30, 5, 2, 'w') };
    assert_true(verify(inv, 2, &r) >= 1);
    assert_true(r.fence_inversions >= 1);
    assert_int_equal(r.overlaps, 0);
    chk_hold_t eq[] = { H(10, 20, 5, 1, 'w'), H(21, 30, 5, 2, 'w') };
    assert_true(verify(eq, 2, &r) >= 1);
    assert_true(r.fence_inversions >= 1);
    /* ... also when far apart, with legal holds in between */
    chk_hold_t far[] = { H(10, 20, 50, 1, 'w'), H(21, 30, 60, 2, 'w'), H(31, 40, 55, 3, 'w') };
    assert_true(verify(far, 3, &r) >= 1);

    /* rwlock: readers overlap readers, with any fences among them */
    chk_hold_t rd[] = { H(10, 50, 9, 1, 'r'), H(20, 30, 3, 2, 'r'), H(25, 60, 11, 3, 'r'),
                        H(61, 70, 12, 2, 'w'), H(71, 80, 12, 2, 'r'), H(75, 90, 13, 1, 'r') };
    assert_int_equal(verify(rd, 6, &r), 0);
    assert_int_equal(r.max_readers, 3);
    /* a writer inside a reader, a reader inside a writer */
    chk_hold_t wr[] = { H(10, 50, 9, 1, 'r'), H(20, 30, 10, 2, 'w') };
    assert_int_equal(verify(wr, 2, &r), 1);
    chk_hold_t rw[] = { H(10, 50, 9, 1, 'w'), H(20, 30, 10, 2, 'r') };
    assert_int_equal(verify(rw, 2, &r), 1);
    /* a reader of another process after a writer, with a lower fence */
    chk_hold_t rf[] = { H(10, 20, 9, 1, 'w'), H(30, 40, 8, 2, 'r') };
    assert_true(verify(rf, 2, &r) >= 1);
    assert_true(r.fence_inversions >= 1);
    /* ... and before a writer, with a higher one */
    chk_hold_t rf2[] = { H(10, 20, 9, 2, 'r'), H(30, 40, 8, 1, 'w') };
    assert_true(verify(rf2, 2, &r) >= 1);

    /* torn reads and holds Redis did not have */
    chk_hold_t tr[] = { H(10, 20, 9, 1, 'r') };
    tr[0].torn = 1;
    assert_int_equal(verify(tr, 1, &r), 1);
    assert_int_equal(r.torn_reads, 1);
    /* ... torn by a writer whose hold had lapsed (ENOLCK): excused with
     * the overlap that explains it */
    chk_hold_t tw[] = { H(5, 15, 8, 2, 'w'), H(10, 20, 9, 1, 'r') };
    tw[0].unlock_rc = ENOLCK;
    tw[1].torn = 1;
    assert_int_equal(verify(tw, 2, &r), 0);
    assert_int_equal(r.excused, 1);
    assert_int_equal(r.torn_reads, 1);
    chk_hold_t rb[] = { H(10, 20, 9, 1, 'w') };
    rb[0].redis_bad = 1;
    assert_int_equal(verify(rb, 1, &r), 1);
    rb[0].unlock_rc = ENOLCK;
    assert_int_equal(verify(rb, 1, &r), 0);
    assert_int_equal(r.redis_bad_excused, 1);
    rb[0].unlock_rc = EIO;
    assert_int_equal(verify(rb, 1, &r), 0);
    assert_int_equal(r.redis_bad_excused, 1);

    /* incomplete records are left out */
    chk_hold_t inc[] = { H(10, 20, 5, 1, 'w'), H(15, 30, 6, 2, 'w') };
    inc[1].filled = 0;
    assert_int_equal(verify(inc, 2, &r), 0);
}

/* End to end: the same workload without any locking is caught. */
static void test_checker_catches_missing_lock(void **state)
{
    chk_cfg_t c;
    base_cfg(&c, CHK_MUTEX, "nolock");
    c.procs = 2;
    c.threads = 2;
    c.ops = 2000;
    c.hold_us = 20;
    c.no_lock = 1;
    chk_report_t r;
    int rc = chk_run(&c, &r);
    chk_print(stderr, "no lock at all (must be caught)", &r);
    assert_int_equal(rc, -1);
    assert_true(r.overlaps > 0);
    assert_int_equal(r.holds, 2000);
}

/* Across a failover (fence_vouched_only): a hold the library reported
 * lost (unlock ENOLCK) may have taken a fence the promoted replica never
 * saw, so fences are compared only after holds vouched for; a hold
 * vouched for still bounds every later fence. */
static void test_verify_fence_after_vouched(void **state)
{
    chk_report_t r;
    chk_hold_t lost[] = { H(10, 20, 11, 1, 'w'), H(30, 40, 9, 2, 'w') };
    lost[0].unlock_rc = ENOLCK;
    assert_true(verify(lost, 2, &r) > 0);
    assert_int_equal(r.fence_inversions, 2);        /* seen from both holds */
    memset(&r, 0, sizeof r);
    assert_int_equal(chk_verify_flags(lost, 2, CHK_FENCE_AFTER_VOUCHED, &r), 0);
    chk_hold_t kept[] = { H(1, 5, 10, 3, 'w'), H(10, 20, 11, 1, 'w'), H(30, 40, 9, 2, 'w') };
    kept[1].unlock_rc = ENOLCK;
    memset(&r, 0, sizeof r);
    assert_true(chk_verify_flags(kept, 3, CHK_FENCE_AFTER_VOUCHED, &r) > 0);
    assert_true(r.fence_inversions > 0);
}

/* The same end to end for a run in the background over several names
 * (chk_start ... chk_finish): overlaps and lost updates on each name. */
static void test_background_catches_missing_lock(void **state)
{
    chk_cfg_t c;
    chk_cfg_background(&c);
    c.procs = 2;
    c.threads = 2;
    c.nnames = 2;
    th_name(c.names[0], sizeof c.names[0], "bg-nolock");
    th_name(c.names[1], sizeof c.names[1], "bg-nolock");
    c.ops_per_thread = 300;
    c.hold_us = 20;
    c.no_lock = 1;
    chk_live_t *live = chk_start(&c);
    assert_non_null(live);
    int64_t end = th_now_ms() + 30000;
    while (chk_live_holds(live) < 1200 && th_now_ms() < end)
        th_sleep_ms(5);
    chk_report_t r;
    int rc = chk_finish(live, 10000, &r);
    chk_print(stderr, "no lock at all, two names, in the background (must be caught)", &r);
    assert_int_equal(rc, -1);
    assert_int_equal(r.holds, 1200);
    assert_true(r.overlaps > 0);
    assert_true(r.lost_updates > 0);
    assert_true(th_contains(r.first, "lock bg-nolock"));
}

static void run_and_assert(chk_cfg_t *c, const char *title, chk_report_t *r)
{
    int rc = chk_run(c, r);
    chk_print(stderr, title, r);
    if (rc != 0)
        fail_msg("%s: %s", title, r->first[0] ? r->first : "violations, see the totals");
    assert_int_equal(r->holds, r->expected);
    assert_int_equal(r->overlaps, 0);
    assert_int_equal(r->excused, 0);
    assert_int_equal(r->fence_inversions, 0);
    assert_int_equal(r->lost_updates, 0);
    assert_int_equal(r->redis_bad, 0);
    /* no faults here: every call must have worked the first time */
    assert_int_equal(r->lock_eio + r->lock_timedout + r->lock_other, 0);
    assert_int_equal(r->unlock_enolck + r->unlock_eio + r->unlock_other, 0);
    assert_int_equal(r->ownerdead, 0);
    assert_int_equal(chk_keys_left(c->name), 0);
}

static void test_mutex_checker(void **state)
{
    char name[128];
    th_name(name, sizeof name, "chk-mutex");
    chk_cfg_t c;
    base_cfg(&c, CHK_MUTEX, name);
    c.verify_port = th_redis_port();        /* Redis agrees during every hold */
    chk_report_t r;
    run_and_assert(&c, "mutex", &r);
    assert_int_equal(r.writes, r.expected);
}

static void test_fair_mutex_checker(void **state)
{
    char name[128];
    th_name(name, sizeof name, "chk-fair");
    chk_cfg_t c;
    base_cfg(&c, CHK_MUTEX, name);
    c.fair = 1;
    c.ops = c.ops / 2 > 0 ? c.ops / 2 : 1;
    chk_report_t r;
    run_and_assert(&c, "fair mutex", &r);
}

static void test_rwlock_checker(void **state)
{
    char name[128];
    th_name(name, sizeof name, "chk-rw");
    chk_cfg_t c;
    base_cfg(&c, CHK_RWLOCK, name);
    if (!c.hold_us)
        c.hold_us = 100;                    /* so that readers meet */
    c.verify_port = th_redis_port();
    chk_report_t r;
    run_and_assert(&c, "rwlock", &r);
    assert_true(r.writes > 0 && r.writes < r.holds);
    assert_int_equal(r.torn_reads, 0);
    /* readers do run at once (at least inside one process) */
    if (r.max_readers < 2)
        fail_msg("no two read holds ever overlapped in %llu holds", (unsigned long long)r.holds);
}

/* ------------------------------------------------------------------ soak */

struct soak_progress { const char *title; int64_t last_ms; uint64_t total; };

static void soak_tick(void *arg, int64_t elapsed_ms, uint64_t done)
{
    struct soak_progress *p = arg;
    if (elapsed_ms - p->last_ms < 2000)
        return;
    p->last_ms = elapsed_ms;
    fprintf(stderr, "[%s %6.1f s] %llu / %llu holds (%.0f%%), %.0f ops/s\n", p->title,
            elapsed_ms / 1000.0, (unsigned long long)done, (unsigned long long)p->total,
            p->total ? 100.0 * (double)done / (double)p->total : 0.0,
            elapsed_ms ? done * 1000.0 / (double)elapsed_ms : 0.0);
}

static int soak_one(int kind)
{
    char name[128];
    th_name(name, sizeof name, kind == CHK_MUTEX ? "soak-mutex" : "soak-rw");
    chk_cfg_t c;
    base_cfg(&c, kind, name);
    c.procs = (int)env_long("CHECKER_PROCS", 8);
    c.threads = (int)env_long("CHECKER_THREADS", 4);
    c.ops = env_long("CHECKER_OPS", 100000);
    c.child_alarm_s = -1;
    c.max_ms = env_long("CHECKER_MAX_S", 3600) * 1000;
    c.retry_errors = 1;                     /* counted and reported, never hidden */
    if (env_long("CHECKER_VERIFY_REDIS", 0))
        c.verify_port = th_redis_port();
    const char *title = kind == CHK_MUTEX ? "mutex" : "rwlock";
    struct soak_progress p = { title, 0, (uint64_t)c.ops };
    c.tick = soak_tick;
    c.tick_arg = &p;
    c.tick_ms = 200;
    fprintf(stderr, "soak %s: %d processes x %d threads, %ld operations, lock \"%s\"%s\n", title,
            c.procs, c.threads, c.ops, name, kind == CHK_RWLOCK ? " (rwlock)" : "");
    chk_report_t r;
    int rc = chk_run(&c, &r);
    char t[64];
    snprintf(t, sizeof t, "soak totals: %s", title);
    chk_print(stdout, t, &r);
    int left = chk_keys_left(name);
    printf("keys left in Redis %d\n", left);
    int ok = rc == 0 && left == 0 && r.holds == r.expected && !r.excused;
    printf("result             %s\n\n", ok ? "PASS" : "FAIL");
    fflush(stdout);
    return ok ? 0 : 1;
}

static int soak_main(void)
{
    if (th_redis_start() != 0)
        return 2;
    const char *k = getenv("CHECKER_KIND");
    int fails = 0;
    if (!k || !strcmp(k, "both") || !strcmp(k, "mutex"))
        fails += soak_one(CHK_MUTEX);
    if (!k || !strcmp(k, "both") || !strcmp(k, "rwlock"))
        fails += soak_one(CHK_RWLOCK);
    th_redis_stop();
    return fails ? 1 : 0;
}

int main(void)
{
    if (env_long("CHECKER_SOAK", 0))
        return soak_main();
    const struct CMUnitTest tests[] = {
        TH_TEST(test_verify_detects_violations),
        TH_TEST(test_checker_catches_missing_lock),
        TH_TEST(test_verify_fence_after_vouched),
        TH_TEST(test_background_catches_missing_lock),
        TH_TEST(test_mutex_checker),
        TH_TEST(test_fair_mutex_checker),
        TH_TEST(test_rwlock_checker),
    };
    if (getenv("TH_FILTER"))                 /* run only the tests matching a pattern */
        cmocka_set_test_filter(getenv("TH_FILTER"));
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
