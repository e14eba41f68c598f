/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault.h - what a failed exchange with a server means (fault.c): every
 * backend, the link and the script layer classify an error reply or a
 * broken connection here, and learn here which faults are signs that
 * Redis may have lost the process's holds (base/trust.h).
 *
 *   fault               seen as                      did it run?   a sign?
 *   DL_FAULT_NONE       a value, or the command's    yes           no
 *                       own error reply
 *   DL_FAULT_TIMEOUT    no reply in time (a slow or  perhaps       yes
 *                       stalled server)
 *   DL_FAULT_CLOSED     the server closed or reset   perhaps       yes
 *                       the connection (a restart,
 *                       CLIENT KILL, its idle time-out)
 *   DL_FAULT_LINK       any other broken connection  perhaps       yes
 *   DL_FAULT_NOSCRIPT   the script cache was emptied no            yes
 *                       (a restart, SCRIPT FLUSH, a failover)
 *   DL_FAULT_READONLY   READONLY, MASTERDOWN: a      no            yes
 *                       replica now (a failover)
 *   DL_FAULT_LOADING    loading its data again       no            yes
 *   DL_FAULT_MOVED      the slot has a new owner     no            yes
 *   DL_FAULT_ASK        the slot migrates: ask the   no            no
 *                       importing node this once
 *   DL_FAULT_TRYAGAIN   the slot is half migrated    no            no
 *   DL_FAULT_CLUSTERDOWN the cluster votes a failover no           yes
 *
 * READONLY and LOADING say the server is no master serving its data: a
 * link that finds its master through the sentinels leaves it for the one
 * they name next (dl_fault_not_master).  Stateless.
 */
#ifndef DL_FAULT_H
#define DL_FAULT_H

#include <hiredis/hiredis.h>

typedef enum dl_fault {
    DL_FAULT_NONE,
    DL_FAULT_TIMEOUT,
    DL_FAULT_CLOSED,
    DL_FAULT_LINK,
    DL_FAULT_NOSCRIPT,
    DL_FAULT_READONLY,
    DL_FAULT_LOADING,
    DL_FAULT_MOVED,
    DL_FAULT_ASK,
    DL_FAULT_TRYAGAIN,
    DL_FAULT_CLUSTERDOWN,
} dl_fault_t;

/* The fault of a reply r (by the first word of an error reply), or, with
 * r NULL, of the connection ctx that failed to give one (by hiredis's
 * error).  Never blocks. */
dl_fault_t dl_fault_of(const redisContext *ctx, const redisReply *r);
/* Whether f is a sign that Redis may have lost state (the table above). */
int dl_fault_ends_trust(dl_fault_t f);
/* Whether f says the server is no master serving its data now. */
int dl_fault_not_master(dl_fault_t f);
/* For a sign: ends the trust in every hold of the process (dl_trust_end,
 * why logged).  Returns whether f was one.  Never blocks. */
int dl_fault_note(dl_fault_t f, const char *why);

#endif
