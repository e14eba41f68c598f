/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * distlock/pthread.h - a pthread program made distributed by one include
 * line (distlock_pthread(7)).
 *
 *   #include <pthread.h>
 *   #include <semaphore.h>
 *   #include <distlock/pthread.h>     <- the port
 *
 * From this line on, the translation unit's pthread_mutex_t,
 * pthread_rwlock_t, pthread_cond_t, pthread_barrier_t and sem_t are
 * distlock's (dist_mutex_t ...), their initializers and calls too: a lock
 * is shared by every thread of every process, on every host, that uses
 * the same name with the same DISTLOCK_URL.  Include it in every file
 * that uses those types (or give the compiler -include distlock/pthread.h),
 * after the system headers: a header included later that declares
 * functions of pthread types sees distlock's.  It includes <pthread.h> and
 * <semaphore.h> itself, so it may also come first.  pthread_once, threads,
 * keys, spinlocks and signals are left alone.  Link with -ldistlock.
 *
 * Names.  A lock's name in Redis is what makes it the same lock in every
 * process:
 *   - a statically initialized object is named by the place of its
 *     initializer, FILE:LINE (__FILE_NAME__ where the compiler has it,
 *     else __FILE__; define DIST_PORT_FILE to choose), or explicitly:
 *       static pthread_mutex_t ledger = DIST_NAME("ledger", PTHREAD_MUTEX_INITIALIZER);
 *   - an object initialized at run time (pthread_mutex_init ...) is named
 *     by dist_pthread_name(&obj, "name") called before its init; else, if
 *     it lies in static storage (a global or static, or a member or
 *     element of one), by the place of its init call, FILE:LINE; else (the
 *     heap, a stack, memory the program mapped) it stays private to the
 *     process that initialized it, and to processes sharing its memory: a
 *     name of that place, that process and that address.
 *   One place names one object: a process in which two live objects
 *   (mutexes with mutexes, rwlocks with rwlocks, ...) would get the name of
 *   one place (two initializers on one line, a static lock defined in a
 *   header, an array of locks initialized in a loop) stops at the second
 *   with a line that says where and how to name them, rather than merge
 *   two locks of the program into one.
 *
 * Semantics that differ (distlock_pthread(7) has the list):
 *   - PTHREAD_MUTEX_NORMAL / DEFAULT / ADAPTIVE_NP mutexes are error-checking
 *     ones: a relock by the owner returns EDEADLK instead of hanging;
 *   - priority protocols and ceilings: ENOTSUP (PTHREAD_PRIO_NONE only);
 *   - an object set to zero (memset, calloc) is not an initialized lock: the
 *     first call on it stops the program with a line saying so;
 *   - Redis unreachable: a lock call waits for it (DISTLOCK_ON_ERROR=wait,
 *     the default; abort: the program aborts), as the interposer's do; a
 *     trylock says EBUSY, a timed call ETIMEDOUT at its time;
 *   - a lock whose holder's process died is taken with a warning
 *     (EOWNERDEAD only for a robust mutex, which the program makes
 *     consistent);
 *   - sem_wait and the condition waits are not cancellation points and are
 *     not ended by signal handlers (EINTR).
 */
#ifndef DISTLOCK_PTHREAD_H
#define DISTLOCK_PTHREAD_H

#include <fcntl.h>     /* O_CREAT, O_EXCL: sem_open */
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>

#include <distlock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ attributes */

/* The attributes of the port: distlock's, and what pthreads keeps beside
 * them (accepted, kept, given back by the getters). */
typedef struct dist_pthread_mutexattr {
    dist_mutexattr_t dl_a;
    int dl_ptype;                     /* the PTHREAD_MUTEX_* type asked for */
    int dl_pshared;
    int dl_protocol;
} dist_pthread_mutexattr_t;

typedef struct dist_pthread_rwlockattr {
    dist_rwlockattr_t dl_a;
    int dl_pshared;
    int dl_kind;
} dist_pthread_rwlockattr_t;

typedef struct dist_pthread_condattr {
    dist_condattr_t dl_a;
    int dl_pshared;
} dist_pthread_condattr_t;

typedef struct dist_pthread_barrierattr {
    dist_barrierattr_t dl_a;
    int dl_pshared;
} dist_pthread_barrierattr_t;

/* ------------------------------------------------ the calls of the port */

/* The name the next run-time init of obj (any of the port's objects)
 * gives it, instead of the place of the init call: a copy of name is
 * kept until then.  0, EINVAL (NULL, an empty name or one longer than
 * DIST_NAME_MAX), ENOMEM. */
DIST_API int dist_pthread_name(const void *obj, const char *name);

/* The port's calls: each is the pthread call of the same name for
 * distlock's objects, with the policy above.  `place` is FILE:LINE of the
 * caller (the macros below pass it). */
DIST_API int dist_pthread_mutex_init(dist_mutex_t *m, const dist_pthread_mutexattr_t *a,
                                     const char *place);
DIST_API int dist_pthread_mutex_destroy(dist_mutex_t *m);
DIST_API int dist_pthread_mutex_lock(dist_mutex_t *m);
DIST_API int dist_pthread_mutex_trylock(dist_mutex_t *m);
DIST_API int dist_pthread_mutex_timedlock(dist_mutex_t *m, const struct timespec *abstime);
DIST_API int dist_pthread_mutex_clocklock(dist_mutex_t *m, clockid_t clock,
                                          const struct timespec *abstime);
DIST_API int dist_pthread_mutex_unlock(dist_mutex_t *m);
DIST_API int dist_pthread_mutex_consistent(dist_mutex_t *m);

DIST_API int dist_pthread_rwlock_init(dist_rwlock_t *rw, const dist_pthread_rwlockattr_t *a,
                                      const char *place);
DIST_API int dist_pthread_rwlock_destroy(dist_rwlock_t *rw);
DIST_API int dist_pthread_rwlock_rdlock(dist_rwlock_t *rw);
DIST_API int dist_pthread_rwlock_tryrdlock(dist_rwlock_t *rw);
DIST_API int dist_pthread_rwlock_timedrdlock(dist_rwlock_t *rw, const struct timespec *abstime);
DIST_API int dist_pthread_rwlock_clockrdlock(dist_rwlock_t *rw, clockid_t clock,
                                             const struct timespec *abstime);
DIST_API int dist_pthread_rwlock_wrlock(dist_rwlock_t *rw);
DIST_API int dist_pthread_rwlock_trywrlock(dist_rwlock_t *rw);
DIST_API int dist_pthread_rwlock_timedwrlock(dist_rwlock_t *rw, const struct timespec *abstime);
DIST_API int dist_pthread_rwlock_clockwrlock(dist_rwlock_t *rw, clockid_t clock,
                                             const struct timespec *abstime);
DIST_API int dist_pthread_rwlock_unlock(dist_rwlock_t *rw);

DIST_API int dist_pthread_cond_init(dist_cond_t *c, const dist_pthread_condattr_t *a,
                                    const char *place);
DIST_API int dist_pthread_cond_destroy(dist_cond_t *c);
DIST_API int dist_pthread_cond_wait(dist_cond_t *c, dist_mutex_t *m);
DIST_API int dist_pthread_cond_timedwait(dist_cond_t *c, dist_mutex_t *m,
                                         const struct timespec *abstime);
DIST_API int dist_pthread_cond_clockwait(dist_cond_t *c, dist_mutex_t *m, clockid_t clock,
                                         const struct timespec *abstime);
DIST_API int dist_pthread_cond_signal(dist_cond_t *c);
DIST_API int dist_pthread_cond_broadcast(dist_cond_t *c);

DIST_API int dist_pthread_barrier_init(dist_barrier_t *b, const dist_pthread_barrierattr_t *a,
                                       unsigned count, const char *place);
DIST_API int dist_pthread_barrier_destroy(dist_barrier_t *b);
DIST_API int dist_pthread_barrier_wait(dist_barrier_t *b);

/* The semaphore calls return 0 or -1 with errno, as sem_*(3) do. */
DIST_API int dist_pthread_sem_init(dist_sem_t *s, int pshared, unsigned value, const char *place);
DIST_API int dist_pthread_sem_destroy(dist_sem_t *s);
DIST_API int dist_pthread_sem_wait(dist_sem_t *s);
DIST_API int dist_pthread_sem_trywait(dist_sem_t *s);
DIST_API int dist_pthread_sem_timedwait(dist_sem_t *s, const struct timespec *abstime);
DIST_API int dist_pthread_sem_clockwait(dist_sem_t *s, clockid_t clock,
                                        const struct timespec *abstime);
DIST_API int dist_pthread_sem_post(dist_sem_t *s);
DIST_API int dist_pthread_sem_getvalue(dist_sem_t *s, int *value);
/* sem_open(name, oflag[, mode, value]): the semaphore named name less its
 * leading '/', one object per name in the process (mode is not kept). */
DIST_API dist_sem_t *dist_pthread_sem_open(const char *name, int oflag, ...);
DIST_API int dist_pthread_sem_close(dist_sem_t *s);
DIST_API int dist_pthread_sem_unlink(const char *name);

/* ------------------------------------------------- attributes' calls */

static inline int dist_pthread_mutexattr_init(dist_pthread_mutexattr_t *a)
{
    a->dl_ptype = PTHREAD_MUTEX_DEFAULT;
    a->dl_pshared = PTHREAD_PROCESS_PRIVATE;
    a->dl_protocol = PTHREAD_PRIO_NONE;
    int rc = dist_mutexattr_init(&a->dl_a);
    return rc ? rc : dist_mutexattr_settype(&a->dl_a, DIST_MUTEX_ERRORCHECK);
}
static inline int dist_pthread_mutexattr_destroy(dist_pthread_mutexattr_t *a)
{
    return dist_mutexattr_destroy(&a->dl_a);
}
/* NORMAL, DEFAULT and ADAPTIVE_NP are error-checking: their self-deadlock
 * cannot be kept (a relock by the owner returns EDEADLK). */
static inline int dist_pthread_mutexattr_settype(dist_pthread_mutexattr_t *a, int type)
{
    int rc;
    if (type == PTHREAD_MUTEX_RECURSIVE)
        rc = dist_mutexattr_settype(&a->dl_a, DIST_MUTEX_RECURSIVE);
    else if (type == PTHREAD_MUTEX_NORMAL || type == PTHREAD_MUTEX_ERRORCHECK ||
             type == PTHREAD_MUTEX_DEFAULT
#ifdef PTHREAD_MUTEX_ADAPTIVE_NP
             || type == PTHREAD_MUTEX_ADAPTIVE_NP
#endif
    )
        rc = dist_mutexattr_settype(&a->dl_a, DIST_MUTEX_ERRORCHECK);
    else
        return EINVAL;
    if (rc == 0)
        a->dl_ptype = type;
    return rc;
}
static inline int dist_pthread_mutexattr_gettype(const dist_pthread_mutexattr_t *a, int *type)
{
    *type = a->dl_ptype;
    return 0;
}
static inline int dist_pthread_mutexattr_setpshared(dist_pthread_mutexattr_t *a, int pshared)
{
    if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
        return EINVAL;
    a->dl_pshared = pshared;
    return 0;
}
static inline int dist_pthread_mutexattr_getpshared(const dist_pthread_mutexattr_t *a, int *pshared)
{
    *pshared = a->dl_pshared;
    return 0;
}
static inline int dist_pthread_mutexattr_setprotocol(dist_pthread_mutexattr_t *a, int protocol)
{
    (void)a;
    if (protocol == PTHREAD_PRIO_NONE)
        return 0;
    return protocol == PTHREAD_PRIO_INHERIT || protocol == PTHREAD_PRIO_PROTECT ? ENOTSUP : EINVAL;
}
static inline int dist_pthread_mutexattr_getprotocol(const dist_pthread_mutexattr_t *a, int *protocol)
{
    *protocol = a->dl_protocol;
    return 0;
}
static inline int dist_pthread_mutexattr_setprioceiling(dist_pthread_mutexattr_t *a, int ceiling)
{
    (void)a;
    (void)ceiling;
    return ENOTSUP;
}
static inline int dist_pthread_mutexattr_getprioceiling(const dist_pthread_mutexattr_t *a,
                                                        int *ceiling)
{
    (void)a;
    (void)ceiling;
    return ENOTSUP;
}
static inline int dist_pthread_mutexattr_setrobust(dist_pthread_mutexattr_t *a, int robust)
{
    if (robust != PTHREAD_MUTEX_STALLED && robust != PTHREAD_MUTEX_ROBUST)
        return EINVAL;
    return dist_mutexattr_setrobust(&a->dl_a, robust == PTHREAD_MUTEX_ROBUST ? DIST_MUTEX_ROBUST
                                                                             : DIST_MUTEX_LENIENT);
}
static inline int dist_pthread_mutexattr_getrobust(const dist_pthread_mutexattr_t *a, int *robust)
{
    int r = DIST_MUTEX_LENIENT;
    int rc = dist_mutexattr_getrobust(&a->dl_a, &r);
    if (rc == 0)
        *robust = r == DIST_MUTEX_ROBUST ? PTHREAD_MUTEX_ROBUST : PTHREAD_MUTEX_STALLED;
    return rc;
}
/* A mutex has no priority ceiling. */
static inline int dist_pthread_mutex_getprioceiling(const dist_mutex_t *m, int *ceiling)
{
    (void)m;
    (void)ceiling;
    return EINVAL;
}
static inline int dist_pthread_mutex_setprioceiling(dist_mutex_t *m, int ceiling, int *old)
{
    (void)m;
    (void)ceiling;
    (void)old;
    return EINVAL;
}

static inline int dist_pthread_rwlockattr_init(dist_pthread_rwlockattr_t *a)
{
    a->dl_pshared = PTHREAD_PROCESS_PRIVATE;
    a->dl_kind = 0;
    return dist_rwlockattr_init(&a->dl_a);
}
static inline int dist_pthread_rwlockattr_destroy(dist_pthread_rwlockattr_t *a)
{
    return dist_rwlockattr_destroy(&a->dl_a);
}
static inline int dist_pthread_rwlockattr_setpshared(dist_pthread_rwlockattr_t *a, int pshared)
{
    if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
        return EINVAL;
    a->dl_pshared = pshared;
    return 0;
}
static inline int dist_pthread_rwlockattr_getpshared(const dist_pthread_rwlockattr_t *a,
                                                     int *pshared)
{
    *pshared = a->dl_pshared;
    return 0;
}
/* The preference is kept, not followed: a waiting writer keeps new
 * readers out (distlock's rule). */
static inline int dist_pthread_rwlockattr_setkind_np(dist_pthread_rwlockattr_t *a, int kind)
{
    a->dl_kind = kind;
    return 0;
}
static inline int dist_pthread_rwlockattr_getkind_np(const dist_pthread_rwlockattr_t *a, int *kind)
{
    *kind = a->dl_kind;
    return 0;
}

static inline int dist_pthread_condattr_init(dist_pthread_condattr_t *a)
{
    a->dl_pshared = PTHREAD_PROCESS_PRIVATE;
    return dist_condattr_init(&a->dl_a);
}
static inline int dist_pthread_condattr_destroy(dist_pthread_condattr_t *a)
{
    return dist_condattr_destroy(&a->dl_a);
}
static inline int dist_pthread_condattr_setpshared(dist_pthread_condattr_t *a, int pshared)
{
    if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
        return EINVAL;
    a->dl_pshared = pshared;
    return 0;
}
static inline int dist_pthread_condattr_getpshared(const dist_pthread_condattr_t *a, int *pshared)
{
    *pshared = a->dl_pshared;
    return 0;
}
static inline int dist_pthread_condattr_setclock(dist_pthread_condattr_t *a, clockid_t clock)
{
    return dist_condattr_setclock(&a->dl_a, clock);
}
static inline int dist_pthread_condattr_getclock(const dist_pthread_condattr_t *a, clockid_t *clock)
{
    return dist_condattr_getclock(&a->dl_a, clock);
}

static inline int dist_pthread_barrierattr_init(dist_pthread_barrierattr_t *a)
{
    a->dl_pshared = PTHREAD_PROCESS_PRIVATE;
    return dist_barrierattr_init(&a->dl_a);
}
static inline int dist_pthread_barrierattr_destroy(dist_pthread_barrierattr_t *a)
{
    return dist_barrierattr_destroy(&a->dl_a);
}
static inline int dist_pthread_barrierattr_setpshared(dist_pthread_barrierattr_t *a, int pshared)
{
    if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
        return EINVAL;
    a->dl_pshared = pshared;
    return 0;
}
static inline int dist_pthread_barrierattr_getpshared(const dist_pthread_barrierattr_t *a,
                                                      int *pshared)
{
    *pshared = a->dl_pshared;
    return 0;
}

/* ------------------------------------------------- names and places */

#ifndef DIST_PORT_FILE
#ifdef __FILE_NAME__
#define DIST_PORT_FILE __FILE_NAME__
#else
#define DIST_PORT_FILE __FILE__
#endif
#endif
#define DIST_PRIV_STR_(x) #x
#define DIST_PRIV_STR(x) DIST_PRIV_STR_(x)
/* FILE:LINE of where it is written. */
#define DIST_PRIV_PLACE DIST_PORT_FILE ":" DIST_PRIV_STR(__LINE__)

/* A statically initialized object: `how` DIST_PRIV_NAME_PLACE (distlock.h)
 * for a name that is its place (one object per place and process: checked
 * at its first use), 0 for a name the program gave. */
#define DIST_PRIV_PORT_OBJ(type, name, how)                                             \
    { { .dl_magic = DIST_PRIV_MAGIC_STATIC, .dl_type = (type), .dl_owns_name = (how),   \
        .dl_name = (name) } }

/* DIST_NAME(name, INITIALIZER): a static initializer with its name,
 * e.g. DIST_NAME("ledger", PTHREAD_MUTEX_INITIALIZER). */
#define DIST_NAME(name, initializer) DIST_PRIV_NAMED_##initializer(name)
#define DIST_PRIV_NAMED_PTHREAD_MUTEX_INITIALIZER(n) \
    DIST_PRIV_PORT_OBJ(DIST_MUTEX_ERRORCHECK, (n), 0)
#define DIST_PRIV_NAMED_PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP(n) \
    DIST_PRIV_PORT_OBJ(DIST_MUTEX_RECURSIVE, (n), 0)
#define DIST_PRIV_NAMED_PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP(n) \
    DIST_PRIV_PORT_OBJ(DIST_MUTEX_ERRORCHECK, (n), 0)
#define DIST_PRIV_NAMED_PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP(n) \
    DIST_PRIV_PORT_OBJ(DIST_MUTEX_ERRORCHECK, (n), 0)
#define DIST_PRIV_NAMED_PTHREAD_RWLOCK_INITIALIZER(n) DIST_PRIV_PORT_OBJ(0, (n), 0)
#define DIST_PRIV_NAMED_PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP(n) \
    DIST_PRIV_PORT_OBJ(0, (n), 0)
#define DIST_PRIV_NAMED_PTHREAD_COND_INITIALIZER(n) DIST_PRIV_PORT_OBJ(CLOCK_REALTIME, (n), 0)

#ifdef __cplusplus
}
#endif

/* ------------------------------------------------------------ the port */

/* Library code that implements the calls above includes this header with
 * DIST_PRIV_PORT_IMPL defined: it gets the declarations, not the port. */
#ifndef DIST_PRIV_PORT_IMPL

#undef PTHREAD_MUTEX_INITIALIZER
#undef PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
#undef PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP
#undef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
#undef PTHREAD_RWLOCK_INITIALIZER
#undef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
#undef PTHREAD_COND_INITIALIZER
#define PTHREAD_MUTEX_INITIALIZER \
    DIST_PRIV_PORT_OBJ(DIST_MUTEX_ERRORCHECK, DIST_PRIV_PLACE, DIST_PRIV_NAME_PLACE)
#define PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP \
    DIST_PRIV_PORT_OBJ(DIST_MUTEX_RECURSIVE, DIST_PRIV_PLACE, DIST_PRIV_NAME_PLACE)
#define PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP PTHREAD_MUTEX_INITIALIZER
#define PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP PTHREAD_MUTEX_INITIALIZER
#define PTHREAD_RWLOCK_INITIALIZER DIST_PRIV_PORT_OBJ(0, DIST_PRIV_PLACE, DIST_PRIV_NAME_PLACE)
#define PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP PTHREAD_RWLOCK_INITIALIZER
#define PTHREAD_COND_INITIALIZER \
    DIST_PRIV_PORT_OBJ(CLOCK_REALTIME, DIST_PRIV_PLACE, DIST_PRIV_NAME_PLACE)

/* Types. */
#define pthread_mutex_t dist_mutex_t
#define pthread_rwlock_t dist_rwlock_t
#define pthread_cond_t dist_cond_t
#define pthread_barrier_t dist_barrier_t
#define sem_t dist_sem_t
#define pthread_mutexattr_t dist_pthread_mutexattr_t
#define pthread_rwlockattr_t dist_pthread_rwlockattr_t
#define pthread_condattr_t dist_pthread_condattr_t
#define pthread_barrierattr_t dist_pthread_barrierattr_t

/* Initializations: named by the place of the call (see above). */
#define pthread_mutex_init(m, a) dist_pthread_mutex_init((m), (a), DIST_PRIV_PLACE)
#define pthread_rwlock_init(rw, a) dist_pthread_rwlock_init((rw), (a), DIST_PRIV_PLACE)
#define pthread_cond_init(c, a) dist_pthread_cond_init((c), (a), DIST_PRIV_PLACE)
#define pthread_barrier_init(b, a, n) dist_pthread_barrier_init((b), (a), (n), DIST_PRIV_PLACE)
#define sem_init(s, pshared, v) dist_pthread_sem_init((s), (pshared), (v), DIST_PRIV_PLACE)

/* The rest: the same arguments (so their addresses may be taken). */
#define pthread_mutex_destroy dist_pthread_mutex_destroy
#define pthread_mutex_lock dist_pthread_mutex_lock
#define pthread_mutex_trylock dist_pthread_mutex_trylock
#define pthread_mutex_timedlock dist_pthread_mutex_timedlock
#define pthread_mutex_clocklock dist_pthread_mutex_clocklock
#define pthread_mutex_unlock dist_pthread_mutex_unlock
#define pthread_mutex_consistent dist_pthread_mutex_consistent
#define pthread_mutex_consistent_np dist_pthread_mutex_consistent
#define pthread_mutex_getprioceiling dist_pthread_mutex_getprioceiling
#define pthread_mutex_setprioceiling dist_pthread_mutex_setprioceiling
#define pthread_mutexattr_init dist_pthread_mutexattr_init
#define pthread_mutexattr_destroy dist_pthread_mutexattr_destroy
#define pthread_mutexattr_settype dist_pthread_mutexattr_settype
#define pthread_mutexattr_gettype dist_pthread_mutexattr_gettype
#define pthread_mutexattr_setpshared dist_pthread_mutexattr_setpshared
#define pthread_mutexattr_getpshared dist_pthread_mutexattr_getpshared
#define pthread_mutexattr_setprotocol dist_pthread_mutexattr_setprotocol
#define pthread_mutexattr_getprotocol dist_pthread_mutexattr_getprotocol
#define pthread_mutexattr_setprioceiling dist_pthread_mutexattr_setprioceiling
#define pthread_mutexattr_getprioceiling dist_pthread_mutexattr_getprioceiling
#define pthread_mutexattr_setrobust dist_pthread_mutexattr_setrobust
#define pthread_mutexattr_getrobust dist_pthread_mutexattr_getrobust
#define pthread_mutexattr_setrobust_np dist_pthread_mutexattr_setrobust
#define pthread_mutexattr_getrobust_np dist_pthread_mutexattr_getrobust

#define pthread_rwlock_destroy dist_pthread_rwlock_destroy
#define pthread_rwlock_rdlock dist_pthread_rwlock_rdlock
#define pthread_rwlock_tryrdlock dist_pthread_rwlock_tryrdlock
#define pthread_rwlock_timedrdlock dist_pthread_rwlock_timedrdlock
#define pthread_rwlock_clockrdlock dist_pthread_rwlock_clockrdlock
#define pthread_rwlock_wrlock dist_pthread_rwlock_wrlock
#define pthread_rwlock_trywrlock dist_pthread_rwlock_trywrlock
#define pthread_rwlock_timedwrlock dist_pthread_rwlock_timedwrlock
#define pthread_rwlock_clockwrlock dist_pthread_rwlock_clockwrlock
#define pthread_rwlock_unlock dist_pthread_rwlock_unlock
#define pthread_rwlockattr_init dist_pthread_rwlockattr_init
#define pthread_rwlockattr_destroy dist_pthread_rwlockattr_destroy
#define pthread_rwlockattr_setpshared dist_pthread_rwlockattr_setpshared
#define pthread_rwlockattr_getpshared dist_pthread_rwlockattr_getpshared
#define pthread_rwlockattr_setkind_np dist_pthread_rwlockattr_setkind_np
#define pthread_rwlockattr_getkind_np dist_pthread_rwlockattr_getkind_np

#define pthread_cond_destroy dist_pthread_cond_destroy
#define pthread_cond_wait dist_pthread_cond_wait
#define pthread_cond_timedwait dist_pthread_cond_timedwait
#define pthread_cond_clockwait dist_pthread_cond_clockwait
#define pthread_cond_signal dist_pthread_cond_signal
#define pthread_cond_broadcast dist_pthread_cond_broadcast
#define pthread_condattr_init dist_pthread_condattr_init
#define pthread_condattr_destroy dist_pthread_condattr_destroy
#define pthread_condattr_setpshared dist_pthread_condattr_setpshared
#define pthread_condattr_getpshared dist_pthread_condattr_getpshared
#define pthread_condattr_setclock dist_pthread_condattr_setclock
#define pthread_condattr_getclock dist_pthread_condattr_getclock

#define pthread_barrier_destroy dist_pthread_barrier_destroy
#define pthread_barrier_wait dist_pthread_barrier_wait
#define pthread_barrierattr_init dist_pthread_barrierattr_init
#define pthread_barrierattr_destroy dist_pthread_barrierattr_destroy
#define pthread_barrierattr_setpshared dist_pthread_barrierattr_setpshared
#define pthread_barrierattr_getpshared dist_pthread_barrierattr_getpshared

#define sem_destroy dist_pthread_sem_destroy
#define sem_wait dist_pthread_sem_wait
#define sem_trywait dist_pthread_sem_trywait
#define sem_timedwait dist_pthread_sem_timedwait
#define sem_clockwait dist_pthread_sem_clockwait
#define sem_post dist_pthread_sem_post
#define sem_getvalue dist_pthread_sem_getvalue
#define sem_open dist_pthread_sem_open
#define sem_close dist_pthread_sem_close
#define sem_unlink dist_pthread_sem_unlink

#endif /* DIST_PRIV_PORT_IMPL */

#endif
