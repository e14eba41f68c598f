/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_many.c - many holds in one process, in the mode TH_MANY_MODE names
 * (single, the default; cluster, redlock: CMake runs the suite once per
 * mode).
 *
 *  - many kept: a process holds thousands of locks with a short lease
 *    (20,000 on one server) for several lease periods; every one is still
 *    held at its unlock but those deleted in Redis meanwhile, which the
 *    watchdog found lost one by one among the renewed (a batch says each
 *    hold's outcome), and the renewals went in batches: a few round trips
 *    per tick, not one call per hold (redlock: a hold deleted on a majority
 *    of the servers is lost, on a minority kept);
 *  - mixed (single): read holds, write holds and a fixed lease in the same
 *    batches; a read hold and a write hold removed in Redis are found lost,
 *    the fixed lease is found lapsed at its end, the others kept;
 *  - names (single): names whose keys a call derives from the main key,
 *    and names too long for that, escaped tags, kept and released;
 *  - late (single): a process stopped (SIGSTOP) for most of a lease
 *    renews, once it runs again, holds with less than a third of their
 *    lease left: it counts them (renewals_late) and says so in its log,
 *    and keeps them;
 *  - reshard (cluster): holds spread over the slots kept while slots
 *    migrate under them (a batch in a moving slot is refused under ASK and
 *    its holds are renewed one by one);
 *  - memory (single): the library's heap per held lock stays under 500
 *    bytes (issue 30), measured around taking 3,000 locks.
 *
 * Every library call runs in a forked process with the mode's environment;
 * the test deletes keys behind its back with plain connections.
 */
#include "harness_topo.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
size_t __sanitizer_get_current_allocated_bytes(void);   /* (the sanitizer's runtime) */
#else
#include <malloc.h>
#endif

enum { M_SINGLE, M_CLUSTER, M_REDLOCK };
static int g_mode;
static const char *g_mode_name = "single";

static tt_cluster_t g_cl;
static int g_map[16384];                   /* cluster: slot -> master port */
#define NSRV 3
static th_server_t g_srv[NSRV];            /* redlock */
static char g_url[600];

static int group_setup(void **state)
{
    (void)state;
    switch (g_mode) {
    case M_SINGLE:
        return th_group_setup(state);
    case M_CLUSTER:
        tt_alarm(120);
        if (tt_cluster_start(&g_cl) || tt_cluster_slot_map(&g_cl, 0, g_map))
            return -1;
        snprintf(g_url, sizeof g_url, "DISTLOCK_URL=");
        tt_cluster_url(&g_cl, 3, g_url + strlen(g_url), sizeof g_url - strlen(g_url));
        break;
    case M_REDLOCK: {
        tt_alarm(60);
        size_t o = (size_t)snprintf(g_url, sizeof g_url, "DISTLOCK_URL=redlock://");
        for (int i = 0; i < NSRV; i++) {
            if (tt_server_start(&g_srv[i], NULL))
                return -1;
            o += (size_t)snprintf(g_url + o, sizeof g_url - o, "%s127.0.0.1:%d", i ? "," : "",
                                  g_srv[i].port);
        }
        break;
    }
    }
    alarm(0);
    return 0;
}

static int group_teardown(void **state)
{
    return g_mode == M_SINGLE ? th_group_teardown(state) : tt_group_teardown(state);
}

/* A command on the server that has `key` (single: the suite's; cluster:
 * the master of its slot; redlock: server `srv`); its integer reply. */
static long long cmd_on(const char *key, int srv, const char *fmt, const char *arg1,
                        const char *arg2)
{
    if (g_mode == M_SINGLE)
        return arg2 ? th_cmd_ll(fmt, arg1, arg2) : th_cmd_ll(fmt, arg1);
    int port = g_mode == M_CLUSTER ? g_map[tt_key_slot(key, strlen(key))] : g_srv[srv].port;
    struct timeval tv = { 5, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err)
        fail_msg("connect 127.0.0.1:%d failed", port);
    redisReply *r = arg2 ? redisCommand(c, fmt, arg1, arg2) : redisCommand(c, fmt, arg1);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return v;
}

/* ------------------------------------------------------------ the holder */

#define MAX_VICTIMS 4
typedef struct many_arg {
    int n;                    /* write holds (mutexes) */
    int nread;                /* read holds (rwlocks), after them */
    int fixed;                /* one more write hold, with a fixed lease of this (ms) */
    int lease_ms;             /* the library's default lease */
    int hold_ms;              /* how long it holds them once the test says go */
    int stop_self;            /* stops itself (SIGSTOP) once, after a renewal */
    char base[96];            /* name i: base:i */
    int to_parent, from_parent;
} many_arg_t;

static void name_of(const many_arg_t *a, int i, char *buf, size_t size)
{
    snprintf(buf, size, "%s:%d", a->base, i);
}

/* Tag 1: all taken.  Then, told to go, holds for hold_ms and reports
 * (tag 2) ticks, round trips and renewals of the watchdog meanwhile,
 * (tag 3) holds found lost, renewals late, and (tag 4) the unlocks:
 * how many said ENOLCK, the first and last such index, other errors. */
static int holder(void *p)
{
    many_arg_t *a = p;
    alarm(240);
    char lease[32];
    snprintf(lease, sizeof lease, "%d", a->lease_ms);
    setenv("DISTLOCK_LEASE_MS", lease, 1);
    if (g_mode != M_SINGLE)
        putenv(g_url);
    int total = a->n + a->nread + (a->fixed ? 1 : 0);
    dist_mutex_t *m = calloc((size_t)a->n + 1, sizeof *m);
    dist_rwlock_t *rw = calloc((size_t)a->nread + 1, sizeof *rw);
    TH_CHECK(m && rw);
    for (int i = 0; i < total; i++) {
        char name[160];
        name_of(a, i, name, sizeof name);
        if (i < a->n) {
            TH_CHECK_RC(dist_mutex_init(&m[i], name, NULL), 0);
            TH_CHECK_RC(dist_mutex_lock(&m[i]), 0);
        } else if (i < a->n + a->nread) {
            TH_CHECK_RC(dist_rwlock_init(&rw[i - a->n], name, NULL), 0);
            TH_CHECK_RC(dist_rwlock_rdlock(&rw[i - a->n]), 0);
        } else {
            dist_mutexattr_t at;
            TH_CHECK_RC(dist_mutexattr_init(&at), 0);
            TH_CHECK_RC(dist_mutexattr_setlease(&at, (unsigned long)a->fixed), 0);
            TH_CHECK_RC(dist_mutex_init(&m[a->n], name, &at), 0);
            TH_CHECK_RC(dist_mutex_lock(&m[a->n]), 0);
        }
    }
    th_send(a->to_parent, 1, 0, 0, 0);
    th_msg_t go;
    TH_CHECK(th_recv(a->from_parent, &go, 120000) == 0);
    dl_stats_t s0, s1;
    dl_stats_get(&s0);
    if (a->stop_self) {
        /* Right after a pass renewed them: then most of a lease in the
         * stopped state (the test continues the process), and the next
         * pass finds every hold with less than a third of its lease left. */
        dl_stats_t s;
        do {
            th_sleep_ms(2);
            dl_stats_get(&s);
        } while (s.watchdog_ticks == s0.watchdog_ticks);
        raise(SIGSTOP);
    }
    th_sleep_ms(a->hold_ms);
    dl_stats_get(&s1);
    th_send(a->to_parent, 2, (int64_t)(s1.watchdog_ticks - s0.watchdog_ticks),
            (int64_t)(s1.watchdog_roundtrips - s0.watchdog_roundtrips),
            (int64_t)(s1.renewed - s0.renewed));
    th_send(a->to_parent, 3, (int64_t)(s1.lost - s0.lost),
            (int64_t)(s1.renewals_late - s0.renewals_late), 0);
    int64_t enolck = 0, first = -1, last = -1, other = 0;
    for (int i = 0; i < total; i++) {
        int mutex = i < a->n || (a->fixed && i == total - 1);
        int rc = mutex ? dist_mutex_unlock(&m[i < a->n ? i : a->n])
                       : dist_rwlock_unlock(&rw[i - a->n]);
        if (rc == ENOLCK) {
            enolck++;
            last = i;
            if (first < 0)
                first = i;
        } else if (rc) {
            if (!other)
                fprintf(stderr, "[holder] unlock %d: %s (%s)\n", i, th_errname(rc), dist_lasterror());
            other++;
        }
    }
    th_send(a->to_parent, 4, enolck, first, last);
    th_send(a->to_parent, 5, other, 0, 0);
    return 0;
}

typedef struct report {
    long long ticks, trips, renewed, lost, late, enolck, first, last, other;
} report_t;

/* Starts the holder, runs `between` once everything is taken, tells it to
 * go and collects its report. */
static pid_t run_holder(many_arg_t *a, th_pipe_t *up, th_pipe_t *down)
{
    th_pipe_open(up);
    th_pipe_open(down);
    a->to_parent = up->wr;
    a->from_parent = down->rd;
    pid_t pid = th_fork_child(holder, a);
    th_msg_t m;
    assert_int_equal(th_recv(up->rd, &m, 200000), 0);
    assert_int_equal(m.tag, 1);
    return pid;
}

static void collect(pid_t pid, th_pipe_t *up, th_pipe_t *down, report_t *r)
{
    th_msg_t m;
    long timeout = 200000;
    assert_int_equal(th_recv(up->rd, &m, timeout), 0);
    assert_int_equal(m.tag, 2);
    r->ticks = m.a, r->trips = m.b, r->renewed = m.c;
    assert_int_equal(th_recv(up->rd, &m, timeout), 0);
    assert_int_equal(m.tag, 3);
    r->lost = m.a, r->late = m.b;
    assert_int_equal(th_recv(up->rd, &m, timeout), 0);
    assert_int_equal(m.tag, 4);
    r->enolck = m.a, r->first = m.b, r->last = m.c;
    assert_int_equal(th_recv(up->rd, &m, timeout), 0);
    assert_int_equal(m.tag, 5);
    r->other = m.a;
    assert_int_equal(th_wait_child_ms(pid, 60000), 0);
    th_pipe_close(up);
    th_pipe_close(down);
    print_message("[%s] ticks %lld, round trips %lld, renewed %lld, lost %lld, late %lld, "
                  "unlocks ENOLCK %lld (first %lld, last %lld), other errors %lld\n",
                  g_mode_name, r->ticks, r->trips, r->renewed, r->lost, r->late, r->enolck,
                  r->first, r->last, r->other);
}

/* ------------------------------------------------------------ the tests */

/* Thousands of write holds with a 2 s lease kept for 3 lease periods;
 * one deleted in Redis among them (redlock: on two servers of three; and
 * another on one only, which a majority still has) is found lost, and
 * only it.  The renewals go a batch per call: one server renews 20,000
 * holds in ceil(20000 / 16384) round trips a tick, where one call per
 * hold took ten. */
static void test_many_kept(void **state)
{
    (void)state;
    tt_alarm(200);
    static many_arg_t a;
    memset(&a, 0, sizeof a);
    a.n = g_mode == M_SINGLE ? 20000 : 3000;
    a.lease_ms = 2000;
    a.hold_ms = 6000;
    th_name(a.base, sizeof a.base, "many");
    int victim = a.n / 2 + 17, minority = a.n / 3;
    th_pipe_t up, down;
    pid_t pid = run_holder(&a, &up, &down);

    char name[160], key[300];
    name_of(&a, victim, name, sizeof name);
    th_key(key, sizeof key, name, "");
    for (int s = 0; s < (g_mode == M_REDLOCK ? 2 : 1); s++)
        assert_int_equal(cmd_on(key, s, "DEL %s", key, NULL), 1);
    if (g_mode == M_REDLOCK) {
        name_of(&a, minority, name, sizeof name);
        th_key(key, sizeof key, name, "");
        assert_int_equal(cmd_on(key, 2, "DEL %s", key, NULL), 1);
    }
    th_send(down.wr, 1, 0, 0, 0);
    report_t r;
    collect(pid, &up, &down, &r);
    assert_int_equal(r.other, 0);
    /* The deleted hold is the one lost, and the only one. */
    assert_int_equal(r.enolck, 1);
    assert_int_equal(r.first, victim);
    assert_int_equal(r.lost, 1);
    if (r.ticks < 4)
        fail_msg("%lld watchdog ticks in %d ms with a %d ms lease", r.ticks, a.hold_ms, a.lease_ms);
    /* Every hold renewed at least every tick and a half (a tick skips a
     * hold renewed less than half a tick before): none was left to lapse. */
    long long each = a.hold_ms / (a.lease_ms / 2) - 1;
    if (r.renewed < (long long)(a.n - 1) * each)
        fail_msg("renewed %lld holds in %d ms with %d held (%lld each at least)", r.renewed,
                 a.hold_ms, a.n, each);
    if (g_mode == M_SINGLE) {
        /* 20,000 holds at 16,384 a round trip: 2 a tick (and the odd
         * early one); a call per hold took 10 (2,048 a round trip). */
        long long most = 2 * r.ticks + r.ticks / 2 + 2;
        if (r.trips > most)
            fail_msg("%lld round trips for %lld ticks of %d holds (at most %lld): renewals "
                     "are not batched", r.trips, r.ticks, a.n, most);
    }
}

/* Write holds, read holds and a fixed lease in the same batches: a read
 * hold and a write hold removed in Redis are found lost, the fixed lease
 * (700 ms) is found lapsed once its end passed (a check, in the batch),
 * every other hold kept. */
static void test_many_mixed(void **state)
{
    (void)state;
    if (g_mode != M_SINGLE)
        skip();
    tt_alarm(120);
    static many_arg_t a;
    memset(&a, 0, sizeof a);
    a.n = 600;
    a.nread = 600;
    a.fixed = 700;
    a.lease_ms = 600;
    a.hold_ms = 2500;
    th_name(a.base, sizeof a.base, "mixed");
    int wvictim = 123, rvictim = a.n + 321;
    th_pipe_t up, down;
    pid_t pid = run_holder(&a, &up, &down);

    char name[160], key[300], rkey[300], rikey[300];
    name_of(&a, wvictim, name, sizeof name);
    th_key(key, sizeof key, name, "");
    assert_int_equal(th_cmd_ll("DEL %s", key), 1);
    /* A read hold is its token in the readers zset and its info in ri. */
    name_of(&a, rvictim, name, sizeof name);
    th_key(rkey, sizeof rkey, name, ":r");
    th_key(rikey, sizeof rikey, name, ":ri");
    assert_int_equal(th_cmd_ll("DEL %s", rkey), 1);
    assert_int_equal(th_cmd_ll("DEL %s", rikey), 1);
    th_send(down.wr, 1, 0, 0, 0);
    report_t r;
    collect(pid, &up, &down, &r);
    assert_int_equal(r.other, 0);
    /* The write victim, the read victim and the fixed lease (the last). */
    assert_int_equal(r.enolck, 3);
    assert_int_equal(r.first, wvictim);
    assert_int_equal(r.last, a.n + a.nread);
    assert_int_equal(r.lost, 3);
}

/* A holder stopped (SIGSTOP) for 80 % of its lease right after a renewal
 * renews every hold with less than a third of its lease left once it runs
 * again: it counts them, logs that it is behind, and keeps them all. */
static int late_child(void *p)
{
    many_arg_t *a = p;
    setenv("DISTLOCK_LOG", "warn", 1);
    return holder(a);
}

static void test_many_late(void **state)
{
    (void)state;
    if (g_mode != M_SINGLE)
        skip();
    tt_alarm(120);
    static many_arg_t a;
    memset(&a, 0, sizeof a);
    a.n = 2000;
    a.lease_ms = 6000;
    a.hold_ms = 2500;
    a.stop_self = 1;
    th_name(a.base, sizeof a.base, "late");
    th_pipe_t up, down;
    th_pipe_open(&up);
    th_pipe_open(&down);
    a.to_parent = up.wr;
    a.from_parent = down.rd;
    /* Its stderr into a file the test reads afterwards. */
    char path[200];
    snprintf(path, sizeof path, "/tmp/test_many_late.%d.log", (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    int saved = dup(2);
    dup2(fd, 2);
    pid_t pid = th_fork_child(late_child, &a);
    dup2(saved, 2);
    close(saved);
    close(fd);
    th_msg_t m;
    assert_int_equal(th_recv(up.rd, &m, 200000), 0);
    assert_int_equal(m.tag, 1);
    th_send(down.wr, 1, 0, 0, 0);
    /* Stopped after a pass: keep it so for 80 % of the lease. */
    int st;
    assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
    assert_true(WIFSTOPPED(st));
    th_sleep_ms(a.lease_ms * 8 / 10);
    kill(pid, SIGCONT);
    report_t r;
    collect(pid, &up, &down, &r);
    FILE *f = fopen(path, "r");
    char log[4096] = "";
    size_t got = f ? fread(log, 1, sizeof log - 1, f) : 0;
    log[got] = 0;
    if (f)
        fclose(f);
    unlink(path);
    assert_int_equal(r.other, 0);
    assert_int_equal(r.enolck, 0);
    assert_int_equal(r.lost, 0);
    if (r.late < a.n)
        fail_msg("%lld renewals counted late after a stop of 80 %% of the lease, %d holds",
                 r.late, a.n);
    if (!strstr(log, "less than a third of their lease left"))
        fail_msg("no warning of late renewals in the holder's log:\n%s", log);
}

/* Names of every length keep their holds through renewals in batches and
 * release them: those whose keys a call derives from the main key, those
 * a byte too long for that (the object keeps all its keys), the longest,
 * and names whose tag is escaped ('}' or the escape byte first). */
#define NNAMES 7
static char g_names[NNAMES][DIST_NAME_MAX + 1];

static int names_child(void *p)
{
    (void)p;
    setenv("DISTLOCK_LEASE_MS", "600", 1);
    static dist_mutex_t m[NNAMES];
    static dist_rwlock_t rw[NNAMES];
    for (int i = 0; i < NNAMES; i++) {
        TH_CHECK_RC(dist_mutex_init(&m[i], g_names[i], NULL), 0);
        TH_CHECK_RC(dist_mutex_lock(&m[i]), 0);
        char rwname[DIST_NAME_MAX + 1];
        snprintf(rwname, sizeof rwname, "%s", g_names[i]);
        rwname[strlen(rwname) - 1] ^= 1;          /* another name, as long */
        TH_CHECK_RC(dist_rwlock_init(&rw[i], rwname, NULL), 0);
        TH_CHECK_RC(dist_rwlock_rdlock(&rw[i]), 0);
    }
    dl_stats_t s0, s1;
    dl_stats_get(&s0);
    th_sleep_ms(1500);                            /* renewed every 200 ms */
    dl_stats_get(&s1);
    TH_CHECK(s1.renewed - s0.renewed >= 2 * NNAMES * 4);
    for (int i = 0; i < NNAMES; i++) {
        char key[DIST_NAME_MAX + 300];
        th_key(key, sizeof key, g_names[i], "");
        long long pttl = th_cmd_ll("PTTL %b", key, strlen(key));
        TH_CHECK(pttl > 0 && pttl <= 600);
        TH_CHECK_RC(dist_mutex_unlock(&m[i]), 0);
        TH_CHECK(th_cmd_ll("EXISTS %b", key, strlen(key)) == 0);
        TH_CHECK_RC(dist_rwlock_unlock(&rw[i]), 0);
        TH_CHECK_RC(dist_mutex_destroy(&m[i]), 0);
        TH_CHECK_RC(dist_rwlock_destroy(&rw[i]), 0);
    }
    TH_CHECK(s1.lost == s0.lost);
    return 0;
}

static void test_many_names(void **state)
{
    (void)state;
    if (g_mode != M_SINGLE)
        skip();
    /* The longest main key whose lock keys a call derives (calls.h:
     * DL_CALL_KEYBUF, the six keys and their NULs): prefix + name of 78. */
    size_t plen = strlen(th_prefix()), edge = 78 > plen + 8 ? 78 - plen : 8;
    size_t lens[NNAMES] = { 8, edge, edge + 1, 200, DIST_NAME_MAX, 40, 40 };
    char base[64];
    th_name(base, sizeof base, "names");
    for (int i = 0; i < NNAMES; i++) {
        memset(g_names[i], 'a' + i, lens[i]);
        g_names[i][lens[i]] = 0;
        memcpy(g_names[i], base, strlen(base) < lens[i] ? strlen(base) : lens[i]);
    }
    g_names[5][0] = '}';                          /* escaped tags */
    g_names[6][0] = '\x01';
    TH_ASSERT_CHILD_OK(th_fork_child(names_child, NULL));
}

/* Holds spread over the slots kept while 2,000 slots migrate under them. */
static void test_many_reshard(void **state)
{
    (void)state;
    if (g_mode != M_CLUSTER)
        skip();
    tt_alarm(200);
    static many_arg_t a;
    memset(&a, 0, sizeof a);
    a.n = 3000;
    a.lease_ms = 3000;            /* a reshard on a busy machine stalls calls */
    a.hold_ms = 8000;
    th_name(a.base, sizeof a.base, "reshard");
    th_pipe_t up, down;
    pid_t pid = run_holder(&a, &up, &down);
    int masters[3];
    assert_int_equal(tt_cluster_masters(&g_cl, masters, 3), 3);
    char logpath[300];
    pid_t rs = tt_reshard_start(&g_cl, masters[0], masters[1], 2000, 10, logpath, sizeof logpath);
    assert_true(rs > 0);
    th_send(down.wr, 1, 0, 0, 0);
    report_t r;
    collect(pid, &up, &down, &r);
    int st = 0;
    waitpid(rs, &st, 0);
    assert_int_equal(r.other, 0);
    assert_int_equal(r.enolck, 0);
    assert_int_equal(r.lost, 0);
}

/* The heap in use (bytes): the sanitizer's allocator's count of what was
 * asked for, or glibc's of its chunks (with their headers). */
static size_t heap_in_use(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return __sanitizer_get_current_allocated_bytes();
#else
    return mallinfo2().uordblks;
#endif
}

/* The heap's least over half a second of reads. */
static size_t least_heap(void)
{
    size_t least = heap_in_use();
    for (int k = 0; k < 10; k++) {
        struct timespec ms50 = { 0, 50000000 };
        nanosleep(&ms50, NULL);
        size_t now = heap_in_use();
        if (now < least)
            least = now;
    }
    return least;
}

/* Memory per held lock: 3,000 locks of names as long as W9L's (up to 27
 * bytes) are taken by one thread; the heap grows by less than
 * DL_HELD_LOCK_BUDGET bytes for each (the lock's state and main key, its
 * entry in the process's table of objects, their buckets), by the count
 * of the allocator in use; each budget below fails with the state of
 * 352 bytes (a chunk of 400 or more with its key) and passes with 320
 * (384).  Before: the program's mutexes in place, and the library's
 * threads and connections (a lock taken and released).  What the library
 * allocates once, not per lock, may fall anywhere in that time: a
 * renewal pass keeps its round trip's list of names (about 100 bytes a
 * hold, up to a trip's size, reused by the next pass), a table doubles, a
 * connection's buffer grows.  So the growth is read over each half of the
 * locks, the heap read several times at each end (its least: what stays,
 * not what a call borrows), and the lesser half is the cost of a lock: a
 * one-time allocation shows in one half only. */
#define NBUDGET 3000
#if defined(__SANITIZE_ADDRESS__)
#define DL_HELD_LOCK_BUDGET 440   /* bytes asked for: 424 (456 with a 352-byte state) */
#elif defined(__SANITIZE_THREAD__)
#define DL_HELD_LOCK_BUDGET 490   /* its size classes: 458 (522) */
#else
#define DL_HELD_LOCK_BUDGET 460   /* glibc's chunks, with their headers: 442 (474) */
#endif

static int memory_child(void *arg)
{
    (void)arg;
    /* the budget is for the default key prefix: a longer one inherited
     * from the run (th_prefix honours DISTLOCK_PREFIX) makes every main
     * key longer, and may move the state into the next chunk size */
    setenv("DISTLOCK_PREFIX", "distlock:", 1);
    static dist_mutex_t m[NBUDGET + 1];
    static char names[NBUDGET + 1][40];
    char base[32];
    th_name(base, sizeof base, "mem");
    for (int i = 0; i <= NBUDGET; i++) {
        snprintf(names[i], sizeof names[i], "%.14s:budget:%05d", base, i);
        TH_CHECK_RC(dist_mutex_init(&m[i], names[i], NULL), 0);
    }
    TH_CHECK_RC(dist_mutex_lock(&m[NBUDGET]), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m[NBUDGET]), 0);
    size_t at[3];
    at[0] = least_heap();
    for (int i = 0; i < NBUDGET; i++) {
        TH_CHECK_RC(dist_mutex_lock(&m[i]), 0);
        if (i + 1 == NBUDGET / 2)
            at[1] = least_heap();
    }
    at[2] = least_heap();
    long half[2];
    for (int k = 0; k < 2; k++)
        half[k] = ((long)at[k + 1] - (long)at[k]) / (NBUDGET / 2);
    long per = half[0] < half[1] ? half[0] : half[1];
    fprintf(stderr, "heap per held lock: %ld bytes (halves %ld and %ld; budget %d)\n", per,
            half[0], half[1], DL_HELD_LOCK_BUDGET);
    TH_CHECK(per < DL_HELD_LOCK_BUDGET);
    for (int i = 0; i < NBUDGET; i++)
        TH_CHECK_RC(dist_mutex_unlock(&m[i]), 0);
    return 0;
}

static void test_many_memory(void **state)
{
    (void)state;
    if (g_mode != M_SINGLE)
        skip();
    TH_ASSERT_CHILD_OK(th_fork_child(memory_child, NULL));
}

int main(void)
{
    const char *m = getenv("TH_MANY_MODE");
    static const char *const names[] = { "single", "cluster", "redlock" };
    for (int i = 0; m && i < 3; i++)
        if (strcmp(m, names[i]) == 0)
            g_mode = i, g_mode_name = names[i];
    static const struct CMUnitTest all[] = {
        TT_TEST(test_many_kept),
        TT_TEST(test_many_mixed),
        TT_TEST(test_many_late),
        TT_TEST(test_many_names),
        TT_TEST(test_many_reshard),
        TT_TEST(test_many_memory),
    };
    return th_run_tests(all, group_setup, group_teardown);
}
