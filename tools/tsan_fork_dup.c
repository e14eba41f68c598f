/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tsan_fork_dup.c - the ThreadSanitizer fork failure without distlock
 * (docs/RELIABILITY.md, "Notes for test writers"): a process with a thread
 * forks, and the child starts a thread.  glibc gives that thread the stack,
 * hence the pthread_t, of the parent's thread.  Not built by CMake:
 *
 *   gcc -O1 -g -pthread -fsanitize=thread tools/tsan_fork_dup.c -o /tmp/d
 *   TSAN_OPTIONS=die_after_fork=0 /tmp/d
 *
 * GCC 12's TSan: "ThreadSanitizer: dup thread with used id ...", the
 * child exits 66, every time; with the default die_after_fork=1 the child
 * dies at its pthread_create instead.  clang 14's TSan and no TSan: 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static void *sleeper(void *a)
{
    (void)a;
    pause();
    return NULL;
}

static void *nothing(void *a)
{
    return a;
}

int main(void)
{
    pthread_t t, c;
    pthread_create(&t, NULL, sleeper, NULL);  /* alive in the parent at the fork */
    pid_t pid = fork();
    if (pid == 0) {
        pthread_create(&c, NULL, nothing, NULL);
        pthread_join(c, NULL);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child: %s %d\n", WIFEXITED(st) ? "exit" : "signal",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return 0;
}
