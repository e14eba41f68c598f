/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_checker_work.c - see harness_checker_work.h. */
#include "harness.h"
#include "harness_checker_work.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "status.h"


int64_t chk_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

chk_shared_t *chk_shared_new(uint64_t n)
{
    size_t len = sizeof(chk_shared_t) + (size_t)n * sizeof(chk_hold_t);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    chk_shared_t *sh = p;          /* mmap gives zeroed memory */
    sh->map_len = len;
    sh->cap = n;
    return sh;
}

void chk_shared_free(chk_shared_t *sh)
{
    if (sh)
        munmap(sh, sh->map_len);
}

chk_hold_t *chk_holds(chk_shared_t *sh)
{
    return sh->holds;
}

uint64_t chk_done(const chk_shared_t *sh)
{
    uint64_t n = __atomic_load_n(&sh->next, __ATOMIC_RELAXED);
    return n > sh->cap ? sh->cap : n;
}

/* ------------------------------------------------------------------ children */


struct chk_thread {
    struct chk_proc *pr;
    int gindex;                 /* thread number over all processes */
    long ops;
    pthread_t th;
    int failed;
};

static void note_error(chk_shared_t *sh, const char *what, int rc)
{
    if (__atomic_exchange_n(&sh->error_taken, 1, __ATOMIC_ACQ_REL) == 0)
        snprintf(sh->first_error, sizeof sh->first_error, "%s: %s: %s", what, th_errname(rc),
                 dist_lasterror());
}

static void atomic_max(int64_t *p, int64_t v)
{
    int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static int do_lock(struct chk_proc *pr, int ni, char mode, unsigned *seed, int *how)
{
    const chk_cfg_t *cfg = pr->cfg;
    if (cfg->no_lock)
        return 0;
    /* Mostly blocking calls; some timed ones with a generous deadline and
     * some trylock loops, so every acquisition path is exercised. */
    int r = (int)(rand_r(seed) % 10);
    int lh = cfg->proc_lock_how ? cfg->proc_lock_how[pr->index] : cfg->lock_how;
    *how = lh == CHK_BLOCKING ? 0 : lh == CHK_TRY_ONLY ? 2 : lh == CHK_TIMED ? 1 :
           r < 7 ? 0 : r < 9 ? 1 : 2;
    if (*how == 1) {
        struct timespec ts = th_abstime_ms(cfg->timed_ms > 0 ? cfg->timed_ms : 10000);
        if (cfg->kind == CHK_MUTEX)
            return dist_mutex_timedlock(&pr->u[ni].m, &ts);
        return mode == 'w' ? dist_rwlock_timedwrlock(&pr->u[ni].rw, &ts)
                           : dist_rwlock_timedrdlock(&pr->u[ni].rw, &ts);
    }
    if (*how == 2) {
        for (;;) {
            int rc = cfg->kind == CHK_MUTEX ? dist_mutex_trylock(&pr->u[ni].m)
                     : mode == 'w' ? dist_rwlock_trywrlock(&pr->u[ni].rw)
                                   : dist_rwlock_tryrdlock(&pr->u[ni].rw);
            if (rc != EBUSY)
                return rc;
            th_sleep_us(200 + rand_r(seed) % 300);
        }
    }
    if (cfg->kind == CHK_MUTEX)
        return dist_mutex_lock(&pr->u[ni].m);
    return mode == 'w' ? dist_rwlock_wrlock(&pr->u[ni].rw) : dist_rwlock_rdlock(&pr->u[ni].rw);
}

static int do_unlock(struct chk_proc *pr, int ni)
{
    if (pr->cfg->no_lock)
        return 0;
    return pr->cfg->kind == CHK_MUTEX ? dist_mutex_unlock(&pr->u[ni].m)
                                      : dist_rwlock_unlock(&pr->u[ni].rw);
}

static int do_fence(struct chk_proc *pr, int ni, uint64_t *f)
{
    if (pr->cfg->no_lock) {
        *f = 0;
        return 0;
    }
    return pr->cfg->kind == CHK_MUTEX ? dist_mutex_getfence(&pr->u[ni].m, f)
                                      : dist_rwlock_getfence(&pr->u[ni].rw, f);
}

static void pause_in_hold(const chk_cfg_t *cfg)
{
    if (cfg->hold_us > 0) {
        int64_t until = chk_now_ns() + cfg->hold_us * 1000;
        while (chk_now_ns() < until)
            sched_yield();
    } else {
        sched_yield();
    }
}

/* verify_redis: does Redis agree that we hold the lock (with our fence)? */
static int redis_disagrees(redisContext *rc, const char *key, char mode, uint64_t fence)
{
    if (!rc)
        return 0;
    redisReply *r = redisCommand(rc, "HGET %s fence", key);
    if (!r)
        return 0;                   /* cannot tell */
    int bad = 0;
    if (r->type == REDIS_REPLY_STRING)
        bad = strtoull(r->str, NULL, 10) != fence;
    else if (r->type == REDIS_REPLY_NIL)
        bad = mode == 'w';
    freeReplyObject(r);
    return bad;
}

/* cfg->lockall: one lock-all call on ms[0..k), as do_lock's *how. */
static int do_lockall(struct chk_proc *pr, dist_mutex_t *const *ms, int k, unsigned *seed, int *how)
{
    const chk_cfg_t *cfg = pr->cfg;
    int r = (int)(rand_r(seed) % 10);
    int lh = cfg->proc_lock_how ? cfg->proc_lock_how[pr->index] : cfg->lock_how;
    *how = lh == CHK_BLOCKING ? 0 : lh == CHK_TRY_ONLY ? 2 : lh == CHK_TIMED ? 1 :
           r < 7 ? 0 : r < 9 ? 1 : 2;
    if (*how == 1) {
        struct timespec ts = th_abstime_ms(cfg->timed_ms > 0 ? cfg->timed_ms : 10000);
        return dist_mutex_timedlockall(ms, (size_t)k, &ts);
    }
    if (*how == 2) {
        for (;;) {
            int rc = dist_mutex_trylockall(ms, (size_t)k);
            if (rc != EBUSY)
                return rc;
            th_sleep_us(200 + rand_r(seed) % 300);
        }
    }
    return dist_mutex_lockall(ms, (size_t)k);
}

/* A thread of a cfg->lockall run: each operation takes cfg->lockall of
 * the names at once, drawn at random and passed in a random order, and
 * records one hold per name. */
static void chk_lockall_thread(struct chk_thread *t)
{
    struct chk_proc *pr = t->pr;
    const chk_cfg_t *cfg = pr->cfg;
    chk_shared_t *sh = pr->sh;
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)t->gindex * 104729u +
                    (unsigned)chk_now_ns();
    int32_t tid = (int32_t)syscall(SYS_gettid);
    long pause_ms = cfg->retry_sleep_ms > 0 ? cfg->retry_sleep_ms : 2;
    int k = cfg->lockall, printed = 0;
    for (long i = 0; i < t->ops && !__atomic_load_n(&sh->stop, __ATOMIC_RELAXED); i++) {
        /* k distinct names in a random order: a partial Fisher-Yates */
        int pick[CHK_MAX_NAMES];
        for (int j = 0; j < pr->nnames; j++)
            pick[j] = j;
        for (int j = 0; j < k; j++) {
            int x = j + (int)(rand_r(&seed) % (unsigned)(pr->nnames - j));
            int tmp = pick[j];
            pick[j] = pick[x];
            pick[x] = tmp;
        }
        dist_mutex_t *ms[CHK_MAX_NAMES];
        for (int j = 0; j < k; j++)
            ms[j] = &pr->u[pick[j]].m;
        int how = 0, rc;
        for (;;) {
            int64_t c0 = chk_now_ns();
            rc = do_lockall(pr, ms, k, &seed, &how);
            atomic_max(&sh->max_call_us, (chk_now_ns() - c0) / 1000);
            if (rc == 0 || rc == EOWNERDEAD)
                break;
            uint64_t *ctr = rc == EIO ? &sh->lock_eio : rc == ETIMEDOUT ? &sh->lock_timedout
                                                                        : &sh->lock_other;
            __atomic_add_fetch(ctr, 1, __ATOMIC_RELAXED);
            note_error(sh, "lockall", rc);
            if (!cfg->quiet && printed < 3) {
                printed++;
                fprintf(stderr, "checker [%d/%d]: lockall (%s) = %s: %s\n", (int)getpid(), (int)tid,
                        how == 0 ? "blocking" : how == 1 ? "timed" : "try", th_errname(rc),
                        dist_lasterror());
            }
            if (!cfg->retry_errors ||
                (cfg->retry_errors != CHK_RETRY_ALL && rc != EIO && rc != ETIMEDOUT)) {
                t->failed = 1;
                return;
            }
            th_sleep_ms(pause_ms);
        }
        if (rc == EOWNERDEAD)
            __atomic_add_fetch(&sh->ownerdead, 1, __ATOMIC_RELAXED);
        int64_t t0 = chk_now_ns();
        uint64_t fence[CHK_MAX_NAMES];
        int frc = 0;
        for (int j = 0; j < k; j++)
            frc |= do_fence(pr, pick[j], &fence[j]);
        int32_t *inside = pr->index < CHK_MAX_PROCS ? &sh->inside[pr->index] : NULL;
        if (inside)
            __atomic_add_fetch(inside, 1, __ATOMIC_RELAXED);
        /* Read every counter, pause, write every one back: two holders of
         * one name at once lose an update. */
        uint64_t v[CHK_MAX_NAMES];
        __atomic_store_n(&sh->writer, (int32_t)getpid(), __ATOMIC_RELAXED);
        for (int j = 0; j < k; j++)
            v[j] = __atomic_load_n(&sh->counter[pick[j]], __ATOMIC_RELAXED);
        pause_in_hold(cfg);
        for (int j = 0; j < k; j++)
            __atomic_store_n(&sh->counter[pick[j]], v[j] + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&sh->writer, 0, __ATOMIC_RELAXED);
        if (inside)
            __atomic_sub_fetch(inside, 1, __ATOMIC_RELAXED);
        int64_t t1 = chk_now_ns();
        chk_hold_t *h[CHK_MAX_NAMES];
        for (int j = 0; j < k; j++) {
            uint64_t slot = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED);
            h[j] = slot < sh->cap ? &sh->holds[slot] : NULL;
            if (h[j]) {
                h[j]->t_start_ns = t0;
                h[j]->t_end_ns = t1;
                h[j]->fence = fence[j];
                h[j]->pid = (int32_t)getpid();
                h[j]->tid = tid;
                h[j]->mode = 'w';
                h[j]->name = (uint8_t)pick[j];
                h[j]->lock_rc = (int16_t)rc;
            }
        }
        /* each unlocked on its own, in the order taken */
        int bad = 0;
        for (int j = 0; j < k; j++) {
            int urc = do_unlock(pr, pick[j]);
            if (h[j]) {
                h[j]->unlock_rc = (int16_t)urc;
                __atomic_store_n(&h[j]->filled, 1, __ATOMIC_RELEASE);
            }
            if (urc != 0 && !cfg->quiet && printed < 3) {
                printed++;
                fprintf(stderr, "checker [%d/%d]: unlock = %s: %s\n", (int)getpid(), (int)tid,
                        th_errname(urc), dist_lasterror());
            }
            bad |= urc != 0 && urc != ENOLCK && urc != EIO;
        }
        if ((frc != 0 && !cfg->no_lock) || bad) {
            t->failed = 1;
            return;
        }
    }
}

static void *chk_thread_main(void *p)
{
    struct chk_thread *t = p;
    if (t->pr->cfg->lockall >= 2) {
        chk_lockall_thread(t);
        return NULL;
    }
    struct chk_proc *pr = t->pr;
    const chk_cfg_t *cfg = pr->cfg;
    chk_shared_t *sh = pr->sh;
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)t->gindex * 104729u +
                    (unsigned)chk_now_ns();
    int32_t tid = (int32_t)syscall(SYS_gettid);
    int write_pct = cfg->write_pct > 0 ? cfg->write_pct : 25;
    long pause_ms = cfg->retry_sleep_ms > 0 ? cfg->retry_sleep_ms : 2;
    int printed = 0;
    redisContext *vc = NULL;
    if (cfg->verify_port > 0) {
        struct timeval tv = { 5, 0 };
        vc = redisConnectWithTimeout("127.0.0.1", cfg->verify_port, tv);
        if (vc && vc->err) {
            redisFree(vc);
            vc = NULL;
        }
        if (vc)
            redisSetTimeout(vc, tv);
    }

    /* the names in turn, from an offset of this thread's */
    int k = (int)(((unsigned)t->gindex + (unsigned)getpid()) % (unsigned)pr->nnames);
    for (long i = 0; i < t->ops && !__atomic_load_n(&sh->stop, __ATOMIC_RELAXED); i++) {
        char mode = cfg->kind == CHK_RWLOCK && (int)(rand_r(&seed) % 100) >= write_pct ? 'r' : 'w';
        int how = 0, rc;
        int ni = k;
        k = (k + 1) % pr->nnames;
        for (;;) {
            int64_t c0 = chk_now_ns();
            rc = do_lock(pr, ni, mode, &seed, &how);
            atomic_max(&sh->max_call_us, (chk_now_ns() - c0) / 1000);
            if (rc == 0 || rc == EOWNERDEAD)
                break;
            uint64_t *ctr = rc == EIO ? &sh->lock_eio : rc == ETIMEDOUT ? &sh->lock_timedout
                                                                        : &sh->lock_other;
            __atomic_add_fetch(ctr, 1, __ATOMIC_RELAXED);
            note_error(sh, mode == 'w' ? "lock" : "rdlock", rc);
            if (!cfg->quiet && printed < 3) {
                printed++;
                fprintf(stderr, "checker [%d/%d]: lock (%s) = %s: %s\n", (int)getpid(), (int)tid,
                        how == 0 ? "blocking" : how == 1 ? "timed" : "try", th_errname(rc),
                        dist_lasterror());
            }
            if (!cfg->retry_errors ||
                (cfg->retry_errors != CHK_RETRY_ALL && rc != EIO && rc != ETIMEDOUT)) {
                t->failed = 1;
                goto out;
            }
            th_sleep_ms(pause_ms);
        }
        if (rc == EOWNERDEAD)
            __atomic_add_fetch(&sh->ownerdead, 1, __ATOMIC_RELAXED);
        int64_t t0 = chk_now_ns();
        uint64_t fence = 0;
        int frc = do_fence(pr, ni, &fence);
        int bad = 0, torn = 0;
        if (vc)
            bad = redis_disagrees(vc, pr->key[ni], mode, fence);
        /* Read, pause, write: not an atomic increment, so two holders at
         * once lose updates.  (Relaxed atomic loads and stores: the lock
         * orders them through Redis, which ThreadSanitizer cannot see.) */
        int32_t *inside = pr->index < CHK_MAX_PROCS ? &sh->inside[pr->index] : NULL;
        if (inside)
            __atomic_add_fetch(inside, 1, __ATOMIC_RELAXED);
        if (mode == 'w') {
            __atomic_store_n(&sh->writer, (int32_t)getpid(), __ATOMIC_RELAXED);
            uint64_t v = __atomic_load_n(&sh->counter[ni], __ATOMIC_RELAXED);
            pause_in_hold(cfg);
            __atomic_store_n(&sh->counter[ni], v + 1, __ATOMIC_RELAXED);
            __atomic_store_n(&sh->writer, 0, __ATOMIC_RELAXED);
        } else {
            uint64_t v = __atomic_load_n(&sh->counter[ni], __ATOMIC_RELAXED);
            pause_in_hold(cfg);
            torn = __atomic_load_n(&sh->counter[ni], __ATOMIC_RELAXED) != v;
        }
        if (inside)
            __atomic_sub_fetch(inside, 1, __ATOMIC_RELAXED);
        int64_t t1 = chk_now_ns();
        uint64_t slot = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED);
        chk_hold_t *h = slot < sh->cap ? &sh->holds[slot] : NULL;
        if (h) {
            h->t_start_ns = t0;
            h->t_end_ns = t1;
            h->fence = fence;
            h->pid = (int32_t)getpid();
            h->tid = tid;
            h->mode = mode;
            h->name = (uint8_t)ni;
            h->lock_rc = (int16_t)rc;
            h->redis_bad = (int8_t)bad;
            h->torn = (int8_t)torn;
        }
        int urc = do_unlock(pr, ni);
        if (h) {
            h->unlock_rc = (int16_t)urc;
            __atomic_store_n(&h->filled, 1, __ATOMIC_RELEASE);
        }
        if (frc != 0 || (urc != 0 && !cfg->quiet && printed < 3)) {
            printed++;
            fprintf(stderr, "checker [%d/%d]: getfence = %s, unlock = %s: %s\n", (int)getpid(),
                    (int)tid, th_errname(frc), th_errname(urc), dist_lasterror());
        }
        if (frc != 0 && !cfg->no_lock) {
            t->failed = 1;
            goto out;
        }
        if (urc != 0 && urc != ENOLCK && urc != EIO) {
            t->failed = 1;          /* EPERM & co: a bug, never a fault */
            goto out;
        }
    }
out:
    if (vc)
        redisFree(vc);
    return NULL;
}

int chk_child(void *arg)
{
    struct chk_proc *pr = arg;
    const chk_cfg_t *cfg = pr->cfg;
    if (cfg->child_alarm_s < 0)
        alarm(0);
    else if (cfg->child_alarm_s > 0)
        alarm((unsigned)cfg->child_alarm_s);
    for (const char *const *e = cfg->env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        char k[128];
        size_t n = (size_t)(eq - *e) < sizeof k - 1 ? (size_t)(eq - *e) : sizeof k - 1;
        memcpy(k, *e, n);
        k[n] = 0;
        setenv(k, eq + 1, 1);
    }
    pr->nnames = cfg->nnames > 0 ? cfg->nnames : 1;
    for (int ni = 0; ni < pr->nnames; ni++) {
        const char *name = cfg->nnames > 0 ? cfg->names[ni] : cfg->name;
        th_key(pr->key[ni], sizeof pr->key[ni], name, "");
        int rc;
        if (cfg->kind == CHK_MUTEX) {
            dist_mutexattr_t at;
            dist_mutexattr_init(&at);
            if (cfg->fair)
                dist_mutexattr_setfair(&at, 1);
            if (cfg->lease_ms > 0)
                dist_mutexattr_setlease(&at, (unsigned long)cfg->lease_ms);
            rc = dist_mutex_init(&pr->u[ni].m, name, &at);
            dist_mutexattr_destroy(&at);
        } else {
            dist_rwlockattr_t at;
            dist_rwlockattr_init(&at);
            if (cfg->lease_ms > 0)
                dist_rwlockattr_setlease(&at, (unsigned long)cfg->lease_ms);
            rc = dist_rwlock_init(&pr->u[ni].rw, name, &at);
            dist_rwlockattr_destroy(&at);
        }
        TH_CHECK_RC(rc, 0);
    }
    /* ops spread over every thread; or ops_per_thread each; or until stopped */
    long per = cfg->ops_per_thread > 0 ? cfg->ops_per_thread :
               cfg->ops > 0 ? cfg->ops / (cfg->procs * cfg->threads) : LONG_MAX;
    long extra = cfg->ops_per_thread <= 0 && cfg->ops > 0 ? cfg->ops % (cfg->procs * cfg->threads) : 0;
    int nth = cfg->proc_threads ? cfg->proc_threads[pr->index] : cfg->threads;
    TH_CHECK(nth >= 1 && nth <= cfg->threads);
    struct chk_thread *ts = calloc((size_t)nth, sizeof *ts);
    TH_CHECK(ts != NULL);
    for (int i = 0; i < nth; i++) {
        ts[i].pr = pr;
        ts[i].gindex = pr->index * cfg->threads + i;
        ts[i].ops = per + (ts[i].gindex < extra ? 1 : 0);
        TH_CHECK(pthread_create(&ts[i].th, NULL, chk_thread_main, &ts[i]) == 0);
    }
    int failed = 0;
    for (int i = 0; i < nth; i++) {
        pthread_join(ts[i].th, NULL);
        failed += ts[i].failed;
    }
    free(ts);
    for (int ni = 0; ni < pr->nnames; ni++) {
        if (cfg->kind == CHK_MUTEX)
            dist_mutex_destroy(&pr->u[ni].m);
        else
            dist_rwlock_destroy(&pr->u[ni].rw);
    }
    dl_stats_t st;
    dl_stats_get(&st);
    __atomic_add_fetch(&pr->sh->redirects, st.redirects, __ATOMIC_RELAXED);
    __atomic_add_fetch(&pr->sh->reconnects, st.reconnects, __ATOMIC_RELAXED);
    return failed ? TH_CHILD_FAIL : 0;
}

