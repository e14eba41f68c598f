/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * backoff.h - the pause between two tries of a connection or a command
 * (backoff.c): doubling from a first step up to a ceiling, never past a
 * time limit.  The one used by a link's retries (cmdlink_io.c), the
 * cluster's redirections (cluster.c) and the subscriber's reconnections
 * (core/notify.c, shardsub.c).  A dl_backoff_t is its user's, on its stack.
 */
#ifndef DL_BACKOFF_H
#define DL_BACKOFF_H

#include <stdint.h>

typedef struct dl_backoff {
    unsigned first_ms, max_ms;
    unsigned step_ms;         /* the next pause */
} dl_backoff_t;

/* The steps of a link's and the cluster's retries. */
#define DL_BACKOFF_RETRY_MS 10, 200

void dl_backoff_init(dl_backoff_t *b, unsigned first_ms, unsigned max_ms);
/* Sleeps the next step, cut to what is left until `until` (monotonic ms;
 * 0: no limit), and doubles the step up to the ceiling.  Blocks. */
void dl_backoff_wait(dl_backoff_t *b, uint64_t until);
/* The next step (ms), doubled as dl_backoff_wait does, without sleeping:
 * for a loop that waits in its own poll (shardsub.c). */
unsigned dl_backoff_next(dl_backoff_t *b);
/* Back to the first step (a try succeeded). */
void dl_backoff_reset(dl_backoff_t *b);

#endif
