/* SPDX-License-Identifier: BSD-3-Clause */
/* scriptfloor.h - the script floor: W1's pair as two calls of a script that
 * does nothing (scriptfloor.c). */
#ifndef BENCH_SCRIPTFLOOR_H
#define BENCH_SCRIPTFLOOR_H

#include <hiredis/hiredis.h>

typedef struct sfloor {
    redisContext *c;
    char sha[48];
    char keys[6][512];
    char token[40];
    unsigned long regid;
    unsigned long commands;
} sfloor_t;
/* 0 or -1; connects its own connection. */
int sfloor_init(sfloor_t *s, const char *name);
int sfloor_lock(sfloor_t *s);     /* EVALSHA "return 1" with acquire.lua's KEYS/ARGV */
int sfloor_unlock(sfloor_t *s);   /* ... with release.lua's */
void sfloor_fini(sfloor_t *s);

#endif
