/* SPDX-License-Identifier: BSD-3-Clause */
/* call_acquire_all.c - lua/acquire_all.lua's entry: its ARGV, its reply,
 * and its majority on redlock:// (calls.h). */
#include <stdio.h>
#include <string.h>

#include "call_acquire_all.h"
#include "call_withdraw.h"
#include "call_withdraw_all.h"
#include "calls.h"
#include "dl_script_list.h"
#include "quorum.h"

void dl_call_acquire_all(dl_call_t *c, const dl_caller_t *who, const dl_acquire_all_args_t *a)
{
    dl_call_init(c, DL_SCRIPT_ACQUIRE_ALL, who);
    DL_ARGS(c, acquire_all) = *a;
    DL_REPLY(c, acquire_all).kept = NULL;
}

/* "LEASE:LEN:" and the main key, for each lock: lengths and not
 * separators, so that a key may hold any byte. */
/* Lock i's main key. */
static const char *main_of(const dl_all_lock_t *l, size_t *len)
{
    if (l->keys) {
        *len = l->keylen[0];
        return l->keys[0];
    }
    *len = l->mainlen;
    return l->main;
}

size_t dl_acquire_all_list_size(const dl_all_lock_t *locks, int n)
{
    size_t size = 0, len;
    for (int i = 0; i < n; i++) {
        main_of(&locks[i], &len);
        size += 2 * 21 + 2 + len;
    }
    return size;
}

size_t dl_acquire_all_list(const dl_all_lock_t *locks, int n, char *buf)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *key = main_of(&locks[i], &len);
        at += (size_t)sprintf(buf + at, "%lu:%zu:", locks[i].lease_ms, len);
        memcpy(buf + at, key, len);
        at += len;
    }
    return at;
}

static void wire(dl_wire_t *w, const dl_call_t *c)
{
    /* KEYS: the first lock's six; 1 prefix, 2 token, 3 info, 4 regid,
     * 5 redlock '1' | '', 6 the locks, 7 (redlock, optional) each lock's
     * fence of the caller's last hold told EOWNERDEAD */
    const dl_acquire_all_args_t *a = &DL_ARGS(c, acquire_all);
    dl_wire_lock(w, 1);
    dl_wire_put(w, a->info, a->infolen);
    dl_wire_num(w, a->regid);
    dl_wire_put(w, a->redlock ? "1" : "", a->redlock ? 1 : 0);
    dl_wire_put(w, a->list, a->listlen);
    if (a->redlock && a->olders)
        dl_wire_put(w, a->olders, a->olderslen);
}

static int parse(dl_call_t *c, redisReply *r)
{
    /* {1, n, fence, dead, claimed, was, ...}; {0, i, pttl}; {2};
     * {3, i, mark} */
    const dl_acquire_all_args_t *a = &DL_ARGS(c, acquire_all);
    dl_acquire_all_reply_t *x = &DL_REPLY(c, acquire_all);
    x->got = (int)dl_reply_elem(r, 0);
    x->busy = (int)dl_reply_elem(r, 1) - 1;
    x->pttl_ms = dl_reply_elem(r, 2);
    x->servers = 0;               /* (the quorum's merge sets them) */
    x->kept = NULL;
    x->mark = x->got == 3 ? (uint64_t)dl_reply_elem(r, 2) : 0;
    if ((x->got == 0 || x->got == 3) && (x->busy < 0 || x->busy >= a->n))
        x->got = -1;
    if (x->got != 1)
        return 0;
    if (dl_reply_elem(r, 1) != a->n || r->elements != 2 + 4 * (size_t)a->n) {
        x->got = -1;
        return 0;
    }
    for (size_t i = 2; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < 0) {
            x->got = -1;
            return 0;
        }
    if (!a->out) {
        x->kept = r;              /* a redlock server's: for the merge */
        return 1;
    }
    for (int i = 0; i < a->n; i++) {
        size_t at = 2 + 4 * (size_t)i;
        a->out[i] = (dl_all_item_t){ (uint64_t)r->element[at]->integer,
                                     r->element[at + 1]->integer == 1,
                                     r->element[at + 2]->integer == 1,
                                     (uint64_t)r->element[at + 3]->integer };
    }
    return 0;
}

static void free_reply(dl_call_t *c)
{
    if (DL_REPLY(c, acquire_all).kept) {
        freeReplyObject(DL_REPLY(c, acquire_all).kept);
        DL_REPLY(c, acquire_all).kept = NULL;
    }
}

/* --- redlock:// --- */

/* Each server's copy keeps its reply (the merge reads every server's
 * fences), and clears the caller's writer marks where it takes. */
static void prepare(dl_call_t *c)
{
    DL_ARGS(c, acquire_all).redlock = 1;
    DL_ARGS(c, acquire_all).out = NULL;
    DL_REPLY(c, acquire_all).kept = NULL;
}

static int said_yes(const dl_call_t *c)
{
    return DL_REPLY(c, acquire_all).got == 1;
}

/* Lock i's item in a server's kept reply (one that said yes). */
static dl_all_item_t item_of(const dl_call_t *c, int i)
{
    const redisReply *r = DL_REPLY(c, acquire_all).kept;
    size_t at = 2 + 4 * (size_t)i;
    return (dl_all_item_t){ (uint64_t)r->element[at]->integer, r->element[at + 1]->integer == 1,
                            r->element[at + 2]->integer == 1, (uint64_t)r->element[at + 3]->integer };
}

/* The withdrawal of lock i of acq (by the registration id, the same on
 * every server); older: the fence it got from its quorum (0: none). */
static void withdrawal(dl_call_t *w, const dl_call_t *acq, int i, uint64_t older)
{
    const dl_acquire_all_args_t *a = &DL_ARGS(acq, acquire_all);
    dl_caller_t who = acq->who;
    who.keys = a->locks[i].keys;
    who.keylen = a->locks[i].keylen;
    who.main = a->locks[i].main;
    who.mainlen = a->locks[i].mainlen;
    dl_call_withdraw(w, &who, &(dl_withdraw_args_t){ .mode = 'w', .regid = a->regid,
                                                     .older = older });
}

/* Owes lock i's withdrawal to each server in `owed`, looked at twice (the
 * request may still wait in a connection the server serves later). */
static void owe_withdrawals(const dl_call_t *acq, const dl_tally_t *t, const char *owed, int i,
                            uint64_t older)
{
    const dl_acquire_all_args_t *a = &DL_ARGS(acq, acquire_all);
    dl_call_t w;
    withdrawal(&w, acq, i, older);
    uint64_t until = dl_quorum_owed_until(t->conn, a->locks[i].lease_ms, 2);
    for (int s = 0; s < t->nodes; s++)
        if (owed[s])
            dl_quorum_owe(t->conn, s, &w, 2, until);
}

/* Each server's undo, which its link writes behind the request should it
 * give up on a stalled server after sending it: every hold that request
 * took there, by its registration id (the same on every server). */
static void undo_for(dl_call_t *u, const dl_call_t *acq)
{
    const dl_acquire_all_args_t *a = &DL_ARGS(acq, acquire_all);
    dl_call_withdraw_all(u, &acq->who, &(dl_withdraw_all_args_t){
        .list = a->list, .listlen = a->listlen, .regid = a->regid });
}

/* It did not count: every lock withdrawn at once from the servers that
 * granted it, and in the background from those whose answer never came
 * and from any granting server a withdrawal did not reach. */
static void undo(const dl_call_t *acq, const dl_tally_t *t)
{
    const dl_acquire_all_args_t *a = &DL_ARGS(acq, acquire_all);
    int any = 0;
    for (int s = 0; s < t->nodes; s++)
        any |= t->granted[s];
    for (int i = 0; i < a->n; i++) {
        dl_call_t c[DL_MAX_ENDPOINTS];
        char owed[DL_MAX_ENDPOINTS];
        for (int s = 0; s < t->nodes; s++)
            withdrawal(&c[s], acq, i, 0);
        if (any)
            dl_quorum_on(t->conn, c, t->nodes, t->granted);
        for (int s = 0; s < t->nodes; s++)
            owed[s] = t->unanswered[s] || (t->granted[s] && c[s].cmd.err);
        owe_withdrawals(acq, t, owed, i, 0);
    }
}

/* Granted by a majority within the shortest lease's validity: each lock
 * with the largest fence of the majority and what any granting server
 * said of a dead holder or a claim; the servers that never answered owe
 * each lock's withdrawal.  Else undone, and busy. */
static void merge(dl_call_t *c, const dl_tally_t *t)
{
    const dl_acquire_all_args_t *a = &DL_ARGS(c, acquire_all);
    dl_acquire_all_reply_t *out = &DL_REPLY(c, acquire_all);
    unsigned long lease = 0;
    for (int i = 0; i < a->n; i++)
        if (!lease || a->locks[i].lease_ms < lease)
            lease = a->locks[i].lease_ms;
    uint64_t drift = lease / 100 + 2;
    out->kept = NULL;
    out->servers = 0;
    if (t->yes >= t->need && t->elapsed + drift < lease && a->out) {
        for (int i = 0; i < a->n; i++)
            a->out[i] = (dl_all_item_t){ 0, 0, 0, 0 };
        for (int s = 0; s < t->nodes; s++) {
            if (t->unanswered[s])
                out->servers |= 1u << s;
            if (!t->granted[s])
                continue;
            out->servers |= 1u << s;
            for (int i = 0; i < a->n; i++) {
                dl_all_item_t it = item_of(t->at[s], i);
                dl_all_item_t *m = &a->out[i];
                m->fence = it.fence > m->fence ? it.fence : m->fence;
                m->dead |= it.dead;
                m->claimed |= it.claimed;
            }
        }
        out->got = 1;
        out->busy = -1;
        out->pttl_ms = 0;
        for (int i = 0; i < a->n; i++)
            owe_withdrawals(c, t, t->unanswered, i, a->out[i].fence);
        return;
    }
    undo(c, t);
    /* Refused by a majority for a lock left unrecoverable (its mark the
     * same on every server), as acquire's merge. */
    int unrec = 0, first = -1;
    for (int s = 0; s < t->nodes; s++)
        if (!t->failed[s] && DL_REPLY(t->at[s], acquire_all).got == 3 && (unrec++, first < 0))
            first = s;
    if (unrec >= t->need) {
        const dl_acquire_all_reply_t *r = &DL_REPLY(t->at[first], acquire_all);
        out->got = 3;
        out->busy = r->busy;
        out->mark = r->mark;
        out->pttl_ms = 0;
        return;
    }
    const dl_call_t *no = t->firstno >= 0 ? t->at[t->firstno] : NULL;
    out->got = 0;
    out->busy = no && DL_REPLY(no, acquire_all).got == 0 ? DL_REPLY(no, acquire_all).busy : 0;
    out->pttl_ms = no && DL_REPLY(no, acquire_all).got == 0 ? DL_REPLY(no, acquire_all).pttl_ms : 1;
}

static const dl_quorum_op_t quorum = {
    .prepare = prepare,
    .undo_for = undo_for,
    .said_yes = said_yes,
    .merge = merge,
    .undo = undo,
};

const dl_script_entry_t dl_entry_acquire_all = {
    .wire = wire, .parse = parse, .free_reply = free_reply, .quorum = &quorum };
