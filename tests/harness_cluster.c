/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_cluster.c - see harness_cluster.h. */
#include "harness_topo.h"


#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* ------------------------------------------------------------- cluster */

int tt_cluster_index(const tt_cluster_t *c, int port)
{
    for (int i = 0; i < TT_CLUSTER_NODES; i++)
        if (c->node[i].port == port)
            return i;
    return -1;
}

int tt_cluster_slot_map(const tt_cluster_t *c, int i, int *map)
{
    redisReply *r = th_cmd_at(c->node[i].port, "CLUSTER SLOTS");
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    memset(map, 0, 16384 * sizeof *map);
    for (size_t k = 0; k < r->elements; k++) {
        redisReply *e = r->element[k];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[2]->type != REDIS_REPLY_ARRAY ||
            e->element[2]->elements < 2)
            continue;
        long long lo = e->element[0]->integer, hi = e->element[1]->integer;
        int port = (int)e->element[2]->element[1]->integer;
        for (long long s = lo; s <= hi && s < 16384; s++)
            if (s >= 0)
                map[s] = port;
    }
    freeReplyObject(r);
    return 0;
}

int tt_cluster_masters(const tt_cluster_t *c, int *idx, int max)
{
    int *map = malloc(16384 * sizeof *map);
    int n = 0;
    if (map && tt_cluster_slot_map(c, 0, map) == 0) {
        for (int s = 0; s < 16384; s++) {
            int i = tt_cluster_index(c, map[s]);
            if (i < 0)
                continue;
            int seen = 0;
            for (int k = 0; k < n; k++)
                seen |= idx[k] == i;
            if (!seen && n < max)
                idx[n++] = i;
        }
    }
    free(map);
    return n;
}

static int cluster_ok(void *p)
{
    const tt_cluster_t *c = p;
    int *m0 = malloc(16384 * sizeof *m0), *mi = malloc(16384 * sizeof *mi);
    int ok = m0 && mi;
    for (int i = 0; ok && i < TT_CLUSTER_NODES; i++) {
        if (!c->node[i].pid)
            continue;
        redisReply *r = th_cmd_at(c->node[i].port, "CLUSTER INFO");
        ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
        if (r)
            freeReplyObject(r);
        if (!ok)
            break;
        if (tt_cluster_slot_map(c, i, i ? mi : m0) != 0) {
            ok = 0;
            break;
        }
        if (i == 0) {
            for (int s = 0; s < 16384 && ok; s++)
                ok = m0[s] != 0;
        } else {
            ok = memcmp(m0, mi, 16384 * sizeof *m0) == 0;
        }
    }
    free(m0);
    free(mi);
    return ok;
}

int tt_cluster_wait_ok(const tt_cluster_t *c, long timeout_ms)
{
    return th_wait_until(cluster_ok, (void *)c, timeout_ms);
}

/* Every master's replica acknowledges a write (WAIT 1): replicas that have
 * just synchronised get nothing streamed until their next ACK (<= 1 s). */
static int cluster_replicas_ack(const tt_cluster_t *c, long timeout_ms)
{
    int *map = malloc(16384 * sizeof *map);
    int ok = map && tt_cluster_slot_map(c, 0, map) == 0;
    int64_t deadline = th_now_ms() + timeout_ms;
    for (int i = 0; ok && i < TT_CLUSTER_NODES; i++) {
        int port = c->node[i].port, n;
        char key[64];
        for (n = 0;; n++) {                 /* a key this master serves */
            snprintf(key, sizeof key, "harness-topo:{%d}", n);
            unsigned slot = tt_key_slot(key, strlen(key));
            if (map[slot] == port)
                break;
            if (n > 100000)
                break;
        }
        if (n > 100000)
            continue;                       /* a replica: serves no slot */
        int acked = 0;
        while (!acked && th_now_ms() < deadline) {
            struct timeval tv = { 2, 0 };
            redisContext *ctx = redisConnectWithTimeout("127.0.0.1", port, tv);
            if (ctx && !ctx->err) {
                redisSetTimeout(ctx, tv);
                redisReply *r = redisCommand(ctx, "INCR %s", key);
                if (r)
                    freeReplyObject(r);
                r = redisCommand(ctx, "WAIT 1 100");
                acked = r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1;
                if (r)
                    freeReplyObject(r);
            }
            if (ctx)
                redisFree(ctx);
            if (!acked)
                th_sleep_ms(20);
        }
        ok = acked;
    }
    free(map);
    return ok;
}

int tt_cluster_start(tt_cluster_t *c)
{
    return tt_cluster_start_with(c, NULL);
}

int tt_cluster_start_with(tt_cluster_t *c, const char *const *more)
{
    memset(c, 0, sizeof *c);
    for (int attempt = 0; attempt < 4; attempt++) {
        int ports[2 * TT_CLUSTER_NODES];
        if (tt_free_ports(2 * TT_CLUSTER_NODES, ports) != 0)
            continue;
        int ok = 1;
        for (int i = 0; i < TT_CLUSTER_NODES && ok; i++) {
            char conf[64], bus[16];
            snprintf(conf, sizeof conf, "nodes-%d.conf", ports[i]);
            snprintf(bus, sizeof bus, "%d", ports[TT_CLUSTER_NODES + i]);
            const char *extra[24] = { "--cluster-enabled", "yes", "--cluster-config-file", conf,
                                      "--cluster-port", bus, "--cluster-node-timeout", "3000",
                                      NULL };
            for (int k = 0, e = 8; more && more[k] && e < 23; k++)
                extra[e++] = more[k];
            ok = tt_server_start_on(&c->node[i], ports[i], extra) == 0;
            c->bus[i] = ports[TT_CLUSTER_NODES + i];
        }
        if (!ok) {
            tt_cluster_stop(c);
            continue;
        }
        const char *argv[32];
        char addr[TT_CLUSTER_NODES][32];
        int a = 0;
        argv[a++] = "redis-cli";
        argv[a++] = "--cluster";
        argv[a++] = "create";
        for (int i = 0; i < TT_CLUSTER_NODES; i++) {
            snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", c->node[i].port);
            argv[a++] = addr[i];
        }
        argv[a++] = "--cluster-replicas";
        argv[a++] = "1";
        argv[a++] = "--cluster-yes";
        argv[a] = NULL;
        char *out = NULL;
        int st = tt_run(argv, 30000, &out);
        if (st != 0) {
            fprintf(stderr, "harness_topo: redis-cli --cluster create: status %d:\n%s\n", st, out);
            free(out);
            tt_cluster_stop(c);
            continue;
        }
        free(out);
        if (!tt_cluster_wait_ok(c, 30000)) {
            fprintf(stderr, "harness_topo: the cluster never reached cluster_state:ok everywhere\n");
            tt_cluster_stop(c);
            return -1;
        }
        if (!cluster_replicas_ack(c, 15000)) {
            fprintf(stderr, "harness_topo: the cluster's replicas never acknowledged a write\n");
            tt_cluster_stop(c);
            return -1;
        }
        for (int i = 0; i < TT_CLUSTER_NODES; i++) {
            redisReply *r = th_cmd_at(c->node[i].port, "CLUSTER MYID");
            if (r && r->type == REDIS_REPLY_STRING)
                snprintf(c->id[i], sizeof c->id[i], "%s", r->str);
            if (r)
                freeReplyObject(r);
        }
        return 0;
    }
    return -1;
}

void tt_cluster_stop(tt_cluster_t *c)
{
    for (int i = 0; i < TT_CLUSTER_NODES; i++) {
        pid_t pid = c->node[i].pid;
        if (pid) {
            th_server_kill(&c->node[i]);
            tt_forget(pid);
        }
    }
}

char *tt_cluster_url(const tt_cluster_t *c, int seeds, char *buf, size_t size)
{
    if (seeds <= 0 || seeds > TT_CLUSTER_NODES)
        seeds = TT_CLUSTER_NODES;
    size_t o = (size_t)snprintf(buf, size, "redis-cluster://");
    for (int i = 0; i < seeds && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s127.0.0.1:%d", i ? "," : "", c->node[i].port);
    return buf;
}

pid_t tt_reshard_start(const tt_cluster_t *c, int from, int to, int slots, int pipeline,
                       char *logpath, size_t logsize)
{
    char addr[32], nslots[16], pipe_s[16];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", c->node[from].port);
    snprintf(nslots, sizeof nslots, "%d", slots);
    snprintf(pipe_s, sizeof pipe_s, "%d", pipeline > 0 ? pipeline : 10);
    const char *argv[] = { "redis-cli", "--cluster", "reshard", addr,
                           "--cluster-from", c->id[from], "--cluster-to", c->id[to],
                           "--cluster-slots", nslots, "--cluster-yes",
                           "--cluster-pipeline", pipe_s, NULL };
    return tt_run_bg(argv, logpath, logsize);
}

int tt_cluster_check(const tt_cluster_t *c, char **out)
{
    char addr[32];
    int i = 0;
    while (i < TT_CLUSTER_NODES && !c->node[i].pid)
        i++;
    if (i == TT_CLUSTER_NODES)
        return -1;
    snprintf(addr, sizeof addr, "127.0.0.1:%d", c->node[i].port);
    const char *argv[] = { "redis-cli", "--cluster", "check", addr, NULL };
    char *text = NULL;
    int st = tt_run(argv, 20000, &text);
    if (st == 0 && text && (strstr(text, "[ERR]") || strstr(text, "[WARNING]")))
        st = 1;
    if (out)
        *out = text;
    else
        free(text);
    return st;
}

/* CRC16-CCITT (XMODEM), the polynomial of Redis Cluster's key slots. */
static unsigned crc16(const unsigned char *p, size_t n)
{
    unsigned crc = 0;
    while (n--) {
        crc ^= (unsigned)*p++ << 8;
        for (int b = 0; b < 8; b++)
            crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc;
}

unsigned tt_key_slot(const char *key, size_t len)
{
    size_t s, e;
    for (s = 0; s < len; s++)
        if (key[s] == '{')
            break;
    if (s < len) {
        for (e = s + 1; e < len; e++)
            if (key[e] == '}')
                break;
        if (e < len && e != s + 1)
            return crc16((const unsigned char *)key + s + 1, e - s - 1) & 16383;
    }
    return crc16((const unsigned char *)key, len) & 16383;
}

