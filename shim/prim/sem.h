/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sem.h - the semaphore primitive (sem.c): counting semaphores and leased
 * permits, on the hold core.
 *
 * A semaphore of the process is a dl_sem_t: the hold core (dl_core_t,
 * core.h) and the semaphore's own admission on top of it.  Its value lives
 * in Redis only (lua/sem_*.lua): every wait, try and post is one round
 * trip, and no permit is ever kept or passed between threads locally.
 *   - Waiting uses the core's registration (core.wait: take.c's
 *     dl_waiter_*): one thread of the process at a time is registered in
 *     Redis's queue and woken by a push (notify.c, "g REGID ..."); the
 *     process's other waiting threads wait for their turn here.
 *   - A leased permit is a hold of the core (core.hold: hold.c, tenure.c):
 *     the process's permits of one semaphore are one hold in Redis (its
 *     token's count, under one lease), recorded when the first is taken,
 *     renewed by the watchdog with the kind's renewal (sem_renew.lua),
 *     found lost like a lock's (a renewal that finds it gone, a sign of
 *     lost state), and ended when its last permit is posted back.
 *   - The process sends its operations on a semaphore one at a time, with
 *     ids that grow (talking), so Redis tells a resent copy from a new
 *     operation (lua/sem_common.lua, sess_*); one that failed with no
 *     reply is settled (a wait withdrawn, a post completed) before the
 *     next, and by the watchdog meanwhile (the core's undo slots,
 *     core.hold.undo: 'w' a wait, 'r' a post).
 *   - The process keeps the incarnation of the semaphore it uses (drawn in
 *     Redis when the semaphore was created: lua/sem_common.lua) and sends
 *     it with every operation.  A semaphore Redis lost (a restart without
 *     persistence, a flush, eviction) is gone for good to the process:
 *     the scripts answer that it is not the one the process used, with
 *     nothing done or created, the process tells dist_onlost's function
 *     (its leased permits lapse, told as a lock's hold is) and says ENOLCK
 *     to every call until an init (dl_sem_open) adopts the semaphore
 *     Redis has now.
 *
 * sem.c writes the fields below the core, under core.mu.
 */
#ifndef DL_SEM_H
#define DL_SEM_H

#include <stddef.h>

#include "process.h"
#include "take.h"

typedef struct dl_sem {
    dl_core_t core;           /* first: the registry's entry is the semaphore */

    /* sem.c */
    int talking;              /* a thread sends an operation on it now */
    int waiter;               /* a thread waits in Redis's queue (core.wait) */
    int inside;               /* threads in a call on it */
    unsigned permits;         /* leased: the process's permits (its hold, core.hold) */
    unsigned lapsed;          /* leased: permits of a hold that lapsed in Redis,
                                 not posted yet (each post of one: EPERM) */
    char pend;                /* an operation that failed with no reply, settled
                                 before the next: 0, 'w' a wait or try to
                                 withdraw, 'r' a post to complete */
    uint64_t pend_id;
    uint64_t pend_inc;        /* the incarnation it was sent to */
    uint64_t inc;             /* the incarnation of the semaphore in Redis the
                                 process uses (0: none known yet); written by
                                 its talker (and by an init, adopting one) */
    int gone;                 /* Redis lost that incarnation: every call says
                                 ENOLCK until an init adopts another */
    int lapse_told;           /* leased: the lapse of the process's hold was told
                                 (dist_onlost) since it last took a permit */
} dl_sem_t;

/* What a wait asks (dist_sem_wait, trywait, timedwait). */
typedef struct dl_sem_req {
    char kind;                /* 'c' counting, 'l' leased (the object's) */
    unsigned value;           /* the object's initial value */
    int try_only;             /* one attempt: EAGAIN */
    uint64_t deadline;        /* DL_FOREVER, or monotonic ms: ETIMEDOUT */
    const int *stop;          /* NULL, or set (atomic) by another thread, which
                                 then calls dl_take_interrupt: EINTR */
} dl_sem_req_t;

/* The semaphore's kind: its keys (keys.h), its scripts, what the core asks
 * of its admission. */
extern const dl_kind_t dl_sem_kind;

static inline dl_sem_t *dl_sem_of(dl_core_t *o)
{
    return (dl_sem_t *)((char *)o - offsetof(dl_sem_t, core));
}

/* The semaphore in Redis, created with kind and value if it does not exist
 * (how: 'c'), only then ('x': EEXIST if it does), or only opened ('o':
 * ENOENT if it does not).  One round trip.  The process uses the
 * incarnation found (or made) from now on: a semaphore it found lost is
 * usable again (and one found lost only now is told to dist_onlost's
 * function first).  0, EINVAL (it is of the other kind), EEXIST, ENOENT,
 * EIO. */
int dl_sem_open(dl_proc_t *p, dl_sem_t *s, char kind, unsigned value, char how);
/* Removes the semaphore's name from Redis (sem_unlink.lua): its value,
 * queue and leased holds; its queued waiters are pushed a wake-up.  One
 * round trip.  0, ENOENT (Redis has none of that name), EIO. */
int dl_sem_unlink(dl_proc_t *p, dl_sem_t *s);
/* Takes a permit, waiting as rq says.  0, EAGAIN (try), ETIMEDOUT, EINTR
 * (rq->stop), EINVAL (the other kind), EIO, ENOLCK (Redis lost the
 * semaphore the process used: until dl_sem_open). */
int dl_sem_wait(dl_proc_t *p, dl_sem_t *s, const dl_sem_req_t *rq);
/* Posts: counting, a permit more; leased, one of the process's permits
 * back.  0, EPERM (leased: none held), ENOLCK (leased: the permit had
 * lapsed; either: Redis lost the semaphore, nothing posted), EOVERFLOW,
 * EINVAL, EIO (the post is kept, and made once Redis answers). */
int dl_sem_post(dl_proc_t *p, dl_sem_t *s, char kind, unsigned value);
/* The value: counting, Redis's count; leased, the permits no live hold
 * has.  One round trip.  0, EINVAL, EIO, ENOLCK. */
int dl_sem_getvalue(dl_proc_t *p, dl_sem_t *s, char kind, unsigned value, int *out);
/* Settles what a post that failed left (dl_sem_post's EIO): 0 once it is
 * made (or nothing was left), EIO while Redis does not answer, ENOLCK when
 * Redis lost the semaphore (the post with it). */
int dl_sem_settle(dl_proc_t *p, dl_sem_t *s);
/* Leased permits the process holds now (as it knows them), for tests and
 * the tools.  Never blocks. */
unsigned dl_sem_held(dl_sem_t *s);

#endif
