/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * caller.h - who calls a script, on which object (dl_caller_t), and the
 * name of a call (dl_call_t, calls.h): what each script's own header
 * (call_<name>.h) needs to declare its typed call.
 */
#ifndef DL_CALLER_H
#define DL_CALLER_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"

#define DL_NKEYS DL_KEYS_N        /* the keys of a lock (lua/common.lua) */

/* Who calls, on which object: its keys (a lock's scripts take its six),
 * and the operation scripts' ARGV[1] channel prefix, ARGV[2] token.
 *
 * The keys are given one of two ways.  A caller with every key at hand
 * (the tools, the tests) gives them in keys and keylen.  The library's own
 * objects keep only their main key (a lock held by a process holding a
 * million of them would otherwise carry its six keys, some 250 bytes):
 * keys is NULL, and main (mainlen bytes) and kind (keys.h) give the
 * others, each the main key and its kind's suffix, which a call writes
 * into its own buffer (dl_call_t's keybuf) when it is wired. */
typedef struct dl_caller {
    const char *const *keys;      /* the object's keys (keys.h), or NULL */
    const size_t *keylen;
    const char *chanprefix;
    size_t chanprefix_len;
    const char *token;            /* NUL-terminated */
    const char *main;             /* keys NULL: the object's main key, */
    size_t mainlen;
    int kind;                     /* and its kind (DL_KIND_*) */
} dl_caller_t;

/* The main key of the caller's object (keys[0] of its kind). */
static inline const char *dl_caller_main(const dl_caller_t *who, size_t *len)
{
    if (who->keys) {
        *len = who->keylen[0];
        return who->keys[0];
    }
    *len = who->mainlen;
    return who->main;
}

/* One script call on one object (calls.h). */
typedef struct dl_call dl_call_t;

#endif
