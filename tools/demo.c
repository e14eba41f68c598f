/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * distlock-demo: processes x threads contending on one dist_mutex_t and one
 * dist_rwlock_t, checking that the locks really exclude.
 *
 *   mutex:  lock; GET counter; SET counter v+1; unlock
 *           -> at the end counter must equal the number of increments
 *              (anything less is a lost update).
 *   rwlock: 1 in 4 operations writes: wrlock; HGET rec a; HSET rec a v+1;
 *           HSET rec b v+1; unlock.  The others read: rdlock; HMGET rec a b;
 *           unlock -> a != b is a torn read (a writer ran during the read).
 *
 * The data lives in Redis and each thread reads and writes it on its own
 * plain hiredis connection, so only the locks keep the processes apart.
 * Exit status 0 only if there were no lost updates, no torn reads and no
 * errors.
 *
 * usage: distlock-demo [-p PROCS] [-t THREADS] [-n OPS] [-f] [-q]
 */
#include <distlock.h>

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STALL_SECONDS 60        /* no progress for this long: give up (2 default leases) */

struct options {
    int procs, threads, ops, fair, quiet;
};

/* Shared by the parent and all children (mmap MAP_SHARED). */
struct shared {
    atomic_uint_fast64_t done;          /* operations finished, all kinds */
    atomic_uint_fast64_t increments;    /* mutex operations */
    atomic_uint_fast64_t reads, writes;
    atomic_uint_fast64_t torn;          /* reads that saw a != b */
    atomic_uint_fast64_t ownerdead;     /* acquisitions that returned EOWNERDEAD */
    atomic_uint_fast64_t errors;
    atomic_int have_error;
    char error[256];                    /* the first error, for the report */
    uint32_t wait_us[];                 /* per operation: slot worker*ops + i */
};

struct redis_target {
    char host[256];
    int port;
    char path[256];                     /* unix socket, if set */
    char password[256];
    int db;
};

static struct options opt = { 4, 4, 1000, 0, 0 };
static struct shared *sh;
static struct redis_target target;
static char counter_key[128], record_key[128], mutex_name[128], rw_name[128];
static dist_mutex_t mtx;
static dist_rwlock_t rw;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void report_error(const char *fmt, ...)
{
    va_list ap;
    int expected = 0;
    atomic_fetch_add(&sh->errors, 1);
    if (!atomic_compare_exchange_strong(&sh->have_error, &expected, 1))
        return;
    va_start(ap, fmt);
    vsnprintf(sh->error, sizeof sh->error, fmt, ap);
    va_end(ap);
}

/* --- the data connection: DISTLOCK_URL, parsed just enough for the demo:
 * redis://[user[:password]@]host[:port][/db] and unix:///path[?db=N]. */
static int parse_url(const char *url, struct redis_target *t)
{
    memset(t, 0, sizeof *t);
    t->port = 6379;
    if (strncmp(url, "unix://", 7) == 0) {
        const char *p = url + 7, *q = strchr(p, '?');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n == 0 || n >= sizeof t->path)
            return -1;
        memcpy(t->path, p, n);
        if (q && strncmp(q, "?db=", 4) == 0)
            t->db = atoi(q + 4);
        return 0;
    }
    if (strncmp(url, "redis://", 8) != 0)
        return -1;
    const char *p = url + 8, *at = strchr(p, '@'), *end;
    if (at) {                               /* user:password@ or password@ */
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p;
        size_t n = (size_t)(at - pw);
        if (n >= sizeof t->password)
            return -1;
        memcpy(t->password, pw, n);
        p = at + 1;
    }
    end = p + strcspn(p, ":/");
    if (end == p || (size_t)(end - p) >= sizeof t->host)
        return -1;
    memcpy(t->host, p, (size_t)(end - p));
    if (*end == ':')
        t->port = atoi(end + 1);
    end = strchr(end, '/');
    if (end && end[1])
        t->db = atoi(end + 1);
    return t->port > 0 && t->port < 65536 ? 0 : -1;
}

static redisReply *command(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!r) {
        report_error("redis: %s", c->errstr[0] ? c->errstr : "no reply");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        report_error("redis: %s", r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

static redisContext *data_connect(void)
{
    struct timeval tv = { 5, 0 };
    redisContext *c = target.path[0] ? redisConnectUnixWithTimeout(target.path, tv)
                                     : redisConnectWithTimeout(target.host, target.port, tv);
    if (!c || c->err) {
        report_error("redis %s:%d: %s", target.path[0] ? target.path : target.host,
                     target.port, c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    redisReply *r;
    if (target.password[0]) {
        if (!(r = command(c, "AUTH %s", target.password)))
            goto fail;
        freeReplyObject(r);
    }
    if (target.db) {
        if (!(r = command(c, "SELECT %d", target.db)))
            goto fail;
        freeReplyObject(r);
    }
    return c;
fail:
    redisFree(c);
    return NULL;
}

static long long reply_int(const redisReply *r)
{
    if (!r)
        return 0;
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    if (r->type == REDIS_REPLY_STRING)
        return strtoll(r->str, NULL, 10);
    return 0;
}

/* --- workers --- */

static int acquired(int rc, const char *what)
{
    if (rc == 0)
        return 1;
    if (rc == EOWNERDEAD) {             /* acquired, but a holder lapsed before */
        atomic_fetch_add(&sh->ownerdead, 1);
        return 1;
    }
    report_error("%s: %s (%s)", what, dist_strerror(rc), dist_lasterror());
    return 0;
}

static int released(int rc, const char *what)
{
    if (rc == 0)
        return 1;
    report_error("%s: %s (%s)", what, dist_strerror(rc), dist_lasterror());
    return 0;
}

static int op_increment(redisContext *c, uint32_t *wait)
{
    uint64_t t0 = now_ns();
    if (!acquired(dist_mutex_lock(&mtx), "dist_mutex_lock"))
        return -1;
    *wait = (uint32_t)((now_ns() - t0) / 1000);
    redisReply *r = command(c, "GET %s", counter_key);
    long long v = reply_int(r);
    int ok = r != NULL;
    freeReplyObject(r);
    if (ok && (r = command(c, "SET %s %lld", counter_key, v + 1)))
        freeReplyObject(r);
    else
        ok = 0;
    if (ok)
        atomic_fetch_add(&sh->increments, 1);
    if (!released(dist_mutex_unlock(&mtx), "dist_mutex_unlock") || !ok)
        return -1;
    return 0;
}

static int op_write(redisContext *c, uint32_t *wait)
{
    uint64_t t0 = now_ns();
    if (!acquired(dist_rwlock_wrlock(&rw), "dist_rwlock_wrlock"))
        return -1;
    *wait = (uint32_t)((now_ns() - t0) / 1000);
    redisReply *r = command(c, "HGET %s a", record_key);
    long long v = reply_int(r);
    int ok = r != NULL;
    freeReplyObject(r);
    /* two commands on purpose: a reader between them sees a != b */
    if (ok && (r = command(c, "HSET %s a %lld", record_key, v + 1)))
        freeReplyObject(r);
    else
        ok = 0;
    if (ok && (r = command(c, "HSET %s b %lld", record_key, v + 1)))
        freeReplyObject(r);
    else
        ok = 0;
    if (ok)
        atomic_fetch_add(&sh->writes, 1);
    if (!released(dist_rwlock_unlock(&rw), "dist_rwlock_unlock") || !ok)
        return -1;
    return 0;
}

static int op_read(redisContext *c, uint32_t *wait)
{
    uint64_t t0 = now_ns();
    if (!acquired(dist_rwlock_rdlock(&rw), "dist_rwlock_rdlock"))
        return -1;
    *wait = (uint32_t)((now_ns() - t0) / 1000);
    redisReply *r = command(c, "HMGET %s a b", record_key);
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2;
    if (ok && reply_int(r->element[0]) != reply_int(r->element[1]))
        atomic_fetch_add(&sh->torn, 1);
    if (ok)
        atomic_fetch_add(&sh->reads, 1);
    freeReplyObject(r);
    if (!released(dist_rwlock_unlock(&rw), "dist_rwlock_unlock") || !ok)
        return -1;
    return 0;
}

/* Even operations increment under the mutex, odd ones read (3 in 4) or
 * write (1 in 4) under the rwlock: the kind of slot i is known from i and a
 * per-worker seed, so the parent can sort the waits by kind afterwards. */
static int is_write(unsigned worker, int i)
{
    unsigned x = worker * 2654435761u + (unsigned)i * 40503u;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return (x & 3) == 0;
}

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    uint32_t *wait = sh->wait_us + (size_t)id * (size_t)opt.ops;
    redisContext *c = data_connect();
    if (!c)
        return NULL;
    for (int i = 0; i < opt.ops; i++) {
        int rc = (i % 2 == 0) ? op_increment(c, &wait[i])
               : is_write(id, i) ? op_write(c, &wait[i])
               : op_read(c, &wait[i]);
        if (rc != 0)
            break;
        atomic_fetch_add(&sh->done, 1);
    }
    redisFree(c);
    return NULL;
}

static int child(int proc)
{
    pthread_t *tid;
    dist_mutexattr_t ma;
    int rc;

    dist_mutexattr_init(&ma);
    dist_mutexattr_setfair(&ma, opt.fair);
    if ((rc = dist_mutex_init(&mtx, mutex_name, &ma)) != 0 ||
        (rc = dist_rwlock_init(&rw, rw_name, NULL)) != 0) {
        report_error("init: %s (%s)", dist_strerror(rc), dist_lasterror());
        return 1;
    }
    dist_mutexattr_destroy(&ma);
    if (!(tid = calloc((size_t)opt.threads, sizeof *tid))) {
        report_error("out of memory");
        return 1;
    }
    for (int t = 0; t < opt.threads; t++) {
        uintptr_t id = (uintptr_t)proc * (uintptr_t)opt.threads + (uintptr_t)t;
        if ((rc = pthread_create(&tid[t], NULL, worker, (void *)id)) != 0) {
            report_error("pthread_create: %s", strerror(rc));
            opt.threads = t;
            break;
        }
    }
    for (int t = 0; t < opt.threads; t++)
        pthread_join(tid[t], NULL);
    if ((rc = dist_mutex_destroy(&mtx)) != 0)
        report_error("dist_mutex_destroy: %s", dist_strerror(rc));
    if ((rc = dist_rwlock_destroy(&rw)) != 0)
        report_error("dist_rwlock_destroy: %s", dist_strerror(rc));
    free(tid);
    return 0;
}

/* --- parent: setup, progress, report --- */

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* nearest-rank percentile of sorted v[0..n) */
static uint32_t pct(const uint32_t *v, size_t n, int p)
{
    if (n == 0)
        return 0;
    size_t k = (n * (size_t)p + 99) / 100;
    return v[k ? k - 1 : 0];
}

struct waits { uint32_t *v; size_t n; };

static void collect_waits(struct waits *inc, struct waits *rd, struct waits *wr,
                          size_t workers)
{
    size_t total = workers * (size_t)opt.ops;
    inc->v = malloc(total * sizeof(uint32_t));
    rd->v = malloc(total * sizeof(uint32_t));
    wr->v = malloc(total * sizeof(uint32_t));
    inc->n = rd->n = wr->n = 0;
    if (!inc->v || !rd->v || !wr->v) {
        fprintf(stderr, "distlock-demo: out of memory\n");
        exit(1);
    }
    /* a worker that stopped early leaves its remaining slots at UINT32_MAX */
    for (size_t w = 0; w < workers; w++)
        for (int i = 0; i < opt.ops; i++) {
            uint32_t x = sh->wait_us[w * (size_t)opt.ops + (size_t)i];
            if (x == UINT32_MAX)
                continue;
            struct waits *dst = (i % 2 == 0) ? inc : is_write((unsigned)w, i) ? wr : rd;
            dst->v[dst->n++] = x;
        }
    qsort(inc->v, inc->n, sizeof(uint32_t), cmp_u32);
    qsort(rd->v, rd->n, sizeof(uint32_t), cmp_u32);
    qsort(wr->v, wr->n, sizeof(uint32_t), cmp_u32);
}

static void print_row(const char *what, const struct waits *w, double secs)
{
    printf("  %-14s %9zu %10.0f %10" PRIu32 " %10" PRIu32 " %10" PRIu32 "\n", what, w->n,
           secs > 0 ? (double)w->n / secs : 0.0, pct(w->v, w->n, 50), pct(w->v, w->n, 99),
           w->n ? w->v[w->n - 1] : 0);
}

static void progress(uint64_t done, uint64_t total, double secs, int tty)
{
    int width = 30, fill = total ? (int)(done * (uint64_t)width / total) : width;
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    printf("%s[%s] %" PRIu64 "/%" PRIu64 " ops  %5.1f s  %8.0f ops/s%s", tty ? "\r" : "",
           bar, done, total, secs, secs > 0 ? (double)done / secs : 0.0, tty ? "  " : "\n");
    fflush(stdout);
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [-p PROCS] [-t THREADS] [-n OPS] [-f] [-q]\n"
            "  -p PROCS    processes (default 4)\n"
            "  -t THREADS  threads per process (default 4)\n"
            "  -n OPS      operations per thread (default 1000): even ones increment a\n"
            "              counter under the mutex, odd ones read or write a record\n"
            "              under the rwlock\n"
            "  -f          fair mutex\n"
            "  -q          no progress line\n"
            "Redis is DISTLOCK_URL (default redis://127.0.0.1:6379).\n",
            argv0);
    exit(2);
}

static int parse_count(const char *s, int max)
{
    char *end;
    long v = strtol(s, &end, 10);
    return (*s && !*end && v >= 1 && v <= max) ? (int)v : -1;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "p:t:n:fqh")) != -1) {
        switch (c) {
        case 'p': opt.procs = parse_count(optarg, 1024); break;
        case 't': opt.threads = parse_count(optarg, 1024); break;
        case 'n': opt.ops = parse_count(optarg, 100000000); break;
        case 'f': opt.fair = 1; break;
        case 'q': opt.quiet = 1; break;
        default: usage(argv[0]);
        }
    }
    if (optind != argc || opt.procs < 1 || opt.threads < 1 || opt.ops < 1)
        usage(argv[0]);

    const char *url = getenv("DISTLOCK_URL");
    if (!url || !*url)
        url = "redis://127.0.0.1:6379";
    if (parse_url(url, &target) != 0) {
        fprintf(stderr, "distlock-demo: cannot parse DISTLOCK_URL\n");
        return 2;
    }
    const char *pw = getenv("DISTLOCK_PASSWORD");
    if (pw && *pw)
        snprintf(target.password, sizeof target.password, "%s", pw);

    size_t workers = (size_t)opt.procs * (size_t)opt.threads;
    size_t slots = workers * (size_t)opt.ops;
    if (slots > (size_t)1 << 28) {
        fprintf(stderr, "distlock-demo: PROCS x THREADS x OPS is too large\n");
        return 2;
    }
    size_t shsize = sizeof(struct shared) + slots * sizeof(uint32_t);
    sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("distlock-demo: mmap");
        return 1;
    }
    memset(sh->wait_us, 0xff, slots * sizeof(uint32_t));

    pid_t me = getpid();
    snprintf(counter_key, sizeof counter_key, "distlock-demo:%d:counter", (int)me);
    snprintf(record_key, sizeof record_key, "distlock-demo:%d:record", (int)me);
    snprintf(mutex_name, sizeof mutex_name, "distlock-demo:%d:mutex", (int)me);
    snprintf(rw_name, sizeof rw_name, "distlock-demo:%d:rwlock", (int)me);

    redisContext *db = data_connect();
    redisReply *r;
    if (!db || !(r = command(db, "SET %s 0", counter_key))) {
        fprintf(stderr, "distlock-demo: %s\n", sh->error);
        return 1;
    }
    freeReplyObject(r);
    if (!(r = command(db, "HSET %s a 0 b 0", record_key))) {
        fprintf(stderr, "distlock-demo: %s\n", sh->error);
        return 1;
    }
    freeReplyObject(r);
    redisFree(db);          /* not carried into the children */

    int tty = isatty(STDOUT_FILENO);
    printf("distlock-demo: %d processes x %d threads x %d ops, %s mutex \"%s\", rwlock \"%s\"\n",
           opt.procs, opt.threads, opt.ops, opt.fair ? "fair" : "plain", mutex_name, rw_name);
    if (target.path[0])
        printf("redis: unix:%s\n", target.path);
    else
        printf("redis: %s:%d\n", target.host, target.port);
    fflush(stdout);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    pid_t *kids = calloc((size_t)opt.procs, sizeof *kids);
    if (!kids) {
        fprintf(stderr, "distlock-demo: out of memory\n");
        return 1;
    }
    uint64_t t0 = now_ns();
    int started = 0;
    for (int p = 0; p < opt.procs; p++) {
        pid_t pid = fork();
        if (pid < 0) {
            report_error("fork: %s", strerror(errno));
            break;
        }
        if (pid == 0) {
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            free(kids);
            exit(child(p));
        }
        kids[p] = pid;
        started++;
    }

    uint64_t total = (uint64_t)slots, last_done = 0, last_change = now_ns();
    uint64_t last_print = tty ? 0 : t0;      /* a pipe gets a line per second, from 1 s on */
    int running = started, failed_kids = 0, stalled = 0;
    uint64_t period = (uint64_t)(tty ? 100 : 1000) * 1000000u;
    while (running > 0) {
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            running--;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                failed_kids++;
        }
        if (running == 0)
            break;
        uint64_t now = now_ns(), done = atomic_load(&sh->done);
        if (done != last_done) {
            last_done = done;
            last_change = now;
        } else if (now - last_change > (uint64_t)STALL_SECONDS * 1000000000u) {
            stalled = 1;
        }
        if (interrupted || stalled) {
            for (int p = 0; p < started; p++)
                kill(kids[p], SIGKILL);
            while (running > 0 && waitpid(-1, &status, 0) > 0)
                running--;
            break;
        }
        if (!opt.quiet && now - last_print >= period) {
            progress(done, total, (double)(now - t0) / 1e9, tty);
            last_print = now;
        }
        usleep(20000);
    }
    double secs = (double)(now_ns() - t0) / 1e9;
    if (!opt.quiet) {
        progress(atomic_load(&sh->done), total, secs, tty);
        if (tty)
            printf("\n");
    }

    /* results */
    long long counter = -1, rec_a = -1, rec_b = -1;
    db = data_connect();
    if (db && (r = command(db, "GET %s", counter_key))) {
        counter = reply_int(r);
        freeReplyObject(r);
    }
    if (db && (r = command(db, "HMGET %s a b", record_key))) {
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
            rec_a = reply_int(r->element[0]);
            rec_b = reply_int(r->element[1]);
        }
        freeReplyObject(r);
    }
    if (db && (r = command(db, "DEL %s %s", counter_key, record_key)))
        freeReplyObject(r);
    if (db)
        redisFree(db);

    struct waits inc, rd, wr;
    collect_waits(&inc, &rd, &wr, workers);
    uint64_t increments = atomic_load(&sh->increments), writes = atomic_load(&sh->writes);
    uint64_t reads = atomic_load(&sh->reads), torn = atomic_load(&sh->torn);
    uint64_t errors = atomic_load(&sh->errors), ownerdead = atomic_load(&sh->ownerdead);
    long long lost_inc = (long long)increments - counter;
    long long lost_wr = (long long)writes - rec_a;
    uint64_t ops = increments + reads + writes;

    printf("\n  %-14s %9s %10s %10s %10s %10s\n", "", "ops", "ops/s", "wait p50", "wait p99",
           "wait max");
    print_row("mutex", &inc, secs);
    print_row("rwlock read", &rd, secs);
    print_row("rwlock write", &wr, secs);
    printf("  %-14s %9" PRIu64 " %10.0f %32s\n", "all", ops, secs > 0 ? (double)ops / secs : 0.0,
           "(waits in microseconds)");
    printf("\n  lost updates   %lld   (counter %lld of %" PRIu64 " increments; record %lld of %"
           PRIu64 " writes)\n", lost_inc + lost_wr, counter, increments, rec_a, writes);
    printf("  torn reads     %" PRIu64 "   (of %" PRIu64 " reads%s)\n", torn, reads,
           rec_a == rec_b ? "" : "; final record torn too");
    if (ownerdead)
        printf("  EOWNERDEAD     %" PRIu64 "   (a hold lapsed instead of being unlocked)\n",
               ownerdead);
    if (errors)
        printf("  errors         %" PRIu64 "   first: %s\n", errors, sh->error);
    if (failed_kids)
        printf("  %d process(es) failed\n", failed_kids);
    if (stalled)
        printf("  no progress for %d s: stopped\n", STALL_SECONDS);
    if (interrupted)
        printf("  interrupted\n");
    if (interrupted || stalled)
        printf("  (operations cut short may be counted on one side only)\n");
    printf("  %.2f s\n", secs);

    int pass = !interrupted && !stalled && !errors && !failed_kids && counter >= 0 &&
               lost_inc == 0 && lost_wr == 0 && torn == 0 && rec_a == rec_b &&
               started == opt.procs && ops == total;
    printf("\n%s\n", pass ? "PASS" : "FAIL");
    free(inc.v);
    free(rd.v);
    free(wr.v);
    free(kids);
    return pass ? 0 : 1;
}
