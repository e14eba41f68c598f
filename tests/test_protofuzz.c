/*
 * test_protofuzz.c - a short seeded run of the protocol fuzzer
 * (tests/protofuzz/pf.h) against the suite's redis-server: simulated
 * processes drive the Lua scripts directly, in random interleavings with
 * lost and late requests, lost pushes and short leases, and every
 * invariant is checked after every step.  A failure prints the seed and the
 * shortest failing sequence found; tools/protofuzz.sh runs the long ones.
 *
 * PROTOFUZZ_FULL=1 also draws the lost requests that today's scripts are
 * known to mishandle (docs/RELIABILITY.md, "Protocol fuzzer").
 * PROTOFUZZ_SEED=N shifts the seeds; PROTOFUZZ_STEPS=N sets each run's length.
 */
#include "harness.h"
#include "pf.h"

#include <string.h>

static unsigned gates(void)
{
    const char *full = getenv("PROTOFUZZ_FULL");
    if (full && strcmp(full, "1") == 0)
        return 0;
    return PF_GATE_ALL;
}

/* One seeded run; fails the test with the fuzzer's report. */
static void run(uint64_t seed, int procs, int steps)
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
    o.max_ms = 25000;             /* a slow box runs fewer steps, never times out */
    pf_fail_t f;
    int done = 0;
    int rc = pf_fuzz(&o, &done, &f);
    if (rc < 0)
        fail_msg("protofuzz could not run: %s", f.msg);
    if (rc > 0)
        fail_msg("protofuzz seed %llu, %d processes: step %d: %s: %s (the sequence is above)",
                 (unsigned long long)o.seed, procs, f.step + 1, f.what, f.msg);
    print_message("protofuzz seed %llu, %d processes: %d steps, every invariant held\n",
                  (unsigned long long)o.seed, procs, done);
}

static void test_two_procs(void **state) { run(1, 2, 800); }
static void test_three_procs(void **state) { run(2, 3, 1200); }
static void test_four_procs(void **state) { run(3, 4, 1200); }
static void test_six_procs(void **state) { run(4, 6, 800); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_two_procs),
        TH_TEST(test_three_procs),
        TH_TEST(test_four_procs),
        TH_TEST(test_six_procs),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
