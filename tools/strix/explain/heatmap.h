/*
 * heatmap.h - the colour map of every strix relevance picture, and an SVG writer for small images
 * beside their relevance maps (the digits of examples/digits.c). Header-only (stdio, no library
 * calls) so that the strix command (render.c) and the examples share one colour map.
 *
 * Colour map: white at R = 0, towards red for R > 0 (evidence for the explained output) and
 * towards blue for R < 0 (evidence against it); the intensity is |R| / max|R|, clipped to 1, and
 * mixes linearly from white to the full colour. The foreground on a cell is black on light cells
 * and white on dark ones (relative luminance, sRGB weights of ITU-R BT.709, threshold 0.5).
 *
 * Not here: text explanations (tools/strix/render.h), PNG or other raster formats.
 */
#ifndef STRIX_TOOL_HEATMAP_H
#define STRIX_TOOL_HEATMAP_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

/* The full colours at |R| = max|R|. */
#define HEAT_POS_R 215
#define HEAT_POS_G 25
#define HEAT_POS_B 28
#define HEAT_NEG_R 33
#define HEAT_NEG_G 102
#define HEAT_NEG_B 212

/* Fonts of the pictures: one family each, since ImageMagick's SVG renderer does not read lists;
 * every element is drawn with stroke="none" inherited from one outer group, as ImageMagick
 * otherwise outlines rectangles and text. */
#define HEAT_SANS "DejaVu Sans"
#define HEAT_MONO "DejaVu Sans Mono"
#define HEAT_SVG_OPEN                                                                            \
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"                                               \
    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "                  \
    "viewBox=\"0 0 %.0f %.0f\">\n<g stroke=\"none\">\n"                                          \
    "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
#define HEAT_SVG_CLOSE "</g>\n</svg>\n"

/* rgb = the colour of relevance r when the largest |R| shown is maxabs (maxabs <= 0 or a NaN r:
 * white). */
static inline void heat_rgb(float r, float maxabs, unsigned char rgb[3]) {
    float t = maxabs > 0.0f && isfinite(r) ? fabsf(r) / maxabs : 0.0f;
    if (t > 1.0f) t = 1.0f;
    bool pos = r >= 0.0f;
    float full[3] = {pos ? HEAT_POS_R : HEAT_NEG_R, pos ? HEAT_POS_G : HEAT_NEG_G,
                     pos ? HEAT_POS_B : HEAT_NEG_B};
    for (int c = 0; c < 3; c++) rgb[c] = (unsigned char)lrintf(255.0f + t * (full[c] - 255.0f));
}

/* Whether text on background rgb should be white (the background is dark). */
static inline bool heat_dark(const unsigned char rgb[3]) {
    float lum = (0.2126f * rgb[0] + 0.7152f * rgb[1] + 0.0722f * rgb[2]) / 255.0f;
    return lum < 0.5f;
}

/* One image and its relevance map, both (h, w) row-major. */
typedef struct heatmap_item {
    const float *pixels;     /* values in [0, pixel_max]: 0 white, pixel_max black */
    const float *relevance;  /* coloured by heat_rgb against this item's own max|R| */
    const char *caption;     /* one short line under the pair (XML-escaped here), or NULL */
} heatmap_item;

/* Writes `s` as XML text content: &, < and > escaped; bytes below 0x20 (invalid in XML 1.0),
 * 0x7f and bytes >= 0x80 (maybe not UTF-8) as "\xNN" text. */
static inline void heat_xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        default:
            if (c < 0x20 || c >= 0x7f) fprintf(f, "\\x%02x", c);
            else fputc(c, f);
        }
    }
}

/* A legend strip at (x, y): blue (−max) to white (0) to red (+max), labelled. */
static inline void heat_svg_legend(FILE *f, double x, double y, double width, const char *what) {
    const int steps = 21;
    double cw = width / steps;
    for (int i = 0; i < steps; i++) {
        unsigned char rgb[3];
        heat_rgb((float)(2 * i - (steps - 1)) / (float)(steps - 1), 1.0f, rgb);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"12\" "
                   "fill=\"rgb(%d,%d,%d)\"/>\n", x + i * cw, y, cw + 0.3, rgb[0], rgb[1], rgb[2]);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"12\" fill=\"none\" "
               "stroke=\"#888\" stroke-width=\"0.5\"/>\n", x, y, width);
    fprintf(f, "<g font-family=\"" HEAT_SANS "\" font-size=\"11\" fill=\"#222\">\n"
               "<text x=\"%.1f\" y=\"%.1f\">against (−max)</text>\n"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">0</text>\n"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">for (+max)</text>\n",
            x, y + 25, x + width / 2, y + 25, x + width, y + 25);
    if (what) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + width + 12, y + 10);
        heat_xml_text(f, what);
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
}

/* Writes an SVG of n images (h, w) beside their relevance maps, `cols` pairs per row (<= 0: all
 * in one row), each pixel a `cell`-pixel square, with `title` (or NULL) on top and a colour
 * legend below. Returns 0, or -1 when a write to f failed (ferror). */
static inline int heatmap_svg_write(FILE *f, const heatmap_item *items, int n, int h, int w,
                                    float pixel_max, int cols, int cell, const char *title) {
    if (cols <= 0 || cols > n) cols = n > 0 ? n : 1;
    int rows = (n + cols - 1) / cols;
    double pad = 10, gap = 4, caption_h = 18;
    double img_w = (double)w * cell, img_h = (double)h * cell;
    double pair_w = 2 * img_w + gap, pair_h = img_h + caption_h;
    double top = title ? 34 : 10;
    double width = pad + cols * (pair_w + 2 * pad), height = top + rows * (pair_h + pad) + 44;
    if (width < 440) width = 440;
    fprintf(f, HEAT_SVG_OPEN, width, height, width, height);
    if (title) {
        fprintf(f, "<text x=\"%.0f\" y=\"22\" font-family=\"" HEAT_SANS "\" font-size=\"15\" "
                   "font-weight=\"bold\" fill=\"#222\">", pad);
        heat_xml_text(f, title);
        fputs("</text>\n", f);
    }
    for (int k = 0; k < n; k++) {
        const heatmap_item *it = &items[k];
        double x0 = pad + (k % cols) * (pair_w + 2 * pad), y0 = top + (k / cols) * (pair_h + pad);
        float maxabs = 0.0f;
        for (int i = 0; i < h * w; i++)
            if (isfinite(it->relevance[i]) && fabsf(it->relevance[i]) > maxabs)
                maxabs = fabsf(it->relevance[i]);
        fprintf(f, "<g>\n");
        for (int i = 0; i < h * w; i++) {
            double px = x0 + (i % w) * cell, py = y0 + (i / w) * cell;
            float v = pixel_max > 0.0f ? it->pixels[i] / pixel_max : 0.0f;
            v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
            int g = (int)lrintf(255.0f * (1.0f - v));
            unsigned char rgb[3];
            heat_rgb(it->relevance[i], maxabs, rgb);
            fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%d\" height=\"%d\" "
                       "fill=\"rgb(%d,%d,%d)\"/>"
                       "<rect x=\"%.0f\" y=\"%.0f\" width=\"%d\" height=\"%d\" "
                       "fill=\"rgb(%d,%d,%d)\"/>\n",
                    px, py, cell, cell, g, g, g, px + img_w + gap, py, cell, cell, rgb[0], rgb[1],
                    rgb[2]);
        }
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
                   "stroke=\"#999\" stroke-width=\"0.5\"/>"
                   "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
                   "stroke=\"#999\" stroke-width=\"0.5\"/>\n",
                x0, y0, img_w, img_h, x0 + img_w + gap, y0, img_w, img_h);
        if (it->caption) {
            fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-family=\"" HEAT_SANS "\" "
                       "font-size=\"11\" fill=\"#222\">", x0, y0 + img_h + 13);
            heat_xml_text(f, it->caption);
            fputs("</text>\n", f);
        }
        fprintf(f, "</g>\n");
    }
    heat_svg_legend(f, pad, height - 38, 200, "scale: max|R| of each image");
    fputs(HEAT_SVG_CLOSE, f);
    return ferror(f) ? -1 : 0;
}

#endif
