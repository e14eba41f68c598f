/* SPDX-License-Identifier: BSD-3-Clause */
/* call_mark.h - lua/mark.lua: a lingering hold, or held again (core/mark.c;
 * call_mark.c).  Only posted: no reply is read but by the tests. */
#ifndef DL_CALL_MARK_H
#define DL_CALL_MARK_H

#include "caller.h"

typedef struct dl_mark_args {
    uint64_t fence;               /* with the caller's token, names the hold */
    int lingering;                /* 1 lingers, 0 held again */
    unsigned long ms;             /* lingering: TTL cut to it; held again: the
                                     lease restored; 0 none */
    uint64_t seq;                 /* the mark's number: a mark that runs after
                                     a later one of the hold changes nothing */
} dl_mark_args_t;

typedef struct dl_mark_reply {
    int marked;                   /* 1 marked, 0 that hold is not there */
} dl_mark_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_mark_args_t dl_call_args_mark;
typedef dl_mark_reply_t dl_call_reply_mark;

void dl_call_mark(dl_call_t *c, const dl_caller_t *who, const dl_mark_args_t *a);

#endif
