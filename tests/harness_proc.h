/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_proc.h - helper processes ("procs") that run lock calls on
 * request and answer each with its return code, fence, timestamps and
 * dist_lasterror(), so tests synchronise on messages instead of sleeps.
 */
#ifndef TH_HARNESS_PROC_H
#define TH_HARNESS_PROC_H

#include <stdint.h>
#include <sys/types.h>
#include "distlock.h"
#include "harness_util.h"

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

#endif
