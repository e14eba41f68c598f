/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_renew.h - lua/sem_renew.lua: extend a process's hold of leased
 * permits by a lease (call_sem_renew.c).  The hold core's renewal for a
 * semaphore (prim/sem.c, dl_sem_kind): it takes the arguments of a lock's
 * renewal (call_renew.h) and gives its reply, in the same members. */
#ifndef DL_CALL_SEM_RENEW_H
#define DL_CALL_SEM_RENEW_H

#include "call_renew.h"

/* dl_call_t's members for it (calls.h): the renewal's, arg.renew and
 * reply.renew. */
#define DL_CALL_ARG_sem_renew
#define DL_CALL_REPLY_sem_renew

void dl_call_sem_renew(dl_call_t *c, const dl_caller_t *who, const dl_renew_args_t *a);

#endif
