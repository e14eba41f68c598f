/* SPDX-License-Identifier: BSD-3-Clause */
/* floor.h - the redis-benchmark floors (floor.c). */
#ifndef BENCH_FLOOR_H
#define BENCH_FLOOR_H

/* The floor: fills the results peer=floor EVALSHA and PING. */
int run_floor(void);

#endif
