/* SPDX-License-Identifier: BSD-3-Clause */
/* calls.c - what every script's entry shares: starting a call, writing
 * ARGV, reading replies, and the dispatch to the entry (calls.h).  Each
 * script's own ARGV order and reply layout is in its call_<name>.c. */
#include <stdio.h>
#include <string.h>

#include "calls.h"
#include "dl.h"
#include "script.h"

void dl_call_init(dl_call_t *c, int script, const dl_caller_t *who)
{
    c->script = script;
    c->who = *who;
    c->deadline = 0;
    c->once = 0;
    c->cmd.reply = NULL;
}

void dl_call_free_reply(dl_call_t *c)
{
    const dl_script_entry_t *e = dl_scripts[c->script].entry;
    if (e->free_reply)
        e->free_reply(c);
}

void dl_call_wire(dl_call_t *c)
{
    dl_wire_t w = { c, 0 };
    c->argc = 2;                  /* after EVALSHA sha | EVAL text (script.c) */
    dl_scripts[c->script].entry->wire(&w, c);
}

int dl_call_parse(dl_call_t *c, redisReply *r)
{
    return dl_scripts[c->script].entry->parse(c, r);
}

/* --- writing ARGV --- */

void dl_wire_put(dl_wire_t *w, const char *s, size_t len)
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

void dl_wire_str(dl_wire_t *w, const char *s)
{
    dl_wire_put(w, s, strlen(s));
}

void dl_wire_num(dl_wire_t *w, unsigned long long v)
{
    if (w->nums >= DL_CALL_NUMS) {
        dl_log(DL_LOG_ERROR, "internal: too many script arguments");
        return;
    }
    char *buf = w->c->num[w->nums++];
    dl_wire_put(w, buf, (size_t)snprintf(buf, sizeof w->c->num[0], "%llu", v));
}

void dl_wire_keys(dl_wire_t *w, const int *at, int n)
{
    static const char digits[DL_KEYS_MAX + 1][2] = { "0", "1", "2", "3", "4", "5", "6", "7", "8" };
    const dl_caller_t *who = &w->c->who;
    if (n < 0 || n > DL_KEYS_MAX) {
        dl_log(DL_LOG_ERROR, "internal: %d script keys", n);
        return;
    }
    dl_wire_put(w, digits[n], 1);
    for (int k = 0; k < n; k++)
        dl_wire_put(w, who->keys[at[k]], who->keylen[at[k]]);
}

void dl_wire_lock(dl_wire_t *w, int token)
{
    static const int all[DL_NKEYS] = { 0, 1, 2, 3, 4, 5 };
    const dl_caller_t *who = &w->c->who;
    dl_wire_keys(w, all, DL_NKEYS);
    dl_wire_put(w, who->chanprefix, who->chanprefix_len);
    if (token)
        dl_wire_str(w, who->token);
}

/* --- reading replies --- */

long long dl_reply_elem(const redisReply *r, size_t i)
{
    if (r->type != REDIS_REPLY_ARRAY || i >= r->elements ||
        r->element[i]->type != REDIS_REPLY_INTEGER)
        return -1;
    return r->element[i]->integer;
}

long long dl_reply_int(const redisReply *r)
{
    return r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
}

const char *dl_reply_str(const redisReply *r, size_t i, size_t *len)
{
    static const char none[] = "";
    if (r && r->type == REDIS_REPLY_ARRAY && i < r->elements &&
        (r->element[i]->type == REDIS_REPLY_STRING || r->element[i]->type == REDIS_REPLY_STATUS)) {
        if (len)
            *len = r->element[i]->len;
        return r->element[i]->str;
    }
    if (len)
        *len = 0;
    return none;
}

const redisReply *dl_reply_arr(const redisReply *r, size_t i)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements ||
        r->element[i]->type != REDIS_REPLY_ARRAY)
        return NULL;
    return r->element[i];
}
