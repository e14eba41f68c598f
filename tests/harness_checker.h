/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_checker.h - a mutual-exclusion checker for distlock.
 *
 * P processes x T threads repeatedly take one lock (a dist_mutex_t, or a
 * dist_rwlock_t in read or write mode), and record every hold into an
 * array shared by all of them (mmap MAP_SHARED|MAP_ANONYMOUS, so forked
 * children write into the parent's view):
 *
 *   start  CLOCK_MONOTONIC ns right after the lock call returned
 *   end    CLOCK_MONOTONIC ns right before the unlock call
 *   fence  dist_*_getfence() during the hold
 *   pid, tid, mode ('w' or 'r'), the lock and unlock return codes
 *
 * CLOCK_MONOTONIC is one clock for every process of the machine, so holds
 * of different processes can be compared.  The holder also increments a
 * shared counter non-atomically (read, pause, write) under a write hold,
 * and a reader checks it does not change during its read hold.
 *
 * chk_verify() then checks, on the holds sorted by start:
 *
 *  - overlap: no write hold overlaps any other hold in time (for a mutex
 *    every hold is a write hold); read holds may overlap read holds.  Two
 *    holds overlap when the later one started before the earlier one
 *    ended.  Only a hold whose unlock returned 0 vouches for its whole
 *    time: an overlap is a violation when such a hold was still running as
 *    the other began (whose lock call said it had the lock then).  It is
 *    "excused" (counted apart) when the holds still running were all
 *    unlocked with ENOLCK (the library found the hold lapsed, as the SPEC
 *    allows after a lease lapse or a server that lost its data) or EIO
 *    (Redis could not be asked: the hold lapses within a lease).  Whether a
 *    lapse was allowed at all (no stall longer than the lease) is for the
 *    caller to judge from unlock_enolck and ownerdead.
 *  - fences: for any two holds A, B where A ended before B started and at
 *    least one of them is a write hold: fence(A) <= fence(B), and
 *    fence(A) < fence(B) when A and B are in different processes (SPEC:
 *    every acquisition that changes the holding process gets a greater
 *    fence; holds passed between threads of one process may share it).
 *    For a mutex this means: in start order, fences never decrease, and
 *    two consecutive holds have equal fences only within one process.
 *    Read holds among themselves are not compared (a process's read hold
 *    taken long ago may serve a thread after another process's newer one).
 *  - count: exactly the number of operations asked for, every one filled.
 *  - lost updates: the shared counter equals the number of write holds.
 *  - with verify_redis: during each hold, the lock hash in Redis names our
 *    fence (write holds) or is absent / ours (read holds); a mismatch on a
 *    hold whose unlock then returned 0 is a "lost hold" the library missed.
 *
 * The run lasts cfg->ops holds, or less when the tick callback calls
 * chk_stop() (a run driven by a fault script): the threads then stop after
 * their current hold, and every hold recorded is checked.
 *
 * Sets of locks (cfg->lockall): each operation takes several names at once
 * with the lock-all calls, in a random order, so that processes and
 * threads ask for overlapping sets in opposite orders; each name's holds
 * are checked as above, and a run that deadlocks never finishes (its
 * children are killed at max_ms and the run fails).
 *
 * Several lock names (cfg->names): each thread takes them in turn, each
 * name has its own shared counter, and every check above is made for each
 * name on its own.  A run in the background (chk_start ... chk_finish) is
 * watched while it runs (chk_live_holds, chk_holds_since: how many holds,
 * by how many processes, since a fault) and ends when the caller says so;
 * its report also has the gaps between acquisitions (recovery times), the
 * longest lock call and the library's redirects and reconnections.
 *
 * With fence_vouched_only (a run across a failover, where a hold the
 * library reported lost may have taken a fence the promoted replica never
 * saw), fences are compared only after a hold whose unlock returned 0.
 */
#ifndef TH_HARNESS_CHECKER_H
#define TH_HARNESS_CHECKER_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CHK_MUTEX 1
#define CHK_RWLOCK 2

#define CHK_MAX_PROCS 64         /* processes chk_inside() can tell apart */
#define CHK_MAX_NAMES 16         /* chk_cfg.names */

#define CHK_BLOCKING 1          /* chk_cfg.lock_how */
#define CHK_TRY_ONLY 2
#define CHK_TIMED 3             /* timed calls only (deadline now + timed_ms) */

#define CHK_RETRY_ALL 2         /* chk_cfg.retry_errors: any failed lock call */

typedef struct chk_hold {
    int64_t t_start_ns;         /* CLOCK_MONOTONIC after the lock call */
    int64_t t_end_ns;           /* CLOCK_MONOTONIC before the unlock call */
    uint64_t fence;
    int32_t pid, tid;
    char mode;                  /* 'w' or 'r' */
    int16_t lock_rc;            /* 0 or EOWNERDEAD */
    int16_t unlock_rc;          /* 0, ENOLCK, EIO, ... */
    int8_t redis_bad;           /* verify_redis: Redis disagreed during the hold */
    int8_t torn;                /* reader saw the counter change under it */
    int8_t filled;              /* the record is complete */
    uint8_t name;               /* index into chk_cfg.names (0 with one name) */
} chk_hold_t;

typedef struct chk_cfg {
    int kind;                   /* CHK_MUTEX or CHK_RWLOCK */
    int procs, threads;
    long ops;                   /* total operations, spread over every thread */
    long ops_per_thread;        /* instead: each thread's count; with neither, the
                                   threads run until chk_finish() */
    int write_pct;              /* rwlock: percent of write holds (default 25) */
    int fair;                   /* mutex: fair */
    int lock_how;               /* 0: a mix of blocking, timed and try loops;
                                   CHK_BLOCKING, CHK_TRY_ONLY, CHK_TIMED: only those */
    long timed_ms;              /* deadline of timed calls (default 10 s) */
    long lease_ms;              /* >0: the locks' fixed lease attribute */
    const int *proc_lock_how;   /* if set: lock_how of each process (procs entries) */
    const int *proc_threads;    /* if set: threads of each process, each <= threads
                                   (a run that stops early: ops is only a cap) */
    long hold_us;               /* time spent inside each hold (0: none) */
    int no_lock;                /* self-test: do not lock at all (must fail) */
    int retry_errors;           /* lock EIO/ETIMEDOUT (CHK_RETRY_ALL: any error): count
                                   and retry, else the child fails */
    long retry_sleep_ms;        /* pause after a failed lock call (default 2) */
    int verify_port;            /* >0: verify_redis against 127.0.0.1:port */
    int quiet;                  /* children print no per-error lines */
    long child_alarm_s;         /* child time limit; 0: th_fork_child's 40 s; <0: none */
    long max_ms;                /* parent waits this long for the children (default 35 s) */
    const char *name;           /* the lock name ... */
    int nnames;                 /* ... or several (nnames > 0): names[0..nnames) */
    char names[CHK_MAX_NAMES][64];
    uint64_t cap;               /* hold records (default: ops, or 200000) */
    int fence_vouched_only;     /* see above */
    const char *const *env;     /* "VAR=value" set in each child before its first call */
    /* Called by the parent about every tick_ms while the children run
     * (fault injection, progress): elapsed ms, holds recorded so far. */
    void (*tick)(void *arg, int64_t elapsed_ms, uint64_t done);
    void *tick_arg;
    long tick_ms;               /* default 20 */
    pid_t *pids_out;            /* if set: receives the children's pids (procs entries) */
    chk_hold_t **holds_out;     /* if set: receives a malloc'ed copy of the complete
                                   holds, by start (the caller frees it) ... */
    uint64_t *nholds_out;       /* ... and their number */
    int lockall;                /* mutex, >= 2 (at most nnames): each operation takes
                                   this many of the names at once (dist_mutex_lockall,
                                   _trylockall loops, _timedlockall, as lock_how says),
                                   drawn at random and passed in a random order, and
                                   records a hold for each (same start and end); ops
                                   counts operations, so expected holds = ops x lockall */
} chk_cfg_t;

typedef struct chk_shared chk_shared_t;
typedef struct chk_live chk_live_t;

typedef struct chk_report {
    uint64_t expected, holds;   /* asked for, recorded */
    uint64_t unfilled;          /* records never completed */
    uint64_t overlaps;          /* overlaps not excused: mutual exclusion broken */
    uint64_t excused;           /* overlaps after holds unlocked with ENOLCK or EIO */
    uint64_t fence_inversions;  /* fence order broken */
    uint64_t writes, counter;   /* write holds, final shared counter */
    uint64_t lost_updates;      /* writes - counter (a violation unless overlaps were
                                   excused: a lapsed holder wrote back a stale count) */
    uint64_t torn_reads;        /* readers that saw the counter change */
    uint64_t redis_bad;         /* verify_redis mismatches on holds unlocked with 0 */
    uint64_t redis_bad_excused; /* ... on holds unlocked with ENOLCK or EIO */
    uint64_t ownerdead;         /* lock calls that returned EOWNERDEAD */
    uint64_t unlock_enolck, unlock_eio, unlock_other;
    uint64_t lock_eio, lock_timedout, lock_other;   /* failed lock calls (retried) */
    uint64_t max_readers;       /* most read holds seen at once */
    int children_failed;        /* children that did not exit 0 */
    int stopped;                /* ended by chk_stop() */
    int64_t elapsed_ms;
    double ops_per_s;
    int64_t longest_hold_gap_ms;/* longest time no hold was running (recovery time;
                                   with several names, the longest of one name) */
    int64_t max_call_ms;        /* longest lock call (any result) */
    int64_t max_gap_ms;         /* longest time between two acquisitions (any name) */
    int64_t gap_from_us, gap_to_us;     /* where that gap was (CLOCK_MONOTONIC us) */
    int64_t name_gap_ms[CHK_MAX_NAMES]; /* the same for each name */
    uint64_t redirects, reconnects;     /* the children's dl_stats: cluster MOVED/ASK
                                           followed, reconnections */
    char first[512];            /* the first violation, described */
    char first_loss[256];       /* the first hold unlocked with ENOLCK, and the
                                   first lock that said EOWNERDEAD, described */
    char first_error[256];      /* a dist_lasterror() of a failed lock call */
} chk_report_t;

/* The shared area for n holds (mmap MAP_SHARED); NULL on failure. */
chk_shared_t *chk_shared_new(uint64_t n);
void chk_shared_free(chk_shared_t *sh);
chk_hold_t *chk_holds(chk_shared_t *sh);
uint64_t chk_done(const chk_shared_t *sh);

/* Runs the workload described by cfg (forking cfg->procs children), waits
 * for them, and verifies into rep.  0 when every child finished and no
 * violation was found (excused overlaps do not count as violations). */
int chk_run(const chk_cfg_t *cfg, chk_report_t *rep);

/* The settings of a run in the background, for a caller to complete
 * (procs, threads, names, ...): mutexes, blocking calls, every failed lock
 * call counted (lock_eio, ...) and retried after 10 ms, no message per
 * error, no time limit in the children (the caller ends the run). */
void chk_cfg_background(chk_cfg_t *cfg);

/* The same workload in the background: forks and returns at once (NULL on
 * failure); the caller watches it, then ends it with chk_finish(). */
chk_live_t *chk_start(const chk_cfg_t *cfg);
/* Holds begun so far. */
uint64_t chk_live_holds(const chk_live_t *c);
/* Complete holds whose acquisition came at or after t_us (CLOCK_MONOTONIC
 * us, th_now_us()), and how many distinct processes made them. */
uint64_t chk_holds_since(const chk_live_t *c, int64_t t_us, int *procs);
/* The first acquisition at or after t_us (us), or -1. */
int64_t chk_first_since(const chk_live_t *c, int64_t t_us);
/* Tells the threads to stop after their hold, waits (timeout_ms, then
 * kills) for the processes, verifies into rep as chk_run() does (every
 * hold begun must be complete), and frees c.  0 when no violation. */
int chk_finish(chk_live_t *c, long timeout_ms, chk_report_t *rep);

/* While chk_run runs (from its tick callback): the pid of a process one
 * of whose threads is inside a write hold right now, or 0. */
pid_t chk_writer_now(void);

/* While chk_run runs: how many threads of process number index (0 ..
 * procs-1, below CHK_MAX_PROCS) are inside a hold (any mode) right now. */
int chk_inside(int index);

/* From the tick callback: the threads stop after their current hold (the
 * run ends early; expected becomes the holds begun). */
void chk_stop(void);

/* CLOCK_MONOTONIC in ns. */
int64_t chk_now_ns(void);

#include "harness_verify.h"

#endif
