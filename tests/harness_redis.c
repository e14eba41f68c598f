/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_redis.c - see harness_redis.h. */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>

/* -------------------------------------------------------- direct connection */

static redisContext *th_ctx;
static pid_t th_ctx_pid;
static pthread_mutex_t th_redis_mu = PTHREAD_MUTEX_INITIALIZER;

/* A child forked while another thread held the connection's mutex gets
 * it unlocked (the child makes its own connection anyway). */
static void redis_atfork_child(void)
{
    pthread_mutex_init(&th_redis_mu, NULL);
}

static void redis_atfork_register(void)
{
    pthread_atfork(NULL, NULL, redis_atfork_child);
}

void th_redis_atfork(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, redis_atfork_register);
}

static redisContext *connect_main(void)
{
    struct timeval tv = { 5, 0 };
    int port = th_redis_port();
    redisContext *c = redisConnectWithTimeout(th_redis_host(), port, tv);
    if (!c || c->err) {
        fprintf(stderr, "harness: cannot connect to %s:%d: %s\n", th_redis_host(), port,
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
            th_die("no connection to the test server");
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
        th_die("command on the test server failed");
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
    /* the library's hash tag (shim/base/keys.h): names starting with '}' or
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

/* ------------------------------------------------------- waits on Redis */

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

void th_lock_lose(int port, const char *name)
{
    static const char *sfx[] = { "", ":r", ":ri", ":q", ":w", ":m" };
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        char k[300];
        th_key(k, sizeof k, name, sfx[i]);
        redisReply *r = th_cmd_at(port ? port : th_redis_port(), "DEL %s", k);
        if (r)
            freeReplyObject(r);
    }
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
