/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * objects.h - the named objects `distlock top` and `distlock metrics` show,
 * whatever their kind (shim/base/keys.h: a lock, a semaphore, a
 * condition), each read by its kind's decoder into one shape: who holds
 * it, who waits and for how long.
 *
 * A kind is shown once it has a decoder in objects.c's table: the scan
 * (objscan.c) finds the objects of every kind under the prefix by their
 * keys (dl_key_parse), and reads those of the kinds that have one.  A new
 * kind is one decoder (see objlock.c) and one line in that table; top and
 * metrics need no change.
 */
#ifndef CLI_OBJECTS_H
#define CLI_OBJECTS_H

#include <stddef.h>

#include "keys.h"
#include "lockstat.h"
#include "redis.h"

typedef struct cli_obj {
    int kind;                 /* DL_KIND_* */
    /* What the decoder read: the name, the holders (held_ms, lease left,
     * fence), the waiters (waited_ms), redlock's servers.  A kind with
     * other holds (a semaphore's permits) fills the same fields. */
    cli_lockstat_t st;
    char state[40];           /* the STATE column: "exclusive", "shared(3)",
                                 "2/5 permits", with " (2/3)" when redlock's
                                 servers disagree */
    /* A semaphore: its incarnation in Redis (lua/sem_common.lua; 0 none
     * known, and every other kind) and how long ago it was made (-1
     * unknown): a restart, a flush or eviction makes a new one. */
    unsigned long long incarn;
    long long incarn_age_ms;
    /* Filled by cli_obj_finish from st: */
    long long hold_age_ms;    /* the oldest hold's age; -1 without a hold */
    long long longest_wait_ms;/* the longest waiter's wait; -1 without a
                                 waiter, or when none says how long */
    int busy;                 /* held, waited on, or disputed */
} cli_obj_t;

typedef struct cli_kind_view {
    int kind;                 /* DL_KIND_* */
    const char *label;        /* the KIND column and the kind="" label */
    /* The keys (bit k: the kind's key k, keys.h) whose existence says the
     * object may be in use.  The others alone (a lock's meta hash, which
     * outlives the holds by 7 days) do not make the scan read it. */
    unsigned live_keys;
    /* Reads the objects names[0..n) into out[0..n) (kind, st and state;
     * cli_obj_finish does the rest).  0, or -1 with r->err (Redis
     * unreachable; redlock: no majority answered) and out[] empty. */
    int (*fetch)(cli_redis_t *r, char **names, const size_t *lens, size_t n, cli_obj_t *out);
} cli_kind_view_t;

/* The decoder of kind (DL_KIND_*), or NULL when that kind is not shown
 * (yet). */
const cli_kind_view_t *cli_kind_view(int kind);

/* Sets o's hold age, longest wait and busy from o->st. */
void cli_obj_finish(cli_obj_t *o);
void cli_obj_free(cli_obj_t *o);

/* The decoders (objlock.c, objsem.c). */
extern const cli_kind_view_t cli_lock_view;
extern const cli_kind_view_t cli_sem_view;

#endif
