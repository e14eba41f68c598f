/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * asan_fork_hang.c - the AddressSanitizer fork hang without distlock
 * (docs/RELIABILITY.md, "Notes for test writers"): a thread allocates in a
 * loop while the process forks; the child starts a thread of its own and
 * exit(0)s, which runs LeakSanitizer's check in ASan builds.  Prints how
 * many children did not end within 5 s.  Not built by CMake:
 *
 *   gcc -O1 -g -pthread -fsanitize=address,undefined tools/asan_fork_hang.c -o /tmp/h && /tmp/h 100
 *
 * GCC 12's libasan: 35 of 100 children hung; glibc's malloc (no
 * -fsanitize) and clang 14's ASan runtime: 0 of 100.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;
/* allocates until told to stop (as the library's watchdog does, briefly,
 * at each renewal) */
static void *busy(void *a)
{
    (void)a;
    while (!stop) {
        void *p = malloc(64);
        free(p);
    }
    return NULL;
}

static void *brief(void *a)
{
    (void)a;
    usleep(20000);
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100, hung = 0;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    for (int r = 0; r < rounds; r++) {
        pthread_t t;
        stop = 0;
        pthread_create(&t, &at, busy, NULL);
        usleep(1000);
        pid_t pid = fork();
        if (pid == 0) {
            pthread_create(&t, &at, brief, NULL);
            exit(0);
        }
        stop = 1;
        int st, waited = 0;
        while (waitpid(pid, &st, WNOHANG) == 0 && waited < 5000) {
            usleep(1000);
            waited++;
        }
        if (waited >= 5000) {
            hung++;
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
        }
        usleep(30000);                 /* the parent's thread is gone again */
    }
    printf("%d of %d children hung after exit(0)\n", hung, rounds);
    return 0;
}
