/* SPDX-License-Identifier: BSD-3-Clause */
/* tally.c - an object's counters (tally.h). */
#include <errno.h>

#include "core.h"
#include "tally.h"

int dl_tally_enabled;

/* 10 us ... 10 s: a local handoff, a round trip on a LAN, a wait behind
 * another holder, a lock held for minutes (then +Inf). */
const uint64_t dl_tally_le_us[DL_TALLY_BUCKETS - 1] = {
    10, 100, 500, 1000, 5000, 10000, 50000, 100000, 500000, 1000000, 10000000,
};

int dl_tally_bucket(uint64_t us)
{
    int b = 0;
    while (b < DL_TALLY_BUCKETS - 1 && us > dl_tally_le_us[b])
        b++;
    return b;
}

uint64_t dl_tally_start(void)
{
    return dl_tally_on() ? dl_now_us() : 0;
}

static void hist_add(dl_hist_t *h, uint64_t us)
{
    __atomic_fetch_add(&h->n[dl_tally_bucket(us)], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&h->sum_us, us, __ATOMIC_RELAXED);
}

void dl_tally_call(dl_core_t *o, int rc, uint64_t since)
{
    dl_tally_t *t = dl_core_tally(o);
    if (!since || !t)
        return;
    if (rc == 0 || rc == EOWNERDEAD) {
        uint64_t now = dl_now_us();
        __atomic_fetch_add(&t->acquired, 1, __ATOMIC_RELAXED);
        hist_add(&t->wait, now > since ? now - since : 0);
    }
    if (rc == EOWNERDEAD)
        __atomic_fetch_add(&t->ownerdead, 1, __ATOMIC_RELAXED);
    else if (rc == EIO)
        __atomic_fetch_add(&t->eio, 1, __ATOMIC_RELAXED);
}

void dl_tally_unlock(dl_core_t *o, int rc)
{
    if (rc == ENOLCK)
        DL_TALLY_ADD(o, enolck, 1);
    else if (rc == EIO)
        DL_TALLY_ADD(o, eio, 1);
}

void dl_tally_held(dl_core_t *o, uint64_t since)
{
    dl_tally_t *t = dl_core_tally(o);
    if (!since || !dl_tally_on() || !t)
        return;
    uint64_t now = dl_now_us();
    hist_add(&t->hold, now > since ? now - since : 0);
}
