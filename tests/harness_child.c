/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_child.c - see harness_child.h. */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#if defined(__SANITIZE_ADDRESS__)
#define TH_ASAN 1
#elif defined(__SANITIZE_THREAD__)
#define TH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TH_ASAN 1
#elif __has_feature(thread_sanitizer)
#define TH_TSAN 1
#endif
#endif

/* ----------------------------------------------------------------- children */

#define TH_MAX_CHILDREN 512
static pid_t th_children[TH_MAX_CHILDREN];
static pthread_mutex_t th_children_mu = PTHREAD_MUTEX_INITIALIZER;

static void child_add(pid_t pid)
{
    pthread_mutex_lock(&th_children_mu);
    for (int i = 0; i < TH_MAX_CHILDREN; i++)
        if (!th_children[i]) {
            th_children[i] = pid;
            break;
        }
    pthread_mutex_unlock(&th_children_mu);
}

static void child_del(pid_t pid)
{
    pthread_mutex_lock(&th_children_mu);
    for (int i = 0; i < TH_MAX_CHILDREN; i++)
        if (th_children[i] == pid)
            th_children[i] = 0;
    pthread_mutex_unlock(&th_children_mu);
}

static void atfork_child(void)
{
    pthread_mutex_init(&th_children_mu, NULL);
    memset(th_children, 0, sizeof th_children);
}

static void atfork_once(void)
{
    static int done;
    if (!done) {
        done = 1;
        pthread_atfork(NULL, NULL, atfork_child);
        th_redis_atfork();
    }
}

#ifdef TH_ASAN
/* 1 when every thread of this process but the caller sleeps (state S, or
 * stopped, or a zombie): none is running inside the allocator then. */
static int other_threads_asleep(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 1;
    pid_t self = (pid_t)syscall(SYS_gettid);
    int asleep = 1;
    struct dirent *e;
    while (asleep && (e = readdir(d))) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == self)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;                           /* gone meanwhile */
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *paren = strrchr(buf, ')');  /* "tid (comm) S ..." */
        char st = paren && paren[1] ? paren[2] : 'S';
        if (st == 'R' || st == 'D')
            asleep = 0;
    }
    closedir(d);
    return asleep;
}

/* AddressSanitizer's allocator (GCC 12's libasan, the CI's) takes none of
 * its locks around fork(): a child forked while another thread of the
 * parent was inside malloc or free (the library's watchdog and subscriber
 * starting or renewing, say) inherits that thread's allocator lock taken,
 * and hangs at its next allocation of that size, or at exit() in
 * LeakSanitizer's check, which takes every allocator lock (test_fork's
 * test_child_exit_no_leaks: 17 of 300 runs under load; a program without
 * distlock does the same: docs/RELIABILITY.md, "Notes for test writers").
 * So a sanitized suite forks only while every other thread sleeps, waiting
 * for that up to 2 s (a thread that never sleeps only delays the fork). */
static void wait_other_threads_asleep(void)
{
    int64_t until = th_now_ms() + 2000;
    while (!other_threads_asleep()) {
        if (th_now_ms() >= until) {
            fprintf(stderr, "harness: a thread of this process never slept in 2 s: forking "
                    "anyway (under ASan the child may hang)\n");
            return;
        }
        th_sleep_us(200);
    }
}
#endif

/* TH_HUNG_GDB=1: the stacks of a child killed for a time-out go to stderr
 * first (for hunting a hang; needs gdb). */
static void dump_stacks(pid_t pid)
{
    if (!getenv("TH_HUNG_GDB"))
        return;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "gdb -p %d -batch -ex 'thread apply all bt' 1>&2", (int)pid);
    if (system(cmd) != 0)
        fprintf(stderr, "harness: could not run gdb on child %d\n", (int)pid);
}

pid_t th_fork_child(int (*fn)(void *), void *arg)
{
    atfork_once();
#ifdef TH_ASAN
    wait_other_threads_asleep();
#endif
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        th_die("fork");
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        signal(SIGALRM, SIG_DFL);
        alarm(40);
        int rc = fn(arg);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    child_add(pid);
    return pid;
}

int th_wait_child_ms(pid_t pid, long timeout_ms)
{
    int64_t deadline = th_now_ms() + timeout_ms;
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            child_del(pid);
            return TH_WAIT_TIMEOUT;
        }
        if (th_now_ms() >= deadline) {
            fprintf(stderr, "harness: child %d still running after %ld ms: killed\n",
                    (int)pid, timeout_ms);
            dump_stacks(pid);
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            child_del(pid);
            return TH_WAIT_TIMEOUT;
        }
        th_sleep_ms(2);
    }
    child_del(pid);
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return 255;
}

#ifdef TH_TSAN
static void *probe_sleeper(void *arg)
{
    int fd = *(int *)arg;
    char c;
    while (read(fd, &c, 1) < 0 && errno == EINTR)
        ;                                   /* until the probe ends */
    return NULL;
}

static void *probe_nothing(void *arg)
{
    return arg;
}

/* A process with a thread forks; the child starts a thread.  Its status:
 * 0 when that works under this build's ThreadSanitizer. */
static int probe_fork_threads(void)
{
    int pp[2];
    if (pipe(pp) != 0)
        return -1;
    pthread_t t;
    if (pthread_create(&t, NULL, probe_sleeper, &pp[0]) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, STDERR_FILENO);       /* TSan's own message: we say it */
        pthread_t c;
        if (pthread_create(&c, NULL, probe_nothing, NULL) != 0)
            _exit(3);
        pthread_join(c, NULL);
        _exit(0);
    }
    int st = -1;
    if (pid > 0)
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    close(pp[1]);
    pthread_join(t, NULL);
    close(pp[0]);
    return pid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#endif

int th_fork_threads_ok(void)
{
#ifdef TH_TSAN
    static int known = -1;
    if (known < 0)
        known = probe_fork_threads() == 0;
    return known;
#else
    return 1;
#endif
}

int th_wait_child(pid_t pid)
{
    return th_wait_child_ms(pid, 30000);
}

void th_steer(th_steered_t *c, int (*fn)(void *), void *arg, int *up, int *down)
{
    th_pipe_open(&c->up);
    th_pipe_open(&c->down);
    *up = c->up.wr;
    *down = c->down.rd;
    c->pid = th_fork_child(fn, arg);
}

void th_steered_expect(th_steered_t *c, int64_t tag, th_msg_t *m, long timeout_ms)
{
    if (th_recv(c->up.rd, m, timeout_ms) != 0)
        fail_msg("the child said nothing within %ld ms (waiting for its message %lld)",
                 timeout_ms, (long long)tag);
    if (m->tag != tag)
        fail_msg("the child said %lld, want %lld", (long long)m->tag, (long long)tag);
}

void th_steered_end(th_steered_t *c)
{
    TH_ASSERT_CHILD_OK(c->pid);
    th_pipe_close(&c->up);
    th_pipe_close(&c->down);
}

void th_sigpipe_default(void)
{
    signal(SIGPIPE, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

void th_kill_child(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    child_del(pid);
}

static void on_test_alarm(int sig)
{
    static const char msg[] = "harness: the test is still running after 50 s: hung, aborted\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    (void)sig;
    th_redis_kill_owned();
    _exit(124);
}

int th_test_setup(void **state)
{
    (void)state;
    signal(SIGALRM, on_test_alarm);
    alarm(50);
    return 0;
}

int th_test_teardown(void **state)
{
    (void)state;
    alarm(0);
    for (int i = 0; i < TH_MAX_CHILDREN; i++) {
        pid_t pid = th_children[i];
        if (pid)
            th_kill_child(pid);
    }
    return 0;
}

int th_group_setup(void **state)
{
    (void)state;
    atfork_once();
    if (th_redis_start() != 0)
        return -1;
    (void)th_redis();
    return 0;
}

int th_group_teardown(void **state)
{
    (void)state;
    th_test_teardown(NULL);
    th_redis_stop();
    return 0;
}

/* ------------------------------------------------------------------- misc */

struct capture_boot { int (*fn)(void *); void *arg; int wr, rd; };

static int capture_main(void *p)
{
    struct capture_boot *b = p;
    close(b->rd);
    dup2(b->wr, STDERR_FILENO);
    close(b->wr);
    return b->fn(b->arg);
}

int th_run_capture_stderr(int (*fn)(void *), void *arg, char **err, long timeout_ms)
{
    th_pipe_t pp;
    th_pipe_open(&pp);
    struct capture_boot b = { fn, arg, pp.wr, pp.rd };
    pid_t pid = th_fork_child(capture_main, &b);
    close(pp.wr);
    char *text = th_read_all(pp.rd, timeout_ms);
    close(pp.rd);
    int st = th_wait_child_ms(pid, 5000);
    if (err)
        *err = text;
    else
        free(text);
    return st;
}

