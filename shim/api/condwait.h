/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * condwait.h - dist_cond_wait in its three steps (api/cond.c), for a
 * caller that must do something of its own between them: the interposer
 * releases and retakes the program's own pthread mutex around the wait
 * (shim/preload/wrap_cond.c), always in the order its lock wrappers
 * take the two (the local mutex first), so that no thread of the program
 * holds one and waits for the other against another thread.
 *
 *   begin   checks the objects (EINVAL) and that the caller holds m
 *           (EPERM), registers the wait in Redis (EIO), and releases every
 *           hold of the caller on m; on error nothing happened (m as it was)
 *   block   waits: 0 (woken, perhaps spuriously), ETIMEDOUT
 *   end     takes m again (blocking), restores the caller's count and
 *           gives the wait's result: 0, ETIMEDOUT, EOWNERDEAD; or EIO
 *           with m not held (then, once the caller has taken m again by
 *           its own lock call, restore gives back the rest of its count)
 *
 * A wait does not end the caller's section on m (SPEC, ENOLCK): a lapse
 * of its hold before the wait, whether a relock was told of it
 * (EOWNERDEAD) or the wait's release found it (the wait says EOWNERDEAD),
 * is carried over by restore, and the unlock that ends the section says
 * ENOLCK.
 */
#ifndef DL_CONDWAIT_H
#define DL_CONDWAIT_H

#include <time.h>

#include "cond.h"
#include "distlock.h"
#include "lock.h"

typedef struct dl_condwait {
    dl_proc_t *p;
    dl_cond_t *cv;
    dl_lock_t *l;
    dist_mutex_t *m;
    const struct timespec *abstime;   /* NULL: no time limit */
    clockid_t clock;                  /* abstime's: CLOCK_REALTIME or CLOCK_MONOTONIC */
    unsigned count;                   /* the caller's holds on m */
    int lapsed;                       /* its hold had lapsed before the release */
    char lapse[DL_ERRMAX];            /* ... as the release said */
    int carried;                      /* the caller's section has seen a lapse (this
                                         one, or one a relock was told of): restore
                                         carries it over to the unlock that ends
                                         the section (ENOLCK) */
    int od;                           /* a robust EOWNERDEAD was pending in the
                                         section, or the wait says one (its release
                                         found a lapse): restore carries it over, to
                                         be made consistent before the section ends */
    dl_cwait_t w;
} dl_condwait_t;

/* begin with abstime on CLOCK_REALTIME (the interposer's: it moves the
 * program's other clocks to that one), or on clock (EINVAL for a clock
 * other than CLOCK_REALTIME and CLOCK_MONOTONIC). */
int dl_condwait_begin(dl_condwait_t *cw, dist_cond_t *c, dist_mutex_t *m,
                      const struct timespec *abstime);
int dl_condwait_begin_on(dl_condwait_t *cw, dist_cond_t *c, dist_mutex_t *m, clockid_t clock,
                         const struct timespec *abstime);
int dl_condwait_block(dl_condwait_t *cw);
int dl_condwait_end(dl_condwait_t *cw, int brc);
int dl_condwait_restore(dl_condwait_t *cw);

#endif
