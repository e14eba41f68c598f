/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_verify.c - the checks of the exclusion checker on recorded
 * holds, and its report (see harness_checker.h). */
#include "harness.h"
#include "harness_checker.h"

#include <errno.h>
#include <string.h>

/* ------------------------------------------------------------------ verify */

static int cmp_start(const void *a, const void *b)
{
    const chk_hold_t *x = a, *y = b;
    if (x->t_start_ns != y->t_start_ns)
        return x->t_start_ns < y->t_start_ns ? -1 : 1;
    return x->t_end_ns < y->t_end_ns ? -1 : x->t_end_ns > y->t_end_ns;
}

/* Holds in order of their end. */
struct chk_pe { int64_t end; uint64_t i; };

static int cmp_pe(const void *a, const void *b)
{
    const struct chk_pe *x = a, *y = b;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Largest fence seen, and the largest among other processes than the
 * holder of the largest: answers "max fence of processes other than P". */
typedef struct top2 { uint64_t f1; int32_t p1; uint64_t f2; int have1, have2; } top2_t;

static void top2_add(top2_t *t, uint64_t f, int32_t pid, int want_max)
{
    int better1 = !t->have1 || (want_max ? f > t->f1 : f < t->f1);
    if (t->have1 && pid == t->p1) {
        if (better1)
            t->f1 = f;
        return;
    }
    if (better1) {
        if (t->have1) {
            t->f2 = t->f1;
            t->have2 = 1;
        }
        t->f1 = f;
        t->p1 = pid;
        t->have1 = 1;
    } else if (!t->have2 || (want_max ? f > t->f2 : f < t->f2)) {
        t->f2 = f;
        t->have2 = 1;
    }
}

/* The extreme fence among processes other than pid: 1 and *f, or 0. */
static int top2_other(const top2_t *t, int32_t pid, uint64_t *f)
{
    if (t->have1 && t->p1 != pid) {
        *f = t->f1;
        return 1;
    }
    if (t->have2) {
        *f = t->f2;
        return 1;
    }
    return 0;
}

static void describe(chk_report_t *rep, const char *what, const chk_hold_t *a, const chk_hold_t *b)
{
    if (rep->first[0])
        return;
    snprintf(rep->first, sizeof rep->first,
             "%s: hold %c pid %d tid %d fence %llu [%lld, %lld] ns (unlock %s) and "
             "hold %c pid %d tid %d fence %llu [%lld, %lld] ns (lock %s)",
             what, a->mode, a->pid, a->tid, (unsigned long long)a->fence, (long long)a->t_start_ns,
             (long long)a->t_end_ns, th_errname(a->unlock_rc), b->mode, b->pid, b->tid,
             (unsigned long long)b->fence, (long long)b->t_start_ns, (long long)b->t_end_ns,
             th_errname(b->lock_rc));
}

uint64_t chk_verify(chk_hold_t *holds, uint64_t n, chk_report_t *rep)
{
    return chk_verify_flags(holds, n, 0, rep);
}

uint64_t chk_verify_flags(chk_hold_t *holds, uint64_t n, int flags, chk_report_t *rep)
{
    /* CHK_FENCE_AFTER_VOUCHED: a pair of holds is compared only when the
     * earlier one's unlock returned 0. */
    int lenient = (flags & CHK_FENCE_AFTER_VOUCHED) != 0;
    /* Complete records only, sorted by start. */
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (holds[i].filled)
            holds[m++] = holds[i];
    qsort(holds, (size_t)m, sizeof *holds, cmp_start);

    rep->overlaps = rep->excused = rep->fence_inversions = rep->torn_reads = 0;
    rep->redis_bad = rep->redis_bad_excused = rep->writes = rep->max_readers = 0;
    rep->ownerdead = rep->unlock_enolck = rep->unlock_eio = rep->unlock_other = 0;
    rep->longest_hold_gap_ms = 0;
    rep->first_loss[0] = 0;

    /* Overlaps: a sweep keeping the hold that ends last, of any mode and of
     * write holds, among all holds and among the holds whose unlock
     * returned 0.  Only those vouch for their whole time: an unlock that
     * returned ENOLCK (the hold was found lapsed) or EIO (Redis could not
     * be asked; the hold lapses within a lease) says the hold may have
     * ended in Redis before the thread stopped using it.  So an overlap is
     * a violation when a hold unlocked with 0 was still running as the
     * other began (the later one's lock call said it had the lock then),
     * and is excused when only holds not vouched for were. */
    int64_t max_end = INT64_MIN, max_wend = INT64_MIN;     /* all holds */
    int64_t g_end = INT64_MIN, g_wend = INT64_MIN;          /* unlocked with 0 */
    uint64_t g_i = 0, g_wi = 0;
    /* readers running at once: their ends, a small ring (max_readers only) */
    int64_t *rends = malloc(sizeof *rends * 4096);
    int nr = 0;
    for (uint64_t i = 0; i < m; i++) {
        chk_hold_t *h = &holds[i];
        int vouched = h->unlock_rc == 0;
        if (h->mode == 'w')
            rep->writes++;
        if ((h->unlock_rc == ENOLCK && !rep->unlock_enolck) ||
            (h->lock_rc == EOWNERDEAD && !rep->ownerdead)) {
            size_t len = strlen(rep->first_loss);
            snprintf(rep->first_loss + len, sizeof rep->first_loss - len,
                     "%s%s: pid %d tid %d fence %llu, %lld ms from %lld ms", len ? "; " : "",
                     h->unlock_rc == ENOLCK ? "unlock ENOLCK" : "lock EOWNERDEAD", h->pid, h->tid,
                     (unsigned long long)h->fence,
                     (long long)((h->t_end_ns - h->t_start_ns) / 1000000),
                     (long long)(h->t_start_ns / 1000000));
        }
        if (h->lock_rc == EOWNERDEAD)
            rep->ownerdead++;
        if (h->unlock_rc == ENOLCK)
            rep->unlock_enolck++;
        else if (h->unlock_rc == EIO)
            rep->unlock_eio++;
        else if (h->unlock_rc != 0)
            rep->unlock_other++;
        if (h->torn)
            rep->torn_reads++;          /* judged after the sweep */
        if (h->redis_bad) {
            if (h->unlock_rc == ENOLCK || h->unlock_rc == EIO) {
                rep->redis_bad_excused++;
            } else {
                rep->redis_bad++;
                describe(rep, "Redis did not have this hold (and unlock did not say ENOLCK)", h, h);
            }
        }
        if (i > 0 && h->t_start_ns > max_end) {
            int64_t gap = (h->t_start_ns - max_end) / 1000000;
            if (gap > rep->longest_hold_gap_ms)
                rep->longest_hold_gap_ms = gap;
        }
        /* the running holds h conflicts with: any (h writes) or writers */
        int64_t any_end = h->mode == 'w' ? max_end : max_wend;
        int64_t vouched_end = h->mode == 'w' ? g_end : g_wend;
        if (h->t_start_ns < vouched_end) {
            rep->overlaps++;
            describe(rep, "overlapping holds", &holds[h->mode == 'w' ? g_i : g_wi], h);
        } else if (h->t_start_ns < any_end) {
            rep->excused++;
        }
        if (h->t_end_ns > max_end)
            max_end = h->t_end_ns;
        if (h->mode == 'w' && h->t_end_ns > max_wend)
            max_wend = h->t_end_ns;
        if (vouched && h->t_end_ns > g_end) {
            g_end = h->t_end_ns;
            g_i = i;
        }
        if (vouched && h->mode == 'w' && h->t_end_ns > g_wend) {
            g_wend = h->t_end_ns;
            g_wi = i;
        }
        if (h->mode == 'r' && rends) {
            int k = 0;
            for (int j = 0; j < nr; j++)
                if (rends[j] > h->t_start_ns)
                    rends[k++] = rends[j];
            nr = k;
            if (nr < 4096)
                rends[nr++] = h->t_end_ns;
            if ((uint64_t)nr > rep->max_readers)
                rep->max_readers = (uint64_t)nr;
        }
    }
    free(rends);
    /* A write under a read hold means a writer's hold overlapped it: the
     * sweep counted that overlap, or excused it when the writer was not
     * vouched for (a lapsed holder writing back late).  So torn reads, like
     * lost updates, are violations only when no overlap was excused. */
    if (rep->torn_reads && !rep->excused)
        for (uint64_t i = 0; i < m; i++)
            if (holds[i].torn) {
                describe(rep, "torn read (the counter changed under a read hold)", &holds[i],
                         &holds[i]);
                break;
            }

    /* Fences.  For each write hold W (at index i in start order): every
     * hold that ended before W started must have fence <= W's, < for
     * other processes; every hold that started after W ended must have
     * fence >= W's, > for other processes.  Holds that overlap W were
     * reported above; they are left out here.  Prefix maxima from the left,
     * suffix minima from the right, each split by process (top2). */
    if (m > 0) {
        /* "ended before holds[i] started": holds sorted by end, consumed by
         * a pointer as i advances. */
        struct chk_pe *pe = malloc(sizeof *pe * m);
        if (!pe)
            return rep->overlaps + rep->fence_inversions +
                   (rep->excused ? 0 : rep->torn_reads) + rep->redis_bad;
        for (uint64_t i = 0; i < m; i++)
            pe[i] = (struct chk_pe){ holds[i].t_end_ns, i };
        qsort(pe, (size_t)m, sizeof *pe, cmp_pe);

        top2_t before = { 0, 0, 0, 0, 0 };
        uint64_t k = 0;
        for (uint64_t i = 0; i < m; i++) {
            const chk_hold_t *w = &holds[i];
            while (k < m && pe[k].end <= w->t_start_ns) {
                const chk_hold_t *b = &holds[pe[k].i];
                if (!lenient || b->unlock_rc == 0)
                    top2_add(&before, b->fence, b->pid, 1);
                k++;
            }
            if (w->mode != 'w')
                continue;
            uint64_t f;
            int bad = 0;
            if (before.have1 && before.f1 > w->fence)
                bad = 1;                            /* anyone's: must not be above */
            if (top2_other(&before, w->pid, &f) && f >= w->fence)
                bad = 1;                            /* another process's: must be below */
            if (bad) {
                rep->fence_inversions++;
                /* find an example for the message */
                for (uint64_t j = 0; j < k; j++) {
                    const chk_hold_t *b = &holds[pe[j].i];
                    if (lenient && b->unlock_rc != 0)
                        continue;
                    if (b->fence > w->fence || (b->pid != w->pid && b->fence >= w->fence)) {
                        describe(rep, "fence inversion (a hold that ended before a write hold "
                                 "started has a fence not below it)", b, w);
                        break;
                    }
                }
            }
        }
        /* "started after holds[i] ended": suffix minima over start order. */
        top2_t after = { 0, 0, 0, 0, 0 };
        /* walk W by end descending, adding holds by start descending */
        uint64_t s = m;                             /* holds[s..m) added */
        for (uint64_t kk = m; kk-- > 0;) {
            const chk_hold_t *w = &holds[pe[kk].i];
            while (s > 0 && holds[s - 1].t_start_ns >= w->t_end_ns) {
                s--;
                top2_add(&after, holds[s].fence, holds[s].pid, 0);
            }
            if (w->mode != 'w' || (lenient && w->unlock_rc != 0))
                continue;
            uint64_t f;
            int bad = 0;
            if (after.have1 && after.f1 < w->fence)
                bad = 1;
            if (top2_other(&after, w->pid, &f) && f <= w->fence)
                bad = 1;
            if (bad) {
                rep->fence_inversions++;
                for (uint64_t j = s; j < m; j++) {
                    const chk_hold_t *b = &holds[j];
                    if (b->fence < w->fence || (b->pid != w->pid && b->fence <= w->fence)) {
                        describe(rep, "fence inversion (a hold that started after a write hold "
                                 "ended has a fence not above it)", w, b);
                        break;
                    }
                }
            }
        }
        free(pe);
    }
    return rep->overlaps + rep->fence_inversions + (rep->excused ? 0 : rep->torn_reads) +
           rep->redis_bad;
}

void chk_print(FILE *f, const char *title, const chk_report_t *r)
{
    fprintf(f, "== %s\n", title ? title : "checker");
    fprintf(f, "holds checked      %llu (expected %llu, incomplete %llu)\n",
            (unsigned long long)r->holds, (unsigned long long)r->expected,
            (unsigned long long)r->unfilled);
    fprintf(f, "write holds        %llu, shared counter %llu, lost updates %llu\n",
            (unsigned long long)r->writes, (unsigned long long)r->counter,
            (unsigned long long)r->lost_updates);
    fprintf(f, "overlaps           %llu (excused after ENOLCK: %llu)\n",
            (unsigned long long)r->overlaps, (unsigned long long)r->excused);
    fprintf(f, "fence inversions   %llu\n", (unsigned long long)r->fence_inversions);
    fprintf(f, "torn reads         %llu, most readers at once %llu\n",
            (unsigned long long)r->torn_reads, (unsigned long long)r->max_readers);
    fprintf(f, "redis disagreed    %llu (excused after ENOLCK: %llu)\n",
            (unsigned long long)r->redis_bad, (unsigned long long)r->redis_bad_excused);
    fprintf(f, "lock EOWNERDEAD    %llu; failed lock calls: EIO %llu, ETIMEDOUT %llu, other %llu\n",
            (unsigned long long)r->ownerdead, (unsigned long long)r->lock_eio,
            (unsigned long long)r->lock_timedout, (unsigned long long)r->lock_other);
    fprintf(f, "unlock ENOLCK      %llu, EIO %llu, other %llu\n",
            (unsigned long long)r->unlock_enolck, (unsigned long long)r->unlock_eio,
            (unsigned long long)r->unlock_other);
    fprintf(f, "children failed    %d\n", r->children_failed);
    fprintf(f, "elapsed            %.2f s, %.0f ops/s, longest time without a hold %lld ms\n",
            r->elapsed_ms / 1000.0, r->ops_per_s, (long long)r->longest_hold_gap_ms);
    if (r->max_call_ms || r->max_gap_ms || r->redirects || r->reconnects)
        fprintf(f, "lock calls         longest %lld ms; longest time between acquisitions %lld ms; "
                "redirects %llu, reconnects %llu\n", (long long)r->max_call_ms,
                (long long)r->max_gap_ms, (unsigned long long)r->redirects,
                (unsigned long long)r->reconnects);
    if (r->first_error[0])
        fprintf(f, "a lock error       %s\n", r->first_error);
    if (r->first[0])
        fprintf(f, "first violation    %s\n", r->first);
    fflush(f);
}

int chk_keys_left(const char *name)
{
    static const char *const suffix[] = { "", ":r", ":ri", ":q", ":w" };
    int left = 0;
    char key[DIST_NAME_MAX + 64];
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        th_key(key, sizeof key, name, suffix[i]);
        if (th_cmd_ll("EXISTS %s", key) == 1)
            left++;
    }
    return left;
}

int chk_keys_left_at(int port, const char *name)
{
    static const char *const suffix[] = { "", ":r", ":ri", ":q", ":w" };
    int left = 0;
    char key[DIST_NAME_MAX + 64];
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        th_key(key, sizeof key, name, suffix[i]);
        redisReply *r = th_cmd_at(port, "EXISTS %s", key);
        if (!r)
            return -1;
        if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
            left++;
        freeReplyObject(r);
    }
    return left;
}

