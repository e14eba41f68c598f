/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inspect.h - reading a lock's state straight from Redis (the keys of
 * docs/PROTOCOL.md), for `distlock status`, `list`, `break` and the
 * waiting line.  Commands go through the library's own command layer (a
 * dl_conn_t, configured like the library: DISTLOCK_URL, DISTLOCK_PREFIX,
 * ...), so every URL scheme works: a cluster's commands are routed by the
 * lock's hash slot and follow its redirections, a sentinel-watched master
 * is found (again, after a failover) through the sentinels, and a redlock://
 * lock is read from each server and decided by a majority.  Nothing here
 * holds a lock.
 */
#ifndef CLI_INSPECT_H
#define CLI_INSPECT_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "config.h"
#include "conn.h"

typedef struct cli_redis {
    dl_config_t cfg;          /* the conn points here: do not move a cli_redis_t */
    dl_conn_t *conn;
    int nodes;                /* redlock://: the servers; else 1 */
    char sha[41];             /* the status script, once loaded */
    char err[512];            /* the last failure: "redis HOST:PORT: reason" */
} cli_redis_t;

/* A holder or a waiter, from the "host\tpid\ttid" info the library stores. */
typedef struct cli_who {
    char host[128];
    long pid, tid;            /* 0 when the info could not be parsed */
    char mode;                /* 'w' or 'r' */
    char token[64];           /* its process's owner token in Redis */
} cli_who_t;

typedef struct cli_holder {
    cli_who_t who;
    long long held_ms;        /* Redis clock: now - since */
    long long lease_left_ms;  /* PTTL of the hold, or the reader's deadline - now */
    long long lease_ms;       /* the hold's lease; -1 unknown (readers) */
    unsigned long long fence;
    int after_lapse;          /* it was acquired with EOWNERDEAD */
} cli_holder_t;

/* redlock://: what one server shows of a lock. */
typedef struct cli_server {
    char name[280];           /* host:port */
    int answered;
    char err[200];            /* not answered: why */
    char mode;                /* 0 free, 'w', 'r' */
    cli_who_t *holders;
    size_t nholders;
    int agrees;               /* it shows exactly the holders the majority shows */
} cli_server_t;

typedef struct cli_lockstat {
    char *name;
    size_t namelen;
    char mode;                /* 0 free, 'w' exclusive, 'r' shared */
    cli_holder_t *holders;
    size_t nholders;
    cli_who_t *waiters;       /* live registrations, in queue order */
    size_t nwaiters;
    unsigned long long last_fence;   /* 0: none recorded (or expired) */
    int next_ownerdead;       /* free, and the last hold lapsed: the next holder gets EOWNERDEAD */
    int broken;               /* ... because of `distlock break` */
    cli_who_t lapsed;         /* ... else whose hold lapsed (pid 0 if unknown) */
    int known;                /* Redis has any key of this lock */

    /* redlock:// only (else NULL, 0): each server's view.  A hold counts
     * (is in holders above) when `need` servers, a majority, show it; its
     * held_ms and lease_left_ms are then the majority's (the need-th
     * longest), its fence the highest. */
    cli_server_t *servers;
    size_t nservers;
    size_t need;              /* the majority */
    size_t agree;             /* servers that show exactly the holders above */
    int disputed;             /* some server shows a holder or waiter the result lacks */
} cli_lockstat_t;

/* Loads the configuration from the environment and sets up the command
 * layer (it connects on first use).  timeout_ms: how long Redis may stay
 * unreachable before a call fails (0: DISTLOCK_IO_TIMEOUT_MS).  0, or
 * CLI_EX_CONFIG / CLI_EX_OSERR with the reason in r->err. */
int cli_redis_open(cli_redis_t *r, unsigned long timeout_ms);
void cli_redis_close(cli_redis_t *r);

/* The state of one lock.  0, or -1 with r->err (Redis unreachable or
 * failing; redlock: no majority of the servers answered). */
int cli_lockstat_fetch(cli_redis_t *r, const char *name, size_t len, cli_lockstat_t *st);
/* The same for names[0..n), pipelined.  0 or -1. */
int cli_lockstat_fetch_many(cli_redis_t *r, char **names, const size_t *lens, size_t n,
                            cli_lockstat_t *st);
void cli_lockstat_free(cli_lockstat_t *st);

/* Names of the locks that have keys under the prefix (SCAN, never KEYS; in
 * a cluster on every master, with redlock on every server that answers, a
 * majority at least), matching the glob pattern (NULL: all), sorted and
 * unique; with_free: also locks only their meta key remembers.  0 or -1.
 * Free with cli_names_free. */
int cli_scan_names(cli_redis_t *r, const char *pattern, int with_free,
                   char ***names, size_t **lens, size_t *n);
void cli_names_free(char **names, size_t *lens, size_t n);

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
