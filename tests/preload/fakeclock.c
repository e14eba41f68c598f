/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakeclock.c - a wall clock that is set back, for the tests of waits on
 * CLOCK_MONOTONIC (tests/preload/test_clocks.sh).  Preloaded before the
 * interposer, it stands in front of libc's clock_gettime and gettimeofday
 * for the whole process (the program, the interposer and the library in
 * it): CLOCK_REALTIME reads DISTLOCK_TEST_WALL_STEP seconds more (a
 * negative number: back) once DISTLOCK_TEST_WALL_AFTER_MS have passed
 * since the process started.  Every other clock reads as it is.  A wait
 * on CLOCK_MONOTONIC must not notice.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static long step_s, after_ms;
static struct timespec start;

__attribute__((constructor)) static void fake_start(void)
{
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    const char *s = getenv("DISTLOCK_TEST_WALL_STEP");
    const char *a = getenv("DISTLOCK_TEST_WALL_AFTER_MS");
    step_s = s ? atol(s) : 0;
    after_ms = a ? atol(a) : 0;
    real_clock_gettime(CLOCK_MONOTONIC, &start);
}

static long since_start_ms(void)
{
    struct timespec now;
    real_clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    if (!real_clock_gettime)
        fake_start();
    int rc = real_clock_gettime(clk, ts);
    if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE) &&
        since_start_ms() >= after_ms)
        ts->tv_sec += step_s;
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}
