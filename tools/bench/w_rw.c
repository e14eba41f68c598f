/* SPDX-License-Identifier: BSD-3-Clause */
/* w_rw.c - W5: 4 processes x 8 threads hold read on one rwlock in a loop
 * {rdlock; 100 us work; unlock} while 1 writer (a fifth process) takes
 * wrlock once per second; then the same with 1 reader thread.
 *
 * reader_unlock_usec_per_call: the Redis time of one read unlock.  INFO
 * commandstats has one line for EVALSHA, whatever the script, so it cannot
 * tell the release script from the acquire script; the per-call figure is
 * therefore read from the SLOWLOG (threshold 2 us, for a window in the
 * middle of each phase), which logs every EVALSHA with its duration and its
 * arguments (the script's SHA1 and the mode).  The commandstats figure for
 * all EVALSHA calls of the same window is reported next to it
 * (evalsha_usec_per_call_*), as other libraries' runs report it.
 *
 * Both are wall-clock times inside Redis, so they also grow when the
 * phase's client threads take the CPUs from Redis.  A control probe shows
 * by how much: EVAL of "return 1" (a command nothing else sends) every 5 ms
 * of the same window, from commandstats (probe_usec_per_call_*).  So that
 * the figure measures the script rather than the run queue of 33 busy
 * client threads, a server the bench started gets a CPU of its own and
 * nice -10 during W5, the clients the other CPUs (`redis_isolated` says
 * whether that could be done). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>

#include "bench.h"
#include "distlock.h"
#include "dl_script_list.h"
#include "script.h"

#define W5_MAX_THREADS 32
#define W5_SAMPLES 50000          /* reservoir per reader thread */
#define W5_MAX_WRITES 256
/* Logs every script call (a read unlock takes well over 2 us) but not the
 * sub-microsecond commands the scripts run inside, whose own SLOWLOG
 * entries would otherwise be written, and counted, inside the script's
 * time. */
#define W5_SLOWLOG_US "2"

typedef struct w5 {
    char name[128];
    int procs, threads;
    volatile int stop;
    gate_t gate;
    progress_t pr;
    unsigned long pairs[W5_MAX_THREADS];
    unsigned long nsamp[W5_MAX_THREADS];
    unsigned long nw;
    double wwait[W5_MAX_WRITES];
    uint64_t t_start;
    double samples[];             /* W5_MAX_THREADS x W5_SAMPLES */
} w5_t;

typedef struct w5_thread {
    w5_t *w;
    dist_rwlock_t *rw;
    pthread_barrier_t *bar;
    int slot, failed;
} w5_thread_t;

static void *w5_reader(void *arg)
{
    w5_thread_t *t = arg;
    w5_t *w = t->w;
    prctl(PR_SET_TIMERSLACK, 1UL);          /* 100 us of work is 100 us */
    double *s = w->samples + (size_t)t->slot * W5_SAMPLES;
    unsigned int seed = (unsigned)t->slot * 7919u + 1;
    pthread_barrier_wait(t->bar);
    unsigned long n = 0;
    while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
        uint64_t t0 = now_ns();
        int rc = dist_rwlock_rdlock(t->rw);
        uint64_t t1 = now_ns();
        if (lock_err("W5 rdlock", rc)) {
            t->failed = 1;
            break;
        }
        sleep_us(100);
        uint64_t t2 = now_ns();
        rc = dist_rwlock_unlock(t->rw);
        uint64_t t3 = now_ns();
        if (lock_err("W5 unlock", rc)) {
            t->failed = 1;
            break;
        }
        double v = (double)(t1 - t0 + t3 - t2) / 1e3;
        if (n < W5_SAMPLES) {
            s[n] = v;
        } else {                                 /* reservoir sampling */
            unsigned long j = (unsigned long)rand_r(&seed) % (n + 1);
            if (j < W5_SAMPLES)
                s[j] = v;
        }
        n++;
        w->pairs[t->slot] = n;
        w->nsamp[t->slot] = n < W5_SAMPLES ? n : W5_SAMPLES;
    }
    return NULL;
}

static int w5_reader_proc(void *arg, int proc)
{
    w5_t *w = arg;
    dist_rwlock_t rw;
    if (rwlock_warm(&rw, w->name, 'r'))
        return 1;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)w->threads + 1);
    pthread_t th[W5_MAX_THREADS];
    w5_thread_t ta[W5_MAX_THREADS];
    for (int i = 0; i < w->threads; i++) {
        ta[i] = (w5_thread_t){ w, &rw, &bar, proc * w->threads + i, 0 };
        pthread_create(&th[i], NULL, w5_reader, &ta[i]);
    }
    gate_pass(&w->gate);
    pthread_barrier_wait(&bar);
    int failed = 0;
    for (int i = 0; i < w->threads; i++) {
        pthread_join(th[i], NULL);
        failed |= ta[i].failed;
    }
    dist_rwlock_destroy(&rw);
    return failed;
}

static int w5_writer_proc(void *arg, int idx)
{
    w5_t *w = arg;
    dist_rwlock_t rw;
    if (rwlock_warm(&rw, w->name, 'w'))
        return 1;
    prctl(PR_SET_TIMERSLACK, 1UL);
    gate_pass(&w->gate);
    uint64_t start = now_ns();
    for (unsigned long k = 0; w->nw < W5_MAX_WRITES; k++) {
        uint64_t at = start + 500000000ull + k * 1000000000ull;   /* 0.5 s, 1.5 s, ... */
        while (now_ns() < at && !__atomic_load_n(&w->stop, __ATOMIC_RELAXED))
            sleep_us(10000);
        if (__atomic_load_n(&w->stop, __ATOMIC_RELAXED))
            break;
        uint64_t t0 = now_ns();
        int rc = dist_rwlock_wrlock(&rw);
        uint64_t t1 = now_ns();
        if (lock_err("W5 wrlock", rc))
            return 1;
        sleep_us(100);
        if (lock_err("W5 writer unlock", dist_rwlock_unlock(&rw)))
            return 1;
        w->wwait[w->nw++] = (double)(t1 - t0) / 1e3;
    }
    dist_rwlock_destroy(&rw);
    return 0;
}

typedef struct phase {
    double ops_per_s, p50_us, p99_us;
    double unlock_usec, acquire_usec, evalsha_usec;
    double probe_usec;            /* EVAL "return 1" in the same window: the load's effect */
    unsigned long unlocks_sampled;
    double wwait_p99, wwait_max;
    unsigned long writes;
    int ok;
} phase_t;

static void cfg_get(redisContext *c, const char *key, char *out, size_t size)
{
    out[0] = 0;
    redisReply *r = rc_cmd(c, "CONFIG GET %s", key);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING)
        snprintf(out, size, "%s", r->element[1]->str);
    if (r)
        freeReplyObject(r);
}

static void cfg_set(redisContext *c, const char *key, const char *val)
{
    redisReply *r = rc_cmd(c, "CONFIG SET %s %s", key, val);
    if (r)
        freeReplyObject(r);
}

/* Mean SLOWLOG duration of the read-mode calls of one script (sha). */
static void slowlog_scan(redisReply *r, const char *rel_sha, const char *acq_sha, double *rel_us,
                         unsigned long *nrel, double *acq_us)
{
    double rs = 0, as = 0;
    unsigned long rn = 0, an = 0;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 4)
            continue;
        redisReply *argv = e->element[3];
        if (argv->type != REDIS_REPLY_ARRAY || argv->elements < 12)
            continue;
        if (strcasecmp(argv->element[0]->str, "evalsha"))
            continue;
        const char *sha = argv->element[1]->str, *mode = argv->element[11]->str;
        if (strcmp(mode, "r"))
            continue;
        double d = (double)e->element[2]->integer;
        if (!strcasecmp(sha, rel_sha)) {
            rs += d;
            rn++;
        } else if (!strcasecmp(sha, acq_sha)) {
            as += d;
            an++;
        }
    }
    *rel_us = rn ? rs / (double)rn : 0;
    *nrel = rn;
    *acq_us = an ? as / (double)an : 0;
}

/* Sleeps `secs`, keeping the progress line; with c, sends the control
 * probe (EVAL of "return 1", which nothing else sends) every 5 ms. */
static void sleep_showing(const char *label, w5_t *w, double secs, double total, redisContext *c)
{
    uint64_t until = now_ns() + (uint64_t)(secs * 1e9), shown = 0;
    while (now_ns() < until) {
        if (now_ns() - shown > 100000000ull) {
            w->pr.done = (unsigned long)((double)(now_ns() - w->t_start) / 1e6);
            w->pr.total = (unsigned long)(total * 1000);
            progress_show(label, &w->pr);
            shown = now_ns();
        }
        if (c) {
            redisReply *r = redisCommand(c, "EVAL %s 0", "return 1");
            if (r)
                freeReplyObject(r);
        }
        uint64_t left = until > now_ns() ? until - now_ns() : 0;
        unsigned long step = c ? 5000 : 100000;
        sleep_us(left > step * 1000ull ? step : (unsigned long)(left / 1000) + 1);
    }
}

static int run_phase(int procs, int threads, double secs, phase_t *out)
{
    memset(out, 0, sizeof *out);
    size_t size = sizeof(w5_t) + (size_t)W5_MAX_THREADS * W5_SAMPLES * sizeof(double);
    w5_t *w = shm_alloc(size);
    char suffix[32];
    snprintf(suffix, sizeof suffix, "r%d", procs * threads);
    lock_name(w->name, sizeof w->name, "W5", suffix);
    w->procs = procs;
    w->threads = threads;
    gate_init(&w->gate, procs + 1);
    char label[32];
    snprintf(label, sizeof label, "W5 %d reader%s", procs * threads, procs * threads > 1 ? "s" : "");

    redisContext *c = rc_connect("bench-ctl");
    if (!c) {
        shm_free(w, size);
        return -1;
    }
    pid_t pids[8];
    for (int i = 0; i < procs; i++)
        pids[i] = spawn(w5_reader_proc, w, i);
    pids[procs] = spawn(w5_writer_proc, w, 0);
    int n = procs + 1;
    int rc = gate_start(&w->gate, pids, n, NULL, NULL, &w->t_start);

    if (rc == 0) {
        /* The measuring window: 10% .. 90% of the phase. */
        char slt[32], sll[32];
        sleep_showing(label, w, secs * 0.1, secs, NULL);
        cfg_get(c, "slowlog-log-slower-than", slt, sizeof slt);
        cfg_get(c, "slowlog-max-len", sll, sizeof sll);
        cfg_set(c, "slowlog-max-len", "50000");
        redisReply *r = rc_cmd(c, "SLOWLOG RESET");
        if (r)
            freeReplyObject(r);
        long long ec0, eu0, ec1, eu1;
        long long pc0, pu0, pc1, pu1;
        rc_cmdstat(c, "evalsha", &ec0, &eu0);
        rc_cmdstat(c, "eval", &pc0, &pu0);
        cfg_set(c, "slowlog-log-slower-than", W5_SLOWLOG_US);
        sleep_showing(label, w, secs * 0.8, secs, c);
        cfg_set(c, "slowlog-log-slower-than", "-1");
        rc_cmdstat(c, "evalsha", &ec1, &eu1);
        rc_cmdstat(c, "eval", &pc1, &pu1);
        out->probe_usec = pc1 > pc0 ? (double)(pu1 - pu0) / (double)(pc1 - pc0) : 0;
        r = rc_cmd(c, "SLOWLOG GET 50000");
        slowlog_scan(r, dl_scripts[DL_SCRIPT_RELEASE].sha, dl_scripts[DL_SCRIPT_ACQUIRE].sha,
                     &out->unlock_usec, &out->unlocks_sampled, &out->acquire_usec);
        if (r)
            freeReplyObject(r);
        r = rc_cmd(c, "SLOWLOG RESET");
        if (r)
            freeReplyObject(r);
        if (slt[0])
            cfg_set(c, "slowlog-log-slower-than", slt);
        if (sll[0])
            cfg_set(c, "slowlog-max-len", sll);
        out->evalsha_usec = ec1 > ec0 ? (double)(eu1 - eu0) / (double)(ec1 - ec0) : 0;
        sleep_showing(label, w, secs * 0.1, secs, NULL);
    }
    uint64_t t_stop = now_ns();
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELAXED);
    rc = wait_workers(pids, n, label, NULL) || rc;
    if (rc == 0) {
        unsigned long pairs = 0, ns = 0;
        int nthreads = procs * threads;
        for (int i = 0; i < nthreads; i++)
            pairs += w->pairs[i];
        double *all = malloc(sizeof *all * (size_t)nthreads * W5_SAMPLES);
        for (int i = 0; i < nthreads; i++) {
            memcpy(all + ns, w->samples + (size_t)i * W5_SAMPLES, w->nsamp[i] * sizeof(double));
            ns += w->nsamp[i];
        }
        sort_doubles(all, ns);
        out->ops_per_s = (double)pairs / ((double)(t_stop - w->t_start) / 1e9);
        out->p50_us = pct_sorted(all, ns, 0.5);
        out->p99_us = pct_sorted(all, ns, 0.99);
        free(all);
        sort_doubles(w->wwait, w->nw);
        out->writes = w->nw;
        out->wwait_p99 = pct_sorted(w->wwait, w->nw, 0.99);
        out->wwait_max = w->nw ? w->wwait[w->nw - 1] : 0;
        out->ok = 1;
    }
    redisFree(c);
    gate_destroy(&w->gate);
    shm_free(w, size);
    return rc ? -1 : 0;
}

int run_w5(void)
{
    double secs = g_opt.w5_seconds > 0 ? g_opt.w5_seconds : (g_opt.quick ? 1.5 : 6);
    phase_t many, one;
    int isolated = server_isolate(1) == 0;
    int failed = run_phase(4, 8, secs, &many) || run_phase(1, 1, secs, &one);
    server_isolate(0);
    if (failed) {
        output_error("W5", "workers failed");
        return -1;
    }
    result_t *r = result_new("distlock", "W5");
    r->ops_per_s = many.ops_per_s;
    r->p50_us = many.p50_us;
    r->p99_us = many.p99_us;
    result_extra(r, "readers", "32");
    result_extra(r, "reader_unlock_usec_per_call_32", "%.2f", many.unlock_usec);
    result_extra(r, "reader_unlock_usec_per_call_1", "%.2f", one.unlock_usec);
    result_extra(r, "unlock_cost_ratio", "%.2f",
                 one.unlock_usec > 0 ? many.unlock_usec / one.unlock_usec : 0);
    result_extra(r, "reader_unlocks_sampled_32", "%lu", many.unlocks_sampled);
    result_extra(r, "reader_unlocks_sampled_1", "%lu", one.unlocks_sampled);
    result_extra(r, "reader_lock_usec_per_call_32", "%.2f", many.acquire_usec);
    result_extra(r, "reader_lock_usec_per_call_1", "%.2f", one.acquire_usec);
    /* The control: the same measure of a script that does nothing, sent by
     * the bench every 5 ms of the same windows.  Wall time per call grows
     * with the CPU load of the phase whatever the script does. */
    result_extra(r, "probe_usec_per_call_32", "%.2f", many.probe_usec);
    result_extra(r, "probe_usec_per_call_1", "%.2f", one.probe_usec);
    if (many.probe_usec > 0 && one.probe_usec > 0 && one.unlock_usec > 0)
        result_extra(r, "unlock_cost_ratio_over_probe", "%.2f",
                     (many.unlock_usec / many.probe_usec) / (one.unlock_usec / one.probe_usec));
    result_extra(r, "evalsha_usec_per_call_32", "%.2f", many.evalsha_usec);
    result_extra(r, "evalsha_usec_per_call_1", "%.2f", one.evalsha_usec);
    result_extra(r, "writer_wait_p99_us", "%.0f", many.wwait_p99);
    result_extra(r, "writer_wait_p99_us_1", "%.0f", one.wwait_p99);
    result_extra(r, "writes", "%lu", many.writes);
    result_extra(r, "ops_per_s_1", "%.0f", one.ops_per_s);
    result_extra(r, "p50_us_1", "%.1f", one.p50_us);
    result_extra(r, "p99_us_1", "%.1f", one.p99_us);
    result_extra(r, "phase_s", "%.1f", secs);
    result_extra(r, "source", "slowlog");
    result_extra(r, "redis_isolated", "%d", isolated);
    result_emit(r);
    return 0;
}
