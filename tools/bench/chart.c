/* SPDX-License-Identifier: BSD-3-Clause */
/* chart.c - SVG charts of the W9 curves: a grid of panels, two a row,
 * each one figure against a log-scale x; a line per series through the
 * medians of the repetitions, with a bar from the least to the largest.
 * Plain SVG 1.1, no script, readable in a browser and on GitHub. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define PW 430                /* a panel, with its margins */
#define PH 270
#define ML 64
#define MR 16
#define MT 30
#define MB 40
#define TOP 96                /* title, subtitle and legend */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void chart_add(chart_series_t *s, double x, const double *v, int n)
{
    if (n <= 0 || s->n == CHART_MAX_PTS)
        return;
    double *t = malloc((size_t)n * sizeof *t);
    if (!t)
        return;
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    chart_pt_t p = { x, t[0], t[(n - 1) / 2], t[n - 1] };   /* lower middle of an even count */
    free(t);
    int at = s->n;
    while (at > 0 && s->pt[at - 1].x > x) {
        s->pt[at] = s->pt[at - 1];
        at--;
    }
    s->pt[at] = p;
    s->n++;
}

typedef struct axis {
    double lo, hi;            /* in log10 when log */
    int log;
} axis_t;

static double to_axis(const axis_t *a, double v)
{
    if (a->log)
        return log10(v > 0 ? v : 1e-300);
    return v;
}

/* A position in [0,1] along the axis. */
static double frac(const axis_t *a, double v)
{
    double t = (to_axis(a, v) - a->lo) / (a->hi - a->lo);
    return t < -0.02 ? -0.02 : t > 1.02 ? 1.02 : t;
}

/* A linear axis from 0 (or below, for negatives) to a round top. */
static double round_up(double v)
{
    if (v <= 0)
        return 1;
    double m = pow(10, floor(log10(v)));
    static const double steps[] = { 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10 };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] * m >= v * 0.999)
            return steps[i] * m;
    return 10 * m;
}

static void fmt_num(char *buf, size_t size, double v)
{
    double a = fabs(v);
    if (a >= 1e6 && fmod(v, 1e6) == 0)
        snprintf(buf, size, "%gM", v / 1e6);
    else if (a >= 1e4 && fmod(v, 1e3) == 0)
        snprintf(buf, size, "%gk", v / 1e3);
    else
        snprintf(buf, size, "%g", v);
}

static void panel(FILE *f, const chart_t *c, const chart_panel_t *p, int ox, int oy)
{
    int w = PW - ML - MR, h = PH - MT - MB;
    int x0 = ox + ML, y0 = oy + MT;
    axis_t ax = { 0, 1, 1 }, ay = { 0, 1, p->logy };
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    for (int k = 0; k < p->nseries; k++)
        for (int i = 0; i < p->s[k].n; i++) {
            const chart_pt_t *q = &p->s[k].pt[i];
            xmin = fmin(xmin, q->x);
            xmax = fmax(xmax, q->x);
            if (!p->logy || q->lo > 0)
                ymin = fmin(ymin, q->lo);
            ymax = fmax(ymax, q->hi);
        }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", x0, oy + 18, p->title);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n",
            x0, y0, w, h);
    if (xmin > xmax) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#888\">not measured in this run</text>\n",
                x0 + 10, y0 + h / 2);
        return;
    }
    /* x grid: powers of 2 when the points are (process counts), the axis
     * from the first to the last point; else decades, whole ones */
    int pow2 = 1;
    for (int k = 0; k < p->nseries; k++)
        for (int i = 0; i < p->s[k].n; i++) {
            double l = log2(p->s[k].pt[i].x);
            if (fabs(l - round(l)) > 1e-9)
                pow2 = 0;
        }
    if (pow2) {
        double span = log10(xmax) - log10(xmin);
        double pad = span > 0 ? span * 0.04 : 0.1;
        ax.lo = log10(xmin) - pad;
        ax.hi = log10(xmax) + pad;
    } else {
        ax.lo = floor(log10(xmin > 0 ? xmin : 1) + 1e-9);
        ax.hi = ceil(log10(xmax > 0 ? xmax : 1) - 1e-9);
        if (ax.hi <= ax.lo)
            ax.hi = ax.lo + 1;
    }
    if (p->logy) {
        if (ymin > ymax || ymin <= 0)
            ymin = ymax > 0 ? ymax / 10 : 1;
        ay.lo = floor(log10(ymin));
        ay.hi = ceil(log10(ymax > 0 ? ymax : 1));
        if (ay.hi <= ay.lo)
            ay.hi = ay.lo + 1;
    } else {
        ay.lo = ymin < 0 ? -round_up(-ymin) : 0;
        ay.hi = round_up(ymax);
    }
    char b[32];
    if (pow2) {
        for (double v = xmin; v <= xmax * 1.0001; v *= 2) {
            double x = x0 + frac(&ax, v) * w;
            fmt_num(b, sizeof b, v);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n"
                    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                    x, y0, x, y0 + h, x, y0 + h + 15, b);
        }
    } else {
        for (double d = ax.lo; d <= ax.hi + 1e-9; d++) {
            double x = x0 + (d - ax.lo) / (ax.hi - ax.lo) * w;
            fmt_num(b, sizeof b, pow(10, d));
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n"
                    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                    x, y0, x, y0 + h, x, y0 + h + 15, b);
        }
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#444\">%s</text>\n",
            x0 + w / 2, y0 + h + 32, c->xlabel);
    /* y grid: decades, or five steps */
    int ny = p->logy ? (int)(ay.hi - ay.lo) : 5;
    for (int k = 0; k <= ny; k++) {
        double v = p->logy ? pow(10, ay.lo + k) : ay.lo + (ay.hi - ay.lo) * k / ny;
        double y = y0 + h - frac(&ay, v) * h;
        fmt_num(b, sizeof b, v);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n"
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                x0, y, x0 + w, y, x0 - 5, y + 4, b);
    }
    for (int k = 0; k < p->nseries; k++) {
        const chart_series_t *s = &p->s[k];
        if (!s->n)
            continue;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", s->color,
                s->dashed ? " stroke-dasharray=\"6,4\"" : "");
        for (int i = 0; i < s->n; i++)
            fprintf(f, "%.1f,%.1f ", x0 + frac(&ax, s->pt[i].x) * w,
                    y0 + h - frac(&ay, s->pt[i].mid) * h);
        fprintf(f, "\"/>\n");
        for (int i = 0; i < s->n; i++) {
            const chart_pt_t *q = &s->pt[i];
            double x = x0 + frac(&ax, q->x) * w;
            if (q->hi > q->lo)
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                        "stroke-width=\"1.5\"/>\n", x, y0 + h - frac(&ay, q->lo) * h, x,
                        y0 + h - frac(&ay, q->hi) * h, s->color);
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.8\" fill=\"%s\"/>\n", x,
                    y0 + h - frac(&ay, q->mid) * h, s->color);
        }
    }
}

int chart_write(const chart_t *c, const char *path)
{
    int rows = (c->npanels + 1) / 2;
    int width = 2 * PW + 20, height = TOP + rows * PH + 10;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n", width, height,
            width, height);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", ML,
            c->title);
    fprintf(f, "<text x=\"%d\" y=\"40\" fill=\"#444\">%s</text>\n", ML, c->subtitle);
    if (c->npanels) {             /* the legend: four a row */
        const chart_panel_t *p = &c->p[0];
        for (int k = 0; k < p->nseries; k++) {
            int lx = ML + (k % 4) * 210, ly = 62 + (k / 4) * 16;
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                    "stroke-width=\"3\"%s/>\n<text x=\"%d\" y=\"%d\">%s</text>\n", lx, ly - 4,
                    lx + 26, ly - 4, p->s[k].color,
                    p->s[k].dashed ? " stroke-dasharray=\"6,4\"" : "", lx + 32, ly,
                    p->s[k].label);
        }
    }
    for (int i = 0; i < c->npanels; i++)
        panel(f, c, &c->p[i], 10 + (i % 2) * PW, TOP + (i / 2) * PH);
    fprintf(f, "</svg>\n");
    return fclose(f) ? -1 : 0;
}
