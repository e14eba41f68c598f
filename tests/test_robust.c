/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_robust.c - robust mutexes (DIST_MUTEX_ROBUST, dist_mutex_consistent,
 * ENOTRECOVERABLE) across processes, in the mode TH_ROBUST_MODE names
 * (single, the default; sentinel, cluster, redlock: CMake runs the suite
 * once per mode).
 *
 *  - consistent: a holder told EOWNERDEAD (its predecessor died holding the
 *    lock) makes it consistent, and the lock goes on as usual, told of
 *    nothing more; the codes of consistent (EPERM without a hold, EINVAL
 *    with one but no EOWNERDEAD, EINVAL twice, EINVAL for a lenient mutex);
 *  - unrecoverable: the same holder unlocking without consistent leaves
 *    the name unrecoverable: every lock call of every process (lock,
 *    trylock, timedlock, clocklock, lock-all; robust or lenient objects)
 *    says ENOTRECOVERABLE, a waiter queued meanwhile is told at once, and
 *    a lock-all takes none of its other locks;
 *  - recovery: a destroy in a process that was never told changes nothing;
 *    a destroy in a process that was told makes the name usable again for
 *    every process once initialized again, with no EOWNERDEAD;
 *  - a reentrant relock told EOWNERDEAD (the thread's own hold lapsed and
 *    was taken anew: issue 28's retake) needs consistent too, before the
 *    unlock that ends the section (which says ENOLCK either way);
 *  - lock-all with EOWNERDEAD on one member: that member needs consistent,
 *    the others answer EINVAL;
 *  - a condition wait does not end the section: an EOWNERDEAD pending
 *    before it is pending after it.
 *
 * Every library call runs in a forked process with the mode's environment
 * (the library reads it once per process).
 */
#include "harness_topo.h"
#include "keys.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

enum { M_SINGLE, M_SENTINEL, M_CLUSTER, M_REDLOCK };
static int g_mode;
static const char *g_mode_name = "single";

static th_server_t g_srv;              /* single; sentinel: the master */
static th_server_t g_replica;
static tt_sentinels_t g_st;
static tt_cluster_t g_cl;
static th_server_t g_rl[3];
static char g_url[600];
static const char *g_env[8];

static int group_setup(void **state)
{
    (void)state;
    tt_alarm(120);
    char u[560];
    switch (g_mode) {
    case M_SINGLE:
        if (tt_server_start(&g_srv, NULL))
            return -1;
        snprintf(u, sizeof u, "redis://127.0.0.1:%d", g_srv.port);
        break;
    case M_SENTINEL:
        if (tt_server_start(&g_srv, NULL) || tt_replica_start(&g_replica, g_srv.port) ||
            tt_sentinels_start(&g_st, 3, "robustmaster", g_srv.port, 2, 1))
            return -1;
        tt_sentinel_url(&g_st, u, sizeof u);
        break;
    case M_CLUSTER:
        if (tt_cluster_start(&g_cl))
            return -1;
        tt_cluster_url(&g_cl, 3, u, sizeof u);
        break;
    case M_REDLOCK:
        for (int i = 0; i < 3; i++)
            if (tt_server_start(&g_rl[i], NULL))
                return -1;
        snprintf(u, sizeof u, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", g_rl[0].port,
                 g_rl[1].port, g_rl[2].port);
        break;
    }
    int n = 0;
    snprintf(g_url, sizeof g_url, "DISTLOCK_URL=%s", u);
    g_env[n++] = g_url;
    /* A holder that dies frees the lock within a lease: a short one. */
    g_env[n++] = "DISTLOCK_LEASE_MS=1000";
    g_env[n++] = "DISTLOCK_IO_TIMEOUT_MS=3000";
    g_env[n++] = "DISTLOCK_LOG=error";
    g_env[n] = NULL;
    alarm(0);
    return 0;
}

/* Deletes lock name's main key wherever the mode keeps it: its holder's
 * hold is gone, as after a server that lost it. */
static void delete_lock_key(const char *name)
{
    const char *prefix = "distlock:";
    size_t need = dl_kind_keys_size(DL_KIND_LOCK, prefix, strlen(name));
    char *all = malloc(need);
    const char *keys[DL_KEYS_MAX];
    size_t lens[DL_KEYS_MAX];
    dl_kind_keys_write(DL_KIND_LOCK, all, prefix, name, strlen(name), keys, lens);
    if (g_mode == M_REDLOCK) {
        for (int i = 0; i < 3; i++)
            th_cmd_at_ll(g_rl[i].port, "DEL %b", keys[0], lens[0]);
    } else if (g_mode == M_CLUSTER) {
        static int map[16384];
        TH_CHECK(tt_cluster_slot_map(&g_cl, 0, map) == 0);
        th_cmd_at_ll(map[tt_key_slot(keys[0], lens[0])], "DEL %b", keys[0], lens[0]);
    } else {
        th_cmd_at_ll(g_srv.port, "DEL %b", keys[0], lens[0]);
    }
    free(all);
}

static void robust_init(dist_mutex_t *m, const char *name, int robust)
{
    dist_mutexattr_t a;
    int got = -1;
    TH_CHECK_RC(dist_mutexattr_init(&a), 0);
    TH_CHECK_RC(dist_mutexattr_getrobust(&a, &got), 0);
    TH_CHECK(got == DIST_MUTEX_LENIENT);
    TH_CHECK_RC(dist_mutexattr_setrobust(&a, robust), 0);
    TH_CHECK_RC(dist_mutexattr_getrobust(&a, &got), 0);
    TH_CHECK(got == robust);
    TH_CHECK_RC(dist_mutex_init(m, name, &a), 0);
    TH_CHECK_RC(dist_mutexattr_destroy(&a), 0);
}

/* A process that locks name and dies holding it. */
static int die_holding(void *arg)
{
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, arg, DIST_MUTEX_ROBUST);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    _exit(0);
}

static void holder_dies(const char *name)
{
    TH_ASSERT_CHILD_OK(th_fork_child(die_holding, (void *)name));
}

/* ------------------------------------------------------------- consistent */

static int consistent_child(void *arg)
{
    const char *name = arg;
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, name, DIST_MUTEX_ROBUST);
    TH_CHECK_RC(dist_mutex_consistent(&m), EPERM);     /* not held */
    TH_CHECK_RC(dist_mutex_lock(&m), EOWNERDEAD);
    TH_CHECK(th_contains(dist_lasterror(), "consistent"));
    TH_CHECK_RC(dist_mutex_consistent(&m), 0);
    TH_CHECK_RC(dist_mutex_consistent(&m), EINVAL);    /* once */
    TH_CHECK_RC(dist_mutex_lock(&m), 0);               /* reentrant: nothing more */
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_consistent(&m), EINVAL);    /* held, no EOWNERDEAD */
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

/* Another process, afterwards: a lock as any other. */
static int plain_child(void *arg)
{
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, arg, DIST_MUTEX_ROBUST);
    TH_CHECK_RC(dist_mutex_trylock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static void test_consistent(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "rob-c");
    holder_dies(name);
    TH_ASSERT_CHILD_OK(th_fork_child(consistent_child, name));
    TH_ASSERT_CHILD_OK(th_fork_child(plain_child, name));
}

/* A lenient mutex (the default): EOWNERDEAD is a warning; consistent is
 * EINVAL (nothing to make consistent), and the lock goes on. */
static int lenient_child(void *arg)
{
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, arg, DIST_MUTEX_LENIENT);
    TH_CHECK_RC(dist_mutex_lock(&m), EOWNERDEAD);
    TH_CHECK_RC(dist_mutex_consistent(&m), EINVAL);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static void test_lenient(void **state)
{
    (void)state;
    char name[64];
    th_name(name, sizeof name, "rob-l");
    holder_dies(name);
    TH_ASSERT_CHILD_OK(th_fork_child(lenient_child, name));
    TH_ASSERT_CHILD_OK(th_fork_child(plain_child, name));
}

/* ---------------------------------------------------------- unrecoverable */

typedef struct unrec_arg {
    const char *name, *other;
    th_pipe_t go, done;
} unrec_arg_t;

/* Told EOWNERDEAD; waits for "go", then unlocks without consistent. */
static int careless_child(void *arg)
{
    unrec_arg_t *a = arg;
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, a->name, DIST_MUTEX_ROBUST);
    TH_CHECK_RC(dist_mutex_lock(&m), EOWNERDEAD);
    th_send(a->done.wr, 1, 0, 0, 0);
    th_msg_t msg;
    TH_CHECK(th_recv(a->go.rd, &msg, 30000) == 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    /* Its own next lock call is refused too. */
    TH_CHECK_RC(dist_mutex_lock(&m), ENOTRECOVERABLE);
    return 0;
}

/* Queued behind the careless holder: told ENOTRECOVERABLE once it unlocks. */
static int queued_child(void *arg)
{
    unrec_arg_t *a = arg;
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, a->name, DIST_MUTEX_ROBUST);
    TH_CHECK_RC(dist_mutex_trylock(&m), EBUSY);
    th_send(a->done.wr, 2, 0, 0, 0);
    TH_CHECK_RC(dist_mutex_lock(&m), ENOTRECOVERABLE);
    th_send(a->done.wr, 3, th_now_ms(), 0, 0);
    return 0;
}

/* Every lock call, robust object or not, and a lock-all that takes nothing. */
static int refused_child(void *arg)
{
    unrec_arg_t *a = arg;
    th_setenv_list(g_env);
    dist_mutex_t m, lenient, other;
    robust_init(&m, a->name, DIST_MUTEX_ROBUST);
    robust_init(&lenient, a->name, DIST_MUTEX_LENIENT);
    TH_CHECK_RC(dist_mutex_init(&other, a->other, NULL), 0);
    struct timespec ts = th_abstime_ms(200), mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    mono.tv_sec += 1;
    TH_CHECK_RC(dist_mutex_lock(&m), ENOTRECOVERABLE);
    TH_CHECK(th_contains(dist_lasterror(), "unrecoverable"));
    TH_CHECK_RC(dist_mutex_trylock(&m), ENOTRECOVERABLE);
    TH_CHECK_RC(dist_mutex_timedlock(&m, &ts), ENOTRECOVERABLE);
    TH_CHECK_RC(dist_mutex_clocklock(&m, CLOCK_MONOTONIC, &mono), ENOTRECOVERABLE);
    TH_CHECK_RC(dist_mutex_lock(&lenient), ENOTRECOVERABLE);
    dist_mutex_t *set[] = { &other, &m };
    TH_CHECK_RC(dist_mutex_lockall(set, 2), ENOTRECOVERABLE);
    TH_CHECK_RC(dist_mutex_trylockall(set, 2), ENOTRECOVERABLE);
    TH_CHECK_RC(dist_mutex_unlock(&other), EPERM);     /* none of the set held */
    TH_CHECK_RC(dist_mutex_unlock(&m), EPERM);
    TH_CHECK_RC(dist_mutex_destroy(&lenient), 0);
    TH_CHECK_RC(dist_mutex_destroy(&other), 0);
    /* destroy clears it (this process was told), ... */
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    th_send(a->done.wr, 4, 0, 0, 0);
    return 0;
}

/* A process never told of it: its destroy changes nothing. */
static int untold_child(void *arg)
{
    unrec_arg_t *a = arg;
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, a->name, DIST_MUTEX_ROBUST);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

/* ... and after it, the name is a lock again everywhere, telling nothing of
 * the past (no EOWNERDEAD). */
static int recovered_child(void *arg)
{
    unrec_arg_t *a = arg;
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, a->name, DIST_MUTEX_ROBUST);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static int still_refused_child(void *arg)
{
    unrec_arg_t *a = arg;
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, a->name, DIST_MUTEX_LENIENT);
    TH_CHECK_RC(dist_mutex_trylock(&m), ENOTRECOVERABLE);
    return 0;
}

static void test_unrecoverable(void **state)
{
    (void)state;
    char name[64], other[64];
    th_name(name, sizeof name, "rob-u");
    th_name(other, sizeof other, "rob-u2");
    unrec_arg_t a = { name, other, { -1, -1 }, { -1, -1 } };
    th_pipe_open(&a.go);
    th_pipe_open(&a.done);
    holder_dies(name);
    pid_t careless = th_fork_child(careless_child, &a);
    th_msg_t msg;
    assert_int_equal(th_recv(a.done.rd, &msg, 30000), 0);
    assert_int_equal(msg.tag, 1);
    pid_t queued = th_fork_child(queued_child, &a);
    assert_int_equal(th_recv(a.done.rd, &msg, 30000), 0);
    assert_int_equal(msg.tag, 2);
    th_sleep_ms(300);                          /* (it waits in the lock call by now) */
    int64_t t_unlock = th_now_ms();
    th_send(a.go.wr, 1, 0, 0, 0);
    TH_ASSERT_CHILD_OK(careless);
    assert_int_equal(th_recv(a.done.rd, &msg, 30000), 0);
    assert_int_equal(msg.tag, 3);
    print_message("%s: the queued waiter was told ENOTRECOVERABLE %lld ms after the unlock\n",
                  g_mode_name, (long long)(msg.a - t_unlock));
    TH_ASSERT_CHILD_OK(queued);
    TH_ASSERT_CHILD_OK(th_fork_child(untold_child, &a));
    TH_ASSERT_CHILD_OK(th_fork_child(still_refused_child, &a));
    TH_ASSERT_CHILD_OK(th_fork_child(refused_child, &a));
    assert_int_equal(th_recv(a.done.rd, &msg, 30000), 0);
    assert_int_equal(msg.tag, 4);
    TH_ASSERT_CHILD_OK(th_fork_child(recovered_child, &a));
    th_pipe_close(&a.go);
    th_pipe_close(&a.done);
}

/* -------------------------------------------- a reentrant relock's retake */

typedef struct retake_arg {
    const char *name;
    int consistent;
    th_pipe_t up, down;
} retake_arg_t;

static int retake_child(void *arg)
{
    retake_arg_t *a = arg;
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, a->name, DIST_MUTEX_ROBUST);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    th_send(a->up.wr, 1, 0, 0, 0);
    th_msg_t msg;
    TH_CHECK(th_recv(a->down.rd, &msg, 30000) == 0);   /* its key deleted meanwhile */
    /* The relock finds the hold gone and takes the lock anew: EOWNERDEAD
     * (its own earlier hold lapsed), to be made consistent like any. */
    int rc = EIO;
    for (int i = 0; i < 200 && rc != EOWNERDEAD; i++) {
        th_sleep_ms(20);
        rc = dist_mutex_lock(&m);
        if (rc == 0)
            TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    }
    TH_CHECK_RC(rc, EOWNERDEAD);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);             /* the inner hold: not the end */
    if (a->consistent)
        TH_CHECK_RC(dist_mutex_consistent(&m), 0);
    /* The section saw a lapse: its end says ENOLCK either way. */
    TH_CHECK_RC(dist_mutex_unlock(&m), ENOLCK);
    return 0;
}

static int after_retake_child(void *arg)
{
    retake_arg_t *a = arg;
    th_setenv_list(g_env);
    dist_mutex_t m;
    robust_init(&m, a->name, DIST_MUTEX_ROBUST);
    TH_CHECK_RC(dist_mutex_trylock(&m), a->consistent ? 0 : ENOTRECOVERABLE);
    if (a->consistent)
        TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    return 0;
}

static void retake_case(int consistent)
{
    char name[64];
    th_name(name, sizeof name, consistent ? "rob-rc" : "rob-ru");
    retake_arg_t a = { name, consistent, { -1, -1 }, { -1, -1 } };
    th_pipe_open(&a.up);
    th_pipe_open(&a.down);
    pid_t c = th_fork_child(retake_child, &a);
    th_msg_t msg;
    assert_int_equal(th_recv(a.up.rd, &msg, 30000), 0);
    delete_lock_key(name);
    th_send(a.down.wr, 1, 0, 0, 0);
    TH_ASSERT_CHILD_OK(c);
    TH_ASSERT_CHILD_OK(th_fork_child(after_retake_child, &a));
    th_pipe_close(&a.up);
    th_pipe_close(&a.down);
}

static void test_relock_retake(void **state)
{
    (void)state;
    retake_case(1);
    retake_case(0);
}

/* ----------------------------------------------------- lock-all, condition */

typedef struct pair_arg { const char *a, *b; int consistent; } pair_arg_t;

static int lockall_child(void *arg)
{
    pair_arg_t *pa = arg;
    th_setenv_list(g_env);
    dist_mutex_t ma, mb;
    robust_init(&ma, pa->a, DIST_MUTEX_ROBUST);
    robust_init(&mb, pa->b, DIST_MUTEX_ROBUST);
    dist_mutex_t *set[] = { &ma, &mb };
    TH_CHECK_RC(dist_mutex_lockall(set, 2), EOWNERDEAD);   /* a's holder died */
    TH_CHECK_RC(dist_mutex_consistent(&mb), EINVAL);       /* b was free */
    if (pa->consistent)
        TH_CHECK_RC(dist_mutex_consistent(&ma), 0);
    TH_CHECK_RC(dist_mutex_unlock(&ma), 0);
    TH_CHECK_RC(dist_mutex_unlock(&mb), 0);
    int want = pa->consistent ? 0 : ENOTRECOVERABLE;
    TH_CHECK_RC(dist_mutex_lockall(set, 2), want);
    if (!want) {
        TH_CHECK_RC(dist_mutex_unlock(&ma), 0);
        TH_CHECK_RC(dist_mutex_unlock(&mb), 0);
    }
    TH_CHECK_RC(dist_mutex_trylock(&mb), 0);               /* b is fine either way */
    TH_CHECK_RC(dist_mutex_unlock(&mb), 0);
    return 0;
}

static void test_lockall(void **state)
{
    (void)state;
    for (int consistent = 1; consistent >= 0; consistent--) {
        char a[64], b[80];
        th_name(a, sizeof a, consistent ? "rob-ac" : "rob-au");
        snprintf(b, sizeof b, "%s.b", a);
        pair_arg_t pa = { a, b, consistent };
        holder_dies(a);
        TH_ASSERT_CHILD_OK(th_fork_child(lockall_child, &pa));
    }
}

static int cond_child(void *arg)
{
    pair_arg_t *pa = arg;
    th_setenv_list(g_env);
    dist_mutex_t m;
    dist_cond_t c;
    robust_init(&m, pa->a, DIST_MUTEX_ROBUST);
    TH_CHECK_RC(dist_cond_init(&c, pa->b, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), EOWNERDEAD);
    struct timespec ts = th_abstime_ms(50);
    TH_CHECK_RC(dist_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
    /* Still pending after the wait, which released and took m again. */
    TH_CHECK_RC(dist_mutex_consistent(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_trylock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_cond_destroy(&c), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static void test_cond_wait(void **state)
{
    (void)state;
    char a[64], b[80];
    th_name(a, sizeof a, "rob-cw");
    snprintf(b, sizeof b, "%s.c", a);
    pair_arg_t pa = { a, b, 1 };
    holder_dies(a);
    TH_ASSERT_CHILD_OK(th_fork_child(cond_child, &pa));
}

int main(void)
{
    const char *m = getenv("TH_ROBUST_MODE");
    static const char *const names[] = { "single", "sentinel", "cluster", "redlock" };
    for (int i = 0; m && i < 4; i++)
        if (strcmp(m, names[i]) == 0)
            g_mode = i, g_mode_name = names[i];
    static const struct CMUnitTest all[] = {
        TT_TEST(test_consistent),
        TT_TEST(test_lenient),
        TT_TEST(test_unrecoverable),
        TT_TEST(test_relock_retake),
        TT_TEST(test_lockall),
        TT_TEST(test_cond_wait),
    };
    return th_run_group("robust", all, sizeof all / sizeof all[0], group_setup,
                        tt_group_teardown);
}
