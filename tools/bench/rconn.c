/* SPDX-License-Identifier: BSD-3-Clause */
/* rconn.c - the run's server, plain hiredis connections to it, and the few
 * INFO fields the workloads read. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "connect.h"
#include "distlock.h"

dl_config_t g_redis;

int rc_url(const char *url, char *err, size_t errlen)
{
    dl_config_t c;
    memset(&c, 0, sizeof c);
    if (dl_url_parse(url, &c, err, errlen))
        return -1;
    /* One server over plain TCP or a socket: redis-benchmark and the
     * workloads' own connections speak nothing else. */
    if ((c.scheme != DL_SCHEME_REDIS && c.scheme != DL_SCHEME_UNIX) || c.tls) {
        snprintf(err, errlen, "not one server over plain TCP or a socket");
        return -1;
    }
    if (dl_config_password(&c)) {
        snprintf(err, errlen, "%s", dist_lasterror());
        return -1;
    }
    g_redis = c;
    return 0;
}

int rc_is_unix(void)
{
    return g_redis.scheme == DL_SCHEME_UNIX;
}

redisContext *rc_connect(const char *name)
{
    char err[400];
    redisContext *c = dl_connect_ep(&g_redis, &g_redis.ep[0], 10000, err, sizeof err);
    if (!c) {
        fprintf(stderr, "distlock-bench: %s\n", err);
        return NULL;
    }
    if (name) {
        redisReply *r = redisCommand(c, "CLIENT SETNAME %s", name);
        if (r)
            freeReplyObject(r);
    }
    return c;
}

redisReply *rc_cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!r)
        fprintf(stderr, "distlock-bench: redis: %s\n", c->errstr);
    return r;
}

redisContext *rc_ctl_zeroed(const char *ctr)
{
    redisContext *c = rc_connect("bench-ctl");
    if (!c)
        return NULL;
    /* lost_updates is counted from this 0: without it there is no figure */
    redisReply *r = rc_cmd(c, "SET %s 0", ctr);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r && !ok)
        fprintf(stderr, "distlock-bench: SET %s 0: %s\n", ctr,
                r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    if (r)
        freeReplyObject(r);
    if (!ok) {
        redisFree(c);
        return NULL;
    }
    return c;
}

static redisReply *info(redisContext *c, const char *section)
{
    redisReply *r = redisCommand(c, "INFO %s", section);
    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        return NULL;
    }
    return r;
}

long long rc_cmd_calls(redisContext *c)
{
    redisReply *r = info(c, "commandstats");
    if (!r)
        return -1;
    long long sum = 0;
    for (char *line = r->str; line && *line;) {
        char *nl = strchr(line, '\n');
        if (!strncmp(line, "cmdstat_", 8) && strncmp(line, "cmdstat_info:", 13)) {
            char *p = strstr(line, "calls=");
            if (p && (!nl || p < nl))
                sum += atoll(p + 6);
        }
        line = nl ? nl + 1 : NULL;
    }
    freeReplyObject(r);
    return sum;
}

int rc_cmdstat(redisContext *c, const char *cmd, long long *calls, long long *usec)
{
    *calls = *usec = 0;
    redisReply *r = info(c, "commandstats");
    if (!r)
        return -1;
    char pat[64];
    snprintf(pat, sizeof pat, "cmdstat_%s:", cmd);
    char *p = strstr(r->str, pat);
    if (p) {
        char *q = strstr(p, "calls=");
        if (q)
            *calls = atoll(q + 6);
        q = strstr(p, "usec=");
        if (q)
            *usec = atoll(q + 5);
    }
    freeReplyObject(r);
    return 0;
}

static double field_d(const char *s, const char *field)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\n%s:", field);
    const char *p = strstr(s, pat);
    return p ? atof(p + strlen(pat)) : -1;
}

int rc_wait_listed(redisContext *c, const char *zkey)
{
    uint64_t until = now_ns() + 2000000000ull;
    int late = 0;
    for (;;) {
        redisReply *r = redisCommand(c, "ZCARD %s", zkey);
        long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
        if (r)
            freeReplyObject(r);
        if (n > 0)
            break;
        if (now_ns() > until) {
            late = 1;
            break;
        }
        sleep_us(20);
    }
    sleep_us(300);
    return late;
}

double rc_cpu_seconds(redisContext *c)
{
    redisReply *r = info(c, "cpu");
    if (!r)
        return -1;
    double v = field_d(r->str, "used_cpu_sys") + field_d(r->str, "used_cpu_user");
    freeReplyObject(r);
    return v;
}

long long rc_info_ll(redisContext *c, const char *section, const char *field)
{
    redisReply *r = info(c, section);
    if (!r)
        return -1;
    double v = field_d(r->str, field);
    freeReplyObject(r);
    return (long long)v;
}

int rc_ctr_incr(redisContext *c, const char *ctr)
{
    redisReply *r = rc_cmd(c, "GET %s", ctr);
    if (!r)
        return 1;
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    r = rc_cmd(c, "SET %s %lld", ctr, v + 1);
    if (!r)
        return 1;
    freeReplyObject(r);
    return 0;
}

long long rc_ctr_get(redisContext *c, const char *ctr, long long none)
{
    redisReply *r = rc_cmd(c, "GET %s", ctr);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : none;
    if (r)
        freeReplyObject(r);
    return v;
}
