/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * boot.h - the interposer's start (boot.c).  It offers no call: its
 * constructor runs before main (DISTLOCK_ON_ERROR, DISTLOCK_MAP -> the
 * entries and the address table of table.h) and its destructor at exit.
 * Included through preload.h.
 */
#ifndef DLP_BOOT_H
#define DLP_BOOT_H

/* The program the map applied to (it has the map's symbols) records its
 * executable in this variable for the programs it starts (system(),
 * popen(), helpers): those are known not to be it, so they use the
 * entries they have and skip the rest instead of going dormant.  A
 * launcher before it leaves the environment untouched. */
#define DLP_MARKER "DISTLOCK_PRELOAD_EXE"

#endif
