/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * take_all.h - taking the Redis holds of several objects of one kind in
 * one call, all or none (take_all.c): the kind's acquire_all script (for
 * locks lua/acquire_all.lua), which takes every one if every one is free
 * in Redis with nobody queued, and never queues.  What a primitive does
 * when they are not all free (prim/lockall.c: take them one by one) is
 * the primitive's.
 *
 * Each hold taken obeys what dl_take's do (take.h): it is returned only
 * within its validity and trust (SPEC "Local trust"), ?wait=N's replicas
 * have it, and a hold given up is withdrawn by its registration id, so
 * that a death trace it consumed goes back.  The call has its undo, as an
 * acquire has: the kind's withdraw_all (lua/withdraw_all.lua) follows it
 * on its connection should the link give up on a stalled server after
 * sending it (on redlock://, each server's).  take_all.c writes nothing of
 * the objects: the caller records each hold (dl_hold_record).
 */
#ifndef DL_TAKE_ALL_H
#define DL_TAKE_ALL_H

#include "take.h"

/* One object of a taking-all: the object, its request, what was taken. */
typedef struct dl_take_one {
    dl_core_t *o;
    const dl_req_t *rq;       /* its mode 'w', lease, fairness (never waits) */
    dl_grant_t g;             /* out */
} dl_take_one_t;

/* Takes the holds of v[0..n) (n >= 1; one kind, whose calls have
 * acquire_all; their keys in one slot where that matters: conn.h,
 * dl_conn_together), each reserved by the caller (o->hold.busy) and
 * o->mu not held, in one call; a timed caller waits for a stalled server
 * until deadline (monotonic ms; DL_FOREVER: the I/O time-out).
 *   0, EOWNERDEAD  every one taken (EOWNERDEAD: one or more after a
 *                  lapse), each v[i].g says what;
 *   EBUSY          one is held or queued for (*busy its index, -1 when
 *                  they were taken but had lapsed before the reply, and
 *                  were given back): none taken;
 *   EAGAIN         they cannot be asked for in one call here (a cluster
 *                  slot migrates): none taken;
 *   ENOTRECOVERABLE  one is unrecoverable (*busy its index, its
 *                  v[i].g.unrec its mark): none taken;
 *   ETIMEDOUT      deadline passed (unworded), EIO, ENOMEM: none kept,
 *                  each v[i].g.maybe when Redis may have taken it (the
 *                  caller has it withdrawn: dl_hold_undo_later). */
int dl_take_all(dl_proc_t *p, dl_take_one_t *v, int n, uint64_t deadline, int *busy);

#endif
