/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nm_clockshim.c - libnm_clockshim.so, preloaded (LD_PRELOAD) into the
 * nemesis's lock servers: their wall clock is the machine's plus an offset
 * the nemesis writes, and jumps when it does (the fault "srvclock": an NTP
 * step of the server's machine).  Redis counts a key's expiry and its TIME
 * on the wall clock: a jump forward expires keys early, a loss that gives
 * no sign to any client.
 *
 * NM_CLOCK_FILE names a file of 8 bytes, the offset in microseconds
 * (int64_t, native order), mapped shared here and by the nemesis: a jump
 * is one store, seen by the server's next reading of the clock.
 * CLOCK_REALTIME (and its coarse variant), gettimeofday() and time() are
 * shifted; every other clock is the machine's.
 *
 * Not libfaketime: Debian's redis-server is linked with jemalloc, whose
 * first allocation reads the clock while libfaketime initialises itself
 * (dlsym, which allocates): the server dies at start ("Unexpected
 * recursive calls to clock_gettime()", libfaketime issue 130).  So no
 * dlsym and no allocation here: the clocks are read with the system call,
 * and the file is mapped once, at the first reading.
 *
 * Built without sanitizers (it is loaded into an uninstrumented program);
 * not part of the library, never installed.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset;        /* NULL: not mapped (yet, or no file) */
static int tried;

static int64_t offset_us(void)
{
    if (!__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) {
        /* Two threads may map it at once: one mapping stays, harmless. */
        const char *path = getenv("NM_CLOCK_FILE");
        int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
        if (fd >= 0) {
            void *p = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
            close(fd);
            if (p != MAP_FAILED)
                __atomic_store_n(&offset, (volatile int64_t *)p, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
    }
    volatile int64_t *p = __atomic_load_n(&offset, __ATOMIC_ACQUIRE);
    return p ? __atomic_load_n(p, __ATOMIC_RELAXED) : 0;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    long rc = syscall(SYS_clock_gettime, id, ts);
    if (rc != 0)
        return -1;
    if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) {
        int64_t us = offset_us();
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
    return 0;
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
