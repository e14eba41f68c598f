/* SPDX-License-Identifier: BSD-3-Clause */
/* call_renew_many.h - lua/renew_many.lua: renew.lua for many holds of the
 * caller in one call, each hold's outcome said (call_renew_many.c;
 * shim/core/watchdog.c uses it). */
#ifndef DL_CALL_RENEW_MANY_H
#define DL_CALL_RENEW_MANY_H

#include "caller.h"
#include "call_renew.h"

struct redisReply;

/* One hold of a batch, as the caller gives it. */
typedef struct dl_renew_item {
    const char *key;              /* its object's main key (keys.h: keys[0]) */
    size_t keylen;
    char mode;                    /* 'w' or 'r' */
    unsigned long lease_ms;       /* 0: only checked (a fixed lease) */
    uint64_t fence;               /* names the hold (not sent to redlock://) */
} dl_renew_item_t;

typedef struct dl_renew_many_args {
    int n;                        /* holds, 1 or more (all in one cluster slot);
                                     the call's caller (dl_caller_t) is the
                                     first hold's object */
    const char *list;             /* the holds as the script reads them: written
                                     by dl_renew_many_list, the caller's */
    size_t listlen;
    int redlock;                  /* another's writer mark counts as a waiter:
                                     set on each server's copy (redlock), whose
                                     list names no fence (dl_renew_many_list) */
    dl_renew_reply_t *out;        /* the caller's n results, renew.lua's reply
                                     for each hold (held -1: not known, as an
                                     unanswered renew); NULL on a redlock
                                     server's copy, which keeps its reply for
                                     the merge instead */
} dl_renew_many_args_t;

typedef struct dl_renew_many_reply {
    int got;                      /* 1 out[] says each hold's, 0 not here
                                     (redis-cluster:// under ASK: renew them
                                     one by one), -1 unexpected */
    struct redisReply *kept;      /* a redlock server's copy: its reply (the
                                     merge reads it; dl_call_free_reply frees it) */
} dl_renew_many_reply_t;

/* Its types as DL_ARGS and DL_REPLY name them (caller.h). */
typedef dl_renew_many_args_t dl_call_args_renew_many;
typedef dl_renew_many_reply_t dl_call_reply_renew_many;

void dl_call_renew_many(dl_call_t *c, const dl_caller_t *who, const dl_renew_many_args_t *a);

/* The bytes the list of items[0..n) (ARGV[4] of the script) needs at
 * most; the list written into buf (that many bytes), and its length.
 * nofence: for redlock://, whose servers each number a hold themselves
 * (renew.lua's fence ''). */
size_t dl_renew_many_list_size(const dl_renew_item_t *items, int n);
size_t dl_renew_many_list(const dl_renew_item_t *items, int n, int nofence, char *buf);

#endif
