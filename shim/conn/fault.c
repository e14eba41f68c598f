/* SPDX-License-Identifier: BSD-3-Clause */
/* fault.c - what a failed exchange means (see fault.h). */
#include <string.h>

#include "fault.h"
#include "trust.h"

/* The error replies that say something of the server rather than of the
 * command, by their first word. */
static const struct {
    const char *word;
    dl_fault_t fault;
} words[] = {
    { "NOSCRIPT", DL_FAULT_NOSCRIPT },
    { "READONLY", DL_FAULT_READONLY },
    { "MASTERDOWN", DL_FAULT_READONLY },
    { "LOADING", DL_FAULT_LOADING },
    { "MOVED", DL_FAULT_MOVED },
    { "ASK", DL_FAULT_ASK },
    { "TRYAGAIN", DL_FAULT_TRYAGAIN },
    { "CLUSTERDOWN", DL_FAULT_CLUSTERDOWN },
};

static dl_fault_t of_reply(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ERROR || !r->str)
        return DL_FAULT_NONE;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].word);
        if (strncmp(r->str, words[i].word, n) == 0 && (r->str[n] == ' ' || r->str[n] == 0))
            return words[i].fault;
    }
    return DL_FAULT_NONE;
}

/* hiredis's read or write timed out (SO_RCVTIMEO/SO_SNDTIMEO give
 * EAGAIN): the server is there but slow or stalled, and may yet run what
 * it was sent, unlike a connection that was reset or closed. */
static dl_fault_t of_link(const redisContext *ctx)
{
    if (ctx->err == REDIS_ERR_IO && strstr(ctx->errstr, "temporarily unavailable"))
        return DL_FAULT_TIMEOUT;
    if (ctx->err == REDIS_ERR_EOF || strstr(ctx->errstr, "reset") || strstr(ctx->errstr, "Broken pipe"))
        return DL_FAULT_CLOSED;
    return DL_FAULT_LINK;
}

dl_fault_t dl_fault_of(const redisContext *ctx, const redisReply *r)
{
    if (r)
        return of_reply(r);
    return ctx ? of_link(ctx) : DL_FAULT_LINK;
}

int dl_fault_ends_trust(dl_fault_t f)
{
    switch (f) {
    case DL_FAULT_NONE:
    case DL_FAULT_ASK:        /* the slot's keys are where they were */
    case DL_FAULT_TRYAGAIN:
        return 0;
    default:
        return 1;
    }
}

int dl_fault_not_master(dl_fault_t f)
{
    return f == DL_FAULT_READONLY || f == DL_FAULT_LOADING;
}

int dl_fault_note(dl_fault_t f, const char *why)
{
    if (!dl_fault_ends_trust(f))
        return 0;
    dl_trust_end(why);
    return 1;
}
