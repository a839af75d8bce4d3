/*
 * strix/textgen.h - text generation for any language model with a KV-cache decode step (the
 * Llama family of strix/llama.h, or a caller's own): the prompt through the cache, then one
 * sampled token at a time (strix/sample.h: repetition penalty, temperature, top-k, top-p, min-p,
 * in transformers' order), streaming each token's bytes, until an end-of-sequence id, a stop
 * string, the token budget or the end of the context.
 *
 * Determinism: the draws come from one strix_rng seeded at every start, so the same model
 * logits, configuration and seed give the same tokens on every machine; greedy (temperature 0)
 * draws nothing. A conversation (strix chat) restarts with the whole conversation as the
 * prompt: the cached positions that equal its prefix are kept, so each turn decodes only what
 * is new.
 *
 * Not here: tokenizing the prompt (strix/tokenizer.h), chat templates (strix/chat.h), printing.
 */
#ifndef STRIX_TEXTGEN_H
#define STRIX_TEXTGEN_H

#include "strix/sample.h"
#include "strix/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the generator needs of a model. decode keeps the first `keep` cached positions (keep <=
 * what is cached), appends ids[0..n) and writes the logits of the last position (vocab floats,
 * host memory); it fails past max_context. */
typedef struct strix_decoder {
    void *model;
    strix_status (*decode)(void *model, size_t keep, const int32_t *ids, size_t n, float *logits);
    int vocab;
    size_t max_context;
} strix_decoder;

typedef struct strix_textgen_config {
    strix_sampler_config sampler; /* temperature 0 = greedy (argmax, ties to the lower id) */
    float repetition_penalty;     /* 1 = off; over the prompt and the generated ids (transformers) */
    int max_new_tokens;           /* >= 0 */
    uint64_t seed;                /* of the draws */
    const int32_t *eos;           /* ids that end the generation; the id is returned, its bytes */
    int n_eos;                    /* are not added to the text */
    const char *const *stop;      /* stop strings (UTF-8, non-empty): the generation ends with the */
    int n_stop;                   /* token that completes one in the generated text (kept, as HF) */
} strix_textgen_config;

/* Greedy, repetition penalty 1, 256 new tokens, seed 0, no end ids, no stop strings. */
STRIX_API strix_textgen_config strix_textgen_config_default(void);

/* Why the generation ended; RUNNING while it goes on. */
typedef enum strix_textgen_stop {
    STRIX_TEXTGEN_RUNNING = 0,
    STRIX_TEXTGEN_EOS,          /* an end-of-sequence id was drawn */
    STRIX_TEXTGEN_STOP_STRING,  /* the text now contains a stop string */
    STRIX_TEXTGEN_MAX_TOKENS,   /* max_new_tokens generated */
    STRIX_TEXTGEN_CONTEXT_FULL, /* the next token would not fit in max_context */
    STRIX_TEXTGEN_ERROR         /* the sampler or the decoder failed (its status was returned) */
} strix_textgen_stop;

typedef struct strix_textgen strix_textgen;

/* A generator over decoder d (copied) with tokenizer tok (for the bytes of tokens; kept, not
 * owned: it must outlive the generator). STRIX_ERR_ARG for a decoder without decode, a vocab < 1
 * or a tokenizer whose vocabulary is larger than the model's; STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_textgen_new(const strix_decoder *d, const strix_tokenizer *tok,
                                         strix_textgen **out);
STRIX_API void strix_textgen_free(strix_textgen *g);

/* Starts a generation after prompt[0..n) (n >= 1): keeps the cached positions that equal the
 * prompt's prefix (at most n - 1 of them, so the last prompt id is decoded for its logits),
 * decodes the rest, seeds the draws with c->seed and empties the generated text. c (and its
 * eos and stop arrays) must stay valid until the generation ends. STRIX_ERR_ARG for n = 0, an
 * id outside the vocabulary, a prompt of max_context ids or more, a bad sampler configuration, a
 * penalty that is not finite and > 0, max_new_tokens < 0 or an empty stop string; the decoder's
 * status otherwise. */
STRIX_API strix_status strix_textgen_start(strix_textgen *g, const strix_textgen_config *c,
                                           const int32_t *prompt, size_t n);

/* Draws the next token into *token (-1 when none: the generation had already ended or ends
 * before a draw), appends it to the context and its bytes to the text (not for an end id), and
 * decodes it when the generation goes on. *stop says whether and why it ended. STRIX_ERR_ARG
 * before a start; the sampler's or decoder's status otherwise (*stop is then ERROR, and the
 * next start decodes its whole prompt). */
STRIX_API strix_status strix_textgen_next(strix_textgen *g, int32_t *token,
                                          strix_textgen_stop *stop);

/* The context: the prompt and the generated ids (end ids included), *n of them. */
STRIX_API const int32_t *strix_textgen_ids(const strix_textgen *g, size_t *n);

/* The generated text so far (bytes of the generated tokens but end ids; NUL-terminated), *len. */
STRIX_API const char *strix_textgen_text(const strix_textgen *g, size_t *len);

/* "end of sequence", "stop string", "max new tokens", "context full", "error", "running". */
STRIX_API const char *strix_textgen_stop_name(strix_textgen_stop s);

#ifdef __cplusplus
}
#endif

#endif
