/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_url.c - libFuzzer target for dl_url_parse() (shim/base/config.c): the
 * whole input is one DISTLOCK_URL value.
 *
 * Checks, besides what ASan/UBSan catch: the result is 0 or EINVAL; on
 * success every field is NUL-terminated and in range (endpoints 1..16,
 * ports 1..65535 (0 for unix://), database 0..1000000, one endpoint for
 * redis:// and unix://); on failure the reason is a non-empty string
 * within the buffer, also when the buffer is tiny, and it does not show
 * the user info (changing the letters there does not change it).
 */
#include <errno.h>

#include "config.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *url = fuzz_cstr(data, size);
    static dl_config_t c;
    char err[160];
    memset(&c, 0, sizeof c);
    memset(err, 0x5a, sizeof err);
    int rc = dl_url_parse(url, &c, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == EINVAL, "rc %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(c.nep >= 1 && c.nep <= DL_MAX_ENDPOINTS, "nep %d", c.nep);
        FUZZ_CHECK(c.scheme >= DL_SCHEME_REDIS && c.scheme <= DL_SCHEME_REDLOCK, "scheme %d", c.scheme);
        if (c.scheme == DL_SCHEME_REDIS || c.scheme == DL_SCHEME_UNIX)
            FUZZ_CHECK(c.nep == 1, "nep %d for a single-server scheme", c.nep);
        for (int i = 0; i < c.nep; i++) {
            FUZZ_CHECK(fuzz_terminated(c.ep[i].host, sizeof c.ep[i].host), "host %d", i);
            FUZZ_CHECK(c.ep[i].host[0] != 0, "empty host %d", i);
            if (c.scheme == DL_SCHEME_UNIX)
                FUZZ_CHECK(c.ep[i].host[0] == '/' && c.ep[i].port == 0, "unix path/port");
            else
                FUZZ_CHECK(c.ep[i].port >= 1 && c.ep[i].port <= 65535, "port %d", c.ep[i].port);
            char name[320];
            dl_endpoint_name(&c, i, name, sizeof name);
            FUZZ_CHECK(fuzz_terminated(name, sizeof name), "endpoint name");
        }
        FUZZ_CHECK(c.db >= 0 && c.db <= 1000000, "db %d", c.db);
        FUZZ_CHECK(fuzz_terminated(c.user, sizeof c.user), "user");
        FUZZ_CHECK(fuzz_terminated(c.password, sizeof c.password), "password");
        FUZZ_CHECK(fuzz_terminated(c.master, sizeof c.master), "master");
        if (c.scheme == DL_SCHEME_SENTINEL)
            FUZZ_CHECK(c.master[0] != 0, "sentinel without a master name");
    } else {
        fuzz_check_message("error", err, sizeof err, 0);
        /* What may be user info is never shown: everything between "://"
         * and the last '@' (an unencoded '/' or '?' in a password moves
         * the rest of it into the path or the query).  The same URL with
         * the letters there changed (up to the first '?': query keywords
         * must stay what they are; %XX kept) gives the same message. */
        const char *sep = strstr(url, "://");
        if (sep) {
            char *v = fuzz_cstr((const uint8_t *)url, size);
            char *a = v + (sep - url) + 3;
            char *at = strrchr(a, '@');
            char *qm = at ? memchr(a, '?', (size_t)(at - a)) : NULL;
            char *stop = qm ? qm : at;
            for (char *q = a; at && q < stop; q++) {
                if (*q == '%') {                      /* keep %XX as it is */
                    q += (q + 1 < stop) + (q + 2 < stop);
                    continue;
                }
                if (*q >= 'a' && *q <= 'z')
                    *q = (char)(*q == 'z' ? 'a' : *q + 1);
                else if (*q >= 'A' && *q <= 'Z')
                    *q = (char)(*q == 'Z' ? 'A' : *q + 1);
            }
            if (at) {
                char err2[160];
                static dl_config_t c2;
                int rc2 = dl_url_parse(v, &c2, err2, sizeof err2);
                FUZZ_CHECK(rc2 == rc && strcmp(err, err2) == 0,
                           "the message shows the user info: \"%s\" vs \"%s\"", err, err2);
            }
            free(v);
        }
        /* a tiny buffer: truncated, still terminated, nothing written past it */
        char small[9];
        small[8] = 0x7e;
        FUZZ_CHECK(dl_url_parse(url, &c, small, 8) == EINVAL, "second parse disagrees");
        FUZZ_CHECK(fuzz_terminated(small, 8) && small[8] == 0x7e, "small buffer");
    }
    free(url);
    return 0;
}
