/* SPDX-License-Identifier: BSD-3-Clause */
/* main.c - distlock-bench: options, which workloads run, and the target
 * checks of the issue, each a ratio between figures of this one run.
 *
 *   distlock-bench [options] [WORKLOAD...]      (default: all)
 *
 * See --help, bench.h for the layout, docs/PERFORMANCE.md for the results. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench.h"

bench_opts_t g_opt;
char g_run_id[32];
int g_rep = 1;

enum { WL_FLOOR, WL_W1, WL_W2, WL_W3, WL_W3B, WL_W4, WL_W4B, WL_W5, WL_W6, WL_W7, WL_W8,
       WL_LA2, WL_LA8, WL_S1, WL_S1L, WL_C1, WL_SH, WL_N };
static const char *const wl_names[WL_N] = { "floor", "W1", "W2", "W3", "W3b", "W4", "W4b",
                                            "W5", "W6", "W7", "W8", "LA2", "LA8", "S1", "S1l",
                                            "C1", "SH" };

static void usage(FILE *f)
{
    fprintf(f,
"usage: distlock-bench [options] [WORKLOAD...]\n"
"\n"
"Runs the workloads of SPEC's bench/WORKLOADS.md against a redis-server it\n"
"starts on a free port of 127.0.0.1 (--save '' --appendonly no; stopped at the\n"
"end and on Ctrl-C), and prints one line per result:\n"
"  RESULT peer=<distlock|naive|floor> workload=<W> ops_per_s=X p50_us=Y p99_us=Z extra=k=v,...\n"
"then one TARGET line per performance target (a ratio between figures of this\n"
"run; reported, never enforced).  Latencies are CLOCK_MONOTONIC microseconds.\n"
"\n"
"Workloads (default: all, in this order):\n"
"  floor  redis-benchmark -c 1 -P 1 -n 100000: EVALSHA of \"return 1\", and PING\n"
"  W1     uncontended: 1000 warm-up, then 20000 x {lock; unlock}    (+ naive)\n"
"  W2     4 processes x 2000 x {lock; GET ctr; SET ctr v+1; unlock} (+ naive),\n"
"         and its serial ceiling: 8000 x {GET ctr; SET ctr v+1}, one client, no lock\n"
"  W3     handoff latency, 300 rounds                               (+ naive)\n"
"  W3b    W3 with the holder locking again at once after an unlock, then\n"
"         holding 2 ms before the timed unlock                      (+ naive)\n"
"  W4     8 threads of one process x 20000 x {lock; x++; unlock}\n"
"  W4b    W2 with 4 threads in each process (500 iterations each)\n"
"  W5     4 x 8 reader threads {rdlock; 100 us; unlock} + 1 writer/s; then 1 reader\n"
"  W6     one process holds 10000 locks for 3 lease periods\n"
"  W7     W2 shape with 64 threads per process on 64 locks (200 iterations each)\n"
"  W8     10^7 pthread_mutex pairs on an unmapped mutex, with and without\n"
"         libdistlock_preload.so (skipped when the interposer is not built)\n"
"  LA2    lock-all of 2 free locks sharing a slot: 5000 x {dist_mutex_lockall;\n"
"         unlock each}, round trips per call; then the same one by one\n"
"  LA8    the same with 8 locks\n"
"  S1     a counting semaphore of 4 permits, 16 processes x 150 x {wait;\n"
"         200 us; post}: throughput, fairness, over-grants (must be 0)\n"
"  S1l    S1 with leased permits (DIST_SEM_LEASED)\n"
"  C1     a condition's signal-to-wake latency across processes, 500 rounds:\n"
"         dist_cond_signal in one, dist_cond_wait back (mutex held) in another\n"
"  SH     pushes in a Redis Cluster the bench starts (3 masters: SH3, then 6:\n"
"         SH6; no replicas): 4 processes x 300 x {lock; unlock} on one lock,\n"
"         the cluster-bus publish messages per op (CLUSTER INFO, classic and\n"
"         sharded); then 12 processes in 6 pairs on locks spread over the\n"
"         masters, 400 x {lock; unlock} each: ops/s, Redis CPU per op\n"
"The floor runs whenever W1, W3, W3b or C1 runs; the naive lock runs on W1-W3b.\n"
"\n"
"Options:\n"
"  --url URL            use this server instead of starting one (its\n"
"                       slowlog settings are changed during W5, then restored)\n"
"  --quick              small iteration counts (a smoke test, not a measurement)\n"
"  --json               one JSON document on stdout instead of RESULT/TARGET lines\n"
"  --repeat N           run the selected workloads N times (at most 100), one\n"
"                       after another; each RESULT line gets rep=K, and each\n"
"                       TARGET line gives the median repetition (ordered by how\n"
"                       far each is from the limit: value/limit for >=,\n"
"                       limit/value for <=; above 1 is met), met_reps= (how\n"
"                       many met it) and margins= (each repetition's, in order)\n"
"  --svg FILE           write the W3 latency chart (distlock vs naive) to FILE\n"
"                       (with --repeat, of the last repetition)\n"
"  --lease-ms MS        W6 lease (default 3000, so W6 takes ~10 s; 1000 with\n"
"                       --quick; 0: the library default DISTLOCK_LEASE_MS or\n"
"                       30000, W6 then takes 90 s)\n"

"  --w5-seconds S       length of each W5 phase (default 6)\n"
"  --w6-locks N         locks held in W6 (default 10000)\n"
"  --w7-iters N         iterations per thread in W7 (default 200)\n"
"  --no-floor           do not run redis-benchmark\n"
"  --no-naive           do not run the naive lock\n"
"  --no-progress        no progress line (default: shown when stderr is a terminal)\n"
"  --tls                the library speaks TLS (rediss://) to the run's server,\n"
"                       which gets a TLS port and certificates made with openssl;\n"
"                       the bench's own counters and the naive lock stay plain\n"
"  --pin                redis-server on the last CPU, the bench and its workers on\n"
"                       the others (steadier figures on small VMs; see PERFORMANCE.md)\n"
"  --redis-server PATH  (default: redis-server in PATH)\n"
"  --redis-benchmark PATH (default: redis-benchmark in PATH)\n"
"  --preload PATH       libdistlock_preload.so for W8 (default: the built one)\n"
"  -h, --help           this text\n"
"\n"
"Exit status: 0 when every selected workload ran (targets do not matter), 1 on\n"
"a failed workload, 2 on bad usage.\n");
}

static int opt_ulong(const char *name, const char *v, unsigned long *out)
{
    char *e;
    errno = 0;
    unsigned long x = v ? strtoul(v, &e, 10) : 0;
    if (!v || errno || *e || *v == '-') {
        fprintf(stderr, "distlock-bench: %s needs a number\n", name);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse(int argc, char **argv)
{
    int any = 0;
    g_opt.lease_ms = (unsigned long)-1;      /* 3000, or 1000 with --quick */
    g_opt.redis_server = "redis-server";
    g_opt.redis_benchmark = "redis-benchmark";
    g_opt.progress = isatty(2);
    g_opt.repeat = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--quick")) {
            g_opt.quick = 1;
        } else if (!strcmp(a, "--json")) {
            g_opt.json = 1;
        } else if (!strcmp(a, "--no-floor")) {
            g_opt.no_floor = 1;
        } else if (!strcmp(a, "--no-naive")) {
            g_opt.no_naive = 1;
        } else if (!strcmp(a, "--tls")) {
            g_opt.tls = 1;
        } else if (!strcmp(a, "--pin")) {
            g_opt.pin = 1;
        } else if (!strcmp(a, "--no-progress")) {
            g_opt.progress = 0;
        } else if (!strcmp(a, "--url") || !strcmp(a, "--svg") || !strcmp(a, "--redis-server") ||
                   !strcmp(a, "--redis-benchmark") || !strcmp(a, "--preload")) {
            if (!v) {
                fprintf(stderr, "distlock-bench: %s needs a value\n", a);
                return -1;
            }
            if (!strcmp(a, "--url"))
                g_opt.url = v;
            else if (!strcmp(a, "--svg"))
                g_opt.svg = v;
            else if (!strcmp(a, "--redis-server"))
                g_opt.redis_server = v;
            else if (!strcmp(a, "--redis-benchmark"))
                g_opt.redis_benchmark = v;
            else
                g_opt.preload = v;
            i++;
        } else if (!strcmp(a, "--lease-ms")) {
            if (opt_ulong(a, v, &g_opt.lease_ms))
                return -1;
            i++;
        } else if (!strcmp(a, "--w6-locks")) {
            if (opt_ulong(a, v, &g_opt.w6_locks))
                return -1;
            i++;
        } else if (!strcmp(a, "--repeat")) {
            if (opt_ulong(a, v, &g_opt.repeat))
                return -1;
            if (g_opt.repeat < 1 || g_opt.repeat > BENCH_MAX_REPEAT) {
                fprintf(stderr, "distlock-bench: --repeat: 1 to %d\n", BENCH_MAX_REPEAT);
                return -1;
            }
            i++;
        } else if (!strcmp(a, "--w7-iters")) {
            if (opt_ulong(a, v, &g_opt.w7_iters))
                return -1;
            i++;
        } else if (!strcmp(a, "--w5-seconds")) {
            char *e;
            g_opt.w5_seconds = v ? strtod(v, &e) : 0;
            if (!v || *e || g_opt.w5_seconds <= 0) {
                fprintf(stderr, "distlock-bench: --w5-seconds needs a positive number\n");
                return -1;
            }
            i++;
        } else if (a[0] == '-') {
            fprintf(stderr, "distlock-bench: unknown option %s (see --help)\n", a);
            return -1;
        } else {
            int k;
            for (k = 0; k < WL_N; k++)
                if (!strcasecmp(a, wl_names[k]))
                    break;
            if (k == WL_N) {
                fprintf(stderr, "distlock-bench: unknown workload %s (see --help)\n", a);
                return -1;
            }
            g_opt.wanted[k] = 1;
            any = 1;
        }
    }
    if (g_opt.lease_ms == (unsigned long)-1)
        g_opt.lease_ms = g_opt.quick ? 1000 : 3000;
    if (!any)
        for (int k = 0; k < WL_N; k++)
            g_opt.wanted[k] = 1;
    if ((g_opt.wanted[WL_W1] || g_opt.wanted[WL_W3] || g_opt.wanted[WL_W3B] ||
         g_opt.wanted[WL_C1]) && !g_opt.no_floor)
        g_opt.wanted[WL_FLOOR] = 1;
    if (g_opt.no_floor)
        g_opt.wanted[WL_FLOOR] = 0;
    return 0;
}

/* ------------------------------------------------------------ targets */
static double xget(const result_t *r, const char *key)
{
    double v = 0;
    return result_get(r, key, &v) == 0 ? v : -1;
}

static int usable(const result_t *r)
{
    return r && !r->skipped;
}

static void check_targets(void)
{
    const result_t *fl = result_find("floor", "EVALSHA"), *ping = result_find("floor", "PING");
    const result_t *w1 = result_find("distlock", "W1");
    char note[160];

    if (g_opt.wanted[WL_W1] && usable(w1)) {
        if (usable(fl)) {
            double lim = 0.85 * fl->ops_per_s / 2;
            snprintf(note, sizeof note, "floor %.0f req/s, pair limit %.0f/s; W1 at %.2f of the limit",
                     fl->ops_per_s, fl->ops_per_s / 2, w1->ops_per_s / (fl->ops_per_s / 2));
            target_add("W1", "ops_per_s >= 0.85 * floor_rps / 2", w1->ops_per_s, lim,
                       w1->ops_per_s >= lim, note);
        } else {
            target_add("W1", "ops_per_s >= 0.85 * floor_rps / 2", 0, 0, -1, "no floor in this run");
        }
    }
    const result_t *w2 = result_find("distlock", "W2"), *n2 = result_find("naive", "W2");
    const result_t *w2s = result_find("floor", "W2serial");
    if (g_opt.wanted[WL_W2] && usable(w2)) {
        const char *check = "ops_per_s >= 0.9 * serial ceiling";
        if (usable(w2s)) {
            snprintf(note, sizeof note, "serial ceiling %.0f ops/s; distlock at %.2f of it",
                     w2s->ops_per_s, w2->ops_per_s / w2s->ops_per_s);
            if (usable(n2)) {
                size_t len = strlen(note);
                snprintf(note + len, sizeof note - len, ", naive at %.2f",
                         n2->ops_per_s / w2s->ops_per_s);
            }
            target_add("W2", check, w2->ops_per_s, 0.9 * w2s->ops_per_s,
                       w2->ops_per_s >= 0.9 * w2s->ops_per_s, note);
        } else {
            target_add("W2", check, 0, 0, -1, "no serial ceiling in this run");
        }
        double mn = xget(w2, "min_share");
        target_add("W2", "min_share >= 0.9", mn, 0.9, mn >= 0.9, NULL);
        double lost = xget(w2, "lost_updates");
        target_add("W2", "lost_updates == 0", lost, 0, lost == 0, NULL);
    }
    for (int b = 0; b < 2; b++) {         /* W3, W3b: the same targets */
        const char *wl = b ? "W3b" : "W3";
        const result_t *w3 = result_find("distlock", wl);
        if (!g_opt.wanted[b ? WL_W3B : WL_W3] || !usable(w3))
            continue;
        if (usable(ping)) {
            double hp = xget(ping, "hiredis_p50_us");
            snprintf(note, sizeof note, "PING p50 %.0f us (redis-benchmark), %.0f us (hiredis): "
                     "%.1fx / %.1fx", ping->p50_us, hp, w3->p50_us / ping->p50_us,
                     hp > 0 ? w3->p50_us / hp : 0);
            target_add(wl, "p50_us <= 4 * PING p50", w3->p50_us, 4 * ping->p50_us,
                       w3->p50_us <= 4 * ping->p50_us, note);
        } else {
            target_add(wl, "p50_us <= 4 * PING p50", 0, 0, -1, "no PING floor in this run");
        }
        target_add(wl, "p99_us <= 1000", w3->p99_us, 1000, w3->p99_us <= 1000, NULL);
    }
    const result_t *w4 = result_find("distlock", "W4");
    if (g_opt.wanted[WL_W4] && usable(w4)) {
        if (usable(w1)) {
            snprintf(note, sizeof note, "W1 %.0f pairs/s; W4 at %.1fx W1", w1->ops_per_s,
                     w4->ops_per_s / w1->ops_per_s);
            target_add("W4", "ops_per_s >= 10 * W1", w4->ops_per_s, 10 * w1->ops_per_s,
                       w4->ops_per_s >= 10 * w1->ops_per_s, note);
        }
        double c = xget(w4, "redis_cmds_per_op");
        snprintf(note, sizeof note, "commandstats counts the commands run inside the scripts too; "
                 "commands sent per op: %.4f; ops after the first thread finished: %.0f",
                 xget(w4, "sent_cmds_per_op"), xget(w4, "ops_after_first_finished"));
        target_add("W4", "redis_cmds_per_op <= 0.1 (INFO commandstats)", c, 0.1, c >= 0 && c <= 0.1,
                   note);
        double lost = xget(w4, "lost_updates");
        target_add("W4", "lost_updates == 0", lost, 0, lost == 0, NULL);
    }
    const result_t *w4b = result_find("distlock", "W4b");
    if (g_opt.wanted[WL_W4B] && usable(w4b)) {
        double lost = xget(w4b, "lost_updates");
        target_add("W4b", "lost_updates == 0", lost, 0, lost == 0, NULL);
        snprintf(note, sizeof note, "max wait %.0f us, wait p99 %.0f us, shares %.2f..%.2f, "
                 "longest run of one process %.0f holds", xget(w4b, "max_wait_us"),
                 xget(w4b, "wait_p99_us"), xget(w4b, "min_share"), xget(w4b, "max_share"),
                 xget(w4b, "max_run_one_process"));
        target_add("W4b", "other processes get the lock within a bound (reported)", 0, 0, -1, note);
    }
    const result_t *w5 = result_find("distlock", "W5");
    if (g_opt.wanted[WL_W5] && usable(w5)) {
        double u32 = xget(w5, "reader_unlock_usec_per_call_32"),
               u1 = xget(w5, "reader_unlock_usec_per_call_1");
        if (u32 > 0 && u1 > 0)
            target_add("W5", "reader unlock usec_per_call at 32 readers <= 2 * at 1", u32, 2 * u1,
                       u32 <= 2 * u1, "Redis time per read-unlock script call (SLOWLOG)");
        else
            target_add("W5", "reader unlock usec_per_call at 32 readers <= 2 * at 1", 0, 0, -1,
                       "no read unlock reached Redis in a measuring window");
    }
    const result_t *w6 = result_find("distlock", "W6");
    if (g_opt.wanted[WL_W6] && usable(w6)) {
        double held = xget(w6, "all_still_held"), rt = xget(w6, "renew_round_trips_per_period");
        snprintf(note, sizeof note, "%.0f locks, lease %.0f ms", xget(w6, "locks"), xget(w6, "lease_ms"));
        target_add("W6", "all_still_held == 1", held, 1, held == 1, note);
        target_add("W6", "renew round trips per renewal tick <= 10", rt, 10, rt >= 0 && rt <= 10, NULL);
    }
    const result_t *w7 = result_find("distlock", "W7");
    if (g_opt.wanted[WL_W7] && usable(w7)) {
        double c = xget(w7, "connections_per_process");
        if (c >= 0)
            target_add("W7", "connections_per_process <= 3 (CLIENT LIST)", c, 3, c <= 3, NULL);
        else
            target_add("W7", "connections_per_process <= 3 (CLIENT LIST)", 0, 0, -1, "not measured");
    }
    const result_t *c1 = result_find("distlock", "C1");
    if (g_opt.wanted[WL_C1] && usable(c1)) {
        if (usable(ping)) {
            snprintf(note, sizeof note, "PING p50 %.0f us; C1 at %.1fx", ping->p50_us,
                     c1->p50_us / ping->p50_us);
            target_add("C1", "p50_us <= 4 * PING p50", c1->p50_us, 4 * ping->p50_us,
                       c1->p50_us <= 4 * ping->p50_us, note);
        } else {
            target_add("C1", "p50_us <= 4 * PING p50", 0, 0, -1, "no PING floor in this run");
        }
    }
    const result_t *w8 = result_find("distlock", "W8");
    if (g_opt.wanted[WL_W8] && w8) {
        if (w8->skipped) {
            char why[64] = "";
            const char *rs = strstr(w8->extra, "reason=");
            snprintf(why, sizeof why, "skipped: %s", rs ? rs + 7 : "");
            target_add("W8", "ns_per_pair_preloaded <= 1.5 * plain", 0, 0, -1, why);
        } else {
            double p = xget(w8, "ns_per_pair_plain"), q = xget(w8, "ns_per_pair_preloaded");
            target_add("W8", "ns_per_pair_preloaded <= 1.5 * plain", q, 1.5 * p, q <= 1.5 * p, NULL);
        }
    }
}

/* Lock-all: one round trip per call when the names share a slot. */
static void check_lockall_targets(void)
{
    static const int which[2] = { WL_LA2, WL_LA8 };
    for (int i = 0; i < 2; i++) {
        const char *wl = wl_names[which[i]];
        const result_t *r = result_find("distlock", wl);
        if (!g_opt.wanted[which[i]] || !usable(r))
            continue;
        double rt = xget(r, "lockall_round_trips_per_call");
        char note[160];
        snprintf(note, sizeof note, "the same locks one by one: %.2f round trips, p50 %.0f us "
                 "(lock-all p50 %.0f us)", xget(r, "one_by_one_round_trips"),
                 xget(r, "one_by_one_p50_us"), r->p50_us);
        target_add(wl, "lockall_round_trips_per_call <= 1 (names sharing a slot)", rt, 1,
                   rt >= 0 && rt <= 1, note);
    }
}

/* Sharded pushes: no classic publish on the cluster bus; handoffs that do
 * not slow down with more masters. */
static void check_shard_targets(void)
{
    if (!g_opt.wanted[WL_SH])
        return;
    const result_t *r3 = result_find("distlock", "SH3"), *r6 = result_find("distlock", "SH6");
    for (int i = 0; i < 2; i++) {
        const result_t *r = i ? r6 : r3;
        if (!usable(r))
            continue;
        double b = xget(r, "bus_publish_per_op");
        char note[160];
        snprintf(note, sizeof note, "sharded: %.3f bus messages per op, %.3f SPUBLISH per op",
                 xget(r, "bus_publishshard_per_op"), xget(r, "spublish_calls_per_op"));
        target_add(i ? "SH6" : "SH3", "bus_publish_per_op == 0 (classic publish broadcast)", b, 0,
                   b == 0, note);
    }
    if (usable(r3) && usable(r6)) {
        char note[160];
        snprintf(note, sizeof note, "Redis CPU per op %.1f us (3 masters), %.1f us (6)",
                 xget(r3, "pair_redis_cpu_us_per_op"), xget(r6, "pair_redis_cpu_us_per_op"));
        target_add("SH6", "ops_per_s >= SH3 ops_per_s (pairs spread over the masters)",
                   r6->ops_per_s, r3->ops_per_s, r6->ops_per_s >= r3->ops_per_s, note);
    }
}

/* On a server of the user's (--url): delete the keys of this run (lock
 * hashes, their meta hashes that live 7 days, counters). */
static void cleanup_keys(void)
{
    redisContext *c = rc_connect("bench-ctl");
    if (!c)
        return;
    char pat[96];
    snprintf(pat, sizeof pat, "*bench:%s:*", g_run_id);
    char cursor[32] = "0";
    unsigned long n = 0;
    do {
        redisReply *r = rc_cmd(c, "SCAN %s MATCH %s COUNT 1000", cursor, pat);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (r)
                freeReplyObject(r);
            break;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        redisReply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++) {
            redisReply *d = rc_cmd(c, "DEL %b", keys->element[i]->str, (size_t)keys->element[i]->len);
            if (d)
                freeReplyObject(d);
            n++;
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0"));
    redisFree(c);
    if (g_opt.progress)
        fprintf(stderr, "distlock-bench: deleted the %lu keys of this run\n", n);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--w8-child"))
        return w8_child_main(strtoul(argv[2], NULL, 10));
    if (parse(argc, argv))
        return 2;

    static char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        g_opt.self = self;
    } else {
        g_opt.self = argv[0];
    }
    snprintf(g_run_id, sizeof g_run_id, "%x%llx", (unsigned)getpid(),
             (unsigned long long)(now_ns() / 1000) & 0xffffffull);

    signals_install();
    int user_url = g_opt.url != NULL;
    if (g_opt.tls && user_url) {
        fprintf(stderr, "distlock-bench: --tls runs on the bench's own server: not with --url\n");
        return 2;
    }
    if (g_opt.url) {
        char err[200];
        if (rc_url(g_opt.url, err, sizeof err)) {
            fprintf(stderr, "distlock-bench: --url: %s; expected redis://host[:port][/db] or "
                    "unix:///path\n", err);
            return 2;
        }
    } else {
        if (server_start())
            return 1;
        atexit(server_stop);
    }
    if (g_opt.pin && pin_self())
        fprintf(stderr, "distlock-bench: --pin: needs 2 CPUs or more; not pinned\n");
    /* Every forked worker's library reads it on first use. */
    setenv("DISTLOCK_URL", g_opt.tls ? server_tls_url() : g_opt.url, 1);
    if (g_opt.progress)
        fprintf(stderr, "distlock-bench: redis %s%s, run %s%s\n", g_opt.url,
                g_opt.tls ? " (library over TLS)" : "", g_run_id,
                g_opt.quick ? " (--quick: smoke-test sizes, not a measurement)" : "");

    for (g_rep = 1; g_rep <= (int)g_opt.repeat; g_rep++) {
        if (g_opt.repeat > 1 && g_opt.progress)
            fprintf(stderr, "distlock-bench: repetition %d of %lu\n", g_rep, g_opt.repeat);
        if (g_opt.wanted[WL_FLOOR])
            run_floor();
        if (g_opt.wanted[WL_W1]) {
            if (!g_opt.no_naive)
                run_w1(PEER_NAIVE);
            run_w1(PEER_DISTLOCK);
        }
        if (g_opt.wanted[WL_W2]) {
            run_w2_serial();
            if (!g_opt.no_naive)
                run_w2(PEER_NAIVE);
            run_w2(PEER_DISTLOCK);
        }
        if (g_opt.wanted[WL_W3]) {
            if (!g_opt.no_naive)
                run_w3(PEER_NAIVE);
            run_w3(PEER_DISTLOCK);
            if (g_opt.svg && svg_write_w3(g_opt.svg))
                output_error("W3", "could not write %s", g_opt.svg);
        }
        if (g_opt.wanted[WL_W3B]) {
            if (!g_opt.no_naive)
                run_w3b(PEER_NAIVE);
            run_w3b(PEER_DISTLOCK);
        }
        if (g_opt.wanted[WL_W4])
            run_w4();
        if (g_opt.wanted[WL_W4B])
            run_w4b();
        if (g_opt.wanted[WL_W5])
            run_w5();
        if (g_opt.wanted[WL_W6])
            run_w6();
        if (g_opt.wanted[WL_W7])
            run_w7();
        if (g_opt.wanted[WL_W8])
            run_w8();
        if (g_opt.wanted[WL_LA2])
            run_lockall(2);
        if (g_opt.wanted[WL_LA8])
            run_lockall(8);
        if (g_opt.wanted[WL_S1])
            run_s1(0);
        if (g_opt.wanted[WL_S1L])
            run_s1(1);
        if (g_opt.wanted[WL_C1])
            run_c1();
        if (g_opt.wanted[WL_SH])
            run_sh();
        check_targets();
        check_lockall_targets();
        check_shard_targets();
        targets_end_rep();
    }
    g_rep--;

    if (user_url)
        cleanup_keys();
    output_finish();
    return output_errors() ? 1 : 0;
}
