/* SPDX-License-Identifier: BSD-3-Clause */
/* naive.c - the reference lock most programs start with:
 *   acquire: SET key token NX PX lease, retried every 1 ms until it succeeds
 *   release: a compare-and-delete script (GET == token -> DEL)
 * One connection of its own per lock object, no waiting queue, no
 * notification, no lease renewal (the lease is the library's default,
 * 30 s, far longer than any hold here). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static const char release_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";
static char release_sha[48];

int naive_init(naive_t *n, const char *name)
{
    return naive_init_on(n, name, rc_connect("bench-naive"));
}

int naive_init_on(naive_t *n, const char *name, redisContext *c)
{
    memset(n, 0, sizeof *n);
    n->c = c;
    if (!n->c)
        return -1;
    snprintf(n->key, sizeof n->key, "naive:{%s}", name);
    /* A token per process and object: the holder's identity. */
    snprintf(n->token, sizeof n->token, "%d-%p-%lx", (int)getpid(), (void *)n,
             (unsigned long)now_ns());
    n->lease_ms = 30000;
    redisReply *r = rc_cmd(n->c, "SCRIPT LOAD %s", release_lua);
    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        redisFree(n->c);
        n->c = NULL;
        return -1;
    }
    snprintf(release_sha, sizeof release_sha, "%s", r->str);
    freeReplyObject(r);
    return 0;
}

int naive_lock(naive_t *n)
{
    for (;;) {
        redisReply *r = redisCommand(n->c, "SET %s %s NX PX %lu", n->key, n->token, n->lease_ms);
        n->commands++;
        if (!r)
            return -1;
        int ok = r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (ok)
            return 0;
        n->retries++;
        usleep(1000);
    }
}

int naive_unlock(naive_t *n)
{
    redisReply *r = redisCommand(n->c, "EVALSHA %s 1 %s %s", release_sha, n->key, n->token);
    n->commands++;
    if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
        freeReplyObject(r);
        r = redisCommand(n->c, "EVAL %s 1 %s %s", release_lua, n->key, n->token);
        n->commands++;
    }
    if (!r)
        return -1;
    int ok = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return ok ? 0 : -1;
}

void naive_fini(naive_t *n)
{
    if (n->c)
        redisFree(n->c);
    n->c = NULL;
}
