/* SPDX-License-Identifier: BSD-3-Clause */
/* top.h - `distlock top`: the held and waited-on objects, live (top.c). */
#ifndef CLI_TOP_H
#define CLI_TOP_H

#include "cli.h"

/* The exit code (cli.h): 0 when it quit (q, -n, a signal); plain output of
 * one snapshot: 69 when Redis cannot be read. */
int cli_top(const cli_opts_t *o);

#endif
