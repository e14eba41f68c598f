/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_mode.h - the topology a suite runs in, chosen by an environment
 * variable (ctest runs such a suite once per mode): single (the default:
 * one server), sentinel (a master, a replica, 3 sentinels), cluster (3
 * masters, 3 replicas), tls (rediss:// with client certificates), redlock
 * (3 servers).  The suite's library calls run in forked children that set
 * tm_env() first (the library reads its environment once per process).
 * Used by test_barrier and test_once.
 */
#ifndef TH_HARNESS_MODE_H
#define TH_HARNESS_MODE_H

#include "harness_topo.h"

enum { TM_SINGLE, TM_SENTINEL, TM_CLUSTER, TM_TLS, TM_REDLOCK, TM_MODES };

extern int tm_mode;                   /* TM_* */
extern const char *tm_mode_name;      /* "single" ... */

/* Reads the mode from the variable var (unset: single); an unknown mode
 * ends the suite with a message.  Call first in main. */
void tm_pick(const char *var);
/* cmocka group setup: the mode's servers.  Teardown: tt_group_teardown. */
int tm_group_setup(void **state);
/* The environment a child sets before its first dist_ call: the mode's
 * DISTLOCK_URL (and TLS files), a short I/O time-out, quiet logs;
 * NULL-terminated. */
const char *const *tm_env(void);
/* Single and tls: the server (a test may restart or flush it); NULL in
 * the other modes. */
th_server_t *tm_server(void);
/* The plain port of the server that has key (every mode but redlock:
 * the master, or the cluster's node for its slot); -1 if unknown. */
int tm_key_port(const char *key, size_t len);
/* Key `which` of the object of kind (keys.h) named name, under the
 * default prefix, into buf; its length. */
size_t tm_key(char *buf, size_t size, int kind, const char *name, int which);

#endif
