/* SPDX-License-Identifier: BSD-3-Clause */
/* w_basic.c - W1 (uncontended), W2 (contended counter) and its serial
 * ceiling, W3 and W3b (handoff latency, two shapes of the holder), each for
 * distlock and for the naive lock, exactly as WORKLOADS.md defines them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"
#include "distlock.h"
#include "status.h"

/* ------------------------------------------------ a lock of either peer */
typedef struct plock {
    int peer;
    dist_mutex_t m;
    naive_t n;
} plock_t;

static int pl_init(plock_t *p, int peer, const char *name)
{
    p->peer = peer;
    if (peer == PEER_NAIVE)
        return naive_init(&p->n, name);
    return mutex_warm(&p->m, name);
}

static int pl_lock(plock_t *p)
{
    if (p->peer == PEER_NAIVE)
        return naive_lock(&p->n);
    return lock_err("dist_mutex_lock", dist_mutex_lock(&p->m)) ? -1 : 0;
}

static int pl_unlock(plock_t *p)
{
    if (p->peer == PEER_NAIVE)
        return naive_unlock(&p->n);
    return lock_err("dist_mutex_unlock", dist_mutex_unlock(&p->m)) ? -1 : 0;
}

static unsigned long pl_sent(const plock_t *p)
{
    if (p->peer == PEER_NAIVE)
        return p->n.commands;
    dl_stats_t s;
    dl_stats_get(&s);
    return s.commands;
}

static void pl_fini(plock_t *p)
{
    if (p->peer == PEER_NAIVE)
        naive_fini(&p->n);
    else
        dist_mutex_destroy(&p->m);
}

/* What a worker reports back (shared memory). */
typedef struct wstats {
    unsigned long sent, roundtrips, grants, local_handoffs, fallback_checks, retries;
    unsigned long lingers, linger_ends;
    long long redis_calls;
    uint64_t t_start, t_end;
} wstats_t;

static void ws_begin(wstats_t *w, const plock_t *p, dl_stats_t *s0)
{
    dl_stats_get(s0);
    w->sent = pl_sent(p);
    w->retries = p->peer == PEER_NAIVE ? p->n.retries : 0;
}

static void ws_end(wstats_t *w, const plock_t *p, const dl_stats_t *s0)
{
    dl_stats_t s;
    dl_stats_get(&s);
    w->sent = pl_sent(p) - w->sent;
    if (p->peer == PEER_NAIVE) {
        w->retries = p->n.retries - w->retries;
    } else {
        w->roundtrips = s.roundtrips - s0->roundtrips;
        w->grants = s.grants - s0->grants;
        w->local_handoffs = s.local_handoffs - s0->local_handoffs;
        w->fallback_checks = s.fallback_checks - s0->fallback_checks;
        w->lingers = s.lingers - s0->lingers;
        w->linger_ends = s.linger_ends - s0->linger_ends;
    }
}

/* ================================================================ W1 */
typedef struct w1 {
    int peer;
    unsigned long warm, n;
    char name[128];
    progress_t pr;
    wstats_t ws;
    double client_cpu_s, redis_cpu_s;
    double lat[];
} w1_t;

static double cpu_self(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int w1_worker(void *arg, int idx)
{
    w1_t *w = arg;
    plock_t p;
    if (pl_init(&p, w->peer, w->name))
        return 1;
    redisContext *c = rc_connect("bench-ctl");
    if (!c)
        return 1;
    for (unsigned long i = 0; i < w->warm; i++)
        if (pl_lock(&p) || pl_unlock(&p))
            return 1;
    dl_stats_t s0;
    long long calls0 = rc_cmd_calls(c);
    double rcpu0 = rc_cpu_seconds(c);
    ws_begin(&w->ws, &p, &s0);
    double ccpu0 = cpu_self();
    w->ws.t_start = now_ns();
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t = now_ns();
        if (pl_lock(&p) || pl_unlock(&p))
            return 1;
        w->lat[i] = (double)(now_ns() - t) / 1e3;
        w->pr.done = i + 1;
    }
    w->ws.t_end = now_ns();
    w->client_cpu_s = cpu_self() - ccpu0;
    ws_end(&w->ws, &p, &s0);
    w->ws.redis_calls = rc_cmd_calls(c) - calls0;
    w->redis_cpu_s = rc_cpu_seconds(c) - rcpu0;
    redisFree(c);
    pl_fini(&p);
    return 0;
}

int run_w1(int peer)
{
    unsigned long n = g_opt.quick ? 1000 : 20000;
    size_t size = sizeof(w1_t) + n * sizeof(double);
    w1_t *w = shm_alloc(size);
    w->peer = peer;
    w->warm = g_opt.quick ? 100 : 1000;
    w->n = n;
    w->pr.total = n;
    lock_name(w->name, sizeof w->name, "W1", peer_name(peer));
    char label[32];
    snprintf(label, sizeof label, "W1 %s", peer_name(peer));
    pid_t pid = spawn(w1_worker, w, 0);
    int rc = wait_workers(&pid, 1, label, &w->pr);
    if (rc) {
        output_error("W1", "%s worker failed", peer_name(peer));
    } else {
        result_t *r = result_timed(peer_name(peer), "W1", w->lat, n, w->ws.t_end - w->ws.t_start);
        result_extra(r, "redis_cmds_per_op", "%.2f", (double)w->ws.redis_calls / (double)n);
        result_extra(r, "sent_cmds_per_op", "%.2f", (double)w->ws.sent / (double)n);
        if (peer == PEER_DISTLOCK)
            result_extra(r, "round_trips_per_op", "%.2f", (double)w->ws.roundtrips / (double)n);
        /* where a pair's time goes: CPU of the client process (all its
         * threads, user + system) and of redis-server, per pair */
        result_extra(r, "client_cpu_us_per_op", "%.1f", w->client_cpu_s * 1e6 / (double)n);
        result_extra(r, "redis_cpu_us_per_op", "%.1f", w->redis_cpu_s * 1e6 / (double)n);
        result_extra(r, "pairs", "%lu", n);
        result_extra(r, "warmup", "%lu", w->warm);
        result_extra(r, "mean_us", "%.1f", mean_of(w->lat, n));
        result_emit(r);
    }
    shm_free(w, size);
    return rc;
}

/* ================================================================ W2 */
#define W2_PROCS 4
typedef struct w2 {
    int peer;
    unsigned long n;
    char name[128], ctr[160];
    gate_t gate;
    progress_t pr;
    volatile unsigned long count[W2_PROCS];
    volatile int first_done;
    unsigned long snap[W2_PROCS];
    wstats_t ws[W2_PROCS];
    double lat[];
} w2_t;

static int w2_worker(void *arg, int idx)
{
    w2_t *w = arg;
    plock_t p;
    if (pl_init(&p, w->peer, w->name))
        return 1;
    redisContext *c = rc_connect("bench-plain");      /* the counter's own connection */
    if (!c)
        return 1;
    dl_stats_t s0;
    ws_begin(&w->ws[idx], &p, &s0);
    gate_pass(&w->gate);
    w->ws[idx].t_start = now_ns();
    double *lat = w->lat + (size_t)idx * w->n;
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t = now_ns();
        if (pl_lock(&p))
            return 1;
        if (rc_ctr_incr(c, w->ctr))
            return 1;
        if (pl_unlock(&p))
            return 1;
        lat[i] = (double)(now_ns() - t) / 1e3;
        __atomic_store_n(&w->count[idx], i + 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&w->pr.done, 1, __ATOMIC_RELAXED);
    }
    w->ws[idx].t_end = now_ns();
    snap_first(&w->first_done, w->snap, w->count, W2_PROCS);
    ws_end(&w->ws[idx], &p, &s0);
    redisFree(c);
    pl_fini(&p);
    return 0;
}

int run_w2(int peer)
{
    unsigned long n = g_opt.quick ? 200 : 2000;
    size_t total = W2_PROCS * n;
    size_t size = sizeof(w2_t) + total * sizeof(double);
    w2_t *w = shm_alloc(size);
    w->peer = peer;
    w->n = n;
    w->pr.total = total;
    lock_name(w->name, sizeof w->name, "W2", peer_name(peer));
    snprintf(w->ctr, sizeof w->ctr, "%s:ctr", w->name);
    gate_init(&w->gate, W2_PROCS);
    char label[32];
    snprintf(label, sizeof label, "W2 %s", peer_name(peer));

    redisContext *c = rc_ctl_zeroed(w->ctr);
    if (!c) {
        shm_free(w, size);
        return -1;
    }
    pid_t pids[W2_PROCS];
    long long calls0;
    uint64_t t0;
    int rc = spawn_gated(w2_worker, w, pids, W2_PROCS, &w->gate, c, &calls0, &t0);
    rc = wait_workers(pids, W2_PROCS, label, &w->pr) || rc;
    if (rc) {
        output_error("W2", "%s workers failed", peer_name(peer));
    } else {
        long long calls = rc_cmd_calls(c) - calls0;
        long long ctr = rc_ctr_get(c, w->ctr, -1);
        uint64_t tend = 0;
        unsigned long sent = 0, grants = 0, handoffs = 0, fallback = 0, retries = 0;
        unsigned long lingers = 0, linger_ends = 0;
        for (int i = 0; i < W2_PROCS; i++) {
            if (w->ws[i].t_end > tend)
                tend = w->ws[i].t_end;
            sent += w->ws[i].sent;
            grants += w->ws[i].grants;
            handoffs += w->ws[i].local_handoffs;
            fallback += w->ws[i].fallback_checks;
            lingers += w->ws[i].lingers;
            linger_ends += w->ws[i].linger_ends;
            retries += w->ws[i].retries;
        }
        result_t *r = result_timed(peer_name(peer), "W2", w->lat, total, tend - t0);
        result_shares(r, (long long)total - ctr, w->snap, W2_PROCS);
        result_extra(r, "procs", "%d", W2_PROCS);
        result_extra(r, "iters", "%lu", n);
        const result_t *ceil = result_find("floor", "W2serial");
        if (ceil && !ceil->skipped && ceil->ops_per_s > 0)
            result_extra(r, "over_serial", "%.3f", r->ops_per_s / ceil->ops_per_s);
        /* lock + counter (GET/SET) commands, every command Redis ran */
        result_extra(r, "redis_cmds_per_op", "%.2f", (double)calls / (double)total);
        result_extra(r, "lock_sent_cmds_per_op", "%.2f", (double)sent / (double)total);
        if (peer == PEER_DISTLOCK) {
            result_extra(r, "grants", "%lu", grants);
            result_extra(r, "fallback_checks", "%lu", fallback);
            result_extra(r, "local_handoffs", "%lu", handoffs);
            /* unlocks that kept the hold for the loop's next lock call, and
             * those the watchdog ended (no lock call came) */
            result_extra(r, "lingers", "%lu", lingers);
            result_extra(r, "linger_ends", "%lu", linger_ends);
        } else {
            result_extra(r, "retries_per_op", "%.2f", (double)retries / (double)total);
        }
        result_emit(r);
    }
    redisFree(c);
    gate_destroy(&w->gate);
    shm_free(w, size);
    return rc ? -1 : 0;
}

/* The serial ceiling of W2 (WORKLOADS.md): one client doing W2's GET ctr;
 * SET ctr v+1 back to back on one connection, no lock, as many times as
 * W2's 4 processes together.  No lock can let W2 go faster: its updates
 * are serial, each costing the same two round trips. */
typedef struct w2s {
    unsigned long n;
    char ctr[160];
    progress_t pr;
    uint64_t t_start, t_end;
    double lat[];
} w2s_t;

static int w2s_worker(void *arg, int idx)
{
    (void)idx;
    w2s_t *w = arg;
    redisContext *c = rc_connect("bench-plain");
    if (!c)
        return 1;
    w->t_start = now_ns();
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t = now_ns();
        if (rc_ctr_incr(c, w->ctr))
            return 1;
        w->lat[i] = (double)(now_ns() - t) / 1e3;
        w->pr.done = i + 1;
    }
    w->t_end = now_ns();
    redisFree(c);
    return 0;
}

int run_w2_serial(void)
{
    unsigned long n = W2_PROCS * (g_opt.quick ? 200ul : 2000ul);
    size_t size = sizeof(w2s_t) + n * sizeof(double);
    w2s_t *w = shm_alloc(size);
    w->n = n;
    w->pr.total = n;
    char name[128];
    lock_name(name, sizeof name, "W2", "serial");
    snprintf(w->ctr, sizeof w->ctr, "%s:ctr", name);
    redisContext *c = rc_ctl_zeroed(w->ctr);
    if (!c) {
        shm_free(w, size);
        return -1;
    }
    pid_t pid = spawn(w2s_worker, w, 0);
    int rc = wait_workers(&pid, 1, "W2 serial ceiling", &w->pr);
    if (rc) {
        output_error("W2serial", "worker failed");
    } else {
        long long ctr = rc_ctr_get(c, w->ctr, -1);
        result_t *r = result_timed("floor", "W2serial", w->lat, n, w->t_end - w->t_start);
        result_extra(r, "lost_updates", "%lld", (long long)n - ctr);
        result_extra(r, "ops", "%lu", n);
        result_extra(r, "lock", "none");
        result_emit(r);
    }
    redisFree(c);
    shm_free(w, size);
    return rc ? -1 : 0;
}

/* ================================================================ W3 */
/* W3b: how long the holder holds the relocked lock before its timed
 * unlock (WORKLOADS.md). */
#define W3B_HOLD_US 2000

typedef struct w3 {
    int peer;
    int relock;                      /* W3b: A unlocks and locks again at once, holds 2 ms */
    unsigned long warm, rounds;
    char name[128], qkey[200];
    sem_t a_locked, b_entering, b_done;
    progress_t pr;
    unsigned long unqueued;          /* rounds where B was not seen queued in time */
    unsigned long long held_ns;      /* W3b: sum of A's relocked holds (t0 - relock) */
    wstats_t ws_a, ws_b;
    uint64_t t0[4096], t1[4096];
} w3_t;

/* Distlock: B is blocked once its registration is in the queue and its
 * thread had time to sleep on it.  Naive: B is in its 1 ms retry loop. */
static void w3_wait_b_blocked(w3_t *w, redisContext *c)
{
    if (w->peer == PEER_NAIVE) {
        sleep_us(2000 + (unsigned long)(rand() % 1000));
        return;
    }
    w->unqueued += (unsigned long)rc_wait_listed(c, w->qkey);
}

static int w3_worker(void *arg, int idx)
{
    w3_t *w = arg;
    plock_t p;
    if (pl_init(&p, w->peer, w->name))
        return 1;
    unsigned long all = w->warm + w->rounds;
    if (idx == 0) {                                   /* A */
        redisContext *c = rc_connect("bench-ctl");
        if (!c)
            return 1;
        srand((unsigned)getpid());
        dl_stats_t s0;
        for (unsigned long r = 0; r < all; r++) {
            if (r == w->warm)
                ws_begin(&w->ws_a, &p, &s0);
            if (pl_lock(&p))
                return 1;
            /* W3b: a loop's shape (unlock, lock again at once), but the
             * hold that follows is long: 2 ms, B queued meanwhile. */
            if (w->relock && (pl_unlock(&p) || pl_lock(&p)))
                return 1;
            uint64_t held = now_ns();
            sem_post(&w->a_locked);
            while (sem_wait(&w->b_entering) && errno == EINTR) {
            }
            w3_wait_b_blocked(w, c);
            if (w->relock) {
                uint64_t until = held + W3B_HOLD_US * 1000ull, t = now_ns();
                if (t < until)
                    sleep_us((unsigned long)((until - t) / 1000));
            }
            w->t0[r] = now_ns();
            if (r >= w->warm)
                w->held_ns += w->t0[r] - held;
            if (pl_unlock(&p))
                return 1;
            while (sem_wait(&w->b_done) && errno == EINTR) {
            }
            w->pr.done = r + 1;
        }
        ws_end(&w->ws_a, &p, &s0);
        redisFree(c);
    } else {                                          /* B */
        dl_stats_t s0;
        for (unsigned long r = 0; r < all; r++) {
            while (sem_wait(&w->a_locked) && errno == EINTR) {
            }
            if (r == w->warm)
                ws_begin(&w->ws_b, &p, &s0);
            sem_post(&w->b_entering);
            if (pl_lock(&p))
                return 1;
            w->t1[r] = now_ns();
            if (pl_unlock(&p))
                return 1;
            sem_post(&w->b_done);
        }
        ws_end(&w->ws_b, &p, &s0);
    }
    pl_fini(&p);
    return 0;
}

w3_samples_t g_w3[2];

/* relock: W3b. */
static int w3_run(int peer, int relock)
{
    const char *wl = relock ? "W3b" : "W3";
    w3_t *w = shm_alloc(sizeof *w);
    w->peer = peer;
    w->relock = relock;
    w->warm = g_opt.quick ? 3 : 10;
    w->rounds = g_opt.quick ? 30 : 300;
    w->pr.total = w->warm + w->rounds;
    lock_name(w->name, sizeof w->name, wl, peer_name(peer));
    if (lock_key(w->qkey, sizeof w->qkey, w->name, 3)) {
        shm_free(w, sizeof *w);
        return -1;
    }
    sem_init(&w->a_locked, 1, 0);
    sem_init(&w->b_entering, 1, 0);
    sem_init(&w->b_done, 1, 0);
    char label[32];
    snprintf(label, sizeof label, "%s %s", wl, peer_name(peer));
    pid_t pids[2];
    pids[0] = spawn(w3_worker, w, 0);
    pids[1] = spawn(w3_worker, w, 1);
    int rc = wait_workers(pids, 2, label, &w->pr);
    if (rc) {
        output_error(wl, "%s workers failed", peer_name(peer));
    } else {
        size_t n = w->rounds;
        double *v = spans_us(w->t0 + w->warm, w->t1 + w->warm, n);
        result_t *r = result_new(peer_name(peer), wl);
        double mean = mean_of(v, n);
        r->ops_per_s = mean > 0 ? 1e6 / mean : 0;    /* back-to-back handoffs per second */
        r->p50_us = pct_sorted(v, n, 0.5);
        r->p99_us = pct_sorted(v, n, 0.99);
        result_extra(r, "rounds", "%zu", n);
        result_extra(r, "mean_us", "%.1f", mean);
        result_extra(r, "min_us", "%.1f", v[0]);
        result_extra(r, "max_us", "%.1f", v[n - 1]);
        result_t *fp = result_find("floor", "PING");
        double ping = 0;
        if (fp && !fp->skipped) {
            result_extra(r, "ping_p50_us", "%.1f", fp->p50_us);
            if (result_get(fp, "hiredis_p50_us", &ping) == 0)
                result_extra(r, "ping_p50_us_hiredis", "%.1f", ping);
            result_extra(r, "p50_over_ping", "%.2f", r->p50_us / fp->p50_us);
        }
        if (relock)
            result_extra(r, "hold_us", "%.0f", (double)w->held_ns / 1e3 / (double)n);
        if (peer == PEER_DISTLOCK) {
            result_extra(r, "grants", "%lu", w->ws_b.grants);
            result_extra(r, "fallback_checks", "%lu", w->ws_b.fallback_checks);
            result_extra(r, "unqueued_rounds", "%lu", w->unqueued);
            /* the holder's unlocks that kept the hold (for a relock that
             * does not come in W3/W3b), and those the library ended */
            result_extra(r, "lingers", "%lu", w->ws_a.lingers);
            result_extra(r, "linger_ends", "%lu", w->ws_a.linger_ends);
        } else {
            result_extra(r, "retries_per_round", "%.2f", (double)w->ws_b.retries / (double)n);
        }
        result_emit(r);
        if (!relock) {
            free(g_w3[peer].v);
            g_w3[peer].v = v;
            g_w3[peer].n = n;
        } else {
            free(v);
        }
    }
    sem_destroy(&w->a_locked);
    sem_destroy(&w->b_entering);
    sem_destroy(&w->b_done);
    shm_free(w, sizeof *w);
    return rc;
}

int run_w3(int peer)
{
    return w3_run(peer, 0);
}

int run_w3b(int peer)
{
    return w3_run(peer, 1);
}
