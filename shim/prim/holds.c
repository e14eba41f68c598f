/* SPDX-License-Identifier: BSD-3-Clause */
/* holds.c - each thread's stack of holds on a lock, run-length encoded:
 * "unlock releases the calling thread's most recent hold". */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "holds.h"

/* h's runs: in h while it has room for one. */
static dl_run_t *runs_of(dl_holder_t *h)
{
    return h->cap > 1 ? h->runs.many : &h->runs.one;
}

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
            /* One to start with, in the lock: a lock is mostly held by one
             * thread at a time, and a process may hold a million of them. */
            int cap = l->capholders ? l->capholders * 2 : 1;
            dl_holder_t *n;
            if (cap == 1) {
                n = &l->holder1;
            } else if (l->holders == &l->holder1) {
                if ((n = malloc((size_t)cap * sizeof *n)))
                    memcpy(n, &l->holder1, sizeof *n);
            } else {
                n = realloc(l->holders, (size_t)cap * sizeof *n);
            }
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
    if (h->nruns && runs_of(h)[h->nruns - 1].mode == mode) {
        runs_of(h)[h->nruns - 1].count++;
    } else {
        if (h->nruns == h->cap) {
            /* The first run in h (a new holder never fails here), then
             * in memory of their own. */
            int cap = h->cap > 1 ? h->cap * 2 : h->cap + 1;
            dl_run_t *n = NULL;
            if (cap == 2) {
                if ((n = malloc((size_t)cap * sizeof *n)))
                    n[0] = h->runs.one;
            } else if (cap > 2) {
                n = realloc(h->runs.many, (size_t)cap * sizeof *n);
            }
            if (cap > 1 && !n)
                return ENOMEM;        /* (h has a run: not an empty record) */
            if (n)
                h->runs.many = n;
            h->cap = cap;
        }
        dl_run_t *r = &runs_of(h)[h->nruns];
        r->mode = mode;
        r->count = 1;
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
    dl_run_t *run = &runs_of(h)[h->nruns - 1];
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
        if (h->cap > 1)
            free(h->runs.many);
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
