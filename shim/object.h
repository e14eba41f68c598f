/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * object.h - what dist_mutex_t and dist_rwlock_t share (object.c):
 * validation, the name, and lazy resolution to the process-wide lock state
 * (registry.h).  object.c writes only the objects (struct dist_lockobj);
 * a lock's reference for its objects is the registry's
 * (dl_registry_add_obj, dl_registry_drop_obj).  It also answers
 * introspect.h's questions.
 */
#ifndef DL_OBJECT_H
#define DL_OBJECT_H

#include "process.h"

struct dist_lockobj;
#define DL_MAGIC_MUTEX  0x44534d58u   /* "DSMX" */
#define DL_MAGIC_RWLOCK 0x4453524cu   /* "DSRL" */
#define DL_MAGIC_DEAD   0x44534445u   /* "DSDE" */
int dl_obj_init(struct dist_lockobj *o, unsigned magic, const char *name);
/* The lock state of an initialized object (resolving it on first use, or
 * anew in a forked child); EINVAL for bad objects and configuration. */
int dl_obj_resolve(struct dist_lockobj *o, unsigned magic, dl_proc_t **pp, dl_lock_t **lp);
int dl_obj_destroy(struct dist_lockobj *o, unsigned magic);
/* dist_*_getfence: the calling thread's fence of its hold on o. */
int dl_obj_getfence(struct dist_lockobj *o, unsigned magic, uint64_t *fence);
/* In a forked child: resets object.c's own mutex. */
void dl_obj_after_fork(void);

#endif
