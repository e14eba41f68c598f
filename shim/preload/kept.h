/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kept.h - what a program started with file locks held across exec knows
 * of their keepers (kept.c).  The exec wrappers pass the list on in the
 * environment (DLP_KEPT_VAR: "PID:KEEPERPID:INDEX:DEV:INO,...", PID the
 * process that holds the locks, the same before and after exec), so a program
 * with the interposer accepts a mapped file locked by its own process
 * before exec when a keeper keeps its distributed hold, and tells that
 * keeper when the lock may end.  Included through preload.h.
 */
#ifndef DLP_KEPT_H
#define DLP_KEPT_H

#include <stddef.h>
#include <sys/types.h>

#pragma GCC visibility push(hidden)

#define DLP_KEPT_VAR "DISTLOCK_PRELOAD_KEPT"

/* Before main: reads the list this program was started with. */
void dlp_kept_load(void);
/* Is a keeper keeping the hold of this process's lock on (dev, ino)? */
int dlp_kept_has(dev_t dev, ino_t ino);
/* The program locks (dev, ino) itself: its keeper lets go of the hold at
 * once (the program's own acquisition follows, as flock converts a lock
 * by release and acquire), and the file is no longer kept. */
void dlp_kept_drop(dev_t dev, ino_t ino);
/* The program unlocked or closed (dev, ino): its keeper looks now whether
 * the lock is gone, rather than at its next look. */
void dlp_kept_poke(dev_t dev, ino_t ino);
/* Forgets (dev, ino) without a word to its keeper: this process hands
 * its hold again (an exec that failed handed it before). */
void dlp_kept_forget(dev_t dev, ino_t ino);
/* Adds a hold handed to keeper `pid` as its ticket `index`. */
void dlp_kept_add(pid_t pid, int index, dev_t dev, ino_t ino);
/* The list as DLP_KEPT_VAR's value ("" for none), for an exec; the bytes
 * it needs (it writes at most size, NUL included). */
size_t dlp_kept_format(char *buf, size_t size);
/* Any kept file at all? */
int dlp_kept_any(void);
/* In a forked child: the locks and their keepers are the parent's. */
void dlp_kept_after_fork(void);

#pragma GCC visibility pop

#endif
