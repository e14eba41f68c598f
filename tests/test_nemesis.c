/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_nemesis.c - the nemesis (issue 22): client processes x threads take
 * random locks with random calls and write to a fenced store inside every
 * hold, while a seeded schedule of faults hits them, the lock server and
 * the network between them; the recorded history is then checked
 * (tests/nemesis_check.c says what each check asserts).
 *
 * CI runs a short run of each topology (about 2 minutes in all) with fixed
 * seeds; tools/nemesis.sh runs any number of seeds, as long as asked.
 *
 *   NEMESIS_SEED=N        the seed of the run (each case adds its own offset
 *                         unless NEMESIS_SEED is set: then exactly N)
 *   NEMESIS_DURATION_MS   faults are injected for this long
 *   NEMESIS_FAULTS=a,b    only these kinds (nemesis_fault.c: kill, stop,
 *                         stopgrantee, restart, flush, break, pause,
 *                         clientkill, delay, freeze, jitter, blackhole, mute,
 *                         srvstop, srvclock, clock, late; partition: netns)
 *   NEMESIS_ROLES=a,b     only these roles beside the locks (nemesis_roles.c:
 *                         cond, sem, lockall, barrier; all by default, none)
 *   NEMESIS_SEM_TOLD=0    do not check that a semaphore's users are told of
 *                         its loss (SPEC's ENOLCK after a restart; a library
 *                         from before issue 28), and count a holder's post
 *                         after the loss as a permit of the new one
 *   NEMESIS_PROCS, _THREADS, _LEASE_MS, _FIXED_MS, _IO_TIMEOUT_MS,
 *   NEMESIS_RATE_MILLI (faults per 1000 s), NEMESIS_VERBOSE=1 (print the
 *   schedule of passing runs too), NEMESIS_KEEP=1 (keep the logs and
 *   the history of a passing run), NEMESIS_DIR (where), NEMESIS_LIVENESS_MS (the liveness
 *   bound, to see that check fire), NEMESIS_LIBLOG (DISTLOCK_LOG of the
 *   clients, default warn)
 */
#include "harness.h"
#include "nemesis.h"

#include <stdlib.h>
#include <string.h>

static void run_case(int topo, uint64_t seed_offset, long duration_ms)
{
    nm_cfg_t cfg;
    nm_cfg_default(&cfg);
    cfg.topo = topo;
    cfg.duration_ms = duration_ms;
    cfg.seed += seed_offset;
    nm_cfg_env(&cfg);
    th_time_limit((unsigned)((cfg.duration_ms + cfg.tail_ms) / 1000 + 3 * cfg.lease_ms / 1000 +
                             2 * cfg.io_timeout_ms / 1000 + 180));
    if (topo == NM_TOPO_NETNS && !getenv("NEMESIS_FAULTS"))
        cfg.faults = NM_FAULTS_NETNS;
    nm_result_t res;
    int rc = nm_run(&cfg, &res);
    if (res.skipped) {
        print_message("skipped: %s\n", res.first);
        skip();
    }
    if (rc < 0)
        fail_msg("the nemesis could not set up its run (servers, clients)");
    if (res.holds < 50)
        fail_msg("only %llu holds in the run: too few to judge anything", (unsigned long long)res.holds);
    if (rc != 0)
        fail_msg("seed %llu: %d violation(s); the first: %s", (unsigned long long)cfg.seed,
                 res.violations, res.first);
}

/* One redis-server, the clients behind the proxy: every single-server
 * fault and every proxy fault. */
static void test_nemesis_single(void **state)
{
    (void)state;
    run_case(NM_TOPO_SINGLE, 0, 45000);
}

/* redlock:// over three servers, each behind a proxy: the faults of a
 * server hit one of them at a time (a minority), those of a client all
 * its links. */
static void test_nemesis_redlock(void **state)
{
    (void)state;
    run_case(NM_TOPO_REDLOCK, 100, 25000);
}

/* Each client in a network namespace of its own, joined by a veth pair;
 * partitions cut one client from the server one way or both (nftables
 * rules inside its namespace), besides the faults of the server and of
 * the clients.  Skipped where namespaces cannot be made (not root). */
static void test_nemesis_netns(void **state)
{
    (void)state;
    run_case(NM_TOPO_NETNS, 200, 25000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nemesis_single),
        cmocka_unit_test(test_nemesis_redlock),
        cmocka_unit_test(test_nemesis_netns),
    };
    return th_run_tests(tests, NULL, NULL);
}
