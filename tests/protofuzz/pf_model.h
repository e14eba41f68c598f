/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pf_model.h - what each simulated process believes, and what the fuzzer
 * itself saw (every request, every grant, every fence), shared by the step
 * runner (pf_run.c) and the invariants (pf_check.c).
 *
 * A process believes what the real client would: a hold from an acquire's
 * reply is valid until the moment the request was sent plus its lease (the
 * server set the TTL later than that); a pushed grant until the sending of
 * the step that published it plus the claim window; a renewal from its
 * sending plus the lease.  A hold reported as "mine" (a grant made earlier,
 * claimed now) has no known validity until it is renewed.  Beliefs are
 * only counted while now + PF_MARGIN_MS is before their validity ends, so
 * the server's clock running a little apart from ours never makes a false
 * alarm.
 */
#ifndef PF_MODEL_H
#define PF_MODEL_H

#include "pf.h"
#include "pf_redis.h"

#define PF_MARGIN_MS 5
#define PF_INBOX 16
#define PF_LIMBO 8
#define PF_ABANDONED 8

typedef struct pf_hold {
    int has;
    char mode;
    uint64_t fence, rid;
    int64_t valid_until;       /* local ms; 0: not known (claimed, never renewed) */
    int lost;                  /* renew said gone, or broken: not counted */
    int cut;                   /* a linger mark cut its TTL (tenure.c, dl_tenure_ttl):
                                  renewals vouch for the claim window only */
} pf_hold_t;

typedef struct pf_wait {
    int active;
    char mode;
    uint64_t regid;
    int64_t reg_until_lo;      /* the registration lives at least until then */
    int exempt;                /* a break ended what it could have been granted */
} pf_wait_t;

typedef struct pf_push {
    uint64_t regid, fence;
    int64_t t0;                /* sending of the step that published it */
    int broken;                /* a break since: the hold it names is gone */
} pf_push_t;

typedef struct pf_unit {       /* what one given-up connection still holds */
    pf_req_t r[2];
    int n;
} pf_unit_t;

typedef struct pf_reqinfo {    /* per registration id, per process */
    char mode;
    int64_t t_send;
    int64_t t_ran;             /* reply read (upper bound of when it ran); 0 never ran */
    int pushed;                /* a grant for it was published */
} pf_reqinfo_t;

typedef struct pf_proc {
    int lease, wttl, claim;    /* this process's lock attributes (ms) */
    int mttl;                  /* redlock mode: its writer mark's ttl (ms) */
    uint64_t regseq;
    pf_hold_t hold;
    pf_hold_t comp;            /* the companion lock, held with `hold` after a lock-all
                                  (given back with it) */
    pf_wait_t wait;
    pf_push_t inbox[PF_INBOX];
    int ninbox;
    pf_unit_t limbo[PF_LIMBO];
    int nlimbo;
    struct { char mode; uint64_t regid; int checks; } ab[PF_ABANDONED];
    int nab;
    pf_reqinfo_t *ri;          /* indexed by regid */
    size_t nri;
} pf_proc_t;

typedef struct pf_fence {
    uint64_t fence;
    int proc;
    char mode;
} pf_fence_t;

/* A grant seen during the current step, to check its mode in the snapshot. */
typedef struct pf_grant {
    int proc;
    char mode;                 /* the mode asked */
    uint64_t fence;
    const char *how;
    int unread;                /* in the reply to a held-back request: nobody reads it */
} pf_grant_t;

typedef struct pf_stats {
    long steps, skipped, calls, grants, pushes, stale, lost, breaks, sleeps_ms;
} pf_stats_t;

typedef struct pf_run {
    const pf_opts_t *o;
    pf_conn_t k;
    int np;
    pf_proc_t p[PF_MAX_PROCS];
    int maxlease, maxwttl;
    int maxmttl;               /* the largest mark ttl any process sends */
    /* What the step's redlock call needs judged against the snapshot after
     * it (pf_check.c, check_mark): the snapshot before it and the reply. */
    struct {
        int kind;              /* PF_MK_* */
        int proc;
        pf_snap_t pre;
        long long reply, left; /* acquire: reply[1] (1 granted), reply[2]; renew: n */
    } mk;
    int64_t planted_wwx;       /* not redlock: the mark planted at the start */
    uint64_t cmax;             /* the largest fence of the companion seen */
    pf_fence_t *fv;            /* every fence seen, sorted */
    size_t nf, capf;
    uint64_t maxfence_before;  /* the largest fence seen before this step */
    pf_grant_t g[32];
    int ng;
    pf_fail_t *fail;
    int step;
    int proc;                  /* the process this step's op applied to, -1 none */
    int unread;                /* the calls now are held-back requests */
    char line[768];            /* this step, readable */
    pf_stats_t st;
} pf_run_t;

enum { PF_MK_NONE, PF_MK_READ, PF_MK_RENEW, PF_MK_CLEARED };

/* pf_run.c */
int pf_failf(pf_run_t *r, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pf_linef(pf_run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
pf_reqinfo_t *pf_reqinfo(pf_run_t *r, int proc, uint64_t regid);

/* pf_check.c */
/* A grant (fresh or reported again) of fence to proc in the mode asked:
 * fences strictly increase per name, and a fence seen again names the same
 * holder in the same mode.  1 on a violation. */
int pf_note_fence(pf_run_t *r, int proc, char mode, uint64_t fence, const char *how);
/* Every invariant, after a step whose last reply was read at t_reply. */
int pf_check(pf_run_t *r, int64_t t_send);

#endif
