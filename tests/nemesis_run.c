/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_run.c - one run of the nemesis: the fenced store and the lock
 * server(s), the proxy the clients reach them through, procs x threads
 * clients (a client killed is replaced by a new one), the fault schedule
 * while it runs, then a healed tail, the stop, and the checks of the
 * history.  Prints the verdict; on a violation also the seed, the faults as
 * they ran, the events around each violation, and how to run it again.
 */
#include "nemesis_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The locks every client takes: few names, so that threads meet; and
 * home locks, each mostly taken by the threads of one client (a hold its
 * threads pass among themselves, which another process takes now and
 * then without having waited for it). */
const nm_lockdef_t nm_locks[] = {
    { "mx", 0, 0, 0, 5, 0, 0 },     /* mutex, default lease (renewed) */
    { "mxf", 0, 0, 1, 3, 0, 0 },    /* mutex, fixed lease */
    { "fair", 0, 1, 0, 2, 0, 0 },   /* fair mutex */
    { "rw", 1, 0, 0, 4, 0, 0 },     /* rwlock, default lease */
    { "rwf", 1, 0, 1, 2, 0, 0 },    /* rwlock, fixed lease */
    { "hm0", 0, 0, 0, 1, 1, 0 },    /* home mutexes */
    { "hm1", 0, 0, 0, 1, 2, 0 },
    { "hm2", 0, 0, 0, 1, 3, 0 },
    { "hm3", 0, 0, 0, 1, 4, 0 },
    { "hr0", 1, 0, 0, 1, 1, 0 },    /* home rwlocks */
    { "hr1", 1, 0, 0, 1, 2, 0 },
    /* the lock-all role's pool (nemesis_lockall.c): its threads lock
     * overlapping sets of them, the lock threads one at a time */
    { "la0", 0, 0, 0, 1, 0, 1 },
    { "la1", 0, 0, 0, 1, 0, 1 },
    { "la2", 0, 0, 0, 1, 0, 1 },
};
const int nm_nlocks = (int)(sizeof nm_locks / sizeof nm_locks[0]);

static long env_long(const char *var, long def)
{
    const char *v = getenv(var);
    return v && *v ? strtol(v, NULL, 0) : def;
}

void nm_cfg_default(nm_cfg_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 1;
    cfg->topo = NM_TOPO_SINGLE;
    cfg->procs = 4;
    cfg->threads = 3;
    cfg->duration_ms = 25000;
    cfg->tail_ms = 4000;
    cfg->lease_ms = 3000;
    cfg->fixed_ms = 1000;
    cfg->io_timeout_ms = 5000;
    cfg->rate = 0.8;
    cfg->faults = NM_FAULTS_SINGLE;
    cfg->roles = nm_roles_parse("all");
#ifdef NM_CLI_PATH
    cfg->cli = NM_CLI_PATH;
#endif
}

/* NEMESIS_SEED, _PROCS, _THREADS, _DURATION_MS, _TAIL_MS, _LEASE_MS,
 * _FIXED_MS, _IO_TIMEOUT_MS, _RATE (faults/s, ×1000: NEMESIS_RATE_MILLI),
 * _FAULTS (a list of kinds), _VERBOSE, _CLI, _DIR. */
void nm_cfg_env(nm_cfg_t *cfg)
{
    const char *s = getenv("NEMESIS_SEED");
    if (s && *s)
        cfg->seed = strtoull(s, NULL, 0);
    cfg->procs = (int)env_long("NEMESIS_PROCS", cfg->procs);
    cfg->threads = (int)env_long("NEMESIS_THREADS", cfg->threads);
    cfg->duration_ms = env_long("NEMESIS_DURATION_MS", cfg->duration_ms);
    cfg->tail_ms = env_long("NEMESIS_TAIL_MS", cfg->tail_ms);
    cfg->lease_ms = env_long("NEMESIS_LEASE_MS", cfg->lease_ms);
    cfg->fixed_ms = env_long("NEMESIS_FIXED_MS", cfg->fixed_ms);
    cfg->io_timeout_ms = env_long("NEMESIS_IO_TIMEOUT_MS", cfg->io_timeout_ms);
    long r = env_long("NEMESIS_RATE_MILLI", (long)(cfg->rate * 1000));
    cfg->rate = (double)r / 1000.0;
    const char *f = getenv("NEMESIS_FAULTS");
    if (f && *f) {
        unsigned bits = nm_fault_parse(f);
        if (bits)
            cfg->faults = bits;
        else
            fprintf(stderr, "nemesis: NEMESIS_FAULTS=%s: unknown kind, kept the default\n", f);
    }
    cfg->verbose = (int)env_long("NEMESIS_VERBOSE", cfg->verbose);
    if (getenv("NEMESIS_CLI"))
        cfg->cli = getenv("NEMESIS_CLI");
    if (getenv("NEMESIS_DIR"))
        cfg->dir = getenv("NEMESIS_DIR");
    const char *roles = getenv("NEMESIS_ROLES");
    if (roles && *roles) {
        unsigned bits = nm_roles_parse(roles);
        if (bits != ~0u)
            cfg->roles = bits;
        else
            fprintf(stderr, "nemesis: NEMESIS_ROLES=%s: unknown role, kept the default\n", roles);
    }
    if (cfg->procs > 16)
        cfg->procs = 16;
    if (cfg->threads > NM_MAX_LOCK_THREADS)
        cfg->threads = NM_MAX_LOCK_THREADS;
}

/* ------------------------------------------------------------- clients */

static int slot_inside_hold(const nm_slot_t *sl)
{
    for (int t = 0; t < NM_MAX_THREADS; t++) {
        const nm_thread_log_t *tl = &sl->th[t];
        uint32_t n = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
        for (uint32_t i = n; i-- > 0 && i + 8 > n;) {
            const nm_ev_t *e = &tl->ev[i];
            if (e->depth != 0 || (e->kind != NM_LOCK && e->kind != NM_UNLOCK))
                continue;
            if (e->kind == NM_LOCK && __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == 2 &&
                (e->rc == 0 || e->rc == EOWNERDEAD))
                return 1;
            break;
        }
    }
    return 0;
}

static int slot_stopped(nm_ctx_t *c, pid_t pid)
{
    for (int i = 0; i < c->sch.n; i++) {
        nm_fault_t *f = &c->sch.f[i];
        if (f->done && !f->ended && f->pid == pid && f->t_start &&
            (f->kind == NM_F_STOP || f->kind == NM_F_STOP_GRANTEE))
            return 1;
    }
    return 0;
}

int nm_pick_slot(nm_ctx_t *c, uint64_t r, int need_holder)
{
    int live[NM_MAX_SLOTS], n = 0, holders[NM_MAX_SLOTS], nh = 0;
    for (int s = 0; s < c->sh->nslots; s++) {
        nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0 || sl->died_us || sl->threads <= 0 || slot_stopped(c, sl->pid))
            continue;
        live[n++] = s;
        if (slot_inside_hold(sl))
            holders[nh++] = s;
    }
    if (need_holder && nh > 0)
        return holders[r % (uint64_t)nh];
    return n ? live[r % (uint64_t)n] : -1;
}

void nm_client_died(nm_ctx_t *c, int slot, int killed, int64_t when)
{
    nm_slot_t *sl = &c->sh->slot[slot];
    if (sl->died_us)
        return;
    sl->died_us = when;
    sl->killed = killed;
}

static int spawn(nm_ctx_t *c)
{
    if (c->sh->nslots >= NM_MAX_SLOTS)
        return -1;
    int slot = c->sh->nslots++;
    nm_slot_t *sl = &c->sh->slot[slot];
    sl->exit_status = -1;
    sl->netns = -1;
    char log[300], url[600], nspath[128];
    snprintf(log, sizeof log, "%s/clients.log", c->dir);
    nm_client_cfg_t cc = { .cfg = c->cfg, .sh = c->sh, .slot = slot, .store_port = c->store.port,
                           .url = c->url, .log_path = log, .netns_path = NULL };
    if (c->net) {
        /* a namespace of its own: one no live client uses */
        int used[16] = { 0 };
        for (int s = 0; s < slot; s++)
            if (c->sh->slot[s].pid > 0 && !c->sh->slot[s].died_us && c->sh->slot[s].netns >= 0)
                used[c->sh->slot[s].netns] = 1;
        int k = 0;
        while (k < nm_net_count(c->net) - 1 && used[k])
            k++;
        sl->netns = k;
        snprintf(url, sizeof url, "redis://%s:%d", nm_net_server(c->net, k), c->srv[0].port);
        nm_net_ns_path(c->net, k, nspath, sizeof nspath);
        cc.url = url;
        cc.netns_path = nspath;
    }
    sl->born_us = nm_now_us();
    pid_t pid = nm_client_spawn(&cc);
    if (pid < 0)
        return -1;
    sl->pid = (int32_t)pid;
    return slot;
}

static int live_clients(nm_ctx_t *c)
{
    int n = 0;
    for (int s = 0; s < c->sh->nslots; s++)
        if (c->sh->slot[s].pid > 0 && !c->sh->slot[s].died_us)
            n++;
    return n;
}

/* Children that ended on their own (a crash: nobody asked them to). */
static void reap(nm_ctx_t *c, int final)
{
    for (int s = 0; s < c->sh->nslots; s++) {
        nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0 || (sl->died_us && sl->exit_status != -1))
            continue;
        if (sl->died_us && sl->killed)
            continue;
        int st;
        pid_t r = waitpid(sl->pid, &st, WNOHANG);
        if (r == sl->pid) {
            sl->exit_status = st;
            if (!final)
                nm_client_died(c, s, 0, nm_now_us());
        }
    }
}

/* The nemesis itself was held up (its loop ticks every ms): the machine
 * was loaded, the proxy's thread stood still as well.  Recorded as a stop
 * and a cut of every client, which it may well have been. */
static void note_stall(nm_ctx_t *c, int64_t from, int64_t to)
{
    nm_schedule_t *sc = &c->sch;
    nm_fault_t *last = sc->n ? &sc->f[sc->n - 1] : NULL;
    if (last && last->kind == NM_F_STALL && from - last->t_end < NM_STALL_US) {
        last->t_end = to;
        snprintf(last->note, sizeof last->note, "the nemesis was held up, %.0f ms in all",
                 (double)(to - last->t_start) / 1000.0);
        return;
    }
    if (sc->n >= NM_MAX_FAULTS)
        return;
    nm_fault_t *f = &sc->f[sc->n++];
    memset(f, 0, sizeof *f);
    f->kind = NM_F_STALL;
    f->at_us = from - c->start;
    f->t_start = from;
    f->t_end = to;
    f->done = f->ended = 1;
    f->slot = f->name = f->server = -1;
    f->effects = NM_FX_STOP | NM_FX_NET;
    snprintf(f->note, sizeof f->note, "the nemesis was held up %.0f ms", (double)(to - from) / 1000.0);
}

/* The per-call watchdog: a call that does not return within its bound
 * (time stopped by the nemesis not counted).  Blocking lock calls have no
 * bound of their own here (the liveness check judges them). */
static void watch_calls(nm_ctx_t *c, nm_hist_t *hs, int64_t now)
{
    const nm_cfg_t *cfg = c->cfg;
    int64_t bound = (2 * cfg->io_timeout_ms + cfg->lease_ms + 5000) * 1000LL;
    for (int s = 0; s < c->sh->nslots; s++) {
        nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0 || sl->died_us)
            continue;
        for (int t = 0; t < NM_MAX_THREADS; t++) {
            nm_thread_log_t *tl = &sl->th[t];
            uint32_t n = __atomic_load_n(&tl->n, __ATOMIC_ACQUIRE);
            if (n == 0)
                continue;
            nm_ev_t *e = &tl->ev[n - 1];
            if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != 1)
                continue;
            /* (nor a lock-all's: its set's locks may be busy long, one
             * after another; a deadlock of overlapping sets never ends,
             * and the end of the run finds it) */
            if ((e->kind == NM_LOCK && e->op == NM_OP_LOCK) ||
                (e->kind == NM_SWAIT && e->op == NM_OP_LOCK))
                continue;
            int64_t lim = bound;
            /* a timed call waits as long as it asked, and as long again
             * as its wall clock was set back meanwhile */
            if (e->op == NM_OP_TIMED && e->abs_rt_us)
                lim += e->abs_rt_us - e->rt0_us + nm_clock_back_within(c, s, e->t0, now);
            /* a condition wait is two of the library's calls, each bounded
             * so: it gives its mutex back, and takes it again (a wait of
             * 19.5 s under a late fault: 2 I/O time-outs after it ended) */
            if (e->kind == NM_CWAIT)
                lim += 2 * cfg->io_timeout_ms * 1000LL;
            int64_t took = now - e->t0 - nm_stopped_for(c, sl->pid, e->t0, now);
            if (took > lim && c->hang_ev[s][t] != n) {
                c->hang_ev[s][t] = n;
                nm_viol_add(hs, NM_C_HANG, e->name, e->t0,
                            "%s of %s by %d/%d has not returned after %.1f s (bound %.1f s)",
                            e->kind == NM_UNLOCK ? "unlock" : e->kind == NM_LOCK ? (e->all ? "lock-all"
                            : "lock call") : e->kind == NM_CWAIT ? "condition wait" : e->kind == NM_SIGNAL
                            ? "signal" : e->kind == NM_SWAIT ? "semaphore wait" : e->kind == NM_SPOST
                            ? "semaphore post" : e->kind == NM_ALLCHECK ? "lock-all's check" : "store op",
                            c->sh->names[e->name], sl->pid, (int)tl->tid, (double)took / 1e6,
                            (double)lim / 1e6);
                c->hangs_seen++;
            }
        }
    }
}

/* ------------------------------------------------------------- servers */

/* The lock servers' wall clocks: each server reads its offset from a file
 * of its own (nm_clockshim.c), mapped here too, so that a jump is one
 * store.  Without the shim (not built), no server clock fault runs. */
static int clocks_setup(nm_ctx_t *c, int n)
{
#ifdef NM_CLOCKSHIM_PATH
    if (access(NM_CLOCKSHIM_PATH, R_OK) != 0)
        return 0;
    for (int i = 0; i < n && i < NM_MAX_SERVERS; i++) {
        snprintf(c->srv_clock_path[i], sizeof c->srv_clock_path[i], "%s/clock-server-%d", c->dir, i);
        int fd = open(c->srv_clock_path[i], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            return -1;
        int64_t zero = 0;
        int ok = write(fd, &zero, sizeof zero) == (ssize_t)sizeof zero;
        void *p = ok ? mmap(NULL, sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                     : MAP_FAILED;
        close(fd);
        if (p == MAP_FAILED)
            return -1;
        c->srv_clock[i] = p;
    }
#else
    (void)c;
    (void)n;
#endif
    return 0;
}

static void clocks_free(nm_ctx_t *c)
{
    for (int i = 0; i < NM_MAX_SERVERS; i++)
        if (c->srv_clock[i]) {
            munmap((void *)c->srv_clock[i], sizeof(int64_t));
            c->srv_clock[i] = NULL;
        }
}

int nm_server_start(nm_ctx_t *c, int i, int restart)
{
    th_server_t *srv = &c->srv[i];
    /* The server inherits the shim from the environment, set only around
     * its start (nothing else this process starts gets it). */
    char *old = getenv("LD_PRELOAD") ? strdup(getenv("LD_PRELOAD")) : NULL;
    if (c->srv_clock[i]) {
#ifdef NM_CLOCKSHIM_PATH
        char pre[1024];
        snprintf(pre, sizeof pre, "%s%s%s", NM_CLOCKSHIM_PATH, old ? ":" : "", old ? old : "");
        setenv("LD_PRELOAD", pre, 1);
        setenv("NM_CLOCK_FILE", c->srv_clock_path[i], 1);
#endif
    }
    int rc;
    if (c->srv_extra)
        rc = restart ? tt_server_start_on(srv, srv->port, c->srv_extra) : tt_server_start(srv, c->srv_extra);
    else
        rc = restart ? th_server_restart(srv) : th_server_start(srv);
    if (c->srv_clock[i]) {
        if (old)
            setenv("LD_PRELOAD", old, 1);
        else
            unsetenv("LD_PRELOAD");
        unsetenv("NM_CLOCK_FILE");
    }
    free(old);
    return rc;
}

static int servers_start(nm_ctx_t *c)
{
    if (th_server_start(&c->store) != 0)
        return -1;
    if (clocks_setup(c, c->cfg->topo == NM_TOPO_REDLOCK ? 3 : 1) != 0)
        return -1;
    switch (c->cfg->topo) {
    case NM_TOPO_SINGLE:
        c->nsrv = 1;
        if (nm_server_start(c, 0, 0) != 0)
            return -1;
        c->px[0] = th_proxy_start(c->srv[0].port);
        if (!c->px[0])
            return -1;
        snprintf(c->url, sizeof c->url, "%s", th_proxy_url(c->px[0]));
        snprintf(c->direct_url, sizeof c->direct_url, "%s", c->srv[0].url);
        return 0;
    case NM_TOPO_REDLOCK: {
        /* three independent masters, each behind its own proxy */
        size_t o = 0, d = 0;
        c->nsrv = 3;
        for (int i = 0; i < c->nsrv; i++) {
            if (nm_server_start(c, i, 0) != 0)
                return -1;
            c->px[i] = th_proxy_start(c->srv[i].port);
            if (!c->px[i])
                return -1;
            o += (size_t)snprintf(c->url + o, sizeof c->url - o, "%s127.0.0.1:%d", i ? "," : "redlock://",
                                  th_proxy_port(c->px[i]));
            d += (size_t)snprintf(c->direct_url + d, sizeof c->direct_url - d, "%s127.0.0.1:%d",
                                  i ? "," : "redlock://", c->srv[i].port);
        }
        return 0;
    }
    case NM_TOPO_NETNS: {
        /* each client in a namespace of its own; the server listens on
         * 127.0.0.1 and the machine's end of every veth pair */
        char why[200];
        c->net = nm_net_setup(c->cfg->procs, why, sizeof why);
        if (!c->net) {
            fprintf(stderr, "nemesis: no network namespaces here: %s\n", why);
            return 2;
        }
        c->nsrv = 1;
        c->srv_args[0] = "--bind";
        c->srv_args[1] = nm_net_bind(c->net);
        c->srv_args[2] = "--protected-mode";
        c->srv_args[3] = "no";
        c->srv_args[4] = NULL;
        c->srv_extra = c->srv_args;
        if (nm_server_start(c, 0, 0) != 0)
            return -1;
        snprintf(c->url, sizeof c->url, "%s", c->srv[0].url);
        snprintf(c->direct_url, sizeof c->direct_url, "%s", c->srv[0].url);
        return 0;
    }
    default:
        return -1;
    }
}

static void servers_stop(nm_ctx_t *c)
{
    for (int i = 0; i < NM_MAX_SERVERS; i++) {
        if (c->px[i])
            th_proxy_stop(c->px[i]);
        c->px[i] = NULL;
    }
    for (int i = 0; i < c->nsrv; i++)
        th_server_stop(&c->srv[i]);
    th_server_stop(&c->store);
    clocks_free(c);
    if (c->net) {
        tt_cleanup();
        nm_net_teardown(c->net);
        c->net = NULL;
    }
}

/* ------------------------------------------------------------- the run */

static void print_tail(const char *path, int lines)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "tail -n %d '%s' 1>&2", lines, path);
    int rc = system(cmd);
    (void)rc;
}

static void backtrace_of(pid_t pid, const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "timeout 10 gdb -p %d -batch -ex 'thread apply all bt' >'%s/hang-%d.txt' 2>&1; "
             "grep -E '^(#|Thread)' '%s/hang-%d.txt' | head -80 1>&2",
             (int)pid, dir, (int)pid, dir, (int)pid);
    int rc = system(cmd);
    (void)rc;
}

int nm_run(const nm_cfg_t *cfg_in, nm_result_t *res)
{
    /* The roles that cannot run in this topology are left out, and say so. */
    nm_cfg_t eff = *cfg_in;
    const nm_cfg_t *cfg = &eff;
    for (int r = 0; r < nm_nroles; r++) {
        const char *why = NULL;
        if ((eff.roles & (1u << r)) && nm_roles[r].usable && !nm_roles[r].usable(&eff, &why)) {
            eff.roles &= ~(1u << r);
            fprintf(stderr, "nemesis: no %s role in this run: %s\n", nm_roles[r].tag, why ? why : "");
        }
    }
    /* redlock: a fence after a lapse is above the lapsed hold's only while
     * the servers' clocks agree (PROTOCOL.md, Fences): no server's clock
     * jumps there. */
    if (eff.topo == NM_TOPO_REDLOCK && (eff.faults & NM_BIT(NM_F_SRVCLOCK))) {
        eff.faults &= ~NM_BIT(NM_F_SRVCLOCK);
        fprintf(stderr, "nemesis: no srvclock faults under redlock:// (its fences assume the "
                "servers' clocks agree)\n");
    }
    memset(res, 0, sizeof *res);
    res->first_violation_us = -1;
    nm_ctx_t *c = calloc(1, sizeof *c);
    nm_hist_t hs;
    memset(&hs, 0, sizeof hs);
    if (!c)
        return -1;
    c->cfg = cfg;
    c->grantee = -1;
    c->late = -1;
    c->delkey = -1;
    c->rng = cfg->seed * 6364136223846793005ULL + 1442695040888963407ULL;
    if (cfg->dir)
        snprintf(c->dir, sizeof c->dir, "%s", cfg->dir);
    else
        snprintf(c->dir, sizeof c->dir, "/tmp/nemesis.%d.%llu", (int)getpid(),
                 (unsigned long long)cfg->seed);
    mkdir(c->dir, 0755);
    c->sh = nm_shared_new();
    if (!c->sh) {
        free(c);
        return -1;
    }
    nm_roles_setup();
    for (int i = 0; i < nm_nnames && i < NM_MAX_NAMES; i++)
        snprintf(c->sh->names[i], sizeof c->sh->names[i], "nm%llu.%s",
                 (unsigned long long)cfg->seed, nm_name_tag(i));
    nm_schedule_make(cfg, &c->sch);
    char roles[128] = "";
    for (int r = 0, o = 0; r < nm_nroles; r++)
        if (cfg->roles & (1u << r))
            o += snprintf(roles + o, sizeof roles - (size_t)o, "%s%s", o ? "," : "", nm_roles[r].tag);
    fprintf(stderr, "nemesis: seed %llu, %d clients x %d threads (and roles: %s), %.1f s of faults "
            "(%d planned) + %.1f s healed, lease %ld ms, fixed lease %ld ms, I/O time-out %ld ms; "
            "logs in %s\n",
            (unsigned long long)cfg->seed, cfg->procs, cfg->threads, roles[0] ? roles : "none",
            cfg->duration_ms / 1000.0, c->sch.n, cfg->tail_ms / 1000.0, cfg->lease_ms, cfg->fixed_ms,
            cfg->io_timeout_ms, c->dir);
    int rc = -1;
    int st = servers_start(c);
    if (st == 2) {
        res->skipped = 1;
        snprintf(res->first, sizeof res->first, "no network namespaces on this machine");
        rc = 0;
        goto out;
    }
    if (st != 0) {
        fprintf(stderr, "nemesis: could not start the servers\n");
        goto out;
    }
    for (int i = 0; i < cfg->procs; i++)
        if (spawn(c) < 0) {
            fprintf(stderr, "nemesis: could not start a client\n");
            goto out;
        }
    /* every client has its threads running before the clock starts */
    for (int64_t until = nm_now_us() + 10000000; nm_now_us() < until;) {
        int ready = 0;
        for (int s = 0; s < c->sh->nslots; s++)
            ready += __atomic_load_n(&c->sh->slot[s].threads, __ATOMIC_ACQUIRE) > 0;
        if (ready == c->sh->nslots)
            break;
        th_sleep_ms(5);
    }
    c->start = nm_now_us();
    c->sh->start_us = c->start;
    c->fault_end = c->start + cfg->duration_ms * 1000;
    int64_t end = c->fault_end + cfg->tail_ms * 1000;
    int64_t healed = 0;
    c->last_tick = nm_now_us();
    while (nm_now_us() < end && !c->broken) {
        int64_t now = nm_now_us();
        if (now - c->last_tick > NM_STALL_US)
            note_stall(c, c->last_tick, now);
        reap(c, 0);
        if (now < c->fault_end)
            nm_faults_tick(c, now);
        else if (!healed) {
            nm_faults_heal_all(c);
            healed = nm_now_us();
        }
        if (c->respawn_pending && now >= c->respawn_at && live_clients(c) < cfg->procs) {
            if (spawn(c) >= 0)
                c->respawn_pending--;
            else
                c->respawn_pending = 0;
        }
        if (now >= c->next_watch) {
            watch_calls(c, &hs, now);
            c->next_watch = now + 100000;
        }
        /* from here: only the sleep (a fault that blocks the loop, a break's
         * CLI, a restart, is the nemesis's own time, not a stall) */
        c->last_tick = nm_now_us();
        th_sleep_ms(1);
    }
    if (!healed)
        nm_faults_heal_all(c);
    if (c->broken) {
        fprintf(stderr, "nemesis: a lock server did not come back after a restart (its port taken?): "
                "the run cannot be judged\n");
        __atomic_store_n(&c->sh->stop, 1, __ATOMIC_RELEASE);
        goto out;
    }
    /* the end: the clients finish their operation and exit */
    int64_t stop_at = nm_now_us();
    __atomic_store_n(&c->sh->stop, 1, __ATOMIC_RELEASE);
    int64_t bound = (3 * cfg->lease_ms + 2 * cfg->io_timeout_ms + 5000) * 1000LL;
    for (int s = 0; s < c->sh->nslots; s++) {
        nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid <= 0 || sl->died_us)
            continue;
        int st = TH_WAIT_TIMEOUT;
        while (nm_now_us() < stop_at + bound) {
            int ws;
            if (waitpid(sl->pid, &ws, WNOHANG) == sl->pid) {
                st = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
                break;
            }
            th_sleep_ms(5);
        }
        if (st == TH_WAIT_TIMEOUT) {
            fprintf(stderr, "nemesis: client %d hangs; its threads:\n", sl->pid);
            backtrace_of(sl->pid, c->dir);
            kill(sl->pid, SIGKILL);
            waitpid(sl->pid, NULL, 0);
            nm_viol_add(&hs, NM_C_HANG, -1, nm_now_us(),
                        "client %d (slot %d) did not finish its operations within %.1f s of the "
                        "stop (threads stuck in a call; backtrace in %s/hang-%d.txt)",
                        sl->pid, s, (double)bound / 1e6, c->dir, sl->pid);
            sl->exit_status = -2;
        } else {
            sl->exit_status = st;
            if (st != 0)
                nm_client_died(c, s, 0, nm_now_us());
        }
    }
    for (int i = 0; i < nm_nlocks; i++)
        hs.store[i] = nm_store_log(c->store.port, c->sh->names[i], &hs.nstore[i]);
    nm_hist_build(&hs, c, stop_at);
    for (int r = 0; r < nm_nroles; r++)
        if ((cfg->roles & (1u << r)) && nm_roles[r].after)
            nm_roles[r].after(&hs);
    nm_check_all(&hs);
    res->violations = (int)hs.nv;
    for (size_t i = 0; i < hs.nv; i++) {
        if (hs.v[i].check < 32)
            res->classes[hs.v[i].check]++;
        if (res->first_violation_us < 0 || hs.v[i].t - c->start < res->first_violation_us)
            res->first_violation_us = hs.v[i].t - c->start;
    }
    if (hs.nv)
        snprintf(res->first, sizeof res->first, "%s", hs.v[0].text);
    res->calls = hs.ops;
    res->holds = hs.nh;
    res->writes = hs.writes;
    res->refused = hs.refused;
    res->enolck = hs.enolck;
    res->ownerdead = hs.ownerdead;
    res->eio = hs.eio;
    res->indeterminate = hs.indeterminate;
    for (int i = 0; i < c->sch.n; i++)
        res->faults_run += c->sch.f[i].done && c->sch.f[i].t_start && !c->sch.f[i].note[0]
                           ? 1 : (c->sch.f[i].done && c->sch.f[i].effects ? 1 : 0);
    fprintf(stderr, "nemesis: seed %llu: %llu calls, %zu holds, %llu store writes (%llu refused), "
            "%llu ENOLCK, %llu EOWNERDEAD, %llu EIO, %llu indeterminate; %d faults ran; "
            "%zu violation(s)\n",
            (unsigned long long)cfg->seed, (unsigned long long)hs.ops, hs.nh,
            (unsigned long long)hs.writes, (unsigned long long)hs.refused,
            (unsigned long long)hs.enolck, (unsigned long long)hs.ownerdead,
            (unsigned long long)hs.eio, (unsigned long long)hs.indeterminate, res->faults_run, hs.nv);
    if (hs.nv || cfg->verbose) {
        fprintf(stderr, "nemesis: the faults of seed %llu as they ran (s from the start):\n",
                (unsigned long long)cfg->seed);
        nm_schedule_print(stderr, &c->sch, c->start, 1);
    }
    if (hs.nv || getenv("NEMESIS_KEEP")) {
        /* (a kept passing run too: tools/nemesis-outcomes.sh reads it) */
        char hpath[300];
        snprintf(hpath, sizeof hpath, "%s/history.txt", c->dir);
        nm_hist_write(&hs, hpath);
    }
    if (hs.nv) {
        int counts[NM_C_COUNT] = { 0 };
        for (size_t i = 0; i < hs.nv; i++)
            counts[hs.v[i].check]++;
        fprintf(stderr, "nemesis: VIOLATIONS of seed %llu:", (unsigned long long)cfg->seed);
        for (int k = 0; k < NM_C_COUNT; k++)
            if (counts[k])
                fprintf(stderr, " %s %d", nm_check_name(k), counts[k]);
        fprintf(stderr, "\n");
        int shown[NM_C_COUNT] = { 0 };
        for (size_t i = 0; i < hs.nv; i++) {
            nm_viol_t *v = &hs.v[i];
            if (shown[v->check]++ >= 3)
                continue;
            fprintf(stderr, "\n[%s] at %.3f s: %s\n", nm_check_name(v->check), nm_rel(c, v->t) / 1000.0,
                    v->text);
            if (v->name >= 0)
                nm_hist_dump_around(&hs, stderr, v->name, v->t, 1500000);
        }
        fprintf(stderr, "\nnemesis: the whole history is in %s/history.txt, the clients' own messages "
                "in %s/clients.log; its tail:\n", c->dir, c->dir);
        char log[300];
        snprintf(log, sizeof log, "%s/clients.log", c->dir);
        print_tail(log, 15);
        static const char *const tn[] = { "single", "redlock", "sentinel", "cluster", "netns" };
        fprintf(stderr, "nemesis: to run seed %llu again: NEMESIS_SEED=%llu TH_FILTER=test_nemesis_%s "
                "BUILD_DIR/test_nemesis\n"
                "          or: tools/nemesis.sh -b BUILD_DIR -c %s -s %llu -n 1\n",
                (unsigned long long)cfg->seed, (unsigned long long)cfg->seed, tn[cfg->topo], tn[cfg->topo],
                (unsigned long long)cfg->seed);
    }
    {
        /* one line for tools/nemesis.sh: each check with how many and when first */
        static const char *const topo[] = { "single", "redlock", "sentinel", "cluster", "netns" };
        fprintf(stderr, "NEMESIS-RESULT seed=%llu topo=%s run_s=%.1f holds=%zu violations=%zu checks=",
                (unsigned long long)cfg->seed, topo[cfg->topo], (double)(stop_at - c->start) / 1e6,
                hs.nh, hs.nv);
        int any = 0;
        for (int k = 0; k < NM_C_COUNT; k++) {
            int n = 0;
            int64_t first = INT64_MAX;
            for (size_t i = 0; i < hs.nv; i++)
                if (hs.v[i].check == k) {
                    n++;
                    if (hs.v[i].t < first)
                        first = hs.v[i].t;
                }
            if (n)
                fprintf(stderr, "%s%s:%d@%.1f", any++ ? "," : "", nm_check_name(k), n,
                        first > c->start ? (double)(first - c->start) / 1e6 : 0.0);
        }
        fprintf(stderr, "%s\n", any ? "" : "none");
    }
    rc = hs.nv ? 1 : 0;
out:
    for (int s = 0; s < c->sh->nslots; s++) {
        nm_slot_t *sl = &c->sh->slot[s];
        if (sl->pid > 0 && sl->exit_status == -1 && !(sl->died_us && sl->killed)) {
            kill(sl->pid, SIGCONT);
            kill(sl->pid, SIGKILL);
            waitpid(sl->pid, NULL, 0);
        }
    }
    servers_stop(c);
    nm_hist_free(&hs);
    nm_shared_free(c->sh);
    if (rc == 0 && !getenv("NEMESIS_KEEP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
        int r = system(cmd);
        (void)r;
    }
    free(c);
    return rc;
}
