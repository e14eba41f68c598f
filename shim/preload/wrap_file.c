/* SPDX-License-Identifier: BSD-3-Clause */
/* wrap_file.c - the flock kind: flock, fcntl, fcntl64, lockf, lockf64
 * and close.
 *
 * `NAME=flock:PATH`: a whole-file lock on a descriptor whose real path (/proc/self/fd/N) is a
 * mapped file also takes the distributed lock of the entry: exclusive
 * (LOCK_EX, F_WRLCK, lockf) as a write hold, shared (LOCK_SH, F_RDLCK) as a
 * read hold; unlocks, and close() of what the kernel unlocks with it,
 * release it.  The real call is always made first and keeps the local file
 * lock's semantics; a non-blocking request that then finds the distributed
 * lock held elsewhere undoes the local lock and fails with EWOULDBLOCK
 * (flock) or EAGAIN (fcntl, lockf).
 *
 * Byte-range locks, F_GETLK and lockf(F_TEST) stay local.  With no flock
 * entries in the map each wrapper is one test and the real call.
 *
 * An flock or OFD lock belongs to the open file description, which fork
 * and exec share: the shell idiom `( flock 9 || exit 1; work ) 9>FILE`
 * has flock(1) lock the subshell's descriptor and exit, and the kernel
 * lock lives on in the subshell while the distributed hold ends with
 * flock(1).  No process with the interposer is there to keep that hold
 * (the subshell runs no lock call), so such a lock is refused: a lock on
 * a description the parent process also has open stops the program, with
 * the one-line reason and the ways that work (`flock FILE -c '...'`,
 * `distlock NAME -c '...'`), before anything is locked.  A lock held
 * across exec by one process (flock -F, chpst -l: the same pid before and
 * after) is another matter: the exec wrappers hand its hold to a keeper
 * (wrap_exec.c). */
/* hiredis's pkg-config sets _FILE_OFFSET_BITS=64, which renames fcntl and
 * lockf to their *64 twins in the headers: both names are defined here. */
#undef _FILE_OFFSET_BITS
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/file.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dl.h"
#include "preload.h"

DLP_OBJ_FITS(dist_rwlock_t);

static int sys_flock(int fd, int op)
{
    return (int)syscall(SYS_flock, fd, op);
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

static int sys_lockf64(int fd, int cmd, off64_t len)
{
    return sys_lockf(fd, cmd, (off_t)len);
}

/* fcntl's third argument is an int or a pointer, passed alike: taken as a
 * pointer and handed on. */
static int sys_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

/* The real functions: while dlsym's allocator re-enters them, the system
 * calls. */
DLP_REAL_FN(int, flock, (int fd, int op), (fd, op), NULL, sys_flock, sys_flock(fd, op))
DLP_REAL_FN(int, lockf, (int fd, int cmd, off_t len), (fd, cmd, len), NULL, sys_lockf,
            sys_lockf(fd, cmd, len))
DLP_REAL_FN(int, lockf64, (int fd, int cmd, off64_t len), (fd, cmd, len), NULL, sys_lockf64,
            sys_lockf64(fd, cmd, len))

#define FCNTL_REAL(f)                                          \
    static int boot_##f(int fd, int cmd, ...);                  \
    static int (*dlp_real_##f)(int, int, ...) = boot_##f;       \
    DLP_REAL_ROW(f, NULL, sys_fcntl);                           \
    static int boot_##f(int fd, int cmd, ...)                   \
    {                                                           \
        va_list ap;                                             \
        va_start(ap, cmd);                                      \
        void *arg = va_arg(ap, void *);                         \
        va_end(ap);                                             \
        if (!dlp_real_resolve())                                \
            return (int)syscall(SYS_fcntl, fd, cmd, arg);       \
        return DLP_REAL(f)(fd, cmd, arg);                       \
    }
FCNTL_REAL(fcntl)
FCNTL_REAL(fcntl64)

/* The file entries of this program; none makes every wrapper a plain
 * call. */
static int nfile;
static dlp_entry_t *files[DLP_MAX_ENTRIES];

/* The mapped entry of fd's file, with its identity; NULL when not mapped.
 * No allocation: the path is read into the stack. */
static dlp_entry_t *entry_of(int fd, dev_t *dev, ino_t *ino)
{
    if (fd < 0)
        return NULL;
    char link[32] = "/proc/self/fd/";
    char digits[12];
    int nd = 0;
    unsigned v = (unsigned)fd;
    do {
        digits[nd++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t o = strlen(link);
    while (nd)
        link[o++] = digits[--nd];
    link[o] = 0;

    char path[PATH_MAX];
    ssize_t n = readlink(link, path, sizeof path);
    if (n <= 0 || n >= (ssize_t)sizeof path)
        return NULL;
    dlp_entry_t *e = NULL;
    for (int i = 0; i < nfile && !e; i++)
        if (files[i]->targetlen == (size_t)n && memcmp(files[i]->target, path, (size_t)n) == 0)
            e = files[i];
    if (!e)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return NULL;
    *dev = st.st_dev;
    *ino = st.st_ino;
    return e;
}

/* Does the parent process have fd's open file description (dev, ino) open
 * too?  Its descriptors are read with getdents64 into the stack (no
 * allocation) and compared with kcmp; where kcmp is refused (another
 * user's parent, no CONFIG_KCMP), the same file open there counts. */
static int shared_with_parent(int fd, dev_t dev, ino_t ino, pid_t *parent)
{
    pid_t me = getpid(), pp = getppid();
    *parent = pp;
    if (pp <= 1)
        return 0;
    char dir[48];
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pp);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    int shared = 0;
    char buf[4096];
    long n;
    while (!shared && (n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n && !shared;) {
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, sizeof reclen);   /* d_reclen */
            const char *nm = buf + off + 19;                  /* d_name */
            off += reclen;
            if (nm[0] < '0' || nm[0] > '9')
                continue;
            int theirs = atoi(nm);
            long k = syscall(SYS_kcmp, me, pp, KCMP_FILE, fd, theirs);
            if (k == 0) {
                shared = 1;
            } else if (k < 0) {
                char path[96];
                struct stat st;
                snprintf(path, sizeof path, "%s/%d", dir, theirs);
                shared = stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
            }
        }
    }
    DLP_REAL(close)(dfd);
    return shared;
}

/* A lock on fd's open file description, which the parent has open too:
 * stops the program (see the header).  what: "flock" or "fcntl". */
static void refuse_shared(const dlp_entry_t *e, int fd, dev_t dev, ino_t ino, const char *what)
{
    pid_t pp;
    if (!shared_with_parent(fd, dev, ino, &pp))
        return;
    dlp_stop("lock \"%s\" (%s): refused: %s on descriptor %d, which this program shares with "
             "its parent (pid %d), would leave the file locked after this program ends while "
             "the distributed lock ends with it (the shell idiom `( flock %d; ... ) %d>FILE`); "
             "hold it around the commands instead: flock %s -c '...', or distlock %s -c '...'",
             e->name, e->target, what, fd, (int)pp, fd, fd, e->target, e->name);
}

/* Does fdinfo text (/proc/self/fdinfo/N) show an flock or POSIX lock that
 * process `pid` took?  Its lines read "lock:\t1: FLOCK  ADVISORY  WRITE
 * PID MAJ:MIN:INO START END" (an OFD lock shows no pid: -1). */
static int locked_by(const char *info, pid_t pid)
{
    for (const char *l = strstr(info, "lock:"); l; l = strstr(l + 5, "lock:")) {
        char type[16], adv[16], mode[16];
        int p;
        if (sscanf(l, "lock: %*d: %15s %15s %15s %d", type, adv, mode, &p) == 4 &&
            (strcmp(type, "FLOCK") == 0 || strcmp(type, "POSIX") == 0) && p == (int)pid)
            return 1;
    }
    return 0;
}

/* Before main: a mapped file this program was started holding, locked by
 * its own process before it executed this program (lock, then exec:
 * flock -F, chpst -l, setlock, lckdo -e), is kept by a keeper when the
 * exec went through the interposer (wrap_exec.c, kept.h).  If none keeps
 * it, the distributed hold ended with the image that took it while the
 * file stays locked: the program stops here. */
static void check_inherited(void)
{
    int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    pid_t me = getpid();
    char buf[4096];
    long n;
    while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n;) {
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, sizeof reclen);   /* d_reclen */
            const char *nm = buf + off + 19;                  /* d_name */
            off += reclen;
            if (nm[0] < '0' || nm[0] > '9' || atoi(nm) == dfd)
                continue;
            int fd = atoi(nm);
            dev_t dev;
            ino_t ino;
            const dlp_entry_t *e = entry_of(fd, &dev, &ino);
            if (!e)
                continue;
            char path[64], info[2048];
            snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
            int ifd = open(path, O_RDONLY | O_CLOEXEC);
            ssize_t got = ifd >= 0 ? read(ifd, info, sizeof info - 1) : -1;
            if (ifd >= 0)
                DLP_REAL(close)(ifd);
            if (got <= 0)
                continue;
            info[got] = 0;
            if (!locked_by(info, me))
                continue;
            if (dlp_kept_has(dev, ino)) {
                dl_log(DL_LOG_DEBUG, "preload: lock \"%s\" (%s): held across exec on descriptor "
                       "%d, its distributed hold kept by a keeper", e->name, e->target, fd);
                continue;
            }
            const char *cmd = program_invocation_short_name;
            dlp_stop("lock \"%s\" (%s): refused: this program was started with the file "
                     "locked (descriptor %d) by its own process before it executed this "
                     "program, and no keeper keeps its distributed hold (the exec did not go "
                     "through the interposer), so %s would run unprotected; hold it around the "
                     "command instead: flock %s %s, or distlock %s -- %s", e->name, e->target, fd,
                     cmd, e->target, cmd, e->name, cmd);
        }
    }
    DLP_REAL(close)(dfd);
}

/* The distributed half of a lock just taken on fd.  A file this program
 * was started holding, whose hold a keeper keeps (kept.h), is the
 * program's own from now on: the keeper lets go first, as a conversion
 * releases and acquires. */
static int acquire(dlp_entry_t *e, int kind, int fd, dev_t dev, ino_t ino, char mode,
                   int nonblock)
{
    if (dlp_kept_has(dev, ino))
        dlp_kept_drop(dev, ino);
    return dlp_file_acquire(e, kind, fd, dev, ino, mode, nonblock);
}

/* The distributed half of an unlock: a kept file's keeper looks now. */
static void release(int kind, int fd, dev_t dev, ino_t ino)
{
    dlp_file_release(kind, fd, dev, ino);
    dlp_kept_poke(dev, ino);
}

/* ---------------------------------------------------------------- flock */

static int __attribute__((noinline)) flock_mapped(int fd, int op)
{
    dev_t dev;
    ino_t ino;
    int base = op & ~LOCK_NB;
    dlp_entry_t *e = (base == LOCK_SH || base == LOCK_EX || base == LOCK_UN) ? entry_of(fd, &dev, &ino) : NULL;
    if (!e)
        return DLP_REAL(flock)(fd, op);
    int saved = errno;
    if (base != LOCK_UN) {
        dlp_in = 1;
        refuse_shared(e, fd, dev, ino, "flock");
        dlp_in = 0;
    }
    if (DLP_REAL(flock)(fd, op) != 0)
        return -1;
    dlp_in = 1;
    int err = 0;
    if (base == LOCK_UN)
        release(DLP_FL_FLOCK, fd, dev, ino);
    else if ((err = acquire(e, DLP_FL_FLOCK, fd, dev, ino, base == LOCK_EX ? 'w' : 'r',
                                     (op & LOCK_NB) != 0)))
        DLP_REAL(flock)(fd, LOCK_UN);
    dlp_in = 0;
    errno = err ? err : saved;
    return err ? -1 : 0;
}

DLP_EXPORT int flock(int fd, int op)
{
    if (DLP_LIKELY(!nfile) || dlp_in)
        return DLP_REAL(flock)(fd, op);
    return flock_mapped(fd, op);
}

/* ---------------------------------------------------------------- fcntl */

static int is_setlk(int cmd)
{
    return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
}

/* Does the struct flock cover the whole file (start 0, to the end)? */
static int whole_file(int fd, const struct flock *fl)
{
    if (fl->l_len != 0)
        return 0;
    switch (fl->l_whence) {
    case SEEK_SET:
        return fl->l_start == 0;
    case SEEK_CUR: {
        off_t pos = lseek(fd, 0, SEEK_CUR);
        return pos >= 0 && pos + fl->l_start == 0;
    }
    case SEEK_END: {
        struct stat st;
        return fstat(fd, &st) == 0 && st.st_size + fl->l_start == 0;
    }
    default:
        return 0;
    }
}

typedef int (*fcntl_fn)(int, int, ...);

static int __attribute__((noinline)) fcntl_mapped(fcntl_fn real, int fd, int cmd, void *arg)
{
    struct flock *fl = arg;
    dev_t dev;
    ino_t ino;
    dlp_entry_t *e = NULL;
    int saved = errno;
    if (fl && (fl->l_type == F_RDLCK || fl->l_type == F_WRLCK || fl->l_type == F_UNLCK) &&
        whole_file(fd, fl))
        e = entry_of(fd, &dev, &ino);
    errno = saved;
    if (!e)
        return real(fd, cmd, arg);
    int ofd = cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
    int kind = ofd ? DLP_FL_OFD : DLP_FL_POSIX;
    short type = fl->l_type;
    if (ofd && type != F_UNLCK) {
        /* (A POSIX lock belongs to the process and ends with it.) */
        dlp_in = 1;
        refuse_shared(e, fd, dev, ino, "an OFD lock");
        dlp_in = 0;
    }
    if (real(fd, cmd, arg) == -1)
        return -1;
    dlp_in = 1;
    int err = 0;
    if (type == F_UNLCK) {
        release(kind, fd, dev, ino);
    } else if ((err = acquire(e, kind, fd, dev, ino, type == F_WRLCK ? 'w' : 'r',
                                       cmd == F_SETLK || cmd == F_OFD_SETLK))) {
        struct flock u = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
        real(fd, ofd ? F_OFD_SETLK : F_SETLK, &u);
        if (err == EWOULDBLOCK)
            err = EAGAIN;
    }
    dlp_in = 0;
    errno = err ? err : saved;
    return err ? -1 : 0;
}

/* fcntl's third argument is an int or a pointer, passed alike: taken as a
 * pointer and handed on. */
#define FCNTL_WRAP(f)                                                       \
    DLP_EXPORT int f(int fd, int cmd, ...)                                  \
    {                                                                       \
        va_list ap;                                                         \
        va_start(ap, cmd);                                                  \
        void *arg = va_arg(ap, void *);                                     \
        va_end(ap);                                                         \
        if (DLP_LIKELY(!is_setlk(cmd) || !nfile) || dlp_in)             \
            return DLP_REAL(f)(fd, cmd, arg);                               \
        return fcntl_mapped(DLP_REAL(f), fd, cmd, arg);                     \
    }

FCNTL_WRAP(fcntl)
FCNTL_WRAP(fcntl64)

/* ---------------------------------------------------------------- lockf */

/* lockf locks are POSIX write locks from the current offset; len 0 at
 * offset 0 is the whole file. */
static int __attribute__((noinline)) lockf_mapped(int fd, int cmd, off64_t len, int is64)
{
    dev_t dev;
    ino_t ino;
    dlp_entry_t *e = NULL;
    int saved = errno;
    if ((cmd == F_LOCK || cmd == F_TLOCK || cmd == F_ULOCK) && len == 0 && lseek(fd, 0, SEEK_CUR) == 0)
        e = entry_of(fd, &dev, &ino);
    errno = saved;
    int rc = is64 ? DLP_REAL(lockf64)(fd, cmd, len) : DLP_REAL(lockf)(fd, cmd, (off_t)len);
    if (!e || rc != 0)
        return rc;
    dlp_in = 1;
    int err = 0;
    if (cmd == F_ULOCK)
        release(DLP_FL_POSIX, fd, dev, ino);
    else if ((err = acquire(e, DLP_FL_POSIX, fd, dev, ino, 'w', cmd == F_TLOCK))) {
        DLP_REAL(lockf)(fd, F_ULOCK, 0);
        if (err == EWOULDBLOCK)
            err = EAGAIN;
    }
    dlp_in = 0;
    errno = err ? err : saved;
    return err ? -1 : 0;
}

DLP_EXPORT int lockf(int fd, int cmd, off_t len)
{
    if (DLP_LIKELY(!nfile) || dlp_in)
        return DLP_REAL(lockf)(fd, cmd, len);
    return lockf_mapped(fd, cmd, len, 0);
}

DLP_EXPORT int lockf64(int fd, int cmd, off64_t len)
{
    if (DLP_LIKELY(!nfile) || dlp_in)
        return DLP_REAL(lockf64)(fd, cmd, len);
    return lockf_mapped(fd, cmd, len, 1);
}

/* ---------------------------------------------------------------- close */

static int __attribute__((noinline)) close_mapped(int fd)
{
    struct stat st;
    int known = fstat(fd, &st) == 0;
    int rc = DLP_REAL(close)(fd);
    int saved = errno;
    if (known) {
        dlp_in = 1;
        dlp_file_closed(fd, st.st_dev, st.st_ino);
        dlp_kept_poke(st.st_dev, st.st_ino);
        dlp_in = 0;
    }
    errno = saved;
    return rc;
}

DLP_EXPORT int close(int fd)
{
    if ((DLP_LIKELY(!__atomic_load_n(&dlp_fheld, __ATOMIC_RELAXED)) && !dlp_kept_any()) || dlp_in)
        return DLP_REAL(close)(fd);
    return close_mapped(fd);
}

/* ------------------------------------------------------------ the kind */

/* An entry's lock is a dist_rwlock_t (shared and exclusive file locks),
 * its holds the process's (filelock.c). */
static int init(dlp_entry_t *e)
{
    for (int k = 0; k < nfile; k++)
        if (strcmp(files[k]->target, e->target) == 0)
            return dl_fail(EINVAL, "file %s is already mapped (lock \"%s\")", e->target,
                           files[k]->name);
    int rc = dist_rwlock_init(DLP_OBJ(e, dist_rwlock_t), e->name, NULL);
    if (rc == 0)
        files[nfile++] = e;
    return rc;
}

static void ready(void)
{
    dlp_file_init();
    dlp_kept_load();
    check_inherited();
}

static void after_fork(void)
{
    dlp_file_after_fork();
    dlp_kept_after_fork();
    dlp_keeper_after_fork();
}

/* POSIX file locks end with the process: so do their distributed holds,
 * rather than lapsing a lease later. */
static void at_exit(void)
{
    if (nfile)
        dlp_file_release_all();
}

const dlp_kind_t dlp_kind_flock = {
    .word = "flock",
    .target = DLP_BY_PATH,
    .what = "lock",
    .space = DL_KIND_LOCK,
    .shape = 'r',
    .init = init,
    .ready = ready,
    .after_fork = after_fork,
    .at_exit = at_exit,
    .lock = &dlp_rwlock_ops,
};
