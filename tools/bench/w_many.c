/* SPDX-License-Identifier: BSD-3-Clause */
/* w_many.c - many locks in one process, and what a process costs while it
 * only holds or only waits (issue 30, items 1 and 7):
 *
 *   W9L   one process, one thread, takes N locks (each step of
 *         --w9-locks: 10^2 ... 10^5 by default, 10^6 on request), holds
 *         them for 3 lease periods doing nothing, then unlocks them.  Per
 *         step: acquire time per lock (and its first and last tenths, which
 *         show a cost that grows with the locks held), renewal round trips
 *         per renewal tick, Redis CPU, whether every hold was kept, the
 *         client's resident memory and Redis's memory per held lock, and
 *         the holding process's idle CPU and wake-ups per second.
 *   W9W   a process whose one thread waits (dist_mutex_lock) for a lock
 *         another process holds, for 3 lease periods: its CPU and
 *         wake-ups per second.
 *
 * CPU and wake-ups are read from /proc (the process's utime + stime, and
 * each thread's voluntary and involuntary context switches: a voluntary
 * one is a thread that went to sleep, so each is one wake-up), around a
 * phase in which the measured process's own thread sleeps once. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "distlock.h"
#include "status.h"

/* ------------------------------------------------ what a process costs */
int proc_cost(pid_t pid, pcost_t *c)
{
    char path[64], buf[2048];
    memset(c, 0, sizeof *c);
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* After the command name (which may hold spaces): state is field 3,
     * utime and stime fields 14 and 15, in clock ticks, all threads. */
    const char *s = strrchr(buf, ')');
    if (!s)
        return -1;
    unsigned long ut = 0, st = 0;
    if (sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    c->cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sp[320];
        snprintf(sp, sizeof sp, "/proc/%d/task/%s/status", (int)pid, e->d_name);
        FILE *t = fopen(sp, "r");
        if (!t)
            continue;              /* a thread that just ended */
        char line[256];
        while (fgets(line, sizeof line, t)) {
            unsigned long v;
            if (sscanf(line, "voluntary_ctxt_switches: %lu", &v) == 1)
                c->voluntary += v;
            else if (sscanf(line, "nonvoluntary_ctxt_switches: %lu", &v) == 1)
                c->involuntary += v;
        }
        fclose(t);
        c->threads++;
    }
    closedir(d);
    return 0;
}

long proc_rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* Sleeps until `until` (now_ns clock) in one call: the measured thread
 * wakes once. */
static void sleep_until_ns(uint64_t until)
{
    struct timespec ts = { (time_t)(until / 1000000000ull), (long)(until % 1000000000ull) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static unsigned long lease_of(unsigned long opt, const char **source)
{
    const char *env = getenv("DISTLOCK_LEASE_MS");
    if (opt) {
        *source = "bench-option";
        return opt;
    }
    if (env && atol(env) > 0) {
        *source = "DISTLOCK_LEASE_MS";
        return (unsigned long)atol(env);
    }
    *source = "library-default";
    return 30000UL;
}

static void set_lease(unsigned long opt)
{
    char buf[32];
    /* A step that loses holds would print a line for each: the counts are
     * in its RESULT line (DISTLOCK_LOG, when set, still decides). */
    setenv("DISTLOCK_LOG", "error", 0);
    if (opt) {
        snprintf(buf, sizeof buf, "%lu", opt);
        setenv("DISTLOCK_LEASE_MS", buf, 1);     /* read on first use in this process */
    }
}

/* ================================================================ W9L */
typedef struct w9l {
    unsigned long n, lease_opt, lease_ms;
    progress_t pr;
    double acquire_s, first10_us, last10_us, unlock_s;
    double tenths_us[10];     /* mean acquire time of each tenth, in order */
    double hold_s, redis_cpu_pct, idle_cpu_pct, wakeups_per_s, switches_per_s;
    unsigned long ticks, rts, renewed, lost, held, unlock_errs, threads;
    unsigned long renewals_late, behind;
    long rss0_kb, rss1_kb;
    long long redis_mem0, redis_mem1;
    double lat[];
} w9l_t;

static int w9l_worker(void *arg, int idx)
{
    (void)idx;
    w9l_t *w = arg;
    set_lease(w->lease_opt);
    unsigned long n = w->n;
    /* The program's own memory first (its objects and their names), so
     * that what the locks add is the library's. */
    dist_mutex_t *m = calloc(n, sizeof *m);
    char *names = malloc(n * 48);
    if (!m || !names)
        return 1;
    for (unsigned long i = 0; i < n; i++) {
        char sfx[24];
        snprintf(sfx, sizeof sfx, "%lu", i);
        lock_name(names + i * 48, 48, "W9L", sfx);
        if (dist_mutex_init(&m[i], names + i * 48, NULL))
            return 1;
    }
    memset(w->lat, 0, n * sizeof w->lat[0]);   /* (touched now, not counted below) */
    /* The library's fixed part (its state, connections, threads) too. */
    char warm[96];
    lock_name(warm, sizeof warm, "W9L", "warm");
    dist_mutex_t wm;
    if (dist_mutex_init(&wm, warm, NULL) || lock_err("W9L warm-up", dist_mutex_lock(&wm)) ||
        lock_err("W9L warm-up", dist_mutex_unlock(&wm)))
        return 1;
    redisContext *c = rc_connect("bench-ctl");
    if (!c)
        return 1;
    w->redis_mem0 = rc_info_ll(c, "memory", "used_memory");
    w->rss0_kb = proc_rss_kb(getpid());

    dl_stats_t sa;
    dl_stats_get(&sa);
    uint64_t t0 = now_ns();
    int failed = 0;
    for (unsigned long i = 0; i < n; i++) {
        uint64_t a = now_ns();
        if (lock_err("W9L lock", dist_mutex_lock(&m[i]))) {
            failed = 1;
            n = i;
            break;
        }
        w->lat[i] = (double)(now_ns() - a) / 1e3;
        __atomic_store_n(&w->pr.done, i + 1, __ATOMIC_RELAXED);
    }
    w->acquire_s = (double)(now_ns() - t0) / 1e9;
    if (failed)
        return 1;
    unsigned long tenth = n / 10 ? n / 10 : 1;
    w->first10_us = mean_of(w->lat, tenth);
    w->last10_us = mean_of(w->lat + (n - tenth), tenth);
    for (int k = 0; k < 10 && n >= 10; k++)
        w->tenths_us[k] = mean_of(w->lat + (size_t)k * (n / 10), n / 10);
    w->rss1_kb = proc_rss_kb(getpid());
    w->redis_mem1 = rc_info_ll(c, "memory", "used_memory");

    /* Hold for 3 lease periods; this thread sleeps once meanwhile. */
    dl_stats_t s0, s1;
    pcost_t c0, c1;
    dl_stats_get(&s0);
    double rcpu0 = rc_cpu_seconds(c);
    proc_cost(getpid(), &c0);
    uint64_t h0 = now_ns();
    sleep_until_ns(h0 + (uint64_t)w->lease_ms * 3 * 1000000ull);
    uint64_t h1 = now_ns();
    proc_cost(getpid(), &c1);
    double rcpu1 = rc_cpu_seconds(c);
    dl_stats_get(&s1);
    w->hold_s = (double)(h1 - h0) / 1e9;
    w->redis_cpu_pct = (rcpu1 - rcpu0) / w->hold_s * 100;
    w->idle_cpu_pct = (c1.cpu_s - c0.cpu_s) / w->hold_s * 100;
    w->wakeups_per_s = (double)(c1.voluntary - c0.voluntary) / w->hold_s;
    w->switches_per_s = (double)(c1.voluntary + c1.involuntary - c0.voluntary - c0.involuntary) /
                        w->hold_s;
    w->threads = c1.threads;
    w->ticks = s1.watchdog_ticks - s0.watchdog_ticks;
    w->rts = s1.watchdog_roundtrips - s0.watchdog_roundtrips;
    w->renewed = s1.renewed - s0.renewed;
    w->lost = s1.lost - sa.lost;             /* while taking them too */
    w->renewals_late = s1.renewals_late - s0.renewals_late;
    w->behind = s1.watchdog_behind - s0.watchdog_behind;

    /* Still held in Redis: every lock hash there with time left. */
    w->held = 0;
    for (unsigned long at = 0; at < n && !failed; at += 10000) {
        unsigned long end = at + 10000 < n ? at + 10000 : n;
        for (unsigned long i = at; i < end; i++) {
            char key[400];
            if (lock_key(key, sizeof key, names + i * 48, 0))
                snprintf(key, sizeof key, "?");      /* counts as not held */
            redisAppendCommand(c, "PTTL %s", key);
        }
        for (unsigned long i = at; i < end; i++) {
            redisReply *r = NULL;
            if (redisGetReply(c, (void **)&r) != REDIS_OK) {
                failed = 1;
                break;
            }
            if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
                w->held++;
            freeReplyObject(r);
        }
    }
    uint64_t u0 = now_ns();
    for (unsigned long i = 0; i < n; i++)
        if (dist_mutex_unlock(&m[i]))
            w->unlock_errs++;
    w->unlock_s = (double)(now_ns() - u0) / 1e9;
    dist_mutex_destroy(&wm);
    redisFree(c);
    return failed;
}

static int w9l_step(unsigned long n)
{
    size_t size = sizeof(w9l_t) + n * sizeof(double);
    w9l_t *w = shm_alloc(size);
    const char *src;
    w->n = n;
    w->lease_opt = g_opt.w9_lease_ms;
    w->lease_ms = lease_of(g_opt.w9_lease_ms, &src);
    w->pr.total = n;
    char label[48];
    snprintf(label, sizeof label, "W9L %lu locks", n);
    pid_t pid = spawn(w9l_worker, w, 0);
    int rc = wait_workers(&pid, 1, label, &w->pr);
    if (rc) {
        output_error("W9L", "worker failed at %lu locks", n);
    } else {
        double *lat = w->lat;
        sort_doubles(lat, n);
        result_t *r = result_new("distlock", "W9L");
        r->ops_per_s = w->acquire_s > 0 ? (double)n / w->acquire_s : 0;
        r->p50_us = pct_sorted(lat, n, 0.5);
        r->p99_us = pct_sorted(lat, n, 0.99);
        int all = w->held == n && w->lost == 0 && w->unlock_errs == 0;
        result_extra(r, "locks", "%lu", n);
        result_extra(r, "lease_ms", "%lu", w->lease_ms);
        result_extra(r, "lease_source", "%s", src);
        result_extra(r, "acquire_us_per_lock", "%.1f", w->acquire_s * 1e6 / (double)n);
        result_extra(r, "acquire_us_first10", "%.1f", w->first10_us);
        result_extra(r, "acquire_us_last10", "%.1f", w->last10_us);
        char tenths[160] = "";
        for (int k = 0, at = 0; k < 10 && n >= 10; k++)
            at += snprintf(tenths + at, sizeof tenths - (size_t)at, "%s%.0f", k ? "/" : "",
                           w->tenths_us[k]);
        result_extra(r, "acquire_us_tenths", "%s", n >= 10 ? tenths : "n/a");
        result_extra(r, "renew_round_trips_per_period", "%.2f",
                     w->ticks ? (double)w->rts / (double)w->ticks : 0);
        result_extra(r, "redis_cpu_pct", "%.1f", w->redis_cpu_pct);
        result_extra(r, "all_still_held", "%d", all);
        result_extra(r, "rss_bytes_per_lock", "%.0f",
                     (double)(w->rss1_kb - w->rss0_kb) * 1024 / (double)n);
        result_extra(r, "redis_bytes_per_lock", "%.0f",
                     (double)(w->redis_mem1 - w->redis_mem0) / (double)n);
        result_extra(r, "idle_cpu_pct", "%.2f", w->idle_cpu_pct);
        result_extra(r, "wakeups_per_s", "%.1f", w->wakeups_per_s);
        result_extra(r, "switches_per_s", "%.1f", w->switches_per_s);
        result_extra(r, "threads", "%lu", w->threads);
        result_extra(r, "hold_s", "%.1f", w->hold_s);
        result_extra(r, "renewal_ticks", "%lu", w->ticks);
        result_extra(r, "renew_round_trips", "%lu", w->rts);
        result_extra(r, "renewed", "%lu", w->renewed);
        result_extra(r, "renewals_late", "%lu", w->renewals_late);
        result_extra(r, "passes_behind", "%lu", w->behind);
        result_extra(r, "held_at_end", "%lu", w->held);
        result_extra(r, "lost", "%lu", w->lost);
        result_extra(r, "unlock_errors", "%lu", w->unlock_errs);
        result_extra(r, "acquire_s", "%.2f", w->acquire_s);
        result_extra(r, "unlock_us_per_lock", "%.1f", w->unlock_s * 1e6 / (double)n);
        result_extra(r, "ops", "acquisitions");
        result_emit(r);
    }
    shm_free(w, size);
    return rc;
}

int run_w9l(void)
{
    static const unsigned long dflt[] = { 100, 1000, 10000, 100000 };
    static const unsigned long quick[] = { 100, 1000 };
    const unsigned long *steps = g_opt.w9_nsteps ? g_opt.w9_steps : g_opt.quick ? quick : dflt;
    int nsteps = g_opt.w9_nsteps ? g_opt.w9_nsteps : g_opt.quick ? 2 : 4;
    int rc = 0;
    for (int i = 0; i < nsteps; i++)
        rc |= w9l_step(steps[i]);
    return rc;
}

/* ================================================================ W9W */
typedef struct w9w {
    unsigned long lease_opt, lease_ms;
    char name[96];
    gate_t gate;
    volatile int held, done;
    pid_t waiter;
    progress_t pr;
    int waiter_rc;
} w9w_t;

static int w9w_holder(void *arg, int idx)
{
    (void)idx;
    w9w_t *w = arg;
    set_lease(w->lease_opt);
    dist_mutex_t m;
    if (dist_mutex_init(&m, w->name, NULL) || lock_err("W9W hold", dist_mutex_lock(&m)))
        return 1;
    __atomic_store_n(&w->held, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE))
        sleep_us(20000);
    int rc = lock_err("W9W unlock", dist_mutex_unlock(&m)) != 0;
    dist_mutex_destroy(&m);
    return rc;
}

static int w9w_waiter(void *arg, int idx)
{
    (void)idx;
    w9w_t *w = arg;
    set_lease(w->lease_opt);
    dist_mutex_t m;
    if (dist_mutex_init(&m, w->name, NULL))
        return 1;
    gate_pass(&w->gate);
    int rc = dist_mutex_lock(&m);          /* blocks until the holder lets go */
    if (lock_err("W9W wait", rc))
        return 1;
    dist_mutex_unlock(&m);
    dist_mutex_destroy(&m);
    return 0;
}

int run_w9w(void)
{
    w9w_t *w = shm_alloc(sizeof *w);
    const char *src;
    w->lease_opt = g_opt.w9_lease_ms;
    w->lease_ms = lease_of(g_opt.w9_lease_ms, &src);
    lock_name(w->name, sizeof w->name, "W9W", NULL);
    gate_init(&w->gate, 1);
    pid_t pids[2];
    pids[0] = spawn(w9w_holder, w, 0);
    while (!__atomic_load_n(&w->held, __ATOMIC_ACQUIRE) && !any_exited(pids, 1))
        sleep_us(1000);
    pids[1] = spawn(w9w_waiter, w, 1);
    int rc = gate_wait_ready(&w->gate, &pids[1], 1);
    gate_open(&w->gate);
    double secs = (double)w->lease_ms * 3 / 1000;
    pcost_t c0, c1;
    if (!rc) {
        sleep_us(200000);                   /* it is in its wait */
        proc_cost(pids[1], &c0);
        uint64_t t0 = now_ns();
        w->pr.total = (unsigned long)secs;
        while (now_ns() - t0 < (uint64_t)(secs * 1e9) && !any_exited(pids, 2)) {
            progress_show("W9W waiting", &w->pr);
            sleep_us(100000);
            w->pr.done = (unsigned long)((now_ns() - t0) / 1000000000ull);
        }
        secs = (double)(now_ns() - t0) / 1e9;
        proc_cost(pids[1], &c1);
    }
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    rc = wait_workers(pids, 2, "W9W", &w->pr) || rc;
    if (rc) {
        output_error("W9W", "workers failed");
    } else {
        result_t *r = result_new("distlock", "W9W");
        result_extra(r, "lease_ms", "%lu", w->lease_ms);
        result_extra(r, "lease_source", "%s", src);
        result_extra(r, "wait_s", "%.1f", secs);
        result_extra(r, "idle_cpu_pct", "%.3f", (c1.cpu_s - c0.cpu_s) / secs * 100);
        result_extra(r, "wakeups_per_s", "%.2f", (double)(c1.voluntary - c0.voluntary) / secs);
        result_extra(r, "switches_per_s", "%.2f",
                     (double)(c1.voluntary + c1.involuntary - c0.voluntary - c0.involuntary) / secs);
        result_extra(r, "threads", "%lu", c1.threads);
        result_extra(r, "ops", "none");
        result_emit(r);
    }
    gate_destroy(&w->gate);
    shm_free(w, sizeof *w);
    return rc;
}
