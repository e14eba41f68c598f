/* SPDX-License-Identifier: BSD-3-Clause */
/* status.c - the process's statistics counters. */
#include <stddef.h>

#include "status.h"

dl_stats_t dl_stats_g;

void dl_stats_get(dl_stats_t *out)
{
    unsigned long *src = (unsigned long *)&dl_stats_g, *dst = (unsigned long *)out;
    for (size_t i = 0; i < sizeof *out / sizeof(unsigned long); i++)
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/* Written by the thread leading a round trip, read by its owner once its
 * commands are done (the link's mutex orders the two): relaxed atomics. */
static __thread unsigned long dl_thread_trips;

unsigned long *dl_stats_thread_trips(void)
{
    return &dl_thread_trips;
}

unsigned long dl_stats_thread_roundtrips(void)
{
    return __atomic_load_n(&dl_thread_trips, __ATOMIC_RELAXED);
}
