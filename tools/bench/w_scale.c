/* SPDX-License-Identifier: BSD-3-Clause */
/* w_scale.c - W6 (one process holds 10000 locks for 3 lease periods: the
 * watchdog's batching) and W7 (the W2 shape with 64 threads per process on
 * 64 locks: how many Redis connections a process uses). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "distlock.h"
#include "status.h"

/* ================================================================ W6 */
#define W6_THREADS 4
typedef struct w6 {
    unsigned long nlocks, lease_ms;  /* lease_ms: set in the worker's environment, or 0 */
    unsigned long eff_lease_ms;      /* the lease the library will use */
    progress_t pr;
    double hold_s, cpu_pct;
    unsigned long ticks, rts, renewed, lost, held, unlock_errs;
    unsigned long lost_in_unlock;    /* holds the watchdog called lost while they were unlocked */
    double acquire_s;
    double lat[];
} w6_t;

typedef struct w6_thread {
    w6_t *w;
    dist_mutex_t *m;
    pthread_barrier_t *bar;
    int idx;
    int failed;
    unsigned long unlock_errs;
} w6_thread_t;

static void *w6_thread(void *arg)
{
    w6_thread_t *t = arg;
    w6_t *w = t->w;
    for (unsigned long i = (unsigned long)t->idx; i < w->nlocks; i += W6_THREADS) {
        uint64_t t0 = now_ns();
        int rc = dist_mutex_lock(&t->m[i]);
        w->lat[i] = (double)(now_ns() - t0) / 1e3;
        if (lock_err("W6 lock", rc)) {
            t->failed = 1;
            break;
        }
        __atomic_add_fetch(&w->pr.done, 1, __ATOMIC_RELAXED);
    }
    pthread_barrier_wait(t->bar);              /* all held */
    pthread_barrier_wait(t->bar);              /* the hold is over */
    for (unsigned long i = (unsigned long)t->idx; i < w->nlocks && !t->failed; i += W6_THREADS)
        if (dist_mutex_unlock(&t->m[i]))
            t->unlock_errs++;
    return NULL;
}

static int w6_worker(void *arg, int idx)
{
    w6_t *w = arg;
    char leasebuf[32];
    if (w->lease_ms) {
        snprintf(leasebuf, sizeof leasebuf, "%lu", w->lease_ms);
        setenv("DISTLOCK_LEASE_MS", leasebuf, 1);     /* read on first use in this process */
    }
    dist_mutex_t *m = calloc(w->nlocks, sizeof *m);
    char *names = malloc(w->nlocks * 64);
    if (!m || !names)
        return 1;
    for (unsigned long i = 0; i < w->nlocks; i++) {
        char sfx[24];
        snprintf(sfx, sizeof sfx, "%lu", i);
        lock_name(names + i * 64, 64, "W6", sfx);
        if (dist_mutex_init(&m[i], names + i * 64, NULL))
            return 1;
    }
    redisContext *c = rc_connect("bench-ctl");
    if (!c)
        return 1;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, W6_THREADS + 1);
    pthread_t th[W6_THREADS];
    w6_thread_t ta[W6_THREADS];
    uint64_t ta0 = now_ns();
    for (int i = 0; i < W6_THREADS; i++) {
        ta[i] = (w6_thread_t){ w, m, &bar, i, 0, 0 };
        pthread_create(&th[i], NULL, w6_thread, &ta[i]);
    }
    pthread_barrier_wait(&bar);
    w->acquire_s = (double)(now_ns() - ta0) / 1e9;
    int failed = 0;
    for (int i = 0; i < W6_THREADS; i++)
        failed |= ta[i].failed;

    /* Hold for 3 lease periods. */
    dl_stats_t s0, s1;
    dl_stats_get(&s0);
    double cpu0 = rc_cpu_seconds(c);
    uint64_t h0 = now_ns();
    unsigned long lease = w->eff_lease_ms;
    uint64_t until = h0 + (uint64_t)lease * 3 * 1000000ull;
    w->pr.done = 0;
    w->pr.total = lease * 3;
    while (!failed && now_ns() < until) {
        sleep_us(100000);
        w->pr.done = (unsigned long)((now_ns() - h0) / 1000000);
    }
    dl_stats_get(&s1);
    double cpu1 = rc_cpu_seconds(c);
    uint64_t h1 = now_ns();
    w->hold_s = (double)(h1 - h0) / 1e9;
    w->cpu_pct = (cpu1 - cpu0) / w->hold_s * 100;
    w->ticks = s1.watchdog_ticks - s0.watchdog_ticks;
    w->rts = s1.watchdog_roundtrips - s0.watchdog_roundtrips;
    w->renewed = s1.renewed - s0.renewed;
    w->lost = s1.lost - s0.lost;

    /* Still held in Redis?  Every lock hash present with a lease left. */
    for (unsigned long i = 0; i < w->nlocks; i++) {
        char key[400];
        if (lock_key(key, sizeof key, names + i * 64, 0))
            snprintf(key, sizeof key, "?");        /* counts as not held */
        redisAppendCommand(c, "PTTL %s", key);
    }
    w->held = 0;
    for (unsigned long i = 0; i < w->nlocks; i++) {
        redisReply *r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK) {
            failed = 1;
            break;
        }
        if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
            w->held++;
        freeReplyObject(r);
    }
    pthread_barrier_wait(&bar);
    for (int i = 0; i < W6_THREADS; i++) {
        pthread_join(th[i], NULL);
        w->unlock_errs += ta[i].unlock_errs;
    }
    dl_stats_t s2;
    dl_stats_get(&s2);
    w->lost_in_unlock = s2.lost - s1.lost;
    redisFree(c);
    return failed;
}

int run_w6(void)
{
    unsigned long n = g_opt.w6_locks ? g_opt.w6_locks : (g_opt.quick ? 1000 : 10000);
    size_t size = sizeof(w6_t) + n * sizeof(double);
    w6_t *w = shm_alloc(size);
    w->nlocks = n;
    w->lease_ms = g_opt.lease_ms;
    w->eff_lease_ms = g_opt.lease_ms;
    const char *env = getenv("DISTLOCK_LEASE_MS");
    if (!w->eff_lease_ms)
        w->eff_lease_ms = env && atol(env) > 0 ? (unsigned long)atol(env) : 30000UL;
    w->pr.total = n;
    pid_t pid = spawn(w6_worker, w, 0);
    int rc = wait_workers(&pid, 1, "W6 distlock", &w->pr);
    if (rc) {
        output_error("W6", "worker failed");
    } else {
        sort_doubles(w->lat, n);
        result_t *r = result_new("distlock", "W6");
        r->ops_per_s = w->hold_s > 0 ? (double)w->renewed / w->hold_s : 0;
        r->p50_us = pct_sorted(w->lat, n, 0.5);
        r->p99_us = pct_sorted(w->lat, n, 0.99);
        int all = w->held == n && w->lost == 0 && w->unlock_errs == 0;
        result_extra(r, "renew_round_trips_per_period", "%.2f",
                     w->ticks ? (double)w->rts / (double)w->ticks : 0);
        result_extra(r, "redis_cpu_pct", "%.1f", w->cpu_pct);
        result_extra(r, "all_still_held", "%d", all);
        result_extra(r, "locks", "%lu", n);
        result_extra(r, "lease_ms", "%lu", w->eff_lease_ms);
        result_extra(r, "lease_source", "%s", w->lease_ms ? "bench-option" :
                     env && atol(env) > 0 ? "DISTLOCK_LEASE_MS" : "library-default");
        result_extra(r, "hold_s", "%.1f", w->hold_s);
        result_extra(r, "renewal_ticks", "%lu", w->ticks);
        result_extra(r, "renew_round_trips", "%lu", w->rts);
        result_extra(r, "renewed_per_tick", "%.0f", w->ticks ? (double)w->renewed / (double)w->ticks : 0);
        result_extra(r, "held_at_end", "%lu", w->held);
        result_extra(r, "lost", "%lu", w->lost);
        /* dl_stats `lost` counted while the 10000 unlocks ran (each unlock
         * returned 0 when unlock_errors=0): renewals that met a release */
        result_extra(r, "unlock_errors", "%lu", w->unlock_errs);
        result_extra(r, "lost_counted_during_unlocks", "%lu", w->lost_in_unlock);
        result_extra(r, "acquire_s", "%.2f", w->acquire_s);
        result_extra(r, "ops", "renewals");
        result_emit(r);
    }
    shm_free(w, size);
    return rc;
}

/* ================================================================ W7 */
#define W7_PROCS 4
#define W7_THREADS 64
#define W7_MAX_SOCKS 256

typedef struct w7 {
    unsigned long n;                 /* per thread */
    gate_t gate;
    sem_t snap_req, snap_done;
    progress_t pr;
    int nports[W7_PROCS];
    int ports[W7_PROCS][W7_MAX_SOCKS];
    uint64_t t_end[W7_PROCS];
    double lat[];
} w7_t;

typedef struct w7_thread {
    w7_t *w;
    dist_mutex_t *m;
    const char *ctr;
    redisContext *c;
    pthread_barrier_t *bar;
    int proc, idx, failed;
} w7_thread_t;

static void w7_name(char *buf, size_t size, int i, int ctr)
{
    char sfx[32];
    snprintf(sfx, sizeof sfx, "%d%s", i, ctr ? ":ctr" : "");
    lock_name(buf, size, "W7", sfx);
}

static void *w7_thread(void *arg)
{
    w7_thread_t *t = arg;
    w7_t *w = t->w;
    double *lat = w->lat + ((size_t)t->proc * W7_THREADS + (size_t)t->idx) * w->n;
    pthread_barrier_wait(t->bar);
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t0 = now_ns();
        if (lock_err("W7 lock", dist_mutex_lock(t->m))) {
            t->failed = 1;
            return NULL;
        }
        rc_ctr_incr(t->c, t->ctr);  /* a failure shows as lost updates */
        if (lock_err("W7 unlock", dist_mutex_unlock(t->m))) {
            t->failed = 1;
            return NULL;
        }
        lat[i] = (double)(now_ns() - t0) / 1e3;
        __atomic_add_fetch(&w->pr.done, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* Local ports of this process's TCP connections to the server. */
static int own_ports(int *ports, int max)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == dirfd(d))
            continue;
        struct stat st;
        if (fstat(fd, &st) || !S_ISSOCK(st.st_mode))
            continue;
        struct sockaddr_storage peer, self;
        socklen_t pl = sizeof peer, sl = sizeof self;
        if (getpeername(fd, (struct sockaddr *)&peer, &pl) ||
            getsockname(fd, (struct sockaddr *)&self, &sl))
            continue;
        if (peer.ss_family == AF_INET) {
            if (ntohs(((struct sockaddr_in *)&peer)->sin_port) == g_redis.ep[0].port)
                ports[n++] = ntohs(((struct sockaddr_in *)&self)->sin_port);
        } else if (peer.ss_family == AF_INET6) {
            if (ntohs(((struct sockaddr_in6 *)&peer)->sin6_port) == g_redis.ep[0].port)
                ports[n++] = ntohs(((struct sockaddr_in6 *)&self)->sin6_port);
        }
    }
    closedir(d);
    return n;
}

static int w7_worker(void *arg, int proc)
{
    w7_t *w = arg;
    static dist_mutex_t m[W7_THREADS];
    static char names[W7_THREADS][96], ctrs[W7_THREADS][112];
    for (int i = 0; i < W7_THREADS; i++) {
        w7_name(names[i], sizeof names[i], i, 0);
        w7_name(ctrs[i], sizeof ctrs[i], i, 1);
        if (dist_mutex_init(&m[i], names[i], NULL))
            return 1;
    }
    if (mutex_connect(&m[0]))                       /* before measuring */
        return 1;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, W7_THREADS + 1);
    pthread_t th[W7_THREADS];
    static w7_thread_t ta[W7_THREADS];
    for (int i = 0; i < W7_THREADS; i++) {
        ta[i] = (w7_thread_t){ w, &m[i], ctrs[i], rc_connect("bench-plain"), &bar, proc, i, 0 };
        if (!ta[i].c)
            return 1;
        pthread_create(&th[i], NULL, w7_thread, &ta[i]);
    }
    gate_pass(&w->gate);
    pthread_barrier_wait(&bar);
    /* While the threads run: the parent asks which sockets are ours. */
    while (sem_wait(&w->snap_req) && errno == EINTR) {
    }
    w->nports[proc] = own_ports(w->ports[proc], W7_MAX_SOCKS);
    sem_post(&w->snap_done);
    int failed = 0;
    for (int i = 0; i < W7_THREADS; i++) {
        pthread_join(th[i], NULL);
        failed |= ta[i].failed;
    }
    w->t_end[proc] = now_ns();
    for (int i = 0; i < W7_THREADS; i++)
        redisFree(ta[i].c);
    return failed;
}

/* CLIENT LIST: is the connection from local port `port` one of ours
 * (named bench-*)?  -1 if not in the list, 1 bench, 0 other (the library). */
static int client_kind(const char *list, int port)
{
    for (const char *line = list; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[1024];
        if (len >= sizeof buf)
            len = sizeof buf - 1;
        memcpy(buf, line, len);
        buf[len] = 0;
        const char *addr = strstr(buf, " addr=");     /* not laddr= */
        if (addr) {
            addr += 6;
            const char *end = strchr(addr, ' ');
            const char *colon = NULL;
            for (const char *q = addr; *q && (!end || q < end); q++)
                if (*q == ':')
                    colon = q;
            if (colon && atoi(colon + 1) == port) {
                const char *name = strstr(buf, " name=");
                return name && !strncmp(name + 6, "bench-", 6) ? 1 : 0;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

int run_w7(void)
{
    unsigned long n = g_opt.w7_iters ? g_opt.w7_iters : (g_opt.quick ? 5 : 200);
    size_t total = (size_t)W7_PROCS * W7_THREADS * n;
    size_t size = sizeof(w7_t) + total * sizeof(double);
    w7_t *w = shm_alloc(size);
    w->n = n;
    w->pr.total = total;
    gate_init(&w->gate, W7_PROCS);
    sem_init(&w->snap_req, 1, 0);
    sem_init(&w->snap_done, 1, 0);
    redisContext *c = rc_connect("bench-ctl");
    if (!c) {
        shm_free(w, size);
        return -1;
    }
    for (int i = 0; i < W7_THREADS; i++) {
        char ctr[112];
        w7_name(ctr, sizeof ctr, i, 1);
        redisReply *r = rc_cmd(c, "SET %s 0", ctr);
        if (r)
            freeReplyObject(r);
    }
    pid_t pids[W7_PROCS];
    uint64_t t0;
    int rc = spawn_gated(w7_worker, w, pids, W7_PROCS, &w->gate, NULL, NULL, &t0);
    int conns[W7_PROCS] = { 0 }, socks[W7_PROCS] = { 0 }, snapped = 0;
    long long clients = -1;
    if (rc == 0) {
        /* Count while every thread is in its loop: at a quarter of the work. */
        unsigned long last = 0;
        uint64_t moved = now_ns();
        while (__atomic_load_n(&w->pr.done, __ATOMIC_RELAXED) < total / 4 &&
               !any_exited(pids, W7_PROCS) && now_ns() - moved < 60000000000ull) {
            progress_show("W7 distlock", &w->pr);
            sleep_us(20000);
            if (w->pr.done != last) {
                last = w->pr.done;
                moved = now_ns();
            }
        }
        for (int i = 0; i < W7_PROCS; i++)
            sem_post(&w->snap_req);
        int got = 0;
        uint64_t until = now_ns() + 30000000000ull;
        while (got < W7_PROCS && now_ns() < until && !any_exited(pids, W7_PROCS)) {
            if (sem_trywait(&w->snap_done) == 0)
                got++;
            else
                sleep_us(1000);
        }
        redisReply *r = rc_cmd(c, "CLIENT LIST");
        if (got == W7_PROCS && r && r->type == REDIS_REPLY_STRING && !rc_is_unix()) {
            snapped = 1;
            for (int p = 0; p < W7_PROCS; p++)
                for (int k = 0; k < w->nports[p]; k++) {
                    int kind = client_kind(r->str, w->ports[p][k]);
                    if (kind == 0)
                        conns[p]++;
                    if (kind >= 0)
                        socks[p]++;
                }
            clients = 0;
            for (const char *s = r->str; (s = strchr(s, '\n')); s++)
                clients++;
        }
        if (r)
            freeReplyObject(r);
    }
    rc = wait_workers(pids, W7_PROCS, "W7 distlock", &w->pr) || rc;
    if (rc) {
        output_error("W7", "workers failed");
    } else {
        long long lost = 0;
        for (int i = 0; i < W7_THREADS; i++) {
            char ctr[112];
            w7_name(ctr, sizeof ctr, i, 1);
            lost += (long long)(W7_PROCS * n) - rc_ctr_get(c, ctr, 0);
        }
        uint64_t tend = 0;
        for (int i = 0; i < W7_PROCS; i++)
            if (w->t_end[i] > tend)
                tend = w->t_end[i];
        int maxc = 0;
        for (int p = 0; p < W7_PROCS; p++)
            maxc = conns[p] > maxc ? conns[p] : maxc;
        result_t *r = result_timed("distlock", "W7", w->lat, total, tend - t0);
        if (snapped) {
            result_extra(r, "connections_per_process", "%d", maxc);
            result_extra(r, "connections", "%d/%d/%d/%d", conns[0], conns[1], conns[2], conns[3]);
            result_extra(r, "plain_connections_per_process", "%d", socks[0] - conns[0]);
            result_extra(r, "clients_total", "%lld", clients);
        } else {
            result_extra(r, "connections_per_process", "n/a");
        }
        result_extra(r, "lost_updates", "%lld", lost);
        result_extra(r, "procs", "%d", W7_PROCS);
        result_extra(r, "threads_per_proc", "%d", W7_THREADS);
        result_extra(r, "locks", "%d", W7_THREADS);
        result_extra(r, "iters_per_thread", "%lu", n);
        result_emit(r);
    }
    redisFree(c);
    gate_destroy(&w->gate);
    sem_destroy(&w->snap_req);
    sem_destroy(&w->snap_done);
    shm_free(w, size);
    return rc ? -1 : 0;
}
