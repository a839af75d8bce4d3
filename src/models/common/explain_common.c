/*
 * explain_common.c - the shared parts of the character LMs' explanations (explain_common.h).
 */
#include <math.h>
#include <string.h>

#include "models/common/explain_common.h"
#include "nn/rules_internal.h"

strix_status lm_explain_check(const char *who, int V, int block, const int32_t *ids, int n,
                              const strix_gpt_explain_config *cfg) {
    if (!ids || n <= 0)
        return strix_error(STRIX_ERR_ARG, "%s: needs at least one id (got %d)", who, n);
    int T = n < block ? n : block;
    for (int i = n - T; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return strix_error(STRIX_ERR_ARG, "%s: id %d at %d outside [0, %d)", who, ids[i], i,
                               V);
    if (cfg->target < -1 || cfg->target >= V)
        return strix_error(STRIX_ERR_ARG, "%s: target %d outside [0, %d)", who, cfg->target, V);
    if (cfg->contrast < -1 || cfg->contrast >= V)
        return strix_error(STRIX_ERR_ARG, "%s: contrast %d outside [0, %d)", who, cfg->contrast,
                           V);
    if (cfg->contrast >= 0 && cfg->contrast == cfg->target)
        return strix_error(STRIX_ERR_ARG, "%s: contrast equals the target (%d)", who,
                           cfg->target);
    if (cfg->method < STRIX_GPT_EXPLAIN_LRP || cfg->method > STRIX_GPT_EXPLAIN_SALIENCY)
        return strix_error(STRIX_ERR_ARG, "%s: unknown method %d", who, (int)cfg->method);
    if (cfg->method == STRIX_GPT_EXPLAIN_INTEGRATED_GRADIENTS && cfg->ig_steps < 1)
        return strix_error(STRIX_ERR_ARG, "%s: ig_steps %d < 1", who, cfg->ig_steps);
    if (cfg->method != STRIX_GPT_EXPLAIN_LRP) return STRIX_OK;
    return lrp_rule_check(&cfg->rule, who);
}

static bool module_supports(const strix_module *m, strix_lrp_kind k) {
    if (!m->vt->relevance && !m->vt->relevance_ex) return false;
    return m->vt->supports_rule ? m->vt->supports_rule(m, k) : k == STRIX_LRP_EPSILON;
}

strix_module *lm_refusing_module(strix_module *m, strix_lrp_kind k) {
    if (module_supports(m, k)) return NULL;
    strix_module *c;
    for (int i = 0; m->vt->child && (c = m->vt->child(m, i)) != NULL; i++) {
        strix_module *inner = lm_refusing_module(c, k);
        if (inner) return inner;
    }
    return m;
}

void lm_set_rule(strix_module *m, const strix_lrp_rule *rule) {
    m->rule = *rule;
    if (!m->vt->child) return;
    strix_module *c;
    for (int i = 0; (c = m->vt->child(m, i)) != NULL; i++) lm_set_rule(c, rule);
}

void lm_predict_and_seed(const float *logits, int V, const strix_gpt_explain_config *cfg,
                         strix_gpt_explanation *out, float *seed) {
    int32_t best = 0;
    for (int v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    double total = 0.0;
    for (int v = 0; v < V; v++) total += exp((double)logits[v] - (double)logits[best]);
    int32_t target = cfg->target >= 0 ? cfg->target : best;
    out->predicted = best;
    out->predicted_prob = (float)(1.0 / total);
    out->target = target;
    out->target_logit = logits[target];
    out->target_prob = (float)(exp((double)logits[target] - (double)logits[best]) / total);
    memset(seed, 0, (size_t)V * sizeof(float));
    seed[target] = cfg->one_hot_seed ? 1.0f : logits[target];
    if (cfg->contrast >= 0)
        seed[cfg->contrast] = cfg->one_hot_seed ? -1.0f : -logits[cfg->contrast];
    out->relevance_out_sum = (double)seed[target] + (cfg->contrast >= 0 ? seed[cfg->contrast] : 0);
}

double lm_explained_output(const float *logits, int V, const strix_gpt_explain_config *cfg) {
    int32_t t = cfg->target;
    if (t < 0) {
        t = 0;
        for (int v = 1; v < V; v++)
            if (logits[v] > logits[t]) t = v;
    }
    return (double)logits[t] - (cfg->contrast >= 0 ? (double)logits[cfg->contrast] : 0.0);
}

strix_status lm_check_logits(const char *who, const float *logits, int V) {
    for (int v = 0; v < V; v++)
        if (!isfinite(logits[v]))
            return strix_error(STRIX_ERR_NUMERIC, "%s: logit %d is %g", who, v,
                               (double)logits[v]);
    return STRIX_OK;
}
