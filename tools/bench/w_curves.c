/* SPDX-License-Identifier: BSD-3-Clause */
/* w_curves.c - W9, the scaling curves (issue 30): how the cost of a lock
 * grows with the processes that use it, on the run's server and on
 * clusters of 3 and 6 masters the bench starts.
 *
 *   W9P   one lock, N = 1, 2, 4 ... 256 processes, each running W2's loop
 *         {lock; GET ctr; SET ctr v+1; unlock} (the counter on a plain
 *         connection of its own) for a fixed time;
 *   W9O   the same with each process on a lock (and counter) of its own;
 *   W9M   Redis's memory per held lock, per waiter, per idle name (a name
 *         locked and released once), and per connected process;
 *   W9L   one process holding 10^2 ... 10^6 locks (w_many.c; its chart,
 *         w9-many-locks.svg, is drawn here with the others).
 *
 * W9P and W9O run for distlock and for the naive lock side by side, step
 * by step, then again on each cluster (workloads W9P3, W9O3, W9P6, W9O6).
 * Per step, RESULT extra: procs, ops (lock+counter+unlock), the shares of
 * each process when the step stopped (min_share, max_share, fairness =
 * min/max), the wait in lock() (the RESULT's p50/p99, wait_max_us),
 * lost_updates (must be 0), Redis CPU per op (INFO used_cpu_sys+user of
 * every node, less their idle rate), client CPU per op (each worker's
 * getrusage over its loop, all its threads), connections (CLIENT LIST
 * while the loop runs: the library's per process, and all of a process's
 * with its counter's), the workers' resident memory (VmRSS at the end).
 * Each step prints a line on stderr; at the end, one SVG chart per curve
 * (--svg-dir, log-scale x) over the repetitions (chart.c). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"
#include "distlock.h"
#include "cmdlink_io.h"
#include "status.h"

#define W9_MAX_PROCS 256

static const int dflt_procs[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 };
static const int quick_procs[] = { 1, 4, 16 };
static const int dflt_masters[] = { 0, 3, 6 };
static const int quick_masters[] = { 0, 3 };

static int steps_done, steps_total;
static uint64_t w9_t0;

/* ------------------------------------------------ a lock of either peer */
typedef struct wlock {
    int peer;
    dist_mutex_t m;
    naive_t n;
} wlock_t;

static int wl_init(wlock_t *l, int peer, const char *name, const rnodes_t *where, int node)
{
    l->peer = peer;
    if (peer == PEER_NAIVE)
        return naive_init_on(&l->n, name, rnodes_connect(where, node, "bench-naive"));
    return mutex_warm(&l->m, name);
}

static int wl_lock(wlock_t *l)
{
    if (l->peer == PEER_NAIVE)
        return naive_lock(&l->n);
    return lock_err("W9 lock", dist_mutex_lock(&l->m)) ? -1 : 0;
}

static int wl_unlock(wlock_t *l)
{
    if (l->peer == PEER_NAIVE)
        return naive_unlock(&l->n);
    return lock_err("W9 unlock", dist_mutex_unlock(&l->m)) ? -1 : 0;
}

static void wl_fini(wlock_t *l)
{
    if (l->peer == PEER_NAIVE)
        naive_fini(&l->n);
    else
        dist_mutex_destroy(&l->m);
}

static double cpu_of_self(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static long rss_kb_self(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* What the scheduler says of this process, summed over its threads
 * (/proc/self/task/<tid>/schedstat: time on a CPU, time waiting on a run
 * queue; status: context switches).  A thread that waits for a CPU while
 * the lock is granted to it keeps every other process waiting too. */
typedef struct sched_use {
    double run_s, runq_s;
    unsigned long vol, invol;
} sched_use_t;

static void sched_of_self(sched_use_t *u)
{
    memset(u, 0, sizeof *u);
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            unsigned long long run = 0, wait = 0;
            if (fscanf(f, "%llu %llu", &run, &wait) == 2) {
                u->run_s += (double)run / 1e9;
                u->runq_s += (double)wait / 1e9;
            }
            fclose(f);
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            unsigned long v;
            if (sscanf(line, "voluntary_ctxt_switches: %lu", &v) == 1)
                u->vol += v;
            else if (sscanf(line, "nonvoluntary_ctxt_switches: %lu", &v) == 1)
                u->invol += v;
        }
        fclose(f);
    }
    closedir(d);
}

/* ====================================================== W9P and W9O */
typedef struct w9slot {
    char name[128];           /* its lock */
    char ctr[160];            /* its counter */
    int lock_node, ctr_node;  /* the nodes that serve them */
    unsigned long count;      /* operations done (written as they are) */
    double wait_max_us, cpu_s;
    sched_use_t sched;        /* over the loop */
    unsigned long roundtrips, grants, lingers, linger_ends, fallbacks;  /* dl_stats, over the loop */
    long rss_kb;
    uint64_t t_end;
    unsigned long nlat;       /* samples kept, at most cap */
} w9slot_t;

typedef struct w9p {
    int peer, procs;
    const rnodes_t *where;    /* the parent's: valid in the forked workers */
    gate_t gate;
    sem_t looped, leave;      /* a worker's loop ended; the parent has measured */
    int stop;
    progress_t pr;
    unsigned long cap;        /* wait samples kept per process */
    w9slot_t slot[W9_MAX_PROCS];
    double lat[];             /* procs * cap */
} w9p_t;

static int w9p_worker(void *arg, int idx)
{
    w9p_t *w = arg;
    w9slot_t *s = &w->slot[idx];
    if (g_opt.w9_spin_us >= 0)
        dl_link_spin_us = (unsigned long)g_opt.w9_spin_us;
    if (w->where->cl)
        setenv("DISTLOCK_URL", w->where->cl->url, 1);
    wlock_t l;
    if (wl_init(&l, w->peer, s->name, w->where, s->lock_node))
        return 1;
    redisContext *c = rnodes_connect(w->where, s->ctr_node, "bench-plain");
    if (!c)
        return 1;
    double *lat = w->lat + (size_t)idx * w->cap;
    gate_pass(&w->gate);
    sched_use_t u0, u1;
    dl_stats_t d0, d1;
    dl_stats_get(&d0);
    sched_of_self(&u0);
    double cpu0 = cpu_of_self();
    unsigned long i = 0;
    while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
        uint64_t t = now_ns();
        if (wl_lock(&l))
            return 1;
        double wait = (double)(now_ns() - t) / 1e3;
        if (rc_ctr_incr(c, s->ctr) || wl_unlock(&l))
            return 1;
        if (i < w->cap)
            lat[i] = wait;
        if (wait > s->wait_max_us)
            s->wait_max_us = wait;
        i++;
        __atomic_store_n(&s->count, i, __ATOMIC_RELAXED);
        __atomic_add_fetch(&w->pr.done, 1, __ATOMIC_RELAXED);
    }
    s->t_end = now_ns();
    s->cpu_s = cpu_of_self() - cpu0;
    sched_of_self(&u1);
    dl_stats_get(&d1);
    s->roundtrips = d1.roundtrips - d0.roundtrips;
    s->grants = d1.grants - d0.grants;
    s->lingers = d1.lingers - d0.lingers;
    s->linger_ends = d1.linger_ends - d0.linger_ends;
    s->fallbacks = d1.fallback_checks - d0.fallback_checks;
    s->sched = (sched_use_t){ u1.run_s - u0.run_s, u1.runq_s - u0.runq_s, u1.vol - u0.vol,
                              u1.invol - u0.invol };
    s->rss_kb = rss_kb_self();
    s->nlat = i < w->cap ? i : w->cap;
    /* Stay connected until the parent has read the servers: their CPU is
     * the loop's, not the disconnections'. */
    sem_post(&w->looped);
    while (sem_wait(&w->leave) && errno == EINTR) {
    }
    redisFree(c);
    wl_fini(&l);
    return 0;
}

/* Waits for n posts of sem while none of pids has exited; 0 or -1. */
static int wait_posts(sem_t *sem, int n, const pid_t *pids, int npids)
{
    for (int got = 0; got < n;) {
        if (sem_trywait(sem) == 0) {
            got++;
            continue;
        }
        if (any_exited(pids, npids))
            return -1;
        sleep_us(2000);
    }
    return 0;
}

/* The curves' names: W9P (one lock) or W9O (own locks), and the masters. */
static void wl_name(char *buf, size_t size, int own, int masters)
{
    if (masters)
        snprintf(buf, size, "W9%c%d", own ? 'O' : 'P', masters);
    else
        snprintf(buf, size, "W9%c", own ? 'O' : 'P');
}

static const char *where_name(int masters, char *buf, size_t size)
{
    if (masters)
        snprintf(buf, size, "%d masters", masters);
    else
        snprintf(buf, size, "1 server");
    return buf;
}

static void step_line(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void step_line(const char *what, const char *fmt, ...)
{
    steps_done++;
    if (g_opt.no_progress)
        return;
    progress_clear();
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    double el = (double)(now_ns() - w9_t0) / 1e9;
    fprintf(stderr, "W9 rep %d/%lu step %d/%d %5.0f s  %s: %s\n", g_rep, g_opt.repeat, steps_done,
            steps_total, el, what, msg);
    fflush(stderr);
}

/* One step: procs processes of peer, on one lock or (own) each on its
 * own, on `where`, for secs; idle: the servers' idle CPU rate. */
static int w9p_step(int peer, int own, int procs, const rnodes_t *where, int masters, double secs,
                    double idle)
{
    char wl[8], label[64];
    wl_name(wl, sizeof wl, own, masters);
    snprintf(label, sizeof label, "%s %s %d", wl, peer_name(peer), procs);
    unsigned long cap = 400000 / (unsigned long)procs;
    if (cap < 4096)
        cap = 4096;
    size_t size = sizeof(w9p_t) + (size_t)procs * cap * sizeof(double);
    w9p_t *w = shm_alloc(size);
    w->peer = peer;
    w->procs = procs;
    w->where = where;
    w->cap = cap;
    gate_init(&w->gate, procs);
    sem_init(&w->looped, 1, 0);
    sem_init(&w->leave, 1, 0);
    redisContext *ctl[RCL_MAX] = { 0 };
    int rc = -1;
    for (int i = 0; i < where->n; i++)
        if (!(ctl[i] = rnodes_connect(where, i, "bench-ctl")))
            goto out;
    /* Names: fresh at each step and repetition, so no step inherits the
     * keys or the queue of another; on a cluster, own locks spread over
     * the masters (process i on master i mod M), one lock on the first. */
    for (int i = 0; i < procs; i++) {
        w9slot_t *s = &w->slot[i];
        char tag[48], key[400];
        snprintf(tag, sizeof tag, "%c%dr%d.", peer == PEER_NAIVE ? 'n' : 'd', procs, g_rep);
        int k = own ? i : 0;
        if (where->cl)
            rcl_name_on(where->cl, k % where->n, wl, tag, k, s->name, sizeof s->name);
        else {
            char sfx[64];
            snprintf(sfx, sizeof sfx, "%s%d", tag, k);
            lock_name(s->name, sizeof s->name, wl, sfx);
        }
        snprintf(s->ctr, sizeof s->ctr, "%s:ctr", s->name);
        if (lock_key(key, sizeof key, s->name, 0))
            goto out;
        s->lock_node = rnodes_of(where, key);
        s->ctr_node = rnodes_of(where, s->ctr);
        if (!own && i)
            continue;
        redisReply *r = rc_cmd(ctl[s->ctr_node], "SET %s 0", s->ctr);
        int ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        if (!ok)
            goto out;
    }

    pid_t pids[W9_MAX_PROCS];
    for (int i = 0; i < procs; i++)
        pids[i] = spawn(w9p_worker, w, i);
    rsnap_t a = { 0 }, b = { 0 };
    rclients_t cl = { 0 };
    int have_cl = 0;
    uint64_t t0 = now_ns();
    if (gate_wait_ready(&w->gate, pids, procs))
        goto reap;
    rnodes_snap(where, &a);
    t0 = now_ns();
    uint64_t half = t0 + (uint64_t)(secs * 0.5e9), until = t0 + (uint64_t)(secs * 1e9);
    gate_open(&w->gate);
    while (now_ns() < until && !any_exited(pids, procs)) {
        progress_show(label, NULL);
        sleep_us(20000);
        if (!have_cl && now_ns() >= half)
            have_cl = rnodes_clients(where, &cl) == 0;
    }
    unsigned long snap[W9_MAX_PROCS];
    for (int i = 0; i < procs; i++)
        snap[i] = __atomic_load_n(&w->slot[i].count, __ATOMIC_RELAXED);
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELAXED);
    if (wait_posts(&w->looped, procs, pids, procs))
        goto reap;
    rnodes_snap(where, &b);
    rc = 0;
reap:
    for (int i = 0; i < procs; i++)
        sem_post(&w->leave);
    if (wait_workers(pids, procs, label, NULL) || rc) {
        rc = -1;
        output_error(wl, "%s workers failed at %d processes", peer_name(peer), procs);
        goto out;
    }
    uint64_t tend = 0;
    unsigned long ops = 0, nlat = 0;
    double cpu = 0, wmax = 0, rss = 0, rss_max = 0, runq = 0;
    unsigned long vol = 0, invol = 0, rts = 0, grants = 0, lingers = 0, lends = 0, fbs = 0;
    long long ctrs = 0;
    for (int i = 0; i < procs; i++) {
        w9slot_t *s = &w->slot[i];
        tend = s->t_end > tend ? s->t_end : tend;
        ops += s->count;
        cpu += s->cpu_s;
        runq += s->sched.runq_s;
        vol += s->sched.vol;
        invol += s->sched.invol;
        rts += s->roundtrips;
        grants += s->grants;
        lingers += s->lingers;
        lends += s->linger_ends;
        fbs += s->fallbacks;
        wmax = fmax(wmax, s->wait_max_us);
        rss += (double)s->rss_kb;
        rss_max = fmax(rss_max, (double)s->rss_kb);
        /* the samples together, in front */
        memmove(w->lat + nlat, w->lat + (size_t)i * cap, s->nlat * sizeof(double));
        nlat += s->nlat;
        if (own || i == 0)
            ctrs += rc_ctr_get(ctl[s->ctr_node], s->ctr, 0);
    }
    if (!ops) {
        rc = -1;
        output_error(wl, "%s: no operation in %.1f s at %d processes", peer_name(peer), secs, procs);
        goto out;
    }
    double dt = (double)(tend - t0) / 1e9;
    result_t *r = result_timed(peer_name(peer), wl, w->lat, nlat, tend - t0);
    r->ops_per_s = (double)ops / dt;          /* every operation, kept sample or not */
    double rcpu = b.cpu_s - a.cpu_s - idle * dt;
    result_extra(r, "procs", "%d", procs);
    if (g_opt.w9_spin_us >= 0)
        result_extra(r, "reply_spin_us", "%ld", g_opt.w9_spin_us);
    result_extra(r, "masters", "%d", masters);
    result_extra(r, "locks", "%d", own ? procs : 1);
    result_shares(r, (long long)ops - ctrs, snap, procs);
    result_extra(r, "wait_max_us", "%.0f", wmax);
    result_extra(r, "redis_cpu_us_per_op", "%.1f", (rcpu > 0 ? rcpu : 0) * 1e6 / (double)ops);
    result_extra(r, "redis_cpu_pct", "%.0f", (b.cpu_s - a.cpu_s) / dt * 100);
    result_extra(r, "client_cpu_us_per_op", "%.1f", cpu * 1e6 / (double)ops);
    /* the workers' threads: time waiting for a CPU, and sleeps (voluntary
     * switches) and preemptions, per op */
    result_extra(r, "runq_wait_us_per_op", "%.1f", runq * 1e6 / (double)ops);
    result_extra(r, "sleeps_per_op", "%.2f", (double)vol / (double)ops);
    result_extra(r, "preemptions_per_op", "%.2f", (double)invol / (double)ops);
    /* every command Redis ran (those inside the scripts too), and the
     * script calls, per op */
    result_extra(r, "redis_cmds_per_op", "%.2f", (double)(b.calls - a.calls) / (double)ops);
    result_extra(r, "scripts_per_op", "%.3f", (double)(b.scripts - a.scripts) / (double)ops);
    if (peer == PEER_DISTLOCK) {
        /* the library's own counters: round trips on its command
         * connections, holds passed by a grant (a push), unlocks that kept
         * the hold for the loop's relock and those nobody relocked, waits
         * ended by asking again */
        result_extra(r, "lib_round_trips_per_op", "%.2f", (double)rts / (double)ops);
        result_extra(r, "grants_per_op", "%.3f", (double)grants / (double)ops);
        result_extra(r, "lingers_per_op", "%.3f", (double)lingers / (double)ops);
        result_extra(r, "linger_ends", "%lu", lends);
        result_extra(r, "fallback_checks", "%lu", fbs);
    }
    if (have_cl) {
        result_extra(r, "lib_conns_per_proc", "%.2f", (double)cl.library / procs);
        result_extra(r, "conns_per_proc", "%.2f", (double)(cl.library + cl.bench) / procs);
        result_extra(r, "clients_total", "%ld", cl.total);
    }
    result_extra(r, "rss_kb_mean", "%.0f", rss / procs);
    result_extra(r, "rss_kb_max", "%.0f", rss_max);
    result_extra(r, "ops", "%lu", ops);
    result_extra(r, "step_s", "%.2f", dt);
    result_extra(r, "latency", "lock-wait");
    result_emit(r);
    double mn = 0, mx = 0;
    result_get(r, "min_share", &mn);
    result_get(r, "max_share", &mx);
    step_line(label, "%.0f ops/s, shares %.2f..%.2f, wait p99 %.0f us max %.0f us, Redis %.1f "
              "us/op, client %.1f us/op (run queue %.1f), lost %lld", r->ops_per_s, mn, mx,
              r->p99_us, wmax, (rcpu > 0 ? rcpu : 0) * 1e6 / (double)ops,
              cpu * 1e6 / (double)ops, runq * 1e6 / (double)ops, (long long)ops - ctrs);
out:
    for (int i = 0; i < where->n; i++)
        if (ctl[i])
            redisFree(ctl[i]);
    gate_destroy(&w->gate);
    sem_destroy(&w->looped);
    sem_destroy(&w->leave);
    shm_free(w, size);
    return rc;
}

/* =============================================================== W9M */
typedef struct w9m {
    unsigned long n;          /* locks held, then idle */
    int waiters;
    char wait_name[128];
    sem_t h_ready, h_held, h_released, go_hold, go_release, go_exit;
    gate_t gate;              /* the waiters */
    progress_t pr;
    double acquire_s;
    double lat[];
} w9m_t;

static void w9m_name(char *buf, size_t size, unsigned long i)
{
    char sfx[48];
    snprintf(sfx, sizeof sfx, "r%d.%lu", g_rep, i);
    lock_name(buf, size, "W9M", sfx);
}

static void sem_wait_intr(sem_t *s)
{
    while (sem_wait(s) && errno == EINTR) {
    }
}

/* The holder: connects, holds n locks when told, releases them when told. */
static int w9m_holder(void *arg, int idx)
{
    (void)idx;
    w9m_t *w = arg;
    dist_mutex_t *m = calloc(w->n, sizeof *m), warm;
    if (!m)
        return 1;
    char name[128];
    for (unsigned long i = 0; i < w->n; i++) {
        w9m_name(name, sizeof name, i);
        if (dist_mutex_init(&m[i], name, NULL))
            return 1;
    }
    w9m_name(name, sizeof name, (unsigned long)-1);
    if (mutex_warm(&warm, name))
        return 1;
    sem_post(&w->h_ready);
    sem_wait_intr(&w->go_hold);
    uint64_t t0 = now_ns();
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t = now_ns();
        if (lock_err("W9M lock", dist_mutex_lock(&m[i])))
            return 1;
        w->lat[i] = (double)(now_ns() - t) / 1e3;
        w->pr.done = i + 1;
    }
    w->acquire_s = (double)(now_ns() - t0) / 1e9;
    sem_post(&w->h_held);
    sem_wait_intr(&w->go_release);
    for (unsigned long i = 0; i < w->n; i++)
        if (lock_err("W9M unlock", dist_mutex_unlock(&m[i])))
            return 1;
    sem_post(&w->h_released);
    sem_wait_intr(&w->go_exit);
    for (unsigned long i = 0; i < w->n; i++)
        dist_mutex_destroy(&m[i]);
    dist_mutex_destroy(&warm);
    free(m);
    return 0;
}

/* A waiter: connected both ways (a lock that times out at once: the
 * command connection and the subscriber's, the registration withdrawn),
 * then waits for lock 0. */
static int w9m_waiter(void *arg, int idx)
{
    (void)idx;
    w9m_t *w = arg;
    dist_mutex_t m;
    struct timespec ts;
    if (dist_mutex_init(&m, w->wait_name, NULL))
        return 1;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 5000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    int rc = dist_mutex_timedlock(&m, &ts);
    if (rc != ETIMEDOUT) {
        lock_err("W9M connect", rc ? rc : EINVAL);
        return 1;
    }
    gate_pass(&w->gate);
    if (lock_err("W9M wait", dist_mutex_lock(&m)) || lock_err("W9M unlock", dist_mutex_unlock(&m)))
        return 1;
    dist_mutex_destroy(&m);
    return 0;
}

static long long mem_now(redisContext *c, long long *keys)
{
    sleep_us(100000);         /* closed connections freed, lazy frees done */
    redisReply *r = rc_cmd(c, "DBSIZE");
    if (keys)
        *keys = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    return rc_info_ll(c, "memory", "used_memory");
}

/* Waits for a post of s while pid runs; 0 or -1. */
static int wait_one(sem_t *s, pid_t pid)
{
    return wait_posts(s, 1, &pid, 1);
}

static int run_w9m(void)
{
    unsigned long n = g_opt.quick ? 200 : 10000;
    int nw = g_opt.quick ? 4 : 64;
    size_t size = sizeof(w9m_t) + n * sizeof(double);
    w9m_t *w = shm_alloc(size);
    w->n = n;
    w->waiters = nw;
    w->pr.total = n;
    w9m_name(w->wait_name, sizeof w->wait_name, 0);
    sem_init(&w->h_ready, 1, 0);
    sem_init(&w->h_held, 1, 0);
    sem_init(&w->h_released, 1, 0);
    sem_init(&w->go_hold, 1, 0);
    sem_init(&w->go_release, 1, 0);
    sem_init(&w->go_exit, 1, 0);
    gate_init(&w->gate, nw);
    int rc = -1;
    pid_t pids[1 + 256] = { 0 };
    rclients_t cl1 = { 0 }, cl2 = { 0 };
    rnodes_t here;
    rnodes_single(&here);
    long long m0 = 0, m1 = 0, m2 = 0, m3 = 0, m4 = 0, k0 = 0, k1 = 0, k4 = 0, kx = 0;
    redisContext *c = rc_connect("bench-ctl");
    char qkey[400];
    if (!c || lock_key(qkey, sizeof qkey, w->wait_name, 3))
        goto out;
    pids[0] = spawn(w9m_holder, w, 0);
    if (wait_one(&w->h_ready, pids[0]))
        goto reap;
    m0 = mem_now(c, &k0);
    sem_post(&w->go_hold);
    while (sem_trywait(&w->h_held)) {
        if (any_exited(pids, 1))
            goto reap;
        progress_show("W9M holding", &w->pr);
        sleep_us(20000);
    }
    m1 = mem_now(c, &k1);
    rnodes_clients(&here, &cl1);
    for (int i = 0; i < nw; i++)
        pids[1 + i] = spawn(w9m_waiter, w, i);
    if (gate_wait_ready(&w->gate, pids, 1 + nw))
        goto reap;
    m2 = mem_now(c, &kx);
    rnodes_clients(&here, &cl2);
    gate_open(&w->gate);
    uint64_t give_up = now_ns() + 60000000000ull;
    for (;;) {                /* every waiter in the queue */
        redisReply *r = rc_cmd(c, "ZCARD %s", qkey);
        long long q = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        if (r)
            freeReplyObject(r);
        if (q == nw)
            break;
        if (now_ns() > give_up || any_exited(pids, 1 + nw)) {
            output_error("W9M", "%lld of %d waiters queued", q, nw);
            goto reap;
        }
        sleep_us(20000);
    }
    m3 = mem_now(c, &kx);
    sem_post(&w->go_release);
    if (wait_one(&w->h_released, pids[0]))
        goto reap;
    if (wait_workers(pids + 1, nw, "W9M waiters", NULL)) {
        for (int i = 1; i <= nw; i++)
            pids[i] = 0;
        goto reap;
    }
    for (int i = 1; i <= nw; i++)
        pids[i] = 0;
    m4 = mem_now(c, &k4);
    rc = 0;
reap:
    sem_post(&w->go_exit);
    sem_post(&w->go_hold);
    sem_post(&w->go_release);
    gate_open(&w->gate);
    for (int i = 1; i <= nw; i++)
        if (pids[i] > 0 && rc)
            kill(pids[i], SIGKILL);
    if (wait_workers(pids, pids[1] ? 1 + nw : 1, "W9M", NULL) || rc) {
        rc = -1;
        output_error("W9M", "workers failed");
        goto out;
    }
    {
        result_t *r = result_timed("distlock", "W9M", w->lat, n, (uint64_t)(w->acquire_s * 1e9));
        result_extra(r, "held", "%lu", n);
        result_extra(r, "bytes_per_held_lock", "%.0f", (double)(m1 - m0) / (double)n);
        result_extra(r, "keys_per_held_lock", "%.2f", (double)(k1 - k0) / (double)n);
        result_extra(r, "waiters", "%d", nw);
        result_extra(r, "bytes_per_connected_process", "%.0f", (double)(m2 - m1) / nw);
        result_extra(r, "conns_per_connected_process", "%.2f",
                     (double)(cl2.library - cl1.library) / nw);
        result_extra(r, "bytes_per_waiter", "%.0f", (double)(m3 - m2) / nw);
        result_extra(r, "bytes_per_idle_name", "%.0f", (double)(m4 - m0) / (double)n);
        result_extra(r, "keys_per_idle_name", "%.2f", (double)(k4 - k0) / (double)n);
        result_extra(r, "latency", "acquire");
        result_emit(r);
        step_line("W9M distlock", "%lu held: %.0f B each (%.2f keys); %d waiters: %.0f B each, "
                  "%.0f B per connected process; idle name %.0f B", n,
                  (double)(m1 - m0) / (double)n, (double)(k1 - k0) / (double)n, nw,
                  (double)(m3 - m2) / nw, (double)(m2 - m1) / nw, (double)(m4 - m0) / (double)n);
    }
    /* The naive lock's: a held lock is its key (SET NX PX), gone when
     * released; a waiter keeps nothing in Redis (it polls). */
    {
        long long a = mem_now(c, &k0);
        char name[128];
        for (unsigned long i = 0; i < n; i++) {
            w9m_name(name, sizeof name, i);
            redisAppendCommand(c, "SET naive:{%s} %d-%lu NX PX 30000", name, (int)getpid(), i);
        }
        for (unsigned long i = 0; i < n; i++) {
            redisReply *x = NULL;
            if (redisGetReply(c, (void **)&x) != REDIS_OK)
                goto out;
            freeReplyObject(x);
        }
        long long h = mem_now(c, &k1);
        for (unsigned long i = 0; i < n; i++) {
            w9m_name(name, sizeof name, i);
            redisAppendCommand(c, "DEL naive:{%s}", name);
        }
        for (unsigned long i = 0; i < n; i++) {
            redisReply *x = NULL;
            if (redisGetReply(c, (void **)&x) != REDIS_OK)
                goto out;
            freeReplyObject(x);
        }
        long long e = mem_now(c, &k4);
        result_t *r = result_new("naive", "W9M");
        result_extra(r, "held", "%lu", n);
        result_extra(r, "bytes_per_held_lock", "%.0f", (double)(h - a) / (double)n);
        result_extra(r, "keys_per_held_lock", "%.2f", (double)(k1 - k0) / (double)n);
        result_extra(r, "bytes_per_waiter", "0");
        result_extra(r, "bytes_per_idle_name", "%.0f", (double)(e - a) / (double)n);
        result_extra(r, "keys_per_idle_name", "%.2f", (double)(k4 - k0) / (double)n);
        result_extra(r, "latency", "none");
        result_emit(r);
    }
out:
    if (c)
        redisFree(c);
    gate_destroy(&w->gate);
    sem_destroy(&w->h_ready);
    sem_destroy(&w->h_held);
    sem_destroy(&w->h_released);
    sem_destroy(&w->go_hold);
    sem_destroy(&w->go_release);
    sem_destroy(&w->go_exit);
    shm_free(w, size);
    return rc;
}

/* ============================================================ the run */
static void list_of(const int **v, int *n, const int *opt, int nopt, const int *dflt, int ndflt,
                    const int *quick, int nquick)
{
    if (nopt) {
        *v = opt;
        *n = nopt;
    } else if (g_opt.quick) {
        *v = quick;
        *n = nquick;
    } else {
        *v = dflt;
        *n = ndflt;
    }
}

static void curves_on(const rnodes_t *where, int masters, const int *procs, int np, double secs,
                      int *rc)
{
    double idle = rnodes_idle_cpu(where, g_opt.quick ? 200000 : 1000000);
    for (int own = 0; own < 2; own++)
        for (int i = 0; i < np; i++) {
            *rc |= w9p_step(PEER_DISTLOCK, own, procs[i], where, masters, secs, idle);
            if (!g_opt.no_naive)
                *rc |= w9p_step(PEER_NAIVE, own, procs[i], where, masters, secs, idle);
        }
}

int run_w9(void)
{
    const int *procs, *masters;
    int np, nm, rc = 0;
    list_of(&procs, &np, g_opt.w9_procs, g_opt.w9_nprocs, dflt_procs, 9, quick_procs, 3);
    list_of(&masters, &nm, g_opt.w9_masters, g_opt.w9_nmasters, dflt_masters, 3, quick_masters, 2);
    double secs = g_opt.w9_seconds > 0 ? g_opt.w9_seconds : g_opt.quick ? 0.3 : 3;
    if (g_rep == 1) {
        w9_t0 = now_ns();
        steps_total = (int)g_opt.repeat * (nm * 2 * np * (g_opt.no_naive ? 1 : 2) + 1);
    }
    for (int k = 0; k < nm; k++) {
        rnodes_t where;
        rcluster_t cl;
        char wn[24];
        if (!masters[k]) {
            rnodes_single(&where);
        } else {
            char tag[8];
            snprintf(tag, sizeof tag, "W9P%d", masters[k]);
            if (rcl_start(&cl, masters[k], tag)) {
                output_error(tag, "the cluster of %d masters did not start", masters[k]);
                rcl_stop(&cl);
                rc = -1;
                continue;
            }
            rnodes_cluster(&where, &cl);
        }
        if (!g_opt.no_progress)
            fprintf(stderr, "W9 rep %d/%lu: %s\n", g_rep, g_opt.repeat,
                    where_name(masters[k], wn, sizeof wn));
        curves_on(&where, masters[k], procs, np, secs, &rc);
        if (masters[k])
            rcl_stop(&cl);
    }
    rc |= run_w9m();
    return rc;
}

/* ============================================================ charts */
/* The values of field `key` (ops_per_s, p50_us, p99_us, or an extra
 * field) of peer's results of workload wl, at x = the field `xkey`, over
 * every repetition, into s. */
static void series_of(chart_series_t *s, const char *peer, const char *wl, const char *xkey,
                      const char *key)
{
    double xs[CHART_MAX_PTS];
    int nx = 0;
    int nres = results_count();
    for (int i = 0; i < nres; i++) {
        const result_t *r = result_at(i);
        double x;
        if (r->skipped || strcmp(r->peer, peer) || strcmp(r->workload, wl) ||
            result_get(r, xkey, &x))
            continue;
        int seen = 0;
        for (int k = 0; k < nx; k++)
            seen |= xs[k] == x;
        if (!seen && nx < CHART_MAX_PTS)
            xs[nx++] = x;
    }
    for (int k = 0; k < nx; k++) {
        double v[BENCH_MAX_REPEAT];
        int n = 0;
        for (int i = 0; i < nres && n < BENCH_MAX_REPEAT; i++) {
            const result_t *r = result_at(i);
            double x, y;
            if (r->skipped || strcmp(r->peer, peer) || strcmp(r->workload, wl) ||
                result_get(r, xkey, &x) || x != xs[k])
                continue;
            if (!strcmp(key, "ops_per_s"))
                y = r->ops_per_s;
            else if (!strcmp(key, "p99_us"))
                y = r->p99_us;
            else if (!strcmp(key, "p50_us"))
                y = r->p50_us;
            else if (result_get(r, key, &y))
                continue;
            v[n++] = y;
        }
        chart_add(s, xs[k], v, n);
    }
}

static const char *const colors[] = { "#1f5fbf", "#2a9d4a", "#8a3fbf", "#e07b00", "#c33",
                                      "#b8860b" };

static void panel_of(chart_panel_t *p, const char *title, int logy, const char *base,
                     const char *key)
{
    snprintf(p->title, sizeof p->title, "%s", title);
    p->logy = logy;
    p->nseries = 0;
    static const int ms[] = { 0, 3, 6 };
    for (int peer = 0; peer < 2; peer++)
        for (int k = 0; k < 3; k++) {
            char wl[8];
            snprintf(wl, sizeof wl, ms[k] ? "%s%d" : "%s", base, ms[k]);
            chart_series_t *s = &p->s[p->nseries];
            memset(s, 0, sizeof *s);
            series_of(s, peer_name(peer == 0 ? PEER_DISTLOCK : PEER_NAIVE), wl, "procs", key);
            if (!s->n)
                continue;
            snprintf(s->label, sizeof s->label, "%s, %s", peer ? "naive" : "distlock",
                     ms[k] ? (ms[k] == 3 ? "3 masters" : "6 masters") : "1 server");
            s->color = colors[peer * 3 + k];
            s->dashed = peer;
            p->nseries++;
        }
}

static int write_curve_chart(const char *base, const char *file, const char *what)
{
    chart_t *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    snprintf(c->title, sizeof c->title, "W9: %s", what);
    char secs[48] = "";
    if (g_opt.w9_seconds > 0)
        snprintf(secs, sizeof secs, " --w9-seconds %g", g_opt.w9_seconds);
    snprintf(c->subtitle, sizeof c->subtitle, "distlock-bench%s --repeat %lu%s W9, run %s: the "
             "median of the repetitions, a bar from the least to the largest", g_opt.quick ?
             " --quick" : "", g_opt.repeat, secs, g_run_id);
    snprintf(c->xlabel, sizeof c->xlabel, "processes (log scale)");
    panel_of(&c->p[c->npanels++], "operations per second", 0, base, "ops_per_s");
    panel_of(&c->p[c->npanels++], "fairness: least / largest share", 0, base, "fairness");
    panel_of(&c->p[c->npanels++], "wait in lock(): p99 (us, log)", 1, base, "p99_us");
    panel_of(&c->p[c->npanels++], "wait in lock(): longest (us, log)", 1, base, "wait_max_us");
    panel_of(&c->p[c->npanels++], "Redis CPU per operation (us, all nodes)", 1, base,
             "redis_cpu_us_per_op");
    panel_of(&c->p[c->npanels++], "client CPU per operation (us, all threads)", 1, base,
             "client_cpu_us_per_op");
    panel_of(&c->p[c->npanels++], "Redis connections per process (CLIENT LIST)", 0, base,
             "conns_per_proc");
    panel_of(&c->p[c->npanels++], "client resident memory per process (VmRSS, kB)", 0, base,
             "rss_kb_mean");
    panel_of(&c->p[c->npanels++], "client threads' wait for a CPU per operation (us, log)", 1,
             base, "runq_wait_us_per_op");
    panel_of(&c->p[c->npanels++], "Redis commands per operation (scripts' own included)", 0,
             base, "redis_cmds_per_op");
    char path[600];
    snprintf(path, sizeof path, "%s/%s", g_opt.svg_dir ? g_opt.svg_dir : ".", file);
    int rc = c->p[0].nseries ? chart_write(c, path) : 0;
    if (rc)
        output_error("W9", "could not write %s", path);
    else if (c->p[0].nseries && !g_opt.no_progress)
        fprintf(stderr, "distlock-bench: wrote %s\n", path);
    free(c);
    return rc;
}

/* W9L's chart: one series (the run's lease), x = the locks held.  The
 * naive lock has no lease to renew, so it has no line here. */
int w9l_chart(void)
{
    chart_t *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    double lease = 0;
    for (int i = 0; i < results_count(); i++)
        if (!strcmp(result_at(i)->workload, "W9L") &&
            !result_get(result_at(i), "lease_ms", &lease))
            break;
    snprintf(c->title, sizeof c->title, "W9L: one process, one thread, holding N locks for "
             "3 leases (%.0f ms), idle", lease);
    snprintf(c->subtitle, sizeof c->subtitle, "distlock-bench%s --repeat %lu W9L, run %s: the "
             "median of the repetitions, a bar from the least to the largest", g_opt.quick ?
             " --quick" : "", g_opt.repeat, g_run_id);
    snprintf(c->xlabel, sizeof c->xlabel, "locks held (log scale)");
    static const struct { const char *title, *key; int logy; } pn[] = {
        { "acquire time per lock (us)", "acquire_us_per_lock", 0 },
        { "acquire time per lock, last tenth (us)", "acquire_us_last10", 0 },
        { "renewal round trips per renewal tick (log)", "renew_round_trips_per_period", 1 },
        { "Redis CPU while holding (%)", "redis_cpu_pct", 0 },
        { "holding process's CPU while idle (%)", "idle_cpu_pct", 0 },
        { "holding process's wake-ups per second", "wakeups_per_s", 0 },
        { "client resident memory per held lock (bytes)", "rss_bytes_per_lock", 0 },
        { "Redis memory per held lock (bytes)", "redis_bytes_per_lock", 0 },
        { "unlocks that failed: holds lost (ENOLCK)", "unlock_errors", 0 },
    };
    for (size_t k = 0; k < sizeof pn / sizeof pn[0]; k++) {
        chart_panel_t *p = &c->p[c->npanels++];
        snprintf(p->title, sizeof p->title, "%s", pn[k].title);
        p->logy = pn[k].logy;
        chart_series_t *sr = &p->s[0];
        series_of(sr, "distlock", "W9L", "locks", pn[k].key);
        snprintf(sr->label, sizeof sr->label, "distlock, lease %.0f ms", lease);
        sr->color = colors[0];
        p->nseries = sr->n ? 1 : 0;
    }
    char path[600];
    if (g_opt.w9_lease_ms)
        snprintf(path, sizeof path, "%s/w9-many-locks-lease%lums.svg",
                 g_opt.svg_dir ? g_opt.svg_dir : ".", g_opt.w9_lease_ms);
    else
        snprintf(path, sizeof path, "%s/w9-many-locks.svg", g_opt.svg_dir ? g_opt.svg_dir : ".");
    int rc = c->p[0].nseries ? chart_write(c, path) : 0;
    if (rc)
        output_error("W9L", "could not write %s", path);
    else if (c->p[0].nseries && !g_opt.no_progress)
        fprintf(stderr, "distlock-bench: wrote %s\n", path);
    free(c);
    return rc;
}

int w9_charts(void)
{
    int rc = write_curve_chart("W9P", "w9-one-lock.svg", "one lock, N processes, each "
                               "{lock; GET ctr; SET ctr v+1; unlock}");
    rc |= write_curve_chart("W9O", "w9-own-locks.svg", "N processes, each on a lock of its own");
    return rc;
}
