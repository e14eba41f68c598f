/* SPDX-License-Identifier: BSD-3-Clause */
/* engage.c - does each wrapper of libdistlock_preload.so engage on this
 * glibc, for each interposed function (and for the older symbol versions
 * programs built on older glibc reference)?
 *
 * Run under the preload with (test_engage.sh sets it):
 *   DISTLOCK_MAP='m=mutex:g_m;ec=mutex:g_ec;rec=mutex:g_rec;cv=mutex:g_cvm;
 *                 rw=rwlock:g_rw;f=flock:DIR/a.lock;f=flock:DIR/b.lock'
 *   DLP_DIR=DIR
 * Each check looks at Redis itself (hiredis, DISTLOCK_URL, DISTLOCK_PREFIX):
 * a writer hold is the key <prefix>{name}, readers are the members of
 * <prefix>{name}:r (docs/PROTOCOL.md).  A forked child holding the locks
 * shows that a try on a local lock that is free still fails: the
 * distributed half is there.  A signal caught during a blocking file lock
 * the other process holds interrupts it (EINTR) unless its handler has
 * SA_RESTART, as with the kernel's own file locks.  Prints "ok"/"FAIL" per
 * check and "N passed, N failed". */
/* hiredis's pkg-config sets _FILE_OFFSET_BITS=64 (fcntl would become
 * fcntl64): call each name for itself. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t g_m = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_ec;                       /* errorcheck, set up in main */
pthread_mutex_t g_rec;                      /* recursive, set up in main */
pthread_mutex_t g_cvm = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t g_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t unmapped = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

/* References to the versions that programs linked on glibc < 2.34 use. */
extern int old_mutex_trylock(pthread_mutex_t *);
extern int old_rw_rdlock(pthread_rwlock_t *);
extern int old_rw_wrlock(pthread_rwlock_t *);
extern int old_rw_unlock(pthread_rwlock_t *);
extern int old_cond_timedwait(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
__asm__(".symver old_mutex_trylock, pthread_mutex_trylock@GLIBC_2.2.5");
__asm__(".symver old_rw_rdlock, pthread_rwlock_rdlock@GLIBC_2.2.5");
__asm__(".symver old_rw_wrlock, pthread_rwlock_wrlock@GLIBC_2.2.5");
__asm__(".symver old_rw_unlock, pthread_rwlock_unlock@GLIBC_2.2.5");
__asm__(".symver old_cond_timedwait, pthread_cond_timedwait@GLIBC_2.2.5");

static redisContext *rc;
static const char *prefix = "distlock:";
static int passed, failed;
static char dir[1024];

static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s - ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok)
        passed++;
    else
        failed++;
}

static long long cmd_int(const char *fmt, const char *name)
{
    redisReply *r = redisCommand(rc, fmt, prefix, name);
    long long v = (r && r->type == REDIS_REPLY_INTEGER) ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    return v;
}

/* Is name held for writing / how many readers hold it, per Redis. */
static int writer(const char *name) { return cmd_int("EXISTS %s{%s}", name) == 1; }
static long long readers(const char *name) { return cmd_int("ZCARD %s{%s}:r", name); }
static long long dbsize(void)
{
    redisReply *r = redisCommand(rc, "DBSIZE");
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    return v;
}

static struct timespec at(clockid_t clk, long ms)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static int open_file(const char *base)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/%s", dir, base);
    int fd = open(p, O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        perror(p);
        exit(2);
    }
    return fd;
}

static int setlk(int (*fn)(int, int, ...), int fd, int cmd, short type, off_t start, off_t len)
{
    struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };
    return fn(fd, cmd, &fl);
}

/* ------------------------------------------------------------ bindings */

static void check_bindings(void)
{
    static const char *names[] = {
        "pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_timedlock",
        "pthread_mutex_clocklock", "pthread_mutex_unlock", "pthread_cond_wait",
        "pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_rwlock_rdlock",
        "pthread_rwlock_tryrdlock", "pthread_rwlock_timedrdlock", "pthread_rwlock_clockrdlock",
        "pthread_rwlock_wrlock", "pthread_rwlock_trywrlock", "pthread_rwlock_timedwrlock",
        "pthread_rwlock_clockwrlock", "pthread_rwlock_unlock", "flock", "fcntl", "fcntl64",
        "lockf", "lockf64", "close",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        Dl_info info;
        void *p = dlsym(RTLD_DEFAULT, names[i]);
        int ok = p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "distlock_preload");
        check(ok, "%s binds to the interposer", names[i]);
    }
}

/* --------------------------------------------------------------- mutex */

static void check_mutex(void)
{
    struct timespec ts;
    check(pthread_mutex_lock(&g_m) == 0 && writer("m"), "pthread_mutex_lock takes the distributed lock");
    check(pthread_mutex_unlock(&g_m) == 0 && !writer("m"), "pthread_mutex_unlock releases it");
    check(pthread_mutex_trylock(&g_m) == 0 && writer("m"), "pthread_mutex_trylock");
    pthread_mutex_unlock(&g_m);
    ts = at(CLOCK_REALTIME, 1000);
    check(pthread_mutex_timedlock(&g_m, &ts) == 0 && writer("m"), "pthread_mutex_timedlock");
    pthread_mutex_unlock(&g_m);
    ts = at(CLOCK_MONOTONIC, 1000);
    check(pthread_mutex_clocklock(&g_m, CLOCK_MONOTONIC, &ts) == 0 && writer("m"), "pthread_mutex_clocklock");
    pthread_mutex_unlock(&g_m);
    check(!writer("m"), "released after each");
    check(old_mutex_trylock(&g_m) == 0 && writer("m"), "pthread_mutex_trylock@GLIBC_2.2.5");
    pthread_mutex_unlock(&g_m);

    /* The real mutex keeps its type. */
    check(pthread_mutex_lock(&g_ec) == 0 && writer("ec"), "errorcheck mutex: lock");
    check(pthread_mutex_lock(&g_ec) == EDEADLK, "errorcheck mutex: relock gives EDEADLK");
    check(pthread_mutex_unlock(&g_ec) == 0 && !writer("ec"), "errorcheck mutex: unlock");
    check(pthread_mutex_unlock(&g_ec) == EPERM, "errorcheck mutex: unlock when not held gives EPERM");
    pthread_mutex_lock(&g_rec);
    pthread_mutex_lock(&g_rec);
    pthread_mutex_unlock(&g_rec);
    check(writer("rec"), "recursive mutex: still held after one of two unlocks");
    pthread_mutex_unlock(&g_rec);
    check(!writer("rec"), "recursive mutex: released after the second");

    long long before = dbsize();
    pthread_mutex_lock(&unmapped);
    check(dbsize() == before, "an unmapped mutex never reaches Redis");
    pthread_mutex_unlock(&unmapped);
}

/* ------------------------------------------------------------- condvar */

static volatile int waiting, go, a_holds;
static int wait_kind;                 /* 0 wait, 1 timedwait, 2 clockwait, 3 old timedwait */
static int wait_rc;

static void *cond_thread(void *arg)
{
    pthread_mutex_lock(&g_cvm);
    waiting = 1;
    if (wait_kind == 0) {
        while (!go)
            wait_rc = pthread_cond_wait(&cv, &g_cvm);
    } else {
        struct timespec ts = at(wait_kind == 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME, 600);
        if (wait_kind == 1)
            wait_rc = pthread_cond_timedwait(&cv, &g_cvm, &ts);
        else if (wait_kind == 2)
            wait_rc = pthread_cond_clockwait(&cv, &g_cvm, CLOCK_MONOTONIC, &ts);
        else
            wait_rc = old_cond_timedwait(&cv, &g_cvm, &ts);
    }
    a_holds = 1;                      /* back from the wait: holds both halves */
    usleep(300 * 1000);
    a_holds = 0;
    pthread_mutex_unlock(&g_cvm);
    return arg;
}

static void check_cond(int kind, const char *what)
{
    pthread_t t;
    waiting = go = a_holds = 0;
    wait_kind = kind;
    pthread_create(&t, NULL, cond_thread, NULL);
    while (!waiting)
        usleep(1000);
    /* The waiter is in (or entering) the wait: the mutex must be free in
     * both halves.  If the wrapper did not release the distributed half,
     * this thread would time out on it. */
    int got = EBUSY;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (got == EBUSY && ms_since(&t0) < 400) {
        got = pthread_mutex_trylock(&g_cvm);
        if (got == EBUSY)
            usleep(2000);
    }
    check(got == 0 && writer("cv"), "%s releases the distributed lock while waiting", what);
    if (got == 0) {
        go = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&g_cvm);
    }
    while (!a_holds && ms_since(&t0) < 3000)
        usleep(1000);
    check(a_holds && writer("cv"), "%s takes it back after the wait", what);
    pthread_join(t, NULL);
    if (kind == 0)
        check(wait_rc == 0, "%s returns 0", what);
    else
        check(wait_rc == 0 || wait_rc == ETIMEDOUT, "%s returns 0 or ETIMEDOUT (%d)", what, wait_rc);
    check(!writer("cv"), "%s: released by the final unlock", what);
}

/* -------------------------------------------------------------- rwlock */

static void check_rwlock(void)
{
    struct timespec ts;
    check(pthread_rwlock_rdlock(&g_rw) == 0 && readers("rw") == 1, "pthread_rwlock_rdlock takes a read hold");
    check(pthread_rwlock_unlock(&g_rw) == 0 && readers("rw") == 0, "pthread_rwlock_unlock releases it");
    check(pthread_rwlock_tryrdlock(&g_rw) == 0 && readers("rw") == 1, "pthread_rwlock_tryrdlock");
    pthread_rwlock_unlock(&g_rw);
    ts = at(CLOCK_REALTIME, 1000);
    check(pthread_rwlock_timedrdlock(&g_rw, &ts) == 0 && readers("rw") == 1, "pthread_rwlock_timedrdlock");
    pthread_rwlock_unlock(&g_rw);
    ts = at(CLOCK_MONOTONIC, 1000);
    check(pthread_rwlock_clockrdlock(&g_rw, CLOCK_MONOTONIC, &ts) == 0 && readers("rw") == 1,
          "pthread_rwlock_clockrdlock");
    pthread_rwlock_unlock(&g_rw);
    check(pthread_rwlock_wrlock(&g_rw) == 0 && writer("rw"), "pthread_rwlock_wrlock takes a write hold");
    check(pthread_rwlock_unlock(&g_rw) == 0 && !writer("rw"), "pthread_rwlock_unlock releases it");
    check(pthread_rwlock_trywrlock(&g_rw) == 0 && writer("rw"), "pthread_rwlock_trywrlock");
    pthread_rwlock_unlock(&g_rw);
    ts = at(CLOCK_REALTIME, 1000);
    check(pthread_rwlock_timedwrlock(&g_rw, &ts) == 0 && writer("rw"), "pthread_rwlock_timedwrlock");
    pthread_rwlock_unlock(&g_rw);
    ts = at(CLOCK_MONOTONIC, 1000);
    check(pthread_rwlock_clockwrlock(&g_rw, CLOCK_MONOTONIC, &ts) == 0 && writer("rw"),
          "pthread_rwlock_clockwrlock");
    pthread_rwlock_unlock(&g_rw);
    check(old_rw_rdlock(&g_rw) == 0 && readers("rw") == 1, "pthread_rwlock_rdlock@GLIBC_2.2.5");
    check(old_rw_unlock(&g_rw) == 0 && readers("rw") == 0, "pthread_rwlock_unlock@GLIBC_2.2.5");
    check(old_rw_wrlock(&g_rw) == 0 && writer("rw"), "pthread_rwlock_wrlock@GLIBC_2.2.5");
    old_rw_unlock(&g_rw);
    check(!writer("rw") && readers("rw") == 0, "released after each");
}

/* --------------------------------------------------------------- files */

static void check_files(void)
{
    int fd = open_file("a.lock");
    check(flock(fd, LOCK_EX) == 0 && writer("f"), "flock(LOCK_EX) takes a write hold");
    check(flock(fd, LOCK_EX) == 0 && writer("f"), "flock(LOCK_EX) again: no change");
    check(flock(fd, LOCK_UN) == 0 && !writer("f"), "flock(LOCK_UN) releases it");
    check(flock(fd, LOCK_SH) == 0 && readers("f") == 1, "flock(LOCK_SH) takes a read hold");
    check(flock(fd, LOCK_EX | LOCK_NB) == 0 && writer("f") && readers("f") == 0,
          "flock(LOCK_EX|LOCK_NB) converts it");
    flock(fd, LOCK_UN);
    int dup_fd = dup(fd);
    flock(fd, LOCK_EX);
    check(flock(dup_fd, LOCK_UN) == 0 && !writer("f"), "flock(LOCK_UN) on a dup of the descriptor");
    close(dup_fd);

    check(setlk(fcntl, fd, F_SETLKW, F_WRLCK, 0, 0) == 0 && writer("f"), "fcntl(F_SETLKW, F_WRLCK)");
    check(setlk(fcntl, fd, F_SETLK, F_UNLCK, 0, 0) == 0 && !writer("f"), "fcntl(F_SETLK, F_UNLCK)");
    check(setlk(fcntl, fd, F_SETLK, F_RDLCK, 0, 0) == 0 && readers("f") == 1, "fcntl(F_SETLK, F_RDLCK)");
    setlk(fcntl, fd, F_SETLK, F_UNLCK, 0, 0);
    check(setlk(fcntl64, fd, F_SETLKW, F_WRLCK, 0, 0) == 0 && writer("f"), "fcntl64(F_SETLKW, F_WRLCK)");
    check(setlk(fcntl64, fd, F_SETLK, F_UNLCK, 0, 0) == 0 && !writer("f"), "fcntl64(F_SETLK, F_UNLCK)");
    check(setlk(fcntl, fd, F_OFD_SETLKW, F_WRLCK, 0, 0) == 0 && writer("f"), "fcntl(F_OFD_SETLKW, F_WRLCK)");
    check(setlk(fcntl, fd, F_OFD_SETLK, F_UNLCK, 0, 0) == 0 && !writer("f"), "fcntl(F_OFD_SETLK, F_UNLCK)");
    check(setlk(fcntl64, fd, F_OFD_SETLK, F_RDLCK, 0, 0) == 0 && readers("f") == 1, "fcntl64(F_OFD_SETLK, F_RDLCK)");
    setlk(fcntl64, fd, F_OFD_SETLK, F_UNLCK, 0, 0);
    check(lockf(fd, F_LOCK, 0) == 0 && writer("f"), "lockf(F_LOCK)");
    check(lockf(fd, F_ULOCK, 0) == 0 && !writer("f"), "lockf(F_ULOCK)");
    check(lockf(fd, F_TLOCK, 0) == 0 && writer("f"), "lockf(F_TLOCK)");
    lockf(fd, F_ULOCK, 0);
    check(lockf64(fd, F_LOCK, 0) == 0 && writer("f"), "lockf64(F_LOCK)");
    check(lockf64(fd, F_ULOCK, 0) == 0 && !writer("f"), "lockf64(F_ULOCK)");

    check(setlk(fcntl, fd, F_SETLK, F_WRLCK, 0, 10) == 0 && !writer("f"), "a byte-range lock stays local");
    setlk(fcntl, fd, F_SETLK, F_UNLCK, 0, 10);

    long long before = dbsize();
    int other = open_file("unmapped.lock");
    flock(other, LOCK_EX);
    setlk(fcntl, other, F_SETLK, F_WRLCK, 0, 0);
    check(dbsize() == before, "locks on an unmapped file never reach Redis");
    close(other);

    /* close() ends what the kernel ends with it. */
    flock(fd, LOCK_EX);
    check(writer("f"), "flock before close");
    close(fd);
    check(!writer("f"), "close() of the descriptor releases an flock lock");
    fd = open_file("a.lock");
    int fd2 = open_file("a.lock");
    setlk(fcntl, fd, F_SETLKW, F_WRLCK, 0, 0);
    check(writer("f"), "fcntl lock before close");
    close(fd2);
    check(!writer("f"), "close() of another descriptor of the file releases a POSIX lock");
    close(fd);

    /* Two paths, one name: a.lock and b.lock are one lock. */
    fd = open_file("a.lock");
    fd2 = open_file("b.lock");
    flock(fd, LOCK_SH);
    errno = 0;
    check(flock(fd2, LOCK_EX | LOCK_NB) == -1 && errno == EWOULDBLOCK,
          "a.lock and b.lock are one lock: LOCK_EX on b while a is shared fails");
    check(flock(fd2, LOCK_SH) == 0 && readers("f") == 1, "shared on both (one reader process in Redis)");
    flock(fd, LOCK_UN);
    flock(fd2, LOCK_UN);
    check(readers("f") == 0, "both released");
    close(fd);
    close(fd2);
}

/* ------------------------------------------- a child holds, the parent tries */

static void check_contention(void)
{
    int c2p[2], p2c[2];
    if (pipe(c2p) || pipe(p2c))
        exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        /* The child: a process of its own for distlock. */
        int fd = open_file("a.lock");
        pthread_mutex_lock(&g_m);
        pthread_rwlock_wrlock(&g_rw);
        flock(fd, LOCK_EX);
        char c = 'r';
        if (write(c2p[1], &c, 1) != 1 || read(p2c[0], &c, 1) != 1)
            _exit(3);
        pthread_rwlock_unlock(&g_rw);
        pthread_mutex_unlock(&g_m);
        if (read(p2c[0], &c, 1) != 1)
            _exit(3);
        exit(0);                        /* still holding the flock lock: exit ends it */
    }
    char c;
    if (read(c2p[0], &c, 1) != 1)
        exit(2);
    struct timespec ts, t0;
    check(pthread_mutex_trylock(&g_m) == EBUSY, "trylock: EBUSY while another process holds it");
    ts = at(CLOCK_REALTIME, 300);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    check(pthread_mutex_timedlock(&g_m, &ts) == ETIMEDOUT && ms_since(&t0) >= 250,
          "timedlock: ETIMEDOUT while another process holds it");
    check(pthread_rwlock_tryrdlock(&g_rw) == EBUSY, "tryrdlock: EBUSY while another process writes");
    check(pthread_rwlock_trywrlock(&g_rw) == EBUSY, "trywrlock: EBUSY while another process writes");
    ts = at(CLOCK_REALTIME, 200);
    check(pthread_rwlock_timedrdlock(&g_rw, &ts) == ETIMEDOUT, "timedrdlock: ETIMEDOUT");

    int fd = open_file("b.lock");    /* free locally: only the name is taken */
    errno = 0;
    check(flock(fd, LOCK_EX | LOCK_NB) == -1 && errno == EWOULDBLOCK,
          "flock(LOCK_NB) on the other path of the name: EWOULDBLOCK");
    errno = 0;
    check(setlk(fcntl, fd, F_SETLK, F_WRLCK, 0, 0) == -1 && errno == EAGAIN, "fcntl(F_SETLK): EAGAIN");
    errno = 0;
    check(lockf(fd, F_TLOCK, 0) == -1 && errno == EAGAIN, "lockf(F_TLOCK): EAGAIN");
    struct flock probe = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    int fd3 = open_file("b.lock");
    check(fcntl(fd3, F_OFD_GETLK, &probe) == 0 && probe.l_type == F_UNLCK,
          "failed tries leave no local lock behind");
    close(fd3);

    c = 'u';
    if (write(p2c[1], &c, 1) != 1)
        exit(2);
    check(pthread_mutex_lock(&g_m) == 0 && writer("m"), "lock waits for the other process's unlock");
    pthread_mutex_unlock(&g_m);
    check(pthread_rwlock_wrlock(&g_rw) == 0, "wrlock after the other process's unlock");
    pthread_rwlock_unlock(&g_rw);

    check(writer("f"), "the child still holds the file lock");
    c = 'x';
    if (write(p2c[1], &c, 1) != 1)
        exit(2);
    int st;
    waitpid(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child exited cleanly");
    check(!writer("f"), "exit() released the child's distributed file lock");
    check(flock(fd, LOCK_EX | LOCK_NB) == 0 && writer("f"), "and the name is free for this process");
    flock(fd, LOCK_UN);
    close(fd);
}

/* ------------------------------- a signal during a blocking file lock */

static volatile sig_atomic_t caught;
static void on_alarm(int sig) { (void)sig; caught++; }

static void arm(int restart, long ms)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    caught = 0;
    struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };
    setitimer(ITIMER_REAL, &it, NULL);
}

static long long queued(const char *name) { return cmd_int("ZCARD %s{%s}:q", name); }

/* Until nobody of this process is queued for name in Redis (2 s at most):
 * an interrupted request is withdrawn, not left for a grant to nobody. */
static int queue_empties(const char *name)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (queued(name) > 0 && ms_since(&t0) < 2000)
        usleep(5000);
    return queued(name) == 0;
}

enum { BY_FLOCK, BY_FCNTL, BY_OFD, BY_LOCKF };
static const char *by_name[] = { "flock(LOCK_EX)", "fcntl(F_SETLKW)", "fcntl(F_OFD_SETLKW)",
                                 "lockf(F_LOCK)" };

static int lock_by(int how, int fd)
{
    switch (how) {
    case BY_FLOCK: return flock(fd, LOCK_EX);
    case BY_FCNTL: return setlk(fcntl, fd, F_SETLKW, F_WRLCK, 0, 0);
    case BY_OFD: return setlk(fcntl, fd, F_OFD_SETLKW, F_WRLCK, 0, 0);
    default: return lockf(fd, F_LOCK, 0);
    }
}

static void unlock_by(int how, int fd)
{
    switch (how) {
    case BY_FLOCK: flock(fd, LOCK_UN); break;
    case BY_FCNTL: setlk(fcntl, fd, F_SETLK, F_UNLCK, 0, 0); break;
    case BY_OFD: setlk(fcntl, fd, F_OFD_SETLK, F_UNLCK, 0, 0); break;
    default: lockf(fd, F_ULOCK, 0); break;
    }
}

static void check_signals(void)
{
    int c2p[2], p2c[2];
    if (pipe(c2p) || pipe(p2c))
        exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        /* Holds a.lock (the name "f") when told 'h'; lets go 600 ms after
         * 'r', or after 3 s without a word (so that a wait the signal
         * failed to interrupt ends, and the check says so); 'x': exit. */
        int fd = open_file("a.lock");
        char c;
        while (read(p2c[0], &c, 1) == 1 && c != 'x') {
            if (c != 'h')
                continue;
            flock(fd, LOCK_EX);
            if (write(c2p[1], &c, 1) != 1)
                _exit(3);
            struct pollfd pf = { p2c[0], POLLIN, 0 };
            if (poll(&pf, 1, 3000) == 1 && read(p2c[0], &c, 1) == 1 && c == 'r')
                usleep(600 * 1000);
            flock(fd, LOCK_UN);
        }
        exit(0);
    }
    char c = 'h';
    int fd = open_file("b.lock");              /* free locally: only the name is held */
    struct timespec t0;
    for (int how = BY_FLOCK; how <= BY_LOCKF; how++) {
        c = 'h';
        if (write(p2c[1], &c, 1) != 1 || read(c2p[0], &c, 1) != 1)
            exit(2);
        /* A handler without SA_RESTART: EINTR, as the kernel's own wait. */
        arm(0, 200);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        errno = 0;
        int rc = lock_by(how, fd);
        int err = errno;
        long ms = ms_since(&t0);
        check(rc == -1 && err == EINTR && caught == 1 && ms >= 150,
              "%s: a caught signal interrupts the wait: EINTR after %ld ms (rc %d, %s)",
              by_name[how], ms, rc, strerror(err));
        struct flock probe = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
        int fd3 = open_file("b.lock");
        check(fcntl(fd3, F_OFD_GETLK, &probe) == 0 && probe.l_type == F_UNLCK,
              "%s: EINTR leaves no local lock behind", by_name[how]);
        close(fd3);
        check(queue_empties("f"), "%s: EINTR withdraws the request from Redis's queue",
              by_name[how]);
        /* With SA_RESTART: the wait goes on and gets the lock once the
         * other process lets go (600 ms after 'r'). */
        c = 'r';
        if (write(p2c[1], &c, 1) != 1)
            exit(2);
        arm(1, 200);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        errno = 0;
        rc = lock_by(how, fd);
        ms = ms_since(&t0);
        check(rc == 0 && caught == 1 && ms >= 450 && writer("f"),
              "%s: with SA_RESTART the wait goes on after the handler and takes the lock "
              "(%ld ms, rc %d, %s)", by_name[how], ms, rc, strerror(errno));
        unlock_by(how, fd);
        check(!writer("f"), "%s: released", by_name[how]);
    }
    signal(SIGALRM, SIG_DFL);
    close(fd);
    c = 'x';
    if (write(p2c[1], &c, 1) != 1)
        exit(2);
    int st;
    waitpid(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "signal holder exited cleanly");
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *d = getenv("DLP_DIR");
    const char *url = getenv("DISTLOCK_URL");
    if (getenv("DISTLOCK_PREFIX"))
        prefix = getenv("DISTLOCK_PREFIX");
    if (!d || !url) {
        fprintf(stderr, "engage: set DLP_DIR and DISTLOCK_URL\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", d);
    char host[256] = "127.0.0.1";
    int port = 6379;
    if (sscanf(url, "redis://%255[^:/]:%d", host, &port) < 1) {
        fprintf(stderr, "engage: cannot parse %s\n", url);
        return 2;
    }
    rc = redisConnect(host, port);
    if (!rc || rc->err) {
        fprintf(stderr, "engage: cannot connect to %s\n", url);
        return 2;
    }
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&g_ec, &a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&g_rec, &a);
    pthread_mutexattr_destroy(&a);

    check_bindings();
    check_mutex();
    check_cond(0, "pthread_cond_wait");
    check_cond(1, "pthread_cond_timedwait");
    check_cond(2, "pthread_cond_clockwait");
    check_cond(3, "pthread_cond_timedwait@GLIBC_2.2.5");
    check_rwlock();
    check_files();
    check_contention();
    check_signals();
    redisFree(rc);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
