/* SPDX-License-Identifier: BSD-3-Clause */
/* rcluster.c - a Redis Cluster of the bench's own: n masters started by
 * tools/launch/ like the run's server, given their slots, met, and waited
 * for; stopped by pid, their files removed. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cluster.h"

redisReply *rcl_at(int port, const char *fmt, ...)
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

static int at_ok(const rcluster_t *c, int port, const char *what, redisReply *r)
{
    int ok = r && r->type != REDIS_REPLY_ERROR;
    if (!ok)
        fprintf(stderr, "distlock-bench: %s: %s on %d: %s\n", c->wl, what, port,
                r ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

redisContext *rcl_connect(const rcluster_t *c, int i, const char *name)
{
    struct timeval tv = { 10, 0 };
    redisContext *k = redisConnectWithTimeout("127.0.0.1", c->node[i].port, tv);
    if (!k || k->err) {
        fprintf(stderr, "distlock-bench: %s: connecting to 127.0.0.1:%d: %s\n", c->wl,
                c->node[i].port, k ? k->errstr : "out of memory");
        if (k)
            redisFree(k);
        return NULL;
    }
    if (name) {
        redisReply *r = redisCommand(k, "CLIENT SETNAME %s", name);
        if (r)
            freeReplyObject(r);
    }
    return k;
}

void rcl_stop(rcluster_t *c)
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
static int ready(const rcluster_t *c)
{
    for (int i = 0; i < c->n; i++) {
        redisReply *r = rcl_at(c->node[i].port, "CLUSTER INFO");
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

int rcl_start(rcluster_t *c, int n, const char *wl)
{
    memset(c, 0, sizeof *c);
    snprintf(c->wl, sizeof c->wl, "%s", wl);
    if (n < 1 || n > RCL_MAX)
        return -1;
    c->n = n;
    snprintf(c->dir, sizeof c->dir, "%s/distlock-bench-cl.XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(c->dir)) {
        c->dir[0] = 0;
        fprintf(stderr, "distlock-bench: %s: mkdtemp: %s\n", wl, strerror(errno));
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
            fprintf(stderr, "distlock-bench: %s: could not start a cluster node (%s)\n", wl, log);
            return -1;
        }
        track_pid(c->node[i].pid);
    }
    for (int i = 0; i < n; i++) {
        int port = c->node[i].port;
        long lo = (long)i * 16384 / n, hi = (long)(i + 1) * 16384 / n - 1;
        if (at_ok(c, port, "CLUSTER ADDSLOTSRANGE",
                  rcl_at(port, "CLUSTER ADDSLOTSRANGE %ld %ld", lo, hi)) ||
            at_ok(c, port, "CLUSTER SET-CONFIG-EPOCH",
                  rcl_at(port, "CLUSTER SET-CONFIG-EPOCH %d", i + 1)))
            return -1;
    }
    for (int i = 1; i < n; i++)
        if (at_ok(c, c->node[0].port, "CLUSTER MEET",
                  rcl_at(c->node[0].port, "CLUSTER MEET 127.0.0.1 %d %d", c->node[i].port,
                         c->bus[i])))
            return -1;
    uint64_t give_up = now_ns() + 30ull * 1000000000ull;
    while (!ready(c)) {
        if (now_ns() > give_up) {
            fprintf(stderr, "distlock-bench: %s: the cluster of %d did not come up\n", wl, n);
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

int rcl_master_of(const rcluster_t *c, const char *key)
{
    long s = (long)dl_cluster_slot(key, strlen(key));
    int m = 0;
    while (m + 1 < c->n && (long)(m + 1) * 16384 / c->n <= s)   /* rcl_start's split */
        m++;
    return m;
}

void rcl_name_on(const rcluster_t *c, int m, const char *wl, const char *tag, int k, char *buf,
                 size_t size)
{
    char base[96], key[256];
    for (int j = 0;; j++) {
        snprintf(base, sizeof base, "%s%d.%d", tag, k, j);
        lock_name(buf, size, wl, base);
        if (lock_key(key, sizeof key, buf, 0))
            return;
        if (rcl_master_of(c, key) == m)
            return;
    }
}
