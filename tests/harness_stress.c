/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_stress.c - see harness_stress.h. */
#include "harness_topo.h"
#include "dl_stats.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>


struct tt_stress {
    size_t map_len;
    tt_stress_cfg_t cfg;
    pid_t pids[64];
    int nprocs;
    volatile int stop;
    uint64_t next;                          /* records handed out */
    volatile int64_t counter[TT_MAX_NAMES];
    uint64_t lock_eio, lock_timedout, lock_other;
    int64_t max_call_us;
    int error_taken;
    uint64_t redirects, reconnects;
    char first_error[256];
    tt_hold_t h[];
};

struct tt_worker {
    tt_stress_t *s;
    dist_mutex_t *m;
    int index;
};

static void atomic_max(int64_t *p, int64_t v)
{
    int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void *stress_thread(void *p)
{
    struct tt_worker *w = p;
    tt_stress_t *s = w->s;
    const tt_stress_cfg_t *cfg = &s->cfg;
    int32_t tid = (int32_t)syscall(SYS_gettid);
    long done = 0;
    int k = w->index % cfg->nnames;
    while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED) && (!cfg->ops || done < cfg->ops)) {
        int ni = k;
        k = (k + 1) % cfg->nnames;
        int64_t t0 = th_now_us();
        int rc;
        if (cfg->timed_ms > 0) {
            struct timespec ts = th_abstime_ms(cfg->timed_ms);
            rc = dist_mutex_timedlock(&w->m[ni], &ts);
        } else {
            rc = dist_mutex_lock(&w->m[ni]);
        }
        int64_t t1 = th_now_us();
        atomic_max(&s->max_call_us, t1 - t0);
        if (rc != 0 && rc != EOWNERDEAD) {
            __atomic_add_fetch(rc == EIO ? &s->lock_eio : rc == ETIMEDOUT ? &s->lock_timedout
                                                                          : &s->lock_other,
                               1, __ATOMIC_RELAXED);
            if (!__atomic_exchange_n(&s->error_taken, 1, __ATOMIC_RELAXED))
                snprintf(s->first_error, sizeof s->first_error, "%s: %s", th_errname(rc),
                         dist_lasterror());
            th_sleep_ms(10);
            continue;
        }
        uint64_t fence = 0;
        dist_mutex_getfence(&w->m[ni], &fence);
        int64_t c = s->counter[ni];
        if (cfg->hold_us > 0)
            th_sleep_us(cfg->hold_us);
        s->counter[ni] = c + 1;
        int64_t t2 = th_now_us();
        int urc = dist_mutex_unlock(&w->m[ni]);
        uint64_t slot = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
        if (slot < cfg->cap) {
            tt_hold_t *h = &s->h[slot];
            h->start_us = t1;
            h->end_us = t2;
            h->fence = fence;
            h->pid = (int32_t)getpid();
            h->tid = tid;
            h->name = (int16_t)ni;
            h->lock_rc = (int16_t)rc;
            h->unlock_rc = (int16_t)urc;
            __atomic_store_n(&h->filled, 1, __ATOMIC_RELEASE);
        }
        done++;
    }
    return NULL;
}

static int stress_proc(void *p)
{
    tt_stress_t *s = p;
    const tt_stress_cfg_t *cfg = &s->cfg;
    alarm(0);
    th_setenv_list(cfg->env);
    dist_mutex_t m[TT_MAX_NAMES];
    dist_mutexattr_t at;
    dist_mutexattr_init(&at);
    if (cfg->lease_ms > 0)
        dist_mutexattr_setlease(&at, (unsigned long)cfg->lease_ms);
    for (int i = 0; i < cfg->nnames; i++) {
        int rc = dist_mutex_init(&m[i], cfg->names[i], &at);
        if (rc) {
            fprintf(stderr, "stress [%d]: dist_mutex_init(%s) = %s: %s\n", (int)getpid(),
                    cfg->names[i], th_errname(rc), dist_lasterror());
            return TH_CHILD_FAIL;
        }
    }
    pthread_t th[64];
    struct tt_worker w[64];
    int nt = cfg->threads < 64 ? cfg->threads : 64;
    for (int i = 0; i < nt; i++) {
        w[i].s = s;
        w[i].m = m;
        w[i].index = i + (int)getpid();
        pthread_create(&th[i], NULL, stress_thread, &w[i]);
    }
    for (int i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < cfg->nnames; i++)
        dist_mutex_destroy(&m[i]);
    dl_stats_t st;
    dl_stats_get(&st);
    __atomic_add_fetch(&s->redirects, st.redirects, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->reconnects, st.reconnects, __ATOMIC_RELAXED);
    return 0;
}

tt_stress_t *tt_stress_start(const tt_stress_cfg_t *cfg)
{
    uint64_t cap = cfg->cap ? cfg->cap : 200000;
    size_t len = sizeof(tt_stress_t) + (size_t)cap * sizeof(tt_hold_t);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    tt_stress_t *s = p;
    s->map_len = len;
    s->cfg = *cfg;
    s->cfg.cap = cap;
    if (s->cfg.nnames <= 0)
        s->cfg.nnames = 1;
    int np = cfg->procs < 64 ? cfg->procs : 64;
    for (int i = 0; i < np; i++)
        s->pids[s->nprocs++] = th_fork_child(stress_proc, s);
    return s;
}

uint64_t tt_stress_holds(const tt_stress_t *s)
{
    uint64_t n = __atomic_load_n(&s->next, __ATOMIC_RELAXED);
    return n > s->cfg.cap ? s->cfg.cap : n;
}

uint64_t tt_stress_holds_since(const tt_stress_t *s, int64_t t_us, int *procs)
{
    uint64_t n = tt_stress_holds(s), count = 0;
    int32_t seen[64];
    int nseen = 0;
    for (uint64_t i = 0; i < n; i++) {
        const tt_hold_t *h = &s->h[i];
        if (!__atomic_load_n(&h->filled, __ATOMIC_ACQUIRE) || h->start_us < t_us)
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

int64_t tt_stress_first_since(const tt_stress_t *s, int64_t t_us)
{
    uint64_t n = tt_stress_holds(s);
    int64_t first = -1;
    for (uint64_t i = 0; i < n; i++) {
        const tt_hold_t *h = &s->h[i];
        if (__atomic_load_n(&h->filled, __ATOMIC_ACQUIRE) && h->start_us >= t_us &&
            (first < 0 || h->start_us < first))
            first = h->start_us;
    }
    return first;
}

static int cmp_hold(const void *a, const void *b)
{
    const tt_hold_t *x = a, *y = b;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    return x->start_us < y->start_us ? -1 : x->start_us > y->start_us;
}

static int cmp_start(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The holds of one name around index j (holds i.. of that name, sorted),
 * for a violation report; also any hold of the name that lapsed
 * (ENOLCK/EOWNERDEAD) near it. */
static void dump_context(const tt_hold_t *h, uint64_t i, uint64_t j, uint64_t m, const char *name)
{
    uint64_t from = j >= i + 6 ? j - 6 : i, to = j + 4 < m ? j + 4 : m;
    printf("stress: holds of %s around the violation (start, end relative to the first shown; us):\n",
           name);
    int64_t base = h[from].start_us;
    for (uint64_t k = from; k < to && h[k].name == h[j].name; k++)
        printf("  %s pid %d tid %d start %+lld end %+lld fence %llu lock %s unlock %s\n",
               k == j ? "->" : "  ", h[k].pid, h[k].tid, (long long)(h[k].start_us - base),
               (long long)(h[k].end_us - base), (unsigned long long)h[k].fence,
               th_errname(h[k].lock_rc), th_errname(h[k].unlock_rc));
    fflush(stdout);
}

void tt_stress_finish(tt_stress_t *s, long timeout_ms, tt_stress_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
    int64_t deadline = th_now_ms() + timeout_ms;
    for (int i = 0; i < s->nprocs; i++) {
        long left = (long)(deadline - th_now_ms());
        int st = th_wait_child_ms(s->pids[i], left > 1 ? left : 1);
        if (st != 0) {
            rep->children_failed++;
            fprintf(stderr, "stress: worker %d ended with status %d\n", (int)s->pids[i], st);
        }
    }
    uint64_t n = tt_stress_holds(s);
    tt_hold_t *h = malloc((n ? n : 1) * sizeof *h);
    int64_t *starts = malloc((n ? n : 1) * sizeof *starts);
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (s->h[i].filled)
            h[m++] = s->h[i];
    qsort(h, m, sizeof *h, cmp_hold);
    rep->holds = m;
    for (uint64_t i = 0; i < m; i++) {
        starts[i] = h[i].start_us;
        rep->ownerdead += h[i].lock_rc == EOWNERDEAD;
        rep->unlock_enolck += h[i].unlock_rc == ENOLCK;
        rep->unlock_eio += h[i].unlock_rc == EIO;
        rep->unlock_other += h[i].unlock_rc != 0 && h[i].unlock_rc != ENOLCK && h[i].unlock_rc != EIO;
    }
    /* Per name, in start order: the hold ending last so far must end
     * before the next one starts, unless it was reported lost at unlock. */
    uint64_t per_name[TT_MAX_NAMES] = { 0 };
    for (uint64_t i = 0; i < m; ) {
        int name = h[i].name;
        uint64_t j = i;
        const tt_hold_t *cur = &h[i];
        per_name[name]++;
        for (j = i + 1; j < m && h[j].name == name; j++) {
            const tt_hold_t *nx = &h[j];
            per_name[name]++;
            if ((nx->start_us - h[j - 1].start_us) / 1000 > rep->name_gap_ms[name])
                rep->name_gap_ms[name] = (nx->start_us - h[j - 1].start_us) / 1000;
            if (nx->start_us < cur->end_us) {
                if (cur->unlock_rc != 0 || nx->unlock_rc != 0) {
                    rep->excused++;
                } else {
                    if (!rep->overlaps)
                        dump_context(h, i, j, m, s->cfg.names[name]);
                    rep->overlaps++;
                    if (!rep->first[0])
                        snprintf(rep->first, sizeof rep->first,
                                 "lock %s: hold of %d/%d [%lld, %lld] us overlaps hold of %d/%d "
                                 "starting at %lld us (fences %llu, %llu)",
                                 s->cfg.names[name], cur->pid, cur->tid, (long long)cur->start_us,
                                 (long long)cur->end_us, nx->pid, nx->tid, (long long)nx->start_us,
                                 (unsigned long long)cur->fence, (unsigned long long)nx->fence);
                }
            } else if (cur->unlock_rc == 0 && (nx->fence < cur->fence ||
                                                (nx->fence == cur->fence && nx->pid != cur->pid))) {
                rep->fence_inversions++;
                if (!rep->first[0]) {
                    snprintf(rep->first, sizeof rep->first,
                             "lock %s: fence %llu (pid %d) after fence %llu (pid %d)",
                             s->cfg.names[name], (unsigned long long)nx->fence, nx->pid,
                             (unsigned long long)cur->fence, cur->pid);
                    dump_context(h, i, j, m, s->cfg.names[name]);
                }
            }
            if (nx->end_us > cur->end_us || nx->start_us >= cur->end_us)
                cur = nx;
        }
        i = j;
    }
    for (int k = 0; k < s->cfg.nnames; k++) {
        int64_t c = s->counter[k];
        if ((int64_t)per_name[k] > c)
            rep->lost_updates += per_name[k] - (uint64_t)c;
    }
    qsort(starts, m, sizeof *starts, cmp_start);
    for (uint64_t i = 1; i < m; i++)
        if (starts[i] - starts[i - 1] > rep->max_gap_ms * 1000) {
            rep->max_gap_ms = (starts[i] - starts[i - 1]) / 1000;
            rep->gap_from_us = starts[i - 1];
            rep->gap_to_us = starts[i];
        }
    rep->lock_eio = s->lock_eio;
    rep->lock_timedout = s->lock_timedout;
    rep->lock_other = s->lock_other;
    rep->max_call_ms = s->max_call_us / 1000;
    rep->redirects = s->redirects;
    rep->reconnects = s->reconnects;
    snprintf(rep->first_error, sizeof rep->first_error, "%s", s->first_error);
    free(h);
    free(starts);
}

void tt_stress_free(tt_stress_t *s)
{
    if (s)
        munmap(s, s->map_len);
}

void tt_stress_print(const char *title, const tt_stress_report_t *r)
{
    printf("%s: holds=%llu ownerdead=%llu overlaps=%llu excused=%llu fence_inversions=%llu "
           "lost_updates=%llu unlock_enolck=%llu unlock_eio=%llu unlock_other=%llu lock_eio=%llu "
           "lock_timedout=%llu lock_other=%llu max_call_ms=%lld max_gap_ms=%lld redirects=%llu "
           "reconnects=%llu children_failed=%d\n",
           title, (unsigned long long)r->holds, (unsigned long long)r->ownerdead,
           (unsigned long long)r->overlaps, (unsigned long long)r->excused,
           (unsigned long long)r->fence_inversions, (unsigned long long)r->lost_updates,
           (unsigned long long)r->unlock_enolck, (unsigned long long)r->unlock_eio,
           (unsigned long long)r->unlock_other, (unsigned long long)r->lock_eio,
           (unsigned long long)r->lock_timedout, (unsigned long long)r->lock_other,
           (long long)r->max_call_ms, (long long)r->max_gap_ms, (unsigned long long)r->redirects,
           (unsigned long long)r->reconnects, r->children_failed);
    if (r->first[0])
        printf("%s: first violation: %s\n", title, r->first);
    if (r->first_error[0])
        printf("%s: a failed lock call: %s\n", title, r->first_error);
    fflush(stdout);
}
