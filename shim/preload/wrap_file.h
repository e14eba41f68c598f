/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wrap_file.h - wrap_file.c offers only exported libc names (the ones of
 * cmake/preload.cmake's DLP_EXPORTS), declared by the system headers;
 * nothing of it is called from the other files.  Included through
 * preload.h.
 */
#ifndef DLP_WRAP_FILE_H
#define DLP_WRAP_FILE_H

#endif
