/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_withdraw.h - lua/sem_withdraw.lua: settle one operation on a
 * semaphore whose reply was lost: withdraw a wait (mode 'w'), complete a
 * post (mode 'r') (call_sem_withdraw.c).  The hold core's withdrawal for a
 * semaphore (prim/sem.c, dl_sem_kind: the watchdog sends it for each of
 * the hold's two slots of failed requests, o->hold.undo): it takes the
 * arguments of a lock's withdrawal (call_withdraw.h; the registration id
 * is the operation's id) and gives its reply (result >= 1: done now), in
 * the same members. */
#ifndef DL_CALL_SEM_WITHDRAW_H
#define DL_CALL_SEM_WITHDRAW_H

#include "call_withdraw.h"

/* Its types are the withdrawal's: DL_ARGS and DL_REPLY name them
 * withdraw (caller.h). */

void dl_call_sem_withdraw(dl_call_t *c, const dl_caller_t *who, const dl_withdraw_args_t *a);

#endif
