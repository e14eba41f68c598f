/* SPDX-License-Identifier: BSD-3-Clause */
/* filelock.c - the distributed holds behind mapped file locks.
 *
 * A file lock belongs to the process (fcntl/lockf) or to the open file
 * description (flock, F_OFD_*), not to a thread: any thread may unlock it,
 * and close() or exit ends it.  A distributed hold belongs to the thread
 * that took it.  So each distributed file-lock hold is taken and released
 * by a small helper thread of its own, which waits in between; whichever
 * thread unlocks, closes or exits only asks the helper to let go.
 *
 * One record per hold: for POSIX locks one per (process, file), as the
 * kernel keeps them; for flock and OFD locks one per open file description.
 * Locking again in the held mode is a no-op (file locks do not count);
 * another mode converts by release-then-acquire, which is how flock
 * converts too.  The helper also notices, within a second, a descriptor
 * closed behind the wrappers' back (fclose, dup2, close_range) and lets go.
 *
 * A blocking request waits for its helper as the kernel waits for a file
 * lock: interruptibly.  The caller sleeps in read() on an eventfd the
 * helper writes, so a caught signal ends the wait exactly when it would
 * end a blocking flock() or F_SETLKW: EINTR after a handler installed
 * without SA_RESTART, a transparent restart with it (flock(1) -w builds
 * its time-out on alarm() and EINTR).  On EINTR the caller stops the
 * helper's acquisition (withdrawn from Redis's queue) and returns; the
 * helper lets go of whatever it got meanwhile and frees the record.
 */
#include <errno.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dl.h"
#include "preload.h"
#include "process.h"

#define MAX_RECS 256
#define HELPER_STACK (256 * 1024)
#define CHECK_EVERY_MS 1000

enum { H_ACQUIRING = 1, H_HELD, H_FAILED, H_RELEASE, H_DONE };

typedef struct frec {
    int used;
    int kind;                 /* DLP_FL_* */
    int fd;                   /* the descriptor that took it */
    dev_t dev;
    ino_t ino;
    dlp_entry_t *e;
    char mode;                /* 'r' or 'w' while held */
    int busy;                 /* a caller is changing this record */
    int state;                /* H_*: the helper's side */
    char req_mode;
    int req_try;
    int result;
    int orphan;               /* the helper lets go on its own and frees it */
    int efd;                  /* a blocking caller waits on it; -1 none */
    int stop;                 /* the caller was interrupted: stop acquiring (atomic) */
    int abandoned;            /* ... and has returned: the helper ends it all */
} frec_t;

static frec_t recs[MAX_RECS];
static pid_t recs_pid;            /* the process they are of (a vfork child shares them) */
static pthread_mutex_t fmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fcv;
int dlp_fheld;

static void lock(void) { DLP_REAL(pthread_mutex_lock)(&fmu); }
static void unlock(void) { DLP_REAL(pthread_mutex_unlock)(&fmu); }
static void wake(void) { pthread_cond_broadcast(&fcv); }
static void wait_ms(unsigned ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    DLP_REAL(pthread_cond_timedwait)(&fcv, &fmu, &ts);
}
static void wait_forever(void) { DLP_REAL(pthread_cond_wait)(&fcv, &fmu); }

void dlp_file_init(void)
{
    recs_pid = getpid();
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&fcv, &a);
    pthread_condattr_destroy(&a);
}

void dlp_file_after_fork(void)
{
    /* The helpers are the parent's; so are the holds. */
    pthread_mutex_init(&fmu, NULL);
    dlp_file_init();
    memset(recs, 0, sizeof recs);
    __atomic_store_n(&dlp_fheld, 0, __ATOMIC_RELAXED);
}

static void free_rec(frec_t *r)
{
    __atomic_store_n(&r->used, 0, __ATOMIC_RELEASE);
    __atomic_sub_fetch(&dlp_fheld, 1, __ATOMIC_RELAXED);
}

static int same_ofd(int a, int b)
{
    if (a == b)
        return 1;
    pid_t me = getpid();
    return syscall(SYS_kcmp, me, me, KCMP_FILE, a, b) == 0;
}

static frec_t *find(int kind, int fd, dev_t dev, ino_t ino)
{
    for (int i = 0; i < MAX_RECS; i++) {
        frec_t *r = &recs[i];
        if (!r->used || r->abandoned || r->kind != kind || r->dev != dev || r->ino != ino)
            continue;
        if (kind == DLP_FL_POSIX || same_ofd(r->fd, fd))
            return r;
    }
    return NULL;
}

/* Does the record's descriptor still refer to its file? */
static int still_open(const frec_t *r)
{
    struct stat st;
    return fstat(r->fd, &st) == 0 && st.st_dev == r->dev && st.st_ino == r->ino;
}

static void *helper(void *arg)
{
    frec_t *r = arg;
    dlp_in = 1;                               /* all of this thread is interposer code */
    lock();
    dlp_entry_t *e = r->e;
    char mode = r->req_mode;
    int try_only = r->req_try;
    unlock();

    int rc = dlp_dist_acquire(e, mode, try_only ? DLP_TRY : DLP_BLOCK, CLOCK_REALTIME, NULL,
                              try_only ? NULL : &r->stop);
    lock();
    if (r->abandoned) {
        /* The caller was interrupted and has returned: nobody wants what
         * this got, if anything. */
        unlock();
        if (rc == 0)
            dlp_dist_release(e);
        lock();
        free_rec(r);
        wake();
        unlock();
        return NULL;
    }
    r->result = rc;
    r->state = rc ? H_FAILED : H_HELD;
    wake();
    if (r->efd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(r->efd, &one, sizeof one);
        (void)w;                              /* a counter: it cannot be full */
    }
    if (rc) {
        unlock();
        return NULL;
    }
    while (r->state != H_RELEASE) {
        wait_ms(CHECK_EVERY_MS);
        if (r->state == H_HELD && !r->busy && !still_open(r)) {
            r->state = H_RELEASE;
            r->orphan = 1;
        }
    }
    int orphan = r->orphan;
    unlock();

    dlp_dist_release(e);

    lock();
    r->state = H_DONE;
    if (orphan) {
        dl_log(DL_LOG_INFO, "preload: lock \"%s\": descriptor %d closed without unlock; released",
               e->name, r->fd);
        free_rec(r);
    }
    wake();
    unlock();
    return NULL;
}

/* The helper takes none of the program's signals (the library's threads
 * take none either). */
static int spawn(frec_t *r)
{
    return dl_thread_start_sized(helper, r, HELPER_STACK);
}

/* fmu held; r held and not busy: lets go of it and frees it. */
static void release_rec(frec_t *r)
{
    r->busy = 1;
    r->state = H_RELEASE;
    wake();
    while (r->state != H_DONE)
        wait_forever();
    r->busy = 0;
    free_rec(r);
    wake();
}

static frec_t *find_idle(int kind, int fd, dev_t dev, ino_t ino)
{
    frec_t *r;
    while ((r = find(kind, fd, dev, ino)) && (r->busy || r->state == H_RELEASE))
        wait_forever();
    return r;
}

/* fmu held (and on return): waits until the helper of a blocking request
 * is done, in read() on its eventfd, which a caught signal interrupts as
 * it would interrupt the kernel's own wait for a file lock.  0, or EINTR:
 * a handler without SA_RESTART ran while it was still acquiring. */
static int wait_helper(frec_t *r)
{
    while (r->state == H_ACQUIRING) {
        unlock();
        uint64_t v;
        ssize_t n = read(r->efd, &v, sizeof v);
        int err = errno;
        lock();
        if (n < 0 && err == EINTR && r->state == H_ACQUIRING)
            return EINTR;
        if (n < 0 && err != EINTR)
            while (r->state == H_ACQUIRING)
                wait_forever();
    }
    return 0;
}

/* fmu held: the blocking caller of r was interrupted.  Stops the helper's
 * acquisition and leaves r to it (it frees r). */
static void abandon(frec_t *r)
{
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
    r->abandoned = 1;
    DLP_REAL(close)(r->efd);
    r->efd = -1;
    wake();
}

int dlp_file_acquire(dlp_entry_t *e, int kind, int fd, dev_t dev, ino_t ino, char mode, int nonblock)
{
    lock();
    frec_t *r = find_idle(kind, fd, dev, ino);
    if (r && r->state == H_HELD && r->mode == mode) {
        unlock();
        return 0;                             /* file locks do not nest */
    }
    if (r) {
        /* Conversion: let go of the old mode first, as flock does. */
        r->busy = 1;
        r->state = H_RELEASE;
        wake();
        while (r->state != H_DONE)
            wait_forever();
    } else {
        for (int i = 0; i < MAX_RECS && !r; i++)
            if (!recs[i].used)
                r = &recs[i];
        if (!r) {
            unlock();
            dl_log(DL_LOG_ERROR, "preload: more than %d file locks held", MAX_RECS);
            return ENOLCK;
        }
        memset(r, 0, sizeof *r);
        r->kind = kind;
        r->fd = fd;
        __atomic_store_n(&r->dev, dev, __ATOMIC_RELAXED);
        __atomic_store_n(&r->ino, ino, __ATOMIC_RELAXED);
        __atomic_store_n(&r->used, 1, __ATOMIC_RELEASE);
        r->e = e;
        r->busy = 1;
        __atomic_add_fetch(&dlp_fheld, 1, __ATOMIC_RELAXED);
    }
    r->mode = 0;
    r->orphan = 0;
    r->state = H_ACQUIRING;
    r->req_mode = mode;
    r->req_try = nonblock;
    r->stop = 0;
    r->abandoned = 0;
    /* Without an eventfd (none left) the wait is as before: not
     * interruptible. */
    r->efd = nonblock ? -1 : eventfd(0, EFD_CLOEXEC);
    if (spawn(r)) {
        if (r->efd >= 0)
            DLP_REAL(close)(r->efd);
        free_rec(r);
        wake();
        unlock();
        dl_log(DL_LOG_ERROR, "preload: lock \"%s\": cannot start a helper thread", e->name);
        return ENOLCK;
    }
    if (r->efd >= 0) {
        if (wait_helper(r) == EINTR) {
            abandon(r);
            unlock();
            dlp_dist_interrupt(e);
            return EINTR;
        }
        DLP_REAL(close)(r->efd);
        r->efd = -1;
    }
    while (r->state == H_ACQUIRING)
        wait_forever();
    int rc = 0;
    if (r->state == H_FAILED) {
        rc = r->result == EBUSY ? EWOULDBLOCK : ENOLCK;
        free_rec(r);
    } else {
        r->mode = mode;
        r->busy = 0;
    }
    wake();
    unlock();
    return rc;
}

void dlp_file_release(int kind, int fd, dev_t dev, ino_t ino)
{
    lock();
    frec_t *r = find_idle(kind, fd, dev, ino);
    if (r && r->state == H_HELD)
        release_rec(r);
    unlock();
}

/* Without the lock: could a record be about this file?  Keeps close() of
 * every other file lock-free while file locks are held. */
static int maybe_held(dev_t dev, ino_t ino)
{
    for (int i = 0; i < MAX_RECS; i++)
        if (__atomic_load_n(&recs[i].used, __ATOMIC_ACQUIRE) &&
            __atomic_load_n(&recs[i].dev, __ATOMIC_RELAXED) == dev &&
            __atomic_load_n(&recs[i].ino, __ATOMIC_RELAXED) == ino)
            return 1;
    return 0;
}

void dlp_file_closed(int fd, dev_t dev, ino_t ino)
{
    if (!maybe_held(dev, ino))
        return;
    lock();
    for (int again = 1; again;) {
        again = 0;
        for (int i = 0; i < MAX_RECS; i++) {
            frec_t *r = &recs[i];
            if (!r->used || r->abandoned || r->dev != dev || r->ino != ino)
                continue;
            /* Closing any descriptor of a file ends the process's POSIX
             * locks on it; an flock/OFD lock ends with its descriptor. */
            if (r->kind != DLP_FL_POSIX && r->fd != fd)
                continue;
            if (r->busy || r->state == H_RELEASE || r->state == H_ACQUIRING) {
                wait_forever();
                again = 1;
                break;
            }
            if (r->state == H_HELD) {
                release_rec(r);
                again = 1;
                break;
            }
        }
    }
    unlock();
}

int dlp_file_holds(dlp_filehold_t *out, int max)
{
    if (!__atomic_load_n(&dlp_fheld, __ATOMIC_RELAXED) || getpid() != recs_pid)
        return 0;
    int n = 0;
    lock();
    for (int i = 0; i < MAX_RECS && n < max; i++) {
        frec_t *r = &recs[i];
        /* (One being taken, converted or released by another thread now
         * is not held.) */
        if (r->used && !r->abandoned && !r->busy && r->state == H_HELD)
            out[n++] = (dlp_filehold_t){ r->e, r->kind, r->fd, r->dev, r->ino, r->mode };
    }
    unlock();
    return n;
}

void dlp_file_release_all(void)
{
    /* At exit other threads may still run (and hold fmu): wait a little
     * at most, and never for longer than a few seconds in all. */
    int got = 0;
    for (int i = 0; i < 100 && !(got = DLP_REAL(pthread_mutex_trylock)(&fmu) == 0); i++)
        dl_sleep_ms(10);
    if (!got)
        return;
    int pending = 0;
    for (int i = 0; i < MAX_RECS; i++) {
        frec_t *r = &recs[i];
        if (r->used && r->state == H_HELD && !r->busy) {
            r->busy = 1;
            r->state = H_RELEASE;
            pending++;
        }
    }
    /* A blocking request still waiting (the program exits from a signal
     * handler, as lckdo -W does, or from another thread) or given up on
     * EINTR (flock(1) -w exits right after) is withdrawn from Redis's
     * queue by its helper, one round trip: an exit that cut it short
     * would leave a registration that the next release grants to nobody,
     * keeping everyone out for a claim window. */
    dlp_entry_t *stopped[MAX_RECS];
    int nstopped = 0;
    for (int i = 0; i < MAX_RECS; i++) {
        frec_t *r = &recs[i];
        if (r->used && r->state == H_ACQUIRING && !r->abandoned && !r->req_try) {
            __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
            r->abandoned = 1;             /* its caller never returns now */
            stopped[nstopped++] = r->e;
        }
        pending += r->used && r->abandoned;
    }
    wake();
    unlock();
    for (int i = 0; i < nstopped; i++)
        dlp_dist_interrupt(stopped[i]);
    lock();
    uint64_t give_up = dl_now_ms() + 5000;
    while (pending && dl_now_ms() < give_up) {
        pending = 0;
        for (int i = 0; i < MAX_RECS; i++)
            if (recs[i].used && ((recs[i].busy && recs[i].state == H_RELEASE) ||
                                 recs[i].abandoned))
                pending++;
        if (pending)
            wait_ms(100);
    }
    unlock();
}
