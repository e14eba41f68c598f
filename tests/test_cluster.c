/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cluster.c - redis-cluster://: a 3-master / 3-replica cluster made
 * with `redis-cli --cluster create` (harness_topo; 127.0.0.1, free ports,
 * bus ports through cluster-port).
 *
 *  - 1000 lock names: each lock/unlock works; the keys of each name are in
 *    one slot, on the master that serves it; the names spread over all 3
 *    masters (count per master printed).
 *  - wake-ups: a waiter in another process is woken by the release
 *    promptly, for a lock on each master (DISTLOCK_LEASE_MS=30000: no
 *    fallback timer involved, which the waiter's counters confirm).
 *  - a live `redis-cli --cluster reshard` moving 2000 slots from one master
 *    to another and back, including the slots of the names in use, during
 *    a stress run of 3 processes x 3 threads on 8 names: no overlap of
 *    holds, fences increasing, no lost update, no failed call, and the run
 *    finishes.
 *  - a master SIGKILLed during a run on names of every master: its replica
 *    takes over, locks resume, no violation beyond holds reported lost.
 *  - a waiter whose process stalls past its grant's claim window does not
 *    return the lapsed grant while another process holds the lock.
 *
 * Every library call runs in a forked process with its own DISTLOCK_URL.
 */
#include "harness_topo.h"
#include "harness_checker.h"
#include "keys.h"
#include "status.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static tt_cluster_t g_c;
static char g_url[400];
static int g_masters[3];

static int group_setup(void **state)
{
    (void)state;
    tt_alarm(60);
    if (tt_cluster_start(&g_c) != 0)
        return -1;
    char u[380];
    snprintf(g_url, sizeof g_url, "DISTLOCK_URL=%s", tt_cluster_url(&g_c, 3, u, sizeof u));
    if (tt_cluster_masters(&g_c, g_masters, 3) != 3)
        return -1;
    alarm(0);
    return 0;
}

static int g_map[16384];

/* Slot -> master port, as node 0 sees it (a static buffer). */
static int *slot_map(void)
{
    assert_int_equal(tt_cluster_slot_map(&g_c, 0, g_map), 0);
    return g_map;
}

/* A name "tag.N" whose slot satisfies pred; N from *n on. */
static void name_where(char *buf, size_t size, const char *tag, int *n, int (*pred)(unsigned, void *),
                       void *arg)
{
    for (;; (*n)++) {
        snprintf(buf, size, "%s.%d", tag, *n);
        if (pred(tt_key_slot(buf, strlen(buf)), arg)) {
            (*n)++;
            return;
        }
    }
}

/* ------------------------------------------------------------ 1000 names */

#define NNAMES 1000

struct names_arg { th_pipe_t up, down; };

static int names_child(void *p)
{
    struct names_arg *a = p;
    setenv("DISTLOCK_URL", strchr(g_url, '=') + 1, 1);
    setenv("DISTLOCK_LOG", "error", 1);
    static dist_mutex_t m[NNAMES];
    char name[32];
    for (int i = 0; i < NNAMES; i++) {
        snprintf(name, sizeof name, "cn.%d", i);
        TH_CHECK_RC(dist_mutex_init(&m[i], name, NULL), 0);
        TH_CHECK_RC(dist_mutex_lock(&m[i]), 0);
        TH_CHECK_RC(dist_mutex_unlock(&m[i]), 0);
        TH_CHECK_RC(dist_mutex_lock(&m[i]), 0);
    }
    th_send(a->up.wr, 1, 0, 0, 0);            /* all held */
    th_msg_t msg;
    TH_CHECK(th_recv(a->down.rd, &msg, 20000) == 0);
    for (int i = 0; i < NNAMES; i++) {
        TH_CHECK_RC(dist_mutex_unlock(&m[i]), 0);
        TH_CHECK_RC(dist_mutex_destroy(&m[i]), 0);
    }
    return 0;
}

static void test_thousand_names(void **state)
{
    (void)state;
    /* The slot function agrees with the servers. */
    static const char *samples[] = { "distlock:{cn.1}", "distlock:{cn.1}:q", "foo", "{user1000}.following",
                                     "a{}b", "x{y}z{w}" };
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        redisReply *r = th_cmd_at(g_c.node[0].port, "CLUSTER KEYSLOT %s", samples[i]);
        assert_non_null(r);
        assert_int_equal((unsigned)r->integer, tt_key_slot(samples[i], strlen(samples[i])));
        freeReplyObject(r);
    }

    struct names_arg a;
    th_pipe_open(&a.up);
    th_pipe_open(&a.down);
    int64_t t0 = th_now_ms();
    pid_t pid = th_fork_child(names_child, &a);
    th_msg_t msg;
    if (th_recv(a.up.rd, &msg, 30000) != 0) {
        th_wait_child_ms(pid, 100);
        fail_msg("the child did not lock the %d names", NNAMES);
    }
    int64_t t_locked = th_now_ms() - t0;

    /* Every key under the prefix, on every master: where is each name? */
    int *map = slot_map();
    int owner[NNAMES];
    int nkeys[NNAMES];
    memset(owner, 0, sizeof owner);
    memset(nkeys, 0, sizeof nkeys);
    int per_master[3] = { 0, 0, 0 };
    long total = 0;
    for (int mi = 0; mi < 3; mi++) {
        int port = g_c.node[g_masters[mi]].port;
        char cursor[32] = "0";
        do {
            redisReply *r = th_cmd_at(port, "SCAN %s MATCH distlock:{cn.* COUNT 1000", cursor);
            assert_non_null(r);
            assert_int_equal(r->type, REDIS_REPLY_ARRAY);
            snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
            redisReply *keys = r->element[1];
            for (size_t k = 0; k < keys->elements; k++) {
                const char *key = keys->element[k]->str;
                size_t len = keys->element[k]->len;
                int idx = -1;
                if (sscanf(key, "distlock:{cn.%d}", &idx) != 1 || idx < 0 || idx >= NNAMES)
                    fail_msg("unexpected key %s", key);
                unsigned slot = tt_key_slot(key, len);
                char tag[32];
                snprintf(tag, sizeof tag, "cn.%d", idx);
                if (slot != tt_key_slot(tag, strlen(tag)))
                    fail_msg("key %s is not in the slot of its name's hash tag", key);
                if (map[slot] != port)
                    fail_msg("key %s (slot %u) is on %d, the slot is served by %d", key, slot, port,
                             map[slot]);
                if (owner[idx] && owner[idx] != port)
                    fail_msg("the keys of %s are on two nodes (%d, %d)", tag, owner[idx], port);
                owner[idx] = port;
                nkeys[idx]++;
                total++;
            }
            freeReplyObject(r);
        } while (strcmp(cursor, "0") != 0);
    }
    for (int i = 0; i < NNAMES; i++) {
        if (!owner[i])
            fail_msg("no key of cn.%d on any master", i);
        char key[64];
        snprintf(key, sizeof key, "distlock:{cn.%d}", i);
        if (th_cmd_at_ll(owner[i], "EXISTS %s", key) != 1)
            fail_msg("cn.%d is held but %s is not on %d", i, key, owner[i]);
        for (int mi = 0; mi < 3; mi++)
            if (g_c.node[g_masters[mi]].port == owner[i])
                per_master[mi]++;
    }
    th_send(a.down.wr, 1, 0, 0, 0);
    assert_int_equal(th_wait_child(pid), 0);
    int64_t t_all = th_now_ms() - t0;
    printf("cluster names: %d names, %ld keys; per master: %d:%d %d:%d %d:%d; "
           "init+lock+unlock+lock of all in %lld ms, total %lld ms\n",
           NNAMES, total, g_c.node[g_masters[0]].port, per_master[0], g_c.node[g_masters[1]].port,
           per_master[1], g_c.node[g_masters[2]].port, per_master[2], (long long)t_locked,
           (long long)t_all);
    fflush(stdout);
    for (int mi = 0; mi < 3; mi++)
        if (per_master[mi] < NNAMES / 5)
            fail_msg("master %d serves only %d of %d names", g_c.node[g_masters[mi]].port,
                     per_master[mi], NNAMES);
    /* Released: no hold left on any master. */
    for (int i = 0; i < NNAMES; i++) {
        char key[64];
        snprintf(key, sizeof key, "distlock:{cn.%d}", i);
        if (th_cmd_at_ll(owner[i], "EXISTS %s", key) != 0)
            fail_msg("%s still held after unlock", key);
    }
    th_pipe_close(&a.up);
    th_pipe_close(&a.down);
}

/* -------------------------------------------------------------- wake-ups */

struct on_port { int *map; int port; };

static int slot_on(unsigned slot, void *p)
{
    struct on_port *o = p;
    return o->map[slot] == o->port;
}

static void test_wakeup(void **state)
{
    (void)state;
    enum { ROUNDS = 5 };
    int *map = slot_map();
    const char *env[] = { g_url, "DISTLOCK_LEASE_MS=30000", "DISTLOCK_LOG=error", NULL };
    th_proc_t h, w;
    assert_int_equal(th_proc_start(&h, env), 0);
    assert_int_equal(th_proc_start(&w, env), 0);
    int64_t lat[3 * ROUNDS], unl[3 * ROUNDS];
    int nl = 0, n = 0;
    for (int mi = 0; mi < 3; mi++) {
        int port = g_c.node[g_masters[mi]].port;
        struct on_port o = { map, port };
        char name[64], qkey[128];
        name_where(name, sizeof name, "cw", &n, slot_on, &o);
        snprintf(qkey, sizeof qkey, "distlock:{%s}:q", name);
        for (int i = 0; i < ROUNDS; i++) {
            TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
            assert_int_equal(th_proc_op_async(&w, TH_M_LOCK, name), 0);
            if (!th_wait_zcard_at(port, qkey, 1, 3000))
                fail_msg("the waiter never queued on %s (master %d)", name, port);
            int64_t t_rel = th_now_us();
            th_res_t ru;
            TH_ASSERT_RC(th_proc_opa(&h, TH_M_UNLOCK, name, 0, &ru), 0);
            unl[nl] = ru.t_done_us - ru.t_start_us;
            th_res_t r;
            assert_int_equal(th_proc_recv(&w, &r, 15000), 0);
            TH_ASSERT_RC(r.rc, 0);
            lat[nl++] = r.t_done_us - t_rel;
            TH_ASSERT_RC(th_proc_op(&w, TH_M_UNLOCK, name), 0);
        }
    }
    int64_t worst = 0;
    printf("cluster wake-up latencies (us):");
    for (int i = 0; i < nl; i++) {
        worst = lat[i] > worst ? lat[i] : worst;
        printf(" %lld", (long long)lat[i]);
    }
    printf("\ncluster release (unlock call) durations (us):");
    for (int i = 0; i < nl; i++)
        printf(" %lld", (long long)unl[i]);
    printf("\n");
    int64_t med = th_median(lat, nl);
    th_res_t st;
    TH_ASSERT_RC(th_proc_opa(&w, TH_STATS, "", 0, &st), 0);
    printf("cluster wake-up: a waiting process got a released lock in median %lld us, worst %lld us "
           "(%d handoffs over 3 masters; fallback checks %llu)\n", (long long)med, (long long)worst, nl,
           (unsigned long long)st.fence);
    fflush(stdout);
    med /= 1000;
    worst /= 1000;
    if (worst >= 300 || med >= 50)
        fail_msg("handoff latency median %lld ms, worst %lld ms: not woken by the release",
                 (long long)med, (long long)worst);
    if (st.fence != 0)
        fail_msg("%llu waits ended by the fallback timer, not a push", (unsigned long long)st.fence);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&w), 0);
}

/* A waiter that reads its grant late (its process stalled longer than the
 * claim window, min(lease, 2 s); in a cluster the push may also come late
 * over the bus) must not return a grant that has lapsed while another
 * process holds the lock: it must go on waiting, and get the lock when
 * that holder releases it. */
static void test_late_grant(void **state)
{
    (void)state;
    int *map = slot_map();
    const char *env[] = { g_url, "DISTLOCK_LOG=off", NULL };
    th_proc_t h, w, p1;
    assert_int_equal(th_proc_start(&h, env), 0);
    assert_int_equal(th_proc_start(&w, env), 0);
    assert_int_equal(th_proc_start(&p1, env), 0);
    int n = 0;
    struct on_port o = { map, g_c.node[g_masters[1]].port };
    char name[64], qkey[128];
    name_where(name, sizeof name, "clate", &n, slot_on, &o);
    snprintf(qkey, sizeof qkey, "distlock:{%s}:q", name);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(&w, TH_M_LOCK, name), 0);
    th_wait_zcard_at(o.port, qkey, 1, 3000);
    kill(w.pid, SIGSTOP);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, name), 0);     /* granted to the stopped waiter */
    th_sleep_ms(2600);                                      /* its claim lapses */
    th_res_t r1;
    int rc1 = th_proc_opa(&p1, TH_M_TRYLOCK, name, 0, &r1);
    kill(w.pid, SIGCONT);
    if (rc1 != 0 && rc1 != EOWNERDEAD)
        fail_msg("after the grant lapsed, trylock = %s (%s)", th_errname(rc1), r1.err);
    th_res_t rw;
    if (th_proc_recv(&w, &rw, 1500) == 0)
        fail_msg("the stalled waiter returned %s from a lapsed grant while another process holds "
                 "the lock (two holders)", th_errname(rw.rc));
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(&p1, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_recv(&w, &rw, 10000), 0);
    TH_ASSERT_RC(rw.rc, 0);
    print_message("late grant: the waiter went on waiting and got the lock %lld ms after the "
                  "other holder released it\n", (long long)((rw.t_done_us - t_rel) / 1000));
    TH_ASSERT_RC(th_proc_op(&w, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&w), 0);
    assert_int_equal(th_proc_stop(&p1), 0);
}

/* ------------------------------------------------------- sharded pushes */

/* What the nodes have published, summed over every node that answers:
 * the cluster-bus messages of classic PUBLISH (broadcast to every node)
 * and of sharded SPUBLISH (to the replicas of the slot's master only:
 * CLUSTER INFO), and the calls of each command (INFO commandstats, which
 * counts the calls scripts make). */
typedef struct pubs { long long bus_classic, bus_sharded, publish, spublish; } pubs_t;

static long long stat_of(const char *text, const char *field)
{
    const char *p = strstr(text, field);
    return p ? atoll(p + strlen(field)) : 0;
}

static pubs_t publishes_of(const tt_cluster_t *c)
{
    pubs_t t = { 0, 0, 0, 0 };
    for (int i = 0; i < TT_CLUSTER_NODES; i++) {
        redisReply *r = th_cmd_at(c->node[i].port, "CLUSTER INFO");
        if (!r)
            continue;                 /* a node a test killed */
        if (r->type == REDIS_REPLY_STRING) {
            t.bus_classic += stat_of(r->str, "cluster_stats_messages_publish_sent:");
            t.bus_sharded += stat_of(r->str, "cluster_stats_messages_publishshard_sent:");
        }
        freeReplyObject(r);
        if (!(r = th_cmd_at(c->node[i].port, "INFO commandstats")))
            continue;
        if (r->type == REDIS_REPLY_STRING) {
            t.publish += stat_of(r->str, "cmdstat_publish:calls=");
            t.spublish += stat_of(r->str, "cmdstat_spublish:calls=");
        }
        freeReplyObject(r);
    }
    return t;
}

static pubs_t publishes(void)
{
    return publishes_of(&g_c);
}

static pubs_t pubs_since_of(const tt_cluster_t *c, pubs_t a)
{
    pubs_t b = publishes_of(c);
    return (pubs_t){ b.bus_classic - a.bus_classic, b.bus_sharded - a.bus_sharded,
                     b.publish - a.publish, b.spublish - a.spublish };
}

static pubs_t pubs_since(pubs_t a)
{
    return pubs_since_of(&g_c, a);
}

/* A handoff on name from h to w, the waiter queued first (on the master
 * at port): the time from the release to the waiter's return (us). */
static int64_t handoff(th_proc_t *h, th_proc_t *w, const char *name, int port)
{
    char qkey[128];
    snprintf(qkey, sizeof qkey, "distlock:{%s}:q", name);
    TH_ASSERT_RC(th_proc_op(h, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(w, TH_M_LOCK, name), 0);
    if (!th_wait_zcard_at(port, qkey, 1, 5000))
        fail_msg("the waiter never queued on %s (master %d)", name, port);
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(h, TH_M_UNLOCK, name), 0);
    th_res_t r;
    assert_int_equal(th_proc_recv(w, &r, 15000), 0);
    TH_ASSERT_RC(r.rc, 0);
    TH_ASSERT_RC(th_proc_op(w, TH_M_UNLOCK, name), 0);
    return r.t_done_us - t_rel;
}

static unsigned long long fallbacks(th_proc_t *p)
{
    th_res_t st;
    TH_ASSERT_RC(th_proc_opa(p, TH_STATS, "", 0, &st), 0);
    return (unsigned long long)st.fence;
}

/* Pushes on a cluster are sharded: a waiter on each master is woken by
 * the release (its wait ends by a push, never by asking again), and
 * during those handoffs and a contended run of 3 processes x 2 threads on
 * names of every master, no classic PUBLISH crosses the cluster bus (it
 * would be broadcast to all six nodes); the sharded messages go to the
 * replicas of each slot's master only. */
static void test_sharded_pushes(void **state)
{
    (void)state;
    enum { ROUNDS = 4 };
    int *map = slot_map();
    const char *env[] = { g_url, "DISTLOCK_LEASE_MS=30000", "DISTLOCK_LOG=error", NULL };
    th_proc_t h, w;
    assert_int_equal(th_proc_start(&h, env), 0);
    assert_int_equal(th_proc_start(&w, env), 0);
    pubs_t p0 = publishes();
    int64_t lat[3 * ROUNDS];
    int nl = 0, n = 0;
    for (int mi = 0; mi < 3; mi++) {
        struct on_port o = { map, g_c.node[g_masters[mi]].port };
        char name[64];
        name_where(name, sizeof name, "csh", &n, slot_on, &o);
        for (int i = 0; i < ROUNDS; i++)
            lat[nl++] = handoff(&h, &w, name, o.port);
    }
    unsigned long long fb = fallbacks(&w);
    pubs_t hp = pubs_since(p0), p1 = publishes();

    chk_cfg_t cfg;
    chk_cfg_background(&cfg);
    cfg.procs = 3;
    cfg.threads = 2;
    cfg.nnames = 3;
    for (int i = 0; i < cfg.nnames; i++) {
        struct on_port o = { map, g_c.node[g_masters[i]].port };
        name_where(cfg.names[i], sizeof cfg.names[i], "cshc", &n, slot_on, &o);
    }
    cfg.hold_us = 200;
    cfg.env = env;
    chk_live_t *s = chk_start(&cfg);
    assert_non_null(s);
    int64_t t0 = th_now_ms();
    while (chk_live_holds(s) < 600 && th_now_ms() - t0 < 10000)
        th_sleep_ms(20);
    chk_report_t rep;
    chk_finish(s, 15000, &rep);
    pubs_t cp = pubs_since(p1);
    int64_t med = th_median(lat, nl);
    printf("sharded pushes: %d handoffs over 3 masters, median %lld us, fallback checks %llu; "
           "PUBLISH %lld, SPUBLISH %lld; cluster bus: %lld classic and %lld sharded publish "
           "messages; then a contended run (%llu holds): PUBLISH %lld, SPUBLISH %lld, bus %lld "
           "classic, %lld sharded\n", nl, (long long)med, fb, hp.publish, hp.spublish,
           hp.bus_classic, hp.bus_sharded, (unsigned long long)rep.holds, cp.publish, cp.spublish,
           cp.bus_classic, cp.bus_sharded);
    fflush(stdout);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&w), 0);
    if (rep.children_failed || rep.overlaps)
        fail_msg("the contended run failed: %s", rep.first);
    if (fb != 0)
        fail_msg("%llu waits ended by the fallback timer, not a push", fb);
    if (med >= 50000)
        fail_msg("handoff median %lld us: not woken by the release", (long long)med);
    if (hp.bus_classic || cp.bus_classic || hp.publish || cp.publish)
        fail_msg("classic publishes crossed the cluster bus: %lld messages (%lld PUBLISH) in the "
                 "handoffs, %lld (%lld) in the contended run", hp.bus_classic, hp.publish,
                 cp.bus_classic, cp.publish);
    if (hp.spublish < nl)
        fail_msg("only %lld SPUBLISH for %d pushed grants", hp.spublish, nl);
}

/* A condition and a semaphore on a cluster are still woken by pushes, and
 * those are sharded too: a condition waiter signalled by another process
 * (counted as woken by a push in the waiter), a semaphore waiter given a
 * permit posted by another process. */
struct wake_arg { th_pipe_t up; int sem; };

static int wake_child(void *p)
{
    struct wake_arg *a = p;
    setenv("DISTLOCK_URL", strchr(g_url, '=') + 1, 1);
    setenv("DISTLOCK_LOG", "error", 1);
    if (a->sem) {
        dist_sem_t s;
        TH_CHECK_RC(dist_sem_init(&s, "csh.sem", 0, 0), 0);
        th_send(a->up.wr, 1, 0, 0, 0);
        TH_CHECK_RC(dist_sem_wait(&s), 0);
        th_send(a->up.wr, 2, th_now_us(), 0, 0);
        TH_CHECK_RC(dist_sem_destroy(&s), 0);
        return 0;
    }
    dist_mutex_t m;
    dist_cond_t c;
    TH_CHECK_RC(dist_mutex_init(&m, "csh.m", NULL), 0);
    TH_CHECK_RC(dist_cond_init(&c, "csh.c", NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    th_send(a->up.wr, 1, 0, 0, 0);
    struct timespec ts = th_abstime_ms(20000);
    TH_CHECK_RC(dist_cond_timedwait(&c, &m, &ts), 0);
    int64_t t = th_now_us();
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    dl_stats_t st;
    dl_stats_get(&st);
    th_send(a->up.wr, 2, t, (int64_t)st.cond_pushes, (int64_t)st.cond_found);
    TH_CHECK_RC(dist_cond_destroy(&c), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static void test_cond_sem_sharded(void **state)
{
    (void)state;
    setenv("DISTLOCK_URL", strchr(g_url, '=') + 1, 1);
    setenv("DISTLOCK_LOG", "error", 1);
    pubs_t p0 = publishes();
    /* The condition: this process signals with the mutex held, so the
     * waiter, which released it in its wait, is registered. */
    struct wake_arg a = { .sem = 0 };
    th_pipe_open(&a.up);
    pid_t pid = th_fork_child(wake_child, &a);
    th_msg_t msg;
    assert_int_equal(th_recv(a.up.rd, &msg, 20000), 0);
    dist_mutex_t m;
    dist_cond_t c;
    TH_ASSERT_RC(dist_mutex_init(&m, "csh.m", NULL), 0);
    TH_ASSERT_RC(dist_cond_init(&c, "csh.c", NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    int64_t t_sig = th_now_us();
    TH_ASSERT_RC(dist_cond_signal(&c), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    assert_int_equal(th_recv(a.up.rd, &msg, 20000), 0);
    int64_t cond_us = msg.a - t_sig;
    long long pushes = msg.b, found = msg.c;
    assert_int_equal(th_wait_child(pid), 0);
    th_pipe_close(&a.up);
    /* The semaphore: posted once its waiter is queued. */
    struct wake_arg b = { .sem = 1 };
    th_pipe_open(&b.up);
    pid = th_fork_child(wake_child, &b);
    assert_int_equal(th_recv(b.up.rd, &msg, 20000), 0);
    dist_sem_t s;
    TH_ASSERT_RC(dist_sem_init(&s, "csh.sem", 0, 0), 0);
    char qkey[64];
    snprintf(qkey, sizeof qkey, "distlock:{%c%ccsh.sem}:q", DL_TAG_ESC, 's');
    int *map = slot_map();
    if (!th_wait_zcard_at(map[tt_key_slot(qkey, strlen(qkey))], qkey, 1, 10000))
        fail_msg("the semaphore's waiter never queued");
    int64_t t_post = th_now_us();
    TH_ASSERT_RC(dist_sem_post(&s), 0);
    assert_int_equal(th_recv(b.up.rd, &msg, 20000), 0);
    int64_t sem_us = msg.a - t_post;
    assert_int_equal(th_wait_child(pid), 0);
    th_pipe_close(&b.up);
    TH_ASSERT_RC(dist_sem_destroy(&s), 0);
    TH_ASSERT_RC(dist_cond_destroy(&c), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    pubs_t d = pubs_since(p0);
    printf("cluster condition: woken %lld us after the signal (pushes %lld, found by asking %lld); "
           "semaphore: %lld us after the post; PUBLISH %lld, SPUBLISH %lld; cluster bus: %lld "
           "classic, %lld sharded publish messages\n", (long long)cond_us, pushes, found,
           (long long)sem_us, d.publish, d.spublish, d.bus_classic, d.bus_sharded);
    fflush(stdout);
    if (pushes != 1 || found != 0)
        fail_msg("the condition waiter was not woken by the push (pushes %lld, found %lld)", pushes,
                 found);
    if (sem_us > 5000000)
        fail_msg("the semaphore waiter returned %lld ms after the post", (long long)sem_us / 1000);
    if (d.bus_classic || d.publish)
        fail_msg("classic publishes crossed the cluster bus: %lld messages (%lld PUBLISH)",
                 d.bus_classic, d.publish);
    if (d.spublish < 2)
        fail_msg("%lld SPUBLISH for two pushes", d.spublish);
}

/* A cluster whose nodes have no sharded pub/sub, as before Redis 7
 * (SPUBLISH and SSUBSCRIBE renamed away on every node): the scripts' push
 * falls back to a classic PUBLISH (lua/common.lua), the subscriber to one
 * classic SUBSCRIBE (conn/shardsub.c), and a waiter on each master is
 * still woken by the push, never by asking again. */
static void test_before_redis7(void **state)
{
    (void)state;
    tt_alarm(120);
    static const char *const more[] = { "--rename-command", "SPUBLISH", "",
                                        "--rename-command", "SSUBSCRIBE", "", NULL };
    tt_cluster_t c;
    assert_int_equal(tt_cluster_start_with(&c, more), 0);
    char u[380], url[400];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", tt_cluster_url(&c, 3, u, sizeof u));
    int masters[3];
    assert_int_equal(tt_cluster_masters(&c, masters, 3), 3);
    static int map[16384];
    assert_int_equal(tt_cluster_slot_map(&c, 0, map), 0);
    const char *env[] = { url, "DISTLOCK_LEASE_MS=30000", "DISTLOCK_LOG=error", NULL };
    th_proc_t h, w;
    assert_int_equal(th_proc_start(&h, env), 0);
    assert_int_equal(th_proc_start(&w, env), 0);
    pubs_t p0 = publishes_of(&c);
    int64_t lat[6];
    int nl = 0, n = 0;
    for (int mi = 0; mi < 3; mi++) {
        struct on_port o = { map, c.node[masters[mi]].port };
        char name[64];
        name_where(name, sizeof name, "cold", &n, slot_on, &o);
        for (int i = 0; i < 2; i++)
            lat[nl++] = handoff(&h, &w, name, o.port);
    }
    unsigned long long fb = fallbacks(&w);
    pubs_t d = pubs_since_of(&c, p0);
    int64_t med = th_median(lat, nl);
    printf("nodes without sharded pub/sub: %d handoffs, median %lld us, fallback checks %llu; "
           "classic bus messages %lld (PUBLISH %lld)\n", nl, (long long)med, fb, d.bus_classic,
           d.publish);
    fflush(stdout);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&w), 0);
    tt_cluster_stop(&c);
    if (fb != 0)
        fail_msg("%llu waits ended by the fallback timer, not a push", fb);
    if (med >= 50000)
        fail_msg("handoff median %lld us: not woken by the release", (long long)med);
    if (d.bus_classic == 0)
        fail_msg("no classic publish: the pushes did not fall back");
}

/* ------------------------------------------------------------ odd names */

/* Names whose hash tag needs care: one starting with '}' would give the
 * empty tag "{}" (Redis then hashes each whole key: the lock's keys in
 * different slots, every call CROSSSLOT), and the escape byte itself. */
static const char *const odd_names[] = { "}", "}x", "a}b", "{x}", "\x01", "\x01}x" };
#define NODD (sizeof odd_names / sizeof odd_names[0])

struct odd_arg { th_pipe_t up, down; };

static int odd_child(void *p)
{
    struct odd_arg *a = p;
    setenv("DISTLOCK_URL", strchr(g_url, '=') + 1, 1);
    static dist_mutex_t m[NODD];
    static dist_rwlock_t rw[NODD];
    char name[32];
    for (size_t i = 0; i < NODD; i++) {
        snprintf(name, sizeof name, "%s", odd_names[i]);
        TH_CHECK_RC(dist_mutex_init(&m[i], name, NULL), 0);
        TH_CHECK_RC(dist_mutex_lock(&m[i]), 0);
        TH_CHECK_RC(dist_mutex_unlock(&m[i]), 0);
        TH_CHECK_RC(dist_mutex_trylock(&m[i]), 0);
        TH_CHECK_RC(dist_mutex_unlock(&m[i]), 0);
        /* a rwlock of another name (a rwlock and a mutex of one name
         * would be one lock) */
        snprintf(name, sizeof name, "%s.rw", odd_names[i]);
        TH_CHECK_RC(dist_rwlock_init(&rw[i], name, NULL), 0);
        TH_CHECK_RC(dist_rwlock_rdlock(&rw[i]), 0);
        TH_CHECK_RC(dist_rwlock_unlock(&rw[i]), 0);
        TH_CHECK_RC(dist_rwlock_wrlock(&rw[i]), 0);
        TH_CHECK_RC(dist_rwlock_unlock(&rw[i]), 0);
        TH_CHECK_RC(dist_rwlock_tryrdlock(&rw[i]), 0);
        TH_CHECK_RC(dist_rwlock_unlock(&rw[i]), 0);
        TH_CHECK_RC(dist_mutex_lock(&m[i]), 0);
    }
    th_send(a->up.wr, 1, 0, 0, 0);            /* all held */
    th_msg_t msg;
    TH_CHECK(th_recv(a->down.rd, &msg, 20000) == 0);
    for (size_t i = 0; i < NODD; i++) {
        TH_CHECK_RC(dist_mutex_unlock(&m[i]), 0);
        TH_CHECK_RC(dist_mutex_destroy(&m[i]), 0);
        TH_CHECK_RC(dist_rwlock_destroy(&rw[i]), 0);
    }
    return 0;
}

static void test_odd_names(void **state)
{
    (void)state;
    /* each lock's six keys in one slot, as the servers compute it */
    for (size_t i = 0; i < NODD; i++) {
        size_t len = strlen(odd_names[i]);
        char *buf = malloc(dl_keys_size("distlock:", len));
        const char *k[DL_KEYS_N];
        size_t kl[DL_KEYS_N];
        assert_non_null(buf);
        dl_keys_write(buf, "distlock:", odd_names[i], len, k, kl);
        long long slot0 = -1;
        for (int j = 0; j < DL_KEYS_N; j++) {
            redisReply *r = th_cmd_at(g_c.node[0].port, "CLUSTER KEYSLOT %b", k[j], kl[j]);
            assert_non_null(r);
            if (j == 0)
                slot0 = r->integer;
            else if (r->integer != slot0)
                fail_msg("name #%zu: key %d in slot %lld, the main key in %lld", i, j, r->integer, slot0);
            freeReplyObject(r);
        }
        free(buf);
    }
    struct odd_arg a;
    th_pipe_open(&a.up);
    th_pipe_open(&a.down);
    pid_t pid = th_fork_child(odd_child, &a);
    th_msg_t msg;
    if (th_recv(a.up.rd, &msg, 30000) != 0) {
        th_wait_child_ms(pid, 100);
        fail_msg("the locks on odd names failed in the cluster (see the child's message)");
    }
    /* each held on the master serving its slot */
    int *map = slot_map();
    for (size_t i = 0; i < NODD; i++) {
        char k[64];
        snprintf(k, sizeof k, "distlock:{%s%s}",
                 odd_names[i][0] == '}' || odd_names[i][0] == DL_TAG_ESC ? "\x01" : "", odd_names[i]);
        unsigned slot = tt_key_slot(k, strlen(k));
        assert_int_equal(th_cmd_at_ll(map[slot], "EXISTS %b", k, strlen(k)), 1);
    }
    th_send(a.down.wr, 1, 0, 0, 0);
    TH_ASSERT_CHILD_OK(pid);
    th_pipe_close(&a.up);
    th_pipe_close(&a.down);
}

/* ?wait=1 on a cluster: each master has a replica, so acquisitions on
 * every master are confirmed. */
static void test_wait_query(void **state)
{
    (void)state;
    int *map = slot_map();
    char u[440];
    snprintf(u, sizeof u, "%s?wait=1&wait_ms=1000", g_url);
    const char *env[] = { u, "DISTLOCK_LOG=error", NULL };
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, env), 0);
    int n = 0;
    for (int mi = 0; mi < 3; mi++) {
        struct on_port o = { map, g_c.node[g_masters[mi]].port };
        char name[64];
        name_where(name, sizeof name, "cwait", &n, slot_on, &o);
        TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
        TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    }
    assert_int_equal(th_proc_stop(&p), 0);
}

/* --------------------------------------------------------------- reshard */

#define MOVE_SLOTS 2000

static int slot_low(unsigned slot, void *p)
{
    (void)p;
    return slot < MOVE_SLOTS;
}

static void test_reshard_stress(void **state)
{
    (void)state;
    tt_alarm(120);                  /* about 8 s; several times that under load */
    int *map = slot_map();
    int ia = tt_cluster_index(&g_c, map[0]);        /* serves slots 0.. */
    int ib = -1;
    for (int mi = 0; mi < 3; mi++)
        if (g_masters[mi] != ia)
            ib = g_masters[mi];
    assert_true(ia >= 0 && ib >= 0);
    for (int s = 0; s < MOVE_SLOTS; s++)
        if (map[s] != g_c.node[ia].port)
            fail_msg("slot %d is not on the master of slot 0; cannot move the first %d slots", s,
                     MOVE_SLOTS);

    const char *env[] = { g_url, "DISTLOCK_LOG=error", NULL };
    chk_cfg_t cfg;
    chk_cfg_background(&cfg);
    cfg.procs = 3;
    cfg.threads = 3;
    cfg.nnames = 8;
    int n = 0;
    for (int i = 0; i < cfg.nnames; i++)
        name_where(cfg.names[i], sizeof cfg.names[i], "cr", &n, slot_low, NULL);
    cfg.hold_us = 100;
    cfg.env = env;
    int64_t t0 = th_now_ms();
    chk_live_t *s = chk_start(&cfg);
    assert_non_null(s);
    while (chk_live_holds(s) < 200 && th_now_ms() - t0 < 10000)
        th_sleep_ms(10);

    char log[400], key0[128];
    snprintf(key0, sizeof key0, "distlock:{%s}:m", cfg.names[0]);
    int64_t r0 = th_now_ms();
    uint64_t h0 = chk_live_holds(s);
    pid_t rp = tt_reshard_start(&g_c, ia, ib, MOVE_SLOTS, 10, log, sizeof log);
    assert_true(rp > 0);
    int st1 = tt_wait_bg(rp, 30000);
    int64_t r1 = th_now_ms();
    uint64_t h1 = chk_live_holds(s);
    long long moved_to_b = th_cmd_at_ll(g_c.node[ib].port, "EXISTS %s", key0);
    /* redis-cli refuses to reshard until every node has the new map. */
    int agreed = tt_cluster_wait_ok(&g_c, 10000);
    int64_t r1b = th_now_ms();
    pid_t rp2 = tt_reshard_start(&g_c, ib, ia, MOVE_SLOTS, 10, log, sizeof log);
    assert_true(rp2 > 0);
    int st2 = tt_wait_bg(rp2, 30000);
    int64_t r2 = th_now_ms();
    uint64_t h2 = chk_live_holds(s);
    long long back_on_a = th_cmd_at_ll(g_c.node[ia].port, "EXISTS %s", key0);
    th_sleep_ms(300);

    chk_report_t rep;
    chk_finish(s, 15000, &rep);
    int64_t total = th_now_ms() - t0;
    chk_print(stdout, "cluster reshard", &rep);
    printf("cluster reshard: %d slots %d->%d in %lld ms (%llu holds meanwhile), back in %lld ms "
           "(%llu holds); run %lld ms, %llu holds, %.0f holds/s\n",
           MOVE_SLOTS, g_c.node[ia].port, g_c.node[ib].port, (long long)(r1 - r0),
           (unsigned long long)(h1 - h0), (long long)(r2 - r1b), (unsigned long long)(h2 - h1),
           (long long)total, (unsigned long long)rep.holds, rep.holds * 1000.0 / (double)total);
    fflush(stdout);
    if (!agreed)
        fail_msg("the nodes did not agree on the slot map after the first reshard");
    if (st1 != 0 || st2 != 0) {
        static char out[4097];
        FILE *f = fopen(log, "r");
        if (f) {
            size_t got = fread(out, 1, 4096, f);
            out[got] = 0;
            fclose(f);
        }
        fail_msg("redis-cli --cluster reshard failed (%d, %d): %s", st1, st2, out);
    }
    if (moved_to_b != 1 || back_on_a != 1)
        fail_msg("the keys of %s did not move (on B after the first reshard: %lld, on A after the "
                 "second: %lld)", cfg.names[0], moved_to_b, back_on_a);
    if (rep.children_failed)
        fail_msg("%d workers failed", rep.children_failed);
    if (rep.overlaps || rep.excused || rep.fence_inversions)
        fail_msg("mutual exclusion broken during the reshard: %s", rep.first);
    if (rep.lost_updates)
        fail_msg("%llu lost updates", (unsigned long long)rep.lost_updates);
    if (rep.lock_eio || rep.lock_other || rep.unlock_enolck || rep.unlock_eio || rep.unlock_other)
        fail_msg("failed calls during the reshard: %s", rep.first_error);
    if (h1 == h0 || h2 == h1)
        fail_msg("no lock was taken while slots moved");
    if (!rep.redirects)
        fail_msg("no MOVED/ASK redirection was followed: the names' slots did not move under the run");
    assert_true(tt_cluster_wait_ok(&g_c, 10000));
    char *out = NULL;
    int chk = tt_cluster_check(&g_c, &out);
    if (chk != 0) {
        printf("cluster check after the reshard:\n%s\n", out);     /* whole */
        free(out);
        fail_msg("cluster check after the reshard failed (above)");
    }
    free(out);
}

/* ------------------------------------------------------ a slot migrating */

/* A command on a node that must not fail. */
#define node_ok(port, ...)                                                    \
    do {                                                                      \
        redisReply *r_ = th_cmd_at((port), __VA_ARGS__);                      \
        assert_non_null(r_);                                                  \
        if (r_->type == REDIS_REPLY_ERROR)                                    \
            fail_msg("node %d: %s", (port), r_->str);                         \
        freeReplyObject(r_);                                                  \
    } while (0)

/* What `redis-cli --cluster reshard` does for one slot, in steps a test
 * can stop between: open the migration (IMPORTING on the target, then
 * MIGRATING on the source), move keys, and close it (the slot given to the
 * target on every master). */
static void migration_open(unsigned slot, int from, int to)
{
    node_ok(g_c.node[to].port, "CLUSTER SETSLOT %u IMPORTING %s", slot, g_c.id[from]);
    node_ok(g_c.node[from].port, "CLUSTER SETSLOT %u MIGRATING %s", slot, g_c.id[to]);
}

/* MIGRATE of one key (the test playing the migrator): 1 moved, 0 none. */
static int migrate_key(int from, int to, const char *key)
{
    redisReply *r = th_cmd_at(g_c.node[from].port, "MIGRATE 127.0.0.1 %d %s 0 5000 KEYS %s",
                              g_c.node[to].port, "", key);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("MIGRATE %s: %s", key, r->str);
    int moved = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    freeReplyObject(r);
    return moved;
}

static void migration_close(unsigned slot, int from, int to)
{
    for (;;) {                          /* the rest of the slot's keys */
        redisReply *r = th_cmd_at(g_c.node[from].port, "CLUSTER GETKEYSINSLOT %u 100", slot);
        assert_true(r && r->type == REDIS_REPLY_ARRAY);
        size_t n = r->elements;
        for (size_t i = 0; i < n; i++)
            migrate_key(from, to, r->element[i]->str);
        freeReplyObject(r);
        if (!n)
            break;
    }
    node_ok(g_c.node[to].port, "CLUSTER SETSLOT %u NODE %s", slot, g_c.id[to]);
    node_ok(g_c.node[from].port, "CLUSTER SETSLOT %u NODE %s", slot, g_c.id[to]);
    for (int mi = 0; mi < 3; mi++)
        if (g_masters[mi] != from && g_masters[mi] != to)
            node_ok(g_c.node[g_masters[mi]].port, "CLUSTER SETSLOT %u NODE %s", slot,
                            g_c.id[to]);
    assert_true(tt_cluster_wait_ok(&g_c, 20000));
}

/* Whether node i has key (asking: as the node importing its slot, which
 * answers only after ASKING; the source answers ASK for a key it lacks). */
static int key_at(int i, const char *key, int asking)
{
    struct timeval tv = { 5, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", g_c.node[i].port, tv);
    assert_true(c && !c->err);
    redisSetTimeout(c, tv);
    if (asking)
        redisAppendCommand(c, "ASKING");
    redisAppendCommand(c, "EXISTS %s", key);
    redisReply *r = NULL;
    if (asking) {
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
    int has = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    redisFree(c);
    return has;
}

static int slot_high_on(unsigned slot, void *p)
{
    return slot >= MOVE_SLOTS && slot_on(slot, p);
}

/* While the slot of a held lock migrates (slowly: longer than the lease),
 * its keys split between the two nodes by the migrator, the lock keeps
 * working: another process's trylock says EBUSY (not EIO), the holder's
 * renewals keep the hold past its lease, its unlock says 0, and the lock
 * is then free.  No script runs where only part of the lock's keys are:
 * run on the source without the lock's hash, it would grant the lock to
 * the trylock. */
static void test_lock_while_slot_migrates(void **state)
{
    (void)state;
    tt_alarm(120);
    int *map = slot_map();
    int ia = g_masters[1], ib = g_masters[2];
    struct on_port o = { map, g_c.node[ia].port };
    char name[64], key[160];
    int n = 0;
    name_where(name, sizeof name, "cmig", &n, slot_high_on, &o);
    unsigned slot = tt_key_slot(name, strlen(name));
    snprintf(key, sizeof key, "distlock:{%s}", name);
    const char *env[] = { g_url, "DISTLOCK_LEASE_MS=3000", "DISTLOCK_IO_TIMEOUT_MS=2000",
                          "DISTLOCK_LOG=error", NULL };
    th_proc_t p, q;
    assert_int_equal(th_proc_start(&p, env), 0);
    assert_int_equal(th_proc_start(&q, env), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    assert_int_equal(th_cmd_at_ll(g_c.node[ia].port, "EXISTS %s", key), 1);

    migration_open(slot, ia, ib);
    /* The migrator has moved the lock's hash, not yet its meta hash.  (Each
     * check below is noted and the run goes on, so that a failure shows
     * all that went wrong; the test fails at the end.) */
    assert_int_equal(migrate_key(ia, ib, key), 1);
    char bad[600] = "";
    th_res_t r;
    int rc = th_proc_opa(&q, TH_M_TRYLOCK, name, 0, &r);
    print_message("slot %u migrating, the lock's keys split: trylock %s after %lld ms \"%s\"\n", slot,
                  th_errname(rc), (long long)((r.t_done_us - r.t_start_us) / 1000), r.err);
    if (rc != EBUSY)
        snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "trylock while split: %s; ",
                 th_errname(rc));
    char mkey[160];
    snprintf(mkey, sizeof mkey, "distlock:{%s}:m", name);
    int on_a = key_at(ia, key, 0) + key_at(ia, mkey, 0), on_b = key_at(ib, key, 1) + key_at(ib, mkey, 1);
    print_message("keys of the lock on the source: %d, on the target: %d\n", on_a, on_b);
    if (on_a != 0 || on_b != 2)
        snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "keys: %d on the source, %d on the "
                 "target; ", on_a, on_b);
    /* A migration longer than the lease: the holder's renewals go on. */
    th_sleep_ms(4000);
    rc = th_proc_op(&q, TH_M_TRYLOCK, name);
    print_message("after 4 s (lease 3 s): another process's trylock %s\n", th_errname(rc));
    if (rc != EBUSY)
        snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "trylock after 4 s: %s; ",
                 th_errname(rc));
    if (rc == 0)
        th_proc_op(&q, TH_M_UNLOCK, name);
    rc = th_proc_opa(&p, TH_M_UNLOCK, name, 0, &r);
    print_message("the holder's unlock: %s \"%s\"\n", th_errname(rc), r.err);
    if (rc != 0)
        snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "unlock: %s; ", th_errname(rc));
    rc = th_proc_op(&q, TH_M_TRYLOCK, name);
    if (rc != 0)
        snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "trylock once free: %s", th_errname(rc));
    if (bad[0])
        fail_msg("slot migrating: %s", bad);
    TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, name), 0);
    /* Closed: the lock lives on the target. */
    migration_close(slot, ia, ib);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    assert_int_equal(th_cmd_at_ll(g_c.node[ib].port, "EXISTS %s", key), 1);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    /* And back, the lock free this time, keys moved by the library. */
    migration_open(slot, ib, ia);
    TH_ASSERT_RC(th_proc_op(&q, TH_M_LOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_TRYLOCK, name), EBUSY);
    TH_ASSERT_RC(th_proc_op(&q, TH_M_UNLOCK, name), 0);
    migration_close(slot, ib, ia);
    assert_int_equal(th_proc_stop(&p), 0);
    assert_int_equal(th_proc_stop(&q), 0);
    char *out = NULL;
    int chk = tt_cluster_check(&g_c, &out);
    if (chk != 0) {
        printf("cluster check after the migrations:\n%s\n", out);     /* whole */
        free(out);
        fail_msg("cluster check after the migrations failed (above)");
    }
    free(out);
}

/* The lock's keys of slot moved from node `from` to `to` (the slot
 * migrating), the migrator's part of a reshard before it closes. */
static void migrate_slot_keys(unsigned slot, int from, int to)
{
    for (;;) {
        redisReply *r = th_cmd_at(g_c.node[from].port, "CLUSTER GETKEYSINSLOT %u 100", slot);
        assert_true(r && r->type == REDIS_REPLY_ARRAY);
        size_t n = r->elements;
        for (size_t i = 0; i < n; i++)
            migrate_key(from, to, r->element[i]->str);
        freeReplyObject(r);
        if (!n)
            break;
    }
}

/* A reshard of a lock's slot while another process waits for it.  Redis
 * drops the waiter's sharded subscription on the old owner when the
 * migration closes (an `sunsubscribe` it sends unasked); the waiter's
 * subscriber follows the slot to its new owner, so a release after the
 * reshard reaches it by a push there: its wait ends by the push, not by
 * asking again on its timer (every ~670 ms), and promptly (a loose bound:
 * 200 ms).  Then a release while the slot migrates back, which runs on
 * the importing node, where nobody is subscribed yet: the waiter gets the
 * lock once the migration closes (subscribed again on the new owner, it
 * asks Redis), within 3 s of the close. */
static void test_reshard_waiter(void **state)
{
    (void)state;
    tt_alarm(120);
    int *map = slot_map();
    int ia = g_masters[1], ib = g_masters[2];
    struct on_port o = { map, g_c.node[ia].port };
    char name[64], qkey[128];
    int n = 0;
    name_where(name, sizeof name, "crw", &n, slot_high_on, &o);
    unsigned slot = tt_key_slot(name, strlen(name));
    snprintf(qkey, sizeof qkey, "distlock:{%s}:q", name);
    const char *env[] = { g_url, "DISTLOCK_LEASE_MS=30000", "DISTLOCK_LOG=error", NULL };
    th_proc_t h, w;
    assert_int_equal(th_proc_start(&h, env), 0);
    assert_int_equal(th_proc_start(&w, env), 0);
    pubs_t p0 = publishes();

    /* A release after the reshard closed. */
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(&w, TH_M_LOCK, name), 0);
    if (!th_wait_zcard_at(g_c.node[ia].port, qkey, 1, 5000))
        fail_msg("the waiter never queued");
    migration_open(slot, ia, ib);
    migration_close(slot, ia, ib);
    th_sleep_ms(200);
    int64_t t_rel = th_now_us();
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, name), 0);
    th_res_t r;
    assert_int_equal(th_proc_recv(&w, &r, 15000), 0);
    TH_ASSERT_RC(r.rc, 0);
    int64_t lat_a = r.t_done_us - t_rel;
    unsigned long long fb = fallbacks(&w);
    TH_ASSERT_RC(th_proc_op(&w, TH_M_UNLOCK, name), 0);

    /* A release while the slot migrates back: it runs on the importing
     * node (ASK), where the waiter is not subscribed yet. */
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(&w, TH_M_LOCK, name), 0);
    if (!th_wait_zcard_at(g_c.node[ib].port, qkey, 1, 5000))
        fail_msg("the waiter never queued after the reshard");
    migration_open(slot, ib, ia);
    migrate_slot_keys(slot, ib, ia);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_UNLOCK, name), 0);
    int64_t t_rel2 = th_now_us();
    migration_close(slot, ib, ia);
    int64_t close_us = th_now_us() - t_rel2;
    assert_int_equal(th_proc_recv(&w, &r, 15000), 0);
    TH_ASSERT_RC(r.rc, 0);
    int64_t lat_b = r.t_done_us - t_rel2;
    TH_ASSERT_RC(th_proc_op(&w, TH_M_UNLOCK, name), 0);
    /* And a handoff on the slot's first owner again, by a push. */
    unsigned long long fb1 = fallbacks(&w);
    th_sleep_ms(200);
    int64_t lat_c = handoff(&h, &w, name, g_c.node[ia].port);
    unsigned long long fb2 = fallbacks(&w);
    pubs_t d = pubs_since(p0);
    printf("reshard with a waiter: released after the reshard, woken in %lld us (fallback checks "
           "%llu); released while the slot migrated, got the lock %lld us after the release (the "
           "migration closed in %lld us; fallback checks %llu); back on the first owner "
           "%lld us (fallback checks %llu); PUBLISH %lld, SPUBLISH %lld, bus %lld classic\n",
           (long long)lat_a, fb, (long long)lat_b, (long long)close_us, fb1 - fb,
           (long long)lat_c, fb2 - fb1, d.publish, d.spublish, d.bus_classic);
    fflush(stdout);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&w), 0);
    if (fb != 0 || fb2 != fb1)
        fail_msg("after the reshard, a wait ended by the fallback timer, not a push (%llu, %llu)",
                 fb, fb2 - fb1);
    if (lat_a > 200000 || lat_c > 200000)
        fail_msg("after the reshard, a handoff took %lld / %lld ms", (long long)lat_a / 1000,
                 (long long)lat_c / 1000);
    if (lat_b > close_us + 3000000)
        fail_msg("released while the slot migrated: the waiter got the lock %lld ms after the "
                 "release (the migration closed in %lld ms)", (long long)lat_b / 1000,
                 (long long)close_us / 1000);
    if (d.publish || d.bus_classic)
        fail_msg("classic publishes crossed the cluster bus (%lld)", d.bus_classic);
    char *out = NULL;
    int chk = tt_cluster_check(&g_c, &out);
    if (chk != 0) {
        printf("cluster check after the reshards:\n%s\n", out);     /* whole */
        free(out);
        fail_msg("cluster check after the reshards failed (above)");
    }
    free(out);
}

/* --------------------------------------------------------------- failover */

/* A master (not node 0, which the harness reads the slot map from) is
 * SIGKILLed during a run on names of every master; its replica takes over
 * after cluster-node-timeout (3000 ms); the workers ride it out
 * (DISTLOCK_IO_TIMEOUT_MS=8000 covers CLUSTERDOWN and the dead node;
 * DISTLOCK_LEASE_MS=3000 bounds a hold left in the promoted replica). */
static void test_master_failover(void **state)
{
    (void)state;
    tt_alarm(120);                  /* node timeout + election, under load */
    int *map = slot_map();
    int victim = -1;
    for (int mi = 0; mi < 3; mi++)
        if (g_masters[mi] != 0)
            victim = g_masters[mi];
    assert_true(victim > 0);
    int vport = g_c.node[victim].port;
    const char *env[] = { g_url, "DISTLOCK_IO_TIMEOUT_MS=8000", "DISTLOCK_LEASE_MS=3000",
                          "DISTLOCK_LOG=off", NULL };
    chk_cfg_t cfg;
    chk_cfg_background(&cfg);
    cfg.procs = 3;
    cfg.threads = 2;
    cfg.nnames = 6;
    int n = 0;
    for (int i = 0; i < cfg.nnames; i++) {
        struct on_port o = { map, g_c.node[g_masters[i % 3]].port };
        name_where(cfg.names[i], sizeof cfg.names[i], "cf", &n, slot_on, &o);
    }
    cfg.hold_us = 200;
    cfg.lock_how = CHK_TIMED;
    cfg.timed_ms = 3000;
    cfg.fence_vouched_only = 1;         /* holds reported lost may precede the failover */
    cfg.env = env;
    chk_live_t *s = chk_start(&cfg);
    assert_non_null(s);
    int64_t t0 = th_now_ms();
    while ((chk_live_holds(s) < 300 || th_now_ms() - t0 < 1000) && th_now_ms() - t0 < 10000)
        th_sleep_ms(10);

    int64_t t_kill_us = th_now_us();
    pid_t vpid = g_c.node[victim].pid;
    th_server_kill(&g_c.node[victim]);
    tt_forget(vpid);
    /* Until a replica serves the victim's slots and the names of the
     * victim lock again, then 1 s more. */
    int64_t t_promoted = -1, t_back = -1;
    for (;;) {
        int64_t now = th_now_ms();
        if (t_promoted < 0 && tt_cluster_slot_map(&g_c, 0, map) == 0) {
            int moved = 1;
            for (int i = 0; i < cfg.nnames; i++)
                if (map[tt_key_slot(cfg.names[i], strlen(cfg.names[i]))] == vport ||
                    map[tt_key_slot(cfg.names[i], strlen(cfg.names[i]))] == 0)
                    moved = 0;
            if (moved)
                t_promoted = now;
        }
        int procs = 0;
        if (t_promoted >= 0 && t_back < 0 && chk_holds_since(s, th_now_us() - 200000, &procs) &&
            procs == cfg.procs)
            t_back = now;
        if (t_back >= 0 && now - t_back > 1000)
            break;
        if (now - t_kill_us / 1000 > 25000)
            break;
        th_sleep_ms(20);
    }
    chk_report_t rep;
    chk_finish(s, 15000, &rep);
    /* Per victim name: the longest time without an acquisition after the kill. */
    chk_print(stdout, "cluster failover", &rep);
    int64_t vgap = 0;
    for (int i = 0; i < cfg.nnames; i++)
        if (g_masters[i % 3] == victim && rep.name_gap_ms[i] > vgap)
            vgap = rep.name_gap_ms[i];
    printf("cluster failover: replica serves the slots %lld ms after the SIGKILL; cluster failover gap: "
           "%lld ms on the killed master's names (%lld ms with no lock taken at all)\n",
           (long long)(t_promoted >= 0 ? t_promoted - t_kill_us / 1000 : -1), (long long)vgap,
           (long long)rep.max_gap_ms);
    fflush(stdout);
    if (t_promoted < 0)
        fail_msg("no replica took over the killed master's slots");
    if (t_back < 0)
        fail_msg("lock operations did not resume in every process");
    if (rep.children_failed)
        fail_msg("%d workers failed", rep.children_failed);
    if (rep.overlaps || rep.fence_inversions)
        fail_msg("mutual exclusion broken among holds the library did not report lost: %s", rep.first);
    if (rep.lost_updates > rep.excused)
        fail_msg("%llu lost updates", (unsigned long long)rep.lost_updates);
    if (rep.lock_other || rep.unlock_other)
        fail_msg("unexpected return codes: %s", rep.first_error);
    if (rep.max_call_ms > 3000 + 8000 + 2500)
        fail_msg("a lock call took %lld ms", (long long)rep.max_call_ms);
}

/* A master (not node 0) that has a replica now, as CLUSTER SLOTS of node
 * 0 says: its index, or -1. */
static int master_with_replica(void)
{
    redisReply *r = th_cmd_at(g_c.node[0].port, "CLUSTER SLOTS");
    int found = -1;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements && found < 0; i++) {
        const redisReply *e = r->element[i];
        if (e->elements < 4)
            continue;
        int port = (int)e->element[2]->element[1]->integer;
        if (port != g_c.node[0].port)
            found = tt_cluster_index(&g_c, port);
    }
    if (r)
        freeReplyObject(r);
    return found;
}

/* The master of a lock's slot fails while another process waits for the
 * lock: the waiter's subscriber loses its connection to that node and
 * subscribes on the replica that takes over; the waiter gets the lock
 * when the holder releases it, and the handoffs after the failover are
 * woken by pushes from the new master (never by asking again).  A timed
 * lock of another name of that shard made while it fails over, which
 * cannot subscribe until a replica takes over, ends as the command path
 * does (ETIMEDOUT, or the lock), never EIO. */
static void test_failover_waiter(void **state)
{
    (void)state;
    tt_alarm(150);
    int victim = master_with_replica();
    for (int64_t t0 = th_now_ms(); victim < 0 && th_now_ms() - t0 < 15000; th_sleep_ms(100))
        victim = master_with_replica();     /* (replicas show once known everywhere) */
    if (victim < 0)
        skip();
    int vport = g_c.node[victim].port;
    int *map = slot_map();
    struct on_port o = { map, vport };
    char name[64], qkey[128];
    int n = 0;
    name_where(name, sizeof name, "cfw", &n, slot_on, &o);
    unsigned slot = tt_key_slot(name, strlen(name));
    snprintf(qkey, sizeof qkey, "distlock:{%s}:q", name);
    const char *env[] = { g_url, "DISTLOCK_LEASE_MS=10000", "DISTLOCK_IO_TIMEOUT_MS=8000",
                          "DISTLOCK_LOG=off", NULL };
    th_proc_t h, w;
    assert_int_equal(th_proc_start(&h, env), 0);
    assert_int_equal(th_proc_start(&w, env), 0);
    TH_ASSERT_RC(th_proc_op(&h, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(&w, TH_M_LOCK, name), 0);
    if (!th_wait_zcard_at(vport, qkey, 1, 5000))
        fail_msg("the waiter never queued");
    th_sleep_ms(500);                 /* (the replica has the queue) */
    /* A third process that will lock another name of the shard while it
     * fails over, its subscriber not yet subscribed there. */
    th_proc_t t;
    assert_int_equal(th_proc_start(&t, env), 0);
    char name2[64];
    name_where(name2, sizeof name2, "cfw", &n, slot_on, &o);
    int64_t t_kill = th_now_ms();
    pid_t vpid = g_c.node[victim].pid;
    th_server_kill(&g_c.node[victim]);
    tt_forget(vpid);
    /* Its node is gone: no subscription can be made until a replica takes
     * over; the call waits the failover out as the command path does, and
     * never says EIO for it. */
    th_res_t rt;
    int trc = th_proc_opa(&t, TH_M_TIMEDLOCK, name2, 2000, &rt);
    if (trc == 0)
        TH_ASSERT_RC(th_proc_op(&t, TH_M_UNLOCK, name2), 0);
    int nport = 0;
    while (th_now_ms() - t_kill < 30000) {
        if (tt_cluster_slot_map(&g_c, 0, map) == 0 && map[slot] && map[slot] != vport) {
            nport = map[slot];
            break;
        }
        th_sleep_ms(50);
    }
    if (!nport)
        fail_msg("no replica took over slot %u", slot);
    int64_t t_promoted = th_now_ms();
    th_res_t ru, r;
    int urc = th_proc_opa(&h, TH_M_UNLOCK, name, 0, &ru);
    int64_t t_rel = th_now_us();
    assert_int_equal(th_proc_recv(&w, &r, 30000), 0);
    if (r.rc != 0 && r.rc != EOWNERDEAD)
        fail_msg("the waiter's lock after the failover: %s (%s)", th_errname(r.rc), r.err);
    int64_t lat = r.t_done_us - t_rel;
    TH_ASSERT_RC(th_proc_op(&w, TH_M_UNLOCK, name), 0);
    /* Handoffs on the new master. */
    th_sleep_ms(300);
    unsigned long long fb0 = fallbacks(&w);
    pubs_t p0 = publishes();
    int64_t lat2[3];
    for (int i = 0; i < 3; i++)
        lat2[i] = handoff(&h, &w, name, nport);
    unsigned long long fb1 = fallbacks(&w);
    pubs_t d = pubs_since(p0);
    printf("failover with a waiter: a timed lock (2 s) of another name of the shard just after "
           "the SIGKILL: %s \"%s\"\n", th_errname(trc), rt.err);
    printf("failover with a waiter: slot %u served by %d %lld ms after the SIGKILL of %d; the "
           "holder's unlock %s after %lld ms; the waiter got the lock %lld ms after it; then 3 "
           "handoffs on the new master: %lld / %lld / %lld us, fallback checks %llu, PUBLISH "
           "%lld, SPUBLISH %lld\n", slot, nport, (long long)(t_promoted - t_kill), vport,
           th_errname(urc), (long long)((ru.t_done_us - ru.t_start_us) / 1000),
           (long long)lat / 1000, (long long)lat2[0], (long long)lat2[1], (long long)lat2[2],
           fb1 - fb0, d.publish, d.spublish);
    fflush(stdout);
    assert_int_equal(th_proc_stop(&h), 0);
    assert_int_equal(th_proc_stop(&w), 0);
    assert_int_equal(th_proc_stop(&t), 0);
    if (trc != 0 && trc != ETIMEDOUT)
        fail_msg("a timed lock during the failover: %s (%s)", th_errname(trc), rt.err);
    if (lat > 5000000)
        fail_msg("the waiter got the lock %lld ms after the release", (long long)lat / 1000);
    if (fb1 != fb0)
        fail_msg("after the failover, %llu waits ended by the fallback timer, not a push",
                 fb1 - fb0);
    if (d.publish || d.spublish < 3)
        fail_msg("after the failover: PUBLISH %lld, SPUBLISH %lld", d.publish, d.spublish);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TT_TEST(test_thousand_names),
        TT_TEST(test_wakeup),
        TT_TEST(test_odd_names),
        TT_TEST(test_wait_query),
        TT_TEST(test_late_grant),
        TT_TEST(test_sharded_pushes),
        TT_TEST(test_cond_sem_sharded),
        TT_TEST(test_before_redis7),
        TT_TEST(test_reshard_stress),
        TT_TEST(test_lock_while_slot_migrates),
        TT_TEST(test_reshard_waiter),
        TT_TEST(test_master_failover),
        TT_TEST(test_failover_waiter),
    };
    return th_run_tests(tests, group_setup, tt_group_teardown);
}
