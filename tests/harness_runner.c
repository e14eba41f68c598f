/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_runner.c - see harness_runner.h. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

/* What a test's child tells the runner, on a pipe of its own. */
struct th_note {
    int32_t kind;           /* 'L': new limit (value s from now); 'R': cmocka's result */
    int32_t value;
};

static int th_note_fd = -1;         /* in a test's child: its end of the pipe */
static pid_t th_note_pid;           /* ... and that child's pid (not its own children's) */

void th_time_limit(unsigned seconds)
{
    if (th_note_fd < 0 || getpid() != th_note_pid)
        return;
    struct th_note n = { 'L', (int32_t)seconds };
    th_write_all(th_note_fd, &n, sizeof n);
}

/* ------------------------------------------------------------- selection */

/* The program's arguments, from /proc (the suites' main takes none). */
static int own_args(char *buf, size_t size, const char **argv, int max)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t len = read(fd, buf, size - 1);
    close(fd);
    if (len <= 0)
        return 0;
    buf[len] = 0;
    int n = 0;
    for (char *p = buf + strlen(buf) + 1; p < buf + len && n < max; p += strlen(p) + 1)
        argv[n++] = p;
    return n;
}

static int pattern_list_matches(const char *list, const char *name)
{
    char pat[256];
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ", ");
        if (k > 0 && k < sizeof pat) {
            memcpy(pat, p, k);
            pat[k] = 0;
            if (fnmatch(pat, name, 0) == 0)
                return 1;
        }
        p += k;
        p += strspn(p, ", ");
    }
    return 0;
}

static int selected(const char *name, const char **argv, int argc)
{
    const char *env = getenv("TH_FILTER");
    if (env && *env && !pattern_list_matches(env, name))
        return 0;
    if (argc == 0)
        return 1;
    for (int i = 0; i < argc; i++)
        if (pattern_list_matches(argv[i], name))
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ child */

static void *th_group_state;

static int child_group_setup(void **state)
{
    *state = th_group_state;
    return 0;
}

static void run_child(const struct CMUnitTest *t, int note_wr, int out_wr)
{
    setpgid(0, 0);
    /* stdout and stderr into one pipe, in the order written, through the
     * runner (see out_filter) */
    dup2(out_wr, STDOUT_FILENO);
    dup2(out_wr, STDERR_FILENO);
    close(out_wr);
    setvbuf(stdout, NULL, _IOLBF, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    th_note_fd = note_wr;
    th_note_pid = getpid();
    const struct CMUnitTest one[1] = { *t };
    int failed = _cmocka_run_group_tests(t->name, one, 1,
                                         th_group_state ? child_group_setup : NULL, NULL);
    struct th_note n = { 'R', failed };
    th_write_all(note_wr, &n, sizeof n);
    fflush(stdout);
    fflush(stderr);
    /* exit(), not _exit(): the sanitizers' leak check runs at exit, and
     * the harness's own exit handlers leave alone what the runner owns. */
    exit(failed ? 1 : 0);
}

/* ----------------------------------------------------------------- parent */

struct th_outcome {
    int failed;
    char why[160];
};

/* The child's output (stdout and stderr, in the order written), passed on
 * to stdout line by line without the summary cmocka prints for its one
 * test (the runner prints the suite's). */
struct out_filter {
    FILE *to;
    int fd;                     /* the read end, non-blocking; -1 at EOF */
    char buf[8192];
    size_t len;
    int after_list;             /* the line after "listed below:" names the test again */
    int blank;                  /* an empty line held back: cmocka's before "1 FAILED" */
};

static int summary_line(struct out_filter *f, const char *l)
{
    static const char *const drop[] = {
        "[==========] Running 1 test(s).", "[==========] 1 test(s) run.",
        "[  PASSED  ] 1 test(s).", "[  PASSED  ] 0 test(s).",
    };
    if (f->after_list) {
        f->after_list = 0;
        if (strncmp(l, "[  FAILED  ] ", 13) == 0)
            return 1;
    }
    if (strcmp(l, "[  FAILED  ] 1 test(s), listed below:") == 0) {
        f->after_list = 1;
        return 1;
    }
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        if (strcmp(l, drop[i]) == 0)
            return 1;
    return 0;
}

/* Passes on what is there; at_end: the rest, a last line without its
 * newline included, and closes. */
static void out_pump(struct out_filter *f, int at_end)
{
    while (f->fd >= 0) {
        ssize_t n = read(f->fd, f->buf + f->len, sizeof f->buf - 1 - f->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0) {
            close(f->fd);
            f->fd = -1;
        }
        if (n <= 0)
            break;
        f->len += (size_t)n;
        f->buf[f->len] = 0;
        char *line = f->buf, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = 0;
            if (f->blank && strcmp(line, " 1 FAILED TEST(S)") == 0) {
                f->blank = 0;               /* the end of cmocka's summary */
            } else if (!summary_line(f, line)) {
                if (f->blank)
                    fputc('\n', f->to);
                f->blank = line[0] == 0;
                if (!f->blank)
                    fprintf(f->to, "%s\n", line);
            }
            line = nl + 1;
        }
        f->len -= (size_t)(line - f->buf);
        memmove(f->buf, line, f->len);
        if (f->len == sizeof f->buf - 1) {          /* a very long line: as it is */
            fwrite(f->buf, 1, f->len, f->to);
            f->len = 0;
        }
    }
    if (at_end) {
        if (f->blank)
            fputc('\n', f->to);
        f->blank = 0;
        if (f->len)
            fprintf(f->to, "%.*s\n", (int)f->len, f->buf);
        f->len = 0;
        if (f->fd >= 0)
            close(f->fd);
        f->fd = -1;
    }
    fflush(f->to);
}

static const char *signame(int sig)
{
    const char *s = strsignal(sig);
    return s ? s : "?";
}

static void run_one(const struct CMUnitTest *t, unsigned default_limit, struct th_outcome *o)
{
    int fds[2], out[2];
    memset(o, 0, sizeof *o);
    if (pipe2(fds, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        th_die("pipe2");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        th_die("fork");
    if (pid == 0) {
        close(fds[0]);
        close(out[0]);
        run_child(t, fds[1], out[1]);
    }
    setpgid(pid, pid);              /* as the child does: no race on who is first */
    close(fds[1]);
    close(out[1]);
    struct out_filter *of = calloc(1, sizeof *of);
    if (!of)
        th_die("calloc");
    of->to = stdout;
    of->fd = out[0];
    fcntl(of->fd, F_SETFL, fcntl(of->fd, F_GETFL) | O_NONBLOCK);

    int64_t deadline = th_now_ms() + (int64_t)default_limit * 1000;
    unsigned limit = default_limit;
    int result = -1, timed_out = 0, open_fd = 1;
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 && errno != EINTR)
            break;
        if (si.si_pid == pid)
            break;                  /* exited: a zombie until reaped below */
        int64_t left = deadline - th_now_ms();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pfd[2] = { { open_fd ? fds[0] : -1, POLLIN, 0 }, { of->fd, POLLIN, 0 } };
        int r = poll(pfd, 2, left > 5 ? 5 : (int)left);
        if (r <= 0)
            continue;
        if (pfd[1].revents)
            out_pump(of, 0);
        if (!pfd[0].revents)
            continue;
        struct th_note note;
        if (th_read_full(fds[0], &note, sizeof note, 5000) != 0) {
            open_fd = 0;            /* closed (the child is exiting) */
        } else if (note.kind == 'L') {
            limit = (unsigned)note.value;
            deadline = th_now_ms() + (int64_t)note.value * 1000;
        } else if (note.kind == 'R') {
            result = note.value;
        }
    }
    /* A note written just before the exit. */
    struct pollfd pfd = { fds[0], POLLIN, 0 };
    struct th_note note;
    while (open_fd && poll(&pfd, 1, 0) == 1 && th_read_full(fds[0], &note, sizeof note, 100) == 0)
        if (note.kind == 'R')
            result = note.value;
    close(fds[0]);
    /* Until the child is reaped its pid names its process group: SIGKILL
     * whatever of the group is left (helpers, servers of the test). */
    kill(-pid, SIGKILL);
    if (timed_out)
        kill(pid, SIGKILL);
    /* the rest of its output (its processes are gone or going: 1 s at most) */
    int64_t out_end = th_now_ms() + 1000;
    while (of->fd >= 0 && th_now_ms() < out_end) {
        struct pollfd op = { of->fd, POLLIN, 0 };
        if (poll(&op, 1, 10) > 0)
            out_pump(of, 0);
    }
    out_pump(of, 1);
    free(of);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (timed_out) {
        o->failed = 1;
        snprintf(o->why, sizeof o->why, "still running after its time limit of %u s: killed", limit);
    } else if (WIFSIGNALED(st)) {
        o->failed = 1;
        snprintf(o->why, sizeof o->why, "killed by signal %d (%s)", WTERMSIG(st),
                 signame(WTERMSIG(st)));
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        o->failed = 1;
        if (result > 0)
            snprintf(o->why, sizeof o->why, "failed");
        else if (WEXITSTATUS(st) == 124)
            snprintf(o->why, sizeof o->why, "hung: ended by its alarm (exit status 124)");
        else
            snprintf(o->why, sizeof o->why, "exit status %d%s", WEXITSTATUS(st),
                     result == 0 ? " after it passed (a leak or an exit handler)" :
                                   " (a crash, an abort or a sanitizer report: see above)");
    } else if (result != 0) {
        o->failed = 1;
        snprintf(o->why, sizeof o->why, "ended without a result (status %d)", st);
    }
    if (o->failed && (timed_out || result != 1))
        printf("[  FAILED  ] %s: %s\n", t->name, o->why);
    fflush(stdout);
}

static int run_in_process(const char *group, const struct CMUnitTest *tests, size_t n,
                          CMFixtureFunction setup, CMFixtureFunction teardown)
{
    return _cmocka_run_group_tests(group, tests, n, setup, teardown);
}

int th_run_group(const char *group, const struct CMUnitTest *tests, size_t n,
                 CMFixtureFunction setup, CMFixtureFunction teardown)
{
    char argbuf[4096];
    const char *argv[64];
    (void)group;                    /* "tests": the suite's own name says more */
    group = program_invocation_short_name;
    int argc = own_args(argbuf, sizeof argbuf, argv, 64);
    struct CMUnitTest *chosen = calloc(n ? n : 1, sizeof *chosen);
    struct th_outcome *out = calloc(n ? n : 1, sizeof *out);
    if (!chosen || !out)
        th_die("calloc");
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (selected(tests[i].name, argv, argc))
            chosen[m++] = tests[i];
    if (m == 0) {
        printf("[  ERROR   ] %s: no test matches the selection (TH_FILTER or arguments)\n", group);
        free(chosen);
        free(out);
        return 1;
    }
    const char *fork_env = getenv("TH_FORK");
    if (fork_env && strcmp(fork_env, "0") == 0) {
        int rc = run_in_process(group, chosen, m, setup, teardown);
        free(chosen);
        free(out);
        return rc;
    }
    const char *lim = getenv("TH_TEST_TIMEOUT");
    unsigned limit = lim && atoi(lim) > 0 ? (unsigned)atoi(lim) : TH_TEST_LIMIT_S;

    printf("[==========] %s: Running %zu test(s), each in a process of its own.\n", group, m);
    fflush(stdout);
    void *state = NULL;
    if (setup && setup(&state) != 0) {
        printf("[  ERROR   ] %s: group setup failed\n", group);
        printf("[  FAILED  ] %zu test(s), listed below:\n", m);
        for (size_t i = 0; i < m; i++)
            printf("[  FAILED  ] %s\n", chosen[i].name);
        fflush(stdout);
        if (teardown)
            teardown(&state);
        free(chosen);
        free(out);
        return -1;
    }
    th_group_state = state;
    int64_t t0 = th_now_ms();
    size_t failed = 0;
    for (size_t i = 0; i < m; i++) {
        run_one(&chosen[i], limit, &out[i]);
        failed += out[i].failed != 0;
    }
    if (teardown)
        teardown(&state);
    printf("[==========] %s: %zu test(s) run in %.1f s.\n", group, m, (th_now_ms() - t0) / 1000.0);
    printf("[  PASSED  ] %zu test(s).\n", m - failed);
    if (failed) {
        printf("[  FAILED  ] %zu test(s), listed below:\n", failed);
        for (size_t i = 0; i < m; i++)
            if (out[i].failed)
                printf("[  FAILED  ] %s (%s)\n", chosen[i].name, out[i].why);
        printf("\n %zu FAILED TEST(S)\n", failed);
    }
    fflush(stdout);
    free(chosen);
    free(out);
    return failed > 255 ? 255 : (int)failed;
}
