/* SPDX-License-Identifier: BSD-3-Clause */
/* pf_robust.c - robust mutexes in the protocol fuzzer: a holder told
 * EOWNERDEAD whose section ends without dist_mutex_consistent releases
 * with the unrecoverable mark (release.lua ARGV[7]); the lock is then
 * refused to everyone (acquire.lua {3, mark}, acquire_all.lua {3, i,
 * mark}), its queued waiters are told to ask again ('u KEY'), and only a
 * destroy by a process told of that very mark (recover.lua) or a break
 * makes it usable again.
 *
 * Invariants, judged on the state just before each call and on the
 * snapshot after each step:
 *   - acquire-past-unrecoverable: a request (an acquire, a lock-all that
 *     reaches the lock) to a lock with the mark is not refused {3, mark}
 *     with that mark, or is granted;
 *   - unrecoverable-unfounded: a refusal {3, ...} while Redis had no mark;
 *   - unrecoverable-not-marked: a release with the mark answered 1 (the
 *     hold was there) and Redis has not that mark after the step;
 *   - unrecoverable-changed, unrecoverable-cleared: a mark appeared that
 *     no release set, or went without a recover of it or a break;
 *   - unrecoverable-shape: a marked lock hash with an owner, or a TTL (the
 *     state must not lapse by itself);
 *   - grant-while-unrecoverable: anything granted during a step in which
 *     the lock stayed marked;
 *   - waiter-not-told-unrecoverable: a process queued when the lock was
 *     marked was not pushed 'u KEY' in that step;
 *   - recover-wrong-mark, recover-refused: recover cleared a mark other
 *     than the one it was sent (a process told of an older mark clears a
 *     newer one), or did not clear the very mark it was sent;
 *   - ownerdead-after-recover: the first grant after a recovery is told
 *     EOWNERDEAD (the lock is as new).
 */
#include <string.h>

#include "pf_model.h"

static long long elem(const redisReply *x, size_t i)
{
    if (!x || x->type != REDIS_REPLY_ARRAY || i >= x->elements ||
        x->element[i]->type != REDIS_REPLY_INTEGER)
        return -1;
    return x->element[i]->integer;
}

int pf_robust_wants_pre(const pf_req_t *q)
{
    return q->script == PF_S_ACQUIRE || q->script == PF_S_ACQUIRE_ALL ||
           q->script == PF_S_RECOVER || (q->script == PF_S_RELEASE && q->unrec);
}

static int judge_acquire(pf_run_t *r, const pf_req_t *q, const redisReply *x,
                         const pf_snap_t *pre)
{
    long long got = elem(x, 0);
    if (pre->nr && (got != 3 || (uint64_t)elem(x, 1) != pre->nr))
        return pf_failf(r, "acquire-past-unrecoverable", "p%d's %c acquire regid %llu, sent to "
                        "a lock left unrecoverable (mark %llu), was answered {%lld, %lld}, not "
                        "{3, mark}", q->proc, q->mode, (unsigned long long)q->regid,
                        (unsigned long long)pre->nr, got, elem(x, 1));
    if (!pre->nr && got == 3)
        return pf_failf(r, "unrecoverable-unfounded", "p%d's %c acquire regid %llu was refused "
                        "as unrecoverable (mark %lld) while Redis had no mark", q->proc, q->mode,
                        (unsigned long long)q->regid, elem(x, 1));
    if (got == 3)
        r->st.refused++;
    return 0;
}

/* The lock is the first or the second of the list; the companion is never
 * marked.  A lock-all that reaches the lock in its first look refuses
 * there; one that stops earlier (the companion first, busy; an ASK) never
 * got to it. */
static int judge_all(pf_run_t *r, const pf_req_t *q, const redisReply *x, const pf_snap_t *pre)
{
    long long got = elem(x, 0), at = q->comp_first ? 2 : 1;
    if (pre->nr && (got == 1 || (got == 0 && elem(x, 1) == at) ||
                    (got == 3 && (elem(x, 1) != at || (uint64_t)elem(x, 2) != pre->nr))))
        return pf_failf(r, "acquire-past-unrecoverable", "p%d's lock-all regid %llu (the lock "
                        "%s), sent while the lock was unrecoverable (mark %llu), was answered "
                        "{%lld, %lld, %lld}, not {3, %lld, mark}", q->proc,
                        (unsigned long long)q->regid, at == 1 ? "first" : "second",
                        (unsigned long long)pre->nr, got, elem(x, 1), elem(x, 2), at);
    if (!pre->nr && got == 3)
        return pf_failf(r, "unrecoverable-unfounded", "p%d's lock-all regid %llu was refused as "
                        "unrecoverable (lock %lld, mark %lld) while Redis had no mark", q->proc,
                        (unsigned long long)q->regid, elem(x, 1), elem(x, 2));
    if (got == 3)
        r->st.refused++;
    return 0;
}

/* Held, the hold is left unrecoverable: every process queued then is told. */
static int judge_release(pf_run_t *r, const pf_req_t *q, const redisReply *x,
                         const pf_snap_t *pre)
{
    if (!q->unrec || x->type != REDIS_REPLY_INTEGER || x->integer != 1)
        return 0;
    r->nr.set = q->unrec;
    r->st.marked++;
    for (int j = 0; j < pre->nwt; j++)
        if (pre->wt[j].queued && pre->wt[j].proc >= 0 && pre->wt[j].proc != q->proc)
            r->nr.u_want |= 1u << pre->wt[j].proc;
    return 0;
}

static int judge_recover(pf_run_t *r, const pf_req_t *q, const redisReply *x,
                         const pf_snap_t *pre)
{
    long long res = x->type == REDIS_REPLY_INTEGER ? x->integer : -1;
    if (res == 1 && (!pre->nr || pre->nr != q->fence))
        return pf_failf(r, "recover-wrong-mark", "p%d, told mark %llu, recovered the lock, "
                        "which had %s %llu", q->proc, (unsigned long long)q->fence,
                        pre->nr ? "the newer mark" : "no mark:", (unsigned long long)pre->nr);
    if (res != 1 && pre->nr && pre->nr == q->fence)
        return pf_failf(r, "recover-refused", "p%d, told mark %llu, which the lock has, was "
                        "answered %lld", q->proc, (unsigned long long)q->fence, res);
    if (res == 1) {
        r->nr.cleared = 1;
        r->nr.fresh = 1;
        r->st.recovered++;
    }
    return 0;
}

int pf_robust_judge(pf_run_t *r, const pf_req_t *q, const redisReply *x, const pf_snap_t *pre)
{
    switch (q->script) {
    case PF_S_ACQUIRE: return judge_acquire(r, q, x, pre);
    case PF_S_ACQUIRE_ALL: return judge_all(r, q, x, pre);
    case PF_S_RELEASE: return judge_release(r, q, x, pre);
    case PF_S_RECOVER: return judge_recover(r, q, x, pre);
    case PF_S_BREAK:
        r->nr.cleared = 1;        /* its hash deleted; the next holder told EOWNERDEAD */
        r->nr.fresh = 0;
        return 0;
    default: return 0;
    }
}

void pf_robust_told(pf_run_t *r, int proc)
{
    r->nr.u_got |= 1u << proc;
}

int pf_robust_check(pf_run_t *r, const pf_snap_t *s)
{
    pf_unrec_t *u = &r->nr;
    int bad = 0;
    if (s->nr && !s->nr_owner)
        bad = pf_failf(r, "unrecoverable-shape", "the lock is unrecoverable (mark %llu) and has "
                       "an owner (writer %d)", (unsigned long long)s->nr, s->writer);
    else if (s->nr && s->wpttl != -1)
        bad = pf_failf(r, "unrecoverable-shape", "the lock is unrecoverable (mark %llu) and its "
                       "hash has a TTL (%lld ms): the state would end by itself",
                       (unsigned long long)s->nr, s->wpttl);
    else if (u->set && s->nr != u->set)
        bad = pf_failf(r, "unrecoverable-not-marked", "a release with the unrecoverable mark "
                       "%llu answered 1, and Redis has mark %llu", (unsigned long long)u->set,
                       (unsigned long long)s->nr);
    else if (s->nr != u->prev && s->nr && s->nr != u->set)
        bad = pf_failf(r, "unrecoverable-changed", "the lock now has mark %llu (before the step: "
                       "%llu), which no release set", (unsigned long long)s->nr,
                       (unsigned long long)u->prev);
    else if (s->nr != u->prev && u->prev && !u->cleared)
        bad = pf_failf(r, "unrecoverable-cleared", "the lock's mark %llu went (now %llu) without "
                       "a recover of it or a break", (unsigned long long)u->prev,
                       (unsigned long long)s->nr);
    else if (u->prev && !u->cleared && r->ng > 0)
        bad = pf_failf(r, "grant-while-unrecoverable", "p%d was granted fence %llu (%s) while "
                       "the lock was unrecoverable (mark %llu)", r->g[0].proc,
                       (unsigned long long)r->g[0].fence, r->g[0].how,
                       (unsigned long long)u->prev);
    else if (u->u_want & ~u->u_got) {
        int p = __builtin_ctz(u->u_want & ~u->u_got);
        bad = pf_failf(r, "waiter-not-told-unrecoverable", "p%d was queued when the lock was "
                       "left unrecoverable (mark %llu), and was not pushed 'u KEY'", p,
                       (unsigned long long)u->set);
    }
    for (int g = 0; !bad && u->fresh && g < r->ng; g++)
        if (r->g[g].od)
            bad = pf_failf(r, "ownerdead-after-recover", "p%d's grant fence %llu (%s), the first "
                           "after a recovery, was told EOWNERDEAD", r->g[g].proc,
                           (unsigned long long)r->g[g].fence, r->g[g].how);
    if (r->ng > 0)
        u->fresh = 0;
    u->prev = s->nr;
    u->set = 0;
    u->cleared = 0;
    u->u_want = u->u_got = 0;
    return bad;
}

int pf_op_recover(pf_run_t *r, int i)
{
    pf_proc_t *p = &r->p[i];
    pf_req_t q = { .script = PF_S_RECOVER, .proc = i, .mode = 'w', .fence = p->told,
                   .lease = p->lease, .wttl = p->wttl, .claim = p->claim,
                   .redlock = r->o->redlock, .lock = PF_L_MAIN };
    pf_linef(r, "p%d destroys: recover mark %llu", i, (unsigned long long)p->told);
    p->told = 0;                  /* lock.c: cleared, whatever the reply said */
    redisReply *x = pf_step_call(r, &q, "recover");
    if (!x)
        return 1;
    pf_linef(r, " -> %lld", x->type == REDIS_REPLY_INTEGER ? x->integer : -1);
    freeReplyObject(x);
    return 0;
}
