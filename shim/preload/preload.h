/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * preload.h - internals of libdistlock_preload.so, the LD_PRELOAD
 * interposer that turns chosen pthread mutexes, rwlocks and lock files of
 * an unmodified program into distributed locks (SPEC "The interposer").
 *
 *   map.c      DISTLOCK_MAP text -> entries (pure parsing, no lookups)
 *   elfsym.c   symbol name or exe+0xOFFSET -> address in this process
 *   boot.c     the real libc functions, the guard, the constructor that
 *              decides which entries are this program's (launchers, @PROGRAM)
 *              and builds the read-only address table, the error policy
 *   wrap_pthread.c   mutex, condvar and rwlock wrappers
 *   filelock.c       the process-owned distributed holds of file locks
 *   wrap_file.c      flock, fcntl, fcntl64, lockf, lockf64, close
 *
 * The rule every wrapper follows: anything not in the map costs one range
 * check (and, inside the range, one hash probe) and goes straight to libc,
 * with no lock and no allocation.  (A dormant program's range is
 * everything: its first lock call ends it.)
 */
#ifndef DLP_PRELOAD_H
#define DLP_PRELOAD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "distlock.h"

/* Everything declared here is internal to the library: hidden, so the hot
 * path reads its globals PC-relative instead of through the GOT. */
#pragma GCC visibility push(hidden)

/* Exported, unversioned: every version of a call binds to the wrapper. */
#define DLP_EXPORT __attribute__((visibility("default")))
#define DLP_LIKELY(x) __builtin_expect(!!(x), 1)
#define DLP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- map.c ---- */
enum { DLP_DORMANT = 0, DLP_MUTEX, DLP_RWLOCK, DLP_FLOCK };

#define DLP_MAX_ENTRIES 64

typedef struct dlp_spec {
    const char *name;         /* lock name (points into the parser's copy) */
    size_t namelen;
    int kind;
    const char *target;       /* symbol, "exe+0x..." or path */
    int is_offset;            /* target is exe+0xOFFSET */
    uintptr_t offset;
    const char *program;      /* @PROGRAM: only programs of this base name; NULL: all */
} dlp_spec_t;

/* Parses text into specs (the strings point into buf, a modifiable copy of
 * the map of bufsize bytes).  0, or -1 with a one-line reason in err. */
int dlp_map_parse(const char *text, char *buf, size_t bufsize, dlp_spec_t *specs, int max,
                  int *n, char *err, size_t errlen);

/* ---- elfsym.c ---- */
/* Resolves a global (exported or not, global or file-static) by name in the
 * executable, then in each library loaded at start, or exe+offset.  `need`
 * is the size of the object the caller expects.  0 with *addr and a short
 * description of where it was found in `where`; 1 when this program lacks
 * it (no such symbol; an offset that is no writable, aligned place of
 * this executable); -1 when the symbol is there but cannot be the lock
 * (not a variable, too small, defined twice, misplaced).  A one-line
 * reason in err for 1 and -1. */
int dlp_elf_resolve(const dlp_spec_t *s, size_t need, void **addr, char *where, size_t wlen,
                    char *err, size_t errlen);
/* The executable's path ("" if unknown). */
const char *dlp_exe_path(void);
/* [lo, hi): where this library is loaded (its own code calls the
 * wrappers too: from its destructors and fork handlers). */
void dlp_self_range(uintptr_t *lo, uintptr_t *hi);

/* ---- boot.c ---- */
typedef struct dlp_entry {
    int kind;
    char *name;               /* NUL-terminated copy of the lock name */
    void *addr;               /* DLP_MUTEX / DLP_RWLOCK: the mapped global */
    char *path;               /* DLP_FLOCK: the canonical path */
    size_t pathlen;
    pid_t holder_pid;         /* process of the last distributed acquisition */
    union {
        dist_mutex_t m;
        dist_rwlock_t rw;
    } d;
} dlp_entry_t;

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
} dlp_real_t;

extern dlp_real_t dlp_real;

/* Set while a thread runs interposer code that may call back into a
 * wrapper (the library, hiredis, getaddrinfo, dlsym, the constructor) and
 * for the whole life of the file-lock helper threads: a wrapper entered
 * then goes straight to libc. */
extern __thread int dlp_in __attribute__((tls_model("initial-exec")));

/* The address table: mapped mutexes and rwlocks, read-only after the
 * constructor.  Addresses outside [dlp_lo, dlp_lo + dlp_span) are not
 * mapped; that one comparison is the whole cost for most calls. */
extern uintptr_t dlp_lo, dlp_span;
dlp_entry_t *dlp_lookup_slow(const void *addr);

static inline dlp_entry_t *dlp_lookup(const void *addr)
{
    if (DLP_LIKELY((uintptr_t)addr - dlp_lo >= dlp_span))
        return NULL;
    return dlp_lookup_slow(addr);
}

/* A lock call reached a wrapper in a program that has none of the map's
 * symbols (dlp_lookup gave a DLP_DORMANT entry).  Unless the call is the
 * interposer's own (dlp_in, or `caller`, the wrapper's return address, is
 * in this library), the program stops here with the one-line reason (exit
 * status 1), before the lock is taken.  `what`: "mutex" or "rwlock". */
void dlp_dormant_check(const char *what, const void *caller);

/* File entries (DLP_FLOCK); dlp_nfile == 0 makes every file wrapper a
 * plain call. */
extern int dlp_nfile;
extern dlp_entry_t *dlp_files[DLP_MAX_ENTRIES];

/* DISTLOCK_ON_ERROR */
enum { DLP_ON_ERROR_WAIT, DLP_ON_ERROR_ABORT };
extern int dlp_on_error;

/* How a distributed call is made: blocking, one attempt, or until abstime
 * (CLOCK_REALTIME). */
enum { DLP_BLOCK, DLP_TRY, DLP_TIMED };

/* The distributed half of an acquisition, with the error policy applied:
 * EIO (Redis unreachable) is retried (wait) or fatal (abort); EOWNERDEAD
 * counts as acquired.  Returns 0, EBUSY (try), ETIMEDOUT (timed), EAGAIN,
 * ENOMEM, EDEADLK.  mode 'w' or 'r'; for DLP_MUTEX entries only 'w'. */
int dlp_dist_acquire(dlp_entry_t *e, char mode, int how, const struct timespec *abstime);
/* The distributed half of a release; EIO under `abort` is fatal, ENOLCK
 * and EIO under `wait` are logged.  Returns 0 or EPERM (this thread held
 * nothing: the caller decides whether that matters). */
int dlp_dist_release(dlp_entry_t *e);

/* Prints "distlock: <msg>" as one line on stderr (one write). */
void dlp_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, then abort(). */
void dlp_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- filelock.c ---- */
enum { DLP_FL_FLOCK = 1, DLP_FL_POSIX, DLP_FL_OFD };

/* Number of distributed file-lock holds of this process: when 0, close()
 * is a plain call. */
extern int dlp_fheld;

/* Takes (or converts to) mode 'r'/'w' the process's distributed hold for
 * a local lock of `kind` just taken on fd.  0, EWOULDBLOCK (nonblock and
 * held elsewhere), ENOLCK (no room, no helper thread). */
int dlp_file_acquire(dlp_entry_t *e, int kind, int fd, dev_t dev, ino_t ino, char mode, int nonblock);
/* Ends the process's distributed hold for a lock of `kind` on fd (found by
 * descriptor for flock/OFD locks, by file for POSIX locks); 0 if none. */
void dlp_file_release(int kind, int fd, dev_t dev, ino_t ino);
/* close(fd) happened: ends what the kernel released with it. */
void dlp_file_closed(int fd, dev_t dev, ino_t ino);
/* At exit: ends every hold. */
void dlp_file_release_all(void);
/* In a forked child: the parent's holds are not ours. */
void dlp_file_after_fork(void);
void dlp_file_init(void);

#pragma GCC visibility pop

#endif
