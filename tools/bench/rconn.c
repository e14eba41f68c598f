/* SPDX-License-Identifier: BSD-3-Clause */
/* rconn.c - plain hiredis connections to the run's server, and the few
 * INFO fields the workloads read. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

redisContext *rc_connect(const char *name)
{
    struct timeval tv = { 10, 0 };
    redisContext *c = g_url.path[0] ? redisConnectUnixWithTimeout(g_url.path, tv)
                                     : redisConnectWithTimeout(g_url.host, g_url.port, tv);
    if (!c || c->err) {
        fprintf(stderr, "distlock-bench: connect %s: %s\n", g_opt.url,
                c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    redisReply *r = NULL;
    if (g_url.pass[0]) {
        r = g_url.user[0] ? redisCommand(c, "AUTH %s %s", g_url.user, g_url.pass)
                          : redisCommand(c, "AUTH %s", g_url.pass);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "distlock-bench: AUTH failed on %s\n", g_opt.url);
            goto fail;
        }
        freeReplyObject(r);
    }
    if (g_url.db) {
        r = redisCommand(c, "SELECT %d", g_url.db);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "distlock-bench: SELECT %d failed on %s\n", g_url.db, g_opt.url);
            goto fail;
        }
        freeReplyObject(r);
    }
    if (name) {
        r = redisCommand(c, "CLIENT SETNAME %s", name);
        if (r)
            freeReplyObject(r);
    }
    return c;
fail:
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return NULL;
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
