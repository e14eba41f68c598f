/* SPDX-License-Identifier: BSD-3-Clause */
/* call_break.h - lua/break.lua: delete a stuck lock's holds (the distlock
 * tool; call_break.c).  No arguments but the caller's. */
#ifndef DL_CALL_BREAK_H
#define DL_CALL_BREAK_H

#include "caller.h"

typedef struct dl_break_reply {
    long long removed;            /* holds removed; -1 unexpected */
} dl_break_reply_t;

/* dl_call_t's members for it (calls.h): no arguments; the reply is `brk`
 * (break is C's). */
#define DL_CALL_ARG_break
#define DL_CALL_REPLY_break dl_break_reply_t brk;

void dl_call_break(dl_call_t *c, const dl_caller_t *who);

#endif
