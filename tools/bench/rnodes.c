/* SPDX-License-Identifier: BSD-3-Clause */
/* rnodes.c - the servers of a workload and what it reads off them: INFO
 * cpu and memory, CLIENT LIST, summed over the run's server or over the
 * masters of a cluster. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void rnodes_single(rnodes_t *s)
{
    s->cl = NULL;
    s->n = 1;
}

void rnodes_cluster(rnodes_t *s, const rcluster_t *cl)
{
    s->cl = cl;
    s->n = cl->n;
}

redisContext *rnodes_connect(const rnodes_t *s, int i, const char *name)
{
    return s->cl ? rcl_connect(s->cl, i, name) : rc_connect(name);
}

int rnodes_of(const rnodes_t *s, const char *key)
{
    return s->cl ? rcl_master_of(s->cl, key) : 0;
}

int rnodes_snap(const rnodes_t *s, rsnap_t *out)
{
    memset(out, 0, sizeof *out);
    int rc = 0;
    for (int i = 0; i < s->n; i++) {
        redisContext *c = rnodes_connect(s, i, "bench-ctl");
        if (!c)
            return -1;
        double cpu = rc_cpu_seconds(c);
        long long mem = rc_info_ll(c, "memory", "used_memory");
        if (cpu < 0 || mem < 0)
            rc = -1;
        out->cpu_s += cpu;
        out->used_memory += mem;
        out->calls += rc_cmd_calls(c);
        static const char *const scripts[] = { "evalsha", "eval", "evalsha_ro", "eval_ro" };
        for (size_t k = 0; k < sizeof scripts / sizeof scripts[0]; k++) {
            long long calls, usec;
            if (rc_cmdstat(c, scripts[k], &calls, &usec) == 0)
                out->scripts += calls;
        }
        redisFree(c);
    }
    return rc;
}

double rnodes_idle_cpu(const rnodes_t *s, unsigned long us)
{
    rsnap_t a, b;
    if (rnodes_snap(s, &a))
        return 0;
    uint64_t t0 = now_ns();
    sleep_us(us);
    if (rnodes_snap(s, &b))
        return 0;
    double d = (b.cpu_s - a.cpu_s) / ((double)(now_ns() - t0) / 1e9);
    return d > 0 ? d : 0;
}

int rnodes_clients(const rnodes_t *s, rclients_t *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < s->n; i++) {
        redisContext *c = rnodes_connect(s, i, "bench-ctl");
        if (!c)
            return -1;
        redisReply *r = rc_cmd(c, "CLIENT LIST");
        if (!r || r->type != REDIS_REPLY_STRING) {
            if (r)
                freeReplyObject(r);
            redisFree(c);
            return -1;
        }
        for (const char *line = r->str; line && *line;) {
            const char *nl = strchr(line, '\n');
            const char *name = strstr(line, " name=");
            if (name && nl && name > nl)
                name = NULL;
            out->total++;
            if (name && !strncmp(name + 6, "bench-ctl ", 10))
                out->ctl++;
            else if (name && !strncmp(name + 6, "bench-", 6))
                out->bench++;
            else
                out->library++;
            line = nl ? nl + 1 : NULL;
        }
        freeReplyObject(r);
        redisFree(c);
    }
    return 0;
}
