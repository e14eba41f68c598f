/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * map.h - DISTLOCK_MAP parsed into entries (map.c): pure parsing, no
 * lookups; the kinds it knows are the ones it is given (kind.h).
 * Included through preload.h.
 */
#ifndef DLP_MAP_H
#define DLP_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "kind.h"

#pragma GCC visibility push(hidden)

#define DLP_MAX_ENTRIES 64

typedef struct dlp_spec {
    const char *name;         /* lock name (points into the parser's copy) */
    size_t namelen;
    const dlp_kind_t *kind;
    const char *target;       /* symbol, "exe+0x...", path, or /NAME (kind->target) */
    int is_offset;            /* target is exe+0xOFFSET */
    uintptr_t offset;
    const char *program;      /* @PROGRAM: only programs of this base name; NULL: all */
} dlp_spec_t;

/* Parses text into specs of the given kinds (NULL-terminated: dlp_kinds),
 * the strings pointing into buf, a modifiable copy of the map of bufsize
 * bytes.  0, or -1 with a one-line reason in err. */
int dlp_map_parse(const char *text, const dlp_kind_t *const *kinds, char *buf, size_t bufsize,
                  dlp_spec_t *specs, int max, int *n, char *err, size_t errlen);

#pragma GCC visibility pop

#endif
