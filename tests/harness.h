/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness.h - what every distlock test suite shares: a private redis-server
 * on a free port of 127.0.0.1, a direct hiredis connection to it for
 * inspection, clocks, forked children, pipes between processes, helper
 * threads ("actors") and helper processes ("procs") that run lock calls on
 * request, so tests synchronise on messages instead of sleeps.
 *
 * Children never use cmocka assertions (a failed assertion would longjmp
 * into the copy of the parent's test runner): they use TH_CHECK*, which
 * print the failure and _exit(TH_CHILD_FAIL).
 */
#ifndef TH_HARNESS_H
#define TH_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "distlock.h"

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
void th_server_resume(th_server_t *s);      /* SIGCONT */

/* cmocka group setup/teardown starting and stopping the suite's server. */
int th_group_setup(void **state);
int th_group_teardown(void **state);
/* Per-test setup: arms a 50 s alarm, so a test hung in a lock call ends
 * the suite with a message naming it instead of waiting for ctest's
 * time-out.  Per-test teardown: disarms it, kills and reaps children a
 * failed test left behind. */
int th_test_setup(void **state);
int th_test_teardown(void **state);
#define TH_TEST(f) cmocka_unit_test_setup_teardown(f, th_test_setup, th_test_teardown)

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

/* ------------------------------------------------------------------- clocks */

int64_t th_now_ms(void);                    /* CLOCK_MONOTONIC, comparable across processes */
int64_t th_now_us(void);
struct timespec th_abstime_ms(long ms);     /* CLOCK_REALTIME now + ms (ms may be negative) */
void th_sleep_ms(long ms);
void th_sleep_us(long us);
/* Polls pred(arg) every 2 ms until it returns nonzero (then 1) or timeout_ms
 * passes (then 0). */
int th_wait_until(int (*pred)(void *), void *arg, long timeout_ms);
/* Waits until ZCARD of key is at least n; 1 if so, 0 on time-out. */
int th_wait_zcard(const char *key, long long n, long timeout_ms);
/* Waits until EXISTS key equals want (0/1); 1 if so, 0 on time-out. */
int th_wait_exists(const char *key, int want, long timeout_ms);
/* Waits (3 s at most) until n lock requests on the lock `name` are queued
 * in Redis (ZCARD of its ":q" key), so that a test releases only once its
 * waiters really wait.  Where the library does not queue there, it pauses
 * 200 ms instead: this is a synchronisation, not a check. */
void th_wait_queued(const char *name, long long n);
/* Median of n values (sorts v). */
int64_t th_median(int64_t *v, int n);

/* ----------------------------------------------------------------- children */

#define TH_CHILD_FAIL 99
#define TH_WAIT_TIMEOUT (-1)

/* Forks; the child runs fn(arg) and _exit()s with its return value.  The
 * child dies with the parent (PR_SET_PDEATHSIG) and after 40 s (alarm). */
pid_t th_fork_child(int (*fn)(void *), void *arg);
/* Exit status of the child (0..255), 128+signal if it was killed, or
 * TH_WAIT_TIMEOUT after timeout_ms (the child is then SIGKILLed). */
int th_wait_child_ms(pid_t pid, long timeout_ms);
int th_wait_child(pid_t pid);               /* 30 s time-out */
void th_kill_child(pid_t pid);              /* SIGKILL and reap */
/* In a child: SIGPIPE at its default disposition and unblocked, as in a
 * program that never touched it, so that a write on a reset connection
 * kills the process unless the library itself keeps SIGPIPE away. */
void th_sigpipe_default(void);

/* Child-side checks: print and _exit(TH_CHILD_FAIL). */
#define TH_CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: [child %d] check failed: %s\n", __FILE__, __LINE__, \
            (int)getpid(), #cond); fflush(stderr); _exit(TH_CHILD_FAIL); } } while (0)
#define TH_CHECK_RC(expr, want) do { int th_rc_ = (expr); int th_want_ = (want); \
    if (th_rc_ != th_want_) { fprintf(stderr, \
        "%s:%d: [child %d] %s = %d (%s), want %d (%s); dist_lasterror: \"%s\"\n", \
        __FILE__, __LINE__, (int)getpid(), #expr, th_rc_, th_errname(th_rc_), th_want_, \
        th_errname(th_want_), dist_lasterror()); fflush(stderr); _exit(TH_CHILD_FAIL); } } while (0)

/* Parent-side (cmocka) assertion of a return code, printing names. */
#define TH_ASSERT_RC(expr, want) do { int th_rc_ = (expr); int th_want_ = (want); \
    if (th_rc_ != th_want_) { fail_msg("%s = %d (%s), want %d (%s); dist_lasterror: \"%s\"; " \
        "last proc error: \"%s\"", #expr, th_rc_, th_errname(th_rc_), th_want_, \
        th_errname(th_want_), dist_lasterror(), th_proc_lasterror()); } } while (0)
/* Parent-side: a child's exit status must be 0. */
#define TH_ASSERT_CHILD_OK(pid) do { int th_st_ = th_wait_child(pid); \
    if (th_st_ != 0) fail_msg("child %d ended with status %d (%s)", (int)(pid), th_st_, \
        th_st_ == TH_WAIT_TIMEOUT ? "time-out, killed" : th_st_ == TH_CHILD_FAIL ? \
        "a check failed, see stderr" : th_st_ > 128 ? "killed by a signal" : "exit code"); } while (0)

const char *th_errname(int rc);             /* "EBUSY", "0", ... */

/* -------------------------------------------------------------------- pipes */

typedef struct th_pipe { int rd, wr; } th_pipe_t;
typedef struct th_msg { int64_t tag, a, b, c; } th_msg_t;

void th_pipe_open(th_pipe_t *p);            /* O_CLOEXEC */
void th_pipe_close(th_pipe_t *p);
/* One message (atomic on a pipe, so several children may share one). */
int th_send(int fd, int64_t tag, int64_t a, int64_t b, int64_t c);
/* 0, or -1 on time-out / EOF / error. */
int th_recv(int fd, th_msg_t *m, long timeout_ms);
/* Reads everything until EOF or timeout into a malloc'ed NUL-terminated
 * string. */
char *th_read_all(int fd, long timeout_ms);

/* ------------------------------------------------------------------- actors */

/* A helper thread of this process that runs calls on request, so a test
 * can make "another thread" take and hold a lock. */
typedef struct th_actor th_actor_t;
typedef int (*th_fn)(void *arg);

th_actor_t *th_actor_new(void);
/* Starts fn(arg) in the actor; returns at once. */
void th_actor_post(th_actor_t *a, th_fn fn, void *arg);
/* Waits for the posted call: 0 and *rc, or -1 on time-out. */
int th_actor_wait(th_actor_t *a, int *rc, long timeout_ms);
/* post + wait (10 s); returns the call's result or TH_WAIT_TIMEOUT. */
int th_actor_call(th_actor_t *a, th_fn fn, void *arg);
/* Joins the thread (waits for a posted call first). */
void th_actor_free(th_actor_t *a);
/* Kernel tid of the actor thread. */
pid_t th_actor_tid(th_actor_t *a);

/* A lock call for an actor to make (th_actor_post/call with one of the
 * th_do_* below as fn): the lock, the abstime of a timed call, and when a
 * call that may wait returned (CLOCK_MONOTONIC us), which tests compare
 * with the moment they released the lock. */
typedef struct th_lockcall {
    dist_mutex_t *m;
    dist_rwlock_t *rw;
    struct timespec ts;
    int64_t t_done_us;
} th_lockcall_t;

int th_do_lock(void *c);                    /* dist_mutex_lock, sets t_done_us */
int th_do_timedlock(void *c);               /* dist_mutex_timedlock(ts), sets t_done_us */
int th_do_trylock(void *c);
int th_do_unlock(void *c);
int th_do_rdlock(void *c);                  /* dist_rwlock_rdlock, sets t_done_us */
int th_do_wrlock(void *c);                  /* dist_rwlock_wrlock, sets t_done_us */
int th_do_tryrdlock(void *c);
int th_do_trywrlock(void *c);
int th_do_rwunlock(void *c);

/* --------------------------------------------------------------------- procs */

/* A helper process that runs lock calls on request and answers each with
 * its return code, fence, timestamps and dist_lasterror(). */
enum th_op {
    TH_EXIT = 1,
    TH_M_LOCK, TH_M_TRYLOCK, TH_M_TIMEDLOCK, TH_M_UNLOCK, TH_M_FENCE,
    TH_RW_RDLOCK, TH_RW_TRYRDLOCK, TH_RW_TIMEDRDLOCK,
    TH_RW_WRLOCK, TH_RW_TRYWRLOCK, TH_RW_TIMEDWRLOCK, TH_RW_UNLOCK, TH_RW_FENCE,
    TH_SLEEP,            /* arg ms */
    TH_STATS,            /* fence = fallback_checks, a = grants, b = lost */
    TH_INCR,             /* INCR name (a key) on th_redis(): fence = result */
};

typedef struct th_req {
    int op;
    int fair;            /* mutex attribute, used when the object is first made */
    int type;            /* mutex type, 0: default */
    long lease_ms;       /* mutex/rwlock fixed lease, 0: default */
    long arg;            /* ms for timed ops (abstime = now + arg) and TH_SLEEP */
    long delay_us;       /* sleep this long before the call */
    char name[DIST_NAME_MAX + 2];
} th_req_t;

typedef struct th_res {
    int rc;
    uint64_t fence;
    int64_t t_start_us, t_done_us;   /* CLOCK_MONOTONIC around the call */
    int64_t a, b;
    char err[256];
} th_res_t;

typedef struct th_proc { pid_t pid; int req_wr, res_rd; } th_proc_t;

/* env: NULL or a NULL-terminated list of "NAME=VALUE" set in the child
 * before its first library call ("NAME" alone unsets).  0 or -1. */
int th_proc_start(th_proc_t *p, const char *const *env);
/* Applies such a list to this process (the library reads its variables
 * once per process: call it in a child before its first dist_ call). */
void th_setenv_list(const char *const *env);
/* A request for op on name with default attributes (all else 0), for a
 * test to adjust (fair, lease_ms, arg, delay_us) before sending it. */
void th_proc_req(th_req_t *q, int op, const char *name);
int th_proc_send(th_proc_t *p, const th_req_t *req);
/* 0, or -1 on time-out / the process died. */
int th_proc_recv(th_proc_t *p, th_res_t *res, long timeout_ms);
/* send + recv (15 s time-out); returns rc, TH_WAIT_TIMEOUT on time-out.
 * res may be NULL. */
int th_proc_call(th_proc_t *p, const th_req_t *req, th_res_t *res);
/* dist_lasterror() of the last answer any proc gave. */
const char *th_proc_lasterror(void);
/* Shorthands with default attributes. */
int th_proc_op(th_proc_t *p, int op, const char *name);
int th_proc_op_async(th_proc_t *p, int op, const char *name);
/* The same with the request's argument, and (call) its answer in res. */
int th_proc_opa(th_proc_t *p, int op, const char *name, long arg, th_res_t *res);
int th_proc_opa_async(th_proc_t *p, int op, const char *name, long arg);
/* Sends TH_EXIT and reaps; returns the exit status. */
int th_proc_stop(th_proc_t *p);
void th_proc_kill(th_proc_t *p);            /* SIGKILL and reap */

/* ------------------------------------------------------------ connections */

/* Local ports of the TCP sockets of process pid (0: this one) connected to
 * 127.0.0.1:remote_port; returns how many (up to max are stored). */
int th_proc_sockets(pid_t pid, int remote_port, int *local_ports, int max);
/* CLIENT KILL of the suite server's pub/sub clients that belong to process
 * pid (found through its sockets); returns how many were killed. */
int th_kill_subscribers_of(pid_t pid);

/* ------------------------------------------------------------------- misc */

/* Runs fn(arg) in a child whose stderr goes into a pipe; returns the exit
 * status and the captured stderr (malloc'ed) in *err. */
int th_run_capture_stderr(int (*fn)(void *), void *arg, char **err, long timeout_ms);
/* Case-insensitive substring test. */
int th_contains(const char *hay, const char *needle);

#endif
