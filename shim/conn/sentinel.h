/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.h - the backend of redis-sentinel://: one link, as single.h,
 * whose dialer asks the sentinels for the master at each connect and
 * confirms it with ROLE; a reply that says the server stepped down (a
 * failover) makes the link leave it for the master named now.
 *
 * Owner: the link is the state; sentinel.c also remembers which sentinel
 * answered last (asked first next time).
 */
#ifndef DL_SENTINEL_H
#define DL_SENTINEL_H

#include "conn.h"

extern const dl_backend_t dl_backend_sentinel;

/* The master as the sentinels see it, connected (AUTH, SELECT) and
 * confirmed by ROLE.  A dialer (cmdlink_io.h): ep is ignored. */
redisContext *dl_sentinel_connect(const dl_config_t *c, const dl_endpoint_t *ep,
                                  unsigned long timeout_ms, char *err, size_t errlen);

#endif
