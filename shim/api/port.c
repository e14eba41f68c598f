/* SPDX-License-Identifier: BSD-3-Clause */
/* port.c - the calls of <distlock/pthread.h> (dist_pthread_*): a pthread
 * program made distributed by one include line (distlock_pthread(7)).
 *
 * Each call is the dist_* call of its object with what a program written
 * for pthreads cannot do itself:
 *   - names: an object initialized at run time is named by
 *     dist_pthread_name, else by the place of its init call if it lies in
 *     static storage, else privately (that place, this process, that
 *     address); one place names one live object per kind space and
 *     process (port.h), or the program stops: two locks of the program
 *     are never silently made one;
 *   - Redis unreachable (EIO): DISTLOCK_ON_ERROR, read once: wait (the
 *     default: warned every few seconds, retried; a try says EBUSY, a
 *     timed call ETIMEDOUT at its time) or abort, as the interposer does;
 *   - a lock taken after its holder died: EOWNERDEAD reaches only a robust
 *     mutex's caller (PTHREAD_MUTEX_ROBUST), the others are warned;
 *   - an object that is not initialized (zeroed by memset or calloc, which
 *     a glibc mutex tolerates): the program stops with a line saying so
 *     instead of running its section unprotected.
 * Nothing here runs unless a ported program calls it. */
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIST_PRIV_PORT_IMPL
#include "distlock/pthread.h"

#include "barrier_api.h"
#include "condwait.h"
#include "dl.h"
#include "object.h"
#include "port.h"
#include "sem_api.h"
#include "self.h"

/* ------------------------------------------------------------ stopping */

static void stop(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void stop(const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "distlock: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
    abort();
}

/* ---------------------------------------------------------- the places */

/* Mutexes and rwlocks share their names (one lock is one or the other);
 * the other kinds have names of their own. */
static int space_of(unsigned magic)
{
    return magic == DL_MAGIC_RWLOCK ? (int)DL_MAGIC_MUTEX : (int)magic;
}

static const char *what_of(unsigned magic)
{
    switch (magic) {
    case DL_MAGIC_COND: return "condition";
    case DL_MAGIC_SEM: return "semaphore";
    case DL_MAGIC_BARRIER: return "barrier";
    default: return "lock";
    }
}

typedef struct place {
    const void *obj;
    int space;
    char *name;
} place_t;

typedef struct named {                 /* dist_pthread_name, before the init */
    const void *obj;
    char *name;
} named_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static place_t *places;
static size_t nplaces, capplaces;
static named_t *nameds;
static size_t nnameds, capnameds;

void dl_port_after_fork(void)
{
    pthread_mutex_init(&mu, NULL);
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    void *nv = realloc(*v, c * size);
    if (!nv)
        return -1;
    *v = nv;
    *cap = c;
    return 0;
}

void dl_port_place_claim(const void *obj, unsigned magic, const char *name)
{
    int space = space_of(magic);
    pthread_mutex_lock(&mu);
    place_t *mine = NULL;
    for (size_t i = 0; i < nplaces; i++) {
        if (places[i].obj == obj) {
            mine = &places[i];
            continue;
        }
        if (places[i].space == space && strcmp(places[i].name, name) == 0)
            stop("%s: a second %s named by this place while the first is in use (two "
                 "initializers on one line, a static %s in a header, or one init call for "
                 "several objects): they would be one %s; name each, with DIST_NAME(\"...\", "
                 "PTHREAD_..._INITIALIZER) or dist_pthread_name(&obj, \"...\") before its init "
                 "(distlock_pthread(7))", name, what_of(magic), what_of(magic), what_of(magic));
    }
    char *copy = strdup(name);
    if (!copy)
        stop("%s: out of memory", name);
    if (mine) {                   /* initialized again, at this place now */
        free(mine->name);
        *mine = (place_t){ obj, space, copy };
    } else {
        if (grow((void **)&places, &capplaces, nplaces, sizeof *places))
            stop("%s: out of memory", name);
        places[nplaces++] = (place_t){ obj, space, copy };
    }
    pthread_mutex_unlock(&mu);
}

void dl_port_place_release(const void *obj)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nplaces; i++)
        if (places[i].obj == obj) {
            free(places[i].name);
            places[i] = places[--nplaces];
            break;
        }
    pthread_mutex_unlock(&mu);
}

int dist_pthread_name(const void *obj, const char *name)
{
    if (!obj || !name || !name[0] || strnlen(name, DIST_NAME_MAX + 1) > DIST_NAME_MAX)
        return dl_fail(EINVAL, "dist_pthread_name: the object or the name is NULL, or the name "
                       "is empty or longer than DIST_NAME_MAX");
    char *copy = strdup(name);
    if (!copy)
        return dl_fail(ENOMEM, "out of memory");
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nnameds; i++)
        if (nameds[i].obj == obj) {
            free(nameds[i].name);
            nameds[i].name = copy;
            pthread_mutex_unlock(&mu);
            return 0;
        }
    int rc = grow((void **)&nameds, &capnameds, nnameds, sizeof *nameds);
    if (rc == 0)
        nameds[nnameds++] = (named_t){ obj, copy };
    pthread_mutex_unlock(&mu);
    if (rc) {
        free(copy);
        return dl_fail(ENOMEM, "out of memory");
    }
    return 0;
}

/* The name dist_pthread_name gave obj (the caller frees it), or NULL. */
static char *take_name(const void *obj)
{
    char *name = NULL;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nnameds; i++)
        if (nameds[i].obj == obj) {
            name = nameds[i].name;
            nameds[i] = nameds[--nnameds];
            break;
        }
    pthread_mutex_unlock(&mu);
    return name;
}

/* Is [obj, obj+size) in a writable loaded segment of the program or a
 * library: a global, a static, or inside one? */
typedef struct where {
    uintptr_t a;
    size_t size;
    int found;
} where_t;

static int in_segment(struct dl_phdr_info *info, size_t sz, void *arg)
{
    (void)sz;
    where_t *w = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (w->a >= lo && w->a + w->size <= hi) {
            w->found = 1;
            return 1;
        }
    }
    return 0;
}

static int static_storage(const void *obj, size_t size)
{
    where_t w = { (uintptr_t)obj, size, 0 };
    dl_iterate_phdr(in_segment, &w);
    return w.found;
}

/* The name of an object initialized at run time (kind magic, size bytes,
 * at place): into buf, or the copy dist_pthread_name kept (*given, to be
 * freed).  *is_place when it is the place, to claim. */
static const char *runtime_name(const void *obj, size_t size, const char *place, char *buf,
                                size_t bufsize, char **given, int *is_place)
{
    *is_place = 0;
    if ((*given = take_name(obj)))
        return *given;
    if (static_storage(obj, size)) {
        *is_place = 1;
        return place;
    }
    /* The heap, a stack, memory the program mapped: this object's own,
     * as it was with pthreads (and that of every process sharing its
     * memory, which read the name from the object). */
    snprintf(buf, bufsize, "%s/%016llx/%lx", place, (unsigned long long)dl_self_tag(),
             (unsigned long)(uintptr_t)obj);
    return buf;
}

/* An init of kind magic with its name: claims the place, runs init(name),
 * gives the place back if init failed. */
#define PORT_INIT(obj, magic, place, call)                                                  \
    do {                                                                                    \
        char buf_[DIST_NAME_MAX + 1], *given_;                                              \
        int isp_;                                                                           \
        const char *name = runtime_name((obj), sizeof *(obj), (place), buf_, sizeof buf_,   \
                                        &given_, &isp_);                                    \
        if (isp_)                                                                           \
            dl_port_place_claim((obj), (magic), name);                                      \
        rc = (call);                                                                        \
        if (rc && isp_)                                                                     \
            dl_port_place_release(obj);                                                     \
        free(given_);                                                                       \
    } while (0)

/* ---------------------------------------------------------- the policy */

enum { ON_ERROR_WAIT, ON_ERROR_ABORT };
static int on_error = -1;

static int policy(void)
{
    int p = __atomic_load_n(&on_error, __ATOMIC_RELAXED);
    if (p < 0) {
        const char *v = getenv("DISTLOCK_ON_ERROR");
        p = v && strcmp(v, "abort") == 0 ? ON_ERROR_ABORT : ON_ERROR_WAIT;
        __atomic_store_n(&on_error, p, __ATOMIC_RELAXED);
    }
    return p;
}

/* An EIO of call: aborts (DISTLOCK_ON_ERROR=abort), or warns every few
 * seconds and pauses before the caller's next try. */
static void outage(const char *call)
{
    static uint64_t last;
    if (policy() == ON_ERROR_ABORT)
        stop("%s: %s (DISTLOCK_ON_ERROR=abort)", call, dist_lasterror());
    uint64_t now = dl_now_ms(), l = __atomic_load_n(&last, __ATOMIC_RELAXED);
    if ((!l || now - l >= 5000) &&
        __atomic_compare_exchange_n(&last, &l, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        dl_log(DL_LOG_WARN, "%s: %s; waiting for Redis (DISTLOCK_ON_ERROR=wait)", call,
               dist_lasterror());
    dl_sleep_ms(100);
}

/* A call on an object that is not an initialized one of its kind (EINVAL
 * from a check of the object itself): the program would run on
 * unprotected; it stops. */
static void check_obj(const struct dist_lockobj *o, unsigned magic, const char *call)
{
    if (o && (o->dl_magic == magic || o->dl_magic == DIST_PRIV_MAGIC_STATIC))
        return;
    stop("%s: the %s is not initialized (%s): a pthread object set to zero by memset or "
         "calloc, or used before its init or after its destroy, is no distributed %s; "
         "initialize it (distlock_pthread(7))", call, what_of(magic),
         o && o->dl_magic == 0 ? "all zero" : o ? "destroyed or garbage" : "NULL",
         what_of(magic));
}

/* A lock call's result as pthreads gives it: EOWNERDEAD only to a robust
 * mutex's caller; a lenient one is warned and holds the lock. */
static int owner_dead(int rc, const struct dist_lockobj *o, const char *call)
{
    if (rc != EOWNERDEAD || o->dl_robust == DIST_MUTEX_ROBUST)
        return rc;
    dl_log(DL_LOG_WARN, "%s: %s", call, dist_lasterror());
    return 0;
}

/* A blocking acquisition: retried through outages. */
#define BLOCKING(o, magic, call, expr)                                                      \
    do {                                                                                    \
        while ((rc = (expr)) == EIO)                                                        \
            outage(call);                                                                   \
        if (rc == EINVAL)                                                                   \
            check_obj((o), (magic), call);                                                  \
    } while (0)

/* A try: EIO is "not now". */
#define TRYING(o, magic, call, expr, busy)                                                  \
    do {                                                                                    \
        rc = (expr);                                                                        \
        if (rc == EIO) {                                                                    \
            if (policy() == ON_ERROR_ABORT)                                                 \
                stop("%s: %s (DISTLOCK_ON_ERROR=abort)", call, dist_lasterror());           \
            dl_log(DL_LOG_WARN, "%s: %s", call, dist_lasterror());                          \
            rc = (busy);                                                                    \
        }                                                                                   \
        if (rc == EINVAL)                                                                   \
            check_obj((o), (magic), call);                                                  \
    } while (0)

/* A timed one: retried through outages until abstime on clock. */
#define TIMED(o, magic, call, clock, abstime, expr)                                        \
    do {                                                                                    \
        while ((rc = (expr)) == EIO) {                                                      \
            outage(call);                                                                   \
            if (dl_passed_on((clock), (abstime))) {                                         \
                rc = ETIMEDOUT;                                                             \
                break;                                                                      \
            }                                                                               \
        }                                                                                   \
        if (rc == EINVAL && abstime)                                                        \
            check_obj((o), (magic), call);                                                  \
    } while (0)

/* An unlock: EIO leaves the hold to lapse within its lease (the library
 * said so); ENOLCK was said by the library; both are done as far as the
 * program can tell. */
static int unlocked(int rc, const struct dist_lockobj *o, unsigned magic, const char *call)
{
    if (rc == EIO && policy() == ON_ERROR_ABORT)
        stop("%s: %s (DISTLOCK_ON_ERROR=abort)", call, dist_lasterror());
    if (rc == EIO || rc == ENOLCK) {
        dl_log(DL_LOG_WARN, "%s: %s", call, dist_lasterror());
        return 0;
    }
    if (rc == EINVAL)
        check_obj(o, magic, call);
    return rc;
}

/* ------------------------------------------------------------- mutex */

int dist_pthread_mutex_init(dist_mutex_t *m, const dist_pthread_mutexattr_t *a, const char *place)
{
    int rc;
    if (!m)
        return EINVAL;
    PORT_INIT(m, DL_MAGIC_MUTEX, place, dist_mutex_init(m, name, a ? &a->dl_a : NULL));
    if (rc == 0 && !a)
        m->dl_o.dl_type = DIST_MUTEX_ERRORCHECK;    /* pthreads' default type */
    return rc;
}

int dist_pthread_mutex_destroy(dist_mutex_t *m)
{
    int rc;
    while ((rc = dist_mutex_destroy(m)) == EIO)
        outage("pthread_mutex_destroy");
    return rc;
}

int dist_pthread_mutex_lock(dist_mutex_t *m)
{
    int rc;
    BLOCKING(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX, "pthread_mutex_lock", dist_mutex_lock(m));
    return owner_dead(rc, &m->dl_o, "pthread_mutex_lock");
}

int dist_pthread_mutex_trylock(dist_mutex_t *m)
{
    int rc;
    TRYING(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX, "pthread_mutex_trylock", dist_mutex_trylock(m),
           EBUSY);
    return owner_dead(rc, &m->dl_o, "pthread_mutex_trylock");
}

int dist_pthread_mutex_clocklock(dist_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
    int rc;
    TIMED(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX, "pthread_mutex_clocklock", clock, abstime,
          dist_mutex_clocklock(m, clock, abstime));
    return owner_dead(rc, &m->dl_o, "pthread_mutex_clocklock");
}

int dist_pthread_mutex_timedlock(dist_mutex_t *m, const struct timespec *abstime)
{
    return dist_pthread_mutex_clocklock(m, CLOCK_REALTIME, abstime);
}

int dist_pthread_mutex_unlock(dist_mutex_t *m)
{
    return unlocked(dist_mutex_unlock(m), m ? &m->dl_o : NULL, DL_MAGIC_MUTEX,
                    "pthread_mutex_unlock");
}

int dist_pthread_mutex_consistent(dist_mutex_t *m)
{
    return dist_mutex_consistent(m);
}

/* ------------------------------------------------------------- rwlock */

int dist_pthread_rwlock_init(dist_rwlock_t *rw, const dist_pthread_rwlockattr_t *a,
                             const char *place)
{
    int rc;
    if (!rw)
        return EINVAL;
    PORT_INIT(rw, DL_MAGIC_RWLOCK, place, dist_rwlock_init(rw, name, a ? &a->dl_a : NULL));
    return rc;
}

int dist_pthread_rwlock_destroy(dist_rwlock_t *rw)
{
    int rc;
    while ((rc = dist_rwlock_destroy(rw)) == EIO)
        outage("pthread_rwlock_destroy");
    return rc;
}

#define RW_O(rw) ((rw) ? &(rw)->dl_o : NULL)

int dist_pthread_rwlock_rdlock(dist_rwlock_t *rw)
{
    int rc;
    BLOCKING(RW_O(rw), DL_MAGIC_RWLOCK, "pthread_rwlock_rdlock", dist_rwlock_rdlock(rw));
    return owner_dead(rc, &rw->dl_o, "pthread_rwlock_rdlock");
}

int dist_pthread_rwlock_wrlock(dist_rwlock_t *rw)
{
    int rc;
    BLOCKING(RW_O(rw), DL_MAGIC_RWLOCK, "pthread_rwlock_wrlock", dist_rwlock_wrlock(rw));
    return owner_dead(rc, &rw->dl_o, "pthread_rwlock_wrlock");
}

int dist_pthread_rwlock_tryrdlock(dist_rwlock_t *rw)
{
    int rc;
    TRYING(RW_O(rw), DL_MAGIC_RWLOCK, "pthread_rwlock_tryrdlock", dist_rwlock_tryrdlock(rw), EBUSY);
    return owner_dead(rc, &rw->dl_o, "pthread_rwlock_tryrdlock");
}

int dist_pthread_rwlock_trywrlock(dist_rwlock_t *rw)
{
    int rc;
    TRYING(RW_O(rw), DL_MAGIC_RWLOCK, "pthread_rwlock_trywrlock", dist_rwlock_trywrlock(rw), EBUSY);
    return owner_dead(rc, &rw->dl_o, "pthread_rwlock_trywrlock");
}

int dist_pthread_rwlock_clockrdlock(dist_rwlock_t *rw, clockid_t clock,
                                    const struct timespec *abstime)
{
    int rc;
    TIMED(RW_O(rw), DL_MAGIC_RWLOCK, "pthread_rwlock_clockrdlock", clock, abstime,
          dist_rwlock_clockrdlock(rw, clock, abstime));
    return owner_dead(rc, &rw->dl_o, "pthread_rwlock_clockrdlock");
}

int dist_pthread_rwlock_clockwrlock(dist_rwlock_t *rw, clockid_t clock,
                                    const struct timespec *abstime)
{
    int rc;
    TIMED(RW_O(rw), DL_MAGIC_RWLOCK, "pthread_rwlock_clockwrlock", clock, abstime,
          dist_rwlock_clockwrlock(rw, clock, abstime));
    return owner_dead(rc, &rw->dl_o, "pthread_rwlock_clockwrlock");
}

int dist_pthread_rwlock_timedrdlock(dist_rwlock_t *rw, const struct timespec *abstime)
{
    return dist_pthread_rwlock_clockrdlock(rw, CLOCK_REALTIME, abstime);
}

int dist_pthread_rwlock_timedwrlock(dist_rwlock_t *rw, const struct timespec *abstime)
{
    return dist_pthread_rwlock_clockwrlock(rw, CLOCK_REALTIME, abstime);
}

int dist_pthread_rwlock_unlock(dist_rwlock_t *rw)
{
    return unlocked(dist_rwlock_unlock(rw), RW_O(rw), DL_MAGIC_RWLOCK, "pthread_rwlock_unlock");
}

/* ---------------------------------------------------------- condition */

int dist_pthread_cond_init(dist_cond_t *c, const dist_pthread_condattr_t *a, const char *place)
{
    int rc;
    if (!c)
        return EINVAL;
    PORT_INIT(c, DL_MAGIC_COND, place, dist_cond_init(c, name, a ? &a->dl_a : NULL));
    return rc;
}

int dist_pthread_cond_destroy(dist_cond_t *c)
{
    return dist_cond_destroy(c);
}

/* A wait in the library's three steps (condwait.h), so that an outage is
 * waited out where it happened: before the wait started (m still held,
 * begin again), or in taking m back (taken as a lock call is). */
static int cond_wait(dist_cond_t *c, dist_mutex_t *m, clockid_t clock,
                     const struct timespec *abstime, const char *call)
{
    dl_condwait_t cw;
    int rc;
    while ((rc = dl_condwait_begin_on(&cw, c, m, clock, abstime)) == EIO) {
        outage(call);
        if (abstime && dl_passed_on(clock, abstime))
            return ETIMEDOUT;      /* as a pthread wait that timed out: m held */
    }
    if (rc == EINVAL) {
        check_obj(c ? &c->dl_o : NULL, DL_MAGIC_COND, call);
        check_obj(m ? &m->dl_o : NULL, DL_MAGIC_MUTEX, call);
        return rc;
    }
    if (rc)
        return rc;                 /* EPERM: m not held */
    int brc = dl_condwait_block(&cw);
    int erc = dl_condwait_end(&cw, brc);
    if (erc == EIO) {
        int trc;
        while ((trc = dist_mutex_lock(m)) == EIO)
            outage(call);
        dl_condwait_restore(&cw);
        erc = trc == EOWNERDEAD ? trc : brc;
    }
    return owner_dead(erc, &m->dl_o, call);
}

int dist_pthread_cond_wait(dist_cond_t *c, dist_mutex_t *m)
{
    return cond_wait(c, m, CLOCK_REALTIME, NULL, "pthread_cond_wait");
}

int dist_pthread_cond_clockwait(dist_cond_t *c, dist_mutex_t *m, clockid_t clock,
                                const struct timespec *abstime)
{
    if (!abstime)
        return EINVAL;
    return cond_wait(c, m, clock, abstime, "pthread_cond_clockwait");
}

int dist_pthread_cond_timedwait(dist_cond_t *c, dist_mutex_t *m, const struct timespec *abstime)
{
    if (!c || !abstime) {
        check_obj(c ? &c->dl_o : NULL, DL_MAGIC_COND, "pthread_cond_timedwait");
        return EINVAL;
    }
    /* The condition's own clock (its attribute's). */
    return cond_wait(c, m, (clockid_t)c->dl_o.dl_type, abstime, "pthread_cond_timedwait");
}

static int wake(dist_cond_t *c, int all)
{
    const char *call = all ? "pthread_cond_broadcast" : "pthread_cond_signal";
    int rc;
    BLOCKING(c ? &c->dl_o : NULL, DL_MAGIC_COND, call,
             all ? dist_cond_broadcast(c) : dist_cond_signal(c));
    return rc;
}

int dist_pthread_cond_signal(dist_cond_t *c)
{
    return wake(c, 0);
}

int dist_pthread_cond_broadcast(dist_cond_t *c)
{
    return wake(c, 1);
}

/* ------------------------------------------------------------ barrier */

int dist_pthread_barrier_init(dist_barrier_t *b, const dist_pthread_barrierattr_t *a,
                              unsigned count, const char *place)
{
    int rc;
    if (!b)
        return EINVAL;
    PORT_INIT(b, DL_MAGIC_BARRIER, place, dist_barrier_init(b, name, a ? &a->dl_a : NULL, count));
    while (rc == EIO) {
        /* Not made: tried again under the same name. */
        outage("pthread_barrier_init");
        PORT_INIT(b, DL_MAGIC_BARRIER, place,
                  dist_barrier_init(b, name, a ? &a->dl_a : NULL, count));
    }
    return rc;
}

int dist_pthread_barrier_destroy(dist_barrier_t *b)
{
    return dist_barrier_destroy(b);
}

int dist_pthread_barrier_wait(dist_barrier_t *b)
{
    int rc;
    /* A retry after EIO continues the same arrival (barrier_api.h). */
    BLOCKING(b ? &b->dl_o : NULL, DL_MAGIC_BARRIER, "pthread_barrier_wait", dist_barrier_wait(b));
    if (rc == DIST_BARRIER_SERIAL_THREAD)
        return PTHREAD_BARRIER_SERIAL_THREAD;
    if (rc == ENOLCK) {
        dl_log(DL_LOG_WARN, "pthread_barrier_wait: %s; the wait returns as released",
               dist_lasterror());
        return 0;
    }
    return rc;
}

/* --------------------------------------------------------- semaphores */

static int sem_fail(int rc)
{
    errno = rc;
    return -1;
}

int dist_pthread_sem_init(dist_sem_t *s, int pshared, unsigned value, const char *place)
{
    (void)pshared;
    int rc;
    if (!s)
        return sem_fail(EINVAL);
    if (value > (unsigned)SEM_VALUE_MAX)
        return sem_fail(EINVAL);
    PORT_INIT(s, DL_MAGIC_SEM, place, dist_sem_init(s, name, value, 0));
    while (rc == EIO) {
        outage("sem_init");
        PORT_INIT(s, DL_MAGIC_SEM, place, dist_sem_init(s, name, value, 0));
    }
    return rc ? sem_fail(rc) : 0;
}

int dist_pthread_sem_destroy(dist_sem_t *s)
{
    int rc = dist_sem_destroy(s);
    return rc ? sem_fail(rc) : 0;
}

/* A semaphore Redis lost (ENOLCK: its count is gone): said, and the
 * semaphore Redis has now taken up (initialized again with its first
 * value) for the next try. */
static void sem_lost(dist_sem_t *s, const char *call)
{
    dl_log(DL_LOG_WARN, "%s: %s; the semaphore starts again from its first value", call,
           dist_lasterror());
    dist_sem_t t;
    int rc;
    while ((rc = dl_sem_init_how(&t, dl_obj_name(&s->dl_o), s->dl_value, 0, 'c')) == EIO)
        outage(call);
    if (rc == 0)
        dist_sem_destroy(&t);
}

static int sem_timed(dist_sem_t *s, clockid_t clock, const struct timespec *abstime,
                     const char *call)
{
    int rc;
    for (;;) {
        if (!abstime)
            BLOCKING(s ? &s->dl_o : NULL, DL_MAGIC_SEM, call, dist_sem_wait(s));
        else
            TIMED(s ? &s->dl_o : NULL, DL_MAGIC_SEM, call, clock, abstime,
                  dist_sem_clockwait(s, clock, abstime));
        if (rc != ENOLCK)
            break;
        sem_lost(s, call);
    }
    return rc ? sem_fail(rc) : 0;
}

int dist_pthread_sem_wait(dist_sem_t *s)
{
    return sem_timed(s, CLOCK_REALTIME, NULL, "sem_wait");
}

int dist_pthread_sem_timedwait(dist_sem_t *s, const struct timespec *abstime)
{
    if (!abstime)
        return sem_fail(EINVAL);
    return sem_timed(s, CLOCK_REALTIME, abstime, "sem_timedwait");
}

int dist_pthread_sem_clockwait(dist_sem_t *s, clockid_t clock, const struct timespec *abstime)
{
    if (!abstime)
        return sem_fail(EINVAL);
    return sem_timed(s, clock, abstime, "sem_clockwait");
}

int dist_pthread_sem_trywait(dist_sem_t *s)
{
    int rc;
    for (;;) {
        TRYING(s ? &s->dl_o : NULL, DL_MAGIC_SEM, "sem_trywait", dist_sem_trywait(s), EAGAIN);
        if (rc != ENOLCK)
            break;
        sem_lost(s, "sem_trywait");
    }
    return rc ? sem_fail(rc) : 0;
}

int dist_pthread_sem_post(dist_sem_t *s)
{
    int rc = dist_sem_post(s);
    /* Not confirmed: the library keeps the post and makes it once Redis
     * answers, exactly once; this waits until it has. */
    while (rc == EIO) {
        outage("sem_post");
        rc = dl_sem_flush(s);
    }
    if (rc == ENOLCK) {
        sem_lost(s, "sem_post");
        rc = 0;
    }
    if (rc == EINVAL)
        check_obj(s ? &s->dl_o : NULL, DL_MAGIC_SEM, "sem_post");
    return rc ? sem_fail(rc) : 0;
}

int dist_pthread_sem_getvalue(dist_sem_t *s, int *value)
{
    int rc;
    BLOCKING(s ? &s->dl_o : NULL, DL_MAGIC_SEM, "sem_getvalue", dist_sem_getvalue(s, value));
    return rc ? sem_fail(rc) : 0;
}

/* Named semaphores: one object per name in the process, opened as often
 * as closed. */
typedef struct opened {
    char *name;
    dist_sem_t *s;
    int opens;
} opened_t;

static opened_t *openeds;
static size_t nopened, capopened;

static const char *sem_name(const char *name)
{
    while (name && *name == '/')
        name++;
    return name;
}

dist_sem_t *dist_pthread_sem_open(const char *path, int oflag, ...)
{
    va_list ap;
    va_start(ap, oflag);
    unsigned value = 0;
    if (oflag & O_CREAT) {
        (void)va_arg(ap, mode_t);
        value = va_arg(ap, unsigned);
    }
    va_end(ap);
    const char *name = sem_name(path);
    if (!name || !name[0] || strchr(name, '/')) {
        errno = EINVAL;
        return NULL;              /* the port's SEM_FAILED */
    }
    if (value > (unsigned)SEM_VALUE_MAX) {
        errno = EINVAL;
        return NULL;
    }
    char how = !(oflag & O_CREAT) ? 'o' : (oflag & O_EXCL) ? 'x' : 'c';
    pthread_mutex_lock(&mu);
    opened_t *o = NULL;
    for (size_t i = 0; i < nopened && !o; i++)
        if (strcmp(openeds[i].name, name) == 0)
            o = &openeds[i];
    int rc;
    dist_sem_t t, *fresh = o ? NULL : calloc(1, sizeof *fresh);
    dist_sem_t *s = o ? &t : fresh;
    if (!s) {
        pthread_mutex_unlock(&mu);
        errno = ENOMEM;
        return NULL;
    }
    /* Opened before: Redis says whether it exists (ENOENT, EEXIST),
     * through an object of its own; the process's object stays. */
    while ((rc = dl_sem_init_how(s, name, value, 0, how)) == EIO) {
        pthread_mutex_unlock(&mu);
        outage("sem_open");
        pthread_mutex_lock(&mu);
    }
    dist_sem_t *out = NULL;
    if (rc == 0 && o) {
        dist_sem_destroy(&t);
        o->opens++;
        out = o->s;
    } else if (rc == 0) {
        char *copy = strdup(name);
        if (!copy || grow((void **)&openeds, &capopened, nopened, sizeof *openeds)) {
            free(copy);
            dist_sem_destroy(fresh);
            free(fresh);
            pthread_mutex_unlock(&mu);
            errno = ENOMEM;
            return NULL;
        }
        openeds[nopened++] = (opened_t){ copy, fresh, 1 };
        out = fresh;
    } else {
        free(fresh);
    }
    pthread_mutex_unlock(&mu);
    if (rc)
        errno = rc;
    return out;
}

int dist_pthread_sem_close(dist_sem_t *s)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nopened; i++)
        if (openeds[i].s == s && openeds[i].opens > 0) {
            /* The object stays: another thread may still be returning
             * from a call on it, and a later open is the same one. */
            openeds[i].opens--;
            pthread_mutex_unlock(&mu);
            return 0;
        }
    pthread_mutex_unlock(&mu);
    return sem_fail(EINVAL);
}

int dist_pthread_sem_unlink(const char *path)
{
    const char *name = sem_name(path);
    int rc;
    while ((rc = dist_sem_unlink(name)) == EIO)
        outage("sem_unlink");
    return rc ? sem_fail(rc) : 0;
}
