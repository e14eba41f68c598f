/* SPDX-License-Identifier: BSD-3-Clause */
/* call_break.h - lua/break.lua: delete a stuck lock's holds (the distlock
 * tool; call_break.c).  No arguments but the caller's. */
#ifndef DL_CALL_BREAK_H
#define DL_CALL_BREAK_H

#include "caller.h"

typedef struct dl_break_reply {
    long long removed;            /* holds removed; -1 unexpected */
} dl_break_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h): no arguments;
 * the reply is `brk` (break is C's). */
typedef dl_break_reply_t dl_call_reply_brk;

void dl_call_break(dl_call_t *c, const dl_caller_t *who);

#endif
