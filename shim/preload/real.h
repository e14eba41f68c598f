/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * real.h - the real libc functions behind the wrappers, and the guard
 * (real.c).  Until the first call of any wrapper (or the constructor)
 * resolves them, each pointer holds a trampoline that resolves them all.
 * Included through preload.h.
 */
#ifndef DLP_REAL_H
#define DLP_REAL_H

#include <pthread.h>
#include <semaphore.h>
#include <sys/types.h>
#include <time.h>

#pragma GCC visibility push(hidden)

/* The libc functions the wrappers call; filled once, before main (or on
 * the first call of any wrapper, if that comes earlier). */
typedef struct dlp_real {
    int (*mutex_lock)(pthread_mutex_t *);
    int (*mutex_trylock)(pthread_mutex_t *);
    int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
    int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*mutex_unlock)(pthread_mutex_t *);
    int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
    int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*rw_rdlock)(pthread_rwlock_t *);
    int (*rw_tryrdlock)(pthread_rwlock_t *);
    int (*rw_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
    int (*rw_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*rw_wrlock)(pthread_rwlock_t *);
    int (*rw_trywrlock)(pthread_rwlock_t *);
    int (*rw_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
    int (*rw_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*rw_unlock)(pthread_rwlock_t *);
    int (*flock)(int, int);
    int (*fcntl)(int, int, ...);
    int (*fcntl64)(int, int, ...);
    int (*lockf)(int, int, off_t);
    int (*lockf64)(int, int, off64_t);
    int (*close)(int);
    sem_t *(*sem_open)(const char *, int, ...);
    int (*sem_close)(sem_t *);
    int (*sem_wait)(sem_t *);
    int (*sem_trywait)(sem_t *);
    int (*sem_timedwait)(sem_t *, const struct timespec *);
    int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
    int (*sem_post)(sem_t *);
    int (*sem_getvalue)(sem_t *, int *);
    int (*cond_signal)(pthread_cond_t *);
    int (*cond_broadcast)(pthread_cond_t *);
} dlp_real_t;

extern dlp_real_t dlp_real;

/* Set while a thread runs interposer code that may call back into a
 * wrapper (the library, hiredis, getaddrinfo, dlsym, the constructor) and
 * for the whole life of the file-lock helper threads: a wrapper entered
 * then goes straight to libc. */
extern __thread int dlp_in __attribute__((tls_model("initial-exec")));

/* The real function f of dlp_real. */
#define DLP_REAL(f) __atomic_load_n(&dlp_real.f, __ATOMIC_RELAXED)

/* Resolves every real function now (the constructor: before main).  1 when
 * they are known; 0 when called again from inside the resolution on the
 * same thread (a wrapper re-entered by dlsym's allocator). */
int dlp_real_resolve(void);

#pragma GCC visibility pop

#endif
