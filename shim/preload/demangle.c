/* SPDX-License-Identifier: BSD-3-Clause */
/* demangle.c - the C++ names of globals (demangle.h).
 *
 * A map entry may name a C++ global as `nm -C` prints it.  Rather than
 * load libstdc++'s __cxa_demangle into every program the interposer is
 * preloaded into (a C program would get libstdc++ and its constructors
 * before its own main, on a host that may not have it), this reads the
 * few forms of the Itanium C++ ABI that the symbol of a global has:
 *
 *   _Z N <prefix>... <name> E     a variable of a namespace, or a static
 *                                 data member of a class: app::q::mu
 *   _Z <name>, _Z St <name>       (internal linkage: _ZL1m is `m`, a
 *                                 file-static of a C++ file; std::x)
 *   <name> ::= [L] <len><identifier> [B <len><tag>]...
 *
 * with `_GLOBAL__N...` shown as `(anonymous namespace)` and ABI tags as
 * `[abi:TAG]`, as c++filt shows them.  Anything else (a function, whose
 * parameter types follow its name; a member of a class template, whose
 * arguments may refer back to earlier parts; a function's local static,
 * _ZZ; vtables and guards, _ZT, _ZGV; clones, `.lto_priv.0`) is not a
 * form of this reader: such a global is mapped by its symbol.  A global
 * does not need more: these forms have no substitutions (S_) to follow.
 * tests/preload/test_cxx.sh compares the result with c++filt for every
 * symbol of a C++ program. */
#include <stdio.h>
#include <string.h>

#include "preload.h"

typedef struct out {
    char *buf;
    size_t size, len;
    int full;
} out_t;

static void put(out_t *o, const char *s, size_t n)
{
    if (o->full || o->len + n >= o->size) {
        o->full = 1;
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = 0;
}

static int isdigit_ascii(char c)
{
    return c >= '0' && c <= '9';
}

static int isident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isdigit_ascii(c) || c == '_' ||
           c == '$';
}

/* <len><identifier>: its bytes in *id, *n of them; the text after it, or
 * NULL. */
static const char *source(const char *s, const char **id, size_t *n)
{
    if (!isdigit_ascii(*s) || *s == '0')
        return NULL;
    size_t len = 0;
    while (isdigit_ascii(*s)) {
        if (len > 4096)
            return NULL;
        len = len * 10 + (size_t)(*s++ - '0');
    }
    for (size_t i = 0; i < len; i++)
        if (!isident(s[i]))            /* also stops at the end of the string */
            return NULL;
    *id = s;
    *n = len;
    return s + len;
}

/* [L] <source-name> [B <source-name>]... */
static const char *name(const char *s, out_t *o)
{
    const char *id;
    size_t n;
    if (*s == 'L')                    /* internal linkage (GCC) */
        s++;
    if (!(s = source(s, &id, &n)))
        return NULL;
    if (n >= 10 && memcmp(id, "_GLOBAL__N", 10) == 0)
        put(o, "(anonymous namespace)", 21);
    else
        put(o, id, n);
    while (*s == 'B') {
        if (!(s = source(s + 1, &id, &n)))
            return NULL;
        put(o, "[abi:", 5);
        put(o, id, n);
        put(o, "]", 1);
    }
    return s;
}

int dlp_demangle_var(const char *sym, char *buf, size_t size)
{
    out_t o = { buf, size, 0, size == 0 };
    if (size)
        buf[0] = 0;
    if (strncmp(sym, "_Z", 2) != 0)
        return -1;
    const char *s = sym + 2;
    if (*s == 'N') {
        s++;
        int names = 0;
        if (strncmp(s, "St", 2) == 0) {
            put(&o, "std::", 5);
            s += 2;
        }
        while (s && *s != 'E') {
            if (names++)
                put(&o, "::", 2);
            s = name(s, &o);
        }
        if (!s || !names)
            return -1;
        s++;                           /* the E */
    } else {
        if (strncmp(s, "St", 2) == 0) {
            put(&o, "std::", 5);
            s += 2;
        }
        s = name(s, &o);
    }
    return s && *s == 0 && !o.full ? 0 : -1;
}

int dlp_demangle_may_be(const char *sym, const char *want)
{
    if (strncmp(sym, "_Z", 2) != 0)
        return 0;
    /* The last part of want, without its ABI tags. */
    const char *last = want;
    for (const char *p = want; (p = strstr(p, "::")); p += 2)
        last = p + 2;
    size_t n = strcspn(last, "[");
    if (n == 0 || strncmp(last, "(anonymous namespace)", n) == 0)
        return 1;
    char mangled[40];
    if (n > 4096)
        return 0;
    int k = snprintf(mangled, sizeof mangled, "%zu", n);
    /* Occurrences may overlap ("111anon": the length 11 starts at the
     * second '1'): each is tried. */
    for (const char *at = sym; (at = strstr(at, mangled)); at++)
        if (strncmp(at + k, last, n) == 0)
            return 1;
    return 0;
}
