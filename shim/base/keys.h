/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keys.h - the Redis keys of a named object of each kind (a lock, a
 * condition, a semaphore, a barrier, a once), shared by the library and the distlock command
 * (docs/PROTOCOL.md, "Keys of lock NAME").
 *
 * Every key of an object is <prefix>{TAG}<suffix>, so that all keys of one
 * object share one hash tag (one cluster slot), and TAG is made of the
 * object's kind and name so that objects of different kinds never share a
 * key: a semaphore "x" is not the lock "x".
 *
 *   a lock NAME            TAG is NAME itself, or DL_TAG_ESC NAME when
 *                          NAME starts with '}' or with DL_TAG_ESC;
 *   an object of another   TAG is DL_TAG_ESC LETTER NAME, LETTER the
 *   kind                   kind's own (never '}' or DL_TAG_ESC).
 *
 * Redis takes the tag to be what lies between the first '{' and the first
 * '}' after it, and hashes the whole key when that is empty: a lock named
 * "}x" would give the empty tag `{}`, its keys would spread over slots,
 * and every script call on it would fail with CROSSSLOT; the escape keeps
 * the tag non-empty.  A tag that starts with DL_TAG_ESC is read by its
 * second byte: '}' or DL_TAG_ESC, an escaped lock name; a kind's letter,
 * an object of that kind.  So the encoding is one-to-one, and a lock's
 * keys are the same as before there were other kinds.  The prefix may not
 * hold '{' or '}' (config.c).
 *
 * keys.c keeps no state: the caller owns every buffer.
 */
#ifndef DL_KEYS_H
#define DL_KEYS_H

#include <stddef.h>

#define DL_TAG_ESC '\x01'

/* The kinds of named object. */
enum { DL_KIND_LOCK, DL_KIND_COND, DL_KIND_SEM, DL_KIND_BARRIER, DL_KIND_ONCE, DL_KINDS };

#define DL_KEYS_MAX 8         /* keys of an object, at most (any kind) */
#define DL_KEYS_N 6           /* the keys of a lock */

/* One kind's keys. */
typedef struct dl_keyset {
    const char *what;         /* the kind, in messages: "lock" */
    char letter;              /* after DL_TAG_ESC in its tag; 0 for the lock */
    int n;                    /* its keys, at most DL_KEYS_MAX */
    const char *const *suffix; /* in the scripts' KEYS order; [0] is "", the
                                 main key (pushes name an object by it) */
} dl_keyset_t;

/* The keys of kind (DL_KIND_*), NULL for no such kind. */
const dl_keyset_t *dl_kind_keys(int kind);

/* Bytes dl_kind_keys_write needs for an object of kind named name (len
 * bytes) under prefix: its keys, each NUL-terminated. */
size_t dl_kind_keys_size(int kind, const char *prefix, size_t len);
/* Writes the keys of that object into buf (dl_kind_keys_size bytes) and
 * points keys[k] (keylen[k]) at each. */
void dl_kind_keys_write(int kind, char *buf, const char *prefix, const char *name, size_t len,
                        const char **keys, size_t *keylen);
/* The object one of its keys belongs to: *kind, *name (pointing into key),
 * *nlen, and *which (the index of its suffix).  -1 if key is no key of an
 * object under prefix (plen bytes). */
int dl_key_parse(const char *prefix, size_t plen, const char *key, size_t klen, int *kind,
                 const char **name, size_t *nlen, int *which);

/* --- a lock's (DL_KIND_LOCK), as the tools use them --- */

/* Suffixes of the six keys, in the scripts' KEYS order (lua/common.lua). */
extern const char *const dl_key_suffix[DL_KEYS_N];

/* The suffix of a key of the lock that no script ever writes, so it never
 * exists: redis-cluster:// declares it beside the six (shim/conn/cluster.c),
 * and a node migrating the lock's slot then never runs the script itself
 * (it replies TRYAGAIN or ASK), whatever keys it still has.  No lock's key
 * ends so (they end with '}' and one of the six suffixes). */
#define DL_KEY_GUARD ":guard"

/* dl_kind_keys_size and _write for a lock. */
size_t dl_keys_size(const char *prefix, size_t len);
void dl_keys_write(char *buf, const char *prefix, const char *name, size_t len,
                   const char **keys, size_t *keylen);
/* dl_key_parse for a lock's keys: -1 for any other key, another kind's
 * included. */
int dl_key_name(const char *prefix, size_t plen, const char *key, size_t klen,
                const char **name, size_t *nlen, int *which);

#endif
