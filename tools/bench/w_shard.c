/* SPDX-License-Identifier: BSD-3-Clause */
/* w_shard.c - SH: pushes in a Redis Cluster the bench starts of its own,
 * 3 masters (SH3), then 6 (SH6), no replicas, the slots split evenly.
 *
 *  - the push traffic: 4 processes x 300 x {lock; unlock} on one lock (the
 *    shape measured in issue 30: 1,200 operations): the cluster-bus
 *    messages the nodes sent to publish (CLUSTER INFO
 *    cluster_stats_messages_publish_sent, classic PUBLISH, broadcast to
 *    every node; ..._publishshard_sent, SPUBLISH, to the replicas of the
 *    slot's master only), and the PUBLISH and SPUBLISH calls (INFO
 *    commandstats: the scripts' own), summed over the nodes, per
 *    operation;
 *  - the handoffs: 12 processes in 6 pairs, each pair contending on a
 *    lock of its own, the 6 locks spread evenly over the masters, each
 *    process 400 x {lock; unlock}: operations per second over all (the
 *    RESULT's ops_per_s; p50/p99: each lock call), Redis CPU per
 *    operation summed over the nodes (less what they spend idle, measured
 *    for a second before: the cluster bus's own pings), and bus messages
 *    per operation.
 *
 * RESULT peer=distlock workload=SH3|SH6 ops_per_s=<handoffs> p50_us p99_us
 * extra=masters=M,push_ops=N,bus_publish_per_op=...,... */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cluster.h"
#include "distlock.h"
#include "launch.h"
#include "status.h"

#define SH_MAX_MASTERS 6
#define SH_PUSH_PROCS 4
#define SH_PAIR_PROCS 12

/* ---------------------------------------------------------- the cluster */

typedef struct shcl {
    int n;
    dl_launched_t node[SH_MAX_MASTERS];
    int bus[SH_MAX_MASTERS];
    char dir[64];
    char url[400];
} shcl_t;

static redisReply *at(int port, const char *fmt, ...)
{
    struct timeval tv = { 5, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

static int at_ok(int port, const char *what, redisReply *r)
{
    int ok = r && r->type != REDIS_REPLY_ERROR;
    if (!ok)
        fprintf(stderr, "distlock-bench: SH: %s on %d: %s\n", what, port,
                r ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

static void cl_stop(shcl_t *c)
{
    for (int i = 0; i < c->n; i++)
        if (c->node[i].pid > 0) {
            dl_launch_stop(c->node[i].pid, 5000);
            untrack_pid(c->node[i].pid);
            c->node[i].pid = 0;
        }
    if (c->dir[0]) {
        char f[128];
        for (int i = 0; i < c->n; i++) {
            snprintf(f, sizeof f, "%s/nodes-%d.conf", c->dir, i);
            unlink(f);
            snprintf(f, sizeof f, "%s/redis-%d.log", c->dir, i);
            unlink(f);
        }
        rmdir(c->dir);
        c->dir[0] = 0;
    }
}

/* Whether every node says cluster_state:ok and knows all n. */
static int cl_ready(const shcl_t *c)
{
    for (int i = 0; i < c->n; i++) {
        redisReply *r = at(c->node[i].port, "CLUSTER INFO");
        int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
        if (ok) {
            const char *k = strstr(r->str, "cluster_known_nodes:");
            ok = k && atoi(k + 20) == c->n;
        }
        if (r)
            freeReplyObject(r);
        if (!ok)
            return 0;
    }
    return 1;
}

/* n masters on free ports, slots split evenly (master i: slots
 * [i*16384/n, (i+1)*16384/n)), met through the first.  0 or -1. */
static int cl_start(shcl_t *c, int n)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    snprintf(c->dir, sizeof c->dir, "/tmp/distlock-bench-sh.XXXXXX");
    if (!mkdtemp(c->dir)) {
        c->dir[0] = 0;
        fprintf(stderr, "distlock-bench: SH: mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    if (dl_launch_free_ports(n, c->bus))
        return -1;
    for (int i = 0; i < n; i++) {
        char conf[32], bus[16], log[128];
        snprintf(conf, sizeof conf, "nodes-%d.conf", i);
        snprintf(bus, sizeof bus, "%d", c->bus[i]);
        snprintf(log, sizeof log, "%s/redis-%d.log", c->dir, i);
        const char *extra[] = { "--cluster-enabled", "yes", "--cluster-config-file", conf,
                                "--cluster-port", bus, "--cluster-node-timeout", "5000",
                                "--logfile", log, NULL };
        dl_launch_t how = { .program = g_opt.redis_server, .dir = c->dir, .extra = extra,
                            .deathsig = SIGTERM, .own_group = 1 };
        if (dl_launch_start(&how, 0, &c->node[i])) {
            fprintf(stderr, "distlock-bench: SH: could not start a cluster node (%s)\n", log);
            return -1;
        }
        track_pid(c->node[i].pid);
    }
    for (int i = 0; i < n; i++) {
        int port = c->node[i].port;
        long lo = (long)i * 16384 / n, hi = (long)(i + 1) * 16384 / n - 1;
        if (at_ok(port, "CLUSTER ADDSLOTSRANGE", at(port, "CLUSTER ADDSLOTSRANGE %ld %ld", lo, hi)) ||
            at_ok(port, "CLUSTER SET-CONFIG-EPOCH", at(port, "CLUSTER SET-CONFIG-EPOCH %d", i + 1)))
            return -1;
    }
    for (int i = 1; i < n; i++)
        if (at_ok(c->node[0].port, "CLUSTER MEET",
                  at(c->node[0].port, "CLUSTER MEET 127.0.0.1 %d %d", c->node[i].port, c->bus[i])))
            return -1;
    uint64_t give_up = now_ns() + 30ull * 1000000000ull;
    while (!cl_ready(c)) {
        if (now_ns() > give_up) {
            fprintf(stderr, "distlock-bench: SH: the cluster of %d did not come up\n", n);
            return -1;
        }
        sleep_us(100000);
    }
    size_t len = (size_t)snprintf(c->url, sizeof c->url, "redis-cluster://");
    for (int i = 0; i < n && len < sizeof c->url; i++)
        len += (size_t)snprintf(c->url + len, sizeof c->url - len, "%s127.0.0.1:%d", i ? "," : "",
                                c->node[i].port);
    return 0;
}

/* What the nodes published, and their CPU, summed. */
typedef struct shstat {
    long long bus_publish, bus_shard, publish, spublish;
    double cpu_s;
} shstat_t;

static long long field_ll(const char *s, const char *field)
{
    const char *p = strstr(s, field);
    return p ? atoll(p + strlen(field)) : 0;
}

static void cl_stats(const shcl_t *c, shstat_t *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < c->n; i++) {
        redisReply *r = at(c->node[i].port, "CLUSTER INFO");
        if (r && r->type == REDIS_REPLY_STRING) {
            s->bus_publish += field_ll(r->str, "cluster_stats_messages_publish_sent:");
            s->bus_shard += field_ll(r->str, "cluster_stats_messages_publishshard_sent:");
        }
        if (r)
            freeReplyObject(r);
        redisContext *k = redisConnect("127.0.0.1", c->node[i].port);
        if (k && !k->err) {
            long long calls, usec;
            if (rc_cmdstat(k, "publish", &calls, &usec) == 0)
                s->publish += calls;
            if (rc_cmdstat(k, "spublish", &calls, &usec) == 0)
                s->spublish += calls;
            s->cpu_s += rc_cpu_seconds(k);
        }
        if (k)
            redisFree(k);
    }
}

/* A lock name whose slot is served by master m of c (tag: what it is
 * for, k: which). */
static void name_on(const shcl_t *c, int m, const char *tag, int k, char *buf, size_t size)
{
    char base[96], key[256];
    for (int j = 0;; j++) {
        snprintf(base, sizeof base, "%s%d.%d", tag, k, j);
        lock_name(buf, size, c->n == 3 ? "SH3" : "SH6", base);
        if (lock_key(key, sizeof key, buf, 0))
            return;
        unsigned s = dl_cluster_slot(key, strlen(key));
        if ((int)((long)s * c->n / 16384) == m)
            return;
    }
}

/* ---------------------------------------------------------- the workers */

typedef struct wsh {
    char url[400];
    char names[SH_PAIR_PROCS][160];   /* each worker's lock */
    unsigned long n;                  /* operations per worker */
    int procs;
    progress_t pr;
    unsigned long fallbacks[SH_PAIR_PROCS];
    gate_t gate;
    double lat[];                     /* procs * n lock calls (us) */
} wsh_t;

static int sh_worker(void *arg, int idx)
{
    wsh_t *w = arg;
    setenv("DISTLOCK_URL", w->url, 1);
    dist_mutex_t m;
    if (mutex_warm(&m, w->names[idx]))
        return 1;
    gate_pass(&w->gate);
    double *lat = w->lat + (size_t)idx * w->n;
    for (unsigned long i = 0; i < w->n; i++) {
        uint64_t t = now_ns();
        if (lock_err("SH lock", dist_mutex_lock(&m)))
            return 1;
        lat[i] = (double)(now_ns() - t) / 1e3;
        if (lock_err("SH unlock", dist_mutex_unlock(&m)))
            return 1;
        __atomic_add_fetch(&w->pr.done, 1, __ATOMIC_RELAXED);
    }
    dl_stats_t st;
    dl_stats_get(&st);
    w->fallbacks[idx] = st.fallback_checks;
    dist_mutex_destroy(&m);
    return 0;
}

/* One phase: procs workers, n operations each, worker i on names[i].
 * The time it took (ns), or 0 on failure. */
static uint64_t sh_phase(wsh_t *w, const char *label)
{
    pid_t pids[SH_PAIR_PROCS];
    uint64_t t0;
    gate_init(&w->gate, w->procs);
    w->pr.done = 0;
    w->pr.total = (unsigned long)w->procs * w->n;
    int rc = spawn_gated(sh_worker, w, pids, w->procs, &w->gate, NULL, NULL, &t0);
    rc |= wait_workers(pids, w->procs, label, &w->pr);
    uint64_t ns = now_ns() - t0;
    gate_destroy(&w->gate);
    return rc ? 0 : ns;
}

static int run_sh_masters(int masters)
{
    char wl[8];
    snprintf(wl, sizeof wl, "SH%d", masters);
    shcl_t c;
    unsigned long push_n = g_opt.quick ? 50 : 300, pair_n = g_opt.quick ? 60 : 400;
    size_t size = sizeof(wsh_t) + (size_t)SH_PAIR_PROCS * pair_n * sizeof(double);
    wsh_t *w = shm_alloc(size);
    int rc = -1;
    if (cl_start(&c, masters))
        goto out;
    snprintf(w->url, sizeof w->url, "%s", c.url);

    /* The push traffic: 4 processes on one lock (on the first master). */
    shstat_t a, b, d;
    char one[160];
    name_on(&c, 0, "push", 0, one, sizeof one);
    for (int i = 0; i < SH_PUSH_PROCS; i++)
        snprintf(w->names[i], sizeof w->names[i], "%s", one);
    w->procs = SH_PUSH_PROCS;
    w->n = push_n;
    cl_stats(&c, &a);
    if (!sh_phase(w, wl))
        goto out;
    cl_stats(&c, &b);
    double push_ops = (double)SH_PUSH_PROCS * (double)push_n;

    /* The handoffs: 6 pairs, the pair k on a lock of master k mod M. */
    for (int k = 0; k < SH_PAIR_PROCS / 2; k++) {
        name_on(&c, k % masters, "pair", k, w->names[2 * k], sizeof w->names[2 * k]);
        snprintf(w->names[2 * k + 1], sizeof w->names[2 * k + 1], "%s", w->names[2 * k]);
    }
    w->procs = SH_PAIR_PROCS;
    w->n = pair_n;
    /* The nodes' own CPU while nobody locks (the cluster bus's pings, the
     * cron): subtracted from the phase's. */
    shstat_t i0, i1;
    cl_stats(&c, &i0);
    uint64_t it = now_ns();
    sleep_us(1000000);
    cl_stats(&c, &i1);
    double idle_per_s = (i1.cpu_s - i0.cpu_s) / ((double)(now_ns() - it) / 1e9);
    cl_stats(&c, &b);
    unsigned long fb0 = 0, fb1 = 0;
    for (int i = 0; i < SH_PUSH_PROCS; i++)
        fb0 += w->fallbacks[i];
    memset(w->fallbacks, 0, sizeof w->fallbacks);
    uint64_t ns = sh_phase(w, wl);
    if (!ns)
        goto out;
    cl_stats(&c, &d);
    for (int i = 0; i < SH_PAIR_PROCS; i++)
        fb1 += w->fallbacks[i];
    double pair_ops = (double)SH_PAIR_PROCS * (double)pair_n;
    size_t nlat = (size_t)SH_PAIR_PROCS * pair_n;
    result_t *r = result_timed("distlock", wl, w->lat, nlat, ns);
    result_extra(r, "masters", "%d", masters);
    result_extra(r, "push_ops", "%.0f", push_ops);
    result_extra(r, "bus_publish_per_op", "%.3f", (double)(b.bus_publish - a.bus_publish) / push_ops);
    result_extra(r, "bus_publishshard_per_op", "%.3f", (double)(b.bus_shard - a.bus_shard) / push_ops);
    result_extra(r, "publish_calls_per_op", "%.3f", (double)(b.publish - a.publish) / push_ops);
    result_extra(r, "spublish_calls_per_op", "%.3f", (double)(b.spublish - a.spublish) / push_ops);
    result_extra(r, "push_fallback_checks", "%lu", fb0);
    result_extra(r, "pair_procs", "%d", SH_PAIR_PROCS);
    result_extra(r, "pair_ops", "%.0f", pair_ops);
    result_extra(r, "pair_bus_publish_per_op", "%.3f",
                 (double)(d.bus_publish - b.bus_publish) / pair_ops);
    double busy = d.cpu_s - b.cpu_s - idle_per_s * (double)ns / 1e9;
    result_extra(r, "pair_redis_cpu_us_per_op", "%.1f", (busy > 0 ? busy : 0) * 1e6 / pair_ops);
    result_extra(r, "idle_redis_cpu_pct", "%.1f", idle_per_s * 100);
    result_extra(r, "pair_fallback_checks", "%lu", fb1);
    result_extra(r, "latency", "lock-call");
    result_emit(r);
    rc = 0;
out:
    if (rc)
        output_error(wl, "the cluster run failed");
    cl_stop(&c);
    shm_free(w, size);
    return rc;
}

int run_sh(void)
{
    int rc = run_sh_masters(3);
    rc |= run_sh_masters(6);
    return rc;
}
