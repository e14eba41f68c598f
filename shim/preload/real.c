/* SPDX-License-Identifier: BSD-3-Clause */
/* real.c - the real libc functions behind the wrappers (real.h), and the
 * guard.
 *
 * Real functions come from dlsym(RTLD_NEXT) (pthread_cond_* by dlvsym with
 * GLIBC_2.3.2: the unversioned lookup may find the old condvar ABI).  Until
 * they are known, each pointer holds a trampoline that resolves all of them
 * first.  dlsym may allocate, and an allocator may lock a mutex: a wrapper
 * re-entered while its own thread resolves gets a fallback instead of
 * recursing (file calls: the raw system call; pthread calls: success
 * without locking, as only the resolving thread is running code of ours
 * at that moment, before main). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

__thread int dlp_in __attribute__((tls_model("initial-exec")));

static int boot_state;                 /* 0: not yet, 1: resolving, 2: done */
static __thread int boot_self __attribute__((tls_model("initial-exec")));

static void resolve_all(void);

int dlp_real_resolve(void)
{
    if (DLP_LIKELY(__atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) == 2))
        return 1;
    if (boot_self)
        return 0;
    int zero = 0;
    if (__atomic_compare_exchange_n(&boot_state, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        boot_self = 1;
        resolve_all();
        boot_self = 0;
        __atomic_store_n(&boot_state, 2, __ATOMIC_RELEASE);
        return 1;
    }
    while (__atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) != 2)
        sched_yield();
    return 1;
}

/* Trampolines: the first call of any wrapper resolves everything. */
#define TRAMP(f, params, args, fallback) \
    static int boot_##f params { if (!dlp_real_resolve()) return fallback; return DLP_REAL(f) args; }

TRAMP(mutex_lock, (pthread_mutex_t *m), (m), 0)
TRAMP(mutex_trylock, (pthread_mutex_t *m), (m), 0)
TRAMP(mutex_timedlock, (pthread_mutex_t *m, const struct timespec *t), (m, t), 0)
TRAMP(mutex_clocklock, (pthread_mutex_t *m, clockid_t c, const struct timespec *t), (m, c, t), 0)
TRAMP(mutex_unlock, (pthread_mutex_t *m), (m), 0)
TRAMP(cond_wait, (pthread_cond_t *c, pthread_mutex_t *m), (c, m), 0)
TRAMP(cond_timedwait, (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t), (c, m, t), 0)
TRAMP(cond_clockwait, (pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, const struct timespec *t),
      (c, m, k, t), 0)
TRAMP(cond_signal, (pthread_cond_t *c), (c), 0)
TRAMP(cond_broadcast, (pthread_cond_t *c), (c), 0)
TRAMP(rw_rdlock, (pthread_rwlock_t *r), (r), 0)
TRAMP(rw_tryrdlock, (pthread_rwlock_t *r), (r), 0)
TRAMP(rw_timedrdlock, (pthread_rwlock_t *r, const struct timespec *t), (r, t), 0)
TRAMP(rw_clockrdlock, (pthread_rwlock_t *r, clockid_t c, const struct timespec *t), (r, c, t), 0)
TRAMP(rw_wrlock, (pthread_rwlock_t *r), (r), 0)
TRAMP(rw_trywrlock, (pthread_rwlock_t *r), (r), 0)
TRAMP(rw_timedwrlock, (pthread_rwlock_t *r, const struct timespec *t), (r, t), 0)
TRAMP(rw_clockwrlock, (pthread_rwlock_t *r, clockid_t c, const struct timespec *t), (r, c, t), 0)
TRAMP(rw_unlock, (pthread_rwlock_t *r), (r), 0)
TRAMP(flock, (int fd, int op), (fd, op), (int)syscall(SYS_flock, fd, op))
TRAMP(close, (int fd), (fd), (int)syscall(SYS_close, fd))
/* The semaphore calls are not made by dlsym's allocator: no fallback is
 * ever used (ENOSYS, as a libc without them would give). */
TRAMP(sem_close, (sem_t *s), (s), (errno = ENOSYS, -1))
TRAMP(sem_wait, (sem_t *s), (s), (errno = ENOSYS, -1))
TRAMP(sem_trywait, (sem_t *s), (s), (errno = ENOSYS, -1))
TRAMP(sem_timedwait, (sem_t *s, const struct timespec *t), (s, t), (errno = ENOSYS, -1))
TRAMP(sem_clockwait, (sem_t *s, clockid_t c, const struct timespec *t), (s, c, t), (errno = ENOSYS, -1))
TRAMP(sem_post, (sem_t *s), (s), (errno = ENOSYS, -1))
TRAMP(sem_getvalue, (sem_t *s, int *v), (s, v), (errno = ENOSYS, -1))

/* sem_open's mode and value are there only with O_CREAT; passed on alike. */
static sem_t *boot_sem_open(const char *name, int oflag, ...)
{
    va_list ap;
    va_start(ap, oflag);
    mode_t mode = (oflag & O_CREAT) ? va_arg(ap, mode_t) : 0;
    unsigned value = (oflag & O_CREAT) ? va_arg(ap, unsigned) : 0;
    va_end(ap);
    if (!dlp_real_resolve()) {
        errno = ENOSYS;
        return SEM_FAILED;
    }
    return DLP_REAL(sem_open)(name, oflag, mode, value);
}

static int sys_lockf(int fd, int cmd, off_t len)
{
    struct flock fl = { .l_whence = SEEK_CUR, .l_start = 0, .l_len = len };
    switch (cmd) {
    case F_ULOCK: fl.l_type = F_UNLCK; return (int)syscall(SYS_fcntl, fd, F_SETLK, &fl);
    case F_LOCK: fl.l_type = F_WRLCK; return (int)syscall(SYS_fcntl, fd, F_SETLKW, &fl);
    case F_TLOCK: fl.l_type = F_WRLCK; return (int)syscall(SYS_fcntl, fd, F_SETLK, &fl);
    case F_TEST:
        fl.l_type = F_WRLCK;
        if (syscall(SYS_fcntl, fd, F_GETLK, &fl) < 0)
            return -1;
        if (fl.l_type == F_UNLCK || fl.l_pid == getpid())
            return 0;
        errno = EACCES;
        return -1;
    default: errno = EINVAL; return -1;
    }
}
TRAMP(lockf, (int fd, int cmd, off_t len), (fd, cmd, len), sys_lockf(fd, cmd, len))
TRAMP(lockf64, (int fd, int cmd, off64_t len), (fd, cmd, len), sys_lockf(fd, cmd, (off_t)len))

/* fcntl's third argument is an int or a pointer, passed alike: taken as a
 * pointer and handed on. */
#define TRAMP_FCNTL(f)                                  \
    static int boot_##f(int fd, int cmd, ...)           \
    {                                                   \
        va_list ap;                                     \
        va_start(ap, cmd);                              \
        void *arg = va_arg(ap, void *);                 \
        va_end(ap);                                     \
        if (!dlp_real_resolve())                        \
            return (int)syscall(SYS_fcntl, fd, cmd, arg); \
        return DLP_REAL(f)(fd, cmd, arg);               \
    }

TRAMP_FCNTL(fcntl)
TRAMP_FCNTL(fcntl64)

dlp_real_t dlp_real = {
    boot_mutex_lock, boot_mutex_trylock, boot_mutex_timedlock, boot_mutex_clocklock,
    boot_mutex_unlock, boot_cond_wait, boot_cond_timedwait, boot_cond_clockwait,
    boot_rw_rdlock, boot_rw_tryrdlock, boot_rw_timedrdlock, boot_rw_clockrdlock,
    boot_rw_wrlock, boot_rw_trywrlock, boot_rw_timedwrlock, boot_rw_clockwrlock,
    boot_rw_unlock, boot_flock, boot_fcntl, boot_fcntl64, boot_lockf, boot_lockf64, boot_close,
    boot_sem_open, boot_sem_close, boot_sem_wait, boot_sem_trywait, boot_sem_timedwait,
    boot_sem_clockwait, boot_sem_post, boot_sem_getvalue,
    boot_cond_signal, boot_cond_broadcast,
};

/* What a call gets if libc lacks the function (not on glibc 2.36). */
static int missing(void) { return ENOSYS; }
static int sys_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return (int)syscall(SYS_fcntl, fd, cmd, arg);
}
static int sys_flock(int fd, int op) { return (int)syscall(SYS_flock, fd, op); }
static int sys_close(int fd) { return (int)syscall(SYS_close, fd); }
static int sys_lockf64(int fd, int cmd, off64_t len) { return sys_lockf(fd, cmd, (off_t)len); }
static int sem_missing(void) { errno = ENOSYS; return -1; }
static sem_t *sem_open_missing(void) { errno = ENOSYS; return SEM_FAILED; }

static void *next(const char *name, const char *version, void *fallback)
{
    void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
    if (!p)
        p = dlsym(RTLD_NEXT, name);
    return p ? p : fallback;
}

#define SET(f, name, version, fallback) \
    __atomic_store_n((void **)&dlp_real.f, next(name, version, (void *)(fallback)), __ATOMIC_RELAXED)

static void resolve_all(void)
{
    int saved = errno;
    SET(mutex_lock, "pthread_mutex_lock", NULL, missing);
    SET(mutex_trylock, "pthread_mutex_trylock", NULL, missing);
    SET(mutex_timedlock, "pthread_mutex_timedlock", NULL, missing);
    SET(mutex_clocklock, "pthread_mutex_clocklock", NULL, missing);
    SET(mutex_unlock, "pthread_mutex_unlock", NULL, missing);
    SET(cond_wait, "pthread_cond_wait", "GLIBC_2.3.2", missing);
    SET(cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2", missing);
    SET(cond_clockwait, "pthread_cond_clockwait", NULL, missing);
    SET(rw_rdlock, "pthread_rwlock_rdlock", NULL, missing);
    SET(rw_tryrdlock, "pthread_rwlock_tryrdlock", NULL, missing);
    SET(rw_timedrdlock, "pthread_rwlock_timedrdlock", NULL, missing);
    SET(rw_clockrdlock, "pthread_rwlock_clockrdlock", NULL, missing);
    SET(rw_wrlock, "pthread_rwlock_wrlock", NULL, missing);
    SET(rw_trywrlock, "pthread_rwlock_trywrlock", NULL, missing);
    SET(rw_timedwrlock, "pthread_rwlock_timedwrlock", NULL, missing);
    SET(rw_clockwrlock, "pthread_rwlock_clockwrlock", NULL, missing);
    SET(rw_unlock, "pthread_rwlock_unlock", NULL, missing);
    SET(flock, "flock", NULL, sys_flock);
    SET(fcntl, "fcntl", NULL, sys_fcntl);
    SET(fcntl64, "fcntl64", NULL, DLP_REAL(fcntl));
    SET(lockf, "lockf", NULL, sys_lockf);
    SET(lockf64, "lockf64", NULL, sys_lockf64);
    SET(close, "close", NULL, sys_close);
    SET(sem_open, "sem_open", NULL, sem_open_missing);
    SET(sem_close, "sem_close", NULL, sem_missing);
    SET(sem_wait, "sem_wait", NULL, sem_missing);
    SET(sem_trywait, "sem_trywait", NULL, sem_missing);
    SET(sem_timedwait, "sem_timedwait", NULL, sem_missing);
    SET(sem_clockwait, "sem_clockwait", NULL, sem_missing);
    SET(sem_post, "sem_post", NULL, sem_missing);
    SET(sem_getvalue, "sem_getvalue", NULL, sem_missing);
    SET(cond_signal, "pthread_cond_signal", "GLIBC_2.3.2", missing);
    SET(cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2", missing);
    errno = saved;
}

