/* SPDX-License-Identifier: BSD-3-Clause */
/* commands.h - the status, list and break subcommands (commands.c). */
#ifndef CLI_COMMANDS_H
#define CLI_COMMANDS_H

#include "cli.h"

/* Each returns the exit code (cli.h). */
int cli_status(const cli_opts_t *o);
int cli_list(const cli_opts_t *o);
int cli_break(const cli_opts_t *o);

#endif
