/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fork.c - fork(): the child holds nothing it did not lock itself,
 * may use any lock (the parent's too, once released), and neither its use
 * of the library nor its exit disturbs the parent's connections; an
 * object a child initialized in shared memory works in the parent.
 */
#include "harness.h"
#include "status.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static dist_mutex_t g_m;
static dist_rwlock_t g_rw;
static char g_name[128], g_other[128], g_rwname[128];

struct fork_arg { int up, down; int use_exit; int errfd; };

/* In the child: the parent's hold of g_m (and write hold of g_rw) is not
 * ours; other locks are usable; g_m becomes usable once the parent lets go. */
static int child_holds_nothing(void *p)
{
    struct fork_arg *a = p;
    uint64_t f;
    if (a->errfd >= 0)
        dup2(a->errfd, STDERR_FILENO);
    TH_CHECK_RC(dist_mutex_trylock(&g_m), EBUSY);
    TH_CHECK_RC(dist_mutex_unlock(&g_m), EPERM);
    TH_CHECK_RC(dist_mutex_getfence(&g_m, &f), EPERM);
    TH_CHECK_RC(dist_rwlock_tryrdlock(&g_rw), EBUSY);
    TH_CHECK_RC(dist_rwlock_unlock(&g_rw), EPERM);
    struct timespec ts = th_abstime_ms(200);
    TH_CHECK_RC(dist_mutex_timedlock(&g_m, &ts), ETIMEDOUT);

    dist_mutex_t o;
    TH_CHECK_RC(dist_mutex_init(&o, g_other, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&o), 0);
    TH_CHECK_RC(dist_mutex_unlock(&o), 0);
    TH_CHECK_RC(dist_mutex_destroy(&o), 0);

    th_send(a->up, 1, 0, 0, 0);                 /* ready: please unlock */
    TH_CHECK_RC(dist_mutex_lock(&g_m), 0);      /* waits for the parent */
    th_send(a->up, 2, th_now_us(), 0, 0);
    TH_CHECK_RC(dist_mutex_getfence(&g_m, &f), 0);
    TH_CHECK_RC(dist_mutex_unlock(&g_m), 0);
    TH_CHECK_RC(dist_rwlock_rdlock(&g_rw), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&g_rw), 0);
    th_msg_t m;
    TH_CHECK(th_recv(a->down, &m, 20000) == 0);
    if (a->use_exit)
        exit(0);                                /* atexit handlers, destructors */
    return 0;
}

static void test_child_holds_nothing(void **state)
{
    th_name(g_name, sizeof g_name, "forked");
    th_name(g_other, sizeof g_other, "forkother");
    th_name(g_rwname, sizeof g_rwname, "forkrw");
    TH_ASSERT_RC(dist_mutex_init(&g_m, g_name, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_init(&g_rw, g_rwname, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&g_m), 0);
    TH_ASSERT_RC(dist_rwlock_wrlock(&g_rw), 0);

    th_pipe_t up, down;
    th_pipe_open(&up);
    th_pipe_open(&down);
    struct fork_arg a = { up.wr, down.rd, 0, -1 };
    pid_t pid = th_fork_child(child_holds_nothing, &a);
    th_msg_t m;
    if (th_recv(up.rd, &m, 20000) != 0) {
        int st = th_wait_child_ms(pid, 1000);
        fail_msg("child did not get ready (status %d)", st);
    }
    assert_int_equal(m.tag, 1);
    th_wait_queued(g_name, 1);
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(dist_mutex_unlock(&g_m), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&g_rw), 0);
    assert_int_equal(th_recv(up.rd, &m, 20000), 0);
    assert_int_equal(m.tag, 2);
    int64_t el = (m.a - t_rel) / 1000;
    if (el > 1000)
        fail_msg("the child got the lock %lld ms after the parent released it", (long long)el);
    th_send(down.wr, 1, 0, 0, 0);
    TH_ASSERT_CHILD_OK(pid);
    th_pipe_close(&up);
    th_pipe_close(&down);

    /* the parent goes on as before */
    TH_ASSERT_RC(dist_mutex_trylock(&g_m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&g_m), 0);
    TH_ASSERT_RC(dist_rwlock_trywrlock(&g_rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&g_rw), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&g_m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&g_rw), 0);
}

/* A handoff from another process to a waiting thread of ours by push: the
 * subscriber connection works.  Returns the latency in ms. */
static long long push_roundtrip(th_proc_t *h, dist_mutex_t *m, const char *name)
{
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .m = m };
    if (th_proc_op(h, TH_M_LOCK, name) != 0)
        return -1;
    th_actor_post(t, th_do_lock, &c);
    th_wait_queued(name, 1);
    int64_t t_rel = th_now_us();
    if (th_proc_op(h, TH_M_UNLOCK, name) != 0)
        return -2;
    int rc = -1;
    if (th_actor_wait(t, &rc, 15000) != 0 || rc != 0)
        return -3;
    long long el = (c.t_done_us - t_rel) / 1000;
    if (th_actor_call(t, th_do_unlock, &c) != 0)
        return -4;
    th_actor_free(t);
    return el;
}

/* The child uses the library and exits through exit(): the parent's hold,
 * command connection and subscriber keep working without reconnecting. */
static void test_parent_unaffected_by_child_exit(void **state)
{
    th_name(g_name, sizeof g_name, "forkexit");
    th_name(g_other, sizeof g_other, "forkexitother");
    th_name(g_rwname, sizeof g_rwname, "forkexitrw");
    char wname[128];
    th_name(wname, sizeof wname, "forkwake");
    dist_mutex_t wm;
    TH_ASSERT_RC(dist_mutex_init(&wm, wname, NULL), 0);
    TH_ASSERT_RC(dist_mutex_init(&g_m, g_name, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_init(&g_rw, g_rwname, NULL), 0);
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    long long el = push_roundtrip(&h, &wm, wname);    /* the subscriber is up */
    assert_true(el >= 0);

    for (int round = 0; round < 2; round++) {
        TH_ASSERT_RC(dist_mutex_lock(&g_m), 0);
        TH_ASSERT_RC(dist_rwlock_wrlock(&g_rw), 0);
        dl_stats_t s0, s1;
        dl_stats_get(&s0);

        th_pipe_t up, down, err;
        th_pipe_open(&up);
        th_pipe_open(&down);
        th_pipe_open(&err);
        struct fork_arg a = { up.wr, down.rd, round == 0, err.wr };
        pid_t pid = th_fork_child(child_holds_nothing, &a);
        close(err.wr);
        err.wr = -1;
        th_msg_t m;
        assert_int_equal(th_recv(up.rd, &m, 20000), 0);
        /* while the child waits for it, our hold is intact in Redis */
        TH_ASSERT_RC(th_proc_op(&h, TH_M_TRYLOCK, g_name), EBUSY);
        TH_ASSERT_RC(dist_mutex_unlock(&g_m), 0);
        TH_ASSERT_RC(dist_rwlock_unlock(&g_rw), 0);
        assert_int_equal(th_recv(up.rd, &m, 20000), 0);
        th_send(down.wr, 1, 0, 0, 0);
        char *text = th_read_all(err.rd, 20000);
        int st = th_wait_child(pid);
        if (st != 0 && !(st == 1 && strstr(text, "LeakSanitizer")))
            fail_msg("child status %d; its stderr:\n%s", st, text);
        if (st != 0)
            print_message("note: the child's exit() reported leaks (see test_child_exit_no_leaks)\n");
        else if (*text)
            fprintf(stderr, "%s", text);
        free(text);
        th_pipe_close(&up);
        th_pipe_close(&down);
        th_pipe_close(&err);

        /* after the child's exit: lock and unlock still work... */
        TH_ASSERT_RC(dist_mutex_lock(&g_m), 0);
        TH_ASSERT_RC(th_proc_op(&h, TH_M_TRYLOCK, g_name), EBUSY);
        th_sleep_ms(100);
        TH_ASSERT_RC(dist_mutex_unlock(&g_m), 0);
        TH_ASSERT_RC(th_proc_op(&h, TH_M_TRYLOCK, g_name), 0);
        TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, g_name), 0);
        /* ...pushes still arrive... */
        el = push_roundtrip(&h, &wm, wname);
        if (el < 0 || el > 1000)
            fail_msg("round %d: after the child exited, a push handoff took %lld ms (or failed: %lld)",
                     round, el, el);
        /* ...and nothing had to reconnect */
        dl_stats_get(&s1);
        if (s1.reconnects != s0.reconnects)
            fail_msg("round %d: the parent reconnected %lu times after the child %s", round,
                     s1.reconnects - s0.reconnects, round == 0 ? "called exit()" : "_exit()ed");
    }
    assert_int_equal(th_proc_stop(&h), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&g_m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&g_rw), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&wm), 0);
}

/* A child of a process that used the library, which uses it too and
 * then calls exit(): LeakSanitizer (in sanitizer builds) finds nothing
 * unreachable, i.e. the state the child dropped after fork stays
 * accounted for. */
static int child_uses_then_exits(void *p)
{
    const char *name = p;
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    exit(0);
}

static void test_child_exit_no_leaks(void **state)
{
    char name[128], pname[128];
    th_name(name, sizeof name, "forkleak");
    th_name(pname, sizeof pname, "forkleakparent");
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, pname, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);          /* watchdog, connections, registry */
    char *err = NULL;
    int st = th_run_capture_stderr(child_uses_then_exits, name, &err, 20000);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    if (st != 0)
        fail_msg("child status %d after exit(0); its stderr:\n%s", st, err);
    free(err);
}

/* fork() while another thread is blocked in a lock call and the watchdog
 * runs: the child's library works (no lock inherited in a taken state). */
static int child_after_busy_fork(void *p)
{
    const char *held_by_other = p;
    dist_mutex_t x, z;
    TH_CHECK_RC(dist_mutex_init(&x, held_by_other, NULL), 0);
    TH_CHECK_RC(dist_mutex_trylock(&x), EBUSY);
    TH_CHECK_RC(dist_mutex_unlock(&x), EPERM);
    TH_CHECK_RC(dist_mutex_trylock(&g_m), EBUSY);         /* the parent's */
    char zn[128];
    th_name(zn, sizeof zn, "forkz");
    TH_CHECK_RC(dist_mutex_init(&z, zn, NULL), 0);
    int64_t t0 = th_now_ms();
    TH_CHECK_RC(dist_mutex_lock(&z), 0);
    TH_CHECK_RC(dist_mutex_unlock(&z), 0);
    TH_CHECK(th_now_ms() - t0 < 5000);
    return 0;
}

static void test_fork_while_busy(void **state)
{
    char xname[128];
    th_name(xname, sizeof xname, "forkbusy");
    th_name(g_name, sizeof g_name, "forkbusyheld");
    TH_ASSERT_RC(dist_mutex_init(&g_m, g_name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&g_m), 0);
    dist_mutex_t x;
    TH_ASSERT_RC(dist_mutex_init(&x, xname, NULL), 0);
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, xname), 0);
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .m = &x };
    th_actor_post(t, th_do_lock, &c);
    th_wait_queued(xname, 1);

    for (int i = 0; i < 6; i++) {
        pid_t pid = th_fork_child(child_after_busy_fork, xname);
        int st = th_wait_child_ms(pid, 20000);
        if (st != 0)
            fail_msg("child %d forked while a thread waited ended with status %d", i, st);
        th_sleep_ms(i * 7);
    }
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, xname), 0);
    int rc = -1;
    assert_int_equal(th_actor_wait(t, &rc, 15000), 0);
    TH_ASSERT_RC(rc, 0);
    if ((c.t_done_us - t_rel) / 1000 > 1000)
        fail_msg("the parent's waiting thread woke %lld ms after the release",
                 (long long)((c.t_done_us - t_rel) / 1000));
    TH_ASSERT_RC(th_actor_call(t, th_do_unlock, &c), 0);
    th_actor_free(t);
    TH_ASSERT_RC(dist_mutex_unlock(&g_m), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_TRYLOCK, g_name), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, g_name), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&x), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&g_m), 0);
}

/* A grandchild: fork of a fork, each generation with its own holds. */
static int grandchild(void *p)
{
    const char *name = p;
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_CHECK_RC(dist_mutex_trylock(&m), EBUSY);           /* the child holds it */
    return 0;
}

static int child_forks_again(void *p)
{
    const char *name = p;
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    pid_t gpid = th_fork_child(grandchild, p);
    TH_CHECK(th_wait_child(gpid) == 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    return 0;
}

static void test_fork_of_fork(void **state)
{
    char name[128];
    th_name(name, sizeof name, "forkfork");
    pid_t pid = th_fork_child(child_forks_again, name);
    TH_ASSERT_CHILD_OK(pid);
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

/* The man pages' claim (dist_mutex_init(3), dist_rwlock_init(3),
 * dist_cond_init(3), dist_sem_init(3), distlock(7), README): an object in
 * shared memory works in every process whichever initialized it, a child
 * included, when its name is shorter than 64 bytes (the object holds it);
 * a longer name is in the initializer's memory, and the others get EINVAL
 * saying so. */
struct shared_objs {
    dist_mutex_t m, mlong;
    dist_rwlock_t rw;
    dist_cond_t c;
    dist_sem_t s;
    char name[128], longname[128];
};

static int init_shared(void *p)
{
    struct shared_objs *o = p;
    TH_CHECK_RC(dist_mutex_init(&o->m, o->name, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&o->mlong, o->longname, NULL), 0);
    TH_CHECK_RC(dist_rwlock_init(&o->rw, o->name, NULL), 0);
    TH_CHECK_RC(dist_cond_init(&o->c, o->name, NULL), 0);
    TH_CHECK_RC(dist_sem_init(&o->s, o->name, 1, 0), 0);
    TH_CHECK_RC(dist_mutex_lock(&o->mlong), 0);     /* it works where it was made */
    TH_CHECK_RC(dist_mutex_unlock(&o->mlong), 0);
    return 0;
}

static void test_shared_object_initialized_by_child(void **state)
{
    struct shared_objs *o = mmap(NULL, sizeof *o, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                                 -1, 0);
    assert_true(o != MAP_FAILED);
    memset(o, 0, sizeof *o);
    th_name(o->name, sizeof o->name, "chinit");
    /* 63 bytes: the longest a name held in the object may be */
    assert_true(strlen(o->name) <= 63);
    memset(o->longname, 'l', 64);
    memcpy(o->longname, o->name, strlen(o->name));
    o->longname[64] = 0;
    TH_ASSERT_CHILD_OK(th_fork_child(init_shared, o));

    /* The parent, which never initialized them, uses them. */
    TH_ASSERT_RC(dist_mutex_lock(&o->m), 0);
    TH_ASSERT_RC(dist_cond_signal(&o->c), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&o->m), 0);
    TH_ASSERT_RC(dist_rwlock_wrlock(&o->rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&o->rw), 0);
    TH_ASSERT_RC(dist_sem_trywait(&o->s), 0);
    TH_ASSERT_RC(dist_sem_post(&o->s), 0);
    /* A name of 64 bytes or more: EINVAL, saying why. */
    TH_ASSERT_RC(dist_mutex_lock(&o->mlong), EINVAL);
    assert_non_null(strstr(dist_lasterror(), "initialized by another process"));

    TH_ASSERT_RC(dist_mutex_destroy(&o->m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&o->rw), 0);
    TH_ASSERT_RC(dist_cond_destroy(&o->c), 0);
    TH_ASSERT_RC(dist_sem_destroy(&o->s), 0);
    munmap(o, sizeof *o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_child_holds_nothing),
        TH_TEST(test_parent_unaffected_by_child_exit),
        TH_TEST(test_fork_while_busy),
        TH_TEST(test_fork_of_fork),
        TH_TEST(test_child_exit_no_leaks),
        TH_TEST(test_shared_object_initialized_by_child),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
