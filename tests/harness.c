/* SPDX-License-Identifier: BSD-3-Clause */
/* harness.c - see harness.h. */
#include "harness.h"
#include "status.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>

/* ------------------------------------------------------------------ helpers */

static pid_t th_owner_pid;          /* the process that started the server */
static th_server_t th_main_srv;     /* the suite's server, if we started it */
static int th_port;                 /* the suite's port */
static char th_host[128] = "127.0.0.1";

static void die(const char *what)
{
    fprintf(stderr, "harness [%d]: %s (%s)\n", (int)getpid(), what, strerror(errno));
    fflush(stderr);
    abort();
}

/* write() that neither raises SIGPIPE nor loses bytes to EINTR. */
static int write_all(int fd, const void *buf, size_t len)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    const char *p = buf;
    int ret = 0;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE) {
                struct timespec zero = { 0, 0 };
                siginfo_t si;
                /* Consume the SIGPIPE this write queued, unless one was
                 * pending already. */
                if (!sigismember(&old, SIGPIPE))
                    sigtimedwait(&pipe_set, &si, &zero);
            }
            ret = -1;
            break;
        }
        p += n;
        len -= (size_t)n;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ret;
}

/* Reads exactly len bytes, waiting at most timeout_ms (<0: forever). */
static int read_full(int fd, void *buf, size_t len, long timeout_ms)
{
    char *p = buf;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : th_now_ms() + timeout_ms;
    while (len > 0) {
        int64_t left = deadline == INT64_MAX ? -1 : deadline - th_now_ms();
        if (deadline != INT64_MAX && left <= 0)
            return -1;
        struct pollfd pfd = { fd, POLLIN, 0 };
        int r = poll(&pfd, 1, left < 0 ? -1 : (int)left);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            continue;
        ssize_t n = read(fd, p, len);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        if (n == 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int th_contains(const char *hay, const char *needle)
{
    if (!hay || !needle)
        return 0;
    size_t n = strlen(needle);
    for (const char *h = hay; *h; h++)
        if (strncasecmp(h, needle, n) == 0)
            return 1;
    return n == 0;
}

const char *th_errname(int rc)
{
    static __thread char buf[32];
    switch (rc) {
    case 0: return "0";
    case EINVAL: return "EINVAL";
    case EBUSY: return "EBUSY";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EDEADLK: return "EDEADLK";
    case EPERM: return "EPERM";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOLCK: return "ENOLCK";
    case EAGAIN: return "EAGAIN";
    case EIO: return "EIO";
    case ENOMEM: return "ENOMEM";
    case TH_WAIT_TIMEOUT: return "harness time-out";
    default:
        snprintf(buf, sizeof buf, "code %d", rc);
        return buf;
    }
}

/* ------------------------------------------------------------------- clocks */

int64_t th_now_ms(void)
{
    return th_now_us() / 1000;
}

int64_t th_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct timespec th_abstime_ms(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = (int64_t)ts.tv_nsec + (int64_t)ms * 1000000;
    ts.tv_sec += (time_t)(ns / 1000000000);
    ns %= 1000000000;
    if (ns < 0) {
        ns += 1000000000;
        ts.tv_sec -= 1;
    }
    ts.tv_nsec = (long)ns;
    return ts;
}

void th_sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

void th_sleep_ms(long ms)
{
    th_sleep_us(ms * 1000);
}

int th_wait_until(int (*pred)(void *), void *arg, long timeout_ms)
{
    int64_t deadline = th_now_ms() + timeout_ms;
    for (;;) {
        if (pred(arg))
            return 1;
        if (th_now_ms() >= deadline)
            return 0;
        th_sleep_ms(2);
    }
}

struct zcard_arg { const char *key; long long n; int exists; };

static int zcard_pred(void *p)
{
    struct zcard_arg *a = p;
    return th_cmd_ll("ZCARD %s", a->key) >= a->n;
}

static int exists_pred(void *p)
{
    struct zcard_arg *a = p;
    return th_cmd_ll("EXISTS %s", a->key) == a->exists;
}

int th_wait_zcard(const char *key, long long n, long timeout_ms)
{
    struct zcard_arg a = { key, n, 0 };
    return th_wait_until(zcard_pred, &a, timeout_ms);
}

int th_wait_exists(const char *key, int want, long timeout_ms)
{
    struct zcard_arg a = { key, 0, want };
    return th_wait_until(exists_pred, &a, timeout_ms);
}

void th_wait_queued(const char *name, long long n)
{
    char qkey[300];
    th_key(qkey, sizeof qkey, name, ":q");
    if (!th_wait_zcard(qkey, n, 3000))
        th_sleep_ms(200);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int64_t th_median(int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    return v[n / 2];
}

/* ------------------------------------------------------------------ servers */

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

static void close_from(int lowfd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0)
        return;
#endif
    for (int fd = lowfd; fd < 65536; fd++)
        close(fd);
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
    close_from(3);
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

static pthread_mutex_t th_redis_mu = PTHREAD_MUTEX_INITIALIZER;

static void atfork_child(void)
{
    pthread_mutex_init(&th_children_mu, NULL);
    pthread_mutex_init(&th_redis_mu, NULL);
    memset(th_children, 0, sizeof th_children);
}

static void atfork_once(void)
{
    static int done;
    if (!done) {
        done = 1;
        pthread_atfork(NULL, NULL, atfork_child);
    }
}

pid_t th_fork_child(int (*fn)(void *), void *arg)
{
    atfork_once();
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
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

int th_wait_child(pid_t pid)
{
    return th_wait_child_ms(pid, 30000);
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
    if (th_main_srv.pid && getpid() == th_owner_pid)
        kill(th_main_srv.pid, SIGKILL);
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

/* -------------------------------------------------------- direct connection */

static redisContext *th_ctx;
static pid_t th_ctx_pid;

static redisContext *connect_main(void)
{
    struct timeval tv = { 5, 0 };
    int port = th_redis_port();
    redisContext *c = redisConnectWithTimeout(th_host, port, tv);
    if (!c || c->err) {
        fprintf(stderr, "harness: cannot connect to %s:%d: %s\n", th_host, port,
                c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    int fl = fcntl(c->fd, F_GETFD);
    fcntl(c->fd, F_SETFD, fl | FD_CLOEXEC);
    return c;
}

redisContext *th_redis(void)
{
    if (th_ctx && th_ctx_pid != getpid()) {
        /* The parent's connection: closing our copy of the fd sends nothing. */
        redisFree(th_ctx);
        th_ctx = NULL;
    }
    if (!th_ctx) {
        th_ctx = connect_main();
        th_ctx_pid = getpid();
        if (!th_ctx) {
            errno = ECONNREFUSED;
            die("no connection to the test server");
        }
    }
    return th_ctx;
}

static redisReply *vcmd(const char *fmt, va_list ap)
{
    pthread_mutex_lock(&th_redis_mu);
    va_list ap2;
    va_copy(ap2, ap);
    redisReply *r = redisvCommand(th_redis(), fmt, ap);
    if (!r) {
        redisFree(th_ctx);
        th_ctx = NULL;
        r = redisvCommand(th_redis(), fmt, ap2);
    }
    va_end(ap2);
    pthread_mutex_unlock(&th_redis_mu);
    if (!r) {
        errno = EIO;
        die("command on the test server failed");
    }
    return r;
}

redisReply *th_cmd(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(fmt, ap);
    va_end(ap);
    return r;
}

long long th_cmd_ll(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(fmt, ap);
    va_end(ap);
    long long v;
    switch (r->type) {
    case REDIS_REPLY_INTEGER: v = r->integer; break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS: v = strtoll(r->str, NULL, 10); break;
    case REDIS_REPLY_NIL: v = -1; break;
    default: v = -2; break;
    }
    freeReplyObject(r);
    return v;
}

void th_cmd_do(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(fmt, ap);
    va_end(ap);
    freeReplyObject(r);
}

static redisReply *vcmd_at(int port, const char *fmt, va_list ap)
{
    struct timeval tv = { 2, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    redisReply *r = redisvCommand(c, fmt, ap);
    redisFree(c);
    return r;
}

redisReply *th_cmd_at(int port, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd_at(port, fmt, ap);
    va_end(ap);
    return r;
}

long long th_cmd_at_ll(int port, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd_at(port, fmt, ap);
    va_end(ap);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    return v;
}

struct zcard_at { int port; const char *key; long long n; };

static int zcard_at_reached(void *p)
{
    struct zcard_at *z = p;
    return th_cmd_at_ll(z->port, "ZCARD %s", z->key) >= z->n;
}

int th_wait_zcard_at(int port, const char *key, long long n, long timeout_ms)
{
    struct zcard_at z = { port, key, n };
    return th_wait_until(zcard_at_reached, &z, timeout_ms);
}

const char *th_prefix(void)
{
    const char *p = getenv("DISTLOCK_PREFIX");
    return p ? p : "distlock:";
}

char *th_key(char *buf, size_t size, const char *name, const char *suffix)
{
    /* the library's hash tag (shim/keys.h): names starting with '}' or
     * the escape byte get the escape byte in front */
    const char *esc = name[0] == '}' || name[0] == '\x01' ? "\x01" : "";
    snprintf(buf, size, "%s{%s%s}%s", th_prefix(), esc, name, suffix ? suffix : "");
    return buf;
}

char *th_name(char *buf, size_t size, const char *tag)
{
    static int counter;
    snprintf(buf, size, "%s.%d.%d", tag, (int)getpid(), __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    return buf;
}

long long th_redis_calls(void)
{
    redisReply *r = th_cmd("INFO commandstats");
    long long total = 0;
    if (r->type == REDIS_REPLY_STRING) {
        const char *p = r->str;
        while ((p = strstr(p, "cmdstat_")) != NULL) {
            p += 8;
            const char *colon = strchr(p, ':');
            if (!colon)
                break;
            size_t n = (size_t)(colon - p);
            int skip = (n == 4 && !strncmp(p, "info", 4)) || (n == 6 && !strncmp(p, "config", 6)) ||
                       (n == 4 && !strncmp(p, "ping", 4)) || !strncmp(p, "client", 6);
            const char *c = strstr(colon, "calls=");
            if (c && !skip)
                total += strtoll(c + 6, NULL, 10);
            p = colon;
        }
    }
    freeReplyObject(r);
    return total;
}

/* -------------------------------------------------------------------- pipes */

void th_pipe_open(th_pipe_t *p)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        die("pipe2");
    p->rd = fds[0];
    p->wr = fds[1];
}

void th_pipe_close(th_pipe_t *p)
{
    if (p->rd >= 0)
        close(p->rd);
    if (p->wr >= 0)
        close(p->wr);
    p->rd = p->wr = -1;
}

int th_send(int fd, int64_t tag, int64_t a, int64_t b, int64_t c)
{
    th_msg_t m = { tag, a, b, c };
    return write_all(fd, &m, sizeof m);
}

int th_recv(int fd, th_msg_t *m, long timeout_ms)
{
    return read_full(fd, m, sizeof *m, timeout_ms);
}

char *th_read_all(int fd, long timeout_ms)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    int64_t deadline = th_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - th_now_ms();
        if (left <= 0)
            break;
        struct pollfd pfd = { fd, POLLIN, 0 };
        int r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (len + 1024 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = 0;
    return buf;
}

/* ------------------------------------------------------------------- actors */

struct th_actor {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    th_fn fn;
    void *arg;
    int posted, done, quit, rc;
    pid_t tid;
};

static void *actor_main(void *p)
{
    th_actor_t *a = p;
    pthread_mutex_lock(&a->mu);
    a->tid = (pid_t)syscall(SYS_gettid);
    pthread_cond_broadcast(&a->cv);
    for (;;) {
        while (!a->posted && !a->quit)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->posted) {
            th_fn fn = a->fn;
            void *arg = a->arg;
            pthread_mutex_unlock(&a->mu);
            int rc = fn(arg);
            pthread_mutex_lock(&a->mu);
            a->rc = rc;
            a->posted = 0;
            a->done = 1;
            pthread_cond_broadcast(&a->cv);
            continue;
        }
        if (a->quit)
            break;
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

th_actor_t *th_actor_new(void)
{
    th_actor_t *a = calloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&a->thread, NULL, actor_main, a) != 0)
        die("pthread_create");
    pthread_mutex_lock(&a->mu);
    while (!a->tid)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    return a;
}

pid_t th_actor_tid(th_actor_t *a)
{
    return a->tid;
}

void th_actor_post(th_actor_t *a, th_fn fn, void *arg)
{
    pthread_mutex_lock(&a->mu);
    a->fn = fn;
    a->arg = arg;
    a->done = 0;
    a->posted = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

int th_actor_wait(th_actor_t *a, int *rc, long timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (int64_t)(timeout_ms % 1000) * 1000000;
    ts.tv_sec += timeout_ms / 1000 + ns / 1000000000;
    ts.tv_nsec = (long)(ns % 1000000000);
    pthread_mutex_lock(&a->mu);
    int ret = 0;
    while (!a->done) {
        if (pthread_cond_timedwait(&a->cv, &a->mu, &ts) == ETIMEDOUT) {
            ret = a->done ? 0 : -1;
            break;
        }
    }
    if (ret == 0 && rc)
        *rc = a->rc;
    pthread_mutex_unlock(&a->mu);
    return ret;
}

int th_actor_call(th_actor_t *a, th_fn fn, void *arg)
{
    th_actor_post(a, fn, arg);
    int rc;
    if (th_actor_wait(a, &rc, 10000) != 0)
        return TH_WAIT_TIMEOUT;
    return rc;
}

void th_actor_free(th_actor_t *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->quit = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* -------------------------------------------------------------- actor calls */

int th_do_lock(void *p)
{
    th_lockcall_t *c = p;
    int rc = dist_mutex_lock(c->m);
    c->t_done_us = th_now_us();
    return rc;
}

int th_do_timedlock(void *p)
{
    th_lockcall_t *c = p;
    int rc = dist_mutex_timedlock(c->m, &c->ts);
    c->t_done_us = th_now_us();
    return rc;
}

int th_do_trylock(void *p)
{
    return dist_mutex_trylock(((th_lockcall_t *)p)->m);
}

int th_do_unlock(void *p)
{
    return dist_mutex_unlock(((th_lockcall_t *)p)->m);
}

int th_do_rdlock(void *p)
{
    th_lockcall_t *c = p;
    int rc = dist_rwlock_rdlock(c->rw);
    c->t_done_us = th_now_us();
    return rc;
}

int th_do_wrlock(void *p)
{
    th_lockcall_t *c = p;
    int rc = dist_rwlock_wrlock(c->rw);
    c->t_done_us = th_now_us();
    return rc;
}

int th_do_tryrdlock(void *p)
{
    return dist_rwlock_tryrdlock(((th_lockcall_t *)p)->rw);
}

int th_do_trywrlock(void *p)
{
    return dist_rwlock_trywrlock(((th_lockcall_t *)p)->rw);
}

int th_do_rwunlock(void *p)
{
    return dist_rwlock_unlock(((th_lockcall_t *)p)->rw);
}

/* --------------------------------------------------------------------- procs */

struct proc_obj {
    int kind;               /* 1 mutex, 2 rwlock */
    char *name;
    union { dist_mutex_t m; dist_rwlock_t rw; } u;
};

struct proc_boot {
    const char *const *env;
    int req_rd, res_wr;
    int close1, close2;
};

static struct proc_obj *proc_find(struct proc_obj *objs, int *n, int kind, const th_req_t *q, int *rc)
{
    for (int i = 0; i < *n; i++)
        if (objs[i].kind == kind && strcmp(objs[i].name, q->name) == 0)
            return &objs[i];
    if (*n >= 64) {
        *rc = ENOMEM;
        return NULL;
    }
    struct proc_obj *o = &objs[*n];
    o->kind = kind;
    o->name = strdup(q->name);
    if (kind == 1) {
        dist_mutexattr_t at;
        dist_mutexattr_init(&at);
        if (q->type)
            dist_mutexattr_settype(&at, q->type);
        if (q->fair)
            dist_mutexattr_setfair(&at, q->fair);
        if (q->lease_ms)
            dist_mutexattr_setlease(&at, (unsigned long)q->lease_ms);
        *rc = dist_mutex_init(&o->u.m, o->name, &at);
        dist_mutexattr_destroy(&at);
    } else {
        dist_rwlockattr_t at;
        dist_rwlockattr_init(&at);
        if (q->lease_ms)
            dist_rwlockattr_setlease(&at, (unsigned long)q->lease_ms);
        *rc = dist_rwlock_init(&o->u.rw, o->name, &at);
        dist_rwlockattr_destroy(&at);
    }
    if (*rc != 0) {
        free(o->name);
        return NULL;
    }
    (*n)++;
    return o;
}

void th_setenv_list(const char *const *env)
{
    for (const char *const *e = env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq) {
            char k[128];
            size_t n = (size_t)(eq - *e) < sizeof k - 1 ? (size_t)(eq - *e) : sizeof k - 1;
            memcpy(k, *e, n);
            k[n] = 0;
            setenv(k, eq + 1, 1);
        } else {
            unsetenv(*e);
        }
    }
}

static int proc_main(void *p)
{
    static struct proc_obj objs[64];
    int nobjs = 0;
    struct proc_boot *b = p;
    close(b->close1);
    close(b->close2);
    th_setenv_list(b->env);
    th_req_t q;
    for (;;) {
        if (read_full(b->req_rd, &q, sizeof q, -1) != 0)
            return 0;
        th_res_t r;
        memset(&r, 0, sizeof r);
        if (q.delay_us > 0)
            th_sleep_us(q.delay_us);
        r.t_start_us = th_now_us();
        int rc = 0;
        struct proc_obj *o = NULL;
        int kind = q.op >= TH_M_LOCK && q.op <= TH_M_FENCE ? 1 :
                   q.op >= TH_RW_RDLOCK && q.op <= TH_RW_FENCE ? 2 : 0;
        if (kind)
            o = proc_find(objs, &nobjs, kind, &q, &rc);
        if (kind && !o) {
            r.rc = rc;
        } else {
            struct timespec ts = th_abstime_ms(q.arg);
            switch (q.op) {
            case TH_EXIT:
                return 0;
            case TH_M_LOCK: r.rc = dist_mutex_lock(&o->u.m); break;
            case TH_M_TRYLOCK: r.rc = dist_mutex_trylock(&o->u.m); break;
            case TH_M_TIMEDLOCK: r.rc = dist_mutex_timedlock(&o->u.m, &ts); break;
            case TH_M_UNLOCK: r.rc = dist_mutex_unlock(&o->u.m); break;
            case TH_M_FENCE: r.rc = dist_mutex_getfence(&o->u.m, &r.fence); break;
            case TH_RW_RDLOCK: r.rc = dist_rwlock_rdlock(&o->u.rw); break;
            case TH_RW_TRYRDLOCK: r.rc = dist_rwlock_tryrdlock(&o->u.rw); break;
            case TH_RW_TIMEDRDLOCK: r.rc = dist_rwlock_timedrdlock(&o->u.rw, &ts); break;
            case TH_RW_WRLOCK: r.rc = dist_rwlock_wrlock(&o->u.rw); break;
            case TH_RW_TRYWRLOCK: r.rc = dist_rwlock_trywrlock(&o->u.rw); break;
            case TH_RW_TIMEDWRLOCK: r.rc = dist_rwlock_timedwrlock(&o->u.rw, &ts); break;
            case TH_RW_UNLOCK: r.rc = dist_rwlock_unlock(&o->u.rw); break;
            case TH_RW_FENCE: r.rc = dist_rwlock_getfence(&o->u.rw, &r.fence); break;
            case TH_SLEEP: th_sleep_ms(q.arg); break;
            case TH_STATS: {
                dl_stats_t s;
                dl_stats_get(&s);
                r.fence = s.fallback_checks;
                r.a = (int64_t)s.grants;
                r.b = (int64_t)s.lost;
                break;
            }
            case TH_INCR: r.fence = (uint64_t)th_cmd_ll("INCR %s", q.name); break;
            default: r.rc = -1; break;
            }
        }
        r.t_done_us = th_now_us();
        snprintf(r.err, sizeof r.err, "%s", dist_lasterror());
        if (write_all(b->res_wr, &r, sizeof r) != 0)
            return 0;
    }
}

int th_proc_start(th_proc_t *p, const char *const *env)
{
    th_pipe_t req, res;
    th_pipe_open(&req);
    th_pipe_open(&res);
    struct proc_boot b = { env, req.rd, res.wr, req.wr, res.rd };
    p->pid = th_fork_child(proc_main, &b);
    close(req.rd);
    close(res.wr);
    p->req_wr = req.wr;
    p->res_rd = res.rd;
    return p->pid > 0 ? 0 : -1;
}

int th_proc_send(th_proc_t *p, const th_req_t *req)
{
    return write_all(p->req_wr, req, sizeof *req);
}

static char th_proc_err[256];

const char *th_proc_lasterror(void)
{
    return th_proc_err;
}

int th_proc_recv(th_proc_t *p, th_res_t *res, long timeout_ms)
{
    int r = read_full(p->res_rd, res, sizeof *res, timeout_ms);
    if (r == 0) {
        res->err[sizeof res->err - 1] = 0;
        snprintf(th_proc_err, sizeof th_proc_err, "%s", res->err);
    }
    return r;
}

int th_proc_call(th_proc_t *p, const th_req_t *req, th_res_t *res)
{
    th_res_t tmp;
    if (!res)
        res = &tmp;
    if (th_proc_send(p, req) != 0 || th_proc_recv(p, res, 15000) != 0)
        return TH_WAIT_TIMEOUT;
    return res->rc;
}

void th_proc_req(th_req_t *q, int op, const char *name)
{
    memset(q, 0, sizeof *q);
    q->op = op;
    snprintf(q->name, sizeof q->name, "%s", name ? name : "");
}

int th_proc_op(th_proc_t *p, int op, const char *name)
{
    th_req_t q;
    th_proc_req(&q, op, name);
    return th_proc_call(p, &q, NULL);
}

int th_proc_op_async(th_proc_t *p, int op, const char *name)
{
    th_req_t q;
    th_proc_req(&q, op, name);
    return th_proc_send(p, &q);
}

int th_proc_opa(th_proc_t *p, int op, const char *name, long arg, th_res_t *res)
{
    th_req_t q;
    th_proc_req(&q, op, name);
    q.arg = arg;
    return th_proc_call(p, &q, res);
}

int th_proc_opa_async(th_proc_t *p, int op, const char *name, long arg)
{
    th_req_t q;
    th_proc_req(&q, op, name);
    q.arg = arg;
    return th_proc_send(p, &q);
}

int th_proc_stop(th_proc_t *p)
{
    if (p->pid <= 0)
        return -1;
    th_req_t q;
    th_proc_req(&q, TH_EXIT, "");
    th_proc_send(p, &q);
    int st = th_wait_child_ms(p->pid, 10000);
    close(p->req_wr);
    close(p->res_rd);
    p->pid = 0;
    return st;
}

void th_proc_kill(th_proc_t *p)
{
    if (p->pid <= 0)
        return;
    th_kill_child(p->pid);
    close(p->req_wr);
    close(p->res_rd);
    p->pid = 0;
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

/* ------------------------------------------------------------ connections */

int th_proc_sockets(pid_t pid, int remote_port, int *local_ports, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", pid ? (int)pid : (int)getpid());
    unsigned long inodes[512];
    int ninodes = 0;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && ninodes < 512) {
        char lp[400], target[64];
        snprintf(lp, sizeof lp, "%s/%s", path, e->d_name);
        ssize_t n = readlink(lp, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        unsigned long ino;
        if (sscanf(target, "socket:[%lu]", &ino) == 1)
            inodes[ninodes++] = ino;
    }
    closedir(d);
    int count = 0;
    const char *tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
    for (int t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        if (!f)
            continue;
        char line[512];
        if (!fgets(line, sizeof line, f)) {     /* header */
            fclose(f);
            continue;
        }
        while (fgets(line, sizeof line, f)) {
            char local[64], remote[64];
            unsigned long ino = 0;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %*s %*s %lu", local, remote, &ino) != 3)
                continue;
            const char *lc = strrchr(local, ':'), *rc = strrchr(remote, ':');
            if (!lc || !rc || (int)strtol(rc + 1, NULL, 16) != remote_port)
                continue;
            for (int i = 0; i < ninodes; i++)
                if (inodes[i] == ino) {
                    if (local_ports && count < max)
                        local_ports[count] = (int)strtol(lc + 1, NULL, 16);
                    count++;
                    break;
                }
        }
        fclose(f);
    }
    return count;
}

int th_kill_subscribers_of(pid_t pid)
{
    int ports[64];
    int n = th_proc_sockets(pid, th_redis_port(), ports, 64);
    if (n > 64)
        n = 64;
    redisReply *r = th_cmd("CLIENT LIST TYPE pubsub");
    int killed = 0;
    if (r->type == REDIS_REPLY_STRING) {
        for (const char *p = r->str; (p = strstr(p, " addr=")) != NULL; p++) {
            const char *colon = strchr(p + 6, ':');
            const char *sp = strchr(p + 6, ' ');
            if (!colon || (sp && colon > sp))
                continue;
            int port = atoi(colon + 1);
            for (int i = 0; i < n; i++)
                if (ports[i] == port) {
                    char addr[80];
                    snprintf(addr, sizeof addr, "%.*s", (int)(sp ? sp - (p + 6) : 60), p + 6);
                    if (th_cmd_ll("CLIENT KILL ADDR %s", addr) >= 0)
                        killed++;
                    break;
                }
        }
    }
    freeReplyObject(r);
    return killed;
}
