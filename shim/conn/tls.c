/* SPDX-License-Identifier: BSD-3-Clause */
/* tls.c - the client TLS context and the handshake (see tls.h); the
 * session then goes to a relay thread (tls_relay.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "conn.h"
#include "distlock.h"
#include "dl.h"
#include "tls.h"
#include "tls_relay.h"

/* ---------------------------------------------------------------- context */

/* One SSL_CTX per set of files, built once and kept for the process (a
 * program, or a test, may change the variables between processes' states;
 * contexts are few and small). */
typedef struct tls_ctx {
    struct tls_ctx *next;
    char ca[1024], cert[1024], key[1024];
    SSL_CTX *ctx;
} tls_ctx_t;

static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static tls_ctx_t *ctxs;

/* An encrypted key would make OpenSSL prompt on the terminal for its
 * passphrase: refuse instead (the key then fails to load, and says so). */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    return 0;
}

static int file_readable(const char *var, const char *path)
{
    FILE *f = fopen(path, "r");
    char q[200];
    if (!f)
        return dl_fail(EINVAL, "%s=%s: cannot read it: %s", var,
                       dl_quote(path, strlen(path), q, sizeof q), strerror(errno));
    fclose(f);
    return 0;
}

static SSL_CTX *build(const dl_config_t *c)
{
    char q[200];
    if ((c->tls_ca[0] && file_readable("DISTLOCK_TLS_CA_FILE", c->tls_ca)) ||
        (c->tls_cert[0] && file_readable("DISTLOCK_TLS_CERT_FILE", c->tls_cert)) ||
        (c->tls_key[0] && file_readable("DISTLOCK_TLS_KEY_FILE", c->tls_key)))
        return NULL;
    if (!c->tls_cert[0] != !c->tls_key[0]) {
        dl_seterr("%s is set without %s: a client certificate needs its key",
                  c->tls_cert[0] ? "DISTLOCK_TLS_CERT_FILE" : "DISTLOCK_TLS_KEY_FILE",
                  c->tls_cert[0] ? "DISTLOCK_TLS_KEY_FILE" : "DISTLOCK_TLS_CERT_FILE");
        return NULL;
    }
    /* OpenSSL would free its state from an atexit handler, while relay
     * threads may still use it (a program that ends with connections
     * open): keep it (no effect if the program initialised OpenSSL
     * itself first). */
    OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, NULL);
    dl_tls_mark_used();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        dl_seterr("TLS: cannot create a context (out of memory?)");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
    /* The relay writes from a buffer that it refills as it goes. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (c->tls_ca[0]) {
        if (SSL_CTX_load_verify_locations(ctx, c->tls_ca, NULL) != 1) {
            dl_seterr("DISTLOCK_TLS_CA_FILE=%s: no PEM certificate in it",
                      dl_quote(c->tls_ca, strlen(c->tls_ca), q, sizeof q));
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        dl_seterr("TLS: cannot load the system's CA certificates (set DISTLOCK_TLS_CA_FILE)");
        goto fail;
    }
    if (c->tls_cert[0]) {
        if (SSL_CTX_use_certificate_chain_file(ctx, c->tls_cert) != 1) {
            dl_seterr("DISTLOCK_TLS_CERT_FILE=%s: no PEM certificate in it",
                      dl_quote(c->tls_cert, strlen(c->tls_cert), q, sizeof q));
            goto fail;
        }
        /* The message names the file only: never the key's contents. */
        if (SSL_CTX_use_PrivateKey_file(ctx, c->tls_key, SSL_FILETYPE_PEM) != 1) {
            if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
                dl_seterr("DISTLOCK_TLS_KEY_FILE: the key does not match DISTLOCK_TLS_CERT_FILE");
                goto fail;
            }
            dl_seterr("DISTLOCK_TLS_KEY_FILE=%s: not a usable PEM private key "
                      "(an encrypted key must be decrypted first)",
                      dl_quote(c->tls_key, strlen(c->tls_key), q, sizeof q));
            goto fail;
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
            dl_seterr("DISTLOCK_TLS_KEY_FILE: the key does not match DISTLOCK_TLS_CERT_FILE");
            goto fail;
        }
    }
    ERR_clear_error();
    return ctx;
fail:
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return NULL;
}
static SSL_CTX *get_ctx(const dl_config_t *c)
{
    pthread_mutex_lock(&ctx_mu);
    tls_ctx_t *e;
    for (e = ctxs; e; e = e->next)
        if (!strcmp(e->ca, c->tls_ca) && !strcmp(e->cert, c->tls_cert) && !strcmp(e->key, c->tls_key))
            break;
    if (!e) {
        SSL_CTX *ctx = build(c);
        if (ctx && !(e = calloc(1, sizeof *e))) {
            SSL_CTX_free(ctx);
            dl_seterr("out of memory");
        }
        if (e) {
            strcpy(e->ca, c->tls_ca);
            strcpy(e->cert, c->tls_cert);
            strcpy(e->key, c->tls_key);
            e->ctx = ctx;
            e->next = ctxs;
            ctxs = e;
        }
    }
    pthread_mutex_unlock(&ctx_mu);
    return e ? e->ctx : NULL;
}

int dl_tls_setup(const dl_config_t *c)
{
    return get_ctx(c) ? 0 : EINVAL;
}

/* A bad DISTLOCK_TLS_*_FILE is a configuration error, found when the
 * configuration is loaded (config.c runs this check), not at the first
 * connection.  Registered before any other constructor of the library
 * runs (the priority), so before anything can load a configuration. */
static int tls_check(const dl_config_t *c)
{
    return c->tls ? dl_tls_setup(c) : 0;
}

__attribute__((constructor(101))) static void tls_register_check(void)
{
    dl_config_add_check(tls_check);
}

/* -------------------------------------------------------------- socket BIO */

/* OpenSSL's socket BIO writes with write(2), which raises SIGPIPE on a
 * connection the server closed: ours sends with MSG_NOSIGNAL, so no
 * thread that does TLS I/O (relay, handshake, link) needs SIGPIPE masked. */
static BIO_METHOD *nosig_method;
static pthread_once_t nosig_once = PTHREAD_ONCE_INIT;

static int nosig_write(BIO *b, const char *buf, int len)
{
    int fd = -1;
    BIO_get_fd(b, &fd);
    ssize_t n = send(fd, buf, (size_t)len, MSG_NOSIGNAL);
    BIO_clear_retry_flags(b);
    if (n <= 0 && BIO_sock_should_retry((int)n))
        BIO_set_retry_write(b);
    return (int)n;
}

static void nosig_init(void)
{
    const BIO_METHOD *sock = BIO_s_socket();
    BIO_METHOD *m = BIO_meth_new(BIO_TYPE_SOCKET, "distlock socket");
    if (!m)
        return;
    BIO_meth_set_write(m, nosig_write);
    BIO_meth_set_read(m, BIO_meth_get_read(sock));
    BIO_meth_set_puts(m, BIO_meth_get_puts(sock));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(sock));
    BIO_meth_set_create(m, BIO_meth_get_create(sock));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(sock));
    nosig_method = m;
}

/* SSL_set_fd with our BIO; 0 or -1. */
static int set_socket(SSL *ssl, int fd)
{
    pthread_once(&nosig_once, nosig_init);
    if (!nosig_method)
        return SSL_set_fd(ssl, fd) == 1 ? 0 : -1;
    BIO *b = BIO_new(nosig_method);
    if (!b)
        return -1;
    BIO_set_fd(b, fd, BIO_NOCLOSE);
    SSL_set_bio(ssl, b, b);
    return 0;
}


/* -------------------------------------------------------------- handshake */

static int is_ip(const char *s)
{
    unsigned char b[16];
    return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* Waits for fd to be ready for what the last SSL call wanted; 0, or -1
 * when the deadline passed. */
static int wait_io(int fd, int want, uint64_t deadline)
{
    for (;;) {
        uint64_t now = dl_now_ms();
        if (now >= deadline)
            return -1;
        struct pollfd pf = { fd, (short)(want == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN), 0 };
        pthread_rwlock_unlock(&dl_tls_busy);
        int n = poll(&pf, 1, (int)(deadline - now));
        pthread_rwlock_rdlock(&dl_tls_busy);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* Why the handshake or the first exchange failed, from the verification
 * result and OpenSSL's error queue, in words that say what to fix. */
static void explain(SSL *ssl, const dl_config_t *c, const char *name, int sslerr, int sys_errno,
                    int timed_out, int got_any, char *err, size_t errlen)
{
    long vr = SSL_get_verify_result(ssl);
    unsigned long e = 0, last;
    while ((last = ERR_get_error()))
        e = last;
    int reason = e ? ERR_GET_REASON(e) : 0;
    if (vr != X509_V_OK) {
        const char *hint = "";
        if (vr == X509_V_ERR_HOSTNAME_MISMATCH || vr == X509_V_ERR_IP_ADDRESS_MISMATCH)
            hint = c->tls_name[0] ? " (checked DISTLOCK_TLS_SERVER_NAME)"
                                  : " (set DISTLOCK_TLS_SERVER_NAME to the name it has)";
        else if (vr == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
                 vr == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
                 vr == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT ||
                 vr == X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE)
            hint = c->tls_ca[0] ? " (not signed by a CA of DISTLOCK_TLS_CA_FILE)"
                                : " (not signed by a system CA: set DISTLOCK_TLS_CA_FILE)";
        snprintf(err, errlen, "TLS: server certificate rejected for \"%.100s\": %s%s", name,
                 X509_verify_cert_error_string(vr), hint);
    } else if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
               (!c->tls_cert[0] && reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE)) {
        snprintf(err, errlen, "TLS: the server requires a client certificate%s",
                 c->tls_cert[0] ? "" : " (set DISTLOCK_TLS_CERT_FILE and DISTLOCK_TLS_KEY_FILE)");
    } else if (reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA || reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
               reason == SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED ||
               reason == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN ||
               reason == SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED ||
               reason == SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE) {
        snprintf(err, errlen, "TLS: the server rejected our client certificate "
                 "(DISTLOCK_TLS_CERT_FILE): %s", ERR_reason_error_string(e));
    } else if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
               reason == SSL_R_UNEXPECTED_RECORD ||
               reason == SSL_R_HTTP_REQUEST) {
        snprintf(err, errlen, "TLS: the server does not speak TLS on this port "
                 "(a plain port? use redis://)");
    } else if (timed_out && !got_any) {
        snprintf(err, errlen, "TLS: handshake timed out with no answer "
                 "(a plain port? use redis://)");
    } else if (timed_out) {
        snprintf(err, errlen, "TLS: handshake timed out");
    } else if (sslerr == SSL_ERROR_SYSCALL || sslerr == SSL_ERROR_ZERO_RETURN || !e) {
        snprintf(err, errlen, "TLS: the server closed the connection during the handshake%s%s",
                 sys_errno ? ": " : "", sys_errno ? strerror(sys_errno) : "");
    } else {
        const char *rs = ERR_reason_error_string(e);
        snprintf(err, errlen, "TLS: handshake failed: %s", rs ? rs : "unknown error");
    }
}

/* Whether any byte came from the server: a plain server answers a
 * ClientHello only when it holds a newline, else waits for more. */
static int got_bytes(SSL *ssl)
{
    return BIO_number_read(SSL_get_rbio(ssl)) > 0;
}

/* A session of c's context on the TCP socket fd (made non-blocking),
 * checking the server's certificate against `name` (a host name or an IP
 * address).  NULL with the reason in err. */
static SSL *new_session(const dl_config_t *c, const char *name, int fd, char *err, size_t errlen)
{
    SSL_CTX *ctx = get_ctx(c);
    if (!ctx) {
        snprintf(err, errlen, "%s", dist_lasterror());
        return NULL;
    }
    SSL *ssl = SSL_new(ctx);
    if (!ssl) {
        snprintf(err, errlen, "TLS: out of memory");
        return NULL;
    }
    if (is_ip(name)) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name);
    } else {
        SSL_set_tlsext_host_name(ssl, name);
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        SSL_set1_host(ssl, name);
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    if (set_socket(ssl, fd)) {
        snprintf(err, errlen, "TLS: out of memory");
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}

/* The handshake, until `deadline`: 0, or -1 with why in err. */
static int handshake(SSL *ssl, const dl_config_t *c, const char *name, int fd, uint64_t deadline,
                     char *err, size_t errlen)
{
    int rc;
    while ((rc = SSL_connect(ssl)) != 1) {
        int e = SSL_get_error(ssl, rc);
        int se = errno;
        if ((e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) || wait_io(fd, e, deadline)) {
            int to = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
            explain(ssl, c, name, e, e == SSL_ERROR_SYSCALL ? se : 0, to, got_bytes(ssl), err, errlen);
            return -1;
        }
    }
    return 0;
}

/* With TLS 1.3 the server judges our certificate after the handshake is
 * over for us: one PING shows whether it kept the connection, so a missing
 * client certificate is told here, not as a lost connection at the first
 * command.  0, or -1 with why in err. */
static int first_ping(SSL *ssl, const dl_config_t *c, const char *name, int fd, uint64_t deadline,
                      char *err, size_t errlen)
{
    static const char ping[] = "PING\r\n";
    size_t off = 0;
    int rc, e;
    while (off < sizeof ping - 1) {
        rc = SSL_write(ssl, ping + off, (int)(sizeof ping - 1 - off));
        if (rc > 0) {
            off += (size_t)rc;
            continue;
        }
        e = SSL_get_error(ssl, rc);
        if ((e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) || wait_io(fd, e, deadline))
            break;            /* the read below finds the server's alert */
    }
    char line[256];
    size_t got = 0;
    for (;;) {
        rc = SSL_read(ssl, line + got, (int)(sizeof line - 1 - got));
        if (rc > 0) {
            got += (size_t)rc;
            if (memmem(line, got, "\r\n", 2))
                return 0;
            if (got == sizeof line - 1) {
                snprintf(err, errlen, "TLS: unexpected answer to PING");
                return -1;
            }
            continue;
        }
        e = SSL_get_error(ssl, rc);
        int se = errno;
        if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) && !wait_io(fd, e, deadline))
            continue;
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            snprintf(err, errlen, "TLS: timed out waiting for the server's first answer");
            return -1;
        }
        explain(ssl, c, name, e, e == SSL_ERROR_SYSCALL ? se : 0, 0, 1, err, errlen);
        if (strstr(err, "closed the connection"))
            snprintf(err, errlen, "TLS: the server closed the connection after the "
                     "handshake%s", c->tls_cert[0] ? "" : " (does it require a client "
                     "certificate? set DISTLOCK_TLS_CERT_FILE and DISTLOCK_TLS_KEY_FILE)");
        return -1;
    }
}

int dl_tls_wrap(const dl_config_t *c, const char *host, int fd, uint64_t deadline,
                char *err, size_t errlen)
{
    sigset_t oldmask;
    int pending, user = -1;
    /* Our BIO sends with MSG_NOSIGNAL; should it be missing (no memory),
     * OpenSSL's would write(2): keep SIGPIPE away from the host anyway. */
    dl_sigpipe_block(&oldmask, &pending);
    pthread_rwlock_rdlock(&dl_tls_busy);
    ERR_clear_error();
    const char *name = c->tls_name[0] ? c->tls_name : host;
    SSL *ssl = new_session(c, name, fd, err, errlen);
    if (ssl && handshake(ssl, c, name, fd, deadline, err, errlen) == 0 &&
        first_ping(ssl, c, name, fd, deadline, err, errlen) == 0) {
        int one = 1, idle = 15;
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        user = dl_tls_relay_start(ssl, fd, err, errlen);
    }
    if (user < 0) {
        if (ssl)
            SSL_free(ssl);
        ERR_clear_error();
    }
    pthread_rwlock_unlock(&dl_tls_busy);
    if (user < 0)
        close(fd);
    dl_sigpipe_restore(&oldmask, pending);
    return user;
}
