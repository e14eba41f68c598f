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
#include <stdint.h>
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

#if defined(__GNUC__)
#define DIST_API __attribute__((visibility("default")))
#else
#define DIST_API
#endif

/* POSIX (2008) has EOWNERDEAD; a libc without it gets glibc's value. */
#ifndef EOWNERDEAD
#define EOWNERDEAD 130
#endif

/* Private: tells a statically initialized object from garbage. */
#define DIST_PRIV_MAGIC_STATIC 0x44534c53u  /* "DSLS" */

/* The contents of these types are private; they are complete only so that
 * locks can be declared statically and on the stack. */
typedef struct dist_mutexattr {
    unsigned int dl_magic;
    int dl_type;
    int dl_fair;
    unsigned long dl_lease_ms;
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
    char dl_iname[64];          /* a name this short, in the object itself: any
                                   process sharing the object can read it */
};

typedef struct dist_mutex { struct dist_lockobj dl_o; } dist_mutex_t;
typedef struct dist_rwlock { struct dist_lockobj dl_o; } dist_rwlock_t;

/* A condition variable (version 2): waiters anywhere, woken by a signal
 * from any process.  Its name is its own: a condition never clashes with
 * a lock of the same name. */
typedef struct dist_condattr {
    unsigned int dl_magic;
} dist_condattr_t;
typedef struct dist_cond { struct dist_lockobj dl_o; } dist_cond_t;

/* name: a string literal (or any string that outlives the lock). */
#define DIST_MUTEX_INITIALIZER(name) \
    { { DIST_PRIV_MAGIC_STATIC, DIST_MUTEX_RECURSIVE, 0, 0, 0UL, (name), 0, 0, { 0 } } }
#define DIST_RWLOCK_INITIALIZER(name) \
    { { DIST_PRIV_MAGIC_STATIC, 0, 0, 0, 0UL, (name), 0, 0, { 0 } } }
#define DIST_COND_INITIALIZER(name) \
    { { DIST_PRIV_MAGIC_STATIC, 0, 0, 0, 0UL, (name), 0, 0, { 0 } } }

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
/* One round trip at most.  EPERM if the caller does not own it, ENOLCK if the
 * hold had lapsed in Redis (the local hold is released anyway). */
DIST_API int dist_mutex_unlock(dist_mutex_t *m);
/* Never blocks.  EBUSY when this is the last object of its name in the
 * process and the lock is held or waited on here; other objects of the same
 * name keep the lock state alive. */
DIST_API int dist_mutex_destroy(dist_mutex_t *m);
/* Never blocks.  The fencing token of the caller's hold; EPERM without one. */
DIST_API int dist_mutex_getfence(dist_mutex_t *m, uint64_t *fence);

/* --- read-write lock attributes (never block) --- */
DIST_API int dist_rwlockattr_init(dist_rwlockattr_t *attr);
DIST_API int dist_rwlockattr_destroy(dist_rwlockattr_t *attr);
DIST_API int dist_rwlockattr_setlease(dist_rwlockattr_t *attr, unsigned long ms);

/* --- read-write lock: same blocking rules as the mutex calls --- */
DIST_API int dist_rwlock_init(dist_rwlock_t *rw, const char *name, const dist_rwlockattr_t *attr);
DIST_API int dist_rwlock_rdlock(dist_rwlock_t *rw);
DIST_API int dist_rwlock_tryrdlock(dist_rwlock_t *rw);
DIST_API int dist_rwlock_timedrdlock(dist_rwlock_t *rw, const struct timespec *abstime);
/* EDEADLK when the caller holds only read holds on it (no upgrades). */
DIST_API int dist_rwlock_wrlock(dist_rwlock_t *rw);
DIST_API int dist_rwlock_trywrlock(dist_rwlock_t *rw);
DIST_API int dist_rwlock_timedwrlock(dist_rwlock_t *rw, const struct timespec *abstime);
/* Releases the calling thread's most recent hold on rw. */
DIST_API int dist_rwlock_unlock(dist_rwlock_t *rw);
DIST_API int dist_rwlock_destroy(dist_rwlock_t *rw);
DIST_API int dist_rwlock_getfence(dist_rwlock_t *rw, uint64_t *fence);

/* --- condition variables (version 2) --- */
/* Never block. */
DIST_API int dist_condattr_init(dist_condattr_t *attr);
DIST_API int dist_condattr_destroy(dist_condattr_t *attr);
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
/* As dist_cond_wait, until abstime (CLOCK_REALTIME): ETIMEDOUT then, with
 * m held again; never before abstime. */
DIST_API int dist_cond_timedwait(dist_cond_t *c, dist_mutex_t *m, const struct timespec *abstime);
/* Wake at least one waiter / every waiter, in any process; need not hold
 * the mutex.  A signal with nobody waiting is not remembered.  One round
 * trip at most (none when a waiter of the caller's own process is woken). */
DIST_API int dist_cond_signal(dist_cond_t *c);
DIST_API int dist_cond_broadcast(dist_cond_t *c);
/* Never blocks.  EBUSY when this is the last object of its name in the
 * process and a thread of the process waits on it. */
DIST_API int dist_cond_destroy(dist_cond_t *c);

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
