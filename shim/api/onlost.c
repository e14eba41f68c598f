/* SPDX-License-Identifier: BSD-3-Clause */
/* onlost.c - dist_onlost: the process's function for lost holds, which
 * the hold core calls from a thread of its own (core/loss.c). */
#include "distlock.h"
#include "loss.h"

int dist_onlost(dist_lost_fn fn, void *arg)
{
    return dl_loss_set(fn, arg);
}
