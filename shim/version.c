/* SPDX-License-Identifier: BSD-3-Clause */
/* dist_version(): the version this library was built as, taken from the
 * header's DISTLOCK_VERSION_* (which CMake checks against project()), so a
 * program can compare it with the header it was compiled against. */
#include "distlock.h"

#define DL_STR_(x) #x
#define DL_STR(x) DL_STR_(x)

const char *dist_version(void)
{
    return DL_STR(DISTLOCK_VERSION_MAJOR) "." DL_STR(DISTLOCK_VERSION_MINOR) "."
           DL_STR(DISTLOCK_VERSION_PATCH);
}
