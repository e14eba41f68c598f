/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * posixlegacy.c - legacy code of the newer POSIX calls: a robust mutex
 * (pthread_mutexattr_setrobust, pthread_mutex_consistent), waits on the
 * monotonic clock (pthread_mutex_clocklock, pthread_rwlock_clock*lock,
 * pthread_cond_clockwait, a condition of pthread_condattr_setclock), no
 * distlock anywhere.  tests/preload/test_robust.sh and test_clocks.sh run
 * it with and without the interposer.  Every result is printed as the
 * errno's name ("ok" for 0).
 *
 *   posixlegacy robust-hold            g_robust_lock initialized robust, locked;
 *                                      prints "held" and waits to be killed
 *   posixlegacy robust-lock consistent|leave
 *                                      initializes it robust, locks it: prints the
 *                                      result; after EOWNERDEAD, "consistent" calls
 *                                      pthread_mutex_consistent (prints
 *                                      "consistent=R"); then unlocks ("unlock=R")
 *   posixlegacy robust-reinit          locks (prints the result), destroys,
 *                                      initializes again, locks (prints), unlocks
 *   posixlegacy hold mutex|rw MS       locks g_clock_lock or write-locks g_clock_rw,
 *                                      prints "held", sleeps MS, unlocks
 *   posixlegacy clock WHAT MS          a wait of MS on CLOCK_MONOTONIC: WHAT mutex
 *                                      (clocklock), rdlock, wrlock (clock*lock),
 *                                      cond (pthread_cond_clockwait on g_clock_cv),
 *                                      condmono (timedwait on g_mono_cv, initialized
 *                                      with a CLOCK_MONOTONIC attribute); prints the
 *                                      result, the ms waited (monotonic) and "early"
 *                                      if it timed out before MS
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t g_robust_lock;                     /* initialized at run time */
pthread_mutex_t g_clock_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t g_clock_rw = PTHREAD_RWLOCK_INITIALIZER;
pthread_cond_t g_clock_cv = PTHREAD_COND_INITIALIZER;
pthread_cond_t g_mono_cv;                          /* initialized at run time */

static const char *ename(int e)
{
    switch (e) {
    case 0: return "ok";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EINVAL: return "EINVAL";
    case EPERM: return "EPERM";
    case EBUSY: return "EBUSY";
    default: return strerror(e);
    }
}

static void init_robust(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    int rc = pthread_mutex_init(&g_robust_lock, &a);
    pthread_mutexattr_destroy(&a);
    if (rc) {
        fprintf(stderr, "posixlegacy: pthread_mutex_init: %s\n", ename(rc));
        exit(2);
    }
}

static int robust_lock(const char *after)
{
    init_robust();
    int rc = pthread_mutex_lock(&g_robust_lock);
    printf("%s", ename(rc));
    if (rc == EOWNERDEAD && strcmp(after, "consistent") == 0)
        printf(" consistent=%s", ename(pthread_mutex_consistent(&g_robust_lock)));
    if (rc == 0 || rc == EOWNERDEAD)
        printf(" unlock=%s", ename(pthread_mutex_unlock(&g_robust_lock)));
    printf("\n");
    return 0;
}

static int robust_reinit(void)
{
    init_robust();
    int rc = pthread_mutex_lock(&g_robust_lock);
    printf("%s", ename(rc));
    if (rc == 0 || rc == EOWNERDEAD)
        pthread_mutex_unlock(&g_robust_lock);
    printf(" destroy=%s", ename(pthread_mutex_destroy(&g_robust_lock)));
    init_robust();
    rc = pthread_mutex_lock(&g_robust_lock);
    printf(" again=%s", ename(rc));
    if (rc == 0 || rc == EOWNERDEAD)
        printf(" unlock=%s", ename(pthread_mutex_unlock(&g_robust_lock)));
    printf("\n");
    return 0;
}

static int hold(const char *what, long ms)
{
    if (strcmp(what, "mutex") == 0)
        pthread_mutex_lock(&g_clock_lock);
    else
        pthread_rwlock_wrlock(&g_clock_rw);
    printf("held\n");
    fflush(stdout);
    usleep((useconds_t)(ms * 1000));
    if (strcmp(what, "mutex") == 0)
        pthread_mutex_unlock(&g_clock_lock);
    else
        pthread_rwlock_unlock(&g_clock_rw);
    return 0;
}

static long mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int clock_wait(const char *what, long ms)
{
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    at.tv_sec += ms / 1000;
    at.tv_nsec += (ms % 1000) * 1000000L;
    if (at.tv_nsec >= 1000000000L) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000L;
    }
    if (strcmp(what, "condmono") == 0) {
        pthread_condattr_t a;
        pthread_condattr_init(&a);
        pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        pthread_cond_init(&g_mono_cv, &a);
        pthread_condattr_destroy(&a);
    }
    long t0 = mono_ms();
    int rc;
    if (strcmp(what, "mutex") == 0) {
        rc = pthread_mutex_clocklock(&g_clock_lock, CLOCK_MONOTONIC, &at);
        if (rc == 0)
            pthread_mutex_unlock(&g_clock_lock);
    } else if (strcmp(what, "rdlock") == 0 || strcmp(what, "wrlock") == 0) {
        rc = what[0] == 'r' ? pthread_rwlock_clockrdlock(&g_clock_rw, CLOCK_MONOTONIC, &at)
                            : pthread_rwlock_clockwrlock(&g_clock_rw, CLOCK_MONOTONIC, &at);
        if (rc == 0)
            pthread_rwlock_unlock(&g_clock_rw);
    } else {
        pthread_mutex_lock(&g_clock_lock);
        do {
            rc = what[4] == 'm' ? pthread_cond_timedwait(&g_mono_cv, &g_clock_lock, &at)
                                : pthread_cond_clockwait(&g_clock_cv, &g_clock_lock,
                                                         CLOCK_MONOTONIC, &at);
        } while (rc == 0);            /* nobody signals: a wake-up is spurious */
        pthread_mutex_unlock(&g_clock_lock);
    }
    long waited = mono_ms() - t0;
    printf("%s %ld%s\n", ename(rc), waited, rc == ETIMEDOUT && waited < ms ? " early" : "");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "robust-hold") == 0) {
        init_robust();
        pthread_mutex_lock(&g_robust_lock);
        printf("held\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    if (argc >= 3 && strcmp(argv[1], "robust-lock") == 0)
        return robust_lock(argv[2]);
    if (argc >= 2 && strcmp(argv[1], "robust-reinit") == 0)
        return robust_reinit();
    if (argc >= 4 && strcmp(argv[1], "hold") == 0)
        return hold(argv[2], atol(argv[3]));
    if (argc >= 4 && strcmp(argv[1], "clock") == 0)
        return clock_wait(argv[2], atol(argv[3]));
    fprintf(stderr, "usage: posixlegacy robust-hold | robust-lock consistent|leave | "
                    "robust-reinit | hold mutex|rw MS | clock WHAT MS\n");
    return 2;
}
