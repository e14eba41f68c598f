/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * output.h - everything distlock prints: one-line messages on stderr,
 * names and durations for people, JSON for scripts, the status and list
 * views, and the text of the waiting line.
 */
#ifndef CLI_OUTPUT_H
#define CLI_OUTPUT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "lockstat.h"

/* -v: cli_note prints. */
extern int cli_verbose;

/* "distlock: MESSAGE\n" on stderr, in one write so that lines of
 * concurrent processes do not interleave. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_verr(const char *fmt, va_list ap);
/* "distlock: warning: MESSAGE\n" */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_err, with -v only. */
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A lock name for messages: in double quotes, control bytes, '"' and '\'
 * escaped, cut with "..." to fit size. */
const char *cli_quote(const char *s, size_t n, char *buf, size_t size);
/* 0.4s, 12.4s, 3m05s, 2h03m, 4d02h. */
const char *cli_duration(long long ms, char *buf, size_t size);
/* "host:pid (thread tid)" */
const char *cli_who(const cli_who_t *w, char *buf, size_t size);

/* distlock status NAME [--json] */
void cli_print_status(FILE *f, const cli_lockstat_t *st);
void cli_print_status_json(FILE *f, const cli_lockstat_t *st);
/* distlock list [--json] */
void cli_print_list(FILE *f, const cli_lockstat_t *v, size_t n);
void cli_print_list_json(FILE *f, const cli_lockstat_t *v, size_t n);

/* The waiting line's text, for st (NULL: state unknown):
 * waiting for "NAME": held by HOST:PID (thread T) for 12.4s, 2 waiting */
void cli_waitline_text(char *buf, size_t size, const char *name, size_t namelen,
                       const cli_lockstat_t *st);

#endif
