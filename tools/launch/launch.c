/* SPDX-License-Identifier: BSD-3-Clause */
/* launch.c - private redis-servers for the tests and the bench (launch.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <hiredis/hiredis.h>

#include "launch.h"

#define TRIES 8               /* free ports tried by dl_launch_start */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ------------------------------------------------------------------ ports */

/* A socket bound to a port of 127.0.0.1 the kernel chose: the fd (the
 * port in *port), or -1. */
static int bound_socket(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

int dl_launch_free_port(void)
{
    int port = -1, fd = bound_socket(&port);
    if (fd < 0)
        return -1;
    close(fd);
    return port;
}

int dl_launch_free_ports(int n, int *out)
{
    int fds[32], got = 0;
    if (n > 32)
        return -1;
    /* Held open together, so the kernel gives n different ones. */
    while (got < n && (fds[got] = bound_socket(&out[got])) >= 0)
        got++;
    for (int i = 0; i < got; i++)
        close(fds[i]);
    return got == n ? 0 : -1;
}

/* -------------------------------------------------------------- processes */

void dl_launch_close_from(int lowfd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0)
        return;
#endif
    for (int fd = lowfd; fd < 65536; fd++)
        close(fd);
}

pid_t dl_launch_spawn(const dl_launch_t *how, const char *const *argv)
{
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid < 0 ? -1 : pid;
    /* It goes when we go, even if we are killed; if we are gone already,
     * it must not start at all. */
    prctl(PR_SET_PDEATHSIG, how->deathsig ? how->deathsig : SIGKILL);
    if (getppid() != parent)
        _exit(127);
    if (how->own_group)
        setpgid(0, 0);
    /* What the starter blocked, ignored or scheduled is not the server's. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
    alarm(0);
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0)
        dup2(in, 0);
    if (!how->keep_output) {
        int out = open(how->log ? how->log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (out >= 0) {
            dup2(out, 1);
            dup2(out, 2);
        }
    }
    dl_launch_close_from(3);               /* nothing of the starter's but stdio */
    if (how->in_child)
        how->in_child(how->arg);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

/* Does 127.0.0.1:port answer as process pid?  (A port can be taken by
 * someone else between its choice and the server's bind.) */
static int answers_as(int port, pid_t pid)
{
    struct timeval tv = { 0, 200000 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisSetTimeout(c, tv);
        redisReply *r = redisCommand(c, "INFO server");
        if (r && r->type == REDIS_REPLY_STRING) {
            const char *p = strstr(r->str, "process_id:");
            ok = p && atol(p + 11) == (long)pid;
        }
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

int dl_launch_ping(int port, long timeout_ms)
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

/* Waits for pid to end, at most timeout_ms, then SIGKILLs it; returns at
 * once for a pid that is not our child. */
static void reap(pid_t pid, long timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return;
        if (now_ms() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return;
        }
        sleep_ms(5);
    }
}

int dl_launch_wait_up(pid_t pid, int port, long timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return -1;                      /* it died: its port taken? */
        if (answers_as(port, pid))
            return 0;
        if (now_ms() >= deadline)
            break;
        sleep_ms(10);
    }
    dl_launch_kill(pid, 1000);
    return -1;
}

/* One try on port (and tls_port with TLS). */
static pid_t start_on(const dl_launch_t *how, int port, int tls_port)
{
    size_t nextra = 0;
    while (how->extra && how->extra[nextra])
        nextra++;
    const char **argv = malloc((24 + nextra) * sizeof *argv);
    if (!argv)
        return -1;
    char ports[16], tports[16];
    snprintf(ports, sizeof ports, "%d", port);
    snprintf(tports, sizeof tports, "%d", tls_port);
    size_t a = 0;
    argv[a++] = how->program ? how->program : "redis-server";
    argv[a++] = "--port";
    argv[a++] = ports;
    argv[a++] = "--bind";
    argv[a++] = "127.0.0.1";
    argv[a++] = "--save";
    argv[a++] = "";
    argv[a++] = "--appendonly";
    argv[a++] = "no";
    argv[a++] = "--daemonize";
    argv[a++] = "no";
    argv[a++] = "--dir";
    argv[a++] = how->dir ? how->dir : "/tmp";
    if (how->tls_cert) {
        argv[a++] = "--tls-port";
        argv[a++] = tports;
        argv[a++] = "--tls-cert-file";
        argv[a++] = how->tls_cert;
        argv[a++] = "--tls-key-file";
        argv[a++] = how->tls_key ? how->tls_key : "";
        argv[a++] = "--tls-ca-cert-file";
        argv[a++] = how->tls_ca ? how->tls_ca : "";
    }
    for (size_t i = 0; i < nextra; i++)
        argv[a++] = how->extra[i];
    argv[a] = NULL;
    pid_t pid = dl_launch_spawn(how, argv);
    free(argv);
    if (pid < 0)
        return -1;
    return dl_launch_wait_up(pid, port, how->up_ms ? how->up_ms : 10000) == 0 ? pid : -1;
}

int dl_launch_start(const dl_launch_t *how, int port, dl_launched_t *out)
{
    for (int attempt = 0; attempt < (port ? 1 : TRIES); attempt++) {
        int p = port ? port : dl_launch_free_port();
        int tp = how->tls_cert ? dl_launch_free_port() : 0;
        if (p <= 0 || tp < 0)
            continue;
        pid_t pid = start_on(how, p, tp);
        if (pid > 0) {
            out->pid = pid;
            out->port = p;
            out->tls_port = tp;
            return 0;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------- stop */

void dl_launch_stop(pid_t pid, long timeout_ms)
{
    if (pid <= 0)
        return;
    kill(pid, SIGCONT);
    kill(pid, SIGTERM);
    reap(pid, timeout_ms);
}

void dl_launch_kill(pid_t pid, long timeout_ms)
{
    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    reap(pid, timeout_ms);
}

void dl_launch_stop_now(pid_t pid, int sig)
{
    int st;
    if (pid <= 0 || waitpid(pid, &st, WNOHANG) != 0)
        return;                             /* reaped now or earlier, or not ours */
    kill(pid, SIGCONT);
    kill(pid, sig);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}
