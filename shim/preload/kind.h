/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kind.h - the seam of the interposer: a kind of mapped object (mutex,
 * rwlock, cond, barrier, flock, sem) is its wrappers and one dlp_kind_t,
 * both in its own file (wrap_<kind>.c); the rest of the interposer reads the kind
 * through this table and names no kind.  Included through preload.h.
 *
 * What a kind tells:
 *   - its KIND word in DISTLOCK_MAP, and how its TARGET names the object:
 *     a global of the program (a symbol or exe+0xOFFSET, found by
 *     elfsym.c and entered in the address table), a file path, or a name
 *     (sem_open's /NAME);
 *   - whose names its NAME is among in Redis (a semaphore "x" is not the
 *     lock "x"), and whether one NAME has one shape there (a name is a
 *     mutex, or a read-write lock);
 *   - its hooks: what an entry needs before main, once all entries are
 *     made, after fork and at exit, and (a lock) the distributed half of
 *     its acquisitions and releases, which policy.c runs under
 *     DISTLOCK_ON_ERROR.
 * Its real libc functions it declares itself (DLP_REAL_FN, real.h): real.c
 * finds and resolves every one of them.
 *
 * A new kind: a file wrap_<kind>.c with its wrappers (DLP_EXPORT: the
 * build exports exactly those) and its dlp_kind_t, and its word in
 * DLP_KINDS below.
 */
#ifndef DLP_KIND_H
#define DLP_KIND_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "keys.h"

#pragma GCC visibility push(hidden)

typedef struct dlp_entry dlp_entry_t;

/* How a kind's TARGET names its object. */
enum {
    DLP_BY_SYMBOL = 1,        /* a global of the program: SYMBOL or exe+0xOFFSET */
    DLP_BY_PATH,              /* a file path (canonical) */
    DLP_BY_NAME,              /* /NAME, as sem_open(3) takes it (kept without its '/') */
};

/* The distributed half of a lock kind's calls (policy.c's loop runs
 * them): `how` DLP_BLOCK, DLP_TRY or DLP_TIMED (policy.h: then until
 * abstime on clk, CLOCK_REALTIME or CLOCK_MONOTONIC, with the library's
 * clock calls), mode 'w' or 'r'.  acquire_stoppable (NULL: none) ends
 * with EINTR once *stop is set and interrupt(e) called.  robust (NULL:
 * never): 1 when the program hears EOWNERDEAD itself (a robust mutex,
 * which it makes consistent); else the policy takes it as acquired. */
typedef struct dlp_lockops {
    int (*acquire)(dlp_entry_t *e, char mode, int how, clockid_t clk,
                   const struct timespec *abstime);
    int (*acquire_stoppable)(dlp_entry_t *e, char mode, const int *stop);
    void (*interrupt)(dlp_entry_t *e);
    int (*release)(dlp_entry_t *e);
    int (*robust)(dlp_entry_t *e);
} dlp_lockops_t;

typedef struct dlp_kind {
    const char *word;         /* its KIND in DISTLOCK_MAP */
    int target;               /* DLP_BY_* */
    const char *ctype;        /* DLP_BY_SYMBOL: the C type of the global ("pthread_mutex_t") */
    size_t csize;             /*   its size: a smaller symbol is refused, */
    size_t calign;            /*   its alignment: a misaligned address too */
    const char *what;         /* what NAME names, in messages: "lock", "semaphore" */
    int space;                /* DL_KIND_* (keys.h): whose names NAME is among */
    char shape;               /* DL_KIND_LOCK: 'm' a mutex, 'r' a read-write lock; a
                                 NAME has one shape */
    int unique;               /* no two entries of the kind may share a NAME */
    /* Before main, per entry of this program (e->name and its target set):
     * makes e's object.  0, or an error code with dist_lasterror() set
     * (the program stops).  NULL: nothing to make. */
    int (*init)(dlp_entry_t *e);
    /* Before main, once every entry is made, if the kind has any here. */
    void (*ready)(void);
    /* In a forked child (the interposer's pthread_atfork handler). */
    void (*after_fork)(void);
    /* The interposer's destructor, at exit. */
    void (*at_exit)(void);
    const dlp_lockops_t *lock; /* a lock kind's distributed half; NULL for others */
    /* A loss dist_onlost tells (name, fence) that is one of this kind's
     * entries: writes what to say in line and returns 1; else 0.  NULL:
     * the lock's words are right. */
    int (*lost_words)(const char *name, size_t namelen, uint64_t fence, char *line, size_t size);
} dlp_kind_t;

/* Every kind, one word each, in the order messages list them: each is
 * the dlp_kind_t dlp_kind_<word> of its wrap_*.c. */
#define DLP_KINDS(X) X(mutex) X(rwlock) X(flock) X(sem) X(cond) X(barrier)

#define DLP_KIND_DECLARE(w) extern const dlp_kind_t dlp_kind_##w;
DLP_KINDS(DLP_KIND_DECLARE)
#undef DLP_KIND_DECLARE

/* The kinds above, NULL-terminated (kind.c). */
extern const dlp_kind_t *const dlp_kinds[];

/* The read-write lock's distributed half (wrap_rwlock.c), which the file
 * locks' holds are too. */
extern const dlp_lockops_t dlp_rwlock_ops;

/* An entry's object, of type T (the kind's: dist_mutex_t ...): a kind
 * states that T fits with DLP_OBJ_FITS(T). */
#define DLP_OBJ_MAX 256
#define DLP_OBJ(e, T) ((T *)(void *)(e)->obj.bytes)
#define DLP_OBJ_FITS(T) \
    _Static_assert(sizeof(T) <= DLP_OBJ_MAX, #T " does not fit in an entry (DLP_OBJ_MAX)")

#pragma GCC visibility pop

#endif
