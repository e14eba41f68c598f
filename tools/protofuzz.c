/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * distlock-protofuzz: the protocol fuzzer of tests/protofuzz/ at any
 * length (tools/protofuzz.sh builds it and starts a redis-server for it).
 *
 *   distlock-protofuzz [--seed N] [--steps N] [--procs N] [--runs N]
 *                      [--time SECONDS] [--shrink SECONDS]
 *                      [--full | --gated | --no-late-acquire]
 *                      [--with stale-release|stale-cancel|bare-acquire|stale-mark]
 *                      [--only INVARIANT] [--verbose] [--replay OPS] [--redlock]
 *                      [--by-slot]
 *   distlock-protofuzz --cond [--seed N] [--steps N] [--procs N] [--runs N]
 *                      [--time SECONDS] [--verbose]
 *   distlock-protofuzz --barrier COUNT | --once [--seed N] [--steps N]
 *                      [--procs N] [--runs N] [--time SECONDS]
 *
 * Runs seed, seed+1, ... (each --steps ops on fresh keys) until --runs runs
 * or --time seconds, whichever comes first; prints a progress line every
 * 2 s.  On a failure prints the seed, the invariant, and the shortest
 * failing sequence it finds (--shrink seconds at most), and exits 1.
 * --replay runs a sequence printed by an earlier failure.  --gated leaves
 * out the lost requests that the scripts before hold and registration ids
 * mishandle (docs/RELIABILITY.md): they are sent normally; --with KIND
 * then draws one kind of them again.  --full (the default) draws all.
 * --no-late-acquire: every kind but lost acquires (what test_protofuzz
 * runs while acquire.lua's late-request flaws are open).  --only reports one invariant and no other
 * (how soon a flaw is found while others are known).  --redlock: every
 * process is a redlock:// client of this one server (no queue; a waiting
 * writer's mark keeps new readers out), with the mark's invariants.
 * --by-slot: the channel prefix of redis-cluster:// (the slot's, so the
 * scripts push by SPUBLISH; heard with SSUBSCRIBE).
 * --cond: the condition variable's scripts instead (tests/protofuzz/
 * pf_cond.h: no lost wake-up); a failure prints its last steps, and the
 * seed and step count replay it (no shrinking).
 * --barrier COUNT, --once: the barrier's scripts with a barrier of that
 * count (pf_barrier.h), the once's (pf_once.h); a failure says its step.
 * The server: DISTLOCK_URL (redis://HOST:PORT), default 127.0.0.1:6379.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pf.h"
#include "pf_cond.h"
#include "pf_barrier.h"
#include "pf_once.h"

static void usage(void)
{
    fprintf(stderr, "usage: distlock-protofuzz [--seed N] [--steps N] [--procs N] [--runs N] "
            "[--time SECONDS]\n                          [--shrink SECONDS] [--full|--gated|--no-late-acquire] [--with KIND] "
            "[--only INVARIANT]\n                          [--verbose] [--replay OPS] [--redlock] [--by-slot]\n       distlock-protofuzz --cond [--seed N] [--steps N] [--procs N] [--runs N] [--time SECONDS] [--verbose]\n       distlock-protofuzz --barrier COUNT | --once [--seed N] [--steps N] [--procs N] [--runs N] [--time SECONDS]\n  KIND: stale-release, stale-cancel, bare-acquire, stale-mark\n");
    exit(64);
}

static int server(const char *url, char *host, size_t size, int *port)
{
    snprintf(host, size, "127.0.0.1");
    *port = 6379;
    if (!url || !*url)
        return 0;
    if (strncmp(url, "redis://", 8) != 0)
        return -1;
    const char *h = url + 8, *at = strrchr(h, '@');
    if (at)
        h = at + 1;
    const char *colon = strchr(h, ':');
    size_t hl = colon ? (size_t)(colon - h) : strcspn(h, "/?");
    if (hl && hl < size)
        snprintf(host, size, "%.*s", (int)hl, h);
    if (colon)
        *port = atoi(colon + 1);
    return *port > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    pf_opts_t o = { 0 };
    char host[256];
    o.seed = (uint64_t)time(NULL);
    o.steps = 5000;
    o.procs = 3;
    o.gates = 0;
    o.out = stdout;
    o.shrink_ms = 120000;
    long runs = 1000000, secs = 0;
    const char *replay = NULL;
    int cond = 0, once = 0;
    unsigned barrier = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--full")) { o.gates = 0; continue; }
        if (!strcmp(a, "--gated")) { o.gates = PF_GATE_ALL; continue; }
        if (!strcmp(a, "--no-late-acquire")) { o.gates = PF_GATE_LATE_ACQUIRE; continue; }
        if (!strcmp(a, "--verbose")) { o.verbose = 1; continue; }
        if (!strcmp(a, "--redlock")) { o.redlock = 1; continue; }
        if (!strcmp(a, "--by-slot")) { o.by_slot = 1; continue; }
        if (!strcmp(a, "--cond")) { cond = 1; continue; }
        if (!strcmp(a, "--once")) { once = 1; continue; }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--with")) {
            if (!strcmp(v, "stale-release")) o.gates &= ~PF_GATE_STALE_RELEASE;
            else if (!strcmp(v, "stale-cancel")) o.gates &= ~PF_GATE_STALE_CANCEL;
            else if (!strcmp(v, "bare-acquire")) o.gates &= ~PF_GATE_BARE_ACQUIRE;
            else if (!strcmp(v, "stale-mark")) o.gates &= ~PF_GATE_STALE_MARK;
            else usage();
        }
        else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--steps")) o.steps = atoi(v);
        else if (!strcmp(a, "--procs")) o.procs = atoi(v);
        else if (!strcmp(a, "--runs")) runs = atol(v);
        else if (!strcmp(a, "--time")) secs = atol(v);
        else if (!strcmp(a, "--shrink")) o.shrink_ms = atol(v) * 1000;
        else if (!strcmp(a, "--replay")) replay = v;
        else if (!strcmp(a, "--only")) o.only = v;
        else if (!strcmp(a, "--barrier")) {
            if (atoi(v) < 1)
                usage();
            barrier = (unsigned)atoi(v);
        }
        else usage();
    }
    if (o.steps < 1 || o.procs < 2 || o.procs > PF_MAX_PROCS)
        usage();
    if (server(getenv("DISTLOCK_URL"), host, sizeof host, &o.port)) {
        fprintf(stderr, "protofuzz: DISTLOCK_URL: only redis://HOST:PORT\n");
        return 64;
    }
    o.host = host;

    if (replay) {
        pf_op_t *ops;
        int n;
        if (pf_ops_parse(replay, &ops, &n)) {
            fprintf(stderr, "protofuzz: --replay: cannot parse the sequence\n");
            return 64;
        }
        o.verbose = 1;
        pf_fail_t f;
        int rc = pf_exec(&o, ops, n, &f, stdout);
        free(ops);
        if (rc == 1)
            printf("protofuzz: -> %s: %s\n", f.what, f.msg);
        else
            printf("protofuzz: %s\n", rc ? f.msg : "every invariant held");
        return rc ? 1 : 0;
    }

    printf("protofuzz: seeds from %llu, %d steps each, %d processes%s, %s, server %s:%d\n",
           (unsigned long long)o.seed, o.steps, o.procs, o.redlock ? " (redlock clients)" : "",
           cond ? "the condition's scripts" : barrier ? "the barrier's scripts"
           : once ? "the once's scripts" : o.gates == PF_GATE_ALL ? "gated: known-flaw triggers left out"
                                     : o.gates ? "gated, some known-flaw triggers" : "every op", host, o.port);
    o.progress_ms = 2000;
    int64_t start = pf_now_ms();
    long total = 0, r;
    uint64_t first = o.seed;
    for (r = 0; r < runs; r++) {
        if (secs && pf_now_ms() - start >= secs * 1000)
            break;
        pf_fail_t f;
        int done = 0;
        o.max_ms = secs ? secs * 1000 - (pf_now_ms() - start) : 0;
        int rc;
        if (barrier || once) {
            char why[600];
            if (barrier) {
                pf_barrier_opts_t bo = { o.seed, o.steps, o.procs, barrier, host, o.port, o.max_ms,
                                         NULL };
                rc = pf_barrier_fuzz(&bo, &done, why, sizeof why);
            } else {
                pf_once_opts_t oo = { o.seed, o.steps, o.procs, host, o.port, o.max_ms, NULL };
                rc = pf_once_fuzz(&oo, &done, why, sizeof why);
            }
            if (rc)
                printf("protofuzz: seed %llu: %s\n", (unsigned long long)o.seed, why);
        } else {
            rc = cond ? pf_cond_fuzz(&o, &done, &f) : pf_fuzz(&o, &done, &f);
        }
        total += done;
        if (rc) {
            printf("protofuzz: %s after %ld steps in all (%ld runs), %.1f s\n",
                   rc > 0 ? "FAILED" : "ERROR", total, r + 1, (double)(pf_now_ms() - start) / 1000);
            return 1;
        }
        printf("protofuzz: seed %llu passed (%d steps); %ld steps in all, %.1f s\n",
               (unsigned long long)o.seed, done, total, (double)(pf_now_ms() - start) / 1000);
        fflush(stdout);
        o.seed++;
    }
    printf("protofuzz: PASS: seeds %llu..%llu, %ld steps, %.1f s\n", (unsigned long long)first,
           (unsigned long long)(o.seed - 1), total, (double)(pf_now_ms() - start) / 1000);
    return 0;
}
