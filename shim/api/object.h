/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * object.h - what dist_mutex_t and dist_rwlock_t share (object.c): the
 * magic numbers, the name, lazy resolution of an object to the
 * process-wide lock state (prim/lock.h), destruction, the fence of the
 * calling thread's hold, and whether that hold was lost.
 *
 * The object (struct dist_lockobj of distlock.h, in the user's memory,
 * which forked processes may share): object.c writes its magic, its name
 * and who initialized it when (dl_origin: that process's tag, dl_born:
 * its fork count; self.h), which tells whether the name pointer means
 * anything in the calling process, and which of that process's
 * initializations it is (dl_gen), so that memory initialized again is
 * another object to every process that shares it; mutex.c and rwlock.c set its
 * attributes (type, fairness, lease) at init.  What an object resolves to
 * in a process is kept in that process (objtab.h), never in the object.
 * A lock's reference for its objects is the registry's
 * (dl_registry_add_obj, dl_registry_drop_obj).
 */
#ifndef DL_OBJECT_H
#define DL_OBJECT_H

#include <stdint.h>

#include "distlock.h"

struct dl_proc;               /* dl_proc_t, process.h */
struct dl_lock;               /* dl_lock_t, lock.h */
struct dl_core;               /* dl_core_t, core.h */
struct dl_kind;               /* dl_kind_t, core.h */

#define DL_MAGIC_MUTEX  0x44534d58u   /* "DSMX" */
#define DL_MAGIC_RWLOCK 0x4453524cu   /* "DSRL" */
#define DL_MAGIC_DEAD   0x44534445u   /* "DSDE" */
#define DL_MAGIC_COND   0x4453434eu   /* "DSCN": dist_cond_t (api/cond.c) */
#define DL_MAGIC_SEM    0x4453534du   /* "DSSM": dist_sem_t (api/sem_api.c) */
#define DL_MAGIC_BARRIER 0x44534252u  /* "DSBR": dist_barrier_t (api/barrier.c) */
#define DL_MAGIC_ONCE   0x44534f4eu   /* "DSON": dist_once_t (api/once.c) */

/* A fixed lease (setlease) between these, in ms.  The shortest must still
 * leave a validity (the lease less the clock-drift allowance: tenure.c)
 * that a reply from Redis can arrive within: a call returns a hold only
 * within its validity, so a shorter lease could never be returned. */
#define DL_LEASE_MIN 10UL
#define DL_LEASE_MAX (30UL * 86400000UL)
int dl_obj_init(struct dist_lockobj *o, unsigned magic, const char *name);
/* The lock state of an initialized object in this process (resolving it
 * on first use here); EINVAL for bad objects and configuration, and for an
 * object a sibling or child initialized in shared memory. */
int dl_obj_resolve(struct dist_lockobj *o, unsigned magic, struct dl_proc **pp,
                   struct dl_lock **lp);
/* The same for an object of any kind (a semaphore's: api/sem_api.c; a
 * condition's: dl_cond_kind): its state in this process, the entry's core
 * in *cp. */
int dl_obj_resolve_kind(struct dist_lockobj *o, unsigned magic, const struct dl_kind *kind,
                        struct dl_proc **pp, struct dl_core **cp);
int dl_obj_destroy(struct dist_lockobj *o, unsigned magic);
/* An initialized object's name as this process reads it (NULL for a
 * static object's of no name). */
const char *dl_obj_name(const struct dist_lockobj *o);
/* dist_*_getfence: the calling thread's fence of its hold on o. */
int dl_obj_getfence(struct dist_lockobj *o, unsigned magic, uint64_t *fence);
/* dist_*_getlease: the time left of the calling thread's hold on o. */
int dl_obj_getlease(struct dist_lockobj *o, unsigned magic, unsigned long *ms_left);

/* 1 when the calling thread holds o but Redis no longer has the hold
 * (the watchdog found it gone); 0 while it is fine; -1 when the thread
 * holds nothing or the object is bad.  Never blocks.  (mutex.h, rwlock.h) */
int dl_obj_hold_lost(struct dist_lockobj *o, unsigned magic);

#endif
