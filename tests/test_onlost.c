/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_onlost.c - SPEC "Knowing a hold is still good":
 *   - getlease: no round trip, the time left of the caller's hold as last
 *     confirmed (raised by each renewal), EPERM without a hold (also for
 *     another thread of the holding process), EINVAL for bad objects, and
 *     ENOLCK once the hold is known to have lapsed;
 *   - dist_onlost: one call per hold found lapsed while held, from a thread
 *     of the library, with the lock's name and the hold's fence, for each
 *     cause: the keys deleted under a holder (found by the periodic
 *     renewal, by the 20 ms confirmation while another thread waits for
 *     the hold, by the unlock's release, by a relock), a Redis restart, a
 *     failover behind sentinels, `distlock break`, a process stopped
 *     (SIGSTOP) past its lease, and a fixed lease held past its end;
 *     lock calls from inside the function are refused; NULL registers
 *     nothing, a new function replaces the old; a child forked after a
 *     loss in its parent is told of its own losses.
 * Each test prints "onlost after <cause>: N ms" (from the loss, as the test
 * made it, to the call): the figures of docs/RELIABILITY.md.  The bounds
 * asserted are the trust rule's, with a margin for a loaded machine; each
 * is well below the next renewal of an idle hold where the cause is a sign,
 * so a loss told only by that renewal fails the test.
 *
 * The library runs only in the holder process (a child), never in the
 * test process.
 */
#include "harness_topo.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>

enum { M_READY = 1, M_LOST, M_REPLY };
enum { C_GETLEASE = 1, C_UNLOCK, C_RELOCK, C_COUNT, C_ONLOST_NULL, C_ONLOST_OTHER, C_EXIT };

/* What the holder reports with each call of its function (M_LOST's c). */
enum {
    LF_NAME = 1,          /* the lock's name, NUL-terminated after namelen */
    LF_LIBTHREAD = 2,     /* not called by a thread of the program */
    LF_GETLEASE = 4,      /* getlease from the function: EPERM (it holds nothing) */
    LF_LOCK = 8,          /* dist_mutex_lock from the function: EDEADLK (refused) */
    LF_TRY = 16,          /* dist_mutex_trylock from the function: EBUSY (refused) */
    LF_OTHER = 32,        /* the replacement function (C_ONLOST_OTHER) */
    LF_ALL = LF_NAME | LF_LIBTHREAD | LF_GETLEASE | LF_LOCK | LF_TRY,
};

/* A holder process: takes the lock, registers its function, answers. */
struct holder {
    char name[96];
    const char *env[8];       /* "VAR=value", NULL-terminated */
    unsigned long fixed_ms;   /* 0: the default lease, renewed */
    int waiter;               /* a second thread waits for the lock (a busy hold) */
    int rw;                   /* a read hold on a rwlock */
    int fork_first;           /* register, use the library, fork: the child holds */
    int up, down;
};

static struct holder *H;
static dist_mutex_t hm, cbm;
static dist_rwlock_t hrw;
static pid_t holder_tid;
static int lost_calls;

static pid_t tid_now(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static int flags_of(const char *name, size_t len, int other)
{
    int f = other ? LF_OTHER : 0;
    if (len == strlen(H->name) && memcmp(name, H->name, len) == 0 && name[len] == 0)
        f |= LF_NAME;
    if (tid_now() != holder_tid)
        f |= LF_LIBTHREAD;
    unsigned long ms;
    if ((H->rw ? dist_rwlock_getlease(&hrw, &ms) : dist_mutex_getlease(&hm, &ms)) == EPERM)
        f |= LF_GETLEASE;
    if (dist_mutex_lock(&cbm) == EDEADLK)
        f |= LF_LOCK;
    if (dist_mutex_trylock(&cbm) == EBUSY)
        f |= LF_TRY;
    return f;
}

static void on_lost(const char *name, size_t len, uint64_t fence, void *arg)
{
    (void)arg;
    __atomic_add_fetch(&lost_calls, 1, __ATOMIC_SEQ_CST);
    int f = flags_of(name, len, 0);
    th_send(H->up, M_LOST, (int64_t)fence, th_now_us(), f);
}

static void on_lost_other(const char *name, size_t len, uint64_t fence, void *arg)
{
    (void)arg;
    __atomic_add_fetch(&lost_calls, 1, __ATOMIC_SEQ_CST);
    th_send(H->up, M_LOST, (int64_t)fence, th_now_us(), flags_of(name, len, 1));
}

static void *waiter_main(void *arg)
{
    (void)arg;
    int rc = dist_mutex_lock(&hm);
    if (rc == 0 || rc == EOWNERDEAD)
        dist_mutex_unlock(&hm);
    return NULL;
}

static int holder_lock(void)
{
    return H->rw ? dist_rwlock_rdlock(&hrw) : dist_mutex_lock(&hm);
}

static int holder_run(void);

static int pre_told;

static void pre_lost(const char *name, size_t len, uint64_t fence, void *arg)
{
    (void)name, (void)len, (void)fence, (void)arg;
    __atomic_store_n(&pre_told, 1, __ATOMIC_SEQ_CST);
}

/* fork_first: the forked child goes on as the holder. */
static int holder_forked(void *arg)
{
    (void)arg;
    holder_tid = tid_now();
    return holder_run();
}

static int holder_main(void *arg)
{
    H = arg;
    th_setenv_list(H->env);
    holder_tid = tid_now();
    char cbname[128];
    snprintf(cbname, sizeof cbname, "%s.cb", H->name);
    TH_CHECK_RC(dist_mutex_init(&cbm, cbname, NULL), 0);
    TH_CHECK_RC(dist_onlost(on_lost, H), 0);
    if (H->fork_first) {
        /* The library in use when the process forks, its teller thread
         * started by a loss of its own (told to pre_lost): the child keeps
         * the function registered then, and needs a teller of its own. */
        TH_CHECK_RC(dist_onlost(pre_lost, NULL), 0);
        char pre[128], k[300];
        snprintf(pre, sizeof pre, "%s.pre", H->name);
        dist_mutex_t pm;
        TH_CHECK_RC(dist_mutex_init(&pm, pre, NULL), 0);
        TH_CHECK_RC(dist_mutex_lock(&pm), 0);
        redisReply *rep = th_cmd("DEL %s", th_key(k, sizeof k, pre, ""));
        TH_CHECK(rep != NULL);
        freeReplyObject(rep);
        TH_CHECK_RC(dist_mutex_unlock(&pm), ENOLCK);
        for (int i = 0; i < 500 && !__atomic_load_n(&pre_told, __ATOMIC_SEQ_CST); i++)
            th_sleep_ms(10);
        TH_CHECK(pre_told);
        TH_CHECK_RC(dist_onlost(on_lost, H), 0);
        pid_t c = th_fork_child(holder_forked, NULL);
        TH_CHECK(c > 0);
        return th_wait_child_ms(c, 100000);
    }
    return holder_run();
}

static int holder_run(void)
{
    if (H->rw) {
        dist_rwlockattr_t at;
        TH_CHECK_RC(dist_rwlockattr_init(&at), 0);
        TH_CHECK_RC(dist_rwlockattr_setlease(&at, H->fixed_ms), 0);
        TH_CHECK_RC(dist_rwlock_init(&hrw, H->name, &at), 0);
    } else {
        dist_mutexattr_t at;
        TH_CHECK_RC(dist_mutexattr_init(&at), 0);
        TH_CHECK_RC(dist_mutexattr_setlease(&at, H->fixed_ms), 0);
        TH_CHECK_RC(dist_mutex_init(&hm, H->name, &at), 0);
    }
    TH_CHECK_RC(holder_lock(), 0);
    uint64_t fence = 0;
    TH_CHECK_RC(H->rw ? dist_rwlock_getfence(&hrw, &fence) : dist_mutex_getfence(&hm, &fence), 0);
    unsigned long ms = 0;
    int grc = H->rw ? dist_rwlock_getlease(&hrw, &ms) : dist_mutex_getlease(&hm, &ms);
    pthread_t w;
    if (H->waiter) {
        TH_CHECK(pthread_create(&w, NULL, waiter_main, NULL) == 0);
        th_sleep_ms(100);                 /* it waits in the lock call */
    }
    th_send(H->up, M_READY, (int64_t)fence, grc, (int64_t)ms);
    for (;;) {
        th_msg_t m;
        if (th_recv(H->down, &m, 90000))
            return 1;
        int64_t a = 0, b = 0;
        switch (m.tag) {
        case C_GETLEASE:
            ms = 0;
            a = H->rw ? dist_rwlock_getlease(&hrw, &ms) : dist_mutex_getlease(&hm, &ms);
            b = (int64_t)ms;
            break;
        case C_UNLOCK:
            a = H->rw ? dist_rwlock_unlock(&hrw) : dist_mutex_unlock(&hm);
            break;
        case C_RELOCK:
            a = holder_lock();
            break;
        case C_COUNT:
            a = __atomic_load_n(&lost_calls, __ATOMIC_SEQ_CST);
            break;
        case C_ONLOST_NULL:
            a = dist_onlost(NULL, NULL);
            break;
        case C_ONLOST_OTHER:
            a = dist_onlost(on_lost_other, NULL);
            break;
        case C_EXIT:
            if (H->waiter)
                pthread_join(w, NULL);
            th_send(H->up, M_REPLY, 0, 0, 0);
            return 0;
        }
        th_send(H->up, M_REPLY, a, b, 0);
    }
}

typedef struct run {
    pid_t pid;
    th_pipe_t up, down;
    struct holder *h;
    uint64_t fence;
    int64_t lease_left;       /* getlease's ms_left when it had locked */
    /* M_LOST messages that came while waiting for a reply: the teller
     * thread may report a loss that an unlock or relock found before that
     * call's own reply is sent.  recv_lost() takes them first; any left
     * at the end is a second call. */
    th_msg_t pending[4];
    int npending;
    int extra_lost;           /* more than pending[] holds */
} run_t;

/* h names the lock `tag` (th_name) and sets the holder's URL: "DISTLOCK_URL=...". */
static void holder_init(struct holder *h, const char *tag, const char *url)
{
    memset(h, 0, sizeof *h);
    th_name(h->name, sizeof h->name, tag);
    h->env[0] = url;
}

static void holder_start(run_t *r, struct holder *h)
{
    memset(r, 0, sizeof *r);
    r->h = h;
    th_pipe_open(&r->up);
    th_pipe_open(&r->down);
    h->up = r->up.wr;
    h->down = r->down.rd;
    r->pid = th_fork_child(holder_main, h);
    th_msg_t m;
    if (th_recv(r->up.rd, &m, 30000) || m.tag != M_READY)
        fail_msg("the holder did not take the lock");
    r->fence = (uint64_t)m.a;
    TH_ASSERT_RC((int)m.b, 0);            /* getlease while held */
    if (m.c <= 0)
        fail_msg("getlease gave %lld ms left right after the lock call", (long long)m.c);
    r->lease_left = m.c;
}

/* Sends cmd, returns the reply's a (and b in *b); an M_LOST on the way is
 * kept for recv_lost(). */
static int64_t holder_cmd(run_t *r, int cmd, int64_t *b)
{
    th_send(r->down.wr, cmd, 0, 0, 0);
    for (;;) {
        th_msg_t m;
        if (th_recv(r->up.rd, &m, 30000))
            fail_msg("the holder did not answer command %d", cmd);
        if (m.tag == M_LOST) {
            if (r->npending < 4)
                r->pending[r->npending++] = m;
            else
                r->extra_lost++;
            continue;
        }
        if (b)
            *b = m.b;
        return m.a;
    }
}

/* The next M_LOST: one that came during a command, else from the pipe
 * within timeout_ms.  0, or -1 on time-out. */
static int recv_lost(run_t *r, th_msg_t *m, long timeout_ms)
{
    if (r->npending) {
        *m = r->pending[0];
        memmove(r->pending, r->pending + 1, (size_t)--r->npending * sizeof *m);
        return 0;
    }
    return th_recv(r->up.rd, m, timeout_ms) ? -1 : 0;
}

/* Waits for the holder's function to be called (timeout_ms); checks its
 * name, fence, thread and what it could call; prints and returns the time
 * from t_loss_us to the call (ms). */
static int64_t wait_lost(run_t *r, long timeout_ms, int64_t t_loss_us, const char *cause)
{
    th_msg_t m;
    if (recv_lost(r, &m, timeout_ms))
        fail_msg("dist_onlost's function was not called within %ld ms of %s", timeout_ms, cause);
    assert_int_equal(m.tag, M_LOST);
    if ((uint64_t)m.a != r->fence)
        fail_msg("dist_onlost told fence %llu, the hold's is %llu", (unsigned long long)m.a,
                 (unsigned long long)r->fence);
    if ((m.c & LF_ALL) != LF_ALL)
        fail_msg("dist_onlost's call: name %s, from the library's thread %s, getlease EPERM %s, "
                 "lock refused %s, trylock refused %s", m.c & LF_NAME ? "ok" : "WRONG",
                 m.c & LF_LIBTHREAD ? "yes" : "NO", m.c & LF_GETLEASE ? "yes" : "NO",
                 m.c & LF_LOCK ? "yes" : "NO", m.c & LF_TRY ? "yes" : "NO");
    int64_t ms = (m.b - t_loss_us) / 1000;
    printf("onlost after %s: %lld ms\n", cause, (long long)ms);
    fflush(stdout);
    return ms;
}

/* A little later (a second call would come by now), the function was
 * called `want` times in all, with no call the test did not expect; then
 * the holder exits. */
static void holder_told(run_t *r, int want)
{
    th_sleep_ms(300);
    int64_t n = holder_cmd(r, C_COUNT, NULL);
    if (n != want || r->extra_lost || r->npending)
        fail_msg("dist_onlost's function was called %lld times, want %d", (long long)n, want);
    holder_cmd(r, C_EXIT, NULL);
    TH_ASSERT_CHILD_OK(r->pid);
}

/* After the loss was told: getlease says ENOLCK, the unlock ENOLCK, and
 * the function was called once in all (the unlock found the loss again). */
static void holder_finish_lost(run_t *r)
{
    int64_t ms = 0;
    TH_ASSERT_RC((int)holder_cmd(r, C_GETLEASE, &ms), ENOLCK);
    TH_ASSERT_RC((int)holder_cmd(r, C_UNLOCK, NULL), ENOLCK);
    holder_told(r, 1);
}

static char g_url[128];

static const char *url_env(void)
{
    snprintf(g_url, sizeof g_url, "DISTLOCK_URL=redis://127.0.0.1:%d", th_redis_port());
    return g_url;
}

/* ------------------------------------------------------------------------
 * getlease without a loss. */

struct gl_arg {
    char name[96];
    int up;
};

static dist_mutex_t gl_m;

static void *gl_other(void *p)
{
    unsigned long ms;
    *(int *)p = dist_mutex_getlease(&gl_m, &ms);
    return NULL;
}

static int gl_child(void *p)
{
    struct gl_arg *a = p;
    setenv("DISTLOCK_LEASE_MS", "3000", 1);
    unsigned long ms = 7;
    /* Bad objects and arguments. */
    TH_CHECK_RC(dist_mutex_getlease(NULL, &ms), EINVAL);
    dist_mutex_t bad;
    memset(&bad, 0, sizeof bad);
    TH_CHECK_RC(dist_mutex_getlease(&bad, &ms), EINVAL);
    TH_CHECK_RC(dist_rwlock_getlease(NULL, &ms), EINVAL);
    TH_CHECK_RC(dist_mutex_init(&gl_m, a->name, NULL), 0);
    TH_CHECK_RC(dist_mutex_getlease(&gl_m, NULL), EINVAL);
    /* No hold. */
    TH_CHECK_RC(dist_mutex_getlease(&gl_m, &ms), EPERM);
    TH_CHECK(ms == 7);
    TH_CHECK_RC(dist_mutex_lock(&gl_m), 0);
    TH_CHECK_RC(dist_mutex_getlease(&gl_m, &ms), 0);
    TH_CHECK(ms > 0 && ms <= 3000);
    /* Another thread of the holding process holds nothing. */
    pthread_t t;
    int orc = -1;
    TH_CHECK(pthread_create(&t, NULL, gl_other, &orc) == 0);
    pthread_join(t, NULL);
    TH_CHECK_RC(orc, EPERM);
    /* Counting down between renewals, raised by each (every lease/3 =
     * 1 s): within 5 s a later answer is larger than an earlier one. */
    unsigned long prev = ms, first = ms;
    int raised = 0, fell = 0;
    int64_t until = th_now_ms() + 5000;
    while (!raised && th_now_ms() < until) {
        th_sleep_ms(20);
        TH_CHECK_RC(dist_mutex_getlease(&gl_m, &ms), 0);
        if (ms < prev)
            fell = 1;
        if (ms > prev)
            raised = 1;
        prev = ms;
    }
    TH_CHECK(fell && raised);
    /* A reentrant hold answers the same; the unlocks end it. */
    TH_CHECK_RC(dist_mutex_lock(&gl_m), 0);
    TH_CHECK_RC(dist_mutex_getlease(&gl_m, &ms), 0);
    TH_CHECK_RC(dist_mutex_unlock(&gl_m), 0);
    TH_CHECK_RC(dist_mutex_getlease(&gl_m, &ms), 0);
    TH_CHECK_RC(dist_mutex_unlock(&gl_m), 0);
    TH_CHECK_RC(dist_mutex_getlease(&gl_m, &ms), EPERM);

    /* Read holds: each reader has its own answer. */
    char rwname[128];
    snprintf(rwname, sizeof rwname, "%s.rw", a->name);
    dist_rwlock_t rw;
    TH_CHECK_RC(dist_rwlock_init(&rw, rwname, NULL), 0);
    TH_CHECK_RC(dist_rwlock_getlease(&rw, &ms), EPERM);
    TH_CHECK_RC(dist_rwlock_rdlock(&rw), 0);
    TH_CHECK_RC(dist_rwlock_getlease(&rw, &ms), 0);
    TH_CHECK(ms > 0 && ms <= 3000);
    TH_CHECK_RC(dist_rwlock_unlock(&rw), 0);
    TH_CHECK_RC(dist_rwlock_getlease(&rw, &ms), EPERM);
    TH_CHECK_RC(dist_rwlock_destroy(&rw), 0);
    TH_CHECK_RC(dist_rwlock_getlease(&rw, &ms), EINVAL);

    th_send(a->up, 1, (int64_t)first, 0, 0);
    return 0;
}

static void test_getlease(void **state)
{
    (void)state;
    static struct gl_arg a;
    th_name(a.name, sizeof a.name, "getlease");
    th_pipe_t up;
    th_pipe_open(&up);
    a.up = up.wr;
    pid_t pid = th_fork_child(gl_child, &a);
    TH_ASSERT_CHILD_OK(pid);
    th_msg_t m;
    assert_int_equal(th_recv(up.rd, &m, 1000), 0);
    th_pipe_close(&up);
}

/* ------------------------------------------------------------------------
 * The keys deleted under the holder. */

/* Nobody else uses the hold: found by the next renewal (lease/3 = 500 ms). */
static void test_deleted_idle(void **state)
{
    (void)state;
    static struct holder h;
    holder_init(&h, "lostidle", url_env());
    h.env[1] = "DISTLOCK_LEASE_MS=1500";
    run_t r;
    holder_start(&r, &h);
    int64_t t0 = th_now_us();
    th_lock_lose(0, h.name);
    /* lease/3 between renewals; the margin is for a loaded machine */
    int64_t ms = wait_lost(&r, 10000, t0, "the keys were deleted (idle hold, lease 1500 ms)");
    if (ms > 3000)
        fail_msg("told %lld ms after the loss: later than a few renewal periods (500 ms)",
                 (long long)ms);
    holder_finish_lost(&r);
}

/* Another thread of the holder waits for the lock: the hold is confirmed
 * every 20 ms while it waits, so the loss is told within that (the default
 * lease: the next regular renewal would come 10 s later). */
static void test_deleted_busy(void **state)
{
    (void)state;
    static struct holder h;
    holder_init(&h, "lostbusy", url_env());
    h.waiter = 1;
    run_t r;
    holder_start(&r, &h);
    int64_t t0 = th_now_us();
    th_lock_lose(0, h.name);
    int64_t ms = wait_lost(&r, 15000, t0, "the keys were deleted (a thread waiting for the hold)");
    if (ms > 2000)
        fail_msg("told %lld ms after the loss: not by the 20 ms confirmation of a busy hold",
                 (long long)ms);
    holder_finish_lost(&r);
}

/* Nobody renews before the unlock (default lease): the unlock's release
 * finds the loss, says ENOLCK, and the function is called once, from the
 * library's thread. */
static void unlock_finds_loss(const char *tag, int fork_first, const char *what)
{
    static struct holder h;
    holder_init(&h, tag, url_env());
    h.fork_first = fork_first;
    run_t r;
    holder_start(&r, &h);
    int64_t t0 = th_now_us();
    th_lock_lose(0, h.name);
    TH_ASSERT_RC((int)holder_cmd(&r, C_UNLOCK, NULL), ENOLCK);
    wait_lost(&r, 5000, t0, what);
    holder_told(&r, 1);
}

static void test_deleted_unlock(void **state)
{
    (void)state;
    unlock_finds_loss("lostunlock", 0, "the keys were deleted (found by the unlock)");
}

/* A reentrant relock after the loss (past the 40 ms trust window) confirms
 * the hold first: it finds the loss (told), takes the lock anew
 * (EOWNERDEAD), and only the old hold is told.  The unlock that ends the
 * section still says ENOLCK (SPEC, ENOLCK: the hold it began with lapsed),
 * without telling the function again. */
static void test_deleted_relock(void **state)
{
    (void)state;
    static struct holder h;
    holder_init(&h, "lostrelock", url_env());
    run_t r;
    holder_start(&r, &h);
    th_sleep_ms(100);                     /* its confirmation is older than 40 ms */
    int64_t t0 = th_now_us();
    th_lock_lose(0, h.name);
    TH_ASSERT_RC((int)holder_cmd(&r, C_RELOCK, NULL), EOWNERDEAD);
    wait_lost(&r, 5000, t0, "the keys were deleted (found by a relock)");
    int64_t ms = 0;
    TH_ASSERT_RC((int)holder_cmd(&r, C_GETLEASE, &ms), 0);   /* the new hold */
    assert_true(ms > 0);
    TH_ASSERT_RC((int)holder_cmd(&r, C_UNLOCK, NULL), 0);
    TH_ASSERT_RC((int)holder_cmd(&r, C_UNLOCK, NULL), ENOLCK);
    holder_told(&r, 1);
}

/* ------------------------------------------------------------------------
 * Signs of lost state: told at once (the default lease: the next renewal
 * would come 10 s later). */

static void test_restart(void **state)
{
    (void)state;
    static th_server_t s;
    memset(&s, 0, sizeof s);
    assert_int_equal(th_server_start(&s), 0);
    static char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", s.url);
    static struct holder h;
    holder_init(&h, "lostrestart", url);
    run_t r;
    holder_start(&r, &h);
    th_server_stop(&s);
    assert_int_equal(th_server_restart(&s), 0);
    int64_t t0 = th_now_us();
    int64_t ms = wait_lost(&r, 20000, t0, "a Redis restart (from the server's return)");
    if (ms > 6000)
        fail_msg("told %lld ms after the restart: not by the pass after the sign", (long long)ms);
    holder_finish_lost(&r);
    th_server_stop(&s);
}

/* The server stays down for 2 s, longer than a call's I/O time-out
 * (500 ms): the pass after the sign gets no answer, and the hold is asked
 * about again every 250 ms (dl_hold_unanswered) rather than at the next
 * tick 10 s later; told soon after the server is back. */
static void test_restart_long(void **state)
{
    (void)state;
    static th_server_t s;
    memset(&s, 0, sizeof s);
    assert_int_equal(th_server_start(&s), 0);
    static char url[96];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", s.url);
    static struct holder h;
    holder_init(&h, "lostlongrestart", url);
    h.env[1] = "DISTLOCK_IO_TIMEOUT_MS=500";
    h.env[2] = "DISTLOCK_LOG=error";    /* the retries' warnings */
    run_t r;
    holder_start(&r, &h);
    th_server_stop(&s);
    th_sleep_ms(2000);
    assert_int_equal(th_server_restart(&s), 0);
    int64_t t0 = th_now_us();
    int64_t ms = wait_lost(&r, 20000, t0, "a Redis restart after 2 s down (from its return)");
    if (ms > 5000)
        fail_msg("told %lld ms after the server came back: not retried after the failed pass",
                 (long long)ms);
    holder_finish_lost(&r);
    th_server_stop(&s);
}

#ifdef TH_CLI_PATH
/* `distlock break NAME --force`, as an operator runs it; on a read hold. */
static void test_break(void **state)
{
    (void)state;
    static struct holder h;
    holder_init(&h, "lostbreak", url_env());
    h.rw = 1;
    run_t r;
    holder_start(&r, &h);
    char url[96];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", th_redis_port());
    const char *argv[] = { TH_CLI_PATH, "--url", url, "break", h.name, "--force", NULL };
    int64_t t0 = th_now_us();
    int st = tt_run(argv, 10000, NULL);
    assert_int_equal(st, 0);
    int64_t ms = wait_lost(&r, 15000, t0, "distlock break (read hold)");
    if (ms > 3000)
        fail_msg("told %lld ms after the break: not by the pass after its revocation",
                 (long long)ms);
    holder_finish_lost(&r);
}
#endif

/* ------------------------------------------------------------------------
 * The holder stopped (SIGSTOP) for twice its lease: Redis let the hold go
 * meanwhile; the first renewal after SIGCONT finds it gone. */
static void test_stall(void **state)
{
    (void)state;
    static struct holder h;
    holder_init(&h, "loststall", url_env());
    h.env[1] = "DISTLOCK_LEASE_MS=1500";
    run_t r;
    holder_start(&r, &h);
    kill(r.pid, SIGSTOP);
    th_sleep_ms(3000);
    assert_true(th_wait_exists(th_key((char[300]){ 0 }, 300, h.name, ""), 0, 2000));
    int64_t t0 = th_now_us();
    kill(r.pid, SIGCONT);
    int64_t ms = wait_lost(&r, 10000, t0, "a stall of 3 s (SIGSTOP, lease 1500 ms; from SIGCONT)");
    if (ms > 2000)
        fail_msg("told %lld ms after the process resumed", (long long)ms);
    holder_finish_lost(&r);
}

/* ------------------------------------------------------------------------
 * A fixed lease held past its end: getlease says ENOLCK from its end, the
 * watchdog finds it gone and tells. */
static void test_fixed_lease(void **state)
{
    (void)state;
    static struct holder h;
    holder_init(&h, "lostfixed", url_env());
    h.fixed_ms = 500;
    run_t r;
    holder_start(&r, &h);
    if (r.lease_left > 500)
        fail_msg("getlease gave %lld ms of a 500 ms fixed lease", (long long)r.lease_left);
    int64_t t_end = th_now_us() + r.lease_left * 1000;
    int64_t ms = wait_lost(&r, 10000, t_end, "a fixed lease's end (500 ms; from getlease's end)");
    if (ms > 2000)
        fail_msg("told %lld ms after the fixed lease ended", (long long)ms);
    holder_finish_lost(&r);
}

/* ------------------------------------------------------------------------
 * A child forked after dist_onlost (the library in use in its parent):
 * its own lost hold is told to the function it inherited. */
static void test_forked_child(void **state)
{
    (void)state;
    unlock_finds_loss("lostfork", 1,
                      "the keys were deleted (a forked child's hold, found by its unlock)");
}

/* ------------------------------------------------------------------------
 * NULL registers nothing; a new function replaces the old one. */
static void test_register(void **state)
{
    (void)state;
    static struct holder h;
    holder_init(&h, "lostreg", url_env());
    run_t r;
    holder_start(&r, &h);
    TH_ASSERT_RC((int)holder_cmd(&r, C_ONLOST_NULL, NULL), 0);
    th_lock_lose(0, h.name);
    TH_ASSERT_RC((int)holder_cmd(&r, C_UNLOCK, NULL), ENOLCK);
    th_sleep_ms(300);
    if (holder_cmd(&r, C_COUNT, NULL) != 0 || r.extra_lost || r.npending)
        fail_msg("a function was called after dist_onlost(NULL)");

    /* The replacement is called, not the first function. */
    TH_ASSERT_RC((int)holder_cmd(&r, C_ONLOST_OTHER, NULL), 0);
    TH_ASSERT_RC((int)holder_cmd(&r, C_RELOCK, NULL), 0);
    int64_t ms = 0;
    TH_ASSERT_RC((int)holder_cmd(&r, C_GETLEASE, &ms), 0);
    th_sleep_ms(100);                     /* past the trust window: the unlock asks */
    th_lock_lose(0, h.name);
    int64_t t0 = th_now_us();
    TH_ASSERT_RC((int)holder_cmd(&r, C_UNLOCK, NULL), ENOLCK);
    th_msg_t m;
    if (recv_lost(&r, &m, 5000))
        fail_msg("the replacement function was not called");
    assert_int_equal(m.tag, M_LOST);
    assert_true(m.c & LF_OTHER);
    printf("onlost (replacement) after the unlock: %lld ms\n", (long long)((m.b - t0) / 1000));
    holder_cmd(&r, C_EXIT, NULL);
    TH_ASSERT_CHILD_OK(r.pid);
}

/* ------------------------------------------------------------------------
 * A failover behind sentinels to a replica that does not have the hold:
 * the sentinels disconnect the old master's clients (a sign), and the
 * renewal on the new master finds the hold gone.  The sign comes only when
 * the sentinels turn the old master into a replica, about 10 s after the
 * promotion (until then it still answers as a master and still has the
 * hold): the call comes some 11 s after SENTINEL FAILOVER, ~10 ms after
 * the sign.  The bound is 25 s. */
static void test_failover(void **state)
{
    (void)state;
    tt_alarm(120);
    static th_server_t master, replica;
    static tt_sentinels_t st;
    memset(&master, 0, sizeof master);
    memset(&replica, 0, sizeof replica);
    assert_int_equal(tt_server_start(&master, NULL), 0);
    assert_int_equal(tt_replica_start(&replica, master.port), 0);
    assert_int_equal(tt_sentinels_start(&st, 3, "dlmaster", master.port, 2, 1), 0);
    static char url[320];
    char u[260];
    snprintf(url, sizeof url, "DISTLOCK_URL=%s", tt_sentinel_url(&st, u, sizeof u));
    static struct holder h;
    holder_init(&h, "lostfailover", url);
    h.env[1] = "DISTLOCK_IO_TIMEOUT_MS=2000";
    h.env[2] = getenv("TH_HOLDER_LOG");
    run_t r;
    holder_start(&r, &h);
    /* The replica loses the hold (it is writable for this): promoted, it
     * will not have it. */
    char key[300];
    th_key(key, sizeof key, h.name, "");
    for (int i = 0; i < 100 && th_cmd_at_ll(replica.port, "EXISTS %s", key) != 1; i++)
        th_sleep_ms(20);
    redisReply *rep = th_cmd_at(replica.port, "CONFIG SET replica-read-only no");
    assert_non_null(rep);
    freeReplyObject(rep);
    th_lock_lose(replica.port, h.name);
    assert_int_equal(th_cmd_at_ll(replica.port, "EXISTS %s", key), 0);
    int64_t t0 = th_now_us();
    rep = th_cmd_at(st.s[0].port, "SENTINEL FAILOVER %s", st.master);
    if (!rep || rep->type == REDIS_REPLY_ERROR)
        fail_msg("SENTINEL FAILOVER: %s", rep ? rep->str : "no reply");
    freeReplyObject(rep);
    /* Watch for the promotion while waiting for the call. */
    int64_t promoted = -1;
    th_msg_t m;
    int got = 0;
    while (th_now_us() - t0 < 25000000) {
        if (promoted < 0 && tt_sentinel_master_port(&st, 0) == replica.port)
            promoted = (th_now_us() - t0) / 1000;
        if (th_recv(r.up.rd, &m, 20) == 0) {
            got = 1;
            break;
        }
    }
    if (!got && promoted < 0 && tt_sentinels_tilted(&st)) {
        tt_sentinels_report(stdout, &st, 25);
        print_message("skipped: a sentinel entered TILT mode (no failover happened)\n");
        kill(r.pid, SIGKILL);
        skip();
    }
    if (!got)
        fail_msg("dist_onlost's function was not called within 25 s of the failover "
                 "(promoted after %lld ms)", (long long)promoted);
    assert_int_equal(m.tag, M_LOST);
    assert_int_equal((uint64_t)m.a, r.fence);
    assert_true((m.c & LF_ALL) == LF_ALL);
    printf("onlost after a sentinel failover: %lld ms after SENTINEL FAILOVER (promotion seen "
           "after %lld ms)\n", (long long)((m.b - t0) / 1000), (long long)promoted);
    fflush(stdout);
    holder_finish_lost(&r);
    tt_sentinels_stop(&st);
}

static int group_teardown(void **state)
{
    tt_cleanup();
    return th_group_teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_getlease),
        TH_TEST(test_deleted_idle),
        TH_TEST(test_deleted_busy),
        TH_TEST(test_deleted_unlock),
        TH_TEST(test_deleted_relock),
        TH_TEST(test_restart),
        TH_TEST(test_restart_long),
#ifdef TH_CLI_PATH
        TH_TEST(test_break),
#endif
        TH_TEST(test_stall),
        TH_TEST(test_fixed_lease),
        TH_TEST(test_register),
        TH_TEST(test_forked_child),
        TT_TEST(test_failover),
    };
    return th_run_tests(tests, th_group_setup, group_teardown);
}
