/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_topo.c - see harness_topo.h. */
#include "harness_topo.h"

#include <string.h>

#include "launch.h"

/* ------------------------------------------------------------- servers */

/* Starts argv with its output in <tt_dir>/<tag>-<port>.log, registered
 * (tt_spawn), and waits until the port answers as it. */
static pid_t start_argv(const char *const *argv, int port, const char *tag)
{
    char log[400];
    snprintf(log, sizeof log, "%s/%s-%d.log", tt_dir(), tag, port);
    pid_t pid = tt_spawn(argv, log);
    if (pid < 0)
        return -1;
    if (dl_launch_wait_up(pid, port, 10000) != 0) {
        tt_forget(pid);                     /* reaped by dl_launch_wait_up */
        return -1;
    }
    return pid;
}

static char tls_cert[400], tls_key[400], tls_ca[400];

void tt_tls_use(const char *cert, const char *key, const char *ca)
{
    snprintf(tls_cert, sizeof tls_cert, "%s", cert ? cert : "");
    snprintf(tls_key, sizeof tls_key, "%s", cert ? key : "");
    snprintf(tls_ca, sizeof tls_ca, "%s", cert ? ca : "");
}

int tt_server_start_on(th_server_t *s, int port, const char *const *extra)
{
    const char *args[64];
    char dbfile[32], log[400];
    int a = 0;
    snprintf(dbfile, sizeof dbfile, "dump-%d.rdb", port);
    snprintf(log, sizeof log, "%s/redis-%d.log", tt_dir(), port);
    args[a++] = "--repl-diskless-sync-delay";
    args[a++] = "0";
    args[a++] = "--dbfilename";             /* servers share the directory */
    args[a++] = dbfile;
    if (tls_cert[0]) {
        args[a++] = "--tls-replication";
        args[a++] = "yes";
        args[a++] = "--tls-cluster";
        args[a++] = "yes";
    }
    for (const char *const *e = extra; e && *e && a < 63; e++)
        args[a++] = *e;
    args[a] = NULL;
    dl_launch_t how = { .dir = tt_dir(), .log = log, .extra = args };
    if (tls_cert[0]) {
        how.tls_cert = tls_cert;
        how.tls_key = tls_key;
        how.tls_ca = tls_ca;
    }
    dl_launched_t srv;
    if (dl_launch_start(&how, port, &srv) != 0)
        return -1;
    tt_register(srv.pid);
    memset(s, 0, sizeof *s);
    s->pid = srv.pid;
    s->port = port;
    s->tls_port = srv.tls_port;
    snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", port);
    return 0;
}

int tt_server_start(th_server_t *s, const char *const *extra)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        int port = tt_free_port();
        if (port > 0 && tt_server_start_on(s, port, extra) == 0)
            return 0;
    }
    fprintf(stderr, "harness_topo: could not start redis-server\n");
    return -1;
}

struct repl_arg { int replica, master; };

static int replica_up(void *p)
{
    struct repl_arg *a = p;
    char buf[64];
    if (!tt_info_field(a->replica, "replication", "master_link_status", buf, sizeof buf) ||
        strcmp(buf, "up") != 0)
        return 0;
    /* "online" is not enough: after a diskless full sync the master streams
     * nothing to the replica (not even WAIT's GETACK) until the replica's
     * next ACK, up to 1 s later.  Ready means: a write is acknowledged. */
    struct timeval tv = { 2, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", a->master, tv);
    int ok = 0;
    if (c && !c->err) {
        redisSetTimeout(c, tv);
        redisReply *r = redisCommand(c, "INCR harness-topo:replica-sync");
        if (r)
            freeReplyObject(r);
        r = redisCommand(c, "WAIT 1 100");
        ok = r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1;
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

int tt_replica_start(th_server_t *s, int master_port)
{
    char mp[16];
    snprintf(mp, sizeof mp, "%d", master_port);
    const char *extra[] = { "--replicaof", "127.0.0.1", mp, NULL };
    if (tt_server_start(s, extra) != 0)
        return -1;
    struct repl_arg a = { s->port, master_port };
    if (!th_wait_until(replica_up, &a, 10000)) {
        fprintf(stderr, "harness_topo: replica %d of %d never came up\n", s->port, master_port);
        return -1;
    }
    return 0;
}

/* ----------------------------------------------------------- sentinels */

/* Field of a SENTINEL MASTER reply (a flat field/value array). */
static long long sentinel_field(int port, const char *master, const char *field)
{
    redisReply *r = th_cmd_at(port, "SENTINEL MASTER %s", master);
    long long v = -1;
    if (r && r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i + 1 < r->elements; i += 2)
            if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, field) == 0 &&
                r->element[i + 1]->type == REDIS_REPLY_STRING)
                v = strtoll(r->element[i + 1]->str, NULL, 10);
    if (r)
        freeReplyObject(r);
    return v;
}

struct sent_arg { const tt_sentinels_t *st; int replicas; };

static int sentinels_ready(void *p)
{
    struct sent_arg *a = p;
    for (int i = 0; i < a->st->n; i++) {
        int port = a->st->s[i].port;
        if (sentinel_field(port, a->st->master, "num-slaves") < a->replicas ||
            sentinel_field(port, a->st->master, "num-other-sentinels") < a->st->n - 1)
            return 0;
    }
    return 1;
}

int tt_sentinels_start(tt_sentinels_t *st, int n, const char *master_name, int master_port,
                       int quorum, int replicas)
{
    memset(st, 0, sizeof *st);
    if (n > TT_MAX_SENTINELS)
        return -1;
    snprintf(st->master, sizeof st->master, "%s", master_name);
    for (int i = 0; i < n; i++) {
        int started = 0;
        for (int attempt = 0; attempt < 8 && !started; attempt++) {
            int port = tt_free_port();
            char conf[400];
            snprintf(conf, sizeof conf, "%s/sentinel-%d.conf", tt_dir(), port);
            FILE *f = fopen(conf, "w");
            if (!f)
                return -1;
            fprintf(f,
                    "port %d\n"
                    "bind 127.0.0.1\n"
                    "daemonize no\n"
                    "dir %s\n"
                    "sentinel resolve-hostnames no\n"
                    "sentinel monitor %s 127.0.0.1 %d %d\n"
                    "sentinel down-after-milliseconds %s 1000\n"
                    "sentinel failover-timeout %s 3000\n"
                    "sentinel parallel-syncs %s 1\n",
                    port, tt_dir(), master_name, master_port, quorum, master_name, master_name,
                    master_name);
            int tls_port = 0;
            if (tls_cert[0]) {
                tls_port = tt_free_port();
                fprintf(f, "tls-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\n"
                        "tls-replication yes\n", tls_port, tls_cert, tls_key, tls_ca);
            }
            fclose(f);
            const char *argv[] = { "redis-server", conf, "--sentinel", NULL };
            pid_t pid = start_argv(argv, port, "sentinel");
            if (pid > 0) {
                st->s[i].pid = pid;
                st->s[i].port = port;
                st->s[i].tls_port = tls_port;
                snprintf(st->s[i].url, sizeof st->s[i].url, "redis://127.0.0.1:%d", port);
                started = 1;
            }
        }
        if (!started) {
            fprintf(stderr, "harness_topo: could not start sentinel %d\n", i);
            return -1;
        }
        st->n = i + 1;
    }
    struct sent_arg a = { st, replicas };
    if (!th_wait_until(sentinels_ready, &a, 20000)) {
        fprintf(stderr, "harness_topo: the sentinels did not discover each other / the replicas\n");
        return -1;
    }
    return 0;
}

void tt_sentinels_stop(tt_sentinels_t *st)
{
    for (int i = 0; i < st->n; i++) {
        pid_t pid = st->s[i].pid;
        if (pid) {
            th_server_kill(&st->s[i]);
            tt_forget(pid);
        }
    }
    st->n = 0;
}

int tt_sentinel_master_port(const tt_sentinels_t *st, int i)
{
    redisReply *r = th_cmd_at(st->s[i].port, "SENTINEL get-master-addr-by-name %s", st->master);
    int port = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    if (r)
        freeReplyObject(r);
    return port;
}

char *tt_sentinel_url(const tt_sentinels_t *st, char *buf, size_t size)
{
    size_t o = (size_t)snprintf(buf, size, "redis-sentinel://");
    for (int i = 0; i < st->n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s127.0.0.1:%d", i ? "," : "", st->s[i].port);
    if (o < size)
        snprintf(buf + o, size - o, "/%s", st->master);
    return buf;
}


/* Prints to f (if not NULL) the last `keep` "#" lines (sentinel events) of
 * sentinel i's log; returns how many of them contain `want` (if not NULL). */
static int sentinel_events(const tt_sentinels_t *st, int i, int keep, const char *want, FILE *f)
{
    char path[400];
    snprintf(path, sizeof path, "%s/sentinel-%d.log", tt_dir(), st->s[i].port);
    FILE *in = fopen(path, "r");
    if (!in)
        return 0;
    char ring[64][256];
    int n = 0, found = 0;
    if (keep > 64)
        keep = 64;
    char line[256];
    while (fgets(line, sizeof line, in)) {
        if (!strstr(line, " # "))
            continue;
        if (want && strstr(line, want))
            found++;
        if (keep > 0)
            snprintf(ring[n++ % keep], sizeof ring[0], "%s", line);
    }
    fclose(in);
    if (f)
        for (int k = n > keep ? n - keep : 0; k < n; k++)
            fprintf(f, "    %s", ring[k % keep]);
    return found;
}

void tt_sentinels_report(FILE *f, const tt_sentinels_t *st, int lines)
{
    for (int i = 0; i < st->n; i++) {
        fprintf(f, "sentinel %d (port %d): names master port %d\n", i, st->s[i].port,
                tt_sentinel_master_port(st, i));
        redisReply *r = th_cmd_at(st->s[i].port, "SENTINEL MASTER %s", st->master);
        if (r && r->type == REDIS_REPLY_ARRAY)
            for (size_t k = 0; k + 1 < r->elements; k += 2) {
                const char *fld = r->element[k]->str, *val = r->element[k + 1]->str;
                if (fld && val && (!strcmp(fld, "flags") || !strcmp(fld, "failover-state") ||
                                   !strcmp(fld, "config-epoch") || !strcmp(fld, "num-slaves")))
                    fprintf(f, "    %s: %s\n", fld, val);
            }
        if (r)
            freeReplyObject(r);
        sentinel_events(st, i, lines, NULL, f);
    }
}

int tt_sentinels_tilted(const tt_sentinels_t *st)
{
    for (int i = 0; i < st->n; i++)
        if (sentinel_events(st, i, 0, "+tilt", NULL))
            return 1;
    return 0;
}
