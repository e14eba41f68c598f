/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_script.c - the library's scripts run directly (harness_script.h). */
#include "dl_script_list.h"
#include "harness.h"
#include "harness_script.h"

#include <string.h>

static const char *const suffix[DL_NKEYS] = { "", ":r", ":ri", ":q", ":w", ":m" };

redisReply *th_script(int op, const char *name, int nargs, const char *const *args)
{
    char keys[DL_NKEYS][300];
    const char *argv[3 + DL_NKEYS + 12];
    size_t lens[3 + DL_NKEYS + 12];
    int a = 0;
    assert_true(nargs <= 12);
    argv[a] = "EVAL", lens[a++] = 4;
    argv[a] = dl_scripts[op].body, lens[a++] = dl_scripts[op].len;
    argv[a] = "6", lens[a++] = 1;
    for (int k = 0; k < DL_NKEYS; k++) {
        th_key(keys[k], sizeof keys[k], name, suffix[k]);
        argv[a] = keys[k], lens[a++] = strlen(keys[k]);
    }
    for (int i = 0; i < nargs; i++)
        argv[a] = args[i], lens[a++] = strlen(args[i]);
    redisReply *r = redisCommandArgv(th_redis(), a, argv, lens);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", dl_scripts[op].name, r->str);
    return r;
}

long long th_script_ll(int op, const char *name, int nargs, const char *const *args)
{
    redisReply *r = th_script(op, name, nargs, args);
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer
                : r->type == REDIS_REPLY_ARRAY && r->elements ? r->element[0]->integer : -1;
    freeReplyObject(r);
    return v;
}

int th_script_acquire(const char *name, const char *token, const char *mode, const char *lease,
                      int enqueue, const char *regid, unsigned long long *fence, int *dead,
                      int *claimed)
{
    const char *args[] = { "n:", token, mode, lease, "host\t1\t1", enqueue ? "1" : "0", regid,
                           "2000", "2000" };
    redisReply *r = th_script(DL_SCRIPT_ACQUIRE, name, 9, args);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    int got = (int)r->element[0]->integer;
    if (got) {
        if (fence)
            *fence = (unsigned long long)r->element[1]->integer;
        if (dead)
            *dead = r->element[2]->integer == 1;
        if (claimed)
            *claimed = r->elements > 4 && r->element[4]->integer == 1;
    }
    freeReplyObject(r);
    return got;
}

long long th_script_release(const char *name, const char *token, const char *mode,
                            unsigned long long fence)
{
    char f[24];
    snprintf(f, sizeof f, "%llu", fence);
    const char *args[] = { "n:", token, mode, f };
    return th_script_ll(DL_SCRIPT_RELEASE, name, 4, args);
}
