/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topview.h - the text of `distlock top` (topview.c), as lines: the same
 * for the screen (top.c cuts them to its size) and for plain output.
 */
#ifndef CLI_TOPVIEW_H
#define CLI_TOPVIEW_H

#include <stddef.h>

#include "config.h"
#include "snapshot.h"

typedef struct cli_lines {
    char **v;
    size_t n, cap;
    int oom;                  /* a line could not be added */
} cli_lines_t;

void cli_lines_add(cli_lines_t *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_lines_free(cli_lines_t *l);

/* Where the objects are read: "redis 127.0.0.1:6379", "sentinel master
 * m1", "cluster via 127.0.0.1:7000", "redlock, 3 servers" (never a
 * password). */
const char *cli_topview_target(const dl_config_t *c, char *buf, size_t size);
/* "locks: 3 held, 5 waiting; longest wait 12.3s, oldest hold 1m02s" */
const char *cli_topview_summary(const cli_snapshot_t *s, char *buf, size_t size);
/* The table: its column header first (one line), then a line per object
 * and, with details, a line per holder and per waiter under it; or, with
 * no object, the header and one line saying so.  s is in the order to
 * show. */
void cli_topview_table(cli_lines_t *l, const cli_snapshot_t *s, int details);

#endif
