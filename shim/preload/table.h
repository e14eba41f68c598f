/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * table.h - the entries of the map this program uses, and the read-only
 * address table every wrapper looks its object up in (table.c).  boot.c
 * builds the entries and fills the table before main; it is read-only
 * from then on (an entry's dist_* object and holder_pid are its wrappers').
 * Included through preload.h.
 */
#ifndef DLP_TABLE_H
#define DLP_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "distlock.h"
#include "kind.h"

#pragma GCC visibility push(hidden)

/* One entry of the map that applies to this program (boot.c makes them). */
struct dlp_entry {
    const dlp_kind_t *kind;
    char *name;               /* NUL-terminated copy of the object's name */
    void *addr;               /* DLP_BY_SYMBOL: the mapped global */
    char *target;             /* DLP_BY_PATH: the canonical path; DLP_BY_NAME: the
                                 name, its leading '/' left out */
    size_t targetlen;
    pid_t holder_pid;         /* process of the last distributed acquisition */
    union {                   /* the kind's object: DLP_OBJ(e, T) */
        max_align_t align;
        unsigned char bytes[DLP_OBJ_MAX];
    } obj;
};

/* The address table: the entries of DLP_BY_SYMBOL kinds by address,
 * read-only after the constructor.  Addresses outside [dlp_lo, dlp_lo + dlp_span) are not
 * mapped; that one comparison is the whole cost for most calls. */
extern uintptr_t dlp_lo, dlp_span;
dlp_entry_t *dlp_lookup_slow(const void *addr);

static inline dlp_entry_t *dlp_lookup(const void *addr)
{
    if (DLP_LIKELY((uintptr_t)addr - dlp_lo >= dlp_span))
        return NULL;
    return dlp_lookup_slow(addr);
}

/* The kind of the one entry every lookup gives in a dormant program (a
 * program with none of the map's symbols): no kind of the table. */
extern const dlp_kind_t dlp_kind_dormant;

/* A lock call reached a wrapper in a program that has none of the map's
 * symbols (dlp_lookup gave the dlp_kind_dormant entry).  Unless the call is the
 * interposer's own (dlp_in, or `caller`, the wrapper's return address, is
 * in this library), the program stops here with the one-line reason (exit
 * status 1), before the lock is taken.  `what`: the kind's word ("mutex",
 * "rwlock", "barrier"), `call` what was called ("lock", "wait"). */
void dlp_dormant_check(const char *what, const char *call, const void *caller);

/* boot.c, before main: enters an entry of a DLP_BY_SYMBOL kind (e->addr
 * set) in the table; publishes [lo, hi] as the range every lookup checks first
 * (wrappers see either no table or all of it). */
void dlp_table_add(dlp_entry_t *e);
void dlp_table_publish(uintptr_t lo, uintptr_t hi);
/* boot.c, before main: this program has none of the map's symbols.  From
 * now on every lookup is the DLP_DORMANT entry, and dlp_dormant_check
 * stops the program with `why` and `hint` (both copied). */
void dlp_table_dormant(const char *why, const char *hint);

#pragma GCC visibility pop

#endif
