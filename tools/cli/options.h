/* SPDX-License-Identifier: BSD-3-Clause */
/* options.h - the command line of distlock (options.c) and its --help
 * text (usage.c). */
#ifndef CLI_OPTIONS_H
#define CLI_OPTIONS_H

#include "cli.h"

/* Parses argv into o.  0, or CLI_EX_USAGE after printing a one-line
 * reason. */
int cli_parse(int argc, char **argv, cli_opts_t *o);
/* The --help text. */
void cli_usage(void);

#endif
