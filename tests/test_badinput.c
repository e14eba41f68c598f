/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_badinput.c - bad input across the whole API and the environment.
 *
 * Every case checks the code SPEC.md documents and that dist_lasterror() is
 * readable: non-empty, printable ASCII, and free of any password that was
 * in the URL or DISTLOCK_PASSWORD.  No case may crash (sanitizers abort the
 * process on any memory or UB error) or leak (LeakSanitizer at exit; the
 * environment children end with exit() so it checks them too).
 *
 * Cases are run as tables and every one is printed as one line
 *     [badinput] <input> -> <CODE> "<dist_lasterror excerpt>"
 * so a failing case does not hide the ones after it; a test fails at its
 * end if any of its cases did.  docs/RELIABILITY.md's "Bad input" table is
 * made from these lines.
 *
 * The environment is read once per process (per forked child), so each
 * environment case runs in a child of its own that sets the variables
 * before its first dist_ call.  Those tests run first, before this process
 * starts the library's threads (LeakSanitizer in a child does not see the
 * stacks of the parent's threads).  test_errors.c's test_bad_environment
 * covers LEASE_MS abc/10abc/-5, IO_TIMEOUT_MS -1/abc, URL foo://x,
 * :99999 and /notadb, LOG loud: not repeated here.
 */
#include "harness.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>
#include <string.h>

/* The case tables leave trailing fields out. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define SECRET "Sk3Pw"   /* marker in every password of these cases */

static int g_failed, g_regress;
/* Cases run by all the tests of the suite: each test runs in a process of
 * its own, so the count lives in memory they share with the runner. */
static int *g_cases;

/* Printable version of s for our own output. */
static const char *esc(const char *s, char *buf, size_t size)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 5 < size; p++) {
        if (*p >= 0x20 && *p < 0x7f && *p != '\\')
            buf[o++] = (char)*p;
        else if (*p == '\\')
            o += (size_t)snprintf(buf + o, size - o, "\\\\");
        else
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", *p);
    }
    buf[o] = 0;
    return buf;
}

/* Why the text is not a readable message, or NULL. */
static const char *unreadable(const char *e)
{
    if (!e)
        return "dist_lasterror() is NULL";
    size_t n = strlen(e);
    if (n == 0)
        return "dist_lasterror() is empty";
    if (n >= 512)
        return "dist_lasterror() is 512 bytes or more";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)e[i] < 0x20 || (unsigned char)e[i] >= 0x7f)
            return "dist_lasterror() has a non-printable byte";
    return NULL;
}

/* One case: rc against want; for a failure, a readable message that holds
 * `must` (if any) and no password.  regress: the case caught a library
 * bug, since fixed (see the comment at the case); a failure says so. */
static int check3(const char *desc, int rc, int want, const char *err, const char *must, int regress)
{
    char d[400], m[700];
    const char *why = NULL;
    char whybuf[200];
    (*g_cases)++;
    if (rc != want) {
        snprintf(whybuf, sizeof whybuf, "got %s, want %s", th_errname(rc), th_errname(want));
        why = whybuf;
    } else if (want != 0 && (why = unreadable(err)) != NULL) {
    } else if (want != 0 && must && !th_contains(err, must)) {
        snprintf(whybuf, sizeof whybuf, "dist_lasterror() does not name %s", must);
        why = whybuf;
    } else if (err && strstr(err, SECRET)) {
        why = "dist_lasterror() contains the password";
    }
    fprintf(stderr, "[badinput] %s -> %s \"%s\"%s%s%s\n", esc(desc, d, sizeof d), th_errname(rc),
            rc ? esc(err ? err : "(null)", m, sizeof m) : "", why ? "  FAILED: " : "",
            why ? why : "", why && regress ? " (regression of a fixed bug, see the test)" : "");
    if (why) {
        g_failed++;
        if (regress)
            g_regress++;
    }
    return why == NULL;
}

static int check(const char *desc, int rc, int want)
{
    return check3(desc, rc, want, dist_lasterror(), NULL, 0);
}

#define CASE(expr, want) check(#expr, (expr), (want))

/* A text that must be readable (dist_strerror). */
static void check_text(const char *desc, const char *text)
{
    char d[400], m[700];
    const char *why = unreadable(text);
    (*g_cases)++;
    fprintf(stderr, "[badinput] %s -> \"%s\"%s%s\n", esc(desc, d, sizeof d),
            esc(text ? text : "(null)", m, sizeof m), why ? "  FAILED: " : "", why ? why : "");
    if (why)
        g_failed++;
}

/* The password anywhere in text, except on our own [badinput] lines
 * (which show the inputs). */
static int secret_outside_report(const char *text)
{
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        if (strncmp(line, "[badinput]", 10) != 0 && memmem(line, n, SECRET, strlen(SECRET)))
            return 1;
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

static void begin(void)
{
    g_failed = g_regress = 0;
}

static void end(const char *what)
{
    if (g_failed)
        fail_msg("%s: %d case(s) failed (%d of them regressions of fixed bugs), see the [badinput] lines",
                 what, g_failed, g_regress);
}

/* A port nothing listens on. */
static int closed_port(void)
{
    th_server_t s;
    if (th_server_start(&s) != 0)
        return -1;
    int port = s.port;
    th_server_stop(&s);
    return port;
}

/* ============================================================ environment */

#define ENV_MAX 4
struct env_case {
    const char *desc;             /* shown; NULL: made from the variables */
    const char *env[ENV_MAX];     /* "NAME=VALUE" ("NAME" alone unsets) */
    int want;
    const char *must;             /* dist_lasterror() must contain it (EINVAL: the variable) */
    int regress;                  /* caught a library bug, since fixed: see the comment */
    const char *key_suffix_check; /* want 0: the lock's key must exist under this prefix */
};

struct env_run {
    const struct env_case *c;
    char url[128];                /* the suite's server */
    int closed;                   /* a closed port, for "%d" in values */
};

static const char *const dl_vars[] = {
    "DISTLOCK_URL", "DISTLOCK_PASSWORD", "DISTLOCK_PREFIX", "DISTLOCK_LEASE_MS",
    "DISTLOCK_IO_TIMEOUT_MS", "DISTLOCK_LOG", "DISTLOCK_MAP", "DISTLOCK_ON_ERROR",
    "DISTLOCK_METRICS_FILE", "DISTLOCK_METRICS_INTERVAL_MS", "DISTLOCK_ON_LOSS",
};

/* "%P" in a value: the suite server's port; "%C": a closed port. */
static void expand(const char *in, char *out, size_t size, const struct env_run *r)
{
    size_t o = 0;
    for (const char *p = in; *p && o + 8 < size; p++) {
        if (p[0] == '%' && (p[1] == 'P' || p[1] == 'C')) {
            o += (size_t)snprintf(out + o, size - o, "%d", p[1] == 'P' ? th_redis_port() : r->closed);
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

/* The child: a clean DISTLOCK_* environment, the case's variables, then
 * init + trylock + unlock of a mutex, and a check of the result.  Prints
 * its [badinput] line; exit() (not _exit) so LeakSanitizer checks it. */
static int env_child(void *p)
{
    const struct env_run *r = p;
    const struct env_case *c = r->c;
    for (size_t i = 0; i < sizeof dl_vars / sizeof dl_vars[0]; i++)
        unsetenv(dl_vars[i]);
    setenv("DISTLOCK_URL", r->url, 1);
    setenv("DISTLOCK_IO_TIMEOUT_MS", "300", 1);
    static char buf[ENV_MAX][70000];
    char desc[600];
    size_t dl = 0;
    desc[0] = 0;
    for (int i = 0; i < ENV_MAX && c->env[i]; i++) {
        expand(c->env[i], buf[i], sizeof buf[i], r);
        char *eq = strchr(buf[i], '=');
        if (eq) {
            *eq = 0;
            setenv(buf[i], eq + 1, 1);
            if (!c->desc)
                dl += (size_t)snprintf(desc + dl, sizeof desc - dl, "%s%s=\"%.*s%s\"", dl ? " " : "",
                                       buf[i], 60, eq + 1, strlen(eq + 1) > 60 ? "..." : "");
            *eq = '=';
        } else {
            unsetenv(buf[i]);
        }
        if (dl >= sizeof desc)
            dl = sizeof desc - 1;
    }
    char name[64];
    th_name(name, sizeof name, "envcase");
    dist_mutex_t m;
    int rc = dist_mutex_init(&m, name, NULL);
    int inited = rc == 0;
    if (rc == 0)
        rc = dist_mutex_trylock(&m);
    char err[600];
    snprintf(err, sizeof err, "%s", dist_lasterror());
    int ok = check3(c->desc ? c->desc : desc, rc, c->want, err, c->must, c->regress);
    if (rc == 0 && c->key_suffix_check) {
        char key[700];
        th_key(key, sizeof key, name, "");
        redisReply *x = th_cmd("EXISTS %b", key, strlen(key));
        if (x->type != REDIS_REPLY_INTEGER || x->integer != 1) {
            fprintf(stderr, "[badinput]   FAILED: the lock's key is not where the prefix says\n");
            ok = 0;
        }
        freeReplyObject(x);
    }
    if (rc == 0 || rc == EOWNERDEAD) {
        rc = dist_mutex_unlock(&m);
        /* DISTLOCK_LEASE_MS=30 may lapse before the unlock (valgrind) */
        if (rc != 0 && !(rc == ENOLCK && getenv("DISTLOCK_LEASE_MS") &&
                         strcmp(getenv("DISTLOCK_LEASE_MS"), "30") == 0)) {
            fprintf(stderr, "[badinput]   FAILED: unlock: %s\n", th_errname(rc));
            ok = 0;
        }
    }
    if (inited)
        dist_mutex_destroy(&m);
    fflush(stderr);
    exit(ok ? 0 : 1);
}

static void run_env_cases(const struct env_case *cases, size_t n, const char *what)
{
    struct env_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.url, sizeof r.url, "redis://127.0.0.1:%d", th_redis_port());
    r.closed = closed_port();
    assert_true(r.closed > 0);
    int failed = 0, regress = 0;
    for (size_t i = 0; i < n; i++) {
        r.c = &cases[i];
        char *out = NULL;
        int st = th_run_capture_stderr(env_child, &r, &out, 20000);
        (*g_cases)++;
        /* Everything the child printed (DISTLOCK_LOG=debug included) must
         * be free of the password too. */
        int leaked = secret_outside_report(out);
        fputs(out ? out : "", stderr);
        if (st != 0 || leaked) {
            if (st != 0 && st != 1)
                fprintf(stderr, "[badinput]   FAILED: case %zu: child status %d%s\n", i, st,
                        st > 128 ? " (killed by a signal: crash?)" : "");
            if (leaked)
                fprintf(stderr, "[badinput]   FAILED: case %zu: the password is on stderr\n", i);
            failed++;
            regress += cases[i].regress;
        }
        free(out);
    }
    if (failed)
        fail_msg("%s: %d case(s) failed (%d of them regressions of fixed bugs), see the [badinput] lines",
                 what, failed, regress);
}

#define E(...) { __VA_ARGS__ }

/* Numeric and enumerated variables: empty, negative, non-numeric, huge. */
static void test_env_values(void **state)
{
    static char digits[20001], loglong[5001];
    memset(digits, '7', sizeof digits - 1);
    memset(loglong, 'd', sizeof loglong - 1);
    static char d_env[20030], l_env[5030];
    snprintf(d_env, sizeof d_env, "DISTLOCK_LEASE_MS=%s", digits);
    snprintf(l_env, sizeof l_env, "DISTLOCK_LOG=%s", loglong);
    const struct env_case cases[] = {
        /* DISTLOCK_LEASE_MS: whole ms in [30, 86400000] */
        { NULL, E("DISTLOCK_LEASE_MS="), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=0"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=29"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=30"), 0 },
        { NULL, E("DISTLOCK_LEASE_MS=86400000"), 0 },
        { NULL, E("DISTLOCK_LEASE_MS=86400001"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=-1"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=-0"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=18446744073709551616"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=18446744073709551615"), EINVAL, "DISTLOCK_LEASE_MS" },
        { "DISTLOCK_LEASE_MS=<20000 digits>", E(d_env), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS= 1000"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=1000 "), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=+1000"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=1e3"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=0x400"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=1,000"), EINVAL, "DISTLOCK_LEASE_MS" },
        { NULL, E("DISTLOCK_LEASE_MS=1000.5"), EINVAL, "DISTLOCK_LEASE_MS" },
        /* The value is quoted in the message: a control byte in it must
         * not end up raw in dist_lasterror().  Was a bug: env_ulong()
         * printed the value with %.40s (fixed in 71e59f6: dl_quote). */
        { NULL, E("DISTLOCK_LEASE_MS=\x1b[2J100"), EINVAL, "DISTLOCK_LEASE_MS", 1 },
        { NULL, E("DISTLOCK_LEASE_MS=\xff\xfe"), EINVAL, "DISTLOCK_LEASE_MS", 1 },

        /* DISTLOCK_IO_TIMEOUT_MS: whole ms in [1, 86400000] */
        { NULL, E("DISTLOCK_IO_TIMEOUT_MS="), EINVAL, "DISTLOCK_IO_TIMEOUT_MS" },
        { NULL, E("DISTLOCK_IO_TIMEOUT_MS=0"), EINVAL, "DISTLOCK_IO_TIMEOUT_MS" },
        { NULL, E("DISTLOCK_IO_TIMEOUT_MS=-500"), EINVAL, "DISTLOCK_IO_TIMEOUT_MS" },
        { NULL, E("DISTLOCK_IO_TIMEOUT_MS=1.5"), EINVAL, "DISTLOCK_IO_TIMEOUT_MS" },
        { NULL, E("DISTLOCK_IO_TIMEOUT_MS=86400001"), EINVAL, "DISTLOCK_IO_TIMEOUT_MS" },
        { NULL, E("DISTLOCK_IO_TIMEOUT_MS=99999999999999999999999999"), EINVAL, "DISTLOCK_IO_TIMEOUT_MS" },
        { NULL, E("DISTLOCK_IO_TIMEOUT_MS=\t5"), EINVAL, "DISTLOCK_IO_TIMEOUT_MS", 1 },
        { NULL, E("DISTLOCK_IO_TIMEOUT_MS=86400000"), 0 },
        /* DISTLOCK_METRICS_INTERVAL_MS: whole ms in [100, 86400000], read
         * with or without a metrics file */
        { NULL, E("DISTLOCK_METRICS_INTERVAL_MS="), EINVAL, "DISTLOCK_METRICS_INTERVAL_MS" },
        { NULL, E("DISTLOCK_METRICS_INTERVAL_MS=99"), EINVAL, "DISTLOCK_METRICS_INTERVAL_MS" },
        { NULL, E("DISTLOCK_METRICS_INTERVAL_MS=-100"), EINVAL, "DISTLOCK_METRICS_INTERVAL_MS" },
        { NULL, E("DISTLOCK_METRICS_INTERVAL_MS=1s"), EINVAL, "DISTLOCK_METRICS_INTERVAL_MS" },
        { NULL, E("DISTLOCK_METRICS_INTERVAL_MS=86400001"), EINVAL, "DISTLOCK_METRICS_INTERVAL_MS" },
        { NULL, E("DISTLOCK_METRICS_INTERVAL_MS=100"), 0 },
        /* DISTLOCK_METRICS_FILE: any path, found bad only when written
         * (one warning, tests/test_metrics.c), except one too long */
        { NULL, E("DISTLOCK_METRICS_FILE="), 0 },
        { NULL, E("DISTLOCK_METRICS_FILE=/dev/null/x.prom"), 0 },
        { NULL, E("DISTLOCK_METRICS_FILE=/proc/x.prom", "DISTLOCK_METRICS_INTERVAL_MS=100"), 0 },

        /* DISTLOCK_LOG: off, error, warn, info, debug */
        { NULL, E("DISTLOCK_LOG=DEBUG"), EINVAL, "DISTLOCK_LOG" },
        { NULL, E("DISTLOCK_LOG=warn "), EINVAL, "DISTLOCK_LOG" },
        { NULL, E("DISTLOCK_LOG=3"), EINVAL, "DISTLOCK_LOG" },
        { NULL, E("DISTLOCK_LOG=-1"), EINVAL, "DISTLOCK_LOG" },
        { NULL, E("DISTLOCK_LOG=debu"), EINVAL, "DISTLOCK_LOG" },
        { "DISTLOCK_LOG=<5000 x 'd'>", E(l_env), EINVAL, "DISTLOCK_LOG" },
        /* Was a bug: the value was echoed raw (%.20s); fixed in 71e59f6. */
        { NULL, E("DISTLOCK_LOG=warn\n"), EINVAL, "DISTLOCK_LOG", 1 },
        /* Empty: SPEC lists the values and a default; an empty variable is
         * "not set" here as for DISTLOCK_PASSWORD (empty = no password), so
         * it gives the default (warn) instead of making every call fail.
         * Was a bug: EINVAL (fixed in 71e59f6). */
        { NULL, E("DISTLOCK_LOG="), 0, NULL, 1 },

        /* DISTLOCK_PREFIX: any bytes but '{' '}', shorter than 256 */
        { NULL, E("DISTLOCK_PREFIX={"), EINVAL, "DISTLOCK_PREFIX" },
        { NULL, E("DISTLOCK_PREFIX=a}b"), EINVAL, "DISTLOCK_PREFIX" },
        { NULL, E("DISTLOCK_PREFIX=app:{tag}:"), EINVAL, "DISTLOCK_PREFIX" },
        { "DISTLOCK_PREFIX=<256 x 'p'>",
          E("DISTLOCK_PREFIX=pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
            "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
            "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
            "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"),
          EINVAL, "DISTLOCK_PREFIX" },
        { NULL, E("DISTLOCK_PREFIX="), 0, NULL, 0, "" },
        { NULL, E("DISTLOCK_PREFIX=\xff\n\t bin:"), 0, NULL, 0, "" },

        /* DISTLOCK_PASSWORD: empty is "none"; too long is refused, unprinted */
        { NULL, E("DISTLOCK_PASSWORD="), 0 },
        { "DISTLOCK_PASSWORD=<300 bytes with the secret>",
          E("DISTLOCK_PASSWORD=" SECRET "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "DISTLOCK_LOG=debug"),
          EINVAL, "DISTLOCK_PASSWORD" },

        /* The interposer's variables mean nothing to the library itself. */
        { NULL, E("DISTLOCK_MAP=garbage;;=:"), 0 },
        { NULL, E("DISTLOCK_ON_ERROR=bogus"), 0 },
        { NULL, E("DISTLOCK_ON_ERROR="), 0 },

        /* Several bad at once: the first checked is named, nothing leaks. */
        { NULL, E("DISTLOCK_LEASE_MS=x", "DISTLOCK_LOG=y", "DISTLOCK_PREFIX={"), EINVAL, "DISTLOCK_" },
    };
    begin();
    run_env_cases(cases, sizeof cases / sizeof cases[0], "environment values");
}

/* DISTLOCK_URL: malformed in every way; never echoing a password. */
static void test_env_urls(void **state)
{
    static char longhost[400], longurl[66000], longpath[400], longuser[400], longpw[400];
    snprintf(longhost, sizeof longhost, "DISTLOCK_URL=redis://%0300d:6379", 0);
    memset(longhost + 21, 'h', 300);
    {
        size_t o = (size_t)snprintf(longurl, sizeof longurl, "DISTLOCK_URL=redis://127.0.0.1:%%P/");
        memset(longurl + o, '1', 65000);
        longurl[o + 65000] = 0;
    }
    snprintf(longpath, sizeof longpath, "DISTLOCK_URL=unix:///%0300d", 0);
    {
        char u[281], pw[301];
        memset(u, 'u', 280);
        u[280] = 0;
        memset(pw, 'w', 300);
        memcpy(pw, SECRET, strlen(SECRET));
        pw[300] = 0;
        snprintf(longuser, sizeof longuser, "DISTLOCK_URL=redis://%s:%s@127.0.0.1:%%P", u, SECRET);
        snprintf(longpw, sizeof longpw, "DISTLOCK_URL=redis://:%s@127.0.0.1:%%P", pw);
    }

    const struct env_case cases[] = {
        { NULL, E("DISTLOCK_URL="), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=garbage"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=127.0.0.1:6379"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=://"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis:/127.0.0.1:6379"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=http://127.0.0.1:6379"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis-cluster://127.0.0.1:6379?tls=yes"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=\xff\xfe://x"), EINVAL, "DISTLOCK_URL", 1 },
        /* no host */
        { NULL, E("DISTLOCK_URL=redis://"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://:6379"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis:///0"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://" SECRET "@"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://[]:6379"), EINVAL, "DISTLOCK_URL" },
        /* bad port */
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:0"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:65536"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:abc"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:-1"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:+6379"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:6379:6380"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:99999999999999999999"), EINVAL, "DISTLOCK_URL" },
        /* Was a bug: the port was echoed raw (fixed in 71e59f6). */
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:\a"), EINVAL, "DISTLOCK_URL", 1 },
        /* bad host */
        { NULL, E("DISTLOCK_URL=redis://exa mple:6379"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://host\n:6379"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://[::1"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://[::1]x"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P,127.0.0.1:%P"), EINVAL, "DISTLOCK_URL" },
        { "DISTLOCK_URL=redis://<300 x 'h'>:6379", E(longhost), EINVAL, "DISTLOCK_URL" },
        /* bad database */
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P/-1"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P/1000001"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P/0x1"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P/1/2"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P/ 1"), EINVAL, "DISTLOCK_URL" },
        /* Was a bug: the database part was echoed raw (fixed in 71e59f6). */
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P/\x1b[31m"), EINVAL, "DISTLOCK_URL", 1 },
        { "DISTLOCK_URL=redis://127.0.0.1:P/<65000 digits>", E(longurl), EINVAL, "DISTLOCK_URL" },
        /* query */
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P?foo=bar"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P?novalue"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P?&"), EINVAL, "DISTLOCK_URL" },
        /* percent-encoding in the user info */
        { NULL, E("DISTLOCK_URL=redis://:%zz" SECRET "@127.0.0.1:%P", "DISTLOCK_LOG=debug"),
          EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://:" SECRET "%4@127.0.0.1:%P", "DISTLOCK_LOG=debug"),
          EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://:" SECRET "%@127.0.0.1:%P", "DISTLOCK_LOG=debug"),
          EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=redis://%g1:" SECRET "@127.0.0.1:%P", "DISTLOCK_LOG=debug"),
          EINVAL, "DISTLOCK_URL" },
        { "DISTLOCK_URL=redis://<280 x 'u'>:<password>@127.0.0.1:P", E(longuser, "DISTLOCK_LOG=debug"),
          EINVAL, "DISTLOCK_URL" },
        { "DISTLOCK_URL=redis://:<300-byte password>@127.0.0.1:P", E(longpw, "DISTLOCK_LOG=debug"),
          EINVAL, "DISTLOCK_URL" },
        /* An unencoded '/' or '?' in the password ends the authority early;
         * the URL is bad, but what follows must not be echoed: here the
         * parser takes the password's first part for a port or a database
         * number and printed it.  Was a bug, fixed in 71e59f6 (nothing of a
         * URL with user info is shown). */
        { NULL, E("DISTLOCK_URL=redis://alice:" SECRET "/x@127.0.0.1:%P", "DISTLOCK_LOG=debug"),
          EINVAL, "DISTLOCK_URL", 1 },
        { NULL, E("DISTLOCK_URL=redis://alice:" SECRET "?x@127.0.0.1:%P", "DISTLOCK_LOG=debug"),
          EINVAL, "DISTLOCK_URL", 1 },
        { NULL, E("DISTLOCK_URL=redis://alice:6379/" SECRET "@127.0.0.1:%P", "DISTLOCK_LOG=debug"),
          EINVAL, "DISTLOCK_URL", 1 },
        /* unix:// */
        { NULL, E("DISTLOCK_URL=unix://"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=unix://relative/redis.sock"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=unix:///tmp/redis.sock?db=x"), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=unix:///tmp/redis.sock?db="), EINVAL, "DISTLOCK_URL" },
        { NULL, E("DISTLOCK_URL=unix:///tmp/redis.sock?foo=1"), EINVAL, "DISTLOCK_URL" },
        { "DISTLOCK_URL=unix:///<300 digits>", E(longpath), EINVAL, "DISTLOCK_URL" },
        /* well-formed but nothing there: EIO naming where */
        { NULL, E("DISTLOCK_URL=unix:///nonexistent-dir/redis.sock"), EIO, "/nonexistent-dir/redis.sock" },
        { NULL, E("DISTLOCK_URL=redis://localhost:%C"), EIO, "localhost:" },
        { NULL, E("DISTLOCK_URL=redis://:" SECRET "@127.0.0.1:%C", "DISTLOCK_LOG=debug"), EIO, "127.0.0.1:" },
        /* well-formed oddities that are fine */
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P/"), 0 },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:%P?"), 0 },
        { NULL, E("DISTLOCK_URL=redis://127.0.0.1:0%P"), 0 },
        /* user info and a database: SPEC's redis://[user[:password]@]host[:port][/db].
         * Was a bug: dl_url_parse() measured the path from the start of the
         * authority before the user info was skipped, so the database part
         * was read too long - past the end of the string (ASan:
         * heap-buffer-overflow in parse_db) or "bad database number".
         * Fixed in 71e59f6. */
        { NULL, E("DISTLOCK_URL=redis://alice@127.0.0.1:%P/1"), 0, NULL, 1 },
        { NULL, E("DISTLOCK_URL=redis://default@127.0.0.1:%P/15"), 0, NULL, 1 },
    };
    begin();
    run_env_cases(cases, sizeof cases / sizeof cases[0], "DISTLOCK_URL");
}

/* ==================================================================== API */

/* Fills an object with bytes from a fixed-seed generator, never matching a
 * real magic number (so it is "uninitialized", not "a lucky guess"). */
static void fill_random(void *obj, size_t size, unsigned seed)
{
    unsigned char *b = obj;
    unsigned s = seed * 2654435761u + 1;
    for (size_t i = 0; i < size; i++) {
        s = s * 1103515245u + 12345u;
        b[i] = (unsigned char)(s >> 16);
    }
    unsigned magic;
    memcpy(&magic, b, sizeof magic);
    if ((magic >> 16) == 0x4453)            /* "DS..": all our magics */
        b[3] ^= 0x80;
}

static void test_null_pointers(void **state)
{
    begin();
    dist_mutex_t m;
    dist_rwlock_t rw;
    dist_mutexattr_t ma;
    dist_rwlockattr_t ra;
    uint64_t f;
    unsigned long ms;
    struct timespec ts = th_abstime_ms(100);
    char name[64];
    th_name(name, sizeof name, "null");

    CASE(dist_mutexattr_init(NULL), EINVAL);
    CASE(dist_mutexattr_destroy(NULL), EINVAL);
    CASE(dist_mutexattr_settype(NULL, DIST_MUTEX_ERRORCHECK), EINVAL);
    CASE(dist_mutexattr_setfair(NULL, 1), EINVAL);
    CASE(dist_mutexattr_setlease(NULL, 1000), EINVAL);
    CASE(dist_mutex_init(NULL, name, NULL), EINVAL);
    CASE(dist_mutex_init(&m, NULL, NULL), EINVAL);
    CASE(dist_mutex_lock(NULL), EINVAL);
    CASE(dist_mutex_trylock(NULL), EINVAL);
    CASE(dist_mutex_timedlock(NULL, &ts), EINVAL);
    CASE(dist_mutex_unlock(NULL), EINVAL);
    CASE(dist_mutex_destroy(NULL), EINVAL);
    CASE(dist_mutex_getfence(NULL, &f), EINVAL);
    CASE(dist_mutex_getlease(NULL, &ms), EINVAL);

    CASE(dist_rwlockattr_init(NULL), EINVAL);
    CASE(dist_rwlockattr_destroy(NULL), EINVAL);
    CASE(dist_rwlockattr_setlease(NULL, 1000), EINVAL);
    CASE(dist_rwlock_init(NULL, name, NULL), EINVAL);
    CASE(dist_rwlock_init(&rw, NULL, NULL), EINVAL);
    CASE(dist_rwlock_rdlock(NULL), EINVAL);
    CASE(dist_rwlock_tryrdlock(NULL), EINVAL);
    CASE(dist_rwlock_timedrdlock(NULL, &ts), EINVAL);
    CASE(dist_rwlock_wrlock(NULL), EINVAL);
    CASE(dist_rwlock_trywrlock(NULL), EINVAL);
    CASE(dist_rwlock_timedwrlock(NULL, &ts), EINVAL);
    CASE(dist_rwlock_unlock(NULL), EINVAL);
    CASE(dist_rwlock_destroy(NULL), EINVAL);
    CASE(dist_rwlock_getfence(NULL, &f), EINVAL);
    CASE(dist_rwlock_getlease(NULL, &ms), EINVAL);

    /* NULL second arguments, on good objects */
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    assert_int_equal(dist_rwlock_init(&rw, name, NULL), 0);
    CASE(dist_mutex_timedlock(&m, NULL), EINVAL);
    CASE(dist_mutex_getfence(&m, NULL), EINVAL);
    CASE(dist_rwlock_timedrdlock(&rw, NULL), EINVAL);
    CASE(dist_rwlock_timedwrlock(&rw, NULL), EINVAL);
    CASE(dist_rwlock_getfence(&rw, NULL), EINVAL);
    CASE(dist_mutex_getlease(&m, NULL), EINVAL);
    CASE(dist_rwlock_getlease(&rw, NULL), EINVAL);
    /* ... also while held (getfence would have something to write) */
    assert_int_equal(dist_mutex_lock(&m), 0);
    CASE(dist_mutex_getfence(&m, NULL), EINVAL);
    CASE(dist_mutex_getlease(&m, NULL), EINVAL);
    assert_int_equal(dist_mutex_unlock(&m), 0);
    assert_int_equal(dist_mutex_destroy(&m), 0);
    assert_int_equal(dist_rwlock_destroy(&rw), 0);

    /* attributes: NULL attr is allowed (defaults) */
    assert_int_equal(dist_mutexattr_init(&ma), 0);
    assert_int_equal(dist_rwlockattr_init(&ra), 0);
    CASE(dist_mutex_init(&m, name, NULL), 0);
    CASE(dist_mutex_destroy(&m), 0);
    assert_int_equal(dist_mutexattr_destroy(&ma), 0);
    assert_int_equal(dist_rwlockattr_destroy(&ra), 0);

    /* dist_strerror / dist_lasterror never return NULL */
    static const int codes[] = { 0, EINVAL, EBUSY, ETIMEDOUT, EDEADLK, EPERM, EOWNERDEAD, ENOLCK,
                                 EAGAIN, EIO, ENOMEM, -1, INT_MIN, INT_MAX, 12345 };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        char d[64];
        snprintf(d, sizeof d, "dist_strerror(%d)", codes[i]);
        check_text(d, dist_strerror(codes[i]));
    }
    end("NULL pointers");
}

static void test_uninitialized_objects(void **state)
{
    begin();
    struct timespec ts = th_abstime_ms(100);
    uint64_t f;
    unsigned long ms;
    for (int z = 0; z < 2; z++) {
        /* zero bytes, then random bytes (several seeds) */
        for (unsigned seed = 1; seed <= (z ? 8u : 1u); seed++) {
            dist_mutex_t m;
            dist_rwlock_t rw;
            dist_mutexattr_t ma;
            dist_rwlockattr_t ra;
            char d[80];
            const char *kind = z ? "random" : "zero";
#define FILL() do { if (z) { fill_random(&m, sizeof m, seed); fill_random(&rw, sizeof rw, seed + 100); \
    fill_random(&ma, sizeof ma, seed + 200); fill_random(&ra, sizeof ra, seed + 300); } else { \
    memset(&m, 0, sizeof m); memset(&rw, 0, sizeof rw); memset(&ma, 0, sizeof ma); \
    memset(&ra, 0, sizeof ra); } } while (0)
#define UCASE(call) do { FILL(); snprintf(d, sizeof d, "%s bytes #%u: %s", kind, seed, #call); \
    check(d, (call), EINVAL); } while (0)
            UCASE(dist_mutex_lock(&m));
            UCASE(dist_mutex_trylock(&m));
            UCASE(dist_mutex_timedlock(&m, &ts));
            UCASE(dist_mutex_unlock(&m));
            UCASE(dist_mutex_destroy(&m));
            UCASE(dist_mutex_getfence(&m, &f));
            UCASE(dist_mutex_getlease(&m, &ms));
            UCASE(dist_rwlock_rdlock(&rw));
            UCASE(dist_rwlock_tryrdlock(&rw));
            UCASE(dist_rwlock_timedrdlock(&rw, &ts));
            UCASE(dist_rwlock_wrlock(&rw));
            UCASE(dist_rwlock_trywrlock(&rw));
            UCASE(dist_rwlock_timedwrlock(&rw, &ts));
            UCASE(dist_rwlock_unlock(&rw));
            UCASE(dist_rwlock_destroy(&rw));
            UCASE(dist_rwlock_getfence(&rw, &f));
            UCASE(dist_rwlock_getlease(&rw, &ms));
            UCASE(dist_mutexattr_destroy(&ma));
            UCASE(dist_mutexattr_settype(&ma, DIST_MUTEX_ERRORCHECK));
            UCASE(dist_mutexattr_setfair(&ma, 1));
            UCASE(dist_mutexattr_setlease(&ma, 100));
            UCASE(dist_mutex_init(&m, "uninit-attr", &ma));
            UCASE(dist_rwlockattr_destroy(&ra));
            UCASE(dist_rwlockattr_setlease(&ra, 100));
            UCASE(dist_rwlock_init(&rw, "uninit-attr", &ra));
#undef UCASE
#undef FILL
        }
    }
    /* One kind for the other: a mutex is not a rwlock, an attribute of
     * one kind does not initialize the other. */
    dist_mutex_t m;
    dist_rwlock_t rw;
    dist_mutexattr_t ma;
    dist_rwlockattr_t ra;
    char name[64];
    th_name(name, sizeof name, "kinds");
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    assert_int_equal(dist_rwlock_init(&rw, name, NULL), 0);
    assert_int_equal(dist_mutexattr_init(&ma), 0);
    assert_int_equal(dist_rwlockattr_init(&ra), 0);
    CASE(dist_rwlock_rdlock((dist_rwlock_t *)&m), EINVAL);
    CASE(dist_rwlock_unlock((dist_rwlock_t *)&m), EINVAL);
    CASE(dist_rwlock_destroy((dist_rwlock_t *)&m), EINVAL);
    CASE(dist_mutex_lock((dist_mutex_t *)&rw), EINVAL);
    CASE(dist_mutex_destroy((dist_mutex_t *)&rw), EINVAL);
    CASE(dist_mutex_init(&m, name, (const dist_mutexattr_t *)&ra), EINVAL);
    CASE(dist_rwlock_init(&rw, name, (const dist_rwlockattr_t *)&ma), EINVAL);
    CASE(dist_rwlockattr_setlease((dist_rwlockattr_t *)&ma, 100), EINVAL);
    CASE(dist_mutexattr_settype((dist_mutexattr_t *)&ra, DIST_MUTEX_ERRORCHECK), EINVAL);
    /* the good objects still work, and nothing leaked */
    CASE(dist_mutex_lock(&m), 0);
    CASE(dist_mutex_unlock(&m), 0);
    assert_int_equal(dist_mutex_destroy(&m), 0);
    assert_int_equal(dist_rwlock_destroy(&rw), 0);
    assert_int_equal(dist_mutexattr_destroy(&ma), 0);
    assert_int_equal(dist_rwlockattr_destroy(&ra), 0);
    end("uninitialized objects");
}

static void test_destroyed_objects(void **state)
{
    begin();
    struct timespec ts = th_abstime_ms(100);
    uint64_t f;
    unsigned long ms;
    char name[64];
    th_name(name, sizeof name, "destroyed");
    dist_mutex_t m;
    dist_rwlock_t rw;
    dist_mutexattr_t ma;
    dist_rwlockattr_t ra;

    /* used (so it was resolved and connected), then destroyed */
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    assert_int_equal(dist_mutex_lock(&m), 0);
    assert_int_equal(dist_mutex_unlock(&m), 0);
    CASE(dist_mutex_destroy(&m), 0);
    CASE(dist_mutex_lock(&m), EINVAL);
    CASE(dist_mutex_trylock(&m), EINVAL);
    CASE(dist_mutex_timedlock(&m, &ts), EINVAL);
    CASE(dist_mutex_unlock(&m), EINVAL);
    CASE(dist_mutex_getfence(&m, &f), EINVAL);
    CASE(dist_mutex_getlease(&m, &ms), EINVAL);
    CASE(dist_mutex_destroy(&m), EINVAL);           /* double destroy */
    CASE(dist_mutex_destroy(&m), EINVAL);           /* and a third */
    /* never used, destroyed */
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    CASE(dist_mutex_destroy(&m), 0);
    CASE(dist_mutex_destroy(&m), EINVAL);
    CASE(dist_mutex_lock(&m), EINVAL);
    /* re-init after destroy is fine */
    CASE(dist_mutex_init(&m, name, NULL), 0);
    CASE(dist_mutex_trylock(&m), 0);
    CASE(dist_mutex_unlock(&m), 0);
    CASE(dist_mutex_destroy(&m), 0);

    assert_int_equal(dist_rwlock_init(&rw, name, NULL), 0);
    assert_int_equal(dist_rwlock_rdlock(&rw), 0);
    assert_int_equal(dist_rwlock_unlock(&rw), 0);
    CASE(dist_rwlock_destroy(&rw), 0);
    CASE(dist_rwlock_rdlock(&rw), EINVAL);
    CASE(dist_rwlock_tryrdlock(&rw), EINVAL);
    CASE(dist_rwlock_timedrdlock(&rw, &ts), EINVAL);
    CASE(dist_rwlock_wrlock(&rw), EINVAL);
    CASE(dist_rwlock_trywrlock(&rw), EINVAL);
    CASE(dist_rwlock_timedwrlock(&rw, &ts), EINVAL);
    CASE(dist_rwlock_unlock(&rw), EINVAL);
    CASE(dist_rwlock_getfence(&rw, &f), EINVAL);
    CASE(dist_rwlock_getlease(&rw, &ms), EINVAL);
    CASE(dist_rwlock_destroy(&rw), EINVAL);

    /* a statically initialized lock, used, destroyed */
    static dist_mutex_t sm = DIST_MUTEX_INITIALIZER("badinput-static");
    static dist_rwlock_t srw = DIST_RWLOCK_INITIALIZER("badinput-static-rw");
    CASE(dist_mutex_lock(&sm), 0);
    CASE(dist_mutex_unlock(&sm), 0);
    CASE(dist_mutex_destroy(&sm), 0);
    CASE(dist_mutex_lock(&sm), EINVAL);
    CASE(dist_mutex_destroy(&sm), EINVAL);
    CASE(dist_rwlock_wrlock(&srw), 0);
    CASE(dist_rwlock_unlock(&srw), 0);
    CASE(dist_rwlock_destroy(&srw), 0);
    CASE(dist_rwlock_tryrdlock(&srw), EINVAL);

    /* attributes */
    assert_int_equal(dist_mutexattr_init(&ma), 0);
    CASE(dist_mutexattr_destroy(&ma), 0);
    CASE(dist_mutexattr_destroy(&ma), EINVAL);
    CASE(dist_mutexattr_settype(&ma, DIST_MUTEX_ERRORCHECK), EINVAL);
    CASE(dist_mutexattr_setfair(&ma, 1), EINVAL);
    CASE(dist_mutexattr_setlease(&ma, 100), EINVAL);
    CASE(dist_mutex_init(&m, name, &ma), EINVAL);
    assert_int_equal(dist_rwlockattr_init(&ra), 0);
    CASE(dist_rwlockattr_destroy(&ra), 0);
    CASE(dist_rwlockattr_destroy(&ra), EINVAL);
    CASE(dist_rwlockattr_setlease(&ra, 100), EINVAL);
    CASE(dist_rwlock_init(&rw, name, &ra), EINVAL);
    end("destroyed objects");
}

/* ------------------------------------------------------------- ownership */

struct own { dist_mutex_t *m; dist_rwlock_t *rw; uint64_t fence; };

static int a_mlock(void *p) { return dist_mutex_lock(((struct own *)p)->m); }
static int a_munlock(void *p) { return dist_mutex_unlock(((struct own *)p)->m); }
/* The same, keeping the actor thread's dist_lasterror(). */
struct own_err { struct own o; char err[256]; };
static int a_munlock_err(void *p)
{
    struct own_err *e = p;
    int rc = dist_mutex_unlock(e->o.m);
    snprintf(e->err, sizeof e->err, "%s", dist_lasterror());
    return rc;
}
static int a_rdlock(void *p) { return dist_rwlock_rdlock(((struct own *)p)->rw); }
static int a_wrlock(void *p) { return dist_rwlock_wrlock(((struct own *)p)->rw); }
static int a_rwunlock(void *p) { return dist_rwlock_unlock(((struct own *)p)->rw); }
static int a_mfence(void *p) { struct own *o = p; return dist_mutex_getfence(o->m, &o->fence); }
static int a_mdestroy(void *p) { return dist_mutex_destroy(((struct own *)p)->m); }

static void test_ownership(void **state)
{
    begin();
    char name[64], rname[64];
    th_name(name, sizeof name, "own");
    th_name(rname, sizeof rname, "own-rw");
    dist_mutex_t m, m2;
    dist_rwlock_t rw;
    dist_mutexattr_t ec;
    uint64_t f;
    unsigned long ms;
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    assert_int_equal(dist_rwlock_init(&rw, rname, NULL), 0);
    struct own o = { &m, &rw, 0 };
    th_actor_t *a = th_actor_new();

    /* unlock, getfence and getlease without a hold */
    CASE(dist_mutex_unlock(&m), EPERM);
    CASE(dist_mutex_getfence(&m, &f), EPERM);
    CASE(dist_mutex_getlease(&m, &ms), EPERM);
    CASE(dist_rwlock_unlock(&rw), EPERM);
    CASE(dist_rwlock_getfence(&rw, &f), EPERM);
    CASE(dist_rwlock_getlease(&rw, &ms), EPERM);
    /* one lock, two unlocks */
    assert_int_equal(dist_mutex_lock(&m), 0);
    CASE(dist_mutex_unlock(&m), 0);
    CASE(dist_mutex_unlock(&m), EPERM);
    assert_int_equal(dist_rwlock_rdlock(&rw), 0);
    CASE(dist_rwlock_unlock(&rw), 0);
    CASE(dist_rwlock_unlock(&rw), EPERM);

    /* another thread of this process holds it */
    assert_int_equal(th_actor_call(a, a_mlock, &o), 0);
    CASE(dist_mutex_unlock(&m), EPERM);
    CASE(dist_mutex_getfence(&m, &f), EPERM);
    CASE(dist_mutex_getlease(&m, &ms), EPERM);
    CASE(dist_mutex_trylock(&m), EBUSY);
    CASE(dist_mutex_destroy(&m), EBUSY);         /* held here (by another thread) */
    /* a second object of the same name is the same lock */
    assert_int_equal(dist_mutex_init(&m2, name, NULL), 0);
    CASE(dist_mutex_unlock(&m2), EPERM);
    CASE(dist_mutex_destroy(&m2), 0);            /* not the last object of the name */
    assert_int_equal(th_actor_call(a, a_mfence, &o), 0);   /* the holder's hold is intact */
    assert_int_equal(th_actor_call(a, a_munlock, &o), 0);
    CASE(dist_mutex_trylock(&m), 0);
    CASE(th_actor_call(a, a_munlock, &o), EPERM); /* and now the other way round */
    CASE(th_actor_call(a, a_mfence, &o), EPERM);
    CASE(th_actor_call(a, a_mdestroy, &o), EBUSY);
    CASE(dist_mutex_destroy(&m), EBUSY);         /* held by this thread */
    CASE(dist_mutex_unlock(&m), 0);

    assert_int_equal(th_actor_call(a, a_rdlock, &o), 0);
    CASE(dist_rwlock_unlock(&rw), EPERM);
    CASE(dist_rwlock_getfence(&rw, &f), EPERM);
    CASE(dist_rwlock_getlease(&rw, &ms), EPERM);
    CASE(dist_rwlock_destroy(&rw), EBUSY);
    CASE(dist_rwlock_tryrdlock(&rw), 0);         /* readers share */
    CASE(dist_rwlock_unlock(&rw), 0);
    CASE(dist_rwlock_unlock(&rw), EPERM);
    CASE(dist_rwlock_trywrlock(&rw), EBUSY);
    assert_int_equal(th_actor_call(a, a_rwunlock, &o), 0);
    assert_int_equal(th_actor_call(a, a_wrlock, &o), 0);
    CASE(dist_rwlock_unlock(&rw), EPERM);
    CASE(dist_rwlock_tryrdlock(&rw), EBUSY);
    assert_int_equal(th_actor_call(a, a_rwunlock, &o), 0);

    /* errorcheck relock; write while holding only read (no upgrades) */
    assert_int_equal(dist_mutexattr_init(&ec), 0);
    assert_int_equal(dist_mutexattr_settype(&ec, DIST_MUTEX_ERRORCHECK), 0);
    dist_mutex_t me;
    char ename[64];
    th_name(ename, sizeof ename, "own-ec");
    assert_int_equal(dist_mutex_init(&me, ename, &ec), 0);
    assert_int_equal(dist_mutex_lock(&me), 0);
    CASE(dist_mutex_lock(&me), EDEADLK);
    CASE(dist_mutex_trylock(&me), EBUSY);      /* a try never says EDEADLK */
    struct timespec ts = th_abstime_ms(200);
    CASE(dist_mutex_timedlock(&me, &ts), EDEADLK);
    CASE(dist_mutex_unlock(&me), 0);
    CASE(dist_mutex_unlock(&me), EPERM);
    assert_int_equal(dist_mutex_destroy(&me), 0);
    assert_int_equal(dist_mutexattr_destroy(&ec), 0);
    assert_int_equal(dist_rwlock_rdlock(&rw), 0);
    CASE(dist_rwlock_wrlock(&rw), EDEADLK);
    CASE(dist_rwlock_trywrlock(&rw), EBUSY);    /* a try never says EDEADLK */
    ts = th_abstime_ms(200);
    CASE(dist_rwlock_timedwrlock(&rw, &ts), EDEADLK);
    CASE(dist_rwlock_unlock(&rw), 0);

    th_actor_free(a);
    assert_int_equal(dist_mutex_destroy(&m), 0);
    assert_int_equal(dist_rwlock_destroy(&rw), 0);
    end("ownership");
}

/* ----------------------------------------------------------------- names */

static void test_names(void **state)
{
    begin();
    dist_mutex_t m;
    dist_rwlock_t rw;
    char *n512 = malloc(DIST_NAME_MAX + 1), *n513 = malloc(DIST_NAME_MAX + 2);
    size_t huge_len = 1 << 20;
    char *huge = malloc(huge_len + 1);
    char tag[32];
    snprintf(tag, sizeof tag, "n%d.", (int)getpid());
    memset(n512, 'x', DIST_NAME_MAX);
    memcpy(n512, tag, strlen(tag));
    n512[DIST_NAME_MAX] = 0;
    memset(n513, 'y', DIST_NAME_MAX + 1);
    n513[DIST_NAME_MAX + 1] = 0;
    memset(huge, 'z', huge_len);
    huge[huge_len] = 0;

    CASE(dist_mutex_init(&m, "", NULL), EINVAL);
    CASE(dist_rwlock_init(&rw, "", NULL), EINVAL);
    check3("dist_mutex_init(&m, <513 bytes>, NULL)", dist_mutex_init(&m, n513, NULL), EINVAL,
           dist_lasterror(), "DIST_NAME_MAX", 0);
    check("dist_rwlock_init(&rw, <513 bytes>, NULL)", dist_rwlock_init(&rw, n513, NULL), EINVAL);
    check("dist_mutex_init(&m, <1 MiB>, NULL)", dist_mutex_init(&m, huge, NULL), EINVAL);
    check("dist_rwlock_init(&rw, <1 MiB>, NULL)", dist_rwlock_init(&rw, huge, NULL), EINVAL);

    /* exactly DIST_NAME_MAX bytes: a lock like any other */
    check("dist_mutex_init(&m, <512 bytes>, NULL)", dist_mutex_init(&m, n512, NULL), 0);
    CASE(dist_mutex_lock(&m), 0);
    {
        char key[DIST_NAME_MAX + 64];
        th_key(key, sizeof key, n512, "");
        assert_int_equal(th_cmd_ll("EXISTS %b", key, strlen(key)), 1);
    }
    CASE(dist_mutex_unlock(&m), 0);
    CASE(dist_mutex_destroy(&m), 0);
    check("dist_rwlock_init(&rw, <512 bytes>, NULL)", dist_rwlock_init(&rw, n512, NULL), 0);
    CASE(dist_rwlock_rdlock(&rw), 0);
    CASE(dist_rwlock_unlock(&rw), 0);
    CASE(dist_rwlock_destroy(&rw), 0);

    /* statically initialized with a bad name: found at first use */
    {
        static dist_mutex_t s_empty = DIST_MUTEX_INITIALIZER("");
        static dist_mutex_t s_null = DIST_MUTEX_INITIALIZER(NULL);
        static dist_rwlock_t s_rnull = DIST_RWLOCK_INITIALIZER(NULL);
        static dist_mutex_t s_long = DIST_MUTEX_INITIALIZER(
            "0123456789012345678901234567890123456789012345678901234567890123"
            "0123456789012345678901234567890123456789012345678901234567890123"
            "0123456789012345678901234567890123456789012345678901234567890123"
            "0123456789012345678901234567890123456789012345678901234567890123"
            "0123456789012345678901234567890123456789012345678901234567890123"
            "0123456789012345678901234567890123456789012345678901234567890123"
            "0123456789012345678901234567890123456789012345678901234567890123"
            "0123456789012345678901234567890123456789012345678901234567890123"
            "!");
        uint64_t f;
        CASE(dist_mutex_lock(&s_empty), EINVAL);
        CASE(dist_mutex_trylock(&s_null), EINVAL);
        CASE(dist_mutex_getfence(&s_null, &f), EINVAL);
        CASE(dist_rwlock_rdlock(&s_rnull), EINVAL);
        check("dist_mutex_lock(DIST_MUTEX_INITIALIZER(<513 bytes>))", dist_mutex_lock(&s_long), EINVAL);
        check("dist_mutex_unlock(DIST_MUTEX_INITIALIZER(<513 bytes>))", dist_mutex_unlock(&s_long), EINVAL);
    }
    free(n512);
    free(n513);
    free(huge);
    end("names");
}

/* Binary names: SPEC "Lock names are binary-safe" (any byte but NUL, which
 * a C string cannot hold).  Each is a lock of its own, keyed byte for byte,
 * and messages about it stay printable. */
static void test_binary_names(void **state)
{
    begin();
    static const char *const names[] = {
        "\xff", "\xfe", "\xff\xfe\xfd", "a\nb", "a\rb", "\n", "{", "}", "{}", "}{", "a{b}c", "a{b}d",
        "x}:r", "x}:m{", "%s%s%n%x", "\"'\\", " ", "\t", "\x01", "\x7f", "\xd0\xba\xd0\xbb",
        "\x1b[31mred", "a b", "*", "?", "[a-z]",
    };
    const size_t n = sizeof names / sizeof names[0];
    char pfx[32];
    snprintf(pfx, sizeof pfx, "bin%d.", (int)getpid());
    char full[64][64];
    dist_mutex_t m[64];
    th_proc_t pr;
    assert_int_equal(th_proc_start(&pr, NULL), 0);
    for (size_t i = 0; i < n; i++) {
        snprintf(full[i], sizeof full[i], "%s%s", pfx, names[i]);
        char d[120], e[80];
        snprintf(d, sizeof d, "init+lock name \"%s\"", esc(names[i], e, sizeof e));
        int rc = dist_mutex_init(&m[i], full[i], NULL);
        if (rc == 0)
            rc = dist_mutex_lock(&m[i]);
        check(d, rc, 0);
        if (rc)
            continue;
        char key[128];
        th_key(key, sizeof key, full[i], "");
        if (th_cmd_ll("EXISTS %b", key, strlen(key)) != 1) {
            fprintf(stderr, "[badinput]   FAILED: no key %s\n", esc(key, d, sizeof d));
            g_failed++;
        }
    }
    /* all held by this process: another process finds each one busy, with a
     * printable message, and none of them shadows another */
    for (size_t i = 0; i < n; i++) {
        th_res_t res;
        th_req_t q;
        th_proc_req(&q, TH_M_TRYLOCK, full[i]);
        int rc = th_proc_call(&pr, &q, &res);
        char d[120], e[80];
        snprintf(d, sizeof d, "other process: trylock \"%s\" (held)", esc(names[i], e, sizeof e));
        check3(d, rc, EBUSY, res.err, NULL, 0);
        /* a name this process does not hold: one more byte */
        snprintf(q.name, sizeof q.name, "%s%s.free", pfx, names[i]);
        rc = th_proc_call(&pr, &q, &res);
        snprintf(d, sizeof d, "other process: trylock \"%s.free\"", esc(names[i], e, sizeof e));
        check3(d, rc, 0, res.err, NULL, 0);
        q.op = TH_M_UNLOCK;
        th_proc_call(&pr, &q, NULL);
    }
    /* EPERM from another thread names the lock, escaped */
    th_actor_t *a = th_actor_new();
    struct own_err oe = { { &m[0], NULL, 0 }, "" };
    int rc = th_actor_call(a, a_munlock_err, &oe);
    /* the message of the thread that got EPERM (dist_lasterror() is per
     * thread; this one's only held a message left by earlier tests) */
    check3("other thread: unlock \"\\xff\" (not its hold)", rc, EPERM, oe.err, NULL, 0);
    th_actor_free(a);
    for (size_t i = 0; i < n; i++) {
        dist_mutex_unlock(&m[i]);
        dist_mutex_destroy(&m[i]);
    }
    th_proc_stop(&pr);
    end("binary names");
}

/* ------------------------------------------------------------- timespecs */

static void test_timespecs(void **state)
{
    begin();
    char name[64];
    th_name(name, sizeof name, "ts");
    dist_mutex_t m;
    dist_rwlock_t rw;
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    assert_int_equal(dist_rwlock_init(&rw, name, NULL), 0);
    struct timespec ts;

    static const long bad_nsec[] = { -1, 1000000000L, LONG_MAX, LONG_MIN };
    for (size_t i = 0; i < sizeof bad_nsec / sizeof bad_nsec[0]; i++) {
        char d[96];
        ts = th_abstime_ms(1000);
        ts.tv_nsec = bad_nsec[i];
        snprintf(d, sizeof d, "dist_mutex_timedlock(tv_nsec=%ld)", bad_nsec[i]);
        check(d, dist_mutex_timedlock(&m, &ts), EINVAL);
        snprintf(d, sizeof d, "dist_rwlock_timedrdlock(tv_nsec=%ld)", bad_nsec[i]);
        check(d, dist_rwlock_timedrdlock(&rw, &ts), EINVAL);
        snprintf(d, sizeof d, "dist_rwlock_timedwrlock(tv_nsec=%ld)", bad_nsec[i]);
        check(d, dist_rwlock_timedwrlock(&rw, &ts), EINVAL);
    }
    /* a bad timespec is refused even when the lock is free and even when
     * the caller already holds it */
    assert_int_equal(dist_mutex_lock(&m), 0);
    ts = th_abstime_ms(1000);
    ts.tv_nsec = -5;
    CASE(dist_mutex_timedlock(&m, &ts), EINVAL);
    CASE(dist_mutex_unlock(&m), 0);
    CASE(dist_mutex_unlock(&m), EPERM);          /* the refused call took nothing */

    /* already past, free: one attempt, acquired (like pthreads) */
    ts = th_abstime_ms(-5000);
    CASE(dist_mutex_timedlock(&m, &ts), 0);
    CASE(dist_mutex_unlock(&m), 0);
    ts.tv_sec = -1;
    ts.tv_nsec = 0;
    CASE(dist_mutex_timedlock(&m, &ts), 0);
    CASE(dist_mutex_unlock(&m), 0);
    ts.tv_sec = 0;
    ts.tv_nsec = 999999999;
    CASE(dist_rwlock_timedrdlock(&rw, &ts), 0);
    CASE(dist_rwlock_unlock(&rw), 0);
    CASE(dist_rwlock_timedwrlock(&rw, &ts), 0);
    CASE(dist_rwlock_unlock(&rw), 0);

    /* already past, held by another process: ETIMEDOUT at once */
    th_proc_t pr;
    assert_int_equal(th_proc_start(&pr, NULL), 0);
    assert_int_equal(th_proc_op(&pr, TH_M_LOCK, name), 0);
    ts = th_abstime_ms(-1000);
    int64_t t0 = th_now_ms();
    CASE(dist_mutex_timedlock(&m, &ts), ETIMEDOUT);
    ts.tv_sec = -1000000;
    CASE(dist_mutex_timedlock(&m, &ts), ETIMEDOUT);
    if (th_now_ms() - t0 > 2000) {
        fprintf(stderr, "[badinput]   FAILED: a past abstime waited %lld ms\n",
                (long long)(th_now_ms() - t0));
        g_failed++;
    }
    assert_int_equal(th_proc_op(&pr, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_op(&pr, TH_RW_WRLOCK, name), 0);
    ts = th_abstime_ms(-1);
    CASE(dist_rwlock_timedrdlock(&rw, &ts), ETIMEDOUT);
    CASE(dist_rwlock_timedwrlock(&rw, &ts), ETIMEDOUT);
    assert_int_equal(th_proc_op(&pr, TH_RW_UNLOCK, name), 0);
    th_proc_stop(&pr);
    assert_int_equal(dist_mutex_destroy(&m), 0);
    assert_int_equal(dist_rwlock_destroy(&rw), 0);
    end("timespecs");
}

/* tv_sec at the ends of time_t.  Was a bug (fixed in 71e59f6):
 * dl_deadline_from_abstime() computed (tv_sec - now) * 1000 in int64_t,
 * which overflowed: UBSan aborted (signed-integer-overflow, shim/base/clock.c),
 * and without it the far-future deadline wrapped into the past, so a timed
 * wait gave ETIMEDOUT at once instead of waiting.  Run in a child, so an
 * abort fails this test and not the whole suite. */
struct ext_arg { char name[64]; int up, down; };

/* In the child: check, then print the case's [badinput] line. */
#define XCASE(desc, expr, want) do { TH_CHECK_RC(expr, want); \
    fprintf(stderr, "[badinput] %s -> %s \"\"\n", desc, th_errname(want)); } while (0)

static int extreme_child(void *p)
{
    struct ext_arg *a = p;
    dist_mutex_t m;
    dist_rwlock_t rw;
    TH_CHECK_RC(dist_mutex_init(&m, a->name, NULL), 0);
    TH_CHECK_RC(dist_rwlock_init(&rw, a->name, NULL), 0);
    struct timespec ts = { (time_t)INT64_MIN, 0 };
    /* far past, free: acquired */
    XCASE("dist_mutex_timedlock(tv_sec=INT64_MIN), free", dist_mutex_timedlock(&m, &ts), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    ts.tv_nsec = 999999999;
    XCASE("dist_rwlock_timedrdlock(tv_sec=INT64_MIN, tv_nsec=999999999), free",
          dist_rwlock_timedrdlock(&rw, &ts), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    /* far future, free: acquired */
    ts.tv_sec = (time_t)INT64_MAX;
    XCASE("dist_mutex_timedlock(tv_sec=INT64_MAX), free", dist_mutex_timedlock(&m, &ts), 0);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    XCASE("dist_rwlock_timedwrlock(tv_sec=INT64_MAX), free", dist_rwlock_timedwrlock(&rw, &ts), 0);
    TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    /* far future, held by the parent's helper: waits until it is released */
    th_send(a->up, 1, 0, 0, 0);
    th_msg_t msg;
    TH_CHECK(th_recv(a->down, &msg, 10000) == 0);       /* held elsewhere now */
    int64_t t0 = th_now_ms();
    int rc = dist_mutex_timedlock(&m, &ts);
    fprintf(stderr, "[badinput] timedlock(tv_sec=INT64_MAX) while held elsewhere -> %s after %lld ms\n",
            th_errname(rc), (long long)(th_now_ms() - t0));
    TH_CHECK_RC(rc, 0);
    TH_CHECK(th_now_ms() - t0 >= 200);
    TH_CHECK_RC(dist_mutex_unlock(&m), 0);
    TH_CHECK_RC(dist_mutex_destroy(&m), 0);
    TH_CHECK_RC(dist_rwlock_destroy(&rw), 0);
    return 0;
}

static void test_timespec_extremes(void **state)
{
    begin();
    struct ext_arg a;
    th_name(a.name, sizeof a.name, "tsx");
    th_pipe_t up, down;
    th_pipe_open(&up);
    th_pipe_open(&down);
    a.up = up.wr;
    a.down = down.rd;
    th_proc_t pr;
    assert_int_equal(th_proc_start(&pr, NULL), 0);
    pid_t pid = th_fork_child(extreme_child, &a);
    th_msg_t msg;
    int st;
    *g_cases += 5;
    if (th_recv(up.rd, &msg, 10000) == 0) {
        assert_int_equal(th_proc_op(&pr, TH_M_LOCK, a.name), 0);
        th_send(down.wr, 1, 0, 0, 0);
        th_sleep_ms(300);
        assert_int_equal(th_proc_op(&pr, TH_M_UNLOCK, a.name), 0);
    }
    st = th_wait_child(pid);
    th_proc_stop(&pr);
    th_pipe_close(&up);
    th_pipe_close(&down);
    if (st != 0)
        fail_msg("abstime with tv_sec INT64_MIN / INT64_MAX: child status %d%s (regression of "
                 "the overflow fixed in 71e59f6?)", st,
                 st > 128 ? ", killed: UBSan abort (signed overflow in shim/base/clock.c)" : "");
}

/* ------------------------------------------------------------- attributes */

static void test_attr_values(void **state)
{
    begin();
    dist_mutexattr_t ma;
    dist_rwlockattr_t ra;
    assert_int_equal(dist_mutexattr_init(&ma), 0);
    assert_int_equal(dist_rwlockattr_init(&ra), 0);
    const unsigned long day30 = 30UL * 86400000UL;

    CASE(dist_mutexattr_settype(&ma, 0), EINVAL);
    CASE(dist_mutexattr_settype(&ma, 3), EINVAL);
    CASE(dist_mutexattr_settype(&ma, -1), EINVAL);
    CASE(dist_mutexattr_settype(&ma, INT_MAX), EINVAL);
    CASE(dist_mutexattr_settype(&ma, INT_MIN), EINVAL);
    CASE(dist_mutexattr_setfair(&ma, 2), EINVAL);
    CASE(dist_mutexattr_setfair(&ma, -1), EINVAL);
    CASE(dist_mutexattr_setfair(&ma, INT_MAX), EINVAL);
    CASE(dist_mutexattr_setlease(&ma, day30 + 1), EINVAL);
    CASE(dist_mutexattr_setlease(&ma, ULONG_MAX), EINVAL);
    CASE(dist_mutexattr_setlease(&ma, (unsigned long)-1000), EINVAL);
    CASE(dist_rwlockattr_setlease(&ra, day30 + 1), EINVAL);
    CASE(dist_rwlockattr_setlease(&ra, ULONG_MAX), EINVAL);
    /* the boundaries are accepted */
    CASE(dist_mutexattr_setlease(&ma, day30), 0);
    CASE(dist_rwlockattr_setlease(&ra, day30), 0);
    CASE(dist_mutexattr_setlease(&ma, 0), 0);
    CASE(dist_mutexattr_settype(&ma, DIST_MUTEX_ERRORCHECK), 0);
    CASE(dist_mutexattr_setfair(&ma, 1), 0);
    /* a refused value leaves the attribute as it was: still errorcheck */
    CASE(dist_mutexattr_settype(&ma, 7), EINVAL);
    char name[64];
    th_name(name, sizeof name, "attr");
    dist_mutex_t m;
    CASE(dist_mutex_init(&m, name, &ma), 0);
    CASE(dist_mutex_lock(&m), 0);
    CASE(dist_mutex_lock(&m), EDEADLK);
    CASE(dist_mutex_unlock(&m), 0);
    CASE(dist_mutex_destroy(&m), 0);
    /* the attribute may be destroyed while locks made from it live on */
    CASE(dist_mutex_init(&m, name, &ma), 0);
    CASE(dist_mutexattr_destroy(&ma), 0);
    CASE(dist_mutex_trylock(&m), 0);
    CASE(dist_mutex_unlock(&m), 0);
    CASE(dist_mutex_destroy(&m), 0);
    /* a fixed lease shorter than 10 ms could never be returned: it would
     * run out before Redis's answer could be trusted */
    assert_int_equal(dist_mutexattr_init(&ma), 0);
    CASE(dist_mutexattr_setlease(&ma, 1), EINVAL);
    CASE(dist_mutexattr_setlease(&ma, 9), EINVAL);
    CASE(dist_rwlockattr_setlease(&ra, 9), EINVAL);
    /* a 10 ms fixed lease (shorter than the default's minimum) is legal; it
     * lapses at once, so unlock may say ENOLCK, and nothing breaks */
    CASE(dist_mutexattr_setlease(&ma, 10), 0);
    CASE(dist_mutex_init(&m, name, &ma), 0);
    int rc = dist_mutex_lock(&m);
    check("dist_mutex_lock(lease 10 ms)", rc == EOWNERDEAD ? 0 : rc, 0);
    th_sleep_ms(20);
    rc = dist_mutex_unlock(&m);
    check("dist_mutex_unlock(lease 10 ms, 20 ms later) -> 0 or ENOLCK", rc == ENOLCK ? 0 : rc, 0);
    CASE(dist_mutex_unlock(&m), EPERM);
    CASE(dist_mutex_destroy(&m), 0);
    assert_int_equal(dist_mutexattr_destroy(&ma), 0);
    assert_int_equal(dist_rwlockattr_destroy(&ra), 0);
    end("attribute values");
}

/* ------------------------------------------------ version 3: robust, clocks */

/* The getters, the robust attribute, consistent, the clock* calls and
 * condattr's clock, and dist_sem_unlink: NULL, uninitialized and
 * destroyed objects, NULL results, bad values, clocks and names; EINVAL
 * (EPERM for consistent without a hold) with a readable message, and the
 * good objects still work after. */
static void test_v3_inputs(void **state)
{
    begin();
    char name[64];
    th_name(name, sizeof name, "v3");
    struct timespec ts = th_abstime_ms(100), bad = ts;
    bad.tv_nsec = 1000000000L;
    dist_mutexattr_t ma, zero_ma;
    dist_condattr_t ca, zero_ca;
    memset(&zero_ma, 0, sizeof zero_ma);
    memset(&zero_ca, 0, sizeof zero_ca);
    int v = -1;
    clockid_t clk = -1;

    CASE(dist_mutexattr_setrobust(NULL, DIST_MUTEX_ROBUST), EINVAL);
    CASE(dist_mutexattr_getrobust(NULL, &v), EINVAL);
    CASE(dist_mutexattr_gettype(NULL, &v), EINVAL);
    CASE(dist_mutexattr_setrobust(&zero_ma, DIST_MUTEX_ROBUST), EINVAL);
    CASE(dist_mutexattr_getrobust(&zero_ma, &v), EINVAL);
    CASE(dist_mutexattr_gettype(&zero_ma, &v), EINVAL);
    assert_int_equal(dist_mutexattr_init(&ma), 0);
    CASE(dist_mutexattr_getrobust(&ma, NULL), EINVAL);
    CASE(dist_mutexattr_gettype(&ma, NULL), EINVAL);
    CASE(dist_mutexattr_setrobust(&ma, 2), EINVAL);
    CASE(dist_mutexattr_setrobust(&ma, -1), EINVAL);
    CASE(dist_mutexattr_setrobust(&ma, INT_MAX), EINVAL);
    CASE(dist_mutexattr_setrobust(&ma, INT_MIN), EINVAL);
    CASE(dist_mutexattr_getrobust(&ma, &v), 0);
    assert_int_equal(v, DIST_MUTEX_LENIENT);
    CASE(dist_mutexattr_gettype(&ma, &v), 0);
    assert_int_equal(v, DIST_MUTEX_RECURSIVE);
    CASE(dist_mutexattr_settype(&ma, DIST_MUTEX_ERRORCHECK), 0);
    CASE(dist_mutexattr_gettype(&ma, &v), 0);
    assert_int_equal(v, DIST_MUTEX_ERRORCHECK);
    CASE(dist_mutexattr_setrobust(&ma, DIST_MUTEX_ROBUST), 0);
    dist_mutex_t m;
    CASE(dist_mutex_init(&m, name, &ma), 0);
    CASE(dist_mutexattr_destroy(&ma), 0);
    CASE(dist_mutexattr_getrobust(&ma, &v), EINVAL);     /* destroyed */
    CASE(dist_mutexattr_gettype(&ma, &v), EINVAL);

    CASE(dist_mutex_consistent(NULL), EINVAL);
    check3("dist_mutex_consistent(not held)", dist_mutex_consistent(&m), EPERM,
           dist_lasterror(), "not held", 0);
    CASE(dist_mutex_clocklock(NULL, CLOCK_REALTIME, &ts), EINVAL);
    CASE(dist_mutex_clocklock(&m, CLOCK_REALTIME, NULL), EINVAL);
    CASE(dist_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad), EINVAL);
    check3("dist_mutex_clocklock(CLOCK_PROCESS_CPUTIME_ID)",
           dist_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL, dist_lasterror(),
           "CLOCK_MONOTONIC", 0);
    CASE(dist_mutex_clocklock(&m, (clockid_t)-1, &ts), EINVAL);
    CASE(dist_mutex_lock(&m), 0);
    check3("dist_mutex_consistent(held, no EOWNERDEAD)", dist_mutex_consistent(&m), EINVAL,
           dist_lasterror(), "EOWNERDEAD", 0);
    CASE(dist_mutex_unlock(&m), 0);
    CASE(dist_mutex_destroy(&m), 0);
    CASE(dist_mutex_consistent(&m), EINVAL);             /* destroyed */

    dist_rwlock_t rw;
    CASE(dist_rwlock_clockrdlock(NULL, CLOCK_REALTIME, &ts), EINVAL);
    CASE(dist_rwlock_clockwrlock(NULL, CLOCK_MONOTONIC, &ts), EINVAL);
    CASE(dist_rwlock_init(&rw, name, NULL), 0);
    CASE(dist_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, NULL), EINVAL);
    CASE(dist_rwlock_clockwrlock(&rw, CLOCK_REALTIME, &bad), EINVAL);
    CASE(dist_rwlock_clockrdlock(&rw, CLOCK_THREAD_CPUTIME_ID, &ts), EINVAL);
    CASE(dist_rwlock_clockwrlock(&rw, 99, &ts), EINVAL);
    CASE(dist_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &ts), 0);   /* the good one works */
    CASE(dist_rwlock_unlock(&rw), 0);
    CASE(dist_rwlock_destroy(&rw), 0);

    CASE(dist_condattr_setclock(NULL, CLOCK_MONOTONIC), EINVAL);
    CASE(dist_condattr_getclock(NULL, &clk), EINVAL);
    CASE(dist_condattr_setclock(&zero_ca, CLOCK_MONOTONIC), EINVAL);
    CASE(dist_condattr_getclock(&zero_ca, &clk), EINVAL);
    assert_int_equal(dist_condattr_init(&ca), 0);
    CASE(dist_condattr_getclock(&ca, NULL), EINVAL);
    CASE(dist_condattr_setclock(&ca, CLOCK_BOOTTIME), EINVAL);
    CASE(dist_condattr_setclock(&ca, (clockid_t)-5), EINVAL);
    CASE(dist_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
    CASE(dist_condattr_getclock(&ca, &clk), 0);
    assert_int_equal(clk, CLOCK_MONOTONIC);
    dist_cond_t c;
    CASE(dist_cond_init(&c, name, &ca), 0);
    CASE(dist_condattr_destroy(&ca), 0);
    CASE(dist_condattr_getclock(&ca, &clk), EINVAL);      /* destroyed */
    dist_mutex_t cm;
    CASE(dist_mutex_init(&cm, name, NULL), 0);
    CASE(dist_cond_clockwait(NULL, &cm, CLOCK_REALTIME, &ts), EINVAL);
    CASE(dist_cond_clockwait(&c, NULL, CLOCK_REALTIME, &ts), EINVAL);
    CASE(dist_cond_clockwait(&c, &cm, CLOCK_REALTIME, NULL), EINVAL);
    CASE(dist_cond_clockwait(&c, &cm, CLOCK_REALTIME, &ts), EPERM);   /* m not held */
    CASE(dist_mutex_lock(&cm), 0);
    CASE(dist_cond_clockwait(&c, &cm, CLOCK_REALTIME, &bad), EINVAL);
    CASE(dist_cond_clockwait(&c, &cm, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
    /* the condition's own clock: a CLOCK_REALTIME abstime far past on
     * CLOCK_MONOTONIC's scale is taken as that clock's, and waits */
    struct timespec mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    mono.tv_nsec = (mono.tv_nsec + 30000000L) % 1000000000L;
    mono.tv_sec += mono.tv_nsec < 30000000L ? 1 : 0;
    CASE(dist_cond_timedwait(&c, &cm, &mono), ETIMEDOUT);
    CASE(dist_mutex_unlock(&cm), 0);                     /* held once, after the waits */
    CASE(dist_mutex_unlock(&cm), EPERM);
    CASE(dist_mutex_destroy(&cm), 0);
    CASE(dist_cond_destroy(&c), 0);

    dist_sem_t s;
    CASE(dist_sem_clockwait(NULL, CLOCK_REALTIME, &ts), EINVAL);
    CASE(dist_sem_init(&s, name, 1, 0), 0);
    CASE(dist_sem_clockwait(&s, CLOCK_REALTIME, NULL), EINVAL);
    CASE(dist_sem_clockwait(&s, CLOCK_MONOTONIC, &bad), EINVAL);
    CASE(dist_sem_clockwait(&s, CLOCK_MONOTONIC_RAW, &ts), EINVAL);
    CASE(dist_sem_getvalue(&s, &v), 0);
    assert_int_equal(v, 1);
    CASE(dist_sem_destroy(&s), 0);
    check3("dist_sem_unlink(NULL)", dist_sem_unlink(NULL), EINVAL, dist_lasterror(), "NULL", 0);
    check3("dist_sem_unlink(\"\")", dist_sem_unlink(""), EINVAL, dist_lasterror(), "empty", 0);
    char longname[DIST_NAME_MAX + 2];
    memset(longname, 's', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    check3("dist_sem_unlink(name of 513 bytes)", dist_sem_unlink(longname), EINVAL,
           dist_lasterror(), "DIST_NAME_MAX", 0);
    CASE(dist_sem_unlink(name), 0);
    check3("dist_sem_unlink(gone)", dist_sem_unlink(name), ENOENT, dist_lasterror(),
           "does not exist", 0);
    end("version 3 inputs");
}

/* ------------------------------------------------------------ semaphores */

/* Every dist_sem_* call with NULL, uninitialized (zero and random bytes),
 * destroyed and mistyped objects, bad values, flags, names and timespecs:
 * EINVAL with a readable message that names what is wrong; the good
 * object still works after. */
static void test_sem_inputs(void **state)
{
    begin();
    char name[64];
    th_name(name, sizeof name, "sem");
    struct timespec ts = th_abstime_ms(100);
    dist_sem_t s;
    memset(&s, 0, sizeof s);      /* a refused init writes nothing: zero, not stack garbage */
    int v = -1;

    CASE(dist_sem_init(NULL, name, 1, 0), EINVAL);
    CASE(dist_sem_wait(NULL), EINVAL);
    CASE(dist_sem_trywait(NULL), EINVAL);
    CASE(dist_sem_timedwait(NULL, &ts), EINVAL);
    CASE(dist_sem_post(NULL), EINVAL);
    CASE(dist_sem_getvalue(NULL, &v), EINVAL);
    CASE(dist_sem_destroy(NULL), EINVAL);
    check3("dist_sem_init(&s, NULL, 1, 0)", dist_sem_init(&s, NULL, 1, 0), EINVAL,
           dist_lasterror(), "name", 0);
    check3("dist_sem_init(&s, \"\", 1, 0)", dist_sem_init(&s, "", 1, 0), EINVAL,
           dist_lasterror(), "empty", 0);
    char *longname = malloc(DIST_NAME_MAX + 2);
    memset(longname, 'n', DIST_NAME_MAX + 1);
    longname[DIST_NAME_MAX + 1] = 0;
    check3("dist_sem_init(&s, <DIST_NAME_MAX + 1 bytes>, 1, 0)",
           dist_sem_init(&s, longname, 1, 0), EINVAL, dist_lasterror(), "DIST_NAME_MAX", 0);
    free(longname);
    /* values above INT_MAX (SEM_VALUE_MAX), wrong flags, a leased
     * semaphore without permits */
    check3("dist_sem_init(&s, name, INT_MAX + 1u, 0)", dist_sem_init(&s, name, (unsigned)INT_MAX + 1u, 0),
           EINVAL, dist_lasterror(), "INT_MAX", 0);
    check3("dist_sem_init(&s, name, UINT_MAX, DIST_SEM_LEASED)",
           dist_sem_init(&s, name, UINT_MAX, DIST_SEM_LEASED), EINVAL, dist_lasterror(), "INT_MAX", 0);
    static const int bad_flags[] = { 2, -1, 3, INT_MAX, INT_MIN };
    for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
        char d[80];
        snprintf(d, sizeof d, "dist_sem_init(&s, name, 1, %d)", bad_flags[i]);
        check3(d, dist_sem_init(&s, name, 1, bad_flags[i]), EINVAL, dist_lasterror(), "flags", 0);
    }
    check3("dist_sem_init(&s, name, 0, DIST_SEM_LEASED)", dist_sem_init(&s, name, 0, DIST_SEM_LEASED),
           EINVAL, dist_lasterror(), "permit", 0);
    /* a refused init made nothing: the object is still not initialized */
    CASE(dist_sem_post(&s), EINVAL);

    /* uninitialized: zero bytes, then random bytes */
    for (unsigned seed = 0; seed <= 8; seed++) {
        char d[96];
        const char *kind = seed ? "random" : "zero";
#define SFILL() do { if (seed) fill_random(&s, sizeof s, seed); else memset(&s, 0, sizeof s); } while (0)
#define SCASE(call) do { SFILL(); snprintf(d, sizeof d, "%s bytes #%u: %s", kind, seed, #call); \
    check(d, (call), EINVAL); } while (0)
        SCASE(dist_sem_wait(&s));
        SCASE(dist_sem_trywait(&s));
        SCASE(dist_sem_timedwait(&s, &ts));
        SCASE(dist_sem_post(&s));
        SCASE(dist_sem_getvalue(&s, &v));
        SCASE(dist_sem_destroy(&s));
#undef SCASE
#undef SFILL
    }

    /* a good object: NULL and bad second arguments */
    assert_int_equal(dist_sem_init(&s, name, 1, 0), 0);
    check3("dist_sem_getvalue(&s, NULL)", dist_sem_getvalue(&s, NULL), EINVAL, dist_lasterror(),
           "value", 0);
    CASE(dist_sem_timedwait(&s, NULL), EINVAL);
    static const long bad_nsec[] = { -1, 1000000000L, LONG_MAX, LONG_MIN };
    for (size_t i = 0; i < sizeof bad_nsec / sizeof bad_nsec[0]; i++) {
        char d[96];
        ts = th_abstime_ms(1000);
        ts.tv_nsec = bad_nsec[i];
        snprintf(d, sizeof d, "dist_sem_timedwait(tv_nsec=%ld)", bad_nsec[i]);
        check3(d, dist_sem_timedwait(&s, &ts), EINVAL, dist_lasterror(), "abstime", 0);
    }
    /* the refused waits took nothing */
    CASE(dist_sem_getvalue(&s, &v), 0);
    if (v != 1) {
        fprintf(stderr, "[badinput]   FAILED: refused waits changed the value to %d\n", v);
        g_failed++;
    }
    /* an abstime long past tries once */
    ts.tv_sec = -1;
    ts.tv_nsec = 0;
    CASE(dist_sem_timedwait(&s, &ts), 0);
    CASE(dist_sem_timedwait(&s, &ts), ETIMEDOUT);
    CASE(dist_sem_post(&s), 0);

    /* one kind for another: a mutex is not a semaphore, nor the reverse */
    dist_mutex_t m;
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    CASE(dist_mutex_lock((dist_mutex_t *)&s), EINVAL);
    CASE(dist_mutex_unlock((dist_mutex_t *)&s), EINVAL);
    CASE(dist_mutex_destroy((dist_mutex_t *)&s), EINVAL);
    assert_int_equal(dist_mutex_destroy(&m), 0);

    /* destroyed: every call EINVAL; a double destroy too; re-init works */
    CASE(dist_sem_destroy(&s), 0);
    CASE(dist_sem_wait(&s), EINVAL);
    CASE(dist_sem_trywait(&s), EINVAL);
    CASE(dist_sem_timedwait(&s, &ts), EINVAL);
    CASE(dist_sem_post(&s), EINVAL);
    CASE(dist_sem_getvalue(&s, &v), EINVAL);
    check3("dist_sem_destroy(&s) again", dist_sem_destroy(&s), EINVAL, dist_lasterror(),
           "destroyed", 0);
    CASE(dist_sem_init(&s, name, 1, 0), 0);
    CASE(dist_sem_trywait(&s), 0);
    CASE(dist_sem_post(&s), 0);
    /* the other kind on an existing name */
    dist_sem_t l;
    check3("dist_sem_init(&l, <a counting name>, 1, DIST_SEM_LEASED)",
           dist_sem_init(&l, name, 1, DIST_SEM_LEASED), EINVAL, dist_lasterror(), "counting", 0);
    CASE(dist_sem_destroy(&s), 0);

    /* a static semaphore, used, destroyed */
    static dist_sem_t ss = DIST_SEM_INITIALIZER("badinput-static-sem", 1);
    CASE(dist_sem_trywait(&ss), 0);
    CASE(dist_sem_post(&ss), 0);
    CASE(dist_sem_destroy(&ss), 0);
    CASE(dist_sem_post(&ss), EINVAL);
    end("semaphores");
}

/* ------------------------------------------------------------- barriers */

/* A call that must give DIST_BARRIER_SERIAL_THREAD (a barrier of count 1):
 * 0 then, else its code (0 itself as EPROTO: released, but not serial). */
#define SERIAL_CASE(expr) do { int rc_ = (expr); \
    check(#expr " == DIST_BARRIER_SERIAL_THREAD", \
          rc_ == DIST_BARRIER_SERIAL_THREAD ? 0 : rc_ ? rc_ : EPROTO, 0); } while (0)

/* dist_barrier_*: NULL, uninitialized (zero and random bytes), destroyed
 * and cast objects, count 0, bad names, attributes and timespecs, and a
 * count another init already gave the name (EINVAL naming both). */
static void test_barrier_inputs(void **state)
{
    begin();
    char name[64];
    th_name(name, sizeof name, "barrier");
    struct timespec ts = th_abstime_ms(100);
    dist_barrier_t b;
    dist_barrierattr_t ba;
    memset(&b, 0, sizeof b);

    CASE(dist_barrierattr_init(NULL), EINVAL);
    CASE(dist_barrierattr_destroy(NULL), EINVAL);
    memset(&ba, 0, sizeof ba);
    check3("dist_barrierattr_destroy(<not initialized>)", dist_barrierattr_destroy(&ba), EINVAL,
           dist_lasterror(), "attribute", 0);
    check3("dist_barrier_init(&b, name, <attr not initialized>, 2)",
           dist_barrier_init(&b, name, &ba, 2), EINVAL, dist_lasterror(), "attribute", 0);
    CASE(dist_barrier_init(NULL, name, NULL, 2), EINVAL);
    CASE(dist_barrier_wait(NULL), EINVAL);
    CASE(dist_barrier_timedwait(NULL, &ts), EINVAL);
    CASE(dist_barrier_destroy(NULL), EINVAL);
    check3("dist_barrier_init(&b, name, NULL, 0)", dist_barrier_init(&b, name, NULL, 0), EINVAL,
           dist_lasterror(), "count is 0", 0);
    check3("dist_barrier_init(&b, NULL, NULL, 2)", dist_barrier_init(&b, NULL, NULL, 2), EINVAL,
           dist_lasterror(), "barrier name", 0);
    check3("dist_barrier_init(&b, \"\", NULL, 2)", dist_barrier_init(&b, "", NULL, 2), EINVAL,
           dist_lasterror(), "empty", 0);
    char longname[DIST_NAME_MAX + 2];
    memset(longname, 'b', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    check3("dist_barrier_init(name of 513 bytes)", dist_barrier_init(&b, longname, NULL, 2),
           EINVAL, dist_lasterror(), "DIST_NAME_MAX", 0);
    /* a refused init made nothing: the object is still not initialized */
    check3("dist_barrier_wait(<refused init>)", dist_barrier_wait(&b), EINVAL, dist_lasterror(),
           "not initialized", 0);

    /* uninitialized: zero bytes, then random bytes */
    for (unsigned seed = 0; seed <= 8; seed++) {
        char d[96];
        const char *kind = seed ? "random" : "zero";
#define BFILL() do { if (seed) fill_random(&b, sizeof b, seed); else memset(&b, 0, sizeof b); } while (0)
#define BCASE(call) do { BFILL(); snprintf(d, sizeof d, "%s bytes #%u: %s", kind, seed, #call); \
    check(d, (call), EINVAL); } while (0)
        BCASE(dist_barrier_wait(&b));
        BCASE(dist_barrier_timedwait(&b, &ts));
        BCASE(dist_barrier_destroy(&b));
#undef BCASE
#undef BFILL
    }

    /* a good object: bad timespecs; count 1 trips at once */
    assert_int_equal(dist_barrierattr_init(&ba), 0);
    CASE(dist_barrier_init(&b, name, &ba, 1), 0);
    CASE(dist_barrierattr_destroy(&ba), 0);
    CASE(dist_barrier_timedwait(&b, NULL), EINVAL);
    static const long bad_nsec[] = { -1, 1000000000L, LONG_MAX, LONG_MIN };
    for (size_t i = 0; i < sizeof bad_nsec / sizeof bad_nsec[0]; i++) {
        char d[96];
        ts = th_abstime_ms(1000);
        ts.tv_nsec = bad_nsec[i];
        snprintf(d, sizeof d, "dist_barrier_timedwait(tv_nsec=%ld)", bad_nsec[i]);
        check3(d, dist_barrier_timedwait(&b, &ts), EINVAL, dist_lasterror(), "abstime", 0);
    }
    SERIAL_CASE(dist_barrier_wait(&b));
    /* an abstime long past still arrives: count 1 completes at once */
    ts.tv_sec = -1;
    ts.tv_nsec = 0;
    SERIAL_CASE(dist_barrier_timedwait(&b, &ts));

    /* another count while the name is in use: EINVAL naming both */
    dist_barrier_t other;
    char msg[300];
    int rc = dist_barrier_init(&other, name, NULL, 3);
    snprintf(msg, sizeof msg, "%s", dist_lasterror());
    check3("dist_barrier_init(&other, <a name of count 1>, NULL, 3)", rc, EINVAL, msg, "count 1", 0);
    check3("dist_barrier_init(&other, <a name of count 1>, NULL, 3): the other count", rc, EINVAL,
           msg, "count 3", 0);

    /* one kind for another: a mutex is not a barrier, nor the reverse */
    dist_mutex_t m;
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    CASE(dist_mutex_lock((dist_mutex_t *)&b), EINVAL);
    CASE(dist_barrier_wait((dist_barrier_t *)&m), EINVAL);
    assert_int_equal(dist_mutex_destroy(&m), 0);

    /* destroyed: every call EINVAL; a double destroy too; re-init works */
    CASE(dist_barrier_destroy(&b), 0);
    CASE(dist_barrier_wait(&b), EINVAL);
    CASE(dist_barrier_timedwait(&b, &ts), EINVAL);
    check3("dist_barrier_destroy(&b) again", dist_barrier_destroy(&b), EINVAL, dist_lasterror(),
           "destroyed", 0);
    CASE(dist_barrier_init(&b, name, NULL, 1), 0);
    SERIAL_CASE(dist_barrier_wait(&b));
    CASE(dist_barrier_destroy(&b), 0);
    end("barriers");
}

/* ------------------------------------------------------------------ once */

static int g_once_runs;
static void once_routine(void) { g_once_runs++; }

/* dist_once: NULL object and routine, uninitialized (zero and random
 * bytes) and cast objects, bad names in the initializer; a good one runs
 * its routine once. */
static void test_once_inputs(void **state)
{
    begin();
    static char name[64];
    th_name(name, sizeof name, "once");
    static char longname[DIST_NAME_MAX + 2];
    memset(longname, 'o', sizeof longname - 1);
    dist_once_t o = DIST_ONCE_INITIALIZER(name);
    dist_once_t bad = DIST_ONCE_INITIALIZER(longname);
    dist_once_t empty = DIST_ONCE_INITIALIZER("");
    dist_once_t null = DIST_ONCE_INITIALIZER(NULL);
    dist_once_t z;

    check3("dist_once(NULL, routine)", dist_once(NULL, once_routine), EINVAL, dist_lasterror(),
           "NULL", 0);
    check3("dist_once(&o, NULL)", dist_once(&o, NULL), EINVAL, dist_lasterror(), "routine", 0);
    check3("dist_once(<name of 513 bytes>, routine)", dist_once(&bad, once_routine), EINVAL,
           dist_lasterror(), "DIST_NAME_MAX", 0);
    check3("dist_once(<name \"\">, routine)", dist_once(&empty, once_routine), EINVAL,
           dist_lasterror(), "empty", 0);
    check3("dist_once(<name NULL>, routine)", dist_once(&null, once_routine), EINVAL,
           dist_lasterror(), "NULL", 0);
    for (unsigned seed = 0; seed <= 8; seed++) {
        char d[96];
        if (seed)
            fill_random(&z, sizeof z, seed);
        else
            memset(&z, 0, sizeof z);
        snprintf(d, sizeof d, "%s bytes #%u: dist_once(&z, routine)", seed ? "random" : "zero",
                 seed);
        check3(d, dist_once(&z, once_routine), EINVAL, dist_lasterror(), "not initialized", 0);
    }
    /* a mutex initializer is no once, nor a once a mutex */
    dist_mutex_t m;
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    CASE(dist_once((dist_once_t *)&m, once_routine), EINVAL);
    assert_int_equal(dist_mutex_destroy(&m), 0);
    if (g_once_runs) {
        fprintf(stderr, "[badinput]   FAILED: a refused call ran the routine\n");
        g_failed++;
    }
    CASE(dist_once(&o, once_routine), 0);
    CASE(dist_once(&o, once_routine), 0);
    if (g_once_runs != 1) {
        fprintf(stderr, "[badinput]   FAILED: the routine ran %d times\n", g_once_runs);
        g_failed++;
    }
    end("once");
}

/* ------------------------------------------------------------ conditions */

struct cwait_arg { dist_cond_t *c; dist_mutex_t *m; };
static int a_cmlock(void *p) { return dist_mutex_lock(((struct cwait_arg *)p)->m); }
static int a_cmunlock(void *p) { return dist_mutex_unlock(((struct cwait_arg *)p)->m); }

/* dist_cond_*: NULL, uninitialized (zero and random bytes), destroyed and
 * cast objects, bad names and attributes, bad timespecs, and a mutex not
 * held (EPERM; the caller's mutex as it was). */
static void test_conditions(void **state)
{
    begin();
    char name[64];
    th_name(name, sizeof name, "cond");
    dist_cond_t c;
    dist_condattr_t ca;
    dist_mutex_t m;
    dist_rwlock_t rw;
    struct timespec ts = th_abstime_ms(100);

    CASE(dist_condattr_init(NULL), EINVAL);
    CASE(dist_condattr_destroy(NULL), EINVAL);
    CASE(dist_cond_init(NULL, name, NULL), EINVAL);
    CASE(dist_cond_init(&c, NULL, NULL), EINVAL);
    CASE(dist_cond_init(&c, "", NULL), EINVAL);
    char longname[DIST_NAME_MAX + 2];
    memset(longname, 'c', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    check3("dist_cond_init(name of 513 bytes)", dist_cond_init(&c, longname, NULL), EINVAL,
           dist_lasterror(), "DIST_NAME_MAX", 0);
    CASE(dist_cond_wait(NULL, NULL), EINVAL);
    CASE(dist_cond_timedwait(NULL, NULL, &ts), EINVAL);
    CASE(dist_cond_signal(NULL), EINVAL);
    CASE(dist_cond_broadcast(NULL), EINVAL);
    CASE(dist_cond_destroy(NULL), EINVAL);

    assert_int_equal(dist_cond_init(&c, name, NULL), 0);
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    CASE(dist_cond_wait(&c, NULL), EINVAL);
    CASE(dist_cond_timedwait(&c, NULL, &ts), EINVAL);
    CASE(dist_cond_timedwait(&c, &m, NULL), EINVAL);

    /* uninitialized: zero bytes, random bytes */
    for (int z = 0; z < 2; z++)
        for (unsigned seed = 1; seed <= (z ? 8u : 1u); seed++) {
            dist_cond_t u;
            dist_condattr_t ua;
            char d[96];
            const char *kind = z ? "random" : "zero";
#define FILL() do { if (z) { fill_random(&u, sizeof u, seed); fill_random(&ua, sizeof ua, seed + 7); }     else { memset(&u, 0, sizeof u); memset(&ua, 0, sizeof ua); } } while (0)
#define UCASE(call) do { FILL(); snprintf(d, sizeof d, "%s bytes #%u: %s", kind, seed, #call);     check(d, (call), EINVAL); } while (0)
            UCASE(dist_cond_signal(&u));
            UCASE(dist_cond_broadcast(&u));
            UCASE(dist_cond_destroy(&u));
            UCASE(dist_cond_timedwait(&u, &m, &ts));
            UCASE(dist_condattr_destroy(&ua));
            UCASE(dist_cond_init(&u, "uninit-attr", &ua));
#undef UCASE
#undef FILL
        }
    /* one kind for another */
    assert_int_equal(dist_rwlock_init(&rw, name, NULL), 0);
    CASE(dist_cond_signal((dist_cond_t *)&m), EINVAL);
    CASE(dist_cond_destroy((dist_cond_t *)&rw), EINVAL);
    CASE(dist_cond_timedwait(&c, (dist_mutex_t *)&rw, &ts), EINVAL);
    CASE(dist_cond_timedwait((dist_cond_t *)&m, &m, &ts), EINVAL);
    CASE(dist_cond_init(&c, name, (const dist_condattr_t *)&ts), EINVAL);
    assert_int_equal(dist_rwlock_destroy(&rw), 0);
    /* statically initialized objects all start alike: a static mutex this
     * process already resolved, passed as a condition (and the other way
     * round), is told apart by its kind, not its magic */
    static dist_mutex_t smx = DIST_MUTEX_INITIALIZER("badinput-static-mx");
    static dist_cond_t scv = DIST_COND_INITIALIZER("badinput-static-cv");
    assert_int_equal(dist_mutex_lock(&smx), 0);
    assert_int_equal(dist_mutex_unlock(&smx), 0);
    assert_int_equal(dist_cond_signal(&scv), 0);
    CASE(dist_cond_signal((dist_cond_t *)&smx), EINVAL);
    CASE(dist_mutex_lock((dist_mutex_t *)&scv), EINVAL);
    CASE(dist_mutex_lock(&smx), 0);
    CASE(dist_mutex_unlock(&smx), 0);

    /* bad timespecs, with the mutex held: refused, and still held once */
    assert_int_equal(dist_mutex_lock(&m), 0);
    static const long bad_nsec[] = { -1, 1000000000L, LONG_MAX, LONG_MIN };
    for (size_t i = 0; i < sizeof bad_nsec / sizeof bad_nsec[0]; i++) {
        char d[96];
        ts = th_abstime_ms(1000);
        ts.tv_nsec = bad_nsec[i];
        snprintf(d, sizeof d, "dist_cond_timedwait(tv_nsec=%ld)", bad_nsec[i]);
        check3(d, dist_cond_timedwait(&c, &m, &ts), EINVAL, dist_lasterror(), "tv_nsec", 0);
    }
    CASE(dist_mutex_unlock(&m), 0);
    CASE(dist_mutex_unlock(&m), EPERM);

    /* the mutex not held: by nobody, by another thread */
    ts = th_abstime_ms(100);
    check3("dist_cond_timedwait(mutex not held)", dist_cond_timedwait(&c, &m, &ts), EPERM,
           dist_lasterror(), "not held", 0);
    CASE(dist_cond_wait(&c, &m), EPERM);
    th_actor_t *a = th_actor_new();
    struct cwait_arg wa = { &c, &m };
    assert_int_equal(th_actor_call(a, a_cmlock, &wa), 0);
    CASE(dist_cond_timedwait(&c, &m, &ts), EPERM);
    CASE(dist_cond_wait(&c, &m), EPERM);
    assert_int_equal(th_actor_call(a, a_cmunlock, &wa), 0);   /* its hold intact */
    th_actor_free(a);

    /* signal and broadcast with nobody waiting: 0, not remembered */
    CASE(dist_cond_signal(&c), 0);
    CASE(dist_cond_broadcast(&c), 0);

    /* destroyed */
    CASE(dist_cond_destroy(&c), 0);
    CASE(dist_cond_destroy(&c), EINVAL);
    CASE(dist_cond_signal(&c), EINVAL);
    CASE(dist_cond_broadcast(&c), EINVAL);
    assert_int_equal(dist_mutex_lock(&m), 0);
    CASE(dist_cond_timedwait(&c, &m, &ts), EINVAL);
    CASE(dist_cond_wait(&c, &m), EINVAL);
    CASE(dist_mutex_unlock(&m), 0);               /* the refused wait released nothing */
    CASE(dist_cond_init(&c, name, NULL), 0);       /* re-init after destroy */
    CASE(dist_cond_destroy(&c), 0);
    /* statically initialized, used, destroyed */
    static dist_cond_t sc = DIST_COND_INITIALIZER("badinput-static-cond");
    CASE(dist_cond_signal(&sc), 0);
    CASE(dist_cond_destroy(&sc), 0);
    CASE(dist_cond_signal(&sc), EINVAL);
    /* attributes */
    CASE(dist_condattr_init(&ca), 0);
    CASE(dist_cond_init(&c, name, &ca), 0);
    CASE(dist_cond_destroy(&c), 0);
    CASE(dist_condattr_destroy(&ca), 0);
    CASE(dist_condattr_destroy(&ca), EINVAL);
    CASE(dist_cond_init(&c, name, &ca), EINVAL);
    assert_int_equal(dist_mutex_destroy(&m), 0);
    end("conditions");
}

/* ------------------------------------------------------------ lasterror */


/* ------------------------------------------------------------ lasterror */

/* Lock-all: a bad array, count or element, a name twice, a bad
 * timespec, an errorcheck mutex held: the documented code, a readable
 * message, and nothing taken (the good errorcheck mutex in each set is
 * free for this thread afterwards). */
static void test_lockall_sets(void **state)
{
    begin();
    char name[64], name2[64];
    th_name(name, sizeof name, "allgood");
    th_name(name2, sizeof name2, "allgood2");
    dist_mutexattr_t ea;
    assert_int_equal(dist_mutexattr_init(&ea), 0);
    assert_int_equal(dist_mutexattr_settype(&ea, DIST_MUTEX_ERRORCHECK), 0);
    dist_mutex_t good, good2, twin, zero, rnd, dead;
    dist_rwlock_t rw;
    assert_int_equal(dist_mutex_init(&good, name, &ea), 0);
    assert_int_equal(dist_mutex_init(&good2, name2, &ea), 0);
    assert_int_equal(dist_mutex_init(&twin, name, NULL), 0);
    assert_int_equal(dist_rwlock_init(&rw, name2, NULL), 0);
    memset(&zero, 0, sizeof zero);
    fill_random(&rnd, sizeof rnd, 7);
    assert_int_equal(dist_mutex_init(&dead, "allgone", NULL), 0);
    assert_int_equal(dist_mutex_destroy(&dead), 0);
    struct timespec ts = th_abstime_ms(1000);

#define NOTHING_TAKEN() do { check3("(the good mutex is free)", dist_mutex_trylock(&good), 0, \
    dist_lasterror(), NULL, 0); dist_mutex_unlock(&good); } while (0)
#define ALLCASE(set, n, want, must) do { \
    check3("dist_mutex_lockall(" #set ", " #n ")", dist_mutex_lockall(set, n), want, \
           dist_lasterror(), must, 0); NOTHING_TAKEN(); \
    check3("dist_mutex_trylockall(" #set ", " #n ")", dist_mutex_trylockall(set, n), \
           want == EDEADLK ? EBUSY : want, dist_lasterror(), must, 0); NOTHING_TAKEN(); \
    check3("dist_mutex_timedlockall(" #set ", " #n ", +1 s)", dist_mutex_timedlockall(set, n, &ts), \
           want, dist_lasterror(), must, 0); NOTHING_TAKEN(); } while (0)

    dist_mutex_t *const ok2[2] = { &good, &good2 };
    dist_mutex_t *const with_null[2] = { &good, NULL };
    dist_mutex_t *const with_zero[2] = { &good, &zero };
    dist_mutex_t *const with_rnd[2] = { &rnd, &good };
    dist_mutex_t *const with_dead[2] = { &good, &dead };
    dist_mutex_t *const with_rw[2] = { &good, (dist_mutex_t *)&rw };
    dist_mutex_t *const same_name[3] = { &good2, &good, &twin };
    dist_mutex_t *const same_obj[2] = { &good, &good };
    ALLCASE(NULL, 2, EINVAL, "NULL");
    ALLCASE(ok2, 0, EINVAL, "n is 0");
    ALLCASE(ok2, (size_t)INT_MAX + 1, EINVAL, "INT_MAX");
    ALLCASE(ok2, SIZE_MAX, EINVAL, "INT_MAX");
    ALLCASE(with_null, 2, EINVAL, "ms[1]");
    ALLCASE(with_zero, 2, EINVAL, "not initialized");
    ALLCASE(with_rnd, 2, EINVAL, "ms[0]");
    ALLCASE(with_dead, 2, EINVAL, "destroyed");
    ALLCASE(with_rw, 2, EINVAL, "ms[1]");
    ALLCASE(same_name, 3, EINVAL, "twice");
    ALLCASE(same_obj, 2, EINVAL, "twice");

    static const long bad_nsec[] = { -1, 1000000000L, LONG_MAX, LONG_MIN };
    for (size_t i = 0; i < sizeof bad_nsec / sizeof bad_nsec[0]; i++) {
        char d[96];
        struct timespec b = th_abstime_ms(1000);
        b.tv_nsec = bad_nsec[i];
        snprintf(d, sizeof d, "dist_mutex_timedlockall(ok2, 2, tv_nsec=%ld)", bad_nsec[i]);
        check(d, dist_mutex_timedlockall(ok2, 2, &b), EINVAL);
        NOTHING_TAKEN();
    }
    CASE(dist_mutex_timedlockall(ok2, 2, NULL), EINVAL);
    NOTHING_TAKEN();

    /* an errorcheck mutex the caller holds: EDEADLK (try: EBUSY), and
     * nothing else taken */
    assert_int_equal(dist_mutex_lock(&good2), 0);
    dist_mutex_t *const held[2] = { &good2, &good };
    ALLCASE(held, 2, EDEADLK, "already held");
    assert_int_equal(dist_mutex_unlock(&good2), 0);

    /* and the good sets work */
    CASE(dist_mutex_lockall(ok2, 2), 0);
    CASE(dist_mutex_unlock(&good), 0);
    CASE(dist_mutex_unlock(&good2), 0);
#undef ALLCASE
#undef NOTHING_TAKEN
    assert_int_equal(dist_mutex_destroy(&good), 0);
    assert_int_equal(dist_mutex_destroy(&good2), 0);
    assert_int_equal(dist_mutex_destroy(&twin), 0);
    assert_int_equal(dist_rwlock_destroy(&rw), 0);
    assert_int_equal(dist_mutexattr_destroy(&ea), 0);
    end("lock-all sets");
}

/* dist_lasterror() survives what it describes: a message about a name
 * stays valid after the lock object and its name are gone. */
static void test_lasterror_lifetime(void **state)
{
    begin();
    char *name = strdup("lifetime-\xff-name");
    dist_mutex_t m;
    assert_int_equal(dist_mutex_init(&m, name, NULL), 0);
    CASE(dist_mutex_unlock(&m), EPERM);
    char before[512];
    snprintf(before, sizeof before, "%s", dist_lasterror());
    assert_int_equal(dist_mutex_destroy(&m), 0);
    memset(name, 'Q', strlen(name));
    free(name);
    if (strcmp(before, dist_lasterror()) != 0) {
        fprintf(stderr, "[badinput]   FAILED: dist_lasterror() changed after destroy\n");
        g_failed++;
    }
    check3("dist_lasterror() after the object is destroyed", EPERM, EPERM, dist_lasterror(), NULL, 0);
    end("lasterror lifetime");
}

static void test_summary(void **state)
{
    fprintf(stderr, "[badinput] %d cases in this suite\n", *g_cases);
}

int main(void)
{
    g_cases = mmap(NULL, sizeof *g_cases, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_cases == MAP_FAILED)
        return 1;
    const struct CMUnitTest tests[] = {
        /* environment first: before this process runs library threads */
        TH_TEST(test_env_values),
        TH_TEST(test_env_urls),
        TH_TEST(test_null_pointers),
        TH_TEST(test_uninitialized_objects),
        TH_TEST(test_destroyed_objects),
        TH_TEST(test_ownership),
        TH_TEST(test_names),
        TH_TEST(test_binary_names),
        TH_TEST(test_timespecs),
        TH_TEST(test_timespec_extremes),
        TH_TEST(test_attr_values),
        TH_TEST(test_lockall_sets),
        TH_TEST(test_sem_inputs),
        TH_TEST(test_barrier_inputs),
        TH_TEST(test_once_inputs),
        TH_TEST(test_v3_inputs),
        TH_TEST(test_conditions),
        TH_TEST(test_lasterror_lifetime),
        TH_TEST(test_summary),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
