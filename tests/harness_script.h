/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_script.h - the library's Lua scripts run directly on the suite's
 * server, as the library calls them (the six keys of a lock name, the
 * body with EVAL, so a fresh server needs nothing cached): for tests that
 * replay a request late, or in an order no client would.
 */
#ifndef TH_HARNESS_SCRIPT_H
#define TH_HARNESS_SCRIPT_H

#include <hiredis/hiredis.h>

#include "script.h"

/* Runs script op (DL_SCRIPT_*) on lock `name` with args after the keys.
 * Never an error reply (the test fails instead); free the reply. */
redisReply *th_script(int op, const char *name, int nargs, const char *const *args);
/* Its integer reply, or the first element of an array reply; -1 otherwise. */
long long th_script_ll(int op, const char *name, int nargs, const char *const *args);
/* acquire.lua for token in mode, lease ms, registration regid, queueing
 * when enqueue: 1 acquired (*fence, *dead, *claimed set where not NULL),
 * 0 busy. */
int th_script_acquire(const char *name, const char *token, const char *mode, const char *lease,
                      int enqueue, const char *regid, unsigned long long *fence, int *dead,
                      int *claimed);
/* release.lua of the hold named by fence: 1 released, 0 held nothing, 2
 * released already. */
long long th_script_release(const char *name, const char *token, const char *mode,
                            unsigned long long fence);

#endif
