/* SPDX-License-Identifier: BSD-3-Clause */
/* object.c - what dist_mutex_t and dist_rwlock_t share: validation, the
 * name, and lazy resolution to the process-wide lock state. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlock.h"
#include "dl.h"
#include "hold.h"
#include "holds.h"
#include "lock.h"
#include "object.h"
#include "process.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* In a forked child: a thread of the parent may have held mu. */
void dl_obj_after_fork(void)
{
    pthread_mutex_init(&mu, NULL);
}

static int name_ok(const char *name, size_t *len)
{
    if (!name)
        return dl_fail(EINVAL, "lock name is NULL");
    size_t n = strnlen(name, DIST_NAME_MAX + 1);
    if (n == 0)
        return dl_fail(EINVAL, "lock name is empty");
    if (n > DIST_NAME_MAX)
        return dl_fail(EINVAL, "lock name is longer than DIST_NAME_MAX (%d bytes)", DIST_NAME_MAX);
    *len = n;
    return 0;
}

int dl_obj_init(struct dist_lockobj *o, unsigned magic, const char *name)
{
    size_t len = 0;
    if (!o)
        return dl_fail(EINVAL, "lock object is NULL");
    if (name_ok(name, &len))
        return EINVAL;
    char *copy = malloc(len + 1);
    if (!copy)
        return dl_fail(ENOMEM, "out of memory");
    memcpy(copy, name, len + 1);
    memset(o, 0, sizeof *o);
    o->dl_magic = magic;
    o->dl_type = DIST_MUTEX_RECURSIVE;
    o->dl_name = copy;
    o->dl_owns_name = 1;
    return 0;
}

static int valid(const struct dist_lockobj *o, unsigned magic)
{
    if (!o)
        return dl_fail(EINVAL, "lock object is NULL");
    if (o->dl_magic == DL_MAGIC_DEAD)
        return dl_fail(EINVAL, "lock object was destroyed");
    if (o->dl_magic != magic && o->dl_magic != DIST_PRIV_MAGIC_STATIC)
        return dl_fail(EINVAL, "lock object is not initialized");
    return 0;
}

int dl_obj_resolve(struct dist_lockobj *o, unsigned magic, dl_proc_t **pp, dl_lock_t **lp)
{
    if (valid(o, magic))
        return EINVAL;
    int err = 0;
    dl_proc_t *p = dl_proc_get(&err);
    if (!p)
        return err;
    *pp = p;
    /* Fast path: resolved in this process generation.  dl_lock is written
     * before dl_gen (release), so a matching generation means dl_lock is
     * this generation's. */
    unsigned long gen = __atomic_load_n(&dl_gen, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&o->dl_gen, __ATOMIC_ACQUIRE) == gen) {
        *lp = __atomic_load_n(&o->dl_lock, __ATOMIC_RELAXED);
        return 0;
    }
    size_t len = 0;
    if (name_ok(o->dl_name, &len))
        return EINVAL;
    dl_lock_t *l = dl_registry_get(&p->reg, p->cfg.prefix, o->dl_name, len);
    if (!l)
        return dl_fail(ENOMEM, "out of memory");
    /* Two threads may race to resolve a static lock: the registry hands
     * both the same state; the loser drops its extra reference. */
    pthread_mutex_lock(&mu);
    if (__atomic_load_n(&o->dl_gen, __ATOMIC_ACQUIRE) == gen) {
        pthread_mutex_unlock(&mu);
        dl_registry_put(&p->reg, l);
        *lp = __atomic_load_n(&o->dl_lock, __ATOMIC_RELAXED);
        return 0;
    }
    dl_registry_add_obj(&p->reg, l);
    __atomic_store_n(&o->dl_lock, l, __ATOMIC_RELAXED);
    __atomic_store_n(&o->dl_gen, gen, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&mu);
    *lp = l;
    return 0;
}

int dl_obj_destroy(struct dist_lockobj *o, unsigned magic)
{
    if (valid(o, magic))
        return EINVAL;
    if (__atomic_load_n(&o->dl_gen, __ATOMIC_ACQUIRE) == __atomic_load_n(&dl_gen, __ATOMIC_ACQUIRE)) {
        int err;
        dl_proc_t *p = dl_proc_get(&err);
        dl_lock_t *l = o->dl_lock;
        if (p && l) {
            /* Unlocked: pass it on now.  Should that release fail, it is
             * logged and the hold lapses within its claim window; destroy
             * still succeeds, so the caller's last error stays as it was. */
            char kept[DL_ERRMAX];
            snprintf(kept, sizeof kept, "%s", dist_lasterror());
            dl_lock_linger_end(p, l, 1, 0);
            dl_seterr("%s", kept);
        }
        if (p && l && dl_registry_drop_obj(&p->reg, l))
            return dl_fail(EBUSY, "lock is held or waited on in this process");
    }
    if (o->dl_owns_name)
        free((void *)o->dl_name);
    o->dl_name = NULL;
    o->dl_lock = NULL;
    o->dl_magic = DL_MAGIC_DEAD;
    return 0;
}

int dl_obj_getfence(struct dist_lockobj *o, unsigned magic, uint64_t *fence)
{
    dl_proc_t *p = NULL;
    dl_lock_t *l = NULL;
    if (!fence)
        return dl_fail(EINVAL, "fence is NULL");
    int rc = dl_obj_resolve(o, magic, &p, &l);
    return rc ? rc : dl_lock_getfence(l, fence);
}

int dl_obj_hold_lost(struct dist_lockobj *o, unsigned magic)
{
    dl_proc_t *p = NULL;
    dl_lock_t *l = NULL;
    if (dl_obj_resolve(o, magic, &p, &l))
        return -1;
    pthread_mutex_lock(&l->mu);
    int rc = -1;
    if (dl_holder_find(l, dl_tid()))
        rc = l->lost || (!l->rmode && !l->busy);
    pthread_mutex_unlock(&l->mu);
    return rc;
}
