/* SPDX-License-Identifier: BSD-3-Clause */
/* kind.c - the table of kinds (kind.h): each one's dlp_kind_t is in its
 * own wrap_*.c; this is only the list the rest of the interposer walks. */
#include <stddef.h>

#include "preload.h"

#define DLP_KIND_ADDR(w) &dlp_kind_##w,
const dlp_kind_t *const dlp_kinds[] = { DLP_KINDS(DLP_KIND_ADDR) NULL };
