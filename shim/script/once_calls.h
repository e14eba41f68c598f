/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * once_calls.h - what the once's own script entries (call_once_*.c) share.
 * Its running state is a lock's hold, taken, renewed and released by the
 * lock's scripts (acquire.lua ...: prim/once.c, dl_once_kind), on the
 * first six of its keys.
 */
#ifndef DL_ONCE_CALLS_H
#define DL_ONCE_CALLS_H

struct dl_wire;                   /* dl_wire_t, calls.h */

/* KEYS: the once's seven (keys.c: the six of a lock, then its completion);
 * ARGV[1] the channel prefix, [2] the caller's token. */
void dl_wire_once(struct dl_wire *w);

#endif
