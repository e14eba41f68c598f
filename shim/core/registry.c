/* SPDX-License-Identifier: BSD-3-Clause */
/* registry.c - name -> dl_lock_t, shared by every object of a name. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "keys.h"
#include "lock.h"
#include "registry.h"

_Static_assert(DL_NKEYS == DL_KEYS_N, "the scripts take every key of a lock");

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;          /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

void dl_registry_init(dl_registry_t *r)
{
    pthread_mutex_init(&r->mu, NULL);
    r->nbuckets = 0;
    r->buckets = NULL;
    r->count = 0;
}

static int grow(dl_registry_t *r)
{
    size_t nb = r->nbuckets ? r->nbuckets * 2 : 64;
    dl_lock_t **b = calloc(nb, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < r->nbuckets; i++)
        for (dl_lock_t *l = r->buckets[i], *next; l; l = next) {
            next = l->next;
            size_t at = hash(l->name, l->namelen) & (nb - 1);
            l->next = b[at];
            b[at] = l;
        }
    free(r->buckets);
    r->buckets = b;
    r->nbuckets = nb;
    return 0;
}

static dl_lock_t *create(const char *prefix, const char *name, size_t len)
{
    dl_lock_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    /* One buffer for the name and all six keys (keys.h). */
    size_t total = len + 1 + dl_keys_size(prefix, len);
    char *buf = malloc(total);
    if (!buf) {
        free(l);
        return NULL;
    }
    l->name = buf;
    memcpy(buf, name, len);
    buf[len] = 0;
    l->namelen = len;
    dl_keys_write(buf + len + 1, prefix, name, len, l->keys, l->keylen);
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    return l;
}

dl_lock_t *dl_registry_get(dl_registry_t *r, const char *prefix, const char *name, size_t len)
{
    pthread_mutex_lock(&r->mu);
    if (r->count >= r->nbuckets && grow(r) && !r->nbuckets) {
        pthread_mutex_unlock(&r->mu);
        return NULL;
    }
    size_t at = hash(name, len) & (r->nbuckets - 1);
    dl_lock_t *l;
    for (l = r->buckets[at]; l; l = l->next)
        if (l->namelen == len && memcmp(l->name, name, len) == 0)
            break;
    if (!l && (l = create(prefix, name, len))) {
        l->next = r->buckets[at];
        r->buckets[at] = l;
        r->count++;
    }
    if (l)
        __atomic_add_fetch(&l->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&r->mu);
    return l;
}

void dl_registry_put(dl_registry_t *r, dl_lock_t *l)
{
    pthread_mutex_lock(&r->mu);
    if (__atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        size_t at = hash(l->name, l->namelen) & (r->nbuckets - 1);
        for (dl_lock_t **pp = &r->buckets[at]; *pp; pp = &(*pp)->next)
            if (*pp == l) {
                *pp = l->next;
                break;
            }
        r->count--;
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        free(l->holders);
        free(l->name);
        free(l);
    }
    pthread_mutex_unlock(&r->mu);
}

void dl_registry_pin(dl_lock_t *l)
{
    /* The registry mutex is held (dl_registry_each), or the caller has a
     * reference of its own: either way the count cannot reach 0 meanwhile,
     * and an atomic add needs no registry mutex. */
    __atomic_add_fetch(&l->refs, 1, __ATOMIC_RELAXED);
}

void dl_registry_add_obj(dl_registry_t *r, dl_lock_t *l)
{
    pthread_mutex_lock(&r->mu);
    l->objs++;
    pthread_mutex_unlock(&r->mu);
}

int dl_registry_drop_obj(dl_registry_t *r, dl_lock_t *l)
{
    pthread_mutex_lock(&r->mu);
    if (l->objs == 1) {
        pthread_mutex_lock(&l->mu);
        int busy = dl_lock_in_use(l);
        pthread_mutex_unlock(&l->mu);
        if (busy) {
            pthread_mutex_unlock(&r->mu);
            return EBUSY;
        }
    }
    l->objs--;
    pthread_mutex_unlock(&r->mu);
    dl_registry_put(r, l);
    return 0;
}

void dl_registry_each(dl_registry_t *r, void (*fn)(dl_lock_t *l, void *arg), void *arg)
{
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nbuckets; i++)
        for (dl_lock_t *l = r->buckets[i]; l; l = l->next) {
            pthread_mutex_lock(&l->mu);
            fn(l, arg);
            pthread_mutex_unlock(&l->mu);
        }
    pthread_mutex_unlock(&r->mu);
}

dl_lock_t *dl_registry_find_key(dl_registry_t *r, const char *prefix, const char *key, size_t len)
{
    const char *name;
    size_t nlen;
    int which;
    if (dl_key_name(prefix, strlen(prefix), key, len, &name, &nlen, &which) || which != 0)
        return NULL;
    pthread_mutex_lock(&r->mu);
    dl_lock_t *l = NULL;
    if (r->nbuckets) {
        size_t at = hash(name, nlen) & (r->nbuckets - 1);
        for (l = r->buckets[at]; l; l = l->next)
            if (l->namelen == nlen && memcmp(l->name, name, nlen) == 0)
                break;
    }
    if (l)
        pthread_mutex_lock(&l->mu);
    pthread_mutex_unlock(&r->mu);
    return l;
}
