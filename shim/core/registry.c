/* SPDX-License-Identifier: BSD-3-Clause */
/* registry.c - (kind, name) -> the process's object, shared by every API
 * object of that name (registry.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "keys.h"
#include "registry.h"

static uint64_t hash(int kind, const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;          /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (uint64_t)kind;
}

static int is(const dl_core_t *o, int kind, const char *name, size_t len)
{
    return o->kind->id == kind && o->namelen == len && memcmp(o->name, name, len) == 0;
}

void dl_registry_init(dl_registry_t *r)
{
    pthread_mutex_init(&r->mu, NULL);
    r->nbuckets = 0;
    r->buckets = NULL;
    r->count = 0;
    r->retire = NULL;
    r->retire_arg = NULL;
    r->made = r->gone = NULL;
    r->watch_arg = NULL;
}

static int grow(dl_registry_t *r)
{
    size_t nb = r->nbuckets ? r->nbuckets * 2 : 64;
    dl_core_t **b = calloc(nb, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < r->nbuckets; i++)
        for (dl_core_t *o = r->buckets[i], *next; o; o = next) {
            next = o->next;
            size_t at = hash(o->kind->id, o->name, o->namelen) & (nb - 1);
            o->next = b[at];
            b[at] = o;
        }
    free(r->buckets);
    r->buckets = b;
    r->nbuckets = nb;
    return 0;
}

static dl_core_t *create(const dl_kind_t *kind, const char *prefix, const char *name, size_t len)
{
    dl_core_t *o = calloc(1, kind->size);
    if (!o)
        return NULL;
    /* One buffer for the name and all its kind's keys (keys.h). */
    size_t total = len + 1 + dl_kind_keys_size(kind->id, prefix, len);
    char *buf = malloc(total);
    if (!buf) {
        free(o);
        return NULL;
    }
    o->kind = kind;
    o->name = buf;
    memcpy(buf, name, len);
    buf[len] = 0;
    o->namelen = len;
    o->nkeys = dl_kind_keys(kind->id)->n;
    dl_kind_keys_write(kind->id, buf + len + 1, prefix, name, len, o->keys, o->keylen);
    pthread_mutex_init(&o->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&o->cv, &ca);
    pthread_condattr_destroy(&ca);
    return o;
}

dl_core_t *dl_registry_get(dl_registry_t *r, const dl_kind_t *kind, const char *prefix,
                           const char *name, size_t len)
{
    pthread_mutex_lock(&r->mu);
    if (r->count >= r->nbuckets && grow(r) && !r->nbuckets) {
        pthread_mutex_unlock(&r->mu);
        return NULL;
    }
    size_t at = hash(kind->id, name, len) & (r->nbuckets - 1);
    dl_core_t *o;
    for (o = r->buckets[at]; o; o = o->next)
        if (is(o, kind->id, name, len))
            break;
    if (!o && (o = create(kind, prefix, name, len))) {
        o->next = r->buckets[at];
        r->buckets[at] = o;
        r->count++;
        if (r->made)
            r->made(o, r->watch_arg);
    }
    if (o)
        __atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&r->mu);
    return o;
}

void dl_registry_put(dl_registry_t *r, dl_core_t *o)
{
    pthread_mutex_lock(&r->mu);
    if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        size_t at = hash(o->kind->id, o->name, o->namelen) & (r->nbuckets - 1);
        for (dl_core_t **pp = &r->buckets[at]; *pp; pp = &(*pp)->next)
            if (*pp == o) {
                *pp = o->next;
                break;
            }
        r->count--;
        if (r->retire)
            r->retire(o, r->retire_arg);
        if (r->gone)
            r->gone(o, r->watch_arg);
        pthread_mutex_destroy(&o->mu);
        pthread_cond_destroy(&o->cv);
        if (o->kind->fini)
            o->kind->fini(o);
        free(o->name);
        free(o);
    }
    pthread_mutex_unlock(&r->mu);
}

void dl_registry_pin(dl_core_t *o)
{
    /* The registry mutex is held (dl_registry_each), or the caller has a
     * reference of its own: either way the count cannot reach 0 meanwhile,
     * and an atomic add needs no registry mutex. */
    __atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
}

void dl_registry_add_obj(dl_registry_t *r, dl_core_t *o)
{
    pthread_mutex_lock(&r->mu);
    o->objs++;
    pthread_mutex_unlock(&r->mu);
}

int dl_registry_drop_obj(dl_registry_t *r, dl_core_t *o)
{
    pthread_mutex_lock(&r->mu);
    if (o->objs == 1) {
        pthread_mutex_lock(&o->mu);
        int busy = dl_core_in_use(o);
        pthread_mutex_unlock(&o->mu);
        if (busy) {
            pthread_mutex_unlock(&r->mu);
            return EBUSY;
        }
    }
    o->objs--;
    pthread_mutex_unlock(&r->mu);
    dl_registry_put(r, o);
    return 0;
}

void dl_registry_walk(dl_registry_t *r, void (*fn)(dl_core_t *o, void *arg),
                      void (*end)(void *arg), void *arg)
{
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nbuckets; i++)
        for (dl_core_t *o = r->buckets[i]; o; o = o->next) {
            pthread_mutex_lock(&o->mu);
            fn(o, arg);
            pthread_mutex_unlock(&o->mu);
        }
    if (end)
        end(arg);
    pthread_mutex_unlock(&r->mu);
}

void dl_registry_each(dl_registry_t *r, void (*fn)(dl_core_t *o, void *arg), void *arg)
{
    dl_registry_walk(r, fn, NULL, arg);
}

size_t dl_registry_count(dl_registry_t *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->count;
    pthread_mutex_unlock(&r->mu);
    return n;
}

dl_core_t *dl_registry_find_key(dl_registry_t *r, const char *prefix, const char *key, size_t len)
{
    const char *name;
    size_t nlen;
    int kind, which;
    if (dl_key_parse(prefix, strlen(prefix), key, len, &kind, &name, &nlen, &which) || which != 0)
        return NULL;
    pthread_mutex_lock(&r->mu);
    dl_core_t *o = NULL;
    if (r->nbuckets) {
        size_t at = hash(kind, name, nlen) & (r->nbuckets - 1);
        for (o = r->buckets[at]; o; o = o->next)
            if (is(o, kind, name, nlen))
                break;
    }
    if (o)
        pthread_mutex_lock(&o->mu);
    pthread_mutex_unlock(&r->mu);
    return o;
}
