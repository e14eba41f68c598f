/* SPDX-License-Identifier: BSD-3-Clause */
/* call_release.c - lua/release.lua's entry (calls.h). */
#include "call_release.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_release(dl_call_t *c, const dl_caller_t *who, const dl_release_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_RELEASE, who);
    DL_ARGS(c, release) = *a;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* 1 prefix, 2 token, 3 mode, 4 fence, 5 registration id ('' none),
     * 6 (redlock) 'o', 7 (robust, inconsistent) the unrecoverable mark */
    const dl_release_args_t *a = &DL_ARGS(c, release);
    dl_wire_lock(w, 1);
    dl_wire_put(w, &a->mode, 1);
    dl_wire_num(w, a->fence);
    if (a->rid)
        dl_wire_num(w, a->rid);
    else
        dl_wire_put(w, "", 0);
    if (a->redlock)
        dl_wire_put(w, "o", 1);
    else if (a->unrecoverable)
        dl_wire_put(w, "", 0);
    if (a->unrecoverable)
        dl_wire_num(w, a->unrecoverable);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* 1 released, 0 held nothing, 2 released already */
    DL_REPLY(c, release).result = (int)dl_reply_int(r);
    return 0;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, release).result >= 1;
}

/* Each server numbers its holds itself, so the fence differs from server
 * to server: a release names the hold by its registration id as well (the
 * caller sends it), and clears a death trace older than the hold where it
 * holds nothing (release.lua's ARGV[6] 'o'). */
static void prepare(dl_call_t *c)
{
    DL_ARGS(c, release).redlock = 1;
}

/* A server that failed while it may hold (the acquisition's servers, when
 * known) gets the release in the background, until it answers or the
 * hold's lease has surely ended there. */
static void owe(const dl_call_t *c, const dl_tally_t *t)
{
    /* (a hold taken with EOWNERDEAD: every server, for the trace) */
    unsigned may = DL_ARGS(c, release).told ? 0 : DL_ARGS(c, release).servers;
    dl_quorum_owe_failed(t, may, DL_ARGS(c, release).lease_ms, 1);
}

/* The release of a hold taken with EOWNERDEAD: the lapse it was told of
 * may have left a trace on a server its quorum did not count (skipped, or
 * its copy lapsing later there); the release clears it ('o'), or the next
 * holder to count that server is told of the same lapse again. */
static int needs_all(const dl_call_t *c)
{
    return DL_ARGS(c, release).told;
}

/* Released where the answering servers had it; the servers that did not
 * answer are owed the release, and whether the hold stood till now is its
 * validity's to say (hold.c). */
static int undecided(dl_call_t *c, const dl_tally_t *t)
{
    (void)t;
    DL_REPLY(c, release).result = DL_RELEASE_UNDECIDED;
    return 0;
}

/* Released: a majority had the hold. */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    DL_REPLY(c, release).result = t->yes >= t->need;
}

static const dl_quorum_op_t quorum = {
    .prepare = prepare, .said_yes = said_yes, .owe = owe, .merge = merge,
    .undecided = undecided, .needs_all = needs_all };

const dl_script_entry_t dl_entry_release = { .wire = wire, .parse = parse, .quorum = &quorum };
