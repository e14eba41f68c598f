/* SPDX-License-Identifier: BSD-3-Clause */
/* map.c - DISTLOCK_MAP: `NAME=KIND:TARGET[@PROGRAM];...`.
 *
 * KIND is mutex, rwlock, flock, sem or cond.  TARGET is a symbol name or
 * exe+0xOFFSET (mutex, rwlock, cond), a file path (flock), or the name of a
 * POSIX named semaphore, /NAME as sem_open(3) takes it (sem: the NAME is
 * then a semaphore's, which never clashes with a lock's).  A cond's NAME is
 * a condition's: its own, never a lock's.  `@PROGRAM` limits the entry to
 * programs of that base name.  Entries are separated by ';'; whitespace
 * around an entry and empty entries are ignored, nothing else is: a NAME
 * is taken byte for byte (it is binary-safe in Redis).
 *
 * The '@' that starts PROGRAM is the last one of the target; in a path it
 * must also come after the last '/', so directories may contain '@'.  A
 * file name that itself contains '@' is written with a final lone '@'
 * (an empty PROGRAM: every program). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int dlp_map_parse(const char *text, char *buf, size_t bufsize, dlp_spec_t *specs, int max,
                  int *n, char *err, size_t errlen)
{
    *n = 0;
    size_t len = strlen(text);
    if (len + 1 > bufsize) {
        snprintf(err, errlen, "longer than %zu bytes", bufsize - 1);
        return -1;
    }
    memcpy(buf, text, len + 1);

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
        char *kind = eq + 1;
        char *colon = strchr(kind, ':');
        if (!colon)
            return fail(err, errlen, idx, "expected KIND:TARGET after '=' (KIND: mutex, rwlock, "
                        "flock, sem or cond)", shown);
        *colon = 0;
        char *target = colon + 1;

        dlp_spec_t s;
        memset(&s, 0, sizeof s);
        s.name = entry;
        s.namelen = (size_t)(eq - entry);
        s.target = target;
        char *at = strrchr(target, '@');
        if (strcmp(kind, "flock") == 0 && at && strchr(at, '/'))
            at = NULL;                         /* an '@' of a directory */
        if (at) {
            *at = 0;
            s.program = at[1] ? at + 1 : NULL;
        }
        if (strcmp(kind, "mutex") == 0)
            s.kind = DLP_MUTEX;
        else if (strcmp(kind, "rwlock") == 0)
            s.kind = DLP_RWLOCK;
        else if (strcmp(kind, "flock") == 0)
            s.kind = DLP_FLOCK;
        else if (strcmp(kind, "sem") == 0)
            s.kind = DLP_SEM;
        else if (strcmp(kind, "cond") == 0)
            s.kind = DLP_COND;
        else
            return fail(err, errlen, idx, "unknown KIND (expected mutex, rwlock, flock, sem or "
                        "cond)", shown);
        if (!*target)
            return fail(err, errlen, idx, s.kind == DLP_FLOCK ? "empty file path"
                        : s.kind == DLP_SEM ? "empty semaphore name" : "empty symbol", shown);
        if (s.kind == DLP_SEM) {
            /* sem_open(3)'s names: one leading '/', then 1 to 251 bytes
             * (NAME_MAX less "sem."), no other '/'. */
            size_t tl = strlen(target);
            if (target[0] != '/' || tl < 2 || strchr(target + 1, '/'))
                return fail(err, errlen, idx, "a semaphore is /NAME, one '/' and no other", shown);
            if (tl - 1 > 251)
                return fail(err, errlen, idx, "semaphore name longer than 251 bytes", shown);
        }

        if (s.program && strchr(s.program, '/'))
            return fail(err, errlen, idx, "@PROGRAM is a base name, without '/'", shown);
        if (s.kind == DLP_MUTEX || s.kind == DLP_RWLOCK || s.kind == DLP_COND) {
            if (strncmp(target, "exe+", 4) == 0) {
                if (parse_offset(target, &s.offset))
                    return fail(err, errlen, idx, "bad offset: expected exe+0xHEX", shown);
                s.is_offset = 1;
            } else {
                for (const char *c = target; *c; c++)
                    if (isspace_ascii(*c) || *c == '=' || *c == ':')
                        return fail(err, errlen, idx, "bad symbol name", shown);
            }
        }

        for (int i = 0; i < *n; i++) {
            /* The same target for two different programs is two objects;
             * for one program, or one and every program, it is one (and
             * the start-up check finds it if both apply). */
            if (specs[i].kind == s.kind && strcmp(specs[i].target, s.target) == 0 &&
                same_program(specs[i].program, s.program))
                return fail(err, errlen, idx, "target already mapped by an earlier entry", shown);
            if (specs[i].kind == DLP_SEM && s.kind == DLP_SEM && specs[i].namelen == s.namelen &&
                memcmp(specs[i].name, s.name, s.namelen) == 0)
                return fail(err, errlen, idx, "semaphore name already used by an earlier entry",
                            shown);
            /* Semaphores and conditions have names of their own: only locks
             * clash. */
            if (specs[i].kind != DLP_SEM && s.kind != DLP_SEM && specs[i].kind != DLP_COND &&
                s.kind != DLP_COND && specs[i].namelen == s.namelen &&
                memcmp(specs[i].name, s.name, s.namelen) == 0 &&
                (specs[i].kind == DLP_MUTEX) != (s.kind == DLP_MUTEX))
                return fail(err, errlen, idx,
                            "lock name already used with another KIND (a name is a mutex, or a "
                            "rwlock/flock lock)", shown);
        }
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
