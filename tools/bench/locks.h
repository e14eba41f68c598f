/* SPDX-License-Identifier: BSD-3-Clause */
/* locks.h - the library as the workloads use it: lock names and keys,
 * warm-up, failed calls said (locks.c). */
#ifndef BENCH_LOCKS_H
#define BENCH_LOCKS_H

#include <stddef.h>

#include "distlock.h"

/* PEER_SCRIPTS: W1 only, the script floor (scriptfloor.c), named "floor". */
enum { PEER_DISTLOCK, PEER_NAIVE, PEER_SCRIPTS };
const char *peer_name(int peer);

/* Lock names: "bench:<run>:<workload>[:suffix]" */
void lock_name(char *buf, size_t size, const char *workload, const char *suffix);
/* Key `which` (its index in the scripts' KEYS: 0 the lock hash, 3 the
 * queue) of lock `name`, as the library names it (its DISTLOCK_PREFIX and
 * shim/base/keys.h).  0, or -1 (message printed). */
int lock_key(char *buf, size_t size, const char *name, int which);
/* Says on stderr why a lock call `what` failed, when rc is not 0; returns
 * rc. */
int lock_err(const char *what, int rc);
/* Connects a lock before anything is measured (one trylock, given back;
 * EBUSY is fine): 0, or the error (said). */
int mutex_connect(dist_mutex_t *m);
/* dist_*_init and that warm-up (rwlock: a try in `mode`, 'r' or 'w'): 0,
 * or -1 (said). */
int mutex_warm(dist_mutex_t *m, const char *name);
int rwlock_warm(dist_rwlock_t *rw, const char *name, char mode);

#endif
