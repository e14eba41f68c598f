/* SPDX-License-Identifier: BSD-3-Clause */
/* break.c - `distlock break` on a lock or a semaphore, and a waiter
 * leaving a queue (break.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "break.h"
#include "call_break.h"
#include "call_cancel.h"
#include "call_release.h"
#include "call_sem_break.h"
#include "channel.h"

/* What both commands need first: a connection, the lock's keys and the
 * channel prefix (chan, 300 bytes).  0 or -1 (r->err). */
static int begin(cli_redis_t *r, int kind, cli_keys_t *lk, const char *name, size_t len,
                 char *chan)
{
    if (!r->conn) {
        snprintf(r->err, sizeof r->err, "not connected");
        return -1;
    }
    if (cli_keys_make(r, kind, lk, name, len))
        return -1;
    /* On a cluster, the channel of the lock's slot (shim/conn/channel.h). */
    dl_chan_prefix(r->cfg.prefix, dl_conn_caps(r->conn).slots, lk->k[0], lk->len[0], chan,
                   300);
    return 0;
}

int cli_break_lock(cli_redis_t *r, const char *name, size_t len, long long *removed)
{
    cli_keys_t lk;
    char chan[300], last[512] = "no reply";
    if (begin(r, DL_KIND_LOCK, &lk, name, len, chan))
        return -1;
    int got = 0, first, end;
    *removed = 0;
    cli_redis_targets(r, &first, &end);
    for (int t = first; t <= end; t++) {
        dl_call_t c;
        dl_caller_t who = cli_caller(&lk, chan, NULL);
        dl_call_break(&c, &who);
        int bad = cli_call(r, t, &c);
        if (!bad && DL_REPLY(&c, brk).removed < 0)
            bad = cli_redis_fail(r, t, "unexpected reply to the break script");
        if (bad) {
            snprintf(last, sizeof last, "%s", r->err);
            continue;
        }
        got++;
        /* Each server holds the same holds: count them once. */
        if (DL_REPLY(&c, brk).removed > *removed)
            *removed = DL_REPLY(&c, brk).removed;
    }
    cli_keys_free(&lk);
    return cli_redis_tally(r, got, last);
}

int cli_break_sem(cli_redis_t *r, const char *name, size_t len, const char *token,
                  dl_sem_break_reply_t *b)
{
    cli_keys_t k;
    char chan[300];
    if (begin(r, DL_KIND_SEM, &k, name, len, chan))
        return -1;
    /* One server (semaphores refuse redlock://), routed by the key. */
    dl_call_t c;
    dl_caller_t who = cli_caller(&k, chan, token);
    dl_call_sem_break(&c, &who);
    int rc = cli_call(r, -1, &c);
    if (rc == 0 && DL_REPLY(&c, sem_break).result < 0)
        rc = cli_redis_fail(r, -1, "unexpected reply to the semaphore's break script");
    if (rc == 0)
        *b = DL_REPLY(&c, sem_break);
    cli_keys_free(&k);
    return rc;
}

int cli_withdraw(cli_redis_t *r, const char *name, size_t len, const char *token, char mode)
{
    cli_keys_t lk;
    char chan[300];
    if (begin(r, DL_KIND_LOCK, &lk, name, len, chan))
        return -1;
    int failed = 0, first, end;
    /* With redlock nobody queues, but the lock call may have been granted
     * on some servers at that instant: give those back. */
    cli_redis_targets(r, &first, &end);
    for (int t = first; t <= end; t++) {
        /* Every registration of the process: it is ending (a registration
         * id above any the process can have made). */
        dl_call_t c;
        dl_caller_t who = cli_caller(&lk, chan, token);
        dl_cancel_args_t ca = { .mode = mode, .regid = UINT64_MAX };
        dl_call_cancel(&c, &who, &ca);
        if (cli_call(r, t, &c)) {
            failed = 1;
            continue;
        }
        /* Granted to us meanwhile: hand it on rather than let it lapse
         * (which would cost the others a claim window and give the next
         * holder EOWNERDEAD).  The release names the hold by its fence,
         * which that server gave. */
        if (DL_REPLY(&c, cancel).granted != 1)
            continue;
        dl_release_args_t ra = { .mode = mode, .fence = DL_REPLY(&c, cancel).fence };
        dl_call_release(&c, &who, &ra);
        if (cli_call(r, t, &c))
            failed = 1;
    }
    cli_keys_free(&lk);
    return failed ? -1 : 0;
}
