/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mark.h - the marks that tell Redis a hold lingers or is held again
 * (mark.c; the kind's mark script, lua/mark.lua for a lock).  mark.c owns
 * no state: each mark is one posted call, built from the hold's fence and
 * the process's token.
 */
#ifndef DL_MARK_H
#define DL_MARK_H

#include <stdint.h>

struct dl_proc;
struct dl_core;

/* Posts the mark that o's Redis hold now lingers (lingering; with ms, its
 * time in Redis is also cut to that) or is held again (with ms, its TTL is
 * restored to that lease), so that its lapse means EOWNERDEAD only when
 * held.  0 when written; else the caller must not linger, or relock
 * without Redis. */
int dl_mark(struct dl_proc *p, const struct dl_core *o, int lingering, unsigned long ms);
/* The next number of a posted mark or claim (touch.lua): they are ordered
 * by it in Redis, whatever connections they went on. */
uint64_t dl_mark_next(void);

#endif
