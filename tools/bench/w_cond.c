/* SPDX-License-Identifier: BSD-3-Clause */
/* w_cond.c - C1: how long a dist_cond_signal in one process takes to wake a
 * dist_cond_wait in another (issue 24: p50 <= 4 x PING p50 of the run).
 *
 * Two forked processes.  B, each round: locks the mutex, waits on the
 * condition until the round's predicate (a counter in shared memory) says
 * go.  A: once B's registration is in Redis and its thread had time to
 * sleep, stores the predicate, takes t0 and signals (without the mutex, as
 * SPEC allows).  t1: B back from dist_cond_wait with the mutex held again.
 * So a sample is the signal's round trip, the push to B's subscriber, B's
 * thread woken, and the mutex retaken (one more round trip): about 2.5
 * round trips and two thread wake-ups.  signal_call_p50_us: the signal
 * call alone (A's side). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "config.h"
#include "distlock.h"
#include "keys.h"
#include "status.h"

typedef struct c1 {
    char name[128];
    char ckey[512];                 /* the condition's main key: its waiters */
    unsigned long warm, rounds;
    atomic_ulong go;                /* the predicate: the round B may leave */
    sem_t b_waiting, b_done;
    progress_t pr;
    unsigned long unregistered;     /* rounds where B was not seen registered in time */
    unsigned long spurious;         /* B's wake-ups without its predicate */
    dl_stats_t sb0, sb1;            /* B's counters: pushes, asks, local wake-ups */
    uint64_t t0[4096], t1[4096];
    uint64_t ts[4096];              /* A back from dist_cond_signal */
} c1_t;

/* The condition's main key (keys.c: its own hash tag), to see B registered. */
static int cond_key(char *buf, size_t size, const char *name)
{
    char prefix[256];
    if (dl_config_prefix(prefix, sizeof prefix))
        return -1;
    size_t len = strlen(name);
    char *kb = malloc(dl_kind_keys_size(DL_KIND_COND, prefix, len));
    if (!kb)
        return -1;
    const char *k[DL_KEYS_MAX];
    size_t kl[DL_KEYS_MAX];
    dl_kind_keys_write(DL_KIND_COND, kb, prefix, name, len, k, kl);
    int rc = kl[0] < size ? 0 : -1;
    if (rc == 0)
        snprintf(buf, size, "%s", k[0]);
    free(kb);
    return rc;
}

/* B is waiting once its registration is listed and its thread had time to
 * sleep on it (as W3 waits for its B to be queued). */
static void wait_registered(c1_t *w, redisContext *c)
{
    w->unregistered += (unsigned long)rc_wait_listed(c, w->ckey);
}

static int c1_worker(void *arg, int idx)
{
    c1_t *w = arg;
    unsigned long all = w->warm + w->rounds;
    dist_cond_t c;
    dist_mutex_t m;
    if (dist_cond_init(&c, w->name, NULL) || dist_mutex_init(&m, w->name, NULL)) {
        fprintf(stderr, "distlock-bench: C1: %s\n", dist_lasterror());
        return 1;
    }
    if (idx == 0) {                                   /* A: the signaller */
        redisContext *rc = rc_connect("bench-ctl");
        if (!rc)
            return 1;
        for (unsigned long r = 0; r < all; r++) {
            while (sem_wait(&w->b_waiting) && errno == EINTR) {
            }
            wait_registered(w, rc);
            atomic_store(&w->go, r + 1);
            w->t0[r] = now_ns();
            if (dist_cond_signal(&c)) {
                fprintf(stderr, "distlock-bench: C1 signal: %s\n", dist_lasterror());
                return 1;
            }
            w->ts[r] = now_ns();
            while (sem_wait(&w->b_done) && errno == EINTR) {
            }
            w->pr.done = r + 1;
        }
        redisFree(rc);
    } else {                                          /* B: the waiter */
        for (unsigned long r = 0; r < all; r++) {
            if (r == w->warm)
                dl_stats_get(&w->sb0);
            if (dist_mutex_lock(&m))
                goto fail;
            sem_post(&w->b_waiting);
            while (atomic_load(&w->go) != r + 1) {
                int e = dist_cond_wait(&c, &m);
                if (e && e != EOWNERDEAD)
                    goto fail;
                if (atomic_load(&w->go) != r + 1 && r >= w->warm)
                    w->spurious++;
            }
            w->t1[r] = now_ns();
            if (dist_mutex_unlock(&m))
                goto fail;
            sem_post(&w->b_done);
        }
        dl_stats_get(&w->sb1);
    }
    dist_cond_destroy(&c);
    dist_mutex_destroy(&m);
    return 0;
fail:
    fprintf(stderr, "distlock-bench: C1 waiter: %s\n", dist_lasterror());
    return 1;
}

int run_c1(void)
{
    c1_t *w = shm_alloc(sizeof *w);
    w->warm = g_opt.quick ? 3 : 20;
    w->rounds = g_opt.quick ? 30 : 500;
    w->pr.total = w->warm + w->rounds;
    lock_name(w->name, sizeof w->name, "C1", NULL);
    if (cond_key(w->ckey, sizeof w->ckey, w->name)) {
        output_error("C1", "no key for the condition");
        shm_free(w, sizeof *w);
        return -1;
    }
    sem_init(&w->b_waiting, 1, 0);
    sem_init(&w->b_done, 1, 0);
    pid_t pids[2];
    pids[0] = spawn(c1_worker, w, 0);
    pids[1] = spawn(c1_worker, w, 1);
    int rc = wait_workers(pids, 2, "C1 distlock", &w->pr);
    if (rc) {
        output_error("C1", "workers failed");
    } else {
        size_t n = w->rounds;
        double *v = spans_us(w->t0 + w->warm, w->t1 + w->warm, n);
        result_t *r = result_new("distlock", "C1");
        double mean = mean_of(v, n);
        r->ops_per_s = mean > 0 ? 1e6 / mean : 0;
        r->p50_us = pct_sorted(v, n, 0.5);
        r->p99_us = pct_sorted(v, n, 0.99);
        result_extra(r, "rounds", "%zu", n);
        result_extra(r, "min_us", "%.1f", v[0]);
        result_extra(r, "max_us", "%.1f", v[n - 1]);
        /* the signal's own round trip, the first part of each sample */
        double *sv = spans_us(w->t0 + w->warm, w->ts + w->warm, n);
        if (sv) {
            result_extra(r, "signal_call_p50_us", "%.1f", pct_sorted(sv, n, 0.5));
            free(sv);
        }
        result_t *fp = result_find("floor", "PING");
        if (fp && !fp->skipped) {
            result_extra(r, "ping_p50_us", "%.1f", fp->p50_us);
            result_extra(r, "p50_over_ping", "%.2f", r->p50_us / fp->p50_us);
        }
        result_extra(r, "woken_by_push", "%lu", w->sb1.cond_pushes - w->sb0.cond_pushes);
        result_extra(r, "woken_by_asking", "%lu", w->sb1.cond_found - w->sb0.cond_found);
        result_extra(r, "spurious", "%lu", w->spurious);
        result_extra(r, "unregistered_rounds", "%lu", w->unregistered);
        result_emit(r);
        free(v);
    }
    sem_destroy(&w->b_waiting);
    sem_destroy(&w->b_done);
    shm_free(w, sizeof *w);
    return rc;
}
