/*
 * strix/sample.h - choosing the next token from a row of logits (greedy, temperature, top-k, top-p
 * nucleus sampling) and a generator that drives the GPT's KV cache over a prompt and its own
 * samples. The edge cases follow docs/SEMANTICS.md ("Sampling temperature", "Sampling top-k",
 * "Non-finite logits at sampling"); top-p is the nucleus of Holtzman et al. 2020, "The Curious
 * Case of Neural Text Degeneration".
 *
 * Not here: tokenisation (strix/data.h), printing (tools/strix/sample.c), batched generation.
 */
#ifndef STRIX_SAMPLE_H
#define STRIX_SAMPLE_H

#include "strix/gpt.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- sampler configuration ---------------------------------------------------------------------

typedef struct strix_sampler_config {
    float temperature; /* 0 = greedy (argmax, ties to the lower id); > 0 scales; +inf = uniform */
    int top_k;         /* keep the k most probable ids; 0 = off; k > V acts as V */
    float top_p;       /* nucleus mass in (0, 1]; 1 = off */
    float min_p;       /* keep ids whose probability is >= min_p times the largest; [0, 1], 0 = off
                        * (Nguyen et al. 2024, "Min P Sampling"; transformers' MinPLogitsWarper) */
} strix_sampler_config;

/* Plain softmax sampling: temperature 1, top_k 0 (off), top_p 1 (off), min_p 0 (off). */
STRIX_API strix_sampler_config strix_sampler_config_default(void);

/* Validates a configuration: STRIX_ERR_ARG with a message for a negative or NaN temperature,
 * top_k < 0, top_p outside (0, 1], or min_p outside [0, 1] (docs/SEMANTICS.md: a negative
 * temperature is an error). */
STRIX_API strix_status strix_sampler_config_check(const strix_sampler_config *c);

// ---- one token from one row of logits ----------------------------------------------------------

/* Bytes of scratch memory strix_sample_logits() and strix_sample_probs() need for V logits. */
STRIX_API size_t strix_sample_scratch_size(int V);

/* The distribution strix_sample_logits() draws from, as probs[0..V) in double (0 for every
 * dropped id; the kept ones sum to 1 up to rounding). Rules, in this order:
 *   1. NaN anywhere -> STRIX_ERR_NUMERIC ("NaN logit (token id i)"), never a chosen token;
 *   2. some +inf -> all the mass on the lowest id holding +inf;
 *   3. every logit -inf -> STRIX_ERR_NUMERIC; -inf entries never get mass;
 *   4. temperature 0 -> all the mass on the argmax, ties to the lower id;
 *   5. otherwise w_i = exp((x_i - max) / temperature) in double (the max is subtracted before
 *      scaling, so a tiny temperature cannot overflow), ids ranked by w descending, ties to the
 *      lower id; top-k keeps the first k ranks; top-p then keeps the shortest prefix of the
 *      remaining ranks whose renormalised mass reaches top_p (at least one id); min-p then keeps
 *      the ranks with w >= min_p·w_first (at least one id); renormalise. This is transformers'
 *      order of warpers (temperature, top-k, top-p, min-p).
 * `scratch`: NULL (allocated and freed inside the call) or strix_sample_scratch_size(V) bytes.
 * STRIX_ERR_ARG for V < 1 or a bad config (strix_sampler_config_check); STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_sample_probs(const float *logits, int V, const strix_sampler_config *c,
                                          void *scratch, double *probs);

/* Picks the next token id from logits[0..V) by the rules of strix_sample_probs() into *token.
 * Rules 2 and 4 choose without a draw. Otherwise exactly ONE strix_rng_uniform(rng) u is drawn
 * (even if a single id is kept) and the token is the inverse CDF at u over the kept ids walked
 * in RANK order (most probable first, ties to the lower id): the first rank r with
 * u·sum(w_kept) < w_0 + ... + w_r (the last kept rank if rounding leaves none). Same logits,
 * config and rng state => same token. `scratch` as for strix_sample_probs(). Statuses as for
 * strix_sample_probs(); on error *token and rng are untouched. */
STRIX_API strix_status strix_sample_logits(const float *logits, int V,
                                           const strix_sampler_config *c, strix_rng *rng,
                                           void *scratch, int32_t *token);

/* transformers' RepetitionPenaltyLogitsProcessor (Keskar et al. 2019, CTRL, eq. 1 as HF applies
 * it): every distinct id in history[0..n) has its logit divided by `penalty` when positive and
 * multiplied by it otherwise, once however often it occurs; logits are changed in place, ids
 * outside [0, V) are ignored. penalty 1 changes nothing. `seen`: V bytes of scratch or NULL
 * (allocated inside). STRIX_ERR_ARG for V < 1 or a penalty that is not finite and > 0;
 * STRIX_ERR_ALLOC. Apply it before strix_sample_logits(), as transformers does. */
STRIX_API strix_status strix_sample_repetition_penalty(float *logits, int V, const int32_t *history,
                                                       size_t n, float penalty,
                                                       unsigned char *seen);

// ---- generation with the GPT's KV cache (batch 1) ----------------------------------------------

/* Context rule: a prompt is cropped to its last block_size tokens (nanoGPT) and fed through the
 * KV cache; each new token is one decode step until the cache holds block_size positions. Then
 * the window (strix_gpt_generator_set_window) decides. */
typedef struct strix_gpt_generator strix_gpt_generator;

/* What the generator does once the context holds block_size tokens:
 *   SLIDE (default): every prediction sees exactly the last block_size tokens, by a full forward
 *     over them (positions 0..block_size-1), as nanoGPT's generate() and transformers crop the
 *     context: the same tokens as nanoGPT. Costs one block_size-position forward per new token.
 *   REPRIME: the cache is emptied and re-primed with the last block_size/2 tokens (at least 1),
 *     so every prediction sees between block_size/2 and block_size tokens; costs block_size/2
 *     decode steps once per block_size/2 new tokens (about two decode steps per token), but the
 *     tokens differ from nanoGPT's after the first block. */
typedef enum strix_gpt_window { STRIX_GPT_WINDOW_SLIDE = 0, STRIX_GPT_WINDOW_REPRIME }
    strix_gpt_window;

/* Creates a generator over `g` (which it borrows: free the generator first), with the SLIDE
 * window. It owns a window of tokens, the logits row and the sampler scratch, so generating
 * allocates nothing (except that the first SLIDE forward may grow g's activations to (1,
 * block_size) once). STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_gpt_generator_new(strix_gpt *g, strix_gpt_generator **out);
STRIX_API void strix_gpt_generator_free(strix_gpt_generator *gen);

/* Picks the window rule (above); it applies from the next token on, even mid-run.
 * STRIX_ERR_ARG for a value that is not a strix_gpt_window. */
STRIX_API strix_status strix_gpt_generator_set_window(strix_gpt_generator *gen,
                                                      strix_gpt_window window);

/* Empties the cache and feeds the last min(n, block_size) tokens of prompt[0..n), leaving the
 * prediction for the first new token. STRIX_ERR_ARG for n = 0 or an id outside [0, V); errors of
 * strix_gpt_decode_step. After any error the generator is unprimed: next() refuses until a prime
 * succeeds. */
STRIX_API strix_status strix_gpt_generator_prime(strix_gpt_generator *gen, const int32_t *prompt,
                                                 size_t n);

/* Samples the next token with strix_sample_logits() into *token. The token is fed to the model
 * lazily, at the start of the following next() (by the window rule when the context is full), so
 * the last token of a run costs no model call. STRIX_ERR_ARG before a successful prime; statuses
 * of strix_sample_logits(), strix_gpt_decode_step() and strix_gpt_forward(). */
STRIX_API strix_status strix_gpt_generator_next(strix_gpt_generator *gen,
                                                const strix_sampler_config *c, strix_rng *rng,
                                                int32_t *token);

/* The logits row (V floats, host) of the latest prediction: after prime, the one the next call to
 * next() samples from; after next(), the one its token was drawn from. */
STRIX_API const float *strix_gpt_generator_logits(const strix_gpt_generator *gen);

#ifdef __cplusplus
}
#endif
#endif
