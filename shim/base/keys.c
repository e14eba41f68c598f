/* SPDX-License-Identifier: BSD-3-Clause */
/* keys.c - the Redis keys of a lock name (keys.h). */
#include <string.h>

#include "keys.h"

const char *const dl_key_suffix[DL_KEYS_N] = { "", ":r", ":ri", ":q", ":w", ":m" };

static int escaped(const char *name, size_t len)
{
    return len && (name[0] == '}' || name[0] == DL_TAG_ESC);
}

size_t dl_keys_size(const char *prefix, size_t len)
{
    size_t base = strlen(prefix) + len + 3, total = 0;    /* '{', '}', an escape */
    for (int k = 0; k < DL_KEYS_N; k++)
        total += base + strlen(dl_key_suffix[k]) + 1;
    return total;
}

void dl_keys_write(char *buf, const char *prefix, const char *name, size_t len,
                   const char **keys, size_t *keylen)
{
    size_t plen = strlen(prefix);
    int esc = escaped(name, len);
    char *p = buf;
    for (int k = 0; k < DL_KEYS_N; k++) {
        size_t slen = strlen(dl_key_suffix[k]), at = 0;
        keys[k] = p;
        memcpy(p, prefix, plen);
        at = plen;
        p[at++] = '{';
        if (esc)
            p[at++] = DL_TAG_ESC;
        memcpy(p + at, name, len);
        at += len;
        p[at++] = '}';
        memcpy(p + at, dl_key_suffix[k], slen + 1);
        keylen[k] = at + slen;
        p += keylen[k] + 1;
    }
}

int dl_key_name(const char *prefix, size_t plen, const char *key, size_t klen,
                const char **name, size_t *nlen, int *which)
{
    if (klen < plen + 2 || memcmp(key, prefix, plen) != 0 || key[plen] != '{')
        return -1;
    /* The suffix is fixed and the name may hold '}': read from both ends. */
    const char *rest = key + plen + 1;
    size_t rlen = klen - plen - 1;
    for (int k = 0; k < DL_KEYS_N; k++) {
        size_t slen = strlen(dl_key_suffix[k]);
        if (rlen < slen + 1 || rest[rlen - slen - 1] != '}' ||
            memcmp(rest + rlen - slen, dl_key_suffix[k], slen) != 0)
            continue;
        const char *tag = rest;
        size_t tlen = rlen - slen - 1;
        if (tlen && tag[0] == DL_TAG_ESC) {
            tag++, tlen--;
            if (!escaped(tag, tlen))
                return -1;        /* not a tag we write */
        } else if (escaped(tag, tlen)) {
            return -1;
        }
        if (!tlen)
            return -1;
        *name = tag;
        *nlen = tlen;
        *which = k;
        return 0;
    }
    return -1;
}
