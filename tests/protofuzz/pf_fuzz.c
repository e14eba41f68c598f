/* SPDX-License-Identifier: BSD-3-Clause */
/* pf_fuzz.c - the op list of a seed, a whole fuzzing run, shrinking a
 * failing sequence by dropping ops and replaying, and the compact text
 * form of a sequence (printed for --replay). */
#include <stdlib.h>
#include <string.h>

#include "pf.h"

static uint64_t next(uint64_t *s)      /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* How often each op is drawn.  Acquire and release dominate; lost
 * requests, late deliveries and breaks are rarer, as in life, but common
 * enough that a few thousand steps combine them. */
typedef struct { int kind, weight; } weight_t;

static const weight_t weights[] = {
    { PF_ACQ, 22 },  { PF_REASK, 6 },   { PF_CANCEL, 5 }, { PF_RELEASE, 14 },
    { PF_RENEW, 8 }, { PF_UNDO, 4 },    { PF_BREAK, 1 },  { PF_DELIVER, 14 },
    { PF_DROP, 3 },  { PF_STALE, 6 },   { PF_SLEEP, 9 },  { PF_MARK, 3 },
    { PF_ALL, 5 },
};
/* redlock mode: no queue (no pushes, nothing to undo), no lost requests;
 * a waiter retries (refreshing its mark), gives up (cancel 'm') or dies. */
static const weight_t rl_weights[] = {
    { PF_ACQ, 22 },  { PF_REASK, 12 }, { PF_CANCEL, 4 }, { PF_RELEASE, 12 },
    { PF_RENEW, 10 }, { PF_BREAK, 1 },  { PF_SLEEP, 8 },  { PF_DIE, 3 },
    { PF_ALL, 4 },
};
static const int sleeps[] = { 1, 5, 20, 50, 120 };

pf_op_t *pf_generate(const pf_opts_t *o)
{
    const weight_t *wt = weights;
    size_t nw = sizeof weights / sizeof weights[0];
    if (o->redlock) {
        wt = rl_weights;
        nw = sizeof rl_weights / sizeof rl_weights[0];
    }
    int total = 0;
    for (size_t i = 0; i < nw; i++)
        total += wt[i].weight;
    pf_op_t *ops = calloc((size_t)(o->steps > 0 ? o->steps : 1), sizeof *ops);
    if (!ops)
        return NULL;
    uint64_t s = o->seed;
    int np = o->procs < 2 ? 2 : o->procs > PF_MAX_PROCS ? PF_MAX_PROCS : o->procs;
    for (int n = 0; n < o->steps; n++) {
        pf_op_t *op = &ops[n];
        uint64_t x = next(&s), y = next(&s);
        int w = (int)(x % (uint64_t)total), k = 0;
        while (w >= wt[k].weight)
            w -= wt[k++].weight;
        op->kind = (uint8_t)wt[k].kind;
        op->proc = (uint8_t)((x >> 20) % (uint64_t)np);
        op->mode = (y & 3) == 0 ? 'w' : (y & 3) == 1 ? 'w' : 'r';
        op->enqueue = ((y >> 2) & 3) != 0;
        int lostdraw = (int)((y >> 4) % 100);
        if (op->kind == PF_ACQ || op->kind == PF_CANCEL || op->kind == PF_RELEASE ||
            op->kind == PF_RENEW || op->kind == PF_MARK)
            op->lost = lostdraw < 6 ? PF_LOST_UNDO : lostdraw < 12 ? PF_LOST : PF_SENT;
        if (op->kind != PF_ACQ && op->lost == PF_LOST_UNDO)
            op->lost = PF_LOST;   /* only an acquire has a withdrawal */
        /* a lock-all's undo is written behind it as an acquire's is
         * (take_all.c); never drawn lost without it */
        if (op->kind == PF_ALL)
            op->lost = lostdraw < 6 ? PF_LOST_UNDO : PF_SENT;
        op->sel = (uint8_t)((y >> 12) & 0xff);
        op->ms = (uint16_t)sleeps[(y >> 24) % (sizeof sleeps / sizeof sleeps[0])];
        if ((o->gates & PF_GATE_STALE_RELEASE) && op->kind == PF_RELEASE)
            op->lost = PF_SENT;
        if ((o->gates & PF_GATE_LATE_ACQUIRE) && (op->kind == PF_ACQ || op->kind == PF_ALL))
            op->lost = PF_SENT;
        if ((o->gates & PF_GATE_STALE_MARK) && op->kind == PF_MARK)
            op->lost = PF_SENT;
        if ((o->gates & PF_GATE_STALE_CANCEL) && op->kind == PF_CANCEL)
            op->lost = PF_SENT;
        if ((o->gates & PF_GATE_BARE_ACQUIRE) && op->kind == PF_ACQ && op->lost == PF_LOST)
            op->lost = PF_LOST_UNDO;
        if (o->redlock)
            op->lost = PF_SENT;
    }
    return ops;
}

/* ---------------------------------------------------------- compact form */

static const char letters[] = "AQCRNUBDXSZMKL";  /* by enum pf_kind */

void pf_ops_print_compact(FILE *f, const pf_op_t *ops, int n)
{
    for (int i = 0; i < n; i++) {
        const pf_op_t *op = &ops[i];
        fputs(i ? "," : "", f);
        switch (op->kind) {
        case PF_ACQ:
            fprintf(f, "A%d%c%c%d", op->proc, op->mode, op->enqueue ? 'q' : 't', op->lost);
            break;
        case PF_CANCEL:
        case PF_RELEASE:
        case PF_RENEW:
        case PF_MARK:
            fprintf(f, "%c%d%d", letters[op->kind], op->proc, op->lost);
            break;
        case PF_STALE:
            fprintf(f, "S%d.%d", op->proc, op->sel);
            break;
        case PF_ALL:
            fprintf(f, "L%d.%d", op->proc, op->sel & 1);
            if (op->lost)
                fprintf(f, ".%d", op->lost);
            break;
        case PF_SLEEP:
            fprintf(f, "Z%d", op->ms);
            break;
        case PF_BREAK:
            fputc('B', f);
            break;
        default:
            fprintf(f, "%c%d", letters[op->kind], op->proc);
            break;
        }
    }
}

int pf_ops_parse(const char *s, pf_op_t **out, int *count)
{
    int cap = 1;
    for (const char *c = s; *c; c++)
        cap += *c == ',';
    pf_op_t *ops = calloc((size_t)cap, sizeof *ops);
    if (!ops)
        return -1;
    int n = 0;
    while (*s) {
        pf_op_t *op = &ops[n];
        const char *l = strchr(letters, *s);
        if (!l || !*s)
            goto bad;
        op->kind = (uint8_t)(l - letters);
        s++;
        if (op->kind == PF_SLEEP) {
            op->ms = (uint16_t)strtoul(s, (char **)&s, 10);
        } else if (op->kind != PF_BREAK) {
            if (*s < '0' || *s > '9')
                goto bad;
            op->proc = (uint8_t)(*s++ - '0');
            if (op->kind == PF_ACQ) {
                if ((s[0] != 'w' && s[0] != 'r') || (s[1] != 'q' && s[1] != 't') || !s[2])
                    goto bad;
                op->mode = (uint8_t)s[0];
                op->enqueue = s[1] == 'q';
                op->lost = (uint8_t)(s[2] - '0');
                s += 3;
            } else if (op->kind == PF_CANCEL || op->kind == PF_RELEASE || op->kind == PF_RENEW ||
                       op->kind == PF_MARK) {
                if (*s < '0' || *s > '2')
                    goto bad;
                op->lost = (uint8_t)(*s++ - '0');
            } else if (op->kind == PF_STALE || op->kind == PF_ALL) {
                if (*s++ != '.')
                    goto bad;
                op->sel = (uint8_t)strtoul(s, (char **)&s, 10);
                if (op->kind == PF_ALL && *s == '.') {      /* lost: "L1.0.1" */
                    s++;
                    if (*s < '0' || *s > '2')
                        goto bad;
                    op->lost = (uint8_t)(*s++ - '0');
                }
            }
        }
        if (op->lost > PF_LOST)
            goto bad;
        n++;
        if (*s == ',')
            s++;
        else if (*s)
            goto bad;
    }
    *out = ops;
    *count = n;
    return 0;
bad:
    free(ops);
    return -1;
}

/* -------------------------------------------------------------- shrinking */

/* Does ops[0..n) still fail the same way?  The length up to the failing
 * step, or 0.  Tried twice: a lease running out a millisecond later can
 * hide a real failure once. */
static int still_fails(const pf_opts_t *o, const pf_op_t *ops, int n, const char *what)
{
    pf_opts_t q = *o;
    q.verbose = 0;
    q.progress_ms = 0;
    q.max_ms = 0;
    for (int t = 0; t < 2; t++) {
        pf_fail_t f;
        if (pf_exec(&q, ops, n, &f, NULL) == 1 && strcmp(f.what, what) == 0)
            return f.step + 1;
    }
    return 0;
}

/* Ops that applied to nobody changed nothing: drops them all at once (ran:
 * which ops applied, NULL to find out by a replay).  The new length. */
static int drop_skipped(const pf_opts_t *o, pf_op_t *ops, int n, const uint8_t *ran,
                        const char *what, int *replays)
{
    uint8_t *mine = NULL;
    pf_op_t *kept = malloc((size_t)n * sizeof *kept);
    if (!ran) {
        pf_fail_t f;
        mine = calloc((size_t)n, 1);
        (*replays)++;
        if (!mine || pf_exec_ran(o, ops, n, &f, NULL, mine) != 1 || strcmp(f.what, what)) {
            free(mine);
            free(kept);
            return n;
        }
        ran = mine;
    }
    int m = 0;
    for (int i = 0; kept && i < n; i++)
        if (ran[i]) {
            kept[m] = ops[i];
            if (ops[i].kind != PF_BREAK && ops[i].kind != PF_SLEEP)
                kept[m].proc = (uint8_t)(ran[i] - 1);
            m++;
        }
    (*replays)++;
    int k = kept && m < n ? still_fails(o, kept, m, what) : 0;
    if (k) {
        memcpy(ops, kept, (size_t)k * sizeof *ops);
        n = k;
    }
    free(kept);
    free(mine);
    return n;
}

/* Leases and waiter ttls are short, so a failure mostly depends on the
 * last few hundred ops: tries growing tails of the sequence first, each
 * replay far cheaper than one of the whole.  The new length (the tail
 * moved to the front). */
static int tail(const pf_opts_t *o, pf_op_t *ops, int n, const char *what, int *replays)
{
    int64_t until = pf_now_ms() + o->shrink_ms / 2;
    for (int k = 16; k < n / 2 && pf_now_ms() < until; k *= 2) {
        (*replays)++;
        int m = still_fails(o, ops + n - k, k, what);
        if (m) {
            memmove(ops, ops + n - k, (size_t)m * sizeof *ops);
            return m;
        }
    }
    return n;
}

/* Delta debugging over the op list: drop chunks, halving their size,
 * keeping each removal after which the sequence still fails. */
static int shrink(const pf_opts_t *o, pf_op_t *cur, int n, const char *what, int *replays)
{
    int64_t until = pf_now_ms() + o->shrink_ms;
    pf_op_t *cand = malloc((size_t)n * sizeof *cand);
    if (!cand)
        return n;
    int chunk = n / 2 > 0 ? n / 2 : 1;
    while (chunk >= 1 && pf_now_ms() < until) {
        int progress = 0;
        for (int i = 0; i < n && pf_now_ms() < until;) {
            int len = i + chunk > n ? n - i : chunk;
            memcpy(cand, cur, (size_t)i * sizeof *cand);
            memcpy(cand + i, cur + i + len, (size_t)(n - i - len) * sizeof *cand);
            (*replays)++;
            int k = n - len > 0 ? still_fails(o, cand, n - len, what) : 0;
            if (k) {
                memcpy(cur, cand, (size_t)k * sizeof *cur);
                n = k;
                progress = 1;
            } else {
                i += len;
            }
        }
        if (!progress)
            chunk /= 2;
        else if (chunk > n / 2 && n > 1)
            chunk = n / 2;
    }
    free(cand);
    return n;
}

int pf_fuzz(const pf_opts_t *o, int *steps_done, pf_fail_t *fail)
{
    FILE *out = o->out ? o->out : stderr;
    pf_op_t *ops = pf_generate(o);
    if (!ops)
        return -1;
    uint8_t *ran = calloc((size_t)o->steps, 1);
    if (!ran) {
        free(ops);
        return -1;
    }
    int rc = pf_exec_ran(o, ops, o->steps, fail, o->verbose ? out : NULL, ran);
    *steps_done = fail->steps_run;
    if (rc != 1) {
        if (rc < 0)
            fprintf(out, "protofuzz: seed %llu: cannot run: %s\n", (unsigned long long)o->seed,
                    fail->msg);
        free(ops);
        free(ran);
        return rc;
    }
    fprintf(out, "protofuzz: FAILED: seed %llu, %d processes, step %d of %d: %s: %s\n",
            (unsigned long long)o->seed, o->procs, fail->step + 1, o->steps, fail->what, fail->msg);
    fprintf(out, "protofuzz: replay the run with --seed %llu --steps %d --procs %d%s%s\n",
            (unsigned long long)o->seed, fail->step + 1, o->procs,
            o->redlock ? " --redlock" : o->by_slot ? " --by-slot" : "",
            o->gates == 0 ? "" : o->gates == PF_GATE_ALL ? " --gated"
            : o->gates == PF_GATE_LATE_ACQUIRE ? " --no-late-acquire" : " --gated --with ...");
    int n = fail->step + 1, replays = 0;
    int64_t t = pf_now_ms();
    if (o->shrink_ms > 0) {
        n = drop_skipped(o, ops, n, ran, fail->what, &replays);
        n = tail(o, ops, n, fail->what, &replays);
        n = shrink(o, ops, n, fail->what, &replays);
        n = drop_skipped(o, ops, n, NULL, fail->what, &replays);
        fprintf(out, "protofuzz: shrunk to %d ops (%d replays, %.1f s)\n", n, replays,
                (double)(pf_now_ms() - t) / 1000);
    }
    /* The shortest sequence found, as it ran (it may pass once: timing). */
    uint8_t *at = calloc((size_t)n + 1, 1);
    for (int tries = 0; at && tries < 3; tries++) {
        fprintf(out, "protofuzz: the sequence (seed %llu), step by step:\n",
                (unsigned long long)o->seed);
        pf_opts_t q = *o;
        q.verbose = 1;
        q.progress_ms = 0;
        pf_fail_t f;
        if (pf_exec_ran(&q, ops, n, &f, out, at) == 1) {
            fprintf(out, "protofuzz: -> %s: %s\n", f.what, f.msg);
            /* Printed with the process each op applied to: the same run. */
            for (int i = 0; i < n; i++)
                if (at[i] && ops[i].kind != PF_BREAK && ops[i].kind != PF_SLEEP)
                    ops[i].proc = (uint8_t)(at[i] - 1);
            break;
        }
        fprintf(out, "protofuzz: (this replay passed: timing; again)\n");
    }
    /* The seed too: it sets each process's lease and TTLs. */
    fprintf(out, "protofuzz: replay it with --seed %llu --procs %d%s --replay '",
            (unsigned long long)o->seed, o->procs, o->redlock ? " --redlock" : "");
    pf_ops_print_compact(out, ops, n);
    fprintf(out, "'\n");
    fflush(out);
    free(at);
    free(ops);
    free(ran);
    return 1;
}
