/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * edges.c - the edges of the one-line port (<distlock/pthread.h>), ported
 * as a program would be: what it names, and what it refuses.
 * tests/port/test_port.sh runs each mode.
 *
 *   edges place MS        locks the static place_lock (named by its line),
 *                         prints "held", sleeps MS, unlocks
 *   edges named MS        the same for named_lock (DIST_NAME("edges-named", ...))
 *   edges twoinline       two initializers on one line, both used: stopped
 *   edges loop            a static array initialized in a loop: stopped
 *   edges loopnamed       the same, each named first: prints "ok"
 *   edges zeroed          a mutex from calloc, locked: stopped
 *   edges relock          a default mutex locked twice: prints the second's
 *                         answer (EDEADLK: no self-deadlock)
 *   edges protocol        setprotocol(PTHREAD_PRIO_INHERIT): ENOTSUP
 *   edges once            pthread_once is pthreads' own: prints "ran 1"
 *   edges condclock MS    a condition of pthread_condattr_setclock(CLOCK_MONOTONIC),
 *                         pthread_cond_timedwait of MS nobody signals: prints the
 *                         result, the ms waited, "early" if before MS
 *   edges sem             sem_init 1, sem_trywait twice, sem_post, sem_getvalue:
 *                         prints "ok EAGAIN value=1"
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>
#include <semaphore.h>
#include <distlock/pthread.h>

static pthread_mutex_t place_lock = PTHREAD_MUTEX_INITIALIZER;   /* EDGES_PLACE_LINE */
static pthread_mutex_t named_lock = DIST_NAME("edges-named", PTHREAD_MUTEX_INITIALIZER);
static pthread_mutex_t one = PTHREAD_MUTEX_INITIALIZER, two = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t arr[3];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ran;
static pthread_cond_t mono_cv;
static pthread_mutex_t mono_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t slots;

static const char *ename(int e)
{
    switch (e) {
    case 0: return "ok";
    case EDEADLK: return "EDEADLK";
    case ENOTSUP: return "ENOTSUP";
    case EBUSY: return "EBUSY";
    default: return strerror(e);
    }
}

static void hold(pthread_mutex_t *m, long ms)
{
    pthread_mutex_lock(m);
    printf("held\n");
    fflush(stdout);
    usleep((useconds_t)(ms * 1000));
    pthread_mutex_unlock(m);
}

static void run_once(void)
{
    ran++;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "place") == 0 && argc > 2) {
        hold(&place_lock, atol(argv[2]));
    } else if (strcmp(mode, "named") == 0 && argc > 2) {
        hold(&named_lock, atol(argv[2]));
    } else if (strcmp(mode, "twoinline") == 0) {
        pthread_mutex_lock(&one);
        pthread_mutex_unlock(&one);
        pthread_mutex_lock(&two);
        pthread_mutex_unlock(&two);
        printf("both used\n");
    } else if (strcmp(mode, "loop") == 0 || strcmp(mode, "loopnamed") == 0) {
        for (int i = 0; i < 3; i++) {
            if (mode[4]) {
                char name[32];
                snprintf(name, sizeof name, "edges-arr-%d", i);
                dist_pthread_name(&arr[i], name);
            }
            pthread_mutex_init(&arr[i], NULL);
        }
        for (int i = 0; i < 3; i++) {
            pthread_mutex_lock(&arr[i]);
            pthread_mutex_unlock(&arr[i]);
        }
        printf("ok\n");
    } else if (strcmp(mode, "zeroed") == 0) {
        pthread_mutex_t *m = calloc(1, sizeof *m);
        pthread_mutex_lock(m);
        printf("locked a zeroed mutex\n");
    } else if (strcmp(mode, "relock") == 0) {
        pthread_mutex_lock(&place_lock);
        printf("%s\n", ename(pthread_mutex_lock(&place_lock)));
        pthread_mutex_unlock(&place_lock);
    } else if (strcmp(mode, "protocol") == 0) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        printf("%s\n", ename(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT)));
    } else if (strcmp(mode, "condclock") == 0 && argc > 2) {
        long ms = atol(argv[2]);
        pthread_condattr_t a;
        pthread_condattr_init(&a);
        pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        pthread_cond_init(&mono_cv, &a);
        pthread_condattr_destroy(&a);
        struct timespec t0, at, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        at = t0;
        at.tv_sec += ms / 1000;
        at.tv_nsec += (ms % 1000) * 1000000L;
        if (at.tv_nsec >= 1000000000L) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&mono_lock);
        int rc;
        while ((rc = pthread_cond_timedwait(&mono_cv, &mono_lock, &at)) == 0)
            ;
        pthread_mutex_unlock(&mono_lock);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long waited = (long)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        printf("%s %ld%s\n", rc == ETIMEDOUT ? "ETIMEDOUT" : ename(rc), waited,
               waited < ms ? " early" : "");
    } else if (strcmp(mode, "sem") == 0) {
        sem_init(&slots, 0, 1);
        int a = sem_trywait(&slots);
        int b = sem_trywait(&slots);
        int e = errno;
        sem_post(&slots);
        int v = -1;
        sem_getvalue(&slots, &v);
        sem_destroy(&slots);
        printf("%s %s value=%d\n", a == 0 ? "ok" : "fail", b == -1 && e == EAGAIN ? "EAGAIN" : "?", v);
    } else if (strcmp(mode, "once") == 0) {
        pthread_once(&once, run_once);
        pthread_once(&once, run_once);
        printf("ran %d\n", ran);
    } else {
        fprintf(stderr, "usage: edges place|named MS | twoinline | loop | loopnamed | zeroed | "
                        "relock | protocol | once\n");
        return 2;
    }
    return 0;
}
