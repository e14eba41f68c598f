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
 * TT_TEST (which kills the lot before ending the test).  Set
 * TH_TOPO_KEEP=1 to keep the directory (server logs are in it).
 *
 * Library calls of these suites run in forked helper processes (th_proc_*
 * with an env list, or th_fork_child) because the library reads
 * DISTLOCK_URL once per process and each test needs its own URL.
 */
#ifndef TH_HARNESS_TOPO_H
#define TH_HARNESS_TOPO_H

#include "harness.h"
#include "harness_topo_proc.h"
#include "harness_cluster.h"

/* ------------------------------------------------------------- servers */

/* TLS for what starts from now on (cert NULL: none again): every server
 * and sentinel also listens on a TLS port of its own (th_server_t.tls_port)
 * with these files, and speaks TLS to the others (tls-replication,
 * tls-cluster); the plain port stays for the tests' own inspection. */
void tt_tls_use(const char *cert, const char *key, const char *ca);

/* redis-server on 127.0.0.1:PORT (a free port) with --save "" --appendonly
 * no --dir <tt_dir()> and then extra (NULL-terminated, may be NULL),
 * started by tools/launch/launch.h.  Fills s like th_server_start, so
 * th_server_kill/stop/pause/resume work on it.  Waits until the port
 * answers as this process (INFO, which a server loading its data answers
 * too).  0 or -1. */
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
/* What each sentinel thinks and did, for a test that waited in vain for a
 * failover: the master it names, its flags and failover state, and the
 * events of its log (its "#" lines: +sdown, +odown, +tilt, elections,
 * -failover-abort-..., +switch-master), the last `lines` of them. */
void tt_sentinels_report(FILE *f, const tt_sentinels_t *st, int lines);
/* Whether any sentinel's log says it entered TILT mode (its own timer ran
 * more than 2 s late or the clock jumped: it then acts on nothing for 30 s). */
int tt_sentinels_tilted(const tt_sentinels_t *st);

#endif
