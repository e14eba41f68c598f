/* SPDX-License-Identifier: BSD-3-Clause */
/* w_preload.h - W8 and its child program (w_preload.c). */
#ifndef BENCH_W_PRELOAD_H
#define BENCH_W_PRELOAD_H

int run_w8(void);
/* W8's child program: `distlock-bench --w8-child PAIRS` */
int w8_child_main(unsigned long pairs);

#endif
