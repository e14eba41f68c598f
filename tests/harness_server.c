/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_server.c - see harness_server.h. */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* ------------------------------------------------------------------ servers */

static pid_t th_owner_pid;          /* the process that started the server */
static th_server_t th_main_srv;     /* the suite's server, if we started it */
static int th_port;                 /* the suite's port */
static char th_host[128] = "127.0.0.1";

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static pid_t spawn_redis(int port)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        if (!getenv("TH_REDIS_LOG")) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
    }
    th_close_from(3);
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    execlp("redis-server", "redis-server", "--port", ports, "--bind", "127.0.0.1",
           "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", "/tmp",
           (char *)NULL);
    _exit(127);
}

static int ping_port(int port, long timeout_ms)
{
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisSetTimeout(c, tv);
        redisReply *r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

static void reap_server(pid_t pid, long timeout_ms)
{
    int64_t deadline = th_now_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return;
        if (th_now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return;
        }
        th_sleep_ms(5);
    }
}

/* Starts redis-server on port and waits until it answers PING. */
static int start_on(th_server_t *s, int port)
{
    pid_t pid = spawn_redis(port);
    if (pid < 0)
        return -1;
    int64_t deadline = th_now_ms() + 10000;
    while (th_now_ms() < deadline) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return -1;              /* died: port taken? */
        if (ping_port(port, 200)) {
            s->pid = pid;
            s->port = port;
            s->stopped = 0;
            snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", port);
            return 0;
        }
        th_sleep_ms(10);
    }
    kill(pid, SIGKILL);
    reap_server(pid, 1000);
    return -1;
}

int th_server_start(th_server_t *s)
{
    memset(s, 0, sizeof *s);
    for (int attempt = 0; attempt < 8; attempt++) {
        int port = free_port();
        if (port > 0 && start_on(s, port) == 0)
            return 0;
    }
    fprintf(stderr, "harness: could not start redis-server\n");
    return -1;
}

int th_server_restart(th_server_t *s)
{
    if (s->pid)
        th_server_stop(s);
    for (int attempt = 0; attempt < 20; attempt++) {
        if (start_on(s, s->port) == 0)
            return 0;
        th_sleep_ms(100);
    }
    return -1;
}

int th_server_up(const th_server_t *s)
{
    return s->pid && !s->stopped && ping_port(s->port, 1000);
}

void th_server_pause(th_server_t *s)
{
    if (s->pid) {
        kill(s->pid, SIGSTOP);
        s->stopped = 1;
    }
}

void th_server_resume(th_server_t *s)
{
    if (s->pid) {
        kill(s->pid, SIGCONT);
        s->stopped = 0;
    }
}

void th_server_stop(th_server_t *s)
{
    if (!s->pid)
        return;
    if (s->stopped)
        th_server_resume(s);
    kill(s->pid, SIGTERM);
    reap_server(s->pid, 5000);
    s->pid = 0;
}

void th_server_kill(th_server_t *s)
{
    if (!s->pid)
        return;
    kill(s->pid, SIGKILL);
    reap_server(s->pid, 5000);
    s->pid = 0;
    s->stopped = 0;
}

static void parse_url(const char *url)
{
    /* redis://[user[:pw]@]host[:port][/db] */
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    const char *at = strchr(p, '@');
    if (at)
        p = at + 1;
    size_t n = strcspn(p, ":/");
    if (n > 0 && n < sizeof th_host) {
        memcpy(th_host, p, n);
        th_host[n] = 0;
    }
    th_port = 6379;
    if (p[n] == ':')
        th_port = atoi(p + n + 1);
}

static void stop_at_exit(void)
{
    if (getpid() == th_owner_pid)
        th_redis_stop();
}

/* TH_REDLOCK=N (TH_REDLOCK_DOWN=k): the suite runs against redlock:// over
 * N servers, the last k of them down (ports nothing listens on); the
 * first is the suite's server (th_redis_port, th_redis).  So the core
 * suites' cases run unchanged under redlock (ctest: *_redlock*). */
#define TH_RL_MAX 8
static th_server_t th_rl_srv[TH_RL_MAX];

static void rl_stop(void)
{
    for (int i = 0; i < TH_RL_MAX; i++)
        if (th_rl_srv[i].pid)
            th_server_stop(&th_rl_srv[i]);
}

static int rl_start(int n, int down)
{
    char url[64 + 24 * TH_RL_MAX];
    size_t o = (size_t)snprintf(url, sizeof url, "redlock://127.0.0.1:%d", th_main_srv.port);
    for (int i = 1; i < n && i < TH_RL_MAX; i++) {
        int port;
        if (i >= n - down) {
            port = free_port();       /* nothing listens there: a server down */
        } else {
            if (th_server_start(&th_rl_srv[i]) != 0)
                return -1;
            port = th_rl_srv[i].port;
        }
        o += (size_t)snprintf(url + o, sizeof url - o, ",127.0.0.1:%d", port);
    }
    setenv("DISTLOCK_URL", url, 1);
    return 0;
}

int th_redis_start(void)
{
    static int registered;
    const char *url = getenv("DISTLOCK_URL");
    const char *rl = getenv("TH_REDLOCK"), *rldown = getenv("TH_REDLOCK_DOWN");
    if (th_main_srv.pid)
        return 0;
    if (url && *url && !th_owner_pid) {
        parse_url(url);
        th_owner_pid = -1;          /* not ours */
        return 0;
    }
    if (th_owner_pid == -1)
        return 0;
    if (th_server_start(&th_main_srv) != 0)
        return -1;
    th_owner_pid = getpid();
    th_port = th_main_srv.port;
    setenv("DISTLOCK_URL", th_main_srv.url, 1);
    if (rl && atoi(rl) > 1 && rl_start(atoi(rl), rldown ? atoi(rldown) : 0) != 0)
        return -1;
    if (!registered) {
        atexit(stop_at_exit);
        registered = 1;
    }
    return 0;
}

void th_redis_stop(void)
{
    if (th_main_srv.pid && getpid() == th_owner_pid) {
        th_server_stop(&th_main_srv);
        rl_stop();
    }
}

int th_redis_port(void)
{
    if (!th_port) {
        const char *url = getenv("DISTLOCK_URL");
        parse_url(url ? url : "redis://127.0.0.1:6379");
    }
    return th_port;
}

int th_redis_owned(void)
{
    return th_main_srv.pid != 0;
}


const char *th_redis_host(void)
{
    th_redis_port();
    return th_host;
}

void th_redis_kill_owned(void)
{
    if (th_main_srv.pid && getpid() == th_owner_pid)
        kill(th_main_srv.pid, SIGKILL);
}

