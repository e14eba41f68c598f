/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * output.h - everything distlock prints: one-line messages on stderr,
 * names and durations for people, JSON for scripts, the status and list
 * views of every kind (objects.h), and the text of the waiting line.
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
/* A failure to reach Redis for a command that tries again (top): "Redis
 * is unreachable at URL (why)" (with_url 0: without " at URL", for a
 * screen that names it already), without the library's "gave up after"
 * (config.h dl_unreachable); another error as "Redis unreachable: ...". */
const char *cli_outage_text(const char *err, int with_url, char *buf, size_t size);
/* 0.4s, 12.4s, 3m05s, 2h03m, 4d02h. */
const char *cli_duration(long long ms, char *buf, size_t size);
/* "host:pid (thread tid)"; "process 3f9c2a1b" (its token) for a
 * condition's waiter, whose process is known by nothing else. */
const char *cli_who(const cli_who_t *w, char *buf, size_t size);

struct cli_obj;
/* distlock status NAME [--json]: one object, of any kind. */
void cli_print_status(FILE *f, const struct cli_obj *o);
void cli_print_status_json(FILE *f, const struct cli_obj *o);
/* distlock list [--json]: the table (its header, then a line per object,
 * or the line `none` when there is none), or a JSON array. */
void cli_print_list(FILE *f, const struct cli_obj *v, size_t n, const char *none);
void cli_print_list_json(FILE *f, const struct cli_obj *v, size_t n);

/* The waiting line's text, for st (NULL: state unknown):
 * waiting for "NAME": held by HOST:PID (thread T) for 12.4s, 2 waiting */
void cli_waitline_text(char *buf, size_t size, const char *name, size_t namelen,
                       const cli_lockstat_t *st);

#endif
