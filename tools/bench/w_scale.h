/* SPDX-License-Identifier: BSD-3-Clause */
/* w_scale.h - W6 and W7 (w_scale.c). */
#ifndef BENCH_W_SCALE_H
#define BENCH_W_SCALE_H

int run_w6(void);
int run_w7(void);

#endif
