/* SPDX-License-Identifier: BSD-3-Clause */
/* w_curves.h - W9, the scaling curves (w_curves.c). */
#ifndef BENCH_W_CURVES_H
#define BENCH_W_CURVES_H

/* One repetition of W9: its steps, each a RESULT line and a line on stderr. */
int run_w9(void);
/* After the repetitions: one SVG chart per curve into --svg-dir. */
int w9_charts(void);
/* After the repetitions of W9L: its chart, w9-many-locks.svg (or
 * w9-many-locks-leaseNms.svg with --w9-lease-ms). */
int w9l_chart(void);

#endif
