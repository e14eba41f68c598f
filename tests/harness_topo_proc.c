/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_topo_proc.c - see harness_topo_proc.h. */
#include "harness_topo.h"

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "launch.h"

/* ----------------------------------------------------------- registry */

#define TT_MAX_PIDS 128

static pid_t tt_owner;                      /* the process that made the directory */
static char tt_dirbuf[256];
static volatile pid_t tt_pids[TT_MAX_PIDS];

void tt_register(pid_t pid)
{
    for (int i = 0; i < TT_MAX_PIDS; i++)
        if (!tt_pids[i]) {
            tt_pids[i] = pid;
            return;
        }
}

void tt_forget(pid_t pid)
{
    for (int i = 0; i < TT_MAX_PIDS; i++)
        if (tt_pids[i] == pid)
            tt_pids[i] = 0;
}

/* SIGKILL pid only while it is still our unreaped child (so never a pid
 * the system gave to someone else since), and reap it.  Async-signal-safe. */
void tt_kill_ours(pid_t pid)
{
    dl_launch_stop_now(pid, SIGKILL);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void at_exit_cleanup(void)
{
    if (getpid() == tt_owner)
        tt_cleanup();
}

const char *tt_dir(void)
{
    if (!tt_dirbuf[0] || tt_owner != getpid()) {
        if (tt_dirbuf[0] && tt_owner != getpid())
            return tt_dirbuf;               /* a child: the parent's directory */
        snprintf(tt_dirbuf, sizeof tt_dirbuf, "/tmp/distlock-topo.%d.XXXXXX", (int)getpid());
        if (!mkdtemp(tt_dirbuf)) {
            fprintf(stderr, "harness_topo: mkdtemp: %s\n", strerror(errno));
            abort();
        }
        if (!tt_owner)
            atexit(at_exit_cleanup);
        tt_owner = getpid();
    }
    return tt_dirbuf;
}

void tt_cleanup(void)
{
    if (tt_owner && getpid() != tt_owner)
        return;
    for (int i = 0; i < TT_MAX_PIDS; i++) {
        pid_t pid = tt_pids[i];
        if (pid) {
            tt_kill_ours(pid);
            tt_pids[i] = 0;
        }
    }
    if (tt_dirbuf[0]) {
        const char *keep = getenv("TH_TOPO_KEEP");
        if (keep && *keep && strcmp(keep, "0") != 0)
            fprintf(stderr, "harness_topo: kept %s\n", tt_dirbuf);
        else
            nftw(tt_dirbuf, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        tt_dirbuf[0] = 0;
    }
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "harness_topo: the test is still running after its alarm: hung, "
                              "aborted (topology stopped)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    if (getpid() == tt_owner) {
        for (int i = 0; i < TT_MAX_PIDS; i++)
            if (tt_pids[i])
                tt_kill_ours(tt_pids[i]);
        if (tt_dirbuf[0]) {
            pid_t pid = fork();
            if (pid == 0) {
                execl("/bin/rm", "rm", "-rf", tt_dirbuf, (char *)NULL);
                _exit(127);
            }
            if (pid > 0) {
                int st;
                waitpid(pid, &st, 0);
            }
        }
    }
    _exit(124);
}

void tt_alarm(unsigned seconds)
{
    /* the runner's limit for the test: beyond this alarm, which stops the
     * topology on its way out */
    th_time_limit(seconds + 30);
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

int tt_test_setup(void **state)
{
    th_test_setup(state);
    tt_alarm(50);
    return 0;
}

int tt_group_teardown(void **state)
{
    (void)state;
    th_test_teardown(NULL);
    tt_cleanup();
    return 0;
}

/* --------------------------------------------------------------- ports */

int tt_free_port(void)
{
    return dl_launch_free_port();
}

int tt_free_ports(int n, int *out)
{
    return dl_launch_free_ports(n, out);
}

/* ----------------------------------------------------------- processes */

/* Started as the launcher starts servers (tools/launch/launch.h: dies with
 * us, a clean signal state, output appended to logpath), and registered. */
pid_t tt_spawn(const char *const *argv, const char *logpath)
{
    dl_launch_t how = { .log = logpath };
    pid_t pid = dl_launch_spawn(&how, argv);
    if (pid > 0)
        tt_register(pid);
    return pid;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t got = n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    buf[got] = 0;
    fclose(f);
    return buf;
}

pid_t tt_run_bg(const char *const *argv, char *logpath, size_t logsize)
{
    static int seq;
    char path[400];
    /* The pid too: each test runs in a child forked from the same parent,
     * whose count they all start from, and the log is appended to. */
    snprintf(path, sizeof path, "%s/run-%d-%d-%s.log", tt_dir(), (int)getpid(), ++seq, argv[0]);
    if (logpath)
        snprintf(logpath, logsize, "%s", path);
    return tt_spawn(argv, path);
}

/* The waiting, the kill at the time-out and the decoding of the status are
 * th_wait_child_ms()'s; this file's registry is ours to clear (a pid left
 * in it would be killed by tt_cleanup() once the system reuses it). */
int tt_wait_bg(pid_t pid, long timeout_ms)
{
    int st = th_wait_child_ms(pid, timeout_ms);
    tt_forget(pid);
    return st;
}

int tt_run(const char *const *argv, long timeout_ms, char **out)
{
    char path[400];
    pid_t pid = tt_run_bg(argv, path, sizeof path);
    if (pid < 0)
        return -1;
    int st = tt_wait_bg(pid, timeout_ms);
    if (out)
        *out = slurp(path);
    return st;
}

/* ------------------------------------------------------------ commands */

char *tt_info_field(int port, const char *section, const char *field, char *buf, size_t size)
{
    redisReply *r = th_cmd_at(port, "INFO %s", section);
    char *ret = NULL;
    if (r && r->type == REDIS_REPLY_STRING) {
        size_t fl = strlen(field);
        for (const char *p = r->str; p && *p; ) {
            if (strncmp(p, field, fl) == 0 && p[fl] == ':') {
                const char *v = p + fl + 1;
                size_t n = strcspn(v, "\r\n");
                snprintf(buf, size, "%.*s", (int)n, v);
                ret = buf;
                break;
            }
            p = strchr(p, '\n');
            if (p)
                p++;
        }
    }
    if (r)
        freeReplyObject(r);
    return ret;
}

