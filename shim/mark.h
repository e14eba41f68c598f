/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mark.h - what Redis must know of a lingering hold (mark.c).  Writes no
 * lock state: it only posts.
 */
#ifndef DL_MARK_H
#define DL_MARK_H

#include "process.h"

/* Posts the mark that l's Redis hold now lingers (lingering; with ms, its
 * time in Redis is also cut to that) or is held again (with ms, its TTL is
 * restored to that lease), so that its lapse means EOWNERDEAD only when
 * held.  0 when written; else the caller must not linger, or relock without
 * Redis. */
int dl_mark(dl_proc_t *p, const dl_lock_t *l, int lingering, unsigned long ms);
/* The script of those marks (tests drive it directly). */
extern const char dl_mark_lua[];

#endif
