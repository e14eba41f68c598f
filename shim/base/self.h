/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * self.h - who this process is, for the lock objects (self.c): a random
 * tag unique to the process (a new one in every forked child and every
 * program), how many times it has forked, and the tags of the ancestors it
 * was forked from with their fork counts at the time.
 *
 * A lock object can live in memory that several processes share
 * (MAP_SHARED, used across fork), so whatever an object says about the
 * process that initialized it must be checked against something no other
 * process has: the tag.  A counter that siblings share (a fork
 * generation) cannot tell two first-generation children apart.
 *
 * self.c writes these in the fork handlers only (process.c registers
 * them); the tag is drawn on first use.
 */
#ifndef DL_SELF_H
#define DL_SELF_H

#include <stdint.h>

/* This process's tag: 64 random bits, never 0. */
uint64_t dl_self_tag(void);
/* Times this process has forked so far (counted before each fork). */
uint64_t dl_self_forks(void);
/* Is memory that process `tag` wrote when it had forked `forks` times also
 * this process's memory?  Yes for this process, and for an ancestor that
 * wrote it before forking the line that leads here (the child got a copy of
 * it); no for anything a sibling, a child or an unrelated program wrote. */
int dl_self_inherited(uint64_t tag, uint64_t forks);

/* The fork handlers (process.c): in the parent before fork, and in the
 * child after it (a new tag; the parent joins the ancestors). */
void dl_self_before_fork(void);
void dl_self_after_fork(void);

#endif
