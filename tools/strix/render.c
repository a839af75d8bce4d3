/*
 * render.c - the views of an explained prediction (render.h): terminal, plain text, SVG, HTML
 * and JSON, of cells that are characters, tokens or words, and the grouping of bytes into
 * characters and of tokens into words.
 *
 * Every view walks a cell character by character (char_len, char_form), so the character model's
 * one-character cells and a tokenizer's tokens of any length share one set of helpers; a cell of
 * one character is shown exactly as before tokens existed.
 *
 * Does not compute anything but colours, layout and the sums of grouped cells, and does not open
 * files.
 */
#define _POSIX_C_SOURCE 200809L

#include "render.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "explain/heatmap.h"

/* Characters of a cell (or of the predicted, explained, contrast token) shown in tables, titles
 * and descriptions, and in tooltips; longer ones end in "…". */
#define TABLE_CHARS 24
#define TIP_CHARS 64
/* Bytes that hold the form of `chars` characters, "…" and the NUL (a character's form takes at
 * most 4 bytes: "\xNN", a UTF-8 sequence, ⏎). */
#define FORM_CAP(chars) (4 * (chars) + 4)
/* Bytes of the "explained: logit of 'x' minus logit of 'y' = ..." line. */
#define DESC_CAP (2 * FORM_CAP(TABLE_CHARS) + 96)

/* How one character is written: FORM_TEXT with the escapes used between single quotes in text,
 * FORM_PICTURE with the glyphs of pictures (⏎, ⇥), FORM_RAW as JSON's "char": ASCII (but NUL)
 * as itself, escaped by cJSON, any other lone byte as "\xNN" text. A valid multi-byte UTF-8
 * character is itself in every form. */
typedef enum { FORM_TEXT, FORM_PICTURE, FORM_RAW } form;

// ---- characters and escaping -------------------------------------------------------------------

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 if it is not one (overlong forms,
 * surrogates and code points past U+10FFFF are invalid, RFC 3629). */
static int utf8_seq(const unsigned char *s, int n) {
    unsigned char c = s[0];
    if (c >= 0x01 && c < 0x80) return 1;
    int len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4
                                                                                          : 0;
    if (!len || len > n) return 0;
    for (int k = 1; k < len; k++)
        if ((s[k] & 0xc0) != 0x80) return 0;
    if (c == 0xe0 && s[1] < 0xa0) return 0;  // overlong
    if (c == 0xed && s[1] >= 0xa0) return 0; // surrogates
    if (c == 0xf0 && s[1] < 0x90) return 0;  // overlong
    if (c == 0xf4 && s[1] >= 0x90) return 0; // past U+10FFFF
    return len;
}

/* Bytes of the character at s[0..n), n >= 1: a valid UTF-8 sequence, or one byte on its own. */
static int char_len(const unsigned char *s, int n) {
    int len = utf8_seq(s, n);
    return len ? len : 1;
}

int render_glyph(unsigned char c, bool pictures, char *buf) {
    if (pictures) {
        if (c == '\n') return snprintf(buf, 8, "\u23ce");
        if (c == '\t') return snprintf(buf, 8, "\u21e5");
        if (c >= 0x20 && c < 0x7f) return snprintf(buf, 8, "%c", c);
        return snprintf(buf, 8, "\\x%02x", c);
    }
    switch (c) {
    case '\n': return snprintf(buf, 8, "\\n");
    case '\t': return snprintf(buf, 8, "\\t");
    case '\r': return snprintf(buf, 8, "\\r");
    case '\\': return snprintf(buf, 8, "\\\\");
    case '\'': return snprintf(buf, 8, "\\'");
    default:
        if (c >= 0x20 && c < 0x7f) return snprintf(buf, 8, "%c", c);
        return snprintf(buf, 8, "\\x%02x", c);
    }
}

/* The form f of the character s[0..len) (char_len) into buf (>= 8 bytes). Returns the length. */
static int char_form(const unsigned char *s, int len, form f, char *buf) {
    if (len > 1) {
        memcpy(buf, s, (size_t)len);
        buf[len] = '\0';
        return len;
    }
    if (f == FORM_RAW)
        return s[0] > 0 && s[0] < 0x80 ? snprintf(buf, 8, "%c", s[0])
                                       : snprintf(buf, 8, "\\x%02x", s[0]);
    return render_glyph(s[0], f == FORM_PICTURE, buf);
}

/* The form f of the characters of s[0..n) into buf (cap >= 4): at most max of them (max <= 0:
 * all) and those that fit with room for "…", then "…" if any is left out. Returns the length. */
static int text_form(const unsigned char *s, int n, form f, int max, char *buf, size_t cap) {
    if (cap < 4) {
        if (cap) buf[0] = '\0';
        return 0;
    }
    size_t k = 0;
    for (int j = 0, shown = 0, len; j < n; j += len, shown++) {
        char g[8];
        len = char_len(s + j, n - j);
        size_t gl = (size_t)char_form(s + j, len, f, g);
        size_t room = cap - 1 - (j + len < n ? 3 : 0); // a character before the last keeps room
        if ((max > 0 && shown == max) || k + gl > room) {
            memcpy(buf + k, "\u2026", 3);
            k += 3;
            break;
        }
        memcpy(buf + k, g, gl);
        k += gl;
    }
    buf[k] = '\0';
    return (int)k;
}

int render_text(const unsigned char *s, int n, bool pictures, int max, char *buf, size_t cap) {
    return text_form(s, n, pictures ? FORM_PICTURE : FORM_TEXT, max, buf, cap);
}

/* Columns the picture glyph of c takes in a monospace line. */
static int glyph_cols(unsigned char c) {
    return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' ? 1 : 3;
}

/* Columns of the picture form of the character s[0..len) (a multi-byte character: one). */
static int char_cols(const unsigned char *s, int len) { return len > 1 ? 1 : glyph_cols(s[0]); }

/* s (UTF-8) with &, < and > escaped, for XML/HTML text content; attr: also " and ', for an
 * attribute value. (ImageMagick's SVG renderer shows &quot; in text literally.) */
static void xml_put(FILE *f, const char *s, bool attr) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs(attr ? "&quot;" : "\"", f); break;
        case '\'': fputs(attr ? "&#39;" : "'", f); break;
        default: fputc(*s, f);
        }
    }
}

static void xml_escape(FILE *f, const char *s) { xml_put(f, s, false); }

/* The picture forms of the characters of s[0..n) to f, all of them, XML-escaped when xml. */
static void put_pictures(FILE *f, const unsigned char *s, int n, bool xml) {
    for (int j = 0, len; j < n; j += len) {
        char g[8];
        len = char_len(s + j, n - j);
        char_form(s + j, len, FORM_PICTURE, g);
        if (xml) xml_escape(f, g);
        else fputs(g, f);
    }
}

/* The picture glyph of the character s[0..len) for an SVG text of its own: the character itself,
 * ' and " as the XML entities &apos; and &quot; (a text of only that quote). */
static void svg_glyph(FILE *f, const unsigned char *s, int len) {
    if (len == 1 && (s[0] == '\'' || s[0] == '"')) fputs(s[0] == '\'' ? "&apos;" : "&quot;", f);
    else put_pictures(f, s, len, true);
}

/* Columns a UTF-8 string takes (one per character; wide characters are not told apart). */
static int text_cols(const char *s) {
    int c = 0;
    for (; *s; s++) c += ((unsigned char)*s & 0xc0) != 0x80;
    return c;
}

/* s left-aligned in `width` columns. */
static void put_padded(FILE *out, const char *s, int width) {
    fputs(s, out);
    for (int k = text_cols(s); k < width; k++) fputc(' ', out);
}

// ---- cells and outputs -------------------------------------------------------------------------

/* Cell i's bytes, first byte, byte position, length in bytes and last byte. */
static const unsigned char *cell(const render_explanation *e, int i) {
    return e->text + e->start[i];
}
static unsigned char at(const render_explanation *e, int i) { return e->text[e->start[i]]; }
static int pos_of(const render_explanation *e, int i) { return e->start[i]; }
static int len_of(const render_explanation *e, int i) { return e->start[i + 1] - e->start[i]; }
static unsigned char last_of(const render_explanation *e, int i) {
    return e->text[e->start[i + 1] - 1];
}

/* The form f of cell i, at most max characters (text_form), into buf (cap bytes). */
static int cell_text(const render_explanation *e, int i, form f, int max, char *buf, size_t cap) {
    return text_form(cell(e, i), len_of(e, i), f, max, buf, cap);
}

/* What a cell is ("character", "token", "word"), what the model predicts ("character" for the
 * character model, "token" otherwise) and the heading of the tables' cell column. */
static const char *unit_of(const render_explanation *e) { return e->unit ? e->unit : "character"; }
static bool char_unit(const render_explanation *e) {
    return strcmp(unit_of(e), "character") == 0;
}
static const char *output_of(const render_explanation *e) {
    return char_unit(e) ? "character" : "token";
}
static const char *unit_head(const render_explanation *e) {
    return char_unit(e) ? "char" : unit_of(e);
}
/* What the cropped prompt's n_bytes count: the character model's bytes are its characters. */
static const char *crop_unit(const render_explanation *e) {
    return char_unit(e) ? "characters" : "bytes";
}

/* Whether an output is explained against a contrast. */
static bool has_contrast(const render_explanation *e) {
    return e->contrast_text || e->contrast >= 0;
}

/* The predicted (0), explained (1) or contrast (2) output's text, NULL when only its byte is. */
static const char *output_text(const render_explanation *e, int which) {
    return which == 0 ? e->predicted_text : which == 1 ? e->target_text : e->contrast_text;
}
static unsigned char output_byte(const render_explanation *e, int which) {
    return which == 0 ? e->predicted : which == 1 ? e->target : (unsigned char)e->contrast;
}

/* The visible form of output `which` (output_text) into buf (FORM_CAP(TABLE_CHARS) bytes): its
 * text's characters when set, else its byte's glyph. */
static void output_form(const render_explanation *e, int which, bool pictures, char *buf) {
    const char *t = output_text(e, which);
    if (t)
        text_form((const unsigned char *)t, (int)strlen(t), pictures ? FORM_PICTURE : FORM_TEXT,
                  TABLE_CHARS, buf, FORM_CAP(TABLE_CHARS));
    else render_glyph(output_byte(e, which), pictures, buf);
}

/* " (space)" and the like after a quoted whitespace glyph, "" for other bytes. */
static const char *glyph_name(unsigned char c) {
    return c == ' ' ? " (space)" : c == '\n' ? " (newline)" : c == '\t' ? " (tab)" : "";
}

/* glyph_name of the predicted output: of its byte, or of its text when that is one byte. */
static const char *predicted_name(const render_explanation *e) {
    const char *t = e->predicted_text;
    if (!t) return glyph_name(e->predicted);
    return t[0] && !t[1] ? glyph_name((unsigned char)t[0]) : "";
}

float render_max_abs(const float *r, int n) {
    float m = 0.0f;
    for (int i = 0; i < n; i++)
        if (isfinite(r[i]) && fabsf(r[i]) > m) m = fabsf(r[i]);
    return m;
}

/* "'e' (p = 0.4123)"-style descriptions of what was explained, into buf (pictures glyphs). */
static void describe_target(const render_explanation *e, bool pictures, char *buf, size_t cap) {
    char t[FORM_CAP(TABLE_CHARS)], c[FORM_CAP(TABLE_CHARS)];
    output_form(e, 1, pictures, t);
    if (has_contrast(e)) {
        output_form(e, 2, pictures, c);
        snprintf(buf, cap, "logit of '%s' minus logit of '%s' = %.4f (%.4f - %.4f)", t, c,
                 (double)e->target_logit - (double)e->contrast_logit, (double)e->target_logit,
                 (double)e->contrast_logit);
    } else {
        snprintf(buf, cap, "logit of '%s' = %.4f (p = %.4f)", t, (double)e->target_logit,
                 (double)e->target_prob);
    }
}

/* "rule attnlrp", "method saliency", "method integrated-gradients (50 steps)" into buf. */
static void describe_method(const render_explanation *e, char *buf, size_t cap) {
    if (e->rule) snprintf(buf, cap, "rule %s", e->rule);
    else if (e->method && strcmp(e->method, "integrated-gradients") == 0)
        snprintf(buf, cap, "method %s (%d steps)", e->method, e->ig_steps);
    else snprintf(buf, cap, "method %s", e->method ? e->method : "?");
}

/* Σ of the cells' relevance, in double, ascending. */
static double sum_chars(const render_explanation *e) {
    double s = 0.0;
    for (int i = 0; i < e->n; i++) s += e->relevance[i];
    return s;
}

// ---- terminal ----------------------------------------------------------------------------------

/* Columns of the tables' cell column: the widest quoted cell (cut after TABLE_CHARS characters),
 * at least the 6 of "'\xNN'" (the character model's tables). */
static int table_width(const render_explanation *e) {
    int width = 6;
    for (int i = 0; i < e->n; i++) {
        char g[FORM_CAP(TABLE_CHARS)];
        cell_text(e, i, FORM_TEXT, TABLE_CHARS, g, sizeof g);
        if (text_cols(g) + 2 > width) width = text_cols(g) + 2;
    }
    return width;
}

/* A table row's position and quoted cell i, padded to width columns. */
static void table_cell(FILE *out, const render_explanation *e, int i, int width) {
    char g[FORM_CAP(TABLE_CHARS)], q[FORM_CAP(TABLE_CHARS) + 2];
    cell_text(e, i, FORM_TEXT, TABLE_CHARS, g, sizeof g);
    snprintf(q, sizeof q, "'%s'", g);
    fprintf(out, "  %5d  ", pos_of(e, i));
    put_padded(out, q, width);
}

void render_prompt(FILE *out, const render_explanation *e, bool color) {
    float maxabs = render_max_abs(e->relevance, e->n);
    if (!color) {
        int width = table_width(e);
        fprintf(out, "  %5s  %-*s  %12s\n", "pos", width, unit_head(e), "relevance");
        for (int i = 0; i < e->n; i++) {
            table_cell(out, e, i, width);
            fprintf(out, "  %+12.6f\n", (double)e->relevance[i]);
        }
        return;
    }
    for (int i = 0; i < e->n; i++) {
        unsigned char rgb[3];
        heat_rgb(e->relevance[i], maxabs, rgb);
        int fg = heat_dark(rgb) ? 255 : 0;
        fprintf(out, "\x1b[48;2;%d;%d;%dm\x1b[38;2;%d;%d;%dm", rgb[0], rgb[1], rgb[2], fg, fg, fg);
        put_pictures(out, cell(e, i), len_of(e, i), false);
        fputs("\x1b[0m", out);
        if (last_of(e, i) == '\n') fputc('\n', out);
    }
    fputc('\n', out);
}

void render_sums(const render_explanation *e, char *buf, size_t cap) {
    int k = snprintf(buf, cap, "relevance sums: output %.6f, input %.6f", e->sum_out, e->sum_in);
    if (k > 0 && (size_t)k < cap && e->relevance_position)
        k += snprintf(buf + k, cap - (size_t)k, " (%ss %.6f, positions %.6f)", unit_of(e),
                      sum_chars(e), e->sum_in - sum_chars(e));
    if (k > 0 && (size_t)k < cap && !isnan(e->softmax_gap))
        k += snprintf(buf + k, cap - (size_t)k, ", softmax rule gap %.6f", e->softmax_gap);
    if (k > 0 && (size_t)k < cap && !isnan(e->baseline_output))
        snprintf(buf + k, cap - (size_t)k, " (baseline output %.6f: completeness wants input = "
                 "%.6f)", e->baseline_output, e->sum_out - e->baseline_output);
}

void render_top(FILE *out, const render_explanation *e, int top) {
    if (top <= 0) return;
    if (top > e->n) top = e->n;
    int *idx = malloc(sizeof(int) * (size_t)e->n);
    if (!idx) return;
    for (int i = 0; i < e->n; i++) idx[i] = i;
    // selection of the `top` largest |R| (stable: ties keep the lower position first)
    for (int k = 0; k < top; k++) {
        int best = k;
        for (int j = k + 1; j < e->n; j++) {
            float a = fabsf(e->relevance[idx[j]]), b = fabsf(e->relevance[idx[best]]);
            if (a > b || (a == b && idx[j] < idx[best]) || (isnan(b) && !isnan(a))) best = j;
        }
        int t = idx[k];
        idx[k] = idx[best];
        idx[best] = t;
    }
    double total = 0.0;
    for (int i = 0; i < e->n; i++)
        if (isfinite(e->relevance[i])) total += fabs((double)e->relevance[i]);
    int width = table_width(e);
    fprintf(out, "  %5s  %-*s  %12s  %7s\n", "pos", width, unit_head(e), "relevance", "share");
    for (int k = 0; k < top; k++) {
        int i = idx[k];
        double share = total > 0.0 ? 100.0 * fabs((double)e->relevance[i]) / total : 0.0;
        table_cell(out, e, i, width);
        fprintf(out, "  %+12.6f  %6.1f%%\n", (double)e->relevance[i], share);
    }
    free(idx);
}

// ---- SVG ---------------------------------------------------------------------------------------

/* Monospace cells of the SVG: a column's width and a line's height, in pixels. */
static const double svg_cw = 11.0, svg_ch = 26.0;

/* Columns cell i takes in a picture whose lines hold `cols` (>= 2) columns, and in *shown the
 * bytes of it drawn: all of them when they fit, else those that fit in cols - 1 columns, "…"
 * taking the last. */
static int svg_fit(const render_explanation *e, int i, int cols, int *shown) {
    const unsigned char *s = cell(e, i);
    int n = len_of(e, i), c = 0, j = 0;
    for (int len; j < n; j += len) {
        len = char_len(s + j, n - j);
        c += char_cols(s + j, len);
    }
    *shown = n;
    if (c <= cols) return c;
    for (j = 0, c = 0; j < n;) {
        int len = char_len(s + j, n - j), w = char_cols(s + j, len);
        if (c + w > cols - 1) break;
        c += w;
        j += len;
    }
    *shown = j;
    return c + 1;
}

/* An SVG <text> opened centred at x on baseline y; small: 4 glyphs of \xNN in 3 columns. */
static void svg_text_open(FILE *out, double x, double y, const char *fill, bool small) {
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\"%s>", x, y, fill,
            small ? " font-size=\"12\"" : "");
}

/* The glyphs of cell i's first `shown` bytes (and "…" when cut) in an SVG, its left edge at x,
 * the baseline at y: one <text> per character but spaces, centred on its columns. */
static void svg_cell_glyphs(FILE *out, const render_explanation *e, int i, int shown, double x,
                            double y, const char *fill) {
    const unsigned char *s = cell(e, i);
    int n = len_of(e, i);
    for (int j = 0, len, w; j < shown; j += len, x += w * svg_cw) {
        len = char_len(s + j, n - j);
        w = char_cols(s + j, len);
        if (len == 1 && s[j] == ' ') continue;
        svg_text_open(out, x + w * svg_cw / 2, y, fill, w > 1);
        svg_glyph(out, s + j, len);
        fputs("</text>", out);
    }
    if (shown < n) {
        svg_text_open(out, x + svg_cw / 2, y, fill, false);
        fputs("\u2026</text>", out); // the cell was cut
    }
}

/* Lays the cells out: col[i], line[i] of cell i, lines of `cols` columns; returns the widest
 * line's columns and sets *lines. */
static int svg_layout(const render_explanation *e, int cols, int *col, int *line, int *lines) {
    int c = 0, l = 0, max_c = 0, shown;
    for (int i = 0; i < e->n; i++) {
        int w = svg_fit(e, i, cols, &shown);
        if (c > 0 && c + w > cols) {
            c = 0;
            l++;
        }
        col[i] = c;
        line[i] = l;
        c += w;
        if (c > max_c) max_c = c;
        if (last_of(e, i) == '\n' && i + 1 < e->n) {
            c = 0;
            l++;
        }
    }
    *lines = l + 1;
    return max_c;
}

/* The SVG's three title lines (sans-serif group), at the left margin pad. */
static void svg_titles(FILE *out, const render_explanation *e, double pad) {
    char pg[FORM_CAP(TABLE_CHARS)], desc[DESC_CAP], how[64];
    output_form(e, 0, true, pg);
    describe_target(e, true, desc, sizeof desc);
    describe_method(e, how, sizeof how);
    fprintf(out, "<text x=\"%.0f\" y=\"26\" font-size=\"17\" font-weight=\"bold\">"
                 "Next %s: '", pad, output_of(e));
    xml_escape(out, pg);
    fprintf(out, "'%s, p = %.4f</text>\n", predicted_name(e), (double)e->predicted_prob);
    fprintf(out, "<text x=\"%.0f\" y=\"46\" font-size=\"11\">explained: ", pad);
    xml_escape(out, desc);
    fprintf(out, ", %s</text>\n", how);
    fprintf(out, "<text x=\"%.0f\" y=\"60\" font-size=\"11\">", pad);
    if (e->model) {
        fputs("model ", out);
        heat_xml_text(out, e->model);
        fputs(e->offset > 0 ? ", " : "", out);
    }
    if (e->offset > 0)
        fprintf(out, "the last %d %s of the prompt", e->n_bytes, crop_unit(e));
    fputs("</text>\n", out);
}

/* Cell i of the SVG: its title (position, text, relevance), rectangle and glyphs. */
static void svg_cell(FILE *out, const render_explanation *e, int i, int cols, double x, double y,
                     float maxabs) {
    unsigned char rgb[3];
    heat_rgb(e->relevance[i], maxabs, rgb);
    int shown, w = svg_fit(e, i, cols, &shown);
    char g[FORM_CAP(TIP_CHARS)];
    cell_text(e, i, FORM_TEXT, TIP_CHARS, g, sizeof g);
    fprintf(out, "<g><title>position %d '", pos_of(e, i));
    xml_escape(out, g);
    fprintf(out, "': %+.6f</title>", (double)e->relevance[i]);
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                 "fill=\"rgb(%d,%d,%d)\"/>",
            x, y, w * svg_cw, svg_ch - 2, rgb[0], rgb[1], rgb[2]);
    svg_cell_glyphs(out, e, i, shown, x, y + svg_ch - 8, heat_dark(rgb) ? "#fff" : "#000");
    fputs("</g>\n", out);
}

int render_svg(FILE *out, const render_explanation *e, int cols) {
    if (cols < 8) cols = 8;
    const double pad = 16.0, top = 70.0;
    // layout: the column and line of every cell
    int *col = malloc(sizeof(int) * (size_t)e->n), *line = malloc(sizeof(int) * (size_t)e->n);
    if (!col || !line) {
        free(col);
        free(line);
        return -1;
    }
    int lines, max_c = svg_layout(e, cols, col, line, &lines);
    char sums[200];
    render_sums(e, sums, sizeof sums);
    double width = 2 * pad + max_c * svg_cw, body_h = lines * svg_ch;
    double text_w = 2 * pad + 6.4 * (double)strlen(sums); // DejaVu Sans 11 px: ~6.4 px a glyph
    if (width < text_w) width = text_w;
    if (width < 560) width = 560;
    double height = top + body_h + 90;
    float maxabs = render_max_abs(e->relevance, e->n);

    // presentation attributes rather than CSS: every renderer (browsers, librsvg, ImageMagick)
    // reads them (heatmap.h)
    fprintf(out, HEAT_SVG_OPEN "<g font-family=\"" HEAT_SANS "\" fill=\"#222\">\n", width, height,
            width, height);
    svg_titles(out, e, pad);
    fputs("</g>\n<g font-family=\"" HEAT_MONO "\" font-size=\"18\" text-anchor=\"middle\">\n",
          out);
    for (int i = 0; i < e->n; i++)
        svg_cell(out, e, i, cols, pad + col[i] * svg_cw, top + line[i] * svg_ch, maxabs);
    fputs("</g>\n", out);
    double y = top + body_h + 14;
    char what[64];
    snprintf(what, sizeof what, "max|R| = %.4g", (double)maxabs);
    heat_svg_legend(out, pad, y, 220, what);
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" font-family=\"" HEAT_SANS "\" font-size=\"11\" "
                 "fill=\"#222\">%s</text>\n" HEAT_SVG_CLOSE,
            pad, y + 50, sums);
    free(col);
    free(line);
    return ferror(out) ? -1 : 0;
}

// ---- HTML --------------------------------------------------------------------------------------

/* The page's head and its heading, up to "<h1>Next character: <code>'". */
static void html_head(FILE *out, const render_explanation *e, const char *pg) {
    fprintf(out, "<!DOCTYPE html>\n<!-- " STRIX_OUTPUT_MARKER " -->\n<html lang=\"en\">\n"
                 "<head>\n<meta charset=\"utf-8\">\n<title>strix explain: next %s '",
            output_of(e));
    xml_escape(out, pg);
    fputs("'</title>\n<style>\n"
          "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:2em;color:#222;"
          "max-width:60em}\n"
          "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}\n"
          ".prompt{font-family:'DejaVu Sans Mono',Consolas,monospace;font-size:20px;"
          "line-height:2;white-space:pre-wrap;word-break:break-all;border:1px solid #ccc;"
          "padding:.5em}\n"
          ".prompt span{position:relative;padding:3px 0}\n"
          ".prompt span:hover{outline:2px solid #000;z-index:2}\n"
          ".prompt span:hover::after{content:attr(data-tip);position:absolute;left:0;top:1.7em;"
          "background:#222;color:#fff;font:12px 'DejaVu Sans',Arial,sans-serif;padding:2px 6px;"
          "white-space:nowrap;border-radius:3px}\n"
          ".legend{display:inline-block;width:220px;height:12px;border:1px solid #888;"
          "vertical-align:middle;background:linear-gradient(to right,", out);
    for (int i = 0; i < 3; i++) {
        unsigned char rgb[3];
        heat_rgb((float)(i - 1), 1.0f, rgb);
        fprintf(out, "%srgb(%d,%d,%d)", i ? "," : "", rgb[0], rgb[1], rgb[2]);
    }
    fputs(")}\n"
          "table{border-collapse:collapse}td,th{padding:2px 12px;text-align:right}"
          "th{border-bottom:1px solid #888}\n"
          "</style>\n</head>\n<body>\n", out);
    fprintf(out, "<h1>Next %s: <code>'", output_of(e));
}

/* Cell i of the page: a span coloured by its relevance, whose tooltip shows its position, text
 * (cut after TIP_CHARS characters) and relevance; a line break after a cell that ends with '\n'. */
static void html_cell(FILE *out, const render_explanation *e, int i, float maxabs) {
    unsigned char rgb[3];
    heat_rgb(e->relevance[i], maxabs, rgb);
    char g[FORM_CAP(TIP_CHARS)];
    cell_text(e, i, FORM_TEXT, TIP_CHARS, g, sizeof g);
    fprintf(out, "<span style=\"background:rgb(%d,%d,%d);color:%s\" data-tip=\"position %d "
                 "&#39;",
            rgb[0], rgb[1], rgb[2], heat_dark(rgb) ? "#fff" : "#000", pos_of(e, i));
    xml_put(out, g, true);
    fprintf(out, "&#39;: %+.6f\">", (double)e->relevance[i]);
    put_pictures(out, cell(e, i), len_of(e, i), true);
    fputs("</span>", out);
    if (last_of(e, i) == '\n') fputc('\n', out);
}

int render_html(FILE *out, const render_explanation *e, int top) {
    float maxabs = render_max_abs(e->relevance, e->n);
    char pg[FORM_CAP(TABLE_CHARS)], desc[DESC_CAP];
    output_form(e, 0, true, pg);
    describe_target(e, true, desc, sizeof desc);
    html_head(out, e, pg);
    xml_escape(out, pg);
    fprintf(out, "'</code> (p = %.4f)</h1>\n<p>Explained: ", (double)e->predicted_prob);
    xml_escape(out, desc);
    char how[64];
    describe_method(e, how, sizeof how);
    fputs(", ", out);
    xml_escape(out, how);
    if (e->model) {
        fputs(", model <code>", out);
        heat_xml_text(out, e->model);
        fputs("</code>", out);
    }
    if (e->offset > 0)
        fprintf(out, " (the last %d %s of the prompt)", e->n_bytes, crop_unit(e));
    fputs(".</p>\n<div class=\"prompt\">", out);
    for (int i = 0; i < e->n; i++) html_cell(out, e, i, maxabs);
    fprintf(out, "</div>\n<p>against <span class=\"legend\"></span> for &nbsp; (intensity: "
                 "|R| / max|R|, max|R| = %.4g; hover a %s for its value)</p>\n",
            (double)maxabs, unit_of(e));
    if (top > e->n) top = e->n;
    if (top > 0) {
        fputs("<h2>Top contributors</h2>\n<pre>\n", out);
        // the table's cells may hold <, > and &: escape it by writing it to memory first
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (mem) {
            render_top(mem, e, top);
            fclose(mem);
            if (buf) xml_escape(out, buf);
            free(buf);
        }
        fputs("</pre>\n", out);
    }
    char sums[200];
    render_sums(e, sums, sizeof sums);
    fprintf(out, "<p>%s.</p>\n</body>\n</html>\n", sums);
    return ferror(out) ? -1 : 0;
}


// ---- JSON --------------------------------------------------------------------------------------

/* s[0..n) as a NUL-terminated UTF-8 string, each invalid byte (and NUL) replaced by U+FFFD. */
static char *utf8_clean(const unsigned char *s, int n) {
    char *o = malloc(3 * (size_t)n + 1);
    if (!o) return NULL;
    size_t k = 0;
    for (int i = 0; i < n;) {
        int len = utf8_seq(s + i, n - i);
        if (len) {
            memcpy(o + k, s + i, (size_t)len);
            k += (size_t)len;
            i += len;
        } else {
            memcpy(o + k, "\xef\xbf\xbd", 3);
            k += 3;
            i++;
        }
    }
    o[k] = '\0';
    return o;
}

/* The bytes s[0..n) as a JSON string value of their FORM_RAW characters ("char": a lone byte
 * >= 0x80 is not UTF-8 and becomes "\xNN" text), or NULL when out of memory. */
static cJSON *raw_json(const unsigned char *s, int n) {
    size_t cap = FORM_CAP((size_t)n);
    char *t = malloc(cap);
    if (!t) return NULL;
    text_form(s, n, FORM_RAW, 0, t, cap);
    cJSON *v = cJSON_CreateString(t);
    free(t);
    return v;
}

/* The double nearest the shortest decimal text that reads back as x: JSON shows 0.1f as 0.1, not
 * 0.10000000149011612. */
static double shortest(float x) {
    char buf[32];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)x);
        if (strtof(buf, NULL) == x) break;
    }
    return isfinite(x) ? strtod(buf, NULL) : (double)x;
}

/* obj[key] = [v[0], ..., v[n-1]] (bytes as numbers). Returns false when out of memory. */
static bool add_ints(cJSON *obj, const char *key, const unsigned char *v, int n) {
    cJSON *a = cJSON_AddArrayToObject(obj, key);
    for (int k = 0; a && k < n; k++) {
        cJSON *x = cJSON_CreateNumber(v[k]);
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            return false;
        }
    }
    return a != NULL;
}

/* obj[key] = v (taken over, or deleted on failure). Returns false when v is NULL or out of
 * memory. */
static bool add_item(cJSON *obj, const char *key, cJSON *v) {
    if (v && cJSON_AddItemToObject(obj, key, v)) return true;
    cJSON_Delete(v);
    return false;
}

/* Adds "seed": the exact decimal integer (a cJSON number, a double, would round one above 2^53).
 * Returns whether it was added. */
static bool seed_json(cJSON *obj, uint64_t seed) {
    char digits[24];
    snprintf(digits, sizeof digits, "%" PRIu64, seed);
    return cJSON_AddRawToObject(obj, "seed", digits) != NULL;
}

/* Adds prompt, offset, model, method, rule (ig_steps) and unit. Returns false when out of
 * memory. */
static bool json_head(cJSON *root, const render_explanation *e) {
    char *text = utf8_clean(e->text, e->offset + e->n_bytes);
    const char *m = e->model ? e->model : "";
    char *model = utf8_clean((const unsigned char *)m, (int)strlen(m));
    bool ok = text && model && cJSON_AddStringToObject(root, "generator", STRIX_OUTPUT_MARKER) &&
              cJSON_AddStringToObject(root, "prompt", text) &&
              cJSON_AddNumberToObject(root, "offset", e->offset) &&
              cJSON_AddStringToObject(root, "model", model) &&
              cJSON_AddStringToObject(root, "method", e->method ? e->method : "lrp") &&
              (e->rule ? cJSON_AddStringToObject(root, "rule", e->rule)
                       : cJSON_AddNullToObject(root, "rule"));
    if (ok && e->method && strcmp(e->method, "integrated-gradients") == 0)
        ok = cJSON_AddNumberToObject(root, "ig_steps", e->ig_steps) != NULL;
    if (ok && e->unit) ok = cJSON_AddStringToObject(root, "unit", e->unit) != NULL;
    free(text);
    free(model);
    return ok;
}

/* Adds predicted, target, contrast (null without one) and the *_text keys of the outputs whose
 * text is set. Returns false when out of memory. */
static bool json_outputs(cJSON *root, const render_explanation *e) {
    static const char *const keys[3] = {"predicted", "target", "contrast"};
    static const char *const text_keys[3] = {"predicted_text", "target_text", "contrast_text"};
    bool ok = true;
    for (int k = 0; k < 3 && ok; k++) {
        const char *t = output_text(e, k);
        unsigned char b = output_byte(e, k);
        ok = add_item(root, keys[k], k == 2 && !has_contrast(e) ? cJSON_CreateNull()
                                     : t ? raw_json((const unsigned char *)t, (int)strlen(t))
                                         : raw_json(&b, 1));
    }
    for (int k = 0; k < 3 && ok; k++) {
        const char *t = output_text(e, k);
        char *clean = t ? utf8_clean((const unsigned char *)t, (int)strlen(t)) : NULL;
        ok = !t || (clean && cJSON_AddStringToObject(root, text_keys[k], clean));
        free(clean);
    }
    static const char *const id_keys[3] = {"predicted_id", "target_id", "contrast_id"};
    for (int k = 0; k < 3 && ok && e->output_ids; k++)
        ok = (k == 2 && e->output_ids[2] < 0) ||
             cJSON_AddNumberToObject(root, id_keys[k], e->output_ids[k]);
    return ok;
}

/* Adds the probabilities and logits, and the *_byte keys of the outputs without a text. Returns
 * false when out of memory. */
static bool json_numbers(cJSON *root, const render_explanation *e) {
    bool ok = (e->predicted_text ||
               cJSON_AddNumberToObject(root, "predicted_byte", e->predicted)) &&
              cJSON_AddNumberToObject(root, "probability", shortest(e->predicted_prob)) &&
              (e->target_text || cJSON_AddNumberToObject(root, "target_byte", e->target)) &&
              cJSON_AddNumberToObject(root, "target_probability", shortest(e->target_prob)) &&
              cJSON_AddNumberToObject(root, "target_logit", shortest(e->target_logit));
    if (ok && has_contrast(e))
        ok = (e->contrast_text || cJSON_AddNumberToObject(root, "contrast_byte", e->contrast)) &&
             cJSON_AddNumberToObject(root, "contrast_logit", shortest(e->contrast_logit));
    return ok;
}

/* Cell i as a "positions" entry into p. Returns false when out of memory. */
static bool json_cell(cJSON *p, const render_explanation *e, int i) {
    return cJSON_AddNumberToObject(p, "position", pos_of(e, i)) &&
           (!e->cell_ids || cJSON_AddNumberToObject(p, "id", e->cell_ids[i])) &&
           cJSON_AddNumberToObject(p, "byte", at(e, i)) &&
           add_ints(p, "bytes", cell(e, i), len_of(e, i)) &&
           add_item(p, "char", raw_json(cell(e, i), len_of(e, i))) &&
           cJSON_AddNumberToObject(p, "relevance", shortest(e->relevance[i])) &&
           (!e->relevance_position ||
            cJSON_AddNumberToObject(p, "position_relevance", shortest(e->relevance_position[i])));
}

/* Adds "positions", one entry per cell. Returns false when out of memory. */
static bool json_cells(cJSON *root, const render_explanation *e) {
    cJSON *pos = cJSON_AddArrayToObject(root, "positions");
    for (int i = 0; pos && i < e->n; i++) {
        cJSON *p = cJSON_CreateObject();
        if (!p || !cJSON_AddItemToArray(pos, p)) {
            cJSON_Delete(p);
            return false;
        }
        if (!json_cell(p, e, i)) return false;
    }
    return pos != NULL;
}

/* Adds the sums and the deletion check. Returns false when out of memory. */
static bool json_sums(cJSON *root, const render_explanation *e) {
    bool ok = cJSON_AddNumberToObject(root, "relevance_out_sum", e->sum_out) &&
              cJSON_AddNumberToObject(root, "relevance_in_sum", e->sum_in) &&
              cJSON_AddNumberToObject(root, "relevance_characters_sum", sum_chars(e)) &&
              (isnan(e->softmax_gap) || cJSON_AddNumberToObject(root, "softmax_gap",
                                                                e->softmax_gap)) &&
              (isnan(e->conserved_sum) || cJSON_AddNumberToObject(root, "conserved_sum",
                                                                  e->conserved_sum)) &&
              (isnan(e->baseline_output) || cJSON_AddNumberToObject(root, "baseline_output",
                                                                    e->baseline_output));
    const render_deletion *dl = e->deletion;
    if (!ok || !dl) return ok;
    cJSON *del = cJSON_AddObjectToObject(root, "deletion");
    cJSON *ps = del ? cJSON_AddArrayToObject(del, "positions") : NULL;
    for (int k = 0; ps && k < dl->k; k++) {
        cJSON *x = cJSON_CreateNumber(dl->positions[k]);
        if (!x || !cJSON_AddItemToArray(ps, x)) {
            cJSON_Delete(x);
            ps = NULL;
        }
    }
    return ps && cJSON_AddNumberToObject(del, "k", dl->k) &&
           cJSON_AddNumberToObject(del, "output_before", dl->before) &&
           cJSON_AddNumberToObject(del, "output_after", dl->after_top) &&
           cJSON_AddNumberToObject(del, "drop", dl->before - dl->after_top) &&
           cJSON_AddNumberToObject(del, "random_output_after", dl->after_random) &&
           cJSON_AddNumberToObject(del, "random_drop", dl->before - dl->after_random) &&
           cJSON_AddNumberToObject(del, "random_draws", dl->draws) &&
           seed_json(del, dl->seed);
}

char *render_json(const render_explanation *e) {
    cJSON *root = cJSON_CreateObject();
    bool ok = root && json_head(root, e) && json_outputs(root, e) && json_numbers(root, e) &&
              json_cells(root, e) && json_sums(root, e);
    char *json = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    return json;
}

// ---- characters and words ----------------------------------------------------------------------

int render_group_utf8(render_explanation *e, const float *byte_rel, const float *byte_pos) {
    int nb = e->n_bytes;
    int *start = malloc(sizeof(int) * (size_t)(nb + 1));
    float *rel = malloc(sizeof(float) * (size_t)nb);
    float *pos = byte_pos ? malloc(sizeof(float) * (size_t)nb) : NULL;
    if (!start || !rel || (byte_pos && !pos)) {
        free(start);
        free(rel);
        free(pos);
        return -1;
    }
    const unsigned char *t = e->text + e->offset;
    int n = 0;
    for (int i = 0; i < nb;) {
        int len = char_len(t + i, nb - i);
        double r = 0.0, p = 0.0;
        for (int k = 0; k < len; k++) {
            r += byte_rel[i + k];
            if (byte_pos) p += byte_pos[i + k];
        }
        start[n] = e->offset + i;
        rel[n] = (float)r;
        if (pos) pos[n] = (float)p;
        n++;
        i += len;
    }
    start[n] = e->offset + nb;
    e->n = n;
    e->start = start;
    e->relevance = rel;
    e->relevance_position = pos;
    return 0;
}

/* Whether byte c is whitespace: space, \t, \n, \v, \f, \r (isspace in the C locale). */
static bool is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Whether cell i starts a word (render_group_words). */
static bool word_starts(const render_explanation *e, int i) {
    bool alone = e->cell_alone && (e->cell_alone[i] || (i > 0 && e->cell_alone[i - 1]));
    return i == 0 || alone || is_space(at(e, i)) || is_space(last_of(e, i - 1));
}

int render_group_words(render_explanation *e, const float *cell_rel, const float *cell_pos) {
    int n = e->n;
    int *start = malloc(sizeof(int) * (size_t)(n + 1));
    float *rel = malloc(sizeof(float) * (size_t)n);
    float *pos = cell_pos ? malloc(sizeof(float) * (size_t)n) : NULL;
    if (!start || !rel || (cell_pos && !pos)) {
        free(start);
        free(rel);
        free(pos);
        return -1;
    }
    int w = -1;
    double r = 0.0, p = 0.0;
    for (int i = 0; i < n; i++) {
        if (word_starts(e, i)) {
            if (w >= 0) { // the word before is complete
                rel[w] = (float)r;
                if (pos) pos[w] = (float)p;
            }
            start[++w] = e->start[i];
            r = p = 0.0;
        }
        r += cell_rel[i];
        if (cell_pos) p += cell_pos[i];
    }
    rel[w] = (float)r;
    if (pos) pos[w] = (float)p;
    start[w + 1] = e->start[n];
    e->n = w + 1;
    e->start = start;
    e->relevance = rel;
    e->relevance_position = pos;
    e->cell_ids = NULL;
    e->cell_alone = NULL;
    e->unit = "word";
    return 0;
}

void render_group_free(render_explanation *e) {
    free((void *)e->start);
    free((void *)e->relevance);
    free((void *)e->relevance_position);
    e->start = NULL;
    e->relevance = e->relevance_position = NULL;
}
