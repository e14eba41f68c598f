/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_keys.c - the Redis side: every key of a lock starts with the prefix
 * and carries the {name} hash tag, names are binary-safe and never become
 * script text, the hold records who holds it, names up to DIST_NAME_MAX
 * bytes work, and a released lock leaves only keys that expire.  The keys
 * of each kind of object (keys.h): kinds never share a key, the mapping is
 * one-to-one, and a lock's keys are those it always had.
 */
#include "harness.h"
#include "error.h"
#include "keys.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

/* All keys matching pattern (SCAN), as a NULL-terminated malloc'ed array
 * of malloc'ed binary-safe strings; lens gets their lengths. */
struct keylist { char **k; size_t *len; int n; };

static void scan_keys(struct keylist *out, const char *pattern)
{
    out->k = NULL;
    out->len = NULL;
    out->n = 0;
    char cursor[32] = "0";
    do {
        redisReply *r = th_cmd("SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        redisReply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++) {
            out->k = realloc(out->k, sizeof(char *) * (size_t)(out->n + 1));
            out->len = realloc(out->len, sizeof(size_t) * (size_t)(out->n + 1));
            out->k[out->n] = malloc(keys->element[i]->len + 1);
            memcpy(out->k[out->n], keys->element[i]->str, keys->element[i]->len);
            out->k[out->n][keys->element[i]->len] = 0;
            out->len[out->n] = keys->element[i]->len;
            out->n++;
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
}

static void free_keys(struct keylist *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->k[i]);
    free(l->k);
    free(l->len);
}

static int in_list(const struct keylist *l, const char *k, size_t len)
{
    for (int i = 0; i < l->n; i++)
        if (l->len[i] == len && memcmp(l->k[i], k, len) == 0)
            return 1;
    return 0;
}

static int has_prefix(const char *k, size_t len, const char *prefix, size_t plen)
{
    return len >= plen && memcmp(k, prefix, plen) == 0;
}

static void printable(const char *k, size_t len, char *buf, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 5 < size; i++) {
        unsigned char c = (unsigned char)k[i];
        if (c >= 0x20 && c < 0x7f)
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
    }
    buf[o] = 0;
}

/* Names that would break a script built by string pasting. */
static void weird_name(char *buf, size_t size, const char *tag)
{
    snprintf(buf, size, "%s %d \"dq\" 'sq' ]] -- redis.call('FLUSHALL') --[[ \n"
             "nl\t%%s %%d [=[ ]=] \\ * ? [a-z] ^$().%%+- ..", tag, (int)getpid());
}

/* Each key in `now` but not in `before` must start with one of the
 * "<prefix>{name}" stems; returns how many new keys there were. */
static int check_new_keys(const struct keylist *before, const struct keylist *now,
                          const char *const *stems, int nstems)
{
    /* On a server shared with other suites only keys naming this process
     * are ours to judge. */
    char mark[32];
    snprintf(mark, sizeof mark, " %d ", (int)getpid());
    int fresh = 0;
    for (int i = 0; i < now->n; i++) {
        if (in_list(before, now->k[i], now->len[i]))
            continue;
        if (!th_redis_owned() && !memmem(now->k[i], now->len[i], mark, strlen(mark)))
            continue;
        fresh++;
        int ok = 0;
        for (int s = 0; s < nstems && !ok; s++)
            ok = has_prefix(now->k[i], now->len[i], stems[s], strlen(stems[s]));
        if (!ok) {
            char p[700];
            printable(now->k[i], now->len[i], p, sizeof p);
            fail_msg("key \"%s\" does not start with the prefix and the lock's {name} hash tag", p);
        }
    }
    return fresh;
}

static void test_keys_share_hash_tag(void **state)
{
    char name[300], rwname[300], stem[400], rwstem[400], key[400], sentinel[64];
    weird_name(name, sizeof name, "mutex");
    weird_name(rwname, sizeof rwname, "rwlock");
    snprintf(stem, sizeof stem, "distlock:{%s}", name);
    snprintf(rwstem, sizeof rwstem, "distlock:{%s}", rwname);
    snprintf(sentinel, sizeof sentinel, "test:sentinel:%d", (int)getpid());
    th_cmd_do("SET %s alive", sentinel);

    struct keylist before, now;
    scan_keys(&before, "*");
    dist_mutex_t m;
    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_init(&rw, rwname, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);

    /* a waiter of another process on each, so queue keys exist too */
    th_proc_t w1, w2;
    assert_int_equal(th_proc_start(&w1, NULL), 0);
    assert_int_equal(th_proc_start(&w2, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&w1, TH_M_TRYLOCK, name), EBUSY);
    assert_int_equal(th_proc_op_async(&w1, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(&w2, TH_RW_WRLOCK, rwname), 0);
    th_sleep_ms(300);

    scan_keys(&now, "*");
    const char *stems[] = { stem, rwstem };
    int fresh = check_new_keys(&before, &now, stems, 2);
    print_message("%d keys for 2 locks with 2 holders and 2 waiters\n", fresh);
    assert_true(fresh >= 2);
    /* the mutex's hold is the hash "<prefix>{name}" */
    snprintf(key, sizeof key, "distlock:{%s}", name);
    redisReply *r = th_cmd("TYPE %b", key, strlen(key));
    assert_string_equal(r->str, "hash");
    freeReplyObject(r);
    assert_int_equal(th_cmd_ll("EXISTS %s", sentinel), 1);      /* nothing was injected */

    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    th_res_t res;
    assert_int_equal(th_proc_recv(&w1, &res, 10000), 0);
    TH_ASSERT_RC(res.rc, 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), EBUSY);
    TH_ASSERT_RC(th_proc_op(&w1, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    assert_int_equal(th_proc_recv(&w2, &res, 10000), 0);
    TH_ASSERT_RC(res.rc, 0);
    TH_ASSERT_RC(th_proc_op(&w2, TH_RW_UNLOCK, rwname), 0);
    assert_int_equal(th_proc_stop(&w1), 0);
    assert_int_equal(th_proc_stop(&w2), 0);

    free_keys(&now);
    scan_keys(&now, "*");
    check_new_keys(&before, &now, stems, 2);
    assert_int_equal(th_cmd_ll("EXISTS %s", sentinel), 1);
    free_keys(&before);
    free_keys(&now);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* DISTLOCK_PREFIX is honoured by every process that sets it, and nothing
 * is written outside it. */
static void test_custom_prefix(void **state)
{
    char prefix[64], env_prefix[96], name[300], rwname[300], stem[400], rwstem[400], pat[80];
    snprintf(prefix, sizeof prefix, "tp.%d/", (int)getpid());
    snprintf(env_prefix, sizeof env_prefix, "DISTLOCK_PREFIX=%s", prefix);
    snprintf(pat, sizeof pat, "%s*", prefix);
    weird_name(name, sizeof name, "pmutex");
    weird_name(rwname, sizeof rwname, "prwlock");
    snprintf(stem, sizeof stem, "%s{%s}", prefix, name);
    snprintf(rwstem, sizeof rwstem, "%s{%s}", prefix, rwname);
    const char *const env[] = { env_prefix, NULL };

    struct keylist before, now, mine;
    scan_keys(&before, "*");
    th_proc_t a, b, c;
    assert_int_equal(th_proc_start(&a, env), 0);
    assert_int_equal(th_proc_start(&b, env), 0);
    assert_int_equal(th_proc_start(&c, env), 0);
    TH_ASSERT_RC(th_proc_op(&a, TH_M_LOCK, name), 0);
    assert_int_equal(th_proc_op_async(&b, TH_M_LOCK, name), 0);     /* queued */
    TH_ASSERT_RC(th_proc_op(&c, TH_RW_RDLOCK, rwname), 0);
    th_sleep_ms(300);

    scan_keys(&now, "*");
    scan_keys(&mine, pat);
    const char *stems[] = { stem, rwstem };
    int fresh = check_new_keys(&before, &now, stems, 2);
    assert_true(fresh >= 2);
    assert_true(mine.n >= 2);
    if (th_redis_owned())
        assert_int_equal(mine.n, fresh);          /* nothing written outside the prefix */
    for (int i = 0; i < mine.n; i++)
        if (!has_prefix(mine.k[i], mine.len[i], stem, strlen(stem)) &&
            !has_prefix(mine.k[i], mine.len[i], rwstem, strlen(rwstem)))
            fail_msg("key \"%s\" under the prefix lacks the {name} hash tag", mine.k[i]);
    char key[400];
    snprintf(key, sizeof key, "%s{%s}", prefix, name);
    assert_int_equal(th_cmd_ll("EXISTS %b", key, strlen(key)), 1);
    snprintf(key, sizeof key, "distlock:{%s}", name);
    assert_int_equal(th_cmd_ll("EXISTS %b", key, strlen(key)), 0);

    /* the same name under the default prefix is another lock */
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&m), 0);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);

    TH_ASSERT_RC(th_proc_op(&a, TH_M_UNLOCK, name), 0);
    th_res_t res;
    assert_int_equal(th_proc_recv(&b, &res, 10000), 0);
    TH_ASSERT_RC(res.rc, 0);
    TH_ASSERT_RC(th_proc_op(&b, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&c, TH_RW_UNLOCK, rwname), 0);
    assert_int_equal(th_proc_stop(&a), 0);
    assert_int_equal(th_proc_stop(&b), 0);
    assert_int_equal(th_proc_stop(&c), 0);
    free_keys(&before);
    free_keys(&now);
    free_keys(&mine);
}

struct hold_call { dist_mutex_t *m; uint64_t fence; pid_t tid; };

static int lock_and_fence(void *p)
{
    struct hold_call *c = p;
    c->tid = (pid_t)syscall(SYS_gettid);
    int rc = dist_mutex_lock(c->m);
    if (rc == 0)
        rc = dist_mutex_getfence(c->m, &c->fence);
    return rc;
}

static int unlock_it(void *p)
{
    return dist_mutex_unlock(((struct hold_call *)p)->m);
}

static long long redis_time_ms(void)
{
    redisReply *r = th_cmd("TIME");
    long long ms = strtoll(r->element[0]->str, NULL, 10) * 1000 +
                   strtoll(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    return ms;
}

static void test_hold_records_holder(void **state)
{
    char name[128], key[300], host[256];
    th_name(name, sizeof name, "who");
    th_key(key, sizeof key, name, "");
    gethostname(host, sizeof host);
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    th_actor_t *t = th_actor_new();
    struct hold_call c = { &m, 0, 0 };
    long long t0 = redis_time_ms();
    TH_ASSERT_RC(th_actor_call(t, lock_and_fence, &c), 0);
    long long t1 = redis_time_ms();

    redisReply *r = th_cmd("HGET %s info", key);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char want[400];
    snprintf(want, sizeof want, "%s\t%d\t%d", host, (int)getpid(), (int)c.tid);
    if (strcmp(r->str, want) != 0)
        fail_msg("info is \"%s\", want \"%s\" (host, pid, tid of the locking thread)", r->str, want);
    freeReplyObject(r);
    long long since = th_cmd_ll("HGET %s since", key);
    if (since < t0 - 5 || since > t1 + 5)
        fail_msg("since %lld is not between %lld and %lld (Redis time of the lock call)",
                 since, t0, t1);
    r = th_cmd("HGET %s fence", key);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(strtoull(r->str, NULL, 10), c.fence);
    freeReplyObject(r);
    r = th_cmd("HGET %s owner", key);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_true(r->len >= 8);                          /* a random token */
    freeReplyObject(r);
    TH_ASSERT_RC(th_actor_call(t, unlock_it, &c), 0);
    assert_int_equal(th_cmd_ll("EXISTS %s", key), 0);  /* released: gone */
    th_actor_free(t);

    /* another process's hold names that process */
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, name), 0);
    r = th_cmd("HGET %s info", key);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char pidpart[32];
    snprintf(pidpart, sizeof pidpart, "\t%d\t", (int)p.pid);
    if (!strstr(r->str, pidpart))
        fail_msg("info \"%s\" does not name pid %d", r->str, (int)p.pid);
    freeReplyObject(r);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
}

static void test_name_length_limit(void **state)
{
    char name[DIST_NAME_MAX + 2];
    memset(name, 'x', sizeof name);
    int n = snprintf(name, sizeof name, "long.%d.", (int)getpid());
    name[n] = 'x';
    name[DIST_NAME_MAX] = 0;                         /* 512 bytes */
    assert_int_equal(strlen(name), DIST_NAME_MAX);
    dist_mutex_t m;
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    char key[DIST_NAME_MAX + 64];
    th_key(key, sizeof key, name, "");
    assert_int_equal(th_cmd_ll("EXISTS %s", key), 1);
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_TRYLOCK, name), EBUSY);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_TRYLOCK, name), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    assert_int_equal(th_proc_stop(&p), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);

    dist_rwlock_t rw;
    TH_ASSERT_RC(dist_rwlock_init(&rw, name, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);

    name[DIST_NAME_MAX] = 'x';
    name[DIST_NAME_MAX + 1] = 0;                     /* 513 bytes */
    int rc = dist_mutex_init(&m, name, NULL);
    if (rc == 0)
        rc = dist_mutex_lock(&m);
    TH_ASSERT_RC(rc, EINVAL);
    rc = dist_rwlock_init(&rw, name, NULL);
    if (rc == 0)
        rc = dist_rwlock_wrlock(&rw);
    TH_ASSERT_RC(rc, EINVAL);
}

/* Names that differ only in odd bytes are different locks; a name is a
 * name, not a pattern. */
static void test_names_are_distinct(void **state)
{
    char base[64];
    snprintf(base, sizeof base, "dist.%d", (int)getpid());
    const char *suffixes[] = { "a\nb", "a\nc", "a", "a ", "a*", "a?", "%s", "%d", "'", "\"" };
    enum { NS = sizeof suffixes / sizeof suffixes[0] };
    char names[NS][96];
    dist_mutex_t m[NS];
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    for (int i = 0; i < NS; i++) {
        snprintf(names[i], sizeof names[i], "%s%s", base, suffixes[i]);
        TH_ASSERT_RC(dist_mutex_init(&m[i], names[i], NULL), 0);
    }
    for (int i = 0; i < NS; i++) {
        /* the other process holds every other one */
        if (i % 2)
            TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, names[i]), 0);
    }
    for (int i = 0; i < NS; i++) {
        int rc = dist_mutex_trylock(&m[i]);
        if (rc != (i % 2 ? EBUSY : 0))
            fail_msg("trylock of \"%s\": %s", suffixes[i], th_errname(rc));
    }
    for (int i = 0; i < NS; i++) {
        if (i % 2)
            TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, names[i]), 0);
        else
            TH_ASSERT_RC(dist_mutex_unlock(&m[i]), 0);
        TH_ASSERT_RC(dist_mutex_destroy(&m[i]), 0);
    }
    assert_int_equal(th_proc_stop(&p), 0);
}

/* Names starting with '}' get an escape byte in their hash tag (else the
 * tag would be empty, and in a cluster the lock's keys would spread over
 * slots), and so do names starting with the escape byte: "}x" and
 * "\x01}x" are two locks, with keys of their own. */
static void test_tag_escape(void **state)
{
    (void)state;
    char a[64], b[64], ka[300], kb[300], p_[300];
    snprintf(a, sizeof a, "}x.%d", (int)getpid());
    snprintf(b, sizeof b, "\x01}x.%d", (int)getpid());
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_LOCK, a), 0);
    snprintf(ka, sizeof ka, "%s{\x01%s}", th_prefix(), a);
    snprintf(p_, sizeof p_, "%s{%s}", th_prefix(), a);
    if (th_cmd_ll("EXISTS %b", ka, strlen(ka)) != 1)
        fail_msg("the hold of \"}x...\" is not under its escaped tag (unescaped key exists: %lld)",
                 th_cmd_ll("EXISTS %b", p_, strlen(p_)));
    dist_mutex_t mb;
    TH_ASSERT_RC(dist_mutex_init(&mb, b, NULL), 0);
    TH_ASSERT_RC(dist_mutex_trylock(&mb), 0);          /* another lock */
    snprintf(kb, sizeof kb, "%s{\x01%s}", th_prefix(), b);
    assert_int_equal(th_cmd_ll("EXISTS %b", kb, strlen(kb)), 1);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_TRYLOCK, b), EBUSY);
    TH_ASSERT_RC(dist_mutex_unlock(&mb), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&mb), 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, a), 0);
    assert_int_equal(th_proc_stop(&p), 0);
}

/* The hash tag Redis would route key by: what lies between the first '{'
 * and the first '}' after it; the whole key when that is empty or absent. */
static void redis_tag(const char *key, size_t len, const char **tag, size_t *tlen)
{
    const char *open = memchr(key, '{', len);
    const char *close = open ? memchr(open + 1, '}', len - (size_t)(open + 1 - key)) : NULL;
    if (!open || !close || close == open + 1) {
        *tag = key, *tlen = len;
        return;
    }
    *tag = open + 1, *tlen = (size_t)(close - open - 1);
}

/* Every (kind, name) of the list gets keys of its own: no key is another
 * object's, each parses back to its kind, name and suffix, all keys of one
 * object share one non-empty hash tag, and a lock's keys are
 * <prefix>{NAME}<suffix> (escaped only for names starting with '}' or the
 * escape byte), as they were before there were kinds. */
static void test_kinds_never_clash(void **state)
{
    (void)state;
    /* Names that look like another kind's tag, or like an escape. */
    static const char *const names[] = {
        "x", "c", "s", "cx", "sx", "}", "}x", "\x01", "\x01x", "\x01}x", "\x01\x01x",
        "\x01" "cx", "\x01sx", "\x01" "c", "\x02x", "x}y", "x}:r", "{x}", "x:r", "}:m", "\x01" "c}x",
        "b", "o", "bx", "ox", "\x01" "bx", "\x01ox", "x}:a", "x}:d", "}:ri",
    };
    enum { NN = sizeof names / sizeof names[0], NK = DL_KINDS };
    const char *prefix = "p:";
    size_t plen = strlen(prefix);
    struct { const char *k; size_t len; int kind, name, which; } all[NN * NK * DL_KEYS_MAX];
    char *bufs[NN * NK];
    int n = 0, nb = 0;
    for (int kind = 0; kind < NK; kind++) {
        const dl_keyset_t *ks = dl_kind_keys(kind);
        assert_non_null(ks);
        assert_true(ks->n >= 1 && ks->n <= DL_KEYS_MAX);
        assert_string_equal(ks->suffix[0], "");
        for (int i = 0; i < NN; i++) {
            size_t len = strlen(names[i]);
            char *buf = bufs[nb++] = malloc(dl_kind_keys_size(kind, prefix, len));
            const char *keys[DL_KEYS_MAX];
            size_t keylen[DL_KEYS_MAX];
            dl_kind_keys_write(kind, buf, prefix, names[i], len, keys, keylen);
            const char *tag0 = NULL;
            size_t tlen0 = 0;
            for (int k = 0; k < ks->n; k++) {
                char p[200];
                printable(keys[k], keylen[k], p, sizeof p);
                assert_int_equal(strlen(keys[k]), keylen[k]);
                /* one slot per object, never the whole key */
                const char *tag;
                size_t tlen;
                redis_tag(keys[k], keylen[k], &tag, &tlen);
                if (tag == keys[k])
                    fail_msg("%s key \"%s\": no hash tag", ks->what, p);
                if (k == 0)
                    tag0 = tag, tlen0 = tlen;
                else if (tlen != tlen0 || memcmp(tag, tag0, tlen) != 0)
                    fail_msg("%s key \"%s\": another hash tag than its main key's", ks->what, p);
                /* back to its kind, name and suffix */
                int pk = -1, which = -1;
                const char *pn;
                size_t pnl;
                if (dl_key_parse(prefix, plen, keys[k], keylen[k], &pk, &pn, &pnl, &which))
                    fail_msg("%s key \"%s\" does not parse", ks->what, p);
                if (pk != kind || which != k || pnl != len || memcmp(pn, names[i], len) != 0)
                    fail_msg("%s key \"%s\" parses as kind %d, suffix %d, another name",
                             ks->what, p, pk, which);
                /* the locks' own reader sees locks only */
                int lrc = dl_key_name(prefix, plen, keys[k], keylen[k], &pn, &pnl, &which);
                assert_int_equal(lrc == 0, kind == DL_KIND_LOCK);
                all[n].k = keys[k], all[n].len = keylen[k];
                all[n].kind = kind, all[n].name = i, all[n].which = k;
                n++;
            }
            if (kind == DL_KIND_LOCK) {
                /* unchanged: <prefix>{NAME} or, escaped, <prefix>{\x01NAME} */
                char want[200];
                int esc = names[i][0] == '}' || names[i][0] == DL_TAG_ESC;
                int wl = snprintf(want, sizeof want, "%s{%s%s}", prefix, esc ? "\x01" : "", names[i]);
                assert_int_equal(keylen[0], (size_t)wl);
                assert_memory_equal(keys[0], want, (size_t)wl);
            }
        }
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (all[a].len == all[b].len && memcmp(all[a].k, all[b].k, all[a].len) == 0) {
                char p[200];
                printable(all[a].k, all[a].len, p, sizeof p);
                fail_msg("key \"%s\" is both %s %d's and %s %d's", p,
                         dl_kind_keys(all[a].kind)->what, all[a].name,
                         dl_kind_keys(all[b].kind)->what, all[b].name);
            }
    /* keys no kind writes */
    static const char *const foreign[] = { "p:{}x}", "p:{\x01x}", "p:{\x01}", "p:{\x01" "c}",
                                           "p:x", "q:{x}", "p:{x}:zz" };
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        int pk, which;
        const char *pn;
        size_t pnl;
        if (dl_key_parse(prefix, plen, foreign[i], strlen(foreign[i]), &pk, &pn, &pnl, &which) == 0)
            fail_msg("foreign key %zu parsed as kind %d", i, pk);
    }
    print_message("%d keys of %d names in %d kinds: no clash\n", n, NN, NK);
    for (int i = 0; i < nb; i++)
        free(bufs[i]);
}

/* After use, a lock leaves no key without a TTL (fence counters and
 * metadata must not pile up forever). */
static void test_keys_expire_after_use(void **state)
{
    char name[128], pat[300];
    th_name(name, sizeof name, "expire");
    snprintf(pat, sizeof pat, "distlock:{%s}*", name);
    dist_mutex_t m;
    dist_rwlock_t rw;
    char rwname[140];
    snprintf(rwname, sizeof rwname, "%s.rw", name);
    TH_ASSERT_RC(dist_mutex_init(&m, name, NULL), 0);
    TH_ASSERT_RC(dist_rwlock_init(&rw, rwname, NULL), 0);
    th_proc_t p;
    assert_int_equal(th_proc_start(&p, NULL), 0);
    TH_ASSERT_RC(dist_mutex_lock(&m), 0);
    assert_int_equal(th_proc_op_async(&p, TH_M_LOCK, name), 0);
    th_sleep_ms(200);
    TH_ASSERT_RC(dist_mutex_unlock(&m), 0);
    th_res_t res;
    assert_int_equal(th_proc_recv(&p, &res, 10000), 0);
    TH_ASSERT_RC(res.rc, 0);
    TH_ASSERT_RC(th_proc_op(&p, TH_M_UNLOCK, name), 0);
    TH_ASSERT_RC(dist_rwlock_rdlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_wrlock(&rw), 0);
    TH_ASSERT_RC(dist_rwlock_unlock(&rw), 0);
    assert_int_equal(th_proc_stop(&p), 0);

    struct keylist l;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            snprintf(pat, sizeof pat, "distlock:{%s}*", rwname);
        scan_keys(&l, pat);
        for (int i = 0; i < l.n; i++) {
            long long pttl = th_cmd_ll("PTTL %b", l.k[i], l.len[i]);
            if (pttl < 0)
                fail_msg("key \"%s\" outlives the lock with no TTL", l.k[i]);
        }
        free_keys(&l);
    }
    char key[300];
    th_key(key, sizeof key, name, "");
    assert_int_equal(th_cmd_ll("EXISTS %s", key), 0);
    TH_ASSERT_RC(dist_mutex_destroy(&m), 0);
    TH_ASSERT_RC(dist_rwlock_destroy(&rw), 0);
}

/* A message that quotes the previous one (dl_fail(..., "...: %s",
 * dist_lasterror())) keeps it whole: the formatting must not read the
 * buffer it writes. */
static void test_error_quotes_previous(void **state)
{
    (void)state;
    dl_seterr("the server said no");
    assert_int_equal(dl_fail(EIO, "lock x cannot be confirmed: %s", dist_lasterror()), EIO);
    assert_string_equal(dist_lasterror(), "lock x cannot be confirmed: the server said no");
    dl_seterr("%s; and again", dist_lasterror());
    assert_string_equal(dist_lasterror(),
                        "lock x cannot be confirmed: the server said no; and again");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_keys_share_hash_tag),
        TH_TEST(test_custom_prefix),
        TH_TEST(test_hold_records_holder),
        TH_TEST(test_name_length_limit),
        TH_TEST(test_names_are_distinct),
        TH_TEST(test_tag_escape),
        TH_TEST(test_kinds_never_clash),
        TH_TEST(test_keys_expire_after_use),
        TH_TEST(test_error_quotes_previous),
    };
    return th_run_tests(tests, th_group_setup, th_group_teardown);
}
