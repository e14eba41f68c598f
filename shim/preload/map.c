/* SPDX-License-Identifier: BSD-3-Clause */
/* map.c - DISTLOCK_MAP: `NAME=KIND:TARGET[@PROGRAM];...`.
 *
 * KIND is the word of one of the kinds it is given (kind.h: mutex,
 * rwlock, flock, sem, cond, barrier).  TARGET is what the kind's objects
 * are named by: a symbol name (or a C++ global's name as nm -C prints
 * it: app::counter_mutex) or exe+0xOFFSET (mutex, rwlock, cond,
 * barrier), a file path (flock), or a name /NAME as sem_open(3) takes it
 * (sem).  NAME is the object's name in Redis, among the names of the
 * kind's space: a semaphore's, a condition's or a barrier's never clashes
 * with a lock's, and a lock's
 * name is a mutex or a read-write lock (rwlock, flock), not both.
 * `@PROGRAM` limits the entry to programs of that base name.  Entries are
 * separated by ';'; whitespace around an entry and empty entries are
 * ignored, nothing else is: a NAME is taken byte for byte (it is
 * binary-safe in Redis).
 *
 * The '@' that starts PROGRAM is the last one of the target; in a path it
 * must also come after the last '/', so directories may contain '@'.  A
 * file name that itself contains '@' is written with a final lone '@'
 * (an empty PROGRAM: every program). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "preload.h"

static int isspace_ascii(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int fail(char *err, size_t errlen, int idx, const char *what, const char *entry)
{
    /* Quote at most 60 bytes of the offending entry, printable only. */
    char q[64];
    size_t o = 0;
    for (const char *p = entry; *p && o < 60; p++)
        q[o++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
    q[o] = 0;
    snprintf(err, errlen, "entry %d \"%s%s\": %s", idx, q, strlen(entry) > 60 ? "..." : "", what);
    return -1;
}

static int same_program(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int parse_offset(const char *t, uintptr_t *off)
{
    /* exe+0xHEX */
    const char *h = t + 4;
    if (h[0] != '0' || (h[1] != 'x' && h[1] != 'X') || !h[2])
        return -1;
    uintptr_t v = 0;
    for (h += 2; *h; h++) {
        int d;
        if (*h >= '0' && *h <= '9')
            d = *h - '0';
        else if (*h >= 'a' && *h <= 'f')
            d = *h - 'a' + 10;
        else if (*h >= 'A' && *h <= 'F')
            d = *h - 'A' + 10;
        else
            return -1;
        if (v > (UINTPTR_MAX >> 4))
            return -1;
        v = (v << 4) | (uintptr_t)d;
    }
    *off = v;
    return 0;
}

/* "mutex, rwlock, flock, sem or cond": the words of kinds. */
static const char *words_of(const dlp_kind_t *const *kinds, char *buf, size_t size)
{
    size_t o = 0, n = 0;
    buf[0] = 0;
    while (kinds[n])
        n++;
    for (size_t i = 0; i < n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
                              kinds[i]->word);
    return buf;
}

static const dlp_kind_t *kind_of(const dlp_kind_t *const *kinds, const char *word)
{
    for (size_t i = 0; kinds[i]; i++)
        if (strcmp(kinds[i]->word, word) == 0)
            return kinds[i];
    return NULL;
}

/* Is t a symbol, or the C++ name of a global (`app::counter_mutex`,
 * `(anonymous namespace)::m`, `app::name[abi:cxx11]`)?  No whitespace,
 * '=' or ':' but in those three forms. */
static int symbol_ok(const char *t)
{
    static const char *const forms[] = { "::", "(anonymous namespace)", "[abi:" };
    while (*t) {
        size_t skip = 0;
        for (size_t i = 0; i < sizeof forms / sizeof forms[0] && !skip; i++)
            if (strncmp(t, forms[i], strlen(forms[i])) == 0)
                skip = strlen(forms[i]);
        if (skip) {
            t += skip;
            continue;
        }
        if (isspace_ascii(*t) || *t == '=' || *t == ':')
            return 0;
        t++;
    }
    return 1;
}

/* Checks a TARGET of its kind (the '@PROGRAM' cut off already); 0, or -1
 * with the reason in *what. */
static int check_target(dlp_spec_t *s, char *target, const char **what, char *buf, size_t size)
{
    const dlp_kind_t *k = s->kind;
    if (!*target) {
        if (k->target == DLP_BY_PATH)
            *what = "empty file path";
        else if (k->target == DLP_BY_NAME)
            *what = (snprintf(buf, size, "empty %s name", k->what), buf);
        else
            *what = "empty symbol";
        return -1;
    }
    if (k->target == DLP_BY_NAME) {
        /* sem_open(3)'s names: one leading '/', then 1 to 251 bytes
         * (NAME_MAX less "sem."), no other '/'. */
        size_t tl = strlen(target);
        if (target[0] != '/' || tl < 2 || strchr(target + 1, '/')) {
            snprintf(buf, size, "a %s is /NAME, one '/' and no other", k->what);
            *what = buf;
            return -1;
        }
        if (tl - 1 > 251) {
            snprintf(buf, size, "%s name longer than 251 bytes", k->what);
            *what = buf;
            return -1;
        }
    }
    if (k->target == DLP_BY_SYMBOL) {
        if (strncmp(target, "exe+", 4) == 0) {
            if (parse_offset(target, &s->offset)) {
                *what = "bad offset: expected exe+0xHEX";
                return -1;
            }
            s->is_offset = 1;
        } else if (!symbol_ok(target)) {
            *what = "bad symbol name (a symbol, or a C++ name as nm -C prints it)";
            return -1;
        }
    }
    return 0;
}

/* Can s come after the earlier entry o?  NULL, or the reason it cannot. */
static const char *clash(const dlp_spec_t *o, const dlp_spec_t *s, char *buf, size_t size)
{
    int same_name = o->namelen == s->namelen && memcmp(o->name, s->name, s->namelen) == 0;
    /* The same target for two different programs is two objects; for one
     * program, or one and every program, it is one (and the start-up check
     * finds it if both apply). */
    if (o->kind == s->kind && strcmp(o->target, s->target) == 0 &&
        same_program(o->program, s->program))
        return "target already mapped by an earlier entry";
    if (o->kind == s->kind && s->kind->unique && same_name) {
        snprintf(buf, size, "%s name already used by an earlier entry", s->kind->what);
        return buf;
    }
    /* Only locks have shapes: the other kinds' names are their own. */
    if (same_name && o->kind->space == DL_KIND_LOCK && s->kind->space == DL_KIND_LOCK &&
        o->kind->shape != s->kind->shape)
        return "lock name already used with another KIND (a name is a mutex, or a "
               "rwlock/flock lock)";
    return NULL;
}

int dlp_map_parse(const char *text, const dlp_kind_t *const *kinds, char *buf, size_t bufsize,
                  dlp_spec_t *specs, int max, int *n, char *err, size_t errlen)
{
    *n = 0;
    size_t len = strlen(text);
    if (len + 1 > bufsize) {
        snprintf(err, errlen, "longer than %zu bytes", bufsize - 1);
        return -1;
    }
    memcpy(buf, text, len + 1);

    char words[128], why[128];
    int idx = 0;
    char *p = buf;
    while (p) {
        char *semi = strchr(p, ';');
        if (semi)
            *semi = 0;
        char *entry = p;
        p = semi ? semi + 1 : NULL;
        while (isspace_ascii(*entry))
            entry++;
        size_t elen = strlen(entry);
        while (elen && isspace_ascii(entry[elen - 1]))
            entry[--elen] = 0;
        if (!elen)
            continue;
        idx++;
        /* Keep a copy of the entry for messages before cutting it up. */
        char shown[80];
        snprintf(shown, sizeof shown, "%s", entry);

        char *eq = strchr(entry, '=');
        if (!eq)
            return fail(err, errlen, idx, "expected NAME=KIND:TARGET", shown);
        if (eq == entry)
            return fail(err, errlen, idx, "empty lock name", shown);
        if ((size_t)(eq - entry) > DIST_NAME_MAX)
            return fail(err, errlen, idx, "lock name longer than DIST_NAME_MAX (512 bytes)", shown);
        *eq = 0;
        char *word = eq + 1;
        char *colon = strchr(word, ':');
        if (!colon) {
            snprintf(why, sizeof why, "expected KIND:TARGET after '=' (KIND: %s)",
                     words_of(kinds, words, sizeof words));
            return fail(err, errlen, idx, why, shown);
        }
        *colon = 0;
        char *target = colon + 1;

        dlp_spec_t s;
        memset(&s, 0, sizeof s);
        s.name = entry;
        s.namelen = (size_t)(eq - entry);
        s.target = target;
        s.kind = kind_of(kinds, word);
        if (!s.kind) {
            snprintf(why, sizeof why, "unknown KIND (expected %s)",
                     words_of(kinds, words, sizeof words));
            return fail(err, errlen, idx, why, shown);
        }
        char *at = strrchr(target, '@');
        if (s.kind->target == DLP_BY_PATH && at && strchr(at, '/'))
            at = NULL;                         /* an '@' of a directory */
        if (at) {
            *at = 0;
            s.program = at[1] ? at + 1 : NULL;
        }
        const char *what;
        if (check_target(&s, target, &what, why, sizeof why))
            return fail(err, errlen, idx, what, shown);
        if (s.program && strchr(s.program, '/'))
            return fail(err, errlen, idx, "@PROGRAM is a base name, without '/'", shown);

        for (int i = 0; i < *n; i++)
            if ((what = clash(&specs[i], &s, why, sizeof why)))
                return fail(err, errlen, idx, what, shown);
        if (*n >= max) {
            snprintf(err, errlen, "more than %d entries", max);
            return -1;
        }
        specs[(*n)++] = s;
    }
    if (*n == 0) {
        snprintf(err, errlen, "set but has no entries (expected NAME=KIND:TARGET;...)");
        return -1;
    }
    return 0;
}
