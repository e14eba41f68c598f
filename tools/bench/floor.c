/* SPDX-License-Identifier: BSD-3-Clause */
/* floor.c - what the server and the loopback allow at best, measured in
 * the same run (WORKLOADS.md):
 *   redis-benchmark -c 1 -P 1 -n 100000 EVALSHA <sha of "return 1"> 0
 * gives the single-client request rate; W1 needs two such round trips per
 * pair, so half of it is the best possible W1 rate.  The PING p50 of the
 * same server is the reference of W3's handoff latency: measured both by
 * redis-benchmark and by a blocking hiredis client like the library's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

typedef struct bm {
    double rps, avg_ms, p50_ms, p99_ms;
} bm_t;

/* Splits a CSV line of quoted fields. */
static int csv_fields(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        if (*p == '"') {
            char *e = strchr(p + 1, '"');
            if (!e)
                break;
            *e = 0;
            f[n++] = p + 1;
            p = e + 1;
        } else {
            char *e = p + strcspn(p, ",\r\n");
            char c = *e;
            *e = 0;
            f[n++] = p;
            p = e;
            if (!c)
                break;
            *p = c;
        }
        if (*p == ',')
            p++;
        else
            break;
    }
    return n;
}

static int run_bm(const char *const *cmd, int ncmd, unsigned long requests, bm_t *out)
{
    const char *argv[40];
    int a = 0;
    char portbuf[16], nbuf[24], dbbuf[16];
    argv[a++] = g_opt.redis_benchmark;
    if (rc_is_unix()) {
        argv[a++] = "-s";
        argv[a++] = g_redis.ep[0].host;
    } else {
        snprintf(portbuf, sizeof portbuf, "%d", g_redis.ep[0].port);
        argv[a++] = "-h";
        argv[a++] = g_redis.ep[0].host;
        argv[a++] = "-p";
        argv[a++] = portbuf;
    }
    if (g_redis.user[0]) {
        argv[a++] = "--user";
        argv[a++] = g_redis.user;
    }
    if (g_redis.password[0]) {
        argv[a++] = "-a";
        argv[a++] = g_redis.password;
    }
    if (g_redis.db) {
        snprintf(dbbuf, sizeof dbbuf, "%d", g_redis.db);
        argv[a++] = "--dbnum";
        argv[a++] = dbbuf;
    }
    snprintf(nbuf, sizeof nbuf, "%lu", requests);
    argv[a++] = "-c";
    argv[a++] = "1";
    argv[a++] = "-P";
    argv[a++] = "1";
    argv[a++] = "-n";
    argv[a++] = nbuf;
    argv[a++] = "--csv";
    for (int i = 0; i < ncmd; i++)
        argv[a++] = cmd[i];
    argv[a] = NULL;

    FILE *f;
    pid_t pid = fork_piped(&f);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "distlock-bench: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    char line[1024];
    int found = -1;
    while (f && fgets(line, sizeof line, f)) {
        char *fl[8];
        if (strstr(line, "\"rps\""))
            continue;                    /* the header */
        if (csv_fields(line, fl, 8) == 8) {
            out->rps = atof(fl[1]);
            out->avg_ms = atof(fl[2]);
            out->p50_ms = atof(fl[4]);
            out->p99_ms = atof(fl[6]);
            found = 0;
        }
    }
    if (f)
        fclose(f);
    return reap_tool(pid) ? -1 : found;
}

/* PING latency of a blocking hiredis client, as the library sends. */
static int hiredis_ping(redisContext *c, int n, double *p50, double *p99)
{
    double *v = malloc(sizeof *v * (size_t)n);
    if (!v)
        return -1;
    for (int i = 0; i < 200; i++) {
        redisReply *r = redisCommand(c, "PING");
        if (r)
            freeReplyObject(r);
    }
    for (int i = 0; i < n; i++) {
        uint64_t t = now_ns();
        redisReply *r = redisCommand(c, "PING");
        v[i] = (double)(now_ns() - t) / 1e3;
        if (!r) {
            free(v);
            return -1;
        }
        freeReplyObject(r);
    }
    sort_doubles(v, (size_t)n);
    *p50 = pct_sorted(v, (size_t)n, 0.5);
    *p99 = pct_sorted(v, (size_t)n, 0.99);
    free(v);
    return 0;
}

/* The result peer=floor of one redis-benchmark run of n requests (script:
 * the script it ran, or NULL), its extra fields still open. */
static result_t *bm_result(const char *workload, const bm_t *b, const char *script,
                           unsigned long n)
{
    result_t *res = result_new("floor", workload);
    res->ops_per_s = b->rps;
    res->p50_us = b->p50_ms * 1000;
    res->p99_us = b->p99_ms * 1000;
    result_extra(res, "tool", "redis-benchmark");
    if (script)
        result_extra(res, "script", "%s", script);
    result_extra(res, "clients", "1");
    result_extra(res, "pipeline", "1");
    result_extra(res, "requests", "%lu", n);
    return res;
}

int run_floor(void)
{
    unsigned long n = g_opt.quick ? 10000 : 100000;
    redisContext *c = rc_connect("bench-ctl");
    if (!c)
        return -1;
    redisReply *r = rc_cmd(c, "SCRIPT LOAD %s", "return 1");
    if (!r || r->type != REDIS_REPLY_STRING) {
        output_error("floor", "SCRIPT LOAD failed");
        if (r)
            freeReplyObject(r);
        redisFree(c);
        return -1;
    }
    char sha[48];
    snprintf(sha, sizeof sha, "%s", r->str);
    freeReplyObject(r);

    progress_show("floor EVALSHA", NULL);
    bm_t b;
    const char *ev[] = { "EVALSHA", sha, "0" };
    if (run_bm(ev, 3, n, &b)) {
        progress_clear();
        fprintf(stderr, "distlock-bench: floor: %s failed; the floor is skipped\n",
                g_opt.redis_benchmark);
        result_t *res = result_new("floor", "EVALSHA");
        res->skipped = 1;
        result_extra(res, "skipped", "1");
        result_extra(res, "reason", "redis-benchmark-failed");
        result_emit(res);
        redisFree(c);
        return 0;
    }
    result_t *res = bm_result("EVALSHA", &b, "return_1", n);
    result_extra(res, "pair_limit_per_s", "%.0f", b.rps / 2);
    result_extra(res, "redis_cmds_per_op", "1");
    result_emit(res);

    progress_show("floor PING", NULL);
    const char *pg[] = { "PING" };
    if (run_bm(pg, 1, n, &b) == 0) {
        res = bm_result("PING", &b, NULL, n);
        double hp50, hp99;
        if (hiredis_ping(c, g_opt.quick ? 2000 : 20000, &hp50, &hp99) == 0) {
            result_extra(res, "hiredis_p50_us", "%.1f", hp50);
            result_extra(res, "hiredis_p99_us", "%.1f", hp99);
        }
        result_emit(res);
    }
    redisFree(c);
    return 0;
}
