/* SPDX-License-Identifier: BSD-3-Clause */
/* svg.c - the W3 chart: cumulative distributions of the handoff latency
 * t1 - t0 of distlock and of the naive lock, on a log time axis, with the
 * PING p50 of the same server and the 1 ms p99 target marked.  Written
 * from the samples of this run (--svg FILE). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

#define W 760
#define H 470
#define ML 70
#define MR 20
#define MT 82
#define MB 60

static double lx_min, lx_max;

static double xpos(double us)
{
    if (us < 1)
        us = 1;
    double l = log10(us);
    return ML + (l - lx_min) / (lx_max - lx_min) * (W - ML - MR);
}

static double ypos(double frac)
{
    return MT + (1 - frac) * (H - MT - MB);
}

static void curve(FILE *f, const w3_samples_t *s, const char *color, const char *label, int row)
{
    if (!s->n)
        return;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
    fprintf(f, "%.1f,%.1f ", xpos(s->v[0]), ypos(0));
    for (size_t i = 0; i < s->n; i++) {
        double x = xpos(s->v[i]);
        fprintf(f, "%.1f,%.1f %.1f,%.1f ", x, ypos((double)i / (double)s->n), x,
                ypos((double)(i + 1) / (double)s->n));
    }
    fprintf(f, "\"/>\n");
    double p50 = pct_sorted(s->v, s->n, 0.5), p99 = pct_sorted(s->v, s->n, 0.99);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", xpos(p50), ypos(0.5), color);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", xpos(p99), ypos(0.99), color);
    int ly = 44 + row * 18;                  /* the legend: above the plot */
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>\n",
            ML + 12, ly - 4, ML + 36, ly - 4, color);
    fprintf(f, "<text x=\"%d\" y=\"%d\">%s: p50 %.0f us, p99 %.0f us (%zu rounds)</text>\n", ML + 42,
            ly, label, p50, p99, s->n);
}

int svg_write_w3(const char *path)
{
    const w3_samples_t *d = &g_w3[PEER_DISTLOCK], *nv = &g_w3[PEER_NAIVE];
    if (!d->n && !nv->n)
        return -1;
    double lo = 1e9, hi = 0;
    for (int k = 0; k < 2; k++) {
        const w3_samples_t *s = &g_w3[k];
        if (!s->n)
            continue;
        if (s->v[0] < lo)
            lo = s->v[0];
        if (s->v[s->n - 1] > hi)
            hi = s->v[s->n - 1];
    }
    if (hi < 1000)
        hi = 1000;
    result_t *fp = result_find("floor", "PING");
    double ping = fp && !fp->skipped ? fp->p50_us : 0;
    if (ping > 0 && ping < lo)
        lo = ping;
    lx_min = floor(log10(lo > 1 ? lo : 1));
    lx_max = ceil(log10(hi));
    if (lx_max <= lx_min)
        lx_max = lx_min + 1;

    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">W3 handoff latency "
            "t1 - t0: cumulative distribution (distlock-bench, one run)</text>\n", ML);
    /* grid: 1-2-5 per decade */
    for (double dec = lx_min; dec < lx_max + 0.001; dec++) {
        static const int m[] = { 1, 2, 5 };
        for (int k = 0; k < 3; k++) {
            double v = m[k] * pow(10, dec);
            double l = log10(v);
            if (l > lx_max + 1e-9)
                break;
            double x = xpos(v);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, MT, x,
                    H - MB);
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, H - MB + 16, v);
        }
    }
    for (int k = 0; k <= 10; k++) {
        double y = ypos(k / 10.0);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ML, y, W - MR, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", ML - 6, y + 4, k / 10.0);
    }
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", ML,
            MT, W - ML - MR, H - MT - MB);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">t1 - t0 (microseconds, log scale)</text>\n",
            (ML + W - MR) / 2, H - 22);
    fprintf(f, "<text transform=\"translate(18,%d) rotate(-90)\" text-anchor=\"middle\">fraction of "
            "rounds</text>\n", (MT + H - MB) / 2);
    if (ping > 0) {
        double x = xpos(ping);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\" "
                "stroke-dasharray=\"4,3\"/>\n", x, MT, x, H - MB);
        x = xpos(4 * ping);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#2a7\" "
                "stroke-dasharray=\"2,3\"/>\n", x, MT, x, H - MB);
    }
    double x1ms = xpos(1000);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#c33\" stroke-dasharray=\"6,3\"/>\n",
            x1ms, MT, x1ms, H - MB);
    curve(f, d, "#1f5fbf", "distlock", 0);
    curve(f, nv, "#e07b00", "naive SET NX + 1 ms retry", 1);
    /* the reference lines' labels, over the curves */
    double x1 = xpos(ping), x4 = xpos(4 * ping);
    if (ping > 0) {
        fprintf(f, "<text paint-order=\"stroke\" stroke=\"white\" stroke-width=\"3\" x=\"%.1f\" y=\"%d\" fill=\"#555\">PING p50 %.0f us</text>\n", x1 + 4, H - MB - 8, ping);
        fprintf(f, "<text paint-order=\"stroke\" stroke=\"white\" stroke-width=\"3\" x=\"%.1f\" y=\"%d\" fill=\"#2a7\">4 x PING p50</text>\n", x4 + 4, H - MB - 24);
    }
    fprintf(f, "<text paint-order=\"stroke\" stroke=\"white\" stroke-width=\"3\" x=\"%.1f\" y=\"%d\" fill=\"#c33\">1 ms (p99 target)</text>\n", x1ms + 4, H - MB - 40);
    fprintf(f, "</svg>\n");
    return fclose(f) ? -1 : 0;
}
