/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_calls.c - the typed calls of shim/script/calls.h against the real
 * scripts: each call written by its script's entry (call_<name>.c, through
 * dl_call_wire) runs as its lua/ header says, and its reply read by the
 * entry (dl_call_parse) says what Redis did.  The
 * calls are sent as script.c sends them (EVAL with the script's text),
 * without a connection of the library, so each case is one script at a
 * time and what Redis keeps is checked after it.
 */
#include "call_acquire.h"
#include "call_acquire_all.h"
#include "call_break.h"
#include "call_cancel.h"
#include "call_mark.h"
#include "call_release.h"
#include "call_renew.h"
#include "call_withdraw.h"
#include "harness.h"
#include "keys.h"
#include "script.h"

#include <stdio.h>
#include <string.h>

static const char *const suffix[DL_NKEYS] = { "", ":r", ":ri", ":q", ":w", ":m" };

typedef struct lockkeys {
    char buf[DL_NKEYS][300];
    const char *keys[DL_NKEYS];
    size_t keylen[DL_NKEYS];
    char chanprefix[300];
} lockkeys_t;

/* The caller token on lock name. */
static dl_caller_t caller(lockkeys_t *k, const char *name, const char *token)
{
    for (int i = 0; i < DL_NKEYS; i++) {
        th_key(k->buf[i], sizeof k->buf[i], name, suffix[i]);
        k->keys[i] = k->buf[i];
        k->keylen[i] = strlen(k->buf[i]);
    }
    snprintf(k->chanprefix, sizeof k->chanprefix, "%sn:", th_prefix());
    return (dl_caller_t){ k->keys, k->keylen, k->chanprefix, strlen(k->chanprefix), token };
}

/* Runs c as script.c would (with the script's text) and reads its reply. */
static void run(dl_call_t *c)
{
    const dl_script_t *sc = &dl_scripts[c->script];
    dl_call_wire(c);
    c->argv[0] = "EVAL";
    c->argvlen[0] = 4;
    c->argv[1] = sc->body;
    c->argvlen[1] = sc->len;
    redisReply *r = redisCommandArgv(th_redis(), c->argc, c->argv, c->argvlen);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", sc->name, r->str);
    dl_call_parse(c, r);
    freeReplyObject(r);
}

static long long hget_ll(const char *key, const char *field)
{
    redisReply *r = th_cmd("HGET %s %s", key, field);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return v;
}

static dl_acquire_args_t ask(char mode, int enqueue, uint64_t regid)
{
    return (dl_acquire_args_t){ .mode = mode, .lease_ms = 30000, .info = "h\t1\t1", .infolen = 5,
                                .enqueue = enqueue, .regid = regid, .waiter_ttl_ms = 2000,
                                .claim_ms = 2000 };
}

/* A hold taken, renewed while a waiter queues, handed over by its release;
 * the waiter's later hold ended once, then a resend of that release. */
static void test_acquire_renew_release(void **state)
{
    (void)state;
    char name[128];
    th_name(name, sizeof name, "calls");
    lockkeys_t ka, kb;
    dl_caller_t a = caller(&ka, name, "tokA"), b = caller(&kb, name, "tokB");
    dl_call_t c;

    dl_acquire_args_t aa = ask('w', 0, 1);
    dl_call_acquire(&c, &a, &aa);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).got, 1);
    uint64_t fa = DL_REPLY(&c, acquire).fence;
    assert_true(fa >= 1);
    assert_int_equal((long long)fa, hget_ll(ka.keys[0], "fence"));
    assert_int_equal(DL_REPLY(&c, acquire).dead, 0);
    assert_int_equal(DL_REPLY(&c, acquire).claimed, 0);
    assert_int_equal(DL_REPLY(&c, acquire).waiters, 0);

    /* busy, not queued: the holder's lease left */
    dl_acquire_args_t ab = ask('w', 0, 1);
    dl_call_acquire(&c, &b, &ab);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).got, 0);
    assert_true(DL_REPLY(&c, acquire).pttl_ms > 0 && DL_REPLY(&c, acquire).pttl_ms <= 30000);
    assert_int_equal(th_cmd_ll("ZCARD %s", kb.keys[3]), 0);

    /* busy, queued (registration 2) */
    ab = ask('w', 1, 2);
    dl_call_acquire(&c, &b, &ab);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).got, 0);
    assert_int_equal(th_cmd_ll("ZCARD %s", kb.keys[3]), 1);

    /* renewed, and one waiter queued */
    dl_renew_args_t ra = { .mode = 'w', .lease_ms = 30000, .fence = fa };
    dl_call_renew(&c, &a, &ra);
    run(&c);
    assert_int_equal(DL_REPLY(&c, renew).held, 1);
    assert_int_equal(DL_REPLY(&c, renew).queued, 1);
    /* a renewal naming another hold renews nothing */
    ra.fence = fa + 100;
    dl_call_renew(&c, &a, &ra);
    run(&c);
    assert_int_equal(DL_REPLY(&c, renew).held, 0);

    /* released: the waiter holds it now */
    dl_release_args_t rel = { .mode = 'w', .fence = fa, .rid = 1 };
    dl_call_release(&c, &a, &rel);
    run(&c);
    assert_int_equal(DL_REPLY(&c, release).result, 1);
    redisReply *owner = th_cmd("HGET %s owner", ka.keys[0]);
    assert_string_equal(owner->str, "tokB");
    freeReplyObject(owner);
    /* the same release again (a resend): released already */
    dl_call_release(&c, &a, &rel);
    run(&c);
    assert_int_equal(DL_REPLY(&c, release).result, 2);

    /* B asks again: the grant is its own ("mine", claimed) */
    ab = ask('w', 1, 3);
    dl_call_acquire(&c, &b, &ab);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).got, 1);
    assert_int_equal(DL_REPLY(&c, acquire).claimed, 1);
    uint64_t fb = DL_REPLY(&c, acquire).fence;
    assert_true(fb > fa);
    rel = (dl_release_args_t){ .mode = 'w', .fence = fb, .rid = 0 };
    dl_call_release(&c, &b, &rel);
    run(&c);
    assert_int_equal(DL_REPLY(&c, release).result, 1);
    assert_int_equal(th_cmd_ll("EXISTS %s", kb.keys[0]), 0);
    /* a hold nobody has: held nothing */
    rel.fence = fb + 100;
    dl_call_release(&c, &a, &rel);
    run(&c);
    assert_int_equal(DL_REPLY(&c, release).result, 0);
}

/* A queued wait cancelled, and one granted before its cancel; a request
 * withdrawn; a stuck lock broken; a read hold. */
static void test_cancel_withdraw_break(void **state)
{
    (void)state;
    char name[128];
    th_name(name, sizeof name, "calls2");
    lockkeys_t ka, kb;
    dl_caller_t a = caller(&ka, name, "tokA"), b = caller(&kb, name, "tokB");
    dl_call_t c;

    dl_acquire_args_t aa = ask('w', 0, 1), ab = ask('w', 1, 5);
    dl_call_acquire(&c, &a, &aa);
    run(&c);
    uint64_t fa = DL_REPLY(&c, acquire).fence;
    dl_call_acquire(&c, &b, &ab);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).got, 0);

    /* B gives up: withdrawn */
    dl_cancel_args_t cb = { .mode = 'w', .regid = 5 };
    dl_call_cancel(&c, &b, &cb);
    run(&c);
    assert_int_equal(DL_REPLY(&c, cancel).granted, 0);
    assert_int_equal(th_cmd_ll("ZCARD %s", kb.keys[3]), 0);

    /* B queues again, A releases: B's cancel finds it granted */
    ab.regid = 6;
    dl_call_acquire(&c, &b, &ab);
    run(&c);
    dl_release_args_t rel = { .mode = 'w', .fence = fa, .rid = 1 };
    dl_call_release(&c, &a, &rel);
    run(&c);
    assert_int_equal(DL_REPLY(&c, release).result, 1);
    cb.regid = 6;
    dl_call_cancel(&c, &b, &cb);
    run(&c);
    assert_int_equal(DL_REPLY(&c, cancel).granted, 1);
    assert_true(DL_REPLY(&c, cancel).fence > fa);
    assert_int_equal((long long)DL_REPLY(&c, cancel).fence, hget_ll(kb.keys[0], "fence"));
    assert_int_equal(DL_REPLY(&c, cancel).dead, 0);

    /* withdrawn by its registration id: the hold taken for it goes */
    dl_withdraw_args_t wb = { .mode = 'w', .regid = 6 };
    dl_call_withdraw(&c, &b, &wb);
    run(&c);
    assert_int_equal(DL_REPLY(&c, withdraw).result, 1);
    assert_int_equal(th_cmd_ll("EXISTS %s", kb.keys[0]), 0);
    dl_call_withdraw(&c, &b, &wb);
    run(&c);
    assert_int_equal(DL_REPLY(&c, withdraw).result, 0);

    /* two read holds, broken: both removed */
    aa = ask('r', 0, 7);
    ab = ask('r', 0, 8);
    dl_call_acquire(&c, &a, &aa);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).got, 1);
    dl_call_acquire(&c, &b, &ab);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).got, 1);
    assert_int_equal(th_cmd_ll("ZCARD %s", ka.keys[1]), 2);
    dl_call_break(&c, &a);
    run(&c);
    assert_int_equal(DL_REPLY(&c, brk).removed, 2);
    assert_int_equal(th_cmd_ll("ZCARD %s", ka.keys[1]), 0);
}

/* The linger marks: lingering clears the death trace and cuts the TTL,
 * held again sets the trace and restores the lease; a mark naming another
 * hold changes nothing. */
static void test_mark(void **state)
{
    (void)state;
    char name[128];
    th_name(name, sizeof name, "calls3");
    lockkeys_t ka;
    dl_caller_t a = caller(&ka, name, "tokA");
    dl_call_t c;
    dl_acquire_args_t aa = ask('w', 0, 1);
    dl_call_acquire(&c, &a, &aa);
    run(&c);
    uint64_t fa = DL_REPLY(&c, acquire).fence;

    dl_mark_args_t m = { .fence = fa, .lingering = 1, .ms = 2000, .seq = 1 };
    dl_call_mark(&c, &a, &m);
    run(&c);
    assert_int_equal(DL_REPLY(&c, mark).marked, 1);
    redisReply *wh = th_cmd("HGET %s wh", ka.keys[5]);
    assert_string_equal(wh->str, "");
    freeReplyObject(wh);
    assert_true(th_cmd_ll("PTTL %s", ka.keys[0]) <= 2000);

    m = (dl_mark_args_t){ .fence = fa, .lingering = 0, .ms = 30000, .seq = 2 };
    dl_call_mark(&c, &a, &m);
    run(&c);
    assert_int_equal(DL_REPLY(&c, mark).marked, 1);
    wh = th_cmd("HGET %s wh", ka.keys[5]);
    assert_string_equal(wh->str, "tokA");
    freeReplyObject(wh);
    assert_true(th_cmd_ll("PTTL %s", ka.keys[0]) > 2000);

    m = (dl_mark_args_t){ .fence = fa + 1, .lingering = 1, .ms = 2000, .seq = 3 };
    dl_call_mark(&c, &a, &m);
    run(&c);
    assert_int_equal(DL_REPLY(&c, mark).marked, 0);
    assert_true(th_cmd_ll("PTTL %s", ka.keys[0]) > 2000);
}

static char *hget_str(const char *key, const char *field, char *buf, size_t size)
{
    redisReply *r = th_cmd("HGET %s %s", key, field);
    snprintf(buf, size, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return buf;
}

/* A's write hold, which then lapses (its key goes, the meta hash's trace
 * stays): A's fence. */
static uint64_t lapsed_writer(const dl_caller_t *a, const lockkeys_t *ka, uint64_t regid)
{
    dl_call_t c;
    dl_acquire_args_t aa = ask('w', 0, regid);
    dl_call_acquire(&c, a, &aa);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).got, 1);
    th_cmd_do("DEL %s", ka->keys[0]);
    return DL_REPLY(&c, acquire).fence;
}

/* A hold taken over a lapse consumes its death trace; withdrawn (its
 * caller never heard of it: EIO, or a quorum that did not count), the
 * trace goes back, so the lapse is still reported to the next holder.  A
 * writer's and a reader's alike. */
static void test_withdraw_keeps_death_trace(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        char mode = k ? 'r' : 'w', name[128], wh[64];
        th_name(name, sizeof name, mode == 'w' ? "callsdw" : "callsdr");
        lockkeys_t ka, kb, kc;
        dl_caller_t a = caller(&ka, name, "tokA"), b = caller(&kb, name, "tokB"),
                    c3 = caller(&kc, name, "tokC");
        dl_call_t c;
        lapsed_writer(&a, &ka, 1);
        assert_string_equal(hget_str(ka.keys[5], "wh", wh, sizeof wh), "tokA");
        dl_acquire_args_t ab = ask(mode, 0, 7);
        dl_call_acquire(&c, &b, &ab);
        run(&c);
        assert_int_equal(DL_REPLY(&c, acquire).got, 1);
        assert_int_equal(DL_REPLY(&c, acquire).dead, 1);
        dl_withdraw_args_t wb = { .mode = mode, .regid = 7 };
        dl_call_withdraw(&c, &b, &wb);
        run(&c);
        assert_int_equal(DL_REPLY(&c, withdraw).result, 1);
        assert_string_equal(hget_str(ka.keys[5], "wh", wh, sizeof wh), "tokA");
        dl_acquire_args_t ac = ask('w', 0, 9);
        dl_call_acquire(&c, &c3, &ac);
        run(&c);
        assert_int_equal(DL_REPLY(&c, acquire).got, 1);
        if (!DL_REPLY(&c, acquire).dead)
            fail_msg("%c: the lapse a withdrawn hold had consumed was never reported", mode);
    }
}

/* redlock: a lapsed holder's release names its hold by registration id,
 * whatever fence it sends (each server gave the hold its own, and the
 * caller kept the largest): its trace goes there too.  Another release
 * with the same id but from another process leaves the trace alone. */
static void test_release_clears_trace_by_rid(void **state)
{
    (void)state;
    char name[128], wh[64];
    th_name(name, sizeof name, "callsrid");
    lockkeys_t ka, kb;
    dl_caller_t a = caller(&ka, name, "tokA"), b = caller(&kb, name, "tokB");
    dl_call_t c;
    uint64_t fa = lapsed_writer(&a, &ka, 4);
    dl_release_args_t rb = { .mode = 'w', .fence = fa + 1000, .rid = 4 };
    dl_call_release(&c, &b, &rb);
    run(&c);
    assert_int_equal(DL_REPLY(&c, release).result, 0);
    assert_string_equal(hget_str(ka.keys[5], "wh", wh, sizeof wh), "tokA");
    dl_release_args_t ra = { .mode = 'w', .fence = fa + 1000, .rid = 4 };
    dl_call_release(&c, &a, &ra);
    run(&c);
    assert_int_equal(DL_REPLY(&c, release).result, 0);                 /* ENOLCK */
    assert_string_equal(hget_str(ka.keys[5], "wh", wh, sizeof wh), "");
    dl_acquire_args_t ab = ask('w', 0, 5);
    dl_call_acquire(&c, &b, &ab);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).got, 1);
    assert_int_equal(DL_REPLY(&c, acquire).dead, 0);
}

/* redlock (release's 'o', withdraw's ARGV[5]): where the caller holds
 * nothing, a death trace older than its hold (a lower fence) goes; one
 * taken, or a break made, after it stays.  And its fence raises the meta
 * hash's, so that the next hold's fence here is above it. */
static void test_quorum_release_older_trace_and_fence(void **state)
{
    (void)state;
    char name[128], wh[64];
    th_name(name, sizeof name, "callsold");
    lockkeys_t ka, kb;
    dl_caller_t a = caller(&ka, name, "tokA"), b = caller(&kb, name, "tokB");
    dl_call_t c;
    uint64_t fa = lapsed_writer(&a, &ka, 1);
    /* B's hold (from other servers) is older than A's trace: it stays. */
    dl_release_args_t rb = { .mode = 'w', .fence = fa - 1, .rid = 3, .redlock = 1 };
    dl_call_release(&c, &b, &rb);
    run(&c);
    assert_int_equal(DL_REPLY(&c, release).result, 0);
    assert_string_equal(hget_str(ka.keys[5], "wh", wh, sizeof wh), "tokA");
    /* Younger: A's lapse was reported to B, or never counted: it goes;
     * and the meta fence is raised to B's. */
    rb.fence = fa + 5000000;
    dl_call_release(&c, &b, &rb);
    run(&c);
    assert_string_equal(hget_str(ka.keys[5], "wh", wh, sizeof wh), "");
    assert_int_equal(hget_ll(ka.keys[5], "fence"), (long long)rb.fence);
    dl_acquire_args_t ab = ask('w', 0, 4);
    dl_call_acquire(&c, &b, &ab);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).dead, 0);
    assert_true(DL_REPLY(&c, acquire).fence > rb.fence);
    uint64_t fb = DL_REPLY(&c, acquire).fence;
    /* A break after B's hold was taken: a release of an older hold (read
     * or write, held here or not) leaves its trace. */
    dl_call_break(&c, &b);
    run(&c);
    dl_release_args_t ra = { .mode = 'r', .fence = fb - 1, .rid = 2, .redlock = 1 };
    dl_call_release(&c, &a, &ra);
    run(&c);
    rb = (dl_release_args_t){ .mode = 'w', .fence = fb, .rid = 4, .redlock = 1 };
    dl_call_release(&c, &b, &rb);
    run(&c);
    assert_int_equal(DL_REPLY(&c, release).result, 0);
    assert_string_equal(hget_str(ka.keys[5], "wh", wh, sizeof wh), "broken");
    /* A withdrawal for an acquisition that counted elsewhere (fence far
     * ahead): the break is older, and was reported to it. */
    dl_withdraw_args_t wb = { .mode = 'w', .regid = 5, .older = fb + 60000000 };
    dl_call_withdraw(&c, &b, &wb);
    run(&c);
    assert_int_equal(DL_REPLY(&c, withdraw).result, 0);
    assert_string_equal(hget_str(ka.keys[5], "wh", wh, sizeof wh), "");
}

/* Runs c as cluster.c sends a lock's script (shim/conn/cluster.c): declared
 * keys `form` 1 (the lock's first key only: under ASK, on the node
 * importing the slot) or 7 (the six and the guard, which never exists). */
static void run_form(dl_call_t *c, int form)
{
    const dl_script_t *sc = &dl_scripts[c->script];
    dl_call_wire(c);
    const char *argv[3 + DL_NKEYS + 1 + DL_MAX_ARGS];
    size_t len[3 + DL_NKEYS + 1 + DL_MAX_ARGS];
    char guard[400];
    int a = 0;
    argv[a] = "EVAL", len[a++] = 4;
    argv[a] = sc->body, len[a++] = sc->len;
    argv[a] = form == 1 ? "1" : "7", len[a++] = 1;
    for (int k = 0; k < (form == 1 ? 1 : DL_NKEYS); k++)
        argv[a] = c->argv[3 + k], len[a++] = c->argvlen[3 + k];
    if (form == 7) {
        snprintf(guard, sizeof guard, "%.*s%s", (int)c->argvlen[3], c->argv[3], DL_KEY_GUARD);
        argv[a] = guard, len[a++] = strlen(guard);
    }
    for (int i = 3 + DL_NKEYS; i < c->argc; i++)
        argv[a] = c->argv[i], len[a++] = c->argvlen[i];
    redisReply *r = redisCommandArgv(th_redis(), a, argv, len);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s (%d keys): %s", sc->name, form, r->str);
    dl_call_parse(c, r);
    freeReplyObject(r);
}

/* The scripts with only the lock's first key declared find the other five
 * by their suffixes, and ignore a seventh: a waiter queued, a hold handed
 * over, renewed, released, broken, its trace in the meta hash, each key
 * where the six-key form puts it; and the guard is never created. */
static void test_cluster_forms(void **state)
{
    (void)state;
    for (int form = 1; form <= 7; form += 6) {
        char name[128], wh[64];
        th_name(name, sizeof name, form == 1 ? "callsform1" : "callsform7");
        lockkeys_t ka, kb;
        dl_caller_t a = caller(&ka, name, "tokA"), b = caller(&kb, name, "tokB");
        dl_call_t c;
        dl_acquire_args_t aa = ask('w', 0, 1), ab = ask('w', 1, 2);
        dl_call_acquire(&c, &a, &aa);
        run_form(&c, form);
        assert_int_equal(DL_REPLY(&c, acquire).got, 1);
        uint64_t fa = DL_REPLY(&c, acquire).fence;
        assert_int_equal((long long)fa, hget_ll(ka.keys[5], "fence"));
        dl_call_acquire(&c, &b, &ab);
        run_form(&c, form);
        assert_int_equal(DL_REPLY(&c, acquire).got, 0);
        assert_int_equal(th_cmd_ll("ZCARD %s", kb.keys[3]), 1);
        assert_int_equal(th_cmd_ll("HLEN %s", kb.keys[4]), 1);
        dl_renew_args_t rn = { .mode = 'w', .lease_ms = 30000, .fence = fa };
        dl_call_renew(&c, &a, &rn);
        run_form(&c, form);
        assert_int_equal(DL_REPLY(&c, renew).held, 1);
        assert_int_equal(DL_REPLY(&c, renew).queued, 1);
        dl_release_args_t rel = { .mode = 'w', .fence = fa, .rid = 1 };
        dl_call_release(&c, &a, &rel);
        run_form(&c, form);
        assert_int_equal(DL_REPLY(&c, release).result, 1);
        /* handed to B by push: traced as pending until B claims it */
        assert_string_equal(hget_str(ka.keys[5], "wh", wh, sizeof wh), "g:tokB");
        dl_acquire_args_t ra = ask('r', 0, 3);
        dl_call_acquire(&c, &a, &ra);
        run_form(&c, form);
        assert_int_equal(DL_REPLY(&c, acquire).got, 0);
        dl_call_break(&c, &a);
        run_form(&c, form);
        assert_int_equal(DL_REPLY(&c, brk).removed, 1);
        dl_call_acquire(&c, &a, &ra);
        run_form(&c, form);
        assert_int_equal(DL_REPLY(&c, acquire).got, 1);
        assert_int_equal(DL_REPLY(&c, acquire).dead, 1);
        assert_int_equal(th_cmd_ll("ZCARD %s", ka.keys[1]), 1);
        assert_int_equal(th_cmd_ll("HLEN %s", ka.keys[2]), 1);
        char gk[400];
        snprintf(gk, sizeof gk, "%s%s", ka.keys[0], DL_KEY_GUARD);
        assert_int_equal(th_cmd_ll("EXISTS %s", gk), 0);
    }
}

/* acquire_all.lua (lock-all): N locks taken in one call, all or none.  Its
 * caller's locks, their list and its items. */
typedef struct allcall {
    lockkeys_t k[4];
    dl_all_lock_t locks[4];
    char list[2048];
    dl_all_item_t out[4];
    dl_acquire_all_args_t args;
} allcall_t;

static dl_caller_t all_of(allcall_t *x, char names[][128], int n, const char *token, uint64_t rid)
{
    dl_caller_t who = caller(&x->k[0], names[0], token);
    for (int i = 0; i < n; i++) {
        caller(&x->k[i], names[i], token);
        x->locks[i] = (dl_all_lock_t){ x->k[i].keys, x->k[i].keylen, 30000 };
    }
    size_t len = dl_acquire_all_list(x->locks, n, x->list);
    x->args = (dl_acquire_all_args_t){ .n = n, .locks = x->locks, .list = x->list,
                                       .listlen = len, .info = "h\t1\t1", .infolen = 5,
                                       .regid = rid, .out = x->out };
    return who;
}

/* Free: every lock taken, each with its own fence and hold (rid), one
 * call.  One busy, or queued for: nothing taken, and it says which.  The
 * same call resent: the same holds, claimed.  A lapse: that lock's
 * ownerdead, and a withdrawal by the registration id gives its trace back.
 * Only the first key declared (a cluster's ASK): refused. */
static void test_acquire_all(void **state)
{
    (void)state;
    char names[4][128], base[64], wh[64];
    th_name(base, sizeof base, "callsall");
    for (int i = 0; i < 4; i++)
        snprintf(names[i], sizeof names[i], "%s}%c", base, 'a' + i);
    allcall_t x;
    dl_caller_t a = all_of(&x, names, 3, "tokA", 5);
    dl_call_t c;
    dl_call_acquire_all(&c, &a, &x.args);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire_all).got, 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal((long long)x.out[i].fence, hget_ll(x.k[i].keys[0], "fence"));
        assert_int_equal(hget_ll(x.k[i].keys[0], "rid"), 5);
        assert_int_equal(x.out[i].dead, 0);
        assert_int_equal(x.out[i].claimed, 0);
        assert_true(th_cmd_ll("PTTL %s", x.k[i].keys[0]) > 29000);
    }
    uint64_t f1 = x.out[1].fence;
    /* resent (the first copy ran): the same holds, claimed */
    dl_call_acquire_all(&c, &a, &x.args);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire_all).got, 1);
    assert_int_equal(x.out[1].claimed, 1);
    assert_int_equal((long long)x.out[1].fence, (long long)f1);

    /* B asks for {d, b}: b is A's: busy at b (index 1), d untouched */
    allcall_t y;
    char nb[2][128];
    snprintf(nb[0], sizeof nb[0], "%s", names[3]);
    snprintf(nb[1], sizeof nb[1], "%s", names[1]);
    dl_caller_t b = all_of(&y, nb, 2, "tokB", 7);
    dl_call_acquire_all(&c, &b, &y.args);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire_all).got, 0);
    assert_int_equal(DL_REPLY(&c, acquire_all).busy, 1);
    assert_true(DL_REPLY(&c, acquire_all).pttl_ms > 0);
    assert_int_equal(th_cmd_ll("EXISTS %s", y.k[0].keys[0]), 0);
    assert_int_equal(th_cmd_ll("EXISTS %s", y.k[0].keys[5]), 0);

    /* a waiter queued for d (behind a holder C): busy even once d is free */
    lockkeys_t kc, kw;
    dl_caller_t cc = caller(&kc, names[3], "tokC"), cw = caller(&kw, names[3], "tokW");
    dl_acquire_args_t ac = ask('w', 0, 1), aw = ask('w', 1, 1);
    dl_call_acquire(&c, &cc, &ac);
    run(&c);
    dl_call_acquire(&c, &cw, &aw);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire).got, 0);
    th_cmd_do("DEL %s", kc.keys[0]);     /* C's lease ran out; W still queued */
    snprintf(nb[1], sizeof nb[1], "%s", names[0]);
    allcall_t z;
    dl_caller_t b2 = all_of(&z, nb, 2, "tokB", 8);
    dl_call_acquire_all(&c, &b2, &z.args);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire_all).got, 0);
    assert_int_equal(DL_REPLY(&c, acquire_all).busy, 0);
    assert_int_equal(th_cmd_ll("EXISTS %s", kc.keys[0]), 0);     /* nobody jumped W */

    /* a lapse: d's trace names C.  W leaves; B takes {e, d}: d's lapse */
    dl_withdraw_args_t ww = { .mode = 'w', .regid = 1 };
    dl_call_withdraw(&c, &cw, &ww);
    run(&c);
    char ne[2][128];
    snprintf(ne[0], sizeof ne[0], "%s}e", base);
    snprintf(ne[1], sizeof ne[1], "%s", names[3]);
    allcall_t e;
    dl_caller_t be = all_of(&e, ne, 2, "tokB", 9);
    dl_call_acquire_all(&c, &be, &e.args);
    run(&c);
    assert_int_equal(DL_REPLY(&c, acquire_all).got, 1);
    assert_int_equal(e.out[0].dead, 0);
    assert_int_equal(e.out[1].dead, 1);
    assert_string_equal(hget_str(e.k[1].keys[5], "wh", wh, sizeof wh), "tokB");
    /* given back (the lock-all could not keep them): the trace returns */
    for (int i = 0; i < 2; i++) {
        dl_caller_t wi = caller(&e.k[i], ne[i], "tokB");
        dl_withdraw_args_t wb = { .mode = 'w', .regid = 9 };
        dl_call_withdraw(&c, &wi, &wb);
        run(&c);
        assert_int_equal(DL_REPLY(&c, withdraw).result, 1);
    }
    assert_string_equal(hget_str(e.k[1].keys[5], "wh", wh, sizeof wh), "tokC");

    /* only the first key declared: refused, nothing taken */
    allcall_t f;
    dl_caller_t bf = all_of(&f, ne, 2, "tokB", 10);
    dl_call_acquire_all(&c, &bf, &f.args);
    run_form(&c, 1);
    assert_int_equal(DL_REPLY(&c, acquire_all).got, 2);
    assert_int_equal(th_cmd_ll("EXISTS %s", f.k[0].keys[0]), 0);
    /* the six and the guard: as the six */
    run_form(&c, 7);
    assert_int_equal(DL_REPLY(&c, acquire_all).got, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_acquire_renew_release),
        TH_TEST(test_cancel_withdraw_break),
        TH_TEST(test_mark),
        TH_TEST(test_withdraw_keeps_death_trace),
        TH_TEST(test_release_clears_trace_by_rid),
        TH_TEST(test_quorum_release_older_trace_and_fence),
        TH_TEST(test_cluster_forms),
        TH_TEST(test_acquire_all),
    };
    if (getenv("TH_FILTER"))
        cmocka_set_test_filter(getenv("TH_FILTER"));
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
