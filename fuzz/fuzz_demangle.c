/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_demangle.c - libFuzzer target for the interposer's reader of C++
 * globals' names, dlp_demangle_var() and dlp_demangle_may_be()
 * (shim/preload/demangle.c), which read the symbol tables of whatever
 * program the interposer is preloaded into.
 *
 * The whole input is one symbol.  It is read with a buffer of 1024 bytes
 * and again with one exactly as long as the first answer (too small by
 * its NUL: refused, nothing written past it) and one byte longer (the
 * same answer).  Checks: 0 or -1; on 0 a name NUL-terminated inside the
 * buffer, of printable ASCII, made only from the symbol's identifiers,
 * "::", "(anonymous namespace)" and "[abi:...]"; a symbol taken is one
 * its own name may be (dlp_demangle_may_be agrees).
 */
#include "fuzz_common.h"
#include "preload.h"

static void one(const char *sym)
{
    char out[1024];
    memset(out, 0x5a, sizeof out);
    int rc = dlp_demangle_var(sym, out, sizeof out);
    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    if (rc)
        return;
    FUZZ_CHECK(fuzz_terminated(out, sizeof out), "not terminated");
    size_t n = strlen(out);
    FUZZ_CHECK(n > 0, "empty name");
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(out[i] >= 0x20 && out[i] < 0x7f, "byte %#x at %zu", (unsigned char)out[i], i);
    FUZZ_CHECK(strncmp(sym, "_Z", 2) == 0, "took a symbol that is not mangled");
    FUZZ_CHECK(dlp_demangle_may_be(sym, out), "may_be refuses the name of \"%s\": \"%s\"", sym,
               out);

    /* Exactly n + 1 bytes: the same; n bytes: refused, nothing written past. */
    char *fit = malloc(n + 1), *tight = malloc(n ? n : 1);
    if (!fit || !tight)
        abort();
    FUZZ_CHECK(dlp_demangle_var(sym, fit, n + 1) == 0 && strcmp(fit, out) == 0, "fit");
    if (n)
        FUZZ_CHECK(dlp_demangle_var(sym, tight, n) == -1, "accepted a buffer too small");
    free(fit);
    free(tight);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *sym = fuzz_cstr(data, size);
    one(sym);
    /* And as a candidate for a name of its own text. */
    (void)dlp_demangle_may_be(sym, sym);
    free(sym);
    return 0;
}
