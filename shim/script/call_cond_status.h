/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * call_cond_status.h - lua/cond_status.lua: a read-only view of a
 * condition, for the distlock tool (call_cond_status.c).  No ARGV.  The
 * reply is decoded here into a dl_view_t (view.h) with waiters only: a
 * condition holds nothing.  A registration names its process by its token
 * alone (no host or pid: cond_enter.lua stores none), so each waiter's
 * who has its token and how long it has waited, host "" and pid 0.  On
 * redlock:// the server that shows the most waiters speaks for all (a
 * waiter registers on every server it can reach).
 */
#ifndef DL_CALL_COND_STATUS_H
#define DL_CALL_COND_STATUS_H

#include <stddef.h>

#include "caller.h"
#include "view.h"

typedef struct dl_cond_status_args {
    const char *name;         /* the condition's name, for the view (not sent) */
    size_t namelen;
} dl_cond_status_args_t;

typedef struct dl_cond_status_reply {
    dl_view_t *view;          /* NULL: a reply of another shape, or out of memory */
} dl_cond_status_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_cond_status_args_t dl_call_args_cond_status;
typedef dl_cond_status_reply_t dl_call_reply_cond_status;

/* The call of cond_status.lua on condition `name` (its keys are who's:
 * keys.h DL_KIND_COND).  After the run, DL_REPLY(c, cond_status).view; free it
 * with dl_call_free_reply, or take it (set it NULL) and dl_view_clear +
 * free it. */
void dl_call_cond_status(dl_call_t *c, const dl_caller_t *who, const char *name, size_t namelen);

#endif
