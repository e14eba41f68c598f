/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.h - the lock primitive: the local lock first, then the Redis hold
 * (RedisLockRegistry's localLock + obtainLock).  Shared by the mutex
 * (write mode only) and the rwlock.
 *
 * A lock of the process is a dl_lock_t: the hold core (dl_core_t, core.h:
 * the registry's entry, the Redis hold, its validity, the waiter) and the
 * lock's own local admission on top of it.  The core's files take, keep,
 * renew and release the hold; lock.c decides which of the process's
 * threads holds the lock, and when the process asks Redis for it:
 *   lock.c     local admission and handoff: holders, local waiters,
 *              handoff fairness, quick relocks; the lock's kind (this
 *              header)
 *   holds.c    each thread's stack of holds (holds.h)
 * and, in core/, take.c (taking the Redis hold), hold.c (the hold once
 * taken: record, vouch, release, linger), tenure.c (how long it serves
 * without asking Redis), mark.c (the lingering mark).
 *
 * One writer per group of fields, as in core.h.
 */
#ifndef DL_LOCK_H
#define DL_LOCK_H

#include <stddef.h>

#include "process.h"
#include "take.h"

/* A run of holds of one mode in a thread's stack of holds on a lock. */
typedef struct dl_run {
    char mode;                /* 'w' or 'r' */
    unsigned count;
} dl_run_t;

/* One thread's holds on one lock, most recent last.  (48 bytes, a run
 * in it: a process may hold a million locks, each by one thread.) */
typedef struct dl_holder {
    pid_t tid;
    unsigned wcount, rcount;
    int nruns, cap;           /* cap 0 or 1: the run is runs.one, in here;
                                 more: runs.many (holds.c) */
    unsigned char lapsed;     /* this thread's section (from its first hold to
                                 the unlock that ends it) has seen a lapse: a
                                 hold its holds were in was lost and taken anew
                                 (a relock's EOWNERDEAD), or the lapse came
                                 through a condition wait.  The unlock that
                                 ends the section says ENOLCK (holds.c: set by
                                 dl_holder_moved, read by dl_holder_pop) */
    unsigned char od;         /* a lock call of this thread's section through a
                                 robust object (DIST_MUTEX_ROBUST) returned
                                 EOWNERDEAD, and dist_mutex_consistent has not
                                 been called since: the unlock that ends the
                                 section leaves the lock unrecoverable (lock.c:
                                 set by dl_holder_owner_dead, cleared by
                                 dl_lock_consistent, read by dl_holder_pop) */
    unsigned char untold;     /* the section carries a lapse that no call of the
                                 thread was told of yet (a condition wait's
                                 release found it, and the wait said EIO): its
                                 next lock call says EOWNERDEAD (lock.c) */
    uint64_t fence;           /* the process's Redis hold this thread's holds are
                                 in (its fence when the thread's first hold
                                 began): another thread's retake of a lost hold
                                 leaves it behind, and its unlock says ENOLCK */
    union {
        dl_run_t one;
        dl_run_t *many;
    } runs;
    uint64_t since;           /* when its first hold began (us; 0 when the
                                 metrics file is off: tally.h) */
} dl_holder_t;

/* What a thread's section carries while the thread holds nothing on the
 * lock: a condition wait gave up every hold, and taking the mutex again
 * failed (EIO).  The section has not ended (no unlock ended it): the
 * thread's next hold on the lock picks this up (holds.c).  Rare: a lock
 * keeps only a pointer to them (NULL: none). */
typedef struct dl_carry {
    pid_t tid;
    unsigned char lapsed, od, untold;   /* as dl_holder_t's */
} dl_carry_t;

typedef struct dl_carries {
    int n, cap;
    dl_carry_t v[];
} dl_carries_t;

/* One lock of the process (a registry entry of kind dl_lock_kind).  Its
 * fields below the core are the lock's own, under core.mu. */
typedef struct dl_lock {
    dl_core_t core;           /* first: the registry's entry is the lock */

    /* holds.c: each thread's stack of holds; the first thread's in the
     * lock (holders is &holder1 while capholders is 1); what the sections
     * of threads that hold nothing now carry (dl_carry_t). */
    dl_holder_t *holders;
    int nholders, capholders;
    dl_holder_t holder1;
    dl_carries_t *carries;

    /* lock.c: local admission and handoff. */
    pid_t writer;             /* thread holding write locally, 0 none */
    int rthreads;             /* threads holding only read locally */
    int wwait, rwait;         /* threads waiting locally to write / read */
    pid_t last_writer;        /* the thread that took write last, and how many */
    unsigned streak;          /* times in a row (while others waited locally) */
    uint64_t unlock_us;       /* when the last unlock of a write hold returned, */
    pid_t unlock_tid;         /* and which thread's */
    unsigned char quick;      /* the writer locked again within DL_RELOCK_US of
                                 its own unlock (took_local) */
    unsigned char woken;      /* an unlock woke one thread of the lock's queue
                                 (o->cv[1]) that has not looked at the lock
                                 since: later unlocks wake nobody more
                                 (lock.c, admit_next) */
    uint64_t held_us;         /* when the writer's hold began (monotonic us) */
    /* (The mark of the last ENOTRECOVERABLE a lock call of the process was
     * told, which dl_lock_recover clears: rare, in o->hold.rare,
     * dl_hold_unrec.) */
} dl_lock_t;

/* A lock's state and its main key share one allocation (registry.c), and
 * a process may hold a million locks: with a main key of up to 56 bytes
 * and its NUL (a name of up to 42 with the default prefix), the two fit a
 * 384-byte malloc chunk (glibc's sizes step by 16, 8 of them its header).
 * What an idle hold does not use is kept elsewhere (core.h:
 * dl_hold_rare_t, the waiter on the waiting thread's stack), what only
 * the metrics file uses is made only for it (the counters: dl_core_tally),
 * and what can be derived is not stored (the key's place: dl_core_key).
 * Grow it only knowingly: docs/PERFORMANCE.md, "Where a held lock's
 * memory goes". */
#define DL_LOCK_SIZE_MAX 320

/* The lock's kind: its keys (keys.h), its scripts (lua/acquire.lua ...),
 * and what the core asks of its admission. */
extern const dl_kind_t dl_lock_kind;

/* The lock an entry of dl_lock_kind is. */
static inline dl_lock_t *dl_lock_of(dl_core_t *o)
{
    return (dl_lock_t *)((char *)o - offsetof(dl_lock_t, core));
}

/* Blocks as rq says.  0, EOWNERDEAD, EBUSY, ETIMEDOUT, EDEADLK, EAGAIN,
 * ENOTRECOVERABLE, EIO, ENOMEM.  An EOWNERDEAD of a robust request
 * (rq->robust) is pending in the caller's section until
 * dl_lock_consistent. */
int dl_lock_acquire(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq);
/* Releases the calling thread's most recent hold (write_only: the mutex's
 * only kind).  0, EPERM, ENOLCK, EIO.  The release that ends a section
 * with an EOWNERDEAD pending leaves the lock unrecoverable in Redis
 * (dl_hold_release_unrecoverable; its code as an unlock's). */
int dl_lock_release(dl_proc_t *p, dl_lock_t *l, int write_only);
/* dist_mutex_consistent: the EOWNERDEAD pending in the calling thread's
 * section is answered for.  0; EINVAL when none is pending, EPERM when the
 * thread holds nothing on l (both worded).  Never blocks. */
int dl_lock_consistent(dl_lock_t *l);
/* dist_mutex_destroy's recovery: when a lock call of the process was told
 * ENOTRECOVERABLE (l->unrec), that mark is cleared in Redis
 * (lua/recover.lua, which leaves a later mark alone).  0 (also when there
 * was nothing to do), EIO (worded; the mark is kept, to try again). */
int dl_lock_recover(dl_proc_t *p, dl_lock_t *l);
/* The caller's fence; EPERM if it holds nothing.  Never blocks. */
int dl_lock_getfence(dl_lock_t *l, uint64_t *fence);
/* 1 when the calling thread holds l but Redis no longer has the hold (the
 * watchdog found it gone); 0 while it is fine; -1 when the thread holds
 * nothing.  Never blocks. */
int dl_lock_hold_lost(dl_lock_t *l);
/* The time left of the caller's hold as last confirmed (core/tenure.c,
 * dl_tenure_lease): 0, ENOLCK, EPERM when it holds nothing.  Never blocks. */
int dl_lock_getlease(dl_lock_t *l, unsigned long *ms_left);

/* --- for several locks at once (lockall.c) --- */

/* What a write lock call of the calling thread on l would say before any
 * wait: EDEADLK (worded) for an errorcheck relock, or when the thread
 * holds l only for reading; else 0.  Never blocks. */
int dl_lock_deadlocks(dl_lock_t *l, const dl_req_t *rq);
/* Without waiting: if no thread of the process holds l, waits for Redis
 * for it or has it in Redis (its hold, even lingering), reserves it for
 * the calling thread's write request as a lock call does before it asks
 * Redis (the writer to be, and the one talker: o->hold.busy), and
 * returns 1; else 0; -1 (ENOMEM, worded) when there was no memory for
 * the talker's room (dl_hold_reserve).  Every reservation (1) ends with
 * dl_lock_finish. */
int dl_lock_reserve(dl_lock_t *l, pid_t tid);
/* After a reserved l was asked for (take_all.c): records the hold taken
 * (rc 0 or EOWNERDEAD, as g says), or undoes the reservation (any other
 * rc, returned; EBUSY and ETIMEDOUT worded).  As a lock call ends. */
int dl_lock_finish(dl_proc_t *p, dl_lock_t *l, const dl_req_t *rq, pid_t tid, int rc,
                   const dl_grant_t *g);
/* Undoes the calling thread's most recent write hold on l, taken by a
 * lock-all that could not take the others: as an unlock, but a hold never
 * lingers, and one the undone call took from Redis over a lapse (dead: it
 * returned EOWNERDEAD to nobody) is given back (dl_hold_give_back), so the
 * next holder is told of that lapse.  A relock of a hold the thread keeps
 * (recursive) leaves its section's pending robust EOWNERDEAD as it was
 * before the call (od_was, from dl_lock_owner_dead_pending): the caller
 * was told no EOWNERDEAD by the call, so nothing it did not know of may
 * make the lock unrecoverable at the section's end.  0, ENOLCK, EIO,
 * EPERM. */
int dl_lock_undo(dl_proc_t *p, dl_lock_t *l, int dead, int od_was);
/* 1 when the calling thread's section on l has a robust EOWNERDEAD pending
 * (dl_holder_t.od), else 0.  Never blocks. */
int dl_lock_owner_dead_pending(dl_lock_t *l);
/* A lock-all tells now the lapse of the calling thread's write hold on l
 * that a relock in an attempt it undid since found and took anew (that
 * relock's EOWNERDEAD, told to nobody): the section is marked as having
 * seen a lapse (its last unlock says ENOLCK) and, through a robust object
 * (rq->robust), has an EOWNERDEAD to make consistent.  Never blocks. */
void dl_lock_lapse_told(dl_lock_t *l, const dl_req_t *rq);
/* A lock-all that ends with an error leaves untold the lapse that a relock
 * of its attempts found and took anew (the undo keeps the new hold, the
 * caller's): the calling thread's section on l is marked as having seen a
 * lapse, and the thread's next lock call on l says EOWNERDEAD (through a
 * robust object, pending until made consistent), as after a condition
 * wait that could not take the lock again (dl_lock_carry).  Never
 * blocks. */
void dl_lock_lapse_untold(dl_lock_t *l);
/* How dl_lock_reconfirm judges a hold before it asks Redis.  TRUSTED: it
 * stands if trusted (tenure.c: within its validity, not known lost,
 * confirmed in the current trust epoch and lately): a hold a lock-all took
 * before it waited for, or asked Redis about, another lock.  CURRENT: it
 * stands within its validity, not known lost, confirmed in the current
 * trust epoch: what a lock call asks last of the hold it has just taken
 * (take.c), for the hold a lock-all took last. */
enum { DL_RECONFIRM_TRUSTED, DL_RECONFIRM_CURRENT };
/* The calling thread's write hold on l, which a lock-all took: may the
 * call still return it (SPEC "Local trust": a call returns only a hold it
 * has just confirmed or trusts)?  0 when it stands as `how` says, or a
 * round trip confirms it now (*asked set; also when it waited for another
 * thread's round trip about l) and its answer came within the
 * validity it set (one answered later vouches for nothing: as take.c's);
 * ENOLCK when Redis no longer has it (or the thread's part was left in a
 * lost hold), or its confirmation came too late; EIO when Redis cannot be
 * asked.  o->mu released around the round trip. */
int dl_lock_reconfirm(dl_proc_t *p, dl_lock_t *l, int how, int *asked);
/* The calling thread's write hold on l is still within its validity and
 * not known lost (no round trip; never blocks but on o->mu): 1, else 0. */
int dl_lock_valid(dl_lock_t *l);

/* A condition's wait on a mutex (dist_cond_wait): how many holds the
 * calling thread has on l (0: none; never blocks); it gives up all of
 * them, the reentrant ones counted locally and the last as an unlock does
 * (0, ENOLCK: its hold had lapsed in Redis, found by this release, EIO;
 * *seen: the section had seen a lapse before, which a relock was told of
 * as EOWNERDEAD; *od: an EOWNERDEAD of a robust call was pending, which
 * this release does not turn into an unrecoverable lock); and once it has
 * taken l again, count - 1 more holds restore its count (0, EAGAIN,
 * ENOMEM), with the lapse carried over (lapsed: seen, or found by the
 * release), so that the unlock that ends the caller's section still says
 * ENOLCK, and the pending EOWNERDEAD (od), so that it still needs
 * dist_mutex_consistent.  A wait does not end the section: the caller's
 * count is the same after it. */
unsigned dl_lock_held_count(dl_lock_t *l);
int dl_lock_release_all(dl_proc_t *p, dl_lock_t *l, int *seen, int *od);
int dl_lock_restore(dl_lock_t *l, unsigned count, int lapsed, int od);
/* A condition wait gave up the calling thread's holds on l and could not
 * take l again (EIO): its section goes on, and the thread's next hold on
 * l (its own lock call) carries what the section had seen: a lapse
 * (lapsed: its end says ENOLCK), a robust EOWNERDEAD pending (od), and a
 * lapse nobody was told of yet (untold: that lock call says EOWNERDEAD).
 * Nothing to carry: nothing is kept.  ENOMEM (worded; nothing kept). */
int dl_lock_carry(dl_lock_t *l, int lapsed, int od, int untold);

#endif
