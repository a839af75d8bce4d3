/*
 * explain.c - explanations of one next-character prediction of a sequence LM
 * (strix_seqlm_explain, strix/seqlm.h): LRP walks head, norm and the blocks through their
 * relevance slots (each block's own rule: Arras et al. 2019 for the RNN family, MambaLRP, the
 * RWKV and RetNet passes) down to the token embeddings; the gradient methods run the explainers
 * of strix/attribution.h on the model from the token embeddings to the last position's logits.
 * The host only seeds the output row and sums the (T, C) input relevance per position in double,
 * d ascending.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/common/explain_common.h"
#include "nn/rules_internal.h"
#include "seqlm_internal.h"

#define WHO "seqlm explain"

/* The i-th top-level module in forward order: embedding, blocks, norm, head; NULL past it. */
static strix_module *seqlm_module(strix_seqlm *m, int i) {
    if (i == 0) return &m->emb->base;
    if (i <= m->n_blocks) return m->blocks[i - 1];
    if (i == m->n_blocks + 1) return m->norm;
    return i == m->n_blocks + 2 ? &m->head->base : NULL;
}

static strix_status check_request(strix_seqlm *m, const int32_t *ids, int n,
                                  const strix_gpt_explain_config *cfg) {
    STRIX_TRY(lm_explain_check(WHO, m->cfg.vocab_size, n, ids, n, cfg)); /* the whole prompt */
    if (cfg->method != STRIX_GPT_EXPLAIN_LRP) return STRIX_OK;
    strix_module *mod;
    for (int i = 0; (mod = seqlm_module(m, i)) != NULL; i++) {
        strix_module *bad = lm_refusing_module(mod, cfg->rule.kind);
        if (bad)
            return strix_error(STRIX_ERR_UNSUPPORTED, WHO ": the %s of this %s model does not "
                               "implement the %s rule", bad->vt->type,
                               strix_arch_name(m->cfg.arch), lrp_kind_name(cfg->rule.kind));
    }
    return STRIX_OK;
}

/* An eval forward over ids (1,T) and the last position's logits (V) into host memory. */
static strix_status next_logits(strix_seqlm *m, const int32_t *ids, int T, float *logits) {
    int V = m->cfg.vocab_size;
    STRIX_TRY(strix_seqlm_forward(m, ids, NULL, 1, T, NULL));
    const float *last = strix_seqlm_logits(m) + (size_t)(T - 1) * (size_t)V;
    STRIX_TRY(strix_copy(m->be, logits, last, (size_t)V * sizeof(float), STRIX_COPY_D2H));
    return lm_check_logits(WHO, logits, V);
}

/* Per-position sums (d ascending, in double) of a (T, C) relevance or attribution in host
 * memory into out->relevance; returns the total. */
static strix_status position_sums(const float *host, int T, size_t C,
                                  strix_gpt_explanation *out) {
    out->relevance = calloc((size_t)T, sizeof(float));
    if (!out->relevance) return strix_error(STRIX_ERR_ALLOC, WHO ": out of memory");
    double in_sum = 0.0;
    for (int t = 0; t < T; t++) {
        double sum = 0.0;
        for (size_t d = 0; d < C; d++) sum += host[(size_t)t * C + d];
        out->relevance[t] = (float)sum;
        in_sum += sum;
    }
    out->relevance_in_sum = in_sum;
    return STRIX_OK;
}

// ---- LRP ---------------------------------------------------------------------------------------

static strix_status explain_lrp(strix_seqlm *m, const int32_t *ids, int T,
                                const strix_gpt_explain_config *cfg, strix_gpt_explanation *out) {
    strix_backend *be = m->be;
    int V = m->cfg.vocab_size;
    size_t C = (size_t)m->cfg.d_model;
    float *host = malloc(((size_t)V * 2 + (size_t)T * C) * sizeof(float));
    if (!host) return strix_error(STRIX_ERR_ALLOC, WHO ": out of memory");
    float *logits = host, *seed = host + V, *rel = host + 2 * (size_t)V;
    strix_status s = next_logits(m, ids, T, logits);
    if (s == STRIX_OK) lm_predict_and_seed(logits, V, cfg, out, seed);
    strix_tensor r0 = {0};
    if (s == STRIX_OK) s = strix_tensor_new(be, 3, strix_linear_output(m->head)->shape, &r0);
    if (s == STRIX_OK) s = strix_fill(be, r0.data, 0.0f, (size_t)T * (size_t)V);
    if (s == STRIX_OK)
        s = strix_copy(be, r0.data + (size_t)(T - 1) * (size_t)V, seed, (size_t)V * sizeof(float),
                       STRIX_COPY_H2D);
    const strix_tensor *r = &r0;
    if (s == STRIX_OK) s = strix_module_relevance(&m->head->base, r, &r);
    if (s == STRIX_OK) s = strix_module_relevance(m->norm, r, &r);
    for (int i = m->n_blocks - 1; i >= 0 && s == STRIX_OK; i--)
        s = strix_module_relevance(m->blocks[i], r, &r);
    if (s == STRIX_OK) s = strix_copy(be, rel, r->data, (size_t)T * C * sizeof(float),
                                      STRIX_COPY_D2H);
    if (s == STRIX_OK) s = position_sums(rel, T, C, out);
    strix_tensor_free(&r0);
    free(host);
    out->softmax_gap = NAN;
    out->baseline_output = NAN;
    out->conserved_sum = out->relevance_out_sum;
    return s;
}

// ---- gradient methods --------------------------------------------------------------------------

/* The body for the gradient methods' trunk (explain_common.h): blocks, norm, head. */
static strix_status body_forward(void *ctx, const strix_tensor *x, const strix_tensor **logits) {
    strix_seqlm *m = ctx;
    const strix_tensor *a = x;
    for (int i = 0; i < m->n_blocks; i++) STRIX_TRY(strix_module_forward(m->blocks[i], a, &a));
    STRIX_TRY(strix_module_forward(m->norm, a, &a));
    return strix_linear_forward(m->head, a, logits);
}

static strix_status body_backward(void *ctx, const strix_tensor *dlogits,
                                  const strix_tensor **dx) {
    strix_seqlm *m = ctx;
    const strix_tensor *a;
    STRIX_TRY(strix_linear_backward(m->head, dlogits, &a));
    STRIX_TRY(strix_module_backward(m->norm, a, &a));
    for (int i = m->n_blocks - 1; i >= 0; i--) STRIX_TRY(strix_module_backward(m->blocks[i], a, &a));
    *dx = a;
    return STRIX_OK;
}

static strix_status explain_gradient(strix_seqlm *m, int T, const strix_gpt_explain_config *cfg,
                                     strix_gpt_explanation *out) {
    strix_backend *be = m->be;
    size_t C = (size_t)m->cfg.d_model;
    int64_t shape[3] = {1, T, (int64_t)C};
    strix_tensor x = {0};
    strix_status s = strix_tensor_new(be, 3, shape, &x);
    if (s == STRIX_OK) /* the token embeddings of the ids the forward left in m->ids */
        s = strix_gather_rows(be, m->emb->weight->data, m->ids, x.data, (size_t)T, C);
    lm_trunk t;
    lm_trunk_init(&t, be, WHO, m, body_forward, body_backward, T, (int)C, m->cfg.vocab_size,
                  cfg->contrast);
    if (s == STRIX_OK) s = lm_explain_gradient(&t, &x, &m->params, cfg, out);
    lm_trunk_free(&t);
    strix_tensor_free(&x);
    return s;
}

// ---- entry points ------------------------------------------------------------------------------

strix_status strix_seqlm_explain(strix_seqlm *m, const int32_t *ids, int n,
                                 const strix_gpt_explain_config *cfg,
                                 strix_gpt_explanation *out) {
    memset(out, 0, sizeof *out);
    strix_gpt_explain_config defaults = strix_gpt_explain_defaults();
    if (!cfg) cfg = &defaults;
    STRIX_TRY(check_request(m, ids, n, cfg));
    int T = n; /* the state carries the whole prompt, as in generation: no window */
    out->T = T;
    bool training = m->training;
    m->training = false;
    strix_status s;
    if (cfg->method == STRIX_GPT_EXPLAIN_LRP) {
        strix_module *mod;
        for (int i = 0; (mod = seqlm_module(m, i)) != NULL; i++) lm_set_rule(mod, &cfg->rule);
        s = explain_lrp(m, ids + (n - T), T, cfg, out);
    } else {
        int V = m->cfg.vocab_size;
        float *host = malloc((size_t)V * 2 * sizeof(float));
        s = host ? next_logits(m, ids + (n - T), T, host)
                 : strix_error(STRIX_ERR_ALLOC, WHO ": out of memory");
        if (s == STRIX_OK) lm_predict_and_seed(host, V, cfg, out, host + V);
        free(host);
        if (s == STRIX_OK) s = explain_gradient(m, T, cfg, out);
    }
    m->training = training;
    if (s != STRIX_OK) strix_gpt_explanation_free(out);
    return s;
}

strix_status strix_seqlm_explain_output(strix_seqlm *m, const int32_t *ids, int n,
                                        const strix_gpt_explain_config *cfg, double *value) {
    *value = NAN;
    strix_gpt_explain_config defaults = strix_gpt_explain_defaults();
    if (!cfg) cfg = &defaults;
    STRIX_TRY(check_request(m, ids, n, cfg));
    int T = n, V = m->cfg.vocab_size;
    float *logits = malloc((size_t)V * sizeof(float));
    if (!logits) return strix_error(STRIX_ERR_ALLOC, WHO ": out of memory");
    strix_status s = next_logits(m, ids + (n - T), T, logits);
    if (s == STRIX_OK) *value = lm_explained_output(logits, V, cfg);
    free(logits);
    return s;
}
