/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock.h - redlock://: one view of a lock out of its servers' views.
 * Every server is asked (lockstat.c) and their views merged here, the one
 * place that does it: a hold counts when a majority of the servers shows
 * it; cli_lockstat_t's redlock fields say what each server showed.
 */
#ifndef CLI_REDLOCK_H
#define CLI_REDLOCK_H

#include <stddef.h>

#include "lockstat.h"

/* The state of names[0..n) (their keys lk[0..n)) from every server,
 * merged; a majority must answer.  0, or -1 with r->err and st[] empty. */
int cli_redlock_fetch(cli_redis_t *r, const cli_keys_t *lk, char **names, const size_t *lens,
                      size_t n, cli_lockstat_t *st);

#endif
