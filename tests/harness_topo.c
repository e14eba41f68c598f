/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_topo.c - see harness_topo.h. */
#include "harness_topo.h"
#include "status.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* ----------------------------------------------------------- registry */

#define TT_MAX_PIDS 128

static pid_t tt_owner;                      /* the process that made the directory */
static char tt_dirbuf[256];
static volatile pid_t tt_pids[TT_MAX_PIDS];

static void tt_register(pid_t pid)
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
static void kill_ours(pid_t pid)
{
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r != 0)
        return;                             /* reaped now or earlier, or not ours */
    kill(pid, SIGCONT);
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
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
            kill_ours(pid);
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
                kill_ours(tt_pids[i]);
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

int tt_free_port(void)
{
    int port = -1;
    int fd = bound_socket(&port);
    if (fd < 0)
        return -1;
    close(fd);
    return port;
}

/* n distinct free ports. */
static int free_ports(int n, int *out)
{
    int fds[32];
    if (n > 32)
        return -1;
    int ok = 0;
    for (int i = 0; i < n; i++) {
        fds[i] = bound_socket(&out[i]);
        if (fds[i] < 0) {
            for (int j = 0; j < i; j++)
                close(fds[j]);
            return -1;
        }
        ok++;
    }
    for (int i = 0; i < ok; i++)
        close(fds[i]);
    return 0;
}

/* ----------------------------------------------------------- processes */

static void close_from(int lowfd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0)
        return;
#endif
    for (int fd = lowfd; fd < 65536; fd++)
        close(fd);
}

/* fork + execvp with stdout/stderr appended to logpath; dies with us. */
static pid_t spawn(const char *const *argv, const char *logpath)
{
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0) {
        tt_register(pid);
        return pid;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
    alarm(0);
    int in = open("/dev/null", O_RDONLY);
    int out = open(logpath ? logpath : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in >= 0)
        dup2(in, 0);
    if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
    }
    close_from(3);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
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
    snprintf(path, sizeof path, "%s/run-%d-%s.log", tt_dir(), ++seq, argv[0]);
    if (logpath)
        snprintf(logpath, logsize, "%s", path);
    return spawn(argv, path);
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

static int ping(int port)
{
    redisReply *r = th_cmd_at(port, "PING");
    int ok = r && ((r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0) ||
                   (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "LOADING", 7) == 0));
    if (r)
        freeReplyObject(r);
    return ok;
}

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

/* ------------------------------------------------------------- servers */

static int wait_up(pid_t pid, int port, long timeout_ms)
{
    int64_t deadline = th_now_ms() + timeout_ms;
    while (th_now_ms() < deadline) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            tt_forget(pid);
            return -1;                      /* died: port taken? */
        }
        if (ping(port))
            return 0;
        th_sleep_ms(10);
    }
    kill_ours(pid);
    tt_forget(pid);
    return -1;
}

static pid_t start_argv(const char *const *argv, int port, const char *tag)
{
    char log[400];
    snprintf(log, sizeof log, "%s/%s-%d.log", tt_dir(), tag, port);
    pid_t pid = spawn(argv, log);
    if (pid < 0)
        return -1;
    if (wait_up(pid, port, 10000) != 0)
        return -1;
    return pid;
}

static char tls_cert[400], tls_key[400], tls_ca[400];

void tt_tls_use(const char *cert, const char *key, const char *ca)
{
    snprintf(tls_cert, sizeof tls_cert, "%s", cert ? cert : "");
    snprintf(tls_key, sizeof tls_key, "%s", cert ? key : "");
    snprintf(tls_ca, sizeof tls_ca, "%s", cert ? ca : "");
}

int tt_server_start_on(th_server_t *s, int port, const char *const *extra)
{
    const char *argv[64];
    char ports[16], dbfile[32], tports[16];
    int a = 0, tls_port = 0;
    snprintf(ports, sizeof ports, "%d", port);
    snprintf(dbfile, sizeof dbfile, "dump-%d.rdb", port);
    argv[a++] = "redis-server";
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
    argv[a++] = tt_dir();
    argv[a++] = "--repl-diskless-sync-delay";
    argv[a++] = "0";
    argv[a++] = "--dbfilename";             /* servers share the directory */
    argv[a++] = dbfile;
    if (tls_cert[0]) {
        tls_port = tt_free_port();
        snprintf(tports, sizeof tports, "%d", tls_port);
        const char *t[] = { "--tls-port", tports, "--tls-cert-file", tls_cert, "--tls-key-file",
                            tls_key, "--tls-ca-cert-file", tls_ca, "--tls-replication", "yes",
                            "--tls-cluster", "yes" };
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
            argv[a++] = t[i];
    }
    for (const char *const *e = extra; e && *e && a < 62; e++)
        argv[a++] = *e;
    argv[a] = NULL;
    pid_t pid = start_argv(argv, port, "redis");
    if (pid < 0)
        return -1;
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->port = port;
    s->tls_port = tls_port;
    snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", port);
    return 0;
}

int tt_server_start(th_server_t *s, const char *const *extra)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        int port = tt_free_port();
        if (port > 0 && tt_server_start_on(s, port, extra) == 0)
            return 0;
    }
    fprintf(stderr, "harness_topo: could not start redis-server\n");
    return -1;
}

struct repl_arg { int replica, master; };

static int replica_up(void *p)
{
    struct repl_arg *a = p;
    char buf[64];
    if (!tt_info_field(a->replica, "replication", "master_link_status", buf, sizeof buf) ||
        strcmp(buf, "up") != 0)
        return 0;
    /* "online" is not enough: after a diskless full sync the master streams
     * nothing to the replica (not even WAIT's GETACK) until the replica's
     * next ACK, up to 1 s later.  Ready means: a write is acknowledged. */
    struct timeval tv = { 2, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", a->master, tv);
    int ok = 0;
    if (c && !c->err) {
        redisSetTimeout(c, tv);
        redisReply *r = redisCommand(c, "INCR harness-topo:replica-sync");
        if (r)
            freeReplyObject(r);
        r = redisCommand(c, "WAIT 1 100");
        ok = r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1;
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

int tt_replica_start(th_server_t *s, int master_port)
{
    char mp[16];
    snprintf(mp, sizeof mp, "%d", master_port);
    const char *extra[] = { "--replicaof", "127.0.0.1", mp, NULL };
    if (tt_server_start(s, extra) != 0)
        return -1;
    struct repl_arg a = { s->port, master_port };
    if (!th_wait_until(replica_up, &a, 10000)) {
        fprintf(stderr, "harness_topo: replica %d of %d never came up\n", s->port, master_port);
        return -1;
    }
    return 0;
}

/* ----------------------------------------------------------- sentinels */

/* Field of a SENTINEL MASTER reply (a flat field/value array). */
static long long sentinel_field(int port, const char *master, const char *field)
{
    redisReply *r = th_cmd_at(port, "SENTINEL MASTER %s", master);
    long long v = -1;
    if (r && r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i + 1 < r->elements; i += 2)
            if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, field) == 0 &&
                r->element[i + 1]->type == REDIS_REPLY_STRING)
                v = strtoll(r->element[i + 1]->str, NULL, 10);
    if (r)
        freeReplyObject(r);
    return v;
}

struct sent_arg { const tt_sentinels_t *st; int replicas; };

static int sentinels_ready(void *p)
{
    struct sent_arg *a = p;
    for (int i = 0; i < a->st->n; i++) {
        int port = a->st->s[i].port;
        if (sentinel_field(port, a->st->master, "num-slaves") < a->replicas ||
            sentinel_field(port, a->st->master, "num-other-sentinels") < a->st->n - 1)
            return 0;
    }
    return 1;
}

int tt_sentinels_start(tt_sentinels_t *st, int n, const char *master_name, int master_port,
                       int quorum, int replicas)
{
    memset(st, 0, sizeof *st);
    if (n > TT_MAX_SENTINELS)
        return -1;
    snprintf(st->master, sizeof st->master, "%s", master_name);
    for (int i = 0; i < n; i++) {
        int started = 0;
        for (int attempt = 0; attempt < 8 && !started; attempt++) {
            int port = tt_free_port();
            char conf[400];
            snprintf(conf, sizeof conf, "%s/sentinel-%d.conf", tt_dir(), port);
            FILE *f = fopen(conf, "w");
            if (!f)
                return -1;
            fprintf(f,
                    "port %d\n"
                    "bind 127.0.0.1\n"
                    "daemonize no\n"
                    "dir %s\n"
                    "sentinel resolve-hostnames no\n"
                    "sentinel monitor %s 127.0.0.1 %d %d\n"
                    "sentinel down-after-milliseconds %s 1000\n"
                    "sentinel failover-timeout %s 3000\n"
                    "sentinel parallel-syncs %s 1\n",
                    port, tt_dir(), master_name, master_port, quorum, master_name, master_name,
                    master_name);
            int tls_port = 0;
            if (tls_cert[0]) {
                tls_port = tt_free_port();
                fprintf(f, "tls-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\n"
                        "tls-replication yes\n", tls_port, tls_cert, tls_key, tls_ca);
            }
            fclose(f);
            const char *argv[] = { "redis-server", conf, "--sentinel", NULL };
            pid_t pid = start_argv(argv, port, "sentinel");
            if (pid > 0) {
                st->s[i].pid = pid;
                st->s[i].port = port;
                st->s[i].tls_port = tls_port;
                snprintf(st->s[i].url, sizeof st->s[i].url, "redis://127.0.0.1:%d", port);
                started = 1;
            }
        }
        if (!started) {
            fprintf(stderr, "harness_topo: could not start sentinel %d\n", i);
            return -1;
        }
        st->n = i + 1;
    }
    struct sent_arg a = { st, replicas };
    if (!th_wait_until(sentinels_ready, &a, 20000)) {
        fprintf(stderr, "harness_topo: the sentinels did not discover each other / the replicas\n");
        return -1;
    }
    return 0;
}

void tt_sentinels_stop(tt_sentinels_t *st)
{
    for (int i = 0; i < st->n; i++) {
        pid_t pid = st->s[i].pid;
        if (pid) {
            th_server_kill(&st->s[i]);
            tt_forget(pid);
        }
    }
    st->n = 0;
}

int tt_sentinel_master_port(const tt_sentinels_t *st, int i)
{
    redisReply *r = th_cmd_at(st->s[i].port, "SENTINEL get-master-addr-by-name %s", st->master);
    int port = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    if (r)
        freeReplyObject(r);
    return port;
}

char *tt_sentinel_url(const tt_sentinels_t *st, char *buf, size_t size)
{
    size_t o = (size_t)snprintf(buf, size, "redis-sentinel://");
    for (int i = 0; i < st->n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s127.0.0.1:%d", i ? "," : "", st->s[i].port);
    if (o < size)
        snprintf(buf + o, size - o, "/%s", st->master);
    return buf;
}

/* ------------------------------------------------------------- cluster */

int tt_cluster_index(const tt_cluster_t *c, int port)
{
    for (int i = 0; i < TT_CLUSTER_NODES; i++)
        if (c->node[i].port == port)
            return i;
    return -1;
}

int tt_cluster_slot_map(const tt_cluster_t *c, int i, int *map)
{
    redisReply *r = th_cmd_at(c->node[i].port, "CLUSTER SLOTS");
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    memset(map, 0, 16384 * sizeof *map);
    for (size_t k = 0; k < r->elements; k++) {
        redisReply *e = r->element[k];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[2]->type != REDIS_REPLY_ARRAY ||
            e->element[2]->elements < 2)
            continue;
        long long lo = e->element[0]->integer, hi = e->element[1]->integer;
        int port = (int)e->element[2]->element[1]->integer;
        for (long long s = lo; s <= hi && s < 16384; s++)
            if (s >= 0)
                map[s] = port;
    }
    freeReplyObject(r);
    return 0;
}

int tt_cluster_masters(const tt_cluster_t *c, int *idx, int max)
{
    int *map = malloc(16384 * sizeof *map);
    int n = 0;
    if (map && tt_cluster_slot_map(c, 0, map) == 0) {
        for (int s = 0; s < 16384; s++) {
            int i = tt_cluster_index(c, map[s]);
            if (i < 0)
                continue;
            int seen = 0;
            for (int k = 0; k < n; k++)
                seen |= idx[k] == i;
            if (!seen && n < max)
                idx[n++] = i;
        }
    }
    free(map);
    return n;
}

static int cluster_ok(void *p)
{
    const tt_cluster_t *c = p;
    int *m0 = malloc(16384 * sizeof *m0), *mi = malloc(16384 * sizeof *mi);
    int ok = m0 && mi;
    for (int i = 0; ok && i < TT_CLUSTER_NODES; i++) {
        if (!c->node[i].pid)
            continue;
        redisReply *r = th_cmd_at(c->node[i].port, "CLUSTER INFO");
        ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
        if (r)
            freeReplyObject(r);
        if (!ok)
            break;
        if (tt_cluster_slot_map(c, i, i ? mi : m0) != 0) {
            ok = 0;
            break;
        }
        if (i == 0) {
            for (int s = 0; s < 16384 && ok; s++)
                ok = m0[s] != 0;
        } else {
            ok = memcmp(m0, mi, 16384 * sizeof *m0) == 0;
        }
    }
    free(m0);
    free(mi);
    return ok;
}

int tt_cluster_wait_ok(const tt_cluster_t *c, long timeout_ms)
{
    return th_wait_until(cluster_ok, (void *)c, timeout_ms);
}

/* Every master's replica acknowledges a write (WAIT 1): replicas that have
 * just synchronised get nothing streamed until their next ACK (<= 1 s). */
static int cluster_replicas_ack(const tt_cluster_t *c, long timeout_ms)
{
    int *map = malloc(16384 * sizeof *map);
    int ok = map && tt_cluster_slot_map(c, 0, map) == 0;
    int64_t deadline = th_now_ms() + timeout_ms;
    for (int i = 0; ok && i < TT_CLUSTER_NODES; i++) {
        int port = c->node[i].port, n;
        char key[64];
        for (n = 0;; n++) {                 /* a key this master serves */
            snprintf(key, sizeof key, "harness-topo:{%d}", n);
            unsigned slot = tt_key_slot(key, strlen(key));
            if (map[slot] == port)
                break;
            if (n > 100000)
                break;
        }
        if (n > 100000)
            continue;                       /* a replica: serves no slot */
        int acked = 0;
        while (!acked && th_now_ms() < deadline) {
            struct timeval tv = { 2, 0 };
            redisContext *ctx = redisConnectWithTimeout("127.0.0.1", port, tv);
            if (ctx && !ctx->err) {
                redisSetTimeout(ctx, tv);
                redisReply *r = redisCommand(ctx, "INCR %s", key);
                if (r)
                    freeReplyObject(r);
                r = redisCommand(ctx, "WAIT 1 100");
                acked = r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1;
                if (r)
                    freeReplyObject(r);
            }
            if (ctx)
                redisFree(ctx);
            if (!acked)
                th_sleep_ms(20);
        }
        ok = acked;
    }
    free(map);
    return ok;
}

int tt_cluster_start(tt_cluster_t *c)
{
    memset(c, 0, sizeof *c);
    for (int attempt = 0; attempt < 4; attempt++) {
        int ports[2 * TT_CLUSTER_NODES];
        if (free_ports(2 * TT_CLUSTER_NODES, ports) != 0)
            continue;
        int ok = 1;
        for (int i = 0; i < TT_CLUSTER_NODES && ok; i++) {
            char conf[64], bus[16];
            snprintf(conf, sizeof conf, "nodes-%d.conf", ports[i]);
            snprintf(bus, sizeof bus, "%d", ports[TT_CLUSTER_NODES + i]);
            const char *extra[] = { "--cluster-enabled", "yes", "--cluster-config-file", conf,
                                    "--cluster-port", bus, "--cluster-node-timeout", "3000",
                                    NULL };
            ok = tt_server_start_on(&c->node[i], ports[i], extra) == 0;
            c->bus[i] = ports[TT_CLUSTER_NODES + i];
        }
        if (!ok) {
            tt_cluster_stop(c);
            continue;
        }
        const char *argv[32];
        char addr[TT_CLUSTER_NODES][32];
        int a = 0;
        argv[a++] = "redis-cli";
        argv[a++] = "--cluster";
        argv[a++] = "create";
        for (int i = 0; i < TT_CLUSTER_NODES; i++) {
            snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", c->node[i].port);
            argv[a++] = addr[i];
        }
        argv[a++] = "--cluster-replicas";
        argv[a++] = "1";
        argv[a++] = "--cluster-yes";
        argv[a] = NULL;
        char *out = NULL;
        int st = tt_run(argv, 30000, &out);
        if (st != 0) {
            fprintf(stderr, "harness_topo: redis-cli --cluster create: status %d:\n%s\n", st, out);
            free(out);
            tt_cluster_stop(c);
            continue;
        }
        free(out);
        if (!tt_cluster_wait_ok(c, 30000)) {
            fprintf(stderr, "harness_topo: the cluster never reached cluster_state:ok everywhere\n");
            tt_cluster_stop(c);
            return -1;
        }
        if (!cluster_replicas_ack(c, 15000)) {
            fprintf(stderr, "harness_topo: the cluster's replicas never acknowledged a write\n");
            tt_cluster_stop(c);
            return -1;
        }
        for (int i = 0; i < TT_CLUSTER_NODES; i++) {
            redisReply *r = th_cmd_at(c->node[i].port, "CLUSTER MYID");
            if (r && r->type == REDIS_REPLY_STRING)
                snprintf(c->id[i], sizeof c->id[i], "%s", r->str);
            if (r)
                freeReplyObject(r);
        }
        return 0;
    }
    return -1;
}

void tt_cluster_stop(tt_cluster_t *c)
{
    for (int i = 0; i < TT_CLUSTER_NODES; i++) {
        pid_t pid = c->node[i].pid;
        if (pid) {
            th_server_kill(&c->node[i]);
            tt_forget(pid);
        }
    }
}

char *tt_cluster_url(const tt_cluster_t *c, int seeds, char *buf, size_t size)
{
    if (seeds <= 0 || seeds > TT_CLUSTER_NODES)
        seeds = TT_CLUSTER_NODES;
    size_t o = (size_t)snprintf(buf, size, "redis-cluster://");
    for (int i = 0; i < seeds && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s127.0.0.1:%d", i ? "," : "", c->node[i].port);
    return buf;
}

pid_t tt_reshard_start(const tt_cluster_t *c, int from, int to, int slots, int pipeline,
                       char *logpath, size_t logsize)
{
    char addr[32], nslots[16], pipe_s[16];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", c->node[from].port);
    snprintf(nslots, sizeof nslots, "%d", slots);
    snprintf(pipe_s, sizeof pipe_s, "%d", pipeline > 0 ? pipeline : 10);
    const char *argv[] = { "redis-cli", "--cluster", "reshard", addr,
                           "--cluster-from", c->id[from], "--cluster-to", c->id[to],
                           "--cluster-slots", nslots, "--cluster-yes",
                           "--cluster-pipeline", pipe_s, NULL };
    return tt_run_bg(argv, logpath, logsize);
}

int tt_cluster_check(const tt_cluster_t *c, char **out)
{
    char addr[32];
    int i = 0;
    while (i < TT_CLUSTER_NODES && !c->node[i].pid)
        i++;
    if (i == TT_CLUSTER_NODES)
        return -1;
    snprintf(addr, sizeof addr, "127.0.0.1:%d", c->node[i].port);
    const char *argv[] = { "redis-cli", "--cluster", "check", addr, NULL };
    char *text = NULL;
    int st = tt_run(argv, 20000, &text);
    if (st == 0 && text && (strstr(text, "[ERR]") || strstr(text, "[WARNING]")))
        st = 1;
    if (out)
        *out = text;
    else
        free(text);
    return st;
}

/* CRC16-CCITT (XMODEM), the polynomial of Redis Cluster's key slots. */
static unsigned crc16(const unsigned char *p, size_t n)
{
    unsigned crc = 0;
    while (n--) {
        crc ^= (unsigned)*p++ << 8;
        for (int b = 0; b < 8; b++)
            crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc;
}

unsigned tt_key_slot(const char *key, size_t len)
{
    size_t s, e;
    for (s = 0; s < len; s++)
        if (key[s] == '{')
            break;
    if (s < len) {
        for (e = s + 1; e < len; e++)
            if (key[e] == '}')
                break;
        if (e < len && e != s + 1)
            return crc16((const unsigned char *)key + s + 1, e - s - 1) & 16383;
    }
    return crc16((const unsigned char *)key, len) & 16383;
}

/* -------------------------------------------------------------- stress */

#include <pthread.h>
#include <sys/mman.h>

struct tt_stress {
    size_t map_len;
    tt_stress_cfg_t cfg;
    pid_t pids[64];
    int nprocs;
    volatile int stop;
    uint64_t next;                          /* records handed out */
    volatile int64_t counter[TT_MAX_NAMES];
    uint64_t lock_eio, lock_timedout, lock_other;
    int64_t max_call_us;
    int error_taken;
    uint64_t redirects, reconnects;
    char first_error[256];
    tt_hold_t h[];
};

struct tt_worker {
    tt_stress_t *s;
    dist_mutex_t *m;
    int index;
};

static void atomic_max(int64_t *p, int64_t v)
{
    int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void *stress_thread(void *p)
{
    struct tt_worker *w = p;
    tt_stress_t *s = w->s;
    const tt_stress_cfg_t *cfg = &s->cfg;
    int32_t tid = (int32_t)syscall(SYS_gettid);
    long done = 0;
    int k = w->index % cfg->nnames;
    while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED) && (!cfg->ops || done < cfg->ops)) {
        int ni = k;
        k = (k + 1) % cfg->nnames;
        int64_t t0 = th_now_us();
        int rc;
        if (cfg->timed_ms > 0) {
            struct timespec ts = th_abstime_ms(cfg->timed_ms);
            rc = dist_mutex_timedlock(&w->m[ni], &ts);
        } else {
            rc = dist_mutex_lock(&w->m[ni]);
        }
        int64_t t1 = th_now_us();
        atomic_max(&s->max_call_us, t1 - t0);
        if (rc != 0 && rc != EOWNERDEAD) {
            __atomic_add_fetch(rc == EIO ? &s->lock_eio : rc == ETIMEDOUT ? &s->lock_timedout
                                                                          : &s->lock_other,
                               1, __ATOMIC_RELAXED);
            if (!__atomic_exchange_n(&s->error_taken, 1, __ATOMIC_RELAXED))
                snprintf(s->first_error, sizeof s->first_error, "%s: %s", th_errname(rc),
                         dist_lasterror());
            th_sleep_ms(10);
            continue;
        }
        uint64_t fence = 0;
        dist_mutex_getfence(&w->m[ni], &fence);
        int64_t c = s->counter[ni];
        if (cfg->hold_us > 0)
            th_sleep_us(cfg->hold_us);
        s->counter[ni] = c + 1;
        int64_t t2 = th_now_us();
        int urc = dist_mutex_unlock(&w->m[ni]);
        uint64_t slot = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
        if (slot < cfg->cap) {
            tt_hold_t *h = &s->h[slot];
            h->start_us = t1;
            h->end_us = t2;
            h->fence = fence;
            h->pid = (int32_t)getpid();
            h->tid = tid;
            h->name = (int16_t)ni;
            h->lock_rc = (int16_t)rc;
            h->unlock_rc = (int16_t)urc;
            __atomic_store_n(&h->filled, 1, __ATOMIC_RELEASE);
        }
        done++;
    }
    return NULL;
}

static int stress_proc(void *p)
{
    tt_stress_t *s = p;
    const tt_stress_cfg_t *cfg = &s->cfg;
    alarm(0);
    th_setenv_list(cfg->env);
    dist_mutex_t m[TT_MAX_NAMES];
    dist_mutexattr_t at;
    dist_mutexattr_init(&at);
    if (cfg->lease_ms > 0)
        dist_mutexattr_setlease(&at, (unsigned long)cfg->lease_ms);
    for (int i = 0; i < cfg->nnames; i++) {
        int rc = dist_mutex_init(&m[i], cfg->names[i], &at);
        if (rc) {
            fprintf(stderr, "stress [%d]: dist_mutex_init(%s) = %s: %s\n", (int)getpid(),
                    cfg->names[i], th_errname(rc), dist_lasterror());
            return TH_CHILD_FAIL;
        }
    }
    pthread_t th[64];
    struct tt_worker w[64];
    int nt = cfg->threads < 64 ? cfg->threads : 64;
    for (int i = 0; i < nt; i++) {
        w[i].s = s;
        w[i].m = m;
        w[i].index = i + (int)getpid();
        pthread_create(&th[i], NULL, stress_thread, &w[i]);
    }
    for (int i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < cfg->nnames; i++)
        dist_mutex_destroy(&m[i]);
    dl_stats_t st;
    dl_stats_get(&st);
    __atomic_add_fetch(&s->redirects, st.redirects, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->reconnects, st.reconnects, __ATOMIC_RELAXED);
    return 0;
}

tt_stress_t *tt_stress_start(const tt_stress_cfg_t *cfg)
{
    uint64_t cap = cfg->cap ? cfg->cap : 200000;
    size_t len = sizeof(tt_stress_t) + (size_t)cap * sizeof(tt_hold_t);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    tt_stress_t *s = p;
    s->map_len = len;
    s->cfg = *cfg;
    s->cfg.cap = cap;
    if (s->cfg.nnames <= 0)
        s->cfg.nnames = 1;
    int np = cfg->procs < 64 ? cfg->procs : 64;
    for (int i = 0; i < np; i++)
        s->pids[s->nprocs++] = th_fork_child(stress_proc, s);
    return s;
}

uint64_t tt_stress_holds(const tt_stress_t *s)
{
    uint64_t n = __atomic_load_n(&s->next, __ATOMIC_RELAXED);
    return n > s->cfg.cap ? s->cfg.cap : n;
}

uint64_t tt_stress_holds_since(const tt_stress_t *s, int64_t t_us, int *procs)
{
    uint64_t n = tt_stress_holds(s), count = 0;
    int32_t seen[64];
    int nseen = 0;
    for (uint64_t i = 0; i < n; i++) {
        const tt_hold_t *h = &s->h[i];
        if (!__atomic_load_n(&h->filled, __ATOMIC_ACQUIRE) || h->start_us < t_us)
            continue;
        count++;
        int found = 0;
        for (int k = 0; k < nseen; k++)
            found |= seen[k] == h->pid;
        if (!found && nseen < 64)
            seen[nseen++] = h->pid;
    }
    if (procs)
        *procs = nseen;
    return count;
}

int64_t tt_stress_first_since(const tt_stress_t *s, int64_t t_us)
{
    uint64_t n = tt_stress_holds(s);
    int64_t first = -1;
    for (uint64_t i = 0; i < n; i++) {
        const tt_hold_t *h = &s->h[i];
        if (__atomic_load_n(&h->filled, __ATOMIC_ACQUIRE) && h->start_us >= t_us &&
            (first < 0 || h->start_us < first))
            first = h->start_us;
    }
    return first;
}

static int cmp_hold(const void *a, const void *b)
{
    const tt_hold_t *x = a, *y = b;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    return x->start_us < y->start_us ? -1 : x->start_us > y->start_us;
}

static int cmp_start(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The holds of one name around index j (holds i.. of that name, sorted),
 * for a violation report; also any hold of the name that lapsed
 * (ENOLCK/EOWNERDEAD) near it. */
static void dump_context(const tt_hold_t *h, uint64_t i, uint64_t j, uint64_t m, const char *name)
{
    uint64_t from = j >= i + 6 ? j - 6 : i, to = j + 4 < m ? j + 4 : m;
    printf("stress: holds of %s around the violation (start, end relative to the first shown; us):\n",
           name);
    int64_t base = h[from].start_us;
    for (uint64_t k = from; k < to && h[k].name == h[j].name; k++)
        printf("  %s pid %d tid %d start %+lld end %+lld fence %llu lock %s unlock %s\n",
               k == j ? "->" : "  ", h[k].pid, h[k].tid, (long long)(h[k].start_us - base),
               (long long)(h[k].end_us - base), (unsigned long long)h[k].fence,
               th_errname(h[k].lock_rc), th_errname(h[k].unlock_rc));
    fflush(stdout);
}

void tt_stress_finish(tt_stress_t *s, long timeout_ms, tt_stress_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
    int64_t deadline = th_now_ms() + timeout_ms;
    for (int i = 0; i < s->nprocs; i++) {
        long left = (long)(deadline - th_now_ms());
        int st = th_wait_child_ms(s->pids[i], left > 1 ? left : 1);
        if (st != 0) {
            rep->children_failed++;
            fprintf(stderr, "stress: worker %d ended with status %d\n", (int)s->pids[i], st);
        }
    }
    uint64_t n = tt_stress_holds(s);
    tt_hold_t *h = malloc((n ? n : 1) * sizeof *h);
    int64_t *starts = malloc((n ? n : 1) * sizeof *starts);
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (s->h[i].filled)
            h[m++] = s->h[i];
    qsort(h, m, sizeof *h, cmp_hold);
    rep->holds = m;
    for (uint64_t i = 0; i < m; i++) {
        starts[i] = h[i].start_us;
        rep->ownerdead += h[i].lock_rc == EOWNERDEAD;
        rep->unlock_enolck += h[i].unlock_rc == ENOLCK;
        rep->unlock_eio += h[i].unlock_rc == EIO;
        rep->unlock_other += h[i].unlock_rc != 0 && h[i].unlock_rc != ENOLCK && h[i].unlock_rc != EIO;
    }
    /* Per name, in start order: the hold ending last so far must end
     * before the next one starts, unless it was reported lost at unlock. */
    uint64_t per_name[TT_MAX_NAMES] = { 0 };
    for (uint64_t i = 0; i < m; ) {
        int name = h[i].name;
        uint64_t j = i;
        const tt_hold_t *cur = &h[i];
        per_name[name]++;
        for (j = i + 1; j < m && h[j].name == name; j++) {
            const tt_hold_t *nx = &h[j];
            per_name[name]++;
            if ((nx->start_us - h[j - 1].start_us) / 1000 > rep->name_gap_ms[name])
                rep->name_gap_ms[name] = (nx->start_us - h[j - 1].start_us) / 1000;
            if (nx->start_us < cur->end_us) {
                if (cur->unlock_rc != 0 || nx->unlock_rc != 0) {
                    rep->excused++;
                } else {
                    if (!rep->overlaps)
                        dump_context(h, i, j, m, s->cfg.names[name]);
                    rep->overlaps++;
                    if (!rep->first[0])
                        snprintf(rep->first, sizeof rep->first,
                                 "lock %s: hold of %d/%d [%lld, %lld] us overlaps hold of %d/%d "
                                 "starting at %lld us (fences %llu, %llu)",
                                 s->cfg.names[name], cur->pid, cur->tid, (long long)cur->start_us,
                                 (long long)cur->end_us, nx->pid, nx->tid, (long long)nx->start_us,
                                 (unsigned long long)cur->fence, (unsigned long long)nx->fence);
                }
            } else if (cur->unlock_rc == 0 && (nx->fence < cur->fence ||
                                                (nx->fence == cur->fence && nx->pid != cur->pid))) {
                rep->fence_inversions++;
                if (!rep->first[0]) {
                    snprintf(rep->first, sizeof rep->first,
                             "lock %s: fence %llu (pid %d) after fence %llu (pid %d)",
                             s->cfg.names[name], (unsigned long long)nx->fence, nx->pid,
                             (unsigned long long)cur->fence, cur->pid);
                    dump_context(h, i, j, m, s->cfg.names[name]);
                }
            }
            if (nx->end_us > cur->end_us || nx->start_us >= cur->end_us)
                cur = nx;
        }
        i = j;
    }
    for (int k = 0; k < s->cfg.nnames; k++) {
        int64_t c = s->counter[k];
        if ((int64_t)per_name[k] > c)
            rep->lost_updates += per_name[k] - (uint64_t)c;
    }
    qsort(starts, m, sizeof *starts, cmp_start);
    for (uint64_t i = 1; i < m; i++)
        if (starts[i] - starts[i - 1] > rep->max_gap_ms * 1000) {
            rep->max_gap_ms = (starts[i] - starts[i - 1]) / 1000;
            rep->gap_from_us = starts[i - 1];
            rep->gap_to_us = starts[i];
        }
    rep->lock_eio = s->lock_eio;
    rep->lock_timedout = s->lock_timedout;
    rep->lock_other = s->lock_other;
    rep->max_call_ms = s->max_call_us / 1000;
    rep->redirects = s->redirects;
    rep->reconnects = s->reconnects;
    snprintf(rep->first_error, sizeof rep->first_error, "%s", s->first_error);
    free(h);
    free(starts);
}

void tt_stress_free(tt_stress_t *s)
{
    if (s)
        munmap(s, s->map_len);
}

void tt_stress_print(const char *title, const tt_stress_report_t *r)
{
    printf("%s: holds=%llu ownerdead=%llu overlaps=%llu excused=%llu fence_inversions=%llu "
           "lost_updates=%llu unlock_enolck=%llu unlock_eio=%llu unlock_other=%llu lock_eio=%llu "
           "lock_timedout=%llu lock_other=%llu max_call_ms=%lld max_gap_ms=%lld redirects=%llu "
           "reconnects=%llu children_failed=%d\n",
           title, (unsigned long long)r->holds, (unsigned long long)r->ownerdead,
           (unsigned long long)r->overlaps, (unsigned long long)r->excused,
           (unsigned long long)r->fence_inversions, (unsigned long long)r->lost_updates,
           (unsigned long long)r->unlock_enolck, (unsigned long long)r->unlock_eio,
           (unsigned long long)r->unlock_other, (unsigned long long)r->lock_eio,
           (unsigned long long)r->lock_timedout, (unsigned long long)r->lock_other,
           (long long)r->max_call_ms, (long long)r->max_gap_ms, (unsigned long long)r->redirects,
           (unsigned long long)r->reconnects, r->children_failed);
    if (r->first[0])
        printf("%s: first violation: %s\n", title, r->first);
    if (r->first_error[0])
        printf("%s: a failed lock call: %s\n", title, r->first_error);
    fflush(stdout);
}
