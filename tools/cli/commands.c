/* SPDX-License-Identifier: BSD-3-Clause */
/* commands.c - distlock status, list and break, on every kind of object:
 * read (or break) its state in Redis, print it, and say by the exit code
 * whether it is in use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_sem_break.h"
#include "cli.h"
#include "commands.h"
#include "break.h"
#include "objects.h"
#include "objscan.h"
#include "output.h"

static int open_or_fail(cli_redis_t *r)
{
    int rc = cli_redis_open(r, 0);
    if (rc) {
        cli_err("%s", r->err);
        cli_redis_close(r);
    }
    return rc;
}

/* After a failed reading: says why, closes r, and gives the exit code. */
static int failed(cli_redis_t *r)
{
    cli_err("%s", r->err);
    int rc = cli_redis_exit_code(r);
    cli_redis_close(r);
    return rc;
}

/* stdout could not be written (a full disk, a closed pipe under SIG_IGN):
 * the output is incomplete, so say so rather than exit 0. */
static int flush_stdout(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_err("cannot write the output");
        return CLI_EX_OSERR;
    }
    return rc;
}

/* In use: a lock held; a semaphore with a permit held or a waiter; a
 * condition with a waiter. */
static int in_use(const cli_obj_t *o)
{
    return o->st.nholders || (o->kind != DL_KIND_LOCK && o->st.nwaiters);
}

/* Reads NAME as each kind of `kinds` (bit k: DL_KIND k) into objs[k].
 * 0, or -1 with r->err (objs empty). */
static int fetch_kinds(cli_redis_t *r, const cli_opts_t *o, unsigned kinds, cli_obj_t *objs)
{
    if (cli_obj_fetch_kinds(r, kinds, o->name, o->namelen, objs))
        return -1;
    for (int k = 0; k < DL_KINDS; k++)
        if (kinds & (1u << k))
            cli_obj_finish(&objs[k]);
    return 0;
}

static unsigned all_kinds(void)
{
    unsigned kinds = 0;
    for (int k = 0; k < DL_KINDS; k++)
        if (cli_kind_view(k))
            kinds |= 1u << k;
    return kinds;
}

int cli_status(const cli_opts_t *o)
{
    cli_redis_t r;
    cli_obj_t objs[DL_KINDS];
    int rc = open_or_fail(&r);
    if (rc)
        return rc;
    unsigned kinds = o->kind >= 0 ? 1u << o->kind : all_kinds();
    if (fetch_kinds(&r, o, kinds, objs))
        return failed(&r);
    cli_redis_close(&r);
    /* Each kind the name has in Redis; none: the lock, free (as a lock
     * nobody used is). */
    unsigned shown = kinds;
    if (o->kind < 0) {
        shown = 0;
        for (int k = 0; k < DL_KINDS; k++)
            if ((kinds & (1u << k)) && objs[k].st.known)
                shown |= 1u << k;
        if (!shown)
            shown = 1u << DL_KIND_LOCK;
    }
    rc = CLI_EX_FREE;
    int first = 1;
    for (int k = 0; k < DL_KINDS; k++) {
        if (!(shown & (1u << k)))
            continue;
        if (o->json) {
            cli_print_status_json(stdout, &objs[k]);     /* one object per line */
            fputc('\n', stdout);
        } else {
            if (!first)
                fputc('\n', stdout);
            cli_print_status(stdout, &objs[k]);
        }
        first = 0;
        if (in_use(&objs[k]))
            rc = 0;
    }
    for (int k = 0; k < DL_KINDS; k++)
        cli_obj_free(&objs[k]);
    return flush_stdout(rc);
}

/* By name, then kind. */
static int cmp_obj(const void *a, const void *b)
{
    const cli_obj_t *x = a, *y = b;
    size_t n = x->st.namelen < y->st.namelen ? x->st.namelen : y->st.namelen;
    int c = memcmp(x->st.name, y->st.name, n);
    if (c)
        return c;
    if (x->st.namelen != y->st.namelen)
        return x->st.namelen < y->st.namelen ? -1 : 1;
    return x->kind - y->kind;
}

/* Reads l->v[from..to) (one kind) into out[*n..], keeping what list
 * shows: in use, disputed (redlock), or with --all anything.  0 or -1. */
static int read_kind(cli_redis_t *r, const cli_opts_t *o, const cli_objlist_t *l, size_t from,
                     size_t to, cli_obj_t *out, size_t *n)
{
    size_t m = to - from;
    char **names = calloc(m, sizeof *names);
    size_t *lens = calloc(m, sizeof *lens);
    cli_obj_t *got = calloc(m, sizeof *got);
    int rc = names && lens && got ? 0 : cli_redis_oom(r);
    for (size_t i = 0; i < m && rc == 0; i++) {
        names[i] = l->v[from + i].name;
        lens[i] = l->v[from + i].len;
    }
    if (rc == 0)
        rc = cli_objs_fetch(r, l->v[from].kind, names, lens, m, got);
    for (size_t i = 0; i < m && rc == 0; i++) {
        cli_obj_finish(&got[i]);
        if (o->all || got[i].busy)
            out[(*n)++] = got[i];
        else
            cli_obj_free(&got[i]);
    }
    free(names);
    free(lens);
    free(got);
    return rc;
}

int cli_list(const cli_opts_t *o)
{
    cli_redis_t r;
    int rc = open_or_fail(&r);
    if (rc)
        return rc;
    /* Keys linger a moment after a release (a waiter's registration, a
     * lock's meta hash for 7 days, a semaphore's value for 30): without
     * --all, only what is held or waited on (with redlock, also what a
     * minority of the servers shows held). */
    cli_objlist_t l;
    if (cli_objscan(&r, o->pattern, SIZE_MAX, o->all, &l))
        return failed(&r);
    cli_obj_t *v = calloc(l.n ? l.n : 1, sizeof *v);
    size_t n = 0;
    if (!v) {
        cli_objlist_free(&l);
        cli_redis_close(&r);
        cli_err("out of memory");
        return CLI_EX_OSERR;
    }
    /* The list is sorted by kind: one reading per kind. */
    for (size_t from = 0, to; from < l.n && rc == 0; from = to) {
        to = from;
        while (to < l.n && l.v[to].kind == l.v[from].kind)
            to++;
        if (o->kind < 0 || l.v[from].kind == o->kind)
            rc = read_kind(&r, o, &l, from, to, v, &n);
    }
    cli_objlist_free(&l);
    if (rc) {
        for (size_t i = 0; i < n; i++)
            cli_obj_free(&v[i]);
        free(v);
        return failed(&r);
    }
    cli_redis_close(&r);
    if (n)
        qsort(v, n, sizeof *v, cmp_obj);
    if (o->json)
        cli_print_list_json(stdout, v, n);
    else
        cli_print_list(stdout, v, n, o->all ? "(nothing known)" : "(nothing held or waited on)");
    for (size_t i = 0; i < n; i++)
        cli_obj_free(&v[i]);
    free(v);
    return flush_stdout(0);
}

/* ---------------------------------------------------------------- break */

static int break_lock(cli_redis_t *r, const cli_opts_t *o, const cli_obj_t *obj)
{
    char q[1200], who[600];
    const cli_lockstat_t *st = &obj->st;
    long long removed = 0;
    if (cli_break_lock(r, o->name, o->namelen, &removed))
        return failed(r);
    cli_redis_close(r);
    cli_quote(o->name, o->namelen, q, sizeof q);
    if (removed == 0) {
        cli_err("%s is not held; nothing to break", q);
        return CLI_EX_FREE;
    }
    if (st->nholders == 1)
        printf("broke %s: removed the hold of %s", q, cli_who(&st->holders[0].who, who, sizeof who));
    else
        printf("broke %s: removed %lld hold%s", q, removed, removed == 1 ? "" : "s");
    if (st->nwaiters)
        printf("; handed it to the waiters (%zu)", st->nwaiters);
    printf("; the next holder gets EOWNERDEAD\n");
    return flush_stdout(0);
}

/* The holder --holder HOST:PID names among st's, or NULL. */
static const cli_holder_t *holder_of(const cli_lockstat_t *st, const char *spec)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || !colon[1])
        return NULL;
    char *end;
    long pid = strtol(colon + 1, &end, 10);
    size_t hlen = (size_t)(colon - spec);
    if (*end || pid <= 0)
        return NULL;
    for (size_t i = 0; i < st->nholders; i++) {
        const cli_who_t *w = &st->holders[i].who;
        if (w->pid == pid && strlen(w->host) == hlen && memcmp(w->host, spec, hlen) == 0)
            return &st->holders[i];
    }
    return NULL;
}

static int break_sem(cli_redis_t *r, const cli_opts_t *o, const cli_obj_t *obj)
{
    char q[1200], who[600];
    const cli_lockstat_t *st = &obj->st;
    cli_quote(o->name, o->namelen, q, sizeof q);
    if (cli_redis_is_redlock(r)) {
        cli_redis_close(r);
        cli_err("semaphore %s: redlock:// keeps no semaphore (independent servers cannot keep "
                "one count)", q);
        return CLI_EX_CONFIG;
    }
    const cli_holder_t *one = st->nholders == 1 ? &st->holders[0] : NULL;
    if (o->holder) {
        if (obj->semkind != 'l') {
            cli_redis_close(r);
            cli_err("semaphore %s is %s: nobody holds its permits (--holder)", q,
                    obj->semkind == 'c' ? "a counting one" : "not there");
            return CLI_EX_FREE;
        }
        if (!(one = holder_of(st, o->holder))) {
            cli_redis_close(r);
            cli_err("semaphore %s: no holder %s (status shows its holders as HOST:PID)", q,
                    o->holder);
            return CLI_EX_FREE;
        }
    }
    dl_sem_break_reply_t b;
    if (cli_break_sem(r, o->name, o->namelen, o->holder ? one->who.token : "", &b))
        return failed(r);
    cli_redis_close(r);
    if (b.kind == 'l' && b.removed > 0) {
        if (b.removed == 1 && one)
            printf("broke semaphore %s: removed the hold of %s (%lld permit%s)", q,
                   cli_who(&one->who, who, sizeof who), b.permits, b.permits == 1 ? "" : "s");
        else
            printf("broke semaphore %s: removed %lld holds (%lld permits)", q, b.removed, b.permits);
        if (st->nwaiters)
            printf("; woke its waiters (%zu)", st->nwaiters);
        printf("; a holder finds its permits gone at its next renewal\n");
        return flush_stdout(0);
    }
    if (b.kind == 'l') {
        cli_err("semaphore %s has no holder; nothing to break", q);
        return CLI_EX_FREE;
    }
    if (b.kind == 'c' && b.after < 0) {
        cli_err("semaphore %s does not record the value it was created with; nothing reset", q);
        return CLI_EX_FREE;
    }
    if (b.kind == 'c' && b.after == b.before) {
        cli_err("semaphore %s has its initial value (%lld) already; nothing to reset", q, b.after);
        return CLI_EX_FREE;
    }
    if (b.kind == 'c') {
        /* A reset is a new incarnation (lua/sem_break.lua): told to every
         * process that used the old one, its waiters too. */
        printf("reset semaphore %s: value %lld -> %lld (the value it was created with), as a "
               "new incarnation", q, b.before, b.after);
        if (b.inc)
            printf(" (%llu)", b.inc);
        printf(": every process that used it");
        if (st->nwaiters)
            printf(", its %zu waiter%s too,", st->nwaiters, st->nwaiters == 1 ? "" : "s");
        printf(" gets ENOLCK until it initializes it again\n");
        return flush_stdout(0);
    }
    cli_err("there is no semaphore %s; nothing to break", q);
    return CLI_EX_FREE;
}

int cli_break(const cli_opts_t *o)
{
    cli_redis_t r;
    cli_obj_t objs[DL_KINDS];
    char q[1200];
    int rc = open_or_fail(&r);
    if (rc)
        return rc;
    /* What there is to break: a lock's holds, a semaphore's; the report
     * says whose.  The break itself is one atomic script. */
    unsigned breakable = 1u << DL_KIND_LOCK | 1u << DL_KIND_SEM;
    unsigned kinds = o->kind >= 0 ? 1u << o->kind : breakable;
    if (fetch_kinds(&r, o, kinds, objs))
        return failed(&r);
    int kind = o->kind;
    if (kind < 0) {
        /* The same name as a lock and a semaphore: which is for the user
         * to say, not for break to guess. */
        int lock = objs[DL_KIND_LOCK].st.known, sem = objs[DL_KIND_SEM].st.known;
        if (lock && sem) {
            for (int k = 0; k < DL_KINDS; k++)
                cli_obj_free(&objs[k]);
            cli_redis_close(&r);
            cli_err("%s is both a lock and a semaphore; say which to break: --kind lock or "
                    "--kind sem", cli_quote(o->name, o->namelen, q, sizeof q));
            return CLI_EX_USAGE;
        }
        kind = sem ? DL_KIND_SEM : DL_KIND_LOCK;
    }
    rc = kind == DL_KIND_SEM ? break_sem(&r, o, &objs[kind]) : break_lock(&r, o, &objs[kind]);
    for (int k = 0; k < DL_KINDS; k++)
        cli_obj_free(&objs[k]);
    return rc;
}
