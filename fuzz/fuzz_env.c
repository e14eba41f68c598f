/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_env.c - libFuzzer target for dl_config_load() (shim/base/config.c) with
 * the DISTLOCK_* variables taken from the input.
 *
 * Input: byte 0 is a mask saying which variables are set (bit 0
 * DISTLOCK_URL, 1 DISTLOCK_PASSWORD, 2 DISTLOCK_PREFIX, 3 DISTLOCK_LEASE_MS,
 * 4 DISTLOCK_IO_TIMEOUT_MS, 5 DISTLOCK_LOG, 6 DISTLOCK_MAP, 7
 * DISTLOCK_ON_ERROR); the rest is their values in that order, separated by
 * NUL bytes (a value cannot hold one).  A set variable whose field is
 * missing is set to "".  The process environment is replaced by exactly
 * these variables for the call (environ points at our array: no setenv,
 * so nothing accumulates across runs).
 *
 * Checks: 0 or EINVAL; EINVAL names a DISTLOCK_ variable in
 * dist_lasterror(); success gives values in their documented ranges, the
 * prefix without '{' '}', DISTLOCK_PASSWORD taken verbatim; the message
 * does not depend on DISTLOCK_PASSWORD's bytes (the same input with another
 * password of the same length gives the same code and message).
 */
#include <errno.h>
#include <unistd.h>

#include "config.h"
#include "distlock.h"
#include "dl.h"
#include "fuzz_common.h"

extern char **environ;

static const char *const vars[8] = {
    "DISTLOCK_URL", "DISTLOCK_PASSWORD", "DISTLOCK_PREFIX", "DISTLOCK_LEASE_MS",
    "DISTLOCK_IO_TIMEOUT_MS", "DISTLOCK_LOG", "DISTLOCK_MAP", "DISTLOCK_ON_ERROR",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mask = data[0];
    const char *val[8] = { 0 };
    char *env[9];
    int nenv = 0;
    /* the values: split the rest at NULs */
    char *rest = fuzz_cstr(data + 1, size - 1);
    size_t restlen = size - 1, off = 0;
    for (int i = 0; i < 8; i++) {
        if (!(mask & (1u << i)))
            continue;
        const char *v = off <= restlen ? rest + off : "";
        val[i] = v;
        off += strlen(v) + 1;
        size_t n = strlen(vars[i]) + 1 + strlen(v) + 1;
        env[nenv] = malloc(n);
        snprintf(env[nenv], n, "%s=%s", vars[i], v);
        nenv++;
    }
    env[nenv] = NULL;

    char **saved = environ;
    environ = env;
    static dl_config_t c;
    int rc = dl_config_load(&c);
    environ = saved;

    FUZZ_CHECK(rc == 0 || rc == EINVAL, "rc %d", rc);
    const char *e = dist_lasterror();
    if (rc == EINVAL) {
        fuzz_check_message("dist_lasterror()", e, 512, 0);
        FUZZ_CHECK(strstr(e, "DISTLOCK_") != NULL, "no variable named: \"%s\"", e);
    } else {
        FUZZ_CHECK(c.nep >= 1, "nep %d", c.nep);
        FUZZ_CHECK(fuzz_terminated(c.prefix, sizeof c.prefix), "prefix");
        FUZZ_CHECK(!strpbrk(c.prefix, "{}"), "prefix with a brace");
        FUZZ_CHECK(!val[2] || strcmp(c.prefix, val[2]) == 0, "prefix not verbatim");
        FUZZ_CHECK(c.lease_ms >= 30 && c.lease_ms <= 86400000UL, "lease %lu", c.lease_ms);
        FUZZ_CHECK(c.io_timeout_ms >= 1 && c.io_timeout_ms <= 86400000UL, "io %lu", c.io_timeout_ms);
        FUZZ_CHECK(c.log_level >= DL_LOG_OFF && c.log_level <= DL_LOG_DEBUG, "log %d", c.log_level);
        FUZZ_CHECK(fuzz_terminated(c.password, sizeof c.password), "password");
        if (val[1] && *val[1])
            FUZZ_CHECK(strcmp(c.password, val[1]) == 0, "DISTLOCK_PASSWORD not taken");
    }
    /* DISTLOCK_PASSWORD is never printed: the same environment with another
     * password of the same length gives the same code and message. */
    if (val[1] && *val[1]) {
        char first[512];
        snprintf(first, sizeof first, "%s", e);
        size_t pl = strlen(val[1]);
        char *other = NULL;
        for (int i = 0; i < nenv; i++)
            if (strncmp(env[i], "DISTLOCK_PASSWORD=", 18) == 0) {
                other = env[i];
                env[i] = malloc(18 + pl + 1);
                memcpy(env[i], "DISTLOCK_PASSWORD=", 18);
                memset(env[i] + 18, val[1][0] == '#' ? '%' : '#', pl);
                env[i][18 + pl] = 0;
            }
        environ = env;
        int rc2 = dl_config_load(&c);
        environ = saved;
        FUZZ_CHECK(rc2 == rc, "rc %d with another password, %d before", rc2, rc);
        FUZZ_CHECK(strcmp(first, dist_lasterror()) == 0,
                   "the message depends on DISTLOCK_PASSWORD: \"%s\" vs \"%s\"", first, dist_lasterror());
        free(other);
    }
    for (int i = 0; i < nenv; i++)
        free(env[i]);
    free(rest);
    return 0;
}
