/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_rwlock.c - dist_rwlock_t: shared readers across processes and
 * threads, exclusive writers, writer preference, reentrance rules, unlock of
 * the latest hold, no torn reads, read-unlock cost independent of the
 * number of readers, wake-up of readers and writers, progress of the
 * threads queued for it.
 */
#include "harness.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static void test_readers_share_across_processes(void **state)
{
    char name[128];
    th_name(name, sizeof name, "rshare");
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    th_proc_t a, b, c;
    assert_int_equal(th_proc_start(&a, NULL), 0);
    assert_int_equal(th_proc_start(&b, NULL), 0);
    assert_int_equal(th_proc_start(&c, NULL), 0);

    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_RW_TRYRDLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&b, TH_RW_RDLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&c, TH_RW_TRYWRLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_RW_UNLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&c, TH_RW_TRYWRLOCK, name), EBUSY);   /* b still reads */
    TH_ASSERT_RC(th_proc_op(&b, TH_RW_UNLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&c, TH_RW_TRYWRLOCK, name), 0);
    TH_ASSERT_RC(dist_rwlock_tryrdlock(&rw), EBUSY);
    TH_ASSERT_RC(th_proc_op(&c, TH_RW_UNLOCK, name), 0);
    TH_ASSERT_RC(dist_rwlock_tryrdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), EPERM);
    assert_int_equal(th_proc_stop(&a), 0);
    assert_int_equal(th_proc_stop(&b), 0);
    assert_int_equal(th_proc_stop(&c), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* Readers of one process hold at the same time: all three meet inside. */
struct par_arg { dist_rwlock_t *rw; pthread_mutex_t mu; pthread_cond_t cv; int inside, max; };

static int par_reader(void *p)
{
    struct par_arg *a = p;
    int rc = dist_rwlock_rdlock(a->rw);
    if (rc)
        return rc;
    pthread_mutex_lock(&a->mu);
    a->inside++;
    if (a->inside > a->max)
        a->max = a->inside;
    pthread_cond_broadcast(&a->cv);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    while (a->max < 3)
        if (pthread_cond_timedwait(&a->cv, &a->mu, &ts) == ETIMEDOUT)
            break;
    a->inside--;
    pthread_mutex_unlock(&a->mu);
    return dist_rwlock_unlock(a->rw);
}

static void test_readers_share_across_threads(void **state)
{
    char name[128];
    th_name(name, sizeof name, "rthreads");
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    struct par_arg a = { .rw = &rw };
    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);
    th_actor_t *t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = th_actor_new();
        th_actor_post(t[i], par_reader, &a);
    }
    for (int i = 0; i < 3; i++) {
        int rc = -1;
        assert_int_equal(th_actor_wait(t[i], &rc, 15000), 0);
        TH_ASSERT_RC(rc, 0);
        th_actor_free(t[i]);
    }
    if (a.max != 3)
        fail_msg("at most %d of 3 reader threads held the read lock at once", a.max);

    /* a reader thread and another reader thread with a writer process out */
    th_proc_t w;
    assert_int_equal(th_proc_start(&w, NULL), 0);
    th_actor_t *b = th_actor_new();
    th_lockcall_t c = { .rw = &rw };
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(th_actor_call(b, th_do_tryrdlock, &c), 0);
    TH_ASSERT_RC(th_proc_op(&w, TH_RW_TRYWRLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&w, TH_RW_TRYWRLOCK, name), EBUSY);   /* the thread still reads */
    TH_ASSERT_RC(th_actor_call(b, th_do_rwunlock, &c), 0);
    TH_ASSERT_RC(th_proc_op(&w, TH_RW_TRYWRLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&w, TH_RW_UNLOCK, name), 0);
    th_actor_free(b);
    assert_int_equal(th_proc_stop(&w), 0);
    pthread_mutex_destroy(&a.mu);
    pthread_cond_destroy(&a.cv);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

static void test_writer_excludes_everyone(void **state)
{
    char name[128];
    th_name(name, sizeof name, "wexcl");
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .rw = &rw };

    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, name), EBUSY);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYWRLOCK, name), EBUSY);
    TH_ASSERT_RC(th_proc_opa(&p, TH_RW_TIMEDRDLOCK, name, 200, NULL), ETIMEDOUT);
    TH_ASSERT_RC(th_proc_opa(&p, TH_RW_TIMEDWRLOCK, name, 200, NULL), ETIMEDOUT);
    TH_ASSERT_RC(th_actor_call(t, th_do_tryrdlock, &c), EBUSY);
    TH_ASSERT_RC(th_actor_call(t, th_do_trywrlock, &c), EBUSY);
    TH_ASSERT_RC(th_actor_call(t, th_do_rwunlock, &c), EPERM);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);

    /* and readers exclude writers */
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_RDLOCK, name), 0);
    TH_ASSERT_RC(dist_rwlock_trywrlock(&rw), EBUSY);
    struct timespec ts = th_abstime_ms(300);
    int64_t t0 = th_now_ms();
    TH_ASSERT_RC(dist_rwlock_timedwrlock(&rw, &ts), ETIMEDOUT);
    int64_t el = th_now_ms() - t0;
    if (el < 250 || el > 2500)
        fail_msg("timedwrlock(now+300ms) returned after %lld ms", (long long)el);
    /* the writer that gave up no longer holds readers back */
    TH_ASSERT_RC(th_actor_call(t, th_do_tryrdlock, &c), 0);
    TH_ASSERT_RC(th_actor_call(t, th_do_rwunlock, &c), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);
    TH_ASSERT_RC(th_actor_call(t, th_do_trywrlock, &c), 0);
    TH_ASSERT_RC(th_actor_call(t, th_do_rwunlock, &c), 0);

    th_actor_free(t);
    assert_int_equal(th_proc_stop(&p), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* A waiting writer blocks new readers of other processes and threads, but
 * not more read holds by a thread that already reads. */
static void test_waiting_writer_blocks_new_readers(void **state)
{
    char name[128];
    th_name(name, sizeof name, "wpref");
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    th_proc_t w, r1, r2;
    assert_int_equal(th_proc_start(&w, NULL), 0);
    assert_int_equal(th_proc_start(&r1, NULL), 0);
    assert_int_equal(th_proc_start(&r2, NULL), 0);
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .rw = &rw };
    th_res_t res;

    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&r2, TH_RW_RDLOCK, name), 0);          /* reads before the writer */
    assert_int_equal(th_proc_op_async(&w, TH_RW_WRLOCK, name), 0);
    th_wait_queued(name, 1);
    th_sleep_ms(50);

    TH_ASSERT_RC(th_proc_op(&r1, TH_RW_TRYRDLOCK, name), EBUSY);    /* other process */
    TH_ASSERT_RC(th_proc_opa(&r1, TH_RW_TIMEDRDLOCK, name, 200, NULL), ETIMEDOUT);
    TH_ASSERT_RC(th_actor_call(t, th_do_tryrdlock, &c), EBUSY);      /* other thread */
    TH_ASSERT_RC(dist_rwlock_tryrdlock(&rw), 0);                     /* a reader may take more */
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&r2, TH_RW_TRYRDLOCK, name), 0);        /* in another process too */
    assert_int_equal(th_proc_recv(&w, &res, 0), -1);                 /* the writer still waits */

    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&r2, TH_RW_UNLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&r2, TH_RW_UNLOCK, name), 0);
    assert_int_equal(th_proc_recv(&w, &res, 100), -1);               /* we still read */
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    assert_int_equal(th_proc_recv(&w, &res, 10000), 0);
    TH_ASSERT_RC(res.rc, 0);
    if ((res.t_done_us - t_rel) / 1000 > 1000)
        fail_msg("the writer got the lock %lld ms after the last reader left",
                 (long long)((res.t_done_us - t_rel) / 1000));
    TH_ASSERT_RC(th_proc_op(&r1, TH_RW_TRYRDLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_rwlock_tryrdlock(&rw), EBUSY);
    TH_ASSERT_RC(th_proc_op(&w, TH_RW_UNLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&r1, TH_RW_TRYRDLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&r1, TH_RW_UNLOCK, name), 0);

    th_actor_free(t);
    assert_int_equal(th_proc_stop(&w), 0);
    assert_int_equal(th_proc_stop(&r1), 0);
    assert_int_equal(th_proc_stop(&r2), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* The same with the waiting writer a thread of this process. */
static void test_local_waiting_writer_blocks_local_readers(void **state)
{
    char name[128];
    th_name(name, sizeof name, "wlocal");
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    th_actor_t *w = th_actor_new(), *b = th_actor_new();
    th_lockcall_t cw = { .rw = &rw }, cb = { .rw = &rw };

    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    th_actor_post(w, th_do_wrlock, &cw);
    th_sleep_ms(200);                                     /* w waits for us */
    TH_ASSERT_RC(th_actor_call(b, th_do_tryrdlock, &cb), EBUSY);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);            /* we already read: more is fine */
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    int rc = -1;
    assert_int_equal(th_actor_wait(w, &rc, 100), -1);
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    assert_int_equal(th_actor_wait(w, &rc, 10000), 0);
    TH_ASSERT_RC(rc, 0);
    if ((cw.t_done_us - t_rel) / 1000 > 1000)
        fail_msg("the writer thread got the lock %lld ms after the reader left",
                 (long long)((cw.t_done_us - t_rel) / 1000));
    TH_ASSERT_RC(th_actor_call(b, th_do_tryrdlock, &cb), EBUSY);
    TH_ASSERT_RC(dist_rwlock_tryrdlock(&rw), EBUSY);
    TH_ASSERT_RC(th_actor_call(w, th_do_rwunlock, &cw), 0);
    TH_ASSERT_RC(th_actor_call(b, th_do_tryrdlock, &cb), 0);
    TH_ASSERT_RC(th_actor_call(b, th_do_rwunlock, &cb), 0);
    th_actor_free(w);
    th_actor_free(b);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

static void test_reentrance_rules(void **state)
{
    char name[128];
    th_name(name, sizeof name, "rwreent");
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);

    /* read -> read */
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_tryrdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYWRLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), EPERM);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYWRLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);

    /* write -> write */
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_trywrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), EPERM);

    /* write -> read */
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_tryrdlock(&rw), 0);
    struct timespec ts = th_abstime_ms(200);
    TH_ASSERT_RC(dist_rwlock_timedrdlock(&rw, &ts), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), EPERM);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYWRLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);

    /* read -> write: no upgrades */
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), EDEADLK);
    ts = th_abstime_ms(200);
    TH_ASSERT_RC(dist_rwlock_timedwrlock(&rw, &ts), EDEADLK);
    /* as pthread_rwlock_trywrlock: a try never says EDEADLK */
    TH_ASSERT_RC(dist_rwlock_trywrlock(&rw), EBUSY);
    /* the read hold is intact */
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYWRLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), EPERM);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYWRLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);

    assert_int_equal(th_proc_stop(&p), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* Unlock releases the calling thread's latest hold: write, read, unlock
 * leaves the write hold. */
static void test_unlock_releases_latest_hold(void **state)
{
    char name[128];
    th_name(name, sizeof name, "latest");
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);

    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);                      /* the read hold */
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, name), EBUSY);   /* still write-held */
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYWRLOCK, name), EBUSY);
    /* if only a read hold were left this would be EDEADLK */
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);                      /* the first write hold */
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), EPERM);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);

    /* write, read, read, unlock, unlock: write left; then free */
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYWRLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);

    /* write, read, write, read: four runs, more than a holder's record
     * keeps in itself (holds.c moves them to the heap); each unlock leaves
     * the lock write-held until the last */
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    for (int i = 0; i < 3; i++) {
        TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
        TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYRDLOCK, name), EBUSY);
    }
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), EPERM);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_TRYWRLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);

    /* write, read, unlock(read), unlock(write) with a reader of another
     * process waiting: it gets in only after the second unlock */
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    assert_int_equal(th_proc_op_async(&p, TH_RW_RDLOCK, name), 0);
    th_wait_queued(name, 1);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    th_res_t res;
    assert_int_equal(th_proc_recv(&p, &res, 300), -1);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    assert_int_equal(th_proc_recv(&p, &res, 10000), 0);
    TH_ASSERT_RC(res.rc, 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_RW_UNLOCK, name), 0);

    assert_int_equal(th_proc_stop(&p), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* Writers write a two-field record in two steps; readers must never see
 * the fields differ. */
struct torn_arg { const char *name; const char *ka, *kb; int writer; int iters; };

static int torn_child(void *p)
{
    struct torn_arg *a = p;
    dist_rwlock_t rw;
    TH_CHECK_RC(dist_rwlock_init(&rw, a->name, NULL), 0);
    int reads = 0;
    for (int i = 0; i < a->iters; i++) {
        if (a->writer) {
            TH_CHECK_RC(dist_rwlock_wrlock(&rw), 0);
            char v[64];
            snprintf(v, sizeof v, "%d:%d", (int)getpid(), i);
            th_cmd_do("SET %s %s", a->ka, v);
            th_sleep_us(500);
            th_cmd_do("SET %s %s", a->kb, v);
            TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
        } else {
            TH_CHECK_RC(dist_rwlock_rdlock(&rw), 0);
            redisReply *ra = th_cmd("GET %s", a->ka);
            th_sleep_us(200);
            redisReply *rb = th_cmd("GET %s", a->kb);
            int same = ra->type == rb->type &&
                       (ra->type != REDIS_REPLY_STRING || strcmp(ra->str, rb->str) == 0);
            if (!same)
                fprintf(stderr, "torn read: a=%s b=%s\n", ra->str ? ra->str : "nil",
                        rb->str ? rb->str : "nil");
            TH_CHECK(same);
            freeReplyObject(ra);
            freeReplyObject(rb);
            reads++;
            TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
        }
    }
    return 0;
}

static void test_no_torn_reads(void **state)
{
    char name[128], ka[200], kb[200];
    th_name(name, sizeof name, "torn");
    snprintf(ka, sizeof ka, "test:%s:a", name);
    snprintf(kb, sizeof kb, "test:%s:b", name);
    struct torn_arg w = { name, ka, kb, 1, 25 }, r = { name, ka, kb, 0, 50 };
    pid_t pids[5];
    pids[0] = th_fork_child(torn_child, &w);
    pids[1] = th_fork_child(torn_child, &r);
    pids[2] = th_fork_child(torn_child, &w);
    pids[3] = th_fork_child(torn_child, &r);
    pids[4] = th_fork_child(torn_child, &r);
    for (int i = 0; i < 5; i++)
        TH_ASSERT_CHILD_OK(pids[i]);
    redisReply *ra = th_cmd("GET %s", ka), *rb = th_cmd("GET %s", kb);
    assert_int_equal(ra->type, REDIS_REPLY_STRING);
    assert_string_equal(ra->str, rb->str);
    freeReplyObject(ra);
    freeReplyObject(rb);
}

/* Redis commands run (inside scripts too) for one read unlock, with 1 and
 * with 30 other readers holding: must not grow with the readers. */
static long long min_unlock_calls(dist_rwlock_t *rw)
{
    long long best = -1;
    for (int i = 0; i < 8; i++) {
        if (dist_rwlock_rdlock(rw) != 0)
            return -1;
        long long c0 = th_redis_calls();
        int rc = dist_rwlock_unlock(rw);
        long long c1 = th_redis_calls();
        if (rc != 0)
            return -1;
        long long d = c1 - c0;
        if (best < 0 || d < best)
            best = d;
    }
    return best;
}

static double evalsha_usec_per_call(void)
{
    redisReply *r = th_cmd("INFO commandstats");
    double v = -1;
    const char *p = r->str ? strstr(r->str, "cmdstat_evalsha:") : NULL;
    if (p && (p = strstr(p, "usec_per_call=")) != NULL)
        v = strtod(p + 14, NULL);
    freeReplyObject(r);
    return v;
}

static void test_read_unlock_cost_flat(void **state)
{
    enum { NR = 30 };
    char name[128];
    th_name(name, sizeof name, "rcost");
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    static th_proc_t p[NR];
    for (int i = 0; i < NR; i++)
        assert_int_equal(th_proc_start(&p[i], NULL), 0);

    TH_ASSERT_RC(th_proc_op(&p[0], TH_RW_RDLOCK, name), 0);
    th_cmd_do("CONFIG RESETSTAT");
    long long one = min_unlock_calls(&rw);
    double us_one = evalsha_usec_per_call();
    for (int i = 1; i < NR; i++)
        TH_ASSERT_RC(th_proc_op(&p[i], TH_RW_RDLOCK, name), 0);
    char rkey[300];
    th_key(rkey, sizeof rkey, name, ":r");
    long long holders = th_cmd_ll("ZCARD %s", rkey);
    th_cmd_do("CONFIG RESETSTAT");
    long long many = min_unlock_calls(&rw);
    double us_many = evalsha_usec_per_call();
    print_message("read unlock: %lld Redis commands with 1 other reader, %lld with %d "
                  "(reader zset holds %lld); EVALSHA usec/call %.1f vs %.1f\n",
                  one, many, NR, holders, us_one, us_many);
    assert_true(one > 0);
    if (many > one + 3 || many >= 3 * one)
        fail_msg("a read unlock runs %lld commands with %d readers, %lld with 1", many, NR, one);
    for (int i = 0; i < NR; i++) {
        TH_ASSERT_RC(th_proc_op(&p[i], TH_RW_UNLOCK, name), 0);
        assert_int_equal(th_proc_stop(&p[i]), 0);
    }
    TH_ASSERT_RC(dist_rwlock_trywrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* A writer's release wakes every waiting reader (of several processes) by
 * push; the last reader's release wakes a waiting writer. */
static void test_release_wakes_readers_and_writer(void **state)
{
    if (getenv("TH_REDLOCK")) {
        /* redlock:// keeps no queue and pushes no grants: waiters ask
         * again after a short random pause (docs/PROTOCOL.md). */
        skip();
    }
    enum { NR = 3 };
    char name[128];
    th_name(name, sizeof name, "rwwake");
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    th_proc_t p[NR];
    for (int i = 0; i < NR; i++)
        assert_int_equal(th_proc_start(&p[i], NULL), 0);
    th_res_t res;

    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    for (int i = 0; i < NR; i++) {
        assert_int_equal(th_proc_op_async(&p[i], TH_RW_RDLOCK, name), 0);
    }
    th_wait_queued(name, NR);
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    for (int i = 0; i < NR; i++) {
        assert_int_equal(th_proc_recv(&p[i], &res, 15000), 0);
        TH_ASSERT_RC(res.rc, 0);
        int64_t el = (res.t_done_us - t_rel) / 1000;
        if (el > 500)
            fail_msg("reader %d woke %lld ms after the writer's release", i, (long long)el);
    }
    /* all read at once now */
    TH_ASSERT_RC(dist_rwlock_trywrlock(&rw), EBUSY);

    /* a writer thread waits; the readers leave one by one */
    th_actor_t *t = th_actor_new();
    th_lockcall_t c = { .rw = &rw };
    th_actor_post(t, th_do_wrlock, &c);
    th_wait_queued(name, 1);
    for (int i = 0; i < NR - 1; i++)
        TH_ASSERT_RC(th_proc_op(&p[i], TH_RW_UNLOCK, name), 0);
    int rc = -1;
    assert_int_equal(th_actor_wait(t, &rc, 200), -1);        /* one reader left */
    t_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(&p[NR - 1], TH_RW_UNLOCK, name), 0);
    assert_int_equal(th_actor_wait(t, &rc, 15000), 0);
    TH_ASSERT_RC(rc, 0);
    int64_t el = (c.t_done_us - t_rel) / 1000;
    if (el > 500)
        fail_msg("the writer woke %lld ms after the last reader left", (long long)el);
    TH_ASSERT_RC(th_actor_call(t, th_do_rwunlock, &c), 0);
    th_actor_free(t);
    for (int i = 0; i < NR; i++) {
        TH_ASSERT_RC(th_proc_opa(&p[i], TH_STATS, name, 0, &res), 0);
        if (res.fence != 0)
            fail_msg("reader %d: %llu waits ended by the fallback timer", i,
                     (unsigned long long)res.fence);
        assert_int_equal(th_proc_stop(&p[i]), 0);
    }
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* Readers and writers of one process queue for one rwlock: an unlock
 * wakes one waiting writer while only writers wait, and every waiter
 * while a reader waits (a waiting writer holds new readers back: lock.c,
 * admit_next).  Writers loop tightly (streaks that step aside), one
 * writer holds the lock a while now and then, readers read and stay away
 * a little; none may be left asleep beside a free lock. */
#define RQ_WRITERS 4
#define RQ_READERS 3
#define RQ_ITERS 300

typedef struct rq {
    dist_rwlock_t rw;
    int writing, reading;         /* atomic: who is inside */
    long writes;                  /* under the write lock */
    int overlaps, failures, done; /* atomic */
} rq_t;

typedef struct rq_thread {
    rq_t *q;
    int idx;                      /* < RQ_WRITERS: a writer */
} rq_thread_t;

static void *rq_thread(void *arg)
{
    rq_thread_t *t = arg;
    rq_t *q = t->q;
    int writer = t->idx < RQ_WRITERS;
    for (int i = 0; i < RQ_ITERS; i++) {
        int rc = writer ? dist_rwlock_wrlock(&q->rw) : dist_rwlock_rdlock(&q->rw);
        if (rc) {
            fprintf(stderr, "thread %d: lock: %s (%s)\n", t->idx, th_errname(rc),
                    dist_lasterror());
            __atomic_add_fetch(&q->failures, 1, __ATOMIC_RELAXED);
            break;
        }
        if (writer) {
            if (__atomic_add_fetch(&q->writing, 1, __ATOMIC_SEQ_CST) != 1 ||
                __atomic_load_n(&q->reading, __ATOMIC_SEQ_CST) != 0)
                __atomic_add_fetch(&q->overlaps, 1, __ATOMIC_RELAXED);
            q->writes++;
            if (t->idx == 0 && i % 50 == 0)
                th_sleep_us(3000);
            __atomic_sub_fetch(&q->writing, 1, __ATOMIC_SEQ_CST);
        } else {
            __atomic_add_fetch(&q->reading, 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&q->writing, __ATOMIC_SEQ_CST) != 0)
                __atomic_add_fetch(&q->overlaps, 1, __ATOMIC_RELAXED);
            __atomic_sub_fetch(&q->reading, 1, __ATOMIC_SEQ_CST);
        }
        rc = dist_rwlock_unlock(&q->rw);
        if (rc) {
            fprintf(stderr, "thread %d: unlock: %s (%s)\n", t->idx, th_errname(rc),
                    dist_lasterror());
            __atomic_add_fetch(&q->failures, 1, __ATOMIC_RELAXED);
            break;
        }
        if (!writer && i % 10 == 0)
            th_sleep_us(200);
    }
    __atomic_add_fetch(&q->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_local_queue_progress(void **state)
{
    enum { N = RQ_WRITERS + RQ_READERS };
    char name[128];
    th_name(name, sizeof name, "rwqueue");
    static rq_t q;
    memset(&q, 0, sizeof q);
    TH_ASSERT_RC(dist_rwlock_init(&q.rw, name, NULL), 0);
    pthread_t th[N];
    rq_thread_t ta[N];
    for (int i = 0; i < N; i++) {
        ta[i] = (rq_thread_t){ &q, i };
        pthread_create(&th[i], NULL, rq_thread, &ta[i]);
    }
    int64_t until = th_now_ms() + 20000;
    while (__atomic_load_n(&q.done, __ATOMIC_SEQ_CST) < N && th_now_ms() < until)
        th_sleep_us(10000);
    int done = __atomic_load_n(&q.done, __ATOMIC_SEQ_CST);
    if (done < N)
        fail_msg("%d of %d threads still in their loops after 20 s, %ld of %d writes done: "
                 "waiters of a free lock were left asleep", N - done, N, q.writes,
                 RQ_WRITERS * RQ_ITERS);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(q.failures, 0);
    assert_int_equal(q.overlaps, 0);
    assert_int_equal(q.writes, RQ_WRITERS * RQ_ITERS);
    TH_ASSERT_RC(dist_rwlock_destroy(&q.rw), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_readers_share_across_processes),
        TH_TEST(test_readers_share_across_threads),
        TH_TEST(test_writer_excludes_everyone),
        TH_TEST(test_waiting_writer_blocks_new_readers),
        TH_TEST(test_local_waiting_writer_blocks_local_readers),
        TH_TEST(test_reentrance_rules),
        TH_TEST(test_unlock_releases_latest_hold),
        TH_TEST(test_no_torn_reads),
        TH_TEST(test_read_unlock_cost_flat),
        TH_TEST(test_release_wakes_readers_and_writer),
        TH_TEST(test_local_queue_progress),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
