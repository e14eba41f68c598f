/* SPDX-License-Identifier: BSD-3-Clause */
/* holds.c - each thread's stack of holds on a lock, run-length encoded:
 * "unlock releases the calling thread's most recent hold". */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "holds.h"

dl_holder_t *dl_holder_find(dl_lock_t *l, pid_t tid)
{
    for (int i = 0; i < l->nholders; i++)
        if (l->holders[i].tid == tid)
            return &l->holders[i];
    return NULL;
}

int dl_holder_push(dl_lock_t *l, pid_t tid, char mode)
{
    dl_holder_t *h = dl_holder_find(l, tid);
    if (!h) {
        if (l->nholders == l->capholders) {
            int cap = l->capholders ? l->capholders * 2 : 4;
            dl_holder_t *n = realloc(l->holders, (size_t)cap * sizeof *n);
            if (!n)
                return ENOMEM;
            l->holders = n;
            l->capholders = cap;
        }
        h = &l->holders[l->nholders++];
        memset(h, 0, sizeof *h);
        h->tid = tid;
        h->fence = l->core.hold.fence;
        h->since = dl_tally_start();
    }
    unsigned *count = mode == 'w' ? &h->wcount : &h->rcount;
    if (*count == UINT_MAX)
        return EAGAIN;
    if (h->nruns && h->runs[h->nruns - 1].mode == mode) {
        h->runs[h->nruns - 1].count++;
    } else {
        if (h->nruns == h->cap) {
            int cap = h->cap ? h->cap * 2 : 2;
            dl_run_t *n = realloc(h->runs, (size_t)cap * sizeof *n);
            if (!n) {
                if (!h->nruns) {      /* do not leave an empty record behind */
                    free(h->runs);
                    *h = l->holders[--l->nholders];
                }
                return ENOMEM;
            }
            h->runs = n;
            h->cap = cap;
        }
        h->runs[h->nruns].mode = mode;
        h->runs[h->nruns].count = 1;
        h->nruns++;
    }
    (*count)++;
    return 0;
}

char dl_holder_pop(dl_lock_t *l, pid_t tid, int *last, uint64_t *since, int *lapsed, int *od)
{
    dl_holder_t *h = dl_holder_find(l, tid);
    *last = 0;
    *since = 0;
    *lapsed = 0;
    *od = 0;
    if (!h || !h->nruns)
        return 0;
    dl_run_t *run = &h->runs[h->nruns - 1];
    char mode = run->mode;
    if (--run->count == 0)
        h->nruns--;
    if (mode == 'w')
        h->wcount--;
    else
        h->rcount--;
    if (!h->nruns) {
        *since = h->since;
        *lapsed = h->lapsed;
        *od = h->od;
        free(h->runs);
        *h = l->holders[--l->nholders];
        *last = 1;
    }
    return mode;
}

void dl_holder_moved(dl_holder_t *h, uint64_t fence)
{
    h->fence = fence;
    h->lapsed = 1;
}

void dl_holder_mark_lapsed(dl_holder_t *h)
{
    h->lapsed = 1;
}

void dl_holder_owner_dead(dl_holder_t *h)
{
    h->od = 1;
}
