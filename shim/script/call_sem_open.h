/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_open.h - lua/sem_open.lua: a semaphore, created with its kind
 * and value if it does not exist (call_sem_open.c). */
#ifndef DL_CALL_SEM_OPEN_H
#define DL_CALL_SEM_OPEN_H

#include "sem_calls.h"

typedef struct dl_sem_open_args {
    char kind;                    /* 'c' | 'l' */
    unsigned value;               /* initial value */
    char how;                     /* 'c' create if absent, 'x' create, only if
                                     absent, 'o' open only if present */
    uint64_t id;                  /* an operation id of the caller's (the
                                     incarnation it may create is drawn from it) */
} dl_sem_open_args_t;

typedef struct dl_sem_open_reply {
    int result;                   /* 1 created, 0 it existed, -1 absent ('o'),
                                     -5 present ('x'), -2 the other kind, -6
                                     unexpected */
    long long value;              /* 1, 0: the permits free now */
    uint64_t inc;                 /* 1, 0: its incarnation */
    char other;                   /* -2: the kind it has */
} dl_sem_open_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_sem_open_args_t dl_call_args_sem_open;
typedef dl_sem_open_reply_t dl_call_reply_sem_open;

void dl_call_sem_open(dl_call_t *c, const dl_caller_t *who, const dl_sem_open_args_t *a);

#endif
