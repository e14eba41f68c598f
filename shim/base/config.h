/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.h - the environment, read into one validated struct (config.c).
 *
 * config.c keeps no state but the checks registered from above
 * (dl_config_add_check): the struct is its caller's (the process's copy
 * is dl_proc_t.cfg, read once when the process state is created).
 */
#ifndef DL_CONFIG_H
#define DL_CONFIG_H

#include <stddef.h>

#define DL_MAX_ENDPOINTS 16

enum dl_scheme {
    DL_SCHEME_REDIS,          /* redis://: one server */
    DL_SCHEME_UNIX,           /* unix://: one server */
    DL_SCHEME_SENTINEL,       /* redis-sentinel://: ep are sentinels; master below */
    DL_SCHEME_CLUSTER,        /* redis-cluster://: ep are seed nodes */
    DL_SCHEME_REDLOCK,        /* redlock://: ep are independent masters, quorum */
};

typedef struct dl_endpoint {
    char host[256];           /* TCP host, or the socket path for unix:// */
    int port;
} dl_endpoint_t;

typedef struct dl_config {
    int scheme;
    dl_endpoint_t ep[DL_MAX_ENDPOINTS];
    int nep;                  /* 1 for redis:// and unix://; more for the later schemes */
    char master[128];         /* sentinel: the monitored master's name */
    unsigned wait_replicas;   /* ?wait=N: replicas that must confirm an acquisition */
    unsigned long wait_ms;    /* ?wait_ms=M: how long WAIT may block */
    int db;
    int tls;                  /* rediss:// or ?tls=1: every server over TLS */
    char tls_ca[1024];        /* DISTLOCK_TLS_CA_FILE; empty: the system's CAs */
    char tls_cert[1024];      /* DISTLOCK_TLS_CERT_FILE */
    char tls_key[1024];       /* DISTLOCK_TLS_KEY_FILE */
    char tls_name[256];       /* DISTLOCK_TLS_SERVER_NAME; empty: each server's host */
    char user[128];
    char password[256];       /* never printed */
    char prefix[256];
    unsigned long lease_ms;
    unsigned long io_timeout_ms;
    int log_level;
    char metrics_file[1024];  /* DISTLOCK_METRICS_FILE; empty: no metrics (core/metrics.c) */
    unsigned long metrics_interval_ms; /* DISTLOCK_METRICS_INTERVAL_MS */
} dl_config_t;

/* Reads DISTLOCK_* (secure_getenv) into c.  EINVAL with dist_lasterror()
 * naming the variable when a value is bad.  Never blocks. */
int dl_config_load(dl_config_t *c);

/* What a layer above judges of a configuration that base/ only reads:
 * conn/tls.c builds the TLS client context from the DISTLOCK_TLS_*_FILE
 * files when the URL asks for TLS, so that a bad file is a configuration
 * error (EINVAL) wherever the configuration is loaded, before any
 * connection.  0, or EINVAL with dist_lasterror() naming the variable. */
typedef int dl_config_check_fn(const dl_config_t *c);
/* Has every later dl_config_load run fn, in the order registered, once
 * the DISTLOCK_TLS_* variables are read.  From a constructor (before
 * anything loads a configuration); at most DL_CONFIG_CHECKS. */
#define DL_CONFIG_CHECKS 4
void dl_config_add_check(dl_config_check_fn *fn);
/* DISTLOCK_PREFIX alone (the key prefix; "distlock:" when unset), checked
 * as dl_config_load checks it, into out (size bytes): for a tool that
 * names a lock's keys (shim/base/keys.h) without the rest of the
 * configuration.  0, or EINVAL with dist_lasterror(). */
int dl_config_prefix(char *out, size_t size);

/* Parses a DISTLOCK_URL value into c's scheme, endpoints, db, user and
 * password.  On error writes a reason (without the password) to err. */
int dl_url_parse(const char *url, dl_config_t *c, char *err, size_t errlen);
/* DISTLOCK_PASSWORD, when set and not empty, over the URL's password in c
 * (dl_config_load does it; so does a tool that parses a URL of its own).
 * 0, or EINVAL with dist_lasterror(). */
int dl_config_password(dl_config_t *c);

/* Parses a whole decimal number in [min, max]; 0 or EINVAL. */
int dl_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out);

/* c's DISTLOCK_URL for messages, rebuilt from what was parsed: the
 * scheme, the user but never the password, the servers, the master, the
 * database ("redis://127.0.0.1:6379/2", "redis-cluster://h:1,h:2"). */
const char *dl_config_url(const dl_config_t *c, char *buf, size_t size);
/* How a call that gave up on Redis says so, the library's and its tools'
 * one wording (dist_lasterror, the interposer, the distlock command):
 * "Redis is unreachable at URL (WHY); gave up after MS ms
 * (DISTLOCK_IO_TIMEOUT_MS=N)", WHY the connection's last failure ("redis
 * HOST:PORT: " left out where the URL names that one server), MS how long
 * the call tried (the I/O time-out, or less for a call with a deadline of
 * its own). */
const char *dl_unreachable(const dl_config_t *c, const char *why, unsigned long ms, char *buf,
                           size_t size);
/* "host:port" ("[v6]:port") or the socket path, for messages. */
const char *dl_ep_name(const dl_endpoint_t *ep, int is_unix, char *buf, size_t size);
/* The same for endpoint i of c. */
const char *dl_endpoint_name(const dl_config_t *c, int i, char *buf, size_t size);

#endif
