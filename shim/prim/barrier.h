/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * barrier.h - the barrier primitive (barrier.c): arrivals counted in
 * Redis (lua/barrier_*.lua), waiters woken by one push per process when
 * their generation trips.
 *
 * A barrier of the process is a dl_barrier_t: the registry's entry (its
 * dl_core_t: kind, name, keys, mu, cv; it never holds anything in Redis,
 * so the core's hold, tenure and waiter stay empty) and the process's
 * threads that wait on it, each a dl_bwait_t on its own stack.
 *   - Each thread's wait is one arrival in Redis (barrier_wait.lua), so the
 *     count is exact across threads and processes, and an arrival counts
 *     once made, also if its process dies afterwards.  The process sends
 *     its operations on a barrier one at a time (talking), with ids that
 *     grow, so Redis tells a resent copy from a new arrival.
 *   - Waiting costs the process one push per generation, however many of
 *     its threads wait in it: the arrival that trips a generation pushes
 *     "k GEN KEY" once to every other process with an arrival in it, and
 *     the subscriber tells the kind (woken).  A lost push is found by one
 *     check per process (barrier_check.lua) every third of a claim window
 *     while threads wait, at once after the subscriber reconnects
 *     (recheck): a generation below the barrier's current one, of the
 *     same incarnation, was released.
 *   - Generations are numbered from the barrier's incarnation (Redis time
 *     in us when it was made), so a barrier that Redis lost and made again
 *     numbers them apart, and a waiter of the lost one is told (ENOLCK)
 *     rather than released: by any answer made after its arrival that
 *     names another incarnation, also an older-looking one (Redis's clock
 *     set back before the barrier was made again).
 *
 * barrier.c writes every field below the core, under core.mu; the
 * subscriber changes a waiter's state only through the kind's woken and
 * recheck (notify.c).
 */
#ifndef DL_BARRIER_H
#define DL_BARRIER_H

#include <stddef.h>
#include <time.h>

#include "process.h"

/* What became of a waiter. */
enum {
    DL_BW_WAITING,            /* its arrival waits in its generation */
    DL_BW_TRIPPED,            /* its generation tripped: released */
    DL_BW_LOST                /* Redis lost the barrier (another incarnation, or
                                 none): its arrival counts no more */
};

/* One thread waiting on a barrier (on its own stack). */
typedef struct dl_bwait {
    uint64_t id;              /* its arrival's operation id */
    uint64_t gen;             /* the generation it waits in */
    uint64_t inc;             /* ... of this incarnation */
    int state;                /* DL_BW_* */
    unsigned long seq;        /* its place among the process's waiters */
    struct dl_bwait *next;
} dl_bwait_t;

/* A request on a barrier that got no reply (an arrival, or a timed wait's
 * leave): it may have run, or may still (a stalled server).  Kept, and
 * settled before the process's next operation on the barrier. */
#define DL_BARRIER_KEPT 8
typedef struct dl_bkept {
    uint64_t op;              /* the request's own id */
    uint64_t arrival;         /* the arrival it made or withdrew */
    uint64_t gen, inc;        /* where that arrival waited (0: unknown) */
    pid_t tid;                /* the thread whose call it was */
} dl_bkept_t;

typedef struct dl_barrier {
    dl_core_t core;           /* first: the registry's entry is the barrier */

    /* barrier.c */
    int talking;              /* a thread sends an operation on it now */
    int inside;               /* threads in a call on it */
    dl_bwait_t *head;         /* the waiters of the process */
    int nwait;
    unsigned long seq;        /* waiters listed so far (dl_bwait_t.seq) */
    dl_bkept_t kept[DL_BARRIER_KEPT];  /* requests that got no reply, */
    int nkept;                /* settled (barrier_leave.lua) before the next */
    uint64_t pushed;          /* the greatest generation pushed as tripped */
    int checking;             /* a thread asks Redis where the barrier is */
    int recheck;              /* pushes may have been lost: ask now */
    uint64_t checked_at;      /* when the last answer's call was sent (ms) */
} dl_barrier_t;

/* What a wait asks (dist_barrier_wait, timedwait). */
typedef struct dl_barrier_req {
    unsigned count;           /* the object's */
    const struct timespec *abstime;   /* NULL, or CLOCK_REALTIME: ETIMEDOUT */
    const int *stop;          /* NULL, or set (atomic) by another thread, which
                                 then calls dl_barrier_wake: EINTR */
    uint64_t *gen;            /* NULL, or where a release says the generation
                                 (Redis's number; 0 unknown): the tests' */
} dl_barrier_req_t;

/* The barrier's kind: its keys (keys.h) and what the registry and the
 * subscriber ask of it. */
extern const dl_kind_t dl_barrier_kind;

static inline dl_barrier_t *dl_barrier_of(dl_core_t *o)
{
    return (dl_barrier_t *)((char *)o - offsetof(dl_barrier_t, core));
}

/* The barrier in Redis, made with count if it has none, else checked
 * against it.  One round trip.  0, EINVAL (another count, worded with
 * both), EIO. */
int dl_barrier_open(dl_proc_t *p, dl_barrier_t *b, unsigned count);
/* An arrival, and the wait until its generation trips.  0,
 * DIST_BARRIER_SERIAL_THREAD (this arrival tripped it), ETIMEDOUT
 * (abstime passed: the arrival withdrawn; never sooner), EINTR (rq->stop:
 * withdrawn), EINVAL (another count), ENOLCK (Redis lost the barrier while
 * the thread waited: its arrival counts no more), EIO. */
int dl_barrier_wait(dl_proc_t *p, dl_barrier_t *b, const dl_barrier_req_t *rq);
/* A request's stop flag was just set: wakes the threads waiting on b, so
 * that the one it stops leaves.  Never blocks on the network. */
void dl_barrier_wake(dl_barrier_t *b);

#endif
