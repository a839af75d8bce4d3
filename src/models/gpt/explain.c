/*
 * explain.c - AttnLRP of one GPT prediction (strix_gpt_explain, strix/gpt.h; Achtibat et al. 2024,
 * checked against LXT 2.1 by tests/test_attnlrp.c).
 *
 * The walk is the forward in reverse through the modules' relevance slots: lm_head, ln_f, the
 * blocks from the last, then the embedding sum x0 = wte[id] + wpe[pos], split by the epsilon
 * rule. Everything runs on the backend; the host only seeds the output (one row of T·V floats)
 * and sums the (T, C) input relevance per position in double, d ascending. Not here: batches
 * (one sequence per call), the per-module rules (src/nn), rendering (tools/strix).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt_internal.h"
#include "models/common/explain_common.h"
#include "nn/rules_internal.h"

strix_gpt_explain_config strix_gpt_explain_defaults(void) {
    strix_gpt_explain_config c;
    memset(&c, 0, sizeof c);
    c.rule.kind = STRIX_LRP_EPSILON;
    c.rule.epsilon = 1e-6f;
    c.rule.gamma = 0.25f;
    c.rule.alpha = 1.0f;
    c.rule.beta = 0.0f;
    c.rule.low = 0.0f;
    c.rule.high = 1.0f;
    c.rule.bias_in_denominator = true; /* LXT; pre-bias z near 0 amplifies rounding otherwise */
    c.rule.layer_norm_detach_std = true;
    c.one_hot_seed = false;
    c.target = -1;
    c.contrast = -1;
    c.method = STRIX_GPT_EXPLAIN_LRP;
    c.ig_steps = 50;
    return c;
}

void strix_gpt_explanation_free(strix_gpt_explanation *e) {
    if (!e) return;
    free(e->relevance);
    free(e->relevance_position);
    memset(e, 0, sizeof *e);
}

// ---- rules -------------------------------------------------------------------------------------

/* The model's i-th top-level module in forward order: wte, the blocks, ln_f, lm_head; NULL
 * past the last. */
static strix_module *gpt_module(strix_gpt *g, int i) {
    int L = g->cfg.n_layer;
    if (i == 0) return &g->wte->base;
    if (i <= L) return &g->h[i - 1]->base;
    if (i == L + 1) return &g->ln_f->base;
    return i == L + 2 ? &g->lm_head->base : NULL;
}

/* Arguments, rule and support, checked before anything runs. */
static strix_status check_request(strix_gpt *g, const int32_t *ids, int n,
                                  const strix_gpt_explain_config *cfg) {
    STRIX_TRY(lm_explain_check("gpt explain", g->cfg.vocab_size, g->cfg.block_size, ids, n,
                               cfg));
    if (cfg->method != STRIX_GPT_EXPLAIN_LRP) return STRIX_OK;
    strix_module *m;
    for (int i = 0; (m = gpt_module(g, i)) != NULL; i++) {
        strix_module *bad = lm_refusing_module(m, cfg->rule.kind);
        if (!bad) continue;
        int L = g->cfg.n_layer;
        char where[48];
        if (i >= 1 && i <= L) snprintf(where, sizeof where, "transformer.h.%d", i - 1);
        else snprintf(where, sizeof where, "%s", i == 0 ? "transformer.wte"
                                               : i == L + 1 ? "transformer.ln_f" : "lm_head");
        return strix_error(STRIX_ERR_UNSUPPORTED, "gpt explain: a %s in %s does not implement "
                           "the %s rule", bad->vt->type, where, lrp_kind_name(cfg->rule.kind));
    }
    return STRIX_OK;
}

// ---- the explanation ---------------------------------------------------------------------------

/* Relevance of x0 (1,T,C) -> per-position sums of the token (and position) shares. */
static strix_status embedding_relevance(strix_gpt *g, const strix_tensor *r, int T, float eps,
                                        strix_gpt_explanation *out) {
    strix_backend *be = g->be;
    size_t C = (size_t)g->cfg.d_model, n = (size_t)T * C;
    float *host = malloc(2 * n * sizeof(float));
    out->relevance = calloc((size_t)T, sizeof(float));
    if (g->wpe) out->relevance_position = calloc((size_t)T, sizeof(float));
    if (!host || !out->relevance || (g->wpe && !out->relevance_position)) {
        free(host);
        return strix_error(STRIX_ERR_ALLOC, "gpt explain: out of memory");
    }
    strix_status s = STRIX_OK;
    if (g->wpe) {
        // x0 = tok + pos: the forward summed in place, so gather the token rows again
        float *tok = NULL, *r_tok = NULL;
        s = strix_alloc(be, 2 * n * sizeof(float), (void **)&tok);
        if (s == STRIX_OK) {
            r_tok = tok + n;
            s = strix_gather_rows(be, g->wte->weight->data, g->ids, tok, (size_t)T, C);
        }
        // r_tok into tok's second half, r_pos over tok (elementwise: aliasing a is allowed)
        if (s == STRIX_OK)
            s = strix_lrp_residual_split(be, tok, g->wpe->data, r->data, r_tok, tok, n, eps);
        if (s == STRIX_OK) s = strix_copy(be, host, r_tok, n * sizeof(float), STRIX_COPY_D2H);
        if (s == STRIX_OK) s = strix_copy(be, host + n, tok, n * sizeof(float), STRIX_COPY_D2H);
        strix_free(be, tok);
    } else {
        s = strix_copy(be, host, r->data, n * sizeof(float), STRIX_COPY_D2H);
    }
    double in_sum = 0.0;
    for (int t = 0; t < T && s == STRIX_OK; t++) {
        double tok_sum = 0.0, pos_sum = 0.0;
        for (size_t d = 0; d < C; d++) {
            tok_sum += host[(size_t)t * C + d];
            if (g->wpe) pos_sum += host[n + (size_t)t * C + d];
        }
        out->relevance[t] = (float)tok_sum;
        if (g->wpe) out->relevance_position[t] = (float)pos_sum;
        in_sum += tok_sum + pos_sum;
    }
    out->relevance_in_sum = in_sum;
    free(host);
    return s;
}

/* An eval forward over ids (1,T) and the last position's logits (V) into host memory; checks
 * that every logit is finite. */
static strix_status next_logits(strix_gpt *g, const int32_t *ids, int T, float *logits) {
    int V = g->cfg.vocab_size;
    STRIX_TRY(strix_gpt_forward(g, ids, NULL, 1, T, NULL));
    const float *dev_logits = strix_linear_output(g->lm_head)->data + (size_t)(T - 1) * (size_t)V;
    STRIX_TRY(strix_copy(g->be, logits, dev_logits, (size_t)V * sizeof(float), STRIX_COPY_D2H));
    return lm_check_logits("gpt explain", logits, V);
}

/* The walk itself; `out` holds the prediction fields on entry. */
static strix_status explain_run(strix_gpt *g, const int32_t *ids, int T,
                                const strix_gpt_explain_config *cfg, strix_gpt_explanation *out) {
    strix_backend *be = g->be;
    int V = g->cfg.vocab_size;
    float *host = malloc((size_t)V * 2 * sizeof(float));
    if (!host) return strix_error(STRIX_ERR_ALLOC, "gpt explain: out of memory");
    float *logits = host, *seed = host + V;
    strix_status s = next_logits(g, ids, T, logits);
    if (s == STRIX_OK) lm_predict_and_seed(logits, V, cfg, out, seed);
    // the seed (1,T,V): zero except the last position's row
    strix_tensor r0 = {0};
    if (s == STRIX_OK) s = strix_tensor_new(be, 3, strix_linear_output(g->lm_head)->shape, &r0);
    if (s == STRIX_OK) s = strix_fill(be, r0.data, 0.0f, (size_t)T * (size_t)V);
    if (s == STRIX_OK)
        s = strix_copy(be, r0.data + (size_t)(T - 1) * (size_t)V, seed, (size_t)V * sizeof(float),
                       STRIX_COPY_H2D);
    free(host);
    const strix_tensor *r = &r0;
    if (s == STRIX_OK) s = g->lm_head->base.vt->relevance(&g->lm_head->base, r, &r);
    // ln_f's input is the last block's output (LayerNorm keeps only xhat and the std)
    const strix_tensor *x_f = strix_block_output(g->h[g->cfg.n_layer - 1]);
    if (s == STRIX_OK) s = strix_layernorm_relevance(g->ln_f, x_f, r, &r);
    out->softmax_gap = 0.0;
    for (int l = g->cfg.n_layer - 1; l >= 0 && s == STRIX_OK; l--) {
        s = strix_block_relevance(g->h[l], r, &r);
        out->softmax_gap += strix_attention_softmax_gap(g->h[l]->attn);
    }
    if (s == STRIX_OK) s = embedding_relevance(g, r, T, cfg->rule.epsilon, out);
    strix_tensor_free(&r0);
    out->baseline_output = NAN;
    out->conserved_sum = out->relevance_out_sum;
    return s;
}

// ---- gradient methods --------------------------------------------------------------------------

/* The GPT's body for the gradient methods' trunk (explain_common.h): token embeddings x (B,T,C)
 * plus the position embeddings, the blocks, ln_f, lm_head -> logits (B,T,V), and back. So the
 * gradient with respect to x is that with respect to x0 = x + wpe. */
typedef struct gpt_body {
    strix_gpt *g;
    strix_tensor x0;
} gpt_body;

static strix_status body_forward(void *ctx, const strix_tensor *x, const strix_tensor **logits) {
    gpt_body *h = ctx;
    strix_gpt *g = h->g;
    strix_backend *be = g->be;
    size_t C = (size_t)g->cfg.d_model;
    int B = (int)x->shape[0], T = (int)x->shape[1];
    STRIX_TRY(strix_tensor_ensure(be, &h->x0, 3, x->shape));
    if (g->wpe)
        STRIX_TRY(strix_add_row_vector(be, x->data, g->wpe->data, h->x0.data, (size_t)B,
                                       (size_t)T * C));
    else
        STRIX_TRY(strix_copy(be, h->x0.data, x->data, (size_t)B * (size_t)T * C * sizeof(float),
                             STRIX_COPY_D2D));
    const strix_tensor *a = &h->x0;
    for (int l = 0; l < g->cfg.n_layer; l++) STRIX_TRY(strix_block_forward(g->h[l], a, &a));
    STRIX_TRY(strix_layernorm_forward(g->ln_f, a, &a));
    return strix_linear_forward(g->lm_head, a, logits);
}

static strix_status body_backward(void *ctx, const strix_tensor *dlogits,
                                  const strix_tensor **dx) {
    strix_gpt *g = ((gpt_body *)ctx)->g;
    const strix_tensor *a;
    STRIX_TRY(strix_linear_backward(g->lm_head, dlogits, &a));
    STRIX_TRY(strix_layernorm_backward(g->ln_f, a, &a));
    for (int l = g->cfg.n_layer - 1; l >= 0; l--) STRIX_TRY(strix_block_backward(g->h[l], a, &a));
    *dx = a;
    return STRIX_OK;
}

/* A gradient method of cfg over ids (1,T), the prediction fields already in out. */
static strix_status explain_gradient(strix_gpt *g, int T, const strix_gpt_explain_config *cfg,
                                     strix_gpt_explanation *out) {
    strix_backend *be = g->be;
    size_t C = (size_t)g->cfg.d_model;
    // the token embeddings (1,T,C) of the ids the forward left in g->ids
    int64_t shape[3] = {1, T, (int64_t)C};
    strix_tensor x = {0};
    strix_status s = strix_tensor_new(be, 3, shape, &x);
    if (s == STRIX_OK)
        s = strix_gather_rows(be, g->wte->weight->data, g->ids, x.data, (size_t)T, C);
    gpt_body body = {.g = g};
    lm_trunk t;
    lm_trunk_init(&t, be, "gpt explain", &body, body_forward, body_backward, T, (int)C,
                  g->cfg.vocab_size, cfg->contrast);
    if (s == STRIX_OK) s = lm_explain_gradient(&t, &x, &g->params, cfg, out);
    lm_trunk_free(&t);
    strix_tensor_free(&body.x0);
    strix_tensor_free(&x);
    return s;
}

strix_status strix_gpt_explain(strix_gpt *g, const int32_t *ids, int n,
                               const strix_gpt_explain_config *cfg, strix_gpt_explanation *out) {
    memset(out, 0, sizeof *out);
    strix_gpt_explain_config defaults = strix_gpt_explain_defaults();
    if (!cfg) cfg = &defaults;
    STRIX_TRY(check_request(g, ids, n, cfg));
    int T = n < g->cfg.block_size ? n : g->cfg.block_size;
    out->T = T;
    strix_status s;
    if (cfg->method == STRIX_GPT_EXPLAIN_LRP) {
        strix_module *m;
        for (int i = 0; (m = gpt_module(g, i)) != NULL; i++) lm_set_rule(m, &cfg->rule);
        s = explain_run(g, ids + (n - T), T, cfg, out);
    } else {
        int V = g->cfg.vocab_size;
        float *host = malloc((size_t)V * 2 * sizeof(float));
        s = host ? next_logits(g, ids + (n - T), T, host)
                 : strix_error(STRIX_ERR_ALLOC, "gpt explain: out of memory");
        if (s == STRIX_OK) lm_predict_and_seed(host, V, cfg, out, host + V);
        free(host);
        if (s == STRIX_OK) s = explain_gradient(g, T, cfg, out);
    }
    if (s != STRIX_OK) strix_gpt_explanation_free(out);
    return s;
}

strix_status strix_gpt_explain_output(strix_gpt *g, const int32_t *ids, int n,
                                      const strix_gpt_explain_config *cfg, double *value) {
    *value = NAN;
    strix_gpt_explain_config defaults = strix_gpt_explain_defaults();
    if (!cfg) cfg = &defaults;
    STRIX_TRY(check_request(g, ids, n, cfg));
    int T = n < g->cfg.block_size ? n : g->cfg.block_size, V = g->cfg.vocab_size;
    float *logits = malloc((size_t)V * sizeof(float));
    if (!logits) return strix_error(STRIX_ERR_ALLOC, "gpt explain: out of memory");
    strix_status s = next_logits(g, ids + (n - T), T, logits);
    if (s == STRIX_OK) *value = lm_explained_output(logits, V, cfg);
    free(logits);
    return s;
}
