/* SPDX-License-Identifier: BSD-3-Clause */
/* lockform.c - the forms of a lock's script call in a cluster (see
 * lockform.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keys.h"
#include "lockform.h"

static int is_eval(const char *s, size_t n)
{
    return (n == 4 && strncasecmp(s, "EVAL", 4) == 0) || (n == 7 && strncasecmp(s, "EVALSHA", 7) == 0);
}

/* The keys an EVAL/EVALSHA declares, or 0 (not one, or none). */
static int eval_keys(int argc, const char *const *argv, const size_t *argvlen)
{
    if (argc < 4 || !is_eval(argv[0], argvlen[0]) || argvlen[2] == 0 || argvlen[2] > 3)
        return 0;
    char num[4];
    memcpy(num, argv[2], argvlen[2]);
    num[argvlen[2]] = 0;
    int k = atoi(num);
    return k >= 1 && 3 + k <= argc ? k : 0;
}

/* Writes into argv/len the call with keys k (its numkeys into num): all
 * its keys and the guard (guard: the guard key), or its first key only. */
static int reshape(int argc, const char *const *argv, const size_t *argvlen, int k,
                   const char *guard, size_t guardlen, char *num, const char **out, size_t *outlen)
{
    int a = 0;
    out[a] = argv[0], outlen[a++] = argvlen[0];
    out[a] = argv[1], outlen[a++] = argvlen[1];
    out[a] = num, outlen[a++] = (size_t)snprintf(num, 8, "%d", guard ? k + 1 : 1);
    for (int i = 3; i < 3 + (guard ? k : 1); i++)
        out[a] = argv[i], outlen[a++] = argvlen[i];
    if (guard)
        out[a] = guard, outlen[a++] = guardlen;
    for (int i = 3 + k; i < argc; i++)
        out[a] = argv[i], outlen[a++] = argvlen[i];
    return a;
}

int dl_lockform_make(dl_lockform_t *f, const dl_cmd_t *c)
{
    memset(f, 0, sizeof *f);
    int k = eval_keys(c->argc, c->argv, c->argvlen);
    if (!k)
        return 0;
    int uk = c->undo_argc ? eval_keys(c->undo_argc, c->undo_argv, c->undo_argvlen) : 0;
    size_t gl = c->argvlen[3] + strlen(DL_KEY_GUARD);
    size_t slots = (size_t)(c->argc + 1) * 2 + (size_t)(c->undo_argc + 1);
    char *m = malloc(slots * (sizeof(char *) + sizeof(size_t)) + gl + 3 * 8);
    if (!m)
        return ENOMEM;
    f->mem = m;
    const char **av = (const char **)m;
    size_t *al = (size_t *)(av + slots);
    char *guard = (char *)(al + slots), *nums = guard + gl;
    memcpy(guard, c->argv[3], c->argvlen[3]);
    memcpy(guard + c->argvlen[3], DL_KEY_GUARD, strlen(DL_KEY_GUARD));
    f->lock = 1;
    f->nkeys = k;
    f->guarded.argv = av;
    f->guarded.argvlen = al;
    f->guarded.argc = reshape(c->argc, c->argv, c->argvlen, k, guard, gl, nums, av, al);
    av += c->argc + 1, al += c->argc + 1;
    f->asked.argv = av;
    f->asked.argvlen = al;
    f->asked.argc = reshape(c->argc, c->argv, c->argvlen, k, NULL, 0, nums + 8, av, al);
    av += c->argc + 1, al += c->argc + 1;
    if (uk) {
        /* (the undo names the same lock: the same guard) */
        f->uargv = av;
        f->ulen = al;
        f->uargc = reshape(c->undo_argc, c->undo_argv, c->undo_argvlen, uk, guard, gl, nums + 16, av, al);
    } else {
        f->uargc = c->undo_argc;
        f->uargv = c->undo_argv;
        f->ulen = c->undo_argvlen;
    }
    return 0;
}

dl_cmd_t dl_lockform_cmd(const dl_lockform_t *f, const dl_cmd_t *c, int asked)
{
    dl_cmd_t t = *c;
    if (!f->lock)
        return t;
    const dl_cmd_t *src = asked ? &f->asked : &f->guarded;
    t.argc = src->argc;
    t.argv = src->argv;
    t.argvlen = src->argvlen;
    t.undo_argc = asked ? 0 : f->uargc;
    t.undo_argv = asked ? NULL : f->uargv;
    t.undo_argvlen = asked ? NULL : f->ulen;
    return t;
}

void dl_lockform_free(dl_lockform_t *f)
{
    free(f->mem);
    f->mem = NULL;
}
