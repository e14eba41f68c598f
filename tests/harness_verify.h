/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_verify.h - the checks of the exclusion checker (harness_checker.h
 * describes them) on recorded holds, its report, and what a lock leaves in
 * Redis.
 */
#ifndef TH_HARNESS_VERIFY_H
#define TH_HARNESS_VERIFY_H

#include <stdint.h>
#include <stdio.h>

#include "harness_checker.h"

/* Verifies holds[0..n) (reordered in place by start) into rep (fields
 * other than those computed from the holds are left alone).  Returns the
 * number of violations (overlaps + fence inversions + torn reads + redis_bad). */
uint64_t chk_verify(chk_hold_t *holds, uint64_t n, chk_report_t *rep);
/* The same with flags: CHK_FENCE_AFTER_VOUCHED (see fence_vouched_only). */
#define CHK_FENCE_AFTER_VOUCHED 1
uint64_t chk_verify_flags(chk_hold_t *holds, uint64_t n, int flags, chk_report_t *rep);

/* One line per total, for logs and the soak tool. */
void chk_print(FILE *f, const char *title, const chk_report_t *rep);

/* Keys of lock name (besides the meta hash) that still exist in the
 * suite's server: 0 when nothing is left held or queued. */
int chk_keys_left(const char *name);
/* The same on another server (127.0.0.1:port); -1 if it cannot be asked. */
int chk_keys_left_at(int port, const char *name);

#endif
