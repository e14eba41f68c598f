/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * real.h - the real libc functions behind the wrappers, and the guard
 * (real.c).  Each real function is a pointer dlp_real_<name>, declared by
 * the file that calls it (DLP_REAL_FN: a kind's own, in its wrap_*.c) or
 * here (the few the interposer's own code uses too); until the first
 * call of any of them (or the constructor) resolves them all, each holds
 * a trampoline that does.  Included through preload.h.
 */
#ifndef DLP_REAL_H
#define DLP_REAL_H

#include <pthread.h>
#include <time.h>

#pragma GCC visibility push(hidden)

/* One real function, as real.c resolves it: dlvsym(RTLD_NEXT, name,
 * version) first when version is set (pthread_cond_*: the unversioned
 * lookup may find the old condvar ABI), then dlsym(RTLD_NEXT, name), and
 * `missing` when libc has neither (never on glibc 2.36). */
typedef struct dlp_realfn {
    void **slot;
    const char *name;
    const char *version;
    void *missing;
} dlp_realfn_t;

/* The real function f (its libc name). */
#define DLP_REAL(f) __atomic_load_n(&dlp_real_##f, __ATOMIC_RELAXED)

/* Enters dlp_real_<f> in the list real.c resolves (the linker section
 * dlp_reals: every row declared anywhere in the library is in it; no
 * list to keep). */
#define DLP_REAL_ROW(f, version, missing)                                              \
    static const dlp_realfn_t dlp_row_##f = { (void **)&dlp_real_##f, #f, version,     \
                                              (void *)(missing) };                     \
    static const dlp_realfn_t *const dlp_rowp_##f                                      \
        __attribute__((used, section("dlp_reals"))) = &dlp_row_##f

/* Declares the real function f, `ret f params` called as `f args`:
 * dlp_real_<f> (of `storage`: static, or empty for one declared below),
 * holding at first a trampoline that resolves every real function and
 * calls it.  A call that comes while its own thread resolves them (dlsym
 * may allocate, an allocator may lock a mutex) gets `reentered` instead
 * (an expression of the arguments: the raw system call where there is
 * one; a pthread call succeeds without locking, as only the resolving
 * thread runs code of ours then, before main). */
#define DLP_REAL_FN_AS(storage, ret, f, params, args, version, missing, reentered)     \
    static ret dlp_boot_##f params;                                                    \
    storage ret (*dlp_real_##f) params = dlp_boot_##f;                                 \
    DLP_REAL_ROW(f, version, missing);                                                 \
    static ret dlp_boot_##f params                                                     \
    {                                                                                  \
        if (!dlp_real_resolve())                                                       \
            return reentered;                                                          \
        return DLP_REAL(f) args;                                                       \
    }
#define DLP_REAL_FN(ret, f, params, args, version, missing, reentered) \
    DLP_REAL_FN_AS(static, ret, f, params, args, version, missing, reentered)

/* The real functions the interposer's own code calls as well as the
 * wrappers (its mutexes and conditions, its descriptors): real.c. */
extern int (*dlp_real_pthread_mutex_lock)(pthread_mutex_t *);
extern int (*dlp_real_pthread_mutex_trylock)(pthread_mutex_t *);
extern int (*dlp_real_pthread_mutex_unlock)(pthread_mutex_t *);
extern int (*dlp_real_pthread_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
extern int (*dlp_real_pthread_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *,
                                              const struct timespec *);
extern int (*dlp_real_close)(int);

/* What a pthread call gets if libc lacks the function: ENOSYS. */
int dlp_real_missing(void);

/* Set while a thread runs interposer code that may call back into a
 * wrapper (the library, hiredis, getaddrinfo, dlsym, the constructor) and
 * for the whole life of the interposer's helper threads: a wrapper
 * entered then goes straight to libc. */
extern __thread int dlp_in __attribute__((tls_model("initial-exec")));

/* Resolves every real function now (the constructor: before main).  1 when
 * they are known; 0 when called again from inside the resolution on the
 * same thread (a wrapper re-entered by dlsym's allocator). */
int dlp_real_resolve(void);

#pragma GCC visibility pop

#endif
