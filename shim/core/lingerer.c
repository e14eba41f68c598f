/* SPDX-License-Identifier: BSD-3-Clause */
/* lingerer.c - ends lingering holds on time (lingerer.h). */
#include <stdlib.h>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "dl.h"
#include "hold.h"
#include "lingerer.h"

/* The thread's timer slack (ns): the default (50 us) would stretch a
 * linger of 100 us by half. */
#define DL_LINGERER_SLACK_NS 1000

/* p->lmu held: the entry of o, or the end of the list. */
static size_t find(const dl_proc_t *p, const dl_core_t *o)
{
    size_t i = 0;
    while (i < p->ln && p->lv[i].o != o)
        i++;
    return i;
}

static void *lingerer_main(void *arg)
{
    dl_proc_t *p = arg;
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, (unsigned long)DL_LINGERER_SLACK_NS, 0, 0, 0);
#endif
    for (;;) {
        pthread_mutex_lock(&p->lmu);
        dl_linger_t due[16];
        size_t nd = 0;
        for (;;) {
            uint64_t now = dl_now_us(), next = DL_FOREVER;
            for (size_t i = 0; i < p->ln;) {
                if (p->lv[i].until <= now && nd < sizeof due / sizeof due[0]) {
                    due[nd++] = p->lv[i];
                    p->lv[i] = p->lv[--p->ln];
                    continue;
                }
                if (p->lv[i].until < next)
                    next = p->lv[i].until;
                i++;
            }
            if (nd)
                break;
            p->lnext = next;
            if (next == DL_FOREVER) {
                pthread_cond_wait(&p->lcv, &p->lmu);
            } else {
                struct timespec ts;
                dl_timespec_at_us(next, &ts);
                pthread_cond_timedwait(&p->lcv, &p->lmu, &ts);
            }
        }
        p->lnext = 0;             /* busy: watch() need not wake us */
        pthread_mutex_unlock(&p->lmu);
        for (size_t i = 0; i < nd; i++) {
            dl_core_t *o = due[i].o;
            /* Ends it if it is still due; a relock claimed it meanwhile,
             * or it lingers anew (watched again by dl_hold_linger). */
            dl_hold_linger_end(p, o, 0, 0);
            dl_registry_put(&p->reg, o);
        }
    }
    return NULL;
}

int dl_lingerer_watch(dl_proc_t *p, dl_core_t *o, uint64_t until)
{
    int rc = 0;
    pthread_mutex_lock(&p->lmu);
    if (!p->lstarted) {
        if (dl_thread_start(lingerer_main, p)) {
            pthread_mutex_unlock(&p->lmu);
            return -1;
        }
        p->lstarted = 1;
    }
    size_t i = find(p, o);
    if (i == p->ln) {
        if (p->ln == p->lcap) {
            size_t cap = p->lcap ? p->lcap * 2 : 16;
            dl_linger_t *v = realloc(p->lv, cap * sizeof *v);
            if (!v) {
                pthread_mutex_unlock(&p->lmu);
                return -1;
            }
            p->lv = v;
            p->lcap = cap;
        }
        dl_registry_pin(o);
        p->lv[p->ln++].o = o;
    }
    p->lv[i].until = until;
    if (p->lnext && until < p->lnext)
        pthread_cond_signal(&p->lcv);
    pthread_mutex_unlock(&p->lmu);
    return rc;
}
