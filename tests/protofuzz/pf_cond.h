/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pf_cond.h - the protocol fuzzer's model of a condition variable's
 * scripts (lua/cond_enter.lua, cond_signal.lua, cond_check.lua,
 * cond_leave.lua), driven directly against a real redis-server as
 * pf.h's lock model drives the lock's.
 *
 * Simulated processes (up to three waiting threads each) register waits,
 * signal and broadcast, refresh their registrations, give up timed waits,
 * read or lose the pushed wake-ups, die (their waiters never heard from
 * again) and let time pass, in an order drawn from the seed.  After every
 * step the invariants of "no lost wake-up" are judged against what every
 * reply and push said and against a snapshot of the condition's two keys:
 *
 *   lost-signal            a signal woke nobody while a waiter surely
 *                          lived (registered, its deadline not near)
 *   broadcast-missed       a broadcast left a surely live waiter waiting
 *   signal-order           a signal woke a waiter younger than a surely
 *                          live one (FIFO, as the design says)
 *   woke-lapsed            a waiter surely past its deadline was woken
 *                          (the wake-up would go to a dead process: lost)
 *   wake-unknown           a push for a registration that was not waiting
 *                          (never made, already woken, gone)
 *   reply-count            a signal's reply is not the number of pushes
 *                          (or a signal woke more than one waiter)
 *   taken-still-registered a waiter a signal took was told "still waiting"
 *                          by check (it would sleep through its signal)
 *   signal-lost-on-leave   leave told a waiter a signal took that it was
 *                          still waiting: the timed wait would return
 *                          ETIMEDOUT and the signal be lost
 *   live-dropped           check or leave found a surely live waiter gone
 *   lapsed-revived         check kept a registration surely past its deadline
 *   ghost-registration     a waiter listed in the condition that is not
 *                          waiting (woken, gone), or has no deadline
 *   live-missing           a surely live waiter is missing from Redis
 *   no-expiry              the keys hold registrations but never expire
 *
 * "Surely": the model knows each registration's deadline only within the
 * round trip that set it (the server's clock sets it between sending and
 * reading the reply), so a judgement that depends on a deadline keeps
 * PF_MARGIN_MS clear of it either way.
 *
 * One server: the scripts are the same on every topology; what redlock adds
 * (a majority, every signal a broadcast) is the C merge of call_cond_*.c,
 * covered by tests/test_cond.c's redlock run.
 */
#ifndef PF_COND_H
#define PF_COND_H

#include "pf.h"

/* Draws the seed's op list, runs it on fresh keys and judges every step.
 * 0 every invariant held, 1 one broke (*fail says which; the last steps
 * are printed to o->out), -1 the server could not be used.  Replays: the
 * same seed and steps run the same ops (only the server's clock differs). */
int pf_cond_fuzz(const pf_opts_t *o, int *steps_done, pf_fail_t *fail);

#endif
