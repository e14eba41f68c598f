/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redis.h - the distlock command's way to Redis: the library's own layers,
 * never copies of them.  The configuration is the library's (DISTLOCK_URL,
 * DISTLOCK_PREFIX, ...: shim/base/config.h), commands go through its
 * command layer (a dl_conn_t: a cluster's commands are routed by the
 * lock's hash slot and follow redirections, a sentinel-watched master is
 * found again after a failover), a lock's keys are shim/base/keys.h's and
 * its scripts run through shim/script/script.h (EVALSHA, the body on
 * NOSCRIPT).  On redlock:// a lock's status is read from every server
 * and merged by the status script's own quorum op (call_status.c); SCAN
 * and break ask each server in turn.
 *
 * A cli_redis_t owns its configuration and connection; the files that read
 * and change locks (lockstat.c, scan.c, break.c) only borrow them, and
 * leave the reason of a failure in r->err.
 */
#ifndef CLI_REDIS_H
#define CLI_REDIS_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "config.h"
#include "conn.h"
#include "keys.h"
#include "script.h"

typedef struct cli_redis {
    dl_config_t cfg;          /* the conn points here: do not move a cli_redis_t */
    dl_conn_t *conn;
    int nodes;                /* redlock://: the servers; else 1 */
    char err[512];            /* the last failure: "redis HOST:PORT: reason" */
} cli_redis_t;

/* Loads the configuration from the environment and sets up the command
 * layer (it connects on first use).  timeout_ms: how long Redis may stay
 * unreachable before a call fails (0: DISTLOCK_IO_TIMEOUT_MS).  0, or
 * CLI_EX_CONFIG / CLI_EX_OSERR with the reason in r->err. */
int cli_redis_open(cli_redis_t *r, unsigned long timeout_ms);
void cli_redis_close(cli_redis_t *r);

/* redlock:// with more than one server: each is asked on its own. */
int cli_redis_is_redlock(const cli_redis_t *r);
/* The servers that must answer (redlock: a majority; else 1). */
int cli_redis_need(const cli_redis_t *r);
/* The targets a lock's commands go to, first..last: -1 alone (the conn,
 * which routes each command by its key), or each redlock server. */
void cli_redis_targets(const cli_redis_t *r, int *first, int *last);
/* After asking every target: 0 if `got` of them answered and that is
 * enough, else -1 (redlock: r->err says how many answered, and `last`, the
 * last failure; else r->err is left as the failure set it). */
int cli_redis_tally(cli_redis_t *r, int got, const char *last);

/* r->err = "redis <target>: what" (target: redlock server `node`, or with
 * node -1 where the conn sends its commands).  Returns -1. */
int cli_redis_fail(cli_redis_t *r, int node, const char *what);
/* The exit code for a failure r->err says: CLI_EX_CONFIG when the server
 * refused the configuration (error.h dl_refused: no such database), else
 * CLI_EX_UNAVAILABLE (Redis unreachable or failing). */
int cli_redis_exit_code(const cli_redis_t *r);
/* r->err = "out of memory".  Returns -1. */
int cli_redis_oom(cli_redis_t *r);

/* One command on target `node` (routed by key); the reply (never an error
 * reply), or NULL with r->err. */
redisReply *cli_redis_command(cli_redis_t *r, int node, int argc, const char **argv,
                              const size_t *lens, const char *key, size_t keylen);

/* An object's keys (shim/base/keys.h), in one allocation. */
typedef struct cli_keys {
    char *buf;
    const char *k[DL_KEYS_MAX];
    size_t len[DL_KEYS_MAX];
} cli_keys_t;
/* The keys of the object of kind (DL_KIND_*) named name.  0, or -1
 * (r->err: out of memory). */
int cli_keys_make(cli_redis_t *r, int kind, cli_keys_t *lk, const char *name, size_t len);
void cli_keys_free(cli_keys_t *lk);

/* Who calls one of the library's scripts (lua/, shim/script/calls.h) over an
 * object's keys: the channel prefix chan and token may be NULL for the
 * scripts that take none (status).  They must outlive the call. */
dl_caller_t cli_caller(const cli_keys_t *lk, const char *chan, const char *token);
/* Runs calls[0..n) as one pipelined batch on target `node`: -1 the conn
 * as the library runs calls (each routed by its keys; on redlock://, on
 * every server, their replies merged by the script's own quorum op,
 * shim/script/quorum.h), else redlock server `node` alone.  Take each
 * reply with cli_call_reply. */
void cli_calls_run(cli_redis_t *r, int node, dl_call_t *calls, int n);
/* 0 when c has its typed reply (c->reply); -1 with r->err for an error
 * reply, an I/O error or no reply. */
int cli_call_reply(cli_redis_t *r, int node, dl_call_t *c);
/* One call on target `node`: cli_calls_run and cli_call_reply. */
int cli_call(cli_redis_t *r, int node, dl_call_t *c);

#endif
