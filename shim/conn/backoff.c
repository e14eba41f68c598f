/* SPDX-License-Identifier: BSD-3-Clause */
/* backoff.c - the pause between tries (see backoff.h). */
#include "backoff.h"
#include "dl.h"

void dl_backoff_init(dl_backoff_t *b, unsigned first_ms, unsigned max_ms)
{
    b->first_ms = b->step_ms = first_ms;
    b->max_ms = max_ms;
}

unsigned dl_backoff_next(dl_backoff_t *b)
{
    unsigned ms = b->step_ms;
    b->step_ms = b->step_ms * 2 > b->max_ms ? b->max_ms : b->step_ms * 2;
    return ms;
}

void dl_backoff_wait(dl_backoff_t *b, uint64_t until)
{
    unsigned ms = b->step_ms;
    if (until) {
        uint64_t now = dl_now_ms();
        uint64_t left = until > now ? until - now : 0;
        if (left < ms)
            ms = (unsigned)left;
    }
    if (ms)
        dl_sleep_ms(ms);
    b->step_ms = b->step_ms * 2 > b->max_ms ? b->max_ms : b->step_ms * 2;
}

void dl_backoff_reset(dl_backoff_t *b)
{
    b->step_ms = b->first_ms;
}
