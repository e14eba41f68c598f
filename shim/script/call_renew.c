/* SPDX-License-Identifier: BSD-3-Clause */
/* call_renew.c - lua/renew.lua's entry (calls.h). */
#include "call_renew.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_renew(dl_call_t *c, const dl_caller_t *who, const dl_renew_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_RENEW, who);
    DL_ARGS(c, renew) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 mode, 4 lease, 5 fence ('' redlock), 6 (redlock) 'm' */
    const dl_renew_args_t *a = &DL_ARGS(c, renew);
    dl_wire_lock(w, 1);
    dl_wire_put(w, &a->mode, 1);
    dl_wire_num(w, a->lease_ms);
    if (a->redlock) {
        dl_wire_put(w, "", 0);
        dl_wire_put(w, "m", 1);
    } else {
        dl_wire_num(w, a->fence);
    }
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* 0 gone; n >= 1 renewed, n - 1 queued */
    long long n = dl_reply_int(r);
    DL_REPLY(c, renew).held = n < 0 ? -1 : n >= 1;
    DL_REPLY(c, renew).queued = n >= 1 ? n - 1 : 0;
    return 0;
}

/* Each server numbers its holds itself, so one hold's fence differs from
 * server to server (the caller keeps the largest): a renewal is sent there
 * without it (renew.lua's ARGV[5] ''), for the caller's hold in its mode.
 * And it counts a live writer mark of another process as a waiter
 * (ARGV[6] 'm'): so a process whose threads share a read hold learns that
 * a writer elsewhere waits, and stops letting new readers join. */
static void prepare(dl_call_t *c)
{
    DL_ARGS(c, renew).redlock = 1;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, renew).held == 1;
}

/* Held when a majority renewed it; the longest queue a server that renewed
 * it reports, so a holder hears of waiters as from one server (nobody
 * queues with redlock today: 0). */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    int held = t->yes >= t->need;
    DL_REPLY(c, renew).held = held;
    DL_REPLY(c, renew).queued = 0;
    for (int i = 0; held && i < t->nodes; i++) {
        const dl_renew_reply_t *r = &DL_REPLY(t->at[i], renew);
        if (!t->at[i]->cmd.err && r->held == 1 && r->queued > DL_REPLY(c, renew).queued)
            DL_REPLY(c, renew).queued = r->queued;
    }
}

/* Not "gone": the servers that did not answer may have it.  The hold
 * stays what its validity says; the caller asks again. */
static int undecided(dl_call_t *c, const dl_tally_t *t)
{
    return dl_quorum_fail(c, "redlock: %d of %d servers have the hold, too few to know (need %d): %s",
                          t->yes, t);
}

static const dl_quorum_op_t quorum = { .prepare = prepare, .said_yes = said_yes, .merge = merge,
                                       .undecided = undecided };

const dl_script_entry_t dl_entry_renew = { .wire = wire, .parse = parse, .quorum = &quorum };
