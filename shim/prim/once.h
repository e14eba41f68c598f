/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * once.h - the once primitive (once.c): a routine run by exactly one
 * process for a name, on the hold core.
 *
 * A once of the process is a dl_once_t: the hold core (dl_core_t, core.h)
 * and its own admission on top of it.  Its "running" state is a lock's
 * write hold on its keys (keys.h: the six of a lock, then its completion),
 * taken by take.c with the lock's scripts (acquire.lua ...: the kind's
 * calls), renewed by the watchdog while the routine runs, and released
 * when it completed: so a runner that dies frees it within a lease, and a
 * process waiting for it is granted it (EOWNERDEAD: the one before died)
 * and runs the routine itself.  Completion is a key of its own
 * (lua/once_done.lua), which never expires, read by once_check.lua.
 *   - One thread of the process at a time asks Redis for it, waits for it
 *     there, or runs the routine (active); the process's other threads
 *     wait here until it completed, or until that thread gives up (EIO, a
 *     cancellation), when one of them tries.
 *   - The completion pushes "k 0 KEY" to the processes queued for the
 *     running state (notify.c: the kind's woken): their waiting thread
 *     stops waiting (stop, dl_req_t.stop) and finds it complete, rather
 *     than take the running state in turn to see it so.
 *
 * once.c writes the fields below the core, under core.mu (done and stop
 * are read without it: atomics).
 */
#ifndef DL_ONCE_H
#define DL_ONCE_H

#include <stddef.h>

#include "process.h"

typedef struct dl_once {
    dl_core_t core;           /* first: the registry's entry is the once */

    /* once.c */
    int done;                 /* the routine completed, as this process knows
                                 it: for good (atomic) */
    pid_t active;             /* the thread that asks Redis for it, waits for it
                                 there or runs it; 0 none */
    pid_t runner;             /* ... runs the routine now; 0 none */
    int inside;               /* threads in dist_once on it */
    int stop;                 /* the completion was pushed: the active thread
                                 stops waiting for the running state (atomic) */
} dl_once_t;

/* The once's kind: its keys (keys.h), the lock's scripts for its running
 * state, what the core and the subscriber ask of it. */
extern const dl_kind_t dl_once_kind;

static inline dl_once_t *dl_once_of(dl_core_t *o)
{
    return (dl_once_t *)((char *)o - offsetof(dl_once_t, core));
}

/* dist_once: returns once the routine has completed, in this process or
 * another, having run it here if no process had and none runs it now.  0;
 * EDEADLK (the routine itself called it on this once); EIO (Redis did not
 * answer: whether it completed is unknown, or it completed here and Redis
 * could not be told); ENOMEM. */
int dl_once_run(dl_proc_t *p, dl_once_t *ob, void (*routine)(void));

#endif
