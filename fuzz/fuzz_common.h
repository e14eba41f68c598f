/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_common.h - what the libFuzzer targets share: a NUL-terminated copy
 * of the input in a buffer of exactly its size (so ASan sees any read past
 * the end), and checks that abort with a message.
 *
 * FUZZ_STRICT=1 in the environment also checks what SPEC promises about
 * messages: printable ASCII only (no byte of the input echoed raw).  Off by
 * default: the library does not promise it yet for every message (see
 * docs/RELIABILITY.md, "Bad input").
 */
#ifndef DL_FUZZ_COMMON_H
#define DL_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...) do { if (!(cond)) { \
    fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } } while (0)

static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* NUL-terminated within size. */
static inline int fuzz_terminated(const char *s, size_t size)
{
    return memchr(s, 0, size) != NULL;
}

static inline int fuzz_strict(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("FUZZ_STRICT");
        v = e && *e == '1';
    }
    return v;
}

/* A message: non-empty; printable ASCII (so one line) when `printable`
 * (a promise of the code under test) or with FUZZ_STRICT=1. */
static inline void fuzz_check_message(const char *what, const char *m, size_t size, int printable)
{
    FUZZ_CHECK(fuzz_terminated(m, size), "%s not NUL-terminated", what);
    FUZZ_CHECK(m[0] != 0, "%s is empty", what);
    if (printable || fuzz_strict())
        for (const unsigned char *p = (const unsigned char *)m; *p; p++)
            FUZZ_CHECK(*p >= 0x20 && *p < 0x7f, "%s has byte 0x%02x: \"%s\"", what, *p, m);
}

#endif
