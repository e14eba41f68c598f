/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_int.h - internal to the nemesis: the state of one run (servers,
 * proxy, clients, the schedule as it runs), the history rebuilt from the
 * record, and the violations the checks find.
 */
#ifndef NEMESIS_INT_H
#define NEMESIS_INT_H

#include "nemesis.h"
#include "harness.h"
#include "harness_proxy.h"
#include "harness_topo.h"

/* ------------------------------------------------------------ the run */

#define NM_MAX_SERVERS 5

typedef struct nm_net nm_net_t;     /* nemesis_net.c */

typedef struct nm_ctx {
    const nm_cfg_t *cfg;
    nm_shared_t *sh;
    nm_schedule_t sch;
    int64_t start;              /* the run's start (us) */
    int64_t fault_end;          /* no fault starts after this */
    th_server_t store;
    int nsrv;                   /* lock servers */
    th_server_t srv[NM_MAX_SERVERS];
    th_server_t repl;           /* sentinel: the replica */
    tt_sentinels_t sent;
    tt_cluster_t cl;
    th_proxy_t *px[NM_MAX_SERVERS];  /* the clients reach each lock server through its proxy */
    nm_net_t *net;              /* netns: the namespaces (NULL otherwise) */
    const char *const *srv_extra;   /* netns: the lock server's arguments (its binds) */
    const char *srv_args[8];
    char url[512];              /* the clients' DISTLOCK_URL */
    char direct_url[512];       /* the lock servers without the proxy (break) */
    char dir[256];
    uint64_t rng;
    int respawn_pending;        /* clients to start again */
    int64_t respawn_at;
    uint32_t cursor[NM_MAX_SLOTS][NM_MAX_THREADS];  /* events seen by the reactive faults */
    int grantee;                /* index of an armed STOP_GRANTEE fault, -1 */
    int late;                   /* index of an armed LATE fault, -1 */
    int delkey;                 /* index of an armed DELKEY fault, -1 */
    int sem_seen;               /* a semaphore call was recorded (the role runs) */
    uint64_t maxfence[NM_MAX_NAMES];    /* the greatest fence returned so far */
    int64_t next_watch;
    int hangs_seen;
    int broken;                 /* the run cannot go on (a server did not come back) */
    int64_t last_tick;          /* the nemesis's own loop, to see it held up */
    uint32_t hang_ev[NM_MAX_SLOTS][NM_MAX_THREADS];  /* watchdog: reported (index + 1) */
    /* The lock servers' wall clocks (nemesis_clockshim.c): each reads its
     * offset (us) from its file, mapped here to write it; NULL: no shim. */
    volatile int64_t *srv_clock[NM_MAX_SERVERS];
    char srv_clock_path[NM_MAX_SERVERS][300];
} nm_ctx_t;

/* nemesis_run.c: starts (or restarts, on its port) lock server i as the run
 * starts them, under its clock shim when the run has one.  0 or -1. */
int nm_server_start(nm_ctx_t *c, int i, int restart);

/* nemesis_net.c: n namespaces, each joined to this one by a veth pair;
 * NULL (and why) when the machine cannot (not root, no ip or nft). */
nm_net_t *nm_net_setup(int n, char *why, size_t whysize);
void nm_net_teardown(nm_net_t *net);
int nm_net_count(const nm_net_t *net);
/* "127.0.0.1 A1 A2 ...": the addresses the lock server listens on. */
const char *nm_net_bind(const nm_net_t *net);
/* The server's address as namespace k reaches it. */
const char *nm_net_server(const nm_net_t *net, int k);
void nm_net_ns_path(const nm_net_t *net, int k, char *buf, size_t size);
/* Drops what namespace k receives from the server (dir 1), sends to it
 * (2), or both (3); heal removes the rules. */
int nm_net_cut(nm_net_t *net, int k, int dir);
int nm_net_heal(nm_net_t *net, int k);
int nm_net_is_cut(const nm_net_t *net, int k);

/* nemesis_fault.c: runs what is due (start and end of faults), the armed
 * reactions, and at the end heals whatever is still active. */
void nm_faults_tick(nm_ctx_t *c, int64_t now);
void nm_faults_heal_all(nm_ctx_t *c);
/* Lock servers of the run answer (after a restart, a failover). */
int nm_servers_up(nm_ctx_t *c);
/* nemesis_run.c: the live client slots (pids > 0, not dead); a random one. */
int nm_pick_slot(nm_ctx_t *c, uint64_t r, int need_holder);
void nm_client_died(nm_ctx_t *c, int slot, int killed, int64_t when);

/* --------------------------------------------------------- violations */

enum nm_check {
    NM_C_OVERLAP,       /* two holds overlap without a lapse to excuse it */
    NM_C_STORE,         /* the store's verdicts: refused writes of vouched holds... */
    NM_C_STALE,         /* a lock call returned 0 for a hold already given on */
    NM_C_LAPSE,         /* a hold lapsed with no fault to explain it */
    NM_C_OWNERDEAD,     /* EOWNERDEAD without a lapse before it */
    NM_C_LIVENESS,      /* a waiter kept waiting while the lock was free, no fault */
    NM_C_HANG,          /* a call that did not return within its bound */
    NM_C_CODE,          /* a code the SPEC does not allow for the call */
    NM_C_CRASH,         /* a client died on its own */
    NM_C_FENCE,         /* fences out of order between processes */
    NM_C_TIMED,         /* ETIMEDOUT before the deadline */
    NM_C_ORPHAN,        /* EOWNERDEAD explained only by a lock call that failed */
    NM_C_WAKEUP,        /* a condition's signal lost: a waiter that waited through it
                           timed out, and no waiter was woken by it */
    NM_C_SEM,           /* more threads inside a semaphore than it has permits */
    NM_C_SEMCOUNT,      /* a semaphore's value at the end: permits lost or made up */
    NM_C_SEMTOLD,       /* a semaphore's user not told (ENOLCK) that Redis lost it */
    NM_C_ALL,           /* lock-all: not all of the set held after success, or some
                           held after a failure */
    NM_C_BARRIER,       /* a barrier generation with two serials, more releases than its
                           count, or one released before its last arrival was made */
    NM_C_ONCE,          /* a once's routine completed twice with nothing to explain it, or
                           a caller returned before any run of it completed */
    NM_C_COUNT
};

const char *nm_check_name(int c);

typedef struct nm_viol {
    int check;
    int name;                   /* lock name index, -1 */
    int64_t t;                  /* absolute us */
    char text[600];
} nm_viol_t;

/* ------------------------------------------------------------ history */

typedef struct nm_hold {
    int slot, th;
    int pid, tid;
    int name;
    char mode;                  /* 'w' or 'r' */
    int op, lock_rc;
    uint32_t hold;
    uint64_t fence;
    int64_t t_call, t_ret;      /* the lock call */
    int64_t t_end;              /* the unlock call's start, the death, or the run's end */
    int64_t t_unlock_ret;       /* 0: none */
    int unlock_rc;              /* -1: no unlock returned */
    int died;                   /* its process died holding it (or inside the unlock) */
    int open;                   /* still held at the end of the run */
    int chain;                  /* the first hold of its Redis hold (same pid, fence) */
    int64_t g_lb;               /* Redis granted it no earlier than this */
    int64_t lapse_ev;           /* earliest evidence that it lapsed (0: none) */
    char lapse_why[160];
    int explained;              /* a fault explains the lapse */
    int64_t told;               /* a relock by its thread inside it said EOWNERDEAD
                                   with a greater fence (0: none): its holder was
                                   told it had lapsed (the ownerdead check; its
                                   last unlock must say ENOLCK all the same) */
} nm_hold_t;

/* A lock call (any depth, any result). */
typedef struct nm_call {
    int slot, th, pid, tid;
    int name, op, depth, rc;    /* rc -1: in flight when its process died or the run ended */
    char mode;
    uint64_t fence;
    int64_t t0, t1;             /* t1 0: in flight */
    int64_t abs_rt_us, rt0_us, rt1_us;
    int hold;                   /* index of the hold it began (depth 0, acquired), -1 */
    int all;                    /* lock-all: the locks of its call, 0: a single lock's */
    int grp;                    /* lock-all: the index of its call's first lock's call */
} nm_call_t;

typedef struct nm_hist {
    nm_ctx_t *c;
    int64_t end;                /* when the clients were told to stop */
    nm_hold_t *h;
    size_t nh;
    nm_call_t *calls;
    size_t ncalls;
    nm_store_entry_t *store[NM_MAX_NAMES];
    size_t nstore[NM_MAX_NAMES];
    nm_viol_t *v;
    size_t nv, capv;
    uint64_t ops, writes, refused, enolck, ownerdead, eio, indeterminate;
} nm_hist_t;

/* nemesis_history.c */
int nm_hist_build(nm_hist_t *hs, nm_ctx_t *c, int64_t end);
void nm_hist_free(nm_hist_t *hs);
void nm_viol_add(nm_hist_t *hs, int check, int name, int64_t t, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* "pid/tid fence F [+t0..+t1] rc" of a hold, for messages. */
const char *nm_hold_str(const nm_hist_t *hs, const nm_hold_t *h, char *buf, size_t size);
/* ms since the run's start. */
double nm_rel(const nm_ctx_t *c, int64_t t);
/* The events of name around t (every thread), printed to out. */
void nm_hist_dump_around(const nm_hist_t *hs, FILE *out, int name, int64_t t, int64_t span_us);
/* Every event and fault of the run, by time, into path. */
int nm_hist_write(const nm_hist_t *hs, const char *path);

/* Time pid was stopped within [a, b] (us). */
int64_t nm_stopped_for(const nm_ctx_t *c, int pid, int64_t a, int64_t b);
/* How far slot's wall clock was set back within [a, b] (us, >= 0): a timed
 * call then waits that much longer. */
int64_t nm_clock_back_within(const nm_ctx_t *c, int slot, int64_t a, int64_t b);
/* slot's wall clock was set back within [a, b]. */
int nm_clock_back_at(const nm_ctx_t *c, int slot, int64_t a, int64_t b);

/* nemesis_check.c */
void nm_check_all(nm_hist_t *hs);
/* For the roles' checks: a fault that lost state of name (any, -1) within
 * [a, b] (the latest), and one that surely did (the earliest). */
const nm_fault_t *nm_loss_within(const nm_hist_t *hs, int name, int64_t a, int64_t b);
/* Whether a loss of Redis state since root_call, or the disturbances of
 * h's process (stops, cuts, stalls), explain a lapse of hold h by t, as the
 * lapse check judges a renewed lock's (h->g_lb: granted no earlier; its
 * Redis hold first returned at root_ret). */
int nm_lapse_explained(const nm_hist_t *hs, const nm_hold_t *h, int64_t root_call, int64_t root_ret,
                       int64_t t);
/* A timed call of slot (made at t0, its clock then rt0_us) that said
 * ETIMEDOUT at t1 did so before its deadline on its caller's wall clock
 * (not explained by a jump back of that clock after its deadline came and
 * before its thread read the clock). */
int nm_timed_early(const nm_hist_t *hs, int slot, int64_t t0, int64_t rt0_us, int64_t abs_rt_us,
                   int64_t rt1_us, int64_t t1);
/* Any fault, death or stall of any process within [a, b]? 0 if none. */
int nm_disturbed_any(const nm_hist_t *hs, int64_t a, int64_t b);

#endif
