/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wrap_sem.h - wrap_sem.c offers the exported libc names sem_open,
 * sem_close, sem_wait, sem_trywait, sem_timedwait, sem_clockwait, sem_post
 * and sem_getvalue (cmake/preload.cmake's DLP_EXPORTS), declared by
 * <semaphore.h>, and what boot.c asks of it.  Included through preload.h.
 */
#ifndef DLP_WRAP_SEM_H
#define DLP_WRAP_SEM_H

#pragma GCC visibility push(hidden)

struct dlp_entry;

/* boot.c, before main: e (kind DLP_SEM, name and path set) is mapped: a
 * sem_open of its path returns its handle from now on.  Stops the program
 * when semaphores cannot be used (redlock://). */
void dlp_sem_add(struct dlp_entry *e);
/* Whether name (len bytes) is a mapped semaphore's (policy.c: the words
 * of a loss). */
int dlp_sem_named(const char *name, size_t len);
/* In a forked child (boot.c's atfork handler). */
void dlp_sem_after_fork(void);

#pragma GCC visibility pop

#endif
