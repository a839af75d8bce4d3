/*
 * sampler.h - choosing the next token from a row of logits: greedy, temperature, top-k, top-p
 * (nucleus), with the edge cases of spec/decisions.md ("Sampling temperature", "Sampling top-k",
 * "Non-finite logits at sampling").
 *
 * Does not run the model (sample.c does) and allocates nothing.
 */
#ifndef STRIX_TOOL_SAMPLER_H
#define STRIX_TOOL_SAMPLER_H

#include "strix/core.h"

#define SAMPLER_MAX_VOCAB 256

typedef struct sampler_opts {
    float temperature; /* 0 = greedy (argmax, ties to the lower id); must be >= 0 */
    int top_k;         /* 0 = off; k > V acts as V */
    float top_p;       /* nucleus mass in (0, 1]; 1 = off */
} sampler_opts;

/* Picks the next token id from logits[0..V), V <= 256, drawing at most one uniform from rng:
 *   NaN anywhere -> STRIX_ERR_NUMERIC; some +inf -> the lowest id holding +inf (no draw);
 *   all -inf -> STRIX_ERR_NUMERIC; temperature 0 -> argmax, ties to the lower id (no draw);
 *   otherwise p ∝ exp((x − max)/temperature) over the top-k ids (ties to the lower id), then the
 *   smallest set of most probable ids whose mass reaches top_p, renormalised, and one draw.
 * STRIX_ERR_ARG for a negative temperature, top_k < 0, top_p outside (0, 1], V outside 1..256. */
strix_status sampler_pick(const float *logits, int V, const sampler_opts *o, strix_rng *rng,
                          int32_t *out);

#endif
