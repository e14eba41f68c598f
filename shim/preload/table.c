/* SPDX-License-Identifier: BSD-3-Clause */
/* table.c - the read-only address table of the entries of DLP_BY_SYMBOL
 * kinds, and the dormant state of a program without the map's symbols
 * (table.h).  Written by boot.c before main only. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "preload.h"

#define DLP_SLOTS 256                   /* > 2 * DLP_MAX_ENTRIES: probes end */

static dlp_entry_t *slots[DLP_SLOTS];
uintptr_t dlp_lo, dlp_span;

static size_t slot_of(uintptr_t a)
{
    return (size_t)(((a >> 3) * 0x9E3779B97F4A7C15ull) >> 56) & (DLP_SLOTS - 1);
}

/* A program that lacks the map's symbols (a launcher, or a misspelt
 * symbol) is dormant: its address range is everything, and every lookup
 * lands here and gets this entry, which no wrapper maps; the lock wrappers
 * stop the program with `dormant_why` (dlp_dormant_check) instead. */
static int dormant;
const dlp_kind_t dlp_kind_dormant = { .word = "" };
static dlp_entry_t dormant_entry = { .kind = &dlp_kind_dormant, .name = "" };
static char dormant_why[768];
static char dormant_hint[256];
static uintptr_t self_lo, self_hi;

dlp_entry_t *dlp_lookup_slow(const void *addr)
{
    if (DLP_UNLIKELY(dormant))
        return &dormant_entry;
    uintptr_t a = (uintptr_t)addr;
    for (size_t i = slot_of(a);; i = (i + 1) & (DLP_SLOTS - 1)) {
        dlp_entry_t *e = slots[i];
        if (!e || (uintptr_t)e->addr == a)
            return e;
    }
}

void dlp_table_add(dlp_entry_t *e)
{
    size_t i = slot_of((uintptr_t)e->addr);
    while (slots[i])
        i = (i + 1) & (DLP_SLOTS - 1);
    slots[i] = e;
}

void dlp_table_publish(uintptr_t lo, uintptr_t hi)
{
    __atomic_store_n(&dlp_lo, lo, __ATOMIC_RELAXED);
    __atomic_store_n(&dlp_span, hi - lo + 1, __ATOMIC_RELEASE);
}

void dlp_table_dormant(const char *why, const char *hint)
{
    snprintf(dormant_why, sizeof dormant_why, "%s", why);
    snprintf(dormant_hint, sizeof dormant_hint, "%s", hint);
    dlp_self_range(&self_lo, &self_hi);
    /* Published last: every lookup from now on is the dormant entry. */
    __atomic_store_n(&dormant, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&dlp_lo, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&dlp_span, UINTPTR_MAX, __ATOMIC_RELEASE);
}

void dlp_dormant_check(const char *what, const char *call, const void *caller)
{
    static int stopping;
    if ((uintptr_t)caller >= self_lo && (uintptr_t)caller < self_hi)
        return;                        /* the library's own, at exit or fork */
    /* One line even if several threads lock at once; the others wait for
     * the exit rather than run on unprotected. */
    if (__atomic_exchange_n(&stopping, 1, __ATOMIC_ACQ_REL))
        for (;;)
            pause();
    dlp_stop("%s; stopped at the program's first pthread %s %s (an entry for another program: %s)",
             dormant_why, what, call, dormant_hint);
}
