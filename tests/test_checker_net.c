/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_checker_net.c - the exclusion checker (harness_checker.h) against an
 * adversary: P processes x T threads reach Redis through the test proxy
 * (harness_proxy.h), with a short I/O time-out and short leases, while a
 * driver in the parent delays one process's connection past the library's
 * give-up and delivers what it held after the process reconnected (bytes
 * of an abandoned connection reach Redis after those of its new one), and
 * stops holder processes (SIGSTOP) for longer than the lease, or for 1.5
 * claim windows right after a pushed grant.
 *
 * What is checked in every case: no two holds overlap where one of them
 * vouched for its time (its unlock returned 0), no fence goes backwards,
 * Redis (asked directly, not through the proxy) has each hold while it
 * runs unless its unlock said ENOLCK/EIO, no update is lost.  Where only
 * the network misbehaves (nothing stalls for a lease), no hold may be lost
 * at all: no unlock says ENOLCK, no lock says EOWNERDEAD.  Where a holder
 * is stopped for less than its lease, the hold that ran across the stop
 * must not be lost, and nobody may take the lock over meanwhile.
 *
 * Cases that need the protocol-hardening fixes (they fail on the code
 * before them; see docs/RELIABILITY.md, "The checker against an adversarial
 * network"):
 *   test_stale_release_after_reconnect   a release written on a connection
 *                                        the library gave up reaches Redis
 *                                        late and ends a newer hold
 *   test_stale_release_same_hold         ... or the same hold, which the next
 *                                        lock call took back ("mine")
 *   test_stall_past_lease(_rwlock)       a process stopped past its lease
 *                                        hands the lapsed hold to its threads
 *   test_stall_after_grant               a 3 s stop right after a pushed grant
 *                                        (lease 8 s) loses the lock
 *   test_stall_after_relock              the same after a relock of a lingering
 *                                        hold
 * On code without those fixes, CHECKER_NET_SKIP_FIXES=1 skips these six.
 * Run only some: TH_FILTER='test_jitter*' (a cmocka filter pattern).
 * CHECKER_NET_ROUNDS (default 3) sets the rounds of each scripted case,
 * CHECKER_NET_SEED (default 1) the proxy's random delays, CHECKER_NET_HOW
 * (1 blocking, 2 trylock loops; default a mix) the lock calls of the jitter
 * cases.
 */
#include "harness.h"
#include "harness_checker.h"
#include "harness_proxy.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

static long env_long(const char *var, long def)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return def;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x <= 0 ? def : x;
}

/* The env of the processes under test, through proxy px. */
struct net_env {
    char url[96], io[48], lease[48];
    const char *env[5];
};

static void net_env(struct net_env *e, th_proxy_t *px, long io_ms, long lease_ms)
{
    snprintf(e->url, sizeof e->url, "DISTLOCK_URL=%s", th_proxy_url(px));
    snprintf(e->io, sizeof e->io, "DISTLOCK_IO_TIMEOUT_MS=%ld", io_ms);
    snprintf(e->lease, sizeof e->lease, "DISTLOCK_LEASE_MS=%ld", lease_ms);
    e->env[0] = e->url;
    e->env[1] = e->io;
    e->env[2] = e->lease;
    e->env[3] = "DISTLOCK_LOG=error";    /* lost holds are expected: counted, not logged */
    e->env[4] = NULL;
}

static void net_cfg(chk_cfg_t *c, const char *name, const struct net_env *e, pid_t *pids)
{
    memset(c, 0, sizeof *c);
    c->kind = CHK_MUTEX;
    c->procs = 2;
    c->threads = 2;
    c->ops = 400000;                /* a cap: the driver ends the run */
    c->name = name;
    c->env = e->env;
    c->retry_errors = 1;            /* EIO while a connection is frozen: retried */
    c->quiet = 1;
    c->verify_port = th_redis_port();
    c->tick_ms = 1;
    c->max_ms = 50000;
    c->pids_out = pids;
}

/* Ends the adversary: what the proxy still keeps (frozen, or delayed) is
 * delivered, as a network that heals does, before the proxy goes.  (Cut
 * instead, a release of a process that has ended since would be lost, and
 * its hold would stay in Redis for a lease, rightly.) */
static void drain_and_stop(th_proxy_t *px)
{
    th_proxy_thaw(px);
    if (!th_proxy_settled(px, 3000))
        print_message("the proxy still had bytes to deliver after 3 s\n");
    th_proxy_stop(px);
}

/* The pid in the lock hash's holder info ("host\tpid\ttid"), 0 if none;
 * the hold's fence, and the registration id of the request that took it
 * or last took it back ("mine"). */
static pid_t redis_holder(const char *name, uint64_t *fence, uint64_t *rid)
{
    char key[300];
    th_key(key, sizeof key, name, "");
    redisReply *r = th_cmd("HMGET %s info fence rid", key);
    pid_t pid = 0;
    *fence = *rid = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING) {
        const char *tab = strchr(r->element[0]->str, '\t');
        if (tab)
            pid = (pid_t)atoi(tab + 1);
        *fence = strtoull(r->element[1]->str, NULL, 10);
        if (r->element[2]->type == REDIS_REPLY_STRING)
            *rid = strtoull(r->element[2]->str, NULL, 10);
    }
    freeReplyObject(r);
    return pid;
}

static void print_losses(const char *title, const chk_report_t *r)
{
    print_message("%s: %llu holds, overlaps %llu (excused %llu), Redis disagreed %llu "
                  "(excused %llu), fence inversions %llu, lost updates %llu, unlock ENOLCK %llu "
                  "EIO %llu, lock EOWNERDEAD %llu EIO %llu\n", title,
                  (unsigned long long)r->holds, (unsigned long long)r->overlaps,
                  (unsigned long long)r->excused, (unsigned long long)r->redis_bad,
                  (unsigned long long)r->redis_bad_excused,
                  (unsigned long long)r->fence_inversions, (unsigned long long)r->lost_updates,
                  (unsigned long long)r->unlock_enolck, (unsigned long long)r->unlock_eio,
                  (unsigned long long)r->ownerdead, (unsigned long long)r->lock_eio);
}

/* The checks every case makes: exclusion, fences, Redis agreeing, every
 * hold recorded; and with no_loss (no stall was longer than the lease) no
 * hold lost either. */
static void assert_clean(int rc, const chk_cfg_t *c, const chk_report_t *r, int no_loss,
                         const char *what)
{
    if (rc != 0 || r->overlaps || r->fence_inversions || r->redis_bad ||
        ((r->lost_updates || r->torn_reads) && !r->excused))
        fail_msg("%s: %s", what, r->first[0] ? r->first : "violations, see the totals");
    assert_int_equal(r->holds, r->expected);
    assert_int_equal(r->lock_other + r->unlock_other, 0);
    if (no_loss && (r->unlock_enolck || r->ownerdead))
        fail_msg("%s: %llu hold(s) lost (unlock ENOLCK) and %llu taken over after a lapse "
                 "(EOWNERDEAD), though nothing stalled for as long as the lease (%s)", what,
                 (unsigned long long)r->unlock_enolck, (unsigned long long)r->ownerdead,
                 r->first_loss);
    int left = -1;
    for (int i = 0; i < 100 && left != 0; i++) {  /* releases still on their way */
        left = chk_keys_left(c->name);
        if (left)
            th_sleep_ms(20);
    }
    if (left) {
        static const char *const suffix[] = { "", ":r", ":ri", ":q", ":w" };
        for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
            char key[300];
            th_key(key, sizeof key, c->name, suffix[i]);
            long long ttl = th_cmd_ll("PTTL %s", key);
            if (ttl == -2)
                continue;
            redisReply *o = th_cmd(i == 0 ? "HGET %s info" : "TYPE %s", key);
            int str = o->type == REDIS_REPLY_STRING || o->type == REDIS_REPLY_STATUS;
            print_message("left: %s (ttl %lld ms): %s\n", key, ttl, str ? o->str : "?");
            freeReplyObject(o);
        }
        fail_msg("%s: %d key(s) of the lock left in Redis after the run", what, left);
    }
}

/* The cases that fail on the code before the protocol-hardening fixes. */
static int skip_needs_fix(void)
{
    if (!env_long("CHECKER_NET_SKIP_FIXES", 0))
        return 0;
    print_message("skipped (CHECKER_NET_SKIP_FIXES=1): needs the protocol-hardening fixes\n");
    return 1;
}

/* ------------------------------------------------ stale release (finding 1) */

enum { ST_WARM, ST_FROZEN, ST_AIM, ST_COOL, ST_DONE };

struct stale_drv {
    th_proxy_t *px;
    const char *name;
    pid_t *pids;
    long io_ms;
    int rounds, round, state;
    int64_t t;
    pid_t victim;
    uint64_t frozen_fence, frozen_rid;  /* the victim's hold when it was frozen */
    int same_hold;                  /* aim at that hold taken back by the victim's
                                       next lock call ("mine": a new registration
                                       id; the fence stays, or a fix renews it) */
    int aimed, missed, empty;       /* thaws while the victim held / not / nothing kept */
};

static void stale_tick(void *arg, int64_t ms, uint64_t done)
{
    struct stale_drv *d = arg;
    (void)done;
    switch (d->state) {
    case ST_WARM:
    case ST_COOL:
        if (ms - d->t < (d->state == ST_WARM ? 300 : 400))
            return;
        if (d->round == d->rounds) {
            d->state = ST_DONE;
            chk_stop();
            return;
        }
        {
            /* A process inside a write hold: its next command on this
             * connection is the release of that hold (or the watchdog's
             * linger end). */
            pid_t v = chk_writer_now();
            if (!v || (d->same_hold && v != d->pids[0]) ||
                th_proxy_freeze(d->px, v, TH_PROXY_COMMANDS, 0) == 0)
                return;
            d->victim = v;
            uint64_t f, rid;
            redis_holder(d->name, &f, &rid);
            d->frozen_fence = f;      /* the hold whose release is kept */
            d->frozen_rid = rid;
        }
        d->state = ST_FROZEN;
        d->t = ms;
        return;
    case ST_FROZEN: {
        /* The library gives the connection up after its I/O time-out (its
         * release fails with EIO), reconnects and goes on; the bytes it
         * wrote on the old one stay with the proxy. */
        th_proxy_stats_t s;
        th_proxy_get_stats(d->px, &s);
        /* same_hold: aim as soon as the client gave the connection up (its
         * next lock call then takes the hold back, and holds it 100 ms) */
        if (d->same_hold && s.frozen_closed > 0 && ms - d->t < 2000) {
            d->state = ST_AIM;
            d->t = ms;
            return;
        }
        if (ms - d->t < d->io_ms + 300)
            return;
        if (s.frozen_bytes == 0) {
            d->empty++;               /* it sent nothing there: try again */
            th_proxy_thaw(d->px);
            d->state = ST_COOL;
            d->t = ms;
            return;
        }
        d->state = ST_AIM;
        d->t = ms;
        return;
    }
    case ST_AIM:
        /* Deliver them while the victim holds the lock again: a newer hold
         * (a greater fence), taken on its new connection, or (same_hold)
         * the old hold, which its next lock call found still its own in
         * Redis and took back (its registration id changed); 2 s at most. */
        uint64_t f, rid;
        if (redis_holder(d->name, &f, &rid) == d->victim &&
            (d->same_hold ? rid != d->frozen_rid : f > d->frozen_fence))
            d->aimed++;
        else if (ms - d->t < 2000)
            return;
        else
            d->missed++;
        th_proxy_thaw(d->px);
        d->round++;
        d->state = ST_COOL;
        d->t = ms;
        return;
    default:
        return;
    }
}

static void run_stale_release(int same_hold, const char *tag, const char *title)
{
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    struct net_env e;
    net_env(&e, px, 300, 6000);
    char name[128];
    th_name(name, sizeof name, tag);
    pid_t pids[2];
    chk_cfg_t c;
    net_cfg(&c, name, &e, pids);
    c.hold_us = 1500;
    static const int how[2] = { CHK_BLOCKING, CHK_TRY_ONLY }, nth[2] = { 1, 2 };
    if (same_hold) {
        c.proc_lock_how = how;
        c.proc_threads = nth;
        c.hold_us = 100000;
    }
    struct stale_drv d;
    memset(&d, 0, sizeof d);
    d.px = px;
    d.name = name;
    d.pids = pids;
    d.io_ms = 300;
    d.same_hold = same_hold;
    d.rounds = (int)env_long("CHECKER_NET_ROUNDS", 3);
    c.tick = stale_tick;
    c.tick_arg = &d;
    chk_report_t r;
    int rc = chk_run(&c, &r);
    th_proxy_thaw(px);
    th_proxy_stats_t s;
    th_proxy_get_stats(px, &s);
    chk_print(stderr, title, &r);
    print_message("rounds %d: delivered while the victim held %s %d, not %d, nothing kept %d; "
                  "proxy: %llu connections frozen, %llu delivered after their client closed "
                  "(%llu bytes)\n", d.round, same_hold ? "the hold taken back" : "a newer hold",
                  d.aimed, d.missed, d.empty, (unsigned long long)s.frozen,
                  (unsigned long long)s.late_conns, (unsigned long long)s.late_bytes);
    print_losses(title, &r);
    drain_and_stop(px);
    assert_clean(rc, &c, &r, 1, title);
    if (d.aimed == 0 || s.late_conns == 0)
        fail_msg("the scenario never happened: %d of %d rounds delivered a given-up connection's "
                 "bytes while its process held the lock (%llu late connections)", d.aimed,
                 d.round, (unsigned long long)s.late_conns);
}

/* Finding 1.  2 processes x 2 threads, I/O time-out 300 ms, lease 6 s.
 * Each round: while a process (the victim) is inside a write hold, the
 * proxy freezes its command connection; the release that follows stays
 * with the proxy, the library gives the connection up (EIO), reconnects
 * and goes on locking; when the victim holds the lock again, the frozen
 * bytes reach Redis.  That release was for an older hold: it must not end
 * the newer one.  Nothing here stalls for a lease, so no hold may be lost
 * (no ENOLCK, no EOWNERDEAD), and no hold may overlap one unlocked with 0.
 * Before the fix (release.lua deletes whatever hold the process has) the
 * newer hold ends in Redis, the other process gets the lock, and the
 * victim's threads go on with it (local handoff: unlock 0, overlaps, Redis
 * disagreeing) or learn it at unlock (ENOLCK). */
static void test_stale_release_after_reconnect(void **state)
{
    (void)state;
    if (skip_needs_fix())
        skip();
    run_stale_release(0, "net-stale-rel", "stale release after a reconnect");
}

/* Finding 1, through the hold's own fence.  Two processes: the first with
 * one thread that blocks and holds the lock 100 ms each time, the other
 * with 2 threads that only try.  Each round freezes the first process's
 * command connection inside a hold: its release at the end of the hold
 * stays with the proxy, the library gives up (EIO), and its next lock call
 * finds the hold still its own in Redis ("mine") and takes it back, with
 * the same fence (or a new one, if a fix gives it one).  While that hold
 * is held the old release is delivered.
 * A release that acts on whatever hold the process has, or only on the
 * fence it names, ends it: the other process takes the lock, and the
 * holder's unlock is told "released already" (0) or ENOLCK.  The hold
 * must not end: no loss, no overlap. */
static void test_stale_release_same_hold(void **state)
{
    (void)state;
    if (skip_needs_fix())
        skip();
    run_stale_release(1, "net-stale-same", "stale release of a hold taken back");
}

/* ----------------------------------------- process stalls (findings 3, 4) */

struct stop_drv {
    th_proxy_t *px;
    int first_only;                 /* stop only the first process (any mode of hold) */
    int min_inside;                 /* ... when this many of its threads hold (default 1) */
    const pid_t *pids;
    int rounds, round;
    long stop_ms, freeze_ms, warm_ms, gap_ms;
    int64_t t;
    pid_t stopped;
    int freeze_on_resume;
    int froze;
    int missed;                     /* stops that found no thread inside the hold */
    int64_t pause_until;            /* no stop before then (ms) */
    int64_t t_stop_ns;              /* when the current stop began */
    char log[256];                  /* "pid@ms" of each stop (CLOCK_MONOTONIC ms) */
    int nwin;                       /* the stops: who, from, to (CLOCK_MONOTONIC ns) */
    pid_t win_pid[16];
    int64_t win_from[16], win_to[16];
};

/* Whether every thread of process pid is stopped (group stop complete). */
static int all_stopped(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (!dir)
        return 0;
    int all = 1, any = 0;
    struct dirent *de;
    while (all && (de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char sp[300], buf[512];
        snprintf(sp, sizeof sp, "/proc/%d/task/%s/stat", (int)pid, de->d_name);
        FILE *f = fopen(sp, "r");
        if (!f)
            continue;                       /* a thread that just ended */
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *rp = strrchr(buf, ')');     /* "tid (comm) S ..." */
        any = 1;
        all = rp && rp[1] == ' ' && (rp[2] == 'T' || rp[2] == 't');
    }
    closedir(dir);
    return all && any;
}

/* Waits (up to 200 ms) until process pid is stopped: 1, else 0. */
static int wait_stopped(pid_t pid)
{
    for (int i = 0; i < 400; i++) {
        if (all_stopped(pid))
            return 1;
        th_sleep_us(500);
    }
    return 0;
}

static void stop_tick(void *arg, int64_t ms, uint64_t done)
{
    struct stop_drv *d = arg;
    (void)done;
    if (d->stopped) {
        if (ms - d->t < d->stop_ms)
            return;
        /* On resuming, the process's renewal (overdue) is the first thing
         * that could tell it the hold lapsed: with freeze_on_resume its
         * command connection answers only after freeze_ms, as a slow
         * network would. */
        if (d->freeze_on_resume && th_proxy_freeze(d->px, d->stopped, TH_PROXY_COMMANDS,
                                                   d->freeze_ms) > 0)
            d->froze++;
        if (d->nwin < 16) {             /* (before the signal: the process may
                                           run before we read the clock) */
            d->win_pid[d->nwin] = d->stopped;
            d->win_from[d->nwin] = d->t_stop_ns;
            d->win_to[d->nwin++] = chk_now_ns();
        }
        kill(d->stopped, SIGCONT);
        d->stopped = 0;
        d->round++;
        d->t = ms;
        return;
    }
    if (ms - d->t < (d->round ? d->gap_ms : d->warm_ms) || ms < d->pause_until)
        return;
    if (d->round == d->rounds) {
        chk_stop();
        return;
    }
    /* A process with a thread inside a write hold right now. */
    /* A process with a thread inside a hold right now: the first one
     * (d->first_only, any mode), or any one inside a write hold. */
    int want = d->min_inside > 0 ? d->min_inside : 1;
    pid_t v = d->first_only ? (chk_inside(0) >= want ? d->pids[0] : 0) : chk_writer_now();
    if (!v)
        return;
    int64_t t_stop = chk_now_ns();
    kill(v, SIGSTOP);
    /* Once it is stopped, is its thread still inside the hold?  (It may
     * have unlocked and queued again in between: stopping a waiter is
     * another scenario.)  If not, let it go on and try again. */
    if (!wait_stopped(v) || (d->first_only ? chk_inside(0) < want : chk_writer_now() != v)) {
        kill(v, SIGCONT);
        d->missed++;
        /* It may have been stopped just as a grant reached it: let it
         * claim that in peace before the next try. */
        d->pause_until = ms + 300;
        return;
    }
    d->stopped = v;
    d->t = ms;
    d->t_stop_ns = t_stop;
    size_t len = strlen(d->log);
    snprintf(d->log + len, sizeof d->log - len, "%s%d@%lld", len ? " " : "", (int)v,
             (long long)th_now_ms());
}

static int run_stops(chk_cfg_t *c, struct stop_drv *d, th_proxy_t *px, chk_report_t *r,
                     const char *title)
{
    c->tick = stop_tick;
    c->tick_arg = d;
    int rc = chk_run(c, r);
    if (d->stopped)
        kill(d->stopped, SIGCONT);
    th_proxy_thaw(px);
    chk_print(stderr, title, r);
    print_message("%d stop(s) of %ld ms inside a hold (%d more let go: the hold had ended), %d "
                  "with the renewal held back: %s\n", d->round, d->stop_ms, d->missed, d->froze,
                  d->log);
    print_losses(title, r);
    return rc;
}

/* Finding 3.  Two processes: the first with 3 threads that lock with
 * blocking calls (so that some always wait in the process, and it passes
 * its hold from thread to thread), the other with 2 threads that only try
 * (so nobody ever queues in Redis, and the first never hears that another
 * process wants the lock).  Lease 800 ms.  Each round stops the first
 * process while one of its threads is inside the lock, for two leases
 * (1.6 s): its hold lapses in Redis and the other process takes the lock
 * (EOWNERDEAD: allowed, the stall was longer than the lease).  On
 * resuming, its overdue renewal is held back 400 ms by the proxy (a slow
 * network).  Before the fix (a lapse is known only from a failed renewal)
 * its threads go on passing the lapsed hold among themselves, unlock
 * returning 0, while the other process takes the lock again and again:
 * overlaps, and Redis disagreeing.  After it (a hold is reused in the
 * process only while its lease, as last confirmed, runs), the hold that
 * ran across the stop is reported lost (ENOLCK or EIO) and nothing
 * overlaps a hold unlocked with 0. */
static void run_stall_past_lease(int kind, int min_inside, const char *tag, const char *title)
{
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    struct net_env e;
    net_env(&e, px, 1000, 800);
    char name[128];
    th_name(name, sizeof name, tag);
    pid_t pids[2];
    chk_cfg_t c;
    net_cfg(&c, name, &e, pids);
    static const int how[2] = { CHK_BLOCKING, CHK_TRY_ONLY }, nth[2] = { 3, 2 };
    c.kind = kind;
    c.write_pct = 50;
    c.threads = 3;
    c.proc_lock_how = how;
    c.proc_threads = nth;
    c.hold_us = 500;
    struct stop_drv d;
    memset(&d, 0, sizeof d);
    d.px = px;
    d.rounds = (int)env_long("CHECKER_NET_ROUNDS", 3);
    d.stop_ms = 1600;
    d.freeze_on_resume = 1;
    d.freeze_ms = 400;
    d.warm_ms = 300;
    d.gap_ms = 800;
    d.first_only = 1;
    d.min_inside = min_inside;
    d.pids = pids;
    chk_report_t r;
    int rc = run_stops(&c, &d, px, &r, title);
    drain_and_stop(px);
    assert_clean(rc, &c, &r, 0, title);
    if (r.excused + r.overlaps == 0 || d.round == 0)
        fail_msg("the scenario never happened: %d stop(s), and no hold of the other process ran "
                 "during one", d.round);
}

static void test_stall_past_lease(void **state)
{
    (void)state;
    if (skip_needs_fix())
        skip();
    run_stall_past_lease(CHK_MUTEX, 1, "net-stall-lease", "a holder stopped for two leases");
}

/* The same with an rwlock, half the holds reads, stopping the process
 * while two of its threads hold (two readers, mostly): on resuming, the
 * first to unlock leaves the other holding, so its unlock does not end the
 * process's hold in Redis, and must still not return 0 for a hold that
 * lapsed during the stop.  The stopped process's threads may also join the
 * lapsed read hold. */
static void test_stall_past_lease_rwlock(void **state)
{
    (void)state;
    if (skip_needs_fix())
        skip();
    run_stall_past_lease(CHK_RWLOCK, 2, "net-stall-lease-rw",
                         "an rwlock holder stopped for two leases");
}

/* The holds that ran across a stop must not have been lost (their unlock
 * returned 0), and no other process may have taken the lock over during a
 * stop or within a second after it (EOWNERDEAD); losses elsewhere are
 * printed.  Returns a description of the first such loss, or NULL. */
static const char *stopped_hold_lost(const struct stop_drv *d, const chk_hold_t *h, uint64_t n,
                                     char *buf, size_t size)
{
    const char *bad = NULL;
    for (uint64_t i = 0; i < n; i++) {
        int in_stop = 0, across = 0;
        for (int k = 0; k < d->nwin; k++) {
            across |= h[i].pid == d->win_pid[k] && h[i].t_start_ns < d->win_from[k] &&
                      h[i].t_end_ns > d->win_to[k];
            in_stop |= h[i].t_start_ns >= d->win_from[k] &&
                       h[i].t_start_ns < d->win_to[k] + 1000000000LL;
        }
        const char *what = NULL;
        if (across && h[i].unlock_rc != 0)
            what = "the hold that ran across a stop was lost";
        else if (in_stop && h[i].lock_rc == EOWNERDEAD)
            what = "another process took the lock over after a lapse during a stop";
        if (what && !bad) {
            snprintf(buf, size, "%s: pid %d fence %llu, lock %s, unlock %s", what, h[i].pid,
                     (unsigned long long)h[i].fence, th_errname(h[i].lock_rc),
                     th_errname(h[i].unlock_rc));
            bad = buf;
        } else if (!what && (h[i].unlock_rc == ENOLCK || h[i].lock_rc == EOWNERDEAD)) {
            print_message("a loss away from the stops: pid %d fence %llu at %lld ms, lock %s, "
                          "unlock %s\n", h[i].pid, (unsigned long long)h[i].fence,
                          (long long)(h[i].t_start_ns / 1000000), th_errname(h[i].lock_rc),
                          th_errname(h[i].unlock_rc));
        }
    }
    return bad;
}

static void run_stall_after_handoff(int fair, const char *tag, const char *title)
{
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    struct net_env e;
    net_env(&e, px, 1000, 8000);
    char name[128];
    th_name(name, sizeof name, tag);
    pid_t pids[3];
    chk_cfg_t c;
    net_cfg(&c, name, &e, pids);
    c.procs = fair ? 3 : 2;
    c.threads = 1;
    c.fair = fair;
    c.hold_us = 300;
    c.lock_how = CHK_BLOCKING;
    chk_hold_t *holds = NULL;
    uint64_t nholds = 0;
    c.holds_out = &holds;
    c.nholds_out = &nholds;
    struct stop_drv d;
    memset(&d, 0, sizeof d);
    d.px = px;
    d.rounds = (int)env_long("CHECKER_NET_ROUNDS", 3);
    d.stop_ms = 3000;
    d.warm_ms = 300;
    d.gap_ms = 300;
    chk_report_t r;
    int rc = run_stops(&c, &d, px, &r, title);
    drain_and_stop(px);
    char buf[300];
    const char *lost = stopped_hold_lost(&d, holds, nholds, buf, sizeof buf);
    free(holds);
    assert_clean(rc, &c, &r, 0, title);
    if (lost)
        fail_msg("%s: %s (a stop of 3 s, lease 8 s)", title, lost);
    if (d.nwin == 0)
        fail_msg("the scenario never happened: no stop inside a hold");
}

/* Finding 4.  3 processes x 1 thread, fair mutex (so every hold passes
 * to another process by a grant pushed from Redis), blocking locks, lease
 * 8 s: a pushed grant lives its claim window (2 s) until renewed.  Each
 * round stops the process inside a write hold, just granted, for 3 s (1.5
 * claim windows, well under the lease).  No hold may be lost: the others
 * wait.  Before the fix the grant still had its 2 s claim ttl (renewed
 * only at half of it, by the stopped process's own watchdog): it lapses,
 * another process takes it (EOWNERDEAD) and the stopped one's unlock says
 * ENOLCK. */
static void test_stall_after_grant(void **state)
{
    (void)state;
    if (skip_needs_fix())
        skip();
    run_stall_after_handoff(1, "net-stall-grant", "a holder stopped 3 s right after a grant");
}

/* Finding 4, the other way a hold comes to live a claim window only: 2
 * processes x 1 thread looping over a mutex that is not fair, so that a
 * thread relocking at once keeps its hold lingering while the other process
 * waits (its time in Redis cut to the claim window, 2 s) and takes it back,
 * a few times, before a grant passes it over.  Each round stops the process
 * inside a write hold (taken back from a linger, or just granted) for 3 s,
 * well under the 8 s lease: no hold may be lost. */
static void test_stall_after_relock(void **state)
{
    (void)state;
    if (skip_needs_fix())
        skip();
    run_stall_after_handoff(0, "net-stall-relock", "a holder stopped 3 s right after a relock");
}

/* ------------------------------------------------------------ the proxy */

static redisContext *px_connect(th_proxy_t *px)
{
    struct timeval tv = { 5, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", th_proxy_port(px), tv);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisSetTimeout(c, tv);
    return c;
}

/* The proxy's own features, without the library: a frozen connection's
 * bytes reach Redis after those of a connection opened later, even when
 * their client closed it meanwhile, and in their own order; subscriber
 * connections are left alone with TH_PROXY_COMMANDS; a timed freeze ends
 * by itself; JITTER reorders connections but never one connection. */
static void test_proxy_reorders_across_connections(void **state)
{
    (void)state;
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    char key[300];
    th_key(key, sizeof key, "pxorder", "");
    th_cmd_do("DEL %s", key);

    redisContext *sub = px_connect(px), *old = px_connect(px);
    redisReply *rr = redisCommand(sub, "SUBSCRIBE %s", key);
    assert_non_null(rr);
    freeReplyObject(rr);
    rr = redisCommand(old, "PING");                  /* the proxy has seen both */
    freeReplyObject(rr);
    assert_int_equal(th_proxy_freeze(px, 0, TH_PROXY_COMMANDS, 0), 1);   /* not `sub` */
    redisAppendCommand(old, "RPUSH %s old1", key);
    redisAppendCommand(old, "RPUSH %s old2", key);
    redisBufferWrite(old, &(int){ 0 });
    th_sleep_ms(50);
    redisFree(old);                                  /* given up, as the library does */
    redisContext *fresh = px_connect(px);
    rr = redisCommand(fresh, "RPUSH %s new", key);
    assert_non_null(rr);
    freeReplyObject(rr);
    assert_int_equal(th_cmd_ll("PUBLISH %s x", key), 1);   /* the subscriber is there */
    assert_int_equal(th_cmd_ll("LLEN %s", key), 1);
    th_proxy_stats_t s;
    th_proxy_get_stats(px, &s);
    assert_int_equal(s.frozen_now, 1);
    assert_true(s.frozen_bytes > 0);
    assert_int_equal(th_proxy_thaw(px), 1);
    assert_true(th_proxy_settled(px, 2000));
    for (int i = 0; i < 100 && th_cmd_ll("LLEN %s", key) < 3; i++)
        th_sleep_ms(5);
    redisReply *l = th_cmd("LRANGE %s 0 -1", key);
    assert_int_equal(l->elements, 3);
    assert_string_equal(l->element[0]->str, "new");
    assert_string_equal(l->element[1]->str, "old1");
    assert_string_equal(l->element[2]->str, "old2");
    freeReplyObject(l);
    th_proxy_get_stats(px, &s);
    assert_int_equal(s.late_conns, 1);
    assert_true(s.late_bytes > 0);

    /* a timed freeze */
    th_cmd_do("DEL %s", key);
    assert_int_equal(th_proxy_freeze(px, getpid(), 0, 200), 2);   /* fresh and sub: ours */
    int64_t t0 = th_now_ms();
    rr = redisCommand(fresh, "RPUSH %s late", key);
    assert_non_null(rr);
    freeReplyObject(rr);
    int64_t el = th_now_ms() - t0;
    print_message("a 200 ms freeze held a command %lld ms\n", (long long)el);
    assert_true(el >= 150);

    /* JITTER: two connections, 40 pipelined commands each: each keeps its
     * order, and they interleave */
    th_cmd_do("DEL %s", key);
    th_proxy_jitter(px, 0, 30, 12345);
    redisContext *a = px_connect(px), *b = px_connect(px);
    for (int i = 0; i < 40; i++) {
        redisAppendCommand(a, "RPUSH %s a%02d", key, i);
        redisBufferWrite(a, &(int){ 0 });
        redisAppendCommand(b, "RPUSH %s b%02d", key, i);
        redisBufferWrite(b, &(int){ 0 });
        th_sleep_ms(1);
    }
    for (int i = 0; i < 40; i++) {
        void *rep;
        assert_int_equal(redisGetReply(a, &rep), REDIS_OK);
        freeReplyObject(rep);
        assert_int_equal(redisGetReply(b, &rep), REDIS_OK);
        freeReplyObject(rep);
    }
    th_proxy_mode(px, TH_PROXY_PASS, 0);
    l = th_cmd("LRANGE %s 0 -1", key);
    assert_int_equal(l->elements, 80);
    int na = 0, nb = 0, switches = 0;
    for (size_t i = 0; i < l->elements; i++) {
        const char *v = l->element[i]->str;
        int *n = v[0] == 'a' ? &na : &nb;
        assert_int_equal(atoi(v + 1), *n);         /* in order within a connection */
        (*n)++;
        if (i > 0 && v[0] != l->element[i - 1]->str[0])
            switches++;
    }
    freeReplyObject(l);
    th_proxy_get_stats(px, &s);
    print_message("jitter: %llu chunks delayed, %d switches between the connections\n",
                  (unsigned long long)s.jittered, switches);
    assert_true(s.jittered > 0);     /* (chunks, not commands: the proxy may read two at once) */
    redisFree(a);
    redisFree(b);
    redisFree(fresh);
    redisFree(sub);
    th_cmd_do("DEL %s", key);
    th_proxy_stop(px);
}

/* ------------------------------------------------------- random delays */

struct jit_drv { th_proxy_t *px; long run_ms; };

static void jit_tick(void *arg, int64_t ms, uint64_t done)
{
    struct jit_drv *d = arg;
    (void)done;
    if (ms >= d->run_ms)
        chk_stop();
}

static void run_jitter(long lo, long hi, long io_ms, int no_loss, const char *tag)
{
    th_proxy_t *px = th_proxy_start(th_redis_port());
    assert_non_null(px);
    unsigned seed = (unsigned)env_long("CHECKER_NET_SEED", 1);
    th_proxy_jitter(px, lo, hi, seed);
    struct net_env e;
    net_env(&e, px, io_ms, 20000);
    char name[128];
    th_name(name, sizeof name, tag);
    pid_t pids[3];
    chk_cfg_t c;
    net_cfg(&c, name, &e, pids);
    c.procs = 3;
    c.threads = 2;
    c.hold_us = 200;
    c.lock_how = (int)env_long("CHECKER_NET_HOW", 0);
    struct jit_drv d = { px, 4000 };
    c.tick = jit_tick;
    c.tick_arg = &d;
    c.tick_ms = 20;
    chk_report_t r;
    int rc = chk_run(&c, &r);
    th_proxy_mode(px, TH_PROXY_PASS, 0);    /* (what is delayed stays due when it was) */
    th_proxy_stats_t s;
    th_proxy_get_stats(px, &s);
    char title[160];
    snprintf(title, sizeof title, "jitter %ld-%ld ms, I/O time-out %ld ms (seed %u)", lo, hi,
             io_ms, seed);
    chk_print(stderr, title, &r);
    print_message("%s: %llu chunks delayed, %llu connections (%llu cut)\n", title,
                  (unsigned long long)s.jittered, (unsigned long long)s.accepted,
                  (unsigned long long)s.cuts);
    print_losses(tag, &r);
    drain_and_stop(px);
    assert_clean(rc, &c, &r, no_loss, title);
}

/* 3 processes x 2 threads, lease 20 s.  Random delays of 0-150 ms on
 * every request, under the I/O time-out (1 s): the library never gives a
 * connection up; requests of different connections (processes, and a
 * process's command and subscriber connections) are reordered.
 * Everything must hold, and no hold be lost. */
static void test_jitter_below_timeout(void **state)
{
    (void)state;
    run_jitter(0, 150, 1000, 1, "net-jitter-low");
}

/* The same with delays of 0-500 ms against an I/O time-out of 250 ms:
 * the library gives connections up and resends on new ones, and what it
 * wrote on the old ones reaches Redis later, in random order (stale
 * releases, acquisitions and their undos, renewals, linger marks).  Nothing
 * stalls for a lease (a renewal fails at most a few times in a row): no
 * hold may be lost.  A random adversary: on the code before the fixes it
 * catches a stale release (finding 1) only sometimes. */
static void test_jitter_across_reconnects(void **state)
{
    (void)state;
    run_jitter(0, 500, 250, 1, "net-jitter-high");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_proxy_reorders_across_connections),
        TH_TEST(test_jitter_below_timeout),
        TH_TEST(test_jitter_across_reconnects),
        TH_TEST(test_stale_release_after_reconnect),
        TH_TEST(test_stale_release_same_hold),
        TH_TEST(test_stall_past_lease),
        TH_TEST(test_stall_past_lease_rwlock),
        TH_TEST(test_stall_after_grant),
        TH_TEST(test_stall_after_relock),
    };
    if (getenv("TH_FILTER"))                 /* run only the tests matching a pattern */
        cmocka_set_test_filter(getenv("TH_FILTER"));
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
