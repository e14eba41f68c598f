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
    return o->kind->id == kind && o->namelen == len && memcmp(dl_core_name(o), name, len) == 0;
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
    r->unwatch = NULL;
    r->unwatch_arg = NULL;
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
            size_t at = hash(o->kind->id, dl_core_name(o), o->namelen) & (nb - 1);
            o->next = b[at];
            b[at] = o;
        }
    free(r->buckets);
    r->buckets = b;
    r->nbuckets = nb;
    return 0;
}

/* n rounded up to a multiple of a (an alignment). */
static size_t align(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

static dl_core_t *create(const dl_kind_t *kind, const char *prefix, const char *name, size_t len)
{
    /* One allocation: the state, then its main key (its name is in it).  The
     * other keys are derived by each call (caller.h); only a name too long
     * for that has them all, after the main key.  Then the counters, only
     * for a process that writes them (tally.h). */
    size_t all = dl_kind_keys_size(kind->id, prefix, len);
    size_t keyed = kind->size + dl_kind_key_main_size(prefix, len), size = keyed, at = 0;
    int n = 0;
    if (all > DL_CALL_KEYBUF) {
        n = dl_kind_keys(kind->id)->n;
        at = align(keyed, _Alignof(char *) > _Alignof(size_t) ? _Alignof(char *)
                                                              : _Alignof(size_t));
        size = at + (size_t)n * (sizeof(char *) + sizeof(size_t)) + all;
    }
    size_t tally_at = dl_tally_on() ? align(size, _Alignof(dl_tally_t)) : 0;
    if (tally_at)
        size = tally_at + sizeof(dl_tally_t);
    /* (A name is at most DIST_NAME_MAX bytes and a prefix 255: its
     * lengths and offsets fit dl_core_t's 16 bits, checked all the same.) */
    if (len > UINT16_MAX || keyed - kind->size > UINT16_MAX || at > UINT16_MAX ||
        tally_at > UINT16_MAX)
        return NULL;
    dl_core_t *o = calloc(1, size);
    if (!o)
        return NULL;
    /* The hold's rare record for good only for a kind that keeps it
     * (hold.c makes the others' on demand). */
    if (kind->keeps_rare && !(o->hold.rare = calloc(1, sizeof *o->hold.rare))) {
        free(o);
        return NULL;
    }
    o->tally_at = (uint16_t)tally_at;
    if (o->hold.rare)
        o->hold.rare->pins = 1;   /* (never given back) */
    /* The main key is PREFIX{HEAD NAME} (keys.h): the name is the len
     * bytes before its '}', and is not stored again (nor ended by a NUL:
     * every use of it goes by namelen). */
    char *key = (char *)o + kind->size;
    o->kind = kind;
    o->keylen = (uint16_t)dl_kind_key_main(kind->id, key, prefix, name, len);
    o->namelen = (uint16_t)len;   /* (dl_core_name: in the key) */
    if (at) {
        char *m = (char *)o + at;               /* the keys' pointers, their */
        o->allkeys_at = (uint16_t)at;           /* lengths, then the keys */
        dl_kind_keys_write(kind->id, m + (size_t)n * (sizeof(char *) + sizeof(size_t)), prefix,
                           name, len, (const char **)m, (size_t *)(m + (size_t)n * sizeof(char *)));
    }
    pthread_mutex_init(&o->mu, NULL);
    return o;
}

pthread_cond_t *dl_core_cv_new(const dl_kind_t *kind)
{
    int n = kind->queue ? 2 : 1;
    pthread_cond_t *cv = malloc(n * sizeof *cv);
    if (!cv)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int i = 0; i < n; i++)
        pthread_cond_init(&cv[i], &ca);
    pthread_condattr_destroy(&ca);
    return cv;
}

dl_core_t *dl_registry_get(dl_registry_t *r, const dl_kind_t *kind, const char *prefix,
                           const char *name, size_t len)
{
    pthread_mutex_lock(&r->mu);
    if (r->count >= 2 * r->nbuckets && grow(r) && !r->nbuckets) {
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
        size_t at = hash(o->kind->id, dl_core_name(o), o->namelen) & (r->nbuckets - 1);
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
        if (r->unwatch)
            r->unwatch(o, r->unwatch_arg);
        pthread_mutex_destroy(&o->mu);
        if (o->cv) {
            pthread_cond_destroy(&o->cv[0]);
            if (o->kind->queue)
                pthread_cond_destroy(&o->cv[1]);
            free(o->cv);
        }
        if (o->kind->fini)
            o->kind->fini(o);
        free(o->hold.rare);
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

int dl_registry_walk_part(dl_registry_t *r, dl_registry_cursor_t *cur, size_t buckets,
                          void (*fn)(dl_core_t *o, void *arg), void *arg)
{
    pthread_mutex_lock(&r->mu);
    if (!cur->base)
        cur->base = r->nbuckets;
    /* The table only doubles, and an object's bucket is its hash masked by
     * the table's size: the objects of bucket j when the walk began are
     * now in buckets j, j + base, j + 2 base ...  Visiting those together
     * visits each object once, however often the table grew. */
    size_t end = cur->at + buckets < cur->base ? cur->at + buckets : cur->base;
    for (; cur->at < end; cur->at++)
        for (size_t b = cur->at; b < r->nbuckets; b += cur->base)
            for (dl_core_t *o = r->buckets[b]; o; o = o->next) {
                pthread_mutex_lock(&o->mu);
                fn(o, arg);
                pthread_mutex_unlock(&o->mu);
            }
    int more = cur->at < cur->base;
    pthread_mutex_unlock(&r->mu);
    return more;
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
