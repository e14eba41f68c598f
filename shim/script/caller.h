/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * caller.h - who calls a script, on which object (dl_caller_t), and the
 * call itself (dl_call_t): what each script's own header (call_<name>.h)
 * needs to declare its typed call.
 *
 * A call holds its script's typed arguments and reply in storage of a
 * fixed size rather than in a union of every script's types, so that a
 * file sees only the calls it uses: it includes their call_<name>.h, and
 * reads a call as DL_ARGS(c, name) and DL_REPLY(c, name), with the names
 * that header gives (dl_call_args_<name>, dl_call_reply_<name>).  A new
 * script, or a change of one, recompiles only the files that use it; the
 * generated dl_scripts.c checks that every script's types fit.
 */
#ifndef DL_CALLER_H
#define DL_CALLER_H

#include <stddef.h>
#include <stdint.h>

#include "cmd.h"
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

#define DL_MAX_ARGS 12            /* ARGV of a script, at most (acquire: 10) */
#define DL_CALL_NUMS 6            /* numbers a call formats for its ARGV */
/* The largest arguments and reply of any script (bytes; dl_scripts.c
 * checks them: raise one when a script's types outgrow it). */
#define DL_CALL_ARGS_SIZE 80
#define DL_CALL_REPLY_SIZE 72

/* One script call on one object (calls.h says who writes what). */
typedef struct dl_call {
    int script;                   /* DL_SCRIPT_* (dl_script_list.h) */
    dl_caller_t who;
    uint64_t deadline;            /* monotonic ms, 0 none: see dl_cmd_t */
    int once;                     /* never sent twice: see dl_cmd_t (0: may be) */
    /* The script's typed arguments, and its reply once the run gave the
     * call one (cmd.err 0): DL_ARGS, DL_REPLY. */
    union {
        uint64_t align_;
        void *ptr_;
        unsigned char b[DL_CALL_ARGS_SIZE];
    } arg;
    union {
        uint64_t align_;
        void *ptr_;
        unsigned char b[DL_CALL_REPLY_SIZE];
    } reply;
    /* The wire form, script.c's: argv[0..1] EVALSHA sha | EVAL text, then
     * what the entry's wire writes. */
    int argc;
    const char *argv[3 + DL_KEYS_MAX + DL_MAX_ARGS];
    size_t argvlen[3 + DL_KEYS_MAX + DL_MAX_ARGS];
    char num[DL_CALL_NUMS][24];
    dl_cmd_t cmd;                 /* err, errmsg, sent: how the run went */
} dl_call_t;

/* Call c's arguments and reply as script `name`'s types (lvalues), as its
 * call_<name>.h names them: DL_ARGS(c, acquire).mode,
 * DL_REPLY(c, acquire).got.  c is a pointer to the call. */
#define DL_ARGS(c, name) (*(dl_call_args_##name *)(void *)(c)->arg.b)
#define DL_REPLY(c, name) (*(dl_call_reply_##name *)(void *)(c)->reply.b)

#endif
