/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wrap_pthread.h - wrap_pthread.c offers only exported libc names (the ones of
 * cmake/preload.cmake's DLP_EXPORTS), declared by the system headers;
 * nothing of it is called from the other files.  Included through
 * preload.h.
 */
#ifndef DLP_WRAP_PTHREAD_H
#define DLP_WRAP_PTHREAD_H

#endif
