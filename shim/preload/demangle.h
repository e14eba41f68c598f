/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * demangle.h - the C++ names of globals (demangle.c): what `nm -C` prints
 * for the mangled symbol of a variable at namespace scope or a static data
 * member, so that a map entry may name `app::counter_mutex` as well as
 * `_ZN3app13counter_mutexE`.  Included through preload.h.
 */
#ifndef DLP_DEMANGLE_H
#define DLP_DEMANGLE_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

/* The demangled name of sym, a variable's mangled symbol, in out (size
 * bytes, NUL-terminated): 0; -1 when sym is not a mangled name of the
 * forms globals have (a C name, a function, a template's member, a
 * function's local static, a clone: those are mapped by their symbol), or
 * out is too small. */
int dlp_demangle_var(const char *sym, char *out, size_t size);

/* Could the symbol sym be the one the C++ name `want` names?  A quick
 * look before dlp_demangle_var: the identifier want ends with must be in
 * sym as the mangling writes it (its length, then it).  want: a name that
 * is no mangled symbol itself. */
int dlp_demangle_may_be(const char *sym, const char *want);

#pragma GCC visibility pop

#endif
