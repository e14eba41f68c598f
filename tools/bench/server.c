/* SPDX-License-Identifier: BSD-3-Clause */
/* server.c - the redis-server of the run: a free port of 127.0.0.1, no
 * persistence, stopped by pid at the end and on SIGINT/SIGTERM (started
 * and stopped by tools/launch/launch.h, as the tests' servers are). */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "launch.h"

static pid_t srv_pid = -1;
static char srv_dir[128];
static char srv_url[128];
static char srv_log[200];
static char srv_tls_url[128];

const char *server_tls_url(void)
{
    return srv_tls_url;
}

/* --tls: a CA and a certificate for 127.0.0.1, made with openssl in the
 * run's directory. */
static int make_certs(void)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ext.cnf && "
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
             "-subj /CN=distlock-bench-ca -days 2 && "
             "openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=bench && "
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
             "-extfile ext.cnf -out srv.pem", srv_dir);
    char quiet[1500];
    snprintf(quiet, sizeof quiet, "(%s) >/dev/null 2>&1", cmd);
    if (system(quiet) != 0) {
        fprintf(stderr, "distlock-bench: --tls: making certificates with openssl failed\n");
        return -1;
    }
    char ca[200];
    snprintf(ca, sizeof ca, "%s/ca.pem", srv_dir);
    setenv("DISTLOCK_TLS_CA_FILE", ca, 1);
    return 0;
}

#define MAX_TRACKED 512
static volatile pid_t tracked[MAX_TRACKED];

void track_pid(pid_t pid)
{
    for (int i = 0; i < MAX_TRACKED; i++)
        if (tracked[i] == 0) {
            tracked[i] = pid;
            return;
        }
}

void untrack_pid(pid_t pid)
{
    for (int i = 0; i < MAX_TRACKED; i++)
        if (tracked[i] == pid)
            tracked[i] = 0;
}

int reap_tool(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) != pid)
        st = -1;
    untrack_pid(pid);
    return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Sets the affinity of every thread of process pid. */
static int affinity_all_threads(pid_t pid, const cpu_set_t *set)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && sched_setaffinity((pid_t)atoi(e->d_name), sizeof *set, set))
            rc = -1;
    closedir(d);
    return rc;
}

int server_isolate(int on)
{
    if (srv_pid <= 0)
        return -1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int rc = setpriority(PRIO_PROCESS, (id_t)srv_pid, on ? -10 : 0);
    if (ncpu >= 2 && !g_opt.pin) {       /* --pin placed everything already */
        cpu_set_t last, rest, all;
        CPU_ZERO(&last);
        CPU_ZERO(&rest);
        CPU_ZERO(&all);
        for (int i = 0; i < ncpu; i++) {
            CPU_SET(i, &all);
            CPU_SET(i, i == ncpu - 1 ? &last : &rest);
        }
        if (affinity_all_threads(srv_pid, on ? &last : &all) ||
            sched_setaffinity(0, sizeof rest, on ? &rest : &all))
            rc = -1;
    }
    return rc;
}

/* In the server's child, before exec: --pin puts it on the last CPU. */
static void pin_server(void *arg)
{
    (void)arg;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(ncpu - 1), &set);
    sched_setaffinity(0, sizeof set, &set);
}

/* --pin: the bench (and every worker and redis-benchmark it starts) on
 * all CPUs but the last, which redis-server gets. */
int pin_self(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 2)
        return -1;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < ncpu - 1; i++)
        CPU_SET(i, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

int server_start(void)
{
    snprintf(srv_dir, sizeof srv_dir, "%s/distlock-bench.XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(srv_dir)) {
        fprintf(stderr, "distlock-bench: mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    snprintf(srv_log, sizeof srv_log, "%s/redis.log", srv_dir);
    if (g_opt.tls && make_certs())
        return -1;
    /* The server goes when we go, even if we are killed (SIGTERM), and is
     * out of the terminal's reach (^C is ours: we stop it). */
    char ca[200], cert[200], key[200];
    snprintf(ca, sizeof ca, "%s/ca.pem", srv_dir);
    snprintf(cert, sizeof cert, "%s/srv.pem", srv_dir);
    snprintf(key, sizeof key, "%s/srv.key", srv_dir);
    const char *extra[] = { "--logfile", srv_log, g_opt.tls ? "--tls-auth-clients" : NULL, "no",
                            NULL };
    dl_launch_t how = { .program = g_opt.redis_server, .dir = srv_dir, .extra = extra,
                        .deathsig = SIGTERM, .own_group = 1,
                        .in_child = g_opt.pin ? pin_server : NULL };
    if (g_opt.tls) {
        how.tls_cert = cert;
        how.tls_key = key;
        how.tls_ca = ca;
    }
    dl_launched_t srv;
    if (dl_launch_start(&how, 0, &srv) == 0) {
        srv_pid = srv.pid;
        snprintf(srv_url, sizeof srv_url, "redis://127.0.0.1:%d", srv.port);
        snprintf(srv_tls_url, sizeof srv_tls_url, "rediss://127.0.0.1:%d", srv.tls_port);
        g_opt.url = srv_url;
        char err[200];
        return rc_url(srv_url, err, sizeof err);    /* ours: it parses */
    }
    fprintf(stderr, "distlock-bench: could not start %s on 127.0.0.1", g_opt.redis_server);
    FILE *f = fopen(srv_log, "r");
    if (f) {
        char line[512];
        fprintf(stderr, "; its log:\n");
        while (fgets(line, sizeof line, f))
            fputs(line, stderr);
        fclose(f);
    } else {
        fprintf(stderr, " (is it installed? --redis-server PATH)\n");
    }
    return -1;
}

void server_stop(void)
{
    if (srv_pid > 0) {
        dl_launch_stop(srv_pid, 5000);
        srv_pid = -1;
    }
    if (srv_dir[0]) {
        unlink(srv_log);
        static const char *const tls_files[] = { "ext.cnf", "ca.key", "ca.pem", "ca.srl",
                                                 "srv.key", "srv.csr", "srv.pem" };
        for (size_t i = 0; g_opt.tls && i < sizeof tls_files / sizeof tls_files[0]; i++) {
            char f[200];
            snprintf(f, sizeof f, "%s/%s", srv_dir, tls_files[i]);
            unlink(f);
        }
        rmdir(srv_dir);
        srv_dir[0] = 0;
    }
}

static void on_signal(int sig)
{
    /* async-signal-safe only: kill, waitpid, write, _exit */
    for (int i = 0; i < MAX_TRACKED; i++)
        if (tracked[i] > 0)
            kill(tracked[i], SIGKILL);
    for (int i = 0; i < MAX_TRACKED; i++)
        if (tracked[i] > 0)
            waitpid(tracked[i], NULL, 0);
    dl_launch_stop_now(srv_pid, SIGTERM);
    if (srv_dir[0]) {
        unlink(srv_log);
        rmdir(srv_dir);
    }
    static const char msg[] = "\ndistlock-bench: interrupted; workers and redis-server stopped\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing more to do */
    }
    _exit(128 + sig);
}

void signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}
