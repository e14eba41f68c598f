/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_trust.c - a process trusts its hold only as far as Redis has
 * confirmed it (SPEC "Semantics", "Local trust"):
 *   - a hold Redis lost is not passed between the process's own threads,
 *     nor joined by another reader, after a restart without persistence, a
 *     `distlock break` (its revocation push), or a silent DEL (periodic
 *     confirmation while threads wait for it); the holder's unlock says
 *     ENOLCK;
 *   - a lock call never returns a hold whose validity had passed when its
 *     reply came (a fixed lease, the reply delayed past it);
 *   - the renewal posted for a pushed grant survives an emptied script
 *     cache (SCRIPT FLUSH) and a command connection the server closed;
 *   - EOWNERDEAD is told once, also when the told hold's unlock failed and
 *     the next lock call takes the process's own hold back;
 *   - a waiter that died before its grant is no death of a holder;
 *   - a reader leaving beside others past its fixed lease's validity is
 *     answered by Redis, not by the clock;
 *   - an acquisition that failed (EIO) but ran in Redis late is withdrawn
 *     even after a later call of the process succeeded, or while another
 *     thread of the process waits in Redis;
 *   - a trylock or trylockall whose round trip another thread's deadline
 *     cut short is not sent again beside a first copy still on its way:
 *     that copy cannot take the lock for a caller told EBUSY.
 * The library runs only in helper processes, never in the test process.
 */
#include "dl_script_list.h"
#include "harness.h"
#include "harness_proxy.h"
#include "harness_script.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "calls.h"
#include "process.h"

/* ------------------------------------------------------------------------
 * A process P holds a lock in thread T1 while its thread T2 waits for it
 * (WAIT) or will join it as a reader (JOIN).  Redis loses P's hold (a
 * fault of the test's choosing), another process Q takes the lock, and P's
 * T1 unlocks (WAIT) or T2 asks to read (JOIN).  No thread of P may get the
 * lock while Q holds it, and T1's unlock must say ENOLCK. */

enum { PAIR_READY = 1, PAIR_T2_GOT, PAIR_T1_UNLOCKED, PAIR_T2_UNLOCKED };
enum { PAIR_WAIT, PAIR_JOIN };

struct pair_arg {
    char name[96];
    char url[64];
    int kind;
    int up, down;             /* to the parent, from it */
};

static dist_mutex_t pair_m;
static dist_rwlock_t pair_rw;
static const struct pair_arg *pair_a;
static int pair_t2_started;

static void *pair_t2(void *p)
{
    (void)p;
    const struct pair_arg *a = pair_a;
    __atomic_store_n(&pair_t2_started, 1, __ATOMIC_RELEASE);
    int rc = a->kind == PAIR_WAIT ? dist_mutex_lock(&pair_m) : dist_rwlock_rdlock(&pair_rw);
    th_send(a->up, PAIR_T2_GOT, rc, th_now_us(), 0);
    if (rc == 0 || rc == EOWNERDEAD)
        th_send(a->up, PAIR_T2_UNLOCKED,
                a->kind == PAIR_WAIT ? dist_mutex_unlock(&pair_m) : dist_rwlock_unlock(&pair_rw),
                0, 0);
    return NULL;
}

static int pair_child(void *p)
{
    const struct pair_arg *a = pair_a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "2000", 1);
    pthread_t t;
    th_msg_t go;
    if (a->kind == PAIR_WAIT) {
        TH_CHECK_RC(dist_mutex_init(&pair_m, a->name, NULL), 0);
        TH_CHECK_RC(dist_mutex_lock(&pair_m), 0);
        TH_CHECK(pthread_create(&t, NULL, pair_t2, NULL) == 0);
        while (!__atomic_load_n(&pair_t2_started, __ATOMIC_ACQUIRE))
            th_sleep_ms(1);
        th_sleep_ms(100);                 /* T2 waits in the lock call */
        th_send(a->up, PAIR_READY, 0, 0, 0);
        TH_CHECK(th_recv(a->down, &go, 60000) == 0);
        th_send(a->up, PAIR_T1_UNLOCKED, dist_mutex_unlock(&pair_m), 0, 0);
    } else {
        TH_CHECK_RC(dist_rwlock_init(&pair_rw, a->name, NULL), 0);
        TH_CHECK_RC(dist_rwlock_rdlock(&pair_rw), 0);
        th_send(a->up, PAIR_READY, 0, 0, 0);
        TH_CHECK(th_recv(a->down, &go, 60000) == 0);
        TH_CHECK(pthread_create(&t, NULL, pair_t2, NULL) == 0);
        TH_CHECK(th_recv(a->down, &go, 60000) == 0);
        th_send(a->up, PAIR_T1_UNLOCKED, dist_rwlock_unlock(&pair_rw), 0, 0);
    }
    pthread_join(t, NULL);
    return 0;
}

enum { LOSS_RESTART, LOSS_BREAK, LOSS_DEL };

/* `distlock break` as the tool runs it: break.lua with the library's
 * channel prefix, so that its revocation reaches the holders. */
static void break_lock(const char *name)
{
    char chan[128];
    snprintf(chan, sizeof chan, "%sn:", th_prefix());
    const char *args[] = { chan };
    assert_true(th_script_ll(DL_SCRIPT_BREAK, name, 1, args) >= 1);
}

static void run_pair(int kind, int loss)
{
    static struct pair_arg a;
    static th_server_t s;
    memset(&s, 0, sizeof s);
    th_name(a.name, sizeof a.name, kind == PAIR_WAIT ? "trustw" : "trustr");
    a.kind = kind;
    int port;
    if (loss == LOSS_RESTART) {
        assert_int_equal(th_server_start(&s), 0);
        snprintf(a.url, sizeof a.url, "%s", s.url);
        port = s.port;
    } else {
        snprintf(a.url, sizeof a.url, "redis://127.0.0.1:%d", th_redis_port());
        port = th_redis_port();
    }
    char envurl[96];
    snprintf(envurl, sizeof envurl, "DISTLOCK_URL=%s", a.url);
    const char *env[] = { envurl, NULL };
    th_steered_t c;

    th_steer(&c, pair_child, &a, &a.up, &a.down);
    th_msg_t msg;
    th_steered_expect(&c, PAIR_READY, &msg, 20000);

    /* Redis loses P's hold. */
    if (loss == LOSS_RESTART) {
        th_server_stop(&s);
        assert_int_equal(th_server_restart(&s), 0);
    } else if (loss == LOSS_BREAK) {
        break_lock(a.name);
    } else {
        th_lock_lose(port, a.name);
    }
    /* Q takes the lock. */
    th_proc_t q;
    assert_int_equal(th_proc_start(&q, env), 0);
    int qop = kind == PAIR_WAIT ? TH_M_TRYLOCK : TH_RW_TRYWRLOCK;
    int rc = th_proc_op(&q, qop, a.name);
    if (rc != 0 && rc != EOWNERDEAD)
        fail_msg("Q could not take the lock Redis lost: %s", th_errname(rc));
    /* Past the bound within which a silent loss must be noticed (50 ms). */
    th_sleep_ms(100);

    th_send(c.down.wr, 1, 0, 0, 0);
    if (kind == PAIR_JOIN) {
        /* T2 asks to read while Q writes; then T1 unlocks. */
        if (th_recv(c.up.rd, &msg, 700) == 0)
            fail_msg("a reader of the process joined a hold Redis had lost (%s) while "
                     "another process held the lock for writing", th_errname((int)msg.a));
        th_send(c.down.wr, 1, 0, 0, 0);
    }
    /* T1's unlock answers; T2 must not get the lock meanwhile. */
    assert_int_equal(th_recv(c.up.rd, &msg, 15000), 0);
    if (msg.tag == PAIR_T2_GOT)
        fail_msg("a thread of the process got the lock (%s) from a hold Redis had lost, "
                 "while another process held it", th_errname((int)msg.a));
    assert_int_equal(msg.tag, PAIR_T1_UNLOCKED);
    if (msg.a != ENOLCK)
        fail_msg("the holder's unlock after Redis lost its hold returned %s, want ENOLCK",
                 th_errname((int)msg.a));
    if (th_recv(c.up.rd, &msg, 500) == 0)
        fail_msg("a thread of the process got the lock (%s) while another process held it",
                 th_errname((int)msg.a));

    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(&q, kind == PAIR_WAIT ? TH_M_UNLOCK : TH_RW_UNLOCK, a.name), 0);
    th_steered_expect(&c, PAIR_T2_GOT, &msg, 15000);
    if (msg.a != 0 && msg.a != EOWNERDEAD)
        fail_msg("T2 after Q's unlock: %s", th_errname((int)msg.a));
    assert_true(msg.b >= t_rel);
    th_steered_expect(&c, PAIR_T2_UNLOCKED, &msg, 15000);
    TH_ASSERT_RC((int)msg.a, 0);
    th_steered_end(&c);
    assert_int_equal(th_proc_stop(&q), 0);
    if (loss == LOSS_RESTART)
        th_server_stop(&s);
}

static void test_restart_hold_not_passed(void **state)
{
    (void)state;
    run_pair(PAIR_WAIT, LOSS_RESTART);
}

static void test_break_hold_not_passed(void **state)
{
    (void)state;
    run_pair(PAIR_WAIT, LOSS_BREAK);
}

static void test_deleted_hold_not_passed(void **state)
{
    (void)state;
    run_pair(PAIR_WAIT, LOSS_DEL);
}

static void test_restart_hold_not_joined(void **state)
{
    (void)state;
    run_pair(PAIR_JOIN, LOSS_RESTART);
}

static void test_deleted_hold_not_joined(void **state)
{
    (void)state;
    run_pair(PAIR_JOIN, LOSS_DEL);
}

/* ------------------------------------------------------------------------
 * Two reader threads of one process share a read hold; Redis loses it (its
 * keys deleted: no sign); past the 40 ms of trust, one thread reads again
 * and, finding the hold gone, takes the lock anew (EOWNERDEAD).  The other
 * thread's part was in the lost hold: its unlock says ENOLCK, not 0 (the
 * nemesis on the seam: a writer elsewhere began while that reader held,
 * and the reader's unlock said 0).  The re-reader's section saw the lapse
 * too: its inner unlock says 0, the one that ends its section ENOLCK
 * (SPEC, ENOLCK). */

struct rejoin {
    dist_rwlock_t rw;
    sem_t held, go, relocked, done;
    int relock_rc, unlock_rc[2];
    uint64_t fence;               /* the retaking thread's new hold */
};

static void *rejoin_t2(void *p)
{
    struct rejoin *r = p;
    TH_CHECK_RC(dist_rwlock_rdlock(&r->rw), 0);
    sem_post(&r->held);
    sem_wait(&r->go);
    r->relock_rc = dist_rwlock_rdlock(&r->rw);
    dist_rwlock_getfence(&r->rw, &r->fence);
    sem_post(&r->relocked);
    sem_wait(&r->done);
    r->unlock_rc[0] = dist_rwlock_unlock(&r->rw);
    r->unlock_rc[1] = dist_rwlock_unlock(&r->rw);
    return NULL;
}

/* mode 0: the left-behind reader unlocks (ENOLCK); 1: it reads again
 * first (EOWNERDEAD, as the retaking thread was told; its part is in the
 * new hold from then on: its inner unlock says 0, and the one that ends
 * its section ENOLCK, for the lapse it saw).  Before either, its getfence
 * still names the lost hold (a fenced store refuses its writes) and its
 * getlease says ENOLCK. */
static void run_rejoin(int mode)
{
    static struct rejoin r;
    memset(&r, 0, sizeof r);
    char name[96];
    th_name(name, sizeof name, "rejoin");
    assert_int_equal(dist_rwlock_init(&r.rw, name, NULL), 0);
    sem_init(&r.held, 0, 0);
    sem_init(&r.go, 0, 0);
    sem_init(&r.relocked, 0, 0);
    sem_init(&r.done, 0, 0);
    assert_int_equal(dist_rwlock_rdlock(&r.rw), 0);
    uint64_t mine = 0, now = 0;
    unsigned long left = 1;
    assert_int_equal(dist_rwlock_getfence(&r.rw, &mine), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, rejoin_t2, &r), 0);
    sem_wait(&r.held);
    th_lock_lose(0, name);
    usleep(100 * 1000);           /* past the trust of a confirmation (40 ms) */
    sem_post(&r.go);
    sem_wait(&r.relocked);
    assert_int_equal(r.relock_rc, EOWNERDEAD);
    assert_true(r.fence > mine);
    assert_int_equal(dist_rwlock_getfence(&r.rw, &now), 0);
    assert_true(now == mine);
    assert_int_equal(dist_rwlock_getlease(&r.rw, &left), ENOLCK);
    int rc;
    if (mode == 0) {
        rc = dist_rwlock_unlock(&r.rw);
    } else {
        assert_int_equal(dist_rwlock_rdlock(&r.rw), EOWNERDEAD);
        assert_int_equal(dist_rwlock_getfence(&r.rw, &now), 0);
        assert_true(now == r.fence);
        assert_int_equal(dist_rwlock_getlease(&r.rw, &left), 0);
        assert_int_equal(dist_rwlock_unlock(&r.rw), 0);
        rc = dist_rwlock_unlock(&r.rw);
    }
    sem_post(&r.done);
    pthread_join(t, NULL);
    assert_int_equal(rc, ENOLCK);
    assert_int_equal(r.unlock_rc[0], 0);
    assert_int_equal(r.unlock_rc[1], ENOLCK);
    /* nothing left held */
    assert_int_equal(dist_rwlock_trywrlock(&r.rw), 0);
    assert_int_equal(dist_rwlock_unlock(&r.rw), 0);
    assert_int_equal(dist_rwlock_destroy(&r.rw), 0);
}

static void test_lost_read_hold_retaken_other_reader_told(void **state)
{
    (void)state;
    run_rejoin(0);
}

static void test_lost_read_hold_retaken_other_reader_relocks(void **state)
{
    (void)state;
    run_rejoin(1);
}

/* ------------------------------------------------------------------------
 * A reply that comes back after the hold's validity is no hold.  Fixed
 * lease 1000 ms; every byte between P and Redis is delayed 1.5 s, so the
 * hold P's lock call took has lapsed in Redis before its reply arrives, and
 * Q takes the lock meanwhile (EOWNERDEAD: P's hold lapsed).  P's lock call
 * must not return while Q holds the lock. */

struct late_arg {
    char name[96];
    char url[64];
    int up, down;
};

static int late_child(void *p)
{
    const struct late_arg *a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "5000", 1);
    /* connected, subscribed and the scripts in Redis's cache before the
     * network slows down */
    dist_mutex_t w;
    char wname[128];
    snprintf(wname, sizeof wname, "%s.warm", a->name);
    TH_CHECK_RC(dist_mutex_init(&w, wname, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&w), 0);
    TH_CHECK_RC(dist_mutex_unlock(&w), 0);
    th_send(a->up, 0, 0, 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    dist_mutexattr_t at;
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutexattr_init(&at), 0);
    TH_CHECK_RC(dist_mutexattr_setlease(&at, 1000), 0);
    TH_CHECK_RC(dist_mutex_init(&m, a->name, &at), 0);
    int rc = dist_mutex_lock(&m);
    uint64_t fence = 0;
    if (rc == 0 || rc == EOWNERDEAD)
        dist_mutex_getfence(&m, &fence);
    th_send(a->up, 1, rc, th_now_us(), (int64_t)fence);
    if (rc == 0 || rc == EOWNERDEAD)
        dist_mutex_unlock(&m);
    return 0;
}

static void test_late_reply_not_returned(void **state)
{
    (void)state;
    static struct late_arg a;
    th_name(a.name, sizeof a.name, "latereply");
    th_proxy_t *px = th_proxy_url_for(a.url, sizeof a.url);
    char key[300];
    th_key(key, sizeof key, a.name, "");
    th_steered_t c;
    th_proc_t q;
    assert_int_equal(th_proc_start(&q, NULL), 0);

    th_steer(&c, late_child, &a, &a.up, &a.down);
    th_msg_t msg;
    assert_int_equal(th_recv(c.up.rd, &msg, 20000), 0);
    th_proxy_mode(px, TH_PROXY_SLOW, 1500);
    th_send(c.down.wr, 1, 0, 0, 0);
    /* P's request reaches Redis 1.5 s after it was sent and takes the lock
     * for 1 s; Q takes it once that lapsed. */
    if (!th_wait_exists(key, 1, 10000))
        fail_msg("P's request never reached Redis");
    int64_t until = th_now_ms() + 5000;
    int rc;
    th_res_t res;
    do {
        th_sleep_ms(20);
        rc = th_proc_opa(&q, TH_M_TRYLOCK, a.name, 0, &res);
    } while (rc == EBUSY && th_now_ms() < until);
    if (rc != 0 && rc != EOWNERDEAD)
        fail_msg("Q could not take the lock after P's hold lapsed: %s", th_errname(rc));
    TH_ASSERT_RC(th_proc_opa(&q, TH_M_FENCE, a.name, 0, &res), 0);
    uint64_t qfence = res.fence;
    if (th_recv(c.up.rd, &msg, 700) == 0)
        fail_msg("P's lock call returned %s (fence %lld) while Q held the lock (fence %llu): "
                 "its reply came after its hold's validity", th_errname((int)msg.a),
                 (long long)msg.c, (unsigned long long)qfence);
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, a.name), 0);
    assert_int_equal(th_recv(c.up.rd, &msg, 20000), 0);
    if (msg.a != 0 && msg.a != EOWNERDEAD)
        fail_msg("P's lock call: %s", th_errname((int)msg.a));
    if (msg.b < t_rel)
        fail_msg("P's lock call returned while Q held the lock");
    assert_true((uint64_t)msg.c > qfence);
    th_steered_end(&c);
    assert_int_equal(th_proc_stop(&q), 0);
    th_proxy_stop(px);
}

/* ------------------------------------------------------------------------
 * Nor a hold whose *confirmation* came back after its validity.  A renewed
 * lease of 1000 ms.  P holds lock W; its replies and pushes are delayed
 * 300 ms.  W is broken (its revocation push, a sign, reaches P 300 ms
 * later), and 100 ms after the break P's trylock of M is sent: its acquire
 * is answered in time, but after the sign, so P confirms the hold with a
 * renewal, whose reply is delayed 1.3 s (the delay was raised meanwhile).
 * The renewal says "held", for a lease from when it was sent, which has
 * passed by then: the trylock must not return the hold (EBUSY).  The
 * nemesis found the same with a process stopped between sending the
 * confirming renewal and reading its reply (redlock seed 105: a lock call
 * returned 5.4 s after it was called, another process having held the lock
 * meanwhile). */

struct lateconf_arg {
    char name[96], other[96];
    char url[64];
    int up, down;
};

static int late_confirm_child(void *p)
{
    const struct lateconf_arg *a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "8000", 1);
    setenv("DISTLOCK_LEASE_MS", "1000", 1);
    dist_mutex_t w, m;
    TH_CHECK_RC(dist_mutex_init(&w, a->other, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&m, a->name, NULL), 0);
    /* the scripts cached (renewals ran), subscribed, holding W */
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_lock(&w), 0);
    th_sleep_ms(500);
    th_send(a->up, 0, 0, 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    int64_t t0 = th_now_us();
    int rc = dist_mutex_trylock(&m);
    th_send(a->up, 1, rc, th_now_us() - t0, 0);
    if (rc == 0 || rc == EOWNERDEAD)
        dist_mutex_unlock(&m);
    dist_mutex_unlock(&w);          /* (ENOLCK: it was broken) */
    return 0;
}

static void test_late_confirmation_not_returned(void **state)
{
    (void)state;
    static struct lateconf_arg a;
    th_name(a.name, sizeof a.name, "lateconf");
    th_name(a.other, sizeof a.other, "lateconfw");
    th_proxy_t *px = th_proxy_url_for(a.url, sizeof a.url);
    th_steered_t c;
    th_steer(&c, late_confirm_child, &a, &a.up, &a.down);
    th_msg_t msg;
    assert_int_equal(th_recv(c.up.rd, &msg, 20000), 0);
    assert_true(th_proxy_delay(px, c.pid, 0, 300) > 0);
    break_lock(a.other);
    int64_t t_break = th_now_ms();
    th_sleep_ms(100);
    th_send(c.down.wr, 1, 0, 0, 0);
    /* the acquire's reply is on its way with 300 ms; what follows gets 1.3 s */
    th_sleep_ms(150);
    th_proxy_delay(px, c.pid, 0, 1300);
    th_steered_expect(&c, 1, &msg, 30000);
    print_message("trylock sent %lld ms after the sign, acquire answered in 300 ms, its "
                  "confirmation in 1.3 s (lease 1 s): %s after %lld ms\n",
                  (long long)(th_now_ms() - t_break - msg.b / 1000), th_errname((int)msg.a),
                  (long long)(msg.b / 1000));
    th_proxy_delay(px, c.pid, 0, 0);
    if (msg.a == 0 || msg.a == EOWNERDEAD)
        fail_msg("the trylock returned the hold (%s) though the renewal that confirmed it "
                 "was answered after the lease it set had passed", th_errname((int)msg.a));
    TH_ASSERT_RC((int)msg.a, EBUSY);
    th_steered_end(&c);
    th_proxy_stop(px);
}

/* ------------------------------------------------------------------------
 * The renewal posted when a pushed grant is claimed cannot be lost to an
 * emptied script cache.  Lease 3000 ms (claim window 2000 ms).  P has run
 * renew.lua before (so it knows it cached), waits for a lock Q holds; the
 * script cache is flushed; Q unlocks, P is granted the lock and is stopped
 * right after its lock call returns.  2.4 s later the lock must still be
 * P's: its posted renewal gave it the lease. */

struct flush_arg {
    char name[96], warm[96];
    int up, down;
};

static int flush_child(void *p)
{
    const struct flush_arg *a = p;
    setenv("DISTLOCK_LEASE_MS", "3000", 1);
    dist_mutex_t w, m;
    TH_CHECK_RC(dist_mutex_init(&w, a->warm, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&m, a->name, NULL), 0);
    /* held past a watchdog tick (lease/3): renew.lua ran */
    TH_CHECK_RC(dist_mutex_lock(&w), 0);
    th_sleep_ms(1300);
    TH_CHECK_RC(dist_mutex_unlock(&w), 0);
    th_send(a->up, 1, 0, 0, 0);
    int rc = dist_mutex_lock(&m);
    th_send(a->up, 2, rc, th_now_us(), 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    th_send(a->up, 3, dist_mutex_unlock(&m), 0, 0);
    return 0;
}

/* Lease 3000 ms: P waits for a lock Q holds; `disrupt` runs on the server
 * once P is queued (the scripts all cached first when `cached`); Q
 * unlocks, P is granted the lock by push and is stopped right after its
 * lock call returns.  2.4 s later the lock must still be P's: its posted
 * renewal took (else the test fails, saying `lost`). */
static void stopped_grantee_keeps(const char *tag, const char *disrupt, int cached,
                                  const char *lost)
{
    static struct flush_arg a;
    th_name(a.name, sizeof a.name, tag);
    th_name(a.warm, sizeof a.warm, "grantwarm");
    th_steered_t c;
    const char *env[] = { "DISTLOCK_LEASE_MS=3000", NULL };
    th_proc_t q, r;
    assert_int_equal(th_proc_start(&q, env), 0);
    assert_int_equal(th_proc_start(&r, env), 0);
    TH_ASSERT_RC(th_proc_op(&q, TH_M_LOCK, a.name), 0);
    /* Every script in the server's cache, as on a server in use: the
     * grantee meets no NOSCRIPT before the flush. */
    for (int i = 0; cached && i < DL_SCRIPT_COUNT; i++)
        th_cmd_do("SCRIPT LOAD %b", dl_scripts[i].body, (size_t)dl_scripts[i].len);

    th_steer(&c, flush_child, &a, &a.up, &a.down);
    th_msg_t msg;
    th_steered_expect(&c, 1, &msg, 20000);
    th_wait_queued(a.name, 1);
    th_cmd_do(disrupt);
    TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, a.name), 0);
    th_steered_expect(&c, 2, &msg, 20000);
    kill(c.pid, SIGSTOP);
    TH_ASSERT_RC((int)msg.a, 0);
    int64_t granted = msg.b / 1000;
    int64_t wake = granted + 2400 - th_now_ms();
    if (wake > 0)
        th_sleep_ms(wake);
    int rc = th_proc_op(&r, TH_M_TRYLOCK, a.name);
    kill(c.pid, SIGCONT);
    if (rc != EBUSY)
        fail_msg("2.4 s after its grant (lease 3 s), the stopped grantee's hold was gone "
                 "(another process's trylock: %s): %s", th_errname(rc), lost);
    th_send(c.down.wr, 1, 0, 0, 0);
    th_steered_expect(&c, 3, &msg, 20000);
    TH_ASSERT_RC((int)msg.a, 0);
    th_steered_end(&c);
    assert_int_equal(th_proc_stop(&q), 0);
    assert_int_equal(th_proc_stop(&r), 0);
}

static void test_posted_renewal_survives_flush(void **state)
{
    (void)state;
    stopped_grantee_keeps("flushgrant", "SCRIPT FLUSH", 1,
                          "its posted renewal failed after the script cache was flushed");
}

/* ------------------------------------------------------------------------
 * Nor to a command connection the server closed while the grantee waited
 * (CLIENT KILL; a restart or the server's idle time-out alike): the socket
 * still takes the posted renewal, and nothing would read of its loss.
 * Lease 3000 ms (claim window 2000 ms): P waits for a lock Q holds, the
 * server kills every normal connection (P's idle command connection with
 * them; P's subscriber stays), Q unlocks, P is granted the lock by push and
 * is stopped right after its lock call returns.  2.4 s later the lock must
 * still be P's.  (Found by the nemesis, seed 3 of the single server.) */
static void test_posted_renewal_survives_killed_connection(void **state)
{
    (void)state;
    stopped_grantee_keeps("killgrant", "CLIENT KILL TYPE normal SKIPME yes", 0,
                          "its renewal was posted on a connection the server had closed");
}

/* ------------------------------------------------------------------------
 * EOWNERDEAD is told once.  P takes a lock whose last holder died
 * (EOWNERDEAD); its unlock fails (EIO: Redis unreachable), so the hold may
 * still be there; P's next lock call takes its own hold back ("mine") and
 * must not be told EOWNERDEAD again. */
static void test_ownerdead_told_once(void **state)
{
    (void)state;
    char name[96];
    th_name(name, sizeof name, "deadonce");
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char envurl[96];
    snprintf(envurl, sizeof envurl, "DISTLOCK_URL=%s", th_proxy_url(px));
    const char *penv[] = { envurl, "DISTLOCK_IO_TIMEOUT_MS=700", NULL };
    const char *denv[] = { "DISTLOCK_LEASE_MS=600", NULL };
    th_proc_t d, p;
    assert_int_equal(th_proc_start(&d, denv), 0);
    TH_ASSERT_RC(th_proc_op(&d, TH_M_LOCK, name), 0);
    th_proc_kill(&d);                     /* dies holding it: lapses in 600 ms */
    assert_int_equal(th_proc_start(&p, penv), 0);
    assert_int_equal(th_proc_op(&p, TH_M_LOCK, name), EOWNERDEAD);
    th_proxy_mode(px, TH_PROXY_BLACKHOLE, 0);
    assert_int_equal(th_proc_op(&p, TH_M_UNLOCK, name), EIO);
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    int rc = th_proc_op(&p, TH_M_LOCK, name);
    if (rc != 0)
        fail_msg("the lock call that took back its own hold (its unlock had failed) was "
                 "told %s; the EOWNERDEAD of that hold was told already", th_errname(rc));
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    th_proxy_stop(px);
}

/* ------------------------------------------------------------------------
 * A waiter killed before its grant never held the lock: when the grant
 * made to it lapses, the next holder is not told EOWNERDEAD. */
static void test_dead_waiter_no_ownerdead(void **state)
{
    (void)state;
    char name[96];
    th_name(name, sizeof name, "deadwaiter");
    th_proc_t h, w, n;
    assert_int_equal(th_proc_start(&h, NULL), 0);
    assert_int_equal(th_proc_start(&w, NULL), 0);
    assert_int_equal(th_proc_start(&n, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(&w, TH_M_LOCK, name), 0);
    th_wait_queued(name, 1);
    th_proc_kill(&w);                     /* its registration lives on a while */
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, name), 0);
    /* granted to the dead waiter (pushed to nobody); it lapses within its
     * claim window */
    th_res_t res;
    th_req_t rq;
    th_proc_req(&rq, TH_M_TIMEDLOCK, name);
    rq.arg = 10000;
    int rc = th_proc_call(&n, &rq, &res);
    if (rc == EOWNERDEAD)
        fail_msg("the next holder was told EOWNERDEAD after a waiter that died before its "
                 "grant: that process never held the lock");
    TH_ASSERT_RC(rc, 0);
    TH_ASSERT_RC(th_proc_op(&n, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&n), 0);
}

/* ------------------------------------------------------------------------
 * A reader that leaves beside another reader of its process, past its fixed
 * lease's validity as the process counts it but while Redis still has the
 * hold, is answered by Redis (0), and does not make the last reader's good
 * release ENOLCK.  The acquisition reached Redis late (the proxy slowed
 * it), so Redis's lease ends well after the process's count of it. */

struct rdfix_arg {
    char name[96];
    char url[64];
    int up, down;
};

static dist_rwlock_t rdfix_rw;
static const struct rdfix_arg *rdfix_a;
static int rdfix_r1_left;

static void *rdfix_r2(void *p)
{
    (void)p;
    const struct rdfix_arg *a = rdfix_a;
    TH_CHECK_RC(dist_rwlock_rdlock(&rdfix_rw), 0);
    th_send(a->up, 2, 0, 0, 0);
    while (!__atomic_load_n(&rdfix_r1_left, __ATOMIC_ACQUIRE))
        th_sleep_ms(1);
    th_send(a->up, 4, dist_rwlock_unlock(&rdfix_rw), 0, 0);
    return NULL;
}

static int rdfix_child(void *p)
{
    const struct rdfix_arg *a = rdfix_a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    dist_rwlockattr_t at;
    TH_CHECK_RC(dist_rwlockattr_init(&at), 0);
    TH_CHECK_RC(dist_rwlockattr_setlease(&at, 2000), 0);
    TH_CHECK_RC(dist_rwlock_init(&rdfix_rw, a->name, &at), 0);
    /* subscribed before the network slows down: the acquisition below is
     * sent when the call begins */
    dist_rwlock_t warm;
    char wname[128];
    snprintf(wname, sizeof wname, "%s.warm", a->name);
    TH_CHECK_RC(dist_rwlock_init(&warm, wname, NULL), 0);
    TH_CHECK_RC(dist_rwlock_rdlock(&warm), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&warm), 0);
    th_send(a->up, 0, 0, 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    int64_t t0 = th_now_ms();
    TH_CHECK_RC(dist_rwlock_rdlock(&rdfix_rw), 0);
    th_send(a->up, 1, t0, 0, 0);
    pthread_t t;
    TH_CHECK(pthread_create(&t, NULL, rdfix_r2, NULL) == 0);
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    th_send(a->up, 3, dist_rwlock_unlock(&rdfix_rw), 0, 0);   /* R2 still reads */
    __atomic_store_n(&rdfix_r1_left, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    return 0;
}

static void test_reader_past_validity_asks_redis(void **state)
{
    (void)state;
    static struct rdfix_arg a;
    th_name(a.name, sizeof a.name, "rdfixed");
    th_proxy_t *px = th_proxy_url_for(a.url, sizeof a.url);
    th_steered_t c;
    th_steer(&c, rdfix_child, &a, &a.up, &a.down);
    th_msg_t msg;
    th_steered_expect(&c, 0, &msg, 20000);
    th_proxy_mode(px, TH_PROXY_SLOW, 300);
    th_send(c.down.wr, 1, 0, 0, 0);
    th_steered_expect(&c, 1, &msg, 20000);
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    int64_t t0 = msg.a;
    th_steered_expect(&c, 2, &msg, 20000);
    /* past the process's count of the 2000 ms lease, within Redis's (the
     * acquisition reached Redis some 300 ms after it was sent) */
    int64_t wake = t0 + 2100 - th_now_ms();
    if (wake > 0)
        th_sleep_ms(wake);
    th_send(c.down.wr, 1, 0, 0, 0);
    th_steered_expect(&c, 3, &msg, 20000);
    int rc1 = (int)msg.a;
    th_steered_expect(&c, 4, &msg, 20000);
    int rc2 = (int)msg.a;
    if (rc2 == ENOLCK)
        fail_msg("the last reader's release said ENOLCK (the first reader's unlock said %s) "
                 "while Redis still had the hold: decided by the clock, not by Redis",
                 th_errname(rc1));
    TH_ASSERT_RC(rc1, 0);
    TH_ASSERT_RC(rc2, 0);
    th_steered_end(&c);
    th_proxy_stop(px);
}

/* ------------------------------------------------------------------------
 * An acquisition that failed (EIO) after it was sent may run in Redis
 * later (a stalled server, a held-back connection), and take a hold or a
 * queue place nobody knows of.  The watchdog withdraws it by its
 * registration id, also when a later lock call of the process succeeded
 * meanwhile (UNDO_AFTER_SUCCESS), and also while another thread of the
 * process waits in Redis for the same lock (UNDO_WHILE_WAITING: its write
 * request queued behind the orphan read hold of its own process).  The
 * request's late run is played by the test with the library's own script,
 * the process's token and the failed request's registration id, right
 * after the failure, before the watchdog's second look. */

enum { UNDO_AFTER_SUCCESS, UNDO_WHILE_WAITING };

struct undo_arg {
    char name[96];
    int kind;
};

static int undo_child(void *arg)
{
    const struct undo_arg *a = arg;
    th_proxy_t *px = th_proxy_start(th_redis_port());
    TH_CHECK(px != NULL);
    setenv("DISTLOCK_URL", th_proxy_url(px), 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "300", 1);
    dist_rwlock_t rw;
    TH_CHECK_RC(dist_rwlock_init(&rw, a->name, NULL), 0);
    TH_CHECK_RC(dist_rwlock_rdlock(&rw), 0);      /* connected and subscribed */
    TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    int err = 0;
    dl_proc_t *p = dl_proc_get(&err);
    TH_CHECK(p != NULL);

    /* The request is sent, and Redis is unreachable until the call fails. */
    char mode = a->kind == UNDO_AFTER_SUCCESS ? 'w' : 'r';
    th_proxy_mode(px, TH_PROXY_BLACKHOLE, 0);
    int rc = mode == 'w' ? dist_rwlock_wrlock(&rw) : dist_rwlock_rdlock(&rw);
    TH_CHECK(rc == EIO);
    uint64_t rid = __atomic_load_n(&p->regseq, __ATOMIC_RELAXED);
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    if (a->kind == UNDO_AFTER_SUCCESS) {
        /* a later call succeeds, before the failed one runs */
        TH_CHECK_RC(dist_rwlock_trywrlock(&rw), 0);
        TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    }
    /* the failed request runs now, late: a hold nobody knows of */
    char rids[24];
    snprintf(rids, sizeof rids, "%llu", (unsigned long long)rid);
    TH_CHECK(th_script_acquire(a->name, p->token, mode == 'w' ? "w" : "r", "30000", 0, rids,
                               NULL, NULL, NULL) == 1);
    char key[300];
    th_key(key, sizeof key, a->name, mode == 'w' ? "" : ":r");
    if (a->kind == UNDO_AFTER_SUCCESS) {
        if (!th_wait_exists(key, 0, 3000)) {
            fprintf(stderr, "the hold of a lock call that failed (EIO) but ran late was not "
                    "withdrawn within 3 s: a later call's success dropped its undo\n");
            _exit(TH_CHILD_FAIL);
        }
    } else {
        /* the process's writer queues behind its own orphan read hold */
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_sec += 5;
        rc = dist_rwlock_timedwrlock(&rw, &at);
        if (rc != 0) {
            fprintf(stderr, "the process's write request waited behind the orphan read hold "
                    "of its own failed request: %s (its undo was dropped while it waited)\n",
                    th_errname(rc));
            _exit(TH_CHILD_FAIL);
        }
        TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    }
    TH_CHECK_RC(dist_rwlock_destroy(&rw), 0);
    th_proxy_stop(px);
    return 0;
}

static void test_undo_kept_after_later_success(void **state)
{
    (void)state;
    static struct undo_arg a;
    th_name(a.name, sizeof a.name, "undolater");
    a.kind = UNDO_AFTER_SUCCESS;
    TH_ASSERT_CHILD_OK(th_fork_child(undo_child, &a));
}

static void test_undo_runs_while_thread_waits(void **state)
{
    (void)state;
    static struct undo_arg a;
    th_name(a.name, sizeof a.name, "undowait");
    a.kind = UNDO_WHILE_WAITING;
    TH_ASSERT_CHILD_OK(th_fork_child(undo_child, &a));
}

/* ------------------------------------------------------------------------
 * While a process's threads pass a lock among themselves, the process
 * learns that another process waits without any push (its first hold was
 * a trylock: it never subscribed), by renewing the hold periodically while
 * its threads wait: the waiting process gets the lock when the current
 * local hold ends, not one local hold later. */

struct busy_arg {
    char name[96];
    int up;
};

static dist_mutex_t busy_m;
static int busy_stop;
static const struct busy_arg *busy_a;

/* Each thread: lock, tell the parent the hold began, hold 400 ms, unlock. */
static void *busy_loop(void *p)
{
    (void)p;
    while (!__atomic_load_n(&busy_stop, __ATOMIC_ACQUIRE)) {
        if (dist_mutex_lock(&busy_m) != 0)
            break;
        th_send(busy_a->up, 1, th_now_us(), 0, 0);
        th_sleep_ms(400);
        dist_mutex_unlock(&busy_m);
    }
    return NULL;
}

static int busy_child(void *arg)
{
    busy_a = arg;
    TH_CHECK_RC(dist_mutex_init(&busy_m, busy_a->name, NULL), 0);
    TH_CHECK_RC(dist_mutex_trylock(&busy_m), 0);  /* no subscription, so no push */
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        TH_CHECK(pthread_create(&t[i], NULL, busy_loop, NULL) == 0);
    th_sleep_ms(50);
    TH_CHECK_RC(dist_mutex_unlock(&busy_m), 0);
    th_sleep_ms(6000);
    __atomic_store_n(&busy_stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return 0;
}

static void test_busy_hold_renewed_while_threads_wait(void **state)
{
    (void)state;
    static struct busy_arg a;
    th_name(a.name, sizeof a.name, "busyrenew");
    th_pipe_t up;
    th_pipe_open(&up);
    a.up = up.wr;
    th_proc_t q;
    assert_int_equal(th_proc_start(&q, NULL), 0);
    pid_t pid = th_fork_child(busy_child, &a);
    th_msg_t msg;
    /* a local hold begins; Q queues 100 ms into it, after the renewal
     * that each local handoff asks for (within 20 ms) */
    assert_int_equal(th_recv(up.rd, &msg, 20000), 0);
    assert_int_equal(th_recv(up.rd, &msg, 20000), 0);
    th_sleep_ms(100);
    assert_int_equal(th_proc_op_async(&q, TH_M_LOCK, a.name), 0);
    th_wait_queued(a.name, 1);
    int64_t queued = th_now_us();
    th_res_t res;
    assert_int_equal(th_proc_recv(&q, &res, 20000), 0);
    TH_ASSERT_RC(res.rc, 0);
    /* Local holds that began after Q had queued and before Q got the lock:
     * the hold under way when Q queued is the last one allowed. */
    int after = 0;
    while (th_recv(up.rd, &msg, 5) == 0)
        if (msg.a > queued && msg.a < res.t_done_us)
            after++;
    if (after)
        fail_msg("%d local hold(s) began after another process had queued (a hold lasts "
                 "400 ms): the process did not learn it waited without a push", after);
    TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, a.name), 0);
    TH_ASSERT_CHILD_OK(pid);
    assert_int_equal(th_proc_stop(&q), 0);
    th_pipe_close(&up);
}

/* ------------------------------------------------------------------------
 * An acquisition sent again after a batch-mate's deadline cut its round
 * trip.  The link writes the commands of several threads as one batch;
 * when a timed lock in it runs out, the link gives the connection up and
 * writes the timed lock's undo behind it.  It used to send the others
 * again on a new connection while their first copies were still on their
 * way to Redis (a connection stalled in the network: here the proxy holds
 * what it sends 1.5 s), to run when they arrive.  A trylock (or a
 * trylockall) sent again that way is answered EBUSY on the new
 * connection; the lock released before its first copy arrives, that copy
 * took it for a process told EBUSY, and nothing undid it: the lock stayed
 * taken a lease, and its next holder was told EOWNERDEAD though nobody
 * died.  An acquisition is now never sent twice: at the cut it ends with
 * its undo behind it, and is asked again under a new registration id. */

struct resend_arg {
    char url[64];
    char w[96], y[96], x[96], x2[96];
    int all;                      /* trylockall of X and X2, else trylock X */
    int up, down;
    dist_mutex_t mw, my, mx, mx2;
    int rc_w, rc_y, rc_x;
};

static void *resend_w(void *p)
{
    struct resend_arg *a = p;
    a->rc_w = dist_mutex_lock(&a->mw);         /* leads the first batch */
    return NULL;
}

static void *resend_y(void *p)
{
    struct resend_arg *a = p;
    struct timespec at = th_abstime_ms(1900);   /* runs out in the second batch */
    a->rc_y = dist_mutex_timedlock(&a->my, &at);
    return NULL;
}

static void *resend_x(void *p)
{
    struct resend_arg *a = p;
    dist_mutex_t *const ms[2] = { &a->mx, &a->mx2 };
    a->rc_x = a->all ? dist_mutex_trylockall(ms, 2) : dist_mutex_trylock(&a->mx);
    th_send(a->up, 2, a->rc_x, 0, 0);
    return NULL;
}

static int resend_child(void *p)
{
    struct resend_arg *a = p;
    setenv("DISTLOCK_URL", a->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "6000", 1);
    setenv("DISTLOCK_LOG", "error", 1);
    TH_CHECK_RC(dist_mutex_init(&a->mw, a->w, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&a->my, a->y, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&a->mx, a->x, NULL), 0);
    TH_CHECK_RC(dist_mutex_init(&a->mx2, a->x2, NULL), 0);
    /* connected, the scripts cached */
    TH_CHECK_RC(dist_mutex_lock(&a->my), 0);
    TH_CHECK_RC(dist_mutex_unlock(&a->my), 0);
    th_send(a->up, 1, 0, 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    /* W's lock call leads a batch that takes 1.5 s; Y's timed lock and X's
     * try queue meanwhile, and go out together in the next batch, which
     * Y's deadline cuts short half way */
    pthread_t tw, ty, tx;
    TH_CHECK(pthread_create(&tw, NULL, resend_w, a) == 0);
    th_sleep_ms(300);
    TH_CHECK(pthread_create(&ty, NULL, resend_y, a) == 0);
    TH_CHECK(pthread_create(&tx, NULL, resend_x, a) == 0);
    pthread_join(tw, NULL);
    pthread_join(ty, NULL);
    pthread_join(tx, NULL);
    TH_CHECK(th_recv(a->down, &go, 30000) == 0);
    if (a->rc_w == 0 || a->rc_w == EOWNERDEAD)
        dist_mutex_unlock(&a->mw);
    if (a->rc_y == 0 || a->rc_y == EOWNERDEAD)
        dist_mutex_unlock(&a->my);
    th_send(a->up, 3, a->rc_w, a->rc_y, 0);
    return 0;
}

static void run_resend(int all)
{
    static struct resend_arg a;
    memset(&a, 0, sizeof a);
    a.all = all;
    th_name(a.w, sizeof a.w, "resendw");
    th_name(a.y, sizeof a.y, "resendy");
    th_name(a.x, sizeof a.x, "resendx");
    th_name(a.x2, sizeof a.x2, "resendx2");
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    snprintf(a.url, sizeof a.url, "%s", th_proxy_url(px));
    th_proc_t q;
    assert_int_equal(th_proc_start(&q, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&q, TH_M_TRYLOCK, a.x), 0);      /* X is busy */
    th_pipe_t up, down;
    th_pipe_open(&up);
    th_pipe_open(&down);
    a.up = up.wr;
    a.down = down.rd;
    pid_t pid = th_fork_child(resend_child, &a);
    th_msg_t msg;
    assert_int_equal(th_recv(up.rd, &msg, 20000), 0);
    /* what its connections open now send reaches Redis 1.5 s late */
    assert_true(th_proxy_delay(px, pid, 1500, 0) > 0);
    th_send(down.wr, 1, 0, 0, 0);
    assert_int_equal(th_recv(up.rd, &msg, 30000), 0);
    assert_int_equal(msg.tag, 2);
    int rc_x = (int)msg.a;
    /* the try was answered on a new connection; X is released before its
     * first copy (if it had one) reaches Redis */
    TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, a.x), 0);
    th_sleep_ms(2500);                          /* every first copy has arrived */
    th_proxy_delay(px, pid, 0, 0);
    th_proc_t r;
    assert_int_equal(th_proc_start(&r, NULL), 0);
    int got[2];
    for (int i = 0; i < 2; i++) {
        got[i] = th_proc_op(&r, TH_M_TRYLOCK, i ? a.x2 : a.x);
        if (got[i] == 0 || got[i] == EOWNERDEAD)
            th_proc_op(&r, TH_M_UNLOCK, i ? a.x2 : a.x);
    }
    th_send(down.wr, 1, 0, 0, 0);
    assert_int_equal(th_recv(up.rd, &msg, 30000), 0);
    print_message("batch: lock W %s, timedlock Y %s, %s %s; X released, then another "
                  "process's trylocks of X and X2: %s %s\n", th_errname((int)msg.a),
                  th_errname((int)msg.b), all ? "trylockall X X2" : "trylock X",
                  th_errname(rc_x), th_errname(got[0]), th_errname(got[1]));
    TH_ASSERT_CHILD_OK(pid);
    assert_int_equal(th_proc_stop(&r), 0);
    assert_int_equal(th_proc_stop(&q), 0);
    th_pipe_close(&up);
    th_pipe_close(&down);
    th_proxy_stop(px);
    TH_ASSERT_RC(rc_x, EBUSY);
    for (int i = 0; i < 2; i++)
        if (got[i] != 0)
            fail_msg("after a %s answered EBUSY, another process's trylock of %s said %s: a "
                     "first copy of the try took it late and nothing undid it",
                     all ? "trylockall" : "trylock", i ? a.x2 : a.x, th_errname(got[i]));
}

static void test_resent_try_not_taken_late(void **state)
{
    (void)state;
    run_resend(0);
}

static void test_resent_trylockall_not_taken_late(void **state)
{
    (void)state;
    run_resend(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_restart_hold_not_passed),
        TH_TEST(test_break_hold_not_passed),
        TH_TEST(test_deleted_hold_not_passed),
        TH_TEST(test_restart_hold_not_joined),
        TH_TEST(test_deleted_hold_not_joined),
        TH_TEST(test_lost_read_hold_retaken_other_reader_told),
        TH_TEST(test_lost_read_hold_retaken_other_reader_relocks),
        TH_TEST(test_late_reply_not_returned),
        TH_TEST(test_late_confirmation_not_returned),
        TH_TEST(test_posted_renewal_survives_flush),
        TH_TEST(test_posted_renewal_survives_killed_connection),
        TH_TEST(test_ownerdead_told_once),
        TH_TEST(test_dead_waiter_no_ownerdead),
        TH_TEST(test_reader_past_validity_asks_redis),
        TH_TEST(test_undo_kept_after_later_success),
        TH_TEST(test_undo_runs_while_thread_waits),
        TH_TEST(test_busy_hold_renewed_while_threads_wait),
        TH_TEST(test_resent_try_not_taken_late),
        TH_TEST(test_resent_trylockall_not_taken_late),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
