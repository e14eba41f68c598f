/* SPDX-License-Identifier: BSD-3-Clause */
/* migrate.c - a lock's keys moved to the node importing their slot (see
 * migrate.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "dl.h"
#include "keys.h"
#include "migrate.h"

/* In CLUSTER NODES text s, the line starting with word `id` (idl bytes),
 * or with our own ("myself" in its flags) when id is NULL: its start and
 * length, or NULL. */
static const char *nodes_line(const char *s, const char *id, size_t idl, size_t *len)
{
    for (const char *line = s; *line;) {
        size_t n = strcspn(line, "\n");
        /* the third field: the flags, "myself,master" */
        const char *flags = memchr(line, ' ', n);
        if (flags)
            flags = memchr(flags + 1, ' ', n - (size_t)(flags + 1 - line));
        size_t fl = flags ? strcspn(flags + 1, " \n") : 0;
        int myself = 0;
        for (size_t i = 0; i + 6 <= fl && !myself; i++)
            myself = memcmp(flags + 1 + i, "myself", 6) == 0;
        if (id ? n > idl && memcmp(line, id, idl) == 0 && line[idl] == ' ' : myself) {
            *len = n;
            return line;
        }
        line += n;
        if (*line)
            line++;
    }
    return NULL;
}

/* The address of the node that node `from` is migrating `slot` to, from
 * its CLUSTER NODES: its own line lists "[SLOT->-ID]", and ID's line
 * starts "ID HOST:PORT@CPORT".  0, or EIO with a reason in err. */
static int importing_node(dl_link_t *k, unsigned slot, char *host, size_t hostsize, int *port,
                          char *err, size_t errlen)
{
    static const char *argv[] = { "CLUSTER", "NODES" };
    static const size_t argvlen[] = { 7, 5 };
    redisReply *r = dl_link_ask(k, 2, argv, argvlen, err, errlen);
    if (!r)
        return EIO;
    int rc = EIO;
    snprintf(err, errlen, "redis cluster: CLUSTER NODES names no node importing slot %u", slot);
    size_t len;
    const char *mine = r->type == REDIS_REPLY_STRING ? nodes_line(r->str, NULL, 0, &len) : NULL;
    char want[32];
    size_t wl = (size_t)snprintf(want, sizeof want, "[%u->-", slot);
    for (const char *at = mine; at && at + wl < mine + len; at++) {
        if (memcmp(at, want, wl) != 0)
            continue;
        const char *id = at + wl;
        size_t idl = strcspn(id, "]\n");
        const char *line = nodes_line(r->str, id, idl, &len);
        if (!line)
            break;
        const char *addr = line + idl + 1;
        size_t al = strcspn(addr, "@ \n");
        const char *colon = NULL;
        for (size_t i = 0; i < al; i++)
            if (addr[i] == ':')
                colon = addr + i;
        if (!colon || colon == addr || (size_t)(colon - addr) >= hostsize)
            break;
        memcpy(host, addr, (size_t)(colon - addr));
        host[colon - addr] = 0;
        *port = atoi(colon + 1);
        rc = *port > 0 && *port <= 65535 ? 0 : EIO;
        break;
    }
    if (r->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "redis cluster: CLUSTER NODES: %s", r->str);
    freeReplyObject(r);
    return rc;
}

int dl_migrate_lock(dl_link_t *k, const dl_config_t *cfg, const dl_cmd_t *c, int nkeys,
                    char *err, size_t errlen)
{
    unsigned slot = dl_cluster_slot(c->argv[3], c->argvlen[3]);
    char host[256], portbuf[16], tobuf[24];
    int port;
    if (importing_node(k, slot, host, sizeof host, &port, err, errlen))
        return EIO;
    const char *argv[16 + DL_KEYS_N];
    size_t len[16 + DL_KEYS_N];
    int a = 0;
#define ARG(s, n) (argv[a] = (s), len[a++] = (n))
    ARG("MIGRATE", 7);
    ARG(host, strlen(host));
    ARG(portbuf, (size_t)snprintf(portbuf, sizeof portbuf, "%d", port));
    ARG("", 0);
    ARG("0", 1);
    ARG(tobuf, (size_t)snprintf(tobuf, sizeof tobuf, "%lu", cfg->io_timeout_ms));
    if (cfg->password[0] && cfg->user[0]) {
        ARG("AUTH2", 5);
        ARG(cfg->user, strlen(cfg->user));
        ARG(cfg->password, strlen(cfg->password));
    } else if (cfg->password[0]) {
        ARG("AUTH", 4);
        ARG(cfg->password, strlen(cfg->password));
    }
    ARG("KEYS", 4);
    for (int i = 0; i < nkeys && i < DL_KEYS_N; i++)
        ARG(c->argv[3 + i], c->argvlen[3 + i]);
#undef ARG
    redisReply *r = dl_link_ask(k, a, argv, len, err, errlen);
    if (!r)
        return EIO;
    int rc = r->type == REDIS_REPLY_STATUS && (strcmp(r->str, "OK") == 0 || strcmp(r->str, "NOKEY") == 0)
                 ? 0 : EIO;
    char q[96];
    if (rc)
        snprintf(err, errlen, "redis cluster: slot %u migrating to %s:%d; moving the keys of lock "
                 "key %s there: %s", slot, host, port, dl_quote(c->argv[3], c->argvlen[3], q, sizeof q),
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    else
        dl_log(DL_LOG_DEBUG, "redis cluster: slot %u migrating to %s:%d: moved the keys of lock "
               "key %s there (%s)", slot, host, port, dl_quote(c->argv[3], c->argvlen[3], q, sizeof q),
               r->str);
    freeReplyObject(r);
    return rc;
}
