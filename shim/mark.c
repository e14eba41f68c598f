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
 * fence, and changes nothing unless that very hold is there.  It is one
 * short script sent with its text (cached by Redis under its SHA1, so a
 * SCRIPT FLUSH cannot make it fail).
 */
#include <stdio.h>
#include <string.h>

#include "dl.h"
#include "mark.h"

/* KEYS: lock, meta.  ARGV: token, fence, 'l' lingers | 'h' held again, ms
 * ('0': none): lingering, the TTL is cut to it; held again, the lease it is
 * restored to (a relock after a cut: a pause right after it must not lose
 * the hold).  Reply: 1 marked, 0 that hold is not there. */
const char dl_mark_lua[] =
    "local h = redis.call('HMGET', KEYS[1], 'owner', 'fence', 'info') "
    "if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then return 0 end "
    "local ms = tonumber(ARGV[4]) "
    "if ARGV[3] == 'h' then redis.call('HSET', KEYS[2], 'wh', ARGV[1], 'wi', h[3]) "
    "if ms > 0 then redis.call('PEXPIRE', KEYS[1], ms) end return 1 end "
    "redis.call('HSET', KEYS[2], 'wh', '', 'wi', '') "
    "if ms > 0 and redis.call('PTTL', KEYS[1]) > ms then "
    "redis.call('PEXPIRE', KEYS[1], ms) end "
    "return 1";

int dl_mark(dl_proc_t *p, const dl_lock_t *l, int lingering, unsigned long ms)
{
    char fence[24], cut[24];
    int flen = snprintf(fence, sizeof fence, "%llu", (unsigned long long)l->fence);
    int clen = snprintf(cut, sizeof cut, "%lu", ms);
    const char *argv[9] = { "EVAL", dl_mark_lua, "2", l->keys[0], l->keys[5], p->token, fence,
                            lingering ? "l" : "h", cut };
    size_t argvlen[9] = { 4, sizeof dl_mark_lua - 1, 1, l->keylen[0], l->keylen[5],
                          strlen(p->token), (size_t)flen, 1, (size_t)clen };
    return dl_conn_post(p->conn, 9, argv, argvlen);
}
