/* SPDX-License-Identifier: BSD-3-Clause */
/* version.c - dist_version(): the version this library was built as
 * (version.h). */
#include "distlock.h"
#include "version.h"

const char *dist_version(void)
{
    return DL_VERSION_STRING;
}
