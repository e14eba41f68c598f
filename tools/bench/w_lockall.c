/* SPDX-License-Identifier: BSD-3-Clause */
/* w_lockall.c - LA2 and LA8: one process, uncontended, n x {lockall of k
 * locks; unlock each}, the k names sharing a hash tag (one cluster slot),
 * so that one script (lua/acquire_all.lua) can take them all.  Reported:
 * round trips per lock-all call (the library's own count, around the call
 * only; the target is 1) and per whole op (the unlocks included), the
 * latency of the lock-all call, and, in the same run, the same k locks
 * taken one by one with dist_mutex_lock, for comparison. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "distlock.h"
#include "status.h"

#define LA_MAX 8

typedef struct wla {
    int k;
    unsigned long warm, n;
    char names[LA_MAX][160];
    progress_t pr;
    unsigned long rt_call, rt_op, rt_seq;   /* round trips: lock-all calls, whole ops,
                                               the one-by-one locks */
    uint64_t t_start, t_end;
    double lat[];                           /* lock-all calls, then (lat[n..2n)) the
                                               one-by-one locks */
} wla_t;

static unsigned long rt_now(void)
{
    dl_stats_t s;
    dl_stats_get(&s);
    return s.roundtrips;
}

static int unlock_all(dist_mutex_t *m, int k)
{
    for (int i = 0; i < k; i++)
        if (lock_err("dist_mutex_unlock", dist_mutex_unlock(&m[i])))
            return -1;
    return 0;
}

static int la_worker(void *arg, int idx)
{
    (void)idx;
    wla_t *w = arg;
    dist_mutex_t m[LA_MAX];
    dist_mutex_t *ms[LA_MAX];
    for (int i = 0; i < w->k; i++) {
        if (mutex_warm(&m[i], w->names[i]))
            return 1;
        ms[w->k - 1 - i] = &m[i];         /* (any order: the library sorts) */
    }
    for (unsigned long i = 0; i < w->warm; i++)
        if (lock_err("dist_mutex_lockall", dist_mutex_lockall(ms, (size_t)w->k)) ||
            unlock_all(m, w->k))
            return 1;
    unsigned long rt0 = rt_now();
    w->t_start = now_ns();
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t = now_ns();
        unsigned long r = rt_now();
        if (lock_err("dist_mutex_lockall", dist_mutex_lockall(ms, (size_t)w->k)))
            return 1;
        w->rt_call += rt_now() - r;
        w->lat[i] = (double)(now_ns() - t) / 1e3;
        if (unlock_all(m, w->k))
            return 1;
        w->pr.done = i + 1;
    }
    w->t_end = now_ns();
    w->rt_op = rt_now() - rt0;
    /* The same locks one by one (the canonical order a caller would need
     * to keep by hand). */
    double *seq = w->lat + w->n;
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t = now_ns();
        unsigned long r = rt_now();
        for (int j = 0; j < w->k; j++)
            if (lock_err("dist_mutex_lock", dist_mutex_lock(&m[j])))
                return 1;
        w->rt_seq += rt_now() - r;
        seq[i] = (double)(now_ns() - t) / 1e3;
        if (unlock_all(m, w->k))
            return 1;
    }
    for (int i = 0; i < w->k; i++)
        dist_mutex_destroy(&m[i]);
    return 0;
}

int run_lockall(int k)
{
    char wl[8];
    snprintf(wl, sizeof wl, "LA%d", k);
    unsigned long n = g_opt.quick ? 300 : 5000;
    size_t size = sizeof(wla_t) + 2 * n * sizeof(double);
    wla_t *w = shm_alloc(size);
    w->k = k;
    w->n = n;
    w->warm = g_opt.quick ? 20 : 200;
    w->pr.total = n;
    /* "<base>}a", "<base>}b", ...: the lock's key is <prefix>{<base>}a}, its
     * hash tag <base> for every one of them. */
    char base[128];
    lock_name(base, sizeof base, wl, NULL);
    for (int i = 0; i < k; i++)
        snprintf(w->names[i], sizeof w->names[i], "%s}%c", base, 'a' + i);
    pid_t pid = spawn(la_worker, w, 0);
    int rc = wait_workers(&pid, 1, wl, &w->pr);
    if (rc) {
        output_error(wl, "worker failed");
    } else {
        double *seq = w->lat + n;
        double seq_p50 = pct_sorted(seq, n, 0.5);
        result_t *r = result_timed("distlock", wl, w->lat, n, w->t_end - w->t_start);
        result_extra(r, "locks", "%d", k);
        result_extra(r, "lockall_round_trips_per_call", "%.2f", (double)w->rt_call / (double)n);
        result_extra(r, "round_trips_per_op", "%.2f", (double)w->rt_op / (double)n);
        result_extra(r, "one_by_one_round_trips", "%.2f", (double)w->rt_seq / (double)n);
        result_extra(r, "one_by_one_p50_us", "%.1f", seq_p50);
        result_extra(r, "latency", "lockall-call");
        result_extra(r, "ops", "%lu", n);
        result_emit(r);
    }
    shm_free(w, size);
    return rc;
}
