/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pf_redis.h - the fuzzer's call layer: one command connection and one
 * subscriber to the server, the script calls made with the library's own
 * typed calls (shim/script/call_<name>.h: the fuzzer picks the arguments,
 * the library writes KEYS and ARGV, as the library's take.c, hold.c,
 * watchdog.c and mark.c and the CLI's break do), and a snapshot of the
 * lock's six keys.  Each call declares the lock's keys in one of the forms
 * the topologies send (the six; the six and redis-cluster's guard; the
 * first only, as under an ASK), drawn from the request; and in redlock
 * mode a release sends quorum.c's 'o' (dl_release_args_t.redlock).
 */
#ifndef PF_REDIS_H
#define PF_REDIS_H

#include <hiredis/hiredis.h>

#include "pf.h"

enum pf_script { PF_S_ACQUIRE, PF_S_RELEASE, PF_S_RENEW, PF_S_CANCEL, PF_S_WITHDRAW, PF_S_BREAK,
                 PF_S_MARK, PF_S_ACQUIRE_ALL, PF_S_WITHDRAW_ALL };

/* The locks of a run: the one every op acts on, and a companion in the
 * same slot that only lock-all takes (and the release of a lock-all's
 * holds gives back). */
enum { PF_L_MAIN, PF_L_COMP };

/* One script call, complete: a request held back on a given-up connection
 * is kept as this and sent later. */
typedef struct pf_req {
    int script;
    int proc;
    char mode;
    int enqueue;
    uint64_t regid;            /* acquire, cancel, withdraw; release: the hold's */
    uint64_t fence;            /* release, renew: the hold's id */
    int lease, wttl, claim;    /* ms */
    int redlock;               /* send redlock's extra argument (acquire: ARGV[10] =
                                  mark, cancel ARGV[5] / renew ARGV[6] = 'm') */
    int mark;                  /* acquire: the writer mark's ttl ms, 0 will not wait */
    int lock;                  /* PF_L_*: the lock it acts on (release) */
    int comp_first;            /* acquire_all, withdraw_all: the companion first in
                                  the list (and its keys declared), else the lock
                                  first */
} pf_req_t;

typedef struct pf_conn {
    redisContext *c;           /* commands */
    redisContext *sub;         /* PSUBSCRIBE <prefix>n:* */
    char prefix[64];
    char chan[80];             /* ARGV[1]: <prefix>n:, or by slot <prefix>n:{T}: */
    int by_slot;               /* pushes by SPUBLISH, heard by SSUBSCRIBE */
    char keys[6][96];
    size_t keylen[6];
    char ckeys[6][96];         /* the companion's: <prefix>{L}c... (the same slot) */
    size_t ckeylen[6];
    char err[256];
} pf_conn_t;

/* A pushed message read from the subscriber. */
typedef struct pf_msg {
    int proc;                  /* from the channel; -1 unknown */
    char text[160];
} pf_msg_t;

/* The lock's state in Redis, read atomically by one script. */
typedef struct pf_snap {
    int64_t now;               /* Redis ms */
    int writer;                /* proc, -1 none, -2 a token not ours */
    uint64_t wfence, wrid;
    long long wpttl;
    long long pttl_r, pttl_ri, pttl_q, pttl_w;
    uint64_t metafence;
    int nrd;
    struct { int proc; int64_t score; uint64_t fence; } rd[PF_MAX_PROCS + 4];
    int ww;                    /* the writer mark's process: -1 none, -2 a token not ours */
    int64_t wwx;               /* until when it lives (Redis ms), -1 none */
    int nwt, nq;
    struct { int proc; char mode; int64_t deadline; uint64_t regid; int queued; } wt[PF_MAX_PROCS + 4];
} pf_snap_t;

/* by_slot: the channel prefix of redis-cluster:// (the slot of the lock's
 * keys), whose pushes go by SPUBLISH; else the classic one. */
int pf_conn_open(pf_conn_t *k, const char *host, int port, const char *prefix, int by_slot);
void pf_conn_close(pf_conn_t *k);
/* The token of simulated process i ("t<i>"). */
void pf_token(int proc, char *buf, size_t size);
int pf_token_proc(const char *s, size_t len);

/* Runs one script call; the reply (never an error reply), or NULL with
 * k->err set (an error reply: the script failed, which is a finding). */
redisReply *pf_call(pf_conn_t *k, const pf_req_t *q);
/* The keys q declares: 6, 7 (redis-cluster's guard) or 1 (as under an
 * ASK). */
int pf_call_form(const pf_req_t *q);
/* Every message published to our channels so far: a PING on the
 * subscriber, read up to its answer.  Returns the count (up to max), -1 on
 * a connection error. */
int pf_drain(pf_conn_t *k, pf_msg_t *out, int max);
int pf_snapshot(pf_conn_t *k, pf_snap_t *s);
/* The same of lock PF_L_*. */
int pf_snapshot_of(pf_conn_t *k, int lock, pf_snap_t *s);
/* Writes a writer mark straight into the meta hash (the non-redlock mode
 * plants one the scripts must leave alone). */
int pf_plant_mark(pf_conn_t *k, int proc, int64_t ms);

#endif
