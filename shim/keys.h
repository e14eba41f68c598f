/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keys.h - the Redis keys of a lock name, shared by the library and the
 * distlock command (docs/PROTOCOL.md, "Keys of lock NAME").
 *
 * Every key of lock NAME is <prefix>{TAG}<suffix>, TAG NAME itself, so
 * that all keys of a lock share one hash tag (one cluster slot).  Redis
 * takes the tag to be what lies between the first '{' and the first '}'
 * after it, and hashes the whole key when that is empty: a name starting
 * with '}' would give the empty tag `{}`, its keys would spread over
 * slots, and every script call on it would fail with CROSSSLOT.  Such a
 * name, and a name starting with the escape byte itself (so that the
 * encoding stays one-to-one), get DL_TAG_ESC in front; every other name is
 * its own tag.  The prefix may not hold '{' or '}' (config.c).
 *
 * keys.c keeps no state: the caller owns every buffer.
 */
#ifndef DL_KEYS_H
#define DL_KEYS_H

#include <stddef.h>

#define DL_KEYS_N 6
#define DL_TAG_ESC '\x01'

/* Suffixes of the six keys, in the scripts' KEYS order (lua/common.lua). */
extern const char *const dl_key_suffix[DL_KEYS_N];

/* The suffix of a key of the lock that no script ever writes, so it never
 * exists: redis-cluster:// declares it beside the six (shim/cluster.c), and
 * a node migrating the lock's slot then never runs the script itself (it
 * replies TRYAGAIN or ASK), whatever keys it still has.  No lock's key
 * ends so (they end with '}' and one of the six suffixes). */
#define DL_KEY_GUARD ":guard"

/* Bytes dl_keys_write needs for name (len bytes) under prefix: the six
 * keys, each NUL-terminated. */
size_t dl_keys_size(const char *prefix, size_t len);
/* Writes the six keys of name into buf (dl_keys_size bytes) and points
 * keys[k] (keylen[k]) at each. */
void dl_keys_write(char *buf, const char *prefix, const char *name, size_t len,
                   const char **keys, size_t *keylen);
/* The lock name of one of its keys: *name (pointing into key), *nlen, and
 * *which (the index of its suffix).  -1 if key is not a lock key under
 * prefix (plen bytes). */
int dl_key_name(const char *prefix, size_t plen, const char *key, size_t klen,
                const char **name, size_t *nlen, int *which);

#endif
