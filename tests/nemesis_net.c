/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis_net.c - network namespaces for the nemesis's partitions: one
 * namespace per client (a client enters its own before its first lock
 * call), joined to the machine's by a veth pair with a /30 of its own;
 * the lock server listens on 127.0.0.1 and on the machine's end of every
 * pair.  A partition is nftables rules inside the client's namespace
 * (input from the server, output to it, or both), so nothing outside the
 * namespaces the test made is touched; healing flushes them.
 *
 * Names carry the test's pid (namespace nm<pid>-<k>, links nmr<pid>_<k> and
 * nmc<pid>_<k>), the addresses are 10.X.Y.(4k+1)/(4k+2) with X.Y from the
 * pid, so concurrent runs never meet.  Everything is removed at the end
 * of the run, at exit, and, for runs killed before they could, by the next
 * run (namespaces of pids that no longer exist).
 */
#include "nemesis_int.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NM_NET_MAX 8

struct nm_net {
    int n;
    int pid;
    char ns[NM_NET_MAX][32];
    char host[NM_NET_MAX][24];      /* the machine's end: the server's address */
    char link[NM_NET_MAX][24];
    int cut[NM_NET_MAX];
    char bind[NM_NET_MAX * 24 + 16];
};

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[1100];
    snprintf(full, sizeof full, "%s >/dev/null 2>&1", cmd);
    int st = system(full);
    return st == 0 ? 0 : -1;
}

/* Namespaces left by runs that were killed before they removed them. */
static void sweep(void)
{
    DIR *d = opendir("/run/netns");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = 0, k = 0;
        if (sscanf(e->d_name, "nm%d-%d", &pid, &k) != 2 || pid <= 0)
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        sh("ip link del nmr%d_%d", pid, k);
        sh("ip netns del %s", e->d_name);
    }
    closedir(d);
}

static nm_net_t *live_net;

static void at_exit(void)
{
    if (live_net && live_net->pid == (int)getpid())
        nm_net_teardown(live_net);
}

nm_net_t *nm_net_setup(int n, char *why, size_t whysize)
{
    if (geteuid() != 0) {
        snprintf(why, whysize, "not root: network namespaces need CAP_NET_ADMIN");
        return NULL;
    }
    if (sh("ip -V") || sh("nft --version")) {
        snprintf(why, whysize, "ip (iproute2) or nft (nftables) missing: tools/deps.sh --test");
        return NULL;
    }
    sweep();
    nm_net_t *net = calloc(1, sizeof *net);
    if (!net)
        return NULL;
    net->pid = (int)getpid();
    net->n = n < NM_NET_MAX ? n : NM_NET_MAX;
    int x = 100 + net->pid % 100, y = (net->pid / 100) % 250;
    size_t o = (size_t)snprintf(net->bind, sizeof net->bind, "127.0.0.1");
    for (int k = 0; k < net->n; k++) {
        snprintf(net->ns[k], sizeof net->ns[k], "nm%d-%d", net->pid, k);
        snprintf(net->link[k], sizeof net->link[k], "nmr%d_%d", net->pid, k);
        snprintf(net->host[k], sizeof net->host[k], "10.%d.%d.%d", x, y, 4 * k + 1);
        if (sh("ip netns add %s", net->ns[k]) ||
            sh("ip link add %s type veth peer name nmc%d_%d netns %s", net->link[k], net->pid, k, net->ns[k]) ||
            sh("ip addr add %s/30 dev %s", net->host[k], net->link[k]) ||
            sh("ip link set %s up", net->link[k]) ||
            sh("ip -n %s addr add 10.%d.%d.%d/30 dev nmc%d_%d", net->ns[k], x, y, 4 * k + 2, net->pid, k) ||
            sh("ip -n %s link set nmc%d_%d up", net->ns[k], net->pid, k) ||
            sh("ip -n %s link set lo up", net->ns[k]) ||
            sh("ip netns exec %s nft 'add table inet nm; "
               "add chain inet nm in { type filter hook input priority 0; policy accept; }; "
               "add chain inet nm out { type filter hook output priority 0; policy accept; }'", net->ns[k])) {
            snprintf(why, whysize, "could not make namespace %s and its veth pair (ip, nft)", net->ns[k]);
            net->n = k + 1;
            nm_net_teardown(net);
            return NULL;
        }
        o += (size_t)snprintf(net->bind + o, sizeof net->bind - o, " %s", net->host[k]);
    }
    live_net = net;
    static int registered;
    if (!registered) {
        atexit(at_exit);
        registered = 1;
    }
    return net;
}

void nm_net_teardown(nm_net_t *net)
{
    if (!net)
        return;
    for (int k = 0; k < net->n; k++) {
        sh("ip link del %s", net->link[k]);
        sh("ip netns del %s", net->ns[k]);
    }
    if (live_net == net)
        live_net = NULL;
    free(net);
}

int nm_net_count(const nm_net_t *net)
{
    return net->n;
}

const char *nm_net_bind(const nm_net_t *net)
{
    return net->bind;
}

const char *nm_net_server(const nm_net_t *net, int k)
{
    return net->host[k];
}

void nm_net_ns_path(const nm_net_t *net, int k, char *buf, size_t size)
{
    snprintf(buf, size, "/run/netns/%s", net->ns[k]);
}

int nm_net_cut(nm_net_t *net, int k, int dir)
{
    int rc = 0;
    if (dir & 1)
        rc |= sh("ip netns exec %s nft add rule inet nm in ip saddr %s drop", net->ns[k], net->host[k]);
    if (dir & 2)
        rc |= sh("ip netns exec %s nft add rule inet nm out ip daddr %s drop", net->ns[k], net->host[k]);
    net->cut[k] = dir;
    return rc;
}

int nm_net_is_cut(const nm_net_t *net, int k)
{
    return net->cut[k] != 0;
}

int nm_net_heal(nm_net_t *net, int k)
{
    net->cut[k] = 0;
    return sh("ip netns exec %s nft flush table inet nm", net->ns[k]);
}
