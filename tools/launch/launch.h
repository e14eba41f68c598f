/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * launch.h - the one way the project's tests and bench start a private
 * redis-server (launch.c; the shell scripts' twin is launch.sh): on
 * 127.0.0.1, on a free port (or a given one, for a restart), with no
 * persistence (--save '' --appendonly no), as a child that dies with its
 * starter (PR_SET_PDEATHSIG), known as ready only when the server on the
 * port says it is this very process (INFO's process_id: a port someone
 * else took between the choice and the bind is not mistaken for ours),
 * and stopped by its pid.
 *
 * Not part of the library (nothing here is installed): linked by the test
 * harness (tests/harness_server.c, harness_topo*.c) and by distlock-bench
 * (tools/bench/server.c) as the static target distlock_launch.
 */
#ifndef DL_LAUNCH_H
#define DL_LAUNCH_H

#include <sys/types.h>

/* How a server (or any helper process, dl_launch_spawn) is started.  Zero
 * is the default of every field. */
typedef struct dl_launch {
    const char *program;        /* NULL: redis-server, found in PATH */
    const char *dir;            /* --dir: its working files; NULL: /tmp */
    const char *log;            /* stdout and stderr appended to this file;
                                   NULL: /dev/null */
    int keep_output;            /* 1: stdout and stderr stay the starter's */
    const char *const *extra;   /* more arguments after the launcher's (NULL-
                                   terminated; NULL: none) */
    /* TLS (tls_cert not NULL): a TLS port too, chosen free at each try
     * (dl_launched_t.tls_port), with these files: --tls-port, --tls-cert-
     * file, --tls-key-file, --tls-ca-cert-file; what else TLS needs
     * (--tls-auth-clients, --tls-replication...) goes in extra. */
    const char *tls_cert, *tls_key, *tls_ca;
    int deathsig;               /* what the server gets when its starter
                                   dies; 0: SIGKILL */
    int own_group;              /* 1: a process group of its own, so that a
                                   terminal's ^C reaches only the starter,
                                   which then stops it */
    void (*in_child)(void *);   /* run in the child just before exec (the
                                   bench's CPU pinning); NULL: none */
    void *arg;                  /* in_child's argument */
    long up_ms;                 /* how long it may take to answer; 0: 10 s */
} dl_launch_t;

/* A server that runs. */
typedef struct dl_launched {
    pid_t pid;
    int port;
    int tls_port;               /* 0 without TLS */
} dl_launched_t;

/* A TCP port of 127.0.0.1 nobody listens on now (the kernel's pick for
 * port 0), or -1.  Someone may take it before it is used: starters retry. */
int dl_launch_free_port(void);
/* n distinct such ports into out (each held until all are chosen).  0 or
 * -1; n at most 32. */
int dl_launch_free_ports(int n, int *out);

/* Starts `program --port P --bind 127.0.0.1 --save '' --appendonly no
 * --daemonize no --dir DIR [TLS] [extra...]` and waits until it answers
 * as itself.  port 0: a free port, up to 8 of them tried in turn; else
 * that port, once.  0 with *out filled, or -1 (the server, if it started,
 * is stopped and reaped; its log says why). */
int dl_launch_start(const dl_launch_t *how, int port, dl_launched_t *out);

/* The lower half of dl_launch_start, for servers started another way (a
 * sentinel: `redis-server CONF --sentinel`, its port in CONF): argv[0]
 * found in PATH, run as how says (program, dir, extra and TLS unused), in
 * the background.  The pid, or -1.  Any helper process that must die with
 * its starter (redis-cli --cluster ...) can be started this way. */
pid_t dl_launch_spawn(const dl_launch_t *how, const char *const *argv);
/* Waits until 127.0.0.1:port answers as pid (INFO's process_id) within
 * timeout_ms.  0; or -1 when pid died (it is reaped) or the time ran out
 * (it is killed and reaped). */
int dl_launch_wait_up(pid_t pid, int port, long timeout_ms);
/* 1 when 127.0.0.1:port answers PING with PONG within timeout_ms. */
int dl_launch_ping(int port, long timeout_ms);
/* In a child about to exec: closes every descriptor from lowfd up (what
 * dl_launch_spawn's children do with 3). */
void dl_launch_close_from(int lowfd);

/* Stops pid: SIGCONT (a paused server), SIGTERM, and reaps it, with
 * SIGKILL after timeout_ms.  A pid that is not our child (a test process
 * stopping its parent's server) is signalled and not waited for. */
void dl_launch_stop(pid_t pid, long timeout_ms);
/* The same with SIGKILL at once. */
void dl_launch_kill(pid_t pid, long timeout_ms);
/* From a signal handler (async-signal-safe): only while pid is still our
 * unreaped child (never a pid the system has since given to another
 * process), SIGCONT, then sig, and a blocking wait for it. */
void dl_launch_stop_now(pid_t pid, int sig);

#endif
