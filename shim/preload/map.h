/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * map.h - DISTLOCK_MAP parsed into entries (map.c): pure parsing, no
 * lookups.  Included through preload.h.
 */
#ifndef DLP_MAP_H
#define DLP_MAP_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

enum { DLP_DORMANT = 0, DLP_MUTEX, DLP_RWLOCK, DLP_FLOCK, DLP_SEM, DLP_COND };

#define DLP_MAX_ENTRIES 64

typedef struct dlp_spec {
    const char *name;         /* lock name (points into the parser's copy) */
    size_t namelen;
    int kind;
    const char *target;       /* symbol, "exe+0x...", path, or /SEMNAME */
    int is_offset;            /* target is exe+0xOFFSET */
    uintptr_t offset;
    const char *program;      /* @PROGRAM: only programs of this base name; NULL: all */
} dlp_spec_t;

/* Parses text into specs (the strings point into buf, a modifiable copy of
 * the map of bufsize bytes).  0, or -1 with a one-line reason in err. */
int dlp_map_parse(const char *text, char *buf, size_t bufsize, dlp_spec_t *specs, int max,
                  int *n, char *err, size_t errlen);

#pragma GCC visibility pop

#endif
