/* SPDX-License-Identifier: BSD-3-Clause */
/* objscan.c - the objects top and metrics read (objscan.h).  Each object
 * has several keys, on several servers with redlock, and SCAN may return
 * a key twice: a hash set keeps each object once, so that the walk can
 * stop as soon as it has met more than `limit` objects, rather than after
 * reading a huge key space whole. */
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "objscan.h"
#include "scan.h"

typedef struct walk {
    cli_redis_t *r;
    const char *prefix;
    size_t plen;
    const char *pattern;
    size_t limit;
    int all_keys;             /* any key of the kind, not only its live ones */
    cli_objlist_t *l;
    size_t cap;               /* of l->v */
    size_t *slot;             /* the hash set: index + 1 into l->v, 0 empty */
    size_t nslots;            /* a power of two, at least twice l->n */
} walk_t;

/* FNV-1a of the kind and the name. */
static uint64_t hash_of(int kind, const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(unsigned)kind;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The slot where (kind, name) is, or the empty one where it would go. */
static size_t *find(walk_t *w, int kind, const char *s, size_t n)
{
    size_t mask = w->nslots - 1, i = (size_t)hash_of(kind, s, n) & mask;
    for (;;) {
        size_t *sl = &w->slot[i];
        if (!*sl)
            return sl;
        const cli_objref_t *o = &w->l->v[*sl - 1];
        if (o->kind == kind && o->len == n && memcmp(o->name, s, n) == 0)
            return sl;
        i = (i + 1) & mask;
    }
}

static int grow(walk_t *w)
{
    if (w->l->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        cli_objref_t *v = realloc(w->l->v, cap * sizeof *v);
        if (!v)
            return -1;
        w->l->v = v;
        w->cap = cap;
    }
    if (2 * (w->l->n + 1) > w->nslots) {
        size_t nslots = w->nslots ? w->nslots * 2 : 256;
        size_t *slot = calloc(nslots, sizeof *slot), *old = w->slot;
        if (!slot)
            return -1;
        w->slot = slot;
        w->nslots = nslots;
        for (size_t i = 0; i < w->l->n; i++) {
            const cli_objref_t *o = &w->l->v[i];
            *find(w, o->kind, o->name, o->len) = i + 1;
        }
        free(old);
    }
    return 0;
}

static int matches(const char *pattern, const char *name)
{
    /* A name with a NUL byte is matched by its part before the NUL. */
    return !pattern || fnmatch(pattern, name, 0) == 0;
}

static int on_key(const char *key, size_t klen, void *arg)
{
    walk_t *w = arg;
    int kind, which;
    const char *nm;
    size_t nlen;
    if (dl_key_parse(w->prefix, w->plen, key, klen, &kind, &nm, &nlen, &which))
        return 0;
    const cli_kind_view_t *kv = cli_kind_view(kind);
    if (!kv || which >= 32 || !(w->all_keys || (kv->live_keys & (1u << which))))
        return 0;
    if (grow(w))
        return cli_redis_oom(w->r);
    size_t *sl = find(w, kind, nm, nlen);
    if (*sl)
        return 0;                          /* met already */
    char *copy = malloc(nlen + 1);
    if (!copy)
        return cli_redis_oom(w->r);
    memcpy(copy, nm, nlen);
    copy[nlen] = 0;
    if (!matches(w->pattern, copy)) {
        free(copy);
        return 0;
    }
    if (w->l->n == w->limit) {             /* one more than the limit */
        free(copy);
        w->l->truncated = 1;
        return 1;
    }
    w->l->v[w->l->n] = (cli_objref_t){ kind, copy, nlen };
    *sl = ++w->l->n;
    return 0;
}

static int cmp_ref(const void *a, const void *b)
{
    const cli_objref_t *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : x->len < y->len ? -1 : x->len > y->len;
}

void cli_objlist_free(cli_objlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    memset(l, 0, sizeof *l);
}

int cli_objscan(cli_redis_t *r, const char *pattern, size_t limit, int all_keys, cli_objlist_t *l)
{
    memset(l, 0, sizeof *l);
    walk_t w = { r, r->cfg.prefix, strlen(r->cfg.prefix), pattern, limit ? limit : 1, all_keys, l,
                 0, NULL, 0 };
    int rc = cli_scan_keys(r, on_key, &w);
    free(w.slot);
    if (rc) {
        cli_objlist_free(l);
        return -1;
    }
    if (l->n)
        qsort(l->v, l->n, sizeof *l->v, cmp_ref);
    return 0;
}
