/* SPDX-License-Identifier: BSD-3-Clause */
/* w_sem.c - S1 (a counting semaphore) and S1l (leased permits): N permits
 * (4; 2 with --quick), 4N processes contending, each ITER x {wait; hold
 * 200 us; post}.  Reports the permits' throughput (wait+post pairs per
 * second), the wait's latency, each process's share of the pairs done
 * when the first process finished (fairness: min/max share), and the
 * over-grants: times a process found more than N inside at once (counted
 * in memory the processes share; must be 0). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "distlock.h"
#include "status.h"

#define S1_MAX_PROCS 16
#define S1_HOLD_US 200

typedef struct s1 {
    int leased, procs;
    unsigned permits;
    unsigned long n;                  /* pairs per process */
    char name[128];
    gate_t gate;
    progress_t pr;
    int inside, max_inside;
    unsigned long overgrants;
    volatile unsigned long count[S1_MAX_PROCS];
    volatile int first_done;
    unsigned long snap[S1_MAX_PROCS];
    uint64_t t_end[S1_MAX_PROCS];
    unsigned long grants[S1_MAX_PROCS], fallback[S1_MAX_PROCS];
    double lat[];                     /* the waits, procs x n */
} s1_t;

static int s1_worker(void *arg, int idx)
{
    s1_t *w = arg;
    dist_sem_t s;
    if (lock_err("S1 init", dist_sem_init(&s, w->name, w->permits,
                                         w->leased ? DIST_SEM_LEASED : 0)))
        return 1;
    int v;
    if (lock_err("S1 getvalue", dist_sem_getvalue(&s, &v)))   /* connected before the gate */
        return 1;
    dl_stats_t s0, s1;
    dl_stats_get(&s0);
    gate_pass(&w->gate);
    double *lat = w->lat + (size_t)idx * w->n;
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t = now_ns();
        if (lock_err("S1 wait", dist_sem_wait(&s)))
            return 1;
        lat[i] = (double)(now_ns() - t) / 1e3;
        int in = __atomic_add_fetch(&w->inside, 1, __ATOMIC_SEQ_CST);
        if (in > (int)w->permits)
            __atomic_add_fetch(&w->overgrants, 1, __ATOMIC_SEQ_CST);
        int m = __atomic_load_n(&w->max_inside, __ATOMIC_SEQ_CST);
        while (in > m && !__atomic_compare_exchange_n(&w->max_inside, &m, in, 0, __ATOMIC_SEQ_CST,
                                                      __ATOMIC_SEQ_CST))
            ;
        sleep_us(S1_HOLD_US);
        __atomic_sub_fetch(&w->inside, 1, __ATOMIC_SEQ_CST);
        if (lock_err("S1 post", dist_sem_post(&s)))
            return 1;
        __atomic_store_n(&w->count[idx], i + 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&w->pr.done, 1, __ATOMIC_RELAXED);
    }
    w->t_end[idx] = now_ns();
    snap_first(&w->first_done, w->snap, w->count, w->procs);
    dl_stats_get(&s1);
    w->grants[idx] = (unsigned long)(s1.grants - s0.grants);
    w->fallback[idx] = (unsigned long)(s1.fallback_checks - s0.fallback_checks);
    dist_sem_destroy(&s);
    return 0;
}

int run_s1(int leased)
{
    const char *wl = leased ? "S1l" : "S1";
    unsigned permits = g_opt.quick ? 2 : 4;
    int procs = (int)permits * 4;
    unsigned long n = g_opt.quick ? 20 : 150;
    size_t total = (size_t)procs * n;
    size_t size = sizeof(s1_t) + total * sizeof(double);
    s1_t *w = shm_alloc(size);
    w->leased = leased;
    w->procs = procs;
    w->permits = permits;
    w->n = n;
    w->pr.total = total;
    lock_name(w->name, sizeof w->name, wl, "distlock");
    gate_init(&w->gate, procs);
    pid_t pids[S1_MAX_PROCS];
    long long calls0 = 0;
    uint64_t t0;
    int rc = spawn_gated(s1_worker, w, pids, procs, &w->gate, NULL, &calls0, &t0);
    rc = wait_workers(pids, procs, wl, &w->pr) || rc;
    if (rc) {
        output_error(wl, "workers failed");
    } else {
        uint64_t tend = 0;
        unsigned long grants = 0, fallback = 0;
        for (int i = 0; i < procs; i++) {
            if (w->t_end[i] > tend)
                tend = w->t_end[i];
            grants += w->grants[i];
            fallback += w->fallback[i];
        }
        result_t *r = result_timed("distlock", wl, w->lat, total, tend - t0);
        double mn, mx;
        shares_of(w->snap, procs, &mn, &mx);
        result_extra(r, "permits", "%u", permits);
        result_extra(r, "procs", "%d", procs);
        result_extra(r, "iters", "%lu", n);
        result_extra(r, "hold_us", "%d", S1_HOLD_US);
        result_extra(r, "overgrants", "%lu", w->overgrants);
        result_extra(r, "max_inside", "%d", w->max_inside);
        result_extra(r, "min_share", "%.3f", mn);
        result_extra(r, "max_share", "%.3f", mx);
        result_extra(r, "fairness", "%.3f", mx > 0 ? mn / mx : 0);
        /* the ceiling: every permit busy all the time, only the hold */
        result_extra(r, "hold_ceiling_ops_per_s", "%.0f", permits * 1e6 / S1_HOLD_US);
        /* waits woken by a push, and by a re-ask (a lost push) */
        result_extra(r, "pushed_wakeups", "%lu", grants);
        result_extra(r, "reask_wakeups", "%lu", fallback);
        result_emit(r);
        if (w->overgrants)
            output_error(wl, "%lu over-grants: more than %u inside at once", w->overgrants,
                         permits);
    }
    gate_destroy(&w->gate);
    shm_free(w, size);
    return rc ? -1 : 0;
}
