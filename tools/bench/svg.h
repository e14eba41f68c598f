/* SPDX-License-Identifier: BSD-3-Clause */
/* svg.h - the W3 latency chart (svg.c). */
#ifndef BENCH_SVG_H
#define BENCH_SVG_H

int svg_write_w3(const char *path);

#endif
