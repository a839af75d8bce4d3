/*
 * explain_common.c - the shared parts of the character LMs' explanations (explain_common.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/common/explain_common.h"
#include "nn/rules_internal.h"
#include "strix/attribution.h"

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

// ---- the trunk of the gradient methods ----------------------------------------------------------

static strix_status trunk_host(lm_trunk *t, size_t n) {
    if (n <= t->host_cap) return STRIX_OK;
    float *p = realloc(t->host, n * sizeof(float));
    if (!p) return strix_error(STRIX_ERR_ALLOC, "%s: out of memory", t->who);
    t->host = p;
    t->host_cap = n;
    return STRIX_OK;
}

/* Forward: dst[b][v] = src[b][v] − src[b][contrast]; backward: the transpose, dst[b][contrast]
 * −= Σ_v src[b][v]. On the host (B·V floats). */
static strix_status apply_contrast(lm_trunk *t, const float *src, float *dst, bool backward) {
    size_t V = (size_t)t->V, n = (size_t)t->B * V;
    STRIX_TRY(trunk_host(t, n));
    STRIX_TRY(strix_copy(t->base.be, t->host, src, n * sizeof(float), STRIX_COPY_D2H));
    for (int b = 0; b < t->B; b++) {
        float *row = t->host + (size_t)b * V;
        if (backward) {
            float sum = 0.0f;
            for (size_t v = 0; v < V; v++) sum += row[v];
            row[t->contrast] -= sum;
        } else {
            float c = row[t->contrast];
            for (size_t v = 0; v < V; v++) row[v] -= c;
        }
    }
    return strix_copy(t->base.be, dst, t->host, n * sizeof(float), STRIX_COPY_H2D);
}

static strix_status trunk_forward(strix_module *m, const strix_tensor *x, const strix_tensor **y) {
    lm_trunk *t = (lm_trunk *)m;
    strix_backend *be = m->be;
    size_t V = (size_t)t->V;
    if (x->ndim != 3 || x->shape[1] != t->T || x->shape[2] != t->C)
        return strix_error(STRIX_ERR_SHAPE, "%s: embeddings must be (B,%d,%d)", t->who, t->T,
                           t->C);
    int B = (int)x->shape[0], T = t->T;
    t->B = B;
    int64_t yshape[2] = {B, (int64_t)V};
    STRIX_TRY(strix_tensor_ensure(be, &t->y, 2, yshape));
    const strix_tensor *logits;
    STRIX_TRY(t->body_forward(t->ctx, x, &logits));
    for (int b = 0; b < B; b++)
        STRIX_TRY(strix_copy(be, t->y.data + (size_t)b * V,
                             logits->data + ((size_t)b * (size_t)T + (size_t)(T - 1)) * V,
                             V * sizeof(float), STRIX_COPY_D2D));
    if (t->contrast >= 0) STRIX_TRY(apply_contrast(t, t->y.data, t->y.data, false));
    *y = &t->y;
    return STRIX_OK;
}

static strix_status trunk_backward(strix_module *m, const strix_tensor *dy,
                                   const strix_tensor **dx) {
    lm_trunk *t = (lm_trunk *)m;
    strix_backend *be = m->be;
    size_t V = (size_t)t->V;
    int B = t->B, T = t->T;
    const float *d = dy->data;
    if (t->contrast >= 0) {
        STRIX_TRY(strix_tensor_ensure(be, &t->dy, dy->ndim, dy->shape));
        STRIX_TRY(apply_contrast(t, dy->data, t->dy.data, true));
        d = t->dy.data;
    }
    int64_t shape[3] = {B, T, (int64_t)V};
    STRIX_TRY(strix_tensor_ensure(be, &t->dlogits, 3, shape));
    STRIX_TRY(strix_fill(be, t->dlogits.data, 0.0f, (size_t)B * (size_t)T * V));
    for (int b = 0; b < B; b++)
        STRIX_TRY(strix_copy(be, t->dlogits.data + ((size_t)b * (size_t)T + (size_t)(T - 1)) * V,
                             d + (size_t)b * V, V * sizeof(float), STRIX_COPY_D2D));
    return t->body_backward(t->ctx, &t->dlogits, dx);
}

static const strix_module_i trunk_vt = {
    .type = "LMTrunk", .forward = trunk_forward, .backward = trunk_backward};

void lm_trunk_init(lm_trunk *t, strix_backend *be, const char *who, void *ctx,
                   lm_body_forward fwd, lm_body_backward bwd, int T, int C, int V,
                   int32_t contrast) {
    memset(t, 0, sizeof *t);
    t->base.vt = &trunk_vt;
    t->base.be = be;
    t->who = who;
    t->ctx = ctx;
    t->body_forward = fwd;
    t->body_backward = bwd;
    t->T = T;
    t->C = C;
    t->V = V;
    t->contrast = contrast;
}

void lm_trunk_free(lm_trunk *t) {
    strix_tensor_free(&t->y);
    strix_tensor_free(&t->dy);
    strix_tensor_free(&t->dlogits);
    free(t->host);
    t->host = NULL;
    t->host_cap = 0;
}

strix_status lm_explain_gradient(lm_trunk *t, const strix_tensor *x, strix_params *ps,
                                 const strix_gpt_explain_config *cfg, strix_gpt_explanation *out) {
    int32_t target = out->target;
    strix_attr_config ac = {.targets = &target, .params = ps};
    strix_attribution a = {0};
    strix_status s;
    switch (cfg->method) {
    case STRIX_GPT_EXPLAIN_GRADIENT_X_INPUT:
        s = strix_attr_input_x_gradient(&t->base, x, &ac, &a);
        break;
    case STRIX_GPT_EXPLAIN_INTEGRATED_GRADIENTS:
        s = strix_attr_integrated_gradients(&t->base, x, NULL, cfg->ig_steps,
                                            STRIX_IG_GAUSS_LEGENDRE, &ac, &a);
        break;
    default:
        s = strix_attr_saliency(&t->base, x, &ac, true, &a);
        break;
    }
    size_t C = (size_t)t->C;
    out->relevance = s == STRIX_OK ? calloc((size_t)t->T, sizeof(float)) : NULL;
    if (s == STRIX_OK && !out->relevance) s = strix_error(STRIX_ERR_ALLOC, "%s: out of memory", t->who);
    double in_sum = 0.0;
    for (int p = 0; p < t->T && s == STRIX_OK; p++) {
        double sum = 0.0;
        for (size_t d = 0; d < C; d++) sum += a.values[(size_t)p * C + d];
        out->relevance[p] = (float)sum;
        in_sum += sum;
    }
    if (s == STRIX_OK) {
        out->relevance_in_sum = in_sum;
        out->relevance_out_sum = a.output[0];
        out->softmax_gap = NAN;
        bool ig = cfg->method == STRIX_GPT_EXPLAIN_INTEGRATED_GRADIENTS;
        out->baseline_output = ig ? a.baseline_output[0] : NAN;
        out->conserved_sum = ig ? a.output_delta[0] : NAN;
    }
    strix_attribution_free(&a);
    return s;
}
