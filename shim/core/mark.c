/* SPDX-License-Identifier: BSD-3-Clause */
/* mark.c - what Redis must know of a lingering hold (hold.c).
 *
 * A hold that lingers after its unlock is, to the application, released:
 * if the process now ends without passing it on (_exit, a crash), the hold
 * must lapse soon, and the next holder must not be told EOWNERDEAD.  A
 * relock makes it a hold again, whose lapse must be.  Redis tells the two
 * apart by the meta hash's `wh`, which names the writer whose hold has not
 * been released (its lapse is a death): a linger removes it, a relock puts
 * it back.  The first linger of a hold also cuts its time in Redis to the
 * claim window of a pushed grant (min(lease, 2 s)); the watchdog renews it
 * to the lease at half of that if the process still holds it then.
 *
 * Each mark is posted (conn.h): written before the unlock or lock call
 * returns, so it reaches Redis ahead of anything the process does next,
 * even if the process then ends, but its reply is not waited for.  A mark
 * can still reach Redis late (written on a connection the process gave up
 * on while the server stalled), after the hold was released and taken
 * again, perhaps by this process: so each names its hold by token and
 * fence, and changes nothing unless that very hold is there; and each is
 * numbered, so that a mark that runs after a later one of the same hold
 * (a linger's, late, after the relock's) changes nothing.  It is one
 * short script, lua/mark.lua, sent with its text (cached by Redis under its
 * SHA1, so a SCRIPT FLUSH cannot make it fail).
 */
#include "dl.h"
#include "call_mark.h"
#include "process.h"
#include "mark.h"

/* The marks' numbers: only grow, across every hold (and in a forked child,
 * from its parent's: its holds are its own, whose marks start anew). */
static uint64_t dl_markseq;

uint64_t dl_mark_next(void)
{
    return __atomic_add_fetch(&dl_markseq, 1, __ATOMIC_RELAXED);
}

int dl_mark(dl_proc_t *p, const dl_core_t *o, int lingering, unsigned long ms)
{
    dl_caller_t who = dl_caller(p, o);
    dl_call_t c;
    o->kind->calls->mark(&c, &who, &(dl_mark_args_t){
        .fence = o->hold.fence, .lingering = lingering, .ms = ms, .seq = dl_mark_next() });
    return dl_script_post(p->conn, &c);
}
