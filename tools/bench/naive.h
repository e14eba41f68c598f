/* SPDX-License-Identifier: BSD-3-Clause */
/* naive.h - the naive lock: SET NX PX and a compare-and-delete script
 * (naive.c). */
#ifndef BENCH_NAIVE_H
#define BENCH_NAIVE_H

#include <hiredis/hiredis.h>

typedef struct naive {
    redisContext *c;
    char key[200];
    char token[64];
    unsigned long lease_ms;
    unsigned long commands;   /* sent by the naive lock */
    unsigned long retries;
} naive_t;
/* 0 or -1; connects its own connection. */
int naive_init(naive_t *n, const char *name);
/* The same on connection c (the server of the key's slot in a cluster:
 * the key naive:{name} shares the lock's hash tag), which it then owns;
 * c NULL: -1. */
int naive_init_on(naive_t *n, const char *name, redisContext *c);
int naive_lock(naive_t *n);   /* SET NX PX, retried every 1 ms */
int naive_unlock(naive_t *n); /* compare-and-delete script; 0, or -1 if not held */
void naive_fini(naive_t *n);

#endif
