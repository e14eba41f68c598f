/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cond.c - dist_cond_t: waiters in several processes woken by a
 * signal from any process, by push; no lost wake-up between a waiter's
 * release of its mutex and its wait, whichever process signals (the race
 * on purpose, both orders); broadcast wakes every waiter; a waiter that
 * dies stops counting within the claim window; the mutex's count restored;
 * EOWNERDEAD, ETIMEDOUT (never before abstime), EPERM; a signal taken as a
 * timed wait ran out is not lost; a registration Redis lost wakes its
 * waiter; MAP_SHARED objects across fork.  The suite runs on one server
 * (and, as test_cond_redlock3, on redlock://); test_cond_modes runs the
 * core cases on sentinel, cluster and TLS.
 *
 * The waiters run in worker processes (cw_*: a command pipe, threads
 * called slots, each making one call at a time), with the predicate in
 * MAP_SHARED memory guarded by the distributed mutex, so that every wait
 * is a real pthreads-style loop: lock; while (!pred) wait; unlock.  Tests
 * synchronise on the workers' counters (waits registered), not on sleeps.
 */
#include "harness.h"
#include "harness_topo.h"
#include "keys.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

/* ------------------------------------------------------------ the workers */

enum {
    CW_WAITGEN = 1,  /* arg k, arg2 ms: lock; while (gen < k) timedwait; unlock */
    CW_TAKE,         /* arg2 ms: lock; while (!tokens) timedwait; tokens--; unlock */
    CW_SETGEN,       /* arg k: lock; gen = k; unlock; signal (arg2 1: broadcast) */
    CW_GIVE,         /* arg n: lock; tokens += n; unlock; n signals (arg2 1: one broadcast) */
    CW_SIGNAL,       /* signal only (arg2 1: broadcast) */
    CW_STATS,        /* v[]: the process's counters (answered by the main thread) */
    CW_EXIT,
};

#define CW_SLOTS 4

typedef struct cw_cmd {
    int op, slot;
    long arg, arg2, delay_us;
} cw_cmd_t;

typedef struct cw_res {
    int rc, slot, op;
    int64_t t_start_us, t_done_us;
    uint64_t v[8];
    char err[240];
} cw_res_t;

/* What the workers share with the test (MAP_SHARED, made before forking). */
typedef struct cw_shm {
    int gen;
    int tokens;
} cw_shm_t;

typedef struct cw {
    pid_t pid;
    int cmd_wr, res_rd;
} cw_t;

typedef struct cw_boot {
    const char *const *env;
    const char *name;          /* the condition's and the mutex's name */
    cw_shm_t *shm;
    int cmd_rd, res_wr, close1, close2;
} cw_boot_t;

typedef struct cw_slot {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int has;
    cw_cmd_t cmd;
} cw_slot_t;

static dist_cond_t g_cv;
static dist_mutex_t g_m;
static cw_shm_t *g_shm;
static int g_res_wr;
static pthread_mutex_t g_wr_mu = PTHREAD_MUTEX_INITIALIZER;
static cw_slot_t g_slots[CW_SLOTS];

static void cw_reply(cw_res_t *r)
{
    snprintf(r->err, sizeof r->err, "%s", dist_lasterror());
    pthread_mutex_lock(&g_wr_mu);
    th_write_all(g_res_wr, r, sizeof *r);
    pthread_mutex_unlock(&g_wr_mu);
}

static int gen_get(void) { return __atomic_load_n(&g_shm->gen, __ATOMIC_ACQUIRE); }
static int tokens_get(void) { return __atomic_load_n(&g_shm->tokens, __ATOMIC_ACQUIRE); }

static int wake(int all)
{
    return all ? dist_cond_broadcast(&g_cv) : dist_cond_signal(&g_cv);
}

static void cw_run(const cw_cmd_t *q, cw_res_t *r)
{
    struct timespec ts = th_abstime_ms(q->arg2);
    int rc = 0;
    switch (q->op) {
    case CW_WAITGEN:
        if ((rc = dist_mutex_lock(&g_m)))
            break;
        while (rc == 0 && gen_get() < q->arg)
            rc = dist_cond_timedwait(&g_cv, &g_m, &ts);
        if (rc == 0 || rc == ETIMEDOUT || rc == EOWNERDEAD)
            dist_mutex_unlock(&g_m);
        break;
    case CW_TAKE:
        if ((rc = dist_mutex_lock(&g_m)))
            break;
        while (rc == 0 && tokens_get() == 0)
            rc = dist_cond_timedwait(&g_cv, &g_m, &ts);
        if (rc == 0)
            __atomic_sub_fetch(&g_shm->tokens, 1, __ATOMIC_ACQ_REL);
        if (rc == 0 || rc == ETIMEDOUT || rc == EOWNERDEAD)
            dist_mutex_unlock(&g_m);
        break;
    case CW_SETGEN:
        if ((rc = dist_mutex_lock(&g_m)))
            break;
        __atomic_store_n(&g_shm->gen, (int)q->arg, __ATOMIC_RELEASE);
        dist_mutex_unlock(&g_m);
        rc = wake(q->arg2 == 1);
        break;
    case CW_GIVE:
        if ((rc = dist_mutex_lock(&g_m)))
            break;
        __atomic_add_fetch(&g_shm->tokens, (int)q->arg, __ATOMIC_ACQ_REL);
        dist_mutex_unlock(&g_m);
        for (long i = 0; rc == 0 && i < (q->arg2 == 1 ? 1 : q->arg); i++)
            rc = wake(q->arg2 == 1);
        break;
    case CW_SIGNAL:
        rc = wake(q->arg2 == 1);
        break;
    default:
        rc = -1;
    }
    r->rc = rc;
}

static void *slot_main(void *arg)
{
    cw_slot_t *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->has)
            pthread_cond_wait(&s->cv, &s->mu);
        cw_cmd_t q = s->cmd;
        s->has = 0;
        pthread_mutex_unlock(&s->mu);
        if (q.delay_us > 0)
            th_sleep_us(q.delay_us);
        cw_res_t r;
        memset(&r, 0, sizeof r);
        r.slot = q.slot;
        r.op = q.op;
        r.t_start_us = th_now_us();
        cw_run(&q, &r);
        r.t_done_us = th_now_us();
        cw_reply(&r);
    }
    return NULL;
}

static int cw_main(void *arg)
{
    cw_boot_t *b = arg;
    close(b->close1);
    close(b->close2);
    th_setenv_list(b->env);
    g_shm = b->shm;
    g_res_wr = b->res_wr;
    if (dist_cond_init(&g_cv, b->name, NULL) || dist_mutex_init(&g_m, b->name, NULL))
        return 2;
    for (int i = 0; i < CW_SLOTS; i++) {
        pthread_mutex_init(&g_slots[i].mu, NULL);
        pthread_cond_init(&g_slots[i].cv, NULL);
        if (pthread_create(&g_slots[i].th, NULL, slot_main, &g_slots[i]))
            return 3;
    }
    cw_cmd_t q;
    while (th_read_full(b->cmd_rd, &q, sizeof q, -1) == 0) {
        if (q.op == CW_EXIT)
            _exit(0);             /* (slot threads may be blocked in a wait) */
        if (q.op == CW_STATS) {
            cw_res_t r;
            memset(&r, 0, sizeof r);
            dl_stats_t s;
            dl_stats_get(&s);
            r.op = CW_STATS;
            r.slot = q.slot;
            r.v[0] = s.cond_waits;
            r.v[1] = s.cond_pushes;
            r.v[2] = s.cond_local_wakes;
            r.v[3] = s.cond_forwards;
            r.v[4] = s.cond_found;
            r.v[5] = s.roundtrips;
            cw_reply(&r);
            continue;
        }
        cw_slot_t *s = &g_slots[q.slot % CW_SLOTS];
        pthread_mutex_lock(&s->mu);
        s->cmd = q;
        s->has = 1;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
    _exit(0);
}

static cw_shm_t *shm_new(void)
{
    cw_shm_t *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(s != MAP_FAILED);
    memset(s, 0, sizeof *s);
    return s;
}

static void cw_start(cw_t *w, const char *const *env, const char *name, cw_shm_t *shm)
{
    int c[2], r[2];
    assert_int_equal(pipe(c), 0);
    assert_int_equal(pipe(r), 0);
    cw_boot_t b = { env, name, shm, c[0], r[1], c[1], r[0] };
    w->pid = th_fork_child(cw_main, &b);
    assert_true(w->pid > 0);
    close(c[0]);
    close(r[1]);
    w->cmd_wr = c[1];
    w->res_rd = r[0];
}

static void cw_send(cw_t *w, int op, int slot, long arg, long arg2, long delay_us)
{
    cw_cmd_t q = { op, slot, arg, arg2, delay_us };
    assert_int_equal(th_write_all(w->cmd_wr, &q, sizeof q), 0);
}

/* The next answer of w (any slot): 0, or -1 after timeout_ms. */
static int cw_recv(cw_t *w, cw_res_t *r, long timeout_ms)
{
    return th_read_full(w->res_rd, r, sizeof *r, timeout_ms);
}

static void cw_stats(cw_t *w, cw_res_t *r)
{
    cw_send(w, CW_STATS, 0, 0, 0, 0);
    /* (other slots' answers are not pending when a test asks) */
    assert_int_equal(cw_recv(w, r, 10000), 0);
    assert_int_equal(r->op, CW_STATS);
}

/* Waits until w has registered `n` waits in all (its counter), so that
 * what the test does next happens while they wait. */
static void cw_wait_registered(cw_t *w, unsigned long n)
{
    int64_t until = th_now_ms() + 10000;
    cw_res_t r;
    for (;;) {
        cw_stats(w, &r);
        if (r.v[0] >= n)
            return;
        if (th_now_ms() > until)
            fail_msg("worker %d registered %llu waits in 10 s, want %lu", (int)w->pid,
                     (unsigned long long)r.v[0], n);
        th_sleep_ms(2);
    }
}

static void cw_stop(cw_t *w)
{
    cw_send(w, CW_EXIT, 0, 0, 0, 0);
    assert_int_equal(th_wait_child_ms(w->pid, 10000), 0);
    close(w->cmd_wr);
    close(w->res_rd);
}

static void cw_kill(cw_t *w)
{
    th_kill_child(w->pid);
    close(w->cmd_wr);
    close(w->res_rd);
}

/* An answer of op, rc want, within timeout_ms. */
static void cw_expect(cw_t *w, int op, int want, long timeout_ms, cw_res_t *out)
{
    cw_res_t r;
    if (cw_recv(w, &r, timeout_ms))
        fail_msg("worker %d: no answer to op %d within %ld ms (a lost wake-up?)", (int)w->pid,
                 op, timeout_ms);
    if (r.op != op || r.rc != want)
        fail_msg("worker %d: op %d = %d (%s), want op %d = %d (%s); dist_lasterror: \"%s\"",
                 (int)w->pid, r.op, r.rc, th_errname(r.rc), op, want, th_errname(want), r.err);
    if (out)
        *out = r;
}

/* ------------------------------------------------------------- scenarios */

/* Each scenario runs in the workers only (env: their environment, NULL
 * the suite's), so it serves every mode. */

/* A waiter in one process, woken by a signal from another, by push. */
static void sc_cross_process(const char *const *env, const char *name)
{
    cw_shm_t *shm = shm_new();
    cw_t w, s;
    cw_start(&w, env, name, shm);
    cw_start(&s, env, name, shm);
    cw_send(&w, CW_WAITGEN, 0, 1, 20000, 0);
    cw_wait_registered(&w, 1);
    int64_t t0 = th_now_us();
    cw_send(&s, CW_SETGEN, 0, 1, 0, 0);
    cw_expect(&s, CW_SETGEN, 0, 10000, NULL);
    cw_res_t r;
    cw_expect(&w, CW_WAITGEN, 0, 15000, &r);
    print_message("woken %lld us after the signal was asked for\n",
                  (long long)(r.t_done_us - t0));
    cw_stats(&w, &r);
    assert_int_equal(r.v[1], 1);                /* by the push ... */
    assert_int_equal(r.v[4], 0);                /* ... not by asking Redis again */
    cw_stop(&w);
    cw_stop(&s);
    munmap(shm, sizeof *shm);
}

/* The race on purpose: rounds in which the signaller (another process,
 * or a thread of the waiter's own process when `local`) sets the
 * predicate and signals within 0-2 ms of the waiter starting to wait,
 * both ways round: the waiter first (it must be woken: the signal comes
 * after its release) or the signaller first (it finds the predicate set,
 * or its wait is woken).  A lost wake-up leaves a round waiting for its
 * 10 s time-out; none may. */
static void sc_race(const char *const *env, const char *name, int rounds, int local)
{
    cw_shm_t *shm = shm_new();
    cw_t w, s;
    cw_start(&w, env, name, shm);
    if (!local)
        cw_start(&s, env, name, shm);
    cw_t *sig = local ? &w : &s;
    int waited_first = 0;
    for (int k = 1; k <= rounds; k++) {
        long off = rand() % 3 == 0 ? rand() % 2000 : rand() % 300;
        int signal_first = k % 2;
        cw_send(&w, CW_WAITGEN, 0, k, 10000, signal_first ? off : 0);
        cw_send(sig, CW_SETGEN, 1, k, 0, signal_first ? 0 : off);
        cw_res_t a = { 0 }, b = { 0 };
        for (int got = 0; got < 2; got++) {
            cw_res_t r;
            cw_t *from = local ? &w : (got == 0 ? sig : &w);
            if (cw_recv(from, &r, 15000))
                fail_msg("round %d: no answer in 15 s", k);
            if (r.op == CW_WAITGEN)
                a = r;
            else
                b = r;
        }
        if (a.rc != 0)
            fail_msg("round %d (%s first, %ld us apart): the wait = %d (%s): a lost wake-up; "
                     "\"%s\"", k, signal_first ? "signal" : "wait", off, a.rc,
                     th_errname(a.rc), a.err);
        assert_int_equal(b.rc, 0);
        if (a.t_done_us - a.t_start_us > 1000 && b.t_start_us > a.t_start_us)
            waited_first++;
    }
    cw_res_t r;
    cw_stats(&w, &r);
    print_message("%d rounds (%s signaller): %d waits woken after waiting; %llu by push, "
                  "%llu locally, %llu passed on, %llu by asking again\n", rounds,
                  local ? "same-process" : "other-process", waited_first,
                  (unsigned long long)r.v[1], (unsigned long long)r.v[2],
                  (unsigned long long)r.v[3], (unsigned long long)r.v[4]);
    if (local && rounds >= 20)
        assert_true(r.v[2] > 0);                /* the local path was taken */
    if (r.v[4])
        fail_msg("%llu waits found out by asking Redis that they had been woken: "
                 "their push was lost", (unsigned long long)r.v[4]);
    cw_stop(&w);
    if (!local)
        cw_stop(&s);
    munmap(shm, sizeof *shm);
}

/* Broadcast wakes every waiter that waits, in every process; a signal
 * with nobody waiting is not remembered. */
static void sc_broadcast(const char *const *env, const char *name)
{
    enum { NW = 3, PER = 2 };
    cw_shm_t *shm = shm_new();
    cw_t w[NW], s;
    for (int i = 0; i < NW; i++)
        cw_start(&w[i], env, name, shm);
    cw_start(&s, env, name, shm);
    for (int i = 0; i < NW; i++) {
        for (int j = 0; j < PER; j++)
            cw_send(&w[i], CW_WAITGEN, j, 1, 20000, 0);
        cw_wait_registered(&w[i], PER);
    }
    cw_send(&s, CW_SETGEN, 0, 1, 1, 0);         /* broadcast */
    cw_expect(&s, CW_SETGEN, 0, 10000, NULL);
    for (int i = 0; i < NW; i++)
        for (int j = 0; j < PER; j++)
            cw_expect(&w[i], CW_WAITGEN, 0, 5000, NULL);
    /* Nobody waits now: this signal is not kept for the next waiter. */
    cw_send(&s, CW_SIGNAL, 0, 0, 0, 0);
    cw_expect(&s, CW_SIGNAL, 0, 10000, NULL);
    cw_send(&w[0], CW_WAITGEN, 0, 2, 300, 0);
    cw_expect(&w[0], CW_WAITGEN, ETIMEDOUT, 10000, NULL);
    for (int i = 0; i < NW; i++)
        cw_stop(&w[i]);
    cw_stop(&s);
    munmap(shm, sizeof *shm);
}

/* A waiter that dies stops counting within the claim window (1 s with a
 * 1 s lease): a signal after it is not spent on the dead one. */
static void sc_killed_waiter(const char *const *env, const char *name)
{
    cw_shm_t *shm = shm_new();
    cw_t dead, w, s;
    cw_start(&dead, env, name, shm);
    cw_start(&w, env, name, shm);
    cw_start(&s, env, name, shm);
    cw_send(&dead, CW_TAKE, 0, 0, 30000, 0);
    cw_wait_registered(&dead, 1);
    /* The dead one registered first: the oldest, which a signal would take
     * first were it still counted. */
    cw_send(&w, CW_TAKE, 0, 0, 20000, 0);
    cw_wait_registered(&w, 1);
    cw_kill(&dead);
    th_sleep_ms(1300);                          /* the claim window, and some */
    cw_send(&s, CW_GIVE, 0, 1, 0, 0);           /* one token, one signal */
    cw_expect(&s, CW_GIVE, 0, 10000, NULL);
    cw_res_t r;
    cw_expect(&w, CW_TAKE, 0, 5000, &r);
    cw_stats(&w, &r);
    assert_int_equal(r.v[1], 1);                /* woken by the signal's push */
    cw_stop(&w);
    cw_stop(&s);
    munmap(shm, sizeof *shm);
}

/* Signals of one process to its own waiters and to another process's:
 * two waiters (one here, one there), two tokens, two signals at once from
 * this process.  The first wakes the local waiter without a round trip;
 * the second may take that waiter's registration in Redis before the
 * waiter removes it, and must then be passed on: both waiters get a
 * token, every round. */
static void sc_local_and_remote(const char *const *env, const char *name, int rounds)
{
    cw_shm_t *shm = shm_new();
    cw_t p, q;
    cw_start(&p, env, name, shm);
    cw_start(&q, env, name, shm);
    for (int k = 0; k < rounds; k++) {
        /* This process's waiter first: the oldest, which a signal
         * through Redis takes first. */
        cw_send(&p, CW_TAKE, 0, 0, 10000, 0);
        cw_wait_registered(&p, (unsigned long)k + 1);
        cw_send(&q, CW_TAKE, 0, 0, 10000, 0);
        cw_wait_registered(&q, (unsigned long)k + 1);
        cw_send(&p, CW_GIVE, 1, 2, 0, 0);
        for (int got = 0; got < 2; got++) {
            cw_res_t r;
            if (cw_recv(&p, &r, 15000))
                fail_msg("round %d: no answer", k);
            if (r.rc != 0)
                fail_msg("round %d: op %d = %d (%s): \"%s\"", k, r.op, r.rc, th_errname(r.rc),
                         r.err);
        }
        cw_res_t r;
        if (cw_recv(&q, &r, 15000))
            fail_msg("round %d: the other process's waiter was never woken", k);
        if (r.rc != 0)
            fail_msg("round %d: the other process's waiter: %d (%s), \"%s\": a signal lost",
                     k, r.rc, th_errname(r.rc), r.err);
    }
    cw_res_t r;
    cw_stats(&p, &r);
    print_message("%d rounds: %llu local wake-ups, %llu signals passed on\n", rounds,
                  (unsigned long long)r.v[2], (unsigned long long)r.v[3]);
    assert_true(r.v[2] > 0);
    cw_stop(&p);
    cw_stop(&q);
    munmap(shm, sizeof *shm);
}

/* ---------------------------------------------------------------- tests */

static void test_signal_other_process(void **state)
{
    char name[128];
    th_name(name, sizeof name, "cross");
    sc_cross_process(NULL, name);
}

static void test_race_other_process(void **state)
{
    char name[128];
    th_name(name, sizeof name, "race");
    sc_race(NULL, name, 200, 0);
}

static void test_race_same_process(void **state)
{
    char name[128];
    th_name(name, sizeof name, "racelocal");
    sc_race(NULL, name, 200, 1);
}

static void test_broadcast_every_waiter(void **state)
{
    char name[128];
    th_name(name, sizeof name, "bcast");
    sc_broadcast(NULL, name);
}

static void test_killed_waiter_stops_counting(void **state)
{
    static const char *const env[] = { "DISTLOCK_LEASE_MS=1000", NULL };
    char name[128];
    th_name(name, sizeof name, "killed");
    sc_killed_waiter(env, name);
}

static void test_local_signal_passed_on(void **state)
{
    char name[128];
    th_name(name, sizeof name, "pass");
    sc_local_and_remote(NULL, name, 30);
}

/* Two answers of w, ops a and b in either order, each rc 0. */
static void cw_expect_two(cw_t *w, int a, int b, long timeout_ms)
{
    int seen_a = 0, seen_b = 0;
    for (int i = 0; i < 2; i++) {
        cw_res_t r;
        if (cw_recv(w, &r, timeout_ms))
            fail_msg("worker %d: no answer within %ld ms", (int)w->pid, timeout_ms);
        if (r.rc != 0)
            fail_msg("worker %d: op %d = %d (%s): \"%s\"", (int)w->pid, r.op, r.rc,
                     th_errname(r.rc), r.err);
        seen_a |= r.op == a;
        seen_b |= r.op == b;
    }
    assert_true(seen_a && seen_b);
}

/* Pushes published to any process's channel (PSUBSCRIBE <prefix>n:*),
 * read for ms: how many wake-ups ("k ...") Redis sent. */
static redisContext *watch_pushes(void)
{
    const char *prefix = getenv("DISTLOCK_PREFIX") ? getenv("DISTLOCK_PREFIX") : "distlock:";
    redisContext *c = redisConnect(th_redis_host(), th_redis_port());
    assert_true(c && !c->err);
    redisReply *r = redisCommand(c, "PSUBSCRIBE %sn:*", prefix);
    assert_non_null(r);
    freeReplyObject(r);
    return c;
}

static int pushes_seen(redisContext *c, long ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    redisSetTimeout(c, tv);
    int n = 0;
    redisReply *r;
    while (redisGetReply(c, (void **)&r) == REDIS_OK && r) {
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
            r->element[3]->type == REDIS_REPLY_STRING && r->element[3]->str[0] == 'k')
            n++;
        freeReplyObject(r);
    }
    return n;
}

/* A signal of the process to its own waiter goes through no Redis: no
 * push is published for it (watched in Redis), and the signal counts as
 * local. */
static void test_local_signal_no_round_trip(void **state)
{
    if (getenv("TH_REDLOCK"))
        skip();                   /* (pushes come from every server: watched on one) */
    char name[128];
    th_name(name, sizeof name, "local0");
    redisContext *watch = watch_pushes();
    cw_shm_t *shm = shm_new();
    cw_t w;
    cw_start(&w, NULL, name, shm);
    cw_send(&w, CW_WAITGEN, 0, 1, 20000, 0);
    cw_wait_registered(&w, 1);
    cw_res_t a, b;
    cw_stats(&w, &a);
    cw_send(&w, CW_SIGNAL, 1, 0, 0, 0);
    cw_expect(&w, CW_SIGNAL, 0, 10000, NULL);
    /* The predicate is unset: the waiter waits again, as after a
     * spurious wake-up. */
    cw_wait_registered(&w, 2);
    cw_stats(&w, &b);
    assert_int_equal(b.v[2] - a.v[2], 1);       /* woken locally */
    cw_send(&w, CW_SETGEN, 1, 1, 0, 0);
    cw_expect_two(&w, CW_SETGEN, CW_WAITGEN, 10000);
    int n = pushes_seen(watch, 300);
    redisFree(watch);
    if (n)
        fail_msg("%d wake-ups went through Redis for signals of the waiter's own process", n);
    cw_stop(&w);
    munmap(shm, sizeof *shm);
}

/* In-process cases: this test process's own calls. */

static struct timespec ts_in(long ms)
{
    return th_abstime_ms(ms);
}

static int child_counts(void *arg)
{
    const char *name = arg;
    dist_cond_t c;
    dist_mutex_t m;
    TH_CHECK_RC(dist_cond_init(&c, name, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&m, name, NULL), 0);
    /* EPERM without the mutex, which stays as it was (not held). */
    struct timespec ts = ts_in(100);
    TH_CHECK_RC(dist_cond_timedwait(&c, &m, &ts), EPERM);
    TH_CHECK_RC(dist_cond_wait(&c, &m), EPERM);
    TH_CHECK_RC(dist_mutex_unlock(&m), EPERM);
    /* Three holds, a wait that times out: three holds again. */
    for (int i = 0; i < 3; i++)
        TH_CHECK_RC(dist_mutex_lock(&m), 0);
    ts = ts_in(150);
    TH_CHECK_RC(dist_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
    for (int i = 0; i < 3; i++)
        TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), EPERM);
    TH_CHECK_RC(dist_cond_destroy(&c), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static void test_reentrancy_count_restored(void **state)
{
    char name[128];
    th_name(name, sizeof name, "count");
    TH_ASSERT_CHILD_OK(th_fork_child(child_counts, name));
}

/* While the waiter waits, another process holds the mutex with a 300 ms
 * lease and dies: the waiter's retake finds the hold lapsed: EOWNERDEAD,
 * the mutex held (its count restored). */
static void test_eownerdead_on_retake(void **state)
{
    char name[128];
    th_name(name, sizeof name, "od");
    cw_shm_t *shm = shm_new();
    cw_t w;
    cw_start(&w, NULL, name, shm);
    cw_send(&w, CW_WAITGEN, 0, 1, 20000, 0);
    cw_wait_registered(&w, 1);
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    th_req_t q;
    th_proc_req(&q, TH_M_LOCK, name);
    q.lease_ms = 300;
    TH_ASSERT_RC(th_proc_call(&h, &q, NULL), 0);
    /* Wake it while the dead holder's lease runs; the predicate is set
     * (without the mutex: the holder is about to die with it). */
    __atomic_store_n(&shm->gen, 1, __ATOMIC_RELEASE);
    th_proc_kill(&h);
    dist_cond_t c;
    TH_ASSERT_RC(dist_cond_init(&c, name, NULL), 0);
    TH_ASSERT_RC(dist_cond_signal(&c), 0);
    cw_expect(&w, CW_WAITGEN, EOWNERDEAD, 10000, NULL);
    TH_ASSERT_RC(dist_cond_destroy(&c), 0);
    cw_stop(&w);
    munmap(shm, sizeof *shm);
}

/* The caller's own hold lapses before its wait releases it (a fixed
 * 100 ms lease, held 300 ms): the wait still waits, and says EOWNERDEAD
 * once it holds the mutex again.  The wait does not end the caller's
 * section: the unlock that does says ENOLCK (SPEC, ENOLCK), so that a
 * caller that checks only its unlock still learns of the lapse. */
static int child_own_lapse(void *arg)
{
    const char *name = arg;
    dist_cond_t c;
    dist_mutex_t m;
    dist_mutexattr_t at;
    TH_CHECK_RC(dist_mutexattr_init(&at), 0);
    TH_CHECK_RC(dist_mutexattr_setlease(&at, 100), 0);
    TH_CHECK_RC(dist_cond_init(&c, name, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&m, name, &at), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    th_sleep_ms(300);
    struct timespec ts = ts_in(100);
    TH_CHECK_RC(dist_cond_timedwait(&c, &m, &ts), EOWNERDEAD);
    TH_CHECK(strstr(dist_lasterror(), "lapsed") != NULL);
    TH_CHECK_RC(dist_mutex_unlock(&m), ENOLCK);
    /* the next section, without a lapse, ends with 0 */
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    return 0;
}

static void test_eownerdead_own_hold_lapsed(void **state)
{
    char name[128];
    th_name(name, sizeof name, "ownlapse");
    TH_ASSERT_CHILD_OK(th_fork_child(child_own_lapse, name));
}

/* ETIMEDOUT never before abstime, with the mutex held again. */
static int child_never_early(void *arg)
{
    const char *name = arg;
    dist_cond_t c;
    dist_mutex_t m;
    TH_CHECK_RC(dist_cond_init(&c, name, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&m, name, NULL), 0);
    for (int i = 0; i < 5; i++) {
        TH_CHECK_RC(dist_mutex_lock(&m), 0);
        struct timespec ts = ts_in(50 + 60 * i), now;
        TH_CHECK_RC(dist_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
        clock_gettime(CLOCK_REALTIME, &now);
        TH_CHECK(now.tv_sec > ts.tv_sec || (now.tv_sec == ts.tv_sec && now.tv_nsec >= ts.tv_nsec));
        TH_CHECK_RC(dist_mutex_unlock(&m), 0);     /* held again */
    }
    /* An abstime already past: ETIMEDOUT, held again. */
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    struct timespec past = ts_in(-1000);
    TH_CHECK_RC(dist_cond_timedwait(&c, &m, &past), ETIMEDOUT);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    return 0;
}

static void test_timedout_never_early(void **state)
{
    char name[128];
    th_name(name, sizeof name, "early");
    TH_ASSERT_CHILD_OK(th_fork_child(child_never_early, name));
}

/* The key of a condition named name (keys.c), for the tests' own looks. */
static void cond_key(const char *name, int which, char *buf, size_t size)
{
    const char *prefix = getenv("DISTLOCK_PREFIX") ? getenv("DISTLOCK_PREFIX") : "distlock:";
    size_t len = strlen(name);
    char *kb = malloc(dl_kind_keys_size(DL_KIND_COND, prefix, len));
    const char *keys[DL_KEYS_MAX];
    size_t kl[DL_KEYS_MAX];
    dl_kind_keys_write(DL_KIND_COND, kb, prefix, name, len, keys, kl);
    snprintf(buf, size, "%s", keys[which]);
    free(kb);
}

/* A timed wait whose registration a signal takes as its time runs out
 * returns 0: the signal woke it.  The take is made here without a push
 * (its ZREMs alone), so the waiter learns of it only from its leave, as
 * when the push is still on its way when the time runs out. */
static void test_timedwait_signalled_as_it_ran_out(void **state)
{
    char name[128], k0[300], k1[300];
    th_name(name, sizeof name, "lastsig");
    cond_key(name, 0, k0, sizeof k0);
    cond_key(name, 1, k1, sizeof k1);
    cw_shm_t *shm = shm_new();
    cw_t w;
    cw_start(&w, NULL, name, shm);
    cw_send(&w, CW_WAITGEN, 0, 1, 400, 0);
    cw_wait_registered(&w, 1);
    redisReply *r = th_cmd("ZRANGE %s 0 -1", k0);
    assert_non_null(r);
    assert_int_equal(r->elements, 1);
    char member[200];
    snprintf(member, sizeof member, "%s", r->element[0]->str);
    freeReplyObject(r);
    assert_int_equal(th_cmd_ll("ZREM %s %s", k0, member), 1);
    assert_int_equal(th_cmd_ll("ZREM %s %s", k1, member), 1);
    /* The wait returns 0 as its time runs out (the predicate is unset:
     * the loop waits again, past its abstime, and that wait says
     * ETIMEDOUT); had it said ETIMEDOUT, the loop would have ended after
     * one wait. */
    cw_res_t res;
    cw_expect(&w, CW_WAITGEN, ETIMEDOUT, 10000, &res);
    cw_stats(&w, &res);
    assert_int_equal(res.v[0], 2);
    /* Control: untouched, one wait, ETIMEDOUT. */
    cw_send(&w, CW_WAITGEN, 0, 1, 300, 0);
    cw_expect(&w, CW_WAITGEN, ETIMEDOUT, 10000, &res);
    cw_stats(&w, &res);
    assert_int_equal(res.v[0], 3);
    cw_stop(&w);
    munmap(shm, sizeof *shm);
}

/* A registration Redis lost (an operator's DEL; a restart without
 * persistence) wakes its waiter at its next check (every third of the
 * claim window): a spurious wake-up, never a waiter asleep for ever. */
static void test_lost_registration_wakes(void **state)
{
    static const char *const env[] = { "DISTLOCK_LEASE_MS=1500", NULL };
    char name[128], k0[300], k1[300];
    th_name(name, sizeof name, "lostreg");
    cond_key(name, 0, k0, sizeof k0);
    cond_key(name, 1, k1, sizeof k1);
    cw_shm_t *shm = shm_new();
    cw_t w;
    cw_start(&w, env, name, shm);
    cw_send(&w, CW_WAITGEN, 0, 1, 30000, 0);
    cw_wait_registered(&w, 1);
    th_cmd_ll("DEL %s %s", k0, k1);
    /* It wakes, finds the predicate unset, and waits again: registered
     * anew within a check's period (500 ms; 5 s allowed on a loaded
     * machine). */
    int64_t t0 = th_now_ms();
    cw_wait_registered(&w, 2);
    print_message("registered again %lld ms after its registration was deleted\n",
                  (long long)(th_now_ms() - t0));
    cw_res_t r;
    cw_stats(&w, &r);
    assert_true(r.v[4] >= 1);                   /* found out by asking */
    __atomic_store_n(&shm->gen, 1, __ATOMIC_RELEASE);
    dist_cond_t c;
    TH_ASSERT_RC(dist_cond_init(&c, name, NULL), 0);
    TH_ASSERT_RC(dist_cond_signal(&c), 0);
    cw_expect(&w, CW_WAITGEN, 0, 10000, NULL);
    TH_ASSERT_RC(dist_cond_destroy(&c), 0);
    cw_stop(&w);
    munmap(shm, sizeof *shm);
}

/* fork(): a condition and mutex in MAP_SHARED memory, initialized before
 * fork (and one statically), used by the child to wait and by the parent
 * to signal, as pthreads objects in shared memory are. */
typedef struct shared_objs {
    dist_cond_t c;
    dist_mutex_t m;
    int flag;
} shared_objs_t;

static dist_cond_t g_static_cv = DIST_COND_INITIALIZER("test_cond:static");

static int child_shared_wait(void *arg)
{
    shared_objs_t *so = arg;
    TH_CHECK_RC(dist_mutex_lock(&so->m), 0);
    struct timespec ts = ts_in(20000);
    int rc = 0;
    while (rc == 0 && !__atomic_load_n(&so->flag, __ATOMIC_ACQUIRE))
        rc = dist_cond_timedwait(&so->c, &so->m, &ts);
    TH_CHECK_RC(rc, 0);
    TH_CHECK_RC(dist_mutex_unlock(&so->m), 0);
    /* The static condition too: wait for the parent's broadcast. */
    TH_CHECK_RC(dist_mutex_lock(&so->m), 0);
    while (rc == 0 && __atomic_load_n(&so->flag, __ATOMIC_ACQUIRE) < 2)
        rc = dist_cond_timedwait(&g_static_cv, &so->m, &ts);
    TH_CHECK_RC(rc, 0);
    TH_CHECK_RC(dist_mutex_unlock(&so->m), 0);
    return 0;
}

static void test_fork_shared_objects(void **state)
{
    char name[128];
    th_name(name, sizeof name, "shared");
    shared_objs_t *so = mmap(NULL, sizeof *so, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                             -1, 0);
    assert_true(so != MAP_FAILED);
    TH_ASSERT_RC(dist_cond_init(&so->c, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_init(&so->m, name, NULL), 0);
    __atomic_store_n(&so->flag, 0, __ATOMIC_RELEASE);
    /* The parent used the library before forking (the child starts anew). */
    TH_ASSERT_RC(dist_cond_signal(&so->c), 0);
    char k0[300];
    cond_key(name, 0, k0, sizeof k0);
    pid_t pid = th_fork_child(child_shared_wait, so);
    int64_t until = th_now_ms() + 10000;
    while (th_cmd_ll("ZCARD %s", k0) < 1 && th_now_ms() < until)
        th_sleep_ms(2);
    TH_ASSERT_RC(dist_mutex_lock(&so->m), 0);
    __atomic_store_n(&so->flag, 1, __ATOMIC_RELEASE);
    TH_ASSERT_RC(dist_mutex_unlock(&so->m), 0);
    TH_ASSERT_RC(dist_cond_signal(&so->c), 0);
    cond_key("test_cond:static", 0, k0, sizeof k0);
    until = th_now_ms() + 10000;
    while (th_cmd_ll("ZCARD %s", k0) < 1 && th_now_ms() < until)
        th_sleep_ms(2);
    TH_ASSERT_RC(dist_mutex_lock(&so->m), 0);
    __atomic_store_n(&so->flag, 2, __ATOMIC_RELEASE);
    TH_ASSERT_RC(dist_mutex_unlock(&so->m), 0);
    TH_ASSERT_RC(dist_cond_broadcast(&g_static_cv), 0);
    TH_ASSERT_CHILD_OK(pid);
    TH_ASSERT_RC(dist_cond_destroy(&so->c), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&so->m), 0);
    munmap(so, sizeof *so);
}

/* destroy while a thread of the process waits: EBUSY; after: 0.  And a
 * condition never clashes with a lock of the same name. */
typedef struct waitarg {
    dist_cond_t *c;
    dist_mutex_t *m;
    long ms;
} waitarg_t;

static int do_timedwait(void *arg)
{
    waitarg_t *a = arg;
    int rc = dist_mutex_lock(a->m);
    if (rc)
        return rc;
    struct timespec ts = ts_in(a->ms);
    rc = dist_cond_timedwait(a->c, a->m, &ts);
    dist_mutex_unlock(a->m);
    return rc;
}

static void test_destroy_busy_and_names_apart(void **state)
{
    char name[128], k0[300];
    th_name(name, sizeof name, "destroy");
    cond_key(name, 0, k0, sizeof k0);
    dist_cond_t c;
    dist_mutex_t m;
    TH_ASSERT_RC(dist_cond_init(&c, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    th_actor_t *a = th_actor_new();
    /* (20 s: the signal below ends the wait; the bound only keeps the
     * waiter from returning before the checks are done, however slow.) */
    waitarg_t wa = { &c, &m, 20000 };
    th_actor_post(a, do_timedwait, &wa);
    int64_t until = th_now_ms() + 10000;
    while (th_cmd_ll("ZCARD %s", k0) < 1 && th_now_ms() < until)
        th_sleep_ms(2);
    /* The mutex of the same name is free meanwhile: the condition's keys
     * are not the lock's.  The waiter registers before it releases the
     * mutex (on every server under redlock: the release follows the
     * slowest), so the mutex is taken with a deadline, not tried: 10 s,
     * far more than a release takes, far less than the wait. */
    struct timespec lk = ts_in(10000);
    TH_ASSERT_RC(dist_mutex_timedlock(&m, &lk), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_cond_destroy(&c), EBUSY);
    assert_non_null(strstr(dist_lasterror(), "waited on"));
    TH_ASSERT_RC(dist_cond_signal(&c), 0);
    int rc = -1;
    assert_int_equal(th_actor_wait(a, &rc, 10000), 0);
    TH_ASSERT_RC(rc, 0);
    th_actor_free(a);
    TH_ASSERT_RC(dist_cond_destroy(&c), 0);
    TH_ASSERT_RC(dist_cond_signal(&c), EINVAL);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* ---------------------------------------------------- the other modes */

/* The core cases on a topology (env: its URL and variables). */
static void run_modes_cases(const char *const *env, const char *mode)
{
    char name[128];
    th_name(name, sizeof name, mode);
    print_message("%s: a signal from another process\n", mode);
    sc_cross_process(env, name);
    print_message("%s: the race, both orders, other process and same process\n", mode);
    sc_race(env, name, 60, 0);
    sc_race(env, name, 60, 1);
    print_message("%s: broadcast\n", mode);
    sc_broadcast(env, name);
    print_message("%s: local signals passed on\n", mode);
    sc_local_and_remote(env, name, 10);
}

static void test_mode_sentinel(void **state)
{
    if (getenv("TH_REDLOCK"))
        skip();               /* (its own topology: run once, in the plain suite) */
    th_time_limit(240);
    th_server_t master, rep;
    tt_sentinels_t st;
    assert_int_equal(tt_server_start(&master, NULL), 0);
    assert_int_equal(tt_replica_start(&rep, master.port), 0);
    assert_int_equal(tt_sentinels_start(&st, 3, "mcond", master.port, 2, 1), 0);
    char url[400], envurl[420];
    tt_sentinel_url(&st, url, sizeof url);
    snprintf(envurl, sizeof envurl, "DISTLOCK_URL=%s", url);
    const char *env[] = { envurl, NULL };
    run_modes_cases(env, "sentinel");
    tt_sentinels_stop(&st);
    th_server_stop(&rep);
    th_server_stop(&master);
}

static void test_mode_cluster(void **state)
{
    if (getenv("TH_REDLOCK"))
        skip();               /* (its own topology: run once, in the plain suite) */
    th_time_limit(240);
    tt_cluster_t cl;
    assert_int_equal(tt_cluster_start(&cl), 0);
    char url[400], envurl[420];
    tt_cluster_url(&cl, 3, url, sizeof url);
    snprintf(envurl, sizeof envurl, "DISTLOCK_URL=%s", url);
    const char *env[] = { envurl, NULL };
    run_modes_cases(env, "cluster");
    tt_cluster_stop(&cl);
}

/* TLS: a server with a TLS port, certificates made here. */
static void test_mode_tls(void **state)
{
    if (getenv("TH_REDLOCK"))
        skip();               /* (its own topology: run once, in the plain suite) */
    th_time_limit(240);
    char dir[300], cmd[1200];
    snprintf(dir, sizeof dir, "%s", tt_dir());
    snprintf(cmd, sizeof cmd,
             "cd '%s' && set -e && printf '[srv]\\nsubjectAltName=IP:127.0.0.1\\n' > ext.cnf && "
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
             "-subj /CN=cond-ca -days 2 && "
             "openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=srv && "
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
             "-extfile ext.cnf -extensions srv -out srv.pem", dir);
    const char *argv[] = { "sh", "-c", cmd, NULL };
    char *out = NULL;
    if (tt_run(argv, 60000, &out) != 0)
        fail_msg("making certificates: %s", out ? out : "");
    free(out);
    char cert[400], key[400], ca[400];
    snprintf(cert, sizeof cert, "%s/srv.pem", dir);
    snprintf(key, sizeof key, "%s/srv.key", dir);
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    tt_tls_use(cert, key, ca);
    th_server_t s;
    const char *extra[] = { "--tls-auth-clients", "no", NULL };
    assert_int_equal(tt_server_start(&s, extra), 0);
    tt_tls_use(NULL, NULL, NULL);
    char envurl[200], envca[440];
    snprintf(envurl, sizeof envurl, "DISTLOCK_URL=rediss://127.0.0.1:%d", s.tls_port);
    snprintf(envca, sizeof envca, "DISTLOCK_TLS_CA_FILE=%s", ca);
    const char *env[] = { envurl, envca, NULL };
    run_modes_cases(env, "tls");
    th_server_stop(&s);
}

int main(void)
{
    srand((unsigned)getpid());
    const struct CMUnitTest tests[] = {
        TH_TEST(test_signal_other_process),
        TH_TEST(test_race_other_process),
        TH_TEST(test_race_same_process),
        TH_TEST(test_broadcast_every_waiter),
        TH_TEST(test_killed_waiter_stops_counting),
        TH_TEST(test_local_signal_passed_on),
        TH_TEST(test_local_signal_no_round_trip),
        TH_TEST(test_reentrancy_count_restored),
        TH_TEST(test_eownerdead_on_retake),
        TH_TEST(test_eownerdead_own_hold_lapsed),
        TH_TEST(test_timedout_never_early),
        TH_TEST(test_timedwait_signalled_as_it_ran_out),
        TH_TEST(test_lost_registration_wakes),
        TH_TEST(test_fork_shared_objects),
        TH_TEST(test_destroy_busy_and_names_apart),
        TT_TEST(test_mode_sentinel),
        TT_TEST(test_mode_cluster),
        TT_TEST(test_mode_tls),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
