/* SPDX-License-Identifier: BSD-3-Clause */
/* harness_mode.c - the topology a suite runs in (harness_mode.h). */
#include "harness_mode.h"
#include "keys.h"

#include <string.h>

int tm_mode = TM_SINGLE;
const char *tm_mode_name = "single";

static th_server_t g_srv;             /* single, tls; sentinel: the master */
static th_server_t g_replica;
static tt_sentinels_t g_st;
static tt_cluster_t g_cl;
static th_server_t g_rl[3];
static char g_url[600], g_ca[400], g_cert[400], g_key[400];
static const char *g_env[10];

void tm_pick(const char *var)
{
    static const char *const names[TM_MODES] = { "single", "sentinel", "cluster", "tls",
                                                 "redlock" };
    const char *m = getenv(var);
    if (!m || !*m)
        return;
    for (int i = 0; i < TM_MODES; i++)
        if (strcmp(m, names[i]) == 0) {
            tm_mode = i;
            tm_mode_name = names[i];
            return;
        }
    fprintf(stderr, "%s=%s: single, sentinel, cluster, tls or redlock\n", var, m);
    exit(2);
}

static int make_certs(const char *dir)
{
    static const char script[] =
        "set -e\n"
        "printf '[srv]\\nsubjectAltName=IP:127.0.0.1,DNS:localhost\\n[cli]\\n"
        "extendedKeyUsage=clientAuth\\n' > ext.cnf\n"
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
        "-subj /CN=distlock-mode-ca -days 2\n"
        "for c in srv cli; do openssl req -newkey rsa:2048 -nodes -keyout $c.key -out $c.csr "
        "-subj /CN=$c; openssl x509 -req -in $c.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-days 2 -extfile ext.cnf -extensions $c -out $c.pem; done\n";
    char cmd[1500];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s", dir, script);
    const char *argv[] = { "sh", "-c", cmd, NULL };
    char *out = NULL;
    int rc = tt_run(argv, 60000, &out);
    if (rc)
        fprintf(stderr, "harness_mode: making certificates failed (%d): %s\n", rc,
                out ? out : "");
    free(out);
    return rc;
}

int tm_group_setup(void **state)
{
    (void)state;
    tt_alarm(120);
    int n = 0;
    char u[560];
    switch (tm_mode) {
    case TM_SINGLE:
        if (tt_server_start(&g_srv, NULL))
            return -1;
        snprintf(u, sizeof u, "redis://127.0.0.1:%d", g_srv.port);
        break;
    case TM_SENTINEL:
        if (tt_server_start(&g_srv, NULL) || tt_replica_start(&g_replica, g_srv.port) ||
            tt_sentinels_start(&g_st, 3, "modemaster", g_srv.port, 2, 1))
            return -1;
        tt_sentinel_url(&g_st, u, sizeof u);
        break;
    case TM_CLUSTER:
        if (tt_cluster_start(&g_cl))
            return -1;
        tt_cluster_url(&g_cl, 3, u, sizeof u);
        break;
    case TM_TLS: {
        const char *dir = tt_dir();
        if (make_certs(dir))
            return -1;
        char c[400], k[400], ca[400];
        snprintf(c, sizeof c, "%s/srv.pem", dir);
        snprintf(k, sizeof k, "%s/srv.key", dir);
        snprintf(ca, sizeof ca, "%s/ca.pem", dir);
        snprintf(g_ca, sizeof g_ca, "DISTLOCK_TLS_CA_FILE=%s/ca.pem", dir);
        snprintf(g_cert, sizeof g_cert, "DISTLOCK_TLS_CERT_FILE=%s/cli.pem", dir);
        snprintf(g_key, sizeof g_key, "DISTLOCK_TLS_KEY_FILE=%s/cli.key", dir);
        tt_tls_use(c, k, ca);
        if (tt_server_start(&g_srv, NULL))
            return -1;
        snprintf(u, sizeof u, "rediss://127.0.0.1:%d", g_srv.tls_port);
        g_env[n++] = g_ca;
        g_env[n++] = g_cert;
        g_env[n++] = g_key;
        break;
    }
    case TM_REDLOCK:
        for (int i = 0; i < 3; i++)
            if (tt_server_start(&g_rl[i], NULL))
                return -1;
        snprintf(u, sizeof u, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", g_rl[0].port,
                 g_rl[1].port, g_rl[2].port);
        break;
    }
    snprintf(g_url, sizeof g_url, "DISTLOCK_URL=%s", u);
    g_env[n++] = g_url;
    g_env[n++] = "DISTLOCK_IO_TIMEOUT_MS=3000";
    g_env[n++] = "DISTLOCK_LOG=error";
    g_env[n] = NULL;
    alarm(0);
    return 0;
}

const char *const *tm_env(void)
{
    return g_env;
}

th_server_t *tm_server(void)
{
    return tm_mode == TM_SINGLE || tm_mode == TM_TLS ? &g_srv : NULL;
}

int tm_key_port(const char *key, size_t len)
{
    switch (tm_mode) {
    case TM_CLUSTER: {
        static int map[16384];
        if (tt_cluster_slot_map(&g_cl, 0, map))
            return -1;
        return map[tt_key_slot(key, len)];
    }
    case TM_REDLOCK:
        return -1;
    default:
        return g_srv.port;
    }
}

size_t tm_key(char *buf, size_t size, int kind, const char *name, int which)
{
    const char *prefix = "distlock:";
    size_t len = strlen(name);
    char *all = malloc(dl_kind_keys_size(kind, prefix, len));
    const char *keys[DL_KEYS_MAX];
    size_t lens[DL_KEYS_MAX];
    if (!all)
        return 0;
    dl_kind_keys_write(kind, all, prefix, name, len, keys, lens);
    size_t n = lens[which] < size ? lens[which] : size - 1;
    memcpy(buf, keys[which], n);
    buf[n] = 0;
    free(all);
    return n;
}
