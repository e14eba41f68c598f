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

/* dl_call_t's members for it (calls.h): the withdrawal's, arg.withdraw
 * and reply.withdraw. */
#define DL_CALL_ARG_sem_withdraw
#define DL_CALL_REPLY_sem_withdraw

void dl_call_sem_withdraw(dl_call_t *c, const dl_caller_t *who, const dl_withdraw_args_t *a);

#endif
