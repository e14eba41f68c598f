/* SPDX-License-Identifier: BSD-3-Clause */
/* break.c - `distlock break`, and a waiter leaving a queue (break.h). */
#include <stdio.h>
#include <string.h>

#include "break.h"

/* A call of `script` over lk's keys, its first argument the channel
 * prefix (every script's ARGV[1], lua/common.lua). */
static void call_init(dl_call_t *c, int script, const cli_keys_t *lk, const char *chan)
{
    cli_call_init(c, script, lk);
    dl_call_arg(c, chan, strlen(chan));
}

static void call_arg(dl_call_t *c, const char *s)
{
    dl_call_arg(c, s, strlen(s));
}

/* What both commands need first: a connection, the lock's keys and the
 * channel prefix (chan, 300 bytes).  0 or -1 (r->err). */
static int begin(cli_redis_t *r, cli_keys_t *lk, const char *name, size_t len, char *chan)
{
    if (!r->conn) {
        snprintf(r->err, sizeof r->err, "not connected");
        return -1;
    }
    if (cli_keys_make(r, lk, name, len))
        return -1;
    snprintf(chan, 300, "%sn:", r->cfg.prefix);
    return 0;
}

int cli_break_lock(cli_redis_t *r, const char *name, size_t len, long long *removed)
{
    cli_keys_t lk;
    char chan[300], last[512] = "no reply";
    if (begin(r, &lk, name, len, chan))
        return -1;
    int got = 0, first, end;
    *removed = 0;
    cli_redis_targets(r, &first, &end);
    for (int t = first; t <= end; t++) {
        dl_call_t c;
        call_init(&c, DL_SCRIPT_BREAK, &lk, chan);
        redisReply *rep = cli_call(r, t, &c);
        if (rep && rep->type != REDIS_REPLY_INTEGER) {
            cli_redis_fail(r, t, "unexpected reply to the break script");
            freeReplyObject(rep);
            rep = NULL;
        }
        if (!rep) {
            snprintf(last, sizeof last, "%s", r->err);
            continue;
        }
        got++;
        /* Each server holds the same holds: count them once. */
        if (rep->integer > *removed)
            *removed = rep->integer;
        freeReplyObject(rep);
    }
    cli_keys_free(&lk);
    return cli_redis_tally(r, got, last);
}

int cli_withdraw(cli_redis_t *r, const char *name, size_t len, const char *token, char mode)
{
    cli_keys_t lk;
    char chan[300], m[2] = { mode, 0 };
    if (begin(r, &lk, name, len, chan))
        return -1;
    int failed = 0, first, end;
    /* With redlock nobody queues, but the lock call may have been granted
     * on some servers at that instant: give those back. */
    cli_redis_targets(r, &first, &end);
    for (int t = first; t <= end; t++) {
        /* Every registration of the process: it is ending (a registration
         * id above any the process can have made). */
        dl_call_t c;
        call_init(&c, DL_SCRIPT_CANCEL, &lk, chan);
        call_arg(&c, token);
        call_arg(&c, m);
        call_arg(&c, "99999999999999999999");
        redisReply *rep = cli_call(r, t, &c);
        if (!rep) {
            failed = 1;
            continue;
        }
        /* {1, ...}: granted to us meanwhile; hand it on rather than let it
         * lapse (which would cost the others a claim window and give the
         * next holder EOWNERDEAD). */
        int granted = rep->type == REDIS_REPLY_ARRAY && rep->elements >= 2 &&
                      rep->element[0]->type == REDIS_REPLY_INTEGER &&
                      rep->element[0]->integer == 1 &&
                      rep->element[1]->type == REDIS_REPLY_INTEGER;
        /* the release names the hold by its fence, which that server gave */
        char fence[24];
        if (granted)
            snprintf(fence, sizeof fence, "%lld", rep->element[1]->integer);
        freeReplyObject(rep);
        if (!granted)
            continue;
        call_init(&c, DL_SCRIPT_RELEASE, &lk, chan);
        call_arg(&c, token);
        call_arg(&c, m);
        call_arg(&c, fence);
        rep = cli_call(r, t, &c);
        if (rep)
            freeReplyObject(rep);
        else
            failed = 1;
    }
    cli_keys_free(&lk);
    return failed ? -1 : 0;
}
