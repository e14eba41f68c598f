/* SPDX-License-Identifier: BSD-3-Clause */
/* w_local.h - W4 and W4b (w_local.c). */
#ifndef BENCH_W_LOCAL_H
#define BENCH_W_LOCAL_H

int run_w4(void);
int run_w4b(void);

#endif
