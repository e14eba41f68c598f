/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * call_status.h - lua/status.lua: a read-only view of a lock, for the
 * distlock tool's status, list, break and waiting line (call_status.c).
 * No ARGV.  The reply is decoded here into a dl_view_t: who holds the lock
 * and how, who waits, its last fence and whether the next holder gets
 * EOWNERDEAD.  On redlock:// every server is asked and their views merged
 * by the entry's quorum op: a hold counts when a majority shows it, and
 * the view keeps what each server showed.
 */
#ifndef DL_CALL_STATUS_H
#define DL_CALL_STATUS_H

#include <stddef.h>

#include "caller.h"
#include "view.h"

typedef struct dl_status_args {
    const char *name;         /* the lock's name, for the view (not sent) */
    size_t namelen;
} dl_status_args_t;

typedef struct dl_status_reply {
    dl_view_t *view;          /* NULL: a reply of another shape, or out of memory */
} dl_status_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_status_args_t dl_call_args_status;
typedef dl_status_reply_t dl_call_reply_status;

/* The call of status.lua on lock `name` (its keys are who's).  After the
 * run, DL_REPLY(c, status).view; free it with dl_call_free_reply, or take it
 * (set it NULL) and dl_view_clear + free it. */
void dl_call_status(dl_call_t *c, const dl_caller_t *who, const char *name, size_t namelen);

#endif
