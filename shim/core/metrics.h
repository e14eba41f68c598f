/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.h - the metrics file (DISTLOCK_METRICS_FILE): the process's
 * counters in the Prometheus text format, rewritten atomically (a
 * temporary file in the same directory, then rename) every
 * DISTLOCK_METRICS_INTERVAL_MS by a thread of the library, for a
 * textfile collector (metrics.c).
 *
 * What it reports by lock name is each object's tally (tally.h), summed
 * over the objects a name had (an object freed by destroy keeps counting:
 * its counts are kept when the registry frees it).  The first
 * DL_METRICS_NAMES names that count anything are written each under its
 * own name; every later one is summed under name="_other", so a process
 * with 100,000 names writes a file of bounded size.
 *
 * metrics.c owns the process's dl_metrics_t (dl_proc_t.metrics); its
 * names are kept under the registry mutex (the walk over the objects, and
 * each object's retirement), the file written under its own mutex.
 */
#ifndef DL_METRICS_H
#define DL_METRICS_H

#include <stddef.h>

#include "process.h"

/* Names written each under its own label; the others under "_other". */
#define DL_METRICS_NAMES 100

/* Counting starts for p (dl_tally_enabled), the registry tells the
 * metrics of objects it frees, and the writer thread starts: the file is
 * written at once, then every interval.  p->cfg.metrics_file is set; p
 * is being created (no other thread uses it yet). */
void dl_metrics_start(dl_proc_t *p);
/* Writes the file now (at exit: the last counts of a short-lived
 * process), if p writes one.  Never waits for Redis. */
void dl_metrics_flush(dl_proc_t *p);
/* The file's text as it would be written now (malloc'ed, *len bytes), or
 * NULL without metrics or memory; for the tests. */
char *dl_metrics_render(dl_proc_t *p, size_t *len);

#endif
