/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_fault.c - the fault schedule: drawn from the run's seed before
 * the run (kinds, times, durations, targets by rank), injected while it
 * runs, and printed with what each fault hit when the run fails.
 *
 * Targets are drawn as numbers and resolved when the fault is due (the
 * n-th live client), since which clients live then depends on earlier
 * kills.  One kind reacts to the run: STOP_GRANTEE waits (armed) for the
 * next lock call that returns after waiting (a grant pushed to a waiter,
 * the moment a hold is youngest) and stops that process at once.
 *
 * Clock faults: SRVCLOCK jumps a lock server's wall clock (nm_clockshim.c),
 * mostly forward (its keys expire early: a loss no client is shown),
 * sometimes back (they live longer); CLOCK jumps a client's wall clock
 * (nemesis_clock.c), forward or back, which must change nothing but when
 * its timed calls' deadlines come.
 *
 * DELKEY deletes one lock's key in Redis (no push, no other sign) while a
 * thread holds it and is about to relock it reentrantly (its plan in the
 * record: watch_plans): the relock comes past the 40 ms a process may
 * trust a hold unconfirmed, so it must ask Redis and say EOWNERDEAD (and
 * the section's last unlock ENOLCK); a library that trusted the hold says
 * 0 (tools/mutants.sh, trust).
 */
#include "nemesis_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *const fault_names[NM_F_COUNT] = {
    [NM_F_KILL] = "kill",         [NM_F_STOP] = "stop",       [NM_F_STOP_GRANTEE] = "stopgrantee",
    [NM_F_RESTART] = "restart",   [NM_F_FLUSH] = "flush",     [NM_F_BREAK] = "break",
    [NM_F_PAUSE] = "pause",       [NM_F_CKILL] = "clientkill", [NM_F_DELAY] = "delay",
    [NM_F_FREEZE] = "freeze",     [NM_F_JITTER] = "jitter",   [NM_F_BLACKHOLE] = "blackhole",
    [NM_F_MUTE] = "mute",         [NM_F_SRVSTOP] = "srvstop", [NM_F_FAILOVER] = "failover",
    [NM_F_MIGRATE] = "migrate",   [NM_F_PARTITION] = "partition", [NM_F_STALL] = "stall",
    [NM_F_SRVCLOCK] = "srvclock", [NM_F_CLOCK] = "clock",     [NM_F_LATE] = "late",
    [NM_F_DELKEY] = "delkey",
};

/* How often each kind is drawn, relative to the others enabled. */
static const int fault_weight[NM_F_COUNT] = {
    [NM_F_KILL] = 6,    [NM_F_STOP] = 8,    [NM_F_STOP_GRANTEE] = 10, [NM_F_RESTART] = 9,
    [NM_F_FLUSH] = 8,   [NM_F_BREAK] = 8,   [NM_F_PAUSE] = 4,         [NM_F_CKILL] = 5,
    [NM_F_DELAY] = 10,  [NM_F_FREEZE] = 6,  [NM_F_JITTER] = 4,        [NM_F_BLACKHOLE] = 3,
    [NM_F_MUTE] = 3,    [NM_F_SRVSTOP] = 3, [NM_F_FAILOVER] = 8,      [NM_F_MIGRATE] = 8,
    [NM_F_PARTITION] = 12,      [NM_F_SRVCLOCK] = 7, [NM_F_CLOCK] = 5,    [NM_F_LATE] = 4,
    /* (delkey: not drawn here, nm_schedule_make places its own) */
};

const char *nm_fault_name(int kind)
{
    return kind >= 0 && kind < NM_F_COUNT ? fault_names[kind] : "?";
}

unsigned nm_fault_parse(const char *list)
{
    if (!list || !*list || strcmp(list, "single") == 0 || strcmp(list, "all") == 0)
        return NM_FAULTS_SINGLE;
    unsigned bits = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int k = 0; k < NM_F_COUNT; k++)
            if (fault_names[k] && strcmp(tok, fault_names[k]) == 0) {
                bits |= NM_BIT(k);
                found = 1;
            }
        if (!found)
            return 0;
    }
    return bits;
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static long rin(uint64_t *s, long lo, long hi)
{
    return hi <= lo ? lo : lo + (long)(rnd(s) % (uint64_t)(hi - lo + 1));
}

static int pick_kind(uint64_t *s, unsigned enabled)
{
    int total = 0;
    for (int k = 0; k < NM_F_COUNT; k++)
        if (enabled & NM_BIT(k))
            total += fault_weight[k];
    if (total == 0)
        return -1;
    long r = rin(s, 0, total - 1);
    for (int k = 0; k < NM_F_COUNT; k++)
        if (enabled & NM_BIT(k)) {
            if (r < fault_weight[k])
                return k;
            r -= fault_weight[k];
        }
    return -1;
}

/* The parameters of one fault of kind k (L the lease, F the fixed lease). */
static void draw(const nm_cfg_t *cfg, uint64_t *s, nm_fault_t *f)
{
    long L = cfg->lease_ms, F = cfg->fixed_ms;
    f->slot = -1;
    f->name = -1;
    f->server = -1;
    f->param = (long)(rnd(s) >> 1);   /* a rank, for targets drawn later */
    switch (f->kind) {
    case NM_F_KILL:
        f->dur_ms = 0;
        f->param = rin(s, 100, 1000);           /* respawn after */
        f->dir = rin(s, 0, 99) < 70;            /* prefer a client inside a hold */
        break;
    case NM_F_STOP:
        /* short stops must not cost a hold; long ones may */
        f->dur_ms = rin(s, 0, 99) < 60 ? rin(s, L * 3 / 10, L * 8 / 10) : rin(s, L * 12 / 10, L * 2);
        f->dir = rin(s, 0, 99) < 70;
        break;
    case NM_F_STOP_GRANTEE:
        /* right after a grant: a stop a little shorter than the lease (the
         * hold must survive it), sometimes longer */
        f->dur_ms = rin(s, 0, 99) < 70 ? rin(s, L * 70 / 100, L * 87 / 100) : rin(s, L * 12 / 10, L * 16 / 10);
        f->param = 3000;                         /* armed this long */
        break;
    case NM_F_RESTART:
        /* down this long: mostly long enough that the process's threads,
         * were they to trust their holds through the sign, would pass
         * them on while Redis has none (tools/mutants.sh, trust) */
        f->dur_ms = rin(s, 0, 99) < 70 ? rin(s, 300, 800) : rin(s, 0, 300);
        break;
    case NM_F_BREAK:
        f->name = (int)rin(s, 0, nm_nlocks - 1);
        break;
    case NM_F_PAUSE:
        f->dur_ms = rin(s, 100, L * 8 / 10);
        break;
    case NM_F_CKILL:
        f->dir = (int)rin(s, 0, 2);             /* normal, pubsub, both */
        break;
    case NM_F_DELAY:
        f->dir = rin(s, 0, 99) < 80 ? 0 : 1;    /* replies, requests */
        /* past the fixed lease (mostly), or short */
        f->param = rin(s, 0, 99) < 65 ? rin(s, F * 105 / 100, F * 2) : rin(s, 30, 600);
        f->dur_ms = rin(s, 2000, 6000);
        f->slot = (int)rin(s, 0, 1 << 20);
        break;
    case NM_F_LATE:
        /* replies past the I/O time-out: the calls they answer ran, yet
         * fail; a wait undone, a post made once (not again), a hold's
         * request withdrawn */
        f->dir = 0;
        f->param = rin(s, cfg->io_timeout_ms * 11 / 10, cfg->io_timeout_ms * 3 / 2);
        /* longer than a call's tries (a first attempt, then the I/O
         * time-out of retries): the connections it opens meanwhile are
         * late too, so that it fails */
        f->dur_ms = rin(s, cfg->io_timeout_ms * 16 / 10, cfg->io_timeout_ms * 2);
        f->slot = -1;                           /* chosen when due (armed: the next permit taken) */
        break;
    case NM_F_FREEZE:
        f->dur_ms = rin(s, 200, L * 3 / 2);
        f->dir = (int)rin(s, 0, 1);             /* TH_PROXY_COMMANDS: pushes flow */
        break;
    case NM_F_JITTER:
        f->param = rin(s, 10, 400);
        f->dur_ms = rin(s, 1000, 4000);
        break;
    case NM_F_BLACKHOLE:
        f->dur_ms = rin(s, 100, L * 13 / 10);
        break;
    case NM_F_MUTE:
        f->dur_ms = rin(s, 500, 4000);
        break;
    case NM_F_SRVSTOP:
        f->dur_ms = rin(s, 100, L * 12 / 10);
        f->server = 0;
        break;
    case NM_F_FAILOVER:
        f->dur_ms = 0;
        break;
    case NM_F_MIGRATE:
        f->name = (int)rin(s, 0, nm_nlocks - 1);
        break;
    case NM_F_PARTITION:
        f->dir = (int)rin(s, 1, 3);             /* 1 in, 2 out, 3 both */
        f->dur_ms = rin(s, 0, 99) < 50 ? rin(s, 200, L * 6 / 10) : rin(s, L, L * 2);
        break;
    case NM_F_SRVCLOCK:
        /* forward past a fixed lease's hold (mostly), or a renewed one's;
         * back by up to a second (nm_schedule_make keeps restarts away
         * from it: fences after a loss are the server's clock) */
        f->dur_ms = 0;
        f->dir = rin(s, 0, 99) < 75 ? 1 : -1;
        f->server = (int)rin(s, 0, 1 << 20);    /* which of several: resolved when due */
        f->param = f->dir > 0 ? rin(s, L * 3 / 10, L * 2) : rin(s, 100, 1000);
        break;
    case NM_F_DELKEY:
        f->dur_ms = 0;
        f->param = 4000;                         /* armed this long */
        break;
    case NM_F_CLOCK:
        f->dur_ms = 0;
        f->dir = rin(s, 0, 99) < 50 ? 1 : -1;
        f->param = rin(s, 50, 4000);            /* ms, in dir's direction */
        f->slot = (int)rin(s, 0, 1 << 20);
        break;
    default:
        break;
    }
}

/* Kinds that use the lock server itself (one at a time). */
static int server_kind(int k)
{
    return k == NM_F_RESTART || k == NM_F_PAUSE || k == NM_F_SRVSTOP || k == NM_F_FAILOVER ||
           k == NM_F_MIGRATE || k == NM_F_SRVCLOCK;
}

/* Kinds that set the proxy's mode (one at a time). */
static int proxy_kind(int k)
{
    return k == NM_F_JITTER || k == NM_F_BLACKHOLE || k == NM_F_MUTE || k == NM_F_LATE;
}

static int cmp_fault(const void *a, const void *b)
{
    const nm_fault_t *x = a, *y = b;
    return x->at_us < y->at_us ? -1 : x->at_us > y->at_us;
}

void nm_schedule_make(const nm_cfg_t *cfg, nm_schedule_t *sc)
{
    memset(sc, 0, sizeof *sc);
    uint64_t s = cfg->seed * 0x2545f4914f6cdd1dULL + 0x5eed;
    int64_t t = 700000;
    int64_t server_free = 0, proxy_free = 0;
    int sem_tail = (cfg->faults & NM_BIT(NM_F_LATE)) && (cfg->roles & (1u << NM_ROLE_SEM)) &&
                   cfg->topo != NM_TOPO_REDLOCK;
    double rate = cfg->rate > 0 ? cfg->rate : 0.7;
    /* Every enabled kind once first, in a seeded order, then by weight: a
     * short run meets each kind (a rare one too), and with it what each
     * kind breaks (tools/mutants.sh: a mutant missed for want of its
     * fault is the fault mix's gap, not the checks'). */
    unsigned unused = cfg->faults & ~(NM_BIT(NM_F_STALL) | NM_BIT(NM_F_FAILOVER) | NM_BIT(NM_F_MIGRATE) |
                                      NM_BIT(NM_F_DELKEY));
    /* (the first pass through the kinds within the run's first half, so
     * that what each leaves behind has time to show) */
    int nkinds = __builtin_popcount(unused);
    double first_rate = nkinds ? nkinds / (cfg->duration_ms / 2000.0) : rate;
    if (first_rate < rate)
        first_rate = rate;
    while (sc->n < NM_MAX_FAULTS - 2) {
        double u = ((double)(rnd(&s) >> 11) + 1.0) / 9007199254740993.0;
        t += (int64_t)(-log(u) / (unused ? first_rate : rate) * 1e6);
        if (t >= (int64_t)cfg->duration_ms * 1000)
            break;
        nm_fault_t *f = &sc->f[sc->n];
        memset(f, 0, sizeof *f);
        if (unused) {
            int left = __builtin_popcount(unused), k = (int)rin(&s, 0, left - 1);
            for (f->kind = 0; !(unused & NM_BIT(f->kind)) || k-- > 0; f->kind++)
                ;
            unused &= ~NM_BIT(f->kind);
        } else {
            f->kind = pick_kind(&s, cfg->faults & ~NM_BIT(NM_F_DELKEY));
        }
        if (f->kind < 0)
            break;
        f->at_us = t;
        draw(cfg, &s, f);
        /* one server fault and one proxy mode at a time: later ones wait
         * (with several servers, one fault on them at a time: a minority) */
        if (server_kind(f->kind) || (cfg->topo == NM_TOPO_REDLOCK && proxy_kind(f->kind))) {
            if (f->at_us < server_free)
                f->at_us = server_free;
            server_free = f->at_us + (int64_t)(f->dur_ms + 1500) * 1000;
            /* A server whose clock went back gives lower fences after a
             * restart until its clock is past the last ones it gave
             * (PROTOCOL.md, Fences): no server fault as long. */
            if (f->kind == NM_F_SRVCLOCK && f->dir < 0)
                server_free += (int64_t)f->param * 1000;
        }
        if (proxy_kind(f->kind)) {
            if (f->at_us < proxy_free)
                f->at_us = proxy_free;
            proxy_free = f->at_us + (int64_t)(f->dur_ms + 200) * 1000;
        }
        if (f->at_us >= (int64_t)cfg->duration_ms * 1000)
            break;
        sc->n++;
        /* a flush is often followed by a grant, and a stop of its grantee:
         * what a posted command that met NOSCRIPT would cost.  Armed just
         * before the flush: busy holds are renewed every 20 ms, and the
         * first renewal after the flush loads the scripts again. */
        if (f->kind == NM_F_FLUSH && (cfg->faults & NM_BIT(NM_F_STOP_GRANTEE)) && rin(&s, 0, 99) < 50) {
            nm_fault_t *g = &sc->f[sc->n++];
            memset(g, 0, sizeof *g);
            g->kind = NM_F_STOP_GRANTEE;
            g->at_us = f->at_us - 1000;
            draw(cfg, &s, g);
            g->dur_ms = rin(&s, cfg->lease_ms * 72 / 100, cfg->lease_ms * 86 / 100);
        }
    }
    /* A late fault at 45-55 % of the run, and no restart planned from 5 s
     * before it to the end (one planned earlier may wait for the server
     * and for a handoff: up to 3.5 s).  A post counted twice (a late reply's) shows in the
     * counting semaphore's value at the end only when Redis lost no state
     * after it (the count starts again: nemesis_sem.c check_value), and
     * only once its thread settled it, at its next call after the fault
     * (up to twice the I/O time-out): the fault's effects must be over
     * well before the run's end (placed at 60-70 %, the aimed thread's
     * post was still in flight at the end in a run of 25 s).  The proxy
     * faults it would overlap make room for it. */
    if (sem_tail && sc->n < NM_MAX_FAULTS) {
        nm_fault_t late;
        memset(&late, 0, sizeof late);
        late.kind = NM_F_LATE;
        late.at_us = rin(&s, (int64_t)cfg->duration_ms * 450, (int64_t)cfg->duration_ms * 550);
        draw(cfg, &s, &late);
        int64_t a = late.at_us, e = late.at_us + (int64_t)(late.dur_ms + 200) * 1000;
        int k = 0;
        for (int i = 0; i < sc->n; i++) {
            const nm_fault_t *f = &sc->f[i];
            if (f->kind == NM_F_RESTART && f->at_us >= a - 5000000)
                continue;
            if (proxy_kind(f->kind) && f->at_us < e && f->at_us + (int64_t)(f->dur_ms + 200) * 1000 > a)
                continue;
            sc->f[k++] = *f;
        }
        sc->n = k;
        sc->f[sc->n++] = late;
        /* A run long enough for two (CI's own single case: 45 s) has a
         * second, early one, from a generator of its own (the rest of the
         * schedule stays the seed's): each aim meets a post made once in
         * about two runs of three, and a post counted twice early shows in
         * the value too when no restart follows, and in the permits held
         * at once (sem-over) until one does.  Armed up to 3 s, and over
         * before the tail's. */
        uint64_t es = cfg->seed * 0xbf58476d1ce4e5b9ULL + 0x1a7e;
        nm_fault_t early;
        memset(&early, 0, sizeof early);
        early.kind = NM_F_LATE;
        early.at_us = rin(&es, (int64_t)cfg->duration_ms * 80, (int64_t)cfg->duration_ms * 120);
        draw(cfg, &es, &early);
        int64_t ea = early.at_us, ee = ea + 3000000 + (int64_t)(early.dur_ms + 200) * 1000;
        if (ee < late.at_us && sc->n < NM_MAX_FAULTS) {
            k = 0;
            for (int i = 0; i < sc->n; i++) {
                const nm_fault_t *f = &sc->f[i];
                if (proxy_kind(f->kind) && f->at_us < ee &&
                    f->at_us + (int64_t)(f->dur_ms + 200) * 1000 > ea)
                    continue;
                sc->f[k++] = *f;
            }
            sc->n = k;
            sc->f[sc->n++] = early;
        }
    }
    /* Deletions of a held key, one per 8 s of faults (two at least), from
     * a generator of their own: the rest of a seed's schedule stays what
     * it was without them (a seed that ran clean still meets the same
     * faults). */
    if (cfg->faults & NM_BIT(NM_F_DELKEY)) {
        uint64_t ds = cfg->seed * 0x9e3779b97f4a7c15ULL + 0xde1;
        int n = (int)(cfg->duration_ms / 8000);
        if (n < 2)
            n = 2;
        for (int i = 0; i < n && sc->n < NM_MAX_FAULTS; i++) {
            nm_fault_t *f = &sc->f[sc->n++];
            memset(f, 0, sizeof *f);
            f->kind = NM_F_DELKEY;
            /* spread over the run: one in each of n equal parts */
            int64_t part = (int64_t)cfg->duration_ms * 1000 / n;
            f->at_us = 700000 + part * i + rin(&ds, 0, part > 1500000 ? part - 1500000 : 0);
            draw(cfg, &ds, f);
        }
    }
    qsort(sc->f, (size_t)sc->n, sizeof sc->f[0], cmp_fault);
}

void nm_schedule_print(FILE *out, const nm_schedule_t *sc, int64_t start_us, int executed)
{
    for (int i = 0; i < sc->n; i++) {
        const nm_fault_t *f = &sc->f[i];
        if (executed && !f->done)
            continue;
        fprintf(out, "  %8.3f s  %-11s", (double)f->at_us / 1e6, nm_fault_name(f->kind));
        if (f->dur_ms)
            fprintf(out, " %5ld ms", f->dur_ms);
        else
            fprintf(out, "         ");
        if (f->kind == NM_F_DELAY || f->kind == NM_F_LATE)
            fprintf(out, " %s +%ld ms", f->dir ? "requests" : "replies", f->param);
        if (f->kind == NM_F_JITTER)
            fprintf(out, " up to %ld ms", f->param);
        if (f->kind == NM_F_PARTITION)
            fprintf(out, " %s", f->dir == 1 ? "inbound" : f->dir == 2 ? "outbound" : "both ways");
        if (f->kind == NM_F_SRVCLOCK || f->kind == NM_F_CLOCK)
            fprintf(out, " %s %ld ms", f->dir > 0 ? "forward" : "back", f->param);
        if (f->done) {
            fprintf(out, "  ran at %.3f s", (double)(f->t_start - start_us) / 1e6);
            if (f->t_end > f->t_start)
                fprintf(out, " to %.3f s", (double)(f->t_end - start_us) / 1e6);
            if (f->pid)
                fprintf(out, " pid %d", (int)f->pid);
            if (f->note[0])
                fprintf(out, " (%s)", f->note);
        }
        fprintf(out, "\n");
    }
}

/* -------------------------------------------------------------- injection */

static void stop_pid(pid_t pid, int stop)
{
    if (pid > 0)
        kill(pid, stop ? SIGSTOP : SIGCONT);
}

/* The distlock CLI's break, against the servers directly. */
static int run_break(nm_ctx_t *c, const char *name)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        th_close_from(3);
        setenv("DISTLOCK_URL", c->direct_url, 1);
        setenv("DISTLOCK_IO_TIMEOUT_MS", "1000", 1);
        execl(c->cfg->cli, c->cfg->cli, "break", name, "--force", (char *)NULL);
        _exit(127);
    }
    if (pid < 0)
        return -1;
    return th_wait_child_ms(pid, 5000);
}

/* No other fault has the lock server down, stopped or paused now. */
static int server_ok(nm_ctx_t *c, const nm_fault_t *self)
{
    for (int i = 0; i < c->sch.n; i++) {
        nm_fault_t *f = &c->sch.f[i];
        if (f != self && f->done && !f->ended && (f->kind == NM_F_RESTART || f->kind == NM_F_SRVSTOP ||
                                     f->kind == NM_F_PAUSE))
            return 0;
    }
    return 1;
}

static int pid_stopped(nm_ctx_t *c, pid_t pid)
{
    for (int i = 0; i < c->sch.n; i++) {
        nm_fault_t *f = &c->sch.f[i];
        if (f->done && !f->ended && f->pid == pid &&
            (f->kind == NM_F_STOP || f->kind == NM_F_STOP_GRANTEE))
            return 1;
    }
    return 0;
}

/* Starts f; returns 1 if it ran, 0 if skipped (note says why). */
/* Every proxy (a client's own network: all its servers). */
#define EACH_PROXY(c, px) for (int px_i_ = 0; px_i_ < (c)->nsrv; px_i_++) \
    for (th_proxy_t *px = (c)->px[px_i_]; px; px = NULL)

/* pid was hit by a late fault that is on, or ended less than twice the
 * I/O time-out ago. */
static int late_victim(nm_ctx_t *c, pid_t pid, int64_t now)
{
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (f->kind == NM_F_LATE && f->done && f->t_start && f->pid == pid &&
            (!f->ended || now < f->t_end + 2 * c->cfg->io_timeout_ms * 1000LL))
            return 1;
    }
    return 0;
}

/* A late fault is armed, or fired less than a second ago: its victim's
 * post (80-400 ms after the aim) must reach a server that runs it, so
 * that only its reply is late (the post then fails, and a library that
 * made it again would count it twice).  A server's fault or a kill of
 * connections due meanwhile is dropped: held back, it would overlap the
 * next one (the schedule keeps them apart). */
static int late_due(const nm_ctx_t *c, int64_t now)
{
    if (c->late >= 0)
        return 1;
    for (int i = 0; i < c->sch.n; i++) {
        const nm_fault_t *f = &c->sch.f[i];
        if (f->kind == NM_F_LATE && f->done && f->t_start && now < f->t_start + 1000000)
            return 1;
    }
    return 0;
}

static int fault_start(nm_ctx_t *c, nm_fault_t *f, int64_t now)
{
    const nm_cfg_t *cfg = c->cfg;
    /* with several servers, a server's fault hits one of them (a minority) */
    if (f->kind == NM_F_SRVCLOCK)
        f->server = c->nsrv > 1 ? f->server % c->nsrv : 0;
    else
        f->server = c->nsrv > 1 ? (int)((uint64_t)f->param % (uint64_t)c->nsrv) : 0;
    if (f->kind == NM_F_DELAY || f->kind == NM_F_KILL || f->kind == NM_F_CLOCK || f->kind == NM_F_LATE)
        f->server = 0;
    th_server_t *srv = &c->srv[f->server];
    th_proxy_t *spx = c->px[f->server];
    int minority = c->nsrv > 1;
    int slot = -1;
    f->t_start = now;
    switch (f->kind) {
    case NM_F_KILL:
        /* not the client of a late fault still on (or settling after it):
         * its semaphore post must live to be settled (late_aim) */
        for (int tries = 0; tries < 8; tries++) {
            slot = nm_pick_slot(c, (uint64_t)rnd(&c->rng), f->dir);
            if (slot < 0 || !late_victim(c, c->sh->slot[slot].pid, now))
                break;
        }
        if (slot < 0)
            return snprintf(f->note, sizeof f->note, "no client"), 0;
        f->pid = c->sh->slot[slot].pid;
        f->effects = NM_FX_DEATH;
        f->t_start = nm_now_us();
        kill(f->pid, SIGKILL);
        {
            int st;
            waitpid(f->pid, &st, 0);
        }
        nm_client_died(c, slot, 1, f->t_start);
        c->respawn_pending++;
        c->respawn_at = nm_now_us() + f->param * 1000;
        snprintf(f->note, sizeof f->note, "slot %d", slot);
        return 1;
    case NM_F_STOP:
        /* not the client of a late fault either: stopped, its failing post
         * outlasts the fault and succeeds (nothing made twice to find) */
        for (int tries = 0; tries < 8; tries++) {
            slot = nm_pick_slot(c, rnd(&c->rng), f->dir);
            if (slot < 0 || !late_victim(c, c->sh->slot[slot].pid, now))
                break;
        }
        if (slot < 0 || late_victim(c, c->sh->slot[slot].pid, now))
            return snprintf(f->note, sizeof f->note, "no client"), 0;
        f->pid = c->sh->slot[slot].pid;
        f->effects = NM_FX_STOP;
        f->t_start = nm_now_us();
        stop_pid(f->pid, 1);
        snprintf(f->note, sizeof f->note, "slot %d", slot);
        return 1;
    case NM_F_STOP_GRANTEE:
        /* armed: watch_grants stops the next grantee */
        c->grantee = (int)(f - c->sch.f);
        f->t_start = 0;
        return 1;
    case NM_F_DELKEY:
        /* armed: watch_plans picks the hold; one server only (with
         * several, one server's key is not the hold) */
        if (c->nsrv > 1)
            return snprintf(f->note, sizeof f->note, "several servers"), 0;
        c->delkey = (int)(f - c->sch.f);
        f->t_start = 0;
        return 1;
    case NM_F_RESTART:
        if (!server_ok(c, f))
            return snprintf(f->note, sizeof f->note, "server busy"), 0;
        /* With redlock a minority, which cuts nobody; but it comes back
         * empty, and a hold a bare majority granted (the third server was
         * busy, or cut) with this server among it has lost its majority
         * (PROTOCOL.md, redlock://): a loss, with a sign. */
        f->effects = minority ? NM_FX_LOSS | NM_FX_SIGN | NM_FX_MINORITY
                              : NM_FX_LOSS | NM_FX_SIGN | NM_FX_NET;
        f->t_start = nm_now_us();
        {
            pid_t old = srv->pid;
            th_server_kill(srv);
            if (c->srv_extra)
                tt_forget(old);
        }
        snprintf(f->note, sizeof f->note, "server %d", f->server);
        return 1;
    case NM_F_FLUSH: {
        if (!server_ok(c, f))
            return snprintf(f->note, sizeof f->note, "server busy"), 0;
        redisReply *r = th_cmd_at(srv->port, "SCRIPT FLUSH");
        if (r)
            freeReplyObject(r);
        f->effects = 0;
        snprintf(f->note, sizeof f->note, "server %d", f->server);
        return 1;
    }
    case NM_F_BREAK: {
        if (!server_ok(c, f))
            return snprintf(f->note, sizeof f->note, "server busy"), 0;
        int st = run_break(c, c->sh->names[f->name]);
        f->effects = NM_FX_LOSS | NM_FX_SIGN;
        snprintf(f->note, sizeof f->note, "%s, status %d", c->sh->names[f->name], st);
        return 1;
    }
    case NM_F_PAUSE: {
        if (!server_ok(c, f))
            return snprintf(f->note, sizeof f->note, "server busy"), 0;
        redisReply *r = th_cmd_at(srv->port, "CLIENT PAUSE %ld ALL", f->dur_ms);
        if (r)
            freeReplyObject(r);
        f->effects = minority ? 0 : NM_FX_NET;
        snprintf(f->note, sizeof f->note, "server %d", f->server);
        return 1;
    }
    case NM_F_CKILL: {
        if (!server_ok(c, f))
            return snprintf(f->note, sizeof f->note, "server busy"), 0;
        long long n = 0;
        if (f->dir != 1)
            n += th_cmd_at_ll(srv->port, "CLIENT KILL TYPE normal SKIPME yes");
        if (f->dir != 0)
            n += th_cmd_at_ll(srv->port, "CLIENT KILL TYPE pubsub");
        f->effects = NM_FX_SIGN;
        snprintf(f->note, sizeof f->note, "server %d, %s: %lld killed", f->server,
                 f->dir == 0 ? "normal" : f->dir == 1 ? "pubsub" : "both", n);
        return 1;
    }
    case NM_F_DELAY:
    case NM_F_LATE:
    case NM_F_FREEZE:
        if (!c->px[0])
            return snprintf(f->note, sizeof f->note, "no proxy"), 0;
        /* late replies: aimed at a client about to post the counting
         * semaphore (armed until a thread inside plans its post: late_aim) */
        if (f->kind == NM_F_LATE && c->late != (int)(f - c->sch.f) && c->sem_seen) {
            c->late = (int)(f - c->sch.f);
            __atomic_store_n(&c->sh->late_armed, 1, __ATOMIC_RELEASE);
            f->t_start = 0;
            return 1;
        }
        slot = f->kind == NM_F_LATE && f->slot >= 0 ? f->slot : nm_pick_slot(c, rnd(&c->rng), 0);
        if (slot < 0)
            return snprintf(f->note, sizeof f->note, "no client"), 0;
        f->pid = c->sh->slot[slot].pid;
        f->effects = NM_FX_NET;
        if (f->kind == NM_F_LATE) {
            /* its reconnections (and their resends) are as late; the
             * process held still while its connections are found, so that
             * the post of a thread just inside comes after */
            int n = 0;
            stop_pid(f->pid, 1);
            EACH_PROXY(c, px)
                n += th_proxy_delay_sticky(px, f->pid, 0, f->param);
            stop_pid(f->pid, 0);
            snprintf(f->note, sizeof f->note, "slot %d, %d connections", slot, n);
        } else if (f->kind == NM_F_DELAY) {
            int n = 0;
            EACH_PROXY(c, px)
                n += th_proxy_delay(px, f->pid, f->dir ? f->param : 0, f->dir ? 0 : f->param);
            snprintf(f->note, sizeof f->note, "slot %d, %d connections", slot, n);
        } else {
            int n = 0;
            EACH_PROXY(c, px)
                n += th_proxy_freeze(px, f->pid, f->dir ? TH_PROXY_COMMANDS : 0, f->dur_ms);
            snprintf(f->note, sizeof f->note, "slot %d, %d connections%s", slot, n,
                     f->dir ? ", pushes flow" : "");
        }
        return 1;
    case NM_F_JITTER:
        if (!spx)
            return 0;
        th_proxy_jitter(spx, 0, f->param, (unsigned)cfg->seed);
        f->effects = minority ? 0 : NM_FX_NET;
        snprintf(f->note, sizeof f->note, "server %d", f->server);
        return 1;
    case NM_F_BLACKHOLE:
        if (!spx)
            return 0;
        th_proxy_mode(spx, TH_PROXY_BLACKHOLE, 0);
        f->effects = minority ? 0 : NM_FX_NET;
        snprintf(f->note, sizeof f->note, "server %d", f->server);
        return 1;
    case NM_F_MUTE:
        if (!spx)
            return 0;
        th_proxy_mute_pushes(spx, 1);
        snprintf(f->note, sizeof f->note, "server %d", f->server);
        return 1;
    case NM_F_SRVSTOP:
        if (!server_ok(c, f))
            return snprintf(f->note, sizeof f->note, "server busy"), 0;
        th_server_pause(srv);
        f->effects = minority ? 0 : NM_FX_NET;
        snprintf(f->note, sizeof f->note, "server %d", f->server);
        return 1;
    case NM_F_PARTITION: {
        if (!c->net)
            return snprintf(f->note, sizeof f->note, "no namespaces"), 0;
        /* a client that is not cut already (one partition per namespace) */
        for (int tries = 0; tries < 8; tries++) {
            slot = nm_pick_slot(c, rnd(&c->rng), 0);
            if (slot >= 0 && c->sh->slot[slot].netns >= 0 && !nm_net_is_cut(c->net, c->sh->slot[slot].netns))
                break;
            slot = -1;
        }
        if (slot < 0)
            return snprintf(f->note, sizeof f->note, "no client left to cut"), 0;
        f->pid = c->sh->slot[slot].pid;
        f->param = c->sh->slot[slot].netns;
        f->effects = NM_FX_NET;
        f->t_start = nm_now_us();
        int rc = nm_net_cut(c->net, (int)f->param, f->dir);
        snprintf(f->note, sizeof f->note, "slot %d, namespace %ld%s", slot, f->param, rc ? ", nft failed" : "");
        return 1;
    }
    case NM_F_SRVCLOCK: {
        if (!c->srv_clock[f->server])
            return snprintf(f->note, sizeof f->note, "no clock shim"), 0;
        if (!server_ok(c, f))
            return snprintf(f->note, sizeof f->note, "server busy"), 0;
        /* Forward: every key whose time left is shorter expires now, and
         * nobody is told; back: keys (a dead holder's too) live longer. */
        f->t_start = nm_now_us();
        int64_t by = (int64_t)f->param * 1000 * f->dir;
        int64_t now_off = __atomic_add_fetch(c->srv_clock[f->server], by, __ATOMIC_ACQ_REL);
        f->effects = f->dir > 0 ? (minority ? NM_FX_LOSS | NM_FX_MINORITY : NM_FX_LOSS) : 0;
        snprintf(f->note, sizeof f->note, "server %d, now %+.3f s", f->server, (double)now_off / 1e6);
        return 1;
    }
    case NM_F_CLOCK: {
        slot = nm_pick_slot(c, (uint64_t)f->slot, 0);
        if (slot >= 0 && late_victim(c, c->sh->slot[slot].pid, now))
            return snprintf(f->note, sizeof f->note, "spared: a late fault's client"), 0;
        if (slot < 0)
            return snprintf(f->note, sizeof f->note, "no client"), 0;
        nm_slot_t *sl = &c->sh->slot[slot];
        f->pid = sl->pid;
        f->t_start = nm_now_us();
        int64_t by = (int64_t)f->param * 1000 * f->dir;
        uint32_t j = sl->njumps < NM_MAX_JUMPS ? sl->njumps : NM_MAX_JUMPS - 1;
        sl->jump[j][0] = f->t_start;
        sl->jump[j][1] = by;
        if (sl->njumps < NM_MAX_JUMPS)
            sl->njumps++;
        int64_t now_off = __atomic_add_fetch(&sl->rt_off_us, by, __ATOMIC_ACQ_REL);
        f->effects = 0;             /* nothing but its abstimes may change */
        snprintf(f->note, sizeof f->note, "slot %d, now %+.3f s", slot, (double)now_off / 1e6);
        return 1;
    }
    default:
        snprintf(f->note, sizeof f->note, "not in this topology");
        return 0;
    }
}

static void fault_end(nm_ctx_t *c, nm_fault_t *f)
{
    th_server_t *srv = &c->srv[f->server >= 0 ? f->server : 0];
    th_proxy_t *spx = c->px[f->server >= 0 ? f->server : 0];
    switch (f->kind) {
    case NM_F_STOP:
    case NM_F_STOP_GRANTEE:
        stop_pid(f->pid, 0);
        break;
    case NM_F_RESTART: {
        /* a few tries on its port (another process of the machine may have
         * taken it meanwhile: then the run cannot go on, and says so) */
        int ok = -1;
        for (int i = 0; i < 3 && ok != 0; i++)
            ok = nm_server_start(c, f->server >= 0 ? f->server : 0, 1);
        if (ok != 0) {
            snprintf(f->note, sizeof f->note, "could not restart");
            c->broken = 1;
        }
        break;
    }
    case NM_F_PARTITION:
        if (c->net && f->param >= 0)
            nm_net_heal(c->net, (int)f->param);
        break;
    case NM_F_LATE:
        EACH_PROXY(c, px)
            th_proxy_delay_sticky(px, 0, 0, 0);
        /* fall through */
    case NM_F_DELAY:
        EACH_PROXY(c, px)
            th_proxy_delay(px, f->pid, 0, 0);
        break;
    case NM_F_JITTER:
    case NM_F_BLACKHOLE:
        if (spx)
            th_proxy_mode(spx, TH_PROXY_PASS, 0);
        break;
    case NM_F_MUTE:
        if (spx)
            th_proxy_mute_pushes(spx, 0);
        break;
    case NM_F_SRVSTOP:
        th_server_resume(srv);
        break;
    default:
        break;
    }
    f->t_end = nm_now_us();
    f->ended = 1;
}

/* An armed LATE fault's aim: a semaphore thread of a running client
 * inside the counting semaphore whose post (its plan in the record) comes
 * 80-400 ms from now, time enough for the fault to be in place before it:
 * the post then runs in Redis and fails (EIO), and a library that made it
 * again would count it twice (tools/mutants.sh, sempost; the value check
 * at the end judges the counting semaphore's permits).  1 when it fired. */
static int late_aim(nm_ctx_t *c, nm_fault_t *lf, int64_t now)
{
    int semc = nm_role_base[NM_ROLE_SEM];
    /* the tick's own time may be old by now (the faults before in it took
     * their time): a post planned from it may have been made already */
    now = nm_now_us();
    for (int s = 0; s < c->sh->nslots; s++) {
        nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0 || sl->died_us || pid_stopped(c, sl->pid))
            continue;
        for (int t = c->cfg->threads; t < NM_MAX_THREADS; t++) {
            nm_thread_log_t *tl = &sl->th[t];
            int64_t at = __atomic_load_n(&tl->plan_at, __ATOMIC_ACQUIRE);
            if (!at || tl->plan_name != semc || at - now < 80000 || at - now > 400000)
                continue;
            lf->slot = s;
            fault_start(c, lf, now);
            c->late = -1;
            __atomic_store_n(&c->sh->late_armed, 0, __ATOMIC_RELEASE);
            return 1;
        }
    }
    return 0;
}

/* Follows the record as it grows; when a STOP_GRANTEE is armed, stops the
 * process of the first lock call that waited for a new hold from Redis:
 * depth 0, not a trylock, 0 or EOWNERDEAD at least 2 ms after it began,
 * with a fence above every fence returned before (so not a hold passed
 * between the process's threads: a grant pushed to a waiter, or one it
 * asked again for). */
static void watch_grants(nm_ctx_t *c, int64_t now)
{
    nm_fault_t *f = c->grantee >= 0 ? &c->sch.f[c->grantee] : NULL;
    nm_fault_t *lf = c->late >= 0 ? &c->sch.f[c->late] : NULL;
    for (int s = 0; s < c->sh->nslots; s++) {
        nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0)
            continue;
        int usable = !sl->died_us && !pid_stopped(c, sl->pid) && !late_victim(c, sl->pid, now);
        for (int t = 0; t < NM_MAX_THREADS; t++) {
            nm_thread_log_t *tl = &sl->th[t];
            uint32_t n = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            uint32_t i = c->cursor[s][t];
            for (; i < n; i++) {
                nm_ev_t *e = &tl->ev[i];
                if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != 2)
                    break;          /* look again at it next time */
                if (e->kind == NM_SWAIT) {
                    c->sem_seen = 1;
                    continue;
                }
                if (e->kind != NM_LOCK || (e->rc != 0 && e->rc != EOWNERDEAD))
                    continue;
                int fresh = e->fence > c->maxfence[e->name];
                if (fresh)
                    c->maxfence[e->name] = e->fence;
                if (f && usable && fresh && e->depth == 0 && e->op != NM_OP_TRY && e->t1 - e->t0 >= 2000) {
                    f->pid = sl->pid;
                    f->t_start = nm_now_us();
                    stop_pid(f->pid, 1);
                    f->effects = NM_FX_STOP;
                    snprintf(f->note, sizeof f->note, "slot %d, %.1f ms after its grant", s,
                             (double)(f->t_start - e->t1) / 1000.0);
                    c->grantee = -1;
                    f = NULL;
                    usable = 0;
                }
            }
            c->cursor[s][t] = i;
        }
    }
    if (lf && late_aim(c, lf, now))
        lf = NULL;
    if (lf && now > c->start + lf->at_us + 3000000) {
        lf->slot = -1;                  /* no permit taken: any client */
        fault_start(c, lf, now);
        c->late = -1;
        __atomic_store_n(&c->sh->late_armed, 0, __ATOMIC_RELEASE);
    }
    if (f && now > c->start + f->at_us + f->param * 1000) {
        snprintf(f->note, sizeof f->note, "no grant while armed");
        f->t_start = now;
        f->t_end = now;
        f->ended = 1;
        f->effects = 0;
        c->grantee = -1;
    }
}

/* When a DELKEY is armed: a lock thread of a running client that holds a
 * lock (a write hold, not a lock-all's) and plans to relock it within
 * 130-400 ms.  Its key is deleted now: the relock comes past the tolerance
 * of a silent loss (the stale-return check's 100 ms), and, most often,
 * before the watchdog's next look at the hold (a renewal every lease/3, a
 * fixed lease at its end), which would tell a trusting library too. */
static void watch_plans(nm_ctx_t *c, int64_t now)
{
    if (c->delkey < 0)
        return;
    nm_fault_t *f = &c->sch.f[c->delkey];
    if (now > c->start + f->at_us + f->param * 1000) {
        snprintf(f->note, sizeof f->note, "no relock planned while armed");
        f->t_start = f->t_end = now;
        f->ended = 1;
        f->effects = 0;
        c->delkey = -1;
        return;
    }
    if (!server_ok(c, f))
        return;
    for (int s = 0; s < c->sh->nslots; s++) {
        nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0 || sl->died_us || pid_stopped(c, sl->pid))
            continue;
        for (int t = 0; t < c->cfg->threads && t < NM_MAX_LOCK_THREADS; t++) {
            nm_thread_log_t *tl = &sl->th[t];
            int64_t at = __atomic_load_n(&tl->plan_at, __ATOMIC_ACQUIRE);
            int name = tl->plan_name;
            if (at - now < 130000 || at - now > 400000 || name < 0 || name >= nm_nlocks ||
                tl->plan_mode != 'w')
                continue;
            char key[160];
            snprintf(key, sizeof key, "distlock:{%s}", c->sh->names[name]);
            f->t_start = nm_now_us();
            long long n = th_cmd_at_ll(c->srv[0].port, "DEL %s", key);
            f->t_end = nm_now_us();
            f->ended = 1;
            f->name = name;
            f->pid = sl->pid;
            f->effects = NM_FX_LOSS;
            snprintf(f->note, sizeof f->note, "%s, slot %d, relock in %.0f ms, %lld deleted",
                     c->sh->names[name], s, (double)(at - f->t_start) / 1000.0, n);
            c->delkey = -1;
            return;
        }
    }
}

/* A thread of some client waits for a lock another thread of that client
 * holds: the hold is about to pass between them without Redis.  A restart
 * then tests that a process stops trusting its holds at the sign of a
 * lost state (SPEC "Local trust"; tools/mutants.sh, trust). */
static int handoff_pending(nm_ctx_t *c)
{
    for (int s = 0; s < c->sh->nslots; s++) {
        nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0 || sl->died_us || pid_stopped(c, sl->pid))
            continue;
        int waiting[NM_MAX_NAMES] = { 0 }, holding[NM_MAX_NAMES] = { 0 };
        for (int t = 0; t < NM_MAX_THREADS; t++) {
            nm_thread_log_t *tl = &sl->th[t];
            uint32_t n = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            for (uint32_t i = n; i-- > 0 && i + 8 > n;) {
                nm_ev_t *e = &tl->ev[i];
                if (e->depth != 0 || (e->kind != NM_LOCK && e->kind != NM_UNLOCK) || e->all)
                    continue;
                int st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
                if (e->kind == NM_LOCK && st == 1 && e->op != NM_OP_TRY)
                    waiting[e->name] = 1;
                else if (e->kind == NM_LOCK && st == 2 && (e->rc == 0 || e->rc == EOWNERDEAD))
                    holding[e->name] = 1;
                break;
            }
        }
        for (int k = 0; k < nm_nlocks; k++)
            if (waiting[k] && holding[k])
                return 1;
    }
    return 0;
}

void nm_faults_tick(nm_ctx_t *c, int64_t now)
{
    for (int i = 0; i < c->sch.n; i++) {
        nm_fault_t *f = &c->sch.f[i];
        if (!f->done) {
            if (c->start + f->at_us > now || now >= c->fault_end)
                continue;
            if ((f->kind == NM_F_STOP_GRANTEE && c->grantee >= 0) ||
                (f->kind == NM_F_DELKEY && c->delkey >= 0))
                continue;           /* one armed at a time: this one waits */
            /* a restart waits (up to 2 s) for a hold about to pass between
             * a process's threads */
            if (f->kind == NM_F_RESTART && now < c->start + f->at_us + 2000000 && !handoff_pending(c))
                continue;
            f->done = 1;
            if ((server_kind(f->kind) || f->kind == NM_F_CKILL || f->kind == NM_F_PARTITION) &&
                late_due(c, now)) {
                snprintf(f->note, sizeof f->note, "dropped: a late fault's post is due");
                f->t_start = f->t_end = now;
                f->ended = 1;
                f->effects = 0;
                continue;
            }
            if (!fault_start(c, f, now)) {
                f->t_end = f->t_start;
                f->ended = 1;
                f->effects = 0;
                continue;
            }
            if (f->dur_ms == 0 && f->kind != NM_F_STOP_GRANTEE && f->kind != NM_F_DELKEY) {
                f->t_end = nm_now_us();     /* it ran until now (a break: the CLI) */
                f->ended = 1;
            }
        } else if (f->kind == NM_F_STALL) {
            continue;               /* recorded, not injected */

        } else if (!f->ended && f->t_start > 0 && now >= f->t_start + f->dur_ms * 1000) {
            if (f->kind == NM_F_FREEZE || f->kind == NM_F_PAUSE) {
                f->t_end = f->t_start + f->dur_ms * 1000;  /* ends by itself */
                f->ended = 1;
            } else {
                fault_end(c, f);
            }
        }
    }
    watch_grants(c, now);
    watch_plans(c, now);
}

void nm_faults_heal_all(nm_ctx_t *c)
{
    for (int i = 0; i < c->sch.n; i++) {
        nm_fault_t *f = &c->sch.f[i];
        if (f->done && !f->ended) {
            if (f->t_start == 0) {          /* armed, never fired */
                f->t_start = f->t_end = nm_now_us();
                f->ended = 1;
                snprintf(f->note, sizeof f->note, "no grant while armed");
                continue;
            }
            if (f->kind == NM_F_FREEZE)
                EACH_PROXY(c, px)
                    th_proxy_thaw(px);
            fault_end(c, f);
        }
    }
    c->grantee = -1;
    c->late = -1;
    __atomic_store_n(&c->sh->late_armed, 0, __ATOMIC_RELEASE);
    c->delkey = -1;
    for (int k = 0; c->net && k < nm_net_count(c->net); k++)
        nm_net_heal(c->net, k);
    EACH_PROXY(c, px) {
        th_proxy_mode(px, TH_PROXY_PASS, 0);
        th_proxy_mute_pushes(px, 0);
        th_proxy_thaw(px);
        th_proxy_delay_sticky(px, 0, 0, 0);
        th_proxy_delay(px, 0, 0, 0);
    }
    for (int i = 0; i < c->nsrv; i++) {
        th_server_t *s = &c->srv[i];
        if (s->stopped)
            th_server_resume(s);
        if (s->pid) {
            redisReply *r = th_cmd_at(s->port, "CLIENT UNPAUSE");
            if (r)
                freeReplyObject(r);
        }
    }
}

int nm_servers_up(nm_ctx_t *c)
{
    for (int i = 0; i < c->nsrv; i++)
        if (!th_server_up(&c->srv[i]))
            return 0;
    return 1;
}
