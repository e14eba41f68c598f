/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lingerer.h - the thread that ends lingering holds on time (lingerer.c).
 *
 * A lingering hold (hold.c, dl_hold_linger) is a guess that the unlocking
 * thread relocks at once; when no relock comes within DL_LINGER_US, the
 * hold must be passed on at once, or the process that waits for it waits
 * for nothing.  The watchdog renews every hold of the process in batches
 * (a walk of the registry and a round trip per 2000 holds: tens of ms with
 * tens of thousands of holds); a linger's end behind that would cost the
 * waiting process as much.  So lingers end on a thread of their own, which
 * knows the lingering holds without walking the registry and waits for no
 * batch but the one on the connection when its release is sent.
 *
 * Its state is the dl_proc_t's l* fields; it pins the objects it watches
 * (dl_registry_pin) until their linger ended.
 */
#ifndef DL_LINGERER_H
#define DL_LINGERER_H

#include "process.h"

/* o's hold lingers until `until` (us; o->hold.linger_until): ends it then
 * if no relock claimed it.  o->mu held.  Never blocks on the network;
 * starts the thread if needed.  0, or -1 if the thread could not start or
 * out of memory (the caller does not linger). */
int dl_lingerer_watch(dl_proc_t *p, dl_core_t *o, uint64_t until);

#endif
