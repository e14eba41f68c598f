/* SPDX-License-Identifier: BSD-3-Clause */
/* once.c - dist_once, the pthread_once mirror across processes, on the once
 * primitive (prim/once.h).  A dist_once_t is a lock object
 * (api/object.c), statically initialized (DIST_ONCE_INITIALIZER): like
 * pthread_once_t, it has no init or destroy. */
#include <errno.h>

#include "distlock.h"
#include "dl.h"
#include "object.h"
#include "once.h"                 /* prim/: the once primitive */

int dist_once(dist_once_t *o, void (*routine)(void))
{
    if (!o)
        return dl_fail(EINVAL, "once object is NULL");
    if (!routine)
        return dl_fail(EINVAL, "once routine is NULL");
    if (o->dl_o.dl_magic != DIST_PRIV_MAGIC_STATIC)
        return dl_fail(EINVAL, "once object is not initialized (DIST_ONCE_INITIALIZER)");
    dl_proc_t *p;
    dl_core_t *c = NULL;
    int rc = dl_obj_resolve_kind(&o->dl_o, DL_MAGIC_ONCE, &dl_once_kind, &p, &c);
    return rc ? rc : dl_once_run(p, dl_once_of(c), routine);
}
