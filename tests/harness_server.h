/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_server.h - the redis-server processes of a suite: the suite's own
 * server on a free port of 127.0.0.1 (DISTLOCK_URL, or redlock:// over
 * several with TH_REDLOCK), and independent servers a test starts, stops,
 * kills, pauses and restarts.  Every server is stopped by its pid.
 */
#ifndef TH_HARNESS_SERVER_H
#define TH_HARNESS_SERVER_H

#include <sys/types.h>
#include "harness_util.h"

/* ------------------------------------------------------------------ servers */

typedef struct th_server {
    pid_t pid;          /* 0 when not running */
    int port;
    char url[64];       /* redis://127.0.0.1:PORT */
    int stopped;        /* SIGSTOPped */
    int tls_port;       /* harness_topo with tt_tls_use(): its TLS port, else 0 */
} th_server_t;

/* Starts the suite's server unless DISTLOCK_URL is set, and sets
 * DISTLOCK_URL to it.  0 or -1.  Stopped at th_redis_stop() and atexit. */
int th_redis_start(void);
void th_redis_stop(void);
/* Port of the suite's server (parsed from DISTLOCK_URL). */
int th_redis_port(void);
/* 1 when the harness started the server itself (so it may FLUSHALL etc.). */
int th_redis_owned(void);

/* A second, independent server on a free port (or on s->port if
 * th_server_restart).  0 or -1. */
int th_server_start(th_server_t *s);
int th_server_restart(th_server_t *s);      /* start again on the same port */
void th_server_stop(th_server_t *s);        /* SIGTERM (SIGCONT first), waitpid */
void th_server_kill(th_server_t *s);        /* SIGKILL, waitpid */
void th_server_pause(th_server_t *s);       /* SIGSTOP */
/* 1 when s runs and answers PING.  Each test runs in a process of its own:
 * a server of the group setup that an earlier test killed still has its
 * pid in this process's copy of s, so a test that wants it back asks this
 * rather than s->pid. */
int th_server_up(const th_server_t *s);
void th_server_resume(th_server_t *s);      /* SIGCONT */

/* Internal to the harness: the host of the suite's server, and (from a
 * signal handler) SIGKILL of the suite's server if this process started it. */
const char *th_redis_host(void);
void th_redis_kill_owned(void);

#endif
