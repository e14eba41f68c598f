/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_redis.h - the tests' own hiredis connection to the suite's
 * server (one per process, made again after fork), commands to other
 * servers, the key names the library uses, waits on Redis state, and the
 * sockets a process holds to a server.
 */
#ifndef TH_HARNESS_REDIS_H
#define TH_HARNESS_REDIS_H

#include <stddef.h>
#include <sys/types.h>
#include <hiredis/hiredis.h>
#include "harness_server.h"

/* -------------------------------------------------------- direct connection */

/* This process's own connection to the suite's server (reconnected after
 * fork).  Never NULL: aborts the process if the server cannot be reached. */
redisContext *th_redis(void);
/* A command on th_redis(); the reply (free with freeReplyObject), never NULL. */
redisReply *th_cmd(const char *fmt, ...);
/* Integer result of a command (a string reply is parsed, nil gives -1,
 * an error reply -2). */
long long th_cmd_ll(const char *fmt, ...);
/* Discards the reply. */
void th_cmd_do(const char *fmt, ...);
/* A command to another server (127.0.0.1:port, a connection of its own, 2 s
 * to connect and to answer); NULL if it cannot be reached. */
redisReply *th_cmd_at(int port, const char *fmt, ...);
/* Its integer reply (EXISTS, ZCARD, ...); -1 if the server cannot be
 * reached or the reply is not an integer. */
long long th_cmd_at_ll(int port, const char *fmt, ...);
/* th_wait_zcard() on another server: until ZCARD of key there is at least
 * n (polled every 2 ms); 1 if so, 0 after timeout_ms. */
int th_wait_zcard_at(int port, const char *key, long long n, long timeout_ms);

/* The key prefix in use (DISTLOCK_PREFIX or "distlock:"). */
const char *th_prefix(void);
/* "<prefix>{name}<suffix>" into buf; returns buf. */
char *th_key(char *buf, size_t size, const char *name, const char *suffix);
/* A unique lock name "tag.pid.n" into buf; returns buf. */
char *th_name(char *buf, size_t size, const char *tag);
/* Sum of "calls" of INFO commandstats, excluding info/config/ping/client. */
long long th_redis_calls(void);


/* ------------------------------------------------------- waits on Redis */

/* Waits until ZCARD of key is at least n; 1 if so, 0 on time-out. */
int th_wait_zcard(const char *key, long long n, long timeout_ms);
/* Waits until EXISTS key equals want (0/1); 1 if so, 0 on time-out. */
int th_wait_exists(const char *key, int want, long timeout_ms);
/* Waits (3 s at most) until n lock requests on the lock `name` are queued
 * in Redis (ZCARD of its ":q" key), so that a test releases only once its
 * waiters really wait.  Where the library does not queue there, it pauses
 * 200 ms instead: this is a synchronisation, not a check. */
void th_wait_queued(const char *name, long long n);
/* Redis (the server at port; 0: the suite's) loses lock `name`: every key
 * of it deleted, as a server that lost its data would, with no sign that
 * reaches the holder. */
void th_lock_lose(int port, const char *name);

/* ------------------------------------------------------------ connections */

/* Local ports of the TCP sockets of process pid (0: this one) connected to
 * 127.0.0.1:remote_port; returns how many (up to max are stored). */
int th_proc_sockets(pid_t pid, int remote_port, int *local_ports, int max);
/* CLIENT KILL of the suite server's pub/sub clients that belong to process
 * pid (found through its sockets); returns how many were killed. */
int th_kill_subscribers_of(pid_t pid);


/* Internal: registers the fork handler of the connection's mutex. */
void th_redis_atfork(void);

#endif
