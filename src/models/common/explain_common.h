/*
 * explain_common.h - what the explanations of every character LM share (the GPT's AttnLRP in
 * src/models/gpt/explain.c, the sequence models' in src/models/seqlm/explain.c): the request
 * checks, the rule walk over module trees and the prediction + output seed. Internal.
 */
#ifndef STRIX_EXPLAIN_COMMON_H
#define STRIX_EXPLAIN_COMMON_H

#include "strix/gpt.h"

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

#endif
