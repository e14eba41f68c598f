/* SPDX-License-Identifier: BSD-3-Clause */
/* objtab.c - the API objects this process has resolved (objtab.h). */
#include <stdlib.h>
#include <string.h>

#include "objtab.h"

struct dl_objent {
    dl_objent_t *next;
    dl_objkey_t key;
    struct dl_core *o;
};

/* Each thread's last few lookups: the hot path of every lock call is one
 * of these, with no lock and no shared cache line written. */
#define DL_OBJCACHE 8

typedef struct cached {
    const dl_objtab_t *t;     /* the table it came from (the process's) */
    unsigned long epoch;      /* valid while the table's epoch is this */
    dl_objkey_t key;
    struct dl_core *o;
} cached_t;

static __thread cached_t cache[DL_OBJCACHE];

static size_t hash_addr(const void *a)
{
    return (size_t)(((uintptr_t)a >> 3) * 0x9E3779B97F4A7C15ull >> 32);
}

static int same(const dl_objkey_t *a, const dl_objkey_t *b)
{
    return a->addr == b->addr && a->name == b->name && a->origin == b->origin &&
           a->born == b->born && a->gen == b->gen;
}

void dl_objtab_init(dl_objtab_t *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
}

/* t->mu held */
static dl_objent_t **slot(dl_objtab_t *t, const dl_objkey_t *key)
{
    if (!t->nbuckets)
        return NULL;
    dl_objent_t **pp = &t->buckets[hash_addr(key->addr) & (t->nbuckets - 1)];
    while (*pp && !same(&(*pp)->key, key))
        pp = &(*pp)->next;
    return pp;
}

/* t->mu held */
static int grow(dl_objtab_t *t)
{
    size_t nb = t->nbuckets ? t->nbuckets * 2 : 16;
    dl_objent_t **b = calloc(nb, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (dl_objent_t *e = t->buckets[i], *next; e; e = next) {
            next = e->next;
            size_t at = hash_addr(e->key.addr) & (nb - 1);
            e->next = b[at];
            b[at] = e;
        }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = nb;
    return 0;
}

static void remember(const dl_objtab_t *t, unsigned long epoch, const dl_objkey_t *key,
                     struct dl_core *o)
{
    cached_t *c = &cache[hash_addr(key->addr) % DL_OBJCACHE];
    c->t = t;
    c->epoch = epoch;
    c->key = *key;
    c->o = o;
}

struct dl_core *dl_objtab_find(dl_objtab_t *t, const dl_objkey_t *key)
{
    unsigned long epoch = __atomic_load_n(&t->epoch, __ATOMIC_ACQUIRE);
    const cached_t *c = &cache[hash_addr(key->addr) % DL_OBJCACHE];
    if (c->t == t && c->epoch == epoch && c->o && same(&c->key, key))
        return c->o;
    pthread_mutex_lock(&t->mu);
    dl_objent_t **pp = slot(t, key);
    struct dl_core *o = pp && *pp ? (*pp)->o : NULL;
    epoch = t->epoch;
    pthread_mutex_unlock(&t->mu);
    if (o)
        remember(t, epoch, key, o);
    return o;
}

struct dl_core *dl_objtab_add(dl_objtab_t *t, const dl_objkey_t *key, struct dl_core *o)
{
    pthread_mutex_lock(&t->mu);
    dl_objent_t *e = malloc(sizeof *e);
    if (!e || (t->count >= t->nbuckets && grow(t) && !t->nbuckets)) {
        free(e);
        pthread_mutex_unlock(&t->mu);
        return NULL;
    }
    e->key = *key;
    e->o = o;
    dl_objent_t **pp = &t->buckets[hash_addr(key->addr) & (t->nbuckets - 1)];
    e->next = *pp;
    *pp = e;
    t->count++;
    unsigned long epoch = t->epoch;
    pthread_mutex_unlock(&t->mu);
    remember(t, epoch, key, o);
    return o;
}

size_t dl_objtab_stale(dl_objtab_t *t, const dl_objkey_t *key, dl_objkey_t *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&t->mu);
    if (t->nbuckets)
        for (dl_objent_t *e = t->buckets[hash_addr(key->addr) & (t->nbuckets - 1)];
             e && n < max; e = e->next)
            if (e->key.addr == key->addr && !same(&e->key, key))
                out[n++] = e->key;
    pthread_mutex_unlock(&t->mu);
    return n;
}

int dl_objtab_remove(dl_objtab_t *t, const dl_objkey_t *key,
                     int (*drop)(struct dl_core *o, void *arg), void *arg)
{
    pthread_mutex_lock(&t->mu);
    dl_objent_t **pp = slot(t, key);
    int rc = 0;
    if (pp && *pp && (rc = drop((*pp)->o, arg)) == 0) {
        dl_objent_t *e = *pp;
        *pp = e->next;
        t->count--;
        /* Every thread's cached entries go: this one may be among them,
         * and its state may be freed now. */
        __atomic_add_fetch(&t->epoch, 1, __ATOMIC_ACQ_REL);
        free(e);
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}
