/* SPDX-License-Identifier: BSD-3-Clause */
/* cluster.c - redis-cluster://: slot routing and redirections (see
 * cluster.h).
 *
 * A lock's script names its six keys, some of them usually absent.  While
 * its slot migrates, Redis 7.0 (getNodeByQuery) runs a command on the
 * source node only if every key it declares is there, redirects it (ASK)
 * only if none is, and replies TRYAGAIN otherwise; on the importing node
 * (after ASKING) it runs a command naming several keys only if all of
 * them are there.  Inside a script, each command is checked the same way
 * (scriptVerifyClusterState): on the source, one that touches a key it
 * lacks (never created, deleted a moment ago by the script itself, or
 * moved) fails the script half-way, its earlier writes kept.  So, while a
 * slot migrates:
 *  - a lock's script is never run on the source: beside its six keys it
 *    declares a seventh that never exists (keys.h, DL_KEY_GUARD), so the
 *    source always has one missing: TRYAGAIN or ASK, never a run;
 *  - on TRYAGAIN (the source still has some of the lock's keys) the client
 *    moves all of them to the importing node in one MIGRATE ... KEYS (the
 *    source runs it alone, and deletes its copies once the target has
 *    them), then asks again;
 *  - on ASK (the source has none of the lock's keys: they are all on the
 *    importing node, or do not exist) it sends ASKING and the script with
 *    only the lock's first key declared (the script derives the others,
 *    lua/common.lua): one declared key runs there whatever exists, and so
 *    does each command of the script, naming one key each.
 * Once the source had none of a lock's keys, no script of the lock runs
 * there again (the guard), so no key of it comes back: a script on the
 * importing node always sees every key of the lock, never a part. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster.h"
#include "trust.h"
#include "cmdlink.h"
#include "dl.h"
#include "keys.h"

#define DL_SLOTS 16384
#define DL_MAX_NODES 128

typedef struct dl_cluster {
    const dl_config_t *cfg;
    pthread_mutex_t mu;               /* nodes[] growth and slots[] */
    dl_link_t *nodes[DL_MAX_NODES];   /* never freed before exit: links stay valid */
    int nnodes;
    short slots[DL_SLOTS];            /* node index, -1 unknown */
    short asked[DL_SLOTS];            /* the node an ASK last sent a lock's script
                                         to, while its slot migrates; -1 none */
} dl_cluster_t;

/* CRC16-CCITT (XMODEM), as Redis Cluster uses it. */
static unsigned crc16(const char *buf, size_t len)
{
    unsigned crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)buf[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc;
}

unsigned dl_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open + 1 - key);
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return crc16(open + 1, (size_t)(close - open - 1)) & (DL_SLOTS - 1);
    }
    return crc16(key, len) & (DL_SLOTS - 1);
}

/* The index of host:port's link, created if new; -1 if the table is full.
 * cl->mu held. */
static int node_index(dl_cluster_t *cl, const char *host, int port)
{
    for (int i = 0; i < cl->nnodes; i++) {
        const dl_endpoint_t *ep = dl_link_ep(cl->nodes[i]);
        if (ep->port == port && strcmp(ep->host, host) == 0)
            return i;
    }
    if (cl->nnodes == DL_MAX_NODES || strlen(host) >= sizeof ((dl_endpoint_t *)0)->host)
        return -1;
    /* Fail fast: this layer retries, after asking for a new slot map. */
    dl_link_conf_t conf = {
        .cfg = cl->cfg,
        .dial = dl_connect_ep,
        .fail_fast = 1,
        .timeout_ms = cl->cfg->io_timeout_ms,
    };
    snprintf(conf.ep.host, sizeof conf.ep.host, "%s", host);
    conf.ep.port = port;
    dl_ep_name(&conf.ep, 0, conf.name, sizeof conf.name);
    dl_link_t *k = dl_link_new(&conf);
    if (!k)
        return -1;
    cl->nodes[cl->nnodes] = k;
    return cl->nnodes++;
}

static void *cluster_open(const dl_config_t *cfg)
{
    dl_cluster_t *cl = calloc(1, sizeof *cl);
    if (!cl)
        return NULL;
    cl->cfg = cfg;
    pthread_mutex_init(&cl->mu, NULL);
    for (int s = 0; s < DL_SLOTS; s++)
        cl->slots[s] = cl->asked[s] = -1;
    for (int i = 0; i < cfg->nep; i++)
        node_index(cl, cfg->ep[i].host, cfg->ep[i].port);
    return cl;
}

static void cluster_abandon(void *b)
{
    dl_cluster_t *cl = b;
    for (int i = 0; i < cl->nnodes; i++)
        dl_link_abandon(cl->nodes[i]);
}

static void cluster_free(void *b)
{
    dl_cluster_t *cl = b;
    for (int i = 0; i < cl->nnodes; i++)
        dl_link_free(cl->nodes[i]);
    pthread_mutex_destroy(&cl->mu);
    free(cl);
}

/* Applies a CLUSTER SLOTS reply from node `from`. */
static int apply_slots(dl_cluster_t *cl, const redisReply *r, int from)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return EIO;
    pthread_mutex_lock(&cl->mu);
    const dl_endpoint_t *fep = dl_link_ep(cl->nodes[from]);
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER ||
            e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
            continue;
        const redisReply *m = e->element[2];
        if (m->element[0]->type != REDIS_REPLY_STRING || m->element[1]->type != REDIS_REPLY_INTEGER)
            continue;
        /* An empty address means "the node you asked". */
        const char *host = m->element[0]->len ? m->element[0]->str : fep->host;
        int idx = node_index(cl, host, (int)m->element[1]->integer);
        if (idx < 0)
            continue;
        long long lo = e->element[0]->integer, hi = e->element[1]->integer;
        for (long long s = lo < 0 ? 0 : lo; s <= hi && s < DL_SLOTS; s++) {
            if (cl->slots[s] != (short)idx)
                cl->asked[s] = -1;
            cl->slots[s] = (short)idx;
        }
    }
    pthread_mutex_unlock(&cl->mu);
    return 0;
}

/* Loads the slot map from the first node that answers. */
static int refresh(dl_cluster_t *cl, char *err, size_t errlen)
{
    pthread_mutex_lock(&cl->mu);
    int n = cl->nnodes;
    pthread_mutex_unlock(&cl->mu);
    for (int i = 0; i < n; i++) {
        static const char *argv[] = { "CLUSTER", "SLOTS" };
        static const size_t argvlen[] = { 7, 5 };
        dl_cmd_t cmd;
        memset(&cmd, 0, sizeof cmd);
        cmd.argc = 2;
        cmd.argv = argv;
        cmd.argvlen = argvlen;
        pthread_mutex_lock(&cl->mu);
        dl_link_t *k = cl->nodes[i];
        pthread_mutex_unlock(&cl->mu);
        if (dl_link_exec(k, &cmd, 1)) {
            snprintf(err, errlen, "%s", cmd.errmsg);
            continue;
        }
        int rc = cmd.reply->type == REDIS_REPLY_ERROR ? EIO : apply_slots(cl, cmd.reply, i);
        if (rc)
            snprintf(err, errlen, "redis cluster: CLUSTER SLOTS: %s",
                     cmd.reply->type == REDIS_REPLY_ERROR ? cmd.reply->str : "unexpected reply");
        freeReplyObject(cmd.reply);
        if (!rc)
            return 0;
    }
    return EIO;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": the target's node index. */
static int redirect_target(dl_cluster_t *cl, const char *msg, int *slot)
{
    const char *sp = strchr(msg, ' ');
    if (!sp)
        return -1;
    char *end;
    long s = strtol(sp + 1, &end, 10);
    if (*end != ' ' || s < 0 || s >= DL_SLOTS)
        return -1;
    const char *addr = end + 1, *colon = strrchr(addr, ':');
    if (!colon || colon == addr || (size_t)(colon - addr) >= 256)
        return -1;
    char host[256];
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    int port = atoi(colon + 1);
    if (port <= 0 || port > 65535)
        return -1;
    *slot = (int)s;
    pthread_mutex_lock(&cl->mu);
    int idx = node_index(cl, host, port);
    pthread_mutex_unlock(&cl->mu);
    return idx;
}

/* --- the forms of a lock's script call (see the top of this file) --- */

typedef struct form {
    int lock;                 /* an EVAL/EVALSHA naming keys; else sent as is */
    int nkeys;                /* the keys it declares, at argv[3..] */
    dl_cmd_t guarded;         /* argc, argv, argvlen: the keys and the guard */
    dl_cmd_t asked;           /* only the first key, for the importing node */
    int uargc;                /* its undo (dl_cmd_t), guarded too */
    const char **uargv;
    const size_t *ulen;
    void *mem;                /* all of the above points into it */
} form_t;

static int is_eval(const char *s, size_t n)
{
    return (n == 4 && strncasecmp(s, "EVAL", 4) == 0) || (n == 7 && strncasecmp(s, "EVALSHA", 7) == 0);
}

/* The keys an EVAL/EVALSHA declares, or 0 (not one, or none). */
static int eval_keys(int argc, const char *const *argv, const size_t *argvlen)
{
    if (argc < 4 || !is_eval(argv[0], argvlen[0]) || argvlen[2] == 0 || argvlen[2] > 3)
        return 0;
    char num[4];
    memcpy(num, argv[2], argvlen[2]);
    num[argvlen[2]] = 0;
    int k = atoi(num);
    return k >= 1 && 3 + k <= argc ? k : 0;
}

/* Writes into argv/len the call with keys k (its numkeys into num): all
 * its keys and the guard (guard: the guard key), or its first key only. */
static int reshape(int argc, const char *const *argv, const size_t *argvlen, int k,
                   const char *guard, size_t guardlen, char *num, const char **out, size_t *outlen)
{
    int a = 0;
    out[a] = argv[0], outlen[a++] = argvlen[0];
    out[a] = argv[1], outlen[a++] = argvlen[1];
    out[a] = num, outlen[a++] = (size_t)snprintf(num, 8, "%d", guard ? k + 1 : 1);
    for (int i = 3; i < 3 + (guard ? k : 1); i++)
        out[a] = argv[i], outlen[a++] = argvlen[i];
    if (guard)
        out[a] = guard, outlen[a++] = guardlen;
    for (int i = 3 + k; i < argc; i++)
        out[a] = argv[i], outlen[a++] = argvlen[i];
    return a;
}

/* The forms of c; 0, or ENOMEM (f->lock 0: c goes as it is). */
static int form_make(form_t *f, const dl_cmd_t *c)
{
    memset(f, 0, sizeof *f);
    int k = eval_keys(c->argc, c->argv, c->argvlen);
    if (!k)
        return 0;
    int uk = c->undo_argc ? eval_keys(c->undo_argc, c->undo_argv, c->undo_argvlen) : 0;
    size_t gl = c->argvlen[3] + strlen(DL_KEY_GUARD);
    size_t slots = (size_t)(c->argc + 1) * 2 + (size_t)(c->undo_argc + 1);
    char *m = malloc(slots * (sizeof(char *) + sizeof(size_t)) + gl + 3 * 8);
    if (!m)
        return ENOMEM;
    f->mem = m;
    const char **av = (const char **)m;
    size_t *al = (size_t *)(av + slots);
    char *guard = (char *)(al + slots), *nums = guard + gl;
    memcpy(guard, c->argv[3], c->argvlen[3]);
    memcpy(guard + c->argvlen[3], DL_KEY_GUARD, strlen(DL_KEY_GUARD));
    f->lock = 1;
    f->nkeys = k;
    f->guarded.argv = av;
    f->guarded.argvlen = al;
    f->guarded.argc = reshape(c->argc, c->argv, c->argvlen, k, guard, gl, nums, av, al);
    av += c->argc + 1, al += c->argc + 1;
    f->asked.argv = av;
    f->asked.argvlen = al;
    f->asked.argc = reshape(c->argc, c->argv, c->argvlen, k, NULL, 0, nums + 8, av, al);
    av += c->argc + 1, al += c->argc + 1;
    if (uk) {
        /* (the undo names the same lock: the same guard) */
        f->uargv = av;
        f->ulen = al;
        f->uargc = reshape(c->undo_argc, c->undo_argv, c->undo_argvlen, uk, guard, gl, nums + 16, av, al);
    } else {
        f->uargc = c->undo_argc;
        f->uargv = c->undo_argv;
        f->ulen = c->undo_argvlen;
    }
    return 0;
}

/* The command to send for cmds[j]: a lock's script in the form its route
 * asks for; under ASK without its undo (an undo written behind it would
 * go without ASKING: the watchdog withdraws such a request instead). */
static dl_cmd_t form_cmd(const form_t *f, const dl_cmd_t *c, int asked)
{
    dl_cmd_t t = *c;
    if (!f->lock)
        return t;
    const dl_cmd_t *src = asked ? &f->asked : &f->guarded;
    t.argc = src->argc;
    t.argv = src->argv;
    t.argvlen = src->argvlen;
    t.undo_argc = asked ? 0 : f->uargc;
    t.undo_argv = asked ? NULL : f->uargv;
    t.undo_argvlen = asked ? NULL : f->ulen;
    return t;
}

static int is_wait(const dl_cmd_t *c)
{
    return c->argc >= 1 && c->argvlen[0] == 4 && strncasecmp(c->argv[0], "WAIT", 4) == 0;
}

/* --- moving a lock's keys to the node importing its slot --- */

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
    dl_cmd_t cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.argc = 2;
    cmd.argv = argv;
    cmd.argvlen = argvlen;
    if (dl_link_exec(k, &cmd, 1)) {
        snprintf(err, errlen, "%s", cmd.errmsg);
        return EIO;
    }
    int rc = EIO;
    snprintf(err, errlen, "redis cluster: CLUSTER NODES names no node importing slot %u", slot);
    const redisReply *r = cmd.reply;
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
    freeReplyObject(cmd.reply);
    return rc;
}

/* Node `from` said TRYAGAIN to a lock's script: it migrates the slot and
 * still has some of the lock's keys.  Moves them all, in one MIGRATE ...
 * KEYS (the node runs it alone and deletes its copies once the target
 * has them), to the node importing the slot, so that the next try is
 * redirected (ASK) to where the whole lock then is.  0 when moved (or
 * nothing was left to move), else EIO (err says why: the caller waits the
 * migration out instead). */
static int gather(dl_cluster_t *cl, int from, const dl_cmd_t *c, const form_t *f, char *err,
                  size_t errlen)
{
    pthread_mutex_lock(&cl->mu);
    dl_link_t *k = cl->nodes[from];
    pthread_mutex_unlock(&cl->mu);
    const dl_config_t *cfg = cl->cfg;
    unsigned slot = dl_key_slot(c->argv[3], c->argvlen[3]);
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
    for (int i = 0; i < f->nkeys && i < DL_KEYS_N; i++)
        ARG(c->argv[3 + i], c->argvlen[3 + i]);
#undef ARG
    dl_cmd_t cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.argc = a;
    cmd.argv = argv;
    cmd.argvlen = len;
    if (dl_link_exec(k, &cmd, 1)) {
        snprintf(err, errlen, "%s", cmd.errmsg);
        return EIO;
    }
    const redisReply *r = cmd.reply;
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
    freeReplyObject(cmd.reply);
    return rc;
}

static int starts(const redisReply *r, const char *word)
{
    size_t n = strlen(word);
    return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, word, n) == 0 &&
           (r->str[n] == ' ' || r->str[n] == 0);
}

/* Every command to the node of its slot, in one batch per node. */
static int cluster_exec(dl_cluster_t *cl, dl_cmd_t *cmds, int n)
{
    static const char *asking_argv[] = { "ASKING" };
    static const size_t asking_len[] = { 6 };
    int *node = malloc((size_t)n * sizeof *node), *ask = malloc((size_t)n * sizeof *ask);
    int *sentto = malloc((size_t)n * sizeof *sentto);
    char *pending = malloc((size_t)n);
    dl_cmd_t *tmp = malloc((size_t)n * 2 * sizeof *tmp);
    int *idx = malloc((size_t)n * 2 * sizeof *idx);
    form_t *forms = calloc((size_t)n, sizeof *forms);
    int nomem = !node || !ask || !sentto || !pending || !tmp || !idx || !forms;
    for (int i = 0; i < n && !nomem; i++)
        nomem = form_make(&forms[i], &cmds[i]) != 0;
    if (nomem) {
        for (int i = 0; forms && i < n; i++)
            free(forms[i].mem);
        free(node), free(ask), free(sentto), free(pending), free(tmp), free(idx), free(forms);
        for (int i = 0; i < n; i++) {
            cmds[i].err = EIO;
            snprintf(cmds[i].errmsg, sizeof cmds[i].errmsg, "out of memory");
        }
        return EIO;
    }
    char err[200] = "redis cluster: no node answered";
    int mapped;
    pthread_mutex_lock(&cl->mu);
    mapped = cl->slots[0] >= 0 || cl->slots[DL_SLOTS - 1] >= 0;
    pthread_mutex_unlock(&cl->mu);
    if (!mapped)
        refresh(cl, err, sizeof err);
    for (int i = 0; i < n; i++) {
        pending[i] = 1;
        ask[i] = -1;
        cmds[i].reply = NULL;
        cmds[i].err = 0;
    }
    uint64_t give_up = dl_now_ms() + cl->cfg->io_timeout_ms;
    unsigned backoff = 10, rounds = 0;
    int rc = 0;
    for (;;) {
        /* Route what is pending. */
        pthread_mutex_lock(&cl->mu);
        for (int i = 0; i < n; i++) {
            if (!pending[i])
                continue;
            int d = ask[i];
            if (d < 0 && cmds[i].key) {
                unsigned s = dl_key_slot(cmds[i].key, cmds[i].keylen);
                d = cl->slots[s];
                /* ?wait=N: WAIT where the acquisition ran, the node an ASK
                 * sent it to while the slot migrates. */
                if (cl->asked[s] >= 0 && is_wait(&cmds[i]))
                    d = cl->asked[s];
            }
            node[i] = d >= 0 ? d : (int)(rounds % (unsigned)cl->nnodes);
        }
        pthread_mutex_unlock(&cl->mu);

        /* One batch per node, in turn. */
        for (int i = 0; i < n; i++) {
            if (!pending[i] || node[i] < 0)
                continue;
            int d = node[i], m = 0;
            for (int j = i; j < n; j++) {
                if (!pending[j] || node[j] != d)
                    continue;
                if (ask[j] >= 0) {
                    memset(&tmp[m], 0, sizeof tmp[m]);
                    tmp[m].argc = 1;
                    tmp[m].argv = asking_argv;
                    tmp[m].argvlen = asking_len;
                    idx[m++] = -1;
                }
                tmp[m] = form_cmd(&forms[j], &cmds[j], ask[j] >= 0);
                idx[m++] = j;
                sentto[j] = ask[j] >= 0 ? -1 : d;   /* (the slot's node, not an ASK) */
                node[j] = -1;         /* sent */
            }
            pthread_mutex_lock(&cl->mu);
            dl_link_t *k = cl->nodes[d];
            pthread_mutex_unlock(&cl->mu);
            dl_link_exec(k, tmp, m);
            for (int t = 0; t < m; t++) {
                if (idx[t] < 0) {
                    if (tmp[t].reply)
                        freeReplyObject(tmp[t].reply);
                    continue;
                }
                dl_cmd_t *c = &cmds[idx[t]];
                c->reply = tmp[t].reply;
                c->err = tmp[t].err;
                c->retried |= tmp[t].retried;
                c->sent |= tmp[t].sent;
                memcpy(c->errmsg, tmp[t].errmsg, sizeof c->errmsg);
            }
        }

        /* Settle what has a final answer; redirect the rest. */
        int again = 0, pause = 0, remap = 0;
        for (int i = 0; i < n; i++) {
            if (!pending[i])
                continue;
            dl_cmd_t *c = &cmds[i];
            redisReply *r = c->reply;
            int slot, to;
            if (c->err && c->deadline && dl_now_ms() >= c->deadline) {
                pending[i] = 0;           /* its caller's deadline ran out */
                continue;
            }
            if (c->err) {
                /* The node failed, perhaps mid-command: it may have run. */
                snprintf(err, sizeof err, "%s", c->errmsg);
                c->retried = 1;
                c->err = 0;
                ask[i] = -1;
                pause = remap = again = 1;
                continue;
            }
            if (starts(r, "MOVED") && (to = redirect_target(cl, r->str, &slot)) >= 0) {
                pthread_mutex_lock(&cl->mu);
                cl->slots[slot] = (short)to;
                cl->asked[slot] = -1;
                pthread_mutex_unlock(&cl->mu);
                ask[i] = -1;
                DL_STAT_ADD(redirects, 1);
                /* The slot moved: after a failover, to a replica that may
                 * have lacked our holds (trust.h). */
                dl_trust_end(r->str);
            } else if (starts(r, "ASK") && (to = redirect_target(cl, r->str, &slot)) >= 0) {
                ask[i] = to;
                pthread_mutex_lock(&cl->mu);
                cl->asked[slot] = (short)to;
                pthread_mutex_unlock(&cl->mu);
                DL_STAT_ADD(redirects, 1);
            } else if (starts(r, "TRYAGAIN") || starts(r, "CLUSTERDOWN")) {
                /* A slot half-migrated, or the cluster voting a failover.
                 * A lock's keys are moved together to the importing node
                 * (see the top of this file); else wait it out. */
                snprintf(err, sizeof err, "redis cluster: %s", r->str);
                int moved = starts(r, "TRYAGAIN") && forms[i].lock && sentto[i] >= 0 &&
                            gather(cl, sentto[i], c, &forms[i], err, sizeof err) == 0;
                ask[i] = -1;
                pause |= !moved;
                remap |= starts(r, "CLUSTERDOWN");
                if (starts(r, "CLUSTERDOWN"))
                    dl_trust_end(r->str);
            } else {
                /* Run by the slot's own node: not migrating (any more). */
                if (forms[i].lock && sentto[i] >= 0) {
                    pthread_mutex_lock(&cl->mu);
                    cl->asked[dl_key_slot(c->argv[3], c->argvlen[3])] = -1;
                    pthread_mutex_unlock(&cl->mu);
                }
                pending[i] = 0;
                continue;
            }
            freeReplyObject(r);
            c->reply = NULL;
            again = 1;
        }
        if (!again)
            break;
        rounds++;
        uint64_t now = dl_now_ms();
        if (now >= give_up) {
            for (int i = 0; i < n; i++)
                if (pending[i]) {
                    cmds[i].err = EIO;
                    snprintf(cmds[i].errmsg, sizeof cmds[i].errmsg, "%s", err);
                }
            rc = EIO;
            break;
        }
        if (pause || rounds > 8) {
            uint64_t left = give_up - now;
            dl_sleep_ms((unsigned)(backoff < left ? backoff : left));
            backoff = backoff * 2 > 200 ? 200 : backoff * 2;
        }
        if (remap)
            refresh(cl, err, sizeof err);
    }
    for (int i = 0; i < n; i++)
        free(forms[i].mem);
    free(node), free(ask), free(sentto), free(pending), free(tmp), free(idx), free(forms);
    return rc;
}

static int cluster_nodes(const void *b)
{
    (void)b;
    return 1;                 /* one keyspace, whatever the number of nodes */
}

static int cluster_exec_node(void *b, int node, dl_cmd_t *cmds, int n)
{
    (void)node;
    return cluster_exec(b, cmds, n);
}

static void cluster_start(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    (void)b, (void)node, (void)cmds, (void)n;
    memset(op, 0, sizeof *op);    /* one node: nothing to overlap */
}

static int cluster_finish(void *b, int node, dl_cmd_t *cmds, int n, dl_link_op_t *op)
{
    (void)node, (void)op;
    return cluster_exec(b, cmds, n);
}

const dl_backend_t dl_backend_cluster = {
    .caps = { .queue = 1, .quorum = 0, .post = 0, .slots = 1 },
    .open = cluster_open,
    .nodes = cluster_nodes,
    .exec = cluster_exec_node,
    .start = cluster_start,
    .finish = cluster_finish,
    .connect_any = dl_connect_first,
    .abandon = cluster_abandon,
    .free = cluster_free,
};
