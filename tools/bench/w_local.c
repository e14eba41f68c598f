/* SPDX-License-Identifier: BSD-3-Clause */
/* w_local.c - W4 (8 threads of one process on one lock: local handoffs),
 * with a plain pthread_mutex_t in the same loop beside it (peer=pthread),
 * and W4b, the W2 shape with 4 threads in each of the 4 processes, which
 * shows how long other processes wait while a process passes the lock
 * between its own threads. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "distlock.h"
#include "status.h"

/* ================================================================ W4 */
#define W4_THREADS 8
typedef struct w4 {
    int pthread;                     /* the peer: a plain pthread_mutex_t */
    unsigned long n;                 /* per thread */
    char name[128];
    progress_t pr;
    long long redis_calls;
    unsigned long sent, roundtrips, handoffs, renewed;
    long x;                          /* the process variable, protected by the lock */
    volatile int first_done;
    unsigned long done_at_first;     /* operations completed when a thread first finished */
    uint64_t t_start, t_end[W4_THREADS];
    double lat[];
} w4_t;

typedef struct w4_thread {
    w4_t *w;
    dist_mutex_t *m;
    pthread_mutex_t *pm;             /* the peer's, instead of m */
    pthread_barrier_t *bar;
    int idx;
    int failed;
} w4_thread_t;

static void *w4_thread(void *arg)
{
    w4_thread_t *t = arg;
    w4_t *w = t->w;
    double *lat = w->lat + (size_t)t->idx * w->n;
    pthread_barrier_wait(t->bar);
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t0 = now_ns();
        if (t->pm) {
            pthread_mutex_lock(t->pm);
            w->x++;
            pthread_mutex_unlock(t->pm);
        } else {
            if (lock_err("W4 lock", dist_mutex_lock(t->m))) {
                t->failed = 1;
                return NULL;
            }
            w->x++;
            if (lock_err("W4 unlock", dist_mutex_unlock(t->m))) {
                t->failed = 1;
                return NULL;
            }
        }
        lat[i] = (double)(now_ns() - t0) / 1e3;
        __atomic_add_fetch(&w->pr.done, 1, __ATOMIC_RELAXED);
    }
    w->t_end[t->idx] = now_ns();
    int zero = 0;
    if (__atomic_compare_exchange_n(&w->first_done, &zero, 1, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
        w->done_at_first = __atomic_load_n(&w->pr.done, __ATOMIC_RELAXED);
    return NULL;
}

static int w4_worker(void *arg, int idx)
{
    w4_t *w = arg;
    dist_mutex_t m;
    pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
    if (!w->pthread && mutex_warm(&m, w->name))
        return 1;
    redisContext *c = rc_connect("bench-ctl");
    if (!c)
        return 1;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, W4_THREADS + 1);
    pthread_t th[W4_THREADS];
    w4_thread_t ta[W4_THREADS];
    for (int i = 0; i < W4_THREADS; i++) {
        ta[i] = (w4_thread_t){ w, &m, w->pthread ? &pm : NULL, &bar, i, 0 };
        pthread_create(&th[i], NULL, w4_thread, &ta[i]);
    }
    dl_stats_t s0, s1;
    dl_stats_get(&s0);
    long long calls0 = rc_cmd_calls(c);
    w->t_start = now_ns();
    pthread_barrier_wait(&bar);
    int failed = 0;
    for (int i = 0; i < W4_THREADS; i++) {
        pthread_join(th[i], NULL);
        failed |= ta[i].failed;
    }
    w->redis_calls = rc_cmd_calls(c) - calls0;
    dl_stats_get(&s1);
    w->sent = s1.commands - s0.commands;
    w->roundtrips = s1.roundtrips - s0.roundtrips;
    w->handoffs = s1.local_handoffs - s0.local_handoffs;
    w->renewed = s1.renewed - s0.renewed;
    redisFree(c);
    if (!w->pthread)
        dist_mutex_destroy(&m);
    return failed;
}

/* The same 8 threads and loop with a plain pthread_mutex_t (the default
 * type): what the process's own locking costs without the library. */
static int run_w4_pthread(void)
{
    unsigned long n = g_opt.quick ? 1000 : 20000;
    size_t total = W4_THREADS * n;
    size_t size = sizeof(w4_t) + total * sizeof(double);
    w4_t *w = shm_alloc(size);
    w->pthread = 1;
    w->n = n;
    w->pr.total = total;
    lock_name(w->name, sizeof w->name, "W4", "pthread");
    pid_t pid = spawn(w4_worker, w, 0);
    int rc = wait_workers(&pid, 1, "W4 pthread", &w->pr);
    if (rc) {
        output_error("W4", "pthread worker failed");
    } else {
        uint64_t tend = 0;
        for (int i = 0; i < W4_THREADS; i++)
            if (w->t_end[i] > tend)
                tend = w->t_end[i];
        result_t *r = result_timed("pthread", "W4", w->lat, total, tend - w->t_start);
        result_extra(r, "lost_updates", "%ld", (long)total - w->x);
        result_extra(r, "threads", "%d", W4_THREADS);
        result_extra(r, "iters", "%lu", n);
        result_extra(r, "ops_after_first_finished", "%lu", total - w->done_at_first);
        result_extra(r, "s_total", "%.3f", (double)(tend - w->t_start) / 1e9);
        result_emit(r);
    }
    shm_free(w, size);
    return rc;
}

int run_w4(void)
{
    unsigned long n = g_opt.quick ? 1000 : 20000;
    size_t total = W4_THREADS * n;
    size_t size = sizeof(w4_t) + total * sizeof(double);
    w4_t *w = shm_alloc(size);
    w->n = n;
    w->pr.total = total;
    lock_name(w->name, sizeof w->name, "W4", NULL);
    pid_t pid = spawn(w4_worker, w, 0);
    int rc = wait_workers(&pid, 1, "W4 distlock", &w->pr);
    if (rc) {
        output_error("W4", "worker failed");
    } else {
        uint64_t tend = 0, tfirst = UINT64_MAX;
        for (int i = 0; i < W4_THREADS; i++) {
            if (w->t_end[i] > tend)
                tend = w->t_end[i];
            if (w->t_end[i] < tfirst)
                tfirst = w->t_end[i];
        }
        result_t *r = result_timed("distlock", "W4", w->lat, total, tend - w->t_start);
        result_extra(r, "redis_cmds_per_op", "%.4f", (double)w->redis_calls / (double)total);
        result_extra(r, "sent_cmds_per_op", "%.4f", (double)w->sent / (double)total);
        result_extra(r, "round_trips_per_op", "%.4f", (double)w->roundtrips / (double)total);
        result_extra(r, "lost_updates", "%ld", (long)total - w->x);
        result_extra(r, "threads", "%d", W4_THREADS);
        result_extra(r, "iters", "%lu", n);
        result_extra(r, "local_handoffs", "%lu", w->handoffs);
        /* How unevenly the threads progressed: operations left, and time
         * taken, after the first thread had finished its loop. */
        result_extra(r, "ops_after_first_finished", "%lu", total - w->done_at_first);
        result_extra(r, "s_after_first_finished", "%.2f", (double)(tend - tfirst) / 1e9);
        result_extra(r, "s_total", "%.2f", (double)(tend - w->t_start) / 1e9);
        result_t *w1 = result_find("distlock", "W1");
        if (w1 && !w1->skipped && w1->ops_per_s > 0)
            result_extra(r, "over_w1", "%.1f", r->ops_per_s / w1->ops_per_s);
        result_emit(r);
    }
    shm_free(w, size);
    return run_w4_pthread() || rc;
}

/* ================================================================ W4b */
#define W4B_PROCS 4
#define W4B_THREADS 4
typedef struct w4b {
    unsigned long n;                      /* per thread */
    char name[128], ctr[160];
    gate_t gate;
    progress_t pr;
    volatile unsigned long count[W4B_PROCS];
    volatile int first_done;
    unsigned long snap[W4B_PROCS];
    unsigned long handoffs[W4B_PROCS], grants[W4B_PROCS];
    uint64_t t_end[W4B_PROCS];
    unsigned long seqn;                   /* hold order, written inside the lock */
    unsigned char *seq;
    double *lat, *wait;
} w4b_t;

typedef struct w4b_thread {
    w4b_t *w;
    dist_mutex_t *m;
    pthread_barrier_t *bar;
    int proc, idx, failed;
} w4b_thread_t;

static void *w4b_thread(void *arg)
{
    w4b_thread_t *t = arg;
    w4b_t *w = t->w;
    redisContext *c = rc_connect("bench-plain");
    if (!c) {
        t->failed = 1;
        pthread_barrier_wait(t->bar);
        return NULL;
    }
    size_t base = ((size_t)t->proc * W4B_THREADS + (size_t)t->idx) * w->n;
    pthread_barrier_wait(t->bar);
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t0 = now_ns();
        int rc = dist_mutex_lock(t->m);
        uint64_t t1 = now_ns();
        if (lock_err("W4b lock", rc)) {
            t->failed = 1;
            break;
        }
        w->seq[w->seqn++] = (unsigned char)t->proc;
        rc_ctr_incr(c, w->ctr);     /* a failure shows as lost updates */
        if (lock_err("W4b unlock", dist_mutex_unlock(t->m))) {
            t->failed = 1;
            break;
        }
        w->lat[base + i] = (double)(now_ns() - t0) / 1e3;
        w->wait[base + i] = (double)(t1 - t0) / 1e3;
        __atomic_add_fetch(&w->count[t->proc], 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&w->pr.done, 1, __ATOMIC_RELAXED);
    }
    redisFree(c);
    return NULL;
}

static int w4b_worker(void *arg, int proc)
{
    w4b_t *w = arg;
    dist_mutex_t m;
    if (mutex_warm(&m, w->name))
        return 1;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, W4B_THREADS + 1);
    pthread_t th[W4B_THREADS];
    w4b_thread_t ta[W4B_THREADS];
    for (int i = 0; i < W4B_THREADS; i++) {
        ta[i] = (w4b_thread_t){ w, &m, &bar, proc, i, 0 };
        pthread_create(&th[i], NULL, w4b_thread, &ta[i]);
    }
    dl_stats_t s0, s1;
    dl_stats_get(&s0);
    gate_pass(&w->gate);
    pthread_barrier_wait(&bar);
    int failed = 0;
    for (int i = 0; i < W4B_THREADS; i++) {
        pthread_join(th[i], NULL);
        failed |= ta[i].failed;
    }
    w->t_end[proc] = now_ns();
    snap_first(&w->first_done, w->snap, w->count, W4B_PROCS);
    dl_stats_get(&s1);
    w->handoffs[proc] = s1.local_handoffs - s0.local_handoffs;
    w->grants[proc] = s1.grants - s0.grants;
    dist_mutex_destroy(&m);
    return failed;
}

int run_w4b(void)
{
    unsigned long n = g_opt.quick ? 50 : 500;
    size_t total = (size_t)W4B_PROCS * W4B_THREADS * n;
    size_t size = sizeof(w4b_t) + total * (2 * sizeof(double) + 1) + 64;
    w4b_t *w = shm_alloc(size);
    w->lat = (double *)(w + 1);
    w->wait = w->lat + total;
    w->seq = (unsigned char *)(w->wait + total);
    w->n = n;
    w->pr.total = total;
    lock_name(w->name, sizeof w->name, "W4b", NULL);
    snprintf(w->ctr, sizeof w->ctr, "%s:ctr", w->name);
    gate_init(&w->gate, W4B_PROCS);
    redisContext *c = rc_ctl_zeroed(w->ctr);
    if (!c) {
        shm_free(w, size);
        return -1;
    }
    pid_t pids[W4B_PROCS];
    uint64_t t0;
    int rc = spawn_gated(w4b_worker, w, pids, W4B_PROCS, &w->gate, NULL, NULL, &t0);
    rc = wait_workers(pids, W4B_PROCS, "W4b distlock", &w->pr) || rc;
    if (rc) {
        output_error("W4b", "workers failed");
    } else {
        long long ctr = rc_ctr_get(c, w->ctr, -1);
        uint64_t tend = 0;
        unsigned long handoffs = 0, grants = 0;
        for (int i = 0; i < W4B_PROCS; i++) {
            if (w->t_end[i] > tend)
                tend = w->t_end[i];
            handoffs += w->handoffs[i];
            grants += w->grants[i];
        }
        /* Longest run of consecutive holds by one process, counted only
         * while every process still had work (before the first finished). */
        unsigned long maxrun = 0, run = 0, lim = w->snap[0] + w->snap[1] + w->snap[2] + w->snap[3];
        if (lim > w->seqn)
            lim = w->seqn;
        for (unsigned long i = 0; i < lim; i++) {
            run = i && w->seq[i] == w->seq[i - 1] ? run + 1 : 1;
            if (run > maxrun)
                maxrun = run;
        }
        sort_doubles(w->wait, total);
        result_t *r = result_timed("distlock", "W4b", w->lat, total, tend - t0);
        result_shares(r, (long long)total - ctr, w->snap, W4B_PROCS);
        result_extra(r, "max_wait_us", "%.0f", w->wait[total - 1]);
        result_extra(r, "wait_p99_us", "%.0f", pct_sorted(w->wait, total, 0.99));
        result_extra(r, "max_run_one_process", "%lu", maxrun);
        result_extra(r, "procs", "%d", W4B_PROCS);
        result_extra(r, "threads_per_proc", "%d", W4B_THREADS);
        result_extra(r, "iters_per_thread", "%lu", n);
        result_extra(r, "local_handoffs", "%lu", handoffs);
        result_extra(r, "grants", "%lu", grants);
        result_emit(r);
    }
    redisFree(c);
    gate_destroy(&w->gate);
    shm_free(w, size);
    return rc ? -1 : 0;
}
