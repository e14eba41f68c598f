/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * policy.h - the distributed half of a wrapped call, with the
 * DISTLOCK_ON_ERROR policy applied, and the interposer's messages
 * (policy.c).  Included through preload.h.
 */
#ifndef DLP_POLICY_H
#define DLP_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#pragma GCC visibility push(hidden)

/* DISTLOCK_ON_ERROR */
enum { DLP_ON_ERROR_WAIT, DLP_ON_ERROR_ABORT };
extern int dlp_on_error;

/* DISTLOCK_ON_LOSS: what the program gets when a mapped hold is found
 * lapsed while held (the library's dist_onlost, from its own thread). */
enum { DLP_ON_LOSS_WARN, DLP_ON_LOSS_ABORT, DLP_ON_LOSS_EXIT };
extern int dlp_on_loss;
extern int dlp_on_loss_status;        /* exit:N */
/* Parses DISTLOCK_ON_LOSS's value into the two above: 0, or -1. */
int dlp_on_loss_parse(const char *v);
/* The dist_onlost function of the interposer: warns, aborts or exits as
 * DISTLOCK_ON_LOSS says, in the words of the kind whose entry it was
 * (dlp_kind_t's lost_words), else a lock's. */
void dlp_lost(const char *name, size_t namelen, uint64_t fence, void *arg);
/* Says line and acts as DISTLOCK_ON_LOSS says: warn returns; abort and
 * exit:N end the program here (the first to tell; another thread telling
 * meanwhile waits for the end instead of saying it twice). */
void dlp_loss_act(const char *line);

/* How a distributed call is made: blocking, one attempt, or until abstime
 * (on the clock the call names: CLOCK_REALTIME or CLOCK_MONOTONIC). */
enum { DLP_BLOCK, DLP_TRY, DLP_TIMED };

/* The distributed half of an acquisition, with the error policy applied:
 * EIO (Redis unreachable) is retried (wait) or fatal (abort); EOWNERDEAD
 * counts as acquired.  Returns 0, EBUSY (try), ETIMEDOUT (timed), EAGAIN,
 * ENOMEM, EDEADLK; EOWNERDEAD and ENOTRECOVERABLE when the kind says
 * the entry is robust (its lockops' robust).  e is of a lock kind
 * (kind->lock); mode 'w' or 'r' (a mutex: 'w'); abstime (DLP_TIMED) on
 * clk.  stop (DLP_BLOCK, a kind with acquire_stoppable; else NULL): once
 * another thread sets *stop and calls dlp_dist_interrupt(e), the wait
 * ends with EINTR. */
int dlp_dist_acquire(dlp_entry_t *e, char mode, int how, clockid_t clk,
                     const struct timespec *abstime, const int *stop);
/* Wakes a stoppable acquisition of e whose stop flag was just set. */
void dlp_dist_interrupt(dlp_entry_t *e);
/* The distributed half of a release; EIO under `abort` is fatal, ENOLCK
 * and EIO under `wait` are logged.  Returns 0 or EPERM (this thread held
 * nothing: the caller decides whether that matters). */
int dlp_dist_release(dlp_entry_t *e);

/* dist_lasterror(), with e's kind and name in front unless it names them
 * ("lock \"x\": ..."). */
const char *dlp_why(const dlp_entry_t *e, char *buf, size_t size);
/* A step of a kind's own call (a condition's wait or signal) that failed
 * with EIO (`quieted` starts at 0): fatal under `abort`; else warned, and
 * 0 once it is time to try again, or ETIMEDOUT when a timed wait's
 * abstime (on clk) has passed.  dlp_outage_end closes what the retries
 * opened. */
int dlp_outage(dlp_entry_t *e, int *quieted, int how, clockid_t clk,
               const struct timespec *abstime);
void dlp_outage_end(dlp_entry_t *e, int quieted, int ok);

/* Prints "distlock: <msg>" as one line on stderr (one write). */
void dlp_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, then abort(). */
void dlp_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Prints as dlp_say, then the program exits with status 1 (before main:
 * it does not start; later: a use the interposer cannot make safe). */
void dlp_stop(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* In a forked child: the parent's outage state is not its own. */
void dlp_policy_after_fork(void);

#pragma GCC visibility pop

#endif
