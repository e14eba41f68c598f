/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * channel.h - the channels Redis pushes a process's grants and wake-ups
 * on (channel.c; docs/PROTOCOL.md, "Pushes").
 *
 * A script gets a channel prefix as its ARGV[1] and pushes to a process
 * on ARGV[1] .. its token:
 *   classic   <prefix>n:                 PUBLISH; the process SUBSCRIBEs
 *                                        <prefix>n:<token> once (every
 *                                        topology but redis-cluster://,
 *                                        where Redis would broadcast each
 *                                        message to every node)
 *   by slot   <prefix>n:{<tag>}:         SPUBLISH (Redis 7 sharded
 *                                        pub/sub: the message stays in the
 *                                        shard of the slot); the process
 *                                        SSUBSCRIBEs <prefix>n:{<tag>}:<token>
 *                                        on the node serving each slot it
 *                                        uses (shardsub.c)
 * <tag> is the slot's tag: the decimal form of the smallest whole number
 * whose decimal form hashes to that slot, so "{<tag>}" puts the channel
 * in the slot of the script's keys and every process names it alike.  A
 * script tells the two forms apart by the end of ARGV[1] ("}:" against
 * "n:"; the prefix holds no braces, config.c), and a node without
 * SPUBLISH (before Redis 7) publishes the push on the classic channel
 * instead (lua/common.lua, push).
 *
 * A dl_chans_t is a process's: made once, then read by any thread (each
 * slot's prefix written once, atomically, at its first use).
 */
#ifndef DL_CHANNEL_H
#define DL_CHANNEL_H

#include <stddef.h>

#define DL_SLOTS 16384
#define DL_SLOT_TAG_MAX 8         /* a slot's tag and its NUL: 6 digits at most */

/* Writes slot's tag (NUL-terminated) into tag (DL_SLOT_TAG_MAX bytes);
 * returns its length. */
size_t dl_slot_tag(unsigned slot, char *tag);

/* The channel prefix of a call on an object whose main key is key, into
 * buf: "<prefix>n:" (classic) or "<prefix>n:{<tag of key's slot>}:"
 * (by_slot).  Returns its length (buf NUL-terminated, cut to size).  For
 * the distlock command, which makes its calls without a dl_chans_t. */
size_t dl_chan_prefix(const char *prefix, int by_slot, const char *key, size_t keylen,
                      char *buf, size_t size);

typedef struct dl_chans dl_chans_t;

/* A process's channels under prefix, for its token; by_slot on a
 * topology of slots (dl_caps_t.slots).  NULL: ENOMEM. */
dl_chans_t *dl_chans_new(const char *prefix, const char *token, int by_slot);
int dl_chans_by_slot(const dl_chans_t *ch);
/* The channel prefix (ARGV[1]) of a call on the object whose main key is
 * key, and its length in *len; valid as long as ch.  NULL only on ENOMEM
 * (by slot, at a slot's first use). */
const char *dl_chans_prefix(dl_chans_t *ch, const char *key, size_t keylen, size_t *len);
/* This process's channel for slot (by slot; slot < 0, or classic: its
 * one classic channel, <prefix>n:<token>), into buf; its length. */
size_t dl_chans_mine(const dl_chans_t *ch, int slot, char *buf, size_t size);
/* The slot of this process's channel chan (len bytes): -1 when chan is
 * none of its channels by slot. */
int dl_chans_slot_of(const dl_chans_t *ch, const char *chan, size_t len);

#endif
