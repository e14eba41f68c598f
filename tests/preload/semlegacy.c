/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * semlegacy.c - legacy code for the interposer's semaphores: plain POSIX
 * named semaphores (sem_open and friends), no distlock anywhere.
 * tests/preload/test_sem.sh runs it with and without the interposer.
 *
 *   semlegacy section NAME N ITER DIR HOLD_US
 *       sem_open(NAME, O_CREAT, 0600, N); ITER times: sem_wait, then inside
 *       the section a file DIR/in.PID.K exists while HOLD_US pass; the files
 *       present then are counted (every process inside at that moment);
 *       sem_post.  Prints "max=M holds=H": the most seen inside at once.
 *   semlegacy value NAME            sem_open without O_CREAT; prints the value
 *   semlegacy open NAME FLAGS [N]   FLAGS: o (none), c (O_CREAT), x (O_CREAT|
 *                                   O_EXCL); prints "ok" or the errno's name
 *   semlegacy try NAME              sem_trywait: "ok" or the errno's name
 *   semlegacy timed NAME MS         sem_timedwait MS from now: "ok" or the
 *                                   errno's name, "early" if before abstime
 *   semlegacy intr NAME MS          sem_wait, a SIGALRM handler (SA_RESTART)
 *                                   after MS: "ok" or the errno's name
 *   semlegacy wait NAME / post NAME sem_wait / sem_post: "ok" or the name
 *   semlegacy gate NAME MS          sem_open(NAME, O_CREAT, 0600, 1), sem_wait,
 *                                   "inside", MS ms, sem_post, "posted", then
 *                                   once more through the gate ("again") and
 *                                   "value=V"; a failed call prints its errno's
 *                                   name and ends
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *ename(int e)
{
    switch (e) {
    case EAGAIN: return "EAGAIN";
    case EINTR: return "EINTR";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case EOVERFLOW: return "EOVERFLOW";
    default: return strerror(e);
    }
}

static int result(int rc)
{
    printf("%s\n", rc == 0 ? "ok" : ename(errno));
    return rc == 0 ? 0 : 3;
}

static sem_t *open_or_die(const char *name, int oflag, unsigned n)
{
    sem_t *s = sem_open(name, oflag, 0600, n);
    if (s == SEM_FAILED) {
        fprintf(stderr, "semlegacy: sem_open(%s): %s\n", name, strerror(errno));
        exit(2);
    }
    return s;
}

static int inside_now(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        n += strncmp(de->d_name, "in.", 3) == 0;
    if (d)
        closedir(d);
    return n;
}

static void on_alarm(int sig) { (void)sig; }

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *op = argv[1], *name = argv[2];
    if (strcmp(op, "section") == 0 && argc == 7) {
        unsigned n = (unsigned)atoi(argv[3]);
        int iter = atoi(argv[4]), hold = atoi(argv[6]), max = 0, holds = 0;
        const char *dir = argv[5];
        sem_t *s = open_or_die(name, O_CREAT, n);
        for (int k = 0; k < iter; k++) {
            if (sem_wait(s)) {
                perror("sem_wait");
                return 1;
            }
            char f[4200];
            snprintf(f, sizeof f, "%s/in.%d.%d", dir, (int)getpid(), k);
            int fd = open(f, O_CREAT | O_WRONLY, 0600);
            close(fd);
            usleep((useconds_t)hold);
            int in = inside_now(dir);
            if (in > max)
                max = in;
            unlink(f);
            holds++;
            if (sem_post(s)) {
                perror("sem_post");
                return 1;
            }
        }
        sem_close(s);
        printf("max=%d holds=%d\n", max, holds);
        return 0;
    }
    if (strcmp(op, "gate") == 0 && argc == 4) {
        sem_t *s = open_or_die(name, O_CREAT, 1);
        if (sem_wait(s))
            return result(-1);
        printf("inside\n");
        fflush(stdout);
        usleep((useconds_t)(atol(argv[3]) * 1000));
        if (sem_post(s))
            return result(-1);
        printf("posted\n");
        if (sem_trywait(s))
            return result(-1);
        printf("again\n");
        int v = -1;
        if (sem_post(s) || sem_getvalue(s, &v))
            return result(-1);
        printf("value=%d\n", v);
        return 0;
    }
    if (strcmp(op, "value") == 0) {
        sem_t *s = open_or_die(name, 0, 0);
        int v = -1;
        if (sem_getvalue(s, &v))
            return result(-1);
        printf("%d\n", v);
        return 0;
    }
    if (strcmp(op, "unlink") == 0)
        return result(sem_unlink(name));
    if (strcmp(op, "open") == 0 && argc >= 4) {
        int oflag = argv[3][0] == 'c' ? O_CREAT : argv[3][0] == 'x' ? O_CREAT | O_EXCL : 0;
        sem_t *s = sem_open(name, oflag, 0600, argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 0u);
        return result(s == SEM_FAILED ? -1 : 0);
    }
    sem_t *s = open_or_die(name, 0, 0);
    if (strcmp(op, "try") == 0)
        return result(sem_trywait(s));
    if (strcmp(op, "wait") == 0)
        return result(sem_wait(s));
    if (strcmp(op, "post") == 0)
        return result(sem_post(s));
    if (strcmp(op, "timed") == 0 && argc == 4) {
        struct timespec ts, now;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ms = atol(argv[3]);
        ts.tv_sec += ms / 1000;
        ts.tv_nsec += (ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        int rc = sem_timedwait(s, &ts);
        int err = errno;
        clock_gettime(CLOCK_REALTIME, &now);
        if (rc && err == ETIMEDOUT &&
            (now.tv_sec < ts.tv_sec || (now.tv_sec == ts.tv_sec && now.tv_nsec < ts.tv_nsec))) {
            printf("early\n");
            return 4;
        }
        errno = err;
        return result(rc);
    }
    if (strcmp(op, "clock") == 0 && argc == 4) {
        struct timespec ts, t0, t1;
        long ms = atol(argv[3]);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ts = t0;
        ts.tv_sec += ms / 1000;
        ts.tv_nsec += (ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        int rc = sem_clockwait(s, CLOCK_MONOTONIC, &ts);
        int err = errno;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long waited = (long)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        printf("%s %ld%s\n", rc == 0 ? "ok" : ename(err), waited,
               rc && err == ETIMEDOUT && waited < ms ? " early" : "");
        return 0;
    }
    if (strcmp(op, "intr") == 0 && argc == 4) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sa.sa_flags = SA_RESTART;              /* sem_wait is never restarted anyway */
        sigaction(SIGALRM, &sa, NULL);
        long ms = atol(argv[3]);
        struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };
        setitimer(ITIMER_REAL, &it, NULL);
        return result(sem_wait(s));
    }
    return 2;
}
