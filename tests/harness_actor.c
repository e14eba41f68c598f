/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_actor.c - see harness_actor.h. */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>

/* ------------------------------------------------------------------- actors */

struct th_actor {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    th_fn fn;
    void *arg;
    int posted, done, quit, rc;
    pid_t tid;
};

static void *actor_main(void *p)
{
    th_actor_t *a = p;
    pthread_mutex_lock(&a->mu);
    a->tid = (pid_t)syscall(SYS_gettid);
    pthread_cond_broadcast(&a->cv);
    for (;;) {
        while (!a->posted && !a->quit)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->posted) {
            th_fn fn = a->fn;
            void *arg = a->arg;
            pthread_mutex_unlock(&a->mu);
            int rc = fn(arg);
            pthread_mutex_lock(&a->mu);
            a->rc = rc;
            a->posted = 0;
            a->done = 1;
            pthread_cond_broadcast(&a->cv);
            continue;
        }
        if (a->quit)
            break;
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

th_actor_t *th_actor_new(void)
{
    th_actor_t *a = calloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&a->thread, NULL, actor_main, a) != 0)
        th_die("pthread_create");
    pthread_mutex_lock(&a->mu);
    while (!a->tid)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    return a;
}

pid_t th_actor_tid(th_actor_t *a)
{
    return a->tid;
}

void th_actor_post(th_actor_t *a, th_fn fn, void *arg)
{
    pthread_mutex_lock(&a->mu);
    a->fn = fn;
    a->arg = arg;
    a->done = 0;
    a->posted = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

int th_actor_wait(th_actor_t *a, int *rc, long timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (int64_t)(timeout_ms % 1000) * 1000000;
    ts.tv_sec += timeout_ms / 1000 + ns / 1000000000;
    ts.tv_nsec = (long)(ns % 1000000000);
    pthread_mutex_lock(&a->mu);
    int ret = 0;
    while (!a->done) {
        if (pthread_cond_timedwait(&a->cv, &a->mu, &ts) == ETIMEDOUT) {
            ret = a->done ? 0 : -1;
            break;
        }
    }
    if (ret == 0 && rc)
        *rc = a->rc;
    pthread_mutex_unlock(&a->mu);
    return ret;
}

int th_actor_call(th_actor_t *a, th_fn fn, void *arg)
{
    th_actor_post(a, fn, arg);
    int rc;
    if (th_actor_wait(a, &rc, 10000) != 0)
        return TH_WAIT_TIMEOUT;
    return rc;
}

void th_actor_free(th_actor_t *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->quit = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* -------------------------------------------------------------- actor calls */

int th_do_lock(void *p)
{
    th_lockcall_t *c = p;
    int rc = dist_mutex_lock(c->m);
    c->t_done_us = th_now_us();
    return rc;
}

int th_do_timedlock(void *p)
{
    th_lockcall_t *c = p;
    int rc = dist_mutex_timedlock(c->m, &c->ts);
    c->t_done_us = th_now_us();
    return rc;
}

int th_do_trylock(void *p)
{
    return dist_mutex_trylock(((th_lockcall_t *)p)->m);
}

int th_do_unlock(void *p)
{
    return dist_mutex_unlock(((th_lockcall_t *)p)->m);
}

int th_do_rdlock(void *p)
{
    th_lockcall_t *c = p;
    int rc = dist_rwlock_rdlock(c->rw);
    c->t_done_us = th_now_us();
    return rc;
}

int th_do_wrlock(void *p)
{
    th_lockcall_t *c = p;
    int rc = dist_rwlock_wrlock(c->rw);
    c->t_done_us = th_now_us();
    return rc;
}

int th_do_tryrdlock(void *p)
{
    return dist_rwlock_tryrdlock(((th_lockcall_t *)p)->rw);
}

int th_do_trywrlock(void *p)
{
    return dist_rwlock_trywrlock(((th_lockcall_t *)p)->rw);
}

int th_do_rwunlock(void *p)
{
    return dist_rwlock_unlock(((th_lockcall_t *)p)->rw);
}

