/* SPDX-License-Identifier: BSD-3-Clause */
/* scriptfloor.c - what two script calls cost Redis, whatever they do: the
 * shape of a W1 pair of the library (an acquire, then a release: EVALSHA
 * with the six keys of the lock and the same arguments, lua/acquire.lua's
 * and lua/release.lua's headers) calling a script that only returns 1.
 * Its Redis CPU per pair (peer=floor workload=W1scripts) is what any lock
 * made of two script calls costs at least: the argument parsing, the
 * script's entry and its reply, and the loopback's system calls. */
#include <stdio.h>
#include <string.h>

#include "bench.h"

int sfloor_init(sfloor_t *s, const char *name)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 6; i++)
        if (lock_key(s->keys[i], sizeof s->keys[i], name, i))
            return -1;
    s->c = rc_connect("bench-floor");
    if (!s->c)
        return -1;
    /* (a token of the library's length: a UUID) */
    snprintf(s->token, sizeof s->token, "00000000-0000-4000-8000-%012lx",
             (unsigned long)now_ns() & 0xffffffffffffUL);
    redisReply *r = rc_cmd(s->c, "SCRIPT LOAD %s", "return 1");
    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        redisFree(s->c);
        s->c = NULL;
        return -1;
    }
    snprintf(s->sha, sizeof s->sha, "%s", r->str);
    freeReplyObject(r);
    return 0;
}

static int call(sfloor_t *s, int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(s->c, argc, argv, NULL);
    s->commands++;
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

int sfloor_lock(sfloor_t *s)
{
    char rid[24];
    snprintf(rid, sizeof rid, "%lu", ++s->regid);
    const char *argv[] = { "EVALSHA", s->sha, "6", s->keys[0], s->keys[1], s->keys[2],
                           s->keys[3], s->keys[4], s->keys[5], "distlock:n:", s->token, "w",
                           "30000", "bench\t12345\t12345", "1", rid, "2000", "2000" };
    return call(s, (int)(sizeof argv / sizeof *argv), argv);
}

int sfloor_unlock(sfloor_t *s)
{
    char rid[24];
    snprintf(rid, sizeof rid, "%lu", s->regid);
    const char *argv[] = { "EVALSHA", s->sha, "6", s->keys[0], s->keys[1], s->keys[2],
                           s->keys[3], s->keys[4], s->keys[5], "distlock:n:", s->token, "w",
                           "1795925778222269", rid };
    return call(s, (int)(sizeof argv / sizeof *argv), argv);
}

void sfloor_fini(sfloor_t *s)
{
    if (s->c)
        redisFree(s->c);
    s->c = NULL;
}
