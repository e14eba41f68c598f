/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * error.h - the per-thread last error behind dist_lasterror(), the
 * messages' quoting of lock names, and logging to stderr (error.c, which
 * also holds dist_strerror).
 *
 * error.c owns the per-thread error text, dl_log_level (set from
 * DISTLOCK_LOG when the configuration is read) and the process's
 * refused configuration.
 */
#ifndef DL_ERROR_H
#define DL_ERROR_H

#include <stddef.h>

enum { DL_LOG_OFF, DL_LOG_ERROR, DL_LOG_WARN, DL_LOG_INFO, DL_LOG_DEBUG };
extern int dl_log_level;
/* The level dl_log prints up to: DISTLOCK_LOG as the library loaded it
 * (process.c), or what a tool or the interposer chose; the setter returns
 * the level it replaced. */
int dl_log_set_level(int level);
int dl_log_get_level(void);
/* Size of the per-thread last error (dist_lasterror). */
#define DL_ERRMAX 512
/* Sets this thread's dist_lasterror() text. */
void dl_seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sets it and returns code, for `return dl_fail(EINVAL, "...")`. */
int dl_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A configuration the server refused (conn/connect.c: SELECT of a
 * database it does not have): not an outage, and no retry mends it.
 * Set with its reason (naming the variable), NULL clears it (a
 * connection that was set up).  Process-wide. */
void dl_refused_set(const char *why);
/* A public call's code: EIO while a refusal is set becomes EINVAL with
 * the refusal as dist_lasterror() (a bad configuration, SPEC.md); any
 * other code passes. */
int dl_refused_rc(int rc);
/* 1 while a refusal is set (the distlock command's exit 78). */
int dl_refused(void);
/* Quotes a lock name for messages: printable, truncated, never binary. */
const char *dl_quote(const char *name, size_t len, char *buf, size_t size);

#endif
