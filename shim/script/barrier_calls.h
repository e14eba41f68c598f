/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * barrier_calls.h - what the barrier's script entries (call_barrier_*.c)
 * share: writing the barrier's keys and the first ARGV.  Never run on
 * several servers as one call: barriers refuse redlock:// (api/barrier.c).
 */
#ifndef DL_BARRIER_CALLS_H
#define DL_BARRIER_CALLS_H

struct dl_wire;                   /* dl_wire_t, calls.h */

/* KEYS: the barrier's two (keys.c); ARGV[1] the channel prefix, [2] the
 * caller's token. */
void dl_wire_barrier(struct dl_wire *w);

#endif
