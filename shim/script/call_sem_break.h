/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_break.h - lua/sem_break.lua: `distlock break` on a semaphore
 * (call_sem_break.c): a leased one's holds removed (all, or the one of the
 * process whose token the caller gives as its own), a counting one's value
 * set back to the one it was created with, as a new incarnation.  Never
 * run on several servers as one call: semaphores refuse redlock://. */
#ifndef DL_CALL_SEM_BREAK_H
#define DL_CALL_SEM_BREAK_H

#include "sem_calls.h"

typedef struct dl_sem_break_reply {
    char kind;                    /* 'l' leased, 'c' counting, 0 no such
                                     semaphore; -1 in result: unexpected */
    int result;                   /* 0 read, -1 a reply of another shape */
    long long removed, permits;   /* leased: holds removed, the permits they had */
    long long before, after;      /* counting: the value before and now;
                                     after -1: its initial value is unknown
                                     (nothing done) */
    unsigned long long inc;       /* its incarnation now (a reset's new
                                     one), 0 unknown */
} dl_sem_break_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h): no arguments
 * beyond the caller's (who->token: the holder to break, "" every one). */
typedef dl_sem_break_reply_t dl_call_reply_sem_break;

void dl_call_sem_break(dl_call_t *c, const dl_caller_t *who);

#endif
