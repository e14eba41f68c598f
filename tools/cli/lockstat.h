/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstat.h - a lock's state, read straight from its Redis keys
 * (docs/PROTOCOL.md) by the read-only script lua/status.lua, for
 * `distlock status`, `list`, `break` and the waiting line.  Nothing here
 * holds a lock.  A cli_lockstat_t owns what it points to (free it with
 * cli_lockstat_free); redlock.c fills the redlock:// fields.
 */
#ifndef CLI_LOCKSTAT_H
#define CLI_LOCKSTAT_H

#include <stddef.h>

#include "redis.h"

/* A holder or a waiter, from the "host\tpid\ttid" info the library stores. */
typedef struct cli_who {
    char host[128];
    long pid, tid;            /* 0 when the info could not be parsed */
    char mode;                /* 'w' or 'r' */
    char token[64];           /* its process's owner token in Redis */
    long long waited_ms;      /* a waiter: how long it has been queued (Redis
                                 clock); -1 unknown (an older library) */
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

/* The state of one lock.  0, or -1 with r->err (Redis unreachable or
 * failing; redlock: no majority of the servers answered). */
int cli_lockstat_fetch(cli_redis_t *r, const char *name, size_t len, cli_lockstat_t *st);
/* The same for names[0..n), pipelined.  0 or -1. */
int cli_lockstat_fetch_many(cli_redis_t *r, char **names, const size_t *lens, size_t n,
                            cli_lockstat_t *st);
void cli_lockstat_free(cli_lockstat_t *st);

/* The state of names[0..n) (their keys lk[0..n)) as one target sees it:
 * node -1 the conn (each lock routed to its server), or redlock server
 * `node`.  0, or -1 with r->err and st[] empty. */
int cli_lockstat_fetch_on(cli_redis_t *r, int node, const cli_keys_t *lk, char **names,
                          const size_t *lens, size_t n, cli_lockstat_t *st);

#endif
