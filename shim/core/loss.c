/* SPDX-License-Identifier: BSD-3-Clause */
/* loss.c - the process's dist_onlost function and its teller thread
 * (loss.h).
 *
 * A loss is found by whichever thread asks Redis about the hold (the
 * watchdog's renewals and its pass after a sign of lost state, a thread
 * confirming the hold before reusing it, an unlock's release or vouch, a
 * relock) with the object's mu held; that thread must not run the
 * program's function there (it may block, or call back into the
 * library), so it queues the name and fence, and one thread of the
 * library, started at the first loss, calls the function for each in the
 * order they were found. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "loss.h"

typedef struct loss {
    struct loss *next;
    uint64_t fence;
    size_t namelen;
    char name[];
} loss_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;  /* losses queued, calls ended */
static dist_lost_fn fn;
static void *fn_arg;
static loss_t *head, **tail = &head;
static int started;
static int calling;            /* the teller is inside the function */

/* The teller, while it calls the function. */
static __thread int in_callback;

int dl_loss_in_callback(void)
{
    return in_callback;
}

static void *teller_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!head)
            pthread_cond_wait(&cv, &mu);
        loss_t *l = head;
        head = l->next;
        if (!head)
            tail = &head;
        dist_lost_fn f = fn;
        void *a = fn_arg;
        if (f)
            calling = 1;
        pthread_mutex_unlock(&mu);
        if (f) {
            in_callback = 1;
            f(l->name, l->namelen, l->fence, a);
            in_callback = 0;
        }
        free(l);
        pthread_mutex_lock(&mu);
        if (f) {
            calling = 0;
            pthread_cond_broadcast(&cv);   /* a dl_loss_set waiting for this call */
        }
    }
    return NULL;
}

int dl_loss_set(dist_lost_fn f, void *arg)
{
    pthread_mutex_lock(&mu);
    fn = f;
    fn_arg = arg;
    /* The previous function may be running in the teller: wait for it to
     * return, so that its argument may be freed once we do (but not when
     * it replaces itself: it would wait for its own return). */
    while (calling && !in_callback)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return 0;
}

void dl_loss_tell(const char *name, size_t namelen, uint64_t fence)
{
    pthread_mutex_lock(&mu);
    if (!fn) {
        pthread_mutex_unlock(&mu);
        return;
    }
    if (!started) {
        if (dl_thread_start(teller_main, NULL) != 0) {
            pthread_mutex_unlock(&mu);
            dl_log(DL_LOG_ERROR, "cannot start the thread that calls dist_onlost's function; "
                   "a lost hold goes untold");
            return;
        }
        started = 1;
    }
    loss_t *l = malloc(sizeof *l + namelen + 1);
    if (!l) {
        pthread_mutex_unlock(&mu);
        dl_log(DL_LOG_ERROR, "out of memory: a lost hold goes untold to dist_onlost's function");
        return;
    }
    l->next = NULL;
    l->fence = fence;
    l->namelen = namelen;
    memcpy(l->name, name, namelen);
    l->name[namelen] = 0;
    *tail = l;
    tail = &l->next;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

void dl_loss_after_fork(void)
{
    /* Only this thread exists now: the teller is gone, and a thread of
     * the parent may have held mu.  The function stays registered; the
     * parent's queued losses are not the child's (left, not freed: the
     * list may be mid-update). */
    pthread_mutex_init(&mu, NULL);
    pthread_cond_init(&cv, NULL);
    head = NULL;
    tail = &head;
    started = 0;
    calling = 0;
    in_callback = 0;
}
