/* SPDX-License-Identifier: BSD-3-Clause */
/* boot.c - the interposer's start (boot.h): DISTLOCK_ON_ERROR and
 * DISTLOCK_ON_LOSS read (the latter's function registered with the
 * library: dist_onlost) and DISTLOCK_MAP applied before main, or the
 * program stopped with one line; a program without the map's symbols, such as a launcher, goes dormant
 * and is stopped only if it locks.  It owns the entries (entries[]) and
 * fills the address table (table.c) once, before main; and at exit it
 * ends the file-lock holds. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "preload.h"
#include "process.h"

static dlp_entry_t entries[DLP_MAX_ENTRIES];
static int nentries;

static int same_name(const dlp_entry_t *a, const dlp_spec_t *s)
{
    return strlen(a->name) == s->namelen && memcmp(a->name, s->name, s->namelen) == 0;
}

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
    dlp_file_after_fork();
    dlp_sem_after_fork();
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

static void add_file(int i, const dlp_spec_t *s)
{
    dlp_entry_t *e = &entries[nentries];
    memset(e, 0, sizeof *e);
    e->kind = DLP_FLOCK;
    e->name = strndup(s->name, s->namelen);
    e->path = e->name ? canonical(s->target) : NULL;
    if (!e->path)
        dlp_stop("DISTLOCK_MAP: out of memory");
    e->pathlen = strlen(e->path);
    for (int k = 0; k < dlp_nfile; k++)
        if (strcmp(dlp_files[k]->path, e->path) == 0)
            dlp_stop("DISTLOCK_MAP: entry %d (%s): file %s is already mapped", i + 1, e->name, e->path);
    if (dist_rwlock_init(&e->d.rw, e->name, NULL))
        dlp_stop("DISTLOCK_MAP: entry %d: %s", i + 1, dist_lasterror());
    dlp_files[dlp_nfile++] = e;
    dl_log(DL_LOG_DEBUG, "preload: lock \"%s\" = flock on %s", e->name, e->path);
    nentries++;
}

/* A semaphore applies in every program, as a file does: its name means
 * the same semaphore anywhere. */
static void add_sem(int i, const dlp_spec_t *s)
{
    dlp_entry_t *e = &entries[nentries];
    memset(e, 0, sizeof *e);
    e->kind = DLP_SEM;
    e->name = strndup(s->name, s->namelen);
    const char *t = s->target;
    while (*t == '/')
        t++;
    e->path = e->name ? strdup(t) : NULL;
    if (!e->path)
        dlp_stop("DISTLOCK_MAP: out of memory");
    e->pathlen = strlen(e->path);
    (void)i;
    dlp_sem_add(e);
    nentries++;
}

static void add_object(int i, const dlp_spec_t *s, void *addr, const char *where)
{
    dlp_entry_t *e = &entries[nentries];
    memset(e, 0, sizeof *e);
    e->kind = s->kind;
    e->addr = addr;
    e->name = strndup(s->name, s->namelen);
    if (!e->name)
        dlp_stop("DISTLOCK_MAP: out of memory");
    for (int k = 0; k < nentries; k++)
        if (entries[k].addr == e->addr)
            dlp_stop("DISTLOCK_MAP: entry %d (%s): %s is the same object as lock \"%s\"", i + 1,
                 e->name, s->target, entries[k].name);
    for (int k = 0; k < nentries; k++)
        if (entries[k].kind != DLP_FLOCK && entries[k].kind != DLP_SEM &&
            entries[k].kind != DLP_COND && e->kind != DLP_COND &&
            entries[k].kind != e->kind && same_name(&entries[k], s))
            dlp_stop("DISTLOCK_MAP: entry %d (%s): name already used with another KIND", i + 1, e->name);
    int rc = s->kind == DLP_MUTEX ? dist_mutex_init(&e->d.m, e->name, NULL)
             : s->kind == DLP_COND ? dist_cond_init(&e->d.c, e->name, NULL)
                                   : dist_rwlock_init(&e->d.rw, e->name, NULL);
    if (rc)
        dlp_stop("DISTLOCK_MAP: entry %d: %s", i + 1, dist_lasterror());
    dlp_table_add(e);
    dl_log(DL_LOG_DEBUG, "preload: %s \"%s\" = %s %s", s->kind == DLP_COND ? "condition" : "lock",
           e->name, s->kind == DLP_MUTEX ? "pthread_mutex_t"
                    : s->kind == DLP_COND ? "pthread_cond_t" : "pthread_rwlock_t", where);
    nentries++;
}

/* Which programs the map applies to (SPEC "Launchers"):
 * - lock files and semaphores apply in every program: a path or a
 *   semaphore name means the same object anywhere;
 * - an entry with @PROGRAM applies only in programs of that name, and there
 *   it must resolve, or the program stops now;
 * - the other mutex/rwlock entries: a program that has some of the map's
 *   symbols (any symbol found, or for a map of offsets only, an offset
 *   that fits) is the program the map is for: every such entry must
 *   resolve, or it stops now.  A program that has none of them is
 *   dormant: a launcher (timeout, env, sh...) runs and starts the next
 *   program with the environment untouched; a program that locks a
 *   pthread mutex or rwlock anyway (a misspelt symbol) stops at that first
 *   lock call with the reason the start would have given;
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
    if (dlp_map_parse(map, buf, sizeof buf, specs, DLP_MAX_ENTRIES, &n, err, sizeof err))
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
        if (s->kind == DLP_FLOCK) {
            add_file(i, s);
            continue;
        }
        if (s->kind == DLP_SEM) {
            add_sem(i, s);
            continue;
        }
        size_t need = s->kind == DLP_MUTEX ? sizeof(pthread_mutex_t)
                      : s->kind == DLP_COND ? sizeof(pthread_cond_t) : sizeof(pthread_rwlock_t);
        int rc = dlp_elf_resolve(s, need, &addrs[i], wheres[i], sizeof wheres[i], err, sizeof err);
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
        add_object(i, &specs[i], addrs[i], wheres[i]);
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
        dlp_file_init();
        apply_map(map, program_invocation_name);
        if (dlp_nfile)
            dlp_file_check_inherited();
        /* Every hold of the interposer's library is a mapped one. */
        dist_onlost(dlp_lost, NULL);
        pthread_atfork(NULL, NULL, atfork_child);
    }
    dlp_in = 0;
}

__attribute__((destructor)) static void dlp_end(void)
{
    /* POSIX file locks end with the process: so do their distributed holds,
     * rather than lapsing a lease later. */
    if (dlp_nfile) {
        dlp_in = 1;
        dlp_file_release_all();
        dlp_in = 0;
    }
}

