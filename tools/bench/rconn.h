/* SPDX-License-Identifier: BSD-3-Clause */
/* rconn.h - the run's server and plain hiredis connections to it: its URL,
 * INFO fields, CLIENT LIST, the counter workloads' counter (rconn.c).  The
 * URL is read and the connections opened by the library's own code
 * (shim/base/config.h, shim/conn/connect.h). */
#ifndef BENCH_RCONN_H
#define BENCH_RCONN_H

#include <hiredis/hiredis.h>

#include "config.h"

/* The run's server (--url, or the one the bench started): one endpoint,
 * redis:// or unix://, its user, password (DISTLOCK_PASSWORD over the
 * URL's) and database. */
extern dl_config_t g_redis;
/* Reads url into g_redis: redis://[user[:password]@]host[:port][/db] or
 * unix:///path[?db=N] (as DISTLOCK_URL has them).  0, or -1 with a reason
 * in err. */
int rc_url(const char *url, char *err, size_t errlen);
/* g_redis is a unix socket (no TCP port). */
int rc_is_unix(void);
/* A plain connection to the run's server (AUTH/SELECT done), named with
 * CLIENT SETNAME when name != NULL.  NULL + message on stderr on failure. */
redisContext *rc_connect(const char *name);
/* The control connection of a counter workload, with the counter `ctr`
 * set to 0; NULL + message on stderr on failure. */
redisContext *rc_ctl_zeroed(const char *ctr);
/* Runs a command; returns the reply (caller frees) or NULL. */
redisReply *rc_cmd(redisContext *c, const char *fmt, ...);
/* The counter workloads' update (W2, its serial ceiling, W4b): GET ctr,
 * then SET ctr v+1, two round trips on c.  0, or 1 when Redis failed. */
int rc_ctr_incr(redisContext *c, const char *ctr);
/* The counter's value, or `none` when it cannot be read. */
long long rc_ctr_get(redisContext *c, const char *ctr, long long none);
/* Sum of `calls` over INFO commandstats, without INFO itself (the
 * measuring commands).  Redis counts the commands a script runs as well. */
long long rc_cmd_calls(redisContext *c);
/* calls and usec of one command of INFO commandstats (0 if absent). */
int rc_cmdstat(redisContext *c, const char *cmd, long long *calls, long long *usec);
/* used_cpu_sys + used_cpu_user of the server, in seconds. */
double rc_cpu_seconds(redisContext *c);
/* Waits until the sorted set `zkey` lists a member (a waiter queued or
 * registered: ZCARD > 0, asked every 20 us), then 300 us more so that its
 * thread sleeps on it.  0, or 1 when none was listed within 2 s (the round
 * goes on: the caller counts it). */
int rc_wait_listed(redisContext *c, const char *zkey);
/* A field of INFO (e.g. "connected_clients"); -1 if absent. */
long long rc_info_ll(redisContext *c, const char *section, const char *field);

#endif
