/* SPDX-License-Identifier: BSD-3-Clause */
/* server.h - the redis-server of the run: free port, start, stop, signals
 * (server.c). */
#ifndef BENCH_SERVER_H
#define BENCH_SERVER_H

#include <sys/types.h>

/* Starts redis-server on a free port of 127.0.0.1; sets g_opt.url and
 * g_redis (rconn.h).  0 or -1 (message printed). */
int server_start(void);
void server_stop(void);
/* --tls: the rediss:// URL of the run's server (its TLS port), whose CA
 * file server_start() put in DISTLOCK_TLS_CA_FILE. */
const char *server_tls_url(void);
/* on: gives the server the bench started a CPU of its own (the last; this
 * process and the workers it forks then run on the others) and nice -10;
 * off: undoes it.  0, or -1 (no such server, one CPU, or not permitted). */
int server_isolate(int on);
/* --pin: this process (and what it forks) on all CPUs but the last. */
int pin_self(void);
/* Signal handling of the parent: SIGINT/SIGTERM stop the workers and the
 * server (by pid) and exit. */
void signals_install(void);
/* Worker pids the signal handler must stop too. */
void track_pid(pid_t pid);
void untrack_pid(pid_t pid);
/* Waits for a tool the bench ran (redis-benchmark, a W8 child) and stops
 * tracking it: 0 if it exited with status 0, else -1. */
int reap_tool(pid_t pid);

#endif
