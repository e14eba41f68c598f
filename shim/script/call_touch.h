/* SPDX-License-Identifier: BSD-3-Clause */
/* call_touch.h - lua/touch.lua: the renewal posted when a pushed grant is
 * claimed (core/take.c, take_extend; call_touch.c).  Only posted: no
 * reply is read but by the tests. */
#ifndef DL_CALL_TOUCH_H
#define DL_CALL_TOUCH_H

#include "caller.h"

typedef struct dl_touch_args {
    char mode;
    unsigned long lease_ms;       /* 0: a fixed lease, claimed, not extended */
    uint64_t fence;               /* with the caller's token, names the hold */
    uint64_t seq;                 /* numbered with the marks (mark.c): one that
                                     runs after a later mark changes nothing */
} dl_touch_args_t;

typedef struct dl_touch_reply {
    int renewed;                  /* 1 renewed, 0 that hold is not there */
} dl_touch_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_touch_args_t dl_call_args_touch;
typedef dl_touch_reply_t dl_call_reply_touch;

void dl_call_touch(dl_call_t *c, const dl_caller_t *who, const dl_touch_args_t *a);

#endif
