/* SPDX-License-Identifier: BSD-3-Clause */
/* keys.c - the Redis keys of a named object of each kind (keys.h). */
#include <string.h>

#include "keys.h"

const char *const dl_key_suffix[DL_KEYS_N] = { "", ":r", ":ri", ":q", ":w", ":m" };

/* A condition's (lua/cond_*.lua): its registrations in arrival order
 * (zset "token:regid" -> Redis time, us), and their deadlines (zset the
 * same -> Redis time, ms), which their waiters refresh. */
static const char *const cond_suffix[] = { "", ":d" };
/* A semaphore's, in lua/sem_common.lua's KEYS order: the semaphore, its
 * queue, its registrations' deadlines and their ids, its holders' lease
 * deadlines and their records (docs/PROTOCOL.md). */
static const char *const sem_suffix[] = { "", ":q", ":d", ":w", ":l", ":h" };
/* A barrier's, in lua/barrier_common.lua's KEYS order: the barrier (its
 * count, generation, arrivals so far, each process's last operation), and
 * the arrivals of the generation under way (docs/PROTOCOL.md). */
static const char *const barrier_suffix[] = { "", ":a" };
/* A once's: the six of a lock (its "running" state is a lock's hold,
 * taken and renewed by the lock's scripts, lua/common.lua's KEYS order),
 * then its completion, which never expires (lua/once_*.lua). */
static const char *const once_suffix[] = { "", ":r", ":ri", ":q", ":w", ":m", ":d" };

static const dl_keyset_t keysets[DL_KINDS] = {
    [DL_KIND_LOCK] = { "lock", 0, DL_KEYS_N, dl_key_suffix },
    [DL_KIND_COND] = { "condition", 'c', 2, cond_suffix },
    [DL_KIND_SEM] = { "semaphore", 's', 6, sem_suffix },
    [DL_KIND_BARRIER] = { "barrier", 'b', 2, barrier_suffix },
    [DL_KIND_ONCE] = { "once", 'o', 7, once_suffix },
};

const dl_keyset_t *dl_kind_keys(int kind)
{
    return kind >= 0 && kind < DL_KINDS ? &keysets[kind] : NULL;
}

/* Does a lock name need DL_TAG_ESC in front of it? */
static int escaped(const char *name, size_t len)
{
    return len && (name[0] == '}' || name[0] == DL_TAG_ESC);
}

/* The bytes the tag puts before the name: an escape and a kind's letter. */
static size_t tag_head(int kind, const char *name, size_t len, char head[2])
{
    if (kind != DL_KIND_LOCK) {
        head[0] = DL_TAG_ESC;
        head[1] = keysets[kind].letter;
        return 2;
    }
    head[0] = DL_TAG_ESC;
    return escaped(name, len) ? 1 : 0;
}

size_t dl_kind_keys_size(int kind, const char *prefix, size_t len)
{
    const dl_keyset_t *ks = dl_kind_keys(kind);
    size_t base = strlen(prefix) + len + 4, total = 0;    /* '{', '}', the tag's head */
    for (int k = 0; ks && k < ks->n; k++)
        total += base + strlen(ks->suffix[k]) + 1;
    return total;
}

void dl_kind_keys_write(int kind, char *buf, const char *prefix, const char *name, size_t len,
                        const char **keys, size_t *keylen)
{
    const dl_keyset_t *ks = dl_kind_keys(kind);
    size_t plen = strlen(prefix);
    char head[2];
    size_t hlen = tag_head(kind, name, len, head);
    char *p = buf;
    for (int k = 0; ks && k < ks->n; k++) {
        size_t slen = strlen(ks->suffix[k]), at = 0;
        keys[k] = p;
        memcpy(p, prefix, plen);
        at = plen;
        p[at++] = '{';
        memcpy(p + at, head, hlen);
        at += hlen;
        memcpy(p + at, name, len);
        at += len;
        p[at++] = '}';
        memcpy(p + at, ks->suffix[k], slen + 1);
        keylen[k] = at + slen;
        p += keylen[k] + 1;
    }
}

/* The kind and name of a tag (tlen bytes), as dl_kind_keys_write makes
 * them; -1 for a tag it never makes. */
static int read_tag(const char *tag, size_t tlen, int *kind, const char **name, size_t *nlen)
{
    if (tlen && tag[0] == DL_TAG_ESC) {
        tag++, tlen--;
        if (escaped(tag, tlen)) {
            *kind = DL_KIND_LOCK;
        } else {
            int k = DL_KIND_LOCK + 1;
            while (k < DL_KINDS && !(tlen && tag[0] == keysets[k].letter))
                k++;
            if (k == DL_KINDS)
                return -1;
            *kind = k;
            tag++, tlen--;
        }
    } else if (escaped(tag, tlen)) {
        return -1;
    } else {
        *kind = DL_KIND_LOCK;
    }
    if (!tlen)
        return -1;
    *name = tag;
    *nlen = tlen;
    return 0;
}

int dl_key_parse(const char *prefix, size_t plen, const char *key, size_t klen, int *kind,
                 const char **name, size_t *nlen, int *which)
{
    if (klen < plen + 2 || memcmp(key, prefix, plen) != 0 || key[plen] != '{')
        return -1;
    /* The suffix is fixed and the name may hold '}': read from both ends.
     * No suffix of a kind ends as "}" + another of its suffixes does, so
     * one suffix at most fits; the tag then says the kind, whose suffix
     * it must be. */
    const char *rest = key + plen + 1;
    size_t rlen = klen - plen - 1;
    for (int kd = 0; kd < DL_KINDS; kd++) {
        const dl_keyset_t *ks = &keysets[kd];
        for (int k = 0; k < ks->n; k++) {
            size_t slen = strlen(ks->suffix[k]);
            if (rlen < slen + 1 || rest[rlen - slen - 1] != '}' ||
                memcmp(rest + rlen - slen, ks->suffix[k], slen) != 0)
                continue;
            if (read_tag(rest, rlen - slen - 1, kind, name, nlen) || *kind != kd)
                continue;
            *which = k;
            return 0;
        }
    }
    return -1;
}

size_t dl_keys_size(const char *prefix, size_t len)
{
    return dl_kind_keys_size(DL_KIND_LOCK, prefix, len);
}

void dl_keys_write(char *buf, const char *prefix, const char *name, size_t len,
                   const char **keys, size_t *keylen)
{
    dl_kind_keys_write(DL_KIND_LOCK, buf, prefix, name, len, keys, keylen);
}

int dl_key_name(const char *prefix, size_t plen, const char *key, size_t klen,
                const char **name, size_t *nlen, int *which)
{
    int kind;
    if (dl_key_parse(prefix, plen, key, klen, &kind, name, nlen, which) || kind != DL_KIND_LOCK)
        return -1;
    return 0;
}
