/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_proc.c - see harness_proc.h. */
#include "harness.h"
#include "status.h"

#include <errno.h>
#include <string.h>

/* --------------------------------------------------------------------- procs */

struct proc_obj {
    int kind;               /* 1 mutex, 2 rwlock */
    char *name;
    union { dist_mutex_t m; dist_rwlock_t rw; } u;
};

struct proc_boot {
    const char *const *env;
    int req_rd, res_wr;
    int close1, close2;
};

static struct proc_obj *proc_find(struct proc_obj *objs, int *n, int kind, const th_req_t *q, int *rc)
{
    for (int i = 0; i < *n; i++)
        if (objs[i].kind == kind && strcmp(objs[i].name, q->name) == 0)
            return &objs[i];
    if (*n >= 64) {
        *rc = ENOMEM;
        return NULL;
    }
    struct proc_obj *o = &objs[*n];
    o->kind = kind;
    o->name = strdup(q->name);
    if (kind == 1) {
        dist_mutexattr_t at;
        dist_mutexattr_init(&at);
        if (q->type)
            dist_mutexattr_settype(&at, q->type);
        if (q->fair)
            dist_mutexattr_setfair(&at, q->fair);
        if (q->lease_ms)
            dist_mutexattr_setlease(&at, (unsigned long)q->lease_ms);
        *rc = dist_mutex_init(&o->u.m, o->name, &at);
        dist_mutexattr_destroy(&at);
    } else {
        dist_rwlockattr_t at;
        dist_rwlockattr_init(&at);
        if (q->lease_ms)
            dist_rwlockattr_setlease(&at, (unsigned long)q->lease_ms);
        *rc = dist_rwlock_init(&o->u.rw, o->name, &at);
        dist_rwlockattr_destroy(&at);
    }
    if (*rc != 0) {
        free(o->name);
        return NULL;
    }
    (*n)++;
    return o;
}

void th_setenv_list(const char *const *env)
{
    for (const char *const *e = env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq) {
            char k[128];
            size_t n = (size_t)(eq - *e) < sizeof k - 1 ? (size_t)(eq - *e) : sizeof k - 1;
            memcpy(k, *e, n);
            k[n] = 0;
            setenv(k, eq + 1, 1);
        } else {
            unsetenv(*e);
        }
    }
}

static int proc_main(void *p)
{
    static struct proc_obj objs[64];
    int nobjs = 0;
    struct proc_boot *b = p;
    close(b->close1);
    close(b->close2);
    th_setenv_list(b->env);
    th_req_t q;
    for (;;) {
        if (th_read_full(b->req_rd, &q, sizeof q, -1) != 0)
            return 0;
        th_res_t r;
        memset(&r, 0, sizeof r);
        if (q.delay_us > 0)
            th_sleep_us(q.delay_us);
        r.t_start_us = th_now_us();
        int rc = 0;
        struct proc_obj *o = NULL;
        int kind = q.op >= TH_M_LOCK && q.op <= TH_M_FENCE ? 1 :
                   q.op >= TH_RW_RDLOCK && q.op <= TH_RW_FENCE ? 2 : 0;
        if (kind)
            o = proc_find(objs, &nobjs, kind, &q, &rc);
        if (kind && !o) {
            r.rc = rc;
        } else {
            struct timespec ts = th_abstime_ms(q.arg);
            switch (q.op) {
            case TH_EXIT:
                return 0;
            case TH_M_LOCK: r.rc = dist_mutex_lock(&o->u.m); break;
            case TH_M_TRYLOCK: r.rc = dist_mutex_trylock(&o->u.m); break;
            case TH_M_TIMEDLOCK: r.rc = dist_mutex_timedlock(&o->u.m, &ts); break;
            case TH_M_UNLOCK: r.rc = dist_mutex_unlock(&o->u.m); break;
            case TH_M_FENCE: r.rc = dist_mutex_getfence(&o->u.m, &r.fence); break;
            case TH_RW_RDLOCK: r.rc = dist_rwlock_rdlock(&o->u.rw); break;
            case TH_RW_TRYRDLOCK: r.rc = dist_rwlock_tryrdlock(&o->u.rw); break;
            case TH_RW_TIMEDRDLOCK: r.rc = dist_rwlock_timedrdlock(&o->u.rw, &ts); break;
            case TH_RW_WRLOCK: r.rc = dist_rwlock_wrlock(&o->u.rw); break;
            case TH_RW_TRYWRLOCK: r.rc = dist_rwlock_trywrlock(&o->u.rw); break;
            case TH_RW_TIMEDWRLOCK: r.rc = dist_rwlock_timedwrlock(&o->u.rw, &ts); break;
            case TH_RW_UNLOCK: r.rc = dist_rwlock_unlock(&o->u.rw); break;
            case TH_RW_FENCE: r.rc = dist_rwlock_getfence(&o->u.rw, &r.fence); break;
            case TH_SLEEP: th_sleep_ms(q.arg); break;
            case TH_STATS: {
                dl_stats_t s;
                dl_stats_get(&s);
                r.fence = s.fallback_checks;
                r.a = (int64_t)s.grants;
                r.b = (int64_t)s.lost;
                break;
            }
            case TH_INCR: r.fence = (uint64_t)th_cmd_ll("INCR %s", q.name); break;
            default: r.rc = -1; break;
            }
        }
        r.t_done_us = th_now_us();
        snprintf(r.err, sizeof r.err, "%s", dist_lasterror());
        if (th_write_all(b->res_wr, &r, sizeof r) != 0)
            return 0;
    }
}

int th_proc_start(th_proc_t *p, const char *const *env)
{
    th_pipe_t req, res;
    th_pipe_open(&req);
    th_pipe_open(&res);
    struct proc_boot b = { env, req.rd, res.wr, req.wr, res.rd };
    p->pid = th_fork_child(proc_main, &b);
    close(req.rd);
    close(res.wr);
    p->req_wr = req.wr;
    p->res_rd = res.rd;
    return p->pid > 0 ? 0 : -1;
}

int th_proc_send(th_proc_t *p, const th_req_t *req)
{
    return th_write_all(p->req_wr, req, sizeof *req);
}

static char th_proc_err[256];

const char *th_proc_lasterror(void)
{
    return th_proc_err;
}

int th_proc_recv(th_proc_t *p, th_res_t *res, long timeout_ms)
{
    int r = th_read_full(p->res_rd, res, sizeof *res, timeout_ms);
    if (r == 0) {
        res->err[sizeof res->err - 1] = 0;
        snprintf(th_proc_err, sizeof th_proc_err, "%s", res->err);
    }
    return r;
}

int th_proc_call(th_proc_t *p, const th_req_t *req, th_res_t *res)
{
    th_res_t tmp;
    if (!res)
        res = &tmp;
    if (th_proc_send(p, req) != 0 || th_proc_recv(p, res, 15000) != 0)
        return TH_WAIT_TIMEOUT;
    return res->rc;
}

void th_proc_req(th_req_t *q, int op, const char *name)
{
    memset(q, 0, sizeof *q);
    q->op = op;
    snprintf(q->name, sizeof q->name, "%s", name ? name : "");
}

int th_proc_op(th_proc_t *p, int op, const char *name)
{
    th_req_t q;
    th_proc_req(&q, op, name);
    return th_proc_call(p, &q, NULL);
}

int th_proc_op_async(th_proc_t *p, int op, const char *name)
{
    th_req_t q;
    th_proc_req(&q, op, name);
    return th_proc_send(p, &q);
}

int th_proc_opa(th_proc_t *p, int op, const char *name, long arg, th_res_t *res)
{
    th_req_t q;
    th_proc_req(&q, op, name);
    q.arg = arg;
    return th_proc_call(p, &q, res);
}

int th_proc_opa_async(th_proc_t *p, int op, const char *name, long arg)
{
    th_req_t q;
    th_proc_req(&q, op, name);
    q.arg = arg;
    return th_proc_send(p, &q);
}

int th_proc_stop(th_proc_t *p)
{
    if (p->pid <= 0)
        return -1;
    th_req_t q;
    th_proc_req(&q, TH_EXIT, "");
    th_proc_send(p, &q);
    int st = th_wait_child_ms(p->pid, 10000);
    close(p->req_wr);
    close(p->res_rd);
    p->pid = 0;
    return st;
}

void th_proc_kill(th_proc_t *p)
{
    if (p->pid <= 0)
        return;
    th_kill_child(p->pid);
    close(p->req_wr);
    close(p->res_rd);
    p->pid = 0;
}

