/* SPDX-License-Identifier: BSD-3-Clause */
/* w_lockall.h - LA2 and LA8: lock-all of 2 and of 8 free locks whose
 * names share a slot (w_lockall.c). */
#ifndef BENCH_W_LOCKALL_H
#define BENCH_W_LOCKALL_H

/* k: 2 or 8 (workload LA<k>). */
int run_lockall(int k);

#endif
