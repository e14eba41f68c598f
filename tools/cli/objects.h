/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * objects.h - the named objects `distlock top` and `distlock metrics` show,
 * whatever their kind (shim/base/keys.h: a lock, a semaphore, a
 * condition), each read by its kind's decoder into one shape: who holds
 * it, who waits and for how long.
 *
 * A kind is shown once it has a decoder in objects.c's table: the scan
 * (objscan.c) finds the objects of every kind under the prefix by their
 * keys (dl_key_parse), and objfetch.c reads those of the kinds that have
 * one, each through its status script.  A new kind is one decoder (see
 * objlock.c) and one line in that table; top and metrics need no
 * change.
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
    /* A semaphore's (objsem.c; 0 for the other kinds). */
    char semkind;             /* 'c' counting, 'l' leased, 0 gone */
    long long value;          /* counting: its value; leased: its permits */
    long long held;           /* leased: the permits its live holders have */
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
    const char *noun;         /* in messages: "lock", "semaphore" */
    /* The keys (bit k: the kind's key k, keys.h) whose existence says the
     * object may be in use.  The others alone (a lock's meta hash, which
     * outlives the holds by 7 days) do not make the scan read it. */
    unsigned live_keys;
    /* The call of the kind's status script on object `name` (len bytes),
     * its keys who's. */
    void (*call)(dl_call_t *c, const dl_caller_t *who, const char *name, size_t len);
    /* Takes the call's reply into o (kind, st and state; cli_obj_finish
     * does the rest), leaving c nothing to free.  0, or -1: the reply had
     * no view (another shape, or out of memory). */
    int (*take)(dl_call_t *c, cli_obj_t *o);
    /* Why the objects of this kind cannot be read over r's connection
     * (they are then named, not read), or NULL; NULL: always read. */
    const char *(*unread)(const cli_redis_t *r);
} cli_kind_view_t;

/* The decoder of kind (DL_KIND_*), or NULL when that kind is not shown
 * (yet). */
const cli_kind_view_t *cli_kind_view(int kind);

/* Reads the objects names[0..n) of kind (DL_KIND_*, one with a decoder)
 * into out[0..n) (kind, st and state; cli_obj_finish does the rest).  0,
 * or -1 with r->err (Redis unreachable; redlock: no majority answered)
 * and out[] empty. */
int cli_objs_fetch(cli_redis_t *r, int kind, char **names, const size_t *lens, size_t n,
                   cli_obj_t *out);

/* Reads the object `name` as each kind of `kinds` (bit k: DL_KIND k),
 * pipelined, into out[k] (out has DL_KINDS entries; the others zeroed).
 * 0, or -1 with r->err (out empty). */
int cli_obj_fetch_kinds(cli_redis_t *r, unsigned kinds, const char *name, size_t len,
                        cli_obj_t *out);

/* Sets o's hold age, longest wait and busy from o->st. */
void cli_obj_finish(cli_obj_t *o);
void cli_obj_free(cli_obj_t *o);

/* The decoders (objlock.c, objsem.c, objcond.c). */
extern const cli_kind_view_t cli_lock_view;
extern const cli_kind_view_t cli_sem_view;
extern const cli_kind_view_t cli_cond_view;

#endif
