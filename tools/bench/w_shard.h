/* SPDX-License-Identifier: BSD-3-Clause */
/* w_shard.h - SH: pushes in a Redis Cluster of 3 and of 6 masters (SH3,
 * SH6): cluster-bus publish messages per lock operation, and handoffs of
 * pairs spread over the masters (w_shard.c). */
#ifndef BENCH_W_SHARD_H
#define BENCH_W_SHARD_H

int run_sh(void);

#endif
