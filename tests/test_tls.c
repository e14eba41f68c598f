/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tls.c - rediss:// and ?tls=1: locks over TLS, and every way a TLS
 * connection can be refused, each told apart in dist_lasterror().
 *
 * The suite makes its certificates at run time with the `openssl` command,
 * in the private temporary directory of harness_topo: a CA, a server
 * certificate for 127.0.0.1 and localhost, a client certificate, an expired
 * server certificate, one for another host name, and a second CA that
 * signed none of them.  Servers listen on 127.0.0.1 on a plain port (for
 * the test's own inspection) and a TLS port, with client certificates
 * required (`tls-auth-clients yes`, Redis's default).  Library calls run in
 * helper processes with their own environment (the library reads it once
 * per process).
 */
#include "harness_topo.h"
#include "harness_checker.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

typedef struct tls_srv {
    th_server_t s;
    int tls_port;
} tls_srv_t;

static tls_srv_t g_main;            /* srv.pem: the good one */
static tls_srv_t g_expired;         /* exp.pem */
static tls_srv_t g_other;           /* other.pem: DNS:other.example only */
#define NRL 3
static tls_srv_t g_rl[NRL];         /* redlock */
static char g_dir[300];

static char *path(char *buf, size_t size, const char *file)
{
    snprintf(buf, size, "%s/%s", g_dir, file);
    return buf;
}

static int make_certs(void)
{
    static const char script[] =
        "set -e\n"
        "cat > ext.cnf <<EOF\n"
        "[srv]\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
        "[other]\nsubjectAltName=DNS:other.example\n"
        "[cli]\nextendedKeyUsage=clientAuth\n"
        "EOF\n"
        "key() { openssl req -newkey rsa:2048 -nodes -keyout $1.key -out $1.csr -subj /CN=$1; }\n"
        "sign() { openssl x509 -req -in $1.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-days $2 -extfile ext.cnf -extensions $3 -out $1.pem; }\n"
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
        "-subj /CN=distlock-test-ca -days 2\n"
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca2.key -out ca2.pem "
        "-subj /CN=distlock-other-ca -days 2\n"
        "key srv; sign srv 2 srv\n"
        "key other; sign other 2 other\n"
        "key exp; sign exp -1 srv\n"
        "key cli; sign cli 2 cli\n"
        "openssl pkey -in cli.key -aes256 -passout pass:sekrit-passphrase -out cli-enc.key\n"
        "printf 'not a key\\n' > junk.key\n";
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s", g_dir, script);
    const char *argv[] = { "sh", "-c", cmd, NULL };
    char *out = NULL;
    int rc = tt_run(argv, 60000, &out);
    if (rc != 0)
        fprintf(stderr, "test_tls: making certificates failed (%d): %s\n", rc, out ? out : "");
    free(out);
    return rc;
}

static int start_tls(tls_srv_t *t, const char *cert, const char *const *more)
{
    char tport[16], c[400], k[400], ca[400], certf[64], keyf[64];
    snprintf(certf, sizeof certf, "%s.pem", cert);
    snprintf(keyf, sizeof keyf, "%s.key", cert);
    for (int attempt = 0; attempt < 8; attempt++) {
        t->tls_port = tt_free_port();
        snprintf(tport, sizeof tport, "%d", t->tls_port);
        const char *extra[32] = { "--tls-port", tport, "--tls-cert-file", path(c, sizeof c, certf),
                                  "--tls-key-file", path(k, sizeof k, keyf),
                                  "--tls-ca-cert-file", path(ca, sizeof ca, "ca.pem"),
                                  "--tls-auth-clients", "yes" };
        int n = 10;
        for (const char *const *m = more; m && *m && n < 31; m++)
            extra[n++] = *m;
        extra[n] = NULL;
        if (tt_server_start(&t->s, extra) == 0)
            return 0;
    }
    return -1;
}

static int group_setup(void **state)
{
    (void)state;
    tt_alarm(120);
    snprintf(g_dir, sizeof g_dir, "%s", tt_dir());
    if (make_certs() || start_tls(&g_main, "srv", NULL) || start_tls(&g_expired, "exp", NULL) ||
        start_tls(&g_other, "other", NULL))
        return -1;
    for (int i = 0; i < NRL; i++)
        if (start_tls(&g_rl[i], "srv", NULL))
            return -1;
    alarm(0);
    return 0;
}

/* ---------------------------------------------------------------- helpers */

/* An environment: the URL, then the TLS variables (NULL: not set). */
typedef struct tls_env {
    char url[420], ca[440], cert[440], key[440], name[320];
    const char *list[12];
} tls_env_t;

static const char *const *env_make(tls_env_t *e, const char *url, const char *ca,
                                   const char *cert, const char *key, const char *name)
{
    char p[400];
    int n = 0;
    snprintf(e->url, sizeof e->url, "DISTLOCK_URL=%s", url);
    e->list[n++] = e->url;
    e->list[n++] = "DISTLOCK_IO_TIMEOUT_MS=1500";
    e->list[n++] = "DISTLOCK_LOG=off";
    if (ca) {
        snprintf(e->ca, sizeof e->ca, "DISTLOCK_TLS_CA_FILE=%s", ca[0] == '/' ? ca : path(p, sizeof p, ca));
        e->list[n++] = e->ca;
    } else {
        e->list[n++] = "DISTLOCK_TLS_CA_FILE";
    }
    if (cert) {
        snprintf(e->cert, sizeof e->cert, "DISTLOCK_TLS_CERT_FILE=%s", path(p, sizeof p, cert));
        e->list[n++] = e->cert;
    } else {
        e->list[n++] = "DISTLOCK_TLS_CERT_FILE";
    }
    if (key) {
        snprintf(e->key, sizeof e->key, "DISTLOCK_TLS_KEY_FILE=%s", path(p, sizeof p, key));
        e->list[n++] = e->key;
    } else {
        e->list[n++] = "DISTLOCK_TLS_KEY_FILE";
    }
    if (name) {
        snprintf(e->name, sizeof e->name, "DISTLOCK_TLS_SERVER_NAME=%s", name);
        e->list[n++] = e->name;
    } else {
        e->list[n++] = "DISTLOCK_TLS_SERVER_NAME";
    }
    e->list[n] = NULL;
    return e->list;
}

/* The good client environment for a URL. */
static const char *const *env_good(tls_env_t *e, const char *url)
{
    return env_make(e, url, "ca.pem", "cli.pem", "cli.key", NULL);
}

static char *url_main(char *buf, size_t size, const char *host)
{
    snprintf(buf, size, "rediss://%s:%d", host, g_main.tls_port);
    return buf;
}

/* One trylock + unlock in a fresh process with env; returns the trylock's
 * result and its dist_lasterror() in err. */
static int try_once(const char *const *env, char *err, size_t errlen)
{
    th_proc_t p;
    char name[64];
    assert_int_equal(th_proc_start(&p, env), 0);
    th_res_t res;
    th_req_t q;
    th_proc_req(&q, TH_M_TRYLOCK, th_name(name, sizeof name, "tls-try"));
    int rc = th_proc_call(&p, &q, &res);
    snprintf(err, errlen, "%s", res.err);
    if (rc == 0)
        assert_int_equal(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    th_proc_stop(&p);
    return rc;
}

static void expect_fail(const char *const *env, int want, const char *what1, const char *what2)
{
    char err[256];
    int rc = try_once(env, err, sizeof err);
    print_message("  -> %s: \"%s\"\n", th_errname(rc), err);
    if (rc != want)
        fail_msg("got %s (\"%s\"), want %s", th_errname(rc), err, th_errname(want));
    if (!th_contains(err, what1) || (what2 && !th_contains(err, what2)))
        fail_msg("dist_lasterror \"%s\" does not say \"%s\"%s%s", err, what1,
                 what2 ? " and " : "", what2 ? what2 : "");
    /* Nothing secret in it: the key's passphrase or contents. */
    if (th_contains(err, "sekrit") || th_contains(err, "BEGIN"))
        fail_msg("dist_lasterror shows secret material: \"%s\"", err);
}

/* ------------------------------------------------------------------ tests */

/* Lock, unlock, the key in Redis while held, a waiter woken by the push
 * (the subscriber over TLS), the name checked by IP and by DNS name. */
static void test_lock_over_tls(void **state)
{
    (void)state;
    tls_env_t e;
    char url[200], name[64], key[200];
    th_proc_t a, b;
    assert_int_equal(th_proc_start(&a, env_good(&e, url_main(url, sizeof url, "127.0.0.1"))), 0);
    assert_int_equal(th_proc_start(&b, env_good(&e, url_main(url, sizeof url, "localhost"))), 0);
    th_name(name, sizeof name, "tls-lock");
    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);
    th_key(key, sizeof key, name, "");
    assert_int_equal(th_cmd_at_ll(g_main.s.port, "EXISTS %s", key), 1);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_TRYLOCK, name), EBUSY);
    assert_int_equal(th_proc_op_async(&b, TH_M_LOCK, name), 0);
    char q[220];
    th_key(q, sizeof q, name, ":q");
    th_wait_zcard_at(g_main.s.port, q, 1, 3000);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);
    th_res_t res;
    assert_int_equal(th_proc_recv(&b, &res, 10000), 0);
    TH_ASSERT_RC(res.rc, 0);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_UNLOCK, name), 0);
    /* a read-write lock too, shared by both */
    TH_ASSERT_RC(th_proc_op(&a, TH_RW_RDLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&b, TH_RW_RDLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_RW_UNLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&b, TH_RW_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&a), 0);
    assert_int_equal(th_proc_stop(&b), 0);
}

/* Mutual exclusion over TLS: processes x threads on one connection each. */
static void test_stress_over_tls(void **state)
{
    (void)state;
    tls_env_t e;
    char url[200];
    chk_cfg_t cfg;
    chk_cfg_background(&cfg);
    cfg.procs = 3;
    cfg.threads = 2;
    cfg.nnames = 2;
    th_name(cfg.names[0], sizeof cfg.names[0], "tls-st");
    th_name(cfg.names[1], sizeof cfg.names[1], "tls-st");
    cfg.ops_per_thread = 150;
    cfg.hold_us = 100;
    cfg.env = env_good(&e, url_main(url, sizeof url, "127.0.0.1"));
    chk_live_t *s = chk_start(&cfg);
    assert_non_null(s);
    int64_t end = th_now_ms() + 40000;
    uint64_t want = (uint64_t)(cfg.procs * cfg.threads * cfg.ops_per_thread);
    while (chk_live_holds(s) < want && th_now_ms() < end)
        th_sleep_ms(10);
    chk_report_t rep;
    chk_finish(s, 10000, &rep);
    chk_print(stdout, "tls stress", &rep);
    if (rep.children_failed || rep.overlaps || rep.fence_inversions || rep.lost_updates)
        fail_msg("tls stress: %s", rep.first);
    if (rep.holds != want)
        fail_msg("tls stress: %llu holds (a failed call: %s)", (unsigned long long)rep.holds,
                 rep.first_error);
}

/* The server drops every connection: the library connects again (TLS
 * handshake and all) and carries on. */
static void test_reconnect(void **state)
{
    (void)state;
    tls_env_t e;
    char url[200], name[64];
    th_proc_t a;
    assert_int_equal(th_proc_start(&a, env_good(&e, url_main(url, sizeof url, "127.0.0.1"))), 0);
    th_name(name, sizeof name, "tls-rc");
    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);
    redisReply *r = th_cmd_at(g_main.s.port, "CLIENT KILL TYPE normal");
    assert_non_null(r);
    freeReplyObject(r);
    r = th_cmd_at(g_main.s.port, "CLIENT KILL TYPE pubsub");
    assert_non_null(r);
    freeReplyObject(r);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&a), 0);
}

/* A stalled TLS server: the call gives EIO within DISTLOCK_IO_TIMEOUT_MS
 * instead of hanging; it works again once the server resumes. */
static void test_stalled_server(void **state)
{
    (void)state;
    tls_env_t e;
    char url[200], name[64];
    th_proc_t a;
    env_good(&e, url_main(url, sizeof url, "127.0.0.1"));
    e.list[1] = "DISTLOCK_IO_TIMEOUT_MS=500";
    assert_int_equal(th_proc_start(&a, e.list), 0);
    th_name(name, sizeof name, "tls-stall");
    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);
    th_server_pause(&g_main.s);
    th_res_t res;
    th_req_t q;
    th_proc_req(&q, TH_M_UNLOCK, name);
    int rc = th_proc_call(&a, &q, &res);
    th_server_resume(&g_main.s);
    print_message("  stalled: %s \"%s\"\n", th_errname(rc), res.err);
    assert_int_equal(rc, EIO);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&a), 0);
}

/* fork(): the child drops its parent's TLS connections without writing
 * on them (it has no relay threads) and locks on its own; the parent's
 * sessions are untouched and go on working.  Forking right after the
 * parent's first lock, while its relay threads may still be busy inside
 * OpenSSL, once left the child stuck on a lock one of them held (seen
 * under ASan, whose allocator lock it was); fork now waits for them. */
static const char *const *g_fork_env;

static int fork_child_fn(void *arg)
{
    (void)arg;
    th_sigpipe_default();
    th_setenv_list(g_fork_env);
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, "tls-fork-parent", NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    /* The library's threads (subscriber, watchdog, relays) have just
     * started.  glibc's malloc survives a fork in the middle of another
     * thread's allocation, a sanitizer's allocator does not (the child
     * then hangs on its lock): give them time to go idle.  Not a
     * synchronisation of the library: the fork is correct either way. */
    th_sleep_ms(200);
    pid_t pid = fork();
    TH_CHECK(pid >= 0);
    if (pid == 0) {
        dist_mutex_t c;
        int rc = dist_mutex_init(&c, "tls-fork-child", NULL);
        if (!rc)
            rc = dist_mutex_lock(&c);
        if (!rc)
            rc = dist_mutex_unlock(&c);
        if (rc)
            fprintf(stderr, "fork child: %s: %s\n", th_errname(rc), dist_lasterror());
        _exit(rc ? 3 : 0);
    }
    int st;
    TH_CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "fork child: status 0x%x\n", st);
    TH_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    return 0;
}

static void test_fork(void **state)
{
    (void)state;
    if (!th_fork_threads_ok()) {
        /* The child of fork_child_fn, whose library threads run, starts
         * its own: not possible under this ThreadSanitizer. */
        print_message("skipped: this ThreadSanitizer stops a thread started in a child of a "
                      "threaded process (\"dup thread\"; docs/RELIABILITY.md)\n");
        skip();
    }
    tls_env_t e;
    char url[200];
    g_fork_env = env_good(&e, url_main(url, sizeof url, "127.0.0.1"));
    TH_ASSERT_CHILD_OK(th_fork_child(fork_child_fn, NULL));
}

/* redlock://...?tls=1 over three TLS servers: a majority holds the key. */
static void test_redlock_tls(void **state)
{
    (void)state;
    char url[400], name[64], key[200];
    size_t o = (size_t)snprintf(url, sizeof url, "redlock://");
    for (int i = 0; i < NRL; i++)
        o += (size_t)snprintf(url + o, sizeof url - o, "%s127.0.0.1:%d", i ? "," : "", g_rl[i].tls_port);
    snprintf(url + o, sizeof url - o, "?tls=1");
    tls_env_t e;
    th_proc_t a, b;
    assert_int_equal(th_proc_start(&a, env_good(&e, url)), 0);
    assert_int_equal(th_proc_start(&b, env_good(&e, url)), 0);
    th_name(name, sizeof name, "tls-rl");
    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);
    th_key(key, sizeof key, name, "");
    int held = 0;
    for (int i = 0; i < NRL; i++)
        held += th_cmd_at_ll(g_rl[i].s.port, "EXISTS %s", key) == 1;
    assert_true(held >= 2);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_TRYLOCK, name), EBUSY);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_LOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&a), 0);
    assert_int_equal(th_proc_stop(&b), 0);
    /* without ?tls=1 the same URL is plain text to TLS ports */
    url[o] = 0;
    expect_fail(env_good(&e, url), EIO, "rediss", NULL);
}

/* DISTLOCK_TLS_SERVER_NAME: the name checked (and sent) instead of the
 * URL's host. */
static void test_server_name(void **state)
{
    (void)state;
    tls_env_t e;
    char url[200], err[256];
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", g_other.tls_port);
    TH_ASSERT_RC(try_once(env_make(&e, url, "ca.pem", "cli.pem", "cli.key", "other.example"),
                          err, sizeof err), 0);
    print_message("wrong host name:\n");
    expect_fail(env_make(&e, url, "ca.pem", "cli.pem", "cli.key", NULL), EIO, "IP address mismatch",
                "DISTLOCK_TLS_SERVER_NAME");
    expect_fail(env_make(&e, url_main(url, sizeof url, "127.0.0.1"), "ca.pem", "cli.pem", "cli.key",
                         "wrong.example"), EIO, "hostname mismatch", NULL);
}

static void test_errors(void **state)
{
    (void)state;
    tls_env_t e;
    char url[200], plain[200];
    url_main(url, sizeof url, "127.0.0.1");
    print_message("wrong CA:\n");
    expect_fail(env_make(&e, url, "ca2.pem", "cli.pem", "cli.key", NULL), EIO, "certificate",
                "DISTLOCK_TLS_CA_FILE");
    print_message("no client certificate:\n");
    expect_fail(env_make(&e, url, "ca.pem", NULL, NULL, NULL), EIO, "client certificate", NULL);
    print_message("expired server certificate:\n");
    snprintf(plain, sizeof plain, "rediss://127.0.0.1:%d", g_expired.tls_port);
    expect_fail(env_good(&e, plain), EIO, "expired", NULL);
    print_message("plain text to the TLS port:\n");
    snprintf(plain, sizeof plain, "redis://127.0.0.1:%d", g_main.tls_port);
    expect_fail(env_good(&e, plain), EIO, "rediss://", NULL);
    print_message("TLS to a plain port:\n");
    snprintf(plain, sizeof plain, "rediss://127.0.0.1:%d", g_main.s.port);
    expect_fail(env_good(&e, plain), EIO, "plain port", NULL);
    print_message("files:\n");
    expect_fail(env_make(&e, url, "/nonexistent/ca.pem", "cli.pem", "cli.key", NULL), EINVAL,
                "DISTLOCK_TLS_CA_FILE", "/nonexistent/ca.pem");
    expect_fail(env_make(&e, url, "ca.pem", "nope.pem", "cli.key", NULL), EINVAL,
                "DISTLOCK_TLS_CERT_FILE", NULL);
    expect_fail(env_make(&e, url, "ca.pem", "cli.pem", "nope.key", NULL), EINVAL,
                "DISTLOCK_TLS_KEY_FILE", NULL);
    expect_fail(env_make(&e, url, "ca.pem", "cli.pem", NULL, NULL), EINVAL,
                "DISTLOCK_TLS_KEY_FILE", NULL);
    expect_fail(env_make(&e, url, "ca.pem", "cli.pem", "junk.key", NULL), EINVAL,
                "DISTLOCK_TLS_KEY_FILE", NULL);
    /* an encrypted key: refused (no prompt), passphrase never shown */
    expect_fail(env_make(&e, url, "ca.pem", "cli.pem", "cli-enc.key", NULL), EINVAL,
                "DISTLOCK_TLS_KEY_FILE", "encrypted");
    expect_fail(env_make(&e, url, "ca.pem", "cli.pem", "srv.key", NULL), EINVAL,
                "does not match", NULL);
    print_message("bad URL:\n");
    expect_fail(env_good(&e, "redis-cluster://127.0.0.1:1?tls=2"), EINVAL, "tls=", NULL);
    expect_fail(env_good(&e, "unix:///tmp/x.sock?tls=1"), EINVAL, "unknown query item", NULL);
}

/* Turns TLS on for the topology starters of harness_topo. */
static void topo_tls(void)
{
    char c[400], k[400], ca[400];
    tt_tls_use(path(c, sizeof c, "srv.pem"), path(k, sizeof k, "srv.key"), path(ca, sizeof ca, "ca.pem"));
}

static int replica_up(void *arg)
{
    char buf[32];
    return tt_info_field(*(int *)arg, "replication", "master_link_status", buf, sizeof buf) &&
           strcmp(buf, "up") == 0;
}

/* Lock and unlock in p, retrying EIO for up to ms (a failover under way). */
static int lock_cycle(th_proc_t *p, const char *name, long ms)
{
    int64_t end = th_now_ms() + ms;
    int rc;
    do {
        rc = th_proc_op(p, TH_M_LOCK, name);
        if (rc == 0 || rc == EOWNERDEAD)
            return th_proc_op(p, TH_M_UNLOCK, name);
        th_sleep_ms(100);
    } while (th_now_ms() < end);
    return rc;
}

/* redis-sentinel://...?tls=1: sentinels, master and replica all over TLS
 * (tls-replication); when the master dies, the lock follows the sentinels
 * to the promoted replica. */
static void test_sentinel_tls(void **state)
{
    (void)state;
    tt_alarm(120);
    topo_tls();
    th_server_t m, r;
    assert_int_equal(tt_server_start(&m, NULL), 0);
    char mport[16];
    snprintf(mport, sizeof mport, "%d", m.tls_port);
    const char *rx[] = { "--replicaof", "127.0.0.1", mport, NULL };
    assert_int_equal(tt_server_start(&r, rx), 0);
    assert_true(th_wait_until(replica_up, &r.port, 15000));
    tt_sentinels_t st;
    assert_int_equal(tt_sentinels_start(&st, 3, "tlsm", m.tls_port, 2, 1), 0);
    tt_tls_use(NULL, NULL, NULL);

    char url[400], name[64];
    size_t o = (size_t)snprintf(url, sizeof url, "redis-sentinel://");
    for (int i = 0; i < st.n; i++)
        o += (size_t)snprintf(url + o, sizeof url - o, "%s127.0.0.1:%d", i ? "," : "", st.s[i].tls_port);
    snprintf(url + o, sizeof url - o, "/tlsm?tls=1");
    tls_env_t e;
    th_proc_t p;
    env_good(&e, url);
    e.list[1] = "DISTLOCK_IO_TIMEOUT_MS=3000";
    assert_int_equal(th_proc_start(&p, e.list), 0);
    th_name(name, sizeof name, "tls-sent");
    TH_ASSERT_RC(lock_cycle(&p, name, 5000), 0);

    /* the master dies: the sentinels (over TLS) promote the replica */
    pid_t mpid = m.pid;
    th_server_kill(&m);
    tt_forget(mpid);
    int64_t end = th_now_ms() + 30000;
    while (tt_sentinel_master_port(&st, 0) != r.tls_port && th_now_ms() < end)
        th_sleep_ms(50);
    assert_int_equal(tt_sentinel_master_port(&st, 0), r.tls_port);
    TH_ASSERT_RC(lock_cycle(&p, name, 15000), 0);
    char key[200];
    th_key(key, sizeof key, name, "");
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    assert_int_equal(th_cmd_at_ll(r.port, "EXISTS %s", key), 1);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    tt_sentinels_stop(&st);
    pid_t rpid = r.pid;
    th_server_kill(&r);
    tt_forget(rpid);
}

/* redis-cluster://...?tls=1: six nodes with tls-cluster; the slot map and
 * redirects (MOVED) name TLS ports, and locks spread over every master. */
static void test_cluster_tls(void **state)
{
    (void)state;
    tt_alarm(150);
    topo_tls();
    tt_cluster_t c;
    int ok = tt_cluster_start(&c);
    tt_tls_use(NULL, NULL, NULL);
    assert_int_equal(ok, 0);
    char url[600];
    /* one seed: every other node is found through CLUSTER SLOTS */
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d?tls=1", c.node[0].tls_port);
    tls_env_t e;
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, env_good(&e, url)), 0);
    int masters[TT_CLUSTER_NODES], nm = tt_cluster_masters(&c, masters, TT_CLUSTER_NODES);
    int seen[TT_CLUSTER_NODES] = { 0 }, distinct = 0;
    for (int i = 0; i < 40; i++) {
        char name[64], key[200];
        th_name(name, sizeof name, "tls-cl");
        TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
        th_key(key, sizeof key, name, "");
        for (int k = 0; k < nm; k++)
            if (th_cmd_at_ll(c.node[masters[k]].port, "EXISTS %s", key) == 1 && !seen[k]++)
                distinct++;
        TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    }
    assert_int_equal(distinct, nm);

    /* An empty slot handed to another master behind the library's back:
     * the old owner answers MOVED with the new one's TLS port, and the
     * library follows it. */
    static int map[16384];
    assert_int_equal(tt_cluster_slot_map(&c, 0, map), 0);
    char name[64], key[200];
    unsigned slot;
    int from;
    do {
        th_name(name, sizeof name, "tls-mv");
        th_key(key, sizeof key, name, "");
        slot = tt_key_slot(key, strlen(key));
        from = tt_cluster_index(&c, map[slot]);
    } while (from < 0 || th_cmd_at_ll(c.node[from].port, "CLUSTER COUNTKEYSINSLOT %u", slot) != 0);
    int to = masters[0] == from ? masters[1] : masters[0];
    for (int k = 0; k < nm; k++) {
        redisReply *r = th_cmd_at(c.node[masters[k]].port, "CLUSTER SETSLOT %u NODE %s", slot, c.id[to]);
        assert_non_null(r);
        if (r->type == REDIS_REPLY_ERROR)
            fail_msg("CLUSTER SETSLOT: %s", r->str);
        freeReplyObject(r);
    }
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    assert_int_equal(th_cmd_at_ll(c.node[to].port, "EXISTS %s", key), 1);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    tt_cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TT_TEST(test_lock_over_tls),
        TT_TEST(test_stress_over_tls),
        TT_TEST(test_reconnect),
        TT_TEST(test_stalled_server),
        TT_TEST(test_fork),
        TT_TEST(test_redlock_tls),
        TT_TEST(test_server_name),
        TT_TEST(test_errors),
        TT_TEST(test_sentinel_tls),
        TT_TEST(test_cluster_tls),
    };
    if (getenv("TLS_TEST"))             /* one test by name, while working on it */
        cmocka_set_test_filter(getenv("TLS_TEST"));
    return th_run_tests(tests, group_setup, tt_group_teardown);
}
