/* SPDX-License-Identifier: BSD-3-Clause */
/* snapshot.c - one reading of the objects under the prefix (snapshot.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "objscan.h"
#include "snapshot.h"

static long long clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cli_snapshot_free(cli_snapshot_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        cli_obj_free(&s->obj[i]);
    free(s->obj);
    memset(s, 0, sizeof *s);
}

/* Reads l->v[from..to) (one kind) into s, keeping the busy ones. */
static int read_kind(cli_redis_t *r, const cli_objlist_t *l, size_t from, size_t to,
                     cli_snapshot_t *s)
{
    size_t n = to - from;
    char **names = calloc(n, sizeof *names);
    size_t *lens = calloc(n, sizeof *lens);
    cli_obj_t *o = calloc(n, sizeof *o);
    int rc = names && lens && o ? 0 : cli_redis_oom(r);
    for (size_t i = 0; i < n && rc == 0; i++) {
        names[i] = l->v[from + i].name;
        lens[i] = l->v[from + i].len;
    }
    if (rc == 0)
        rc = cli_objs_fetch(r, l->v[from].kind, names, lens, n, o);
    for (size_t i = 0; i < n && rc == 0; i++) {
        cli_obj_finish(&o[i]);
        int k = o[i].kind;
        s->read[k]++;
        s->held[k] += o[i].st.nholders > 0;
        s->waiters[k] += o[i].st.nwaiters;
        if (o[i].busy)
            s->obj[s->n++] = o[i];
        else
            cli_obj_free(&o[i]);
    }
    free(names);
    free(lens);
    free(o);
    return rc;
}

int cli_snapshot_take(cli_redis_t *r, const char *pattern, size_t limit, cli_snapshot_t *s)
{
    memset(s, 0, sizeof *s);
    long long t0 = clock_ms(CLOCK_MONOTONIC);
    s->at_ms = clock_ms(CLOCK_REALTIME);
    cli_objlist_t l;
    if (cli_objscan(r, pattern, limit, 0, &l))
        return -1;
    s->truncated = l.truncated;
    int rc = 0;
    if (l.n && !(s->obj = calloc(l.n, sizeof *s->obj)))
        rc = cli_redis_oom(r);
    /* The list is sorted by kind: one fetch per kind. */
    for (size_t from = 0, to; from < l.n && rc == 0; from = to) {
        to = from;
        while (to < l.n && l.v[to].kind == l.v[from].kind)
            to++;
        rc = read_kind(r, &l, from, to, s);
    }
    cli_objlist_free(&l);
    if (rc) {
        cli_snapshot_free(s);
        return -1;
    }
    s->took_ms = clock_ms(CLOCK_MONOTONIC) - t0;
    return 0;
}

/* ---------------------------------------------------------------- order */

static const char *const sort_words[CLI_SORTS] = { "waiters", "age", "wait", "name" };

const char *cli_sort_word(int key)
{
    return key >= 0 && key < CLI_SORTS ? sort_words[key] : "?";
}

int cli_sort_of(const char *word)
{
    for (int k = 0; k < CLI_SORTS; k++)
        if (strcmp(word, sort_words[k]) == 0)
            return k;
    return -1;
}

static int cmp_ll_desc(long long a, long long b)
{
    return a > b ? -1 : a < b ? 1 : 0;
}

static int cmp_name(const cli_obj_t *a, const cli_obj_t *b)
{
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    size_t n = a->st.namelen < b->st.namelen ? a->st.namelen : b->st.namelen;
    int c = memcmp(a->st.name, b->st.name, n);
    return c ? c : a->st.namelen < b->st.namelen ? -1 : a->st.namelen > b->st.namelen;
}

typedef struct order {
    int key, rev;
} order_t;

static int cmp_obj(const void *pa, const void *pb, void *arg)
{
    const cli_obj_t *a = pa, *b = pb;
    const order_t *o = arg;
    int c = 0;
    switch (o->key) {
    case CLI_SORT_WAITERS:
        c = cmp_ll_desc((long long)a->st.nwaiters, (long long)b->st.nwaiters);
        if (!c)
            c = cmp_ll_desc(a->longest_wait_ms, b->longest_wait_ms);
        if (!c)
            c = cmp_ll_desc(a->hold_age_ms, b->hold_age_ms);
        break;
    case CLI_SORT_AGE:
        c = cmp_ll_desc(a->hold_age_ms, b->hold_age_ms);
        if (!c)
            c = cmp_ll_desc((long long)a->st.nwaiters, (long long)b->st.nwaiters);
        break;
    case CLI_SORT_WAIT:
        c = cmp_ll_desc(a->longest_wait_ms, b->longest_wait_ms);
        if (!c)
            c = cmp_ll_desc((long long)a->st.nwaiters, (long long)b->st.nwaiters);
        break;
    }
    if (!c)
        c = cmp_name(a, b);
    return o->rev ? -c : c;
}

void cli_snapshot_sort(cli_snapshot_t *s, int key, int rev)
{
    order_t o = { key, rev };
    if (s->n > 1)
        qsort_r(s->obj, s->n, sizeof *s->obj, cmp_obj, &o);
}
