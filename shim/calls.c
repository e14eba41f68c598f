/* SPDX-License-Identifier: BSD-3-Clause */
/* calls.c - each script's ARGV order and reply layout, written down once
 * (the headers of lua/<script>.lua say what each means). */
#include <stdio.h>
#include <string.h>

#include "calls.h"
#include "dl.h"
#include "lock.h"

dl_caller_t dl_caller(const struct dl_proc *p, const struct dl_lock *l)
{
    return (dl_caller_t){ l->keys, l->keylen, p->chanprefix, p->chanprefix_len, p->token };
}

static void init(dl_call_t *c, int script, const dl_caller_t *who)
{
    c->script = script;
    c->who = *who;
    c->deadline = 0;
    c->cmd.reply = NULL;
}

void dl_call_acquire(dl_call_t *c, const dl_caller_t *who, const dl_acquire_args_t *a)
{
    init(c, DL_SCRIPT_ACQUIRE, who);
    c->arg.acquire = *a;
}

void dl_call_release(dl_call_t *c, const dl_caller_t *who, const dl_release_args_t *a)
{
    init(c, DL_SCRIPT_RELEASE, who);
    c->arg.release = *a;
}

void dl_call_renew(dl_call_t *c, const dl_caller_t *who, const dl_renew_args_t *a)
{
    init(c, DL_SCRIPT_RENEW, who);
    c->arg.renew = *a;
}

void dl_call_cancel(dl_call_t *c, const dl_caller_t *who, const dl_cancel_args_t *a)
{
    init(c, DL_SCRIPT_CANCEL, who);
    c->arg.cancel = *a;
}

void dl_call_break(dl_call_t *c, const dl_caller_t *who)
{
    init(c, DL_SCRIPT_BREAK, who);
}

void dl_call_status(dl_call_t *c, const dl_caller_t *who)
{
    init(c, DL_SCRIPT_STATUS, who);
    c->reply.status.snapshot = NULL;
}

void dl_call_free_reply(dl_call_t *c)
{
    if (c->script == DL_SCRIPT_STATUS && c->reply.status.snapshot) {
        freeReplyObject(c->reply.status.snapshot);
        c->reply.status.snapshot = NULL;
    }
}

void dl_call_withdraw(dl_call_t *c, const dl_caller_t *who, const dl_withdraw_args_t *a)
{
    init(c, DL_SCRIPT_WITHDRAW, who);
    c->arg.withdraw = *a;
}

void dl_call_mark(dl_call_t *c, const dl_caller_t *who, const dl_mark_args_t *a)
{
    init(c, DL_SCRIPT_MARK, who);
    c->arg.mark = *a;
}

void dl_call_touch(dl_call_t *c, const dl_caller_t *who, const dl_touch_args_t *a)
{
    init(c, DL_SCRIPT_TOUCH, who);
    c->arg.touch = *a;
}

/* A call's wire form being written: the call, and how many of its number
 * buffers are taken. */
typedef struct wire {
    dl_call_t *c;
    int nums;
} wire_t;

/* Appends one string to the call's argv. */
static void put(wire_t *w, const char *s, size_t len)
{
    dl_call_t *c = w->c;
    if (c->argc >= (int)(sizeof c->argv / sizeof c->argv[0])) {
        /* a bug of ours: fail loudly, not out of bounds */
        dl_log(DL_LOG_ERROR, "internal: too many script arguments");
        return;
    }
    c->argv[c->argc] = s;
    c->argvlen[c->argc++] = len;
}

static void put_str(wire_t *w, const char *s)
{
    put(w, s, strlen(s));
}

static void put_num(wire_t *w, unsigned long long v)
{
    if (w->nums >= DL_CALL_NUMS) {
        dl_log(DL_LOG_ERROR, "internal: too many script arguments");
        return;
    }
    char *buf = w->c->num[w->nums++];
    put(w, buf, (size_t)snprintf(buf, sizeof w->c->num[0], "%llu", v));
}

/* The six keys and ARGV[1..2], as every operation script starts. */
static void put_head(wire_t *w, int token)
{
    const dl_caller_t *who = &w->c->who;
    put(w, "6", 1);
    for (int k = 0; k < DL_NKEYS; k++)
        put(w, who->keys[k], who->keylen[k]);
    put(w, who->chanprefix, who->chanprefix_len);
    if (token)
        put_str(w, who->token);
}

void dl_call_wire(dl_call_t *c)
{
    wire_t w = { c, 0 };
    c->argc = 2;                  /* after EVALSHA sha | EVAL text (script.c) */
    switch (c->script) {
    case DL_SCRIPT_ACQUIRE: {
        /* 1 prefix, 2 token, 3 mode, 4 lease, 5 info, 6 enqueue, 7 regid,
         * 8 waiter ttl, 9 claim, 10 (redlock) writer mark ttl */
        const dl_acquire_args_t *a = &c->arg.acquire;
        put_head(&w, 1);
        put(&w, &a->mode, 1);     /* (the call holds its arguments) */
        put_num(&w, a->lease_ms);
        put(&w, a->info, a->infolen);
        put(&w, a->enqueue ? "1" : "0", 1);
        put_num(&w, a->regid);
        put_num(&w, a->waiter_ttl_ms);
        put_num(&w, a->claim_ms);
        if (a->redlock)
            put_num(&w, a->writer_mark_ms);
        break;
    }
    case DL_SCRIPT_RELEASE: {
        /* 1 prefix, 2 token, 3 mode, 4 fence, 5 registration id ('' none),
         * 6 (redlock) 'o' */
        const dl_release_args_t *a = &c->arg.release;
        put_head(&w, 1);
        put(&w, &a->mode, 1);
        put_num(&w, a->fence);
        if (a->rid)
            put_num(&w, a->rid);
        else
            put(&w, "", 0);
        if (a->redlock)
            put(&w, "o", 1);
        break;
    }
    case DL_SCRIPT_RENEW: {
        /* 1 prefix, 2 token, 3 mode, 4 lease, 5 fence ('' redlock), 6 (redlock) 'm' */
        const dl_renew_args_t *a = &c->arg.renew;
        put_head(&w, 1);
        put(&w, &a->mode, 1);
        put_num(&w, a->lease_ms);
        if (a->redlock) {
            put(&w, "", 0);
            put(&w, "m", 1);
        } else {
            put_num(&w, a->fence);
        }
        break;
    }
    case DL_SCRIPT_CANCEL: {
        /* 1 prefix, 2 token, 3 mode, 4 registration id, 5 (redlock) 'm' */
        const dl_cancel_args_t *a = &c->arg.cancel;
        put_head(&w, 1);
        put(&w, &a->mode, 1);
        put_num(&w, a->regid);
        if (a->clear_mark)
            put(&w, "m", 1);
        break;
    }
    case DL_SCRIPT_BREAK:
        /* 1 prefix */
        put_head(&w, 0);
        break;
    case DL_SCRIPT_STATUS:
        /* the six keys, no ARGV */
        put(&w, "6", 1);
        for (int k = 0; k < DL_NKEYS; k++)
            put(&w, c->who.keys[k], c->who.keylen[k]);
        break;
    case DL_SCRIPT_WITHDRAW: {
        /* 1 prefix, 2 token, 3 mode, 4 registration id, 5 (redlock) the
         * fence of an acquisition that counted elsewhere */
        const dl_withdraw_args_t *a = &c->arg.withdraw;
        put_head(&w, 1);
        put(&w, &a->mode, 1);
        put_num(&w, a->regid);
        if (a->older)
            put_num(&w, a->older);
        break;
    }
    case DL_SCRIPT_MARK: {
        /* KEYS: lock, meta.  ARGV: 1 token, 2 fence, 3 'l' | 'h', 4 ms, 5 seq */
        const dl_mark_args_t *a = &c->arg.mark;
        put(&w, "2", 1);
        put(&w, c->who.keys[0], c->who.keylen[0]);
        put(&w, c->who.keys[5], c->who.keylen[5]);
        put_str(&w, c->who.token);
        put_num(&w, a->fence);
        put(&w, a->lingering ? "l" : "h", 1);
        put_num(&w, a->ms);
        put_num(&w, a->seq);
        break;
    }
    case DL_SCRIPT_TOUCH: {
        /* KEYS: lock, readers, rinfo, meta.  ARGV: 1 token, 2 mode, 3 lease, 4 fence, 5 seq */
        const dl_touch_args_t *a = &c->arg.touch;
        put(&w, "4", 1);
        for (int k = 0; k < 3; k++)
            put(&w, c->who.keys[k], c->who.keylen[k]);
        put(&w, c->who.keys[5], c->who.keylen[5]);
        put_str(&w, c->who.token);
        put(&w, &a->mode, 1);
        put_num(&w, a->lease_ms);
        put_num(&w, a->fence);
        put_num(&w, a->seq);
        break;
    }
    default:
        dl_log(DL_LOG_ERROR, "internal: no such script %d", c->script);
        break;
    }
}

/* Element i of an array reply if it is an integer, else -1. */
static long long elem(const redisReply *r, size_t i)
{
    if (r->type != REDIS_REPLY_ARRAY || i >= r->elements ||
        r->element[i]->type != REDIS_REPLY_INTEGER)
        return -1;
    return r->element[i]->integer;
}

/* An integer reply, else -1. */
static long long integer(const redisReply *r)
{
    return r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
}

/* Values as the script gives them: a reply of another shape reads -1. */
void dl_call_parse(dl_call_t *c, const redisReply *r)
{
    switch (c->script) {
    case DL_SCRIPT_ACQUIRE: {
        /* {1, fence, ownerdead, waiters, claimed, was} acquired; {0, pttl} busy */
        dl_acquire_reply_t *x = &c->reply.acquire;
        x->got = (int)elem(r, 0);
        x->fence = (uint64_t)elem(r, 1);
        x->pttl_ms = elem(r, 1);
        x->dead = elem(r, 2) == 1;
        x->waiters = elem(r, 3);
        x->claimed = elem(r, 4) == 1;
        x->was = elem(r, 5) > 0 ? (uint64_t)elem(r, 5) : 0;
        x->servers = 0;           /* (quorum.c's, when it merges) */
        break;
    }
    case DL_SCRIPT_RELEASE:
        /* 1 released, 0 held nothing, 2 released already */
        c->reply.release.result = (int)integer(r);
        break;
    case DL_SCRIPT_RENEW: {
        /* 0 gone; n >= 1 renewed, n - 1 queued */
        long long n = integer(r);
        c->reply.renew.held = n < 0 ? -1 : n >= 1;
        c->reply.renew.queued = n >= 1 ? n - 1 : 0;
        break;
    }
    case DL_SCRIPT_CANCEL: {
        /* {1, fence, ownerdead, waiters} granted meanwhile; {0} withdrawn */
        dl_cancel_reply_t *x = &c->reply.cancel;
        x->granted = (int)elem(r, 0);
        x->fence = (uint64_t)elem(r, 1);
        x->dead = elem(r, 2) == 1;
        x->waiters = elem(r, 3);
        break;
    }
    case DL_SCRIPT_BREAK:
        /* holds removed */
        c->reply.brk.removed = integer(r);
        break;
    case DL_SCRIPT_WITHDRAW:
        /* 1 a hold released, 2 a queue place withdrawn, 0 nothing */
        c->reply.withdraw.result = (int)integer(r);
        break;
    case DL_SCRIPT_MARK:
        /* 1 marked, 0 not there */
        c->reply.mark.marked = (int)integer(r);
        break;
    case DL_SCRIPT_TOUCH:
        /* 1 renewed, 0 not there (only posted: read by the tests) */
        c->reply.mark.marked = (int)integer(r);
        break;
    case DL_SCRIPT_STATUS:
        /* kept whole: script.c hands it over (dl_status_reply_t) */
        break;
    }
}
