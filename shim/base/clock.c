/* SPDX-License-Identifier: BSD-3-Clause */
/* clock.c - monotonic time, deadlines and thread ids. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"

/* The library's clock.  A hold's validity is counted from when the call
 * that confirmed it was sent, while Redis counts its TTL on its own host:
 * a clock that stopped while this host was suspended (CLOCK_MONOTONIC)
 * would let a hold look valid long after Redis let it lapse.
 * CLOCK_BOOTTIME goes on counting through a suspend. */
#define DL_CLOCK CLOCK_BOOTTIME

uint64_t dl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(DL_CLOCK, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t dl_now_us(void)
{
    struct timespec ts;
    clock_gettime(DL_CLOCK, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int dl_clock_ok(clockid_t clock)
{
    return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC;
}

int dl_deadline_on(clockid_t clock, const struct timespec *abstime, uint64_t *deadline)
{
    if (!abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
        return EINVAL;
    struct timespec now, mono;
    clock_gettime(clock, &now);
    /* The caller's clock is read once, here: from now on the wait follows
     * the library's clock, so one deadline covers the local and the Redis
     * wait.  The library's clock is read second, so the time between the
     * two reads can only make the deadline later, never earlier. */
    clock_gettime(DL_CLOCK, &mono);
    uint64_t mono_ns = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
    /* tv_sec may be anything time_t holds: compare before multiplying, so
     * neither the difference nor the ns overflow (INT64_MIN/MAX included). */
    int64_t dsec;
    if (__builtin_sub_overflow((int64_t)abstime->tv_sec, (int64_t)now.tv_sec, &dsec))
        dsec = abstime->tv_sec < 0 ? INT64_MIN : INT64_MAX;
    if (dsec > (int64_t)100 * 366 * 86400) {
        *deadline = DL_FOREVER;        /* centuries away: no deadline */
        return 0;
    }
    int64_t left_ns = dsec < -1 ? -1 : dsec * 1000000000 +
                      ((int64_t)abstime->tv_nsec - (int64_t)now.tv_nsec);
    if (left_ns <= 0) {
        *deadline = mono_ns / 1000000u;    /* already past: one attempt */
        return 0;
    }
    /* Rounded up to the next whole ms: every check against it (now in ms,
     * rounded down, >= deadline; a condvar wait until it) then holds only
     * once abstime has passed, never a fraction of a ms before. */
    *deadline = (mono_ns + (uint64_t)left_ns + 999999u) / 1000000u;
    return 0;
}

uint64_t dl_round_trip_cut(uint64_t deadline)
{
    if (deadline == DL_FOREVER)
        return 0;
    uint64_t now = dl_now_ms();
    return deadline >= now + DL_ROUND_TRIP_MS ? deadline : 0;
}

int dl_deadline_from_abstime(const struct timespec *abstime, uint64_t *deadline)
{
    return dl_deadline_on(CLOCK_REALTIME, abstime, deadline);
}

int dl_passed_on(clockid_t clock, const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return now.tv_sec > abstime->tv_sec ||
           (now.tv_sec == abstime->tv_sec && now.tv_nsec >= abstime->tv_nsec);
}

int dl_abstime_passed(const struct timespec *abstime)
{
    return dl_passed_on(CLOCK_REALTIME, abstime);
}

void dl_timespec_at_us(uint64_t deadline_us, struct timespec *ts)
{
    /* Condition variables wait on CLOCK_MONOTONIC (the only other clock
     * they take): the time left on the library's clock, from now on that
     * one.  A suspend in the middle of a wait ends it late, never early. */
    uint64_t now = dl_now_us();
    uint64_t left = deadline_us == DL_FOREVER ? 3600u * 1000000u
                    : deadline_us > now ? deadline_us - now : 0;
    struct timespec mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    uint64_t at = (uint64_t)mono.tv_sec * 1000000u + (uint64_t)mono.tv_nsec / 1000u + left;
    ts->tv_sec = (time_t)(at / 1000000u);
    ts->tv_nsec = (long)(at % 1000000u) * 1000L;
}

void dl_timespec_at(uint64_t deadline_ms, struct timespec *ts)
{
    dl_timespec_at_us(deadline_ms == DL_FOREVER ? DL_FOREVER : deadline_ms * 1000u, ts);
}

void dl_sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000u, (long)(ms % 1000u) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static __thread pid_t dl_tid_cached;

pid_t dl_tid(void)
{
    if (!dl_tid_cached)
        dl_tid_cached = (pid_t)syscall(SYS_gettid);
    return dl_tid_cached;
}

void dl_tid_forget(void)
{
    dl_tid_cached = 0;
}

uint64_t dl_random(void)
{
    /* xorshift64*, seeded per thread from the clock and the thread id:
     * only for jitter, never for anything that must be unguessable. */
    static __thread uint64_t s;
    if (!s) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)dl_tid() << 40) ^ 0x9e3779b97f4a7c15ULL;
    }
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545f4914f6cdd1dULL;
}

int dl_thread_start(void *(*fn)(void *), void *arg)
{
    return dl_thread_start_sized(fn, arg, 0);
}

int dl_thread_start_sized(void *(*fn)(void *), void *arg, size_t stack)
{
    /* Our threads take none of the host program's signals. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (stack)
        pthread_attr_setstacksize(&a, stack);
    pthread_t t;
    int rc = pthread_create(&t, &a, fn, arg);
    pthread_attr_destroy(&a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
