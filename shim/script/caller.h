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
 * and the operation scripts' ARGV[1] channel prefix, ARGV[2] token. */
typedef struct dl_caller {
    const char *const *keys;      /* the object's keys (keys.h) */
    const size_t *keylen;
    const char *chanprefix;
    size_t chanprefix_len;
    const char *token;            /* NUL-terminated */
} dl_caller_t;

/* One script call on one object (calls.h). */
typedef struct dl_call dl_call_t;

#endif
