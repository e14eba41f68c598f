/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * view.h - a read-only view of a named object as the status scripts give
 * it (lua/status.lua, sem_status.lua, cond_status.lua), in one shape for
 * every kind: who holds it and how, who waits, since when (view.c).  Each
 * kind's entry (call_status.c, call_sem_status.c, call_cond_status.c)
 * decodes its script's reply into it with the helpers below, so that the
 * distlock tool shows every kind alike.
 */
#ifndef DL_VIEW_H
#define DL_VIEW_H

#include <stddef.h>

struct redisReply;
struct dl_wire;

/* A holder or a waiter, from the "host\tpid\ttid" info the library stores. */
typedef struct dl_view_who {
    char host[128];
    long pid, tid;            /* 0 when the info could not be parsed */
    char mode;                /* 'w' or 'r'; a semaphore's: 'p' (permits) */
    char token[64];           /* its process's owner token in Redis */
    long long waited_ms;      /* a waiter: how long it has been queued (Redis
                                 clock); -1 unknown (an older library, or not
                                 a waiter) */
} dl_view_who_t;

typedef struct dl_view_holder {
    dl_view_who_t who;
    long long held_ms;        /* Redis clock: now - since */
    long long lease_left_ms;  /* PTTL of the hold, or the reader's deadline - now */
    long long lease_ms;       /* the hold's lease; -1 unknown (readers) */
    unsigned long long fence;
    int after_lapse;          /* it was acquired with EOWNERDEAD */
    unsigned count;           /* a semaphore's hold: its permits; else 0 */
} dl_view_holder_t;

/* redlock://: what one server shows of a lock. */
typedef struct dl_view_server {
    char name[280];           /* host:port */
    int answered;
    char err[200];            /* not answered: why */
    char mode;                /* 0 free, 'w', 'r' */
    dl_view_who_t *holders;
    size_t nholders;
    int agrees;               /* it shows exactly the holders the majority shows */
} dl_view_server_t;

/* One object as its status script shows it (a lock: status.lua; the other
 * kinds fill what they have).  Owns what it points to (dl_view_clear). */
typedef struct dl_view {
    char *name;               /* the lock's name (the call's, not Redis's) */
    size_t namelen;
    char mode;                /* 0 free, 'w' exclusive, 'r' shared */
    dl_view_holder_t *holders;
    size_t nholders;
    dl_view_who_t *waiters;   /* live registrations, in queue order */
    size_t nwaiters;
    unsigned long long last_fence;   /* 0: none recorded (or expired) */
    int next_ownerdead;       /* free, and the last hold lapsed: the next holder gets EOWNERDEAD */
    int broken;               /* ... because of `distlock break` */
    dl_view_who_t lapsed;     /* ... else whose hold lapsed (pid 0 if unknown) */
    int known;                /* Redis has any key of this lock */

    /* redlock:// only (else NULL, 0): each server's view.  A hold counts
     * (is in holders above) when `need` servers, a majority, show it; its
     * held_ms and lease_left_ms are then the majority's (the need-th
     * longest), its fence the highest. */
    dl_view_server_t *servers;
    size_t nservers;
    size_t need;              /* the majority */
    size_t agree;             /* servers that show exactly the holders above */
    int disputed;             /* some server shows a holder or waiter the result lacks */
} dl_view_t;

/* "host\tpid\ttid" (n bytes: the info the library stores with a hold or
 * a registration) -> w, with its mode and owner token; waited_ms -1. */
void dl_view_who_parse(const char *s, size_t n, char mode, const char *token, size_t toklen,
                       dl_view_who_t *w);
/* A waiter's wait: now - element i of r (when it first queued, Redis ms),
 * 0 at least; -1 when r has no such element or it is '' (a registration
 * an older library wrote). */
long long dl_view_waited_ms(const struct redisReply *r, size_t i, long long now);
/* Element i of array r as a number (0 when none: the scripts give every
 * leaf as a string, '' for none). */
long long dl_view_ll(const struct redisReply *r, size_t i);
/* v->name = a copy of name (len bytes, NUL-terminated).  0, or -1: out of
 * memory. */
int dl_view_set_name(dl_view_t *v, const char *name, size_t len);
/* Frees what v points to and zeroes it (not v itself). */
void dl_view_clear(dl_view_t *v);
/* A status script's wire: the object's first nkeys keys, no ARGV. */
void dl_view_wire(struct dl_wire *w, int nkeys);

#endif
