/* SPDX-License-Identifier: BSD-3-Clause */
/* main.h - dispatch, and the environment the library reads on first use
 * (main.c). */
#ifndef CLI_MAIN_H
#define CLI_MAIN_H

#include "cli.h"

/* The environment as distlock found it, for the child: what --url,
 * --lease and the log level changed is given back; DISTLOCK_FENCE is
 * fence. */
char **cli_child_env(const char *fence);

#endif
