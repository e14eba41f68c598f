/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_errors.c - Redis unreachable, lost, stalled or restarted; bad
 * configuration; secrets never printed.  Every case runs in a forked child
 * so the environment is read fresh.
 */
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static int closed_port(void)
{
    /* a port nothing listens on: start a server, note its port, stop it */
    th_server_t s;
    if (th_server_start(&s) != 0)
        return -1;
    int port = s.port;
    th_server_stop(&s);
    return port;
}

struct unreach_arg { int port; };

static int unreachable_child(void *p)
{
    struct unreach_arg *a = p;
    char url[64], where[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", a->port);
    snprintf(where, sizeof where, "127.0.0.1:%d", a->port);
    setenv("DISTLOCK_URL", url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "500", 1);
    dist_mutex_t m;
    dist_rwlock_t rw;
    TH_CHECK_RC(dist_mutex_init(&m, "unreach", NULL), 0);
    TH_CHECK_RC(dist_rwlock_init(&rw, "unreach-rw", NULL), 0);

    int64_t t0 = th_now_ms();
    TH_CHECK_RC(dist_mutex_lock(&m), EIO);
    int64_t el = th_now_ms() - t0;
    const char *e = dist_lasterror();
    fprintf(stderr, "lock: EIO after %lld ms: \"%s\"\n", (long long)el, e);
    TH_CHECK(el < 3000);
    TH_CHECK(strstr(e, where) != NULL);
    TH_CHECK(th_contains(e, "refused") || th_contains(e, "connect"));
    /* Said as what it is, with the URL and the time-out that ran out
     * (issue 32: "cannot wait for it: redis ..." read as a lock problem). */
    TH_CHECK(strstr(e, "Redis is unreachable at redis://") != NULL);
    TH_CHECK(strstr(e, url) != NULL);
    TH_CHECK(strstr(e, "DISTLOCK_IO_TIMEOUT_MS=500") != NULL);
    TH_CHECK(strstr(e, "cannot wait for it") == NULL);
    TH_CHECK_RC(dist_mutex_unlock(&m), EPERM);            /* nothing was acquired */

    t0 = th_now_ms();
    TH_CHECK_RC(dist_mutex_trylock(&m), EIO);
    TH_CHECK(th_now_ms() - t0 < 3000);
    struct timespec ts = th_abstime_ms(10000);
    t0 = th_now_ms();
    TH_CHECK_RC(dist_mutex_timedlock(&m, &ts), EIO);
    TH_CHECK(th_now_ms() - t0 < 3000);
    t0 = th_now_ms();
    TH_CHECK_RC(dist_rwlock_rdlock(&rw), EIO);
    TH_CHECK_RC(dist_rwlock_wrlock(&rw), EIO);
    TH_CHECK_RC(dist_rwlock_tryrdlock(&rw), EIO);
    TH_CHECK(th_now_ms() - t0 < 6000);
    TH_CHECK_RC(dist_rwlock_unlock(&rw), EPERM);
    TH_CHECK(strstr(dist_lasterror(), where) == NULL || 1);
    TH_CHECK_RC(dist_mutex_lock(&m), EIO);                /* again: no crash, same answer */
    TH_CHECK(strstr(dist_lasterror(), where) != NULL);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    TH_CHECK_RC(dist_rwlock_destroy(&rw), 0);
    return 0;
}

static void test_unreachable_gives_eio(void **state)
{
    struct unreach_arg a = { closed_port() };
    assert_true(a.port > 0);
    pid_t pid = th_fork_child(unreachable_child, &a);
    TH_ASSERT_CHILD_OK(pid);
}

/* A thread's dist_lasterror() is its own. */
static int lasterr_probe(void *p)
{
    snprintf(p, 256, "%s", dist_lasterror());
    return 0;
}

static int lasterror_thread_child(void *p)
{
    struct unreach_arg *a = p;
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", a->port);
    setenv("DISTLOCK_URL", url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "300", 1);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, "lasterr", NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), EIO);
    TH_CHECK(dist_lasterror()[0] != 0);
    th_actor_t *t = th_actor_new();
    char other[256] = "unset";
    TH_CHECK(th_actor_call(t, lasterr_probe, other) == 0);
    th_actor_free(t);
    TH_CHECK(other[0] == 0);
    return 0;
}

static void test_lasterror_per_thread(void **state)
{
    struct unreach_arg a = { closed_port() };
    assert_true(a.port > 0);
    TH_ASSERT_CHILD_OK(th_fork_child(lasterror_thread_child, &a));
}

/* What such a child gets: the server's URL and its ends of the pipes. */
struct lost_arg { const char *url; int up, down; };

/* A private server, and a child (fn) that uses it through a.url, reports
 * each step on `up` and waits for our go on `down`: the set-up of the
 * tests in which that server fails under the child. */
struct lost_run { th_server_t s; th_pipe_t up, down; struct lost_arg a; pid_t pid; };

static void lost_run_start(struct lost_run *r, int (*fn)(void *))
{
    assert_int_equal(th_server_start(&r->s), 0);
    th_pipe_open(&r->up);
    th_pipe_open(&r->down);
    r->a = (struct lost_arg){ r->s.url, r->up.wr, r->down.rd };
    r->pid = th_fork_child(fn, &r->a);
}

/* Waits for the child, stops the server, closes the pipes: the child's
 * exit status. */
static int lost_run_end(struct lost_run *r)
{
    int st = th_wait_child(r->pid);
    th_server_stop(&r->s);
    th_pipe_close(&r->up);
    th_pipe_close(&r->down);
    return st;
}

/* The first calls after the server came back may still meet a connection
 * to the old one: up to 5 more attempts while they give EIO. */
static int lock_when_back(dist_mutex_t *m)
{
    int rc = dist_mutex_lock(m);
    for (int i = 0; rc == EIO && i < 5; i++)
        rc = dist_mutex_lock(m);
    return rc;
}

/* The server dies (SIGKILL) while the child holds a lock; the child, with
 * the default SIGPIPE disposition, unlocks, relocks, keeps renewing, and
 * recovers when the server comes back on the same port. */
static int server_lost_child(void *p)
{
    struct lost_arg *a = p;
    th_sigpipe_default();
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "500", 1);
    setenv("DISTLOCK_LEASE_MS", "600", 1);        /* the watchdog writes every 200 ms */
    dist_mutex_t m, m2;
    TH_CHECK_RC(dist_mutex_init(&m, "lost", NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&m2, "lost2", NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_lock(&m2), 0);
    th_send(a->up, 1, 0, 0, 0);
    th_msg_t msg;
    TH_CHECK(th_recv(a->down, &msg, 20000) == 0);     /* the server is dead */
    th_sleep_ms(300);                                  /* watchdog ticks on dead sockets */

    int64_t t0 = th_now_ms();
    int rc = dist_mutex_unlock(&m);
    fprintf(stderr, "unlock with the server gone: %s after %lld ms (%s)\n", th_errname(rc),
            (long long)(th_now_ms() - t0), dist_lasterror());
    TH_CHECK_RC(rc, EIO);
    TH_CHECK(th_now_ms() - t0 < 3000);
    TH_CHECK_RC(dist_mutex_unlock(&m), EPERM);         /* the local hold was released */
    for (int i = 0; i < 3; i++) {
        t0 = th_now_ms();
        TH_CHECK_RC(dist_mutex_lock(&m), EIO);
        TH_CHECK(th_now_ms() - t0 < 3000);
        TH_CHECK_RC(dist_mutex_trylock(&m), EIO);
    }
    th_sleep_ms(300);
    th_send(a->up, 2, 0, 0, 0);
    TH_CHECK(th_recv(a->down, &msg, 20000) == 0);     /* the server is back (empty) */
    t0 = th_now_ms();
    rc = lock_when_back(&m);
    TH_CHECK_RC(rc, 0);
    TH_CHECK(th_now_ms() - t0 < 5000);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    rc = dist_mutex_unlock(&m2);                        /* lost with the old server */
    TH_CHECK(rc == ENOLCK || rc == EIO);
    TH_CHECK_RC(dist_mutex_lock(&m2), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m2), 0);
    return 0;
}

static void test_server_lost_while_held(void **state)
{
    struct lost_run r;
    lost_run_start(&r, server_lost_child);
    th_msg_t msg;
    if (th_recv(r.up.rd, &msg, 20000) != 0) {
        th_server_kill(&r.s);
        fail_msg("child never locked (status %d)", th_wait_child_ms(r.pid, 1000));
    }
    /* Stall it first, so requests (the watchdog's renewals) sit unread in
     * its socket buffers: then its death resets those connections (RST),
     * and any later write on them raises SIGPIPE unless it is blocked. */
    th_server_pause(&r.s);
    th_sleep_ms(700);
    th_server_kill(&r.s);
    th_send(r.down.wr, 1, 0, 0, 0);
    if (th_recv(r.up.rd, &msg, 20000) != 0) {
        int st = th_wait_child_ms(r.pid, 1000);
        fail_msg("child died while the server was down: status %d%s", st,
                 st == 128 + SIGPIPE ? " (SIGPIPE)" : "");
    }
    assert_int_equal(th_server_restart(&r.s), 0);
    th_send(r.down.wr, 2, 0, 0, 0);
    int st = lost_run_end(&r);
    if (st != 0)
        fail_msg("child status %d%s", st, st == 128 + SIGPIPE ? " (killed by SIGPIPE)" : "");
}

/* A stalled server (SIGSTOP): calls give up with EIO after the I/O
 * time-out instead of hanging, and work again once it resumes. */
static int stalled_child(void *p)
{
    struct lost_arg *a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "500", 1);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, "stalled", NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    th_send(a->up, 1, 0, 0, 0);
    th_msg_t msg;
    TH_CHECK(th_recv(a->down, &msg, 20000) == 0);     /* stopped */
    int64_t t0 = th_now_ms();
    TH_CHECK_RC(dist_mutex_lock(&m), EIO);
    int64_t el = th_now_ms() - t0;
    fprintf(stderr, "lock on a stalled server: EIO after %lld ms (%s)\n", (long long)el,
            dist_lasterror());
    TH_CHECK(el < 3000);
    TH_CHECK(dist_lasterror()[0] != 0);
    th_send(a->up, 2, 0, 0, 0);
    TH_CHECK(th_recv(a->down, &msg, 20000) == 0);     /* resumed */
    int rc = lock_when_back(&m);
    TH_CHECK(rc == 0 || rc == EOWNERDEAD);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    return 0;
}

static void test_server_stalled(void **state)
{
    struct lost_run r;
    lost_run_start(&r, stalled_child);
    th_msg_t msg;
    int ok = th_recv(r.up.rd, &msg, 20000) == 0;
    if (ok) {
        th_server_pause(&r.s);
        th_send(r.down.wr, 1, 0, 0, 0);
        ok = th_recv(r.up.rd, &msg, 20000) == 0;
        th_server_resume(&r.s);
        th_send(r.down.wr, 2, 0, 0, 0);
    }
    int st = lost_run_end(&r);
    if (st != 0)
        fail_msg("child status %d", st);
    assert_true(ok);
}

/* Bad configuration: EINVAL, and dist_lasterror() names the variable. */
struct env_case { const char *var, *value; };

static int bad_env_child(void *p)
{
    const struct env_case *c = p;
    setenv(c->var, c->value, 1);
    dist_mutex_t m;
    int rc = dist_mutex_init(&m, "badenv", NULL);
    if (rc == 0)
        rc = dist_mutex_lock(&m);
    fprintf(stderr, "%s=%s: %s \"%s\"\n", c->var, c->value, th_errname(rc), dist_lasterror());
    TH_CHECK_RC(rc, EINVAL);
    TH_CHECK(strstr(dist_lasterror(), c->var) != NULL);
    /* and again, and through the other calls: no crash, same answer */
    TH_CHECK_RC(dist_mutex_trylock(&m), EINVAL);
    dist_rwlock_t rw;
    rc = dist_rwlock_init(&rw, "badenv-rw", NULL);
    if (rc == 0)
        rc = dist_rwlock_rdlock(&rw);
    TH_CHECK_RC(rc, EINVAL);
    TH_CHECK(strstr(dist_lasterror(), c->var) != NULL);
    return 0;
}

static void test_bad_environment(void **state)
{
    static const struct env_case cases[] = {
        { "DISTLOCK_LEASE_MS", "abc" },
        { "DISTLOCK_LEASE_MS", "10abc" },
        { "DISTLOCK_LEASE_MS", "-5" },
        { "DISTLOCK_IO_TIMEOUT_MS", "-1" },
        { "DISTLOCK_IO_TIMEOUT_MS", "abc" },
        { "DISTLOCK_URL", "foo://x" },
        { "DISTLOCK_URL", "redis://127.0.0.1:99999" },
        { "DISTLOCK_URL", "redis://127.0.0.1:6379/notadb" },
        { "DISTLOCK_LOG", "loud" },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = th_wait_child(th_fork_child(bad_env_child, (void *)&cases[i]));
        if (st != 0) {
            print_error("%s=%s: child status %d\n", cases[i].var, cases[i].value, st);
            failed++;
        }
    }
    if (failed)
        fail_msg("%d bad configuration(s) not rejected with EINVAL naming the variable", failed);
}

/* A database the server does not have (SELECT 99: "ERR DB index is out
 * of range") is a bad configuration: EINVAL at once, naming DISTLOCK_URL
 * and the database, from every kind of call; not EIO after the I/O
 * time-out, as an outage would be. */
static int bad_db_child(void *p)
{
    (void)p;
    char url[80];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/99", th_redis_port());
    setenv("DISTLOCK_URL", url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "10000", 1);
    dist_mutex_t m;
    dist_rwlock_t rw;
    dist_sem_t s;
    dist_cond_t c;
    TH_CHECK_RC(dist_mutex_init(&m, "baddb", NULL), 0);
    TH_CHECK_RC(dist_rwlock_init(&rw, "baddb-rw", NULL), 0);
    TH_CHECK_RC(dist_cond_init(&c, "baddb-c", NULL), 0);
    int64_t t0 = th_now_ms();
    TH_CHECK_RC(dist_mutex_lock(&m), EINVAL);
    int64_t el = th_now_ms() - t0;
    const char *e = dist_lasterror();
    fprintf(stderr, "lock: EINVAL after %lld ms: \"%s\"\n", (long long)el, e);
    TH_CHECK(strstr(e, "DISTLOCK_URL") != NULL && strstr(e, "database 99") != NULL);
    TH_CHECK(el < 5000);                  /* the I/O time-out is 10 s */
    TH_CHECK_RC(dist_mutex_trylock(&m), EINVAL);
    TH_CHECK(strstr(dist_lasterror(), "DISTLOCK_URL") != NULL);
    TH_CHECK_RC(dist_rwlock_rdlock(&rw), EINVAL);
    TH_CHECK_RC(dist_cond_signal(&c), EINVAL);
    TH_CHECK_RC(dist_sem_init(&s, "baddb-s", 1, 0), EINVAL);
    TH_CHECK(strstr(dist_lasterror(), "database 99") != NULL);
    TH_CHECK(th_now_ms() - t0 < 5000);
    TH_CHECK_RC(dist_mutex_unlock(&m), EPERM);            /* nothing was acquired */
    return 0;
}

static void test_bad_database(void **state)
{
    pid_t pid = th_fork_child(bad_db_child, NULL);
    TH_ASSERT_CHILD_OK(pid);
}

/* Good but unusual configuration is accepted. */
static int good_env_child(void *p)
{
    const struct env_case *c = p;
    setenv(c->var, c->value, 1);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, "goodenv", NULL), 0);
    int rc = dist_mutex_lock(&m);
    TH_CHECK(rc == 0 || rc == EOWNERDEAD);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    return 0;
}

static int db_child(void *p)
{
    setenv("DISTLOCK_URL", p, 1);
    char name[128], key[300];
    th_name(name, sizeof name, "dbsel");
    th_key(key, sizeof key, name, "");
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK(th_cmd_ll("EXISTS %s", key) == 0);           /* not in db 0 */
    th_cmd_do("SELECT 3");
    TH_CHECK(th_cmd_ll("EXISTS %s", key) == 1);
    th_cmd_do("SELECT 0");
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    return 0;
}

static void test_good_environment(void **state)
{
    static char url_db[80];
    snprintf(url_db, sizeof url_db, "redis://127.0.0.1:%d/3", th_redis_port());
    static const char *levels[] = { "off", "error", "warn", "info", "debug" };
    struct env_case cases[8] = {
        { "DISTLOCK_URL", url_db },
        { "DISTLOCK_LEASE_MS", "1500" },
        { "DISTLOCK_IO_TIMEOUT_MS", "800" },
    };
    int n = 3;
    for (int i = 0; i < 5; i++)
        cases[n++] = (struct env_case){ "DISTLOCK_LOG", levels[i] };
    for (int i = 0; i < n; i++) {
        int st = th_wait_child(th_fork_child(good_env_child, &cases[i]));
        if (st != 0)
            fail_msg("%s=%s rejected or failing: child status %d", cases[i].var, cases[i].value, st);
    }
    /* the /3 URL really selects database 3 */
    int st = th_wait_child(th_fork_child(db_child, url_db));
    assert_int_equal(st, 0);
}

/* Passwords are never printed, neither in dist_lasterror() nor in logs. */
struct secret_arg { int port; int via_env; };

static int secret_child(void *p)
{
    struct secret_arg *a = p;
    char url[128];
    if (a->via_env) {
        snprintf(url, sizeof url, "redis://127.0.0.1:%d", a->port);
        setenv("DISTLOCK_PASSWORD", "Pw-env-s3cret", 1);
    } else {
        snprintf(url, sizeof url, "redis://alice:Pw-url-s3cret@127.0.0.1:%d", a->port);
    }
    setenv("DISTLOCK_URL", url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "300", 1);
    setenv("DISTLOCK_LOG", "debug", 1);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, "secret", NULL), 0);
    int rc = dist_mutex_lock(&m);
    TH_CHECK(rc != 0);
    fprintf(stdout, "lasterror: %s\n", dist_lasterror());
    TH_CHECK(!th_contains(dist_lasterror(), "s3cret"));
    return 0;
}

static void test_password_never_printed(void **state)
{
    for (int via_env = 0; via_env < 2; via_env++) {
        struct secret_arg a = { closed_port(), via_env };
        char *err = NULL;
        int st = th_run_capture_stderr(secret_child, &a, &err, 15000);
        if (st != 0)
            fail_msg("child status %d; stderr:\n%s", st, err);
        if (th_contains(err, "s3cret"))
            fail_msg("the password appears on stderr:\n%s", err);
        free(err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_unreachable_gives_eio),
        TH_TEST(test_lasterror_per_thread),
        TH_TEST(test_server_lost_while_held),
        TH_TEST(test_server_stalled),
        TH_TEST(test_bad_environment),
        TH_TEST(test_bad_database),
        TH_TEST(test_good_environment),
        TH_TEST(test_password_never_printed),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
