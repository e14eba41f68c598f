/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fork.c - fork(): the child holds nothing it did not lock itself,
 * may use any lock (the parent's too, once released), and neither its use
 * of the library nor its exit disturbs the parent's connections; an
 * object a child initialized in shared memory works in the parent.  An
 * object in MAP_SHARED memory that one process destroys and initializes
 * again under another name is that other object for a sibling that had
 * used it (every kind), and a destroyed one is EINVAL there.
 */
#include "harness.h"
#include "process.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
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

/* ------------------------------ a shared object initialized again */

/* One object of each kind in MAP_SHARED memory, and the names of the
 * parent's first and second initialization of them. */
typedef struct reinit_shm {
    dist_mutex_t m;
    dist_rwlock_t rw;
    dist_cond_t c;
    dist_sem_t s;
} reinit_shm_t;

static reinit_shm_t *g_ri;
static char g_ri_a[96], g_ri_b[96];

/* Waits for the parent's go-ahead `want` (a sibling's step). */
#define RI_WAIT(fd, want) do { th_msg_t m_; TH_CHECK(th_recv((fd), &m_, 30000) == 0); \
    TH_CHECK(m_.tag == (want)); } while (0)

/* The sibling: uses every object under its first name (so that its
 * process resolved each), then finds them destroyed, then initialized
 * again under the second name, which the parent holds. */
static int reinit_sibling(void *p)
{
    struct fork_arg *a = p;
    RI_WAIT(a->down, 0);                        /* initialized under the first name */
    TH_CHECK_RC(dist_mutex_trylock(&g_ri->m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&g_ri->m), 0);
    TH_CHECK_RC(dist_rwlock_tryrdlock(&g_ri->rw), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&g_ri->rw), 0);
    TH_CHECK_RC(dist_cond_signal(&g_ri->c), 0);
    TH_CHECK_RC(dist_sem_trywait(&g_ri->s), 0);
    TH_CHECK_RC(dist_sem_post(&g_ri->s), 0);
    th_send(a->up, 1, 0, 0, 0);                 /* used under the first name */

    RI_WAIT(a->down, 2);                        /* the parent destroyed them */
    TH_CHECK_RC(dist_mutex_trylock(&g_ri->m), EINVAL);
    TH_CHECK_RC(dist_rwlock_tryrdlock(&g_ri->rw), EINVAL);
    TH_CHECK_RC(dist_cond_signal(&g_ri->c), EINVAL);
    TH_CHECK_RC(dist_sem_trywait(&g_ri->s), EINVAL);
    TH_CHECK_RC(dist_sem_post(&g_ri->s), EINVAL);
    th_send(a->up, 3, 0, 0, 0);

    RI_WAIT(a->down, 4);                        /* initialized again, held */
    TH_CHECK_RC(dist_mutex_trylock(&g_ri->m), EBUSY);
    TH_CHECK_RC(dist_rwlock_tryrdlock(&g_ri->rw), EBUSY);
    TH_CHECK_RC(dist_sem_trywait(&g_ri->s), EAGAIN);
    TH_CHECK_RC(dist_cond_signal(&g_ri->c), 0);   /* wakes the parent's waiter */
    /* What the memory was before is forgotten here: four objects known. */
    int err = 0;
    dl_proc_t *pr = dl_proc_get(&err);
    TH_CHECK(pr && pr->objs.count == 4);
    th_send(a->up, 5, 0, 0, 0);
    RI_WAIT(a->down, 6);
    return 0;
}

static int ri_send(int fd, int tag)
{
    th_send(fd, tag, 0, 0, 0);
    return 0;
}

/* The parent's waiter on the condition's second name. */
typedef struct ri_wait { dist_mutex_t m; int rc; } ri_wait_t;

static int ri_condwait(void *p)
{
    ri_wait_t *w = p;
    struct timespec ts = th_abstime_ms(20000);
    int rc = dist_mutex_lock(&w->m);
    if (rc)
        return w->rc = rc;
    w->rc = dist_cond_timedwait(&g_ri->c, &w->m, &ts);
    dist_mutex_unlock(&w->m);
    return w->rc;
}

static void ri_init_all(const char *base)
{
    char n[128];
    snprintf(n, sizeof n, "%s-m", base);
    TH_ASSERT_RC(dist_mutex_init(&g_ri->m, n, NULL), 0);
    snprintf(n, sizeof n, "%s-rw", base);
    TH_ASSERT_RC(dist_rwlock_init(&g_ri->rw, n, NULL), 0);
    snprintf(n, sizeof n, "%s-c", base);
    TH_ASSERT_RC(dist_cond_init(&g_ri->c, n, NULL), 0);
    snprintf(n, sizeof n, "%s-s", base);
    TH_ASSERT_RC(dist_sem_init(&g_ri->s, n, 1, 0), 0);
}

static void ri_destroy_all(void)
{
    TH_ASSERT_RC(dist_mutex_destroy(&g_ri->m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&g_ri->rw), 0);
    TH_ASSERT_RC(dist_cond_destroy(&g_ri->c), 0);
    TH_ASSERT_RC(dist_sem_destroy(&g_ri->s), 0);
}

/* One round: the objects are first initialized before the sibling is
 * forked (first_before) or after; the second initialization is the
 * parent's, with no fork between the two. */
static void reinit_round(int first_before)
{
    th_name(g_ri_a, sizeof g_ri_a, "reinit-a");
    th_name(g_ri_b, sizeof g_ri_b, "reinit-b");
    if (first_before)
        ri_init_all(g_ri_a);

    th_pipe_t up, down;
    th_pipe_open(&up);
    th_pipe_open(&down);
    struct fork_arg a = { up.wr, down.rd, 0, -1 };
    pid_t pid = th_fork_child(reinit_sibling, &a);
    if (!first_before)
        ri_init_all(g_ri_a);
    ri_send(down.wr, 0);
    th_msg_t m;
    if (th_recv(up.rd, &m, 30000) != 0 || m.tag != 1)
        fail_msg("the sibling did not use the objects (status %d)", th_wait_child_ms(pid, 1000));

    ri_destroy_all();
    ri_send(down.wr, 2);
    if (th_recv(up.rd, &m, 30000) != 0 || m.tag != 3)
        fail_msg("the sibling's calls on destroyed objects (status %d)",
                 th_wait_child_ms(pid, 1000));

    /* The same memory, initialized again under other names, held here. */
    ri_init_all(g_ri_b);
    TH_ASSERT_RC(dist_mutex_lock(&g_ri->m), 0);
    TH_ASSERT_RC(dist_rwlock_wrlock(&g_ri->rw), 0);
    TH_ASSERT_RC(dist_sem_trywait(&g_ri->s), 0);
    ri_wait_t w;
    char wn[128];
    snprintf(wn, sizeof wn, "%s-cm", g_ri_b);
    TH_ASSERT_RC(dist_mutex_init(&w.m, wn, NULL), 0);
    dl_stats_t s0, s1;
    dl_stats_get(&s0);
    th_actor_t *t = th_actor_new();
    th_actor_post(t, ri_condwait, &w);
    int64_t end = th_now_ms() + 20000;
    do {
        th_sleep_ms(5);
        dl_stats_get(&s1);
    } while (s1.cond_waits == s0.cond_waits && th_now_ms() < end);
    assert_true(s1.cond_waits > s0.cond_waits);  /* the waiter is registered */

    ri_send(down.wr, 4);
    int got = th_recv(up.rd, &m, 30000);
    int st = got ? th_wait_child_ms(pid, 1000) : 0;
    if (got != 0 || m.tag != 5)
        fail_msg("the sibling took what the parent holds under the new names, or used the old "
                 "ones (status %d, see stderr)", st);
    int rc = -1;
    int woke = th_actor_wait(t, &rc, 25000);
    if (woke != 0 || rc != 0)
        fail_msg("the sibling's signal did not reach the condition's new name (the waiter "
                 "returned %s)", woke ? "nothing in 25 s" : th_errname(rc));
    th_actor_free(t);

    /* The first names are as the sibling left them: free. */
    th_proc_t h;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    char n[128];
    snprintf(n, sizeof n, "%s-m", g_ri_a);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_TRYLOCK, n), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, n), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    dist_sem_t old;
    snprintf(n, sizeof n, "%s-s", g_ri_a);
    TH_ASSERT_RC(dist_sem_init(&old, n, 1, 0), 0);
    int v = -1;
    TH_ASSERT_RC(dist_sem_getvalue(&old, &v), 0);
    assert_int_equal(v, 1);
    TH_ASSERT_RC(dist_sem_destroy(&old), 0);

    ri_send(down.wr, 6);
    TH_ASSERT_CHILD_OK(pid);
    th_pipe_close(&up);
    th_pipe_close(&down);
    TH_ASSERT_RC(dist_mutex_unlock(&g_ri->m), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&g_ri->rw), 0);
    TH_ASSERT_RC(dist_sem_post(&g_ri->s), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&w.m), 0);
    ri_destroy_all();
}

/* pthreads lets a process destroy an object in shared memory and
 * initialize it again, under another name here: a sibling that had used
 * it must then use the new one (not what its process resolved the memory
 * to before), and a destroyed one is EINVAL to it. */
static void test_shared_reinit(void **state)
{
    g_ri = mmap(NULL, sizeof *g_ri, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(g_ri != MAP_FAILED);
    for (int round = 0; round < 2; round++) {
        print_message("round %d: first initialized %s the fork\n", round,
                      round ? "after" : "before");
        reinit_round(round == 0);
    }
    munmap(g_ri, sizeof *g_ri);
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
        TH_TEST(test_shared_reinit),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
