/* SPDX-License-Identifier: BSD-3-Clause */
/* tls_stub.c - the fuzzers of the configuration parsers link config.c
 * without the TLS layer (OpenSSL, hiredis): a URL that asks for TLS gets
 * a context that is never built.  Files named by DISTLOCK_TLS_* are not
 * the parsers' concern. */
#include "config.h"
#include "tls.h"

int dl_tls_setup(const dl_config_t *c)
{
    (void)c;
    return 0;
}
