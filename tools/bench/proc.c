/* SPDX-License-Identifier: BSD-3-Clause */
/* proc.c - forked workers.  Every workload runs its lock calls in forked
 * processes, so each starts with a clean library state (the library
 * re-reads its configuration in a child) and the parent never holds a
 * library connection; results come back through shared memory. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

void *shm_alloc(size_t size)
{
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "distlock-bench: mmap %zu bytes: %s\n", size, strerror(errno));
        exit(1);
    }
    return p;
}

void shm_free(void *p, size_t size)
{
    if (p)
        munmap(p, size ? size : 1);
}

void gate_init(gate_t *g, int n)
{
    sem_init(&g->ready, 1, 0);
    sem_init(&g->go, 1, 0);
    g->n = n;
}

void gate_destroy(gate_t *g)
{
    sem_destroy(&g->ready);
    sem_destroy(&g->go);
}

void gate_pass(gate_t *g)
{
    sem_post(&g->ready);
    while (sem_wait(&g->go) && errno == EINTR) {
    }
}

/* Has any of pids exited?  (Not reaped: wait_workers does that.) */
int any_exited(const pid_t *pids, int n)
{
    for (int i = 0; i < n; i++) {
        if (pids[i] <= 0)
            return 1;                   /* never started (fork failed) */
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pids[i], &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid)
            return 1;
    }
    return 0;
}

int gate_wait_ready(gate_t *g, const pid_t *pids, int n)
{
    for (int got = 0; got < g->n;) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        if (sem_timedwait(&g->ready, &ts) == 0) {
            got++;
            continue;
        }
        if (any_exited(pids, n))
            return -1;
    }
    return 0;
}

void gate_open(gate_t *g)
{
    for (int i = 0; i < g->n; i++)
        sem_post(&g->go);
}

int gate_start(gate_t *g, const pid_t *pids, int n, redisContext *c, long long *calls0,
               uint64_t *t0)
{
    int rc = gate_wait_ready(g, pids, n);
    if (c)
        *calls0 = rc_cmd_calls(c);
    *t0 = now_ns();
    if (rc == 0)
        gate_open(g);
    return rc;
}

int spawn_gated(int (*fn)(void *, int), void *arg, pid_t *pids, int n, gate_t *g,
                redisContext *c, long long *calls0, uint64_t *t0)
{
    for (int i = 0; i < n; i++)
        pids[i] = spawn(fn, arg, i);
    return gate_start(g, pids, n, c, calls0, t0);
}

void snap_first(volatile int *first_done, unsigned long *snap, const volatile unsigned long *count,
                int n)
{
    int zero = 0;
    if (__atomic_compare_exchange_n(first_done, &zero, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        for (int k = 0; k < n; k++)
            snap[k] = __atomic_load_n(&count[k], __ATOMIC_RELAXED);
}

pid_t fork_piped(FILE **out)
{
    int fd[2];
    *out = NULL;
    if (pipe(fd))
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        return 0;
    }
    track_pid(pid);
    close(fd[1]);
    *out = fdopen(fd[0], "r");
    return pid;
}

pid_t spawn(int (*fn)(void *, int), void *arg, int idx)
{
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "distlock-bench: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        int rc = fn(arg, idx);
        fflush(NULL);
        _exit(rc);              /* not exit(): the parent's atexit handlers are the parent's */
    }
    track_pid(pid);
    return pid;
}

static char prog_label[64];
static uint64_t prog_t0;
static int prog_shown;

void progress_show(const char *label, const progress_t *pr)
{
    if (!g_opt.progress)
        return;
    if (strcmp(label, prog_label)) {
        snprintf(prog_label, sizeof prog_label, "%s", label);
        prog_t0 = now_ns();
    }
    double el = (double)(now_ns() - prog_t0) / 1e9;
    if (pr && pr->total)
        fprintf(stderr, "\r\033[K  %-18s %lu/%lu  %5.1f s", label, pr->done, pr->total, el);
    else
        fprintf(stderr, "\r\033[K  %-18s %5.1f s", label, el);
    fflush(stderr);
    prog_shown = 1;
}

void progress_clear(void)
{
    if (prog_shown) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
        prog_shown = 0;
    }
    prog_label[0] = 0;
}

int wait_workers(pid_t *pids, int n, const char *label, const progress_t *pr)
{
    int left = n, bad = 0;
    int done[n > 0 ? n : 1];
    memset(done, 0, sizeof done);
    while (left > 0) {
        for (int i = 0; i < n; i++) {
            if (done[i] || pids[i] <= 0) {
                if (!done[i]) {
                    done[i] = 1;
                    left--;
                    bad = 1;
                }
                continue;
            }
            int st;
            pid_t r = waitpid(pids[i], &st, WNOHANG);
            if (r == pids[i] || (r < 0 && errno == ECHILD)) {
                done[i] = 1;
                left--;
                untrack_pid(pids[i]);
                if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
                    bad = 1;
                    progress_clear();
                    if (r >= 0 && WIFSIGNALED(st))
                        fprintf(stderr, "distlock-bench: %s: worker %d killed by signal %d\n",
                                label, (int)pids[i], WTERMSIG(st));
                    else if (r >= 0)
                        fprintf(stderr, "distlock-bench: %s: worker %d exited with %d\n", label,
                                (int)pids[i], WEXITSTATUS(st));
                    /* The others may wait for it forever: stop them. */
                    for (int j = 0; j < n; j++)
                        if (!done[j] && pids[j] > 0)
                            kill(pids[j], SIGKILL);
                }
            }
        }
        if (left > 0) {
            progress_show(label, pr);
            sleep_us(100000);
        }
    }
    progress_clear();
    return bad ? -1 : 0;
}
