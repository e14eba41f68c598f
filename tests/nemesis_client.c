/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_client.c - a client process of the nemesis: cfg->threads threads
 * that take random locks of nm_locks with random calls (lock, trylock,
 * timed lock, reentrant relocks, read and write holds, fair mutexes, fixed
 * and default leases) and, inside each hold, write to the fenced store
 * (write holds) or check it (read holds), at the start and at the end of
 * the critical section.  Every call is recorded (nemesis_log.c) before it
 * is made and when it returns.
 *
 * After the lock threads come the threads of the run's roles
 * (nemesis_roles.c), each the client of one more primitive.  The
 * condition's is here: it uses the nemesis's condition variable as a
 * pthreads program would: it either waits on it (a timed wait of 200-800
 * ms, its mutex held) or takes the mutex, lets it go and signals;
 * nemesis_check.c judges that no signal is lost.  That mutex is not one of
 * nm_locks: the lock checks ignore it.
 *
 * Each thread draws its choices from its own generator, seeded from the
 * run's seed, the slot and the thread: a run's workload is the same each
 * time, its interleaving is the machine's.
 */
#include "nemesis.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "distlock.h"

/* The process's lock objects, one per name, shared by its threads. */
static dist_mutex_t nm_mx[NM_MAX_NAMES];
static dist_rwlock_t nm_rw[NM_MAX_NAMES];
static dist_cond_t nm_cv;
static dist_mutex_t nm_cvm;

uint64_t nm_rnd(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

long nm_rnd_in(uint64_t *s, long lo, long hi)
{
    return hi <= lo ? lo : lo + (long)(nm_rnd(s) % (uint64_t)(hi - lo + 1));
}

void nm_sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int nm_stopping(const nm_thr_t *t)
{
    return __atomic_load_n(&t->cc->sh->stop, __ATOMIC_ACQUIRE);
}

struct dist_mutex *nm_client_mutex(int li)
{
    return &nm_mx[li];
}

/* One lock call, recorded.  Returns its code; *fence when it acquired. */
static int do_lock(nm_thr_t *t, int li, int mode, int op, int depth, uint64_t *fence)
{
    const nm_lockdef_t *d = &nm_locks[li];
    nm_ev_t *e = nm_ev_begin(t->tl, NM_LOCK, op, li, mode, depth, t->hold);
    if (!e)
        return -1;
    struct timespec ts = { 0, 0 };
    if (op == NM_OP_TIMED) {
        e->rt0_us = nm_realtime_us();
        int64_t abs_us = e->rt0_us + nm_rnd_in(&t->rng, 20, 2500) * 1000;
        e->abs_rt_us = abs_us;
        ts.tv_sec = abs_us / 1000000;
        ts.tv_nsec = (abs_us % 1000000) * 1000;
    }
    int rc;
    if (!d->rw) {
        dist_mutex_t *m = &nm_mx[li];
        rc = op == NM_OP_LOCK ? dist_mutex_lock(m)
             : op == NM_OP_TRY ? dist_mutex_trylock(m) : dist_mutex_timedlock(m, &ts);
    } else if (mode == 'w') {
        dist_rwlock_t *rw = &nm_rw[li];
        rc = op == NM_OP_LOCK ? dist_rwlock_wrlock(rw)
             : op == NM_OP_TRY ? dist_rwlock_trywrlock(rw) : dist_rwlock_timedwrlock(rw, &ts);
    } else {
        dist_rwlock_t *rw = &nm_rw[li];
        rc = op == NM_OP_LOCK ? dist_rwlock_rdlock(rw)
             : op == NM_OP_TRY ? dist_rwlock_tryrdlock(rw) : dist_rwlock_timedrdlock(rw, &ts);
    }
    e->rt1_us = nm_realtime_us();
    uint64_t f = 0;
    if (rc == 0 || rc == EOWNERDEAD) {
        int frc = d->rw ? dist_rwlock_getfence(&nm_rw[li], &f) : dist_mutex_getfence(&nm_mx[li], &f);
        if (frc != 0)
            f = 0;
    }
    nm_ev_end(e, rc, f);
    if (rc != 0 && rc != EOWNERDEAD && rc != EBUSY && rc != ETIMEDOUT)
        fprintf(stderr, "nemesis client %d/%d: lock %s: %s (%s)\n", t->pid, t->tid,
                t->cc->sh->names[li], strerror(rc), dist_lasterror());
    *fence = f;
    return rc;
}

int nm_do_unlock(nm_thr_t *t, int li, int mode, int depth, uint64_t fence)
{
    const nm_lockdef_t *d = &nm_locks[li];
    nm_ev_t *e = nm_ev_begin(t->tl, NM_UNLOCK, 0, li, mode, depth, t->hold);
    int rc = d->rw ? dist_rwlock_unlock(&nm_rw[li]) : dist_mutex_unlock(&nm_mx[li]);
    nm_ev_end(e, rc, fence);
    if (rc != 0)
        fprintf(stderr, "nemesis client %d/%d: unlock %s (fence %llu): %s (%s)\n", t->pid, t->tid,
                t->cc->sh->names[li], (unsigned long long)fence, strerror(rc), dist_lasterror());
    return rc;
}

void nm_do_store(nm_thr_t *t, int li, int mode, uint64_t fence)
{
    int write = mode == 'w';
    nm_ev_t *e = nm_ev_begin(t->tl, write ? NM_WRITE : NM_READ, 0, li, mode, 0, t->hold);
    uint64_t hi = 0;
    int rc = nm_store_op(t->store, t->cc->sh->names[li], write, fence, t->pid, t->tid, t->hold, &hi);
    if (e)
        e->hi = hi;
    nm_ev_end(e, rc, fence);
}

/* The time inside a hold: mostly short, some long; a fixed lease's holds
 * stay well inside it, except 8 % that outlive it on purpose, twice as
 * long (its unlock must say ENOLCK once another process took the lock,
 * and a relock in it must not trust the hold: critical). */
static long hold_us(nm_thr_t *t, const nm_lockdef_t *d)
{
    long r = nm_rnd_in(&t->rng, 0, 999);
    long fixed = t->cc->cfg->fixed_ms;
    if (d->fixed && r < 80)
        return 2 * fixed * 1000;
    if (r < 700)
        return nm_rnd_in(&t->rng, 0, 10000);
    if (r < 950)
        return nm_rnd_in(&t->rng, 10000, 100000);
    long top = d->fixed ? fixed * 1000 / 3 : 400000;
    return nm_rnd_in(&t->rng, 100000, top > 100000 ? top : 100000);
}

static void critical(nm_thr_t *t, int li, int mode, uint64_t fence)
{
    const nm_lockdef_t *d = &nm_locks[li];
    nm_do_store(t, li, mode, fence);
    long in = hold_us(t, d);
    /* A hold that outlives its fixed lease on purpose relocks after the
     * lease ended, when another process may have taken the lock: the relock
     * must ask Redis (a library that trusted the hold would say 0). */
    long fixed_us = t->cc->cfg->fixed_ms * 1000L;
    int past = d->fixed && in > fixed_us;
    long before = past ? fixed_us + (in - fixed_us) * 3 / 4 : in / 2;
    /* relocks: one hold in five, three in five of the long ones (a nested
     * section after a while: what a process must confirm with Redis, not
     * trust, once Redis may have lost its hold), four in five of those past
     * their lease */
    if (nm_rnd_in(&t->rng, 0, 99) < (past ? 80 : in >= 100000 ? 60 : 20)) {
        /* a reentrant relock: the same mode, or a read inside a write */
        int mode2 = d->rw && mode == 'w' && nm_rnd_in(&t->rng, 0, 1) ? 'r' : mode;
        int op2 = (int)nm_rnd_in(&t->rng, NM_OP_LOCK, NM_OP_TIMED);
        uint64_t f2 = 0;
        /* the plan, for the delkey fault (published last: plan_at) */
        t->tl->plan_name = li;
        t->tl->plan_mode = mode;
        __atomic_store_n(&t->tl->plan_at, nm_now_us() + before, __ATOMIC_RELEASE);
        nm_sleep_us(before);
        __atomic_store_n(&t->tl->plan_at, 0, __ATOMIC_RELEASE);
        int rc2 = do_lock(t, li, mode2, op2, 1, &f2);
        if (rc2 == 0 || rc2 == EOWNERDEAD) {
            nm_do_store(t, li, mode2, f2);
            nm_do_unlock(t, li, mode2, 1, f2);
        }
        nm_sleep_us(in - before);
    } else {
        nm_sleep_us(in);
    }
    nm_do_store(t, li, mode, fence);
}

static int pick_name(nm_thr_t *t)
{
    /* 40 %: a home lock of this client (a mutex, or now and then a rwlock) */
    if (nm_rnd_in(&t->rng, 0, 99) < 40) {
        int rw = nm_rnd_in(&t->rng, 0, 99) < 30;
        int homes = 0;
        for (int i = 0; i < nm_nlocks; i++)
            homes += nm_locks[i].home && nm_locks[i].rw == rw;
        int want = homes ? t->cc->slot % homes : 0, k = 0;
        for (int i = 0; i < nm_nlocks; i++)
            if (nm_locks[i].home && nm_locks[i].rw == rw && k++ == want)
                return i;
    }
    int total = 0;
    for (int i = 0; i < nm_nlocks; i++)
        total += nm_locks[i].weight;
    long r = nm_rnd_in(&t->rng, 0, total - 1);
    for (int i = 0; i < nm_nlocks; i++) {
        if (r < nm_locks[i].weight)
            return i;
        r -= nm_locks[i].weight;
    }
    return 0;
}

static void *thread_main(void *arg)
{
    nm_thr_t *t = arg;
    t->tid = (int)syscall(SYS_gettid);
    t->tl->tid = (uint32_t)t->tid;
    while (!nm_stopping(t) && !t->tl->full) {
        int li = pick_name(t);
        const nm_lockdef_t *d = &nm_locks[li];
        int mode = d->rw && nm_rnd_in(&t->rng, 0, 99) < 60 ? 'r' : 'w';
        long r = nm_rnd_in(&t->rng, 0, 99);
        int op = r < 35 ? NM_OP_LOCK : r < 70 ? NM_OP_TIMED : NM_OP_TRY;
        t->hold++;
        uint64_t fence = 0;
        int rc = do_lock(t, li, mode, op, 0, &fence);
        if (rc == 0 || rc == EOWNERDEAD) {
            critical(t, li, mode, fence);
            nm_do_unlock(t, li, mode, 0, fence);
        } else if (rc == EBUSY) {
            nm_sleep_us(nm_rnd_in(&t->rng, 1000, 10000));
        } else if (rc != ETIMEDOUT) {
            nm_sleep_us(nm_rnd_in(&t->rng, 10000, 50000));
        }
        nm_sleep_us(nm_rnd_in(&t->rng, 500, 8000));
    }
    return NULL;
}

/* The condition's thread (above).  A wait's record: t0 once the mutex is
 * held (so a signaller that takes the mutex after t0 signals after the
 * waiter registered), its deadline on both clocks.  A signal's: the time
 * its mutex lock returned (fence). */
void *nm_cond_main(void *arg)
{
    nm_thr_t *t = arg;
    t->tid = (int)syscall(SYS_gettid);
    t->tl->tid = (uint32_t)t->tid;
    while (!nm_stopping(t) && !t->tl->full) {
        int wait = nm_rnd_in(&t->rng, 0, 99) < 55;
        int rc = dist_mutex_lock(&nm_cvm);
        int64_t locked = nm_now_us();
        if (rc != 0 && rc != EOWNERDEAD) {
            nm_sleep_us(nm_rnd_in(&t->rng, 10000, 50000));
            continue;
        }
        if (wait) {
            long ms = nm_rnd_in(&t->rng, 200, 800);
            nm_ev_t *e = nm_ev_begin(t->tl, NM_CWAIT, NM_OP_TIMED, NM_CV_NAME, 'w', 0, 0);
            int64_t rt0 = nm_realtime_us(), abs_us = rt0 + ms * 1000;
            uint64_t dl = (uint64_t)(nm_now_us() + ms * 1000);
            if (e) {
                e->abs_rt_us = abs_us;
                e->rt0_us = rt0;
            }
            struct timespec ts = { abs_us / 1000000, (abs_us % 1000000) * 1000 };
            rc = dist_cond_timedwait(&nm_cv, &nm_cvm, &ts);
            if (e)
                e->rt1_us = nm_realtime_us();
            nm_ev_end(e, rc, dl);
            if (rc != 0 && rc != ETIMEDOUT && rc != EOWNERDEAD)
                fprintf(stderr, "nemesis client %d/%d: condition wait: %s (%s)\n", t->pid, t->tid,
                        strerror(rc), dist_lasterror());
            dist_mutex_unlock(&nm_cvm);     /* (EPERM when an EIO left it not held) */
        } else {
            dist_mutex_unlock(&nm_cvm);
            nm_ev_t *e = nm_ev_begin(t->tl, NM_SIGNAL, 0, NM_CV_NAME, 'w', 0, 0);
            rc = dist_cond_signal(&nm_cv);
            nm_ev_end(e, rc, (uint64_t)locked);
            if (rc != 0)
                fprintf(stderr, "nemesis client %d/%d: signal: %s (%s)\n", t->pid, t->tid,
                        strerror(rc), dist_lasterror());
        }
        nm_sleep_us(nm_rnd_in(&t->rng, 0, 30000));
    }
    return NULL;
}

/* The heartbeat: a thread that wakes every 5 ms and records when it woke
 * NM_STALL_US late: the machine (or a SIGSTOP) held the process up.  The
 * checks count such a stall as they count a stop. */
static void *heartbeat_main(void *arg)
{
    const nm_client_cfg_t *cc = arg;
    nm_slot_t *sl = &cc->sh->slot[cc->slot];
    int64_t last = nm_now_us();
    while (!__atomic_load_n(&cc->sh->stop, __ATOMIC_ACQUIRE)) {
        nm_sleep_us(5000);
        int64_t now = nm_now_us();
        if (now - last > NM_STALL_US) {
            uint32_t i = sl->nstalls < NM_MAX_STALLS ? sl->nstalls : NM_MAX_STALLS - 1;
            if (sl->nstalls < NM_MAX_STALLS)
                sl->stall[i][0] = last;
            sl->stall[i][1] = now;
            __atomic_store_n(&sl->nstalls, sl->nstalls < NM_MAX_STALLS ? sl->nstalls + 1 : sl->nstalls,
                             __ATOMIC_RELEASE);
        }
        last = now;
    }
    return NULL;
}

static int client_main(const nm_client_cfg_t *cc)
{
    nm_shared_t *sh = cc->sh;
    nm_slot_t *sl = &sh->slot[cc->slot];
    const nm_cfg_t *cfg = cc->cfg;
    int pid = (int)getpid();
    char v[32];
    setenv("DISTLOCK_URL", cc->url, 1);
    snprintf(v, sizeof v, "%ld", cfg->lease_ms);
    setenv("DISTLOCK_LEASE_MS", v, 1);
    snprintf(v, sizeof v, "%ld", cfg->io_timeout_ms);
    setenv("DISTLOCK_IO_TIMEOUT_MS", v, 1);
    if (!getenv("NEMESIS_LIBLOG"))
        setenv("DISTLOCK_LOG", "warn", 1);
    else
        setenv("DISTLOCK_LOG", getenv("NEMESIS_LIBLOG"), 1);

    /* The lock threads, then each role's: their records in that order. */
    nm_thr_t th[NM_MAX_THREADS];
    void *(*fn[NM_MAX_THREADS])(void *);
    int n = cfg->threads < NM_MAX_LOCK_THREADS ? cfg->threads : NM_MAX_LOCK_THREADS, nall = n;
    for (int i = 0; i < n; i++) {
        memset(&th[i], 0, sizeof th[i]);
        th[i].rng = cfg->seed * 1000003ULL + (uint64_t)cc->slot * 131ULL + (uint64_t)i * 7919ULL;
        fn[i] = thread_main;
    }
    for (int r = 0; r < nm_nroles; r++) {
        if (!(cfg->roles & (1u << r)))
            continue;
        for (int k = 0; k < nm_roles[r].threads && nall < NM_MAX_THREADS; k++, nall++) {
            memset(&th[nall], 0, sizeof th[nall]);
            th[nall].sub = k;
            /* (the condition's thread keeps the seed it had before roles) */
            th[nall].rng = cfg->seed * 1000003ULL + (uint64_t)cc->slot * 131ULL +
                           (r == 0 ? 0xc0ddULL : (uint64_t)r * 0x10001ULL + (uint64_t)k * 7919ULL);
            fn[nall] = nm_roles[r].run;
        }
    }
    /* The store is reached on connections made here, before the process
     * enters its network namespace: a socket stays in the namespace it was
     * made in, so no cut of the lock's network touches the store. */
    for (int i = 0; i < nall; i++) {
        th[i].cc = cc;
        th[i].tl = &sl->th[i];
        th[i].idx = i;
        th[i].pid = pid;
        th[i].store = nm_store_connect(cc->store_port);
        if (!th[i].store) {
            fprintf(stderr, "nemesis client %d: no store connection\n", pid);
            return 3;
        }
    }
    if (cc->netns_path) {
        int fd = open(cc->netns_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
            perror("nemesis client: setns");
            return 3;
        }
        close(fd);
    }
    for (int i = 0; i < nm_nlocks; i++) {
        const nm_lockdef_t *d = &nm_locks[i];
        if (d->rw) {
            dist_rwlockattr_t a;
            dist_rwlockattr_init(&a);
            if (d->fixed)
                dist_rwlockattr_setlease(&a, (unsigned long)cfg->fixed_ms);
            if (dist_rwlock_init(&nm_rw[i], sh->names[i], &a) != 0)
                return 4;
            dist_rwlockattr_destroy(&a);
        } else {
            dist_mutexattr_t a;
            dist_mutexattr_init(&a);
            /* redlock:// has no queue: a fair mutex is EINVAL there */
            dist_mutexattr_setfair(&a, d->fair && cfg->topo != NM_TOPO_REDLOCK);
            if (d->fixed)
                dist_mutexattr_setlease(&a, (unsigned long)cfg->fixed_ms);
            if (dist_mutex_init(&nm_mx[i], sh->names[i], &a) != 0)
                return 4;
            dist_mutexattr_destroy(&a);
        }
    }
    for (int r = 0; r < nm_nroles; r++)
        if ((cfg->roles & (1u << r)) && nm_roles[r].open && nm_roles[r].open(cc, nm_role_base[r]) != 0) {
            fprintf(stderr, "nemesis client %d: the %s role's objects: %s\n", pid, nm_roles[r].tag,
                    dist_lasterror());
            return 4;
        }
    pthread_t tids[NM_MAX_THREADS], hb;
    int hb_ok = pthread_create(&hb, NULL, heartbeat_main, (void *)cc) == 0;
    int started = 0, ok[NM_MAX_THREADS] = { 0 };
    for (int i = 0; i < nall; i++) {
        ok[i] = pthread_create(&tids[i], NULL, fn[i], &th[i]) == 0;
        started += i < n && ok[i];
    }
    __atomic_store_n(&sl->threads, started, __ATOMIC_RELEASE);
    for (int i = 0; i < nall; i++)
        if (ok[i])
            pthread_join(tids[i], NULL);
    if (hb_ok)
        pthread_join(hb, NULL);
    for (int i = 0; i < nall; i++)
        nm_store_close(th[i].store);
    return 0;
}

/* The condition role's objects (nemesis_roles.c). */
int nm_cond_open(const nm_client_cfg_t *cc, int base)
{
    if (dist_cond_init(&nm_cv, cc->sh->names[base], NULL) != 0 ||
        dist_mutex_init(&nm_cvm, cc->sh->names[base + 1], NULL) != 0)
        return -1;
    return 0;
}

pid_t nm_client_spawn(const nm_client_cfg_t *cc)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
    alarm(0);
    if (cc->log_path) {
        int fd = open(cc->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
    }
    setvbuf(stderr, NULL, _IOLBF, 0);
    cc->sh->slot[cc->slot].pid = (int32_t)getpid();
    nm_clock_follow(&cc->sh->slot[cc->slot].rt_off_us);
    int rc = client_main(cc);
    /* exit(): the library's destructor ends lingering holds */
    exit(rc);
}
