/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstat.h - a lock's state, read straight from its Redis keys
 * (docs/PROTOCOL.md) by the read-only script lua/status.lua, for
 * the waiting line (and, as every kind's state, objfetch.c, for status,
 * list and break).  Nothing here
 * holds a lock.  The state is the library's view of the lock (the status
 * script's entry decodes it, and on redlock:// merges the servers' views
 * by a majority: shim/script/call_status.h, view.h), read as every kind's
 * is (objfetch.c); a cli_lockstat_t owns what it points to (free it with
 * cli_lockstat_free).
 */
#ifndef CLI_LOCKSTAT_H
#define CLI_LOCKSTAT_H

#include <stddef.h>

#include "redis.h"
#include "view.h"

/* The library's view (view.h) under the names the tool prints. */
typedef dl_view_who_t cli_who_t;
typedef dl_view_holder_t cli_holder_t;
typedef dl_view_server_t cli_server_t;
typedef dl_view_t cli_lockstat_t;

/* The state of one lock.  0, or -1 with r->err (Redis unreachable or
 * failing; redlock: no majority of the servers answered). */
int cli_lockstat_fetch(cli_redis_t *r, const char *name, size_t len, cli_lockstat_t *st);
void cli_lockstat_free(cli_lockstat_t *st);

#endif
