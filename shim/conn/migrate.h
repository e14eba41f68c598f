/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * migrate.h - moving a lock's keys, all together, to the node importing
 * their slot (migrate.c), when the slot's node answered TRYAGAIN to the
 * lock's script: it migrates the slot and still has some of the lock's
 * keys (cluster.c's top comment says why the keys move together).
 * Stateless.
 */
#ifndef DL_MIGRATE_H
#define DL_MIGRATE_H

#include <stddef.h>

#include "cmdlink.h"
#include "config.h"

/* Asks node k (its CLUSTER NODES) which node imports the slot of c's lock
 * key (argv[3]), and has it move the lock's nkeys keys there in one
 * MIGRATE ... KEYS (the node runs it alone and deletes its copies once
 * the target has them), so that the next try is redirected (ASK) to where
 * the whole lock then is.  0 when moved (or nothing was left to move),
 * else EIO (err says why: the caller waits the migration out instead).
 * Blocks: two round trips on k. */
int dl_migrate_lock(dl_link_t *k, const dl_config_t *cfg, const dl_cmd_t *c, int nkeys,
                    char *err, size_t errlen);

#endif
