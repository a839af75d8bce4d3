/*
 * render.h - how `strix explain` shows an explained prediction: the prompt with each character
 * coloured by its relevance in the terminal (24-bit ANSI backgrounds) or as plain text with
 * numbers, and the same as an SVG picture, a self-contained HTML page or JSON.
 *
 * Colours follow tools/strix/explain/heatmap.h: red for relevance that supports the explained
 * output, blue for relevance against it, intensity |R| / max|R|. The model's tokens are bytes;
 * the views show characters: the bytes of one valid UTF-8 character are one cell, shown as the
 * character, with their relevances summed (render_group_utf8). Bytes that do not print (control
 * characters, bytes >= 0x80 that are not part of valid UTF-8) are shown visibly: '\n' as ⏎ in
 * pictures and as \n in text, others as \xNN.
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

/* A deletion check (strix explain --deletion K): the K most relevant characters, and K random
 * ones, removed from the prompt, and the explained output recomputed. */
typedef struct render_deletion {
    int k;                      /* characters deleted */
    const int *positions;       /* (k): byte positions of the most relevant characters, most
                                 * relevant first */
    double before;              /* the explained output of the prompt */
    double after_top;           /* ... after deleting the k most relevant characters */
    double after_random;        /* ... mean over `draws` deletions of k random characters */
    int draws;
    uint64_t seed;              /* of the random draws */
} render_deletion;

/* One explained next-character prediction, as shown. Bytes are the vocabulary's bytes. */
typedef struct render_explanation {
    const unsigned char *text;  /* the whole prompt, offset + n_bytes bytes */
    int offset;                 /* first explained position (> 0: the prompt was cropped) */
    int n_bytes;                /* explained bytes, >= 1: text[offset .. offset + n_bytes) */
    int n;                      /* explained characters (cells), >= 1 */
    const int *start;           /* (n + 1): character i is text[start[i] .. start[i + 1]) (byte
                                 * positions in the whole prompt; start[0] = offset) */
    const float *relevance;     /* (n): relevance of character i (its bytes' summed) */
    const float *relevance_position; /* (n) share of the position embeddings, or NULL */
    unsigned char predicted;    /* most likely next byte and its probability */
    float predicted_prob;
    unsigned char target;       /* the explained byte, its probability and logit */
    float target_prob, target_logit;
    int contrast;               /* byte explained against (logit difference), or -1 */
    float contrast_logit;       /* its logit (with contrast >= 0) */
    const char *rule;           /* "attnlrp", "epsilon", ...; NULL for a gradient method */
    const char *method;         /* "lrp", "gradient-x-input", "integrated-gradients", ... */
    int ig_steps;               /* integrated-gradients: the points of the integral */
    double baseline_output;     /* integrated-gradients: f(baseline); NaN otherwise */
    double conserved_sum;       /* what sum_in equals when the method conserves; NaN: none */
    const render_deletion *deletion; /* NULL: no deletion check */
    const char *model;          /* checkpoint path (shown in titles), may be NULL */
    double sum_out, sum_in;     /* relevance seeded at the output, reaching the input (the
                                 * characters and, with relevance_position, the positions) */
    double softmax_gap;         /* relevance the softmax rule did not conserve (NaN: unknown) */
} render_explanation;

/* Groups e's bytes into characters: each valid UTF-8 sequence (RFC 3629) is one, every other
 * byte its own. byte_rel (n_bytes) and byte_pos (n_bytes, or NULL) are summed per character (in
 * double, bytes ascending) into e->relevance and e->relevance_position, and e->n and e->start
 * set; text, offset and n_bytes must be set. The arrays are allocated here (free them with
 * render_group_free). Returns 0, or -1 when out of memory (nothing allocated). */
int render_group_utf8(render_explanation *e, const float *byte_rel, const float *byte_pos);
/* Frees what render_group_utf8 allocated. */
void render_group_free(render_explanation *e);

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

/* JSON (cJSON): prompt (whole), offset, method, rule, predicted, probability, target, contrast
 * (and contrast_logit), positions [{position, byte, bytes, char, relevance,
 * position_relevance}] (one per character: position and byte are its first byte's, bytes all of
 * them), sums, and the deletion check.
 * Strings are valid UTF-8 (a byte that is not part of valid UTF-8 becomes U+FFFD in "prompt" and
 * "\xNN" in "char"; "bytes" keeps it exactly). The caller frees the result with free(); NULL
 * when out of memory. */
char *render_json(const render_explanation *e);

#endif
