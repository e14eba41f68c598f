/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_server.c - see harness_server.h. */
#include "harness.h"

#include <signal.h>
#include <string.h>

#include "launch.h"

/* ------------------------------------------------------------------ servers */

static pid_t th_owner_pid;          /* the process that started the server */
static th_server_t th_main_srv;     /* the suite's server, if we started it */
static int th_port;                 /* the suite's port */
static char th_host[128] = "127.0.0.1";

/* Starts redis-server on port (0: a free one) and waits until it answers
 * (tools/launch/launch.h).  Its output goes to /dev/null, or with
 * TH_REDIS_LOG set to the suite's own. */
static int start_on(th_server_t *s, int port)
{
    dl_launch_t how = { .dir = "/tmp", .keep_output = getenv("TH_REDIS_LOG") != NULL };
    dl_launched_t srv;
    if (dl_launch_start(&how, port, &srv) != 0)
        return -1;
    s->pid = srv.pid;
    s->port = srv.port;
    s->stopped = 0;
    snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", srv.port);
    return 0;
}

int th_server_start(th_server_t *s)
{
    memset(s, 0, sizeof *s);
    if (start_on(s, 0) == 0)
        return 0;
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
    return s->pid && !s->stopped && dl_launch_ping(s->port, 1000);
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
    dl_launch_stop(s->pid, 5000);           /* SIGCONT first: it may be paused */
    s->pid = 0;
    s->stopped = 0;
}

void th_server_kill(th_server_t *s)
{
    if (!s->pid)
        return;
    dl_launch_kill(s->pid, 5000);
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
            port = dl_launch_free_port();  /* nothing listens there: a server down */
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

