/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * break.h - the commands that change a lock or a semaphore other than
 * through the library's calls: `distlock break`, and taking a waiter that
 * gives up out of a queue.  They run the library's own scripts
 * (lua/break.lua, sem_break.lua, cancel.lua, release.lua) on every target
 * of the object.
 */
#ifndef CLI_BREAK_H
#define CLI_BREAK_H

#include <stddef.h>

#include "call_sem_break.h"
#include "redis.h"

/* Runs the break script (with redlock on every server): deletes the holds,
 * hands the lock to its waiters, leaves the trace that gives the next
 * holder EOWNERDEAD.  *removed = holds deleted (redlock: the most any
 * server deleted).  0 or -1. */
int cli_break_lock(cli_redis_t *r, const char *name, size_t len, long long *removed);

/* Runs lua/sem_break.lua on semaphore NAME: a leased one's holds removed
 * (every one, or the one of the process whose token is `token`: "" every
 * one), a counting one's value set back to the one it was created with;
 * *b says what it did.  0 or -1 (r->err). */
int cli_break_sem(cli_redis_t *r, const char *name, size_t len, const char *token,
                  dl_sem_break_reply_t *b);

/* For a waiter that gives up (a signal while it waits): takes process
 * `token` out of NAME's queue, and if the lock was granted to it meanwhile,
 * releases that hold so that it passes on at once.  0 or -1. */
int cli_withdraw(cli_redis_t *r, const char *name, size_t len, const char *token, char mode);

#endif
