/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.h - `distlock metrics`: the Redis-side view of the objects under
 * the prefix in the Prometheus text format (metrics.c). */
#ifndef CLI_METRICS_H
#define CLI_METRICS_H

#include <stdio.h>

#include "cli.h"
#include "snapshot.h"

/* The exit code (cli.h): 0, or 69 after printing distlock_up 0 when Redis
 * cannot be read. */
int cli_metrics(const cli_opts_t *o);

/* Writes snapshot s (NULL: Redis could not be read) to f; per-name series
 * for the `names` busiest objects, the rest summed under name="". */
void cli_metrics_write(FILE *f, cli_snapshot_t *s, size_t names);

#endif
