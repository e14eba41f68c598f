/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wrap_file.h - wrap_file.c offers the exported libc names (the ones of
 * cmake/preload.cmake's DLP_EXPORTS), declared by the system headers, and
 * one check for boot.c.  Included through preload.h.
 */
#ifndef DLP_WRAP_FILE_H
#define DLP_WRAP_FILE_H

#pragma GCC visibility push(hidden)

/* Before main, with file entries: stops the program if it was started
 * holding a lock on a mapped file that this same process took before it
 * executed this program (lock, then exec: setlock, lckdo -e,
 * with-lock-ex).  The distributed hold ended with the program that took
 * it, while the file stays locked. */
void dlp_file_check_inherited(void);

#pragma GCC visibility pop

#endif
