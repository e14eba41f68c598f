/* SPDX-License-Identifier: BSD-3-Clause */
/* w_rw.h - W5 (w_rw.c). */
#ifndef BENCH_W_RW_H
#define BENCH_W_RW_H

int run_w5(void);

#endif
