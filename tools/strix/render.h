/*
 * render.h - how `strix explain` shows an explained prediction: the prompt with each cell
 * coloured by its relevance in the terminal (24-bit ANSI backgrounds) or as plain text with
 * numbers, and the same as an SVG picture, a self-contained HTML page or JSON.
 *
 * Colours follow tools/strix/explain/heatmap.h: red for relevance that supports the explained
 * output, blue for relevance against it, intensity |R| / max|R|. A cell is a byte span of the
 * prompt: a character (the character model, whose tokens are bytes: the bytes of one valid UTF-8
 * character are one cell, their relevances summed by render_group_utf8), a token of a tokenizer
 * (any length: " Paris", "\n\n", "ing", part of a multi-byte character) or a word (adjacent
 * tokens merged by render_group_words). A cell is shown character by character: a valid UTF-8
 * character as itself, every other byte visibly ('\n' as ⏎ in pictures and as \n in text, bytes
 * that do not print or are not part of valid UTF-8 as \xNN); tables, titles and tooltips cut a
 * long cell after a few dozen characters with "…".
 *
 * Not here: computing relevance (strix_gpt_explain), tokenizing, file writing (explain.c writes
 * what these functions print into memory, atomically).
 */
#ifndef STRIX_TOOL_RENDER_H
#define STRIX_TOOL_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A deletion check (strix explain --deletion K): the K most relevant cells, and K random ones,
 * removed from the prompt, and the explained output recomputed. */
typedef struct render_deletion {
    int k;                      /* cells deleted */
    const int *positions;       /* (k): byte positions of the most relevant cells, most
                                 * relevant first */
    double before;              /* the explained output of the prompt */
    double after_top;           /* ... after deleting the k most relevant cells */
    double after_random;        /* ... mean over `draws` deletions of k random cells */
    int draws;
    uint64_t seed;              /* of the random draws */
} render_deletion;

/* One explained next-character or next-token prediction, as shown. Bytes are the prompt's and
 * the vocabulary's bytes. The fields after `softmax_gap` are the token model's: left 0/NULL, every
 * view is the character model's. */
typedef struct render_explanation {
    const unsigned char *text;  /* the whole prompt, offset + n_bytes bytes */
    int offset;                 /* first explained position (> 0: the prompt was cropped) */
    int n_bytes;                /* explained bytes, >= 1: text[offset .. offset + n_bytes) */
    int n;                      /* explained cells (characters, tokens or words), >= 1 */
    const int *start;           /* (n + 1): cell i is text[start[i] .. start[i + 1]), at least
                                 * one byte (byte positions in the whole prompt; start[0] = offset,
                                 * start[n] = offset + n_bytes) */
    const float *relevance;     /* (n): relevance of cell i (its bytes' or tokens' summed) */
    const float *relevance_position; /* (n) share of the position embeddings, or NULL */
    unsigned char predicted;    /* most likely next byte and its probability (the probability */
    float predicted_prob;       /* also with predicted_text) */
    unsigned char target;       /* the explained byte, its probability and logit (probability */
    float target_prob, target_logit; /* and logit also with target_text) */
    int contrast;               /* byte explained against (logit difference), or -1 */
    float contrast_logit;       /* its logit (with contrast >= 0 or contrast_text) */
    const char *rule;           /* "attnlrp", "epsilon", ...; NULL for a gradient method */
    const char *method;         /* "lrp", "gradient-x-input", "integrated-gradients", ... */
    int ig_steps;               /* integrated-gradients: the points of the integral */
    double baseline_output;     /* integrated-gradients: f(baseline); NaN otherwise */
    double conserved_sum;       /* what sum_in equals when the method conserves; NaN: none */
    const render_deletion *deletion; /* NULL: no deletion check */
    const char *model;          /* checkpoint path (shown in titles), may be NULL */
    double sum_out, sum_in;     /* relevance seeded at the output, reaching the input (the
                                 * cells and, with relevance_position, the positions) */
    double softmax_gap;         /* relevance the softmax rule did not conserve (NaN: unknown) */
    const char *unit;           /* what a cell is: "character" (NULL), "token" or "word"; with
                                 * "token" or "word" the prediction is called a token */
    const char *predicted_text; /* the predicted, explained and contrast tokens' bytes (NUL-
                                 * terminated, any bytes but NUL), shown instead of the byte */
    const char *target_text;    /* fields when set; contrast_text set means there is a */
    const char *contrast_text;  /* contrast, whatever `contrast` holds */
    const int32_t *cell_ids;    /* (n) token id of each cell (JSON "id"), or NULL */
    const bool *cell_alone;     /* (n) cells that render_group_words keeps as words of their
                                 * own (special tokens such as <|im_start|>), or NULL */
    const int32_t *output_ids;  /* (3) token ids of the predicted, target and contrast tokens
                                 * (-1: no contrast), JSON "predicted_id" ...; or NULL */
} render_explanation;

/* Groups e's bytes into characters: each valid UTF-8 sequence (RFC 3629) is one, every other
 * byte its own. byte_rel (n_bytes) and byte_pos (n_bytes, or NULL) are summed per character (in
 * double, bytes ascending) into e->relevance and e->relevance_position, and e->n and e->start
 * set; text, offset and n_bytes must be set. The arrays are allocated here (free them with
 * render_group_free). Returns 0, or -1 when out of memory (nothing allocated). */
int render_group_utf8(render_explanation *e, const float *byte_rel, const float *byte_pos);
/* Groups e's cells (tokens) into words, the usual convention of BPE vocabularies (" word"): a
 * word starts at the first cell, at a cell whose first byte is whitespace (space, \t, \n, \v,
 * \f, \r) and at a cell after one whose last byte is whitespace; every other cell joins the word
 * before it (so "Hello" "," " world" -> "Hello," " world"; "\n\n" "The" -> "\n\n" "The"; the
 * halves of a split multi-byte character join); a cell marked in e->cell_alone is a word of its
 * own, and the cell after it starts one. cell_rel (e->n) and cell_pos (e->n, or NULL) are
 * summed per word (in double, cells ascending) into e->relevance and e->relevance_position; e->n
 * and e->start are replaced by the words', e->cell_ids and e->cell_alone are set to NULL and
 * e->unit to "word". The
 * new arrays are allocated here (free them with render_group_free); the cell arrays (e->start on
 * entry, cell_rel, cell_pos) stay the caller's. Returns 0, or -1 when out of memory (e
 * unchanged). */
int render_group_words(render_explanation *e, const float *cell_rel, const float *cell_pos);
/* Frees what render_group_utf8 or render_group_words allocated. */
void render_group_free(render_explanation *e);

/* The visible form of byte c into buf (>= 8 bytes, NUL-terminated). pictures: printable ASCII
 * as itself, '\n' as "⏎", '\t' as "⇥", others "\xNN"; text (pictures false): the C escape used
 * between single quotes ('\n', '\t', '\r', '\\', '\'', '\xNN'). Returns the length. */
int render_glyph(unsigned char c, bool pictures, char *buf);

/* The visible form of the bytes s[0..n) into buf (cap >= 4 bytes, NUL-terminated), character by
 * character: a valid UTF-8 character (RFC 3629) as itself, every other byte as render_glyph
 * shows it. At most `max` characters (max <= 0: all), then "…"; a character that does not fit
 * in cap (with room for "…") is cut the same way. 4 * chars + 4 bytes always hold `chars`
 * characters and "…". Returns the length. */
int render_text(const unsigned char *s, int n, bool pictures, int max, char *buf, size_t cap);

/* Largest |R| of the finite relevances (0 if none). */
float render_max_abs(const float *r, int n);

/* The prompt with coloured backgrounds (color; a line break after each cell that ends with
 * '\n') or, without colour, a table of position (the cell's first byte), cell and relevance, one
 * per line; the cell column is as wide as its widest cell (cells cut after 24 characters). */
void render_prompt(FILE *out, const render_explanation *e, bool color);

/* "relevance sums: output X, input Y" and, when known, the cells' ("characters", "tokens",
 * "words") and positions' shares of the input and the softmax rule's gap, into buf. */
void render_sums(const render_explanation *e, char *buf, size_t cap);

/* The `top` cells of largest |R| (ties: lower position first), most relevant first, as the
 * table of render_prompt. */
void render_top(FILE *out, const render_explanation *e, int top);

/* The whole explanation as an SVG picture: title with the predicted character or token and its
 * probability, the prompt in monospace columns (a cell of k characters spans k columns, one
 * rectangle; \xNN takes 3; a cell wider than a line is cut with "…"; lines wrap at `cols`
 * columns, before a cell that does not fit, and after each cell that ends with '\n'), the
 * colour legend and the sums. Returns 0, or -1 if a write failed. */
int render_svg(FILE *out, const render_explanation *e, int cols);

/* A self-contained HTML page (inline CSS, no scripts): each cell a span whose hover shows its
 * position, text and relevance, a legend, the top contributors and the sums. Returns 0 or -1. */
int render_html(FILE *out, const render_explanation *e, int top);

/* JSON (cJSON): prompt (whole), offset, model, method, rule, unit (when e->unit is set),
 * predicted, target, contrast, predicted_text / target_text / contrast_text (when set),
 * predicted_id / target_id / contrast_id (with output_ids; no contrast_id without one),
 * predicted_byte, probability, target_byte, target_probability, target_logit (and contrast_byte,
 * contrast_logit), positions [{position, id, byte, bytes, char, relevance, position_relevance}]
 * (one per cell: position and byte are its first byte's, bytes all of them, id with cell_ids),
 * sums (relevance_characters_sum: the cells'), and the deletion check. A *_byte key is left out
 * when the token's text is set. Strings are valid UTF-8: a byte that is not part of valid UTF-8
 * becomes U+FFFD in "prompt" and the *_text keys, and "\xNN" text in "char", "predicted",
 * "target" and "contrast"; "bytes" keeps it exactly. The caller frees the result with free();
 * NULL when out of memory. */
char *render_json(const render_explanation *e);

#endif
