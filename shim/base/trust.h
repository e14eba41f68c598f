/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trust.h - whether the process may still believe what Redis last
 * confirmed of its holds (trust.c owns the epoch).
 *
 * A hold is passed between the process's own threads without asking Redis
 * only while Redis is not known to have lost it (tenure.c: dl_tenure_trusted).
 * Redis can lose a hold with a sign: a dropped connection (a restart
 * without persistence), NOSCRIPT (a restart, SCRIPT FLUSH, a failover),
 * LOADING, READONLY (a failover), a cluster reroute, a failed post, or a
 * revocation pushed by `distlock break`.  Each sign ends the trust in
 * every hold of the process at once: it moves the epoch on, and a hold is
 * trusted only if its last confirmation was sent in the current epoch.
 * The files that see a sign call dl_trust_end, the connection layer's
 * through conn/fault.c (dl_fault_note: which faults are signs), the
 * subscriber (core/notify.c) itself; they need not know which holds
 * exist.
 */
#ifndef DL_TRUST_H
#define DL_TRUST_H

/* The current epoch (a relaxed atomic read: never blocks). */
unsigned long dl_trust_epoch(void);
/* A sign that Redis may have lost state: every hold of the process must be
 * confirmed by a round trip before it serves another thread.  why is
 * logged (info).  Never blocks; safe from any thread. */
void dl_trust_end(const char *why);
/* What to call after each sign (the process: its watchdog confirms every
 * hold at once); NULL for nothing.  The process's, set at its creation and
 * cleared in a forked child. */
void dl_trust_hook(void (*fn)(void *arg), void *arg);

#endif
