/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_util.c - see harness_util.h. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "launch.h"

/* ------------------------------------------------------------------ helpers */

void th_die(const char *what)
{
    fprintf(stderr, "harness [%d]: %s (%s)\n", (int)getpid(), what, strerror(errno));
    fflush(stderr);
    abort();
}

/* write() that neither raises SIGPIPE nor loses bytes to EINTR. */
int th_write_all(int fd, const void *buf, size_t len)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    const char *p = buf;
    int ret = 0;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE) {
                struct timespec zero = { 0, 0 };
                siginfo_t si;
                /* Consume the SIGPIPE this write queued, unless one was
                 * pending already. */
                if (!sigismember(&old, SIGPIPE))
                    sigtimedwait(&pipe_set, &si, &zero);
            }
            ret = -1;
            break;
        }
        p += n;
        len -= (size_t)n;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ret;
}

/* Reads exactly len bytes, waiting at most timeout_ms (<0: forever). */
int th_read_full(int fd, void *buf, size_t len, long timeout_ms)
{
    char *p = buf;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : th_now_ms() + timeout_ms;
    while (len > 0) {
        int64_t left = deadline == INT64_MAX ? -1 : deadline - th_now_ms();
        if (deadline != INT64_MAX && left <= 0)
            return -1;
        struct pollfd pfd = { fd, POLLIN, 0 };
        int r = poll(&pfd, 1, left < 0 ? -1 : (int)left);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            continue;
        ssize_t n = read(fd, p, len);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        if (n == 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int th_contains(const char *hay, const char *needle)
{
    if (!hay || !needle)
        return 0;
    size_t n = strlen(needle);
    for (const char *h = hay; *h; h++)
        if (strncasecmp(h, needle, n) == 0)
            return 1;
    return n == 0;
}

const char *th_errname(int rc)
{
    static __thread char buf[32];
    switch (rc) {
    case 0: return "0";
    case EINVAL: return "EINVAL";
    case EBUSY: return "EBUSY";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EDEADLK: return "EDEADLK";
    case EPERM: return "EPERM";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOLCK: return "ENOLCK";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case ENOENT: return "ENOENT";
    case EAGAIN: return "EAGAIN";
    case EIO: return "EIO";
    case ENOMEM: return "ENOMEM";
    case TH_WAIT_TIMEOUT: return "harness time-out";
    default:
        snprintf(buf, sizeof buf, "code %d", rc);
        return buf;
    }
}

/* ------------------------------------------------------------------- clocks */

int64_t th_now_ms(void)
{
    return th_now_us() / 1000;
}

int64_t th_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct timespec th_abstime_ms(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = (int64_t)ts.tv_nsec + (int64_t)ms * 1000000;
    ts.tv_sec += (time_t)(ns / 1000000000);
    ns %= 1000000000;
    if (ns < 0) {
        ns += 1000000000;
        ts.tv_sec -= 1;
    }
    ts.tv_nsec = (long)ns;
    return ts;
}

void th_sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

void th_sleep_ms(long ms)
{
    th_sleep_us(ms * 1000);
}

int th_wait_until(int (*pred)(void *), void *arg, long timeout_ms)
{
    int64_t deadline = th_now_ms() + timeout_ms;
    for (;;) {
        if (pred(arg))
            return 1;
        if (th_now_ms() >= deadline)
            return 0;
        th_sleep_ms(2);
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int64_t th_median(int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    return v[n / 2];
}

/* -------------------------------------------------------------------- pipes */

void th_pipe_open(th_pipe_t *p)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        th_die("pipe2");
    p->rd = fds[0];
    p->wr = fds[1];
}

void th_pipe_close(th_pipe_t *p)
{
    if (p->rd >= 0)
        close(p->rd);
    if (p->wr >= 0)
        close(p->wr);
    p->rd = p->wr = -1;
}

int th_send(int fd, int64_t tag, int64_t a, int64_t b, int64_t c)
{
    th_msg_t m = { tag, a, b, c };
    return th_write_all(fd, &m, sizeof m);
}

int th_recv(int fd, th_msg_t *m, long timeout_ms)
{
    return th_read_full(fd, m, sizeof *m, timeout_ms);
}

char *th_read_all(int fd, long timeout_ms)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    int64_t deadline = th_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - th_now_ms();
        if (left <= 0)
            break;
        struct pollfd pfd = { fd, POLLIN, 0 };
        int r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (len + 1024 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = 0;
    return buf;
}

void th_close_from(int lowfd)
{
    dl_launch_close_from(lowfd);            /* as the launcher's children do */
}
