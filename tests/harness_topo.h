/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_topo.h - Redis topologies for the suites of "Beyond one Redis":
 * servers with extra arguments (replicas, cluster nodes), sentinels run as
 * `redis-server CONF --sentinel`, a 3-master/3-replica cluster made with
 * `redis-cli --cluster create`, and a live `redis-cli --cluster reshard`
 * in the background.
 *
 * Everything listens on 127.0.0.1 only, on ports chosen free (a cluster
 * node's bus port too, through cluster-port), keeps its files in one
 * private temporary directory, and is stopped by its pid: at tt_cleanup(),
 * at exit of the process that started it, and by the 50 s alarm of
 * TT_TEST (which kills the lot before ending the suite).  Set
 * TH_TOPO_KEEP=1 to keep the directory (server logs are in it).
 *
 * Library calls of these suites run in forked helper processes (th_proc_*
 * with an env list, or th_fork_child) because the library reads
 * DISTLOCK_URL once per process and each test needs its own URL.
 */
#ifndef TH_HARNESS_TOPO_H
#define TH_HARNESS_TOPO_H

#include "harness.h"

/* ------------------------------------------------------------- basics */

/* The suite's private temporary directory (made on first use). */
const char *tt_dir(void);
/* A free TCP port on 127.0.0.1 (bind to port 0), -1 on failure. */
int tt_free_port(void);
/* Kills (SIGCONT + SIGKILL) and reaps every process this file started and
 * still runs, and removes the temporary directory. */
void tt_cleanup(void);
/* Per-test setup: th_test_setup(), then an alarm of `seconds` (TT_TEST: 50)
 * whose handler kills every topology process before ending the suite. */
int tt_test_setup(void **state);
void tt_alarm(unsigned seconds);
/* Group teardown of a topology suite: th_test_teardown() (children left
 * by the last test), then tt_cleanup(). */
int tt_group_teardown(void **state);
#define TT_TEST(f) cmocka_unit_test_setup_teardown(f, tt_test_setup, th_test_teardown)

/* Runs argv (argv[0] looked up in PATH) with stdout+stderr into a file of
 * the temporary directory; waits at most timeout_ms (then SIGKILL).
 * Returns the exit status (128+signal if killed, -1 on time-out), and the
 * output (malloc'ed) in *out if out is not NULL. */
int tt_run(const char *const *argv, long timeout_ms, char **out);
/* The same in the background: the pid, or -1.  Output in *logpath. */
pid_t tt_run_bg(const char *const *argv, char *logpath, size_t logsize);
/* Waits for a tt_run_bg() process: th_wait_child_ms() (exit status as
 * tt_run(), -1 on time-out, when it is killed), and forgets its pid. */
int tt_wait_bg(pid_t pid, long timeout_ms);

/* Commands to these servers: th_cmd_at() and th_cmd_at_ll() of harness.h. */
/* The value of field `field` in "INFO section" of port into buf; buf or
 * NULL if absent/unreachable. */
char *tt_info_field(int port, const char *section, const char *field, char *buf, size_t size);

/* ------------------------------------------------------------- servers */

/* TLS for what starts from now on (cert NULL: none again): every server
 * and sentinel also listens on a TLS port of its own (th_server_t.tls_port)
 * with these files, and speaks TLS to the others (tls-replication,
 * tls-cluster); the plain port stays for the tests' own inspection. */
void tt_tls_use(const char *cert, const char *key, const char *ca);

/* redis-server on 127.0.0.1:PORT (a free port) with --save "" --appendonly
 * no --dir <tt_dir()> and then extra (NULL-terminated, may be NULL).
 * Fills s like th_server_start, so th_server_kill/stop/pause/resume work
 * on it.  Waits for PING (LOADING counts as up).  0 or -1. */
int tt_server_start(th_server_t *s, const char *const *extra);
/* The same on a given port (a restart: the old process must be gone). */
int tt_server_start_on(th_server_t *s, int port, const char *const *extra);
/* A replica of 127.0.0.1:master_port; waits (up to 10 s) until its link
 * to the master is up and the master lists it.  0 or -1. */
int tt_replica_start(th_server_t *s, int master_port);
/* Forgets a stopped server's registration (th_server_kill done). */
void tt_forget(pid_t pid);

/* ----------------------------------------------------------- sentinels */

#define TT_MAX_SENTINELS 5

typedef struct tt_sentinels {
    int n;
    th_server_t s[TT_MAX_SENTINELS];
    char master[64];
} tt_sentinels_t;

/* n sentinels monitoring master_name at 127.0.0.1:master_port with quorum
 * `quorum`, down-after-milliseconds 1000, failover-timeout 3000; waits (up
 * to 20 s) until each one sees the master, `replicas` replicas and the n-1
 * other sentinels.  0 or -1. */
int tt_sentinels_start(tt_sentinels_t *st, int n, const char *master_name, int master_port,
                       int quorum, int replicas);
void tt_sentinels_stop(tt_sentinels_t *st);
/* The master port sentinel i names (SENTINEL get-master-addr-by-name), -1. */
int tt_sentinel_master_port(const tt_sentinels_t *st, int i);
/* "redis-sentinel://127.0.0.1:P1,127.0.0.1:P2,.../NAME" into buf. */
char *tt_sentinel_url(const tt_sentinels_t *st, char *buf, size_t size);

/* ------------------------------------------------------------- cluster */

#define TT_CLUSTER_NODES 6

typedef struct tt_cluster {
    th_server_t node[TT_CLUSTER_NODES];
    int bus[TT_CLUSTER_NODES];
    char id[TT_CLUSTER_NODES][48];   /* CLUSTER MYID */
} tt_cluster_t;

/* Six nodes (cluster-enabled, node timeout 3000), joined by `redis-cli
 * --cluster create ... --cluster-replicas 1 --cluster-yes`; waits (up to
 * 30 s) for cluster_state:ok on every node and a CLUSTER SLOTS that every
 * node agrees on.  0 or -1. */
int tt_cluster_start(tt_cluster_t *c);
void tt_cluster_stop(tt_cluster_t *c);
/* Waits until every node says cluster_state:ok and all agree on the slot
 * map; 1 if so, 0 on time-out. */
int tt_cluster_wait_ok(const tt_cluster_t *c, long timeout_ms);
/* Slot -> master port, from CLUSTER SLOTS of node i (16384 entries, 0 for
 * an unserved slot).  0 or -1. */
int tt_cluster_slot_map(const tt_cluster_t *c, int i, int *map);
/* Indexes (into c->node) of the masters, as CLUSTER SLOTS of node 0 says;
 * returns how many (up to max). */
int tt_cluster_masters(const tt_cluster_t *c, int *idx, int max);
/* Index of the node listening on port, -1. */
int tt_cluster_index(const tt_cluster_t *c, int port);
/* "redis-cluster://127.0.0.1:P1,...,127.0.0.1:P6" (or only the first
 * `seeds` nodes) into buf. */
char *tt_cluster_url(const tt_cluster_t *c, int seeds, char *buf, size_t size);
/* `redis-cli --cluster reshard` moving `slots` slots from node `from` to
 * node `to` (indexes), in the background.  The pid, or -1; its output in
 * logpath. */
pid_t tt_reshard_start(const tt_cluster_t *c, int from, int to, int slots, int pipeline,
                       char *logpath, size_t logsize);
/* `redis-cli --cluster check`: 0 when the cluster is consistent and every
 * slot is covered (output into *out if not NULL). */
int tt_cluster_check(const tt_cluster_t *c, char **out);

/* The Redis Cluster hash slot of a key (CRC16-XMODEM of its {hash tag}),
 * computed independently of the library. */
unsigned tt_key_slot(const char *key, size_t len);

#endif

/* -------------------------------------------------------------- stress */

/* P processes x T threads take and release mutexes named names[0..n) (in
 * turn, starting at a per-thread offset) until told to stop or `ops` holds
 * per thread are done.  Inside each hold the holder increments the name's
 * counter in shared memory non-atomically (read, pause hold_us, write) and
 * records the hold: start (after the lock call) and end (before the unlock
 * call), CLOCK_MONOTONIC, comparable across processes; fence; pid/tid; the
 * lock and unlock return codes.  A failed lock call (EIO, ETIMEDOUT, ...)
 * is counted, its dist_lasterror() kept, and retried after 10 ms; the
 * longest lock call is recorded. */

#define TT_MAX_NAMES 16

typedef struct tt_hold {
    int64_t start_us, end_us;
    uint64_t fence;
    int32_t pid, tid;
    int16_t name, lock_rc, unlock_rc, filled;
} tt_hold_t;

typedef struct tt_stress_cfg {
    int procs, threads;
    int nnames;
    char names[TT_MAX_NAMES][64];
    long ops;                     /* per thread; 0: until tt_stress_stop() */
    long hold_us;                 /* pause inside each hold */
    long timed_ms;                /* >0: dist_mutex_timedlock(now + timed_ms); 0: lock */
    long lease_ms;                /* >0: fixed lease attribute */
    const char *const *env;       /* "VAR=value" set in each child before its first call */
    uint64_t cap;                 /* hold records (default 200000) */
} tt_stress_cfg_t;

typedef struct tt_stress tt_stress_t;

typedef struct tt_stress_report {
    uint64_t holds, ownerdead;
    uint64_t overlaps, excused;        /* not excused / excused by a non-0 unlock */
    uint64_t fence_inversions;
    uint64_t lost_updates;             /* holds - counters, over all names */
    uint64_t unlock_enolck, unlock_eio, unlock_other;
    uint64_t lock_eio, lock_timedout, lock_other;
    int64_t max_call_ms;               /* longest lock call (any result) */
    int64_t max_gap_ms;                /* longest time between two successful acquisitions */
    int64_t gap_from_us, gap_to_us;    /* where that gap was (CLOCK_MONOTONIC) */
    int64_t name_gap_ms[TT_MAX_NAMES]; /* the same per lock name */
    uint64_t redirects, reconnects;    /* the workers' dl_stats: cluster MOVED/ASK followed, reconnections */
    int children_failed;
    char first[300];                   /* first violation */
    char first_error[256];             /* a dist_lasterror() of a failed lock call */
} tt_stress_report_t;

/* Forks the workers; returns at once (NULL on failure). */
tt_stress_t *tt_stress_start(const tt_stress_cfg_t *cfg);
/* Successful holds recorded so far. */
uint64_t tt_stress_holds(const tt_stress_t *s);
/* Successful acquisitions that started at or after t_us (CLOCK_MONOTONIC
 * µs), and how many distinct processes made them. */
uint64_t tt_stress_holds_since(const tt_stress_t *s, int64_t t_us, int *procs);
/* First successful acquisition at or after t_us, or -1. */
int64_t tt_stress_first_since(const tt_stress_t *s, int64_t t_us);
/* Tells the workers to stop, waits (timeout_ms) for them, verifies. */
void tt_stress_finish(tt_stress_t *s, long timeout_ms, tt_stress_report_t *rep);
void tt_stress_free(tt_stress_t *s);
void tt_stress_print(const char *title, const tt_stress_report_t *rep);
