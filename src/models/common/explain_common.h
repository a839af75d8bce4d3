/*
 * explain_common.h - what the explanations of every character LM share (the GPT's AttnLRP in
 * src/models/gpt/explain.c, the sequence models' in src/models/seqlm/explain.c): the request
 * checks, the rule walk over module trees and the prediction + output seed. Internal.
 */
#ifndef STRIX_EXPLAIN_COMMON_H
#define STRIX_EXPLAIN_COMMON_H

#include "strix/gpt.h"
#include "strix/layers.h"

/* Checks the arguments of an explanation of the last min(n, block) of ids[0..n) for a model of
 * vocabulary V: ids in range, target/contrast in [-1, V) and distinct, a known method, ig_steps,
 * and for LRP a well-formed rule. STRIX_ERR_ARG naming `who`. */
strix_status lm_explain_check(const char *who, int V, int block, const int32_t *ids, int n,
                              const strix_gpt_explain_config *cfg);

/* The innermost module under m that refuses rule kind k (m itself if none of its children do),
 * or NULL if m supports it. */
strix_module *lm_refusing_module(strix_module *m, strix_lrp_kind k);

/* Sets the rule of m and of every module inside it. */
void lm_set_rule(strix_module *m, const strix_lrp_rule *rule);

/* Fills the prediction fields of out from the last position's logits (host, V) and writes the
 * seed row (host, V): the target's logit (or 1), minus the contrast's logit (or −1); sets
 * out->relevance_out_sum to the seed's sum. */
void lm_predict_and_seed(const float *logits, int V, const strix_gpt_explain_config *cfg,
                         strix_gpt_explanation *out, float *seed);

/* logit[target] − logit[contrast] of cfg over host logits (V): no contrast, the target's;
 * target -1, the argmax's (ties to the lower id). */
double lm_explained_output(const float *logits, int V, const strix_gpt_explain_config *cfg);

/* STRIX_ERR_NUMERIC naming `who` when a logit of the row (host, V) is not finite. */
strix_status lm_check_logits(const char *who, const float *logits, int V);

// ---- gradient methods: the model from its token embeddings to the explained logit ----------------

/* The model-specific part of the trunk below: body_forward maps token embeddings x (B,T,C) to
 * logits (B,T,V) (its own buffer; position embeddings, if any, added inside), body_backward maps
 * d logits (B,T,V) back to d x (B,T,C) through the last body_forward. */
typedef strix_status (*lm_body_forward)(void *ctx, const strix_tensor *x,
                                        const strix_tensor **logits);
typedef strix_status (*lm_body_backward)(void *ctx, const strix_tensor *dlogits,
                                         const strix_tensor **dx);

/* A model as a strix_module for the explainers of strix/attribution.h: x (B,T,C) token
 * embeddings -> y (B,V) = logits[b, T−1] (minus the contrast's logit in every column when
 * contrast >= 0, so class `target` is the logit difference). Lives on the caller's stack: zero
 * it, lm_trunk_init, use, lm_trunk_free. */
typedef struct lm_trunk {
    strix_module base;
    void *ctx;
    lm_body_forward body_forward;
    lm_body_backward body_backward;
    const char *who;      /* names the caller in errors */
    int T, C, V, B;
    int32_t contrast;
    strix_tensor y, dy, dlogits;
    float *host;          /* (B,V) scratch for the contrast */
    size_t host_cap;
} lm_trunk;

void lm_trunk_init(lm_trunk *t, strix_backend *be, const char *who, void *ctx,
                   lm_body_forward fwd, lm_body_backward bwd, int T, int C, int V,
                   int32_t contrast);
void lm_trunk_free(lm_trunk *t);

/* Runs cfg->method (GRADIENT_X_INPUT, INTEGRATED_GRADIENTS with cfg->ig_steps Gauss-Legendre
 * points and a zero baseline, SALIENCY with abs) on the trunk at x (1,T,C) with every parameter
 * of ps frozen, and fills out's relevance (per position, summed over C in double, d ascending),
 * relevance_in_sum, relevance_out_sum (f(x)), softmax_gap (NaN), baseline_output and
 * conserved_sum (IG: f(baseline), f(x) − f(baseline); else NaN). out->target is the explained
 * class. Statuses of the explainers, STRIX_ERR_ALLOC. */
strix_status lm_explain_gradient(lm_trunk *t, const strix_tensor *x, strix_params *ps,
                                 const strix_gpt_explain_config *cfg, strix_gpt_explanation *out);

#endif
