/* SPDX-License-Identifier: BSD-3-Clause */
/* keeper.c - the keeper of file locks held across exec (keeper.h).
 *
 * flock -F, chpst -l, setlock and lckdo -e take a file lock and exec the
 * command, which then holds the lock: the kernel keeps a file lock across
 * exec, but the distributed hold belonged to the launcher's image, whose
 * threads (the library's renewals among them) end with it.  So the exec
 * wrappers (wrap_exec.c) hand each hold to a keeper first: a process
 * forked twice (a session of its own, so the terminal's signals and the
 * command's wait() never see it), which
 *   1. waits until the launcher's image is gone: the launcher's end of a
 *      socket pair is close-on-exec, so the keeper reads EOF when the exec
 *      happened (or the launcher ended); until then the launcher renews
 *      its holds itself, and an exec that fails (chpst and setlock try
 *      each directory of PATH) only sends the holds again;
 *   2. then renews each hold with the launcher's process token, which
 *      names the holder in Redis, and its fence, which names the hold
 *      (lua/renew.lua, as the watchdog does), every lease/3;
 *   3. and releases it (lua/release.lua) as soon as the process (the
 *      same pid after exec) no longer holds its file lock: it ended
 *      (its pidfd), unlocked or closed it (/proc/locks, looked at every
 *      CHECK_MS, or at once when the program says so: kept.c), or locks
 *      it itself (kept.c: it is then the program's own hold).
 * A hold found lapsed while the file lock is still held is told as a
 * loss (DISTLOCK_ON_LOSS).  The keeper ends when it has no hold left.
 * It works the same whatever the command is: statically linked, setuid,
 * or with the interposer. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dl.h"
#include "call_release.h"
#include "call_renew.h"
#include "lock.h"
#include "object.h"
#include "preload.h"
#include "process.h"

#define CHECK_MS 100              /* how often the file locks are looked at */
#define MAX_TICKETS 256
#define WIRE_MAGIC 0x444c4b50u    /* "DLKP" */

/* One message on the socket: this header, then n tickets. */
typedef struct wire {
    uint32_t magic;
    uint32_t n;
    pid_t pid;                    /* the launcher: the process the holds are for */
} wire_t;

/* ------------------------------------------------- the launcher's side */

static int sock = -1;             /* to the keeper of this process; -1: none */
static pid_t keeper_pid;

int dlp_keeper_tickets(dlp_ticket_t *t, int max)
{
    dlp_filehold_t h[MAX_TICKETS];
    int n = dlp_file_holds(h, max < MAX_TICKETS ? max : MAX_TICKETS), k = 0;
    for (int i = 0; i < n; i++) {
        dl_proc_t *p;
        dl_lock_t *l;
        if (dl_obj_resolve(&DLP_OBJ(h[i].e, dist_rwlock_t)->dl_o, DL_MAGIC_RWLOCK, &p, &l))
            continue;
        dl_core_t *o = &l->core;
        dlp_ticket_t *x = &t[k];
        memset(x, 0, sizeof *x);
        x->e = h[i].e;
        x->lkind = h[i].kind;
        x->fd = h[i].fd;
        x->dev = h[i].dev;
        x->ino = h[i].ino;
        pthread_mutex_lock(&o->mu);
        int held = o->hold.rmode != 0;
        x->mode = o->hold.rmode;
        x->fence = o->hold.fence;
        x->rid = o->hold.rid;
        x->servers = o->hold.servers;
        x->lease_ms = o->hold.lease_ms;
        x->told = o->hold.od_told;
        pthread_mutex_unlock(&o->mu);
        snprintf(x->token, sizeof x->token, "%s", p->token);
        k += held;
    }
    return k;
}

static int send_all(int fd, const void *buf, size_t len)
{
    const char *b = buf;
    while (len) {
        ssize_t w = send(fd, b, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        len -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
    char *b = buf;
    while (len) {
        ssize_t r = read(fd, b, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        len -= (size_t)r;
    }
    return 0;
}

static void keeper_main(int fd) __attribute__((noreturn));

/* Starts a keeper: 0 with sock and keeper_pid set, or an errno value. */
static int start(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        return dl_fail(errno, "socketpair: %s", strerror(errno));
    pid_t c1 = fork();
    if (c1 < 0) {
        int err = errno;
        DLP_REAL(close)(sv[0]);
        DLP_REAL(close)(sv[1]);
        return dl_fail(err, "fork: %s", strerror(err));
    }
    if (c1 == 0) {
        /* The first child: a session of its own for the keeper, which
         * sends its pid once it is named (kept.c knows a keeper by its
         * name: it must have it before the command starts). */
        DLP_REAL(close)(sv[0]);
        setsid();
        pid_t k = fork();
        if (k == 0)
            keeper_main(sv[1]);
        _exit(k > 0 ? 0 : 1);
    }
    DLP_REAL(close)(sv[1]);
    int st = 0;
    while (waitpid(c1, &st, 0) < 0 && errno == EINTR)
        ;
    pid_t k = 0;
    if (read_all(sv[0], &k, sizeof k) || k <= 0) {
        DLP_REAL(close)(sv[0]);
        return dl_fail(EAGAIN, "fork: the keeper did not start");
    }
    sock = sv[0];
    keeper_pid = k;
    return 0;
}

int dlp_keeper_hand(const dlp_ticket_t *t, int n, pid_t *keeper)
{
    wire_t w = { WIRE_MAGIC, (uint32_t)n, getpid() };
    for (int attempt = 0; attempt < 2; attempt++) {
        if (sock < 0) {
            int rc = start();
            if (rc)
                return rc;
        }
        if (send_all(sock, &w, sizeof w) == 0 && send_all(sock, t, sizeof *t * (size_t)n) == 0) {
            *keeper = keeper_pid;
            return 0;
        }
        /* That keeper is gone (killed): another one. */
        DLP_REAL(close)(sock);
        sock = -1;
    }
    return dl_fail(EAGAIN, "the keeper ended before it had the holds");
}

void dlp_keeper_after_fork(void)
{
    if (sock >= 0)
        DLP_REAL(close)(sock);
    sock = -1;
}

/* --------------------------------------------------- the keeper's side */

typedef struct held {
    dlp_ticket_t t;
    int live;                     /* still renewed; released when it ends */
    dl_core_t *o;                 /* the lock, as this process resolves it */
    uint64_t warned;              /* last outage warning (dl_now_ms) */
} held_t;

static held_t *held;
static int nheld;
static pid_t prog;                /* the process the holds are for */
static int progfd = -1;           /* its pidfd */

/* Has the program ended? */
static int ended(void)
{
    if (progfd < 0)
        return kill(prog, 0) != 0 && errno == ESRCH;
    struct pollfd pf = { progfd, POLLIN, 0 };
    return poll(&pf, 1, 0) > 0;
}

/* Marks, in still[], the holds whose file lock the program holds (or,
 * OFD locks, anyone holds: they name no process): /proc/locks, lines
 * "N: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INO START END". */
static void look(int *still)
{
    for (int i = 0; i < nheld; i++)
        still[i] = 0;
    FILE *f = fopen("/proc/locks", "re");
    if (!f) {
        for (int i = 0; i < nheld; i++)
            still[i] = 1;                 /* cannot tell: until the program ends */
        return;
    }
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char type[16];
        long pid;
        unsigned maj, min;
        unsigned long long ino;
        if (strstr(line, "->") ||
            sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", type, &pid, &maj, &min, &ino) != 5)
            continue;
        for (int i = 0; i < nheld; i++) {
            const dlp_ticket_t *t = &held[i].t;
            const char *want = t->lkind == DLP_FL_FLOCK ? "FLOCK"
                               : t->lkind == DLP_FL_POSIX ? "POSIX" : "OFDLCK";
            if (strcmp(type, want) == 0 && maj == major(t->dev) && min == minor(t->dev) &&
                ino == (unsigned long long)t->ino && (t->lkind == DLP_FL_OFD || pid == prog))
                still[i] = 1;
        }
    }
    fclose(f);
}

static dl_caller_t caller(dl_proc_t *p, held_t *h)
{
    dl_caller_t who = dl_caller(p, h->o);
    who.token = h->t.token;
    return who;
}

static void release(dl_proc_t *p, held_t *h)
{
    h->live = 0;
    if (!h->o)
        return;
    dl_release_args_t ra = { .mode = h->t.mode, .fence = h->t.fence, .rid = h->t.rid,
                             .servers = h->t.servers, .lease_ms = h->t.lease_ms,
                             .told = h->t.told };
    dl_caller_t who = caller(p, h);
    dl_call_t *c = calloc(1, sizeof *c);
    if (!c)
        return;                           /* it lapses within a lease */
    h->o->kind->calls->release(c, &who, &ra);
    int rc = dl_script_run(p->conn, c, 1);
    dl_log(DL_LOG_DEBUG, "preload: keeper: lock \"%s\" (fence %llu) released for pid %d: %s",
           h->t.e->name, (unsigned long long)h->t.fence, (int)prog,
           rc ? c->cmd.errmsg : DL_REPLY(c, release).result == 1 ? "released" : "not held");
    free(c);
}

/* The hold is gone from Redis while the program still holds the file. */
static void lost(held_t *h)
{
    char line[600];
    snprintf(line, sizeof line, "lock \"%.200s\": the distributed hold (fence %llu) kept for pid "
             "%d across exec was found lapsed in Redis while the file stayed locked; another "
             "process may hold the lock now", h->t.e->name, (unsigned long long)h->t.fence,
             (int)prog);
    int sig = dlp_on_loss == DLP_ON_LOSS_ABORT ? SIGABRT
              : dlp_on_loss == DLP_ON_LOSS_EXIT ? SIGTERM : 0;
    if (!sig) {
        dlp_say("%s; the program goes on (DISTLOCK_ON_LOSS=warn)", line);
        return;
    }
    dlp_say("%s; pid %d is sent %s (DISTLOCK_ON_LOSS=%s)", line, (int)prog,
            sig == SIGABRT ? "SIGABRT" : "SIGTERM", sig == SIGABRT ? "abort" : "exit");
    if (progfd >= 0)
        syscall(SYS_pidfd_send_signal, progfd, sig, NULL, 0);
}

/* Renews every live hold in one batch. */
static void renew(dl_proc_t *p, dl_call_t *calls, int *idx)
{
    int n = 0;
    for (int i = 0; i < nheld; i++) {
        held_t *h = &held[i];
        if (!h->live || !h->o)
            continue;
        dl_caller_t who = caller(p, h);
        h->o->kind->calls->renew(&calls[n], &who, &(dl_renew_args_t){
            .mode = h->t.mode, .lease_ms = h->t.lease_ms, .fence = h->t.fence });
        idx[n++] = i;
    }
    if (!n)
        return;
    dl_script_run(p->conn, calls, n);
    int still[MAX_TICKETS];
    int looked = 0;
    for (int k = 0; k < n; k++) {
        held_t *h = &held[idx[k]];
        if (calls[k].cmd.err) {
            uint64_t now = dl_now_ms();
            if (!h->warned || now - h->warned >= 5000) {
                h->warned = now ? now : 1;
                dlp_say("lock \"%s\": cannot renew the hold kept for pid %d across exec: %s; "
                        "trying again", h->t.e->name, (int)prog, calls[k].cmd.errmsg);
            }
            continue;
        }
        if (h->warned) {
            dlp_say("lock \"%s\": Redis reachable again", h->t.e->name);
            h->warned = 0;
        }
        if (DL_REPLY(&calls[k], renew).held == 1)
            continue;
        /* Gone: a loss, unless the file lock has ended meanwhile. */
        if (!looked) {
            look(still);
            looked = 1;
        }
        h->live = 0;
        if (still[idx[k]] && !ended())
            lost(h);
    }
}

/* Releases what the program no longer holds. */
static void check(dl_proc_t *p)
{
    int still[MAX_TICKETS];
    int gone = ended();
    if (!gone)
        look(still);
    for (int i = 0; i < nheld; i++)
        if (held[i].live && (gone || !still[i]))
            release(p, &held[i]);
}

static int any_live(void)
{
    for (int i = 0; i < nheld; i++)
        if (held[i].live)
            return 1;
    return 0;
}

/* Reads the launcher's messages until EOF; the last set is the one. */
static void receive(int fd)
{
    wire_t w;
    while (read_all(fd, &w, sizeof w) == 0) {
        if (w.magic != WIRE_MAGIC || w.n > MAX_TICKETS)
            _exit(1);
        held_t *v = calloc(w.n ? w.n : 1, sizeof *v);
        if (!v)
            _exit(1);
        for (uint32_t i = 0; i < w.n; i++) {
            if (read_all(fd, &v[i].t, sizeof v[i].t))
                _exit(1);
            v[i].live = 1;
        }
        free(held);
        held = v;
        nheld = (int)w.n;
        prog = w.pid;
    }
}

static void keeper_main(int fd)
{
    dlp_in = 1;                       /* all of this process is interposer code */
    prctl(PR_SET_NAME, DLP_KEEPER_COMM, 0, 0, 0);
    pid_t me = getpid();
    if (send_all(fd, &me, sizeof me))
        _exit(1);
    /* Its own session already: nothing of the terminal's; the program's
     * end, not a signal, ends it (SIGKILL aside). */
    int ign[] = { SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU };
    for (size_t i = 0; i < sizeof ign / sizeof ign[0]; i++)
        signal(ign[i], SIG_IGN);
    /* Nothing of the launcher's open but the socket (not the locked files:
     * a copy of an flock description would keep its lock alive; not the
     * command's pipes); stderr stays, for what it has to say. */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    if (fd != 3) {
        dup3(fd, 3, O_CLOEXEC);
        fd = 3;
    }
    syscall(SYS_close_range, 4, ~0U, 0);

    receive(fd);
    DLP_REAL(close)(fd);
    if (!nheld || !prog)
        _exit(0);

    /* The launcher's image is gone. */
    progfd = (int)syscall(SYS_pidfd_open, prog, 0);
    sigset_t usr;
    sigemptyset(&usr);
    sigaddset(&usr, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr, NULL);
    int sfd = signalfd(-1, &usr, SFD_CLOEXEC | SFD_NONBLOCK);

    int err = 0;
    dl_proc_t *p = dl_proc_get(&err);
    dl_call_t *calls = calloc((size_t)nheld, sizeof *calls);
    int *idx = calloc((size_t)nheld, sizeof *idx);
    if (!p || !calls || !idx) {
        dlp_say("keeper for pid %d: %s: its holds lapse within a lease", (int)prog,
                p ? "out of memory" : dist_lasterror());
        _exit(1);
    }
    unsigned long every = 0;
    for (int i = 0; i < nheld; i++) {
        dl_lock_t *l;
        dl_proc_t *q;
        if (dl_obj_resolve(&DLP_OBJ(held[i].t.e, dist_rwlock_t)->dl_o, DL_MAGIC_RWLOCK, &q, &l) == 0)
            held[i].o = &l->core;
        unsigned long third = held[i].t.lease_ms / 3;
        if (third && (!every || third < every))
            every = third;
    }
    if (!every)
        every = 1000;

    /* The launcher's last renewal may be a third of a lease old: renew
     * now, then look. */
    renew(p, calls, idx);
    check(p);
    uint64_t next_renew = dl_now_ms() + every;
    while (any_live()) {
        uint64_t now = dl_now_ms();
        int wait = next_renew > now ? (int)(next_renew - now) : 0;
        if (wait > CHECK_MS)
            wait = CHECK_MS;
        struct pollfd pf[2] = { { progfd, POLLIN, 0 }, { sfd, POLLIN, 0 } };
        poll(pf, 2, wait);
        struct signalfd_siginfo si;
        while (sfd >= 0 && read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            /* The program locks the file itself (an index): let go now. */
            int v = si.ssi_int;
            if ((pid_t)si.ssi_pid == prog && v >= 0 && v < nheld && held[v].live)
                release(p, &held[v]);
        }
        check(p);
        if (dl_now_ms() >= next_renew) {
            renew(p, calls, idx);
            next_renew = dl_now_ms() + every;
        }
    }
    _exit(0);
}
