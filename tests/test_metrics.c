/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_metrics.c - DISTLOCK_METRICS_FILE (SPEC, the environment table):
 *   - the file is rewritten every interval while the process runs, and at
 *     its exit, with no temporary file left beside it;
 *   - it is valid Prometheus text, as read by the Prometheus client
 *     library's own parser (tests/metrics_parse.py, python3-prometheus-
 *     client), and counts by lock name: acquisitions, the wait and hold
 *     histograms, EOWNERDEAD, ENOLCK, lost holds, EIO, round trips, local
 *     handoffs; reconnections (none without a fault, counted after a
 *     server restart);
 *   - 100,000 lock names stay within the cap: at most DL_METRICS_NAMES
 *     names of their own plus "_other", which sums the rest exactly;
 *   - a path in a missing directory: lock calls work, one warning in all;
 *   - with %p in the path, a parent and its forked child each write a
 *     file of their own, with their own counts only.
 * The library runs only in children, never in the test process.
 */
#include "harness.h"
#include "harness_topo.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#ifndef TH_SOURCE_DIR
#error "TH_SOURCE_DIR: the source tree (for tests/metrics_parse.py)"
#endif

/* What the parser read: one sample a line. */
typedef struct sample {
    char fam[128];
    char name[160];
    double v;
} sample_t;

typedef struct parsed {
    sample_t *s;
    size_t n;
} parsed_t;

/* Parses path with the Prometheus parser: 0, or -1 (invalid: its reason is
 * printed). */
static int parse(const char *path, parsed_t *p)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tests/metrics_parse.py '%s'", TH_SOURCE_DIR,
             path);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    memset(p, 0, sizeof *p);
    size_t cap = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (p->n == cap) {
            cap = cap ? cap * 2 : 1024;
            p->s = realloc(p->s, cap * sizeof *p->s);
            if (!p->s)
                return -1;
        }
        sample_t *s = &p->s[p->n];
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t2)
            continue;
        *t1 = *t2 = 0;
        snprintf(s->fam, sizeof s->fam, "%.127s", line);
        snprintf(s->name, sizeof s->name, "%.159s", t1 + 1);
        s->v = strtod(t2 + 1, NULL);
        p->n++;
    }
    int st = pclose(f);
    return st == 0 ? 0 : -1;
}

/* The value of sample fam for lock name (summed if it repeats, as a
 * kind's series may); -1 when absent. */
static double val(const parsed_t *p, const char *fam, const char *name)
{
    double v = -1;
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->s[i].fam, fam) == 0 && strcmp(p->s[i].name, name) == 0)
            v = (v < 0 ? 0 : v) + p->s[i].v;
    return v;
}

static void want(const parsed_t *p, const char *fam, const char *name, double v)
{
    double got = val(p, fam, name);
    if (got != v)
        fail_msg("%s{name=\"%s\"} = %g, want %g", fam, name, got, v);
}

static char dir[256];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/distlock-metrics.XXXXXX");
    assert_non_null(mkdtemp(dir));
}

/* Removes dir and what is in it; fails if more than `files` files were
 * there (a temporary file left behind). */
static void remove_dir(int files)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    char left[256] = "";
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
        snprintf(left, sizeof left, "%s", e->d_name);
        n++;
    }
    closedir(d);
    rmdir(dir);
    if (n != files)
        fail_msg("%d files in the metrics directory, want %d (e.g. %s)", n, files, left);
}

/* ------------------------------------------------------------------------
 * The counts. */

struct cargs {
    char base[96];
    char path[300];
    int up, down;
};

static dist_mutex_t hmu;

static void *handoff_waiter(void *arg)
{
    (void)arg;
    int rc = dist_mutex_lock(&hmu);
    if (rc == 0)
        dist_mutex_unlock(&hmu);
    return (void *)(intptr_t)rc;
}

static int dead_holder(void *arg)
{
    struct cargs *a = arg;
    char n[128];
    snprintf(n, sizeof n, "%s.c", a->base);
    /* A renewed lease (a fixed one that runs out is no abandonment). */
    setenv("DISTLOCK_LEASE_MS", "1000", 1);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, n, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    th_send(a->up, 1, 0, 0, 0);
    pause();                          /* killed holding it: its lease runs out */
    return 1;
}

static int counts_child(void *arg)
{
    struct cargs *a = arg;
    setenv("DISTLOCK_METRICS_FILE", a->path, 1);
    setenv("DISTLOCK_METRICS_INTERVAL_MS", "100", 1);
    char n[128];
    dist_mutex_t m;

    /* a: five acquisitions, each held a little. */
    snprintf(n, sizeof n, "%s.a", a->base);
    TH_CHECK_RC(dist_mutex_init(&m, n, NULL), 0);
    for (int i = 0; i < 5; i++) {
        TH_CHECK_RC(dist_mutex_lock(&m), 0);
        th_sleep_ms(2);
        TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    }
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);   /* its counts outlive it */
    th_send(a->up, 1, 0, 0, 0);               /* the parent sees them in the file */
    th_msg_t msg;
    TH_CHECK(th_recv(a->down, &msg, 20000) == 0);

    /* b: the keys deleted under the holder: lost, and the unlock ENOLCK. */
    snprintf(n, sizeof n, "%s.b", a->base);
    TH_CHECK_RC(dist_mutex_init(&m, n, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    char k[300];
    redisReply *r = th_cmd("DEL %s", th_key(k, sizeof k, n, ""));
    TH_CHECK(r != NULL);
    freeReplyObject(r);
    TH_CHECK_RC(dist_mutex_unlock(&m), ENOLCK);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);

    /* c: its last holder died holding it (dead_holder, before us). */
    snprintf(n, sizeof n, "%s.c", a->base);
    TH_CHECK_RC(dist_mutex_init(&m, n, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), EOWNERDEAD);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);

    /* h: a thread waits while another holds: two acquisitions, and the
     * hold is passed between them without Redis. */
    snprintf(n, sizeof n, "%s.h", a->base);
    TH_CHECK_RC(dist_mutex_init(&hmu, n, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&hmu), 0);
    pthread_t t;
    TH_CHECK(pthread_create(&t, NULL, handoff_waiter, NULL) == 0);
    th_sleep_ms(200);
    TH_CHECK_RC(dist_mutex_unlock(&hmu), 0);
    void *wr;
    pthread_join(t, &wr);
    TH_CHECK_RC((int)(intptr_t)wr, 0);
    /* exit(), not th_fork_child's _exit: the file is written once more
     * at exit, with the counts of the last 100 ms. */
    exit(0);
}

/* Redis unreachable: EIO, counted under the lock's name. */
static int eio_child(void *arg)
{
    struct cargs *a = arg;
    setenv("DISTLOCK_METRICS_FILE", a->path, 1);
    setenv("DISTLOCK_URL", "redis://127.0.0.1:1", 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "200", 1);
    setenv("DISTLOCK_LOG", "off", 1);
    char n[128];
    snprintf(n, sizeof n, "%s.e", a->base);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, n, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), EIO);
    TH_CHECK_RC(dist_mutex_lock(&m), EIO);
    exit(0);                          /* its only write is at exit */
}

static void test_counts(void **state)
{
    (void)state;
    static struct cargs a;
    th_name(a.base, sizeof a.base, "metrics");
    make_dir();
    snprintf(a.path, sizeof a.path, "%s/distlock.prom", dir);
    th_pipe_t up, down;
    th_pipe_open(&up);
    th_pipe_open(&down);
    a.up = up.wr;
    a.down = down.rd;
    th_msg_t msg;
    pid_t dead = th_fork_child(dead_holder, &a);
    assert_int_equal(th_recv(up.rd, &msg, 20000), 0);
    th_kill_child(dead);              /* c's lock waits out its 1000 ms lease */
    pid_t pid = th_fork_child(counts_child, &a);
    assert_int_equal(th_recv(up.rd, &msg, 20000), 0);
    /* Written every 100 ms while it runs: a's counts appear. */
    char na[128];
    snprintf(na, sizeof na, "%s.a", a.base);
    int64_t until = th_now_ms() + 10000;
    parsed_t p = { 0 };
    for (;;) {
        if (parse(a.path, &p) == 0 && val(&p, "distlock_acquisitions_total", na) == 5)
            break;
        free(p.s);
        p.s = NULL;
        if (th_now_ms() > until)
            fail_msg("the metrics file did not show %s's 5 acquisitions within 10 s", na);
        th_sleep_ms(50);
    }
    free(p.s);
    th_send(down.wr, 1, 0, 0, 0);
    TH_ASSERT_CHILD_OK(pid);

    /* What it wrote at exit. */
    assert_int_equal(parse(a.path, &p), 0);
    char nb[128], nc[128], nh[128];
    snprintf(nb, sizeof nb, "%s.b", a.base);
    snprintf(nc, sizeof nc, "%s.c", a.base);
    snprintf(nh, sizeof nh, "%s.h", a.base);
    want(&p, "distlock_acquisitions_total", na, 5);
    want(&p, "distlock_wait_seconds_count", na, 5);
    want(&p, "distlock_hold_seconds_count", na, 5);
    want(&p, "distlock_hold_seconds_bucket:+Inf", na, 5);
    want(&p, "distlock_hold_seconds_bucket:0.001", na, 0);   /* each held >= 2 ms */
    if (val(&p, "distlock_hold_seconds_sum", na) < 0.010)
        fail_msg("hold_seconds_sum of %s: %g, want >= 5 x 2 ms", na,
                 val(&p, "distlock_hold_seconds_sum", na));
    if (val(&p, "distlock_round_trips_total", na) < 1)
        fail_msg("no round trips counted for %s", na);
    want(&p, "distlock_ownerdead_total", na, 0);
    want(&p, "distlock_lost_holds_total", na, 0);

    want(&p, "distlock_acquisitions_total", nb, 1);
    want(&p, "distlock_lost_holds_total", nb, 1);
    want(&p, "distlock_enolck_total", nb, 1);

    want(&p, "distlock_acquisitions_total", nc, 1);
    want(&p, "distlock_ownerdead_total", nc, 1);
    want(&p, "distlock_enolck_total", nc, 0);

    want(&p, "distlock_acquisitions_total", nh, 2);
    want(&p, "distlock_wait_seconds_count", nh, 2);
    if (val(&p, "distlock_local_handoffs_total", nh) < 1)
        fail_msg("local_handoffs_total of %s: %g, want >= 1", nh,
                 val(&p, "distlock_local_handoffs_total", nh));
    /* The waiter waited about 200 ms: its wait is in the 0.5 s bucket,
     * not the 0.1 s one. */
    if (val(&p, "distlock_wait_seconds_bucket:0.1", nh) != 1 ||
        val(&p, "distlock_wait_seconds_bucket:0.5", nh) != 2)
        fail_msg("wait buckets of %s: le=0.1 %g, le=0.5 %g; want 1 and 2", nh,
                 val(&p, "distlock_wait_seconds_bucket:0.1", nh),
                 val(&p, "distlock_wait_seconds_bucket:0.5", nh));
    if (val(&p, "distlock_process_round_trips_total", "-") < 1)
        fail_msg("the process-wide counters are missing");
    /* Its connections were never lost: a first connection is no
     * reconnection. */
    want(&p, "distlock_reconnects_total", "-", 0);
    want(&p, "distlock_names_other", "-", 0);
    free(p.s);
    remove_dir(1);                    /* no temporary file left */

    /* EIO. */
    make_dir();
    snprintf(a.path, sizeof a.path, "%s/eio.prom", dir);
    TH_ASSERT_CHILD_OK(th_fork_child(eio_child, &a));
    assert_int_equal(parse(a.path, &p), 0);
    char ne[128];
    snprintf(ne, sizeof ne, "%s.e", a.base);
    want(&p, "distlock_eio_total", ne, 2);
    want(&p, "distlock_acquisitions_total", ne, 0);
    free(p.s);
    remove_dir(1);
    th_pipe_close(&up);
    th_pipe_close(&down);
}

/* ------------------------------------------------------------------------
 * A server restart: counted as reconnections and a sign of lost state. */

static th_server_t rs;
static char rs_url[128];

static int restart_child(void *arg)
{
    struct cargs *a = arg;
    setenv("DISTLOCK_METRICS_FILE", a->path, 1);
    setenv("DISTLOCK_URL", rs_url, 1);
    char n[128];
    snprintf(n, sizeof n, "%s.r", a->base);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, n, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    th_send(a->up, 1, 0, 0, 0);
    th_msg_t msg;
    TH_CHECK(th_recv(a->down, &msg, 20000) == 0);    /* the server restarted */
    int rc = dist_mutex_lock(&m);
    TH_CHECK(rc == 0 || rc == EOWNERDEAD);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    exit(0);
}

static void test_reconnects(void **state)
{
    (void)state;
    static struct cargs a;
    th_name(a.base, sizeof a.base, "restart");
    make_dir();
    snprintf(a.path, sizeof a.path, "%s/r.prom", dir);
    memset(&rs, 0, sizeof rs);
    assert_int_equal(th_server_start(&rs), 0);
    snprintf(rs_url, sizeof rs_url, "%s", rs.url);
    th_pipe_t up, down;
    th_pipe_open(&up);
    th_pipe_open(&down);
    a.up = up.wr;
    a.down = down.rd;
    pid_t pid = th_fork_child(restart_child, &a);
    th_msg_t msg;
    assert_int_equal(th_recv(up.rd, &msg, 20000), 0);
    th_server_stop(&rs);
    assert_int_equal(th_server_restart(&rs), 0);
    th_send(down.wr, 1, 0, 0, 0);
    TH_ASSERT_CHILD_OK(pid);
    th_server_stop(&rs);
    parsed_t p;
    assert_int_equal(parse(a.path, &p), 0);
    char nr[128];
    snprintf(nr, sizeof nr, "%s.r", a.base);
    want(&p, "distlock_acquisitions_total", nr, 2);
    if (val(&p, "distlock_reconnects_total", "-") < 1 ||
        val(&p, "distlock_trust_ends_total", "-") < 1)
        fail_msg("after a restart: reconnects_total %g, trust_ends_total %g; want >= 1 each",
                 val(&p, "distlock_reconnects_total", "-"),
                 val(&p, "distlock_trust_ends_total", "-"));
    free(p.s);
    remove_dir(1);
    th_pipe_close(&up);
    th_pipe_close(&down);
}

/* ------------------------------------------------------------------------
 * A program that forks: with %p in the path each process writes its own
 * file, with its own counts. */

static int fork_grandchild(void *arg)
{
    struct cargs *a = arg;
    char n[128];
    snprintf(n, sizeof n, "%s.kid", a->base);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, n, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    th_send(a->up, 2, (int64_t)getpid(), 0, 0);
    exit(0);
}

static int fork_parent(void *arg)
{
    struct cargs *a = arg;
    setenv("DISTLOCK_METRICS_FILE", a->path, 1);
    char n[128];
    snprintf(n, sizeof n, "%s.mom", a->base);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, n, NULL), 0);
    for (int i = 0; i < 3; i++) {
        TH_CHECK_RC(dist_mutex_lock(&m), 0);
        TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    }
    pid_t c = th_fork_child(fork_grandchild, a);
    TH_CHECK(th_wait_child_ms(c, 20000) == 0);
    th_send(a->up, 1, (int64_t)getpid(), 0, 0);
    exit(0);
}

static void test_forked(void **state)
{
    (void)state;
    static struct cargs a;
    th_name(a.base, sizeof a.base, "fork");
    make_dir();
    snprintf(a.path, sizeof a.path, "%s/m.%%p.prom", dir);
    th_pipe_t up;
    th_pipe_open(&up);
    a.up = up.wr;
    pid_t pid = th_fork_child(fork_parent, &a);
    TH_ASSERT_CHILD_OK(pid);
    th_msg_t m1, m2;
    assert_int_equal(th_recv(up.rd, &m1, 1000), 0);   /* the grandchild's pid */
    assert_int_equal(th_recv(up.rd, &m2, 1000), 0);   /* the parent's */
    assert_int_equal(m1.tag, 2);
    char mom[128], kid[128], f[400];
    snprintf(mom, sizeof mom, "%s.mom", a.base);
    snprintf(kid, sizeof kid, "%s.kid", a.base);
    parsed_t p;
    snprintf(f, sizeof f, "%s/m.%lld.prom", dir, (long long)m2.a);
    assert_int_equal(parse(f, &p), 0);
    want(&p, "distlock_acquisitions_total", mom, 3);
    want(&p, "distlock_acquisitions_total", kid, -1);          /* not the child's */
    free(p.s);
    snprintf(f, sizeof f, "%s/m.%lld.prom", dir, (long long)m1.a);
    assert_int_equal(parse(f, &p), 0);
    want(&p, "distlock_acquisitions_total", kid, 1);
    want(&p, "distlock_acquisitions_total", mom, -1);          /* not the parent's */
    free(p.s);
    remove_dir(2);
    th_pipe_close(&up);
}

/* ------------------------------------------------------------------------
 * 100,000 names. */

#define MANY 100000
#define CAP 100                       /* DL_METRICS_NAMES (core/metrics.h) */

static int many_child(void *arg)
{
    struct cargs *a = arg;
    setenv("DISTLOCK_METRICS_FILE", a->path, 1);
    setenv("DISTLOCK_METRICS_INTERVAL_MS", "100", 1);
    alarm(400);
    /* Half of them kept, half destroyed (freed: their counts stay). */
    dist_mutex_t *kept = calloc(MANY / 2, sizeof *kept);
    TH_CHECK(kept != NULL);
    for (int i = 0; i < MANY; i++) {
        char n[160];
        snprintf(n, sizeof n, "%s.%d", a->base, i);
        dist_mutex_t freed, *m = i % 2 ? &freed : &kept[i / 2];
        TH_CHECK_RC(dist_mutex_init(m, n, NULL), 0);
        TH_CHECK_RC(dist_mutex_trylock(m), 0);
        TH_CHECK_RC(dist_mutex_unlock(m), 0);
        if (i % 2)
            TH_CHECK_RC(dist_mutex_destroy(m), 0);
    }
    exit(0);                          /* the last counts written at exit */
}

static void test_many_names(void **state)
{
    (void)state;
    tt_alarm(420);                    /* 200,000 round trips; slow under ASan */
    static struct cargs a;
    th_name(a.base, sizeof a.base, "many");
    make_dir();
    snprintf(a.path, sizeof a.path, "%s/many.prom", dir);
    int64_t t0 = th_now_ms();
    pid_t pid = th_fork_child(many_child, &a);
    int st = th_wait_child_ms(pid, 410000);
    assert_int_equal(st, 0);
    printf("%d names locked and unlocked in %lld ms\n", MANY, (long long)(th_now_ms() - t0));
    struct stat sb;
    assert_int_equal(stat(a.path, &sb), 0);
    printf("metrics file: %lld bytes\n", (long long)sb.st_size);
    parsed_t p;
    assert_int_equal(parse(a.path, &p), 0);
    /* Names of their own, and the sum. */
    int own = 0, other = 0;
    double sum = 0;
    for (size_t i = 0; i < p.n; i++) {
        if (strcmp(p.s[i].fam, "distlock_acquisitions_total"))
            continue;
        sum += p.s[i].v;
        if (strcmp(p.s[i].name, "_other") == 0)
            other++;
        else
            own++;
    }
    if (own > CAP || other != 1)
        fail_msg("%d names of their own (cap %d) and %d \"_other\" series", own, CAP, other);
    if (sum != MANY)
        fail_msg("acquisitions sum to %g, want %d", sum, MANY);
    want(&p, "distlock_acquisitions_total", "_other", MANY - own);
    want(&p, "distlock_hold_seconds_count", "_other", MANY - own);
    /* A bounded file: a few hundred bytes per series of each family. */
    if (sb.st_size > 1024 * 1024)
        fail_msg("the metrics file has %lld bytes", (long long)sb.st_size);
    free(p.s);
    remove_dir(1);
}

/* ------------------------------------------------------------------------
 * A path in a missing directory. */

static int missing_child(void *arg)
{
    struct cargs *a = arg;
    setenv("DISTLOCK_METRICS_FILE", a->path, 1);
    setenv("DISTLOCK_METRICS_INTERVAL_MS", "100", 1);
    char n[128];
    snprintf(n, sizeof n, "%s.x", a->base);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, n, NULL), 0);
    for (int i = 0; i < 10; i++) {   /* 1 s: about ten writes fail */
        TH_CHECK_RC(dist_mutex_lock(&m), 0);
        th_sleep_ms(100);
        TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    }
    return 0;
}

static void test_missing_dir(void **state)
{
    (void)state;
    static struct cargs a;
    th_name(a.base, sizeof a.base, "missing");
    snprintf(a.path, sizeof a.path, "/tmp/distlock-no-such-dir-%d/sub/m.prom", (int)getpid());
    char *err = NULL;
    int st = th_run_capture_stderr(missing_child, &a, &err, 30000);
    assert_int_equal(st, 0);
    int lines = 0;
    for (const char *c = err; c && (c = strstr(c, "DISTLOCK_METRICS_FILE")); c++)
        lines++;
    if (lines != 1)
        fail_msg("%d warnings about the metrics file, want 1; stderr:\n%s", lines, err ? err : "");
    printf("the warning: %s", err);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_counts),
        TH_TEST(test_missing_dir),
        TH_TEST(test_reconnects),
        TH_TEST(test_forked),
        TT_TEST(test_many_names),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
