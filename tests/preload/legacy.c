/* SPDX-License-Identifier: BSD-3-Clause */
/* legacy.c - an old program, written before anyone ran it on two hosts.
 *
 * It protects a ledger (a counter in a file) with a global pthread mutex,
 * a config record with a file-static pthread rwlock, and its jobs with
 * file locks on a lock file.  Every update is a read-modify-write with a
 * short sleep inside, so two processes that do not exclude each other lose
 * updates.  It knows nothing about distlock; the tests run several copies
 * at once with and without libdistlock_preload.so.
 *
 *   legacy hello                       prints a line from main (map checks)
 *   legacy system                      runs /bin/true through system()
 *   legacy run CMD                     runs CMD through system(), exits with its status
 *   legacy mutex  FILE N T             T threads x N increments under g_ledger_lock
 *   legacy lib    FILE N T             the same under a file-static mutex of liblegacylib
 *   legacy cond   FILE N               2 threads taking turns on a condvar, N turns each
 *   legacy rwlock FILE N W R           W writers x N updates of a two-field record,
 *                                      R readers checking it; prints "torn=K"
 *   legacy fork   FILE N               N increments, fork (pthread_atfork handlers lock
 *                                      and unlock the ledger), N more in each process
 *   legacy flock|fcntl|lockf|ofd LOCKFILE FILE N
 *                                      N increments, each under a whole-file lock on
 *                                      LOCKFILE taken and released the given way
 *   legacy hold LOCKFILE MS            flock(LOCK_EX), print "held", sleep, exit unlocked
 *   legacy holdmutex MS                lock g_ledger_lock, print "held", sleep, unlock,
 *                                      print "done" (the critical section ran to its end)
 *   legacy relockmutex MS              lock the recursive g_rec_lock, print "held", sleep,
 *                                      lock it again, unlock twice, print "done"
 *   legacy fclose LOCKFILE MS          fopen, flock(LOCK_EX), fclose, print "held", sleep
 *   legacy trywait LOCKFILE            flock(LOCK_EX|LOCK_NB) until it succeeds; prints ms waited
 *   legacy produce FILE N GAP_MS       a queue (a count and a time stamp in FILE) under
 *                                      g_ledger_lock: N items, one every GAP_MS, each
 *                                      announced with pthread_cond_signal(&g_queue_cv)
 *   legacy consume FILE N MS GIVEUP_MS takes N items, waiting with pthread_cond_timedwait
 *                                      (MS) while the queue is empty; prints how many it
 *                                      took, how many waits timed out, and the longest
 *                                      time from an item's signal to its taker waking
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLEEP_US 300

/* Built a second time as preload_legacy_books, another program whose
 * ledger lock has another name (for @PROGRAM maps). */
#ifdef LEGACY_BOOKS
#define g_ledger_lock g_books_lock
#endif

pthread_mutex_t g_ledger_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_rec_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_rwlock_t cfg_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t turn_cv = PTHREAD_COND_INITIALIZER;
pthread_cond_t g_queue_cv = PTHREAD_COND_INITIALIZER;
static int turn;
int g_counter_int;                       /* too small to be a mutex */

void legacylib_bump(int fd, unsigned sleep_us);

static int ledger_fd;
static long iters;

static long read_at(int fd, off_t off)
{
    char buf[32] = { 0 };
    ssize_t n = pread(fd, buf, sizeof buf - 1, off);
    return n > 0 ? strtol(buf, NULL, 10) : 0;
}

static void write_at(int fd, off_t off, long v)
{
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%020ld\n", v);
    if (pwrite(fd, buf, (size_t)len, off) != len)
        perror("pwrite");
}

static void bump(void)
{
    long v = read_at(ledger_fd, 0);
    usleep(SLEEP_US);
    write_at(ledger_fd, 0, v + 1);
}

static int open_ledger(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
    return fd;
}

/* ---- mutex */
static void *mutex_worker(void *arg)
{
    for (long i = 0; i < iters; i++) {
        pthread_mutex_lock(&g_ledger_lock);
        bump();
        pthread_mutex_unlock(&g_ledger_lock);
    }
    return arg;
}

static void *lib_worker(void *arg)
{
    for (long i = 0; i < iters; i++)
        legacylib_bump(ledger_fd, SLEEP_US);
    return arg;
}

static void run_threads(int n, void *(*fn)(void *))
{
    pthread_t t[64];
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, fn, (void *)(long)i);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* ---- cond: strict turns; thread 1 uses a timed wait that often times out */
static int last_turn = -1, out_of_turn;

static void *cond_worker(void *arg)
{
    int me = (int)(long)arg;
    for (long i = 0; i < iters; i++) {
        pthread_mutex_lock(&g_ledger_lock);
        while (turn != me) {
            if (me == 0) {
                pthread_cond_wait(&turn_cv, &g_ledger_lock);
            } else {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 2 * 1000 * 1000;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&turn_cv, &g_ledger_lock, &ts);
            }
        }
        if (last_turn == me)
            out_of_turn++;
        last_turn = me;
        bump();
        turn = 1 - me;
        pthread_cond_broadcast(&turn_cv);
        pthread_mutex_unlock(&g_ledger_lock);
    }
    return NULL;
}

/* ---- rwlock: the record is two fields; a writer sets them one by one */
static volatile int writers_left;
static long torn;

static void *writer(void *arg)
{
    for (long i = 0; i < iters; i++) {
        pthread_rwlock_wrlock(&cfg_lock);
        long a = read_at(ledger_fd, 0);
        write_at(ledger_fd, 0, a + 1);
        usleep(SLEEP_US);
        write_at(ledger_fd, 32, a + 1);
        pthread_rwlock_unlock(&cfg_lock);
    }
    __sync_fetch_and_sub(&writers_left, 1);
    return arg;
}

static void *reader(void *arg)
{
    while (writers_left > 0) {
        pthread_rwlock_rdlock(&cfg_lock);
        long a = read_at(ledger_fd, 0);
        usleep(SLEEP_US / 3);
        long b = read_at(ledger_fd, 32);
        pthread_rwlock_unlock(&cfg_lock);
        if (a != b)
            __sync_fetch_and_add(&torn, 1);
        usleep(100);
    }
    return arg;
}

/* ---- fork */
static void ledger_lock(void) { pthread_mutex_lock(&g_ledger_lock); }
static void ledger_unlock(void) { pthread_mutex_unlock(&g_ledger_lock); }

static void locked_bumps(long n)
{
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&g_ledger_lock);
        bump();
        pthread_mutex_unlock(&g_ledger_lock);
    }
}

/* ---- file locks */
static void file_locked_bumps(const char *how, const char *lockfile, long n)
{
    for (long i = 0; i < n; i++) {
        int fd = open(lockfile, O_RDWR | O_CREAT, 0644);
        if (fd < 0) {
            perror(lockfile);
            exit(2);
        }
        int rc;
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
        if (strcmp(how, "flock") == 0)
            rc = flock(fd, LOCK_EX);
        else if (strcmp(how, "fcntl") == 0)
            rc = fcntl(fd, F_SETLKW, &fl);
        else if (strcmp(how, "lockf") == 0)
            rc = lockf(fd, F_LOCK, 0);
        else
            rc = fcntl(fd, F_OFD_SETLKW, &fl);
        if (rc) {
            perror("lock");
            exit(2);
        }
        bump();
        /* Released the ways old code does: explicitly, or by close(). */
        if (strcmp(how, "flock") == 0)
            flock(fd, LOCK_UN);
        else if (strcmp(how, "lockf") == 0)
            lockf(fd, F_ULOCK, 0);
        else if (strcmp(how, "ofd") == 0) {
            fl.l_type = F_UNLCK;
            fcntl(fd, F_OFD_SETLK, &fl);
        }
        close(fd);                      /* fcntl: close() is the unlock */
    }
}

/* ---- produce / consume: a queue in the ledger file (count at 0, the
 * monotonic time of the last item's signal, in us, at 32) */
static long now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

static int produce(long n, long gap_ms)
{
    for (long i = 0; i < n; i++) {
        usleep((useconds_t)gap_ms * 1000);
        pthread_mutex_lock(&g_ledger_lock);
        write_at(ledger_fd, 0, read_at(ledger_fd, 0) + 1);
        write_at(ledger_fd, 32, now_us());
        pthread_cond_signal(&g_queue_cv);
        pthread_mutex_unlock(&g_ledger_lock);
    }
    printf("produced=%ld\n", n);
    return 0;
}

static int consume(long n, long wait_ms, long giveup_ms)
{
    long got = 0, timeouts = 0, max_wake_us = 0, start = now_us();
    pthread_mutex_lock(&g_ledger_lock);
    while (got < n && now_us() - start < giveup_ms * 1000) {
        int waited = 0;
        while (read_at(ledger_fd, 0) <= 0 && now_us() - start < giveup_ms * 1000) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += wait_ms / 1000;
            ts.tv_nsec += (wait_ms % 1000) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            if (pthread_cond_timedwait(&g_queue_cv, &g_ledger_lock, &ts) == ETIMEDOUT)
                timeouts++;
            waited = 1;
        }
        if (read_at(ledger_fd, 0) <= 0)
            break;
        if (waited) {
            long wake = now_us() - read_at(ledger_fd, 32);
            if (wake > max_wake_us)
                max_wake_us = wake;
        }
        write_at(ledger_fd, 0, read_at(ledger_fd, 0) - 1);
        got++;
    }
    pthread_mutex_unlock(&g_ledger_lock);
    printf("consumed=%ld timeouts=%ld max_wake_ms=%ld\n", got, timeouts, max_wake_us / 1000);
    return 0;
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: legacy MODE ...\n");
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "hello") == 0) {
        printf("hello from main\n");
        return 0;
    }
    if (strcmp(mode, "system") == 0) {
        int st = system("/bin/true");
        printf("system: %d\n", st);
        return st == 0 ? 0 : 1;
    }
    if (strcmp(mode, "run") == 0 && argc > 2) {
        int st = system(argv[2]);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (strcmp(mode, "hold") == 0 || strcmp(mode, "fclose") == 0) {
        if (argc < 4)
            return 2;
        int fd;
        FILE *f = NULL;
        if (mode[0] == 'h') {
            fd = open(argv[2], O_RDWR | O_CREAT, 0644);
        } else {
            f = fopen(argv[2], "a+");
            fd = f ? fileno(f) : -1;
        }
        if (fd < 0 || flock(fd, LOCK_EX)) {
            perror(argv[2]);
            return 2;
        }
        if (f) {
            usleep(200 * 1000);
            fclose(f);                  /* the lock ends here, behind close()'s back */
        }
        printf("held\n");
        usleep((useconds_t)atol(argv[3]) * 1000);
        return 0;                       /* never unlocked: exit ends it */
    }
    if (strcmp(mode, "holdmutex") == 0 && argc > 2) {
        pthread_mutex_lock(&g_ledger_lock);
        printf("held\n");
        usleep((useconds_t)atol(argv[2]) * 1000);
        pthread_mutex_unlock(&g_ledger_lock);
        printf("done\n");
        return 0;
    }
    if (strcmp(mode, "relockmutex") == 0 && argc > 2) {
        pthread_mutex_lock(&g_rec_lock);
        printf("held\n");
        usleep((useconds_t)atol(argv[2]) * 1000);
        pthread_mutex_lock(&g_rec_lock);
        pthread_mutex_unlock(&g_rec_lock);
        pthread_mutex_unlock(&g_rec_lock);
        printf("done\n");
        return 0;
    }
    if (strcmp(mode, "trywait") == 0) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int fd = open(argv[2], O_RDWR | O_CREAT, 0644);
        while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK) {
                perror("flock");
                return 2;
            }
            usleep(20000);
        }
        printf("waited_ms=%ld\n", ms_since(&t0));
        flock(fd, LOCK_UN);
        close(fd);
        return 0;
    }
    if (strcmp(mode, "flock") == 0 || strcmp(mode, "fcntl") == 0 || strcmp(mode, "lockf") == 0 ||
        strcmp(mode, "ofd") == 0) {
        if (argc < 5)
            return 2;
        ledger_fd = open_ledger(argv[3]);
        file_locked_bumps(mode, argv[2], atol(argv[4]));
        return 0;
    }

    if (argc < 4)
        return 2;
    ledger_fd = open_ledger(argv[2]);
    iters = atol(argv[3]);
    if (strcmp(mode, "mutex") == 0) {
        run_threads(argc > 4 ? atoi(argv[4]) : 2, mutex_worker);
    } else if (strcmp(mode, "lib") == 0) {
        run_threads(argc > 4 ? atoi(argv[4]) : 2, lib_worker);
    } else if (strcmp(mode, "produce") == 0) {
        return produce(iters, argc > 4 ? atol(argv[4]) : 10);
    } else if (strcmp(mode, "consume") == 0) {
        return consume(iters, argc > 4 ? atol(argv[4]) : 5000, argc > 5 ? atol(argv[5]) : 30000);
    } else if (strcmp(mode, "cond") == 0) {
        run_threads(2, cond_worker);
        printf("out_of_turn=%d\n", out_of_turn);
        return out_of_turn ? 1 : 0;
    } else if (strcmp(mode, "rwlock") == 0) {
        int w = argc > 4 ? atoi(argv[4]) : 1, r = argc > 5 ? atoi(argv[5]) : 2;
        pthread_t t[64];
        writers_left = w;
        for (int i = 0; i < w; i++)
            pthread_create(&t[i], NULL, writer, NULL);
        for (int i = 0; i < r; i++)
            pthread_create(&t[w + i], NULL, reader, NULL);
        for (int i = 0; i < w + r; i++)
            pthread_join(t[i], NULL);
        printf("torn=%ld\n", torn);
    } else if (strcmp(mode, "fork") == 0) {
        pthread_atfork(ledger_lock, ledger_unlock, ledger_unlock);
        locked_bumps(iters);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 2;
        }
        locked_bumps(iters);
        if (pid == 0)
            exit(0);
        int st;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
    } else {
        fprintf(stderr, "legacy: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
