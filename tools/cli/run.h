/* SPDX-License-Identifier: BSD-3-Clause */
/* run.h - NAME -- COMMAND: take the lock, run the child, release (run.c). */
#ifndef CLI_RUN_H
#define CLI_RUN_H

#include "cli.h"

/* Runs o's command under the lock; returns the exit code. */
int cli_run(const cli_opts_t *o);

#endif
