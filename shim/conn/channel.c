/* SPDX-License-Identifier: BSD-3-Clause */
/* channel.c - the channels Redis pushes on: classic, or one per slot and
 * process (channel.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "cluster.h"

/* tag_of[s]: the smallest n whose decimal form hashes to slot s (every
 * slot has one below 110,000).  Made once, at the first use by slot. */
static uint32_t tag_of[DL_SLOTS];
static pthread_once_t tags_once = PTHREAD_ONCE_INIT;

static void tags_make(void)
{
    static unsigned char seen[DL_SLOTS];
    unsigned left = DL_SLOTS;
    char d[16];
    for (uint32_t n = 0; left; n++) {
        size_t len = (size_t)snprintf(d, sizeof d, "%u", n);
        unsigned s = dl_cluster_slot(d, len);
        if (!seen[s]) {
            seen[s] = 1;
            tag_of[s] = n;
            left--;
        }
    }
}

size_t dl_slot_tag(unsigned slot, char *tag)
{
    pthread_once(&tags_once, tags_make);
    return (size_t)snprintf(tag, DL_SLOT_TAG_MAX, "%u", tag_of[slot & (DL_SLOTS - 1)]);
}

static size_t prefix_of_slot(const char *prefix, unsigned slot, char *buf, size_t size)
{
    char tag[DL_SLOT_TAG_MAX];
    dl_slot_tag(slot, tag);
    int n = snprintf(buf, size, "%sn:{%s}:", prefix, tag);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

size_t dl_chan_prefix(const char *prefix, int by_slot, const char *key, size_t keylen,
                      char *buf, size_t size)
{
    if (by_slot)
        return prefix_of_slot(prefix, dl_cluster_slot(key, keylen), buf, size);
    int n = snprintf(buf, size, "%sn:", prefix);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

struct dl_chans {
    int by_slot;
    char prefix[260];         /* the configuration's, e.g. "distlock:" */
    char token[40];
    char classic[270];        /* <prefix>n: */
    size_t classic_len;
    char **slot;              /* by slot: each slot's prefix, made at its
                                 first use (written once, atomically) */
};

dl_chans_t *dl_chans_new(const char *prefix, const char *token, int by_slot)
{
    dl_chans_t *ch = calloc(1, sizeof *ch);
    if (!ch)
        return NULL;
    ch->by_slot = by_slot;
    snprintf(ch->prefix, sizeof ch->prefix, "%s", prefix);
    snprintf(ch->token, sizeof ch->token, "%s", token);
    ch->classic_len = dl_chan_prefix(prefix, 0, "", 0, ch->classic, sizeof ch->classic);
    if (by_slot && !(ch->slot = calloc(DL_SLOTS, sizeof *ch->slot))) {
        free(ch);
        return NULL;
    }
    return ch;
}

int dl_chans_by_slot(const dl_chans_t *ch)
{
    return ch->by_slot;
}

const char *dl_chans_prefix(dl_chans_t *ch, const char *key, size_t keylen, size_t *len)
{
    if (!ch->by_slot) {
        *len = ch->classic_len;
        return ch->classic;
    }
    unsigned s = dl_cluster_slot(key, keylen);
    char *pre = __atomic_load_n(&ch->slot[s], __ATOMIC_ACQUIRE);
    if (!pre) {
        char buf[300];
        size_t n = prefix_of_slot(ch->prefix, s, buf, sizeof buf);
        char *mine = malloc(n + 1);
        if (!mine)
            return NULL;
        memcpy(mine, buf, n + 1);
        char *none = NULL;
        if (__atomic_compare_exchange_n(&ch->slot[s], &none, mine, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            pre = mine;
        else {                    /* another thread made it first */
            free(mine);
            pre = none;
        }
    }
    *len = strlen(pre);
    return pre;
}

size_t dl_chans_mine(const dl_chans_t *ch, int slot, char *buf, size_t size)
{
    char pre[300];
    if (ch->by_slot && slot >= 0)
        prefix_of_slot(ch->prefix, (unsigned)slot, pre, sizeof pre);
    else
        snprintf(pre, sizeof pre, "%s", ch->classic);
    int k = snprintf(buf, size, "%s%s", pre, ch->token);
    return k < 0 ? 0 : (size_t)k < size ? (size_t)k : size - 1;
}

int dl_chans_slot_of(const dl_chans_t *ch, const char *chan, size_t len)
{
    size_t pl = ch->classic_len, tl = strlen(ch->token);
    /* <prefix>n:{TAG}:<token> */
    if (!ch->by_slot || len < pl + 3 + tl || memcmp(chan, ch->classic, pl) != 0 ||
        chan[pl] != '{' || memcmp(chan + len - tl, ch->token, tl) != 0 ||
        chan[len - tl - 1] != ':' || chan[len - tl - 2] != '}')
        return -1;
    unsigned s = dl_cluster_slot(chan, len);
    char tag[DL_SLOT_TAG_MAX];
    size_t n = dl_slot_tag(s, tag);
    if (len - tl - 2 - (pl + 1) != n || memcmp(chan + pl + 1, tag, n) != 0)
        return -1;
    return (int)s;
}
