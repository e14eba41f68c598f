/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_renew.h - lua/sem_renew.lua: extend a process's hold of leased
 * permits by a lease (call_sem_renew.c).  The hold core's renewal for a
 * semaphore (prim/sem.c, dl_sem_kind): it takes the arguments of a lock's
 * renewal (call_renew.h) and gives its reply, in the same members. */
#ifndef DL_CALL_SEM_RENEW_H
#define DL_CALL_SEM_RENEW_H

#include "call_renew.h"

/* Its types are the renewal's: DL_ARGS and DL_REPLY name them renew
 * (caller.h). */

void dl_call_sem_renew(dl_call_t *c, const dl_caller_t *who, const dl_renew_args_t *a);

#endif
