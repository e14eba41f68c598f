/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pf.h - a protocol fuzzer for the Lua scripts of lua/.
 *
 * Several simulated processes drive the scripts directly (no C client in
 * between) against a real redis-server, in random interleavings: acquire
 * (try or queue), re-ask while queued, cancel, release, renew, the
 * watchdog's undo of a failed acquisition, break, delivery or loss of the
 * pushed grants, a lock-all of the lock and a companion lock (all or
 * none, never past a holder or a queue), requests held back on a connection that was given up and
 * delivered late (or never), and time passing (short leases, real sleeps).
 * After every step the invariants of pf_check.c are checked against a
 * snapshot of the lock's six keys and each process's beliefs.
 *
 * Everything is decided by the seed: the op list is drawn before the run
 * and never depends on what the server answered, so a seed replays the same
 * sequence, and a failing sequence can be shrunk by dropping ops and
 * replaying.  Only the server's clock is real: outcomes that depend on a
 * lease running out may differ between replays, which is why every timed
 * judgement keeps a margin (a belief whose conservative validity is near
 * its end is not counted).
 *
 * No cmocka, no harness: tests/test_protofuzz.c (ctest) and
 * tools/protofuzz.c (long runs) both use this.
 */
#ifndef PF_H
#define PF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PF_MAX_PROCS 8

enum pf_kind {
    PF_ACQ,        /* acquire: mode, enqueue, lost */
    PF_REASK,      /* a queued waiter asks again (its nap ran out): new regid */
    PF_CANCEL,     /* a timed wait ran out: cancel; lost */
    PF_RELEASE,    /* release a hold the process believes it has; lost */
    PF_RENEW,      /* the watchdog renews it; lost */
    PF_UNDO,       /* the watchdog withdraws a failed acquisition (withdraw.lua) */
    PF_BREAK,      /* distlock break */
    PF_DELIVER,    /* the process reads its oldest pushed message */
    PF_DROP,       /* ... or loses it */
    PF_STALE,      /* a request held back on a given-up connection runs now */
    PF_SLEEP,      /* time passes */
    PF_MARK,       /* a lingering unlock posts its mark: the hold's TTL cut to the
                      claim window (shim/core/mark.c); lost */
    PF_DIE,        /* redlock mode: a waiting process dies (stops retrying, sends
                      nothing more): its writer mark must lapse by itself */
    PF_ALL,        /* lock-all (acquire_all.lua) of the lock and a companion lock of
                      the same slot, in the order sel & 1 says; never queues; lost
                      (held back) only with its undo behind (withdraw_all.lua) */
    PF_NKINDS
};

/* How a request was lost (its connection given up after writing it). */
enum pf_lost {
    PF_SENT = 0,   /* ran, reply read */
    PF_LOST_UNDO,  /* held back, with its withdrawal right behind (acquire, lock-all) */
    PF_LOST        /* held back alone: no withdrawal fitted, or not an acquire */
};

typedef struct pf_op {
    uint8_t kind;
    uint8_t proc;      /* this process, or the next one the op applies to */
    uint8_t mode;      /* 'w' | 'r' (PF_ACQ) */
    uint8_t enqueue;   /* PF_ACQ: 1 queue on failure */
    uint8_t lost;      /* enum pf_lost */
    uint8_t sel;       /* which held-back request (PF_STALE) */
    uint16_t ms;       /* PF_SLEEP */
} pf_op_t;

/* Lost requests that trigger a known flaw of the scripts before their
 * hold and registration ids (docs/RELIABILITY.md): a run can leave each
 * kind out (the request is then sent normally, or with its withdrawal). */
#define PF_GATE_STALE_RELEASE 1u  /* a release run late ends a newer hold (finding 1) */
#define PF_GATE_STALE_CANCEL  2u  /* a cancel run late dequeues a newer registration;
                                     one never run leaves a registration behind */
#define PF_GATE_BARE_ACQUIRE  4u  /* an acquire held back without its withdrawal:
                                     a registration its process no longer knows of,
                                     granted later in the wrong mode (finding 2); and
                                     the mode of a grant in a reply nobody reads (a
                                     held-back acquire given its process's waiting
                                     registration of the other mode) */
#define PF_GATE_STALE_MARK    8u  /* a linger mark run late cuts a newer hold's TTL */
#define PF_GATE_ALL 15u
#define PF_GATE_LATE_ACQUIRE 16u  /* no acquire or lock-all is lost (so none runs
                                     late): the scripts of fd044c5 let a late
                                     acquire act on what a later request of its
                                     process holds or waits for (docs/RELIABILITY.md) */

typedef struct pf_opts {
    uint64_t seed;
    int steps;
    int procs;                 /* 2..PF_MAX_PROCS */
    const char *host;
    int port;
    unsigned gates;            /* PF_GATE_*: left out */
    int verbose;               /* 1: print every step */
    FILE *out;                 /* progress, failures (stderr if NULL) */
    int progress_ms;           /* >0: a progress line this often */
    long shrink_ms;            /* time allowed for shrinking (0: none) */
    long max_ms;               /* >0: stop the run after this long (passes) */
    const char *only;          /* non-NULL: report only this invariant (to measure
                                  how soon one flaw is found while others are known) */
    int redlock;               /* 1: every process is a redlock:// client of this one
                                  server: no queue, a waiting writer's mark (acquire's
                                  ARGV[10], cancel's and renew's 'm'), no lost requests */
    int by_slot;               /* 1: the channel prefix of redis-cluster:// (a slot's:
                                  the scripts' pushes go by SPUBLISH) */
} pf_opts_t;

/* What went wrong, at which step. */
typedef struct pf_fail {
    int step;                  /* index into the ops, -1 none */
    int steps_run;             /* how many ops ran (the failing one included) */
    long pushes;               /* grants pushed and read (lock scripts) */
    char what[64];             /* the invariant's name */
    char msg[512];
} pf_fail_t;

/* Draws the op list of a seed (gates applied).  Returns a malloc'ed array
 * of o->steps ops. */
pf_op_t *pf_generate(const pf_opts_t *o);

/* Runs ops[0..n) on fresh keys.  0: every invariant held; 1: *fail says
 * which broke (trace, if not NULL, receives a readable line per step, up to
 * the failing one); -1: the server could not be used (msg in fail). */
int pf_exec(const pf_opts_t *o, const pf_op_t *ops, int n, pf_fail_t *fail, FILE *trace);
/* The same, marking in ran[i] (if not NULL) which process op i applied to
 * (1 + its number; 0: skipped, changed nothing). */
int pf_exec_ran(const pf_opts_t *o, const pf_op_t *ops, int n, pf_fail_t *fail, FILE *trace,
                uint8_t *ran);

/* The whole thing: generate, run, and on a failure print the seed, the
 * failure and the shortest failing sequence found (within o->shrink_ms).
 * 0 pass, 1 an invariant failed, -1 infrastructure.  steps_done: how many
 * steps ran (the failing one included). */
int pf_fuzz(const pf_opts_t *o, int *steps_done, pf_fail_t *fail);

/* One op as text ("p1 acquire w queue", ...). */
void pf_op_str(const pf_op_t *op, char *buf, size_t size);
/* Parses the compact form pf_fuzz prints for a replay ("A1wq,R0,..."). */
int pf_ops_parse(const char *s, pf_op_t **ops, int *n);
void pf_ops_print_compact(FILE *f, const pf_op_t *ops, int n);

int64_t pf_now_ms(void);
int64_t pf_now_us(void);

#endif
