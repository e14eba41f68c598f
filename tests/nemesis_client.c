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
 * When a log slot is left (threads < NM_MAX_THREADS), one more thread
 * uses the nemesis's condition variable as a pthreads program would: it
 * either waits on it (a timed wait of 200-800 ms, its mutex held) or takes
 * the mutex, lets it go and signals; nemesis_check.c judges that no signal
 * is lost.  That mutex is not one of nm_locks: the lock checks ignore it.
 *
 * When one more slot is left, a last thread uses the nemesis's barrier
 * (count: the clients alive at once) and its onces: it waits on the
 * barrier (timed, 0.3-1.5 s), and at each new epoch of NM_EPOCH_MS calls
 * dist_once on that epoch's once, whose routine records its run and takes
 * 50-600 ms (a client killed in it leaves the run unfinished);
 * nemesis_check.c judges one serial per generation, nobody released early,
 * and each once run to completion once (unless something explains more),
 * nobody returning before a run completed.
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

#include "barrier_api.h"
#include "distlock.h"

typedef struct nm_thr {
    const nm_client_cfg_t *cc;
    nm_thread_log_t *tl;
    int idx, pid, tid;
    uint64_t rng;
    void *store;
    uint32_t hold;
} nm_thr_t;

/* The process's lock objects, one per name, shared by its threads. */
static dist_mutex_t nm_mx[NM_MAX_NAMES];
static dist_rwlock_t nm_rw[NM_MAX_NAMES];
static dist_cond_t nm_cv;
static dist_mutex_t nm_cvm;
static dist_barrier_t nm_bar;
static dist_once_t nm_once[NM_EPOCHS];
static char nm_once_names[NM_EPOCHS][80];
static __thread nm_thr_t *nm_once_thr;   /* the thread in a once's routine, */
static __thread uint32_t nm_once_epoch;  /* and its epoch */

static uint64_t rnd(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static long rnd_in(uint64_t *s, long lo, long hi)
{
    return hi <= lo ? lo : lo + (long)(rnd(s) % (uint64_t)(hi - lo + 1));
}

static void sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int stopping(const nm_thr_t *t)
{
    return __atomic_load_n(&t->cc->sh->stop, __ATOMIC_ACQUIRE);
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
        int64_t abs_us = nm_realtime_us() + rnd_in(&t->rng, 20, 2500) * 1000;
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

static int do_unlock(nm_thr_t *t, int li, int mode, int depth, uint64_t fence)
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

static void do_store(nm_thr_t *t, int li, int mode, uint64_t fence)
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
 * stay well inside it, except a few that outlive it on purpose (their
 * unlock must say ENOLCK once another process took the lock). */
static long hold_us(nm_thr_t *t, const nm_lockdef_t *d)
{
    long r = rnd_in(&t->rng, 0, 999);
    long fixed = t->cc->cfg->fixed_ms;
    if (d->fixed && r < 10)
        return (fixed + fixed / 3) * 1000;
    if (r < 700)
        return rnd_in(&t->rng, 0, 10000);
    if (r < 950)
        return rnd_in(&t->rng, 10000, 100000);
    long top = d->fixed ? fixed * 1000 / 3 : 400000;
    return rnd_in(&t->rng, 100000, top > 100000 ? top : 100000);
}

static void critical(nm_thr_t *t, int li, int mode, uint64_t fence)
{
    const nm_lockdef_t *d = &nm_locks[li];
    do_store(t, li, mode, fence);
    long in = hold_us(t, d);
    if (rnd_in(&t->rng, 0, 99) < 20) {
        /* a reentrant relock: the same mode, or a read inside a write */
        int mode2 = d->rw && mode == 'w' && rnd_in(&t->rng, 0, 1) ? 'r' : mode;
        int op2 = (int)rnd_in(&t->rng, NM_OP_LOCK, NM_OP_TIMED);
        uint64_t f2 = 0;
        sleep_us(in / 2);
        int rc2 = do_lock(t, li, mode2, op2, 1, &f2);
        if (rc2 == 0 || rc2 == EOWNERDEAD) {
            do_store(t, li, mode2, f2);
            do_unlock(t, li, mode2, 1, f2);
        }
        sleep_us(in / 2);
    } else {
        sleep_us(in);
    }
    do_store(t, li, mode, fence);
}

static int pick_name(nm_thr_t *t)
{
    /* 40 %: a home lock of this client (a mutex, or now and then a rwlock) */
    if (rnd_in(&t->rng, 0, 99) < 40) {
        int rw = rnd_in(&t->rng, 0, 99) < 30;
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
    long r = rnd_in(&t->rng, 0, total - 1);
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
    while (!stopping(t) && !t->tl->full) {
        int li = pick_name(t);
        const nm_lockdef_t *d = &nm_locks[li];
        int mode = d->rw && rnd_in(&t->rng, 0, 99) < 60 ? 'r' : 'w';
        long r = rnd_in(&t->rng, 0, 99);
        int op = r < 35 ? NM_OP_LOCK : r < 70 ? NM_OP_TIMED : NM_OP_TRY;
        t->hold++;
        uint64_t fence = 0;
        int rc = do_lock(t, li, mode, op, 0, &fence);
        if (rc == 0 || rc == EOWNERDEAD) {
            critical(t, li, mode, fence);
            do_unlock(t, li, mode, 0, fence);
        } else if (rc == EBUSY) {
            sleep_us(rnd_in(&t->rng, 1000, 10000));
        } else if (rc != ETIMEDOUT) {
            sleep_us(rnd_in(&t->rng, 10000, 50000));
        }
        sleep_us(rnd_in(&t->rng, 500, 8000));
    }
    return NULL;
}

/* The condition's thread (above).  A wait's record: t0 once the mutex is
 * held (so a signaller that takes the mutex after t0 signals after the
 * waiter registered), its deadline on both clocks.  A signal's: the time
 * its mutex lock returned (fence). */
static void *cond_main(void *arg)
{
    nm_thr_t *t = arg;
    t->tid = (int)syscall(SYS_gettid);
    t->tl->tid = (uint32_t)t->tid;
    while (!stopping(t) && !t->tl->full) {
        int wait = rnd_in(&t->rng, 0, 99) < 55;
        int rc = dist_mutex_lock(&nm_cvm);
        int64_t locked = nm_now_us();
        if (rc != 0 && rc != EOWNERDEAD) {
            sleep_us(rnd_in(&t->rng, 10000, 50000));
            continue;
        }
        if (wait) {
            long ms = rnd_in(&t->rng, 200, 800);
            nm_ev_t *e = nm_ev_begin(t->tl, NM_CWAIT, NM_OP_TIMED, NM_CV_NAME, 'w', 0, 0);
            int64_t abs_us = nm_realtime_us() + ms * 1000;
            uint64_t dl = (uint64_t)(nm_now_us() + ms * 1000);
            if (e)
                e->abs_rt_us = abs_us;
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
        sleep_us(rnd_in(&t->rng, 0, 30000));
    }
    return NULL;
}

/* A once's routine: its run recorded, 50-600 ms long. */
static void once_routine(void)
{
    nm_thr_t *t = nm_once_thr;
    nm_ev_t *e = nm_ev_begin(t->tl, NM_ORUN, 0, NM_ONCE_NAME, 'w', 1, nm_once_epoch);
    sleep_us(rnd_in(&t->rng, 50000, 600000));
    nm_ev_end(e, 0, 0);
}

/* The barrier and once thread (above).  bar: the barrier could be
 * initialized (redlock:// refuses barriers). */
static void *barrier_once_main(void *arg)
{
    nm_thr_t *t = arg;
    t->tid = (int)syscall(SYS_gettid);
    t->tl->tid = (uint32_t)t->tid;
    int bar = dist_barrier_init(&nm_bar, t->cc->sh->names[NM_BAR_NAME], NULL,
                                (unsigned)t->cc->cfg->procs) == 0;
    if (!bar && t->cc->cfg->topo != NM_TOPO_REDLOCK)
        fprintf(stderr, "nemesis client %d/%d: barrier init: %s\n", t->pid, t->tid,
                dist_lasterror());
    nm_once_thr = t;
    int64_t last = -1;
    while (!stopping(t) && !t->tl->full) {
        if (bar) {
            long ms = rnd_in(&t->rng, 300, 1500);
            nm_ev_t *e = nm_ev_begin(t->tl, NM_BWAIT, NM_OP_TIMED, NM_BAR_NAME, 'w', 0, 0);
            int64_t abs_us = nm_realtime_us() + ms * 1000;
            if (e)
                e->abs_rt_us = abs_us;
            struct timespec ts = { abs_us / 1000000, (abs_us % 1000000) * 1000 };
            uint64_t gen = 0;
            int rc = dl_barrier_wait_gen(&nm_bar, &ts, &gen);
            if (e)
                e->rt1_us = nm_realtime_us();
            nm_ev_end(e, rc == DIST_BARRIER_SERIAL_THREAD ? NM_RC_SERIAL : rc, gen);
            if (rc != 0 && rc != DIST_BARRIER_SERIAL_THREAD && rc != ETIMEDOUT)
                fprintf(stderr, "nemesis client %d/%d: barrier wait: %s (%s)\n", t->pid, t->tid,
                        strerror(rc), dist_lasterror());
            /* (paced: a few dozen generations a second) */
            sleep_us(rnd_in(&t->rng, 5000, 60000));
        } else {
            sleep_us(rnd_in(&t->rng, 100000, 300000));
        }
        int64_t start = __atomic_load_n(&t->cc->sh->start_us, __ATOMIC_ACQUIRE);
        int64_t epoch = start ? (nm_now_us() - start) / (NM_EPOCH_MS * 1000) : -1;
        if (epoch < 0 || epoch == last || epoch >= NM_EPOCHS)
            continue;
        last = epoch;
        nm_once_epoch = (uint32_t)epoch;
        nm_ev_t *e = nm_ev_begin(t->tl, NM_ONCE, 0, NM_ONCE_NAME, 'w', 0, (uint32_t)epoch);
        int rc = dist_once(&nm_once[epoch], once_routine);
        nm_ev_end(e, rc, 0);
        if (rc != 0)
            fprintf(stderr, "nemesis client %d/%d: once of epoch %lld: %s (%s)\n", t->pid, t->tid,
                    (long long)epoch, strerror(rc), dist_lasterror());
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
        sleep_us(5000);
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

    nm_thr_t th[NM_MAX_THREADS];
    int n = cfg->threads < NM_MAX_THREADS ? cfg->threads : NM_MAX_THREADS;
    int cv = n < NM_MAX_THREADS;      /* a slot left for the condition's thread */
    int bo = n + cv < NM_MAX_THREADS; /* ... and one for the barrier and once thread */
    /* The store is reached on connections made here, before the process
     * enters its network namespace: a socket stays in the namespace it was
     * made in, so no cut of the lock's network touches the store. */
    for (int i = 0; i < n; i++) {
        memset(&th[i], 0, sizeof th[i]);
        th[i].cc = cc;
        th[i].tl = &sl->th[i];
        th[i].idx = i;
        th[i].pid = pid;
        th[i].rng = cfg->seed * 1000003ULL + (uint64_t)cc->slot * 131ULL + (uint64_t)i * 7919ULL;
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
    if (cv && (dist_cond_init(&nm_cv, sh->names[NM_CV_NAME], NULL) != 0 ||
               dist_mutex_init(&nm_cvm, sh->names[NM_CVM_NAME], NULL) != 0))
        return 4;
    for (int k = 0; bo && k < NM_EPOCHS; k++) {
        snprintf(nm_once_names[k], sizeof nm_once_names[k], "%s.%d", sh->names[NM_ONCE_NAME], k);
        dist_once_t o = DIST_ONCE_INITIALIZER(nm_once_names[k]);
        nm_once[k] = o;
    }
    pthread_t tids[NM_MAX_THREADS], hb, cvt, bot;
    int hb_ok = pthread_create(&hb, NULL, heartbeat_main, (void *)cc) == 0;
    nm_thr_t cvth;
    if (cv) {
        memset(&cvth, 0, sizeof cvth);
        cvth.cc = cc;
        cvth.tl = &sl->th[n];
        cvth.idx = n;
        cvth.pid = pid;
        cvth.rng = cfg->seed * 1000003ULL + (uint64_t)cc->slot * 131ULL + 0xc0ddULL;
        cv = pthread_create(&cvt, NULL, cond_main, &cvth) == 0;
    }
    nm_thr_t both;
    if (bo) {
        memset(&both, 0, sizeof both);
        both.cc = cc;
        both.tl = &sl->th[n + cv];
        both.idx = n + cv;
        both.pid = pid;
        both.rng = cfg->seed * 1000003ULL + (uint64_t)cc->slot * 131ULL + 0xba55ULL;
        bo = pthread_create(&bot, NULL, barrier_once_main, &both) == 0;
    }
    int started = 0;
    for (int i = 0; i < n; i++)
        if (pthread_create(&tids[i], NULL, thread_main, &th[i]) == 0)
            started++;
        else
            break;
    __atomic_store_n(&sl->threads, started, __ATOMIC_RELEASE);
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    if (cv)
        pthread_join(cvt, NULL);
    if (bo)
        pthread_join(bot, NULL);
    if (hb_ok)
        pthread_join(hb, NULL);
    for (int i = 0; i < n; i++)
        nm_store_close(th[i].store);
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
    int rc = client_main(cc);
    /* exit(): the library's destructor ends lingering holds */
    exit(rc);
}
