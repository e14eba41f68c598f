/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis.h - the nemesis of tests/test_nemesis.c and tools/nemesis.sh: an
 * adversary that injects faults into a busy run of client processes and
 * then judges the recorded history (issue 22).
 *
 *   nemesis_log.c      the shared record every client writes (calls and
 *                      store operations), which survives kill -9
 *   nemesis_client.c   a client process: threads taking random locks with
 *                      random calls, writing to the fenced store inside,
 *                      and the threads of each role (below)
 *   nemesis_roles.c    the roles: the other primitives' clients, each with
 *                      its threads and its checks (the table nm_roles)
 *   nemesis_sem.c      the semaphore role: at most N inside, no permit lost
 *   nemesis_lockall.c  the lock-all role: all or none, no deadlock
 *   nemesis_clock.c    the clients' wall clock, which the nemesis jumps
 *   nm_clockshim.c     the lock servers' wall clock (a library preloaded
 *                      into redis-server), which the nemesis jumps
 *   nemesis_store.c    the fenced store: another redis-server that accepts a
 *                      write only with a fence >= the highest it has seen
 *   nemesis_fault.c    the seeded fault schedule and its injection
 *   nemesis_net.c      network namespaces, veth pairs and nftables cuts
 *   nemesis_history.c  holds rebuilt from the record
 *   nemesis_check.c    the checks of the history
 *   nemesis_run.c      one run: servers, proxy, clients, faults, checks
 *
 * Times are CLOCK_MONOTONIC microseconds (one clock for every process of
 * the machine), printed relative to the run's start.
 */
#ifndef NEMESIS_H
#define NEMESIS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ------------------------------------------------------------------ config */

#define NM_MAX_SLOTS 48          /* client processes of one run, respawns included */
#define NM_MAX_LOCK_THREADS 4    /* a client's lock threads (cfg.threads) */
#define NM_MAX_THREADS 12        /* ... and its roles' threads */
#define NM_EV_PER_THREAD 16384
#define NM_MAX_FAULTS 512
#define NM_MAX_NAMES 32          /* the locks' names, then the roles' */
#define NM_MAX_JUMPS 64          /* clock jumps of a client recorded */
#define NM_MAX_STALLS 64         /* a client's stalls recorded (a loaded machine) */
#define NM_STALL_US 100000       /* a heartbeat late by this much is a stall */

/* Topologies a run can use (sentinel and cluster: not yet). */
enum nm_topo { NM_TOPO_SINGLE, NM_TOPO_REDLOCK, NM_TOPO_SENTINEL, NM_TOPO_CLUSTER, NM_TOPO_NETNS };

typedef struct nm_cfg {
    uint64_t seed;
    int topo;
    int procs, threads;         /* client processes alive at once, threads each */
    long duration_ms;           /* faults are injected during this long */
    long tail_ms;               /* then the run goes on healed this long */
    long lease_ms;              /* DISTLOCK_LEASE_MS of the clients */
    long fixed_ms;              /* the fixed lease of the names that have one */
    long io_timeout_ms;         /* DISTLOCK_IO_TIMEOUT_MS */
    double rate;                /* faults per second, on average */
    unsigned faults;            /* NM_F_* bits enabled */
    int verbose;                /* print the schedule and the summary even on success */
    unsigned roles;             /* the roles whose clients run (bit i: nm_roles[i]) */
    const char *cli;            /* the distlock CLI (for break) */
    const char *dir;            /* a directory for logs */
} nm_cfg_t;

/* ------------------------------------------------------------- lock names */

typedef struct nm_lockdef {
    const char *tag;
    int rw;                     /* 1: dist_rwlock_t, 0: dist_mutex_t */
    int fair;
    int fixed;                  /* 1: fixed lease cfg.fixed_ms (not renewed) */
    int weight;                 /* how often the threads pick it */
    int home;                   /* >0: the home lock of client slots = home-1 modulo
                                   nm_homes (mutexes) or nm_rhomes (rwlocks) */
    int all;                    /* 1: in the lock-all role's pool (a mutex) */
} nm_lockdef_t;

extern const nm_lockdef_t nm_locks[];
extern const int nm_nlocks;

/* ------------------------------------------------------------- the record */

enum nm_kind { NM_LOCK = 1, NM_UNLOCK, NM_WRITE, NM_READ,
               NM_CWAIT,         /* dist_cond_timedwait on the condition (name NM_CV_NAME):
                                    abs_rt_us its deadline, fence its deadline on
                                    CLOCK_MONOTONIC (us) */
               NM_SIGNAL,        /* dist_cond_signal: fence the time (us) the signaller's
                                    lock of the condition's mutex returned */
               NM_SWAIT,         /* a semaphore's wait, trywait or timedwait (op) */
               NM_SPOST,         /* a semaphore's post */
               NM_ALLCHECK,      /* lock-all: after the call, the locks of its set the
                                    thread holds (getfence 0), as a bit mask in fence
                                    (name: the set's first) */
               NM_BWAIT,         /* dist_barrier_timedwait (name NM_BAR_NAME): abs_rt_us
                                    its deadline, fence the generation it was released
                                    in (0 unknown), rc -1 DIST_BARRIER_SERIAL_THREAD is
                                    kept as NM_RC_SERIAL */
               NM_ONCE,          /* dist_once (name NM_ONCE_NAME) of epoch `hold` */
               NM_ORUN };        /* its routine's run (state 2: completed) */
/* The condition of the nemesis and its mutex: the condition role's names,
 * the first after the locks' (they take no part in the lock checks;
 * nemesis_check.c check_cond). */
#define NM_CV_NAME (nm_nlocks)
#define NM_CVM_NAME (nm_nlocks + 1)
/* The barrier (count: the clients alive at once) and the prefix of the
 * once names (one per epoch of NM_EPOCH_MS): the barrier role's names. */
#define NM_BAR_NAME (nm_role_base[NM_ROLE_BARRIER])
#define NM_ONCE_NAME (nm_role_base[NM_ROLE_BARRIER] + 1)
#define NM_EPOCH_MS 1500
#define NM_EPOCHS 64
#define NM_RC_SERIAL 1000         /* a barrier wait's DIST_BARRIER_SERIAL_THREAD, recorded */
enum nm_op { NM_OP_LOCK = 1, NM_OP_TRY, NM_OP_TIMED };

/* One call, written by its thread: t0 and the rest before the call, then
 * state 1; t1, rc, fence and state 2 after it.  A call of a process that
 * was killed stays at state 1 (in flight at its death). */
typedef struct nm_ev {
    int64_t t0, t1;             /* call start, return */
    int64_t abs_rt_us;          /* timed calls: the deadline, CLOCK_REALTIME us */
    int64_t rt0_us, rt1_us;     /* CLOCK_REALTIME at the call and at its return (timed
                                   calls), as the client's clock says (it may jump) */
    uint64_t fence;             /* lock: getfence after success; store op: the holder's */
    uint64_t hi;                /* store op: the store's highest fence before it */
    uint32_t hold;              /* the thread's hold number (1, 2, ...) */
    int16_t rc;                 /* the call's code; store op: 1 accepted, 0 refused, -1 error */
    uint8_t kind, op, name, mode, depth;
    uint8_t state;
    uint8_t all;                /* lock-all: the locks of the call (its events follow
                                   each other, one per lock); 0: a single lock's call */
} nm_ev_t;

typedef struct nm_thread_log {
    uint32_t n;                 /* events published */
    uint32_t full;              /* the log ran out of room */
    uint32_t tid;
    uint32_t pad;
    /* A lock thread's next reentrant relock inside its hold: when (us,
     * 0: none planned), of which name, in which mode of the hold.  The
     * delkey fault aims by it (nemesis_fault.c watch_plans). */
    int64_t plan_at;
    int32_t plan_name, plan_mode;
    nm_ev_t ev[NM_EV_PER_THREAD];
} nm_thread_log_t;

typedef struct nm_slot {
    int32_t pid;                /* 0: unused */
    int32_t threads;
    int64_t born_us;
    int64_t died_us;            /* 0: alive (or exited at the end) */
    int32_t killed;             /* by the nemesis (kill -9) */
    int32_t exit_status;        /* waitpid status, -1 unknown */
    int32_t netns;              /* index of its namespace (NM_TOPO_NETNS), -1 */
    uint32_t nstalls;           /* times the client's heartbeat thread was held up */
    int64_t stall[NM_MAX_STALLS][2];    /* [from, to] us; the last one grows when full */
    int64_t rt_off_us;          /* what its CLOCK_REALTIME is ahead (nemesis_clock.c) */
    uint32_t njumps;            /* its clock's jumps: [monotonic us when, by us] */
    int64_t jump[NM_MAX_JUMPS][2];
    nm_thread_log_t th[NM_MAX_THREADS];
} nm_slot_t;

typedef struct nm_shared {
    volatile int stop;          /* clients finish their operation and exit */
    /* a late fault is armed: the semaphore threads take the counting
     * semaphore and stay inside long enough to be its aim (late_aim) */
    volatile int late_armed;
    int nslots;
    int64_t start_us;
    char names[NM_MAX_NAMES][64];
    nm_slot_t slot[NM_MAX_SLOTS];
} nm_shared_t;

nm_shared_t *nm_shared_new(void);
void nm_shared_free(nm_shared_t *sh);
/* A thread's next record (NULL when its log is full); nm_ev_begin fills
 * t0 and publishes it, nm_ev_end the result. */
nm_ev_t *nm_ev_begin(nm_thread_log_t *tl, int kind, int op, int name, int mode, int depth,
                     uint32_t hold);
void nm_ev_end(nm_ev_t *e, int rc, uint64_t fence);
int64_t nm_now_us(void);
int64_t nm_realtime_us(void);

/* ------------------------------------------------------------------- store */

/* The fenced store's script, run by the clients; the key of its log. */
typedef struct nm_store_entry {
    uint64_t fence, prev_hi;
    int32_t pid, tid, prev_pid;
    uint32_t hold;
    int64_t t_us;               /* the store's TIME */
    int ok;                     /* 1 accepted, 0 refused */
    int write;                  /* 1 write, 0 read (a check of hi) */
} nm_store_entry_t;

/* In a client thread: a connection to the store (127.0.0.1:port). */
void *nm_store_connect(int port);
void nm_store_close(void *c);
/* A write (write = 1) or a read (0) of name with fence; 1 accepted, 0
 * refused (a higher fence was seen), -1 on error; *hi: the highest before. */
int nm_store_op(void *c, const char *name, int write, uint64_t fence, int pid, int tid,
                uint32_t hold, uint64_t *hi);
/* The store's log of name, in the order the store ran the operations; n
 * entries (malloc'ed), NULL on failure. */
nm_store_entry_t *nm_store_log(int port, const char *name, size_t *n);

/* ------------------------------------------------------------------ client */

typedef struct nm_client_cfg {
    const nm_cfg_t *cfg;
    nm_shared_t *sh;
    int slot;
    int store_port;
    const char *url;            /* DISTLOCK_URL */
    const char *log_path;       /* stderr goes here */
    const char *netns_path;     /* NULL, or enter this namespace before the first lock */
} nm_client_cfg_t;

/* Forks a client process in slot cc->slot; its pid, or -1. */
pid_t nm_client_spawn(const nm_client_cfg_t *cc);

/* A thread of a client: a lock thread or a role's. */
typedef struct nm_thr {
    const nm_client_cfg_t *cc;
    nm_thread_log_t *tl;
    int idx, pid, tid;
    int sub;                    /* a role's threads: 0, 1, ... */
    uint64_t rng;
    void *store;
    uint32_t hold;
} nm_thr_t;

/* The thread's generator (splitmix64), a number in [lo, hi], a sleep, and
 * whether the run is over (nemesis_client.c). */
uint64_t nm_rnd(uint64_t *s);
long nm_rnd_in(uint64_t *s, long lo, long hi);
void nm_sleep_us(long us);
int nm_stopping(const nm_thr_t *t);
/* The thread's store operation in its hold of lock li, and its unlock of
 * li (depth 0: the hold's end), recorded (nemesis_client.c). */
void nm_do_store(nm_thr_t *t, int li, int mode, uint64_t fence);
int nm_do_unlock(nm_thr_t *t, int li, int mode, int depth, uint64_t fence);
/* The client's lock objects (nemesis_client.c): nm_locks[li]'s mutex. */
struct dist_mutex;
struct dist_mutex *nm_client_mutex(int li);
/* The client's role threads (nemesis_client.c): the condition's. */
void *nm_cond_main(void *arg);

/* ------------------------------------------------------------------ roles */

struct nm_hist;

/* A role: the client of one more primitive (a condition, semaphores,
 * lock-all...), run by every client process beside its lock threads, and
 * judged after the run by checks of its own.  nemesis_roles.c has the
 * table; a role is one line there and a file of its own. */
typedef struct nm_role {
    const char *tag;            /* its name in NEMESIS_ROLES */
    const char *const *names;   /* its objects' names (suffixes), NULL-terminated; each
                                   is a name of the run, after the locks' */
    int threads;                /* its threads in each client */
    /* The client's objects (dist_*_init), in the client before its threads
     * start; base: the index of the role's first name.  0, or the client
     * ends (status 4). */
    int (*open)(const nm_client_cfg_t *cc, int base);
    void *(*run)(void *thr);    /* a thread (an nm_thr_t *; sub tells which) */
    /* Whether the role can run with this configuration (a topology that
     * cannot have the primitive: 0), and why not. */
    int (*usable)(const nm_cfg_t *cfg, const char **why);
    void (*check)(struct nm_hist *hs);  /* its checks of the run's history */
    /* After the clients ended, before the checks: what the role reads of
     * the servers (a semaphore's value); NULL: nothing. */
    void (*after)(struct nm_hist *hs);
} nm_role_t;

/* The roles' lines in nm_roles (the condition first: NM_CV_NAME). */
enum { NM_ROLE_COND, NM_ROLE_SEM, NM_ROLE_LOCKALL, NM_ROLE_BARRIER };
extern const nm_role_t nm_roles[];
extern const int nm_nroles;
/* The index of role r's first name (nm_roles_setup sets them). */
extern int nm_role_base[];
/* Every name of the run: the locks', then the roles' in the table's order. */
extern int nm_nnames;
void nm_roles_setup(void);
/* The tag of name i (a lock's, or a role's name's). */
const char *nm_name_tag(int i);
/* "cond,sem" (or "all", "none") into role bits; ~0u on error. */
unsigned nm_roles_parse(const char *list);

/* ------------------------------------------------------------------ faults */

enum nm_fault_kind {
    NM_F_KILL,          /* kill -9 of a client (respawned later) */
    NM_F_STOP,          /* SIGSTOP of a client for a while, then SIGCONT */
    NM_F_STOP_GRANTEE,  /* SIGSTOP of the next client a waiting lock call returns in */
    NM_F_RESTART,       /* the lock server killed and started again, empty */
    NM_F_FLUSH,         /* SCRIPT FLUSH */
    NM_F_BREAK,         /* distlock break --force NAME */
    NM_F_PAUSE,         /* CLIENT PAUSE ms ALL */
    NM_F_CKILL,         /* CLIENT KILL of the library's connections */
    NM_F_DELAY,         /* the proxy delays one client's replies (or requests) */
    NM_F_FREEZE,        /* the proxy holds one client's requests back */
    NM_F_JITTER,        /* the proxy reorders requests across connections */
    NM_F_BLACKHOLE,     /* the proxy forwards nothing for a while */
    NM_F_MUTE,          /* the proxy drops pub/sub pushes for a while */
    NM_F_SRVSTOP,       /* SIGSTOP of a lock server */
    NM_F_PARTITION,     /* netns: a client cut from the server, one way or both */
    NM_F_STALL,         /* not injected: the machine held the nemesis itself up (recorded) */
    NM_F_SRVCLOCK,      /* a lock server's wall clock jumps (forward: keys expire early) */
    NM_F_CLOCK,         /* a client's wall clock jumps, forward or back */
    NM_F_LATE,          /* the proxy delays one client's replies past its I/O time-out:
                           calls that ran in Redis fail (EIO), their replies come late */
    NM_F_DELKEY,        /* one held lock's key deleted in Redis, no push: a silent loss of
                           one hold, just before its holder relocks */
    /* Not injected yet (no topology of the nemesis has them): */
    NM_F_FAILOVER,      /* sentinel: the master fails over */
    NM_F_MIGRATE,       /* cluster: a slot of the locks moves */
    NM_F_COUNT
};

#define NM_BIT(k) (1u << (k))
#define NM_FAULTS_NETNS                                                                       \
    (NM_BIT(NM_F_KILL) | NM_BIT(NM_F_STOP) | NM_BIT(NM_F_STOP_GRANTEE) | NM_BIT(NM_F_RESTART) | \
     NM_BIT(NM_F_FLUSH) | NM_BIT(NM_F_BREAK) | NM_BIT(NM_F_PAUSE) | NM_BIT(NM_F_CKILL) |         \
     NM_BIT(NM_F_SRVSTOP) | NM_BIT(NM_F_PARTITION) | NM_BIT(NM_F_SRVCLOCK) | NM_BIT(NM_F_CLOCK) |  \
     NM_BIT(NM_F_DELKEY))
#define NM_FAULTS_SINGLE                                                                      \
    (NM_BIT(NM_F_KILL) | NM_BIT(NM_F_STOP) | NM_BIT(NM_F_STOP_GRANTEE) | NM_BIT(NM_F_RESTART) | \
     NM_BIT(NM_F_FLUSH) | NM_BIT(NM_F_BREAK) | NM_BIT(NM_F_PAUSE) | NM_BIT(NM_F_CKILL) |         \
     NM_BIT(NM_F_DELAY) | NM_BIT(NM_F_FREEZE) | NM_BIT(NM_F_JITTER) | NM_BIT(NM_F_BLACKHOLE) |   \
     NM_BIT(NM_F_MUTE) | NM_BIT(NM_F_SRVSTOP) | NM_BIT(NM_F_SRVCLOCK) | NM_BIT(NM_F_CLOCK) |  \
     NM_BIT(NM_F_LATE) | NM_BIT(NM_F_DELKEY))

/* What a fault does to holds, for the checks. */
#define NM_FX_LOSS 1        /* the server may lose holds (of fault.name, or all if -1) */
#define NM_FX_STOP 2        /* the client pid stops (no renewals, no progress) */
#define NM_FX_NET 4         /* the network of pid (0: every client) is disturbed */
#define NM_FX_DEATH 8       /* the client pid dies */
#define NM_FX_SIGN 16       /* the clients can see it (a dropped connection...) */
#define NM_FX_MINORITY 32   /* with LOSS: one server of several lost its state (redlock):
                               a hold keeps its majority unless a bare one counted
                               that server, so it explains a lapse, never the return
                               of a hold that may still have its majority */

typedef struct nm_fault {
    int kind;
    int64_t at_us;              /* planned, from the run's start */
    long dur_ms;                /* how long it lasts (0: an instant) */
    long param;                 /* delay ms, pause ms, ... */
    int slot;                   /* target client slot (-1: chosen when due / none) */
    int name;                   /* target lock name (-1: none / all) */
    int dir;                    /* DELAY: 0 replies, 1 requests; PARTITION: 1 in, 2 out, 3 both */
    int server;                 /* which server (topologies with several), -1: none */
    /* filled when it runs */
    int done, ended;
    pid_t pid;                  /* the client it hit (0: all / none) */
    int64_t t_start, t_end;     /* absolute us */
    int effects;                /* NM_FX_* */
    char note[96];
} nm_fault_t;

typedef struct nm_schedule {
    int n;
    nm_fault_t f[NM_MAX_FAULTS];
} nm_schedule_t;

const char *nm_fault_name(int kind);
/* Parses "kill,stop,restart" (or "all", "single") into NM_F_* bits; 0 on error. */
unsigned nm_fault_parse(const char *list);
/* The seeded schedule of a run. */
void nm_schedule_make(const nm_cfg_t *cfg, nm_schedule_t *s);

/* ------------------------------------------------------------------ clocks */

/* nemesis_clock.c: in a client, its CLOCK_REALTIME (and gettimeofday,
 * time) is ahead of the machine's by *off us from now on. */
void nm_clock_follow(volatile int64_t *off);

void nm_schedule_print(FILE *out, const nm_schedule_t *s, int64_t start_us, int executed);

/* ------------------------------------------------------------------- run */

typedef struct nm_result {
    int violations;
    int classes[32];            /* violations by check (NM_C_*) */
    uint64_t calls, holds, writes, refused, enolck, ownerdead, eio, indeterminate;
    int faults_run;
    int64_t first_violation_us; /* from the start, -1: none */
    int skipped;                /* the machine cannot run this topology (why in first) */
    char first[640];
} nm_result_t;

/* One run with cfg; the verdict and its statistics in *res.  0 when no
 * violation was found. */
int nm_run(const nm_cfg_t *cfg, nm_result_t *res);
/* The defaults of a CI run (seed 1, single topology, every single-server
 * fault), then NEMESIS_* from the environment. */
void nm_cfg_default(nm_cfg_t *cfg);
void nm_cfg_env(nm_cfg_t *cfg);

#endif
