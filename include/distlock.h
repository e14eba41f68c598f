/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * distlock.h - distributed locks that behave like the POSIX locks.
 *
 * dist_mutex_t mirrors pthread_mutex_t and dist_rwlock_t mirrors
 * pthread_rwlock_t; the lock state lives in Redis, so a lock is shared by
 * every thread of every process on every host that uses the same name.
 *
 * Every function returns 0 or an errno value, like pthreads, and none sets
 * errno.  On failure, dist_lasterror() gives this thread's detail.
 * Configuration comes from the environment (DISTLOCK_URL, DISTLOCK_PREFIX,
 * DISTLOCK_LEASE_MS, DISTLOCK_IO_TIMEOUT_MS, DISTLOCK_LOG, ...), read once
 * per process on first use.
 *
 * Blocking: the *lock / *rdlock / *wrlock calls block until acquired; the
 * try* calls and unlock make at most one bounded Redis round trip; timed*
 * calls block until abstime (CLOCK_REALTIME).  Any call that talks to Redis
 * gives up with EIO after DISTLOCK_IO_TIMEOUT_MS of failure.
 */
#ifndef DISTLOCK_H
#define DISTLOCK_H

#include <errno.h>   /* EOWNERDEAD, ENOLCK, ...: the system's values */
#include <stddef.h>  /* size_t */
#include <stdint.h>
#include <sys/types.h>  /* clockid_t, whatever the feature macros */
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* This header's version; dist_version() gives the library's at run time.
 * CMake's project(VERSION) must agree (checked at configure time). */
#define DISTLOCK_VERSION_MAJOR 0
#define DISTLOCK_VERSION_MINOR 1
#define DISTLOCK_VERSION_PATCH 0

#define DIST_NAME_MAX 512          /* longest lock name, in bytes */
#define DIST_MUTEX_RECURSIVE 1     /* default type: reentrant */
#define DIST_MUTEX_ERRORCHECK 2    /* relock by the owner -> EDEADLK */
/* Robustness (version 3), dist_mutexattr_setrobust: */
#define DIST_MUTEX_LENIENT 0       /* default: EOWNERDEAD is a warning; the lock stays usable */
#define DIST_MUTEX_ROBUST 1        /* POSIX robust: consistent, or ENOTRECOVERABLE */

#if defined(__GNUC__)
#define DIST_API __attribute__((visibility("default")))
#else
#define DIST_API
#endif

/* POSIX (2008) has EOWNERDEAD; a libc without it gets glibc's value. */
#ifndef EOWNERDEAD
#define EOWNERDEAD 130
#endif
#ifndef ENOTRECOVERABLE
#define ENOTRECOVERABLE 131
#endif

/* Private: tells a statically initialized object from garbage. */
#define DIST_PRIV_MAGIC_STATIC 0x44534c53u  /* "DSLS" */
/* Private: a static object whose name is the place of its initializer
 * (FILE:LINE, distlock/pthread.h), in dl_owns_name: one object per place
 * and process, checked at its first use. */
#define DIST_PRIV_NAME_PLACE 4

/* The contents of these types are private; they are complete only so that
 * locks can be declared statically and on the stack. */
typedef struct dist_mutexattr {
    unsigned int dl_magic;
    int dl_type;
    int dl_fair;
    unsigned long dl_lease_ms;
    int dl_robust;
} dist_mutexattr_t;

typedef struct dist_rwlockattr {
    unsigned int dl_magic;
    unsigned long dl_lease_ms;
} dist_rwlockattr_t;

/* What every lock object holds; private. */
struct dist_lockobj {
    unsigned int dl_magic;
    int dl_type;
    int dl_fair;
    int dl_owns_name;
    unsigned long dl_lease_ms;
    const char *dl_name;
    uint64_t dl_origin;         /* the process that initialized it (0: static) */
    uint64_t dl_born;           /* how many times it had forked by then */
    uint64_t dl_gen;            /* which initialization of this memory (0: static):
                                   a sibling that resolved an earlier one knows
                                   it is another object */
    char dl_iname[64];          /* a name this short, in the object itself: any
                                   process sharing the object can read it */
    int dl_robust;              /* a mutex's robustness (DIST_MUTEX_ROBUST); a
                                   condition keeps its clock in dl_type */
};

typedef struct dist_mutex { struct dist_lockobj dl_o; } dist_mutex_t;
typedef struct dist_rwlock { struct dist_lockobj dl_o; } dist_rwlock_t;

/* A condition variable (version 2): waiters anywhere, woken by a signal
 * from any process.  Its name is its own: a condition never clashes with
 * a lock of the same name. */
typedef struct dist_condattr {
    unsigned int dl_magic;
    int dl_clock;               /* CLOCK_REALTIME (default) or CLOCK_MONOTONIC */
} dist_condattr_t;
typedef struct dist_cond { struct dist_lockobj dl_o; } dist_cond_t;

/* name: a string literal (or any string that outlives the lock). */
#define DIST_MUTEX_INITIALIZER(name) \
    { { DIST_PRIV_MAGIC_STATIC, DIST_MUTEX_RECURSIVE, 0, 0, 0UL, (name), 0, 0, 0, { 0 }, 0 } }
#define DIST_RWLOCK_INITIALIZER(name) \
    { { DIST_PRIV_MAGIC_STATIC, 0, 0, 0, 0UL, (name), 0, 0, 0, { 0 }, 0 } }
#define DIST_COND_INITIALIZER(name) \
    { { DIST_PRIV_MAGIC_STATIC, 0, 0, 0, 0UL, (name), 0, 0, 0, { 0 }, 0 } }

/* --- mutex attributes (never block) --- */
DIST_API int dist_mutexattr_init(dist_mutexattr_t *attr);
DIST_API int dist_mutexattr_destroy(dist_mutexattr_t *attr);
/* type: DIST_MUTEX_RECURSIVE (default) or DIST_MUTEX_ERRORCHECK */
DIST_API int dist_mutexattr_settype(dist_mutexattr_t *attr, int type);
/* fair: 1 grants the lock in the order requests reached Redis, across all
 * processes (no local handoff past a waiting process) */
DIST_API int dist_mutexattr_setfair(dist_mutexattr_t *attr, int fair);
/* ms: 0 uses DISTLOCK_LEASE_MS, renewed while held; >0 is a fixed lease that
 * is not renewed and lapses at its end */
DIST_API int dist_mutexattr_setlease(dist_mutexattr_t *attr, unsigned long ms);
/* robust (version 3): DIST_MUTEX_LENIENT (default: EOWNERDEAD is a warning,
 * the lock stays usable) or DIST_MUTEX_ROBUST (POSIX robust: a holder told
 * EOWNERDEAD calls dist_mutex_consistent before the unlock that ends its
 * section; an unlock without it leaves the name unrecoverable) */
DIST_API int dist_mutexattr_setrobust(dist_mutexattr_t *attr, int robust);
/* The getters (version 3): 0 and the attribute's value, EINVAL for a NULL
 * or uninitialized attribute or a NULL result. */
DIST_API int dist_mutexattr_getrobust(const dist_mutexattr_t *attr, int *robust);
DIST_API int dist_mutexattr_gettype(const dist_mutexattr_t *attr, int *type);

/* --- mutex --- */
/* Never blocks; does not talk to Redis.  attr may be NULL. */
DIST_API int dist_mutex_init(dist_mutex_t *m, const char *name, const dist_mutexattr_t *attr);
/* Blocks until acquired.  0, EOWNERDEAD (acquired after a holder lapsed),
 * EDEADLK (errorcheck relock), EAGAIN, EIO, EINVAL. */
DIST_API int dist_mutex_lock(dist_mutex_t *m);
/* One attempt; EBUSY if held by another thread or process. */
DIST_API int dist_mutex_trylock(dist_mutex_t *m);
/* Blocks until abstime (CLOCK_REALTIME); ETIMEDOUT then. */
DIST_API int dist_mutex_timedlock(dist_mutex_t *m, const struct timespec *abstime);
/* As timedlock, abstime on clock: CLOCK_REALTIME or CLOCK_MONOTONIC
 * (EINVAL for others); never ETIMEDOUT before abstime on that clock. */
DIST_API int dist_mutex_clocklock(dist_mutex_t *m, clockid_t clock, const struct timespec *abstime);
/* Robust mutexes (version 3): the caller, told EOWNERDEAD by a lock call
 * through a DIST_MUTEX_ROBUST object in its current section, has repaired
 * the protected state: the unlock that ends the section then releases the
 * lock as usual.  Without it, that unlock leaves the name unrecoverable:
 * every later lock call on it, in every process, returns ENOTRECOVERABLE
 * until a process that was told ENOTRECOVERABLE destroys its object
 * (dist_mutex_destroy, which then clears the state in Redis: one round
 * trip) and initializes it again.  Never blocks, no round trip.  EINVAL
 * when the caller holds the lock but no EOWNERDEAD of a robust lock call
 * is pending in its section (or already made consistent), EPERM when it
 * does not hold the lock. */
DIST_API int dist_mutex_consistent(dist_mutex_t *m);
/* One round trip at most.  EPERM if the caller does not own it, ENOLCK if the
 * hold had lapsed in Redis (the local hold is released anyway).  The unlock
 * that ends the caller's section (its count back to zero) says ENOLCK when the
 * hold the section began with lapsed at any time before it, also where a
 * relock inside it took the lock anew (EOWNERDEAD): 0 from it means no other
 * holder could have been inside during the section. */
DIST_API int dist_mutex_unlock(dist_mutex_t *m);
/* Never blocks.  EBUSY when this is the last object of its name in the
 * process and the lock is held or waited on here; other objects of the same
 * name keep the lock state alive.  When the process was told
 * ENOTRECOVERABLE on the name, destroy clears that state in Redis (one
 * round trip; EIO, the object kept, when Redis cannot be reached), so that
 * the name is usable again for every process once reinitialized. */
DIST_API int dist_mutex_destroy(dist_mutex_t *m);
/* Never blocks.  The fencing token of the caller's hold; EPERM without one. */
DIST_API int dist_mutex_getfence(dist_mutex_t *m, uint64_t *fence);

/* --- several mutexes at once (Redisson's MultiLock): all of ms[0..n) or none --- */
/* The locks are taken in one canonical order (their names, as bytes), so
 * callers that lock overlapping sets in any order never deadlock one
 * another; when every one is free with nobody queued and one script can
 * reach them all (one server, or one cluster slot), one round trip takes
 * them all.  Each is then unlocked on its own with dist_mutex_unlock.
 * EINVAL: ms NULL, n 0 or above INT_MAX, an element NULL, not initialized
 * or destroyed, or the same name twice.  A recursive mutex the caller
 * holds is counted once more (unlock it once more); an errorcheck one
 * gives EDEADLK (trylockall: EBUSY) and nothing is taken.
 * Blocks until every one is acquired.  0, EOWNERDEAD (all acquired; one or
 * more after a holder lapsed), ENOTRECOVERABLE (one is unrecoverable),
 * EDEADLK (also: the set cannot be held together within a fixed lease,
 * 8 attempts in a row having outlasted it), EAGAIN, EIO, EINVAL, ENOMEM.  On an error but EOWNERDEAD a mutex
 * the caller held before the call is as it was: its count, and a robust
 * EOWNERDEAD pending in its section or not. */
DIST_API int dist_mutex_lockall(dist_mutex_t *const ms[], size_t n);
/* No waiting: EBUSY if any one cannot be taken at once, or its one attempt
 * could not hold them all together (none is held). */
DIST_API int dist_mutex_trylockall(dist_mutex_t *const ms[], size_t n);
/* Blocks until abstime (CLOCK_REALTIME); ETIMEDOUT then, none held. */
DIST_API int dist_mutex_timedlockall(dist_mutex_t *const ms[], size_t n,
                                     const struct timespec *abstime);

/* --- read-write lock attributes (never block) --- */
DIST_API int dist_rwlockattr_init(dist_rwlockattr_t *attr);
DIST_API int dist_rwlockattr_destroy(dist_rwlockattr_t *attr);
DIST_API int dist_rwlockattr_setlease(dist_rwlockattr_t *attr, unsigned long ms);

/* --- read-write lock: same blocking rules as the mutex calls --- */
/* A read-write lock shares its name's state in Redis with the mutex of that
 * name: when a robust holder of that mutex left it unrecoverable (see
 * dist_mutex_consistent), every rdlock and wrlock call on the name returns
 * ENOTRECOVERABLE, and dist_rwlock_destroy in a process so told clears the
 * state as dist_mutex_destroy does (EIO, the object kept, when Redis cannot
 * be reached). */
DIST_API int dist_rwlock_init(dist_rwlock_t *rw, const char *name, const dist_rwlockattr_t *attr);
DIST_API int dist_rwlock_rdlock(dist_rwlock_t *rw);
DIST_API int dist_rwlock_tryrdlock(dist_rwlock_t *rw);
DIST_API int dist_rwlock_timedrdlock(dist_rwlock_t *rw, const struct timespec *abstime);
/* EDEADLK when the caller holds only read holds on it (no upgrades). */
DIST_API int dist_rwlock_wrlock(dist_rwlock_t *rw);
DIST_API int dist_rwlock_trywrlock(dist_rwlock_t *rw);
DIST_API int dist_rwlock_timedwrlock(dist_rwlock_t *rw, const struct timespec *abstime);
/* abstime on clock (version 3): CLOCK_REALTIME or CLOCK_MONOTONIC. */
DIST_API int dist_rwlock_clockrdlock(dist_rwlock_t *rw, clockid_t clock,
                                     const struct timespec *abstime);
DIST_API int dist_rwlock_clockwrlock(dist_rwlock_t *rw, clockid_t clock,
                                     const struct timespec *abstime);
/* Releases the calling thread's most recent hold on rw.  ENOLCK as
 * dist_mutex_unlock's: the unlock that ends the thread's section says it when
 * the section's hold lapsed at any time before it. */
DIST_API int dist_rwlock_unlock(dist_rwlock_t *rw);
DIST_API int dist_rwlock_destroy(dist_rwlock_t *rw);
DIST_API int dist_rwlock_getfence(dist_rwlock_t *rw, uint64_t *fence);

/* --- knowing a hold is still good (never block, no round trip) --- */
/* The time left of the caller's hold as the process last confirmed it with
 * Redis (the send time of the confirming call + its TTL - a drift
 * allowance), in *ms_left: 0 (*ms_left 0 once that time has passed with no
 * newer confirmation), ENOLCK when the hold is known to have lapsed (a
 * renewal or another round trip found it gone, or a fixed lease is past
 * its end), EPERM when the caller holds nothing on it. */
DIST_API int dist_mutex_getlease(dist_mutex_t *m, unsigned long *ms_left);
DIST_API int dist_rwlock_getlease(dist_rwlock_t *rw, unsigned long *ms_left);
/* Called once for each hold of the process found lapsed while held, from a
 * thread of the library, with the lock's name and the hold's fence (a
 * leased semaphore permit's too; and, fence 0, a semaphore the process
 * used that Redis lost: dist_sem_init).  It
 * must not block: it may call getlease, getfence, dist_strerror, write to
 * a pipe or set a flag, but not lock (a lock call from it is refused:
 * EDEADLK, EBUSY for a try*). */
typedef void (*dist_lost_fn)(const char *name, size_t namelen, uint64_t fence, void *arg);
/* Registers the process's one such function (fn NULL: none).  When it
 * returns, the previous function is no longer running, unless it is the
 * caller (a function may replace itself).  Never blocks on the network. */
DIST_API int dist_onlost(dist_lost_fn fn, void *arg);

/* --- semaphores (version 2) ---
 * A semaphore has a name of its own: it never clashes with a lock of the
 * same name.  Its value lives in Redis only: every wait, try and post is
 * one round trip, and a post is seen at once everywhere.  A semaphore
 * Redis lost (a restart without persistence, a flush, eviction) cannot
 * keep its count: a process that used it gets ENOLCK from its next call
 * on it (and every later one; a post adds nothing) and dist_onlost's
 * function is called with its name, until the process destroys and
 * initializes it again; a process that never used it sees a new one. */
#define DIST_SEM_LEASED 1           /* flag for dist_sem_init: leased permits */

typedef struct dist_sem {
    struct dist_lockobj dl_o;
    unsigned int dl_value;          /* the value it is created with */
    int dl_flags;
} dist_sem_t;

/* A counting semaphore (flags 0) created with value at its first use.
 * name: a string literal (or any string that outlives the object). */
#define DIST_SEM_INITIALIZER(name, value) \
    { { DIST_PRIV_MAGIC_STATIC, 0, 0, 0, 0UL, (name), 0, 0, 0, { 0 }, 0 }, (value), 0 }

/* One round trip: creates the semaphore in Redis with value (at most
 * INT_MAX) if it does not exist; a later init with another value keeps the
 * existing one.  The process uses the semaphore Redis has from then on (an
 * init ends the ENOLCK of one Redis lost).  flags 0: a POSIX counting semaphore (any process posts,
 * the value survives its users, waiters are woken in arrival order);
 * DIST_SEM_LEASED: each permit taken is held by the taking process under a
 * lease renewed while it lives, given back by its post or within one lease
 * of its death.  EINVAL (also when the semaphore exists as the other
 * kind, and with redlock://), EIO. */
DIST_API int dist_sem_init(dist_sem_t *s, const char *name, unsigned int value, int flags);
/* Blocks until a permit is taken.  0, EINVAL, EIO, ENOLCK (Redis lost the
 * semaphore the process used). */
DIST_API int dist_sem_wait(dist_sem_t *s);
/* One round trip; EAGAIN if no permit is free. */
DIST_API int dist_sem_trywait(dist_sem_t *s);
/* Blocks until abstime (CLOCK_REALTIME); ETIMEDOUT then. */
DIST_API int dist_sem_timedwait(dist_sem_t *s, const struct timespec *abstime);
/* abstime on clock (version 3): CLOCK_REALTIME or CLOCK_MONOTONIC. */
DIST_API int dist_sem_clockwait(dist_sem_t *s, clockid_t clock, const struct timespec *abstime);
/* One round trip.  Counting: a permit more (EOVERFLOW past INT_MAX);
 * leased: one of the calling process's permits back (EPERM if it holds
 * none; ENOLCK, as a lock's unlock, if the permit had lapsed: its lease
 * ran out, or Redis lost it).  ENOLCK: Redis lost the semaphore, nothing
 * posted.  EIO: not confirmed; the post is kept and made once Redis
 * answers, never twice. */
DIST_API int dist_sem_post(dist_sem_t *s);
/* One round trip: the permits free now (leased: not held by a live hold).
 * ENOLCK: Redis lost the semaphore the process used. */
DIST_API int dist_sem_getvalue(dist_sem_t *s, int *value);
/* Never blocks.  EBUSY when this is the last object of its name in the
 * process and a thread waits on it, or the process holds leased permits of
 * it.  The semaphore stays in Redis. */
DIST_API int dist_sem_destroy(dist_sem_t *s);
/* One round trip (version 3): removes the semaphore name from Redis, its
 * value and its waiters' queue (ENOENT if Redis does not have it; EINVAL
 * for a bad name and with redlock://).  As sem_unlink(3), a later init
 * creates a new semaphore with its own value; unlike it, the state is
 * gone at once: objects still initialized in any process use the name as
 * it is then (waiting, posting, or recreating it at their next init), and
 * their threads waiting meanwhile wait for a post to the new one. */
DIST_API int dist_sem_unlink(const char *name);

/* --- condition variables (version 2) --- */
/* Never block. */
DIST_API int dist_condattr_init(dist_condattr_t *attr);
DIST_API int dist_condattr_destroy(dist_condattr_t *attr);
/* The clock of dist_cond_timedwait's abstime (version 3): CLOCK_REALTIME
 * (default) or CLOCK_MONOTONIC; EINVAL for others. */
DIST_API int dist_condattr_setclock(dist_condattr_t *attr, clockid_t clock);
DIST_API int dist_condattr_getclock(const dist_condattr_t *attr, clockid_t *clock);
/* Never blocks; does not talk to Redis.  attr may be NULL. */
DIST_API int dist_cond_init(dist_cond_t *c, const char *name, const dist_condattr_t *attr);
/* The caller must hold m (EPERM otherwise; m is then untouched).  Releases
 * every hold the caller has on m, blocks until a signal or broadcast from
 * any thread of any process wakes it (or spuriously), then takes m again
 * and restores its count.  0, EOWNERDEAD (m held again, but a hold on it
 * lapsed meanwhile: the protected state may be half-updated), EINVAL,
 * EPERM, EIO: Redis failed; m is still held if the wait had not started,
 * and not held if taking it again failed (dist_lasterror says which). */
DIST_API int dist_cond_wait(dist_cond_t *c, dist_mutex_t *m);
/* As dist_cond_wait, until abstime on the condition's clock (its
 * attribute's, dist_condattr_setclock; CLOCK_REALTIME by default):
 * ETIMEDOUT then, with m held again; never before abstime. */
DIST_API int dist_cond_timedwait(dist_cond_t *c, dist_mutex_t *m, const struct timespec *abstime);
/* As timedwait, abstime on clock (version 3), whatever the condition's. */
DIST_API int dist_cond_clockwait(dist_cond_t *c, dist_mutex_t *m, clockid_t clock,
                                 const struct timespec *abstime);
/* Wake at least one waiter / every waiter, in any process; need not hold
 * the mutex.  A signal with nobody waiting is not remembered.  One round
 * trip at most (none when a waiter of the caller's own process is woken). */
DIST_API int dist_cond_signal(dist_cond_t *c);
DIST_API int dist_cond_broadcast(dist_cond_t *c);
/* Never blocks.  EBUSY when this is the last object of its name in the
 * process and a thread of the process waits on it. */
DIST_API int dist_cond_destroy(dist_cond_t *c);

/* --- barriers (version 3) ---
 * count callers of dist_barrier_wait, from any threads of any processes,
 * are released together; then the barrier is ready for the next
 * generation.  A barrier has a name of its own (never a lock's).  Not
 * supported with redlock:// (EINVAL). */
#define DIST_BARRIER_SERIAL_THREAD (-1)   /* as PTHREAD_BARRIER_SERIAL_THREAD */

typedef struct dist_barrierattr {
    unsigned int dl_magic;
} dist_barrierattr_t;
typedef struct dist_barrier {
    struct dist_lockobj dl_o;
    unsigned int dl_count;          /* the count it was initialized with */
} dist_barrier_t;

/* Never block. */
DIST_API int dist_barrierattr_init(dist_barrierattr_t *attr);
DIST_API int dist_barrierattr_destroy(dist_barrierattr_t *attr);
/* One round trip: makes the barrier in Redis with count (> 0) if it does
 * not exist, else checks that it has that count.  attr may be NULL.
 * EINVAL (count 0; another count while the barrier is in use, naming both;
 * redlock://), EIO. */
DIST_API int dist_barrier_init(dist_barrier_t *b, const char *name, const dist_barrierattr_t *attr,
                               unsigned count);
/* One round trip to arrive, then blocks until count arrivals (its own
 * included) were made in its generation.  DIST_BARRIER_SERIAL_THREAD for
 * exactly one caller of each generation (the one whose arrival completed
 * it), 0 for the others; EINVAL (another count in Redis), ENOLCK (Redis
 * lost the barrier while the caller waited: its arrival no longer
 * counts), EIO.  An arrival counts once made, also if its process dies
 * afterwards. */
DIST_API int dist_barrier_wait(dist_barrier_t *b);
/* Extension: as dist_barrier_wait until abstime (CLOCK_REALTIME), then
 * ETIMEDOUT with the caller's arrival withdrawn (never before abstime),
 * unless its generation completed meanwhile: then as dist_barrier_wait. */
DIST_API int dist_barrier_timedwait(dist_barrier_t *b, const struct timespec *abstime);
/* Never blocks.  EBUSY when this is the last object of its name in the
 * process and a thread of the process waits on it.  The barrier stays in
 * Redis. */
DIST_API int dist_barrier_destroy(dist_barrier_t *b);

/* --- once (version 3) ---
 * The routine runs in exactly one process for a name (not once per
 * process), and every caller returns once it has completed; if the
 * process running it dies first, another caller runs it (the routine must
 * tolerate a run cut short).  Its completion is kept in Redis for as long
 * as Redis keeps its data: after a restart without persistence, or a
 * flush, the routine runs again. */
typedef struct dist_once { struct dist_lockobj dl_o; } dist_once_t;

/* name: a string literal (or any string that outlives the object). */
#define DIST_ONCE_INITIALIZER(name) \
    { { DIST_PRIV_MAGIC_STATIC, 0, 0, 0, 0UL, (name), 0, 0, 0, { 0 }, 0 } }

/* Blocks until the routine completed, here or in another process.  0;
 * EINVAL (o or routine NULL, a bad name); EDEADLK (the routine called
 * dist_once on its own object, which pthread_once would deadlock on); EIO
 * (Redis did not answer: whether it completed is unknown; or the routine
 * completed here and Redis could not be told).  A routine's own failure
 * has no code, as with pthread_once: a routine that returns completed. */
DIST_API int dist_once(dist_once_t *o, void (*routine)(void));

/* --- errors (never block) --- */
/* Text for any code these functions return. */
DIST_API const char *dist_strerror(int err);
/* This thread's detail of its last failure, e.g.
 * "redis 127.0.0.1:6390: connection refused"; "" if none. */
DIST_API const char *dist_lasterror(void);
/* The library's version, "MAJOR.MINOR.PATCH" (a static string). */
DIST_API const char *dist_version(void);

#ifdef __cplusplus
}
#endif

#endif /* DISTLOCK_H */
