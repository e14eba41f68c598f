/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_security.c - credentials and owner tokens.
 *
 * A second redis-server with `requirepass` and ACL users:
 *   - the right credentials work: password in the URL, user and password in
 *     the URL, DISTLOCK_PASSWORD (alone, and overriding the URL's), a
 *     percent-encoded password with URL delimiters in it;
 *   - wrong or missing ones give EIO within the I/O time-out, with a
 *     dist_lasterror() that says why and never holds a password, and
 *     nothing on stderr (DISTLOCK_LOG=debug) holds one either; an ACL user
 *     without rights on the keys gives EIO too;
 *   - no password ends up in Redis (CLIENT LIST, the lock's hash).
 * Owner tokens (the `owner` field of the lock hash, the members of the
 * readers' zset) are random version-4 UUIDs, different in every process,
 * a forked child included.
 *
 * test_errors.c's test_password_never_printed covers an unreachable server
 * (connection refused) with a password in the URL or DISTLOCK_PASSWORD;
 * here the server is up and checks the credentials.
 */
#include "harness.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

/* The case tables leave trailing fields out. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define MARK "Sk3Pw"                         /* in every password below */
#define PW_DEFAULT MARK "-default"           /* requirepass */
#define PW_ALICE MARK "-alice"
#define PW_WRONG MARK "-wrong"
#define PW_BOB MARK "p@ss:w/rd %?#&="        /* URL delimiters in a password */
#define PW_BOB_URL MARK "p%40ss%3Aw%2Frd%20%25%3F%23%26%3D"
#define PW_CAROL MARK "-carol"

static th_server_t g_srv;                   /* the server with credentials */

/* A command on the credentialed server, as the default user, in database db. */
static redisReply *admin_db(int db, const char *fmt, ...)
{
    struct timeval tv = { 2, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", g_srv.port, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    redisReply *r = redisCommand(c, "AUTH %s", PW_DEFAULT);
    if (r)
        freeReplyObject(r);
    r = redisCommand(c, "SELECT %d", db);
    if (r)
        freeReplyObject(r);
    va_list ap;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

#define admin(...) admin_db(0, __VA_ARGS__)

/* url with "%d" replaced by the credentialed server's port (not a printf
 * format: the encoded passwords hold '%'). */
static void expand_url(const char *in, char *out, size_t size)
{
    const char *d = strstr(in, "%d");
    if (!d) {
        snprintf(out, size, "%s", in);
        return;
    }
    snprintf(out, size, "%.*s%d%s", (int)(d - in), in, g_srv.port, d + 2);
}

static pid_t g_owner;                       /* the process that started g_srv */

static int group_setup(void **state)
{
    if (th_group_setup(state) != 0)
        return -1;
    if (th_server_start(&g_srv) != 0)
        return -1;
    g_owner = getpid();
    /* users first (th_cmd_at has no AUTH), then the default user's password */
    redisReply *r;
    const char *users[][2] = {
        { "alice", PW_ALICE },
        { "bob", PW_BOB },
    };
    for (int i = 0; i < 2; i++) {
        char pw[128];
        snprintf(pw, sizeof pw, ">%s", users[i][1]);
        r = th_cmd_at(g_srv.port, "ACL SETUSER %s on %s ~* &* +@all", users[i][0], pw);
        if (!r || r->type == REDIS_REPLY_ERROR)
            return -1;
        freeReplyObject(r);
    }
    /* carol may log in and run scripts, but owns no keys of ours */
    r = th_cmd_at(g_srv.port, "ACL SETUSER carol on >%s ~other:* &* +@all", PW_CAROL);
    if (!r || r->type == REDIS_REPLY_ERROR)
        return -1;
    freeReplyObject(r);
    r = th_cmd_at(g_srv.port, "CONFIG SET requirepass %s", PW_DEFAULT);
    if (!r || r->type == REDIS_REPLY_ERROR)
        return -1;
    freeReplyObject(r);
    return 0;
}

static int group_teardown(void **state)
{
    if (getpid() == g_owner)
        th_server_stop(&g_srv);
    return th_group_teardown(state);
}

/* -------------------------------------------------------------- credentials */

struct cred_case {
    const char *desc;
    const char *url;      /* "%d": the credentialed server's port */
    const char *pwenv;    /* DISTLOCK_PASSWORD, NULL: unset */
    int want;             /* 0 or EIO */
    const char *must;     /* EIO: dist_lasterror() contains it */
    const char *user;     /* 0: CLIENT LIST shows our connection as this user */
    int db;               /* the URL's database */
};

static const struct cred_case *g_case;

static const char *const dl_vars[] = {
    "DISTLOCK_URL", "DISTLOCK_PASSWORD", "DISTLOCK_PREFIX", "DISTLOCK_LEASE_MS",
    "DISTLOCK_IO_TIMEOUT_MS", "DISTLOCK_LOG",
};

/* Whether CLIENT LIST shows a connection of user `user` of this process
 * (matched by our local ports). */
static int connected_as(const char *user)
{
    int ports[16];
    int n = th_proc_sockets(0, g_srv.port, ports, 16);
    redisReply *r = admin("CLIENT LIST");
    int found = 0;
    if (r && r->type == REDIS_REPLY_STRING) {
        for (char *line = r->str; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = 0;
            char want[64];
            snprintf(want, sizeof want, " user=%s ", user);
            const char *addr = strstr(line, " addr=");
            const char *colon = addr ? strchr(addr + 6, ':') : NULL;
            int port = colon ? atoi(colon + 1) : -1;
            for (int i = 0; i < n && i < 16; i++)
                if (ports[i] == port && strstr(line, want))
                    found = 1;
            line = nl ? nl + 1 : NULL;
        }
    }
    if (r)
        freeReplyObject(r);
    return found;
}

static int cred_child(void *arg)
{
    const struct cred_case *c = g_case;
    (void)arg;
    for (size_t i = 0; i < sizeof dl_vars / sizeof dl_vars[0]; i++)
        unsetenv(dl_vars[i]);
    char url[512];
    expand_url(c->url, url, sizeof url);
    setenv("DISTLOCK_URL", url, 1);
    if (c->pwenv)
        setenv("DISTLOCK_PASSWORD", c->pwenv, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "500", 1);
    setenv("DISTLOCK_LOG", "debug", 1);

    char name[64];
    th_name(name, sizeof name, "cred");
    dist_mutex_t m;
    dist_rwlock_t rw;
    TH_CHECK_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_CHECK_RC(dist_rwlock_init(&rw, name, NULL), 0);
    int64_t t0 = th_now_ms();
    int rc = dist_mutex_lock(&m);
    int64_t el = th_now_ms() - t0;
    const char *e = dist_lasterror();
    fprintf(stderr, "[security] %s: lock -> %s after %lld ms \"%s\"\n", c->desc, th_errname(rc),
            (long long)el, e);
    TH_CHECK(!strstr(e, MARK));
    TH_CHECK_RC(rc, c->want);
    if (rc) {
        TH_CHECK(e[0] != 0);
        TH_CHECK(!c->must || th_contains(e, c->must));
        TH_CHECK(el < 3000);
        /* again, and through the other calls: same answer, nothing leaks */
        TH_CHECK_RC(dist_mutex_trylock(&m), c->want);
        TH_CHECK(!strstr(dist_lasterror(), MARK));
        TH_CHECK_RC(dist_rwlock_rdlock(&rw), c->want);
        TH_CHECK(!strstr(dist_lasterror(), MARK));
        TH_CHECK_RC(dist_mutex_unlock(&m), EPERM);
        TH_CHECK_RC(dist_mutex_destroy(&m), 0);
        TH_CHECK_RC(dist_rwlock_destroy(&rw), 0);
        return 0;
    }
    /* held: the hash and the server's client list hold no password */
    char key[128];
    th_key(key, sizeof key, name, "");
    redisReply *r = admin_db(c->db, "HGETALL %s", key);
    TH_CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements >= 2);
    for (size_t i = 0; i < r->elements; i++)
        TH_CHECK(!r->element[i]->str || !strstr(r->element[i]->str, MARK));
    freeReplyObject(r);
    r = admin("CLIENT LIST");
    TH_CHECK(r && r->type == REDIS_REPLY_STRING && !strstr(r->str, MARK));
    freeReplyObject(r);
    if (c->user)
        TH_CHECK(connected_as(c->user));
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    /* a wait goes through the subscriber connection, which authenticates too */
    th_proc_t pr;
    TH_CHECK(th_proc_start(&pr, NULL) == 0);
    TH_CHECK(th_proc_op(&pr, TH_RW_WRLOCK, name) == 0);
    th_req_t q;
    th_proc_req(&q, TH_RW_UNLOCK, name);
    q.delay_us = 300000;
    TH_CHECK(th_proc_send(&pr, &q) == 0);
    TH_CHECK_RC(dist_rwlock_rdlock(&rw), 0);                 /* waits for the push */
    th_res_t res;
    TH_CHECK(th_proc_recv(&pr, &res, 5000) == 0 && res.rc == 0);
    TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    th_proc_stop(&pr);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    TH_CHECK_RC(dist_rwlock_destroy(&rw), 0);
    return 0;
}

static void run_cred_cases(const struct cred_case *cases, size_t n)
{
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        g_case = &cases[i];
        char *err = NULL;
        int st = th_run_capture_stderr(cred_child, NULL, &err, 20000);
        fputs(err ? err : "", stderr);
        /* our own [security] line shows dist_lasterror(), checked in the
         * child; anything else (library logs) must not hold a password */
        int leaked = 0;
        for (char *line = err; line && *line;) {
            char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line) : strlen(line);
            if (memmem(line, len, MARK, strlen(MARK)))
                leaked = 1;
            line = nl ? nl + 1 : NULL;
        }
        if (st != 0 || leaked) {
            print_error("%s: %s\n", cases[i].desc,
                        leaked ? "a password is on stderr" : "child failed (see above)");
            failed++;
        }
        free(err);
    }
    if (failed)
        fail_msg("%d credential case(s) failed", failed);
}

static void test_right_credentials(void **state)
{
    static const struct cred_case cases[] = {
        { "password in the URL", "redis://:" PW_DEFAULT "@127.0.0.1:%d", NULL, 0, NULL, "default" },
        { "default user and password in the URL", "redis://default:" PW_DEFAULT "@127.0.0.1:%d",
          NULL, 0, NULL, "default" },
        { "ACL user and password in the URL", "redis://alice:" PW_ALICE "@127.0.0.1:%d", NULL, 0,
          NULL, "alice" },
        { "ACL user in the URL, password percent-encoded (@ : / space % ? # & =)",
          "redis://bob:" PW_BOB_URL "@127.0.0.1:%d", NULL, 0, NULL, "bob" },
        { "DISTLOCK_PASSWORD", "redis://127.0.0.1:%d", PW_DEFAULT, 0, NULL, "default" },
        { "DISTLOCK_PASSWORD with the URL's user", "redis://alice@127.0.0.1:%d", PW_ALICE, 0, NULL,
          "alice" },
        { "DISTLOCK_PASSWORD overrides the URL's (wrong) password",
          "redis://alice:" PW_WRONG "@127.0.0.1:%d", PW_ALICE, 0, NULL, "alice" },
        /* Was a bug: user info + /db was misparsed (EINVAL "bad database
         * number", or a read past the string); fixed in 71e59f6. */
        { "password in the URL, database 2", "redis://:" PW_DEFAULT "@127.0.0.1:%d/2", NULL, 0, NULL,
          "default", 2 },
    };
    run_cred_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_wrong_credentials(void **state)
{
    static const struct cred_case cases[] = {
        { "no password", "redis://127.0.0.1:%d", NULL, EIO, "auth", NULL },
        { "wrong password in the URL", "redis://:" PW_WRONG "@127.0.0.1:%d", NULL, EIO,
          "authentication failed", NULL },
        { "wrong DISTLOCK_PASSWORD", "redis://127.0.0.1:%d", PW_WRONG, EIO, "authentication failed",
          NULL },
        { "wrong DISTLOCK_PASSWORD over the right URL password",
          "redis://:" PW_DEFAULT "@127.0.0.1:%d", PW_WRONG, EIO, "authentication failed", NULL },
        { "ACL user, wrong password", "redis://alice:" PW_WRONG "@127.0.0.1:%d", NULL, EIO,
          "authentication failed", NULL },
        { "ACL user, another user's password", "redis://alice:" PW_DEFAULT "@127.0.0.1:%d", NULL, EIO,
          "authentication failed", NULL },
        { "unknown user", "redis://mallory:" PW_ALICE "@127.0.0.1:%d", NULL, EIO,
          "authentication failed", NULL },
        { "ACL user without a password", "redis://alice@127.0.0.1:%d", NULL, EIO, "auth", NULL },
        { "raw '@' and ':' in a wrong password (taken up to the last '@')",
          "redis://bob:" MARK "p@ss:w@127.0.0.1:%d", NULL, EIO, "authentication failed", NULL },
        { "ACL user without rights on our keys", "redis://carol:" PW_CAROL "@127.0.0.1:%d", NULL, EIO,
          "NOPERM", NULL },
    };
    run_cred_cases(cases, sizeof cases / sizeof cases[0]);
}

/* A password for a server that has none: refused or ignored, never shown. */
static int nopw_child(void *arg)
{
    char url[128];
    snprintf(url, sizeof url, "redis://:%s@127.0.0.1:%d", PW_WRONG, th_redis_port());
    setenv("DISTLOCK_URL", url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "500", 1);
    setenv("DISTLOCK_LOG", "debug", 1);
    dist_mutex_t m;
    char name[64];
    TH_CHECK_RC(dist_mutex_init(&m, th_name(name, sizeof name, "nopw"), NULL), 0);
    int rc = dist_mutex_lock(&m);
    printf("[security] password for a server without one: %s \"%s\"\n", th_errname(rc),
           dist_lasterror());
    TH_CHECK(rc == 0 || rc == EIO);
    TH_CHECK(!strstr(dist_lasterror(), MARK));
    if (rc == 0)
        TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static void test_password_for_open_server(void **state)
{
    char *err = NULL;
    int st = th_run_capture_stderr(nopw_child, NULL, &err, 15000);
    if (st != 0 || (err && strstr(err, MARK)))
        fail_msg("status %d; stderr:\n%s", st, err);
    free(err);
}

/* ------------------------------------------------------------ owner tokens */

static int is_uuid_v4(const char *s, size_t len)
{
    if (len != 36)
        return 0;
    for (size_t i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return 0;
        } else if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) {
            return 0;
        }
    }
    return s[14] == '4' && strchr("89ab", s[19]) != NULL;
}

/* The owner field of the lock's hash, or "" if not held. */
static void owner_of(const char *name, char *out, size_t size)
{
    char key[128];
    th_key(key, sizeof key, name, "");
    redisReply *r = th_cmd("HGET %s owner", key);
    snprintf(out, size, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

struct fork_arg { const char *name; const char *parent_token; };

static int fork_token_child(void *p)
{
    struct fork_arg *a = p;
    dist_mutex_t m;
    TH_CHECK_RC(dist_mutex_init(&m, a->name, NULL), 0);
    TH_CHECK_RC(dist_mutex_lock(&m), 0);
    char tok[64];
    owner_of(a->name, tok, sizeof tok);
    fprintf(stderr, "[security] forked child's token %s (parent's %s)\n", tok, a->parent_token);
    TH_CHECK(is_uuid_v4(tok, strlen(tok)));
    TH_CHECK(strcmp(tok, a->parent_token) != 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    return 0;
}

static void test_owner_tokens(void **state)
{
    enum { NPROC = 6 };
    char name[64], tokens[NPROC + 2][64];
    int nt = 0;
    th_name(name, sizeof name, "token");

    /* this process first, so every process below is forked from one that
     * already has a token */
    dist_mutex_t m;
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    assert_int_equal(dist_mutex_lock(&m), 0);
    owner_of(name, tokens[nt], sizeof tokens[nt]);
    nt++;
    assert_int_equal(dist_mutex_unlock(&m), 0);

    struct fork_arg fa = { name, tokens[0] };
    TH_ASSERT_CHILD_OK(th_fork_child(fork_token_child, &fa));

    th_proc_t pr[NPROC];
    for (int i = 0; i < NPROC; i++) {
        assert_int_equal(th_proc_start(&pr[i], NULL), 0);
        TH_ASSERT_RC(th_proc_op(&pr[i], TH_M_LOCK, name), 0);
        owner_of(name, tokens[nt], sizeof tokens[nt]);
        nt++;
        TH_ASSERT_RC(th_proc_op(&pr[i], TH_M_UNLOCK, name), 0);
    }
    /* readers: each process's token is its member of the readers' zset */
    char rname[64], rkey[128];
    th_name(rname, sizeof rname, "token-r");
    th_key(rkey, sizeof rkey, rname, ":r");
    for (int i = 0; i < 2; i++)
        TH_ASSERT_RC(th_proc_op(&pr[i], TH_RW_RDLOCK, rname), 0);
    redisReply *r = th_cmd("ZRANGE %s 0 -1", rkey);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    for (size_t i = 0; i < r->elements; i++) {
        assert_true(is_uuid_v4(r->element[i]->str, r->element[i]->len));
        /* the same token as that process's writer hold */
        int seen = 0;
        for (int k = 1; k < nt; k++)
            seen |= strcmp(tokens[k], r->element[i]->str) == 0;
        assert_true(seen);
    }
    freeReplyObject(r);
    for (int i = 0; i < 2; i++)
        TH_ASSERT_RC(th_proc_op(&pr[i], TH_RW_UNLOCK, rname), 0);
    for (int i = 0; i < NPROC; i++)
        th_proc_stop(&pr[i]);

    for (int i = 0; i < nt; i++) {
        fprintf(stderr, "[security] token %d: %s\n", i, tokens[i]);
        if (!is_uuid_v4(tokens[i], strlen(tokens[i])))
            fail_msg("token \"%s\" is not a random (version 4) UUID", tokens[i]);
        for (int k = 0; k < i; k++) {
            if (strcmp(tokens[i], tokens[k]) == 0)
                fail_msg("two processes share the token %s", tokens[i]);
            /* time-based UUIDs of one host share the node part and most of
             * the time stamp; random ones share nothing */
            if (strcmp(tokens[i] + 24, tokens[k] + 24) == 0 || strncmp(tokens[i], tokens[k], 8) == 0)
                fail_msg("tokens %s and %s share a part: not random", tokens[i], tokens[k]);
        }
    }
    assert_int_equal(dist_mutex_destroy(&m), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_right_credentials),
        TH_TEST(test_wrong_credentials),
        TH_TEST(test_password_for_open_server),
        TH_TEST(test_owner_tokens),
    };
    return th_run_tests(tests, group_setup, group_teardown);
}
