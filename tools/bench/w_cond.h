/* SPDX-License-Identifier: BSD-3-Clause */
/* w_cond.h - C1: a condition's signal-to-wake latency across processes
 * (w_cond.c). */
#ifndef BENCH_W_COND_H
#define BENCH_W_COND_H

int run_c1(void);

#endif
