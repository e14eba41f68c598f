/* SPDX-License-Identifier: BSD-3-Clause */
/* chart.h - SVG charts of curves: panels side by side, each a figure
 * against a log-scale x (processes, locks), one line per series through
 * the median of the repetitions, a bar from their least to their largest
 * (chart.c). */
#ifndef BENCH_CHART_H
#define BENCH_CHART_H

#define CHART_MAX_PTS 24
#define CHART_MAX_SERIES 8
#define CHART_MAX_PANELS 10

typedef struct chart_pt {
    double x, lo, mid, hi;    /* hi == lo: one repetition */
} chart_pt_t;

typedef struct chart_series {
    char label[64];
    const char *color;
    int dashed;
    int n;                    /* points, in increasing x */
    chart_pt_t pt[CHART_MAX_PTS];
} chart_series_t;

typedef struct chart_panel {
    char title[96];           /* the figure and its unit */
    int logy;                 /* a log-scale y (latencies, costs that grow) */
    int nseries;
    chart_series_t s[CHART_MAX_SERIES];
} chart_panel_t;

typedef struct chart {
    char title[160], subtitle[200], xlabel[64];
    int npanels;
    chart_panel_t p[CHART_MAX_PANELS];
} chart_t;

/* Adds a point (x, the values of the repetitions v[0..n)) to s, keeping
 * x in order; n == 0 adds nothing. */
void chart_add(chart_series_t *s, double x, const double *v, int n);
/* Writes the chart to path (the legend: the series of the first panel,
 * which every panel shares).  0 or -1. */
int chart_write(const chart_t *c, const char *path);

#endif
