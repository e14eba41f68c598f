/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_barrier.c - dist_barrier_t across processes, in the mode
 * TH_BARRIER_MODE names (single, the default; sentinel, cluster, tls,
 * redlock: CMake runs the suite once per mode).
 *
 *  - generations: processes x threads waiting many generations in a row;
 *    in each, exactly one caller gets DIST_BARRIER_SERIAL_THREAD, and none
 *    is released before every participant arrived; a count below the
 *    number of participants (generations mixing them) still gives one
 *    serial per `count` arrivals, however the threads and processes fall;
 *  - waking: one push per process and generation, however many of its
 *    threads wait (the library's counters); a push that never comes is
 *    made up for by the process's check;
 *  - an arrival counts once made, also when its process is killed right
 *    after;
 *  - timedwait: runs out never before abstime and withdraws its arrival
 *    (the next callers do not count it); released when its generation
 *    completes in time; a wait stopped by another thread (the
 *    interposer's entry) withdraws too;
 *  - counts: another count while the barrier is in use is EINVAL naming
 *    both; once idle for a lease, a new count is taken, and an object
 *    with the old one is refused at its wait, naming both;
 *  - replies lost (single, through a proxy): an arrival's reply cut (the
 *    request resent: counted once); an arrival held back on a frozen
 *    connection past the I/O time-out (EIO), then settled by the next wait
 *    before its late copy runs (which then counts nothing), or run first
 *    and completing a generation (the thread's next wait returns at once);
 *  - Redis losing the barrier (single: FLUSHALL) gives its waiter ENOLCK,
 *    also when it is made anew with a smaller id (a clock set back);
 *    destroy EBUSY while a thread waits; an object in shared memory used
 *    by forked processes; names apart from locks; redlock:// refused.
 *
 * Every library call runs in a forked process with the mode's environment
 * (the library reads it once per process).
 */
#include "harness_mode.h"
#include "harness_proxy.h"
#include "barrier_api.h"
#include "keys.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

static void *shared(size_t size)
{
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    memset(m, 0, size);
    return m;
}

/* A release: 0 or the serial. */
#define RELEASED(rc) ((rc) == 0 || (rc) == DIST_BARRIER_SERIAL_THREAD)

/* The barrier's field (its count, arrivals ...) in Redis, -1 if none. */
static long long field(const char *name, const char *f)
{
    char k[700];
    size_t len = tm_key(k, sizeof k, DL_KIND_BARRIER, name, 0);
    redisReply *r = th_cmd_at(tm_key_port(k, len), "HGET %b %s", k, len, f);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    if (r)
        freeReplyObject(r);
    return v;
}

/* Waits (10 s at most) until barrier name has n arrivals waiting. */
static void wait_arrivals(const char *name, long long n)
{
    int64_t end = th_now_ms() + 10000;
    long long have;
    while ((have = field(name, "n")) != n) {
        if (th_now_ms() > end)
            fail_msg("%s: %lld arrivals after 10 s, want %lld", name, have, n);
        th_sleep_ms(2);
    }
}

/* ------------------------------------------------------------ generations */

#define GMAX 64

/* What the workers of one run record, in memory every process shares. */
typedef struct gen_rec {
    int arrived[GMAX];        /* arrivals before their wait, per generation */
    int released[GMAX];
    int serial[GMAX];
    int early[GMAX];          /* released while fewer than count had arrived */
    int serials;              /* all together (mixed generations) */
    int waits;
    int errors, first_rc;
    char first_err[256];
    unsigned long pushes[8], found[8], checks[8];  /* each process's counters */
    int progress[8][8];       /* waits returned, per process and thread */
} gen_rec_t;

typedef struct gen_work {
    int thread;
    const char *name;
    unsigned count;
    int procs, threads, gens;
    int aligned;              /* count == procs * threads: generation g is
                                 every participant's g-th wait */
    gen_rec_t *rec;
    dist_barrier_t *b;
    int proc;
} gen_work_t;

static void record_error(gen_rec_t *rec, int rc)
{
    if (__atomic_fetch_add(&rec->errors, 1, __ATOMIC_SEQ_CST) == 0) {
        rec->first_rc = rc;
        snprintf(rec->first_err, sizeof rec->first_err, "%s", dist_lasterror());
    }
}

static void *gen_thread(void *p)
{
    gen_work_t *w = p;
    gen_rec_t *rec = w->rec;
    for (int g = 0; g < w->gens; g++) {
        if (w->aligned)
            __atomic_add_fetch(&rec->arrived[g], 1, __ATOMIC_SEQ_CST);
        int rc = dist_barrier_wait(w->b);
        __atomic_add_fetch(&rec->waits, 1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&rec->progress[w->proc][w->thread], 1, __ATOMIC_SEQ_CST);
        if (rc == DIST_BARRIER_SERIAL_THREAD) {
            __atomic_add_fetch(&rec->serials, 1, __ATOMIC_SEQ_CST);
            if (w->aligned)
                __atomic_add_fetch(&rec->serial[g], 1, __ATOMIC_SEQ_CST);
        } else if (rc != 0) {
            record_error(rec, rc);
            return NULL;
        }
        if (w->aligned) {
            if (__atomic_load_n(&rec->arrived[g], __ATOMIC_SEQ_CST) < (int)w->count)
                __atomic_add_fetch(&rec->early[g], 1, __ATOMIC_SEQ_CST);
            __atomic_add_fetch(&rec->released[g], 1, __ATOMIC_SEQ_CST);
        }
    }
    return NULL;
}

static int gen_proc(void *p)
{
    gen_work_t w = *(gen_work_t *)p;
    th_setenv_list(tm_env());
    dist_barrier_t b;
    int rc = dist_barrier_init(&b, w.name, NULL, w.count);
    if (rc) {
        record_error(w.rec, rc);
        return 1;
    }
    w.b = &b;
    pthread_t t[8];
    gen_work_t tw[8];
    for (int i = 0; i < w.threads; i++) {
        tw[i] = w;
        tw[i].thread = i;
        TH_CHECK(pthread_create(&t[i], NULL, gen_thread, &tw[i]) == 0);
    }
    for (int i = 0; i < w.threads; i++)
        pthread_join(t[i], NULL);
    dl_stats_t st;
    dl_stats_get(&st);
    w.rec->pushes[w.proc] = st.barrier_pushes;
    w.rec->found[w.proc] = st.barrier_found;
    w.rec->checks[w.proc] = st.barrier_checks;
    TH_CHECK_RC(dist_barrier_destroy(&b), 0);
    return 0;
}

/* procs x threads waiting gens times on a barrier of count. */
static gen_rec_t *run_gens(const char *name, unsigned count, int procs, int threads, int gens)
{
    gen_rec_t *rec = shared(sizeof *rec);
    gen_work_t w = { 0, name, count, procs, threads, gens, count == (unsigned)(procs * threads), rec,
                     NULL, 0 };
    pid_t pid[8];
    for (int i = 0; i < procs; i++) {
        w.proc = i;
        pid[i] = th_fork_child(gen_proc, &w);
    }
    for (int i = 0; i < procs; i++) {
        int st = th_wait_child_ms(pid[i], 45000);
        if (st) {
            for (int a = 0; a < procs; a++)
                for (int t = 0; t < threads; t++)
                    fprintf(stderr, "[barrier] process %d thread %d: %d of %d waits returned\n",
                            a, t, rec->progress[a][t], gens);
        }
        if (st)
            fail_msg("process %d ended with %d; %d errors, the first %s: %s", i, st, rec->errors,
                     th_errname(rec->first_rc), rec->first_err);
    }
    if (rec->errors)
        fail_msg("%d waits failed, the first %s: %s", rec->errors, th_errname(rec->first_rc),
                 rec->first_err);
    return rec;
}

/* Exactly one serial per generation, nobody released early, and every
 * process told of each generation once at most, not once per thread. */
static void test_generations(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "bgen");
    enum { P = 3, T = 3, G = 30 };
    gen_rec_t *rec = run_gens(name, P * T, P, T, G);
    for (int g = 0; g < G; g++) {
        if (rec->serial[g] != 1)
            fail_msg("generation %d: %d serials, want 1", g, rec->serial[g]);
        if (rec->early[g])
            fail_msg("generation %d: %d callers released before all %d arrived", g,
                     rec->early[g], P * T);
        if (rec->released[g] != P * T)
            fail_msg("generation %d: %d released, want %d", g, rec->released[g], P * T);
    }
    for (int i = 0; i < P; i++) {
        fprintf(stderr, "[barrier] process %d: %lu pushes, %lu checks, %lu found by a check "
                "(%d generations, %d threads)\n", i, rec->pushes[i], rec->checks[i],
                rec->found[i], G, T);
        if (rec->pushes[i] > G)
            fail_msg("process %d was pushed %lu times for %d generations: more than one push "
                     "per process and generation", i, rec->pushes[i], G);
    }
    munmap(rec, sizeof *rec);
}

/* count below the participants: the generations mix threads and processes
 * as they come.  The workers wait (timed, so that those left short of a
 * whole generation at the end leave) until enough generations were
 * released; every generation released exactly `count` callers, one of them
 * the serial, whatever timed out and withdrew on the way. */
typedef struct mix_rec {
    int serials, released, timeouts, stop;
    int errors, first_rc;
    char first_err[256];
} mix_rec_t;

typedef struct mix_work {
    const char *name;
    unsigned count;
    int threads;
    mix_rec_t *rec;
    dist_barrier_t *b;
} mix_work_t;

static void *mix_thread(void *p)
{
    mix_work_t *w = p;
    mix_rec_t *rec = w->rec;
    while (!__atomic_load_n(&rec->stop, __ATOMIC_SEQ_CST)) {
        struct timespec ts = th_abstime_ms(2000);
        int rc = dist_barrier_timedwait(w->b, &ts);
        if (rc == DIST_BARRIER_SERIAL_THREAD)
            __atomic_add_fetch(&rec->serials, 1, __ATOMIC_SEQ_CST);
        if (RELEASED(rc)) {
            __atomic_add_fetch(&rec->released, 1, __ATOMIC_SEQ_CST);
        } else if (rc == ETIMEDOUT) {
            __atomic_add_fetch(&rec->timeouts, 1, __ATOMIC_SEQ_CST);
        } else {
            if (__atomic_fetch_add(&rec->errors, 1, __ATOMIC_SEQ_CST) == 0) {
                rec->first_rc = rc;
                snprintf(rec->first_err, sizeof rec->first_err, "%s", dist_lasterror());
            }
            return NULL;
        }
    }
    return NULL;
}

static int mix_proc(void *p)
{
    mix_work_t w = *(mix_work_t *)p;
    th_setenv_list(tm_env());
    dist_barrier_t b;
    TH_CHECK_RC(dist_barrier_init(&b, w.name, NULL, w.count), 0);
    w.b = &b;
    pthread_t t[8];
    for (int i = 0; i < w.threads; i++)
        TH_CHECK(pthread_create(&t[i], NULL, mix_thread, &w) == 0);
    for (int i = 0; i < w.threads; i++)
        pthread_join(t[i], NULL);
    TH_CHECK_RC(dist_barrier_destroy(&b), 0);
    return 0;
}

static void test_count_below_participants(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "bmix");
    enum { P = 2, T = 3, C = 3, GENS = 40 };
    mix_rec_t *rec = shared(sizeof *rec);
    mix_work_t w = { name, C, T, rec, NULL };
    pid_t pid[P];
    for (int i = 0; i < P; i++)
        pid[i] = th_fork_child(mix_proc, &w);
    int64_t end = th_now_ms() + 30000;
    while (__atomic_load_n(&rec->serials, __ATOMIC_SEQ_CST) < GENS && !rec->errors &&
           th_now_ms() < end)
        th_sleep_ms(5);
    __atomic_store_n(&rec->stop, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < P; i++)
        TH_ASSERT_CHILD_OK(pid[i]);
    fprintf(stderr, "[barrier] %d generations, %d released, %d timed out\n", rec->serials,
            rec->released, rec->timeouts);
    if (rec->errors)
        fail_msg("%d waits failed, the first %s: %s", rec->errors, th_errname(rec->first_rc),
                 rec->first_err);
    if (rec->serials < GENS)
        fail_msg("only %d generations in 30 s", rec->serials);
    if (rec->released != C * rec->serials)
        fail_msg("%d callers released in %d generations of count %d: want %d", rec->released,
                 rec->serials, C, C * rec->serials);
    assert_int_equal(field(name, "n"), 0);
    munmap(rec, sizeof *rec);
}

/* ------------------------------------------------------------ one process */

typedef struct bp_boot {
    const char *name;
    unsigned count;
    const char *const *env;   /* more, after the mode's */
    int req_rd, res_wr, c1, c2;
} bp_boot_t;

enum { BP_WAIT = 1, BP_TIMED, BP_WAIT_BG, BP_JOIN, BP_DESTROY, BP_STATS, BP_STOP_BG, BP_EXIT };

typedef struct bp_req { int op; long arg; } bp_req_t;
typedef struct bp_res {
    int rc, early;
    unsigned long a, b, c;
    char err[300];
} bp_res_t;
typedef struct bp { pid_t pid; int req, res; } bp_t;

/* A process with one barrier object, doing what it is asked; BP_WAIT_BG
 * waits in a thread of its own (BP_JOIN gives its result; BP_STOP_BG
 * stops it through the interposer's entry). */
static dist_barrier_t g_b;
static int g_bg_rc, g_bg_stop;
static char g_bg_err[300];

static void *bg_wait(void *p)
{
    (void)p;
    g_bg_rc = dl_barrier_wait_stoppable(&g_b, NULL, &g_bg_stop);
    snprintf(g_bg_err, sizeof g_bg_err, "%s", dist_lasterror());
    return NULL;
}

static int bp_main(void *p)
{
    bp_boot_t *b = p;
    close(b->c1);
    close(b->c2);
    th_setenv_list(tm_env());
    th_setenv_list(b->env);
    bp_res_t r;
    memset(&r, 0, sizeof r);
    r.rc = dist_barrier_init(&g_b, b->name, NULL, b->count);
    snprintf(r.err, sizeof r.err, "%s", dist_lasterror());
    if (th_write_all(b->res_wr, &r, sizeof r))
        return 0;
    pthread_t bg;
    int bg_on = 0;
    for (;;) {
        bp_req_t q;
        if (th_read_full(b->req_rd, &q, sizeof q, -1))
            return 0;
        memset(&r, 0, sizeof r);
        struct timespec ts = th_abstime_ms(q.arg);
        switch (q.op) {
        case BP_WAIT: r.rc = dist_barrier_wait(&g_b); break;
        case BP_TIMED: {
            r.rc = dist_barrier_timedwait(&g_b, &ts);
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            r.early = r.rc == ETIMEDOUT && (now.tv_sec < ts.tv_sec ||
                                            (now.tv_sec == ts.tv_sec && now.tv_nsec < ts.tv_nsec));
            break;
        }
        case BP_WAIT_BG:
            __atomic_store_n(&g_bg_stop, 0, __ATOMIC_SEQ_CST);
            r.rc = pthread_create(&bg, NULL, bg_wait, NULL);
            bg_on = r.rc == 0;
            break;
        case BP_STOP_BG:
            __atomic_store_n(&g_bg_stop, 1, __ATOMIC_SEQ_CST);
            dl_barrier_interrupt(&g_b);
            /* fall through */
        case BP_JOIN:
            if (bg_on)
                pthread_join(bg, NULL);
            bg_on = 0;
            r.rc = g_bg_rc;
            snprintf(r.err, sizeof r.err, "%s", g_bg_err);
            if (th_write_all(b->res_wr, &r, sizeof r))
                return 0;
            continue;
        case BP_DESTROY: r.rc = dist_barrier_destroy(&g_b); break;
        case BP_STATS: {
            dl_stats_t st;
            dl_stats_get(&st);
            r.a = st.barrier_pushes;
            r.b = st.barrier_checks;
            r.c = st.barrier_found;
            break;
        }
        case BP_EXIT: return 0;
        }
        snprintf(r.err, sizeof r.err, "%s", dist_lasterror());
        if (th_write_all(b->res_wr, &r, sizeof r))
            return 0;
    }
}

/* Starts a process with barrier name (count); its init's code (err:
 * dist_lasterror). */
static int bp_start_env(bp_t *p, const char *name, unsigned count, const char *const *env,
                        char *err, size_t errlen)
{
    th_pipe_t req, res;
    th_pipe_open(&req);
    th_pipe_open(&res);
    bp_boot_t b = { name, count, env, req.rd, res.wr, req.wr, res.rd };
    p->pid = th_fork_child(bp_main, &b);
    close(req.rd);
    close(res.wr);
    p->req = req.wr;
    p->res = res.rd;
    assert_true(p->pid > 0);
    bp_res_t r;
    if (th_read_full(p->res, &r, sizeof r, 30000))
        fail_msg("barrier process %d did not start", (int)p->pid);
    if (err)
        snprintf(err, errlen, "%s", r.err);
    return r.rc;
}

static void bp_start(bp_t *p, const char *name, unsigned count)
{
    char err[300];
    int rc = bp_start_env(p, name, count, NULL, err, sizeof err);
    if (rc)
        fail_msg("dist_barrier_init(%s, %u) = %s: %s", name, count, th_errname(rc), err);
}

static void bp_send(bp_t *p, int op, long arg)
{
    bp_req_t q = { op, arg };
    assert_int_equal(th_write_all(p->req, &q, sizeof q), 0);
}

static bp_res_t g_last;

/* 0 with g_last, or -1 after timeout_ms. */
static int bp_recv(bp_t *p, long timeout_ms)
{
    int rc = th_read_full(p->res, &g_last, sizeof g_last, timeout_ms);
    if (rc == 0)
        g_last.err[sizeof g_last.err - 1] = 0;
    return rc;
}

static int bp_call(bp_t *p, int op, long arg)
{
    bp_send(p, op, arg);
    if (bp_recv(p, 30000))
        fail_msg("barrier process %d: no answer to op %d in 30 s", (int)p->pid, op);
    return g_last.rc;
}

#define BP_RC(p, op, arg, want) do { int rc_ = bp_call(p, op, arg); if (rc_ != (want)) \
    fail_msg("%s:%d: op %d = %s, want %s: %s", __FILE__, __LINE__, op, th_errname(rc_), \
             th_errname(want), g_last.err); } while (0)

static void bp_stop(bp_t *p)
{
    bp_send(p, BP_EXIT, 0);
    int st = th_wait_child(p->pid);
    close(p->req);
    close(p->res);
    if (st)
        fail_msg("barrier process %d ended with %d", (int)p->pid, st);
}

static void bp_kill(bp_t *p)
{
    th_kill_child(p->pid);
    close(p->req);
    close(p->res);
}

/* Still waiting: no answer within ms. */
static void still_waiting(bp_t *p, long ms, const char *what)
{
    if (bp_recv(p, ms) == 0)
        fail_msg("%s: released (%s: %s) while it should wait", what, th_errname(g_last.rc),
                 g_last.err);
}

/* ------------------------------------------------------------- the cases */

/* A process killed after its arrival: the arrival still counts. */
static void test_arrival_survives_death(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "bdeath");
    bp_t a, b, c;
    bp_start(&a, name, 3);
    bp_start(&b, name, 3);
    bp_start(&c, name, 3);
    bp_send(&a, BP_WAIT, 0);
    wait_arrivals(name, 1);
    bp_kill(&a);
    bp_send(&b, BP_WAIT, 0);
    wait_arrivals(name, 2);
    still_waiting(&b, 300, "the second of three");
    bp_send(&c, BP_WAIT, 0);
    if (bp_recv(&c, 10000))
        fail_msg("the third arrival was not released");
    int rc_c = g_last.rc;
    if (bp_recv(&b, 10000))
        fail_msg("the second arrival was not released by the third");
    int rc_b = g_last.rc;
    if (!RELEASED(rc_b) || !RELEASED(rc_c))
        fail_msg("released with %s and %s", th_errname(rc_b), th_errname(rc_c));
    if ((rc_b == DIST_BARRIER_SERIAL_THREAD) + (rc_c == DIST_BARRIER_SERIAL_THREAD) != 1)
        fail_msg("%d serials among the two survivors (the dead one's arrival completed "
                 "nothing): want 1", (rc_b == DIST_BARRIER_SERIAL_THREAD) +
                 (rc_c == DIST_BARRIER_SERIAL_THREAD));
    assert_int_equal(field(name, "n"), 0);
    bp_stop(&b);
    bp_stop(&c);
}

/* A timed wait runs out, never early, and takes its arrival with it. */
static void test_timedwait_withdraws(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "btimed");
    bp_t a, b;
    bp_start(&a, name, 2);
    bp_start(&b, name, 2);
    BP_RC(&a, BP_TIMED, 300, ETIMEDOUT);
    if (g_last.early)
        fail_msg("ETIMEDOUT before abstime");
    if (!th_contains(g_last.err, "withdrawn"))
        fail_msg("the time-out says \"%s\"", g_last.err);
    assert_int_equal(field(name, "n"), 0);
    /* the withdrawn arrival does not complete the next one's generation */
    BP_RC(&b, BP_TIMED, 300, ETIMEDOUT);
    if (g_last.early)
        fail_msg("ETIMEDOUT before abstime");
    /* both in time: released, one serial */
    bp_send(&a, BP_TIMED, 20000);
    bp_send(&b, BP_WAIT, 0);
    if (bp_recv(&a, 25000))
        fail_msg("the timed waiter was not released");
    int ra = g_last.rc;
    if (bp_recv(&b, 25000))
        fail_msg("the waiter was not released");
    int rb = g_last.rc;
    if (!RELEASED(ra) || !RELEASED(rb) ||
        (ra == DIST_BARRIER_SERIAL_THREAD) + (rb == DIST_BARRIER_SERIAL_THREAD) != 1)
        fail_msg("released with %s and %s", th_errname(ra), th_errname(rb));
    bp_stop(&a);
    bp_stop(&b);
}

/* A wait stopped by another thread (the interposer's entry) withdraws. */
static void test_stopped_wait_withdraws(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "bstop");
    bp_t a, b;
    bp_start(&a, name, 2);
    bp_start(&b, name, 2);
    BP_RC(&a, BP_WAIT_BG, 0, 0);
    wait_arrivals(name, 1);
    BP_RC(&a, BP_STOP_BG, 0, EINTR);
    assert_int_equal(field(name, "n"), 0);
    BP_RC(&b, BP_TIMED, 200, ETIMEDOUT);
    bp_stop(&a);
    bp_stop(&b);
}

/* A barrier whose push never comes (its arrival's record removed, so the
 * trip pushes nobody): the process's check releases its waiters. */
static void test_lost_push(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "bpush");
    bp_t a, b;
    bp_start(&a, name, 2);
    bp_start(&b, name, 2);
    bp_send(&a, BP_WAIT, 0);
    wait_arrivals(name, 1);
    char k[700];
    size_t len = tm_key(k, sizeof k, DL_KIND_BARRIER, name, 1);
    redisReply *r = th_cmd_at(tm_key_port(k, len), "DEL %b", k, len);
    assert_non_null(r);
    freeReplyObject(r);
    BP_RC(&b, BP_WAIT, 0, DIST_BARRIER_SERIAL_THREAD);
    if (bp_recv(&a, 10000))
        fail_msg("a waiter whose push never came was not released");
    if (g_last.rc != 0)
        fail_msg("released with %s: %s", th_errname(g_last.rc), g_last.err);
    BP_RC(&a, BP_STATS, 0, 0);
    if (g_last.c < 1)
        fail_msg("released, but not by its check (found %lu, pushes %lu)", g_last.c, g_last.a);
    bp_stop(&a);
    bp_stop(&b);
}

static const char *const g_short_lease[] = { "DISTLOCK_LEASE_MS=1500", NULL };

/* Every process must use the same count: EINVAL naming both while the
 * barrier is in use; a new count once it has been idle for a lease, and
 * an object of the old count refused at its wait. */
static void test_counts(void **state)
{
    (void)state;
    char name[64], err[300];
    th_name(name, sizeof name, "bcount");
    bp_t a, b;
    bp_start(&a, name, 3);
    BP_RC(&a, BP_WAIT_BG, 0, 0);
    wait_arrivals(name, 1);
    int rc = bp_start_env(&b, name, 4, g_short_lease, err, sizeof err);
    if (rc != EINVAL || !th_contains(err, "count 3") || !th_contains(err, "count 4"))
        fail_msg("init with another count while in use: %s \"%s\"", th_errname(rc), err);
    bp_stop(&b);
    BP_RC(&a, BP_STOP_BG, 0, EINTR);
    /* idle for a lease: another count is taken */
    th_sleep_ms(1700);
    rc = bp_start_env(&b, name, 2, g_short_lease, err, sizeof err);
    if (rc)
        fail_msg("init with another count on an idle barrier: %s \"%s\"", th_errname(rc), err);
    assert_int_equal(field(name, "c"), 2);
    BP_RC(&a, BP_WAIT, 0, EINVAL);
    if (!th_contains(g_last.err, "count 2") || !th_contains(g_last.err, "count 3"))
        fail_msg("a wait with the old count says \"%s\"", g_last.err);
    bp_stop(&a);
    bp_stop(&b);
}

/* Destroy refuses while a thread of the process waits. */
static void test_destroy_busy(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "bdestroy");
    bp_t a, b;
    bp_start(&a, name, 2);
    bp_start(&b, name, 2);
    BP_RC(&a, BP_WAIT_BG, 0, 0);
    wait_arrivals(name, 1);
    BP_RC(&a, BP_DESTROY, 0, EBUSY);
    if (!th_contains(g_last.err, "waited on"))
        fail_msg("EBUSY says \"%s\"", g_last.err);
    BP_RC(&b, BP_WAIT, 0, DIST_BARRIER_SERIAL_THREAD);
    BP_RC(&a, BP_JOIN, 0, 0);
    BP_RC(&a, BP_DESTROY, 0, 0);
    BP_RC(&a, BP_WAIT, 0, EINVAL);
    bp_stop(&a);
    bp_stop(&b);
}

/* ------------------------------------------------------ replies lost */

typedef struct px_env {
    char url[200];
    const char *env[3];
} px_env_t;

/* The environment of a process that reaches Redis through px, giving up
 * on a silent server after io_ms. */
static const char *const *through(px_env_t *e, th_proxy_t *px, long io_ms)
{
    static char io[64];
    snprintf(e->url, sizeof e->url, "DISTLOCK_URL=%s", th_proxy_url(px));
    snprintf(io, sizeof io, "DISTLOCK_IO_TIMEOUT_MS=%ld", io_ms);
    e->env[0] = e->url;
    e->env[1] = io;
    e->env[2] = NULL;
    return e->env;
}

/* An arrival's reply is cut: the library sends it again, and Redis
 * counts it once. */
static void test_reply_lost_counted_once(void **state)
{
    (void)state;
    if (tm_mode != TM_SINGLE)
        skip();
    char name[64], err[300];
    th_name(name, sizeof name, "bcut");
    th_proxy_t *px = th_proxy_start(tm_server()->port);
    assert_non_null(px);
    px_env_t e;
    bp_t a, b;
    assert_int_equal(bp_start_env(&a, name, 2, through(&e, px, 3000), err, sizeof err), 0);
    bp_start(&b, name, 2);
    th_proxy_cut_replies(px, 1);
    bp_send(&a, BP_WAIT, 0);
    wait_arrivals(name, 1);
    th_sleep_ms(300);             /* (the resend, had it counted, would be in) */
    assert_int_equal(field(name, "n"), 1);
    BP_RC(&b, BP_WAIT, 0, DIST_BARRIER_SERIAL_THREAD);
    if (bp_recv(&a, 10000) || g_last.rc != 0)
        fail_msg("the waiter whose reply was cut: %s \"%s\"", th_errname(g_last.rc), g_last.err);
    assert_int_equal(field(name, "n"), 0);
    bp_stop(&a);
    bp_stop(&b);
    th_proxy_stop(px);
}

/* An arrival held back on a frozen connection past the I/O time-out:
 * EIO.  The process's next wait settles it before its late copy reaches
 * Redis (it never counted: the copy then counts nothing), and arrives
 * anew: one arrival, not two. */
static void test_kept_arrival_settled(void **state)
{
    (void)state;
    if (tm_mode != TM_SINGLE)
        skip();
    char name[64], err[300];
    th_name(name, sizeof name, "bkept");
    th_proxy_t *px = th_proxy_start(tm_server()->port);
    assert_non_null(px);
    px_env_t e;
    bp_t a, b;
    assert_int_equal(bp_start_env(&a, name, 2, through(&e, px, 1000), err, sizeof err), 0);
    bp_start(&b, name, 2);
    BP_RC(&b, BP_TIMED, 20, ETIMEDOUT);           /* the scripts in the server's cache */
    assert_true(th_proxy_freeze(px, a.pid, TH_PROXY_COMMANDS, 0) >= 1);
    BP_RC(&a, BP_WAIT, 0, EIO);
    if (!th_contains(g_last.err, "may have been counted"))
        fail_msg("the EIO says \"%s\"", g_last.err);
    assert_int_equal(field(name, "n"), 0);        /* held back: not in Redis */
    bp_send(&a, BP_WAIT, 0);                      /* settles it, arrives anew */
    wait_arrivals(name, 1);
    th_proxy_thaw(px);                            /* the late copy runs now */
    assert_int_equal(th_proxy_settled(px, 5000), 1);
    th_sleep_ms(100);
    if (field(name, "n") != 1)
        fail_msg("the late copy of a settled arrival counted: %lld arrivals", field(name, "n"));
    BP_RC(&b, BP_WAIT, 0, DIST_BARRIER_SERIAL_THREAD);
    if (bp_recv(&a, 10000) || g_last.rc != 0)
        fail_msg("the waiter: %s \"%s\"", th_errname(g_last.rc), g_last.err);
    assert_int_equal(field(name, "n"), 0);
    bp_stop(&a);
    bp_stop(&b);
    th_proxy_stop(px);
}

/* The same, but the late copy reaches Redis first and completes a
 * generation with another process's arrival: the thread's next wait,
 * told so when it settles it, returns at once (the wait that failed
 * ended), and arrives nowhere. */
static void test_kept_arrival_released(void **state)
{
    (void)state;
    if (tm_mode != TM_SINGLE)
        skip();
    char name[64], err[300];
    th_name(name, sizeof name, "bkrel");
    th_proxy_t *px = th_proxy_start(tm_server()->port);
    assert_non_null(px);
    px_env_t e;
    bp_t a, b;
    assert_int_equal(bp_start_env(&a, name, 2, through(&e, px, 1000), err, sizeof err), 0);
    bp_start(&b, name, 2);
    BP_RC(&b, BP_TIMED, 20, ETIMEDOUT);           /* the scripts in the server's cache */
    assert_true(th_proxy_freeze(px, a.pid, TH_PROXY_COMMANDS, 0) >= 1);
    BP_RC(&a, BP_WAIT, 0, EIO);
    th_proxy_thaw(px);
    wait_arrivals(name, 1);                       /* the late copy counted */
    BP_RC(&b, BP_WAIT, 0, DIST_BARRIER_SERIAL_THREAD);
    BP_RC(&a, BP_WAIT, 0, 0);                     /* at once: its wait had ended */
    assert_int_equal(field(name, "n"), 0);
    bp_stop(&a);
    bp_stop(&b);
    th_proxy_stop(px);
}

/* The member of the barrier's arrivals (its only one) into buf; "" none. */
static void only_member(const char *name, char *buf, size_t size)
{
    char k[700];
    size_t len = tm_key(k, sizeof k, DL_KIND_BARRIER, name, 1);
    redisReply *r = th_cmd_at(tm_key_port(k, len), "HKEYS %b", k, len);
    buf[0] = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
        snprintf(buf, size, "%s", r->element[0]->str);
    if (r)
        freeReplyObject(r);
}

/* A timed wait runs out and its leave is held back on a frozen
 * connection past the I/O time-out (EIO: its arrival may still count).
 * The thread waits again: the arrival is settled (withdrawn) and a new one
 * made; the held-back leave then reaches Redis late and must not take the
 * new arrival, nor anything: the generation completes with the next
 * process's arrival. */
static void test_kept_leave_settled(void **state)
{
    (void)state;
    if (tm_mode != TM_SINGLE)
        skip();
    char name[64], err[300], first[200], now[200];
    th_name(name, sizeof name, "bkleave");
    th_proxy_t *px = th_proxy_start(tm_server()->port);
    assert_non_null(px);
    px_env_t e;
    bp_t a, b;
    assert_int_equal(bp_start_env(&a, name, 2, through(&e, px, 1000), err, sizeof err), 0);
    bp_start(&b, name, 2);
    /* The leave script in the server's cache: the late copy runs (a copy
     * sent by its SHA1 to a server without it would do nothing). */
    BP_RC(&b, BP_TIMED, 20, ETIMEDOUT);
    bp_send(&a, BP_TIMED, 400);
    wait_arrivals(name, 1);
    only_member(name, first, sizeof first);
    assert_true(th_proxy_freeze(px, a.pid, TH_PROXY_COMMANDS, 0) >= 1);
    if (bp_recv(&a, 10000) || g_last.rc != EIO || !th_contains(g_last.err, "may still count"))
        fail_msg("the timed wait whose leave was held back: %s \"%s\"", th_errname(g_last.rc),
                 g_last.err);
    bp_send(&a, BP_WAIT, 0);                      /* settles, arrives anew */
    /* Its arrival is made once its member is another (or, whatever the
     * library makes of it, after a second: a round trip's worth many
     * times over). */
    int64_t end = th_now_ms() + 1000;
    do {
        only_member(name, now, sizeof now);
        if (now[0] && strcmp(now, first) != 0)
            break;
        th_sleep_ms(2);
    } while (th_now_ms() < end);
    th_proxy_thaw(px);                            /* the late leave runs now */
    assert_int_equal(th_proxy_settled(px, 5000), 1);
    th_sleep_ms(100);
    if (field(name, "n") != 1)
        fail_msg("after the late leave: %lld arrivals, want the new one", field(name, "n"));
    BP_RC(&b, BP_WAIT, 0, DIST_BARRIER_SERIAL_THREAD);
    if (bp_recv(&a, 10000) || g_last.rc != 0)
        fail_msg("the waiter: %s \"%s\"", th_errname(g_last.rc), g_last.err);
    bp_stop(&a);
    bp_stop(&b);
    th_proxy_stop(px);
}

/* Redis's time in us, plus add_us, as barrier_common.lua writes an id. */
static const char g_id_ahead[] =
    "local t = redis.call('TIME') "
    "local id = string.format('%.0f', t[1] * 1000000 + t[2] + tonumber(ARGV[1])) "
    "redis.call('HSET', KEYS[1], 'id', id, 'g', id) return id";

/* Redis loses the barrier and makes it anew while its clock is behind the
 * time the lost one was made (a clock set back: here the lost one's id is
 * set ten days ahead): the new incarnation's id is smaller than the
 * waiter's.  Its waiter, whose process was stopped meanwhile (so that
 * none of its checks finds the barrier gone), is told by its next check
 * all the same (ENOLCK), and is not left waiting for good. */
static void test_lost_older_id(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "bolder");
    bp_t a, b;
    bp_start(&a, name, 2);
    bp_start(&b, name, 2);
    char k[700], ka[700];
    size_t len = tm_key(k, sizeof k, DL_KIND_BARRIER, name, 0);
    size_t lena = tm_key(ka, sizeof ka, DL_KIND_BARRIER, name, 1);
    redisReply *r = th_cmd_at(tm_key_port(k, len), "EVAL %s 1 %b %s", g_id_ahead, k, len,
                              "864000000000");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    freeReplyObject(r);
    long long ahead = field(name, "id");
    bp_send(&a, BP_WAIT, 0);
    wait_arrivals(name, 1);
    kill(a.pid, SIGSTOP);
    int st;
    assert_int_equal(waitpid(a.pid, &st, WUNTRACED), a.pid);
    assert_true(WIFSTOPPED(st));
    r = th_cmd_at(tm_key_port(k, len), "DEL %b %b", k, len, ka, lena);
    assert_non_null(r);
    freeReplyObject(r);
    bp_send(&b, BP_WAIT, 0);      /* makes the barrier anew: a smaller id */
    wait_arrivals(name, 1);
    long long now = field(name, "id");
    kill(a.pid, SIGCONT);
    if (now <= 0 || now >= ahead)
        fail_msg("the new incarnation %lld is not below the lost one's %lld", now, ahead);
    if (bp_recv(&a, 10000))
        fail_msg("the waiter of a barrier Redis lost and made anew with a smaller id was not "
                 "told in 10 s");
    if (g_last.rc != ENOLCK || !th_contains(g_last.err, "lost"))
        fail_msg("the waiter of a lost barrier: %s \"%s\"", th_errname(g_last.rc), g_last.err);
    /* the new incarnation works: its waiter is released by the next */
    BP_RC(&a, BP_WAIT, 0, DIST_BARRIER_SERIAL_THREAD);
    if (bp_recv(&b, 10000) || g_last.rc != 0)
        fail_msg("the new incarnation's waiter was not released: %s \"%s\"",
                 th_errname(g_last.rc), g_last.err);
    bp_stop(&a);
    bp_stop(&b);
}

/* Redis loses the barrier under a waiter: ENOLCK, not a release. */
static void test_state_lost(void **state)
{
    (void)state;
    if (tm_mode != TM_SINGLE)
        skip();
    char name[64];
    th_name(name, sizeof name, "blost");
    bp_t a, b;
    bp_start(&a, name, 2);
    bp_send(&a, BP_WAIT, 0);
    wait_arrivals(name, 1);
    redisReply *r = th_cmd_at(tm_server()->port, "FLUSHALL");
    assert_non_null(r);
    freeReplyObject(r);
    if (bp_recv(&a, 10000))
        fail_msg("the waiter of a barrier Redis lost was not told");
    if (g_last.rc != ENOLCK || !th_contains(g_last.err, "lost"))
        fail_msg("the waiter of a lost barrier: %s \"%s\"", th_errname(g_last.rc), g_last.err);
    /* the barrier works again, made anew */
    bp_start(&b, name, 2);
    bp_send(&a, BP_WAIT, 0);
    wait_arrivals(name, 1);
    BP_RC(&b, BP_WAIT, 0, DIST_BARRIER_SERIAL_THREAD);
    if (bp_recv(&a, 10000) || g_last.rc != 0)
        fail_msg("after the loss, the barrier does not release");
    bp_stop(&a);
    bp_stop(&b);
}

/* An object in shared memory, initialized before fork, used by three
 * processes: as a pthread barrier in shared memory (its name short enough
 * to live in the object). */
static dist_barrier_t *g_shared;

static int fork_member(void *p)
{
    (void)p;
    int rc = dist_barrier_wait(g_shared);
    TH_CHECK(RELEASED(rc));
    return rc == DIST_BARRIER_SERIAL_THREAD ? 7 : 0;
}

static int fork_parent(void *p)
{
    const char *name = p;
    th_setenv_list(tm_env());
    TH_CHECK_RC(dist_barrier_init(g_shared, name, NULL, 3), 0);
    pid_t c1 = th_fork_child(fork_member, NULL);
    pid_t c2 = th_fork_child(fork_member, NULL);
    int rc = dist_barrier_wait(g_shared);
    TH_CHECK(RELEASED(rc));
    int s1 = th_wait_child(c1), s2 = th_wait_child(c2);
    TH_CHECK((s1 == 0 || s1 == 7) && (s2 == 0 || s2 == 7));
    TH_CHECK((s1 == 7) + (s2 == 7) + (rc == DIST_BARRIER_SERIAL_THREAD) == 1);
    TH_CHECK_RC(dist_barrier_destroy(g_shared), 0);
    return 0;
}

static void test_fork_shared_object(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "bfork");
    g_shared = shared(sizeof *g_shared);
    TH_ASSERT_CHILD_OK(th_fork_child(fork_parent, name));
    munmap(g_shared, sizeof *g_shared);
}

/* A barrier, a mutex and a semaphore of one name are three objects. */
static int names_child(void *p)
{
    const char *name = p;
    th_setenv_list(tm_env());
    dist_barrier_t b;
    dist_mutex_t m;
    TH_CHECK_RC(dist_barrier_init(&b, name, NULL, 1), 0);
    TH_CHECK_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_barrier_wait(&b), DIST_BARRIER_SERIAL_THREAD);
    TH_CHECK_RC(dist_barrier_wait(&b), DIST_BARRIER_SERIAL_THREAD);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_barrier_destroy(&b), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static void test_names_apart(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "bname");
    TH_ASSERT_CHILD_OK(th_fork_child(names_child, name));
}

/* ---------------------------------------------------------------- redlock */

static int redlock_child(void *p)
{
    (void)p;
    th_setenv_list(tm_env());
    dist_barrier_t b;
    memset(&b, 0, sizeof b);
    TH_CHECK_RC(dist_barrier_init(&b, "barrier.redlock", NULL, 2), EINVAL);
    TH_CHECK(th_contains(dist_lasterror(), "redlock"));
    TH_CHECK_RC(dist_barrier_wait(&b), EINVAL);
    TH_CHECK_RC(dl_barrier_check_mode(), EINVAL);
    return 0;
}

static void test_redlock_refused(void **state)
{
    (void)state;
    TH_ASSERT_CHILD_OK(th_fork_child(redlock_child, NULL));
}

int main(void)
{
    tm_pick("TH_BARRIER_MODE");
    static const struct CMUnitTest all[] = {
        TT_TEST(test_generations),
        TT_TEST(test_count_below_participants),
        TT_TEST(test_arrival_survives_death),
        TT_TEST(test_timedwait_withdraws),
        TT_TEST(test_stopped_wait_withdraws),
        TT_TEST(test_lost_push),
        TT_TEST(test_counts),
        TT_TEST(test_destroy_busy),
        TT_TEST(test_fork_shared_object),
        TT_TEST(test_names_apart),
        TT_TEST(test_reply_lost_counted_once),
        TT_TEST(test_kept_arrival_settled),
        TT_TEST(test_kept_arrival_released),
        TT_TEST(test_kept_leave_settled),
        TT_TEST(test_lost_older_id),
        TT_TEST(test_state_lost),      /* single only: last (it flushes) */
    };
    static const struct CMUnitTest redlock[] = {
        TT_TEST(test_redlock_refused),
    };
    if (tm_mode == TM_REDLOCK)
        return th_run_tests(redlock, tm_group_setup, tt_group_teardown);
    return th_run_group("barrier", all, sizeof all / sizeof all[0], tm_group_setup,
                        tt_group_teardown);
}
