/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * elfsym.h - a symbol name or exe+0xOFFSET -> an address in this process
 * (elfsym.c), and where this process's objects are.  Included through
 * preload.h.
 */
#ifndef DLP_ELFSYM_H
#define DLP_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Resolves a global (exported or not, global or file-static) by name in the
 * executable, then in each library loaded at start, or exe+offset.  `need`
 * is the size of the object the caller expects.  0 with *addr and a short
 * description of where it was found in `where`; 1 when this program lacks
 * it (no such symbol; an offset that is no writable, aligned place of
 * this executable); -1 when the symbol is there but cannot be the lock
 * (not a variable, too small, defined twice, misplaced).  A one-line
 * reason in err for 1 and -1. */
int dlp_elf_resolve(const dlp_spec_t *s, size_t need, void **addr, char *where, size_t wlen,
                    char *err, size_t errlen);
/* The executable's path ("" if unknown). */
const char *dlp_exe_path(void);
/* [lo, hi): where this library is loaded (its own code calls the
 * wrappers too: from its destructors and fork handlers). */
void dlp_self_range(uintptr_t *lo, uintptr_t *hi);

#pragma GCC visibility pop

#endif
