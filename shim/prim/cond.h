/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cond.h - the condition primitive (cond.c): waiters registered in Redis
 * (lua/cond_*.lua), woken by a push from a signal of any process, or by a
 * signal of their own process without a round trip.
 *
 * A condition of the process is a dl_cond_t: the registry's entry (its
 * dl_core_t: kind, name, keys, mu; it never holds anything in Redis, so
 * the core's hold, tenure and waiter stay empty) and the threads of the
 * process that wait on it, each a dl_cwait_t on its own stack, listed in
 * arrival order.  cond.c writes every field below, under core.mu; the
 * subscriber changes a waiter's state only through the kind's woken and
 * recheck (notify.c).
 *
 * A wait is dl_cond_enter (registered in Redis before the caller's mutex
 * is released), then dl_cond_block (after the release; the mutex is
 * retaken after it returns): api/cond.c releases and retakes the mutex in
 * between (prim/lock.c: dl_lock_release_all, dl_lock_restore).
 */
#ifndef DL_COND_H
#define DL_COND_H

#include <stddef.h>
#include <time.h>

#include "process.h"

/* What became of a waiter. */
enum {
    DL_CW_ENTERING,           /* registering in Redis: not yet to be woken */
    DL_CW_WAITING,            /* registered; its mutex released or about to be */
    DL_CW_TAKEN,              /* Redis took its registration (a push, a check,
                                 a broadcast of this process): woken */
    DL_CW_LOCAL,              /* woken by a signal of this process: its
                                 registration is still in Redis, to be removed
                                 (and a signal it took meanwhile passed on) */
    DL_CW_TIMEDOUT            /* its timed wait ran out: it leaves */
};

/* One thread waiting on a condition (on its own stack). */
typedef struct dl_cwait {
    uint64_t regid;           /* its registration ("token:regid" in Redis) */
    unsigned servers;         /* redlock: the servers it is registered on */
    int state;                /* DL_CW_* */
    int recheck;              /* pushes may have been lost: ask Redis now */
    unsigned long seq;        /* its place among the process's registrations */
    uint64_t checked_at;      /* when Redis last confirmed it (ms) */
    pthread_cond_t cv;        /* CLOCK_MONOTONIC; woken by a signal, a push */
    struct dl_cwait *next;
} dl_cwait_t;

typedef struct dl_cond {
    dl_core_t core;           /* first: the registry's entry is the condition */
    dl_cwait_t *head;         /* the waiters of the process, oldest first */
    int nwait;
    unsigned long seq;        /* registrations made (dl_cwait_t.seq) */
} dl_cond_t;

/* The condition's kind: its keys (keys.h) and what the registry and the
 * subscriber ask of it. */
extern const dl_kind_t dl_cond_kind;

static inline dl_cond_t *dl_cond_of(dl_core_t *o)
{
    return (dl_cond_t *)((char *)o - offsetof(dl_cond_t, core));
}

/* Registers w, a wait of the calling thread, in Redis (listening for
 * pushes first), waiting at most until deadline (monotonic ms) for the
 * subscriber.  0: registered, w listed; EIO: not (w is not listed). */
int dl_cond_enter(dl_proc_t *p, dl_cond_t *c, dl_cwait_t *w, uint64_t deadline);
/* Waits until w is woken (0: a signal, a broadcast, or spuriously: its
 * registration lapsed, Redis lost it) or abstime passes on clock
 * (CLOCK_REALTIME or CLOCK_MONOTONIC; ETIMEDOUT; never sooner; NULL: no
 * time limit).  w is no longer listed
 * nor registered when it returns (but a registration whose removal failed,
 * which lapses within the claim window). */
int dl_cond_block(dl_proc_t *p, dl_cond_t *c, dl_cwait_t *w, clockid_t clock,
                  const struct timespec *abstime);
/* Wakes one waiter (all: every waiter).  A waiter of this process, if one
 * waits, is woken without a round trip; else the signal goes through
 * Redis.  0, EIO. */
int dl_cond_signal(dl_proc_t *p, dl_cond_t *c, int all);

#endif
