/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.h - the process's objects, one per kind and name: what Spring's
 * RedisLockRegistry keeps in its locks map.  Every object of the API
 * (dist_mutex_t, dist_rwlock_t) naming the same lock shares one state, so
 * two objects of one name are one lock, and only one thread at a time
 * talks to Redis for it.  A name is a name within its kind: a semaphore
 * "x" is another entry (and has other keys, keys.h) than the lock "x".
 *
 * Each entry is a primitive's state, which begins with its dl_core_t
 * (core.h), created at the size its kind says.  registry.c owns the table
 * and each entry's reference counts; which file writes each of the other
 * fields is said at the field.
 *
 * Lock order: registry mutex before an entry's mu; an entry's mu before
 * the connection's.
 */
#ifndef DL_REGISTRY_H
#define DL_REGISTRY_H

#include <pthread.h>

#include "core.h"

typedef struct dl_registry {
    pthread_mutex_t mu;
    dl_core_t **buckets;
    size_t nbuckets, count;
    /* Told of each object about to be freed, registry mutex held (the
     * metrics file keeps its counts: core/metrics.c); NULL: nobody. */
    void (*retire)(dl_core_t *o, void *arg);
    void *retire_arg;
    /* Told of each object made and of each about to be freed, registry
     * mutex held (on a cluster the subscriber counts the objects of each
     * slot: core/notify.c); NULL: nobody. */
    void (*made)(dl_core_t *o, void *arg);
    void (*gone)(dl_core_t *o, void *arg);
    void *watch_arg;
} dl_registry_t;

void dl_registry_init(dl_registry_t *r);
/* The object of that kind and name (created if needed, its keys built
 * from prefix) with a reference taken; NULL on ENOMEM. */
dl_core_t *dl_registry_get(dl_registry_t *r, const dl_kind_t *kind, const char *prefix,
                           const char *name, size_t len);
/* Drops a reference (dl_registry_get's or dl_registry_pin's); the state is
 * freed with the last one. */
void dl_registry_put(dl_registry_t *r, dl_core_t *o);
/* Takes a reference on o from within dl_registry_each's fn (the registry
 * mutex held), or for a caller that has a reference of its own (an object
 * in use; no registry mutex needed), so that o outlives it: a pin, dropped
 * with dl_registry_put once its holder is done with o. */
void dl_registry_pin(dl_core_t *o);
/* An API object of o was resolved (counted so destroy knows the last one). */
void dl_registry_add_obj(dl_registry_t *r, dl_core_t *o);
/* An API object of o is destroyed: EBUSY if it is the last object of one
 * held or waited on in this process (dl_core_in_use); else drops its
 * reference. */
int dl_registry_drop_obj(dl_registry_t *r, dl_core_t *o);
/* Calls fn(o, arg) for each object with its mu held and the registry mutex
 * held (so fn must not block; it may pin o). */
void dl_registry_each(dl_registry_t *r, void (*fn)(dl_core_t *o, void *arg), void *arg);
/* The same, then end(arg) before the registry mutex is released: what fn
 * saw and what end sees are one state (no object created or freed
 * between them). */
void dl_registry_walk(dl_registry_t *r, void (*fn)(dl_core_t *o, void *arg),
                      void (*end)(void *arg), void *arg);
/* How many objects there are now. */
size_t dl_registry_count(dl_registry_t *r);
/* Finds the object whose main key is key (pushes name an object by it),
 * and returns it with mu held; NULL if this process has no such object. */
dl_core_t *dl_registry_find_key(dl_registry_t *r, const char *prefix, const char *key, size_t len);

#endif
