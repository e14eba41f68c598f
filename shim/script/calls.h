/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calls.h - one typed call per script of lua/: its arguments and its reply
 * as C structs, and what C knows of the script, in one entry.
 *
 * A script is lua/<name>.lua and its entry, shim/script/call_<name>.h and
 * call_<name>.c: the header gives its typed arguments and reply (and names
 * them for DL_ARGS and DL_REPLY, caller.h), the source its builder and its
 * dl_script_entry_t, which writes its KEYS and ARGV (wire), reads its reply
 * (parse) and merges the replies of redlock's servers (quorum).  The build
 * finds the scripts by their Lua files (cmake/embed_lua.cmake), embeds
 * their text with its SHA1 in dl_scripts[] (script.h), and lists them in
 * the generated dl_script_list.h, with the DL_SCRIPT_* ids (included by
 * the entries and script.c, not by the users of the calls).  So adding a
 * script is its Lua file and its entry; no other file names it, and a
 * file above script/ includes the call_<name>.h of the calls it makes.
 * A script whose Lua header has the line `--! sent with its text` is sent
 * with its text every time (EVAL), on its own; every other one is
 * prefixed with lua/common.lua and called by its SHA1 (EVALSHA, EVAL on
 * NOSCRIPT).
 *
 * Every topology runs the same dl_call_t: script.c sends it and reads its
 * reply through the entry (dl_call_wire, dl_call_parse); quorum.c merges
 * redlock's per-server replies into the typed reply one server would give.
 *
 * Who owns what: the caller fills a call with a builder (dl_call_acquire,
 * ...) and owns it; script.c writes its wire form (argv, numbers, cmd) and
 * its reply; nothing else writes a call.  The caller's strings (keys,
 * token, channel prefix, holder info) must outlive the run.
 */
#ifndef DL_CALLS_H
#define DL_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "caller.h"
#include "conn.h"

/* A call's wire form being written (the entries' wire). */
typedef struct dl_wire {
    dl_call_t *c;
    int nums;                     /* of c->num taken */
} dl_wire_t;

struct dl_quorum_op;              /* quorum.h */

/* One script's entry: what C knows of lua/<name>.lua besides its text. */
typedef struct dl_script_entry {
    /* Writes the call's KEYS (their number first) and ARGV, in the order
     * the script's header gives, from c->who and c->arg. */
    void (*wire)(dl_wire_t *w, const dl_call_t *c);
    /* Reads the script's reply r (not an error reply) into c->reply,
     * values as the script gives them; a reply of another shape reads as
     * "unexpected" (-1).  1: it keeps r (freed by free_reply), 0: done
     * with it. */
    int (*parse)(dl_call_t *c, struct redisReply *r);
    /* Frees what a kept reply owns; NULL: none is kept. */
    void (*free_reply)(dl_call_t *c);
    /* redlock:// (quorum.c): how the servers' replies make one.  NULL: the
     * script is never run on several servers as one call. */
    const struct dl_quorum_op *quorum;
} dl_script_entry_t;

/* c becomes a call of script by who, no deadline, sent again if need be:
 * the builders' start. */
void dl_call_init(dl_call_t *c, int script, const dl_caller_t *who);
/* Frees what a reply owns (the status view); a no-op for the others. */
void dl_call_free_reply(dl_call_t *c);

/* script.c's: writes c->argv[2..] (the number of keys, the keys, ARGV in
 * the script's order) and c->argc. */
void dl_call_wire(dl_call_t *c);
/* script.c's: reads the script's reply r (not an error reply) into
 * c->reply; 1 if the call keeps r (dl_call_free_reply frees it). */
int dl_call_parse(dl_call_t *c, struct redisReply *r);

/* --- for the entries: writing ARGV, reading replies --- */

/* Appends one string (len bytes) to the call's argv; it must live as long
 * as the call's run (the call's own arguments, the caller's strings). */
void dl_wire_put(dl_wire_t *w, const char *s, size_t len);
void dl_wire_str(dl_wire_t *w, const char *s);
/* A number, formatted in the call's own buffers (DL_CALL_NUMS at most). */
void dl_wire_num(dl_wire_t *w, unsigned long long v);
/* KEYS: their number, then keys[at[0]], keys[at[1]] ... (n of them) of
 * the caller's object. */
void dl_wire_keys(dl_wire_t *w, const int *at, int n);
/* What every operation script of a lock starts with: the lock's six keys,
 * ARGV[1] the channel prefix, and (token) ARGV[2] the caller's token. */
void dl_wire_lock(dl_wire_t *w, int token);

/* Element i of an array reply if it is an integer, else -1. */
long long dl_reply_elem(const struct redisReply *r, size_t i);
/* An integer reply, else -1. */
long long dl_reply_int(const struct redisReply *r);
/* Element i of array r (r may be NULL) as a string ("" when it is none: a
 * missing or non-string element; its length in *len if len), or as an
 * array (NULL when none).  Also read by the distlock tool's SCAN. */
const char *dl_reply_str(const struct redisReply *r, size_t i, size_t *len);
const struct redisReply *dl_reply_arr(const struct redisReply *r, size_t i);

#endif
