/*
 * render.c - the views of an explained prediction (render.h): terminal, plain text, SVG, HTML
 * and JSON.
 *
 * Does not compute anything but colours and layout, and does not open files.
 */
#define _POSIX_C_SOURCE 200809L

#include "render.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "explain/heatmap.h"

// ---- glyphs and escaping -----------------------------------------------------------------------

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

/* Columns the picture glyph of c takes in a monospace line. */
static int glyph_cols(unsigned char c) {
    return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' ? 1 : 3;
}


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

/* The picture glyph of c, escaped for text content. */
static void xml_glyph(FILE *f, unsigned char c) {
    char g[8];
    render_glyph(c, true, g);
    xml_escape(f, g);
}

/* The first byte of the i-th explained character, its byte position and its length in bytes. */
static unsigned char at(const render_explanation *e, int i) { return e->text[e->start[i]]; }
static int pos_of(const render_explanation *e, int i) { return e->start[i]; }
static int len_of(const render_explanation *e, int i) { return e->start[i + 1] - e->start[i]; }

/* The glyph of character i into buf (>= 8 bytes): a multi-byte UTF-8 character as itself, a
 * single byte as render_glyph(pictures) shows it. Returns the length. */
static int cell_glyph(const render_explanation *e, int i, bool pictures, char *buf) {
    int len = len_of(e, i);
    if (len == 1) return render_glyph(at(e, i), pictures, buf);
    memcpy(buf, e->text + e->start[i], (size_t)len);
    buf[len] = '\0';
    return len;
}

/* Columns of character i's picture glyph (a multi-byte character: one). */
static int cell_cols(const render_explanation *e, int i) {
    return len_of(e, i) > 1 ? 1 : glyph_cols(at(e, i));
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

/* The picture glyph of c for an SVG cell: the character itself, ' and " as the XML entities
 * &apos; and &quot; (a cell's text of only that quote). */
static void svg_glyph(FILE *f, unsigned char c) {
    if (c == '\'' || c == '"') fputs(c == '\'' ? "&apos;" : "&quot;", f);
    else xml_glyph(f, c);
}

float render_max_abs(const float *r, int n) {
    float m = 0.0f;
    for (int i = 0; i < n; i++)
        if (isfinite(r[i]) && fabsf(r[i]) > m) m = fabsf(r[i]);
    return m;
}

/* " (space)" and the like after a quoted whitespace glyph, "" for other bytes. */
static const char *glyph_name(unsigned char c) {
    return c == ' ' ? " (space)" : c == '\n' ? " (newline)" : c == '\t' ? " (tab)" : "";
}

/* "'e' (p = 0.4123)"-style descriptions of what was explained, into buf (pictures glyphs). */
static void describe_target(const render_explanation *e, bool pictures, char *buf, size_t cap) {
    char t[8], c[8];
    render_glyph(e->target, pictures, t);
    if (e->contrast >= 0) {
        render_glyph((unsigned char)e->contrast, pictures, c);
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

/* Σ of the characters' relevance, in double, ascending. */
static double sum_chars(const render_explanation *e) {
    double s = 0.0;
    for (int i = 0; i < e->n; i++) s += e->relevance[i];
    return s;
}

// ---- terminal ----------------------------------------------------------------------------------

void render_prompt(FILE *out, const render_explanation *e, bool color) {
    float maxabs = render_max_abs(e->relevance, e->n);
    char g[8];
    if (!color) {
        fprintf(out, "  %5s  %-6s  %12s\n", "pos", "char", "relevance");
        for (int i = 0; i < e->n; i++) {
            char q[12];
            cell_glyph(e, i, false, g);
            snprintf(q, sizeof q, "'%s'", g);
            fprintf(out, "  %5d  ", pos_of(e, i));
            put_padded(out, q, 6);
            fprintf(out, "  %+12.6f\n", (double)e->relevance[i]);
        }
        return;
    }
    for (int i = 0; i < e->n; i++) {
        unsigned char rgb[3];
        heat_rgb(e->relevance[i], maxabs, rgb);
        int fg = heat_dark(rgb) ? 255 : 0;
        cell_glyph(e, i, true, g);
        fprintf(out, "\x1b[48;2;%d;%d;%dm\x1b[38;2;%d;%d;%dm%s\x1b[0m", rgb[0], rgb[1], rgb[2], fg,
                fg, fg, g);
        if (at(e, i) == '\n') fputc('\n', out);
    }
    fputc('\n', out);
}

void render_sums(const render_explanation *e, char *buf, size_t cap) {
    int k = snprintf(buf, cap, "relevance sums: output %.6f, input %.6f", e->sum_out, e->sum_in);
    if (k > 0 && (size_t)k < cap && e->relevance_position)
        k += snprintf(buf + k, cap - (size_t)k, " (characters %.6f, positions %.6f)", sum_chars(e),
                      e->sum_in - sum_chars(e));
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
    fprintf(out, "  %5s  %-6s  %12s  %7s\n", "pos", "char", "relevance", "share");
    for (int k = 0; k < top; k++) {
        int i = idx[k];
        char g[8], q[12];
        cell_glyph(e, i, false, g);
        snprintf(q, sizeof q, "'%s'", g);
        double share = total > 0.0 ? 100.0 * fabs((double)e->relevance[i]) / total : 0.0;
        fprintf(out, "  %5d  ", pos_of(e, i));
        put_padded(out, q, 6);
        fprintf(out, "  %+12.6f  %6.1f%%\n", (double)e->relevance[i], share);
    }
    free(idx);
}

// ---- SVG ---------------------------------------------------------------------------------------

int render_svg(FILE *out, const render_explanation *e, int cols) {
    if (cols < 8) cols = 8;
    const double cw = 11.0, ch = 26.0, pad = 16.0, top = 70.0;
    // layout: the column and line of every character
    int *col = malloc(sizeof(int) * (size_t)e->n), *line = malloc(sizeof(int) * (size_t)e->n);
    if (!col || !line) {
        free(col);
        free(line);
        return -1;
    }
    int c = 0, l = 0, max_c = 0;
    for (int i = 0; i < e->n; i++) {
        int w = cell_cols(e, i);
        if (c > 0 && c + w > cols) {
            c = 0;
            l++;
        }
        col[i] = c;
        line[i] = l;
        c += w;
        if (c > max_c) max_c = c;
        if (len_of(e, i) == 1 && at(e, i) == '\n' && i + 1 < e->n) {
            c = 0;
            l++;
        }
    }
    char sums[200];
    render_sums(e, sums, sizeof sums);
    double width = 2 * pad + max_c * cw, body_h = (l + 1) * ch;
    double text_w = 2 * pad + 6.4 * (double)strlen(sums); // DejaVu Sans 11 px: ~6.4 px a glyph
    if (width < text_w) width = text_w;
    if (width < 560) width = 560;
    double height = top + body_h + 90;
    float maxabs = render_max_abs(e->relevance, e->n);
    char pg[8], desc[96];
    render_glyph(e->predicted, true, pg);
    describe_target(e, true, desc, sizeof desc);

    // presentation attributes rather than CSS: every renderer (browsers, librsvg, ImageMagick)
    // reads them (heatmap.h)
    fprintf(out, HEAT_SVG_OPEN "<g font-family=\"" HEAT_SANS "\" fill=\"#222\">\n", width, height,
            width, height);
    fprintf(out, "<text x=\"%.0f\" y=\"26\" font-size=\"17\" font-weight=\"bold\">"
                 "Next character: '", pad);
    xml_escape(out, pg);
    fprintf(out, "'%s, p = %.4f</text>\n", glyph_name(e->predicted),
            (double)e->predicted_prob);
    fprintf(out, "<text x=\"%.0f\" y=\"46\" font-size=\"11\">explained: ", pad);
    xml_escape(out, desc);
    char how[64];
    describe_method(e, how, sizeof how);
    fprintf(out, ", %s</text>\n", how);
    fprintf(out, "<text x=\"%.0f\" y=\"60\" font-size=\"11\">", pad);
    if (e->model) {
        fputs("model ", out);
        heat_xml_text(out, e->model);
        fputs(e->offset > 0 ? ", " : "", out);
    }
    if (e->offset > 0) fprintf(out, "the last %d characters of the prompt", e->n_bytes);
    fputs("</text>\n", out);
    fputs("</g>\n<g font-family=\"" HEAT_MONO "\" font-size=\"18\" text-anchor=\"middle\">\n",
          out);
    for (int i = 0; i < e->n; i++) {
        unsigned char rgb[3];
        heat_rgb(e->relevance[i], maxabs, rgb);
        int w = cell_cols(e, i);
        double x = pad + col[i] * cw, y = top + line[i] * ch;
        char g[8];
        cell_glyph(e, i, false, g);
        fprintf(out, "<g><title>position %d '", pos_of(e, i));
        xml_escape(out, g);
        fprintf(out, "': %+.6f</title>", (double)e->relevance[i]);
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                     "fill=\"rgb(%d,%d,%d)\"/>",
                x, y, w * cw, ch - 2, rgb[0], rgb[1], rgb[2]);
        if (at(e, i) != ' ') {
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\"%s>", x + w * cw / 2,
                    y + ch - 8, heat_dark(rgb) ? "#fff" : "#000",
                    w > 1 ? " font-size=\"12\"" : ""); // \xNN: 4 small glyphs in 3 columns
            if (len_of(e, i) > 1) xml_escape(out, g); // the character itself
            else svg_glyph(out, at(e, i));
            fputs("</text>", out);
        }
        fputs("</g>\n", out);
    }
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

int render_html(FILE *out, const render_explanation *e, int top) {
    float maxabs = render_max_abs(e->relevance, e->n);
    char pg[8], desc[96];
    render_glyph(e->predicted, true, pg);
    describe_target(e, true, desc, sizeof desc);
    fputs("<!DOCTYPE html>\n<!-- " STRIX_OUTPUT_MARKER " -->\n<html lang=\"en\">\n<head>\n"
          "<meta charset=\"utf-8\">\n"
          "<title>strix explain: next character '", out);
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
          "</style>\n</head>\n<body>\n<h1>Next character: <code>'", out);
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
    if (e->offset > 0) fprintf(out, " (the last %d characters of the prompt)", e->n_bytes);
    fputs(".</p>\n<div class=\"prompt\">", out);
    for (int i = 0; i < e->n; i++) {
        unsigned char rgb[3];
        heat_rgb(e->relevance[i], maxabs, rgb);
        char g[8];
        cell_glyph(e, i, false, g);
        fprintf(out, "<span style=\"background:rgb(%d,%d,%d);color:%s\" data-tip=\"position %d "
                     "&#39;",
                rgb[0], rgb[1], rgb[2], heat_dark(rgb) ? "#fff" : "#000", pos_of(e, i));
        xml_put(out, g, true);
        fprintf(out, "&#39;: %+.6f\">", (double)e->relevance[i]);
        if (len_of(e, i) > 1) xml_escape(out, g);
        else xml_glyph(out, at(e, i));
        fputs("</span>", out);
        if (len_of(e, i) == 1 && at(e, i) == '\n') fputc('\n', out);
    }
    fprintf(out, "</div>\n<p>against <span class=\"legend\"></span> for &nbsp; (intensity: "
                 "|R| / max|R|, max|R| = %.4g; hover a character for its value)</p>\n",
            (double)maxabs);
    if (top > e->n) top = e->n;
    if (top > 0) {
        fputs("<h2>Top contributors</h2>\n<pre>\n", out);
        // render_top writes plain ASCII apart from the header; escape by writing it to memory
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

/* The character of byte b as a JSON string value: itself below 0x80 (cJSON escapes control
 * characters), "\xNN" text otherwise (a lone byte >= 0x80 is not UTF-8). */
static cJSON *char_json(unsigned char b) {
    char s[8];
    if (b > 0 && b < 0x80) {
        s[0] = (char)b;
        s[1] = '\0';
    } else {
        snprintf(s, sizeof s, "\\x%02x", b);
    }
    return cJSON_CreateString(s);
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

/* Adds "seed": the exact decimal integer (a cJSON number, a double, would round one above 2^53).
 * Returns whether it was added. */
static bool seed_json(cJSON *obj, uint64_t seed) {
    char digits[24];
    snprintf(digits, sizeof digits, "%" PRIu64, seed);
    return cJSON_AddRawToObject(obj, "seed", digits) != NULL;
}

char *render_json(const render_explanation *e) {
    cJSON *root = cJSON_CreateObject();
    char *text = utf8_clean(e->text, e->offset + e->n_bytes);
    const char *m = e->model ? e->model : "";
    char *model = utf8_clean((const unsigned char *)m, (int)strlen(m));
    bool ok = root && text && model;
    if (ok) {
        ok = cJSON_AddStringToObject(root, "generator", STRIX_OUTPUT_MARKER) &&
             cJSON_AddStringToObject(root, "prompt", text) &&
             cJSON_AddNumberToObject(root, "offset", e->offset) &&
             cJSON_AddStringToObject(root, "model", model) &&
             cJSON_AddStringToObject(root, "method", e->method ? e->method : "lrp") &&
             (e->rule ? cJSON_AddStringToObject(root, "rule", e->rule)
                      : cJSON_AddNullToObject(root, "rule"));
        if (ok && e->method && strcmp(e->method, "integrated-gradients") == 0)
            ok = cJSON_AddNumberToObject(root, "ig_steps", e->ig_steps) != NULL;
    }
    const char *keys[3] = {"predicted", "target", "contrast"};
    int bytes[3] = {e->predicted, e->target, e->contrast};
    for (int k = 0; k < 3; k++) {
        cJSON *v = !ok ? NULL : bytes[k] >= 0 ? char_json((unsigned char)bytes[k])
                                              : cJSON_CreateNull();
        if (ok && v && cJSON_AddItemToObject(root, keys[k], v)) continue;
        cJSON_Delete(v);
        ok = false;
    }
    if (ok) {
        ok = cJSON_AddNumberToObject(root, "predicted_byte", e->predicted) &&
             cJSON_AddNumberToObject(root, "probability", shortest(e->predicted_prob)) &&
             cJSON_AddNumberToObject(root, "target_byte", e->target) &&
             cJSON_AddNumberToObject(root, "target_probability", shortest(e->target_prob)) &&
             cJSON_AddNumberToObject(root, "target_logit", shortest(e->target_logit));
        if (ok && e->contrast >= 0)
            ok = cJSON_AddNumberToObject(root, "contrast_byte", e->contrast) &&
                 cJSON_AddNumberToObject(root, "contrast_logit", shortest(e->contrast_logit));
    }
    cJSON *pos = ok ? cJSON_AddArrayToObject(root, "positions") : NULL;
    for (int i = 0; pos && i < e->n; i++) {
        cJSON *p = cJSON_CreateObject();
        if (!p || !cJSON_AddItemToArray(pos, p)) {
            cJSON_Delete(p);
            pos = NULL;
            break;
        }
        unsigned char b = at(e, i);
        if (!cJSON_AddNumberToObject(p, "position", pos_of(e, i)) ||
            !cJSON_AddNumberToObject(p, "byte", b) ||
            !add_ints(p, "bytes", e->text + e->start[i], len_of(e, i))) {
            pos = NULL;
            break;
        }
        char g[8];
        cell_glyph(e, i, false, g);
        cJSON *ch = len_of(e, i) > 1 ? cJSON_CreateString(g) : char_json(b);
        if (!ch || !cJSON_AddItemToObject(p, "char", ch) ||
            !cJSON_AddNumberToObject(p, "relevance", shortest(e->relevance[i]))) {
            if (ch && !cJSON_GetObjectItem(p, "char")) cJSON_Delete(ch);
            pos = NULL;
        } else if (e->relevance_position &&
                   !cJSON_AddNumberToObject(p, "position_relevance",
                                            shortest(e->relevance_position[i]))) {
            pos = NULL;
        }
    }
    ok = pos != NULL;
    if (ok)
        ok = cJSON_AddNumberToObject(root, "relevance_out_sum", e->sum_out) &&
             cJSON_AddNumberToObject(root, "relevance_in_sum", e->sum_in) &&
             cJSON_AddNumberToObject(root, "relevance_characters_sum", sum_chars(e)) &&
             (isnan(e->softmax_gap) || cJSON_AddNumberToObject(root, "softmax_gap",
                                                               e->softmax_gap)) &&
             (isnan(e->conserved_sum) || cJSON_AddNumberToObject(root, "conserved_sum",
                                                                 e->conserved_sum)) &&
             (isnan(e->baseline_output) || cJSON_AddNumberToObject(root, "baseline_output",
                                                                   e->baseline_output));
    const render_deletion *dl = e->deletion;
    cJSON *del = ok && dl ? cJSON_AddObjectToObject(root, "deletion") : NULL;
    if (ok && dl) {
        cJSON *ps = del ? cJSON_AddArrayToObject(del, "positions") : NULL;
        for (int k = 0; ps && k < dl->k; k++) {
            cJSON *x = cJSON_CreateNumber(dl->positions[k]);
            if (!x || !cJSON_AddItemToArray(ps, x)) {
                cJSON_Delete(x);
                ps = NULL;
            }
        }
        ok = ps && cJSON_AddNumberToObject(del, "k", dl->k) &&
             cJSON_AddNumberToObject(del, "output_before", dl->before) &&
             cJSON_AddNumberToObject(del, "output_after", dl->after_top) &&
             cJSON_AddNumberToObject(del, "drop", dl->before - dl->after_top) &&
             cJSON_AddNumberToObject(del, "random_output_after", dl->after_random) &&
             cJSON_AddNumberToObject(del, "random_drop", dl->before - dl->after_random) &&
             cJSON_AddNumberToObject(del, "random_draws", dl->draws) &&
             seed_json(del, dl->seed);
    }
    char *json = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    free(text);
    free(model);
    return json;
}

// ---- characters --------------------------------------------------------------------------------

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
        int len = utf8_seq(t + i, nb - i);
        if (len == 0) len = 1;
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

void render_group_free(render_explanation *e) {
    free((void *)e->start);
    free((void *)e->relevance);
    free((void *)e->relevance_position);
    e->start = NULL;
    e->relevance = e->relevance_position = NULL;
}
