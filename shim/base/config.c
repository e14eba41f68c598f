/* SPDX-License-Identifier: BSD-3-Clause */
/* config.c - DISTLOCK_* environment variables -> dl_config_t. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dl.h"

#define DL_DEFAULT_URL "redis://127.0.0.1:6379"

int dl_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
    if (!s || !*s)
        return EINVAL;
    unsigned long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return EINVAL;
        unsigned d = (unsigned)(*p - '0');
        if (v > (max - d) / 10)
            return EINVAL;             /* would pass max: also catches overflow */
        v = v * 10 + d;
    }
    if (v < min)
        return EINVAL;
    *out = v;
    return 0;
}

/* Copies s[0..n) to dst, decoding %XX; EINVAL on bad escapes or overflow. */
static int pct_decode(char *dst, size_t size, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return EINVAL;
            if (!isxdigit((unsigned char)s[i + 1]) || !isxdigit((unsigned char)s[i + 2]))
                return EINVAL;
            char hex[3] = { s[i + 1], s[i + 2], 0 };
            c = (char)strtol(hex, NULL, 16);
            i += 2;
        }
        if (o + 1 >= size)
            return EINVAL;
        dst[o++] = c;
    }
    dst[o] = 0;
    return 0;
}

/* What a message may show of a piece of a URL: at most 32 bytes, quoted
 * and escaped (a value may hold any byte; dist_lasterror() stays
 * printable), or nothing when the URL has a user-info part: an unencoded
 * '/', '?' or '@' in a password moves password bytes into what the parser
 * then takes for the port, the database or the query. */
static const char *piece(int hide, const char *s, size_t n, char *buf, size_t size)
{
    if (hide)
        return "(not shown: the URL has a user-info part)";
    return dl_quote(s, n < 32 ? n : 32, buf, size);
}

static int parse_hostport(const char *s, size_t n, int defport, dl_endpoint_t *ep,
                          int hide, char *err, size_t errlen)
{
    const char *host = s, *colon = NULL;
    size_t hlen;
    if (n && s[0] == '[') {                  /* [v6addr]:port */
        const char *close = memchr(s, ']', n);
        if (!close) {
            snprintf(err, errlen, "unclosed '[' in host");
            return EINVAL;
        }
        host = s + 1;
        hlen = (size_t)(close - host);
        if (close + 1 < s + n) {
            if (close[1] != ':') {
                snprintf(err, errlen, "expected ':' after ']'");
                return EINVAL;
            }
            colon = close + 1;
        }
    } else {
        colon = memchr(s, ':', n);
        hlen = colon ? (size_t)(colon - s) : n;
    }
    if (hlen == 0 || hlen >= sizeof ep->host) {
        snprintf(err, errlen, "missing or too long host");
        return EINVAL;
    }
    for (size_t i = 0; i < hlen; i++)
        if (!isalnum((unsigned char)host[i]) && !strchr("-._:%", host[i])) {
            snprintf(err, errlen, "bad character in host");
            return EINVAL;
        }
    memcpy(ep->host, host, hlen);
    ep->host[hlen] = 0;
    ep->port = defport;
    if (colon) {
        char port[8];
        size_t plen = (size_t)(s + n - colon - 1);
        unsigned long v;
        if (plen == 0) {
            snprintf(err, errlen, "no port after ':' (1-65535)");
            return EINVAL;
        }
        if (plen >= sizeof port) {
            char q[160];
            snprintf(err, errlen, "bad port %s (1-65535)", piece(hide, colon + 1, plen, q, sizeof q));
            return EINVAL;
        }
        memcpy(port, colon + 1, plen);
        port[plen] = 0;
        if (dl_parse_ulong(port, 1, 65535, &v)) {
            char q[160];
            snprintf(err, errlen, "bad port %s (1-65535)", piece(hide, port, plen, q, sizeof q));
            return EINVAL;
        }
        ep->port = (int)v;
    }
    return 0;
}

static int parse_db(const char *s, size_t n, int *db, int hide, char *err, size_t errlen)
{
    char buf[16];
    unsigned long v;
    if (n >= sizeof buf || (memcpy(buf, s, n), buf[n] = 0, dl_parse_ulong(buf, 0, 1000000, &v))) {
        char q[160];
        snprintf(err, errlen, "bad database number %s", piece(hide, s, n, q, sizeof q));
        return EINVAL;
    }
    *db = (int)v;
    return 0;
}

/* The query string: wait=N, wait_ms=M, and db=N (unix:// only, whose path
 * has no room for a database number). */
static int parse_query(const char *q, dl_config_t *c, int hide, char *err, size_t errlen)
{
    char shown[160];
    int have_wait_ms = 0;
    while (*q) {
        const char *amp = strchr(q, '&');
        size_t n = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', n);
        if (!eq) {
            snprintf(err, errlen, "query item %s needs a value", piece(hide, q, n, shown, sizeof shown));
            return EINVAL;
        }
        size_t klen = (size_t)(eq - q), vlen = n - klen - 1;
        char val[24];
        unsigned long v = 0;
        int num = vlen < sizeof val;
        if (num) {
            memcpy(val, eq + 1, vlen);
            val[vlen] = 0;
        }
        if (klen == 2 && memcmp(q, "db", 2) == 0 && c->scheme == DL_SCHEME_UNIX) {
            if (parse_db(eq + 1, vlen, &c->db, hide, err, errlen))
                return EINVAL;
        } else if (klen == 3 && memcmp(q, "tls", 3) == 0 && c->scheme != DL_SCHEME_UNIX) {
            if (!num || (strcmp(val, "0") && strcmp(val, "1"))) {
                snprintf(err, errlen, "tls=: expected 0 or 1");
                return EINVAL;
            }
            c->tls = val[0] == '1' || c->tls;     /* rediss:// stays TLS */
        } else if (klen == 4 && memcmp(q, "wait", 4) == 0) {
            if (!num || dl_parse_ulong(val, 0, 64, &v)) {
                snprintf(err, errlen, "wait=: expected a number of replicas from 0 to 64");
                return EINVAL;
            }
            c->wait_replicas = (unsigned)v;
        } else if (klen == 7 && memcmp(q, "wait_ms", 7) == 0) {
            if (!num || dl_parse_ulong(val, 1, 3600000UL, &v)) {
                snprintf(err, errlen, "wait_ms=: expected ms from 1 to 3600000");
                return EINVAL;
            }
            c->wait_ms = v;
            have_wait_ms = 1;
        } else {
            snprintf(err, errlen, "unknown query item %s (known: %s, wait, wait_ms)",
                     piece(hide, q, klen, shown, sizeof shown), c->scheme == DL_SCHEME_UNIX ? "db" : "tls");
            return EINVAL;
        }
        q += n + (amp ? 1 : 0);
    }
    if (have_wait_ms && !c->wait_replicas) {
        snprintf(err, errlen, "wait_ms= without wait=N");
        return EINVAL;
    }
    return 0;
}

static const struct {
    const char *prefix;
    int scheme;
    int defport;
    int tls;
} schemes[] = {
    { "redis://", DL_SCHEME_REDIS, 6379, 0 },
    { "rediss://", DL_SCHEME_REDIS, 6379, 1 },
    { "redis-sentinel://", DL_SCHEME_SENTINEL, 26379, 0 },
    { "redis-cluster://", DL_SCHEME_CLUSTER, 6379, 0 },
    { "redlock://", DL_SCHEME_REDLOCK, 6379, 0 },
};

/* unix:///path[?query]. */
static int parse_unix(const char *url, dl_config_t *c, int hide, char *err, size_t errlen)
{
    const char *path = url + 7, *q = strchr(path, '?');
    size_t plen = q ? (size_t)(q - path) : strlen(path);
    if (plen == 0 || path[0] != '/' || plen >= sizeof c->ep[0].host) {
        snprintf(err, errlen, "unix:// needs an absolute socket path");
        return EINVAL;
    }
    memcpy(c->ep[0].host, path, plen);
    c->ep[0].host[plen] = 0;
    c->ep[0].port = 0;
    c->nep = 1;
    c->scheme = DL_SCHEME_UNIX;
    return q ? parse_query(q + 1, c, hide, err, errlen) : 0;
}

/* The index of url's scheme in schemes[], or -1 (err says why). */
static int find_scheme(const char *url, char *err, size_t errlen)
{
    int si = -1;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (strncmp(url, schemes[i].prefix, strlen(schemes[i].prefix)) == 0)
            si = (int)i;
    if (si < 0) {
        const char *sep = strstr(url, "://");
        char q[160];
        if (sep && (size_t)(sep - url) < 32)
            snprintf(err, errlen, "unsupported scheme %s (supported: redis://, rediss://, unix://, "
                     "redis-sentinel://, redis-cluster://, redlock://)",
                     dl_quote(url, (size_t)(sep - url), q, sizeof q));
        else
            snprintf(err, errlen, "not a URL (expected redis://host:port or unix:///path)");
    }
    return si;
}

/* The authority's user info, if any: [user][:password]@ (percent-encoded);
 * *p and *alen move past it. */
static int parse_userinfo(const char **p, size_t *alen, dl_config_t *c, char *err,
                          size_t errlen)
{
    /* userinfo ends at the last '@' of the authority: passwords may hold '@'
     * only percent-encoded, but be lenient with a raw one. */
    const char *at = NULL;
    for (size_t i = 0; i < *alen; i++)
        if ((*p)[i] == '@')
            at = *p + i;
    if (!at)
        return 0;
    const char *colon = memchr(*p, ':', (size_t)(at - *p));
    size_t ulen = colon ? (size_t)(colon - *p) : (size_t)(at - *p);
    if (pct_decode(c->user, sizeof c->user, *p, ulen)) {
        snprintf(err, errlen, "bad user name");
        return EINVAL;
    }
    if (colon && pct_decode(c->password, sizeof c->password, colon + 1,
                            (size_t)(at - colon - 1))) {
        snprintf(err, errlen, "bad password encoding");
        return EINVAL;
    }
    *alen -= (size_t)(at + 1 - *p);
    *p = at + 1;
    return 0;
}

/* host:port[,host:port...] (alen bytes at h): several only where the
 * scheme has several. */
static int parse_hosts(const char *h, size_t alen, int defport, dl_config_t *c, int hide,
                       char *err, size_t errlen)
{
    const char *hend = h + alen;
    for (;;) {
        const char *comma = memchr(h, ',', (size_t)(hend - h));
        size_t hn = comma ? (size_t)(comma - h) : (size_t)(hend - h);
        if (c->nep == DL_MAX_ENDPOINTS) {
            snprintf(err, errlen, "more than %d hosts", DL_MAX_ENDPOINTS);
            return EINVAL;
        }
        if (parse_hostport(h, hn, defport, &c->ep[c->nep], hide, err, errlen))
            return EINVAL;
        c->nep++;
        if (!comma)
            break;
        h = comma + 1;
    }
    if (c->nep > 1 && c->scheme == DL_SCHEME_REDIS) {
        snprintf(err, errlen, "%s takes one host (several: redis-sentinel://, "
                 "redis-cluster:// or redlock://)", c->tls ? "rediss://" : "redis://");
        return EINVAL;
    }
    return 0;
}

/* The path (plen bytes after the authority's '/'; NULL: none): /db, or for
 * sentinel /MASTER[/db]; a cluster has only db 0. */
static int parse_path(const char *path, size_t plen, dl_config_t *c, int hide, char *err,
                      size_t errlen)
{
    if (c->scheme == DL_SCHEME_SENTINEL) {
        const char *s2 = path ? memchr(path, '/', plen) : NULL;
        size_t mlen = s2 ? (size_t)(s2 - path) : plen;
        if (!mlen || mlen >= sizeof c->master) {
            snprintf(err, errlen, "redis-sentinel:// needs /MASTER-NAME after the sentinels");
            return EINVAL;
        }
        memcpy(c->master, path, mlen);
        c->master[mlen] = 0;
        path = s2 ? s2 + 1 : NULL;
        plen = s2 ? plen - mlen - 1 : 0;
    }
    if (plen) {
        if (parse_db(path, plen, &c->db, hide, err, errlen))
            return EINVAL;
        if (c->scheme == DL_SCHEME_CLUSTER && c->db) {
            snprintf(err, errlen, "redis-cluster:// has only database 0");
            return EINVAL;
        }
    }
    return 0;
}

int dl_url_parse(const char *url, dl_config_t *c, char *err, size_t errlen)
{
    c->nep = 0;
    c->db = 0;
    c->user[0] = c->password[0] = c->master[0] = 0;
    c->wait_replicas = 0;
    c->wait_ms = 1000;
    c->tls = 0;
    if (!url || !*url) {
        snprintf(err, errlen, "empty");
        return EINVAL;
    }
    int hide = strchr(url, '@') != NULL;
    if (strncmp(url, "unix://", 7) == 0)
        return parse_unix(url, c, hide, err, errlen);
    int si = find_scheme(url, err, errlen);
    if (si < 0)
        return EINVAL;
    c->scheme = schemes[si].scheme;
    c->tls = schemes[si].tls;
    const char *p = url + strlen(schemes[si].prefix);
    const char *query = strchr(p, '?');
    size_t rest = query ? (size_t)(query - p) : strlen(p);
    const char *end = p + rest;               /* p moves past the user info below */
    const char *slash = memchr(p, '/', rest);
    size_t alen = slash ? (size_t)(slash - p) : rest;
    if (parse_userinfo(&p, &alen, c, err, errlen) ||
        parse_hosts(p, alen, schemes[si].defport, c, hide, err, errlen) ||
        parse_path(slash ? slash + 1 : NULL, slash ? (size_t)(end - slash - 1) : 0, c, hide,
                   err, errlen))
        return EINVAL;
    return query ? parse_query(query + 1, c, hide, err, errlen) : 0;
}

/* Appends to buf (size bytes, *o used) as snprintf would, never past it. */
static void put(char *buf, size_t size, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t size, size_t *o, const char *fmt, ...)
{
    if (*o >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *o, size - *o, fmt, ap);
    va_end(ap);
    *o = n < 0 ? size : *o + (size_t)n;
}

const char *dl_config_url(const dl_config_t *c, char *buf, size_t size)
{
    size_t o = 0;
    char ep[300];
    if (!size)
        return buf;
    buf[0] = 0;
    if (c->scheme == DL_SCHEME_UNIX) {
        put(buf, size, &o, "unix://%s", c->ep[0].host);
        if (c->db)
            put(buf, size, &o, "?db=%d", c->db);
        return buf;
    }
    static const char *const scheme[] = {
        [DL_SCHEME_REDIS] = "redis", [DL_SCHEME_SENTINEL] = "redis-sentinel",
        [DL_SCHEME_CLUSTER] = "redis-cluster", [DL_SCHEME_REDLOCK] = "redlock",
    };
    int s = c->scheme >= 0 && c->scheme <= DL_SCHEME_REDLOCK && scheme[c->scheme] ? c->scheme : 0;
    put(buf, size, &o, "%s://", c->tls && s == DL_SCHEME_REDIS ? "rediss" : scheme[s]);
    if (c->user[0])
        put(buf, size, &o, "%s@", c->user);
    for (int i = 0; i < c->nep; i++)
        put(buf, size, &o, "%s%s", i ? "," : "", dl_endpoint_name(c, i, ep, sizeof ep));
    if (s == DL_SCHEME_SENTINEL)
        put(buf, size, &o, "/%s", c->master);
    if (c->db)
        put(buf, size, &o, "/%d", c->db);
    if (c->tls && s != DL_SCHEME_REDIS)
        put(buf, size, &o, "?tls=1");
    return buf;
}

const char *dl_unreachable(const dl_config_t *c, const char *why, unsigned long ms, char *buf,
                           size_t size)
{
    char url[600], ep[300], head[320];
    dl_config_url(c, url, sizeof url);
    /* "redis HOST:PORT: reason": the URL names that server already when it
     * has one. */
    if (c->nep == 1) {
        snprintf(head, sizeof head, "redis %s: ", dl_endpoint_name(c, 0, ep, sizeof ep));
        if (strncmp(why, head, strlen(head)) == 0)
            why += strlen(head);
    }
    snprintf(buf, size, "Redis is unreachable at %s (%s); gave up after %lu ms "
             "(DISTLOCK_IO_TIMEOUT_MS=%lu)", url, why, ms, c->io_timeout_ms);
    return buf;
}

const char *dl_ep_name(const dl_endpoint_t *ep, int is_unix, char *buf, size_t size)
{
    if (is_unix)
        snprintf(buf, size, "%s", ep->host);
    else if (strchr(ep->host, ':'))
        snprintf(buf, size, "[%s]:%d", ep->host, ep->port);
    else
        snprintf(buf, size, "%s:%d", ep->host, ep->port);
    return buf;
}

const char *dl_endpoint_name(const dl_config_t *c, int i, char *buf, size_t size)
{
    return dl_ep_name(&c->ep[i], c->scheme == DL_SCHEME_UNIX, buf, size);
}

static int env_ulong(const char *var, unsigned long def, unsigned long min,
                     unsigned long max, unsigned long *out)
{
    const char *v = secure_getenv(var);
    if (!v) {
        *out = def;
        return 0;
    }
    if (dl_parse_ulong(v, min, max, out)) {
        char q[200];
        return dl_fail(EINVAL, "%s=%s: expected a whole number of ms from %lu to %lu",
                       var, dl_quote(v, strnlen(v, 40), q, sizeof q), min, max);
    }
    return 0;
}

/* DISTLOCK_TLS_*: read whatever the URL, so a bad value is caught the
 * same way every time.  The files are judged above (the check conn/tls.c
 * registers: only when the URL asks for TLS). */
static int load_tls(dl_config_t *c)
{
    static const struct {
        const char *var;
        size_t off, size;
    } vars[] = {
        { "DISTLOCK_TLS_CA_FILE", offsetof(dl_config_t, tls_ca), sizeof c->tls_ca },
        { "DISTLOCK_TLS_CERT_FILE", offsetof(dl_config_t, tls_cert), sizeof c->tls_cert },
        { "DISTLOCK_TLS_KEY_FILE", offsetof(dl_config_t, tls_key), sizeof c->tls_key },
        { "DISTLOCK_TLS_SERVER_NAME", offsetof(dl_config_t, tls_name), sizeof c->tls_name },
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = secure_getenv(vars[i].var);
        if (!v || !*v)
            continue;
        if (strlen(v) >= vars[i].size)
            return dl_fail(EINVAL, "%s: longer than %zu bytes", vars[i].var, vars[i].size - 1);
        strcpy((char *)c + vars[i].off, v);
    }
    for (const char *n = c->tls_name; *n; n++)
        if (!isalnum((unsigned char)*n) && !strchr("-._:*", *n))
            return dl_fail(EINVAL, "DISTLOCK_TLS_SERVER_NAME: not a host name or IP address");
    return 0;
}

static dl_config_check_fn *checks[DL_CONFIG_CHECKS];
static int nchecks;

void dl_config_add_check(dl_config_check_fn *fn)
{
    if (nchecks < DL_CONFIG_CHECKS)
        checks[nchecks++] = fn;
}

int dl_config_prefix(char *out, size_t size)
{
    const char *prefix = secure_getenv("DISTLOCK_PREFIX");
    if (!prefix)
        prefix = "distlock:";
    if (strlen(prefix) >= size)
        return dl_fail(EINVAL, "DISTLOCK_PREFIX: longer than %zu bytes", size - 1);
    if (strpbrk(prefix, "{}"))
        return dl_fail(EINVAL, "DISTLOCK_PREFIX: must not contain '{' or '}' (they set the hash tag)");
    strcpy(out, prefix);
    return 0;
}

int dl_config_password(dl_config_t *c)
{
    const char *pw = secure_getenv("DISTLOCK_PASSWORD");
    if (pw && *pw) {
        if (strlen(pw) >= sizeof c->password)
            return dl_fail(EINVAL, "DISTLOCK_PASSWORD: longer than %zu bytes", sizeof c->password - 1);
        strcpy(c->password, pw);
    }
    return 0;
}

int dl_config_load(dl_config_t *c)
{
    memset(c, 0, sizeof *c);
    char err[160];
    const char *url = secure_getenv("DISTLOCK_URL");
    if (dl_url_parse(url ? url : DL_DEFAULT_URL, c, err, sizeof err))
        return dl_fail(EINVAL, "DISTLOCK_URL: %s", err);   /* never echo: it may hold a password */

    if (dl_config_password(c))
        return EINVAL;

    if (load_tls(c))
        return EINVAL;
    for (int i = 0; i < nchecks; i++)
        if (checks[i](c))
            return EINVAL;

    if (dl_config_prefix(c->prefix, sizeof c->prefix))
        return EINVAL;

    if (env_ulong("DISTLOCK_LEASE_MS", 30000, 30, 86400000UL, &c->lease_ms) ||
        env_ulong("DISTLOCK_IO_TIMEOUT_MS", 5000, 1, 86400000UL, &c->io_timeout_ms))
        return EINVAL;

    /* The metrics file: empty is "not set".  Whether its directory exists
     * or is writable is found out when it is written (core/metrics.c: a
     * warning, never an error of a lock call).  The interval is read even
     * without a file, so a bad value is caught the same way every time;
     * below 100 ms each write's walk over the process's locks would cost
     * more than the counters it reports. */
    const char *mf = secure_getenv("DISTLOCK_METRICS_FILE");
    if (mf && *mf) {
        if (strlen(mf) >= sizeof c->metrics_file)
            return dl_fail(EINVAL, "DISTLOCK_METRICS_FILE: longer than %zu bytes",
                           sizeof c->metrics_file - 1);
        strcpy(c->metrics_file, mf);
    }
    if (env_ulong("DISTLOCK_METRICS_INTERVAL_MS", 10000, 100, 86400000UL, &c->metrics_interval_ms))
        return EINVAL;

    static const char *levels[] = { "off", "error", "warn", "info", "debug" };
    const char *log = secure_getenv("DISTLOCK_LOG");
    c->log_level = DL_LOG_WARN;
    /* Empty is "not set", as for DISTLOCK_PASSWORD: `DISTLOCK_LOG= prog`
     * (or an env file with an empty entry) keeps the default level. */
    if (log && *log) {
        int found = 0;
        for (int i = 0; i < 5; i++)
            if (strcmp(log, levels[i]) == 0) {
                c->log_level = i;
                found = 1;
            }
        if (!found) {
            char q[120];
            return dl_fail(EINVAL, "DISTLOCK_LOG=%s: expected off, error, warn, info or debug",
                           dl_quote(log, strnlen(log, 20), q, sizeof q));
        }
    }
    return 0;
}
