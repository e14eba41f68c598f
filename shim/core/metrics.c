/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.c - the metrics file (metrics.h).
 *
 * Every interval the writer walks the registry once (its mutex held: a
 * few milliseconds for 100,000 objects, during which no new object is
 * created), adds each object's tally to its name's counts, takes a
 * snapshot before the registry mutex is released, and writes the text
 * from the snapshot without any lock of the objects.  A name's counts are
 * what its objects counted while alive plus what its freed objects had
 * counted (the registry tells us as it frees one, under the same mutex),
 * so they only grow, as a Prometheus counter must, whatever the program
 * creates and destroys.
 *
 * The cap: the first DL_METRICS_NAMES names that count anything get a
 * label of their own, for the life of the process (a name never moves
 * between its own label and "_other", which would make both counters
 * jump); the later ones are summed under name="_other".  So the file
 * has at most DL_METRICS_NAMES + 1 series per family and kind. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dl.h"
#include "keys.h"
#include "metrics.h"
#include "version.h"

/* A name written under its own label. */
typedef struct mslot {
    int kind;
    char *name;
    size_t namelen;
    dl_tally_t retired;       /* what its freed objects counted */
    dl_tally_t live;          /* what its objects count now (this walk) */
} mslot_t;

/* What one walk found, read by the rendering. */
typedef struct msnap {
    int n;
    dl_tally_t t[DL_METRICS_NAMES];
    dl_tally_t other[DL_KINDS];
    int other_used[DL_KINDS];
    unsigned long objects, other_objects;
} msnap_t;

struct dl_metrics {
    pthread_mutex_t wmu;      /* one write at a time (the writer, exit) */
    char path[1100];          /* DISTLOCK_METRICS_FILE, %p expanded */
    char tmp[1200];           /* <dir>/.<base>.<pid>.tmp: same directory */
    int failing;              /* the last write failed (warned at the first) */
    msnap_t snap;             /* under wmu */

    /* Under the registry mutex (the walk, retirements). */
    mslot_t slot[DL_METRICS_NAMES];
    int n;
    dl_tally_t other_retired[DL_KINDS], other_live[DL_KINDS];
    int other_used[DL_KINDS];
    unsigned long objects, other_objects;
};

/* --------------------------------------------------------------- counts */

static unsigned long ld(const unsigned long *x)
{
    return __atomic_load_n(x, __ATOMIC_RELAXED);
}

static void hist_add(dl_hist_t *d, const dl_hist_t *s)
{
    for (int b = 0; b < DL_TALLY_BUCKETS; b++)
        d->n[b] += ld(&s->n[b]);
    d->sum_us += __atomic_load_n(&s->sum_us, __ATOMIC_RELAXED);
}

/* d += s, s read field by field (other threads keep counting). */
static void tally_add(dl_tally_t *d, const dl_tally_t *s)
{
    d->acquired += ld(&s->acquired);
    d->ownerdead += ld(&s->ownerdead);
    d->enolck += ld(&s->enolck);
    d->eio += ld(&s->eio);
    d->lost += ld(&s->lost);
    d->roundtrips += ld(&s->roundtrips);
    d->handoffs += ld(&s->handoffs);
    hist_add(&d->wait, &s->wait);
    hist_add(&d->hold, &s->hold);
}

static int tally_any(const dl_tally_t *t)
{
    return (ld(&t->acquired) | ld(&t->eio) | ld(&t->enolck) | ld(&t->lost) |
            ld(&t->roundtrips) | ld(&t->handoffs)) != 0;
}

/* Registry mutex held: where o's counts go: k + 1 for slot k, -1 for
 * "_other", 0 while o has counted nothing (an idle name takes no slot). */
static int slot_of(dl_metrics_t *m, dl_core_t *o)
{
    dl_tally_t *t = dl_core_tally(o);
    if (!t)                       /* (made before counting started: none) */
        return 0;
    if (t->slot)
        return t->slot;
    if (!tally_any(t))
        return 0;
    int kind = o->kind->id;
    for (int i = 0; i < m->n; i++)
        if (m->slot[i].kind == kind && m->slot[i].namelen == o->namelen &&
            memcmp(m->slot[i].name, dl_core_name(o), o->namelen) == 0)
            return t->slot = i + 1;
    char *name = m->n < DL_METRICS_NAMES ? malloc(o->namelen + 1) : NULL;
    if (!name) {
        m->other_used[kind] = 1;
        return t->slot = -1;
    }
    memcpy(name, dl_core_name(o), o->namelen);     /* (o's is not NUL-ended) */
    name[o->namelen] = 0;
    mslot_t *s = &m->slot[m->n++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->name = name;
    s->namelen = o->namelen;
    return t->slot = m->n;
}

/* The registry frees o (its mutex held): its counts stay its name's. */
static void retire(dl_core_t *o, void *arg)
{
    dl_metrics_t *m = arg;
    int s = slot_of(m, o);
    if (s > 0)
        tally_add(&m->slot[s - 1].retired, dl_core_tally(o));
    else if (s < 0)
        tally_add(&m->other_retired[o->kind->id], dl_core_tally(o));
}

static void count_obj(dl_core_t *o, void *arg)
{
    dl_metrics_t *m = arg;
    m->objects++;
    int s = slot_of(m, o);
    if (s > 0) {
        tally_add(&m->slot[s - 1].live, dl_core_tally(o));
    } else if (s < 0) {
        tally_add(&m->other_live[o->kind->id], dl_core_tally(o));
        m->other_objects++;
    }
}

/* Still under the registry mutex: the snapshot, and the live counts
 * zeroed for the next walk. */
static void walk_end(void *arg)
{
    dl_metrics_t *m = arg;
    msnap_t *sn = &m->snap;
    sn->n = m->n;
    for (int i = 0; i < m->n; i++) {
        memset(&sn->t[i], 0, sizeof sn->t[i]);
        tally_add(&sn->t[i], &m->slot[i].retired);
        tally_add(&sn->t[i], &m->slot[i].live);
        memset(&m->slot[i].live, 0, sizeof m->slot[i].live);
    }
    for (int k = 0; k < DL_KINDS; k++) {
        memset(&sn->other[k], 0, sizeof sn->other[k]);
        tally_add(&sn->other[k], &m->other_retired[k]);
        tally_add(&sn->other[k], &m->other_live[k]);
        memset(&m->other_live[k], 0, sizeof m->other_live[k]);
        sn->other_used[k] = m->other_used[k];
    }
    sn->objects = m->objects;
    sn->other_objects = m->other_objects;
    m->objects = m->other_objects = 0;
}

/* ------------------------------------------------------------- the text */

typedef struct buf {
    char *s;
    size_t len, cap;
    int oom;
} buf_t;

static void grow(buf_t *b, size_t more)
{
    if (b->oom || b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 16384;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return;
    }
    b->s = s;
    b->cap = cap;
}

static void put_bytes(buf_t *b, const char *s, size_t n)
{
    grow(b, n);
    if (b->oom)
        return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void put(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf_t *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        put_bytes(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Length of the valid UTF-8 sequence (2 to 4 bytes) at s, 0 if none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    unsigned cp = c & (0xff >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* A label value from arbitrary bytes (lock names are binary-safe): the
 * format's escapes for '\' and '"', and, so that the value is UTF-8 and
 * every name stays told apart, "%HH" for control bytes, bytes that are no
 * valid UTF-8, '%' itself, and a leading '_' (so that no lock's name
 * reads "_other", the label of the names over the cap). */
static void put_value(buf_t *b, const char *name, size_t len, int is_name)
{
    const unsigned char *s = (const unsigned char *)name;
    for (size_t i = 0; i < len; i++) {
        unsigned c = s[i];
        size_t k;
        if (c == '\\' || c == '"') {
            char e[2] = { '\\', (char)c };
            put_bytes(b, e, 2);
        } else if (c < 0x20 || c == 0x7f || c == '%' || (is_name && i == 0 && c == '_')) {
            put(b, "%%%02X", c);
        } else if (c < 0x80) {
            put_bytes(b, name + i, 1);
        } else if ((k = utf8_seq(s + i, len - i)) != 0) {
            put_bytes(b, name + i, k);
            i += k - 1;
        } else {
            put(b, "%%%02X", c);
        }
    }
}

/* {kind="lock",name="..."} of slot i, or of the kind's "_other" (i < 0),
 * with `extra` (a label, or "") added. */
static void put_labels(buf_t *b, const dl_metrics_t *m, int i, int kind, const char *extra)
{
    put(b, "{kind=\"%s\",name=\"", dl_kind_keys(kind)->what);
    if (i >= 0)
        put_value(b, m->slot[i].name, m->slot[i].namelen, 1);
    else
        put(b, "_other");
    put(b, "\"%s%s}", extra[0] ? "," : "", extra);
}

static const struct {
    const char *name, *help;
    size_t off;
} counters[] = {
    { "distlock_acquisitions_total",
      "Lock calls that returned holding the lock (0 or EOWNERDEAD).",
      offsetof(dl_tally_t, acquired) },
    { "distlock_ownerdead_total",
      "Acquisitions that returned EOWNERDEAD: the previous hold ended by lease expiry.",
      offsetof(dl_tally_t, ownerdead) },
    { "distlock_enolck_total",
      "Unlocks that returned ENOLCK: the hold had lapsed in Redis.",
      offsetof(dl_tally_t, enolck) },
    { "distlock_lost_holds_total",
      "Holds of this process found lapsed while held (each told to dist_onlost's function).",
      offsetof(dl_tally_t, lost) },
    { "distlock_eio_total",
      "Lock and unlock calls that returned EIO: Redis unreachable or failing.",
      offsetof(dl_tally_t, eio) },
    { "distlock_round_trips_total",
      "Round trips the process's threads made for the lock (the watchdog's batched "
      "renewals are counted process-wide).",
      offsetof(dl_tally_t, roundtrips) },
    { "distlock_local_handoffs_total",
      "Holds passed between threads of the process without a round trip.",
      offsetof(dl_tally_t, handoffs) },
};

static const struct {
    const char *name, *help;
    size_t off;
} hists[] = {
    { "distlock_wait_seconds", "Time from a lock call to its return holding the lock.",
      offsetof(dl_tally_t, wait) },
    { "distlock_hold_seconds",
      "Time a thread held the lock, from its first lock call to its last unlock.",
      offsetof(dl_tally_t, hold) },
};

/* One series of each family: a name's (slot >= 0), or a kind's "_other". */
typedef struct series {
    int slot;                 /* -1: the kind's "_other" */
    int kind;
    const dl_tally_t *t;
} series_t;

/* The series of the last walk: each name, then each kind's "_other" once
 * a name of that kind went there.  Returns how many. */
static int list_series(const dl_metrics_t *m, series_t *v)
{
    int n = 0;
    for (int i = 0; i < m->snap.n; i++)
        v[n++] = (series_t){ i, m->slot[i].kind, &m->snap.t[i] };
    for (int k = 0; k < DL_KINDS; k++)
        if (m->snap.other_used[k])
            v[n++] = (series_t){ -1, k, &m->snap.other[k] };
    return n;
}

static void render_counters(buf_t *b, const dl_metrics_t *m, const series_t *v, int n)
{
    for (size_t f = 0; f < sizeof counters / sizeof counters[0]; f++) {
        put(b, "# HELP %s %s\n# TYPE %s counter\n", counters[f].name, counters[f].help,
            counters[f].name);
        for (int i = 0; i < n; i++) {
            put(b, "%s", counters[f].name);
            put_labels(b, m, v[i].slot, v[i].kind, "");
            put(b, " %lu\n", *(const unsigned long *)((const char *)v[i].t + counters[f].off));
        }
    }
}

static void render_hists(buf_t *b, const dl_metrics_t *m, const series_t *v, int n)
{
    for (size_t f = 0; f < sizeof hists / sizeof hists[0]; f++) {
        const char *fam = hists[f].name;
        put(b, "# HELP %s %s\n# TYPE %s histogram\n", fam, hists[f].help, fam);
        for (int i = 0; i < n; i++) {
            const dl_hist_t *h = (const dl_hist_t *)((const char *)v[i].t + hists[f].off);
            unsigned long cum = 0;
            for (int k = 0; k < DL_TALLY_BUCKETS; k++) {
                char le[48];
                if (k < DL_TALLY_BUCKETS - 1)
                    snprintf(le, sizeof le, "le=\"%g\"", (double)dl_tally_le_us[k] / 1e6);
                else
                    snprintf(le, sizeof le, "le=\"+Inf\"");
                cum += h->n[k];
                put(b, "%s_bucket", fam);
                put_labels(b, m, v[i].slot, v[i].kind, le);
                put(b, " %lu\n", cum);
            }
            put(b, "%s_sum", fam);
            put_labels(b, m, v[i].slot, v[i].kind, "");
            put(b, " %.6f\n", (double)h->sum_us / 1e6);
            put(b, "%s_count", fam);
            put_labels(b, m, v[i].slot, v[i].kind, "");
            put(b, " %lu\n", cum);
        }
    }
}

static void render_process(buf_t *b, const dl_proc_t *p, const dl_metrics_t *m)
{
    dl_stats_t s;
    dl_stats_get(&s);
    static const struct {
        const char *name, *help;
        size_t off;
    } procs[] = {
        { "distlock_reconnects_total", "Reconnections of the command and subscriber connections.",
          offsetof(dl_stats_t, reconnects) },
        { "distlock_process_round_trips_total",
          "Round trips on the command connections, for every lock and the watchdog.",
          offsetof(dl_stats_t, roundtrips) },
        { "distlock_watchdog_round_trips_total", "Round trips of the watchdog's renewals.",
          offsetof(dl_stats_t, watchdog_roundtrips) },
        { "distlock_watchdog_renewals_late_total",
          "Renewals the watchdog sent with less than a third of their hold's lease left: it "
          "fell behind (Redis, or this process, did not keep up), and renewed first the holds "
          "that expire first.",
          offsetof(dl_stats_t, renewals_late) },
        { "distlock_watchdog_passes_behind_total",
          "Watchdog passes over every hold that took longer than a tick (a third of the lease).",
          offsetof(dl_stats_t, watchdog_behind) },
        { "distlock_trust_ends_total",
          "Signs that Redis may have lost state (a dropped connection, a failover, a break).",
          offsetof(dl_stats_t, trust_ends) },
    };
    for (size_t f = 0; f < sizeof procs / sizeof procs[0]; f++)
        put(b, "# HELP %s %s\n# TYPE %s counter\n%s %lu\n", procs[f].name, procs[f].help,
            procs[f].name, procs[f].name,
            *(const unsigned long *)((const char *)&s + procs[f].off));
    put(b, "# HELP distlock_names Lock names (objects of each kind and name) the process "
        "has now.\n# TYPE distlock_names gauge\ndistlock_names %lu\n", m->snap.objects);
    put(b, "# HELP distlock_names_other Of which counted under name=\"_other\" (over the "
        "cap of %d names).\n# TYPE distlock_names_other gauge\ndistlock_names_other %lu\n",
        DL_METRICS_NAMES, m->snap.other_objects);
    put(b, "# HELP distlock_process_info The process that writes this file.\n"
        "# TYPE distlock_process_info gauge\ndistlock_process_info{host=\"");
    put_value(b, p->host, strlen(p->host), 0);
    put(b, "\",pid=\"%d\",version=\"%s\"} 1\n", (int)p->pid, DL_VERSION_STRING);
}

/* wmu held: walks the objects and renders the text into b. */
static void render(dl_proc_t *p, buf_t *b)
{
    dl_metrics_t *m = p->metrics;
    dl_registry_walk(&p->reg, count_obj, walk_end, m);
    series_t v[DL_METRICS_NAMES + DL_KINDS];
    int n = list_series(m, v);
    render_counters(b, m, v, n);
    render_hists(b, m, v, n);
    render_process(b, p, m);
}

char *dl_metrics_render(dl_proc_t *p, size_t *len)
{
    if (!p->metrics)
        return NULL;
    buf_t b = { 0 };
    pthread_mutex_lock(&p->metrics->wmu);
    render(p, &b);
    pthread_mutex_unlock(&p->metrics->wmu);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    *len = b.len;
    return b.s;
}

/* ------------------------------------------------------------- the file */

/* Writes text to m->tmp, then renames it over m->path: a reader sees the
 * old file or the new one, never a part.  0, or -1 with err set. */
static int write_file(dl_metrics_t *m, const char *text, size_t len, char *err, size_t errlen)
{
    int fd = open(m->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", m->tmp, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", m->tmp, w < 0 ? strerror(errno) : "no space");
            close(fd);
            unlink(m->tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (close(fd) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", m->tmp, strerror(errno));
        unlink(m->tmp);
        return -1;
    }
    if (rename(m->tmp, m->path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", m->tmp, m->path, strerror(errno));
        unlink(m->tmp);
        return -1;
    }
    return 0;
}

static void write_now(dl_proc_t *p)
{
    dl_metrics_t *m = p->metrics;
    buf_t b = { 0 };
    char err[2600];           /* two paths and a reason */
    pthread_mutex_lock(&m->wmu);
    render(p, &b);
    int rc = -1;
    if (b.oom)
        snprintf(err, sizeof err, "out of memory");
    else
        rc = write_file(m, b.s, b.len, err, sizeof err);
    /* A missing or unwritable directory: one warning, and the next writes
     * are tried quietly (the directory may come). */
    if (rc && !m->failing)
        dl_log(DL_LOG_WARN, "DISTLOCK_METRICS_FILE: %s; metrics are not written (tried again "
               "every %lu ms, quietly)", err, p->cfg.metrics_interval_ms);
    else if (!rc && m->failing)
        dl_log(DL_LOG_INFO, "DISTLOCK_METRICS_FILE: %s written again", m->path);
    m->failing = rc != 0;
    pthread_mutex_unlock(&m->wmu);
    free(b.s);
}

static void *writer_main(void *arg)
{
    dl_proc_t *p = arg;
    for (;;) {
        write_now(p);
        dl_sleep_ms((unsigned)p->cfg.metrics_interval_ms);
    }
    return NULL;
}

/* "%p" in the path is the process id (each process of a program that
 * forks writes a file of its own), "%%" a '%'. */
static void expand(const char *in, char *out, size_t size, pid_t pid)
{
    size_t o = 0;
    for (const char *c = in; *c && o + 1 < size; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            o += (size_t)snprintf(out + o, size - o, "%d", (int)pid);
            c++;
        } else if (c[0] == '%' && c[1] == '%') {
            out[o++] = '%';
            c++;
        } else {
            out[o++] = *c;
        }
        if (o >= size)
            o = size - 1;
    }
    out[o] = 0;
}

void dl_metrics_start(dl_proc_t *p)
{
    dl_metrics_t *m = calloc(1, sizeof *m);
    if (!m) {
        dl_log(DL_LOG_WARN, "DISTLOCK_METRICS_FILE: out of memory; metrics are not written");
        return;
    }
    pthread_mutex_init(&m->wmu, NULL);
    expand(p->cfg.metrics_file, m->path, sizeof m->path, p->pid);
    /* The temporary file is in the same directory (rename is atomic only
     * within one file system) and hidden, without the .prom ending that a
     * textfile collector reads. */
    const char *slash = strrchr(m->path, '/');
    int dirlen = slash ? (int)(slash - m->path + 1) : 0;
    snprintf(m->tmp, sizeof m->tmp, "%.*s.%s.%d.tmp", dirlen, m->path,
             slash ? slash + 1 : m->path, (int)p->pid);
    p->metrics = m;
    p->reg.retire = retire;
    p->reg.retire_arg = m;
    __atomic_store_n(&dl_tally_enabled, 1, __ATOMIC_RELAXED);
    if (dl_thread_start(writer_main, p) != 0)
        dl_log(DL_LOG_WARN, "DISTLOCK_METRICS_FILE: cannot start the thread that writes it; "
               "it is written only at exit");
}

void dl_metrics_flush(dl_proc_t *p)
{
    if (p->metrics)
        write_now(p);
}
