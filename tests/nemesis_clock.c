/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_clock.c - the clients' wall clock, which the nemesis jumps (the
 * fault "clock": an NTP step, an operator's date -s).  A client process
 * follows an offset in the memory it shares with the nemesis
 * (nm_slot_t.rt_off_us): its CLOCK_REALTIME, gettimeofday() and time()
 * are the machine's plus that offset, from the moment the nemesis writes
 * it.  Every other clock is the machine's: the library's leases and
 * deadlines are on CLOCK_BOOTTIME and CLOCK_MONOTONIC (shim/base/clock.h),
 * so a jump may move only what the API's abstimes mean, never a lease.
 *
 * How: this executable defines clock_gettime, gettimeofday and time, so
 * every caller in it (the library is linked in statically, and the shared
 * libraries it loads) gets these, which call the next definition (the
 * sanitizer's interceptor or the C library's, found once with dlsym).  The
 * nemesis itself and the process before a client forks follow no offset:
 * they see the machine's clock.  No library or process outside this
 * executable is touched (the lock servers' clocks: nemesis_clockshim.c).
 *
 * Why not libfaketime: its offset file is read per process from the
 * environment at exec, and the clients are forked, not exec'ed; one offset
 * per client needs the client's own.
 */
#include "nemesis.h"

#include <dlfcn.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_fn)(clockid_t, struct timespec *);

static clock_fn next_clock;
static volatile int64_t *follow;      /* set in a client: its slot's offset */

__attribute__((constructor)) static void find_next(void)
{
    next_clock = (clock_fn)dlsym(RTLD_NEXT, "clock_gettime");
}

void nm_clock_follow(volatile int64_t *off)
{
    __atomic_store_n(&follow, off, __ATOMIC_RELEASE);
}

static int real_clock(clockid_t id, struct timespec *ts)
{
    clock_fn f = next_clock;
    if (f)
        return f(id, ts);
    /* before the constructor ran (another constructor asked the time) */
    return (int)syscall(SYS_clock_gettime, id, ts);
}

static int64_t offset_us(void)
{
    volatile int64_t *p = __atomic_load_n(&follow, __ATOMIC_ACQUIRE);
    return p ? __atomic_load_n(p, __ATOMIC_ACQUIRE) : 0;
}

static void shift(struct timespec *ts, int64_t us)
{
    int64_t ns = (int64_t)ts->tv_nsec + (us % 1000000) * 1000;
    int64_t s = (int64_t)ts->tv_sec + us / 1000000;
    if (ns < 0) {
        ns += 1000000000;
        s--;
    } else if (ns >= 1000000000) {
        ns -= 1000000000;
        s++;
    }
    ts->tv_sec = (time_t)s;
    ts->tv_nsec = (long)ns;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    int rc = real_clock(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        int64_t off = offset_us();
        if (off)
            shift(ts, off);
    }
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    tv->tv_sec = ts.tv_sec;               /* (non-null, as glibc declares it) */
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *t)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t)
        *t = ts.tv_sec;
    return ts.tv_sec;
}
