/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_wait.h - lua/sem_wait.lua: take a permit of a semaphore, or
 * register for one (call_sem_wait.c). */
#ifndef DL_CALL_SEM_WAIT_H
#define DL_CALL_SEM_WAIT_H

#include "sem_calls.h"

typedef struct dl_sem_wait_args {
    dl_sem_op_t op;
    int wait;                     /* register if no permit (else a try) */
    unsigned long waiter_ttl_ms;  /* how long the registration lives unrefreshed */
    unsigned long lease_ms;       /* leased: the hold's lease */
    const char *info;             /* holder info, "host\tpid\ttid" */
    size_t infolen;
} dl_sem_wait_args_t;

typedef struct dl_sem_wait_reply {
    int got;                      /* 1 a permit taken, 0 none (a wait: registered),
                                     -2 the semaphore is of the other kind, -3 a
                                     stale copy, DL_SEM_LOST not the incarnation
                                     asked for (nothing done), -1 unexpected */
    uint64_t fence;               /* taken, leased: the fence of the caller's hold */
    long long count;              /* taken, leased: the caller's permits now */
    int fresh;                    /* taken, leased: this permit began the hold */
    long long value;              /* taken: the permits still free */
    long long nap_ms;             /* none: until a holder's lease runs out, 0 none */
    char other;                   /* -2: the kind it has ('c', 'l') */
    uint64_t inc;                 /* 1, 0: the semaphore's incarnation */
} dl_sem_wait_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_sem_wait_args_t dl_call_args_sem_wait;
typedef dl_sem_wait_reply_t dl_call_reply_sem_wait;

void dl_call_sem_wait(dl_call_t *c, const dl_caller_t *who, const dl_sem_wait_args_t *a);

#endif
