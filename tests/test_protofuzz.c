/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_protofuzz.c - a short seeded run of the protocol fuzzer
 * (tests/protofuzz/pf.h) against the suite's redis-server: simulated
 * processes drive the Lua scripts directly, in random interleavings with
 * lost and late requests, lost pushes and short leases, and every
 * invariant is checked after every step.  A failure prints the seed and the
 * shortest failing sequence found; tools/protofuzz.sh runs the long ones.
 *
 * Every kind of request may be lost and run late, acquires included;
 * PROTOFUZZ_NO_LATE_ACQUIRE=1 leaves lost acquires out, PROTOFUZZ_GATED=1
 * every kind the scripts before hold and registration ids mishandle
 * (docs/RELIABILITY.md, "Protocol fuzzer").
 * test_redlock_mark runs the processes as redlock:// clients of the one
 * server (no queue; the waiting writer's mark, ww/wwx).
 * PROTOFUZZ_SEED=N shifts the seeds; PROTOFUZZ_STEPS=N sets each run's length.
 */
#include "harness.h"
#include "pf.h"
#include "pf_sem.h"
#include "pf_cond.h"
#include "pf_barrier.h"
#include "pf_once.h"

#include <string.h>

/* Which lost requests are left out (sent normally): none, unless asked. */
static unsigned gates(void)
{
    const char *nl = getenv("PROTOFUZZ_NO_LATE_ACQUIRE"), *gated = getenv("PROTOFUZZ_GATED");
    if (gated && strcmp(gated, "1") == 0)
        return PF_GATE_ALL;
    if (nl && strcmp(nl, "1") == 0)
        return PF_GATE_LATE_ACQUIRE;
    return 0;
}

/* One seeded run; fails the test with the fuzzer's report.  redlock: every
 * process a redlock:// client of the one server (the waiting writer's mark);
 * by_slot: the channel prefix of redis-cluster://, pushes by SPUBLISH. */
static void run_opts(uint64_t seed, int procs, int steps, int redlock, int by_slot, long max_ms)
{
    const char *s = getenv("PROTOFUZZ_SEED"), *n = getenv("PROTOFUZZ_STEPS");
    pf_opts_t o = { 0 };
    o.seed = seed + (s ? strtoull(s, NULL, 10) : 0);
    o.steps = n ? atoi(n) : steps;
    o.procs = procs;
    o.host = "127.0.0.1";
    o.port = th_redis_port();
    o.gates = gates();
    o.out = stderr;
    o.shrink_ms = 15000;          /* within the harness's 50 s per test */
    o.max_ms = max_ms;            /* a slow box runs fewer steps, never times out */
    o.redlock = redlock;
    o.by_slot = by_slot;
    pf_fail_t f;
    int done = 0;
    int rc = pf_fuzz(&o, &done, &f);
    if (rc < 0)
        fail_msg("protofuzz could not run: %s", f.msg);
    if (rc > 0)
        fail_msg("protofuzz seed %llu, %d processes: step %d: %s: %s (the sequence is above)",
                 (unsigned long long)o.seed, procs, f.step + 1, f.what, f.msg);
    print_message("protofuzz seed %llu, %d processes%s: %d steps, %ld grants pushed, every "
                  "invariant held\n", (unsigned long long)o.seed, procs,
                  redlock ? " (redlock)" : by_slot ? " (pushes by slot)" : "", done, f.pushes);
    /* (the model lets pushes be lost: the library asks again; here they
     * must have come, by SSUBSCRIBE) */
    if (by_slot && f.pushes == 0)
        fail_msg("no grant was pushed on the slot's channels in %d steps", done);
}

static void run_mode(uint64_t seed, int procs, int steps, int redlock, long max_ms)
{
    run_opts(seed, procs, steps, redlock, 0, max_ms);
}

static void run(uint64_t seed, int procs, int steps) { run_mode(seed, procs, steps, 0, 25000); }

/* The shortest sequences the fuzzer found for each flaw of the scripts
 * before hold and registration ids, and three after them (seed: each
 * process's lease and TTLs; the ops as distlock-protofuzz --replay takes
 * them).  Each breaks an
 * invariant on those scripts, and must now run with every one held. */
typedef struct flaw {
    const char *what;
    uint64_t seed;
    const char *ops;
    int procs;                /* 0: 3 */
} flaw_t;

static const flaw_t known[] = {
    /* p1: lease 80 ms; its release is lost, the hold lapses, it locks again,
     * and the release then ends the new hold. */
    { "finding 1: a late release ends a later write hold", 12, "A1wt0,R12,Z120,A1wt0,S1.0", 3 },
    /* The same with the hold itself claimed again ("mine"): same fence. */
    { "finding 1: a late release ends the hold claimed again", 13, "A2rq0,R22,A2rq0,N20,S2.0", 3 },
    /* p1's write acquire, lost and run late, leaves a registration; the
     * holder's claim window runs out; p1's read request is granted it. */
    { "finding 2: a read request granted a leftover write registration", 12,
      "A2rq0,A0wq0,B,A1wq2,S1.234,Z50,A1rq0", 3 },
    { "a late cancel dequeues a later registration", 1, "A0wt0,A2rq0,C22,A2wq0,S2.0", 3 },
    { "a late linger mark cuts a later hold's TTL", 12, "A0wt0,M02,R00,A0wt0,S0.0,Z50", 3 },
    /* Found in the scripts after those fixes.  p0's acquire, lost and run
     * late, finds the lock free after p0's pushed grant lapsed (claim
     * window 40 ms) and takes it anew; p0's renewal of the lapsed grant
     * renewed that other hold (renew.lua without the hold's fence). */
    { "a renewal of a lapsed hold renews a later one", 12, "A1wt0,A0wq2,A0wq0,R10,Z50,D0,S0.0,N00", 3 },
    /* p0's read acquire, lost and run late, finds p0's read hold "mine"
     * and dequeued p0's later write registration (acquire.lua's mine path
     * dequeued whatever registration the caller had). */
    { "a late acquire that finds its hold dequeues a later registration", 12,
      "A0wq2,A0wq2,S0.0,A0rq0,S0.0", 3 },
    /* p0's write registration runs out (40 ms), so p2's read registration
     * 2 is the head; p2's read acquire 1, lost and run late, serves the
     * queue (pushes the grant of registration 2 to p2) and then takes a
     * read hold of its own, overwriting the one just granted: p2's release
     * of the grant it was told of is told 2 and ends nothing. */
    { "a late acquire takes a hold over its process's newer grant", 12,
      "A1rt0,A0wq0,A2rq2,A2rq0,Z50,S2.0,D2,R20", 3 },
    /* p1's read trylock, lost and run late, finds the lock free and p1's
     * later read registration at the head: it pushed that grant, then took
     * a read hold of its own over it, which its withdrawal ended. */
    { "a late read trylock takes the read hold pushed to a later registration", 7103,
      "A1rq0,N12,R10,A1rt1,S1.168,A2wq0,A1rq0,Z120,S1.204,D1", 3 },
    /* p1's linger mark (cut to the claim window) is held back on a
     * connection given up; p1 renews over the next one (a lease from
     * then), and the mark then runs and cuts the TTL again: the hold
     * lapsed while p1 believed it valid for a lease.  A renewal of a hold
     * once cut now vouches for a claim window only (tenure.c). */
    { "a held-back linger mark cuts the TTL after a later renewal", 7333,
      "A0wq0,A2rq0,R00,Q2,A1wq0,R20,D1,M12,N10,S1.250,Z120", 4 },
};

/* Replays each sequence on fresh keys: the number that broke an invariant. */
static int replay_all(const flaw_t *t, size_t count)
{
    int failed = 0;
    for (size_t i = 0; i < count; i++) {
        pf_opts_t o = { 0 };
        o.seed = t[i].seed;
        o.procs = t[i].procs ? t[i].procs : 3;
        o.host = "127.0.0.1";
        o.port = th_redis_port();
        pf_op_t *ops;
        int n;
        assert_int_equal(pf_ops_parse(t[i].ops, &ops, &n), 0);
        pf_fail_t f;
        if (pf_exec(&o, ops, n, &f, NULL)) {
            print_error("%s (seed %llu, '%s'): step %d: %s: %s\n", t[i].what,
                        (unsigned long long)t[i].seed, t[i].ops, f.step + 1, f.what, f.msg);
            failed++;
        }
        free(ops);
    }
    return failed;
}

static void test_known_flaws(void **state)
{
    if (gates() == PF_GATE_ALL)
        skip();   /* the flaws of the scripts the gates are for */
    assert_int_equal(replay_all(known, sizeof known / sizeof known[0]), 0);
}

static void test_two_procs(void **state) { run(1, 2, 800); }
static void test_three_procs(void **state) { run(2, 3, 1200); }
static void test_four_procs(void **state) { run(3, 4, 1200); }
static void test_six_procs(void **state) { run(4, 6, 800); }
/* redlock: a waiting writer's mark keeps new readers of other processes
 * out, lapses when its writer dies, and goes when it takes the lock or
 * gives up; renew 'm' counts it as a waiter.  ~4 s. */
static void test_redlock_mark(void **state) { run_mode(5, 3, 800, 1, 10000); }
/* The channel prefix of redis-cluster://: the scripts push by SPUBLISH on
 * each process's channel of the lock's slot (lua/common.lua, push), heard
 * with SSUBSCRIBE; the same invariants, grants pushed included. */
static void test_pushes_by_slot(void **state) { (void)state; run_opts(6, 3, 1000, 0, 1, 15000); }

/* The semaphore's scripts (tests/protofuzz/pf_sem.h): several seeds of
 * each kind; PROTOFUZZ_SEED shifts them, PROTOFUZZ_STEPS sets the length. */
static void sem_runs(int leased, unsigned value, int procs)
{
    const char *s = getenv("PROTOFUZZ_SEED"), *n = getenv("PROTOFUZZ_STEPS");
    int64_t end = th_now_ms() + 20000;        /* within the harness's 50 s per test */
    for (uint64_t seed = 1; seed <= 6 && th_now_ms() < end; seed++) {
        pf_sem_opts_t o = { 0 };
        o.seed = seed + (s ? strtoull(s, NULL, 10) : 0) + (leased ? 1000 : 0);
        o.steps = n ? atoi(n) : 600;
        o.procs = procs;
        o.leased = leased;
        o.value = value;
        o.host = "127.0.0.1";
        o.port = th_redis_port();
        o.max_ms = 8000;
        char why[600];
        int done = 0;
        int rc = pf_sem_fuzz(&o, &done, why, sizeof why);
        if (rc < 0)
            fail_msg("semaphore protofuzz could not run: %s", why);
        if (rc > 0)
            fail_msg("semaphore protofuzz (%s, %u permits, %d processes) seed %llu: %s",
                     leased ? "leased" : "counting", value, procs, (unsigned long long)o.seed,
                     why);
        print_message("semaphore protofuzz seed %llu (%s, %u permits, %d processes): %d steps, "
                      "every invariant held\n", (unsigned long long)o.seed,
                      leased ? "leased" : "counting", value, procs, done);
    }
}

static void test_sem_counting(void **state) { (void)state; sem_runs(0, 2, 4); }
static void test_sem_leased(void **state) { (void)state; sem_runs(1, 2, 4); }

/* The condition's scripts (pf_cond.h): no lost wake-up, with waiters that
 * lapse, die, give up and lose their pushes.  25 s at most per run: a slow
 * box runs fewer steps, never times out. */
static void run_cond(uint64_t seed, int procs, int steps)
{
    const char *s = getenv("PROTOFUZZ_SEED"), *n = getenv("PROTOFUZZ_STEPS");
    pf_opts_t o = { 0 };
    o.seed = seed + (s ? strtoull(s, NULL, 10) : 0);
    o.steps = n ? atoi(n) : steps;
    o.procs = procs;
    o.host = "127.0.0.1";
    o.port = th_redis_port();
    o.out = stderr;
    o.max_ms = 25000;
    pf_fail_t f;
    int done = 0;
    int rc = pf_cond_fuzz(&o, &done, &f);
    if (rc < 0)
        fail_msg("protofuzz (conditions) could not run: %s", f.msg);
    if (rc > 0)
        fail_msg("protofuzz (conditions) seed %llu, %d processes: step %d: %s: %s (the last "
                 "steps are above)", (unsigned long long)o.seed, procs, f.step + 1, f.what, f.msg);
    print_message("protofuzz (conditions) seed %llu, %d processes: %d steps, every invariant "
                  "held\n", (unsigned long long)o.seed, procs, done);
}

static void test_cond_three_procs(void **state) { run_cond(11, 3, 1500); }
static void test_cond_five_procs(void **state) { run_cond(12, 5, 1500); }

/* The barrier's scripts (pf_barrier.h): counts of 1, 2 and 3 with four
 * processes of three threads; PROTOFUZZ_SEED shifts the seeds,
 * PROTOFUZZ_STEPS sets the length. */
static void barrier_runs(unsigned count)
{
    const char *s = getenv("PROTOFUZZ_SEED"), *n = getenv("PROTOFUZZ_STEPS");
    int64_t end = th_now_ms() + 20000;        /* within the harness's 50 s per test */
    for (uint64_t seed = 1; seed <= 6 && th_now_ms() < end; seed++) {
        pf_barrier_opts_t o = { 0 };
        o.seed = seed + (s ? strtoull(s, NULL, 10) : 0) + 100 * count;
        o.steps = n ? atoi(n) : 1500;
        o.procs = 4;
        o.count = count;
        o.host = "127.0.0.1";
        o.port = th_redis_port();
        o.max_ms = 8000;
        char why[600];
        int done = 0;
        int rc = pf_barrier_fuzz(&o, &done, why, sizeof why);
        if (rc < 0)
            fail_msg("barrier protofuzz could not run: %s", why);
        if (rc > 0)
            fail_msg("barrier protofuzz (count %u) seed %llu: %s", count,
                     (unsigned long long)o.seed, why);
        print_message("barrier protofuzz seed %llu (count %u): %d steps, every invariant held\n",
                      (unsigned long long)o.seed, count, done);
    }
}

static void test_barrier_count1(void **state) { (void)state; barrier_runs(1); }
static void test_barrier_count2(void **state) { (void)state; barrier_runs(2); }
static void test_barrier_count3(void **state) { (void)state; barrier_runs(3); }

/* The once's scripts (pf_once.h). */
static void test_once(void **state)
{
    (void)state;
    const char *s = getenv("PROTOFUZZ_SEED"), *n = getenv("PROTOFUZZ_STEPS");
    int64_t end = th_now_ms() + 25000;
    for (uint64_t seed = 1; seed <= 6 && th_now_ms() < end; seed++) {
        pf_once_opts_t o = { 0 };
        o.seed = seed + (s ? strtoull(s, NULL, 10) : 0);
        o.steps = n ? atoi(n) : 800;
        o.procs = 4;
        o.host = "127.0.0.1";
        o.port = th_redis_port();
        o.max_ms = 8000;
        char why[600];
        int done = 0;
        int rc = pf_once_fuzz(&o, &done, why, sizeof why);
        if (rc < 0)
            fail_msg("once protofuzz could not run: %s", why);
        if (rc > 0)
            fail_msg("once protofuzz seed %llu: %s", (unsigned long long)o.seed, why);
        print_message("once protofuzz seed %llu: %d steps, every invariant held\n",
                      (unsigned long long)o.seed, done);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_known_flaws),
        TH_TEST(test_two_procs),
        TH_TEST(test_three_procs),
        TH_TEST(test_four_procs),
        TH_TEST(test_six_procs),
        TH_TEST(test_redlock_mark),
        TH_TEST(test_pushes_by_slot),
        TH_TEST(test_sem_counting),
        TH_TEST(test_sem_leased),
        TH_TEST(test_cond_three_procs),
        TH_TEST(test_cond_five_procs),
        TH_TEST(test_barrier_count1),
        TH_TEST(test_barrier_count2),
        TH_TEST(test_barrier_count3),
        TH_TEST(test_once),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
