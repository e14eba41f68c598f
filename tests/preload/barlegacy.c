/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * barlegacy.c - legacy code for the interposer's barriers: a global
 * pthread_barrier_t, no distlock anywhere.  tests/preload/test_barrier.sh
 * runs several copies with and without the interposer.
 *
 *   barlegacy phases FILE N T COUNT TOTAL
 *       pthread_barrier_init(&g_phase_barrier, NULL, COUNT); T threads, each
 *       N phases: one byte appended to FILE (its arrival), then
 *       pthread_barrier_wait.  After each wait the thread reads FILE's size:
 *       fewer than TOTAL * (k + 1) bytes means it was released before every
 *       arrival of phase k ("early"); more than TOTAL * (k + 2) means others
 *       passed the next barrier without it ("ahead").  The thread that gets
 *       PTHREAD_BARRIER_SERIAL_THREAD appends the phase's number to
 *       FILE.serial.  Prints "phases=N early=E ahead=A serials=S".
 *   barlegacy once COUNT            init, one wait: prints "serial" or
 *                                   "released" (or the error's name)
 *   barlegacy arrive COUNT          init, prints "arriving", one wait (the
 *                                   test kills it while it waits)
 *   barlegacy busy COUNT            init; a thread waits; 300 ms later
 *                                   pthread_barrier_destroy: prints its
 *                                   answer; then waits too and prints "done"
 *   barlegacy hello                 prints a line, touches no barrier
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

pthread_barrier_t g_phase_barrier;
int g_small;                              /* too small to be a barrier */

static const char *path;
static long phases, total;
static int fd, sfd;
static long early, ahead, serials;
static pthread_mutex_t tally = PTHREAD_MUTEX_INITIALIZER;

static const char *ename(int e)
{
    switch (e) {
    case EINVAL: return "EINVAL";
    case EBUSY: return "EBUSY";
    case EAGAIN: return "EAGAIN";
    default: return strerror(e);
    }
}

static void init_or_die(unsigned count)
{
    int rc = pthread_barrier_init(&g_phase_barrier, NULL, count);
    if (rc) {
        fprintf(stderr, "barlegacy: pthread_barrier_init(%u): %s\n", count, ename(rc));
        exit(2);
    }
}

static void *phase_worker(void *arg)
{
    for (long k = 0; k < phases; k++) {
        if (write(fd, "a", 1) != 1) {
            perror("write");
            exit(2);
        }
        int rc = pthread_barrier_wait(&g_phase_barrier);
        if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
            fprintf(stderr, "barlegacy: pthread_barrier_wait: %s\n", ename(rc));
            exit(2);
        }
        struct stat st;
        if (fstat(fd, &st)) {
            perror("fstat");
            exit(2);
        }
        pthread_mutex_lock(&tally);
        early += st.st_size < total * (k + 1);
        ahead += st.st_size > total * (k + 2);
        if (rc == PTHREAD_BARRIER_SERIAL_THREAD) {
            char line[32];
            int len = snprintf(line, sizeof line, "%ld\n", k);
            if (write(sfd, line, (size_t)len) != len) {
                perror("write");
                exit(2);
            }
            serials++;
        }
        pthread_mutex_unlock(&tally);
    }
    return arg;
}

static int run_phases(char **argv)
{
    path = argv[0];
    phases = atol(argv[1]);
    int t = atoi(argv[2]);
    unsigned count = (unsigned)atol(argv[3]);
    total = atol(argv[4]);
    char spath[4096];
    snprintf(spath, sizeof spath, "%s.serial", path);
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    sfd = open(spath, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || sfd < 0) {
        perror(path);
        return 2;
    }
    init_or_die(count);
    pthread_t th[64];
    if (t < 1 || t > 64)
        return 2;
    for (int i = 0; i < t; i++)
        pthread_create(&th[i], NULL, phase_worker, NULL);
    for (int i = 0; i < t; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&g_phase_barrier);
    printf("phases=%ld early=%ld ahead=%ld serials=%ld\n", phases, early, ahead, serials);
    return 0;
}

static int wait_once(void)
{
    int rc = pthread_barrier_wait(&g_phase_barrier);
    printf("%s\n", rc == PTHREAD_BARRIER_SERIAL_THREAD ? "serial" : rc == 0 ? "released" : ename(rc));
    fflush(stdout);
    return rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : 3;
}

static void *busy_waiter(void *arg)
{
    pthread_barrier_wait(&g_phase_barrier);
    return arg;
}

static int run_busy(unsigned count)
{
    init_or_die(count);
    pthread_t th;
    pthread_create(&th, NULL, busy_waiter, NULL);
    usleep(300000);
    int rc = pthread_barrier_destroy(&g_phase_barrier);
    printf("%s\n", rc == 0 ? "ok" : ename(rc));
    fflush(stdout);
    if (rc == 0)
        return 3;
    pthread_barrier_wait(&g_phase_barrier);
    pthread_join(th, NULL);
    printf("done\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 7 && strcmp(argv[1], "phases") == 0)
        return run_phases(argv + 2);
    if (argc >= 3 && strcmp(argv[1], "once") == 0) {
        init_or_die((unsigned)atol(argv[2]));
        return wait_once();
    }
    if (argc >= 3 && strcmp(argv[1], "arrive") == 0) {
        init_or_die((unsigned)atol(argv[2]));
        printf("arriving\n");
        fflush(stdout);
        return wait_once();
    }
    if (argc >= 3 && strcmp(argv[1], "busy") == 0)
        return run_busy((unsigned)atol(argv[2]));
    if (argc >= 2 && strcmp(argv[1], "hello") == 0) {
        printf("hello from main\n");
        return 0;
    }
    fprintf(stderr, "usage: barlegacy phases FILE N T COUNT TOTAL | once COUNT | arrive COUNT | "
                    "busy COUNT | hello\n");
    return 2;
}
