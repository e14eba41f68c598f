/* SPDX-License-Identifier: BSD-3-Clause */
/* call_renew_many.c - lua/renew_many.lua's entry: its ARGV, its reply
 * read hold by hold, and each hold's majority on redlock:// (calls.h). */
#include <string.h>

#include "call_renew_many.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_renew_many(dl_call_t *c, const dl_caller_t *who, const dl_renew_many_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_RENEW_MANY, who);
    DL_ARGS(c, renew_many) = *a;
    DL_REPLY(c, renew_many).got = -1;
    DL_REPLY(c, renew_many).kept = NULL;
}

/* "MODE:LEASE:FENCE:LEN:" and the main key, for each hold: a length and
 * not a separator before the key, so that a key may hold any byte. */
size_t dl_renew_many_list_size(const dl_renew_item_t *items, int n)
{
    size_t size = 0;
    for (int i = 0; i < n; i++)
        size += 2 + 3 * 21 + 3 + items[i].keylen;
    return size;
}

/* Writes v in decimal at p; returns the digits written. */
static size_t put_num(char *p, unsigned long long v)
{
    char tmp[21];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

size_t dl_renew_many_list(const dl_renew_item_t *items, int n, int nofence, char *buf)
{
    /* (No snprintf: the watchdog writes one entry per held lock per tick.) */
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        const dl_renew_item_t *it = &items[i];
        buf[at++] = it->mode == 'r' ? 'r' : 'w';
        buf[at++] = ':';
        at += put_num(buf + at, it->lease_ms);
        buf[at++] = ':';
        if (!nofence)
            at += put_num(buf + at, it->fence);
        buf[at++] = ':';
        at += put_num(buf + at, it->keylen);
        buf[at++] = ':';
        memcpy(buf + at, it->key, it->keylen);
        at += it->keylen;
    }
    return at;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* KEYS: the first hold's six; 1 prefix, 2 token, 3 'm' | '', 4 the holds */
    const dl_renew_many_args_t *a = &DL_ARGS(c, renew_many);
    dl_wire_lock(w, 1);
    dl_wire_put(w, a->redlock ? "m" : "", a->redlock ? 1 : 0);
    dl_wire_put(w, a->list, a->listlen);
}

/* Hold i's reply in r (an array of integers, checked), as renew.lua's. */
static dl_renew_reply_t result_of(const redisReply *r, int i)
{
    long long v = r->element[i]->integer;
    return (dl_renew_reply_t){ v < 0 ? -1 : v >= 1, v >= 1 ? v - 1 : 0 };
}

/* 1 when r is one integer per hold. */
static int well_formed(const redisReply *r, int n)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)n)
        return 0;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            return 0;
    return 1;
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {r1, r2, ...}; -1 not here */
    const dl_renew_many_args_t *a = &DL_ARGS(c, renew_many);
    dl_renew_many_reply_t *x = &DL_REPLY(c, renew_many);
    x->kept = NULL;
    if (dl_reply_int(r) == -1 && r->type == REDIS_REPLY_INTEGER) {
        x->got = 0;
        return 0;
    }
    x->got = well_formed(r, a->n) ? 1 : -1;
    if (!a->out) {
        if (x->got != 1)
            return 0;
        x->kept = r;              /* a redlock server's: for the merge */
        return 1;
    }
    for (int i = 0; i < a->n; i++)
        a->out[i] = x->got == 1 ? result_of(r, i) : (dl_renew_reply_t){ -1, 0 };
    return 0;
}

static void free_reply(dl_call_t *c)
{
    if (DL_REPLY(c, renew_many).kept) {
        freeReplyObject(DL_REPLY(c, renew_many).kept);
        DL_REPLY(c, renew_many).kept = NULL;
    }
}

/* --- redlock:// --- */

/* Each server's copy counts another's writer mark as a waiter (renew.lua's
 * 'm'), and keeps its reply for the merge.  The list names no fence (each
 * server numbers a hold itself): the caller wrote it so. */
static void prepare(dl_call_t *c)
{
    DL_ARGS(c, renew_many).redlock = 1;
    DL_ARGS(c, renew_many).out = NULL;
    DL_REPLY(c, renew_many).got = -1;
    DL_REPLY(c, renew_many).kept = NULL;
}

/* Every hold of the batch is there: a server that says less has the
 * skipped servers asked too (quorum.c), as a renewal that is short of a
 * majority would. */
static int said_yes(const dl_call_t *c)
{
    const redisReply *r = DL_REPLY(c, renew_many).kept;
    if (DL_REPLY(c, renew_many).got != 1 || !r)
        return 0;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->integer < 1)
            return 0;
    return 1;
}

/* Hold by hold, as renew.lua's merge and its undecided case: held where a
 * majority renewed it (the longest queue a server that renewed it
 * reports), not known (-1) where the servers that did not answer could
 * still make up that majority, gone where they could not. */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    const dl_renew_many_args_t *a = &DL_ARGS(c, renew_many);
    DL_REPLY(c, renew_many).got = 1;
    DL_REPLY(c, renew_many).kept = NULL;
    for (int i = 0; i < a->n; i++) {
        int yes = 0, answered = 0;
        long long queued = 0;
        for (int s = 0; s < t->nodes; s++) {
            const dl_call_t *pc = t->at[s];
            const redisReply *r = pc->cmd.err ? NULL : DL_REPLY(pc, renew_many).kept;
            if (!r)
                continue;
            dl_renew_reply_t h = result_of(r, i);
            if (h.held < 0)
                continue;
            answered++;
            if (h.held == 1) {
                yes++;
                if (h.queued > queued)
                    queued = h.queued;
            }
        }
        if (a->out)
            a->out[i] = yes >= t->need ? (dl_renew_reply_t){ 1, queued }
                      : yes + (t->nodes - answered) >= t->need ? (dl_renew_reply_t){ -1, 0 }
                      : (dl_renew_reply_t){ 0, 0 };
    }
}

static const dl_quorum_op_t quorum = { .prepare = prepare, .said_yes = said_yes, .merge = merge };

const dl_script_entry_t dl_entry_renew_many = { .wire = wire, .parse = parse,
                                                .free_reply = free_reply, .quorum = &quorum };
