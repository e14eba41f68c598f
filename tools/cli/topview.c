/* SPDX-License-Identifier: BSD-3-Clause */
/* topview.c - the text of distlock top (topview.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "term.h"
#include "topview.h"

#define NAME_COLS_MAX 40      /* longer names are cut, ending in '+' */

void cli_lines_add(cli_lines_t *l, const char *fmt, ...)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->oom = 1;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s;
    int rc = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (rc < 0) {
        l->oom = 1;
        return;
    }
    l->v[l->n++] = s;
}

void cli_lines_free(cli_lines_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

const char *cli_topview_target(const dl_config_t *c, char *buf, size_t size)
{
    char ep[300];
    dl_endpoint_name(c, 0, ep, sizeof ep);
    switch (c->scheme) {
    case DL_SCHEME_SENTINEL:
        snprintf(buf, size, "sentinel master %.100s", c->master);
        break;
    case DL_SCHEME_CLUSTER:
        snprintf(buf, size, "cluster via %s", ep);
        break;
    default:
        if (c->scheme == DL_SCHEME_REDLOCK && c->nep > 1)
            snprintf(buf, size, "redlock, %d servers", c->nep);
        else if (c->db)
            snprintf(buf, size, "redis %s db %d", ep, c->db);
        else
            snprintf(buf, size, "redis %s", ep);
    }
    return buf;
}

/* A name as the table shows it, as metrics.c labels it: printable UTF-8
 * as it is, a backslash doubled, any other byte as \xNN (so the text says
 * which bytes the name holds, one way only); longer than NAME_COLS_MAX
 * columns, cut and ending in '+'. */
static const char *show_name(const char *s, size_t n, char *buf, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < size;) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                   : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        int ok = len && i + len <= n && c >= 0x20 && c != 0x7f;
        for (size_t k = 1; ok && k < len; k++)
            ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
        if (c == '\\') {
            buf[o++] = '\\';
            buf[o++] = '\\';
            i++;
        } else if (ok) {
            memcpy(buf + o, s + i, len);
            o += len;
            i += len;
        } else {
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
            i++;
        }
    }
    buf[o] = 0;
    if (cli_term_width(buf, o) > NAME_COLS_MAX) {
        o = cli_term_fit(buf, o, NAME_COLS_MAX - 1);
        buf[o++] = '+';
        buf[o] = 0;
    }
    return buf;
}

/* Appends s to out (at *o), padded with spaces to cols columns. */
static void cell(char *out, size_t size, size_t *o, const char *s, size_t cols, int right)
{
    size_t w = cli_term_width(s, strlen(s)), pad = w < cols ? cols - w : 0;
    int n = right ? snprintf(out + *o, size - *o, "%*s%s", (int)pad, "", s)
                  : snprintf(out + *o, size - *o, "%s%*s", s, (int)pad, "");
    if (n > 0)
        *o = *o + (size_t)n < size ? *o + (size_t)n : size - 1;
}

static const char *dur_or_dash(long long ms, char *buf, size_t size)
{
    if (ms < 0)
        return "-";
    return cli_duration(ms, buf, size);
}

const char *cli_topview_summary(const cli_snapshot_t *s, char *buf, size_t size)
{
    size_t o = 0;
    long long wait = -1, age = -1;
    buf[0] = 0;
    for (int k = 0; k < DL_KINDS; k++) {
        const cli_kind_view_t *kv = cli_kind_view(k);
        if (!kv || (k != DL_KIND_LOCK && !s->read[k]))
            continue;                   /* a kind nobody uses: not a word */
        int n = snprintf(buf + o, size - o, "%s%ss: %zu held, %zu waiting", o ? "; " : "",
                         kv->label, s->held[k], s->waiters[k]);
        if (n > 0 && o + (size_t)n < size)
            o += (size_t)n;
    }
    for (size_t i = 0; i < s->n; i++) {
        if (s->obj[i].longest_wait_ms > wait)
            wait = s->obj[i].longest_wait_ms;
        if (s->obj[i].hold_age_ms > age)
            age = s->obj[i].hold_age_ms;
    }
    char a[32];
    if (wait >= 0) {
        int n = snprintf(buf + o, size - o, "; longest wait %s", cli_duration(wait, a, sizeof a));
        if (n > 0 && o + (size_t)n < size)
            o += (size_t)n;
    }
    if (age >= 0)
        snprintf(buf + o, size - o, "; oldest hold %s", cli_duration(age, a, sizeof a));
    return buf;
}

/* The holder the row names: the one that has held longest. */
static const cli_holder_t *oldest(const cli_lockstat_t *st)
{
    const cli_holder_t *best = NULL;
    for (size_t i = 0; i < st->nholders; i++)
        if (!best || st->holders[i].held_ms > best->held_ms)
            best = &st->holders[i];
    return best;
}

static const char *mode_word(char m)
{
    return m == 'w' ? "exclusive" : m == 'r' ? "shared" : m == 'p' ? "a permit" : "-";
}

/* A holder's mode: a lock's, or a semaphore hold's permits. */
static const char *hold_word(const cli_holder_t *h, char *buf, size_t size)
{
    if (h->who.mode != 'p')
        return mode_word(h->who.mode);
    snprintf(buf, size, "%u permit%s", h->count, h->count == 1 ? "" : "s");
    return buf;
}

static void detail_lines(cli_lines_t *l, const cli_obj_t *ob)
{
    char who[600], a[32], b[32], m[32];
    const cli_lockstat_t *st = &ob->st;
    /* A semaphore's count is as old as its incarnation: one younger than
     * its users says Redis lost the one before (a restart, a flush). */
    if (ob->incarn)
        cli_lines_add(l, "    incarnation %llu, made %s ago", ob->incarn,
                      ob->incarn_age_ms >= 0 ? cli_duration(ob->incarn_age_ms, a, sizeof a)
                                             : "(unknown)");
    for (size_t i = 0; i < st->nholders; i++) {
        const cli_holder_t *h = &st->holders[i];
        cli_lines_add(l, "    holder %s, %s, held %s, lease left %s, fence %llu%s",
                      cli_who(&h->who, who, sizeof who), hold_word(h, m, sizeof m),
                      cli_duration(h->held_ms, a, sizeof a),
                      cli_duration(h->lease_left_ms, b, sizeof b), h->fence,
                      h->after_lapse ? ", taken after a lapse (EOWNERDEAD)" : "");
    }
    for (size_t i = 0; i < st->nwaiters; i++) {
        const cli_who_t *w = &st->waiters[i];
        cli_lines_add(l, "    waiter %s, %s, waiting %s", cli_who(w, who, sizeof who),
                      mode_word(w->mode),
                      w->waited_ms >= 0 ? cli_duration(w->waited_ms, a, sizeof a) : "(unknown)");
    }
}

void cli_topview_table(cli_lines_t *l, const cli_snapshot_t *s, int details)
{
    char name[NAME_COLS_MAX * 8 + 16], row[2048], who[600], a[32], b[32], n[32];
    size_t wname = 4, wstate = 9, o;
    for (size_t i = 0; i < s->n; i++) {
        const cli_obj_t *ob = &s->obj[i];
        show_name(ob->st.name, ob->st.namelen, name, sizeof name);
        size_t w = cli_term_width(name, strlen(name));
        if (w > wname)
            wname = w;
        if (strlen(ob->state) > wstate)
            wstate = strlen(ob->state);
    }
    o = 0;
    cell(row, sizeof row, &o, "NAME", wname + 2, 0);
    cell(row, sizeof row, &o, "KIND", 6, 0);
    cell(row, sizeof row, &o, "STATE", wstate + 2, 0);
    cell(row, sizeof row, &o, "WAITING", 7, 1);
    cell(row, sizeof row, &o, "HELD FOR", 10, 1);
    cell(row, sizeof row, &o, "MAX WAIT", 10, 1);
    cell(row, sizeof row, &o, "  HOLDER", 0, 0);
    cli_lines_add(l, "%s", row);
    if (!s->n) {
        cli_lines_add(l, "(nothing held or waited on)");
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        const cli_obj_t *ob = &s->obj[i];
        const cli_holder_t *h = oldest(&ob->st);
        o = 0;
        cell(row, sizeof row, &o, show_name(ob->st.name, ob->st.namelen, name, sizeof name),
             wname + 2, 0);
        cell(row, sizeof row, &o, cli_kind_view(ob->kind)->label, 6, 0);
        cell(row, sizeof row, &o, ob->state, wstate + 2, 0);
        snprintf(n, sizeof n, "%zu", ob->st.nwaiters);
        cell(row, sizeof row, &o, n, 7, 1);
        cell(row, sizeof row, &o, dur_or_dash(ob->hold_age_ms, a, sizeof a), 10, 1);
        /* "?": its waiters were queued by an older library, which does
         * not say since when. */
        cell(row, sizeof row, &o,
             ob->longest_wait_ms >= 0 ? cli_duration(ob->longest_wait_ms, b, sizeof b)
                                      : ob->st.nwaiters ? "?" : "-",
             10, 1);
        if (h) {
            cli_who(&h->who, who, sizeof who);
            if (ob->st.nholders > 1) {
                size_t len = strlen(who);
                snprintf(who + len, sizeof who - len, " +%zu more", ob->st.nholders - 1);
            }
            snprintf(row + o, sizeof row - o, "  %s", who);
        } else {
            snprintf(row + o, sizeof row - o, "  -");
        }
        cli_lines_add(l, "%s", row);
        if (details)
            detail_lines(l, ob);
    }
}
