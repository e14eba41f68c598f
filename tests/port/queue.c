/* SPDX-License-Identifier: BSD-3-Clause */
/* queue.c - a bounded queue of jobs in memory, from the producer to the
 * workers, under a mutex and two conditions. */
#include "bank.h"

#define QSIZE 4

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_nonempty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t q_nonfull = PTHREAD_COND_INITIALIZER;
static long q[QSIZE];
static int q_head, q_len, q_closed;

void queue_put(long job)
{
    pthread_mutex_lock(&q_lock);
    while (q_len == QSIZE)
        pthread_cond_wait(&q_nonfull, &q_lock);
    q[(q_head + q_len++) % QSIZE] = job;
    pthread_cond_signal(&q_nonempty);
    pthread_mutex_unlock(&q_lock);
}

long queue_take(void)
{
    pthread_mutex_lock(&q_lock);
    while (q_len == 0 && !q_closed)
        pthread_cond_wait(&q_nonempty, &q_lock);
    long job = -1;
    if (q_len) {
        job = q[q_head];
        q_head = (q_head + 1) % QSIZE;
        q_len--;
        pthread_cond_signal(&q_nonfull);
    }
    pthread_mutex_unlock(&q_lock);
    return job;
}

void queue_close(void)
{
    pthread_mutex_lock(&q_lock);
    q_closed = 1;
    pthread_cond_broadcast(&q_nonempty);
    pthread_mutex_unlock(&q_lock);
}
