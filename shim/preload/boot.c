/* SPDX-License-Identifier: BSD-3-Clause */
/* boot.c - the interposer's start (boot.h): DISTLOCK_ON_ERROR and
 * DISTLOCK_ON_LOSS read (the latter's function registered with the
 * library: dist_onlost) and DISTLOCK_MAP applied before main, or the
 * program stopped with one line; a program without the map's symbols,
 * such as a launcher, goes dormant and is stopped only if it locks.  It
 * owns the entries (entries[]), made the same way for every kind (its
 * target resolved by what names it: kind.h), fills the address table
 * (table.c) once, before main, and runs the kinds' hooks: when their
 * entries are made, after fork, at exit. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "preload.h"
#include "process.h"

static dlp_entry_t entries[DLP_MAX_ENTRIES];
static int nentries;

/* The path flock() calls will be compared with: /proc/self/fd/N of a
 * descriptor of it reads back its canonical path. */
static char *canonical(const char *target)
{
    char *r = realpath(target, NULL);
    if (r)
        return r;
    const char *slash = strrchr(target, '/');
    char dir[PATH_MAX];
    const char *base = target;
    if (slash) {
        size_t n = (size_t)(slash - target);
        if (n >= sizeof dir)
            return strdup(target);
        memcpy(dir, target, n);
        dir[n] = 0;
        if (n == 0)
            strcpy(dir, "/");
        base = slash + 1;
    } else {
        strcpy(dir, ".");
    }
    char *d = realpath(dir, NULL);
    if (!d)
        return strdup(target);
    size_t len = strlen(d) + strlen(base) + 2;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%s%s%s", d, strcmp(d, "/") ? "/" : "", base);
    free(d);
    return out;
}

static void atfork_child(void)
{
    dlp_policy_after_fork();
    for (int k = 0; dlp_kinds[k]; k++)
        if (dlp_kinds[k]->after_fork)
            dlp_kinds[k]->after_fork();
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Is the entry for this program?  @PROGRAM is matched against the base
 * name of the executable file (/proc/self/exe, symlinks resolved) and of
 * argv[0] (the name it was started by). */
static int for_me(const dlp_spec_t *s, const char *exe, const char *argv0)
{
    if (!s->program)
        return 1;
    return (exe[0] && strcmp(s->program, base_of(exe)) == 0) ||
           (argv0 && argv0[0] && strcmp(s->program, base_of(argv0)) == 0);
}

/* "TARGET@PROGRAM" for the hint that follows a missing symbol. */
static void hint_of(const dlp_spec_t *s, char *buf, size_t size)
{
    snprintf(buf, size, "%.200s@PROGRAM", s->target);
}

static int same_name(const dlp_entry_t *a, const dlp_spec_t *s)
{
    return strlen(a->name) == s->namelen && memcmp(a->name, s->name, s->namelen) == 0;
}

/* Makes the entry of spec i: its name and target (addr: a symbol kind's
 * object, resolved already), then whatever the kind makes of it. */
static void add_entry(int i, const dlp_spec_t *s, void *addr, const char *where)
{
    const dlp_kind_t *k = s->kind;
    dlp_entry_t *e = &entries[nentries];
    memset(e, 0, sizeof *e);
    e->kind = k;
    e->addr = addr;
    e->name = strndup(s->name, s->namelen);
    if (e->name && k->target == DLP_BY_PATH) {
        e->target = canonical(s->target);
    } else if (e->name && k->target == DLP_BY_NAME) {
        const char *t = s->target;
        while (*t == '/')
            t++;
        e->target = strdup(t);
    }
    if (!e->name || (k->target != DLP_BY_SYMBOL && !e->target))
        dlp_stop("DISTLOCK_MAP: out of memory");
    e->targetlen = e->target ? strlen(e->target) : 0;
    for (int j = 0; j < nentries; j++) {
        const dlp_entry_t *o = &entries[j];
        if (addr && o->addr == addr)
            dlp_stop("DISTLOCK_MAP: entry %d (%s): %s is the same object as %s \"%s\"", i + 1,
                     e->name, s->target, o->kind->what, o->name);
        if (o->kind->space == DL_KIND_LOCK && k->space == DL_KIND_LOCK &&
            o->kind->shape != k->shape && same_name(o, s))
            dlp_stop("DISTLOCK_MAP: entry %d (%s): name already used with another KIND", i + 1,
                     e->name);
    }
    if (k->init && k->init(e))
        dlp_stop("DISTLOCK_MAP: entry %d (%s): %s", i + 1, e->name, dist_lasterror());
    if (addr)
        dlp_table_add(e);
    if (k->target == DLP_BY_SYMBOL)
        dl_log(DL_LOG_DEBUG, "preload: %s \"%s\" = %s %s", k->what, e->name, k->ctype, where);
    else
        dl_log(DL_LOG_DEBUG, "preload: %s \"%s\" = %s on %s%s", k->what, e->name, k->word,
               k->target == DLP_BY_NAME ? "/" : "", e->target);
    nentries++;
}

/* Which programs the map applies to (SPEC "Launchers"):
 * - entries of kinds named by a path or a name (lock files, semaphores)
 *   apply in every program: they mean the same object anywhere;
 * - an entry with @PROGRAM applies only in programs of that name, and there
 *   it must resolve, or the program stops now;
 * - the other entries of symbol kinds (mutex, rwlock, cond, barrier): a
 *   program that has some of the map's symbols (any symbol found, or for
 *   a map of offsets only, an offset that fits) is the program the map is
 *   for: every such entry must resolve, or it stops now.  A program that
 *   has none of them is dormant: a launcher (timeout, env, sh...) runs and
 *   starts the next program with the environment untouched; a program
 *   that locks a pthread mutex or rwlock anyway, or uses a barrier (a
 *   misspelt symbol), stops at that first call with the reason the start
 *   would have given;
 * - in a program started by the one the map applied to (DLP_MARKER), missing
 *   entries are skipped. */
static void apply_map(const char *map, const char *argv0)
{
    static char buf[65536];
    static dlp_spec_t specs[DLP_MAX_ENTRIES];
    static void *addrs[DLP_MAX_ENTRIES];
    static char wheres[DLP_MAX_ENTRIES][320];
    static char hint[256];
    enum { SKIP, HAVE, LACK };
    int state[DLP_MAX_ENTRIES];
    char err[512];
    int n = 0;
    if (dlp_map_parse(map, dlp_kinds, buf, sizeof buf, specs, DLP_MAX_ENTRIES, &n, err, sizeof err))
        dlp_stop("DISTLOCK_MAP: %s", err);

    /* The rest of the configuration, checked now rather than at the first
     * lock, where legacy code could not take an error; and the library's
     * process state now, before main: its pthread_atfork child handler is
     * then registered before any of the program's, so a program's child
     * handler that unlocks a mapped mutex (the classic atfork pattern)
     * finds the library already reset for the child, not talking on the
     * parent's connection.  This also sets the library's log level. */
    if (dl_proc_start())
        dlp_stop("%s", dist_lasterror());

    const char *exe = dlp_exe_path();
    const char *marker = secure_getenv(DLP_MARKER);
    int lenient = marker && strcmp(marker, exe) != 0;

    int named = 0, have_named = 0, have_off = 0, lack = -1;
    char lack_err[512] = "";
    for (int i = 0; i < n; i++) {
        const dlp_spec_t *s = &specs[i];
        state[i] = SKIP;
        if (!for_me(s, exe, argv0))
            continue;
        if (s->kind->target != DLP_BY_SYMBOL) {
            add_entry(i, s, NULL, NULL);
            continue;
        }
        int rc = dlp_elf_resolve(s, s->kind->csize, &addrs[i], wheres[i], sizeof wheres[i], err,
                                 sizeof err);
        named += !s->is_offset;
        if (rc == 0) {
            state[i] = HAVE;
            have_named += !s->is_offset;
            have_off += s->is_offset;
        } else if (s->program) {
            dlp_stop("DISTLOCK_MAP: entry %d (%.*s): %s", i + 1, (int)s->namelen, s->name, err);
        } else if (lenient) {
            dl_log(DL_LOG_DEBUG, "preload: %s: skipped in %s", err, exe);
        } else if (rc < 0) {
            dlp_stop("DISTLOCK_MAP: entry %d (%.*s): %s", i + 1, (int)s->namelen, s->name, err);
        } else {
            state[i] = LACK;
            if (lack < 0) {
                lack = i;
                snprintf(lack_err, sizeof lack_err, "%s", err);
            }
        }
    }

    if (lack >= 0) {
        const dlp_spec_t *s = &specs[lack];
        hint_of(s, hint, sizeof hint);
        if (have_named || (!named && have_off))
            dlp_stop("DISTLOCK_MAP: entry %d (%.*s): %s (an entry for another program: %s)", lack + 1,
                 (int)s->namelen, s->name, lack_err, hint);
        char why[768];
        snprintf(why, sizeof why, "DISTLOCK_MAP: entry %d (%.*s): %s", lack + 1,
                 (int)(s->namelen < 100 ? s->namelen : 100), s->name, lack_err);
        dl_log(DL_LOG_DEBUG, "preload: %s has none of the map's symbols: it may start the "
               "program that has them, and stops if it locks a pthread mutex or rwlock",
               exe[0] ? exe : "this program");
        dlp_table_dormant(why, hint);
        return;
    }

    uintptr_t lo = UINTPTR_MAX, hi = 0;
    int nsym = 0;
    for (int i = 0; i < n; i++) {
        if (state[i] != HAVE)
            continue;
        add_entry(i, &specs[i], addrs[i], wheres[i]);
        uintptr_t a = (uintptr_t)addrs[i];
        if (a < lo)
            lo = a;
        if (a > hi)
            hi = a;
        nsym++;
    }
    if (have_named && !marker && exe[0])
        setenv(DLP_MARKER, exe, 1);
    if (nsym) {
        dlp_table_publish(lo, hi);
    }
}

__attribute__((constructor)) static void dlp_start(void)
{
    dlp_in = 1;
    dlp_real_resolve();
    const char *oe = secure_getenv("DISTLOCK_ON_ERROR");
    if (oe && strcmp(oe, "wait") == 0)
        dlp_on_error = DLP_ON_ERROR_WAIT;
    else if (oe && strcmp(oe, "abort") == 0)
        dlp_on_error = DLP_ON_ERROR_ABORT;
    else if (oe)
        dlp_stop("DISTLOCK_ON_ERROR=\"%.40s\": expected wait or abort", oe);
    const char *ol = secure_getenv("DISTLOCK_ON_LOSS");
    if (ol && dlp_on_loss_parse(ol))
        dlp_stop("DISTLOCK_ON_LOSS=\"%.40s\": expected warn, abort or exit:N (N from 0 to 255)", ol);

    /* secure_getenv: a setuid program ignores the map. */
    const char *map = secure_getenv("DISTLOCK_MAP");
    if (map && *map) {
        apply_map(map, program_invocation_name);
        /* Each kind with entries here, now that they are all made. */
        for (int k = 0; dlp_kinds[k]; k++) {
            int any = 0;
            for (int i = 0; i < nentries && !any; i++)
                any = entries[i].kind == dlp_kinds[k];
            if (any && dlp_kinds[k]->ready)
                dlp_kinds[k]->ready();
        }
        /* Every hold of the interposer's library is a mapped one. */
        dist_onlost(dlp_lost, NULL);
        pthread_atfork(NULL, NULL, atfork_child);
    }
    dlp_in = 0;
}

__attribute__((destructor)) static void dlp_end(void)
{
    if (!nentries)
        return;
    dlp_in = 1;
    for (int k = 0; dlp_kinds[k]; k++)
        if (dlp_kinds[k]->at_exit)
            dlp_kinds[k]->at_exit();
    dlp_in = 0;
}

