/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_once.c - dist_once across processes, in the mode TH_ONCE_MODE
 * names (single, the default; sentinel, cluster, tls, redlock: CMake runs
 * the suite once per mode).
 *
 *  - exactly once: processes x threads calling dist_once on one name; the
 *    routine runs once, and every caller returns after it completed;
 *  - kept: a process that comes later finds it complete (it does not run
 *    it), and Redis keeps the completion without a TTL;
 *  - taken over: the process running the routine is killed in it; a
 *    process waiting for it runs it (the library says so: once_takeovers),
 *    within a lease;
 *  - the routine calling dist_once on its own object gets EDEADLK (the
 *    outer call completes), on another object it runs that one;
 *  - a thread cancelled in the routine gives it back: another thread of
 *    its process runs it;
 *  - a restart of Redis without persistence (single): a new process runs
 *    the routine again, as documented; a process that knew it complete
 *    does not;
 *  - names apart from locks.
 *
 * Every library call runs in a forked process with the mode's environment
 * (the library reads it once per process); the routines count their runs
 * in memory every process shares.
 */
#include "harness_mode.h"
#include "keys.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

/* What the routines record, in memory the processes share. */
typedef struct once_rec {
    int runs;                 /* routines started */
    int done;                 /* routines completed */
    int started;              /* the first run began */
    int calls, errors, early; /* callers; failed; returned before completion */
    int inner_rc;             /* a routine's own dist_once */
    char inner_err[256];
    int first_rc;
    char first_err[256];
    unsigned long takeovers;
} once_rec_t;

static once_rec_t *g_rec;
static const char *const g_short_lease[] = { "DISTLOCK_LEASE_MS=1500", NULL };

static once_rec_t *new_rec(void)
{
    once_rec_t *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                         -1, 0);
    assert_true(r != MAP_FAILED);
    memset(r, 0, sizeof *r);
    return r;
}

/* The once's key `which` (keys.c: 0 its running state, 3 its queue, 6 its
 * completion). */
static size_t once_key(char *buf, size_t size, const char *name, int which)
{
    return tm_key(buf, size, DL_KIND_ONCE, name, which);
}

/* Each test's once: one name per test (static objects need a literal, so
 * each test has its own, set up in the child before use). */
static char g_name[64];
static dist_once_t g_once;

static void use_name(const char *tag)
{
    th_name(g_name, sizeof g_name, tag);
    dist_once_t o = DIST_ONCE_INITIALIZER(g_name);
    g_once = o;
}

/* ----------------------------------------------------------- routines */

static void counted_routine(void)
{
    __atomic_add_fetch(&g_rec->runs, 1, __ATOMIC_SEQ_CST);
    th_sleep_ms(200);
    __atomic_add_fetch(&g_rec->done, 1, __ATOMIC_SEQ_CST);
}

/* The first run hangs until its process is killed; a later one completes. */
static void hanging_routine(void)
{
    if (__atomic_add_fetch(&g_rec->runs, 1, __ATOMIC_SEQ_CST) == 1) {
        __atomic_store_n(&g_rec->started, 1, __ATOMIC_SEQ_CST);
        for (;;)
            pause();
    }
    __atomic_add_fetch(&g_rec->done, 1, __ATOMIC_SEQ_CST);
}

/* ------------------------------------------------------------- callers */

typedef struct caller {
    void (*routine)(void);
    int threads;
    const char *const *env;
} caller_t;

static void *call_thread(void *p)
{
    caller_t *c = p;
    __atomic_add_fetch(&g_rec->calls, 1, __ATOMIC_SEQ_CST);
    int rc = dist_once(&g_once, c->routine);
    if (rc) {
        if (__atomic_fetch_add(&g_rec->errors, 1, __ATOMIC_SEQ_CST) == 0) {
            g_rec->first_rc = rc;
            snprintf(g_rec->first_err, sizeof g_rec->first_err, "%s", dist_lasterror());
        }
    } else if (__atomic_load_n(&g_rec->done, __ATOMIC_SEQ_CST) == 0) {
        __atomic_add_fetch(&g_rec->early, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static int caller_proc(void *p)
{
    caller_t *c = p;
    th_setenv_list(tm_env());
    th_setenv_list(c->env);
    pthread_t t[8];
    for (int i = 0; i < c->threads; i++)
        TH_CHECK(pthread_create(&t[i], NULL, call_thread, c) == 0);
    for (int i = 0; i < c->threads; i++)
        pthread_join(t[i], NULL);
    dl_stats_t st;
    dl_stats_get(&st);
    __atomic_add_fetch(&g_rec->takeovers, st.once_takeovers, __ATOMIC_SEQ_CST);
    return 0;
}

static pid_t start_caller(void (*routine)(void), int threads, const char *const *env)
{
    caller_t c = { routine, threads, env };
    return th_fork_child(caller_proc, &c);
}

static void check_callers(void)
{
    if (g_rec->errors)
        fail_msg("%d of %d calls failed, the first %s: %s", g_rec->errors, g_rec->calls,
                 th_errname(g_rec->first_rc), g_rec->first_err);
    if (g_rec->early)
        fail_msg("%d calls returned before the routine completed", g_rec->early);
}

/* ---------------------------------------------------------------- cases */

/* Processes x threads: one run, every caller back after it completed;
 * then a process that comes later finds it complete, and Redis keeps the
 * completion without a TTL. */
static void test_exactly_once(void **state)
{
    (void)state;
    use_name("once");
    g_rec = new_rec();
    enum { P = 4, T = 3 };
    pid_t pid[P];
    for (int i = 0; i < P; i++)
        pid[i] = start_caller(counted_routine, T, NULL);
    for (int i = 0; i < P; i++)
        TH_ASSERT_CHILD_OK(pid[i]);
    check_callers();
    assert_int_equal(g_rec->calls, P * T);
    if (g_rec->runs != 1)
        fail_msg("the routine ran %d times for %d callers", g_rec->runs, P * T);
    /* later: found complete, not run */
    TH_ASSERT_CHILD_OK(start_caller(counted_routine, 2, NULL));
    check_callers();
    assert_int_equal(g_rec->runs, 1);
    if (tm_mode != TM_REDLOCK) {
        char k[700];
        size_t len = once_key(k, sizeof k, g_name, 6);
        redisReply *r = th_cmd_at(tm_key_port(k, len), "PTTL %b", k, len);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_INTEGER || r->integer != -1)
            fail_msg("the completion's PTTL is %lld: want -1 (kept for good)",
                     r->type == REDIS_REPLY_INTEGER ? r->integer : -9);
        freeReplyObject(r);
    }
    munmap(g_rec, sizeof *g_rec);
}

/* The process running the routine is killed in it: a waiting process runs
 * it, within a lease, and says so. */
static void test_runner_killed_taken_over(void **state)
{
    (void)state;
    use_name("oncekill");
    g_rec = new_rec();
    pid_t a = start_caller(hanging_routine, 1, g_short_lease);
    int64_t end = th_now_ms() + 10000;
    while (!__atomic_load_n(&g_rec->started, __ATOMIC_SEQ_CST)) {
        if (th_now_ms() > end)
            fail_msg("the first run did not start");
        th_sleep_ms(5);
    }
    pid_t b = start_caller(hanging_routine, 2, g_short_lease);
    /* b waits for the running state (queued in Redis, but on redlock://,
     * which queues nobody): it must not run the routine meanwhile */
    th_sleep_ms(300);
    assert_int_equal(g_rec->runs, 1);
    int64_t killed = th_now_ms();
    th_kill_child(a);
    TH_ASSERT_CHILD_OK(b);
    int64_t took = th_now_ms() - killed;
    fprintf(stderr, "[once] taken over %lld ms after the runner was killed (lease 1500)\n",
            (long long)took);
    if (g_rec->runs != 2 || g_rec->done != 1)
        fail_msg("after the runner died: %d runs, %d completed; want 2 and 1", g_rec->runs,
                 g_rec->done);
    if (g_rec->takeovers != 1)
        fail_msg("the process that took over counted %lu takeovers, want 1", g_rec->takeovers);
    check_callers();
    TH_ASSERT_CHILD_OK(start_caller(hanging_routine, 1, g_short_lease));
    assert_int_equal(g_rec->runs, 2);
    munmap(g_rec, sizeof *g_rec);
}

/* A routine that calls dist_once on its own object: EDEADLK, and the
 * outer call completes; on another object, that one runs. */
static dist_once_t g_inner;

static void inner_routine(void)
{
    __atomic_add_fetch(&g_rec->done, 1, __ATOMIC_SEQ_CST);
}

static void recursive_routine(void)
{
    __atomic_add_fetch(&g_rec->runs, 1, __ATOMIC_SEQ_CST);
    g_rec->inner_rc = dist_once(&g_once, recursive_routine);
    snprintf(g_rec->inner_err, sizeof g_rec->inner_err, "%s", dist_lasterror());
    TH_CHECK_RC(dist_once(&g_inner, inner_routine), 0);
    __atomic_add_fetch(&g_rec->done, 1, __ATOMIC_SEQ_CST);
}

static void test_recursive_call(void **state)
{
    (void)state;
    use_name("oncerec");
    char inner[80];
    snprintf(inner, sizeof inner, "%s.inner", g_name);
    dist_once_t o = DIST_ONCE_INITIALIZER(inner);
    g_inner = o;
    g_rec = new_rec();
    TH_ASSERT_CHILD_OK(start_caller(recursive_routine, 1, NULL));
    check_callers();
    if (g_rec->inner_rc != EDEADLK || !th_contains(g_rec->inner_err, "its routine called"))
        fail_msg("dist_once from its own routine: %s \"%s\"", th_errname(g_rec->inner_rc),
                 g_rec->inner_err);
    assert_int_equal(g_rec->runs, 1);
    assert_int_equal(g_rec->done, 2);
}

/* A thread cancelled in the routine gives it back: another thread of its
 * process runs it. */
static void cancellable_routine(void)
{
    if (__atomic_add_fetch(&g_rec->runs, 1, __ATOMIC_SEQ_CST) == 1) {
        __atomic_store_n(&g_rec->started, 1, __ATOMIC_SEQ_CST);
        /* Cancelled only at pthread_testcancel, never inside a sleep:
         * ThreadSanitizer sees no synchronization in cleanup handlers run
         * from inside an intercepted blocking call (google/sanitizers#646). */
        for (;;) {
            int old;
            pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
            th_sleep_ms(5);
            pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
            pthread_testcancel();
        }
    }
    __atomic_add_fetch(&g_rec->done, 1, __ATOMIC_SEQ_CST);
}

static void *cancel_victim(void *p)
{
    (void)p;
    dist_once(&g_once, cancellable_routine);
    return NULL;
}

static int cancel_proc(void *p)
{
    (void)p;
    th_setenv_list(tm_env());
    pthread_t v, w;
    TH_CHECK(pthread_create(&v, NULL, cancel_victim, NULL) == 0);
    while (!__atomic_load_n(&g_rec->started, __ATOMIC_SEQ_CST))
        th_sleep_ms(2);
    caller_t c = { cancellable_routine, 1, NULL };
    TH_CHECK(pthread_create(&w, NULL, call_thread, &c) == 0);
    th_sleep_ms(100);
    TH_CHECK(__atomic_load_n(&g_rec->runs, __ATOMIC_SEQ_CST) == 1);   /* it waits for the running thread */
    TH_CHECK(pthread_cancel(v) == 0);
    void *res;
    TH_CHECK(pthread_join(v, &res) == 0);
    TH_CHECK(res == PTHREAD_CANCELED);
    TH_CHECK(pthread_join(w, NULL) == 0);
    return 0;
}

static void test_cancelled_runner(void **state)
{
    (void)state;
    use_name("oncecancel");
    g_rec = new_rec();
    TH_ASSERT_CHILD_OK(th_fork_child(cancel_proc, NULL));
    check_callers();
    if (g_rec->runs != 2 || g_rec->done != 1)
        fail_msg("after a cancelled run: %d runs, %d completed; want 2 and 1", g_rec->runs,
                 g_rec->done);
}

/* A once and a mutex of one name are two objects. */
static int names_child(void *p)
{
    (void)p;
    th_setenv_list(tm_env());
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, g_name, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_once(&g_once, counted_routine), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    TH_CHECK(g_rec->runs == 1);
    return 0;
}

static void test_names_apart(void **state)
{
    (void)state;
    use_name("oncename");
    g_rec = new_rec();
    TH_ASSERT_CHILD_OK(th_fork_child(names_child, NULL));
}

/* Redis restarted without persistence: a new process runs the routine
 * again (documented); one that knew it complete does not ask. */
static int knows_done(void *p)
{
    int *fd = p;
    th_setenv_list(tm_env());
    TH_CHECK_RC(dist_once(&g_once, counted_routine), 0);
    char c;
    TH_CHECK(write(fd[1], "r", 1) == 1);
    TH_CHECK(read(fd[0], &c, 1) == 1);
    TH_CHECK_RC(dist_once(&g_once, counted_routine), 0);
    return 0;
}

static void test_restart_runs_again(void **state)
{
    (void)state;
    if (tm_mode != TM_SINGLE)
        skip();
    use_name("oncerestart");
    g_rec = new_rec();
    th_pipe_t up, down;
    th_pipe_open(&up);
    th_pipe_open(&down);
    int fds[2] = { down.rd, up.wr };
    pid_t k = th_fork_child(knows_done, fds);
    char c;
    assert_int_equal(th_read_full(up.rd, &c, 1, 20000), 0);
    assert_int_equal(g_rec->runs, 1);
    th_server_t *s = tm_server();
    th_server_kill(s);
    tt_forget(s->pid);
    int port = s->port, upok = -1;
    for (int i = 0; i < 50 && upok; i++)
        if ((upok = tt_server_start_on(s, port, NULL)))
            th_sleep_ms(100);
    assert_int_equal(upok, 0);
    assert_int_equal(write(down.wr, "g", 1), 1);
    TH_ASSERT_CHILD_OK(k);
    assert_int_equal(g_rec->runs, 1);
    TH_ASSERT_CHILD_OK(start_caller(counted_routine, 1, NULL));
    check_callers();
    if (g_rec->runs != 2)
        fail_msg("after a restart without persistence, a new process ran it %d times in all: "
                 "want 2", g_rec->runs);
}

int main(void)
{
    tm_pick("TH_ONCE_MODE");
    static const struct CMUnitTest all[] = {
        TT_TEST(test_exactly_once),
        TT_TEST(test_runner_killed_taken_over),
        TT_TEST(test_recursive_call),
        TT_TEST(test_cancelled_runner),
        TT_TEST(test_names_apart),
        TT_TEST(test_restart_runs_again),  /* single only: last (it restarts) */
    };
    return th_run_group("once", all, sizeof all / sizeof all[0], tm_group_setup,
                        tt_group_teardown);
}
