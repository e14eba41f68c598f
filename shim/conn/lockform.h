/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockform.h - the forms a lock's script call takes in a cluster
 * (lockform.c): with a guard key beside the lock's keys for the slot's
 * own node, or with only the lock's first key for the node an ASK sends
 * it to (cluster.c's top comment says why).  Anything but an EVAL or
 * EVALSHA that declares keys goes as it is.
 *
 * A dl_lockform_t is its caller's (one per command of a cluster call);
 * the argument vectors it points to are its own, freed with it.
 */
#ifndef DL_LOCKFORM_H
#define DL_LOCKFORM_H

#include "cmd.h"

typedef struct dl_lockform {
    int lock;                 /* an EVAL/EVALSHA naming keys; else sent as is */
    int nkeys;                /* the keys it declares, at argv[3..] */
    dl_cmd_t guarded;         /* argc, argv, argvlen: the keys and the guard */
    dl_cmd_t asked;           /* only the first key, for the importing node */
    int uargc;                /* its undo (dl_cmd_t), guarded too */
    const char **uargv;
    const size_t *ulen;
    void *mem;                /* all of the above points into it */
} dl_lockform_t;

/* The forms of c (which must outlive f); 0, or ENOMEM (f->lock 0: c goes
 * as it is). */
int dl_lockform_make(dl_lockform_t *f, const dl_cmd_t *c);
/* The command to send for c: a lock's script in the form its route asks
 * for (asked: under ASK); under ASK without its undo (an undo written
 * behind it would go without ASKING: the watchdog withdraws such a
 * request instead). */
dl_cmd_t dl_lockform_cmd(const dl_lockform_t *f, const dl_cmd_t *c, int asked);
void dl_lockform_free(dl_lockform_t *f);

#endif
