/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * port.h - port.c: the calls of <distlock/pthread.h> (dist_pthread_*, the
 * one-line port of a pthread program), and what object.c asks of it:
 * that one place of the program's source names one object.
 *
 * A place is FILE:LINE of a static initializer or of a run-time init
 * call.  Two live objects of one kind space (locks: mutexes and rwlocks;
 * conditions; semaphores; barriers) named by one place in one process
 * would be one lock where the program has two: the second stops the
 * program with one line (two initializers on a line, a static lock in a
 * header, an array initialized in a loop), telling how to name them.
 */
#ifndef DL_PORT_H
#define DL_PORT_H

/* obj (of magic's kind) is named by the place `name`: entered, or the
 * program stops if another live object of the kind space has it.  An
 * object entered already is fine (a forked child resolves it again). */
void dl_port_place_claim(const void *obj, unsigned magic, const char *name);
/* obj ends (destroyed): its place is free again; nothing if it had none. */
void dl_port_place_release(const void *obj);
/* In a forked child. */
void dl_port_after_fork(void);

#endif
