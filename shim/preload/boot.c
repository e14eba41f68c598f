/* SPDX-License-Identifier: BSD-3-Clause */
/* boot.c - the interposer's start: the real libc functions, the guard,
 * DISTLOCK_MAP applied before main (or the program stopped with one line;
 * a program without the map's symbols, such as a launcher, goes dormant
 * and is stopped only if it locks), the read-only address table, and the
 * DISTLOCK_ON_ERROR policy.
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
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "dl.h"
#include "preload.h"
#include "process.h"

__thread int dlp_in __attribute__((tls_model("initial-exec")));

int dlp_on_error = DLP_ON_ERROR_WAIT;
int dlp_nfile;
dlp_entry_t *dlp_files[DLP_MAX_ENTRIES];

/* ---------------------------------------------------------------- reals */

static int boot_state;                 /* 0: not yet, 1: resolving, 2: done */
static __thread int boot_self __attribute__((tls_model("initial-exec")));

static void resolve_all(void);

/* 1 when the real functions are known; 0 when called again from inside the
 * resolution on the same thread (the caller then uses its fallback). */
static int dlp_boot(void)
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

#define REAL(f) __atomic_load_n(&dlp_real.f, __ATOMIC_RELAXED)

/* Trampolines: the first call of any wrapper resolves everything. */
#define TRAMP(f, params, args, fallback) \
    static int boot_##f params { if (!dlp_boot()) return fallback; return REAL(f) args; }

TRAMP(mutex_lock, (pthread_mutex_t *m), (m), 0)
TRAMP(mutex_trylock, (pthread_mutex_t *m), (m), 0)
TRAMP(mutex_timedlock, (pthread_mutex_t *m, const struct timespec *t), (m, t), 0)
TRAMP(mutex_clocklock, (pthread_mutex_t *m, clockid_t c, const struct timespec *t), (m, c, t), 0)
TRAMP(mutex_unlock, (pthread_mutex_t *m), (m), 0)
TRAMP(cond_wait, (pthread_cond_t *c, pthread_mutex_t *m), (c, m), 0)
TRAMP(cond_timedwait, (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t), (c, m, t), 0)
TRAMP(cond_clockwait, (pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, const struct timespec *t),
      (c, m, k, t), 0)
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

static int boot_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!dlp_boot())
        return (int)syscall(SYS_fcntl, fd, cmd, arg);
    return REAL(fcntl)(fd, cmd, arg);
}

static int boot_fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!dlp_boot())
        return (int)syscall(SYS_fcntl, fd, cmd, arg);
    return REAL(fcntl64)(fd, cmd, arg);
}

dlp_real_t dlp_real = {
    boot_mutex_lock, boot_mutex_trylock, boot_mutex_timedlock, boot_mutex_clocklock,
    boot_mutex_unlock, boot_cond_wait, boot_cond_timedwait, boot_cond_clockwait,
    boot_rw_rdlock, boot_rw_tryrdlock, boot_rw_timedrdlock, boot_rw_clockrdlock,
    boot_rw_wrlock, boot_rw_trywrlock, boot_rw_timedwrlock, boot_rw_clockwrlock,
    boot_rw_unlock, boot_flock, boot_fcntl, boot_fcntl64, boot_lockf, boot_lockf64, boot_close,
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
    SET(fcntl64, "fcntl64", NULL, REAL(fcntl));
    SET(lockf, "lockf", NULL, sys_lockf);
    SET(lockf64, "lockf64", NULL, sys_lockf64);
    SET(close, "close", NULL, sys_close);
    errno = saved;
}

/* ------------------------------------------------------- address table */

#define DLP_SLOTS 256                   /* > 2 * DLP_MAX_ENTRIES: probes end */

static dlp_entry_t entries[DLP_MAX_ENTRIES];
static int nentries;
static dlp_entry_t *slots[DLP_SLOTS];
uintptr_t dlp_lo, dlp_span;

static size_t slot_of(uintptr_t a)
{
    return (size_t)(((a >> 3) * 0x9E3779B97F4A7C15ull) >> 56) & (DLP_SLOTS - 1);
}

/* A program that lacks the map's symbols (a launcher, or a misspelt
 * symbol) is dormant: its address range is everything, and every lookup
 * lands here and gets this entry, which no wrapper maps; the lock wrappers
 * stop the program with `dormant_why` (dlp_dormant_check) instead. */
static int dormant;
static dlp_entry_t dormant_entry = { .kind = DLP_DORMANT, .name = "" };
static char dormant_why[768];

dlp_entry_t *dlp_lookup_slow(const void *addr)
{
    if (DLP_UNLIKELY(dormant))
        return &dormant_entry;
    uintptr_t a = (uintptr_t)addr;
    for (size_t i = slot_of(a);; i = (i + 1) & (DLP_SLOTS - 1)) {
        dlp_entry_t *e = slots[i];
        if (!e || (uintptr_t)e->addr == a)
            return e;
    }
}

static void table_add(dlp_entry_t *e)
{
    size_t i = slot_of((uintptr_t)e->addr);
    while (slots[i])
        i = (i + 1) & (DLP_SLOTS - 1);
    slots[i] = e;
}

/* ------------------------------------------------------------ messages */

static void vsay(const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "distlock: ");
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void dlp_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

void dlp_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    abort();
}

/* Before main: one line, and the program does not start. */
static void __attribute__((noreturn, format(printf, 1, 2))) stop(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    _exit(1);
}

/* ---------------------------------------------------------- the policy */

#define WARN_EVERY_MS 5000

static uint64_t last_warn;             /* dl_now_ms of the last outage warning */
static pthread_mutex_t quiet_mu = PTHREAD_MUTEX_INITIALIZER;
static int quiet_n, quiet_saved;

static void warn_outage(const char *what)
{
    uint64_t now = dl_now_ms(), last = __atomic_load_n(&last_warn, __ATOMIC_RELAXED);
    if (last && now - last < WARN_EVERY_MS)
        return;
    if (!__atomic_compare_exchange_n(&last_warn, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    dlp_say("%s; waiting for Redis (DISTLOCK_ON_ERROR=wait)", what);
}

/* While threads retry, the library's own per-attempt warning would repeat
 * every DISTLOCK_IO_TIMEOUT_MS: ours (every WARN_EVERY_MS) replaces it. */
static void quiet(int on)
{
    REAL(mutex_lock)(&quiet_mu);
    if (on && quiet_n++ == 0) {
        quiet_saved = dl_log_level;
        if (dl_log_level > DL_LOG_ERROR)
            dl_log_level = DL_LOG_ERROR;
    } else if (!on && --quiet_n == 0) {
        dl_log_level = quiet_saved;
    }
    REAL(mutex_unlock)(&quiet_mu);
}

/* dist_lasterror(), with the lock's name in front unless it names it. */
static const char *why(const dlp_entry_t *e, char *buf, size_t size)
{
    const char *d = dist_lasterror();
    if (!d[0])
        d = "Redis unreachable";
    if (strncmp(d, "lock \"", 6) == 0 || strncmp(d, "unlock \"", 8) == 0)
        snprintf(buf, size, "%s", d);
    else
        snprintf(buf, size, "lock \"%s\": %s", e->name, d);
    return buf;
}

static int dist_call(dlp_entry_t *e, char mode, int how, const struct timespec *abstime)
{
    if (e->kind == DLP_MUTEX) {
        switch (how) {
        case DLP_TRY: return dist_mutex_trylock(&e->d.m);
        case DLP_TIMED: return dist_mutex_timedlock(&e->d.m, abstime);
        default: return dist_mutex_lock(&e->d.m);
        }
    }
    if (mode == 'r') {
        switch (how) {
        case DLP_TRY: return dist_rwlock_tryrdlock(&e->d.rw);
        case DLP_TIMED: return dist_rwlock_timedrdlock(&e->d.rw, abstime);
        default: return dist_rwlock_rdlock(&e->d.rw);
        }
    }
    switch (how) {
    case DLP_TRY: return dist_rwlock_trywrlock(&e->d.rw);
    case DLP_TIMED: return dist_rwlock_timedwrlock(&e->d.rw, abstime);
    default: return dist_rwlock_wrlock(&e->d.rw);
    }
}

static int past(const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec > abstime->tv_sec ||
           (now.tv_sec == abstime->tv_sec && now.tv_nsec >= abstime->tv_nsec);
}

int dlp_dist_acquire(dlp_entry_t *e, char mode, int how, const struct timespec *abstime)
{
    int quieted = 0, rc;
    for (;;) {
        uint64_t t0 = dl_now_ms();
        rc = dist_call(e, mode, how, abstime);
        if (rc == EOWNERDEAD) {
            /* Acquired; legacy code has no way to hear about it. */
            dl_log(DL_LOG_WARN, "lock \"%s\": acquired after the previous holder's lease ran out "
                   "(it crashed or stalled); the protected state may be half-updated", e->name);
            rc = 0;
        }
        if (rc != EIO)
            break;
        char buf[700];
        if (dlp_on_error == DLP_ON_ERROR_ABORT)
            dlp_die("%s (DISTLOCK_ON_ERROR=abort)", why(e, buf, sizeof buf));
        warn_outage(why(e, buf, sizeof buf));
        if (how == DLP_TRY) {
            rc = EBUSY;               /* a try never waits: "not now" */
            break;
        }
        if (how == DLP_TIMED && past(abstime)) {
            rc = ETIMEDOUT;
            break;
        }
        if (!quieted) {
            quiet(1);
            quieted = 1;
        }
        uint64_t spent = dl_now_ms() - t0;
        if (spent < 100)
            dl_sleep_ms((unsigned)(100 - spent));
    }
    if (quieted) {
        quiet(0);
        if (rc == 0)
            dlp_say("lock \"%s\": Redis reachable again", e->name);
    }
    char buf[700];
    if (rc == EINVAL)
        dlp_die("%s", why(e, buf, sizeof buf));
    return rc;
}

int dlp_dist_release(dlp_entry_t *e)
{
    int rc = e->kind == DLP_MUTEX ? dist_mutex_unlock(&e->d.m) : dist_rwlock_unlock(&e->d.rw);
    char buf[700];
    switch (rc) {
    case 0:
    case ENOLCK:                      /* the library has said so; the hold is gone either way */
        return 0;
    case EIO:
        if (dlp_on_error == DLP_ON_ERROR_ABORT)
            dlp_die("%s (DISTLOCK_ON_ERROR=abort)", why(e, buf, sizeof buf));
        return 0;                     /* logged by the library; the hold lapses within a lease */
    default:
        return rc;
    }
}

/* ----------------------------------------------------------- the start */

static int same_name(const dlp_entry_t *a, const dlp_spec_t *s)
{
    return strlen(a->name) == s->namelen && memcmp(a->name, s->name, s->namelen) == 0;
}

/* The path flock() calls will be compared with: /proc/self/fd/N of a
 * descriptor of it reads back its canonical path. */
static char *canonical(const char *target)
{
    char *r = realpath(target, NULL);
    if (r)
        return r;
    const char *slash = strrchr(target, '/');
    char dir[PATH_MAX];
    const char *base = target;
    if (slash) {
        size_t n = (size_t)(slash - target);
        if (n >= sizeof dir)
            return strdup(target);
        memcpy(dir, target, n);
        dir[n] = 0;
        if (n == 0)
            strcpy(dir, "/");
        base = slash + 1;
    } else {
        strcpy(dir, ".");
    }
    char *d = realpath(dir, NULL);
    if (!d)
        return strdup(target);
    size_t len = strlen(d) + strlen(base) + 2;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%s%s%s", d, strcmp(d, "/") ? "/" : "", base);
    free(d);
    return out;
}

static void atfork_child(void)
{
    pthread_mutex_init(&quiet_mu, NULL);
    quiet_n = 0;
    dlp_file_after_fork();
}

/* The program the map applied to (it has the map's symbols) records its
 * executable here for the programs it starts (system(), popen(), helpers):
 * those are known not to be it, so they use the entries they have and
 * skip the rest instead of going dormant.  A launcher before it leaves the
 * environment untouched. */
#define MARKER "DISTLOCK_PRELOAD_EXE"

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Is the entry for this program?  @PROGRAM is matched against the base
 * name of the executable file (/proc/self/exe, symlinks resolved) and of
 * argv[0] (the name it was started by). */
static int for_me(const dlp_spec_t *s, const char *exe, const char *argv0)
{
    if (!s->program)
        return 1;
    return (exe[0] && strcmp(s->program, base_of(exe)) == 0) ||
           (argv0 && argv0[0] && strcmp(s->program, base_of(argv0)) == 0);
}

/* "TARGET@PROGRAM" for the hint that follows a missing symbol. */
static void hint_of(const dlp_spec_t *s, char *buf, size_t size)
{
    snprintf(buf, size, "%.200s@PROGRAM", s->target);
}

static const char *dormant_hint;
static uintptr_t self_lo, self_hi;

void dlp_dormant_check(const char *what, const void *caller)
{
    static int stopping;
    if ((uintptr_t)caller >= self_lo && (uintptr_t)caller < self_hi)
        return;                        /* the library's own, at exit or fork */
    /* One line even if several threads lock at once; the others wait for
     * the exit rather than run on unprotected. */
    if (__atomic_exchange_n(&stopping, 1, __ATOMIC_ACQ_REL))
        for (;;)
            pause();
    stop("%s; stopped at the program's first pthread %s lock (an entry for another program: %s)",
         dormant_why, what, dormant_hint);
}

static void add_file(int i, const dlp_spec_t *s)
{
    dlp_entry_t *e = &entries[nentries];
    memset(e, 0, sizeof *e);
    e->kind = DLP_FLOCK;
    e->name = strndup(s->name, s->namelen);
    e->path = e->name ? canonical(s->target) : NULL;
    if (!e->path)
        stop("DISTLOCK_MAP: out of memory");
    e->pathlen = strlen(e->path);
    for (int k = 0; k < dlp_nfile; k++)
        if (strcmp(dlp_files[k]->path, e->path) == 0)
            stop("DISTLOCK_MAP: entry %d (%s): file %s is already mapped", i + 1, e->name, e->path);
    if (dist_rwlock_init(&e->d.rw, e->name, NULL))
        stop("DISTLOCK_MAP: entry %d: %s", i + 1, dist_lasterror());
    dlp_files[dlp_nfile++] = e;
    dl_log(DL_LOG_DEBUG, "preload: lock \"%s\" = flock on %s", e->name, e->path);
    nentries++;
}

static void add_object(int i, const dlp_spec_t *s, void *addr, const char *where)
{
    dlp_entry_t *e = &entries[nentries];
    memset(e, 0, sizeof *e);
    e->kind = s->kind;
    e->addr = addr;
    e->name = strndup(s->name, s->namelen);
    if (!e->name)
        stop("DISTLOCK_MAP: out of memory");
    for (int k = 0; k < nentries; k++)
        if (entries[k].addr == e->addr)
            stop("DISTLOCK_MAP: entry %d (%s): %s is the same object as lock \"%s\"", i + 1,
                 e->name, s->target, entries[k].name);
    for (int k = 0; k < nentries; k++)
        if (entries[k].kind != DLP_FLOCK && entries[k].kind != e->kind && same_name(&entries[k], s))
            stop("DISTLOCK_MAP: entry %d (%s): name already used with another KIND", i + 1, e->name);
    int rc = s->kind == DLP_MUTEX ? dist_mutex_init(&e->d.m, e->name, NULL)
                                  : dist_rwlock_init(&e->d.rw, e->name, NULL);
    if (rc)
        stop("DISTLOCK_MAP: entry %d: %s", i + 1, dist_lasterror());
    table_add(e);
    dl_log(DL_LOG_DEBUG, "preload: lock \"%s\" = %s %s", e->name,
           s->kind == DLP_MUTEX ? "pthread_mutex_t" : "pthread_rwlock_t", where);
    nentries++;
}

/* Which programs the map applies to (SPEC "Launchers"):
 * - lock files apply in every program: a path means the same file anywhere;
 * - an entry with @PROGRAM applies only in programs of that name, and there
 *   it must resolve, or the program stops now;
 * - the other mutex/rwlock entries: a program that has some of the map's
 *   symbols (any symbol found, or for a map of offsets only, an offset
 *   that fits) is the program the map is for: every such entry must
 *   resolve, or it stops now.  A program that has none of them is
 *   dormant: a launcher (timeout, env, sh...) runs and starts the next
 *   program with the environment untouched; a program that locks a
 *   pthread mutex or rwlock anyway (a misspelt symbol) stops at that first
 *   lock call with the reason the start would have given;
 * - in a program started by the one the map applied to (MARKER), missing
 *   entries are skipped. */
static void apply_map(const char *map, const char *argv0)
{
    static char buf[65536];
    static dlp_spec_t specs[DLP_MAX_ENTRIES];
    static void *addrs[DLP_MAX_ENTRIES];
    static char wheres[DLP_MAX_ENTRIES][320];
    static char hint[256];
    enum { SKIP, HAVE, LACK };
    int state[DLP_MAX_ENTRIES];
    char err[512];
    int n = 0;
    if (dlp_map_parse(map, buf, sizeof buf, specs, DLP_MAX_ENTRIES, &n, err, sizeof err))
        stop("DISTLOCK_MAP: %s", err);

    /* The rest of the configuration, checked now rather than at the first
     * lock, where legacy code could not take an error. */
    static dl_config_t cfg;
    if (dl_config_load(&cfg))
        stop("%s", dist_lasterror());
    dl_log_level = cfg.log_level;

    /* The library's process state now, before main: its pthread_atfork
     * child handler is then registered before any of the program's, so a
     * program's child handler that unlocks a mapped mutex (the classic
     * atfork pattern) finds the library already reset for the child, not
     * talking on the parent's connection. */
    int perr = 0;
    if (!dl_proc_get(&perr))
        stop("%s", dist_lasterror());

    const char *exe = dlp_exe_path();
    const char *marker = secure_getenv(MARKER);
    int lenient = marker && strcmp(marker, exe) != 0;

    int named = 0, have_named = 0, have_off = 0, lack = -1;
    char lack_err[512] = "";
    for (int i = 0; i < n; i++) {
        const dlp_spec_t *s = &specs[i];
        state[i] = SKIP;
        if (!for_me(s, exe, argv0))
            continue;
        if (s->kind == DLP_FLOCK) {
            add_file(i, s);
            continue;
        }
        size_t need = s->kind == DLP_MUTEX ? sizeof(pthread_mutex_t) : sizeof(pthread_rwlock_t);
        int rc = dlp_elf_resolve(s, need, &addrs[i], wheres[i], sizeof wheres[i], err, sizeof err);
        named += !s->is_offset;
        if (rc == 0) {
            state[i] = HAVE;
            have_named += !s->is_offset;
            have_off += s->is_offset;
        } else if (s->program) {
            stop("DISTLOCK_MAP: entry %d (%.*s): %s", i + 1, (int)s->namelen, s->name, err);
        } else if (lenient) {
            dl_log(DL_LOG_DEBUG, "preload: %s: skipped in %s", err, exe);
        } else if (rc < 0) {
            stop("DISTLOCK_MAP: entry %d (%.*s): %s", i + 1, (int)s->namelen, s->name, err);
        } else {
            state[i] = LACK;
            if (lack < 0) {
                lack = i;
                snprintf(lack_err, sizeof lack_err, "%s", err);
            }
        }
    }

    if (lack >= 0) {
        const dlp_spec_t *s = &specs[lack];
        hint_of(s, hint, sizeof hint);
        if (have_named || (!named && have_off))
            stop("DISTLOCK_MAP: entry %d (%.*s): %s (an entry for another program: %s)", lack + 1,
                 (int)s->namelen, s->name, lack_err, hint);
        snprintf(dormant_why, sizeof dormant_why, "DISTLOCK_MAP: entry %d (%.*s): %s", lack + 1,
                 (int)(s->namelen < 100 ? s->namelen : 100), s->name, lack_err);
        dormant_hint = hint;
        dlp_self_range(&self_lo, &self_hi);
        dl_log(DL_LOG_DEBUG, "preload: %s has none of the map's symbols: it may start the "
               "program that has them, and stops if it locks a pthread mutex or rwlock",
               exe[0] ? exe : "this program");
        /* Published last: every lookup from now on is the dormant entry. */
        __atomic_store_n(&dormant, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&dlp_lo, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&dlp_span, UINTPTR_MAX, __ATOMIC_RELEASE);
        return;
    }

    uintptr_t lo = UINTPTR_MAX, hi = 0;
    int nsym = 0;
    for (int i = 0; i < n; i++) {
        if (state[i] != HAVE)
            continue;
        add_object(i, &specs[i], addrs[i], wheres[i]);
        uintptr_t a = (uintptr_t)addrs[i];
        if (a < lo)
            lo = a;
        if (a > hi)
            hi = a;
        nsym++;
    }
    if (have_named && !marker && exe[0])
        setenv(MARKER, exe, 1);
    if (nsym) {
        /* Published last: wrappers see either no table or all of it. */
        __atomic_store_n(&dlp_lo, lo, __ATOMIC_RELAXED);
        __atomic_store_n(&dlp_span, hi - lo + 1, __ATOMIC_RELEASE);
    }
}

__attribute__((constructor)) static void dlp_start(void)
{
    dlp_in = 1;
    dlp_boot();
    const char *oe = secure_getenv("DISTLOCK_ON_ERROR");
    if (oe && strcmp(oe, "wait") == 0)
        dlp_on_error = DLP_ON_ERROR_WAIT;
    else if (oe && strcmp(oe, "abort") == 0)
        dlp_on_error = DLP_ON_ERROR_ABORT;
    else if (oe)
        stop("DISTLOCK_ON_ERROR=\"%.40s\": expected wait or abort", oe);

    /* secure_getenv: a setuid program ignores the map. */
    const char *map = secure_getenv("DISTLOCK_MAP");
    if (map && *map) {
        dlp_file_init();
        apply_map(map, program_invocation_name);
        pthread_atfork(NULL, NULL, atfork_child);
    }
    dlp_in = 0;
}

__attribute__((destructor)) static void dlp_end(void)
{
    /* POSIX file locks end with the process: so do their distributed holds,
     * rather than lapsing a lease later. */
    if (dlp_nfile) {
        dlp_in = 1;
        dlp_file_release_all();
        dlp_in = 0;
    }
}
