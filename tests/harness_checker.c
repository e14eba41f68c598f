/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_checker.c - see harness_checker.h. */
#include "harness.h"
#include "harness_checker.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct chk_shared {
    size_t map_len;
    uint64_t cap;
    uint64_t next;              /* slots handed out */
    uint64_t counter;           /* incremented non-atomically under write holds */
    uint64_t lock_eio, lock_timedout, lock_other, ownerdead;
    int32_t writer;             /* pid inside a write hold now, 0 none */
    int stop;                   /* chk_stop(): threads end after their hold */
    int32_t inside[CHK_MAX_PROCS];  /* threads of process i inside a hold now */
    int error_taken;
    char first_error[256];
    chk_hold_t holds[];
};

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

struct chk_proc {
    const chk_cfg_t *cfg;
    chk_shared_t *sh;
    int index;                  /* process number */
    union { dist_mutex_t m; dist_rwlock_t rw; } u;
    char key[DIST_NAME_MAX + 64];
};

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

static int do_lock(struct chk_proc *pr, char mode, unsigned *seed, int *how)
{
    const chk_cfg_t *cfg = pr->cfg;
    if (cfg->no_lock)
        return 0;
    /* Mostly blocking calls; some timed ones with a generous deadline and
     * some trylock loops, so every acquisition path is exercised. */
    int r = (int)(rand_r(seed) % 10);
    int lh = cfg->proc_lock_how ? cfg->proc_lock_how[pr->index] : cfg->lock_how;
    *how = lh == CHK_BLOCKING ? 0 : lh == CHK_TRY_ONLY ? 2 : r < 7 ? 0 : r < 9 ? 1 : 2;
    if (*how == 1) {
        struct timespec ts = th_abstime_ms(10000);
        if (cfg->kind == CHK_MUTEX)
            return dist_mutex_timedlock(&pr->u.m, &ts);
        return mode == 'w' ? dist_rwlock_timedwrlock(&pr->u.rw, &ts)
                           : dist_rwlock_timedrdlock(&pr->u.rw, &ts);
    }
    if (*how == 2) {
        for (;;) {
            int rc = cfg->kind == CHK_MUTEX ? dist_mutex_trylock(&pr->u.m)
                     : mode == 'w' ? dist_rwlock_trywrlock(&pr->u.rw)
                                   : dist_rwlock_tryrdlock(&pr->u.rw);
            if (rc != EBUSY)
                return rc;
            th_sleep_us(200 + rand_r(seed) % 300);
        }
    }
    if (cfg->kind == CHK_MUTEX)
        return dist_mutex_lock(&pr->u.m);
    return mode == 'w' ? dist_rwlock_wrlock(&pr->u.rw) : dist_rwlock_rdlock(&pr->u.rw);
}

static int do_unlock(struct chk_proc *pr)
{
    if (pr->cfg->no_lock)
        return 0;
    return pr->cfg->kind == CHK_MUTEX ? dist_mutex_unlock(&pr->u.m) : dist_rwlock_unlock(&pr->u.rw);
}

static int do_fence(struct chk_proc *pr, uint64_t *f)
{
    if (pr->cfg->no_lock) {
        *f = 0;
        return 0;
    }
    return pr->cfg->kind == CHK_MUTEX ? dist_mutex_getfence(&pr->u.m, f)
                                      : dist_rwlock_getfence(&pr->u.rw, f);
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

static void *chk_thread_main(void *p)
{
    struct chk_thread *t = p;
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

    for (long i = 0; i < t->ops && !__atomic_load_n(&sh->stop, __ATOMIC_RELAXED); i++) {
        char mode = cfg->kind == CHK_RWLOCK && (int)(rand_r(&seed) % 100) >= write_pct ? 'r' : 'w';
        int how = 0, rc;
        for (;;) {
            rc = do_lock(pr, mode, &seed, &how);
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
            if (!cfg->retry_errors || (rc != EIO && rc != ETIMEDOUT)) {
                t->failed = 1;
                goto out;
            }
            th_sleep_ms(pause_ms);
        }
        if (rc == EOWNERDEAD)
            __atomic_add_fetch(&sh->ownerdead, 1, __ATOMIC_RELAXED);
        int64_t t0 = chk_now_ns();
        uint64_t fence = 0;
        int frc = do_fence(pr, &fence);
        int bad = 0, torn = 0;
        if (vc)
            bad = redis_disagrees(vc, pr->key, mode, fence);
        /* Read, pause, write: not an atomic increment, so two holders at
         * once lose updates.  (Relaxed atomic loads and stores: the lock
         * orders them through Redis, which ThreadSanitizer cannot see.) */
        int32_t *inside = pr->index < CHK_MAX_PROCS ? &sh->inside[pr->index] : NULL;
        if (inside)
            __atomic_add_fetch(inside, 1, __ATOMIC_RELAXED);
        if (mode == 'w') {
            __atomic_store_n(&sh->writer, (int32_t)getpid(), __ATOMIC_RELAXED);
            uint64_t v = __atomic_load_n(&sh->counter, __ATOMIC_RELAXED);
            pause_in_hold(cfg);
            __atomic_store_n(&sh->counter, v + 1, __ATOMIC_RELAXED);
            __atomic_store_n(&sh->writer, 0, __ATOMIC_RELAXED);
        } else {
            uint64_t v = __atomic_load_n(&sh->counter, __ATOMIC_RELAXED);
            pause_in_hold(cfg);
            torn = __atomic_load_n(&sh->counter, __ATOMIC_RELAXED) != v;
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
            h->lock_rc = (int16_t)rc;
            h->redis_bad = (int8_t)bad;
            h->torn = (int8_t)torn;
        }
        int urc = do_unlock(pr);
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

static int chk_child(void *arg)
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
    th_key(pr->key, sizeof pr->key, cfg->name, "");
    int rc;
    if (cfg->kind == CHK_MUTEX) {
        dist_mutexattr_t at;
        dist_mutexattr_init(&at);
        if (cfg->fair)
            dist_mutexattr_setfair(&at, 1);
        rc = dist_mutex_init(&pr->u.m, cfg->name, &at);
        dist_mutexattr_destroy(&at);
    } else {
        rc = dist_rwlock_init(&pr->u.rw, cfg->name, NULL);
    }
    TH_CHECK_RC(rc, 0);
    long per = cfg->ops / (cfg->procs * cfg->threads);
    long extra = cfg->ops % (cfg->procs * cfg->threads);
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
    if (cfg->kind == CHK_MUTEX)
        dist_mutex_destroy(&pr->u.m);
    else
        dist_rwlock_destroy(&pr->u.rw);
    return failed ? TH_CHILD_FAIL : 0;
}

/* -------------------------------------------------------------------- parent */

static int exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return 1;                   /* gone (or not ours): nothing to wait for */
    return si.si_pid == pid;
}

static chk_shared_t *chk_running;   /* the area of the chk_run in progress */

int chk_inside(int index)
{
    if (!chk_running || index < 0 || index >= CHK_MAX_PROCS)
        return 0;
    return (int)__atomic_load_n(&chk_running->inside[index], __ATOMIC_RELAXED);
}

void chk_stop(void)
{
    if (chk_running)
        __atomic_store_n(&chk_running->stop, 1, __ATOMIC_RELAXED);
}

pid_t chk_writer_now(void)
{
    return chk_running ? (pid_t)__atomic_load_n(&chk_running->writer, __ATOMIC_RELAXED) : 0;
}

int chk_run(const chk_cfg_t *cfg, chk_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    rep->expected = (uint64_t)cfg->ops;
    chk_shared_t *sh = chk_shared_new((uint64_t)cfg->ops);
    if (!sh) {
        snprintf(rep->first, sizeof rep->first, "mmap of %ld holds failed", cfg->ops);
        return -1;
    }
    chk_running = sh;
    pid_t *pids = calloc((size_t)cfg->procs, sizeof *pids);
    struct chk_proc *prs = calloc((size_t)cfg->procs, sizeof *prs);
    int64_t t0 = th_now_ms();
    for (int i = 0; i < cfg->procs; i++) {
        prs[i].cfg = cfg;
        prs[i].sh = sh;
        prs[i].index = i;
        pids[i] = th_fork_child(chk_child, &prs[i]);
        if (cfg->pids_out)
            cfg->pids_out[i] = pids[i];
    }
    long max_ms = cfg->max_ms > 0 ? cfg->max_ms : 35000;
    long tick_ms = cfg->tick_ms > 0 ? cfg->tick_ms : 20;
    int64_t next_tick = t0 + tick_ms;
    for (;;) {
        int running = 0;
        for (int i = 0; i < cfg->procs; i++)
            if (pids[i] > 0 && !exited(pids[i]))
                running++;
        int64_t now = th_now_ms();
        if (!running || now - t0 >= max_ms)
            break;
        if (cfg->tick && now >= next_tick) {
            cfg->tick(cfg->tick_arg, now - t0, chk_done(sh));
            next_tick = th_now_ms() + tick_ms;
        }
        th_sleep_ms(2);
    }
    rep->elapsed_ms = th_now_ms() - t0;
    rep->stopped = __atomic_load_n(&sh->stop, __ATOMIC_RELAXED);
    chk_running = NULL;
    for (int i = 0; i < cfg->procs; i++) {
        int st = th_wait_child_ms(pids[i], 1);   /* reaps, or kills one still running */
        if (st != 0) {
            rep->children_failed++;
            if (!rep->first[0])
                snprintf(rep->first, sizeof rep->first, "checker child %d: status %d%s", (int)pids[i],
                         st, st == TH_WAIT_TIMEOUT ? " (still running: killed)" :
                         st == TH_CHILD_FAIL ? " (a lock call failed)" :
                         st > 128 ? " (killed by a signal)" : "");
        }
    }
    uint64_t n = chk_done(sh);
    if (rep->stopped)
        rep->expected = n;          /* every hold begun must be complete */
    rep->holds = 0;
    for (uint64_t i = 0; i < n; i++)
        if (sh->holds[i].filled)
            rep->holds++;
    rep->unfilled = n - rep->holds;
    chk_verify(sh->holds, n, rep);
    if (cfg->holds_out && cfg->nholds_out) {
        /* chk_verify left the complete holds first, sorted by start */
        *cfg->holds_out = malloc(sizeof(chk_hold_t) * (rep->holds ? rep->holds : 1));
        *cfg->nholds_out = *cfg->holds_out ? rep->holds : 0;
        if (*cfg->holds_out)
            memcpy(*cfg->holds_out, sh->holds, sizeof(chk_hold_t) * rep->holds);
    }
    rep->counter = __atomic_load_n(&sh->counter, __ATOMIC_RELAXED);
    rep->lost_updates = rep->writes > rep->counter ? rep->writes - rep->counter : 0;
    rep->lock_eio = sh->lock_eio;
    rep->lock_timedout = sh->lock_timedout;
    rep->lock_other = sh->lock_other;
    snprintf(rep->first_error, sizeof rep->first_error, "%s", sh->first_error);
    rep->ops_per_s = rep->elapsed_ms > 0 ? rep->holds * 1000.0 / (double)rep->elapsed_ms : 0;
    if (!rep->first[0] && rep->holds != rep->expected)
        snprintf(rep->first, sizeof rep->first, "%llu holds recorded, %llu expected",
                 (unsigned long long)rep->holds, (unsigned long long)rep->expected);
    /* A hold not vouched for (unlock ENOLCK/EIO) that ran over others
     * wrote back a counter read before them: lost updates are then
     * expected, and counted in the totals but not as a violation. */
    if (!rep->first[0] && rep->lost_updates && !rep->excused)
        snprintf(rep->first, sizeof rep->first, "lost updates: counter %llu after %llu write holds",
                 (unsigned long long)rep->counter, (unsigned long long)rep->writes);
    free(pids);
    free(prs);
    chk_shared_free(sh);
    int bad = rep->children_failed || rep->holds != rep->expected || rep->overlaps ||
              rep->fence_inversions || (rep->lost_updates && !rep->excused) ||
              (rep->torn_reads && !rep->excused) || rep->redis_bad || rep->unlock_other;
    return bad ? -1 : 0;
}

/* ------------------------------------------------------------------ verify */

static int cmp_start(const void *a, const void *b)
{
    const chk_hold_t *x = a, *y = b;
    if (x->t_start_ns != y->t_start_ns)
        return x->t_start_ns < y->t_start_ns ? -1 : 1;
    return x->t_end_ns < y->t_end_ns ? -1 : x->t_end_ns > y->t_end_ns;
}

/* Holds in order of their end. */
struct chk_pe { int64_t end; uint64_t i; };

static int cmp_pe(const void *a, const void *b)
{
    const struct chk_pe *x = a, *y = b;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Largest fence seen, and the largest among other processes than the
 * holder of the largest: answers "max fence of processes other than P". */
typedef struct top2 { uint64_t f1; int32_t p1; uint64_t f2; int have1, have2; } top2_t;

static void top2_add(top2_t *t, uint64_t f, int32_t pid, int want_max)
{
    int better1 = !t->have1 || (want_max ? f > t->f1 : f < t->f1);
    if (t->have1 && pid == t->p1) {
        if (better1)
            t->f1 = f;
        return;
    }
    if (better1) {
        if (t->have1) {
            t->f2 = t->f1;
            t->have2 = 1;
        }
        t->f1 = f;
        t->p1 = pid;
        t->have1 = 1;
    } else if (!t->have2 || (want_max ? f > t->f2 : f < t->f2)) {
        t->f2 = f;
        t->have2 = 1;
    }
}

/* The extreme fence among processes other than pid: 1 and *f, or 0. */
static int top2_other(const top2_t *t, int32_t pid, uint64_t *f)
{
    if (t->have1 && t->p1 != pid) {
        *f = t->f1;
        return 1;
    }
    if (t->have2) {
        *f = t->f2;
        return 1;
    }
    return 0;
}

static void describe(chk_report_t *rep, const char *what, const chk_hold_t *a, const chk_hold_t *b)
{
    if (rep->first[0])
        return;
    snprintf(rep->first, sizeof rep->first,
             "%s: hold %c pid %d tid %d fence %llu [%lld, %lld] ns (unlock %s) and "
             "hold %c pid %d tid %d fence %llu [%lld, %lld] ns (lock %s)",
             what, a->mode, a->pid, a->tid, (unsigned long long)a->fence, (long long)a->t_start_ns,
             (long long)a->t_end_ns, th_errname(a->unlock_rc), b->mode, b->pid, b->tid,
             (unsigned long long)b->fence, (long long)b->t_start_ns, (long long)b->t_end_ns,
             th_errname(b->lock_rc));
}

uint64_t chk_verify(chk_hold_t *holds, uint64_t n, chk_report_t *rep)
{
    /* Complete records only, sorted by start. */
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (holds[i].filled)
            holds[m++] = holds[i];
    qsort(holds, (size_t)m, sizeof *holds, cmp_start);

    rep->overlaps = rep->excused = rep->fence_inversions = rep->torn_reads = 0;
    rep->redis_bad = rep->redis_bad_excused = rep->writes = rep->max_readers = 0;
    rep->ownerdead = rep->unlock_enolck = rep->unlock_eio = rep->unlock_other = 0;
    rep->longest_hold_gap_ms = 0;
    rep->first_loss[0] = 0;

    /* Overlaps: a sweep keeping the hold that ends last, of any mode and of
     * write holds, among all holds and among the holds whose unlock
     * returned 0.  Only those vouch for their whole time: an unlock that
     * returned ENOLCK (the hold was found lapsed) or EIO (Redis could not
     * be asked; the hold lapses within a lease) says the hold may have
     * ended in Redis before the thread stopped using it.  So an overlap is
     * a violation when a hold unlocked with 0 was still running as the
     * other began (the later one's lock call said it had the lock then),
     * and is excused when only holds not vouched for were. */
    int64_t max_end = INT64_MIN, max_wend = INT64_MIN;     /* all holds */
    int64_t g_end = INT64_MIN, g_wend = INT64_MIN;          /* unlocked with 0 */
    uint64_t g_i = 0, g_wi = 0;
    /* readers running at once: their ends, a small ring (max_readers only) */
    int64_t *rends = malloc(sizeof *rends * 4096);
    int nr = 0;
    for (uint64_t i = 0; i < m; i++) {
        chk_hold_t *h = &holds[i];
        int vouched = h->unlock_rc == 0;
        if (h->mode == 'w')
            rep->writes++;
        if ((h->unlock_rc == ENOLCK && !rep->unlock_enolck) ||
            (h->lock_rc == EOWNERDEAD && !rep->ownerdead)) {
            size_t len = strlen(rep->first_loss);
            snprintf(rep->first_loss + len, sizeof rep->first_loss - len,
                     "%s%s: pid %d tid %d fence %llu, %lld ms from %lld ms", len ? "; " : "",
                     h->unlock_rc == ENOLCK ? "unlock ENOLCK" : "lock EOWNERDEAD", h->pid, h->tid,
                     (unsigned long long)h->fence,
                     (long long)((h->t_end_ns - h->t_start_ns) / 1000000),
                     (long long)(h->t_start_ns / 1000000));
        }
        if (h->lock_rc == EOWNERDEAD)
            rep->ownerdead++;
        if (h->unlock_rc == ENOLCK)
            rep->unlock_enolck++;
        else if (h->unlock_rc == EIO)
            rep->unlock_eio++;
        else if (h->unlock_rc != 0)
            rep->unlock_other++;
        if (h->torn)
            rep->torn_reads++;          /* judged after the sweep */
        if (h->redis_bad) {
            if (h->unlock_rc == ENOLCK || h->unlock_rc == EIO) {
                rep->redis_bad_excused++;
            } else {
                rep->redis_bad++;
                describe(rep, "Redis did not have this hold (and unlock did not say ENOLCK)", h, h);
            }
        }
        if (i > 0 && h->t_start_ns > max_end) {
            int64_t gap = (h->t_start_ns - max_end) / 1000000;
            if (gap > rep->longest_hold_gap_ms)
                rep->longest_hold_gap_ms = gap;
        }
        /* the running holds h conflicts with: any (h writes) or writers */
        int64_t any_end = h->mode == 'w' ? max_end : max_wend;
        int64_t vouched_end = h->mode == 'w' ? g_end : g_wend;
        if (h->t_start_ns < vouched_end) {
            rep->overlaps++;
            describe(rep, "overlapping holds", &holds[h->mode == 'w' ? g_i : g_wi], h);
        } else if (h->t_start_ns < any_end) {
            rep->excused++;
        }
        if (h->t_end_ns > max_end)
            max_end = h->t_end_ns;
        if (h->mode == 'w' && h->t_end_ns > max_wend)
            max_wend = h->t_end_ns;
        if (vouched && h->t_end_ns > g_end) {
            g_end = h->t_end_ns;
            g_i = i;
        }
        if (vouched && h->mode == 'w' && h->t_end_ns > g_wend) {
            g_wend = h->t_end_ns;
            g_wi = i;
        }
        if (h->mode == 'r' && rends) {
            int k = 0;
            for (int j = 0; j < nr; j++)
                if (rends[j] > h->t_start_ns)
                    rends[k++] = rends[j];
            nr = k;
            if (nr < 4096)
                rends[nr++] = h->t_end_ns;
            if ((uint64_t)nr > rep->max_readers)
                rep->max_readers = (uint64_t)nr;
        }
    }
    free(rends);
    /* A write under a read hold means a writer's hold overlapped it: the
     * sweep counted that overlap, or excused it when the writer was not
     * vouched for (a lapsed holder writing back late).  So torn reads, like
     * lost updates, are violations only when no overlap was excused. */
    if (rep->torn_reads && !rep->excused)
        for (uint64_t i = 0; i < m; i++)
            if (holds[i].torn) {
                describe(rep, "torn read (the counter changed under a read hold)", &holds[i],
                         &holds[i]);
                break;
            }

    /* Fences.  For each write hold W (at index i in start order): every
     * hold that ended before W started must have fence <= W's, < for
     * other processes; every hold that started after W ended must have
     * fence >= W's, > for other processes.  Holds that overlap W were
     * reported above; they are left out here.  Prefix maxima from the left,
     * suffix minima from the right, each split by process (top2). */
    if (m > 0) {
        /* "ended before holds[i] started": holds sorted by end, consumed by
         * a pointer as i advances. */
        struct chk_pe *pe = malloc(sizeof *pe * m);
        if (!pe)
            return rep->overlaps + rep->fence_inversions +
                   (rep->excused ? 0 : rep->torn_reads) + rep->redis_bad;
        for (uint64_t i = 0; i < m; i++)
            pe[i] = (struct chk_pe){ holds[i].t_end_ns, i };
        qsort(pe, (size_t)m, sizeof *pe, cmp_pe);

        top2_t before = { 0, 0, 0, 0, 0 };
        uint64_t k = 0;
        for (uint64_t i = 0; i < m; i++) {
            const chk_hold_t *w = &holds[i];
            while (k < m && pe[k].end <= w->t_start_ns) {
                const chk_hold_t *b = &holds[pe[k].i];
                top2_add(&before, b->fence, b->pid, 1);
                k++;
            }
            if (w->mode != 'w')
                continue;
            uint64_t f;
            int bad = 0;
            if (before.have1 && before.f1 > w->fence)
                bad = 1;                            /* anyone's: must not be above */
            if (top2_other(&before, w->pid, &f) && f >= w->fence)
                bad = 1;                            /* another process's: must be below */
            if (bad) {
                rep->fence_inversions++;
                /* find an example for the message */
                for (uint64_t j = 0; j < k; j++) {
                    const chk_hold_t *b = &holds[pe[j].i];
                    if (b->fence > w->fence || (b->pid != w->pid && b->fence >= w->fence)) {
                        describe(rep, "fence inversion (a hold that ended before a write hold "
                                 "started has a fence not below it)", b, w);
                        break;
                    }
                }
            }
        }
        /* "started after holds[i] ended": suffix minima over start order. */
        top2_t after = { 0, 0, 0, 0, 0 };
        /* walk W by end descending, adding holds by start descending */
        uint64_t s = m;                             /* holds[s..m) added */
        for (uint64_t kk = m; kk-- > 0;) {
            const chk_hold_t *w = &holds[pe[kk].i];
            while (s > 0 && holds[s - 1].t_start_ns >= w->t_end_ns) {
                s--;
                top2_add(&after, holds[s].fence, holds[s].pid, 0);
            }
            if (w->mode != 'w')
                continue;
            uint64_t f;
            int bad = 0;
            if (after.have1 && after.f1 < w->fence)
                bad = 1;
            if (top2_other(&after, w->pid, &f) && f <= w->fence)
                bad = 1;
            if (bad) {
                rep->fence_inversions++;
                for (uint64_t j = s; j < m; j++) {
                    const chk_hold_t *b = &holds[j];
                    if (b->fence < w->fence || (b->pid != w->pid && b->fence <= w->fence)) {
                        describe(rep, "fence inversion (a hold that started after a write hold "
                                 "ended has a fence not above it)", w, b);
                        break;
                    }
                }
            }
        }
        free(pe);
    }
    return rep->overlaps + rep->fence_inversions + (rep->excused ? 0 : rep->torn_reads) +
           rep->redis_bad;
}

void chk_print(FILE *f, const char *title, const chk_report_t *r)
{
    fprintf(f, "== %s\n", title ? title : "checker");
    fprintf(f, "holds checked      %llu (expected %llu, incomplete %llu)\n",
            (unsigned long long)r->holds, (unsigned long long)r->expected,
            (unsigned long long)r->unfilled);
    fprintf(f, "write holds        %llu, shared counter %llu, lost updates %llu\n",
            (unsigned long long)r->writes, (unsigned long long)r->counter,
            (unsigned long long)r->lost_updates);
    fprintf(f, "overlaps           %llu (excused after ENOLCK: %llu)\n",
            (unsigned long long)r->overlaps, (unsigned long long)r->excused);
    fprintf(f, "fence inversions   %llu\n", (unsigned long long)r->fence_inversions);
    fprintf(f, "torn reads         %llu, most readers at once %llu\n",
            (unsigned long long)r->torn_reads, (unsigned long long)r->max_readers);
    fprintf(f, "redis disagreed    %llu (excused after ENOLCK: %llu)\n",
            (unsigned long long)r->redis_bad, (unsigned long long)r->redis_bad_excused);
    fprintf(f, "lock EOWNERDEAD    %llu; failed lock calls: EIO %llu, ETIMEDOUT %llu, other %llu\n",
            (unsigned long long)r->ownerdead, (unsigned long long)r->lock_eio,
            (unsigned long long)r->lock_timedout, (unsigned long long)r->lock_other);
    fprintf(f, "unlock ENOLCK      %llu, EIO %llu, other %llu\n",
            (unsigned long long)r->unlock_enolck, (unsigned long long)r->unlock_eio,
            (unsigned long long)r->unlock_other);
    fprintf(f, "children failed    %d\n", r->children_failed);
    fprintf(f, "elapsed            %.2f s, %.0f ops/s, longest time without a hold %lld ms\n",
            r->elapsed_ms / 1000.0, r->ops_per_s, (long long)r->longest_hold_gap_ms);
    if (r->first_error[0])
        fprintf(f, "a lock error       %s\n", r->first_error);
    if (r->first[0])
        fprintf(f, "first violation    %s\n", r->first);
    fflush(f);
}

int chk_keys_left(const char *name)
{
    static const char *const suffix[] = { "", ":r", ":ri", ":q", ":w" };
    int left = 0;
    char key[DIST_NAME_MAX + 64];
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        th_key(key, sizeof key, name, suffix[i]);
        if (th_cmd_ll("EXISTS %s", key) == 1)
            left++;
    }
    return left;
}

int chk_keys_left_at(int port, const char *name)
{
    static const char *const suffix[] = { "", ":r", ":ri", ":q", ":w" };
    int left = 0;
    char key[DIST_NAME_MAX + 64];
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        th_key(key, sizeof key, name, suffix[i]);
        redisReply *r = th_cmd_at(port, "EXISTS %s", key);
        if (!r)
            return -1;
        if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
            left++;
        freeReplyObject(r);
    }
    return left;
}
