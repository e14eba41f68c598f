/* SPDX-License-Identifier: BSD-3-Clause */
/* w_preload.c - W8: what the interposer costs a program on the mutexes it
 * does not map.  The program is distlock-bench itself, re-executed as
 * `distlock-bench --w8-child PAIRS`: 10^7 pthread_mutex_lock/unlock pairs
 * on an unmapped mutex, once plain and once with libdistlock_preload.so in
 * LD_PRELOAD and a map naming another mutex of the program (so the
 * interposer has a non-empty address table to check every call against).
 * Runs alternate, 3 of each; the median of each side is reported. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* Mapped by W8's DISTLOCK_MAP (never locked): a global of the executable,
 * found by the interposer in the ELF symbol table. */
pthread_mutex_t distlock_bench_w8_mapped = PTHREAD_MUTEX_INITIALIZER;
/* The unmapped mutex the loop uses. */
static pthread_mutex_t w8_mu = PTHREAD_MUTEX_INITIALIZER;

#define W8_MAP "benchw8=mutex:distlock_bench_w8_mapped"
#define W8_BATCH 10000UL

int w8_child_main(unsigned long pairs)
{
    pthread_mutex_t *volatile mu = &w8_mu;
    unsigned long nb = pairs / W8_BATCH;
    if (nb < 1)
        nb = 1;
    double *per = malloc(nb * sizeof *per);
    if (!per)
        return 1;
    for (unsigned long i = 0; i < 200000; i++) {       /* warm-up */
        pthread_mutex_lock(mu);
        pthread_mutex_unlock(mu);
    }
    uint64_t t0 = now_ns();
    for (unsigned long b = 0; b < nb; b++) {
        uint64_t tb = now_ns();
        for (unsigned long i = 0; i < W8_BATCH; i++) {
            pthread_mutex_lock(mu);
            pthread_mutex_unlock(mu);
        }
        per[b] = (double)(now_ns() - tb) / (double)W8_BATCH;
    }
    double mean = (double)(now_ns() - t0) / (double)(nb * W8_BATCH);
    sort_doubles(per, nb);
    printf("W8 %.3f %.3f %.3f\n", mean, pct_sorted(per, nb, 0.5), pct_sorted(per, nb, 0.99));
    free(per);
    (void)distlock_bench_w8_mapped;
    return 0;
}

/* Runs the child; 0 with its figures (ns per pair), or -1. */
static int run_child(const char *preload, const char *map, unsigned long pairs, double out[3])
{
    char pairsbuf[32];
    snprintf(pairsbuf, sizeof pairsbuf, "%lu", pairs);
    FILE *f;
    pid_t pid = fork_piped(&f);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (preload) {
            setenv("LD_PRELOAD", preload, 1);
            if (map)
                setenv("DISTLOCK_MAP", map, 1);
            else
                unsetenv("DISTLOCK_MAP");
        } else {
            unsetenv("LD_PRELOAD");
            unsetenv("DISTLOCK_MAP");
        }
        execl(g_opt.self, g_opt.self, "--w8-child", pairsbuf, (char *)NULL);
        fprintf(stderr, "distlock-bench: exec %s: %s\n", g_opt.self, strerror(errno));
        _exit(127);
    }
    char line[256];
    int got = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "W8 %lf %lf %lf", &out[0], &out[1], &out[2]) == 3)
            got = 0;
    if (f)
        fclose(f);
    return reap_tool(pid) ? -1 : got;
}

static int cmp3(const void *a, const void *b)
{
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return x < y ? -1 : x > y;
}

static const char *find_preload(void)
{
    struct stat st;
    if (g_opt.preload)
        return stat(g_opt.preload, &st) == 0 ? g_opt.preload : NULL;
#ifdef DISTLOCK_PRELOAD_PATH
    if (stat(DISTLOCK_PRELOAD_PATH, &st) == 0)
        return DISTLOCK_PRELOAD_PATH;
#endif
#ifdef DISTLOCK_PRELOAD_INSTALLED
    if (stat(DISTLOCK_PRELOAD_INSTALLED, &st) == 0)
        return DISTLOCK_PRELOAD_INSTALLED;
#endif
    return NULL;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define W8_SANITIZED 1      /* a sanitizer runtime must come first: no LD_PRELOAD */
#else
#define W8_SANITIZED 0
#endif

int run_w8(void)
{
    const char *pre = find_preload();
    if (W8_SANITIZED || !pre) {
        result_t *r = result_new("distlock", "W8");
        r->skipped = 1;
        result_extra(r, "skipped", "1");
        result_extra(r, "reason", "%s", W8_SANITIZED ? "sanitizer-build" :
                     g_opt.preload ? "preload-not-found" : "interposer-not-built");
        result_emit(r);
        return 0;
    }
    unsigned long pairs = g_opt.quick ? 1000000UL : 10000000UL;
    int runs = g_opt.quick ? 1 : 3;
    double plain[3][3], pl[3][3];
    const char *map = W8_MAP;
    progress_t pr = { 0, (unsigned long)runs * 2 };
    for (int i = 0; i < runs; i++) {
        progress_show("W8 interposer", &pr);
        if (run_child(NULL, NULL, pairs, plain[i])) {
            output_error("W8", "the plain run failed");
            return -1;
        }
        pr.done++;
        progress_show("W8 interposer", &pr);
        if (run_child(pre, map, pairs, pl[i])) {
            if (map && i == 0 && run_child(pre, NULL, pairs, pl[i]) == 0) {
                map = NULL;           /* the map did not apply: measure without one */
                fprintf(stderr, "distlock-bench: W8: the run with DISTLOCK_MAP=%s failed; "
                        "measured with no map\n", W8_MAP);
            } else {
                output_error("W8", "the preloaded run failed (%s)", pre);
                return -1;
            }
        }
        pr.done++;
    }
    qsort(plain, (size_t)runs, sizeof plain[0], cmp3);
    qsort(pl, (size_t)runs, sizeof pl[0], cmp3);
    double *p = plain[runs / 2], *q = pl[runs / 2];
    result_t *r = result_new("distlock", "W8");
    r->ops_per_s = q[0] > 0 ? 1e9 / q[0] : 0;
    r->p50_us = q[1] / 1000;
    r->p99_us = q[2] / 1000;
    result_extra(r, "ns_per_pair_plain", "%.2f", p[0]);
    result_extra(r, "ns_per_pair_preloaded", "%.2f", q[0]);
    result_extra(r, "ratio", "%.2f", p[0] > 0 ? q[0] / p[0] : 0);
    result_extra(r, "pairs", "%lu", pairs);
    result_extra(r, "runs", "%d", runs);
    result_extra(r, "map", "%s", map ? "one-other-mutex" : "none");
    result_extra(r, "latency", "per-pair-mean-of-10000-batches");
    result_emit(r);
    return 0;
}
