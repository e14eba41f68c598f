/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viewopts.h - the command line of `distlock top` and `distlock metrics`
 * (viewopts.c): options.c hands it the words from the subcommand on.
 */
#ifndef CLI_VIEWOPTS_H
#define CLI_VIEWOPTS_H

#include <stddef.h>

/* What top and metrics were asked for (cli_opts_t.view). */
typedef struct cli_view_opts {
    const char *pattern;      /* glob on names, NULL for all */
    double interval_s;        /* -d: seconds between refreshes (1) */
    int has_interval;         /* -d given */
    unsigned long iterations; /* -n: refreshes before it ends; 0 no end */
    int batch;                /* -b: plain output, even on a terminal */
    int sort;                 /* -o: enum cli_sort (snapshot.h) */
    int reverse;              /* -r: the other way round */
    unsigned long limit;      /* --limit: objects read at most */
    unsigned long names;      /* metrics --names: series by name at most */
    const char *output;       /* metrics --output FILE */
} cli_view_opts_t;

#define CLI_VIEW_LIMIT 10000UL    /* --limit's default */
#define CLI_VIEW_NAMES 100UL      /* --names' default */

struct cli_opts;
/* The subcommand argv[i] is, CLI_TOP or CLI_METRICS, or -1. */
int cli_view_word(const char *w);
/* Parses argv[i..] (argv[i] is "top" or "metrics") into o, after the
 * options before it (--url, -v) were.  0, or CLI_EX_USAGE after printing
 * a one-line reason. */
int cli_view_parse(int argc, char **argv, int i, struct cli_opts *o);

#endif
