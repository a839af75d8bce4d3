/*
 * render.h - how `strix explain` shows an explained prediction: the prompt with each character
 * coloured by its relevance in the terminal (24-bit ANSI backgrounds) or as plain text with
 * numbers, and the same as an SVG picture, a self-contained HTML page or JSON.
 *
 * Colours follow tools/strix/explain/heatmap.h: red for relevance that supports the explained
 * output, blue for relevance against it, intensity |R| / max|R|. Bytes that do not print
 * (control characters, bytes >= 0x80 of UTF-8 sequences, which are explained byte by byte) are
 * shown visibly: '\n' as ⏎ in pictures and as \n in text, others as \xNN.
 *
 * Not here: computing relevance (strix_gpt_explain), file writing (explain.c writes what these
 * functions print into memory, atomically).
 */
#ifndef STRIX_TOOL_RENDER_H
#define STRIX_TOOL_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One explained next-character prediction, as shown. Bytes are the vocabulary's bytes. */
typedef struct render_explanation {
    const unsigned char *text;  /* the whole prompt, offset + n bytes */
    int offset;                 /* first explained position (> 0: the prompt was cropped) */
    int n;                      /* explained positions, >= 1: text[offset .. offset + n) */
    const float *relevance;     /* (n): relevance[i] is that of character text[offset + i] */
    const float *relevance_position; /* (n) share of the position embeddings, or NULL */
    unsigned char predicted;    /* most likely next byte and its probability */
    float predicted_prob;
    unsigned char target;       /* the explained byte, its probability and logit */
    float target_prob, target_logit;
    int contrast;               /* byte explained against (logit difference), or -1 */
    const char *rule;           /* "attnlrp", "epsilon", ... */
    const char *model;          /* checkpoint path (shown in titles), may be NULL */
    double sum_out, sum_in;     /* relevance seeded at the output, reaching the input (the
                                 * characters and, with relevance_position, the positions) */
    double softmax_gap;         /* relevance the softmax rule did not conserve (NaN: unknown) */
} render_explanation;

/* The visible form of byte c into buf (>= 8 bytes, NUL-terminated). pictures: printable ASCII
 * as itself, '\n' as "⏎", '\t' as "⇥", others "\xNN"; text (pictures false): the C escape used
 * between single quotes ('\n', '\t', '\r', '\\', '\'', '\xNN'). Returns the length. */
int render_glyph(unsigned char c, bool pictures, char *buf);

/* Largest |R| of the finite relevances (0 if none). */
float render_max_abs(const float *r, int n);

/* The prompt with coloured backgrounds (color) or, without colour, a table of position,
 * character and relevance, one per line. */
void render_prompt(FILE *out, const render_explanation *e, bool color);

/* "relevance sums: output X, input Y" and, when known, the characters' and positions' shares of
 * the input and the softmax rule's gap, into buf. */
void render_sums(const render_explanation *e, char *buf, size_t cap);

/* The `top` positions of largest |R| (ties: lower position first), most relevant first. */
void render_top(FILE *out, const render_explanation *e, int top);

/* The whole explanation as an SVG picture: title with the predicted character and its
 * probability, the prompt in monospace cells (lines wrap at `cols` characters and after each
 * '\n'), the colour legend and the sums. Returns 0, or -1 if a write failed. */
int render_svg(FILE *out, const render_explanation *e, int cols);

/* A self-contained HTML page (inline CSS, no scripts): each character a span whose hover shows
 * its position and relevance, a legend, the top contributors and the sums. Returns 0 or -1. */
int render_html(FILE *out, const render_explanation *e, int top);

/* JSON (cJSON): prompt (whole), offset, predicted, probability, target, contrast, rule, positions
 * [{position, byte, char, relevance, position_relevance}], sums. Strings are valid UTF-8 (a byte that is not part of
 * valid UTF-8 becomes U+FFFD in "prompt"; "byte" keeps it exactly). The caller frees the result
 * with free(); NULL when out of memory. */
char *render_json(const render_explanation *e);

#endif
