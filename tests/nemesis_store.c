/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_store.c - the fenced store: a redis-server of its own (no fault
 * ever touches it, and the clients reach it on connections made before
 * anything else, outside any network namespace), standing for the resource
 * a lock protects.  A write is accepted only with a fence >= the highest
 * the store has seen for the name, as a fencing resource does; a read
 * reports whether a higher fence was written (a writer that came after the
 * reader's hold was taken).  Every operation is appended to a list in the
 * order the store ran it, with its holder, fence, verdict and the store's
 * time: the store's own view of the history.
 */
#include "nemesis.h"

#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>

/* KEYS[1] hash {f = highest fence, p = its writer}, KEYS[2] the log.
 * ARGV: fence, 1 write / 0 read, pid, tid, hold.  Fences are compared as
 * decimal strings (length, then bytes), exact for any uint64. */
static const char store_lua[] =
    "local hi = redis.call('HGET', KEYS[1], 'f') or '0'\n"
    "local hp = redis.call('HGET', KEYS[1], 'p') or '0'\n"
    "local f = ARGV[1]\n"
    "local ok = 0\n"
    "if #f > #hi or (#f == #hi and f >= hi) then ok = 1 end\n"
    "if ok == 1 and ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'f', f, 'p', ARGV[3]) end\n"
    "local t = redis.call('TIME')\n"
    "redis.call('RPUSH', KEYS[2], table.concat({ARGV[2], f, ARGV[3], ARGV[4], ARGV[5], ok, hi, hp,"
    " t[1], t[2]}, ' '))\n"
    "return {ok, hi}\n";

void *nm_store_connect(int port)
{
    struct timeval tv = { 5, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

void nm_store_close(void *c)
{
    if (c)
        redisFree(c);
}

int nm_store_op(void *cv, const char *name, int write, uint64_t fence, int pid, int tid,
                uint32_t hold, uint64_t *hi)
{
    redisContext *c = cv;
    *hi = 0;
    if (!c)
        return -1;
    char k1[128], k2[128], fs[24], ps[16], ts[16], hs[16];
    snprintf(k1, sizeof k1, "nm:hi:%s", name);
    snprintf(k2, sizeof k2, "nm:log:%s", name);
    snprintf(fs, sizeof fs, "%llu", (unsigned long long)fence);
    snprintf(ps, sizeof ps, "%d", pid);
    snprintf(ts, sizeof ts, "%d", tid);
    snprintf(hs, sizeof hs, "%u", hold);
    redisReply *r = redisCommand(c, "EVAL %s 2 %s %s %s %s %s %s %s", store_lua, k1, k2, fs,
                                 write ? "1" : "0", ps, ts, hs);
    int rc = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_STRING) {
        rc = (int)r->element[0]->integer;
        *hi = strtoull(r->element[1]->str, NULL, 10);
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

nm_store_entry_t *nm_store_log(int port, const char *name, size_t *n)
{
    *n = 0;
    redisContext *c = nm_store_connect(port);
    if (!c)
        return NULL;
    char k2[128];
    snprintf(k2, sizeof k2, "nm:log:%s", name);
    redisReply *r = redisCommand(c, "LRANGE %s 0 -1", k2);
    nm_store_entry_t *out = NULL;
    if (r && r->type == REDIS_REPLY_ARRAY) {
        out = calloc(r->elements ? r->elements : 1, sizeof *out);
        for (size_t i = 0; out && i < r->elements; i++) {
            if (r->element[i]->type != REDIS_REPLY_STRING)
                continue;
            unsigned long long f = 0, hi = 0;
            int w = 0, pid = 0, tid = 0, ok = 0, hp = 0;
            unsigned hold = 0;
            long long s = 0, us = 0;
            if (sscanf(r->element[i]->str, "%d %llu %d %d %u %d %llu %d %lld %lld", &w, &f, &pid,
                       &tid, &hold, &ok, &hi, &hp, &s, &us) != 10)
                continue;
            nm_store_entry_t *e = &out[(*n)++];
            e->write = w;
            e->fence = f;
            e->pid = pid;
            e->tid = tid;
            e->hold = hold;
            e->ok = ok;
            e->prev_hi = hi;
            e->prev_pid = hp;
            e->t_us = s * 1000000 + us;
        }
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return out;
}
