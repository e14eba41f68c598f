/* SPDX-License-Identifier: BSD-3-Clause */
/* output.c - messages, quoting, durations, JSON and the status views. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "objects.h"
#include "output.h"

int cli_verbose;

/* ---------------------------------------------------------------- messages */

static void vline(const char *tag, const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "distlock: %s", tag);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = strlen(line);
    /* One message is one line, whatever the library or Redis put in it. */
    for (size_t i = 0; i < len; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void cli_verr(const char *fmt, va_list ap)
{
    vline("", fmt, ap);
}

void cli_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline("", fmt, ap);
    va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline("warning: ", fmt, ap);
    va_end(ap);
}

void cli_note(const char *fmt, ...)
{
    if (!cli_verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    vline("", fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- text */

/* Appends s[0..n) to buf (at *o, capacity size, keeping `keep` bytes
 * free), escaping control bytes and, if quoting, '"' and '\'.  Returns 0,
 * or -1 when it had to stop. */
static int put_escaped(char *buf, size_t size, size_t *o, size_t keep, const char *s, size_t n,
                       int quoting)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char tmp[8];
        int len;
        if (c < 0x20 || c == 0x7f)
            len = snprintf(tmp, sizeof tmp, "\\x%02x", c);
        else if (quoting && (c == '"' || c == '\\'))
            len = snprintf(tmp, sizeof tmp, "\\%c", c);
        else {
            tmp[0] = (char)c;
            len = 1;
        }
        if (*o + (size_t)len + keep >= size)
            return -1;
        memcpy(buf + *o, tmp, (size_t)len);
        *o += (size_t)len;
    }
    return 0;
}

const char *cli_quote(const char *s, size_t n, char *buf, size_t size)
{
    size_t o = 0;
    if (size < 8) {
        if (size)
            buf[0] = 0;
        return buf;
    }
    buf[o++] = '"';
    if (put_escaped(buf, size, &o, 5, s, n, 1)) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '"';
    buf[o] = 0;
    return buf;
}

/* The name as it is, for the list table: only control bytes escaped. */
static const char *plain_name(const char *s, size_t n, char *buf, size_t size)
{
    size_t o = 0;
    if (put_escaped(buf, size, &o, 4, s, n, 0)) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = 0;
    return buf;
}

const char *cli_outage_text(const char *err, int with_url, char *buf, size_t size)
{
    /* The library's words (config.h dl_unreachable): up to the give-up,
     * the URL (which has no space) left out if asked. */
    static const char unreachable[] = "Redis is unreachable at ", gave_up[] = "; gave up after ";
    size_t ul = sizeof unreachable - 1;
    const char *cut = strncmp(err, unreachable, ul) == 0 ? strstr(err, gave_up) : NULL;
    const char *why = cut ? strchr(err + ul, ' ') : NULL;
    if (cut && !with_url && why && why < cut)
        snprintf(buf, size, "Redis is unreachable%.*s", (int)(cut - why), why);
    else if (cut)
        snprintf(buf, size, "%.*s", (int)(cut - err), err);
    else
        snprintf(buf, size, "Redis unreachable: %s", strncmp(err, "redis ", 6) == 0 ? err + 6 : err);
    return buf;
}

const char *cli_duration(long long ms, char *buf, size_t size)
{
    if (ms < 0)
        ms = 0;
    long long s = ms / 1000;
    if (ms < 60000)
        snprintf(buf, size, "%.1fs", (double)ms / 1000.0);
    else if (s < 3600)
        snprintf(buf, size, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, size, "%lldh%02lldm", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, size, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
    return buf;
}

const char *cli_who(const cli_who_t *w, char *buf, size_t size)
{
    char host[sizeof w->host * 4 + 8];
    size_t o = 0;
    put_escaped(host, sizeof host, &o, 1, w->host, strlen(w->host), 0);
    host[o] = 0;
    if (w->pid)
        snprintf(buf, size, "%s:%ld (thread %ld)", host, w->pid, w->tid);
    else if (!host[0] && w->token[0])
        snprintf(buf, size, "process %.8s", w->token);   /* a condition's waiter: its token */
    else
        snprintf(buf, size, "%s", host[0] ? host : "unknown");
    return buf;
}

static const char *mode_word(char mode)
{
    return mode == 'w' ? "exclusive" : mode == 'r' ? "shared" : "free";
}

/* ---------------------------------------------------------------- JSON */

/* A JSON string.  Valid UTF-8 passes through; a byte that is not part of
 * a valid sequence becomes \u00XX (read as Latin-1), so the output is
 * always valid JSON whatever bytes the name holds. */
static void json_str(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
            i++;
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            if (c == '\n')
                fputs("\\n", f);
            else if (c == '\t')
                fputs("\\t", f);
            else
                fprintf(f, "\\u%04x", c);
            i++;
            continue;
        }
        if (c < 0x80) {
            fputc(c, f);
            i++;
            continue;
        }
        size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                   : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        int ok = len && i + len <= n;
        for (size_t k = 1; ok && k < len; k++)
            ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
        if (ok) {
            fwrite(s + i, 1, len, f);
            i += len;
        } else {
            fprintf(f, "\\u%04x", c);
            i++;
        }
    }
    fputc('"', f);
}

static void json_who(FILE *f, const cli_who_t *w)
{
    fputs("\"host\":", f);
    json_str(f, w->host, strlen(w->host));
    fprintf(f, ",\"pid\":%ld,\"thread\":%ld,\"mode\":\"%s\"", w->pid, w->tid, mode_word(w->mode));
}

/* redlock://: "redlock":{"need":2,"agree":3,"servers":[{"server":"h:p",
 * "answered":true,"mode":"exclusive","holders":[{who}...],"agrees":true,
 * "error":null}...]} */
static void json_servers(FILE *f, const cli_lockstat_t *st)
{
    fprintf(f, ",\"redlock\":{\"need\":%zu,\"agree\":%zu,\"servers\":[", st->need, st->agree);
    for (size_t i = 0; i < st->nservers; i++) {
        const cli_server_t *sv = &st->servers[i];
        fputs(i ? ",{\"server\":" : "{\"server\":", f);
        json_str(f, sv->name, strlen(sv->name));
        fprintf(f, ",\"answered\":%s,\"mode\":", sv->answered ? "true" : "false");
        if (sv->answered)
            fprintf(f, "\"%s\"", mode_word(sv->mode));
        else
            fputs("null", f);
        fputs(",\"holders\":[", f);
        for (size_t k = 0; k < sv->nholders; k++) {
            fputs(k ? ",{" : "{", f);
            json_who(f, &sv->holders[k]);
            fputc('}', f);
        }
        fprintf(f, "],\"agrees\":%s,\"error\":", sv->agrees ? "true" : "false");
        if (sv->answered)
            fputs("null", f);
        else
            json_str(f, sv->err, strlen(sv->err));
        fputc('}', f);
    }
    fputs("]}", f);
}

static void print_lock_json(FILE *f, const cli_lockstat_t *st)
{
    fputs("{\"name\":", f);
    json_str(f, st->name, st->namelen);
    fprintf(f, ",\"kind\":\"lock\",\"held\":%s,\"mode\":\"%s\",\"holders\":[", st->nholders ? "true" : "false",
            mode_word(st->mode));
    for (size_t i = 0; i < st->nholders; i++) {
        const cli_holder_t *h = &st->holders[i];
        fputs(i ? ",{" : "{", f);
        json_who(f, &h->who);
        fprintf(f, ",\"held_ms\":%lld,\"lease_left_ms\":%lld,", h->held_ms, h->lease_left_ms);
        if (h->lease_ms >= 0)
            fprintf(f, "\"lease_ms\":%lld,", h->lease_ms);
        else
            fputs("\"lease_ms\":null,", f);
        fprintf(f, "\"fence\":%llu,\"after_lapse\":%s}", h->fence, h->after_lapse ? "true" : "false");
    }
    fprintf(f, "],\"waiting\":%zu,\"waiters\":[", st->nwaiters);
    for (size_t i = 0; i < st->nwaiters; i++) {
        fputs(i ? ",{" : "{", f);
        json_who(f, &st->waiters[i]);
        fputc('}', f);
    }
    fputs("],\"last_fence\":", f);
    if (st->last_fence)
        fprintf(f, "%llu", st->last_fence);
    else
        fputs("null", f);
    fprintf(f, ",\"next_gets_ownerdead\":%s,\"broken\":%s",
            st->next_ownerdead ? "true" : "false", st->broken ? "true" : "false");
    if (st->nservers)
        json_servers(f, st);
    fputc('}', f);
}

/* A semaphore: {"name":..,"kind":"sem","type":"leased","value":3,
 * "permits":5,"held":2,"holders":[{host,pid,thread,permits,held_ms,
 * lease_left_ms,fence}],"waiting":1,"waiters":[{host,pid,thread,
 * waited_ms}],"incarnation":N,"incarnation_age_ms":MS}; a counting one
 * has "permits" and "held" null; an incarnation not known yet, null. */
static void print_sem_json(FILE *f, const cli_obj_t *o)
{
    const cli_lockstat_t *st = &o->st;
    fputs("{\"name\":", f);
    json_str(f, st->name, st->namelen);
    fputs(",\"kind\":\"sem\",\"type\":", f);
    if (o->semkind == 'l')
        fprintf(f, "\"leased\",\"value\":%lld,\"permits\":%lld,\"held\":%lld", o->value - o->held,
                o->value, o->held);
    else if (o->semkind == 'c')
        fprintf(f, "\"counting\",\"value\":%lld,\"permits\":null,\"held\":null", o->value);
    else
        fputs("null,\"value\":null,\"permits\":null,\"held\":null", f);
    fputs(",\"holders\":[", f);
    for (size_t i = 0; i < st->nholders; i++) {
        const cli_holder_t *h = &st->holders[i];
        fputs(i ? ",{\"host\":" : "{\"host\":", f);
        json_str(f, h->who.host, strlen(h->who.host));
        fprintf(f, ",\"pid\":%ld,\"thread\":%ld,\"permits\":%u,\"held_ms\":%lld,"
                "\"lease_left_ms\":%lld,\"fence\":%llu}", h->who.pid, h->who.tid, h->count,
                h->held_ms, h->lease_left_ms, h->fence);
    }
    fprintf(f, "],\"waiting\":%zu,\"waiters\":[", st->nwaiters);
    for (size_t i = 0; i < st->nwaiters; i++) {
        const cli_who_t *w = &st->waiters[i];
        fputs(i ? ",{\"host\":" : "{\"host\":", f);
        json_str(f, w->host, strlen(w->host));
        fprintf(f, ",\"pid\":%ld,\"thread\":%ld,\"waited_ms\":", w->pid, w->tid);
        if (w->waited_ms >= 0)
            fprintf(f, "%lld}", w->waited_ms);
        else
            fputs("null}", f);
    }
    /* Its incarnation (lua/sem_common.lua): a new one after a loss in
     * Redis or a reset by break. */
    if (o->incarn)
        fprintf(f, "],\"incarnation\":%llu,\"incarnation_age_ms\":", o->incarn);
    else
        fputs("],\"incarnation\":null,\"incarnation_age_ms\":", f);
    if (o->incarn && o->incarn_age_ms >= 0)
        fprintf(f, "%lld}", o->incarn_age_ms);
    else
        fputs("null}", f);
}

/* A condition: {"name":..,"kind":"cond","waiting":2,"waiters":[{"token":
 * "..","waited_ms":1200}]}: its waiters are known by their process's
 * token alone. */
static void print_cond_json(FILE *f, const cli_obj_t *o)
{
    const cli_lockstat_t *st = &o->st;
    fputs("{\"name\":", f);
    json_str(f, st->name, st->namelen);
    fprintf(f, ",\"kind\":\"cond\",\"waiting\":%zu,\"waiters\":[", st->nwaiters);
    for (size_t i = 0; i < st->nwaiters; i++) {
        const cli_who_t *w = &st->waiters[i];
        fputs(i ? ",{\"token\":" : "{\"token\":", f);
        json_str(f, w->token, strlen(w->token));
        fputs(",\"waited_ms\":", f);
        if (w->waited_ms >= 0)
            fprintf(f, "%lld}", w->waited_ms);
        else
            fputs("null}", f);
    }
    /* Its incarnation (lua/sem_common.lua): a new one after a loss in
     * Redis or a reset by break. */
    if (o->incarn)
        fprintf(f, "],\"incarnation\":%llu,\"incarnation_age_ms\":", o->incarn);
    else
        fputs("],\"incarnation\":null,\"incarnation_age_ms\":", f);
    if (o->incarn && o->incarn_age_ms >= 0)
        fprintf(f, "%lld}", o->incarn_age_ms);
    else
        fputs("null}", f);
}

void cli_print_status_json(FILE *f, const cli_obj_t *o)
{
    if (o->kind == DL_KIND_SEM)
        print_sem_json(f, o);
    else if (o->kind == DL_KIND_COND)
        print_cond_json(f, o);
    else
        print_lock_json(f, &o->st);
}

void cli_print_list_json(FILE *f, const cli_obj_t *v, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        cli_print_status_json(f, &v[i]);
    }
    fputs("]\n", f);
}

/* ---------------------------------------------------------------- views */

/* redlock://: how many servers agree, and when not all do, one line per
 * server:
 *   servers:  2 of 3 agree (2 needed)
 *   server:   127.0.0.1:7001: held exclusive by web1:4242 (thread 4242)
 *   server:   127.0.0.1:7003: unreachable: Connection refused           */
static void print_servers(FILE *f, const cli_lockstat_t *st)
{
    char who[600];
    fprintf(f, "%-10s %zu of %zu agree (%zu needed)\n", "servers:", st->agree, st->nservers, st->need);
    if (st->agree == st->nservers)
        return;
    for (size_t i = 0; i < st->nservers; i++) {
        const cli_server_t *sv = &st->servers[i];
        fprintf(f, "%-10s %s: ", "server:", sv->name);
        if (!sv->answered)
            fprintf(f, "unreachable: %s\n", sv->err);
        else if (!sv->nholders)
            fprintf(f, "free\n");
        else if (sv->nholders == 1)
            fprintf(f, "held %s by %s\n", mode_word(sv->holders[0].mode),
                    cli_who(&sv->holders[0], who, sizeof who));
        else
            fprintf(f, "held %s by %s and %zu more\n", mode_word(sv->mode),
                    cli_who(&sv->holders[0], who, sizeof who), sv->nholders - 1);
    }
}

/* The labels' column is 10 wide: "semaphore:" and "condition:". */
static void print_lock(FILE *f, const cli_lockstat_t *st)
{
    char q[1200], who[600], held[32], left[32], lease[32];
    fprintf(f, "%-10s %s\n", "lock:", cli_quote(st->name, st->namelen, q, sizeof q));
    if (st->mode == 'r' && st->nholders > 1)
        fprintf(f, "%-10s held shared by %zu\n", "state:", st->nholders);
    else
        fprintf(f, "%-10s %s%s\n", "state:", st->nholders ? "held " : "", mode_word(st->mode));
    for (size_t i = 0; i < st->nholders; i++) {
        const cli_holder_t *h = &st->holders[i];
        cli_duration(h->held_ms, held, sizeof held);
        cli_duration(h->lease_left_ms, left, sizeof left);
        if (h->lease_ms >= 0)
            snprintf(lease, sizeof lease, " of %.1fs", (double)h->lease_ms / 1000.0);
        else
            lease[0] = 0;
        fprintf(f, "%-10s %s, held for %s, lease left %s%s, fence %llu%s\n", "holder:",
                cli_who(&h->who, who, sizeof who), held, left, lease, h->fence,
                h->after_lapse ? ", taken after the previous holder's lease ran out" : "");
    }
    fprintf(f, "%-10s %zu\n", "waiting:", st->nwaiters);
    for (size_t i = 0; i < st->nwaiters; i++)
        fprintf(f, "%-10s %s, %s\n", "waiter:", cli_who(&st->waiters[i], who, sizeof who),
                mode_word(st->waiters[i].mode));
    if (!st->nholders && st->last_fence)
        fprintf(f, "%-10s %llu (the last one given)\n", "fence:", st->last_fence);
    if (st->next_ownerdead) {
        if (st->broken)
            fprintf(f, "%-10s broken by distlock break; the next holder gets EOWNERDEAD\n", "note:");
        else
            fprintf(f, "%-10s the lease of %s ran out before it unlocked; the next holder gets "
                    "EOWNERDEAD\n", "note:", cli_who(&st->lapsed, who, sizeof who));
    }
    if (st->nservers)
        print_servers(f, st);
}

/* A semaphore:
 *   semaphore: "enc"
 *   state:     leased, 2 of 5 permits held, value 3
 *   made:      2.1h ago (incarnation 3735928559)
 *   holder:    web1:4242 (thread 4242), 1 permit, held for 3.2s, lease left 27.1s, fence 7
 *   waiting:   1
 *   waiter:    web1:4250 (thread 4250), waiting 1.2s                               */
static void print_sem(FILE *f, const cli_obj_t *o)
{
    char q[1200], who[600], held[32], left[32];
    const cli_lockstat_t *st = &o->st;
    fprintf(f, "%-10s %s\n", "semaphore:", cli_quote(st->name, st->namelen, q, sizeof q));
    if (o->semkind == 'l')
        fprintf(f, "%-10s leased, %lld of %lld permit%s held, value %lld\n", "state:", o->held,
                o->value, o->value == 1 ? "" : "s", o->value - o->held);
    else if (o->semkind == 'c')
        fprintf(f, "%-10s counting, value %lld\n", "state:", o->value);
    else
        fprintf(f, "%-10s %s\n", "state:", o->state[0] ? o->state : "gone");
    /* Its incarnation: a count younger than its users says Redis lost the
     * one before, or break reset it. */
    if (o->incarn)
        fprintf(f, "%-10s %s ago (incarnation %llu)\n", "made:",
                o->incarn_age_ms >= 0 ? cli_duration(o->incarn_age_ms, held, sizeof held)
                                      : "(unknown)", o->incarn);
    for (size_t i = 0; i < st->nholders; i++) {
        const cli_holder_t *h = &st->holders[i];
        fprintf(f, "%-10s %s, %u permit%s, held for %s, lease left %s, fence %llu\n", "holder:",
                cli_who(&h->who, who, sizeof who), h->count, h->count == 1 ? "" : "s",
                cli_duration(h->held_ms, held, sizeof held),
                cli_duration(h->lease_left_ms, left, sizeof left), h->fence);
    }
    fprintf(f, "%-10s %zu\n", "waiting:", st->nwaiters);
    for (size_t i = 0; i < st->nwaiters; i++) {
        const cli_who_t *w = &st->waiters[i];
        fprintf(f, "%-10s %s, waiting %s\n", "waiter:", cli_who(w, who, sizeof who),
                w->waited_ms >= 0 ? cli_duration(w->waited_ms, held, sizeof held) : "(unknown)");
    }
}

/* A condition:
 *   condition: "jobs"
 *   waiting:   2
 *   waiter:    process 3f9c2a1b, waiting 1.2s                                   */
static void print_cond(FILE *f, const cli_obj_t *o)
{
    char q[1200], who[600], waited[32];
    const cli_lockstat_t *st = &o->st;
    fprintf(f, "%-10s %s\n", "condition:", cli_quote(st->name, st->namelen, q, sizeof q));
    fprintf(f, "%-10s %zu\n", "waiting:", st->nwaiters);
    for (size_t i = 0; i < st->nwaiters; i++) {
        const cli_who_t *w = &st->waiters[i];
        fprintf(f, "%-10s %s, waiting %s\n", "waiter:", cli_who(w, who, sizeof who),
                w->waited_ms >= 0 ? cli_duration(w->waited_ms, waited, sizeof waited) : "(unknown)");
    }
}

void cli_print_status(FILE *f, const cli_obj_t *o)
{
    if (o->kind == DL_KIND_SEM)
        print_sem(f, o);
    else if (o->kind == DL_KIND_COND)
        print_cond(f, o);
    else
        print_lock(f, &o->st);
}

/* The longest-held holder, who the list and the waiting line show. */
static const cli_holder_t *first_holder(const cli_lockstat_t *st)
{
    const cli_holder_t *best = NULL;
    for (size_t i = 0; i < st->nholders; i++)
        if (!best || st->holders[i].held_ms > best->held_ms)
            best = &st->holders[i];
    return best;
}

void cli_print_list(FILE *f, const cli_obj_t *v, size_t n, const char *none)
{
    char name[1200], held[32], who[600];
    int wname = 4, wstate = 12;
    for (size_t i = 0; i < n; i++) {
        int len = (int)strlen(plain_name(v[i].st.name, v[i].st.namelen, name, sizeof name));
        if (len > wname)
            wname = len;
        len = (int)strlen(v[i].state);
        if (len > wstate)
            wstate = len;
    }
    if (wname > 60)
        wname = 60;
    fprintf(f, "%-*s  %-4s  %-*s  %-8s  %-7s  %s\n", wname, "NAME", "KIND", wstate, "STATE",
            "HELD FOR", "WAITING", "HOLDER");
    if (!n)
        fprintf(f, "%s\n", none);
    for (size_t i = 0; i < n; i++) {
        const cli_lockstat_t *st = &v[i].st;
        const cli_holder_t *h = first_holder(st);
        if (h) {
            cli_who(&h->who, who, sizeof who);
            if (st->nholders > 1) {
                size_t len = strlen(who);
                snprintf(who + len, sizeof who - len, " +%zu more", st->nholders - 1);
            }
        }
        fprintf(f, "%-*s  %-4s  %-*s  %-8s  %-7zu  %s\n", wname,
                plain_name(st->name, st->namelen, name, sizeof name), cli_kind_view(v[i].kind)->label,
                wstate, v[i].state, h ? cli_duration(h->held_ms, held, sizeof held) : "-",
                st->nwaiters, h ? who : "-");
    }
}

void cli_waitline_text(char *buf, size_t size, const char *name, size_t namelen,
                       const cli_lockstat_t *st)
{
    char q[200], who[600], held[32];
    int n = snprintf(buf, size, "waiting for %s", cli_quote(name, namelen, q, sizeof q));
    if (!st || n < 0 || (size_t)n >= size)
        return;
    const cli_holder_t *h = first_holder(st);
    if (h && st->nholders > 1)
        snprintf(buf + n, size - (size_t)n, ": held by %s and %zu more for %s, %zu waiting",
                 cli_who(&h->who, who, sizeof who), st->nholders - 1,
                 cli_duration(h->held_ms, held, sizeof held), st->nwaiters);
    else if (h)
        snprintf(buf + n, size - (size_t)n, ": held by %s for %s, %zu waiting",
                 cli_who(&h->who, who, sizeof who), cli_duration(h->held_ms, held, sizeof held),
                 st->nwaiters);
    else
        snprintf(buf + n, size - (size_t)n, ": being handed on, %zu waiting", st->nwaiters);
}
