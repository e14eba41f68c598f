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
#include "lock.h"
#include "object.h"
#include "objtab.h"
#include "port.h"
#include "process.h"
#include "self.h"

/* dl_owns_name: where the name of an initialized object is (a static
 * object's, 0 or DIST_PRIV_NAME_PLACE, is the program's string; the
 * latter a name that is the place of its initializer: port.c). */
enum { DL_NAME_COPY = 1, DL_NAME_INLINE = 2 };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* The initializations this process made: each object's dl_gen.  With the
 * process's tag (dl_origin) it names one initialization of one piece of
 * memory among all processes, so that memory initialized again (under
 * another name, or the same) is another object to a sibling that resolved
 * it before, whose fork count would not tell (none may have forked
 * between the two).  A forked child carries the count on under its own
 * tag. */
static uint64_t gens;

/* In a forked child: a thread of the parent may have held mu. */
static void after_fork(void)
{
    pthread_mutex_init(&mu, NULL);
    dl_port_after_fork();
}

__attribute__((constructor)) static void register_after_fork(void)
{
    static dl_fork_hook_t hook = { after_fork, NULL };
    dl_proc_on_fork(&hook);
}

/* The word for an object of that magic in messages. */
static const char *what_of(unsigned magic)
{
    switch (magic) {
    case DL_MAGIC_COND: return "condition";
    case DL_MAGIC_SEM: return "semaphore";
    case DL_MAGIC_BARRIER: return "barrier";
    case DL_MAGIC_ONCE: return "once";
    default: return "lock";
    }
}

static int name_ok(const char *name, size_t *len, unsigned magic)
{
    const char *what = what_of(magic);
    if (!name)
        return dl_fail(EINVAL, "%s name is NULL", what);
    size_t n = strnlen(name, DIST_NAME_MAX + 1);
    if (n == 0)
        return dl_fail(EINVAL, "%s name is empty", what);
    if (n > DIST_NAME_MAX)
        return dl_fail(EINVAL, "%s name is longer than DIST_NAME_MAX (%d bytes)", what,
                       DIST_NAME_MAX);
    *len = n;
    return 0;
}

int dl_obj_init(struct dist_lockobj *o, unsigned magic, const char *name)
{
    size_t len = 0;
    if (!o)
        return dl_fail(EINVAL, "%s object is NULL", what_of(magic));
    if (name_ok(name, &len, magic))
        return EINVAL;
    char *copy = NULL;
    if (len >= sizeof o->dl_iname && !(copy = malloc(len + 1)))
        return dl_fail(ENOMEM, "out of memory");
    memset(o, 0, sizeof *o);
    o->dl_magic = magic;
    o->dl_type = DIST_MUTEX_RECURSIVE;
    if (copy) {
        memcpy(copy, name, len + 1);
        o->dl_name = copy;
        o->dl_owns_name = DL_NAME_COPY;
    } else {
        /* In the object: readable by every process that shares it, however
         * it came to (a sibling, an unrelated process mapping the same
         * file), as a pthread object in shared memory is. */
        memcpy(o->dl_iname, name, len + 1);
        o->dl_owns_name = DL_NAME_INLINE;
    }
    /* A copy is in this process's memory: only this process and the
     * children it forks from now on have it (dl_self_inherited). */
    o->dl_origin = dl_self_tag();
    o->dl_born = dl_self_forks();
    o->dl_gen = __atomic_add_fetch(&gens, 1, __ATOMIC_RELAXED);
    return 0;
}

/* The object's name, where this process reads it. */
static const char *name_of(const struct dist_lockobj *o)
{
    return o->dl_owns_name == DL_NAME_INLINE ? o->dl_iname : o->dl_name;
}

const char *dl_obj_name(const struct dist_lockobj *o)
{
    return name_of(o);
}

static int valid(const struct dist_lockobj *o, unsigned magic)
{
    const char *what = what_of(magic);
    if (!o)
        return dl_fail(EINVAL, "%s object is NULL", what);
    if (o->dl_magic == DL_MAGIC_DEAD)
        return dl_fail(EINVAL, "%s object was destroyed", what);
    if (o->dl_magic != magic && o->dl_magic != DIST_PRIV_MAGIC_STATIC)
        return dl_fail(EINVAL, "%s object is not initialized", what);
    return 0;
}

/* Is the object's name readable here?  A static object's name is the
 * program's; an initialized one's is a copy in the memory of the process
 * that initialized it, which this process has only if it is that process
 * or was forked from it afterwards.  An object initialized by a sibling or
 * a child in shared memory names a string this process does not have. */
static int name_here(const struct dist_lockobj *o)
{
    return o->dl_owns_name != DL_NAME_COPY || dl_self_inherited(o->dl_origin, o->dl_born);
}

static int drop_obj(dl_core_t *e, void *arg);

/* Which object this is, for this process's table (objtab.h). */
static void key_of(const struct dist_lockobj *o, dl_objkey_t *k)
{
    k->addr = o;
    k->name = name_of(o);
    k->origin = o->dl_origin;
    k->born = o->dl_born;
    k->gen = o->dl_gen;
}

/* o at k's address was initialized again (k is new to the table): what
 * this process resolved that memory to before is another object, which
 * nobody can name any more.  Its entries go as a destroy would take them,
 * unless one is the last object of a hold or wait of this process (kept
 * then, as destroy's EBUSY keeps it). */
static void forget_stale(dl_proc_t *p, const dl_objkey_t *k)
{
    dl_objkey_t stale[4];
    size_t n;
    while ((n = dl_objtab_stale(&p->objs, k, stale, 4)) > 0) {
        size_t gone = 0;
        for (size_t i = 0; i < n; i++) {
            dl_core_t *e = dl_objtab_find(&p->objs, &stale[i]);
            if (!e)
                continue;
            char kept[DL_ERRMAX];
            snprintf(kept, sizeof kept, "%s", dist_lasterror());
            dl_hold_linger_end(p, e, 1, 0);
            dl_seterr("%s", kept);
            if (dl_objtab_remove(&p->objs, &stale[i], drop_obj, p) == 0)
                gone++;
        }
        if (gone < n)
            return;               /* (some are kept: do not loop on them) */
    }
}

int dl_obj_resolve_kind(struct dist_lockobj *o, unsigned magic, const dl_kind_t *kind,
                        dl_proc_t **pp, dl_core_t **cp)
{
    if (valid(o, magic))
        return EINVAL;
    int err = 0;
    dl_proc_t *p = dl_proc_get(&err);
    if (!p)
        return err;
    *pp = p;
    /* The state is looked up in this process's own table, never taken
     * from the object: the object may be shared with other processes
     * (MAP_SHARED across fork), whose states are theirs. */
    dl_objkey_t k;
    key_of(o, &k);
    dl_core_t *found = dl_objtab_find(&p->objs, &k);
    if (found && found->kind == kind) {
        *cp = found;
        return 0;
    }
    if (found)                    /* a static object of another type, cast */
        return dl_fail(EINVAL, "%s object is not initialized (it is a %s)", what_of(magic),
                       dl_core_what(found));
    if (!name_here(o))
        return dl_fail(EINVAL, "%s object was initialized by another process (a sibling or a "
                       "child, in shared memory) with a name of %zu bytes or more, which is "
                       "in that process's memory; initialize a shared object before "
                       "fork, or give it a shorter name", dl_kind_keys(kind->id)->what,
                       sizeof o->dl_iname);
    size_t len = 0;
    const char *name = name_of(o);
    if (name_ok(name, &len, magic))
        return EINVAL;
    /* A static object named by its place: the place's only object here,
     * or the program stops (port.c). */
    if (o->dl_magic == DIST_PRIV_MAGIC_STATIC && o->dl_owns_name == DIST_PRIV_NAME_PLACE)
        dl_port_place_claim(o, magic, name);
    dl_core_t *e = dl_registry_get(&p->reg, kind, p->cfg.prefix, name, len);
    if (!e)
        return dl_fail(ENOMEM, "out of memory");
    /* Two threads may race to resolve an object: the registry hands both
     * the same state, the first enters it in the table, and the other
     * drops its extra reference. */
    pthread_mutex_lock(&mu);
    int added = 0;
    dl_core_t *kept = dl_objtab_find(&p->objs, &k);
    if (!kept && (kept = dl_objtab_add(&p->objs, &k, e))) {
        added = 1;
        dl_registry_add_obj(&p->reg, e);
    }
    pthread_mutex_unlock(&mu);
    if (!added)
        dl_registry_put(&p->reg, e);
    if (!kept)
        return dl_fail(ENOMEM, "out of memory");
    if (added)
        forget_stale(p, &k);
    if (kept->kind != kind)
        return dl_fail(EINVAL, "%s object is not initialized (it is a %s)", what_of(magic),
                       dl_core_what(kept));
    *cp = kept;
    return 0;
}

int dl_obj_resolve(struct dist_lockobj *o, unsigned magic, dl_proc_t **pp, dl_lock_t **lp)
{
    dl_core_t *c = NULL;
    int rc = dl_obj_resolve_kind(o, magic, &dl_lock_kind, pp, &c);
    if (rc == 0)
        *lp = dl_lock_of(c);
    return rc;
}

/* dl_objtab_remove's drop: the object's reference to its entry e goes,
 * unless it is the last object of a lock held or waited on here (EBUSY). */
static int drop_obj(dl_core_t *e, void *arg)
{
    dl_proc_t *p = arg;
    return dl_registry_drop_obj(&p->reg, e);
}

int dl_obj_destroy(struct dist_lockobj *o, unsigned magic)
{
    if (valid(o, magic))
        return EINVAL;
    int err;
    dl_proc_t *p = dl_proc_get(&err);
    dl_objkey_t k;
    key_of(o, &k);
    dl_core_t *e = p ? dl_objtab_find(&p->objs, &k) : NULL;
    /* A lock the process was told is unrecoverable (ENOTRECOVERABLE): the
     * destroy that precedes its new init makes it usable again, in Redis,
     * for every process (SPEC, robust).  Not reached: the object stays, so
     * that the destroy can be tried again. */
    if (e && e->kind == &dl_lock_kind) {
        int rc = dl_lock_recover(p, dl_lock_of(e));
        if (rc)
            return rc;
    }
    if (e) {
        /* Unlocked: pass it on now.  Should that release fail, it is
         * logged and the hold lapses within its claim window; destroy
         * still succeeds, so the caller's last error stays as it was. */
        char kept[DL_ERRMAX];
        snprintf(kept, sizeof kept, "%s", dist_lasterror());
        dl_hold_linger_end(p, e, 1, 0);
        dl_seterr("%s", kept);
        if (dl_objtab_remove(&p->objs, &k, drop_obj, p))
            return magic == DL_MAGIC_COND
                       ? dl_fail(EBUSY, "condition is waited on in this process")
                       : dl_fail(EBUSY, "lock is held or waited on in this process");
    }
    dl_port_place_release(o);
    /* Only this process's copy of the name is freed (never another
     * process's pointer, which means nothing here). */
    if (o->dl_owns_name == DL_NAME_COPY && name_here(o))
        free((void *)o->dl_name);
    o->dl_name = NULL;
    o->dl_origin = 0;
    o->dl_born = 0;
    o->dl_gen = 0;
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
    rc = rc ? rc : dl_lock_getfence(l, fence);
#ifdef DISTLOCK_MUTANT_FENCE
    /* mutant (tools/mutants.sh): a thread that takes a lock again is given
     * the fence of its first hold of it, not the new (raised) one */
    static __thread const dl_lock_t *first_l;
    static __thread uint64_t first_f;
    if (!rc && first_l == l)
        *fence = first_f;
    else if (!rc) {
        first_l = l;
        first_f = *fence;
    }
#endif
    return rc;
}

int dl_obj_getlease(struct dist_lockobj *o, unsigned magic, unsigned long *ms_left)
{
    dl_proc_t *p = NULL;
    dl_lock_t *l = NULL;
    if (!ms_left)
        return dl_fail(EINVAL, "ms_left is NULL");
    int rc = dl_obj_resolve(o, magic, &p, &l);
    return rc ? rc : dl_lock_getlease(l, ms_left);
}

int dl_obj_hold_lost(struct dist_lockobj *o, unsigned magic)
{
    dl_proc_t *p = NULL;
    dl_lock_t *l = NULL;
    if (dl_obj_resolve(o, magic, &p, &l))
        return -1;
    return dl_lock_hold_lost(l);
}
