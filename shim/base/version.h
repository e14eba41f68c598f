/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * version.h - the version this library is built as (version.c gives it to
 * dist_version(), declared in distlock.h): spelt from the header's
 * DISTLOCK_VERSION_*, which CMake checks against project()
 * (cmake/version.cmake), so a program can compare it with the header it
 * was compiled against.  No state.
 */
#ifndef DL_VERSION_H
#define DL_VERSION_H

#include "distlock.h"

#define DL_STR_(x) #x
#define DL_STR(x) DL_STR_(x)
/* "MAJOR.MINOR.PATCH" */
#define DL_VERSION_STRING                                                   \
    DL_STR(DISTLOCK_VERSION_MAJOR) "." DL_STR(DISTLOCK_VERSION_MINOR) "."    \
    DL_STR(DISTLOCK_VERSION_PATCH)

#endif
