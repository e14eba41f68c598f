/* SPDX-License-Identifier: BSD-3-Clause */
/* call_sem_value.h - lua/sem_value.lua: a semaphore's value
 * (call_sem_value.c). */
#ifndef DL_CALL_SEM_VALUE_H
#define DL_CALL_SEM_VALUE_H

#include "sem_calls.h"

typedef struct dl_sem_value_args {
    char kind;                    /* 'c' | 'l' */
    unsigned value;               /* initial value */
    uint64_t inc;                 /* the incarnation the process uses, 0 none */
} dl_sem_value_args_t;

typedef struct dl_sem_value_reply {
    int result;                   /* 1 read, -2 the other kind, DL_SEM_LOST not the
                                     incarnation asked for, -1 unexpected */
    long long value;
    uint64_t inc;                 /* 1: its incarnation (0: it does not exist) */
    char other;                   /* -2: the kind it has */
} dl_sem_value_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_sem_value_args_t dl_call_args_sem_value;
typedef dl_sem_value_reply_t dl_call_reply_sem_value;

void dl_call_sem_value(dl_call_t *c, const dl_caller_t *who, const dl_sem_value_args_t *a);

#endif
