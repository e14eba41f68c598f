/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.h - distlock-bench: the workloads of SPEC's bench/WORKLOADS.md,
 * run against a redis-server of its own next to two references measured in
 * the same run: the floor (redis-benchmark, one client, no pipelining) and
 * a naive lock (SET NX PX + compare-and-delete, see naive.c).
 *
 *   main.c      options, workload selection, the target checks
 *   server.c    the redis-server of the run: free port, start, stop, signals
 *   rconn.c     plain hiredis connections: URL, INFO fields, CLIENT LIST
 *   proc.c      forked workers: shared memory, start gates, progress, waits
 *   stats.c     clock, samples, percentiles
 *   output.c    RESULT lines, --json, the progress line
 *   locks.c     the library as the workloads use it: names, keys, warm-up
 *   naive.c     the naive lock
 *   floor.c     redis-benchmark floors (EVALSHA "return 1", PING)
 *   w_basic.c   W1 W2 W3 W3b (distlock and naive), W2's serial ceiling
 *   w_local.c   W4 and W4b (W2 with local threads)
 *   w_rw.c      W5
 *   w_scale.c   W6 W7
 *   w_preload.c W8
 *   svg.c       the W3 latency chart
 */
#ifndef DL_BENCH_H
#define DL_BENCH_H

#include <hiredis/hiredis.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "distlock.h"

/* ------------------------------------------------------------ options */
#define BENCH_MAX_REPEAT 100
typedef struct bench_opts {
    int quick;                /* smoke-test sizes */
    int json;                 /* JSON document instead of RESULT lines */
    int no_floor, no_naive;
    int tls;                  /* --tls: the library over TLS (the bench's own server) */
    int progress;             /* progress line on stderr (a terminal) */
    int pin;                  /* redis-server on the last CPU, the bench on the others */
    unsigned long lease_ms;   /* W6 lease (0: the library default) */
    unsigned long w6_locks;
    unsigned long w7_iters;
    double w5_seconds;
    unsigned long repeat;     /* --repeat: runs of the selected workloads (1) */
    const char *url;          /* --url, or the server we started */
    const char *svg;          /* W3 chart file */
    const char *redis_server, *redis_benchmark;
    const char *preload;      /* libdistlock_preload.so, or NULL */
    const char *self;         /* our own executable, for W8's child */
    int wanted[16];           /* workload selection, by index of bench_workloads */
} bench_opts_t;

extern bench_opts_t g_opt;
extern char g_run_id[32];     /* makes lock names unique per run */
extern int g_rep;             /* which repetition is running (1..repeat) */

/* ------------------------------------------------------------ server.c */
typedef struct redis_url {
    char host[256];
    int port;
    char path[256];           /* unix socket, or "" */
    char user[128], pass[256];
    int db;
} redis_url_t;

extern redis_url_t g_url;
/* Parses redis://[user[:password]@]host[:port][/db] or unix:///path[?db=N]. */
int url_parse(const char *s, redis_url_t *u);
/* Starts redis-server on a free port of 127.0.0.1; sets g_opt.url and
 * g_url.  0 or -1 (message printed). */
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

/* ------------------------------------------------------------ rconn.c */
/* A plain connection to the run's server (AUTH/SELECT done), named with
 * CLIENT SETNAME when name != NULL.  NULL + message on stderr on failure. */
redisContext *rc_connect(const char *name);
/* The control connection of a counter workload, with the counter `ctr`
 * set to 0; NULL + message on stderr on failure. */
redisContext *rc_ctl_zeroed(const char *ctr);
/* Runs a command; returns the reply (caller frees) or NULL. */
redisReply *rc_cmd(redisContext *c, const char *fmt, ...);
/* The counter workloads' update (W2, its serial ceiling, W4b): GET ctr,
 * then SET ctr v+1, two round trips on c.  0, or 1 when Redis failed. */
int rc_ctr_incr(redisContext *c, const char *ctr);
/* The counter's value, or `none` when it cannot be read. */
long long rc_ctr_get(redisContext *c, const char *ctr, long long none);
/* Sum of `calls` over INFO commandstats, without INFO itself (the
 * measuring commands).  Redis counts the commands a script runs as well. */
long long rc_cmd_calls(redisContext *c);
/* calls and usec of one command of INFO commandstats (0 if absent). */
int rc_cmdstat(redisContext *c, const char *cmd, long long *calls, long long *usec);
/* used_cpu_sys + used_cpu_user of the server, in seconds. */
double rc_cpu_seconds(redisContext *c);
/* A field of INFO (e.g. "connected_clients"); -1 if absent. */
long long rc_info_ll(redisContext *c, const char *section, const char *field);

/* ------------------------------------------------------------ stats.c */
static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
void sleep_us(unsigned long us);
/* Sorts v[0..n) and returns the nearest-rank q-quantile (q in (0,1]). */
double pct_sorted(const double *v, size_t n, double q);
void sort_doubles(double *v, size_t n);
double mean_of(const double *v, size_t n);
double max_of(const double *v, size_t n);
/* The smallest and largest of snap[0..n) relative to their mean (0 when
 * the mean is 0): each worker's share of the work done. */
void shares_of(const unsigned long *snap, int n, double *mn, double *mx);

/* ------------------------------------------------------------ proc.c */
/* Shared anonymous memory (visible to forked workers); zeroed. */
void *shm_alloc(size_t size);
void shm_free(void *p, size_t size);

/* What a workload's workers share with the parent for the progress line. */
typedef struct progress {
    unsigned long done, total;
} progress_t;

typedef struct gate {         /* a start gate for n workers */
    sem_t ready, go;
    int n;
} gate_t;
void gate_init(gate_t *g, int n);
void gate_destroy(gate_t *g);
/* worker side: says it is ready, waits for the start */
void gate_pass(gate_t *g);
/* parent side: waits for every worker to be ready */
int gate_wait_ready(gate_t *g, const pid_t *pids, int n);
void gate_open(gate_t *g);
/* Has any of pids exited (without reaping it)? */
int any_exited(const pid_t *pids, int n);

/* After the workers were forked: waits until every one passed gate g,
 * then measures from now (with c, *calls0 = the server's command count,
 * rc_cmd_calls; *t0 = now_ns) and opens the gate.  0, or -1 when a worker
 * ended first (the gate stays shut; *t0 is still set). */
int gate_start(gate_t *g, const pid_t *pids, int n, redisContext *c, long long *calls0,
               uint64_t *t0);
/* Forks pids[0..n), workers fn(arg, i) that pass gate g, and starts them
 * together (gate_start). */
int spawn_gated(int (*fn)(void *, int), void *arg, pid_t *pids, int n, gate_t *g,
                redisContext *c, long long *calls0, uint64_t *t0);
/* The first worker to finish copies count[0..n) into snap[0..n) (the
 * others do nothing): the shares while every worker still had work. */
void snap_first(volatile int *first_done, unsigned long *snap, const volatile unsigned long *count,
                int n);
/* Forks a child whose stdout is *out (read end, fdopen'd), and tracks it
 * (reap it with reap_tool).  In the child: 0 (it execs or _exits);
 * in the parent its pid; -1 on failure. */
pid_t fork_piped(FILE **out);

/* Forks a worker running fn(arg, idx); its exit status is fn's return.
 * The child's stdout is not flushed twice: the parent flushes first. */
pid_t spawn(int (*fn)(void *, int), void *arg, int idx);
/* Waits for pids[0..n), showing the progress line for `label` while they
 * run.  0 when all exited with 0, else -1 (message printed). */
int wait_workers(pid_t *pids, int n, const char *label, const progress_t *pr);
/* Progress line only (for the parent's own waits). */
void progress_show(const char *label, const progress_t *pr);
void progress_clear(void);

/* ------------------------------------------------------------ output.c */
#define RES_EXTRA_MAX 1536
typedef struct result {
    char peer[16], workload[16];
    double ops_per_s, p50_us, p99_us;
    int skipped;
    int rep;                  /* the repetition it belongs to */
    char extra[RES_EXTRA_MAX];
} result_t;

result_t *result_new(const char *peer, const char *workload);
void result_extra(result_t *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A result of n operations that took ns nanoseconds, lat[0..n) their
 * latencies (us, sorted here): its ops_per_s, p50_us and p99_us set. */
result_t *result_timed(const char *peer, const char *workload, double *lat, size_t n, uint64_t ns);
/* The extra fields of a counter workload: lost_updates, and each worker's
 * share of the work while all still had some (snap[0..n), shares_of):
 * min_share, max_share, fairness. */
void result_shares(result_t *r, long long lost, const unsigned long *snap, int n);
/* Prints the RESULT line now (unless --json, which prints at the end). */
void result_emit(result_t *r);
/* The result of the running repetition, or NULL. */
result_t *result_find(const char *peer, const char *workload);
/* A numeric extra field; 0 when found. */
int result_get(const result_t *r, const char *key, double *out);
int results_count(void);
result_t *result_at(int i);

typedef struct target {
    char workload[16];
    char check[160];
    double value, limit;
    int met;                  /* 1, 0, or -1: not measured */
    char note[160];
} target_t;
void target_add(const char *workload, const char *check, double value, double limit, int met,
                const char *note);
/* After each repetition's target_add calls: files them under their check,
 * for the summary that output_finish prints when --repeat is above 1. */
void targets_end_rep(void);
/* Prints the TARGET lines (or the JSON document). */
void output_finish(void);
void output_error(const char *workload, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int output_errors(void);

/* ------------------------------------------------------------ naive.c */
typedef struct naive {
    redisContext *c;
    char key[200];
    char token[64];
    unsigned long lease_ms;
    unsigned long commands;   /* sent by the naive lock */
    unsigned long retries;
} naive_t;
/* 0 or -1; connects its own connection. */
int naive_init(naive_t *n, const char *name);
int naive_lock(naive_t *n);   /* SET NX PX, retried every 1 ms */
int naive_unlock(naive_t *n); /* compare-and-delete script; 0, or -1 if not held */
void naive_fini(naive_t *n);

/* ------------------------------------------------------------ workloads */
/* The floor: fills the results peer=floor EVALSHA and PING. */
int run_floor(void);
int run_w1(int peer);
/* W2's serial ceiling: peer=floor workload=W2serial. */
int run_w2_serial(void);
int run_w2(int peer);
int run_w3(int peer);
/* W3 with the holder relocking at once, then holding 2 ms. */
int run_w3b(int peer);
int run_w4(void);
int run_w4b(void);
int run_w5(void);
int run_w6(void);
int run_w7(void);
int run_w8(void);
/* W8's child program: `distlock-bench --w8-child PAIRS` */
int w8_child_main(unsigned long pairs);

enum { PEER_DISTLOCK, PEER_NAIVE };
const char *peer_name(int peer);

/* W3 samples kept for the chart (microseconds, sorted). */
typedef struct w3_samples {
    double *v;
    size_t n;
} w3_samples_t;
extern w3_samples_t g_w3[2];
int svg_write_w3(const char *path);

/* ------------------------------------------------------------ locks.c */
/* Lock names: "bench:<run>:<workload>[:suffix]" */
void lock_name(char *buf, size_t size, const char *workload, const char *suffix);
/* Key `which` (its index in the scripts' KEYS: 0 the lock hash, 3 the
 * queue) of lock `name`, as the library names it (its DISTLOCK_PREFIX and
 * shim/keys.h).  0, or -1 (message printed). */
int lock_key(char *buf, size_t size, const char *name, int which);
/* Says on stderr why a lock call `what` failed, when rc is not 0; returns
 * rc. */
int lock_err(const char *what, int rc);
/* Connects a lock before anything is measured (one trylock, given back;
 * EBUSY is fine): 0, or the error (said). */
int mutex_connect(dist_mutex_t *m);
/* dist_*_init and that warm-up (rwlock: a try in `mode`, 'r' or 'w'): 0,
 * or -1 (said). */
int mutex_warm(dist_mutex_t *m, const char *name);
int rwlock_warm(dist_rwlock_t *rw, const char *name, char mode);

#endif
