/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sem_calls.h - what the semaphore's script entries (call_sem_*.c) share:
 * the arguments every operation sends (lua/sem_common.lua's ARGV[3..6]),
 * writing the semaphore's keys, and reading the kind a semaphore has when
 * it is not the caller's.
 */
#ifndef DL_SEM_CALLS_H
#define DL_SEM_CALLS_H

#include <stdint.h>

#include "caller.h"

/* What every operation on a semaphore sends after the channel prefix and
 * the token: the caller's object (its kind and initial value: the
 * semaphore is created with them if it does not exist), the operation's
 * id (they grow in the order the process sends them: lua/sem_common.lua,
 * sess_*) and the incarnation of the semaphore the process uses (a
 * semaphore that is not that one does nothing and says DL_SEM_LOST). */
typedef struct dl_sem_op {
    char kind;                    /* 'c' counting, 'l' leased */
    unsigned value;               /* initial value (permits) */
    uint64_t id;
    uint64_t inc;                 /* 0: none known yet (the operation may create it) */
} dl_sem_op_t;

/* The reply of an operation on a semaphore that is not the incarnation it
 * was sent for, or on none (lua/sem_common.lua, LOST): Redis lost the one
 * the process used. */
#define DL_SEM_LOST (-7)

struct dl_wire;                   /* dl_wire_t, calls.h */
struct redisReply;

/* KEYS: the semaphore's six; ARGV[1] the channel prefix, [2] the token. */
void dl_wire_sem(struct dl_wire *w);
/* ... then ARGV[3..6] from op. */
void dl_wire_sem_op(struct dl_wire *w, const dl_sem_op_t *op);
/* The kind letter of a reply {-2, kind} (element i), 0 if none. */
char dl_reply_kind(const struct redisReply *r, size_t i);

#endif
