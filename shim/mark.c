/* mark.c - what Redis must know of a lingering hold (lock.c).
 *
 * A hold that lingers after its unlock is, to the application, released:
 * if the process now ends without passing it on (_exit, a crash), the hold
 * must lapse soon, and the next holder must not be told EOWNERDEAD.  A
 * relock makes it a hold again, whose lapse must be.  Redis tells the two
 * apart by the meta hash: `wh` names the writer whose hold has not been
 * released (its lapse is a death), and `wl` the one whose hold lingers (no
 * death if that is the same).  The first linger of a hold also cuts its
 * time in Redis to the claim window of a pushed grant (min(lease, 2 s));
 * the watchdog renews it to the lease at half of that if the process still
 * holds it then.
 *
 * Each mark is posted (conn.h): written before the unlock or lock call
 * returns, so it reaches Redis ahead of anything the process does next,
 * even if the process then ends, but its reply is not waited for.  Marks
 * are written while the process holds the lock in Redis, and its release
 * comes later on the same connection, so each runs while the hold is the
 * caller's; the TTL cut, the one change that would harm another holder,
 * checks it anyway (a hold that lapsed under a stalled process).  The cut
 * is a short script sent with its text (cached by Redis under its SHA1, so
 * a SCRIPT FLUSH cannot make it fail); the other marks are one HSET or
 * HDEL each.
 */
#include <stdio.h>
#include <string.h>

#include "dl.h"
#include "lock.h"

/* KEYS: lock, meta.  ARGV: token, claim window (ms). */
static const char MARK_CUT[] =
    "if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] and "
    "redis.call('PTTL', KEYS[1]) > tonumber(ARGV[2]) then "
    "redis.call('PEXPIRE', KEYS[1], ARGV[2]) end "
    "redis.call('HSET', KEYS[2], 'wl', ARGV[1])";

int dl_mark(dl_proc_t *p, const dl_lock_t *l, int lingering, unsigned long cut_ms)
{
    if (!lingering) {
        const char *argv[3] = { "HDEL", l->keys[5], "wl" };
        size_t argvlen[3] = { 4, l->keylen[5], 2 };
        return dl_conn_post(p->conn, 3, argv, argvlen);
    }
    if (!cut_ms) {
        const char *argv[4] = { "HSET", l->keys[5], "wl", p->token };
        size_t argvlen[4] = { 4, l->keylen[5], 2, strlen(p->token) };
        return dl_conn_post(p->conn, 4, argv, argvlen);
    }
    char claim[24];
    int clen = snprintf(claim, sizeof claim, "%lu", cut_ms);
    const char *argv[7] = { "EVAL", MARK_CUT, "2", l->keys[0], l->keys[5], p->token, claim };
    size_t argvlen[7] = { 4, sizeof MARK_CUT - 1, 1, l->keylen[0], l->keylen[5],
                          strlen(p->token), (size_t)clen };
    return dl_conn_post(p->conn, 7, argv, argvlen);
}
