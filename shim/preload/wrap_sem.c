/* SPDX-License-Identifier: BSD-3-Clause */
/* wrap_sem.c - the sem kind: POSIX named semaphores mapped by `NAME=sem:/SEMNAME`
 * entries: sem_open of a mapped name returns a handle of the interposer's
 * (one per entry, in this library's memory, so a lookup is one range
 * check), and sem_wait, sem_trywait, sem_timedwait, sem_clockwait (on
 * its clock), sem_post, sem_getvalue and sem_close on it become calls of a
 * counting dist_sem_t (its first value: sem_open's).  sem_unlink of a
 * mapped name removes the semaphore from Redis (dist_sem_unlink): a later
 * sem_open with O_CREAT makes a new one with its value, one without
 * O_CREAT fails with ENOENT; unlike the kernel's, handles still open then
 * use the new one from their next call.  Anything else goes to libc:
 * unnamed semaphores (sem_init), other names.
 *
 * Errors as the kernel's: sem_open ENOENT (no O_CREAT, the semaphore does
 * not exist), EEXIST (O_CREAT|O_EXCL, it does), EINVAL (value above
 * SEM_VALUE_MAX); sem_trywait EAGAIN; sem_timedwait ETIMEDOUT, EINVAL (a
 * bad abstime when it would block); sem_post EOVERFLOW.  A blocking wait
 * is interruptible as the kernel's is: a signal handler that runs ends it
 * with EINTR, with or without SA_RESTART (sem_wait is never restarted).
 * For that the distributed wait runs in a helper thread while the caller
 * sleeps in poll() (never restarted either) on an eventfd the helper
 * writes; a free permit is taken first, without a helper.  Redis
 * unreachable: DISTLOCK_ON_ERROR (wait: retried, a post kept and made
 * once Redis answers; abort: the program aborts), as for locks.  A
 * semaphore Redis lost while the program used it (a restart without
 * persistence, a flush: the library's ENOLCK and dist_onlost, which no
 * sem_* call can pass on): DISTLOCK_ON_LOSS, as for a mapped lock's lost
 * hold (abort, exit:N; warn: said once, and the program goes on with the
 * semaphore Redis has now, a post to the lost one dropped). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dl.h"
#include "preload.h"
#include "sem_api.h"

DLP_OBJ_FITS(dist_sem_t);

/* The semaphore calls are not made by dlsym's allocator: no fallback is
 * ever used (ENOSYS, as a libc without them would give). */
static int sem_missing(void)
{
    errno = ENOSYS;
    return -1;
}

static sem_t *sem_open_missing(void)
{
    errno = ENOSYS;
    return SEM_FAILED;
}

#define SEM_REAL(f, params, args) \
    DLP_REAL_FN(int, f, params, args, NULL, sem_missing, (errno = ENOSYS, -1))
SEM_REAL(sem_close, (sem_t *s), (s))
SEM_REAL(sem_wait, (sem_t *s), (s))
SEM_REAL(sem_trywait, (sem_t *s), (s))
SEM_REAL(sem_timedwait, (sem_t *s, const struct timespec *t), (s, t))
SEM_REAL(sem_clockwait, (sem_t *s, clockid_t c, const struct timespec *t), (s, c, t))
SEM_REAL(sem_post, (sem_t *s), (s))
SEM_REAL(sem_getvalue, (sem_t *s, int *v), (s, v))
SEM_REAL(sem_unlink, (const char *n), (n))

/* sem_open's mode and value are there only with O_CREAT; passed on alike. */
static sem_t *boot_sem_open(const char *name, int oflag, ...);
static sem_t *(*dlp_real_sem_open)(const char *, int, ...) = boot_sem_open;
DLP_REAL_ROW(sem_open, NULL, sem_open_missing);
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

#define HELPER_STACK (256 * 1024)

/* The handles sem_open returns: one per entry, never read or written by
 * libc (no call of libc ever sees one). */
static sem_t handles[DLP_MAX_ENTRIES];
static dlp_entry_t *sems[DLP_MAX_ENTRIES];
static int nsem;
static int opens[DLP_MAX_ENTRIES];     /* sem_open count not closed (under mu) */
static int made[DLP_MAX_ENTRIES];      /* the dist_sem_t is initialized (under mu) */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void lock(void) { DLP_REAL(pthread_mutex_lock)(&mu); }
static void unlock(void) { DLP_REAL(pthread_mutex_unlock)(&mu); }

/* Before main: e is mapped, a sem_open of its name returns its handle
 * from now on; EINVAL when semaphores cannot be used (redlock://). */
static int add(dlp_entry_t *e)
{
    int rc = dl_sem_check_mode();
    if (rc)
        return rc;
    sems[nsem++] = e;
    return 0;
}

/* The entry of a handle, or -1: not ours. */
static int index_of(const sem_t *s)
{
    uintptr_t off = (uintptr_t)s - (uintptr_t)handles;
    if (DLP_LIKELY(off >= sizeof handles || off % sizeof(sem_t)))
        return -1;
    return (int)(off / sizeof(sem_t));
}

/* The words for a mapped semaphore that Redis lost. */
static void sem_line(char *line, size_t size, const char *name, size_t namelen)
{
    int len = namelen > 200 ? 200 : (int)namelen;
    snprintf(line, size, "semaphore \"%.*s\": Redis lost it while this program used it (a "
             "restart without persistence, a flush, eviction); it starts again from its first "
             "value, and more processes than it allows may be inside now", len, name);
}

/* The kind's lost_words: a semaphore Redis lost is told with fence 0. */
static int lost_words(const char *name, size_t len, uint64_t fence, char *line, size_t size)
{
    if (fence != 0)
        return 0;
    for (int i = 0; i < nsem; i++)
        if (strlen(sems[i]->name) == len && memcmp(sems[i]->name, name, len) == 0) {
            sem_line(line, size, name, len);
            return 1;
        }
    return 0;
}

/* The entry mapping a sem_open name (glibc ignores leading '/'s). */
static int entry_of(const char *name)
{
    if (!nsem || !name)
        return -1;
    while (*name == '/')
        name++;
    for (int i = 0; i < nsem; i++)
        if (strcmp(sems[i]->target, name) == 0)
            return i;
    return -1;
}

/* p, hidden from the compiler's knowledge that <semaphore.h> declares it
 * nonnull: a NULL from the program is answered with EINVAL, not a crash. */
#define DLP_LAUNDER(p) ({ __typeof__(p) p_ = (p); __asm__("" : "+r"(p_)); p_; })

static int fail(int err)
{
    errno = err;
    return -1;
}

/* An outage under DISTLOCK_ON_ERROR: abort, or (wait) say so every few
 * seconds and return so that the caller retries after a pause. */
static void outage(dlp_entry_t *e, const char *what)
{
    if (dlp_on_error == DLP_ON_ERROR_ABORT)
        dlp_die("semaphore \"%s\": %s: %s (DISTLOCK_ON_ERROR=abort)", e->name, what,
                dist_lasterror());
    static uint64_t last;
    uint64_t now = dl_now_ms(), l = __atomic_load_n(&last, __ATOMIC_RELAXED);
    if ((!l || now - l >= 5000) &&
        __atomic_compare_exchange_n(&last, &l, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        dlp_say("semaphore \"%s\": %s: %s; waiting for Redis (DISTLOCK_ON_ERROR=wait)", e->name,
                what, dist_lasterror());
    dl_sleep_ms(100);
}

/* A call on entry i said ENOLCK: Redis lost the semaphore the program
 * used.  DISTLOCK_ON_LOSS abort or exit:N ends the program here; warn
 * (dlp_lost says it) takes up the semaphore Redis has now, initialized
 * again through an object of its own (as sem_open does), so that the
 * caller's next try works on it.  0, or the init's error (said). */
static int take_up(int i)
{
    dlp_entry_t *e = sems[i];
    int saved = dlp_in;
    dlp_in = 1;
    /* abort, exit:N stop the program here (told once, whoever tells
     * first: this or dlp_lost); warn: dlp_lost says it. */
    if (dlp_on_loss != DLP_ON_LOSS_WARN) {
        char line[512];
        sem_line(line, sizeof line, e->name, strlen(e->name));
        dlp_loss_act(line);
    }
    int rc;
    for (;;) {
        dist_sem_t t;
        rc = dl_sem_init_how(&t, e->name, DLP_OBJ(e, dist_sem_t)->dl_value, 0, 'c');
        if (rc == 0)
            dist_sem_destroy(&t);
        if (rc != EIO)
            break;
        outage(e, "sem_open");
    }
    if (rc)
        dlp_say("semaphore \"%s\": cannot use it again after Redis lost it: %s", e->name,
                dist_lasterror());
    dlp_in = saved;
    return rc;
}

/* A code the library returned where the kernel has none: the program
 * learns why on stderr and gets EINVAL (the semaphore exists as a leased
 * one, or cannot be used). */
static int odd(dlp_entry_t *e, const char *what, int rc)
{
    dlp_say("semaphore \"%s\": %s: %s", e->name, what, dist_lasterror());
    return rc == EINVAL || rc == ENOMEM ? rc : EINVAL;
}

/* ------------------------------------------------------------- sem_open */

DLP_EXPORT sem_t *sem_open(const char *name, int oflag, ...)
{
    va_list ap;
    va_start(ap, oflag);
    mode_t mode = (oflag & O_CREAT) ? va_arg(ap, mode_t) : 0;
    unsigned value = (oflag & O_CREAT) ? va_arg(ap, unsigned) : 0;
    va_end(ap);
    int i = entry_of(name);
    if (i < 0)
        return DLP_REAL(sem_open)(name, oflag, mode, value);
    dlp_entry_t *e = sems[i];
    if ((oflag & O_CREAT) && value > SEM_VALUE_MAX) {
        errno = EINVAL;
        return SEM_FAILED;
    }
    char how = !(oflag & O_CREAT) ? 'o' : (oflag & O_EXCL) ? 'x' : 'c';
    int saved = dlp_in;
    dlp_in = 1;
    lock();
    int rc;
    for (;;) {
        if (!made[i]) {
            rc = dl_sem_init_how(DLP_OBJ(e, dist_sem_t), e->name, value, 0, how);
            if (rc == 0)
                made[i] = 1;
        } else {
            /* Opened before: asks Redis whether it exists (ENOENT, EEXIST),
             * through an object of its own. */
            dist_sem_t t;
            rc = dl_sem_init_how(&t, e->name, value, 0, how);
            if (rc == 0)
                dist_sem_destroy(&t);
        }
        if (rc != EIO)
            break;
        unlock();
        outage(e, "sem_open");
        lock();
    }
    if (rc == 0)
        opens[i]++;
    unlock();
    dlp_in = saved;
    if (rc == 0)
        return &handles[i];
    errno = rc == ENOENT || rc == EEXIST ? rc : odd(e, "sem_open", rc);
    return SEM_FAILED;
}

/* The entry of a handle sem_open returned and that is still open, or -1
 * (errno EINVAL): a handle closed as often as it was opened is not valid
 * (the kernel's may crash the program; this one says EINVAL). */
static int open_entry(sem_t *s)
{
    int i = index_of(s);
    lock();
    int ok = opens[i] > 0 && made[i];
    unlock();
    if (!ok) {
        errno = EINVAL;
        return -1;
    }
    return i;
}

DLP_EXPORT int sem_close(sem_t *s)
{
    int i = index_of(s);
    if (i < 0)
        return DLP_REAL(sem_close)(s);
    lock();
    int ok = opens[i] > 0;
    if (ok)
        opens[i]--;
    unlock();
    /* The object stays: a handle opened again is the same one, and
     * another thread may still be returning from a call on it. */
    return ok ? 0 : fail(EINVAL);
}

/* ---------------------------------------------------------------- waits */

/* A blocking wait: the helper's and the caller's shared record. */
typedef struct swait {
    dlp_entry_t *e;
    int timed;
    clockid_t clock;          /* abs's */
    struct timespec abs;
    int stop;                 /* set by the interrupted caller (atomic) */
    int done, abandoned, rc;  /* under mu */
    int efd;
} swait_t;

static void *helper(void *arg)
{
    swait_t *w = arg;
    dlp_in = 1;                               /* all of this thread is interposer code */
    int rc;
    for (;;) {
        rc = dl_sem_wait_stoppable(DLP_OBJ(w->e, dist_sem_t), w->clock, w->timed ? &w->abs : NULL,
                                   &w->stop);
        if (rc != EIO || __atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
            break;
        outage(w->e, "sem_wait");
    }
    lock();
    if (w->abandoned) {
        /* The caller returned EINTR: a permit this took after all goes
         * back, as the kernel's interrupted wait takes none. */
        unlock();
        if (rc == 0)
            dist_sem_post(DLP_OBJ(w->e, dist_sem_t));
        DLP_REAL(close)(w->efd);
        free(w);
        return NULL;
    }
    w->rc = rc;
    w->done = 1;
    uint64_t one = 1;
    ssize_t n = write(w->efd, &one, sizeof one);
    (void)n;                                  /* a counter: it cannot be full */
    unlock();
    return NULL;
}

/* The distributed wait of entry i until abstime on clock (NULL: none): 0
 * or an errno value. */
static int wait_dist(int i, clockid_t clock, const struct timespec *abstime)
{
    dlp_entry_t *e = sems[i];
    int saved = dlp_in;
    dlp_in = 1;
    /* A free permit first, in the caller's thread: no helper, and a
     * timed wait with a permit free takes it whatever its abstime (as
     * sem_timedwait does). */
    int rc;
    while ((rc = dist_sem_trywait(DLP_OBJ(e, dist_sem_t))) == EIO)
        outage(e, "sem_wait");
    if (rc != EAGAIN)
        goto out;
    if (abstime && (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)) {
        rc = EINVAL;
        goto out;
    }
    swait_t *w = calloc(1, sizeof *w);
    int efd = w ? eventfd(0, EFD_CLOEXEC) : -1;
    if (efd < 0) {
        free(w);
        rc = ENOMEM;
        goto out;
    }
    w->e = e;
    w->efd = efd;
    w->clock = clock;
    if (abstime) {
        w->timed = 1;
        w->abs = *abstime;
    }
    if (dl_thread_start_sized(helper, w, HELPER_STACK)) {
        DLP_REAL(close)(efd);
        free(w);
        dl_log(DL_LOG_ERROR, "preload: semaphore \"%s\": cannot start a helper thread", e->name);
        rc = EAGAIN;
        goto out;
    }
    struct pollfd pf = { efd, POLLIN, 0 };
    for (;;) {
        int n = poll(&pf, 1, -1);
        int err = errno;
        lock();
        if (w->done) {
            rc = w->rc;
            unlock();
            DLP_REAL(close)(efd);
            free(w);
            break;
        }
        if (n < 0 && err == EINTR) {
            /* A handler ran: the wait ends here, as the kernel's does; the
             * helper withdraws from Redis's queue and frees w. */
            w->abandoned = 1;
            __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
            unlock();
            dl_sem_interrupt(DLP_OBJ(e, dist_sem_t));
            rc = EINTR;
            break;
        }
        unlock();
    }
out:
    dlp_in = saved;
    return rc;
}

static int waited(int i, int rc, const char *what)
{
    switch (rc) {
    case 0:
        return 0;
    case ETIMEDOUT:
    case EINTR:
    case EAGAIN:
    case ENOMEM:
        return fail(rc);
    case EINVAL:
        return fail(EINVAL);
    default:
        return fail(odd(sems[i], what, rc));
    }
}

DLP_EXPORT int sem_wait(sem_t *s)
{
    if (index_of(s) < 0)
        return DLP_REAL(sem_wait)(s);
    int i = open_entry(s);
    if (i < 0)
        return -1;
    int rc;
    while ((rc = wait_dist(i, CLOCK_REALTIME, NULL)) == ENOLCK && take_up(i) == 0)
        ;
    return waited(i, rc, "sem_wait");
}

DLP_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
    if (index_of(s) < 0)
        return DLP_REAL(sem_timedwait)(s, abstime);
    int i = open_entry(s);
    if (i < 0)
        return -1;
    if (!DLP_LAUNDER(abstime))
        return fail(EINVAL);
    int rc;
    while ((rc = wait_dist(i, CLOCK_REALTIME, abstime)) == ENOLCK && take_up(i) == 0)
        ;
    return waited(i, rc, "sem_timedwait");
}

/* sem_clockwait: the wait on the clock it names (the library's clock
 * wait): never ETIMEDOUT before abstime on that clock, whatever the other
 * one does. */
DLP_EXPORT int sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *abstime)
{
    if (index_of(s) < 0)
        return DLP_REAL(sem_clockwait)(s, clock, abstime);
    int i = open_entry(s);
    if (i < 0)
        return -1;
    if (!DLP_LAUNDER(abstime) || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
        return fail(EINVAL);
    int rc;
    while ((rc = wait_dist(i, clock, abstime)) == ENOLCK && take_up(i) == 0)
        ;
    return waited(i, rc, "sem_clockwait");
}

DLP_EXPORT int sem_trywait(sem_t *s)
{
    if (index_of(s) < 0)
        return DLP_REAL(sem_trywait)(s);
    int i = open_entry(s);
    if (i < 0)
        return -1;
    int saved = dlp_in;
    dlp_in = 1;
    int rc;
    while ((rc = dist_sem_trywait(DLP_OBJ(sems[i], dist_sem_t))) == ENOLCK && take_up(i) == 0)
        ;
    if (rc == EIO) {
        /* A try never waits: "not now", as a lock's try says EBUSY. */
        outage(sems[i], "sem_trywait");
        rc = EAGAIN;
    }
    dlp_in = saved;
    return waited(i, rc, "sem_trywait");
}

/* ------------------------------------------------------- post, getvalue */

DLP_EXPORT int sem_post(sem_t *s)
{
    if (index_of(s) < 0)
        return DLP_REAL(sem_post)(s);
    int i = open_entry(s);
    if (i < 0)
        return -1;
    dlp_entry_t *e = sems[i];
    int saved = dlp_in;
    dlp_in = 1;
    int rc = dist_sem_post(DLP_OBJ(e, dist_sem_t));
    /* Not confirmed: the library keeps the post and makes it once Redis
     * answers, exactly once; this waits until it has. */
    while (rc == EIO) {
        outage(e, "sem_post");
        rc = dl_sem_flush(DLP_OBJ(e, dist_sem_t));
    }
    dlp_in = saved;
    /* Posted to a semaphore Redis lost: nothing to add to the new one,
     * whose first value counts the permit again. */
    if (rc == ENOLCK && take_up(i) == 0)
        return 0;
    if (rc == 0)
        return 0;
    return fail(rc == EOVERFLOW ? EOVERFLOW : odd(e, "sem_post", rc));
}

DLP_EXPORT int sem_getvalue(sem_t *s, int *sval)
{
    if (index_of(s) < 0)
        return DLP_REAL(sem_getvalue)(s, sval);
    int i = open_entry(s);
    if (i < 0)
        return -1;
    if (!DLP_LAUNDER(sval))
        return fail(EINVAL);
    dlp_entry_t *e = sems[i];
    int saved = dlp_in;
    dlp_in = 1;
    int rc;
    while ((rc = dist_sem_getvalue(DLP_OBJ(e, dist_sem_t), sval)) == EIO || rc == ENOLCK) {
        if (rc == EIO)
            outage(e, "sem_getvalue");
        else if (take_up(i))
            break;
    }
    dlp_in = saved;
    return rc ? fail(odd(e, "sem_getvalue", rc)) : 0;
}

/* --------------------------------------------------------------- unlink */

DLP_EXPORT int sem_unlink(const char *name)
{
    int i = entry_of(name);
    if (i < 0)
        return DLP_REAL(sem_unlink)(name);
    dlp_entry_t *e = sems[i];
    int saved = dlp_in;
    dlp_in = 1;
    int rc;
    while ((rc = dist_sem_unlink(e->name)) == EIO)
        outage(e, "sem_unlink");
    dlp_in = saved;
    if (rc == 0)
        return 0;
    return fail(rc == ENOENT ? ENOENT : odd(e, "sem_unlink", rc));
}

static void after_fork(void)
{
    pthread_mutex_init(&mu, NULL);
}

/* ------------------------------------------------------------ the kind */

/* A semaphore applies in every program, as a file does: its name means
 * the same semaphore anywhere. */
const dlp_kind_t dlp_kind_sem = {
    .word = "sem",
    .target = DLP_BY_NAME,
    .what = "semaphore",
    .space = DL_KIND_SEM,
    .unique = 1,
    .init = add,
    .after_fork = after_fork,
    .lost_words = lost_words,
};
