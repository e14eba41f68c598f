/* SPDX-License-Identifier: BSD-3-Clause */
/* view.c - what every status script's entry uses to decode its reply into
 * a view (view.h). */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "view.h"

long long dl_view_ll(const redisReply *r, size_t i)
{
    return strtoll(dl_reply_str(r, i, NULL), NULL, 10);
}

long long dl_view_waited_ms(const redisReply *r, size_t i, long long now)
{
    size_t sl = 0;
    if (r->elements > i)
        dl_reply_str(r, i, &sl);
    if (!sl)
        return -1;
    long long w = now - dl_view_ll(r, i);
    return w < 0 ? 0 : w;
}

/* "host\tpid\ttid" -> who.  The host never holds a tab (the library
 * replaces them), so the last two tabs split it. */
void dl_view_who_parse(const char *s, size_t n, char mode, const char *token, size_t toklen,
                       dl_view_who_t *w)
{
    memset(w, 0, sizeof *w);
    w->waited_ms = -1;
    w->mode = mode;
    if (toklen >= sizeof w->token)
        toklen = sizeof w->token - 1;
    memcpy(w->token, token, toklen);
    const char *t2 = NULL, *t1 = NULL;
    for (size_t i = n; i-- > 0;)
        if (s[i] == '\t') {
            if (!t2)
                t2 = s + i;
            else {
                t1 = s + i;
                break;
            }
        }
    size_t hlen = t1 ? (size_t)(t1 - s) : n;
    if (hlen >= sizeof w->host)
        hlen = sizeof w->host - 1;
    memcpy(w->host, s, hlen);
    w->host[hlen] = 0;
    if (t1) {
        w->pid = strtol(t1 + 1, NULL, 10);
        w->tid = strtol(t2 + 1, NULL, 10);
    }
}

int dl_view_set_name(dl_view_t *v, const char *name, size_t len)
{
    if (!(v->name = malloc(len + 1)))
        return -1;
    if (len)
        memcpy(v->name, name, len);
    v->name[len] = 0;
    v->namelen = len;
    return 0;
}

void dl_view_clear(dl_view_t *v)
{
    free(v->name);
    free(v->holders);
    free(v->waiters);
    for (size_t i = 0; i < v->nservers; i++)
        free(v->servers[i].holders);
    free(v->servers);
    memset(v, 0, sizeof *v);
}

void dl_view_wire(dl_wire_t *w, int nkeys)
{
    int at[DL_KEYS_MAX];
    for (int i = 0; i < nkeys && i < DL_KEYS_MAX; i++)
        at[i] = i;
    dl_wire_keys(w, at, nkeys < DL_KEYS_MAX ? nkeys : DL_KEYS_MAX);
}
