/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * objtab.h - the API objects this process has resolved (objtab.c): the
 * object's address and identity -> the process's state of it (a
 * primitive's, which begins with its dl_core_t: core.h), with a
 * reference on it.
 *
 * The state a process resolved an object to is the process's own, so
 * it is kept here, in the process, never in the object: an object may sit
 * in memory that forked processes share, where a pointer one of them
 * wrote means nothing (or something else) in another.  The table belongs
 * to the process state (dl_proc_t), so a forked child starts with an
 * empty one.  Each thread keeps the few entries it used last (lock-free);
 * every removal (destroy) invalidates those caches, process-wide.
 *
 * objtab.c writes the table under its mutex; object.c is its only user.
 * Lock order: the table's mutex before the registry's.
 */
#ifndef DL_OBJTAB_H
#define DL_OBJTAB_H

#include <pthread.h>
#include <stdint.h>

struct dl_core;               /* dl_core_t, core.h */

/* An object as this process knows it: where it is, and which
 * initialization of that memory (its name, who initialized it when, and
 * the generation that process gave it: object.h).  Memory initialized
 * again is another object, whoever initialized it. */
typedef struct dl_objkey {
    const void *addr;
    const char *name;
    uint64_t origin, born, gen;
} dl_objkey_t;

typedef struct dl_objent dl_objent_t;

typedef struct dl_objtab {
    pthread_mutex_t mu;
    dl_objent_t **buckets;
    size_t nbuckets, count;
    unsigned long epoch;      /* bumped by each removal (atomic) */
} dl_objtab_t;

void dl_objtab_init(dl_objtab_t *t);
/* The state key was resolved to in this process, or NULL. */
struct dl_core *dl_objtab_find(dl_objtab_t *t, const dl_objkey_t *key);
/* Enters key -> o (the caller found key absent, and keeps others from
 * entering it meanwhile); returns o, or NULL on ENOMEM. */
struct dl_core *dl_objtab_add(dl_objtab_t *t, const dl_objkey_t *key, struct dl_core *o);
/* Up to max keys of the table at key's address that are not key (earlier
 * initializations of that memory); how many. */
size_t dl_objtab_stale(dl_objtab_t *t, const dl_objkey_t *key, dl_objkey_t *out, size_t max);
/* Removes key if drop(its state, arg) says 0 (called under the table
 * mutex); returns drop's code, or 0 if key is not in the table. */
int dl_objtab_remove(dl_objtab_t *t, const dl_objkey_t *key,
                     int (*drop)(struct dl_core *o, void *arg), void *arg);

#endif
