/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_stale.c - commands that reach Redis late act only on what they were
 * sent for.
 *
 * A command written on a connection the process then gave up (a stall past
 * DISTLOCK_IO_TIMEOUT_MS) still runs when the server resumes, possibly
 * after the process asked again on a new connection.  A release must then
 * end only the hold it was sent for (named by its fence), a cancel only
 * the registration it was sent for, a lingering unlock's mark only its own
 * hold; and a lock call is only ever granted the mode it asked for, even
 * with a leftover registration of the other mode in the queue.  Most
 * cases drive the scripts directly (dl_scripts[], as the library sends
 * them), one goes end to end through a stalling proxy.
 */
#include "dl_script_list.h"
#include "harness.h"
#include "harness_proxy.h"
#include "harness_script.h"

#include <errno.h>
#include <string.h>

extern const char dl_mark_lua[];    /* shim/core/mark.c */

static char *key(char *buf, const char *name, const char *sfx)
{
    return th_key(buf, 300, name, sfx);
}

/* A release names its hold by fence: one sent for an earlier hold of the
 * same process (owner is the same token) leaves the later hold alone. */
static void test_release_names_its_hold(void **state)
{
    (void)state;
    char name[128], k[300], rk[300];
    th_name(name, sizeof name, "relname");
    key(k, name, "");
    key(rk, name, ":r");
    unsigned long long f1, f2;
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "1", &f1, NULL, NULL), 1);
    assert_int_equal(th_script_release(name, "tokP", "w", f1), 1);
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "2", &f2, NULL, NULL), 1);
    assert_true(f2 > f1);
    /* the first hold's release, run again (it reached Redis late) */
    long long r = th_script_release(name, "tokP", "w", f1);
    if (th_cmd_ll("EXISTS %s", k) != 1)
        fail_msg("a release sent for fence %llu ended the later hold %llu (reply %lld)", f1, f2, r);
    assert_int_equal(r, 2);
    assert_int_equal(th_cmd_ll("HGET %s fence", k), (long long)f2);
    assert_int_equal(th_script_release(name, "tokP", "w", f2), 1);
    assert_int_equal(th_cmd_ll("EXISTS %s", k), 0);
    assert_int_equal(th_script_release(name, "tokP", "w", f2), 2);     /* a resend */

    /* readers: the fence recorded for the reader names its hold */
    assert_int_equal(th_script_acquire(name, "tokP", "r", "30000", 0, "3", &f1, NULL, NULL), 1);
    assert_int_equal(th_script_release(name, "tokP", "r", f1), 1);
    assert_int_equal(th_script_acquire(name, "tokP", "r", "30000", 0, "4", &f2, NULL, NULL), 1);
    r = th_script_release(name, "tokP", "r", f1);
    if (th_cmd_ll("ZSCORE %s tokP", rk) < 0)
        fail_msg("a read release sent for fence %llu ended the later read hold %llu (reply %lld)",
                 f1, f2, r);
    assert_int_equal(th_script_release(name, "tokP", "r", f2), 1);
    assert_int_equal(th_cmd_ll("EXISTS %s", rk), 0);
}

/* The process asks again while its old hold is still there ("mine"): the
 * hold it claims gets a new fence, so the old hold's release, still on
 * its way, no longer names it. */
static void test_claim_renames_hold(void **state)
{
    (void)state;
    char name[128], k[300];
    th_name(name, sizeof name, "relclaim");
    key(k, name, "");
    unsigned long long f1, f2;
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "1", &f1, NULL, NULL), 1);
    /* the release of f1 is stuck on a dead connection; the process locks again */
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "2", &f2, NULL, NULL), 1);
    assert_true(f2 > f1);
    assert_int_equal(th_script_release(name, "tokP", "w", f1), 2);
    assert_int_equal(th_cmd_ll("EXISTS %s", k), 1);
    /* a retried copy of the second request claims nothing more */
    unsigned long long f3;
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "2", &f3, NULL, NULL), 1);
    assert_int_equal(f3, f2);
    assert_int_equal(th_script_release(name, "tokP", "w", f2), 1);
}

/* A cancel withdraws its own registration (or an earlier one), never a
 * later registration of the same process. */
static void test_cancel_names_its_registration(void **state)
{
    (void)state;
    char name[128], qk[300];
    th_name(name, sizeof name, "cancelname");
    key(qk, name, ":q");
    unsigned long long f;
    assert_int_equal(th_script_acquire(name, "tokH", "w", "30000", 0, "1", &f, NULL, NULL), 1);
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 1, "7", NULL, NULL, NULL), 0);
    const char *stale[] = { "n:", "tokP", "w", "6" };
    assert_int_equal(th_script_ll(DL_SCRIPT_CANCEL, name, 4, stale), 0);
    if (th_cmd_ll("ZSCORE %s tokP", qk) < 0)
        fail_msg("a cancel for registration 6 withdrew the later registration 7");
    const char *own[] = { "n:", "tokP", "w", "7" };
    assert_int_equal(th_script_ll(DL_SCRIPT_CANCEL, name, 4, own), 0);
    assert_int_equal(th_cmd_ll("ZSCORE %s tokP", qk), -1);
    assert_int_equal(th_script_release(name, "tokH", "w", f), 1);
}

/* The marks of a lingering unlock (shim/core/mark.c) act only on their hold. */
static void test_mark_names_its_hold(void **state)
{
    (void)state;
    char name[128], k[300], mk[300], f1s[24], f2s[24];
    th_name(name, sizeof name, "markname");
    key(k, name, "");
    key(mk, name, ":m");
    unsigned long long f1, f2;
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "1", &f1, NULL, NULL), 1);
    assert_int_equal(th_script_release(name, "tokP", "w", f1), 1);
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "2", &f2, NULL, NULL), 1);
    snprintf(f1s, sizeof f1s, "%llu", f1);
    snprintf(f2s, sizeof f2s, "%llu", f2);
    /* the first hold's linger mark with its TTL cut, arriving late */
    redisReply *r = th_cmd("EVAL %s 2 %s %s tokP %s l 100 1", dl_mark_lua, k, mk, f1s);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    long long pttl = th_cmd_ll("PTTL %s", k);
    redisReply *wh = th_cmd("HGET %s wh", mk);
    int traced = wh->type == REDIS_REPLY_STRING && strcmp(wh->str, "tokP") == 0;
    freeReplyObject(wh);
    if (pttl <= 100 || !traced)
        fail_msg("a linger mark sent for fence %s changed the later hold %s (pttl %lld, wh %s)",
                 f1s, f2s, pttl, traced ? "kept" : "removed");
    /* its own marks work */
    th_cmd_do("EVAL %s 2 %s %s tokP %s l 100 2", dl_mark_lua, k, mk, f2s);
    assert_true(th_cmd_ll("PTTL %s", k) <= 100);
    wh = th_cmd("HGET %s wh", mk);
    assert_true(wh->type != REDIS_REPLY_STRING || wh->len == 0);     /* no death if it lapses */
    freeReplyObject(wh);
    th_cmd_do("EVAL %s 2 %s %s tokP %s h 0 3", dl_mark_lua, k, mk, f2s);
    wh = th_cmd("HGET %s wh", mk);
    assert_int_equal(wh->type, REDIS_REPLY_STRING);
    assert_string_equal(wh->str, "tokP");
    freeReplyObject(wh);
    assert_int_equal(th_script_release(name, "tokP", "w", f2), 1);
}

/* The marks of one hold act in the order the process made them: a linger
 * mark written on a connection given up since, that runs after the
 * relock's mark (sent on the next connection), must neither clear the
 * death trace of the hold that is held again nor cut its TTL. */
static void test_late_mark_changes_nothing(void **state)
{
    (void)state;
    char name[128], k[300], mk[300], fs[24];
    th_name(name, sizeof name, "markorder");
    key(k, name, "");
    key(mk, name, ":m");
    unsigned long long f;
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "1", &f, NULL, NULL), 1);
    snprintf(fs, sizeof fs, "%llu", f);
    /* the relock's mark (number 8) runs first, the linger's (7) after it */
    assert_int_equal(th_cmd_ll("EVAL %s 2 %s %s tokP %s h 30000 8", dl_mark_lua, k, mk, fs), 1);
    assert_int_equal(th_cmd_ll("EVAL %s 2 %s %s tokP %s l 100 7", dl_mark_lua, k, mk, fs), 0);
    redisReply *wh = th_cmd("HGET %s wh", mk);
    int traced = wh->type == REDIS_REPLY_STRING && strcmp(wh->str, "tokP") == 0;
    freeReplyObject(wh);
    long long pttl = th_cmd_ll("PTTL %s", k);
    if (!traced || pttl <= 100)
        fail_msg("a linger mark that ran after the relock's mark changed the hold (trace %s, "
                 "pttl %lld): its holder's death would go unreported", traced ? "kept" : "cleared",
                 pttl);
    /* a later linger mark (9) still works */
    assert_int_equal(th_cmd_ll("EVAL %s 2 %s %s tokP %s l 100 9", dl_mark_lua, k, mk, fs), 1);
    assert_true(th_cmd_ll("PTTL %s", k) <= 100);
    assert_int_equal(th_script_release(name, "tokP", "w", f), 1);
}

/* A leftover read registration of the process (its withdrawal never ran)
 * must not be granted to the process's write request as its write lock. */
static void test_write_request_gets_write(void **state)
{
    (void)state;
    char name[128], k[300], rk[300];
    th_name(name, sizeof name, "modeleft");
    key(k, name, "");
    key(rk, name, ":r");
    unsigned long long f;
    /* W holds for 50 ms; P queues to read, and gives up (its cancel lost) */
    assert_int_equal(th_script_acquire(name, "tokW", "w", "50", 0, "1", &f, NULL, NULL), 1);
    assert_int_equal(th_script_acquire(name, "tokP", "r", "30000", 1, "1", NULL, NULL, NULL), 0);
    th_sleep_ms(120);                        /* W's hold lapses */
    int got = th_script_acquire(name, "tokP", "w", "30000", 1, "2", &f, NULL, NULL);
    redisReply *o = th_cmd("HGET %s owner", k);
    int writer = o->type == REDIS_REPLY_STRING && strcmp(o->str, "tokP") == 0;
    freeReplyObject(o);
    long long reader = th_cmd_ll("ZSCORE %s tokP", rk);
    if (got && !writer)
        fail_msg("a write request was reported acquired while Redis has the process as %s",
                 reader >= 0 ? "a reader only" : "no holder");
    assert_int_equal(got, 1);
    assert_int_equal(reader, -1);
    assert_int_equal(th_script_release(name, "tokP", "w", f), 1);

    /* the same with the lock still held when the write request comes:
     * the read registration is replaced, and the grant is a write hold */
    assert_int_equal(th_script_acquire(name, "tokW", "w", "30000", 0, "3", &f, NULL, NULL), 1);
    assert_int_equal(th_script_acquire(name, "tokP", "r", "30000", 1, "4", NULL, NULL, NULL), 0);
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 1, "5", NULL, NULL, NULL), 0);
    assert_int_equal(th_script_release(name, "tokW", "w", f), 1);
    o = th_cmd("HGET %s owner", k);
    writer = o->type == REDIS_REPLY_STRING && strcmp(o->str, "tokP") == 0;
    freeReplyObject(o);
    if (!writer)
        fail_msg("the write request's grant was not a write hold (reader: %lld)",
                 th_cmd_ll("ZSCORE %s tokP", rk));
    unsigned long long fp;
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 1, "6", &fp, NULL, NULL), 1);    /* "mine" */
    assert_int_equal(th_script_release(name, "tokP", "w", fp), 1);
}

/* End to end: an unlock whose release stalls (the connection is given up,
 * EIO), the process locks again on a new connection, then the stale
 * release runs: the new hold survives. */
static void test_stale_release_spares_new_hold(void **state)
{
    (void)state;
    enum { STALE_MS = 1500, IO_MS = 400 };
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char url[96], io[64];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", th_proxy_url(px));
    snprintf(io, sizeof io, "DISTLOCK_IO_TIMEOUT_MS=%d", IO_MS);
    const char *env[] = { url, io, NULL };
    char name[128], k[300];
    th_name(name, sizeof name, "stalerel");
    key(k, name, "");
    th_proc_t p, q;
    assert_int_equal(th_proc_start(&p, env), 0);
    assert_int_equal(th_proc_start(&q, NULL), 0);     /* directly on Redis */
    /* connected, scripts cached: the unlock is a single write */
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_LOCK, name, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_UNLOCK, name, 0, NULL), 0);
    th_res_t r1, r2, ru;
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_LOCK, name, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_FENCE, name, 0, &r1), 0);

    th_proxy_mode(px, TH_PROXY_SLOW, STALE_MS);
    int64_t t0 = th_now_ms();
    assert_int_equal(th_proc_opa_async(&p, TH_M_UNLOCK, name, 0), 0);
    assert_int_equal(th_proc_recv(&p, &ru, STALE_MS - 300), 0);
    print_message("unlock with a stalled server: %s after %lld ms (%s)\n", th_errname(ru.rc),
                  (long long)(ru.t_done_us - ru.t_start_us) / 1000, ru.err);
    assert_int_equal(ru.rc, EIO);
    /* what P sends from now on passes at once; the release stays queued */
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_LOCK, name, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_FENCE, name, 0, &r2), 0);
    if (th_now_ms() > t0 + STALE_MS - 200)
        fail_msg("the calls took too long for the stale release to arrive last");
    print_message("fences: first hold %llu, second %llu\n", (unsigned long long)r1.fence,
                  (unsigned long long)r2.fence);
    /* the stale release (and any copy resent on a connection given up too)
     * reaches Redis now */
    while (th_now_ms() < t0 + STALE_MS + 2 * IO_MS + 300)
        th_sleep_ms(20);
    long long held = th_cmd_ll("EXISTS %s", k);
    long long fence = th_cmd_ll("HGET %s fence", k);
    int qrc = th_proc_opa(&q, TH_M_TRYLOCK, name, 0, NULL);
    if (qrc == 0)
        th_proc_opa(&q, TH_M_UNLOCK, name, 0, NULL);
    if (!held || qrc != EBUSY)
        fail_msg("the stale release ended the hold taken after it: held %lld, another "
                 "process's trylock %s", held, th_errname(qrc));
    assert_int_equal(fence, (long long)r2.fence);
    TH_ASSERT_RC(th_proc_opa(&p, TH_M_UNLOCK, name, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&q, TH_M_TRYLOCK, name, 0, NULL), 0);
    TH_ASSERT_RC(th_proc_opa(&q, TH_M_UNLOCK, name, 0, NULL), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    assert_int_equal(th_proc_stop(&q), 0);
    th_proxy_stop(px);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_release_names_its_hold),
        TH_TEST(test_claim_renames_hold),
        TH_TEST(test_cancel_names_its_registration),
        TH_TEST(test_mark_names_its_hold),
        TH_TEST(test_late_mark_changes_nothing),
        TH_TEST(test_write_request_gets_write),
        TH_TEST(test_stale_release_spares_new_hold),
    };
    if (getenv("TH_FILTER"))
        cmocka_set_test_filter(getenv("TH_FILTER"));
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
