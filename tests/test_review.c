/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_review.c - holes found reviewing the protocol of hold and
 * registration ids (fences naming holds, "mine" claims, validity, posted
 * marks and renewals).
 *
 * Most cases drive the scripts directly, as the library sends them, and
 * check what Redis keeps: the sequences need a stall (a command written on
 * a connection the process gave up reaches Redis late), which there is
 * simply running the late command last.  One goes through the library and
 * a proxy that loses pushes and slows the connection.
 */
#include "dl_script_list.h"
#include "harness.h"
#include "harness_proxy.h"
#include "mutex.h"
#include "rwlock.h"
#include "harness_script.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

extern const char dl_mark_lua[];    /* shim/core/mark.c */

static char *key(char *buf, const char *name, const char *sfx)
{
    return th_key(buf, 300, name, sfx);
}

/* The meta hash's wh: 1 if it names token. */
static int traced(const char *mk, const char *token)
{
    redisReply *wh = th_cmd("HGET %s wh", mk);
    int is = wh->type == REDIS_REPLY_STRING && strcmp(wh->str, token) == 0;
    freeReplyObject(wh);
    return is;
}

/* A lingering unlock's mark clears the death trace (wh = ''); the release
 * that would end the lingering hold is written on a connection given up
 * during a stall, and the process's next lock call, on a new connection,
 * runs first and claims the hold ("mine").  That hold is held again: if the
 * process now dies, its lapse must give the next holder EOWNERDEAD, as a
 * relock of the linger (the 'h' mark) would have set it to. */
static void test_claim_of_lingering_hold_sets_death_trace(void **state)
{
    (void)state;
    char name[128], k[300], mk[300], f1s[24];
    th_name(name, sizeof name, "claimtrace");
    key(k, name, "");
    key(mk, name, ":m");
    unsigned long long f1, f2;
    int dead = 0, claimed = 0;
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "1", &f1, &dead, NULL), 1);
    snprintf(f1s, sizeof f1s, "%llu", f1);
    /* the unlock lingers: the mark cuts the TTL and clears the trace */
    assert_int_equal(th_cmd_ll("EVAL %s 2 %s %s tokP %s l 2000 1", dl_mark_lua, k, mk, f1s), 1);
    assert_false(traced(mk, "tokP"));
    /* the linger's release is stuck on a dead connection; the next lock call
     * finds the hold its own and claims it */
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "2", &f2, &dead, &claimed), 1);
    assert_true(claimed);
    assert_true(f2 > f1);
    if (!traced(mk, "tokP"))
        fail_msg("the hold claimed by a later lock call (fence %llu) is held again, but the "
                 "trace still says it lingers: its holder's death would go unreported", f2);
    /* the process dies holding it: the hold lapses */
    th_cmd_do("DEL %s", k);
    assert_int_equal(th_script_acquire(name, "tokQ", "w", "30000", 0, "1", NULL, &dead, NULL), 1);
    if (!dead)
        fail_msg("the hold claimed by fence %llu lapsed without unlock, yet the next holder "
                 "was not told EOWNERDEAD", f2);
}

/* A fixed lease is not renewed: the lock call that claims a hold found its
 * own ("mine": its release still on its way from a connection given up)
 * must leave it with the lease it asked for, not with what remained of the
 * old hold's TTL (perhaps a few ms: another process would then get the lock
 * while this one believes it has a whole lease).  Writers and readers. */
static void test_claim_restores_lease(void **state)
{
    (void)state;
    char name[128], k[300], rk[300];
    th_name(name, sizeof name, "claimlease");
    key(k, name, "");
    key(rk, name, ":r");
    unsigned long long f1, f2;
    int claimed = 0;
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "1", &f1, NULL, NULL), 1);
    th_cmd_do("PEXPIRE %s 200", k);          /* 29.8 s of the lease have passed */
    assert_int_equal(th_script_acquire(name, "tokP", "w", "30000", 0, "2", &f2, NULL, &claimed), 1);
    assert_true(claimed);
    long long pttl = th_cmd_ll("PTTL %s", k);
    if (pttl <= 200)
        fail_msg("a write hold claimed for a lease of 30000 ms lives %lld ms", pttl);
    th_cmd_do("DEL %s", k);

    assert_int_equal(th_script_acquire(name, "tokP", "r", "30000", 0, "3", &f1, NULL, NULL), 1);
    long long now = th_cmd_ll("EVAL %s 0",
                              "local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000)");
    th_cmd_do("ZADD %s %lld tokP", rk, now + 200);
    assert_int_equal(th_script_acquire(name, "tokP", "r", "30000", 0, "4", &f2, NULL, &claimed), 1);
    assert_true(claimed);
    long long until = th_cmd_ll("ZSCORE %s tokP", rk);
    if (until <= now + 200)
        fail_msg("a read hold claimed for a lease of 30000 ms lives %lld ms", until - now);
}

/* ------------------------------------------------------------------------
 * A read hold found the process's own ("mine": its grant's push was lost)
 * has no known validity until the watchdog's renewal, sent at once, comes
 * back.  A second reader thread that asks meanwhile waits; once the
 * renewal confirms the hold it must be let in, as readers of a pthread
 * rwlock are: a program whose readers wait for each other (a barrier
 * inside the read section) would otherwise never get past it. */
enum { JOIN_WAITING = 1, JOIN_RESULT };

struct join_arg {
    char name[128], url[200];
    int up, down;
};

static dist_rwlock_t join_rw;
static volatile int join_a_has, join_b_has, join_a_done;

static void *join_b(void *unused)
{
    (void)unused;
    int rc = dist_rwlock_rdlock(&join_rw);
    join_b_has = rc == 0 ? 1 : -1;
    if (rc == 0)
        dist_rwlock_unlock(&join_rw);
    return NULL;
}

/* Reads until told to stop; holds the lock meanwhile. */
static void *join_a(void *unused)
{
    (void)unused;
    int rc = dist_rwlock_rdlock(&join_rw);
    join_a_has = rc == 0 ? 1 : -1;
    while (rc == 0 && !join_a_done)
        th_sleep_ms(5);
    if (rc == 0 && dist_rwlock_unlock(&join_rw) != 0)
        join_a_has = -2;
    return NULL;
}

static int join_child(void *p)
{
    const struct join_arg *a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    TH_CHECK_RC(dist_rwlock_init(&join_rw, a->name, NULL), 0);
    pthread_t ta, tb;
    TH_CHECK(pthread_create(&ta, NULL, join_a, NULL) == 0);
    th_sleep_ms(300);                     /* A queues behind the writer */
    th_send(a->up, JOIN_WAITING, 0, 0, 0);
    while (!join_a_has)                   /* granted: found "mine" after the lost push */
        th_sleep_ms(1);
    TH_CHECK(join_a_has == 1);
    TH_CHECK(pthread_create(&tb, NULL, join_b, NULL) == 0);
    /* A holds the read lock and waits for B to read too (the renewal takes
     * two slowed trips, about 0.2 s) */
    int64_t until = th_now_ms() + 5000;
    while (!join_b_has && th_now_ms() < until)
        th_sleep_ms(5);
    int joined = join_b_has;
    th_send(a->up, JOIN_RESULT, joined, 0, 0);
    join_a_done = 1;
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    TH_CHECK(join_a_has == 1);
    TH_CHECK(join_b_has == 1);
    TH_CHECK_RC(dist_rwlock_destroy(&join_rw), 0);
    return 0;
}

static void test_reader_joins_once_claimed_hold_confirmed(void **state)
{
    (void)state;
    static struct join_arg a;
    th_name(a.name, sizeof a.name, "joinmine");
    th_proxy_t *px = th_proxy_url_for(a.url, sizeof a.url);
    th_steered_t c;

    th_proc_t o;                          /* the writer, straight to Redis */
    assert_int_equal(th_proc_start(&o, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&o, TH_RW_WRLOCK, a.name), 0);
    th_steer(&c, join_child, &a, &a.up, &a.down);
    th_msg_t msg;
    th_steered_expect(&c, JOIN_WAITING, &msg, 20000);
    /* the grant's push is lost; the reader finds the hold its own by asking
     * again, and the watchdog's renewal of it is slow */
    th_proxy_mute_pushes(px, 1);
    th_proxy_mode(px, TH_PROXY_SLOW, 100);
    TH_ASSERT_RC(th_proc_op(&o, TH_RW_UNLOCK, a.name), 0);
    th_steered_expect(&c, JOIN_RESULT, &msg, 20000);
    if (msg.a != 1)
        fail_msg("a second reader thread was kept out of the process's read hold (claimed "
                 "after a lost push) for 5 s after the watchdog confirmed it: it would get in "
                 "only once the first reader unlocked");
    th_steered_end(&c);
    assert_int_equal(th_proc_stop(&o), 0);
    th_proxy_stop(px);
}

/* A stale trylock (written on a connection given up, run late) finds the
 * lock free and the queue headed by a later registration of its own
 * process, in the same mode.  Serving the queue grants that registration
 * (pushed: the waiter believes it holds, fence F); the stale request must
 * not then take a read hold of its own on top (same token: it overwrote the
 * granted reader's record, and the withdrawal behind the stale request then
 * ended the hold the waiter had been told it had).  Found by protofuzz,
 * seed 7103: A1rq0,N12,R10,A1rt1,S1.168,A2wq0,A1rq0,Z120,S1.204,D1. */
static void test_stale_request_spares_grant_to_later_registration(void **state)
{
    (void)state;
    char name[128], rk[300], k[300];
    th_name(name, sizeof name, "stalegrant");
    key(k, name, "");
    key(rk, name, ":r");
    unsigned long long fw;
    /* another process writes; the process queues a read request, id 3 */
    assert_int_equal(th_script_acquire(name, "tokQ", "w", "30000", 0, "1", &fw, NULL, NULL), 1);
    const char *q3[] = { "n:", "tokP", "r", "30000", "host\t1\t1", "1", "3", "2000", "2000" };
    redisReply *r = th_script(DL_SCRIPT_ACQUIRE, name, 9, q3);
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);
    /* the writer's hold lapses */
    th_cmd_do("DEL %s", k);
    /* the stale trylock, id 2, runs now, its withdrawal right behind it */
    assert_int_equal(th_cmd_ll("EXISTS %s", rk), 0);
    th_script_acquire(name, "tokP", "r", "30000", 0, "2", NULL, NULL, NULL);
    const char *wd[] = { "n:", "tokP", "r", "2" };
    redisReply *x = th_script(DL_SCRIPT_WITHDRAW, name, 4, wd);
    freeReplyObject(x);
    /* Registration 3 must still be waiting, or hold the grant pushed to it
     * (serving the queue may push it one): never dequeued without its hold. */
    char rik[300], qk[300];
    key(rik, name, ":ri");
    key(qk, name, ":q");
    int queued = th_cmd_ll("ZSCORE %s tokP", qk) >= 0;
    int holds = th_cmd_ll("ZSCORE %s tokP", rk) >= 0;
    long long rid = holds ? th_cmd_ll("EVAL %s 1 %s tokP",
                                      "local r = redis.call('HGET', KEYS[1], ARGV[1]) "
                                      "return r and tonumber(cmsgpack.unpack(r)[5]) or -1",
                                      rik) : -1;
    if (!queued && !holds)
        fail_msg("registration 3 was granted (pushed) its read hold, and the stale request 2 "
                 "took the reader's place and its withdrawal ended it");
    if (holds && rid != 3)
        fail_msg("the reader's record names request %lld, not the registration 3 the grant "
                 "was pushed to", rid);
}

/* A stale request of the other mode (written on a connection given up; its
 * withdrawal found no room in the old socket, and the watchdog's is off
 * once a later lock call of the process succeeds: watchdog.c collect_undo)
 * runs while a later request of its process holds the lock.  It must not
 * queue: its registration would come to the head when that hold is
 * released, be granted to a process that never claims it (the push names a
 * request nobody waits for), keep everyone out for a claim window, and its
 * lapse would tell the next holder EOWNERDEAD although nobody died. */
static void test_stale_request_never_queues_behind_own_hold(void **state)
{
    (void)state;
    char name[128], qk[300];
    th_name(name, sizeof name, "stalequeue");
    key(qk, name, ":q");
    unsigned long long fr;
    /* the process reads, with request 3 */
    assert_int_equal(th_script_acquire(name, "tokP", "r", "30000", 0, "3", &fr, NULL, NULL), 1);
    /* its write request 2, sent before and given up, runs now */
    const char *q2[] = { "n:", "tokP", "w", "30000", "host\t1\t1", "1", "2", "2000", "2000" };
    redisReply *r = th_script(DL_SCRIPT_ACQUIRE, name, 9, q2);
    freeReplyObject(r);
    if (th_cmd_ll("ZSCORE %s tokP", qk) >= 0) {
        /* what follows: the read unlock grants the leftover write registration */
        char f[24];
        snprintf(f, sizeof f, "%llu", fr);
        const char *rel[] = { "n:", "tokP", "r", f, "3" };
        redisReply *x = th_script(DL_SCRIPT_RELEASE, name, 5, rel);
        freeReplyObject(x);
        char k[300];
        key(k, name, "");
        fail_msg("the stale write request 2 queued behind its process's read hold (request 3): "
                 "the read unlock then granted it a write hold nobody claims (owner tokP: %s)",
                 th_cmd_ll("EXISTS %s", k) ? "held" : "not held");
    }
}

/* ------------------------------------------------------------------------
 * Two reader threads of a process share its Redis read hold; Redis loses it
 * (the keys deleted) and the watchdog finds out.  Each reader's hold had
 * lapsed: each unlock says ENOLCK (SPEC), not only the last one, which
 * releases the process's hold. */
enum { LOSTR_HELD = 1, LOSTR_DELETED, LOSTR_RESULT };

struct lostr_arg {
    char name[128];
    int up, down;
};

static dist_rwlock_t lostr_rw;
static volatile int lostr_b_state;        /* 1 holds, 2 told to unlock, 3 done */
static volatile int lostr_b_rc = -1;

static void *lostr_b(void *unused)
{
    (void)unused;
    if (dist_rwlock_rdlock(&lostr_rw) != 0) {
        lostr_b_state = -1;
        return NULL;
    }
    lostr_b_state = 1;
    while (lostr_b_state != 2)
        th_sleep_ms(2);
    lostr_b_rc = dist_rwlock_unlock(&lostr_rw);
    lostr_b_state = 3;
    return NULL;
}

static int lostr_child(void *p)
{
    const struct lostr_arg *a = p;
    setenv("DISTLOCK_LEASE_MS", "900", 1);      /* the watchdog looks every 300 ms */
    TH_CHECK_RC(dist_rwlock_init(&lostr_rw, a->name, NULL), 0);
    TH_CHECK_RC(dist_rwlock_rdlock(&lostr_rw), 0);
    pthread_t tb;
    TH_CHECK(pthread_create(&tb, NULL, lostr_b, NULL) == 0);
    while (!lostr_b_state)
        th_sleep_ms(1);
    TH_CHECK(lostr_b_state == 1);
    th_send(a->up, LOSTR_HELD, 0, 0, 0);
    th_msg_t m;
    TH_CHECK(th_recv(a->down, &m, 20000) == 0);
    /* wait until the watchdog has found the hold gone */
    int64_t until = th_now_ms() + 10000;
    while (dl_rwlock_hold_lost(&lostr_rw) != 1 && th_now_ms() < until)
        th_sleep_ms(10);
    TH_CHECK(dl_rwlock_hold_lost(&lostr_rw) == 1);
    int rc_a = dist_rwlock_unlock(&lostr_rw);
    lostr_b_state = 2;
    pthread_join(tb, NULL);
    th_send(a->up, LOSTR_RESULT, rc_a, lostr_b_rc, 0);
    TH_CHECK_RC(dist_rwlock_destroy(&lostr_rw), 0);
    return 0;
}

static void test_every_reader_of_lost_hold_gets_enolck(void **state)
{
    (void)state;
    static struct lostr_arg a;
    th_name(a.name, sizeof a.name, "lostreaders");
    th_steered_t c;
    th_steer(&c, lostr_child, &a, &a.up, &a.down);
    th_msg_t msg;
    th_steered_expect(&c, LOSTR_HELD, &msg, 20000);
    char rk[300], rik[300];
    key(rk, a.name, ":r");
    key(rik, a.name, ":ri");
    th_cmd_do("DEL %s %s", rk, rik);           /* Redis loses the read hold */
    th_send(c.down.wr, LOSTR_DELETED, 0, 0, 0);
    th_steered_expect(&c, LOSTR_RESULT, &msg, 20000);
    if (msg.a != ENOLCK)
        fail_msg("a reader's unlock of a read hold known lost returned %s (another reader "
                 "still held it), want ENOLCK; the last reader's: %s",
                 th_errname((int)msg.a), th_errname((int)msg.b));
    assert_int_equal(msg.b, ENOLCK);
    th_steered_end(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_claim_of_lingering_hold_sets_death_trace),
        TH_TEST(test_claim_restores_lease),
        TH_TEST(test_reader_joins_once_claimed_hold_confirmed),
        TH_TEST(test_stale_request_spares_grant_to_later_registration),
        TH_TEST(test_stale_request_never_queues_behind_own_hold),
        TH_TEST(test_every_reader_of_lost_hold_gets_enolck),
    };
    if (getenv("TH_FILTER"))
        cmocka_set_test_filter(getenv("TH_FILTER"));
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
