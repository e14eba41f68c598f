/* SPDX-License-Identifier: BSD-3-Clause */
/* pf_check.c - the invariants, judged after every step on the snapshot of
 * the lock's keys and on the processes' beliefs:
 *
 *   - at most one writer believes it holds the lock, and never beside a
 *     reader that believes it holds it (beliefs counted with a margin);
 *   - a process that believes it holds the lock is its holder in Redis,
 *     in that mode and (a writer) with that fence: else another can take it;
 *   - every grant (a reply, a push) is in the mode asked;
 *   - fences strictly increase per name; one seen again names the same
 *     holder in the same mode;
 *   - nothing in Redis lives past its deadline: holds and registrations
 *     have TTLs within a lease or a waiter ttl, no grant goes to a
 *     registration that ran out;
 *   - a waiter is queued, granted, or was told (pushed) until its
 *     registration runs out;
 *   - Redis never has a writer beside live readers;
 *   - redlock mode (no queue; a waiting writer's mark, ww/wwx in the meta
 *     hash): while another process's mark lives, a read acquire of a
 *     process without a live read hold is refused with {0, ms left} and
 *     ms left <= the largest mark ttl; a mark never lives longer than that
 *     ttl past Redis time (a writer that died leaves one that lapses); a
 *     writer's successful write acquire and its cancel leave no mark naming
 *     it; renew 'm' replies 1 + queued + (1 if another process's mark
 *     lives);
 *   - otherwise no script touches the mark (one planted at the start stays);
 *   - robust mutexes' unrecoverable state: pf_robust.c.
 */
#include <stdlib.h>
#include <string.h>

#include "pf_model.h"

static int64_t now_ms_hi(void)
{
    return (pf_now_us() + 999) / 1000;
}

static pf_fence_t *find_fence(pf_run_t *r, uint64_t fence)
{
    size_t lo = 0, hi = r->nf;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->fv[mid].fence < fence)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->nf && r->fv[lo].fence == fence ? &r->fv[lo] : NULL;
}

int pf_note_fence(pf_run_t *r, int proc, char mode, uint64_t fence, const char *how)
{
    size_t lo = 0, hi = r->nf;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->fv[mid].fence < fence)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->nf && r->fv[lo].fence == fence) {
        const pf_fence_t *f = &r->fv[lo];
        if (f->proc != proc || f->mode != mode)
            return pf_failf(r, "fence-reused", "%s gives p%d a %c hold with fence %llu, "
                            "which was p%d's %c hold", how, proc, mode,
                            (unsigned long long)fence, f->proc, f->mode);
        return 0;
    }
    int bad = 0;
    if (fence <= r->maxfence_before)
        bad = pf_failf(r, "fence-not-increasing", "%s gives p%d fence %llu, not above %llu "
                       "(granted earlier)", how, proc, (unsigned long long)fence,
                       (unsigned long long)r->maxfence_before);
    if (r->nf == r->capf) {
        size_t cap = r->capf ? r->capf * 2 : 256;
        pf_fence_t *v = realloc(r->fv, cap * sizeof *v);
        if (!v)
            abort();
        r->fv = v;
        r->capf = cap;
    }
    memmove(r->fv + lo + 1, r->fv + lo, (r->nf - lo) * sizeof *r->fv);
    r->fv[lo] = (pf_fence_t){ fence, proc, mode };
    r->nf++;
    return bad;
}

/* What Redis has, for messages. */
static const char *snap_str(const pf_snap_t *s, char *buf, size_t size)
{
    size_t at = 0;
#define ADD(...) do { if (at < size) at += (size_t)snprintf(buf + at, size - at, __VA_ARGS__); } while (0)
    if (s->writer == -1)
        ADD("no writer");
    else
        ADD("writer p%d fence %llu (ttl %lld ms)", s->writer, (unsigned long long)s->wfence, s->wpttl);
    for (int i = 0; i < s->nrd; i++)
        ADD("%s p%d fence %llu (%lld ms left)", i ? "," : "; readers", s->rd[i].proc,
            (unsigned long long)s->rd[i].fence, (long long)(s->rd[i].score - s->now));
    for (int i = 0; i < s->nwt; i++)
        ADD("%s p%d %c regid %llu%s", i ? "," : "; registrations", s->wt[i].proc, s->wt[i].mode,
            (unsigned long long)s->wt[i].regid, s->wt[i].queued ? "" : " (not queued)");
#undef ADD
    return buf;
}

static const pf_hold_t *valid(const pf_run_t *r, int i, int64_t at)
{
    const pf_hold_t *h = &r->p[i].hold;
    return h->has && !h->lost && h->valid_until > at + PF_MARGIN_MS ? h : NULL;
}

static int redis_reader(const pf_snap_t *s, int proc, int live)
{
    for (int i = 0; i < s->nrd; i++)
        if (s->rd[i].proc == proc && (!live || s->rd[i].score > s->now))
            return i;
    return -1;
}

static int redis_holds(const pf_snap_t *s, int proc, char mode)
{
    return mode == 'w' ? s->writer == proc : redis_reader(s, proc, 1) >= 0;
}

/* Each grant of the step in the mode asked. */
static int check_grants(pf_run_t *r, const pf_snap_t *s)
{
    for (int g = 0; g < r->ng; g++) {
        const pf_grant_t *x = &r->g[g];
        char got = 0;
        if (s->writer == x->proc && s->wfence == x->fence)
            got = 'w';
        int ri = redis_reader(s, x->proc, 0);
        if (ri >= 0 && s->rd[ri].fence == x->fence)
            got = 'r';
        /* Finding 2's gate also spares a reply nobody reads: a held-back
         * acquire answered with its process's registration of the other
         * mode (granted without a push: the process learns it by asking). */
        if (got && got != x->mode && x->unread && (r->o->gates & PF_GATE_BARE_ACQUIRE)) {
            pf_fence_t *f = find_fence(r, x->fence);
            if (f)
                f->mode = got;    /* what it is: a later "mine" reports it so */
            continue;
        }
        if (got && got != x->mode) {
            char b[400];
            return pf_failf(r, "grant-wrong-mode", "p%d asked for a %c hold and got fence %llu "
                            "(%s), which Redis has as a %c hold; Redis: %s", x->proc, x->mode,
                            (unsigned long long)x->fence, x->how, got, snap_str(s, b, sizeof b));
        }
    }
    return 0;
}

static int check_redis(pf_run_t *r, const pf_snap_t *s, uint64_t maxfence)
{
    char b[400];
    int live = 0;
    for (int i = 0; i < s->nrd; i++) {
        if (s->rd[i].score > s->now)
            live++;
        if (s->rd[i].score > s->now + r->maxlease + PF_MARGIN_MS)
            return pf_failf(r, "hold-past-deadline", "p%d's read hold runs %lld ms more, longer "
                            "than any lease", s->rd[i].proc, (long long)(s->rd[i].score - s->now));
    }
    if (s->writer != -1) {
        if (s->writer == -2)
            return pf_failf(r, "unknown-holder", "the writer is no process of ours");
        if (s->wpttl < 0)
            return pf_failf(r, "hold-past-deadline", "p%d's write hold has no TTL", s->writer);
        if (s->wpttl > r->maxlease + PF_MARGIN_MS)
            return pf_failf(r, "hold-past-deadline", "p%d's write hold has %lld ms left, more "
                            "than any lease", s->writer, s->wpttl);
        if (live)
            return pf_failf(r, "writer-beside-readers", "Redis has a writer beside live "
                            "readers: %s", snap_str(s, b, sizeof b));
    }
    for (int i = 0; i < s->nwt; i++)
        if (s->wt[i].deadline > s->now + r->maxwttl + PF_MARGIN_MS)
            return pf_failf(r, "registration-past-deadline", "p%d's registration %llu lives "
                            "%lld ms more, longer than any waiter ttl", s->wt[i].proc,
                            (unsigned long long)s->wt[i].regid, (long long)(s->wt[i].deadline - s->now));
    if (s->pttl_r == -1 || s->pttl_ri == -1 || s->pttl_q == -1 || s->pttl_w == -1)
        return pf_failf(r, "key-without-ttl", "a key of the lock never expires (pttl r %lld "
                        "ri %lld q %lld w %lld)", s->pttl_r, s->pttl_ri, s->pttl_q, s->pttl_w);
    if (maxfence && s->metafence < maxfence)
        return pf_failf(r, "fence-not-increasing", "the meta hash's fence %llu is below fence "
                        "%llu, granted already", (unsigned long long)s->metafence,
                        (unsigned long long)maxfence);
    return 0;
}

static int check_beliefs(pf_run_t *r, const pf_snap_t *s, int64_t at)
{
    char b[400];
    int writer = -1;
    for (int i = 0; i < r->np; i++) {
        const pf_hold_t *h = valid(r, i, at);
        if (!h || h->mode != 'w')
            continue;
        if (writer >= 0)
            return pf_failf(r, "two-writers", "p%d and p%d both hold it for writing (fences "
                            "%llu, %llu); Redis: %s", writer, i,
                            (unsigned long long)r->p[writer].hold.fence,
                            (unsigned long long)h->fence, snap_str(s, b, sizeof b));
        writer = i;
    }
    for (int i = 0; writer >= 0 && i < r->np; i++) {
        const pf_hold_t *h = valid(r, i, at);
        if (h && h->mode == 'r' && i != writer)
            return pf_failf(r, "writer-beside-readers", "p%d holds it for writing (fence %llu) "
                            "while p%d reads (fence %llu); Redis: %s", writer,
                            (unsigned long long)r->p[writer].hold.fence, i,
                            (unsigned long long)h->fence, snap_str(s, b, sizeof b));
    }
    for (int i = 0; i < r->np; i++) {
        const pf_hold_t *h = valid(r, i, at);
        if (!h)
            continue;
        int ok = h->mode == 'w' ? s->writer == i && s->wfence == h->fence : redis_holds(s, i, 'r');
        if (!ok)
            return pf_failf(r, "believed-hold-missing", "p%d holds it (%c, fence %llu) for %lld "
                            "ms more, but Redis has: %s", i, h->mode, (unsigned long long)h->fence,
                            (long long)(h->valid_until - at), snap_str(s, b, sizeof b));
    }
    return 0;
}

static int check_waiters(pf_run_t *r, const pf_snap_t *s, int64_t at)
{
    char b[400];
    for (int i = 0; i < r->np; i++) {
        const pf_wait_t *w = &r->p[i].wait;
        if (!w->active || w->exempt || w->reg_until_lo <= at + PF_MARGIN_MS)
            continue;
        if (pf_reqinfo(r, i, w->regid)->pushed)
            continue;             /* told: a push for it went out (read or lost) */
        if (redis_holds(s, i, w->mode))
            continue;             /* granted: the next ask says "mine" */
        int queued = 0;
        for (int j = 0; j < s->nwt; j++)
            if (s->wt[j].proc == i && s->wt[j].regid == w->regid && s->wt[j].mode == w->mode &&
                s->wt[j].queued)
                queued = 1;
        if (!queued)
            return pf_failf(r, "waiter-dropped", "p%d waits (%c, registration %llu, %lld ms "
                            "left) but is neither queued, granted nor told; Redis: %s", i,
                            w->mode, (unsigned long long)w->regid,
                            (long long)(w->reg_until_lo - at), snap_str(s, b, sizeof b));
    }
    return 0;
}

/* Does snapshot s show a live mark of a process other than proc? */
static int mark_other(const pf_snap_t *s, int proc)
{
    return s->ww != -1 && s->ww != proc && s->wwx > s->now;
}

static int check_mark(pf_run_t *r, const pf_snap_t *s)
{
    if (!r->o->redlock) {
        if (s->ww != 0 || s->wwx != r->planted_wwx)
            return pf_failf(r, "mark-touched", "a script without redlock's arguments changed the "
                            "writer mark: ww p%d wwx %lld, planted p0 wwx %lld", s->ww,
                            (long long)s->wwx, (long long)r->planted_wwx);
        return 0;
    }
    if (s->ww == -2)
        return pf_failf(r, "mark-unknown", "the writer mark names no process of ours");
    if (s->ww >= 0 && s->wwx > s->now + r->maxmttl + PF_MARGIN_MS)
        return pf_failf(r, "mark-past-deadline", "p%d's writer mark lives %lld ms more, longer "
                        "than any mark ttl (%d ms)", s->ww, (long long)(s->wwx - s->now),
                        r->maxmttl);
    const pf_snap_t *pre = &r->mk.pre;
    int i = r->mk.proc;
    switch (r->mk.kind) {
    case PF_MK_CLEARED:
        if (s->ww == i)
            return pf_failf(r, "mark-not-cleared", "p%d took the write hold or gave up, and the "
                            "writer mark still names it (%lld ms left)", i,
                            (long long)(s->wwx - s->now));
        break;
    case PF_MK_READ:
        /* Live before and after (a read acquire never moves it): live when
         * it ran.  A read hold of the process that had lapsed before stays
         * lapsed. */
        if (!mark_other(s, i) || pre->ww != s->ww || pre->wwx != s->wwx ||
            redis_reader(pre, i, 1) >= 0 || r->mk.reply == 3)
            break;                /* (3: unrecoverable, refused first: pf_robust.c) */
        if (r->mk.reply != 0 || r->mk.left <= 0 || r->mk.left > r->maxmttl)
            return pf_failf(r, "read-past-mark", "p%d's read acquire, while p%d's writer mark "
                            "lived (%lld ms left after it), was answered {%lld, %lld}, not "
                            "{0, ms left <= %d}", i, s->ww, (long long)(s->wwx - s->now),
                            r->mk.reply, r->mk.left, r->maxmttl);
        break;
    case PF_MK_RENEW: {
        if (r->mk.reply < 1)
            break;                /* the hold was gone: renew-of-valid-hold judges that */
        long long want;
        if (mark_other(s, i))
            want = 2 + s->nq;     /* live after: live when it ran */
        else if (!mark_other(pre, i))
            want = 1 + s->nq;     /* not live before: nothing set it since */
        else
            break;                /* lapsed in between: either is right */
        if (r->mk.reply != want)
            return pf_failf(r, "renew-mark-count", "p%d's renew 'm' said %lld, not %lld "
                            "(%d queued, mark %s)", i, r->mk.reply, want, s->nq,
                            want > 1 + s->nq ? "of another process live" : "not another's");
        break;
    }
    default:
        break;
    }
    return 0;
}

int pf_check(pf_run_t *r, int64_t t_send)
{
    (void)t_send;
    pf_snap_t s;
    if (pf_snapshot(&r->k, &s)) {
        pf_failf(r, "infrastructure", "%s", r->k.err);
        return -1;
    }
    int64_t at = now_ms_hi();    /* the snapshot ran before this */
    uint64_t maxfence = r->nf ? r->fv[r->nf - 1].fence : 0;
    /* (the robust state's bookkeeping moves on to the next step whatever
     * the others found) */
    int bad = check_grants(r, &s) || check_redis(r, &s, maxfence) || check_beliefs(r, &s, at) ||
              (!r->o->redlock && check_waiters(r, &s, at)) || check_mark(r, &s);
    return pf_robust_check(r, &s) || bad;
}
