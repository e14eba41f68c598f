/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_checker.c - see harness_checker.h: the parent's side of a run
 * (start the processes, watch them, stop them, verify what they recorded). */
#include "harness_checker_work.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

struct chk_live {
    chk_cfg_t cfg;              /* the caller's, copied: the children point at it */
    chk_shared_t *sh;
    pid_t *pids;
    struct chk_proc *prs;
    int64_t t0;
};

static chk_shared_t *chk_running;   /* the area of the run in progress */

static int exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return 1;                   /* gone (or not ours): nothing to wait for */
    return si.si_pid == pid;
}

int chk_inside(int index)
{
    if (!chk_running || index < 0 || index >= CHK_MAX_PROCS)
        return 0;
    return (int)__atomic_load_n(&chk_running->inside[index], __ATOMIC_RELAXED);
}

void chk_stop(void)
{
    if (chk_running)
        __atomic_store_n(&chk_running->stop, 1, __ATOMIC_RELAXED);
}

pid_t chk_writer_now(void)
{
    return chk_running ? (pid_t)__atomic_load_n(&chk_running->writer, __ATOMIC_RELAXED) : 0;
}

void chk_cfg_background(chk_cfg_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = CHK_MUTEX;
    cfg->lock_how = CHK_BLOCKING;
    cfg->retry_errors = CHK_RETRY_ALL;
    cfg->retry_sleep_ms = 10;
    cfg->quiet = 1;
    cfg->child_alarm_s = -1;
}

chk_live_t *chk_start(const chk_cfg_t *cfg)
{
    chk_live_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cfg = *cfg;
    uint64_t per = cfg->lockall >= 2 ? (uint64_t)cfg->lockall : 1;
    uint64_t cap = cfg->cap ? cfg->cap : cfg->ops > 0 ? (uint64_t)cfg->ops * per : 200000;
    c->sh = chk_shared_new(cap);
    c->pids = calloc((size_t)cfg->procs, sizeof *c->pids);
    c->prs = calloc((size_t)cfg->procs, sizeof *c->prs);
    if (!c->sh || !c->pids || !c->prs || cfg->nnames > CHK_MAX_NAMES ||
        (cfg->lockall >= 2 && (cfg->kind != CHK_MUTEX || cfg->lockall > cfg->nnames))) {
        chk_shared_free(c->sh);
        free(c->pids);
        free(c->prs);
        free(c);
        return NULL;
    }
    chk_running = c->sh;
    c->t0 = th_now_ms();
    for (int i = 0; i < cfg->procs; i++) {
        c->prs[i].cfg = &c->cfg;
        c->prs[i].sh = c->sh;
        c->prs[i].index = i;
        c->pids[i] = th_fork_child(chk_child, &c->prs[i]);
        if (cfg->pids_out)
            cfg->pids_out[i] = c->pids[i];
    }
    return c;
}

uint64_t chk_live_holds(const chk_live_t *c)
{
    return chk_done(c->sh);
}

uint64_t chk_holds_since(const chk_live_t *c, int64_t t_us, int *procs)
{
    uint64_t n = chk_done(c->sh), count = 0;
    int32_t seen[64];
    int nseen = 0;
    for (uint64_t i = 0; i < n; i++) {
        const chk_hold_t *h = &c->sh->holds[i];
        if (!__atomic_load_n(&h->filled, __ATOMIC_ACQUIRE) || h->t_start_ns / 1000 < t_us)
            continue;
        count++;
        int found = 0;
        for (int k = 0; k < nseen; k++)
            found |= seen[k] == h->pid;
        if (!found && nseen < 64)
            seen[nseen++] = h->pid;
    }
    if (procs)
        *procs = nseen;
    return count;
}

int64_t chk_first_since(const chk_live_t *c, int64_t t_us)
{
    uint64_t n = chk_done(c->sh);
    int64_t first = -1;
    for (uint64_t i = 0; i < n; i++) {
        const chk_hold_t *h = &c->sh->holds[i];
        int64_t s = h->t_start_ns / 1000;
        if (__atomic_load_n(&h->filled, __ATOMIC_ACQUIRE) && s >= t_us && (first < 0 || s < first))
            first = s;
    }
    return first;
}

/* ------------------------------------------------------------------ verify */

static int cmp_name_start(const void *a, const void *b)
{
    const chk_hold_t *x = a, *y = b;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    return x->t_start_ns < y->t_start_ns ? -1 : x->t_start_ns > y->t_start_ns;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The checks of chk_verify_flags() for each lock name on its own (holds of
 * different names may overlap), summed; the lost updates of each name's
 * counter; the gaps between acquisitions.  holds[0..n): complete records. */
static void verify_names(const chk_live_t *c, chk_hold_t *holds, uint64_t n, chk_report_t *rep)
{
    int flags = c->cfg.fence_vouched_only ? CHK_FENCE_AFTER_VOUCHED : 0;
    int nnames = c->cfg.nnames > 0 ? c->cfg.nnames : 1;
    uint64_t writes[CHK_MAX_NAMES] = { 0 };
    if (nnames == 1) {
        chk_verify_flags(holds, n, flags, rep);
        writes[0] = rep->writes;
    } else {
        qsort(holds, (size_t)n, sizeof *holds, cmp_name_start);
        chk_report_t sum = *rep;
        sum.first[0] = sum.first_loss[0] = 0;
        sum.overlaps = sum.excused = sum.fence_inversions = sum.torn_reads = 0;
        sum.redis_bad = sum.redis_bad_excused = sum.writes = sum.max_readers = 0;
        sum.ownerdead = sum.unlock_enolck = sum.unlock_eio = sum.unlock_other = 0;
        sum.longest_hold_gap_ms = 0;
        for (uint64_t i = 0; i < n;) {
            uint64_t j = i;
            while (j < n && holds[j].name == holds[i].name)
                j++;
            chk_report_t part = *rep;
            part.first[0] = 0;
            chk_verify_flags(holds + i, j - i, flags, &part);
            sum.overlaps += part.overlaps;
            sum.excused += part.excused;
            sum.fence_inversions += part.fence_inversions;
            sum.torn_reads += part.torn_reads;
            sum.redis_bad += part.redis_bad;
            sum.redis_bad_excused += part.redis_bad_excused;
            sum.writes += part.writes;
            sum.ownerdead += part.ownerdead;
            sum.unlock_enolck += part.unlock_enolck;
            sum.unlock_eio += part.unlock_eio;
            sum.unlock_other += part.unlock_other;
            if (part.max_readers > sum.max_readers)
                sum.max_readers = part.max_readers;
            if (!sum.first[0] && part.first[0])
                snprintf(sum.first, sizeof sum.first, "lock %s: %s",
                         c->cfg.names[holds[i].name], part.first);
            if (!sum.first_loss[0] && part.first_loss[0])
                snprintf(sum.first_loss, sizeof sum.first_loss, "%s", part.first_loss);
            if (part.longest_hold_gap_ms > sum.longest_hold_gap_ms)
                sum.longest_hold_gap_ms = part.longest_hold_gap_ms;
            if (holds[i].name < CHK_MAX_NAMES)
                writes[holds[i].name] = part.writes;
            i = j;
        }
        *rep = sum;
    }
    /* per name (holds sorted by name, then start): the longest time between
     * two of its acquisitions */
    for (uint64_t k = 1; k < n; k++)
        if (holds[k].name == holds[k - 1].name && holds[k].name < CHK_MAX_NAMES) {
            int64_t gap = (holds[k].t_start_ns / 1000 - holds[k - 1].t_start_ns / 1000) / 1000;
            if (gap > rep->name_gap_ms[holds[k].name])
                rep->name_gap_ms[holds[k].name] = gap;
        }
    /* lost updates: each name's write holds against its counter */
    rep->counter = 0;
    rep->lost_updates = 0;
    for (int k = 0; k < nnames; k++) {
        uint64_t ctr = __atomic_load_n(&c->sh->counter[k], __ATOMIC_RELAXED);
        rep->counter += ctr;
        if (writes[k] > ctr)
            rep->lost_updates += writes[k] - ctr;
    }
    /* the longest time between two acquisitions, over every name */
    int64_t *starts = malloc(sizeof *starts * (n ? n : 1));
    if (!starts)
        return;
    for (uint64_t i = 0; i < n; i++)
        starts[i] = holds[i].t_start_ns / 1000;
    qsort(starts, (size_t)n, sizeof *starts, cmp_i64);
    for (uint64_t i = 1; i < n; i++)
        if (starts[i] - starts[i - 1] > rep->max_gap_ms * 1000) {
            rep->max_gap_ms = (starts[i] - starts[i - 1]) / 1000;
            rep->gap_from_us = starts[i - 1];
            rep->gap_to_us = starts[i];
        }
    free(starts);
}

/* Waits (until deadline, ms) for the children, then verifies into rep
 * and frees c.  0 when no violation was found. */
static int collect(chk_live_t *c, int64_t deadline, chk_report_t *rep)
{
    const chk_cfg_t *cfg = &c->cfg;
    chk_shared_t *sh = c->sh;
    rep->stopped = __atomic_load_n(&sh->stop, __ATOMIC_RELAXED);
    for (int i = 0; i < cfg->procs; i++) {
        long left = (long)(deadline - th_now_ms());
        int st = th_wait_child_ms(c->pids[i], left > 1 ? left : 1);  /* reaps, or kills */
        if (st != 0) {
            rep->children_failed++;
            if (!rep->first[0])
                snprintf(rep->first, sizeof rep->first, "checker child %d: status %d%s", (int)c->pids[i],
                         st, st == TH_WAIT_TIMEOUT ? " (still running: killed)" :
                         st == TH_CHILD_FAIL ? " (a lock call failed)" :
                         st > 128 ? " (killed by a signal)" : "");
        }
    }
    chk_running = NULL;
    rep->elapsed_ms = th_now_ms() - c->t0;
    uint64_t n = chk_done(sh);
    if (rep->stopped)
        rep->expected = n;          /* every hold begun must be complete */
    /* complete records first */
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (sh->holds[i].filled)
            sh->holds[m++] = sh->holds[i];
    rep->holds = m;
    rep->unfilled = n - m;
    verify_names(c, sh->holds, m, rep);
    if (cfg->holds_out && cfg->nholds_out) {
        /* the complete holds, sorted by start (by name first with several) */
        *cfg->holds_out = malloc(sizeof(chk_hold_t) * (rep->holds ? rep->holds : 1));
        *cfg->nholds_out = *cfg->holds_out ? rep->holds : 0;
        if (*cfg->holds_out)
            memcpy(*cfg->holds_out, sh->holds, sizeof(chk_hold_t) * rep->holds);
    }
    rep->lock_eio = sh->lock_eio;
    rep->lock_timedout = sh->lock_timedout;
    rep->lock_other = sh->lock_other;
    rep->max_call_ms = sh->max_call_us / 1000;
    rep->redirects = sh->redirects;
    rep->reconnects = sh->reconnects;
    snprintf(rep->first_error, sizeof rep->first_error, "%s", sh->first_error);
    rep->ops_per_s = rep->elapsed_ms > 0 ? rep->holds * 1000.0 / (double)rep->elapsed_ms : 0;
    if (!rep->first[0] && rep->holds != rep->expected)
        snprintf(rep->first, sizeof rep->first, "%llu holds recorded, %llu expected",
                 (unsigned long long)rep->holds, (unsigned long long)rep->expected);
    /* A hold not vouched for (unlock ENOLCK/EIO) that ran over others
     * wrote back a counter read before them: lost updates are then
     * expected, and counted in the totals but not as a violation. */
    if (!rep->first[0] && rep->lost_updates && !rep->excused)
        snprintf(rep->first, sizeof rep->first, "lost updates: counter %llu after %llu write holds",
                 (unsigned long long)rep->counter, (unsigned long long)rep->writes);
    free(c->pids);
    free(c->prs);
    chk_shared_free(sh);
    free(c);
    int bad = rep->children_failed || rep->holds != rep->expected || rep->overlaps ||
              rep->fence_inversions || (rep->lost_updates && !rep->excused) ||
              (rep->torn_reads && !rep->excused) || rep->redis_bad || rep->unlock_other;
    return bad ? -1 : 0;
}

int chk_finish(chk_live_t *c, long timeout_ms, chk_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    __atomic_store_n(&c->sh->stop, 1, __ATOMIC_RELAXED);
    return collect(c, th_now_ms() + timeout_ms, rep);
}

int chk_run(const chk_cfg_t *cfg, chk_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    rep->expected = (uint64_t)cfg->ops * (cfg->lockall >= 2 ? (uint64_t)cfg->lockall : 1);
    chk_live_t *c = chk_start(cfg);
    if (!c) {
        snprintf(rep->first, sizeof rep->first, "mmap of %ld holds failed", cfg->ops);
        return -1;
    }
    long max_ms = cfg->max_ms > 0 ? cfg->max_ms : 35000;
    long tick_ms = cfg->tick_ms > 0 ? cfg->tick_ms : 20;
    int64_t next_tick = c->t0 + tick_ms;
    for (;;) {
        int running = 0;
        for (int i = 0; i < cfg->procs; i++)
            if (c->pids[i] > 0 && !exited(c->pids[i]))
                running++;
        int64_t now = th_now_ms();
        if (!running || now - c->t0 >= max_ms)
            break;
        if (cfg->tick && now >= next_tick) {
            cfg->tick(cfg->tick_arg, now - c->t0, chk_done(c->sh));
            next_tick = th_now_ms() + tick_ms;
        }
        th_sleep_ms(2);
    }
    return collect(c, 0, rep);      /* the children still running are killed */
}
