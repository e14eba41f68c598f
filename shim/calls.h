/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calls.h - one typed call per script of lua/: its arguments and its reply
 * as C structs.  calls.c is the one place that knows each script's ARGV
 * order (dl_call_wire) and reply layout (dl_call_parse), as the header of
 * lua/<script>.lua describes them; every topology runs the same dl_call_t
 * (script.c sends it, quorum.c merges redlock's per-server replies into
 * the typed reply one server would give).
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

#include "conn.h"

/* The scripts, lua/<name>.lua: the table of their text (dl_scripts[],
 * generated from lua/ by cmake/embed_lua.cmake) is indexed by these, so
 * their order here is the only one. */
enum {
    DL_SCRIPT_ACQUIRE,
    DL_SCRIPT_RELEASE,
    DL_SCRIPT_RENEW,
    DL_SCRIPT_CANCEL,
    DL_SCRIPT_BREAK,
    DL_SCRIPT_WITHDRAW,
    DL_SCRIPT_MARK,
    DL_SCRIPT_TOUCH,
    DL_SCRIPT_STATUS,         /* read-only: distlock status (tools/cli) */
    DL_SCRIPT_COUNT
};

#define DL_NKEYS 6                /* the keys of a lock (lua/common.lua) */
#define DL_MAX_ARGS 12            /* ARGV of a script, at most (acquire: 10) */
#define DL_CALL_NUMS 6            /* numbers a call formats for its ARGV */

/* Who calls, on which lock: every operation script's KEYS (the lock's
 * six) and ARGV[1] channel prefix, ARGV[2] token. */
typedef struct dl_caller {
    const char *const *keys;      /* DL_NKEYS keys */
    const size_t *keylen;
    const char *chanprefix;
    size_t chanprefix_len;
    const char *token;            /* NUL-terminated */
} dl_caller_t;

struct dl_proc;
struct dl_lock;
/* The process p calling on its lock l. */
dl_caller_t dl_caller(const struct dl_proc *p, const struct dl_lock *l);

/* --- acquire.lua: take the lock, or queue for it. */
typedef struct dl_acquire_args {
    char mode;                    /* 'w' | 'r' */
    unsigned long lease_ms;
    const char *info;             /* holder info, "host\tpid\ttid" */
    size_t infolen;
    int enqueue;                  /* queue for it if busy */
    uint64_t regid;               /* registration id of this request */
    unsigned long waiter_ttl_ms;  /* how long the registration lives unrefreshed */
    unsigned long claim_ms;       /* first TTL of a hold pushed to this waiter */
    int redlock;                  /* sends writer_mark_ms (redlock:// only) */
    unsigned long writer_mark_ms; /* a waiting write's mark's TTL; 0: will not wait */
} dl_acquire_args_t;

typedef struct dl_acquire_reply {
    int got;                      /* 1 acquired, 0 busy, -1 an unexpected reply */
    uint64_t fence;               /* acquired: the hold's fence */
    int dead;                     /* acquired: the last holder's lease ran out */
    long long waiters;            /* acquired: > 0 others still queued */
    int claimed;                  /* acquired: granted earlier (a claim TTL) */
    uint64_t was;                 /* claimed: the hold's fence when found; 0 unknown */
    long long pttl_ms;            /* busy: until the holders' leases run out */
    unsigned servers;             /* acquired, redlock: the servers (bit i: server i)
                                     that may have the hold (granted, or no reply);
                                     0 elsewhere */
} dl_acquire_reply_t;

/* --- release.lua: end the caller's hold, hand the lock on. */
typedef struct dl_release_args {
    char mode;
    uint64_t fence;               /* names the hold */
    uint64_t rid;                 /* registration id it was taken with; 0: none */
    unsigned servers;             /* redlock: where it may be held (the acquisition's
                                     servers); 0 any */
    unsigned long lease_ms;       /* redlock: its lease, how long a server that failed
                                     may keep it (0: the default) */
    int redlock;                  /* where nothing is held, a death trace older than
                                     the hold goes too (ARGV[6] 'o'): set by quorum.c */
    int told;                     /* redlock: the hold was taken with EOWNERDEAD, so
                                     its release must reach every server, to clear
                                     the lapse's trace where the quorum did not
                                     reach (quorum.c) */
} dl_release_args_t;

typedef struct dl_release_reply {
    int result;                   /* 1 released, 0 held nothing, 2 released
                                     already (a resend, a late copy), -1 unexpected,
                                     DL_RELEASE_UNDECIDED (redlock) */
} dl_release_reply_t;

/* redlock: released where the answering servers had the hold, but those
 * were too few for a majority and the servers that did not answer (owed
 * the release) could make one up: the hold was the caller's as far as its
 * validity says (quorum.c). */
#define DL_RELEASE_UNDECIDED 3

/* --- renew.lua: extend the caller's hold by a lease. */
typedef struct dl_renew_args {
    char mode;
    unsigned long lease_ms;
    uint64_t fence;               /* names the hold */
    int redlock;                  /* fence sent as '' (each server numbers a hold
                                     itself) and another's writer mark counts as a
                                     waiter: set by quorum.c */
} dl_renew_args_t;

typedef struct dl_renew_reply {
    int held;                     /* 1 renewed, 0 the hold is gone, -1 unexpected */
    long long queued;             /* renewed: waiters queued for the lock */
} dl_renew_reply_t;

/* --- cancel.lua: withdraw the caller's place in the queue. */
typedef struct dl_cancel_args {
    char mode;
    uint64_t regid;               /* the wait's registration id */
    int clear_mark;               /* redlock: take the caller's writer mark away */
} dl_cancel_args_t;

typedef struct dl_cancel_reply {
    int granted;                  /* 1 granted meanwhile: held, 0 withdrawn, -1 unexpected */
    uint64_t fence;               /* granted: as dl_acquire_reply_t */
    int dead;
    long long waiters;
} dl_cancel_reply_t;

/* --- break.lua: delete a stuck lock's holds. */
typedef struct dl_break_reply {
    long long removed;            /* holds removed; -1 unexpected */
} dl_break_reply_t;

/* --- withdraw.lua: undo one acquire request whose reply was lost. */
typedef struct dl_withdraw_args {
    char mode;
    uint64_t regid;               /* the request's registration id */
    uint64_t older;               /* redlock, an acquisition that counted elsewhere:
                                     its fence (a death trace older than it goes);
                                     0 none */
} dl_withdraw_args_t;

typedef struct dl_withdraw_reply {
    int result;                   /* 1 a hold released, 2 a queue place
                                     withdrawn, 0 nothing left, -1 unexpected */
} dl_withdraw_reply_t;

/* --- mark.lua: a lingering hold, or held again (mark.c).  Only posted:
 * no reply is read. */
typedef struct dl_mark_args {
    uint64_t fence;               /* with the caller's token, names the hold */
    int lingering;                /* 1 lingers, 0 held again */
    unsigned long ms;             /* lingering: TTL cut to it; held again: the
                                     lease restored; 0 none */
    uint64_t seq;                 /* the mark's number: a mark that runs after
                                     a later one of the hold changes nothing */
} dl_mark_args_t;

typedef struct dl_mark_reply {
    int marked;                   /* 1 marked, 0 that hold is not there */
} dl_mark_reply_t;

/* --- touch.lua: the renewal posted when a pushed grant is claimed
 * (tenure.c).  Only posted: no reply is read; sent with its text. */
typedef struct dl_touch_args {
    char mode;
    unsigned long lease_ms;       /* 0: a fixed lease, claimed, not extended */
    uint64_t fence;               /* with the caller's token, names the hold */
    uint64_t seq;                 /* numbered with the marks (mark.c): one that
                                     runs after a later mark changes nothing */
} dl_touch_args_t;

/* --- status.lua: a read-only snapshot of a lock (the distlock tool).
 * No ARGV.  Its reply is a nested array of strings with one reader,
 * tools/cli/lockstat.c, which decodes it into what the tool prints: the
 * call hands that reader the snapshot as Redis gave it, to be freed with
 * dl_call_free_reply. */
typedef struct dl_status_reply {
    struct redisReply *snapshot;  /* status.lua's reply; NULL without one */
} dl_status_reply_t;

/* One script call on one lock. */
typedef struct dl_call {
    int script;                   /* DL_SCRIPT_* */
    dl_caller_t who;
    uint64_t deadline;            /* monotonic ms, 0 none: see dl_cmd_t */
    union {
        dl_acquire_args_t acquire;
        dl_release_args_t release;
        dl_renew_args_t renew;
        dl_cancel_args_t cancel;
        dl_withdraw_args_t withdraw;
        dl_mark_args_t mark;
        dl_touch_args_t touch;
    } arg;
    /* Set when the run gave this call a reply (cmd.err 0). */
    union {
        dl_acquire_reply_t acquire;
        dl_release_reply_t release;
        dl_renew_reply_t renew;
        dl_cancel_reply_t cancel;
        dl_break_reply_t brk;
        dl_withdraw_reply_t withdraw;
        dl_mark_reply_t mark;
        dl_status_reply_t status;
    } reply;
    /* The wire form, script.c's: argv[0..1] EVALSHA sha | EVAL text, then
     * what dl_call_wire writes. */
    int argc;
    const char *argv[3 + DL_NKEYS + DL_MAX_ARGS];
    size_t argvlen[3 + DL_NKEYS + DL_MAX_ARGS];
    char num[DL_CALL_NUMS][24];
    dl_cmd_t cmd;                 /* err, errmsg, sent: how the run went */
} dl_call_t;

/* Builders: c becomes that script's call by who, with those arguments,
 * no deadline. */
void dl_call_acquire(dl_call_t *c, const dl_caller_t *who, const dl_acquire_args_t *a);
void dl_call_release(dl_call_t *c, const dl_caller_t *who, const dl_release_args_t *a);
void dl_call_renew(dl_call_t *c, const dl_caller_t *who, const dl_renew_args_t *a);
void dl_call_cancel(dl_call_t *c, const dl_caller_t *who, const dl_cancel_args_t *a);
void dl_call_break(dl_call_t *c, const dl_caller_t *who);
void dl_call_status(dl_call_t *c, const dl_caller_t *who);
/* Frees what a reply owns (the status snapshot); a no-op for the others. */
void dl_call_free_reply(dl_call_t *c);
void dl_call_withdraw(dl_call_t *c, const dl_caller_t *who, const dl_withdraw_args_t *a);
void dl_call_mark(dl_call_t *c, const dl_caller_t *who, const dl_mark_args_t *a);
void dl_call_touch(dl_call_t *c, const dl_caller_t *who, const dl_touch_args_t *a);

/* script.c's: writes c->argv[2..] (the number of keys, the keys, ARGV in
 * the script's order) and c->argc. */
void dl_call_wire(dl_call_t *c);

/* script.c's: reads the script's reply r (not an error reply) into
 * c->reply, values as the script gives them; a reply of another shape
 * reads as "unexpected" (-1). */
void dl_call_parse(dl_call_t *c, const redisReply *r);

#endif
