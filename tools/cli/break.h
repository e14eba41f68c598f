/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * break.h - the two commands that change a lock other than through the
 * library's lock calls: `distlock break`, and taking a waiter that gives up
 * out of a queue.  Both run the library's own scripts (lua/break.lua,
 * cancel.lua, release.lua) on every target of the lock.
 */
#ifndef CLI_BREAK_H
#define CLI_BREAK_H

#include <stddef.h>

#include "redis.h"

/* Runs the break script (with redlock on every server): deletes the holds,
 * hands the lock to its waiters, leaves the trace that gives the next
 * holder EOWNERDEAD.  *removed = holds deleted (redlock: the most any
 * server deleted).  0 or -1. */
int cli_break_lock(cli_redis_t *r, const char *name, size_t len, long long *removed);

/* For a waiter that gives up (a signal while it waits): takes process
 * `token` out of NAME's queue, and if the lock was granted to it meanwhile,
 * releases that hold so that it passes on at once.  0 or -1. */
int cli_withdraw(cli_redis_t *r, const char *name, size_t len, const char *token, char mode);

#endif
