/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fence.c - fencing tokens: strictly increasing whenever the holding
 * process changes, EPERM without a hold, available on both lock kinds.
 */
#include "harness.h"

#include <errno.h>
#include <string.h>

#define FPROCS 4
#define FITERS 6

struct fence_arg { const char *name; const char *seqkey; int wr; int rwlock; };

static int fence_child(void *p)
{
    struct fence_arg *a = p;
    dist_mutex_t m;
    dist_rwlock_t rw;
    if (a->rwlock)
        TH_CHECK_RC(dist_rwlock_init(&rw, a->name, NULL), 0);
    else
        TH_CHECK_RC(dist_mutex_init(&m, a->name, NULL), 0);
    for (int i = 0; i < FITERS; i++) {
        uint64_t f = 0;
        if (a->rwlock) {
            TH_CHECK_RC(dist_rwlock_wrlock(&rw), 0);
            TH_CHECK_RC(dist_rwlock_getfence(&rw, &f), 0);
        } else {
            TH_CHECK_RC(dist_mutex_lock(&m), 0);
            TH_CHECK_RC(dist_mutex_getfence(&m, &f), 0);
        }
        long long seq = th_cmd_ll("INCR %s", a->seqkey);     /* acquisition order */
        th_send(a->wr, seq, (int64_t)f, getpid(), 0);
        if (a->rwlock)
            TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
        else
            TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    }
    return 0;
}

static int cmp_msg(const void *x, const void *y)
{
    const th_msg_t *a = x, *b = y;
    return a->tag < b->tag ? -1 : a->tag > b->tag;
}

static void run_fences(int rwlock)
{
    char name[128], seqkey[200];
    th_name(name, sizeof name, rwlock ? "fencerw" : "fence");
    snprintf(seqkey, sizeof seqkey, "test:%s:seq", name);
    th_pipe_t pp;
    th_pipe_open(&pp);
    struct fence_arg a = { name, seqkey, pp.wr, rwlock };
    pid_t pids[FPROCS];
    for (int i = 0; i < FPROCS; i++)
        pids[i] = th_fork_child(fence_child, &a);
    th_msg_t msgs[FPROCS * FITERS];
    for (int i = 0; i < FPROCS * FITERS; i++)
        if (th_recv(pp.rd, &msgs[i], 20000) != 0)
            fail_msg("only %d of %d acquisitions reported", i, FPROCS * FITERS);
    for (int i = 0; i < FPROCS; i++)
        TH_ASSERT_CHILD_OK(pids[i]);
    th_pipe_close(&pp);
    qsort(msgs, FPROCS * FITERS, sizeof msgs[0], cmp_msg);
    int changes = 0;
    for (int i = 1; i < FPROCS * FITERS; i++) {
        uint64_t prev = (uint64_t)msgs[i - 1].a, cur = (uint64_t)msgs[i].a;
        if (msgs[i].b != msgs[i - 1].b) {
            changes++;
            if (cur <= prev)
                fail_msg("acquisition %d by pid %lld got fence %llu, not above %llu of pid %lld",
                         i, (long long)msgs[i].b, (unsigned long long)cur,
                         (unsigned long long)prev, (long long)msgs[i - 1].b);
        } else if (cur < prev) {
            fail_msg("acquisition %d: fence went down from %llu to %llu", i,
                     (unsigned long long)prev, (unsigned long long)cur);
        }
    }
    print_message("%d acquisitions, %d changes of holding process\n", FPROCS * FITERS, changes);
    assert_true(changes >= 1);
}

static void test_fences_increase_mutex(void **state)
{
    run_fences(0);
}

static void test_fences_increase_rwlock(void **state)
{
    run_fences(1);
}

static int do_getfence(void *p)
{
    uint64_t f;
    return dist_mutex_getfence(p, &f);
}

static void test_getfence_without_hold(void **state)
{
    char name[128];
    th_name(name, sizeof name, "nofence");
    dist_mutex_t m;
    uint64_t f = 0, f2 = 0;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_getfence(&m, &f), EPERM);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_getfence(&m, &f), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);                 /* reentrant: same hold */
    TH_ASSERT_RC(dist_mutex_getfence(&m, &f2), 0);
    assert_true(f == f2);
    TH_ASSERT_RC(dist_mutex_getfence(&m, NULL), EINVAL);
    th_actor_t *t = th_actor_new();
    TH_ASSERT_RC(th_actor_call(t, do_getfence, &m), EPERM);   /* another thread holds nothing */
    th_actor_free(t);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_getfence(&m, &f), EPERM);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);

    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_getfence(&rw, &f), EPERM);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_getfence(&rw, &f), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_getfence(&rw, &f), EPERM);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* rwlock: writer, writer of another process, then readers of two processes:
 * each new holding process gets a greater fence. */
static void test_rwlock_fences(void **state)
{
    char name[128];
    th_name(name, sizeof name, "rwfence");
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    th_res_t r;

    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    uint64_t f1 = 0, f3 = 0;
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_getfence(&rw, &f1), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);

    TH_ASSERT_RC(th_proc_op(&p, TH_RW_WRLOCK, name), 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_RW_FENCE, name, 0, &r), 0);
    uint64_t f2 = r.fence;
    assert_true(f2 > f1);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);

    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_getfence(&rw, &f3), 0);
    assert_true(f3 > f2);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_RDLOCK, name), 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_RW_FENCE, name, 0, &r), 0);
    assert_true(r.fence > f3);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);

    /* a mutex and its fence survive between processes too */
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    uint64_t f5 = 0;
    TH_ASSERT_RC(dist_rwlock_getfence(&rw, &f5), 0);
    assert_true(f5 > r.fence);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
    assert_int_equal(th_proc_stop(&p), 0);
}

/* The fence counter lives in a metadata key that expires when the lock is
 * unused for long; even without it the next fence is greater. */
static void test_fence_survives_metadata_loss(void **state)
{
    char name[128], meta[300];
    th_name(name, sizeof name, "fencemeta");
    th_key(meta, sizeof meta, name, ":m");
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    uint64_t f1 = 0;
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_mutex_getfence(&m, &f1), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    long long pttl = th_cmd_ll("PTTL %s", meta);
    print_message("metadata key PTTL after use: %lld ms\n", pttl);
    th_cmd_do("DEL %s", meta);                        /* as if it had expired */
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    th_res_t r;
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_FENCE, name, 0, &r), 0);
    if (r.fence <= f1)
        fail_msg("fence %llu after the metadata was lost is not above the earlier %llu",
                 (unsigned long long)r.fence, (unsigned long long)f1);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_fences_increase_mutex),
        TH_TEST(test_fences_increase_rwlock),
        TH_TEST(test_getfence_without_hold),
        TH_TEST(test_rwlock_fences),
        TH_TEST(test_fence_survives_metadata_loss),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
