/*
 * gpt.c - the GPT of strix/gpt.h: nanoGPT's layout (token + learned position embeddings, pre-norm
 * blocks, final LayerNorm, bias-free lm_head) with microGPT's options (RoPE instead of learned
 * positions, heterogeneous heads, ReLU MLP, tied head), on one parameter block.
 *
 * Forward keeps every activation (inside the modules) so backward recomputes nothing; with targets
 * it also runs the fused softmax + cross-entropy, leaving dlogits ready for backward. Ids and
 * targets are validated on the host, then uploaded into backend buffers that grow only when a
 * larger (B,T) appears. Dropout (nanoGPT's four sites) runs only in training forwards with
 * targets; its masks are counter-RNG functions of (key, forward, layer, site, element), so no mask
 * is stored and none depends on the thread count. Not here: sampling, checkpoints, the training
 * loop, explanations (explain.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt_internal.h"
#include "models/common/lm_loss.h"

// ---- configuration -----------------------------------------------------------------------------

strix_gpt_config strix_gpt_config_default(void) {
    strix_gpt_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = 0;
    c.block_size = 64;
    c.n_layer = 4;
    c.n_head = 4;
    c.d_model = 128;
    c.d_ff = 0;
    c.mlp_act = STRIX_ACT_GELU;
    c.rope = false;
    c.rope_base = 10000.0f;
    c.tie_weights = false;
    c.bias = true;
    c.ln_eps = 1e-5f;
    c.dropout = 0.0f;
    return c;
}

strix_status strix_gpt_config_check(const strix_gpt_config *c) {
    if (c->vocab_size <= 0)
        return strix_error(STRIX_ERR_ARG, "vocab_size must be positive (got %d)", c->vocab_size);
    if (c->block_size <= 0)
        return strix_error(STRIX_ERR_ARG, "block_size must be positive (got %d)", c->block_size);
    if (c->n_layer <= 0)
        return strix_error(STRIX_ERR_ARG, "n_layer must be positive (got %d)", c->n_layer);
    if (c->d_model <= 0)
        return strix_error(STRIX_ERR_ARG, "d_model must be positive (got %d)", c->d_model);
    if (c->n_head <= 0 || c->n_head > STRIX_GPT_MAX_HEADS)
        return strix_error(STRIX_ERR_ARG, "n_head must be in [1, %d] (got %d)",
                           STRIX_GPT_MAX_HEADS, c->n_head);
    if (c->d_ff < 0) return strix_error(STRIX_ERR_ARG, "d_ff must be >= 0 (got %d)", c->d_ff);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return strix_error(STRIX_ERR_ARG, "dropout must be in [0, 1) (got %g)",
                           (double)c->dropout);
    if (c->mlp_act != STRIX_ACT_GELU && c->mlp_act != STRIX_ACT_RELU)
        return strix_error(STRIX_ERR_ARG, "mlp_act %d is neither GELU nor ReLU", (int)c->mlp_act);
    if (!(c->ln_eps > 0.0f) || !isfinite(c->ln_eps))
        return strix_error(STRIX_ERR_ARG, "ln_eps must be positive and finite (got %g)",
                           (double)c->ln_eps);
    if (!(c->rope_base > 0.0f) || !isfinite(c->rope_base)) /* checked even with RoPE off: saved */
        return strix_error(STRIX_ERR_ARG, "rope_base must be positive and finite (got %g)",
                           (double)c->rope_base);
    if (c->head_sizes[0] > 0) {
        int sum = 0;
        for (int h = 0; h < c->n_head; h++) {
            if (c->head_sizes[h] <= 0)
                return strix_error(STRIX_ERR_ARG, "head size %d of head %d must be positive",
                                   c->head_sizes[h], h);
            sum += c->head_sizes[h];
        }
        if (sum != c->d_model)
            return strix_error(STRIX_ERR_ARG, "head sizes sum to %d, not d_model %d", sum,
                               c->d_model);
    } else if (c->d_model % c->n_head != 0) {
        return strix_error(STRIX_ERR_ARG, "n_head %d does not divide d_model %d", c->n_head,
                           c->d_model);
    }
    if (c->rope)
        for (int h = 0; h < c->n_head; h++) {
            int hs = c->head_sizes[0] > 0 ? c->head_sizes[h] : c->d_model / c->n_head;
            if (hs % 2 != 0)
                return strix_error(STRIX_ERR_ARG, "RoPE needs an even head size (got %d)", hs);
        }
    return STRIX_OK;
}

// ---- construction ------------------------------------------------------------------------------

void strix_gpt_free(strix_gpt *g) {
    if (!g) return;
    if (g->wte) strix_module_free(&g->wte->base);
    if (g->h)
        for (int l = 0; l < g->cfg.n_layer; l++)
            if (g->h[l]) strix_module_free(&g->h[l]->base);
    free(g->h);
    if (g->ln_f) strix_module_free(&g->ln_f->base);
    if (g->lm_head) strix_module_free(&g->lm_head->base);
    if (g->drop) strix_module_free(&g->drop->base);
    strix_free(g->be, g->ids);
    strix_free(g->be, g->targets);
    strix_tensor_free(&g->losses);
    strix_tensor_free(&g->dlogits);
    strix_params_free(&g->params);
    free(g);
}

/* The modes of the dropout sites (blocks and the embedding's Dropout) for the next forward. */
static void set_drop_modes(strix_gpt *g, bool drop) {
    if (g->cfg.dropout <= 0.0f) return;
    if (g->drop) strix_module_set_training(&g->drop->base, drop);
    for (int l = 0; l < g->cfg.n_layer; l++) strix_module_set_training(&g->h[l]->base, drop);
}

static strix_status build(strix_gpt *g) {
    const strix_gpt_config *c = &g->cfg;
    strix_params *ps = &g->params;
    const float std = 0.02f;
    // nanoGPT: residual projections get 0.02/sqrt(2·n_layer)
    const float proj_std = (float)(0.02 / sqrt(2.0 * c->n_layer));
    STRIX_TRY(strix_embedding_new(ps, "transformer.wte", c->vocab_size, c->d_model, std, &g->wte));
    if (!c->rope) {
        int64_t shape[2] = {c->block_size, c->d_model};
        g->wpe = strix_params_add(ps, "transformer.wpe.weight", 2, shape, STRIX_INIT_NORMAL, std,
                                  true);
        if (!g->wpe) return strix_error(STRIX_ERR_ALLOC, "gpt: out of memory");
    }
    g->h = calloc((size_t)c->n_layer, sizeof *g->h);
    if (!g->h) return strix_error(STRIX_ERR_ALLOC, "gpt: out of memory");
    strix_block_config bc = {
        .attn = {.d_model = c->d_model, .n_head = c->n_head,
                 .head_sizes = c->head_sizes[0] > 0 ? c->head_sizes : NULL,
                 .block_size = c->block_size, .bias = c->bias, .rope = c->rope,
                 .rope_base = c->rope_base, .init_std = std, .proj_init_std = proj_std,
                 .dropout = c->dropout},
        .d_ff = c->d_ff > 0 ? c->d_ff : 4 * c->d_model,
        .act = c->mlp_act,
        .ln_eps = c->ln_eps,
        .bias = c->bias,
        .dropout = c->dropout};
    for (int l = 0; l < c->n_layer; l++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "transformer.h.%d", l);
        STRIX_TRY(strix_block_new(ps, prefix, &bc, &g->h[l]));
    }
    STRIX_TRY(strix_layernorm_new(ps, "transformer.ln_f", c->d_model, c->bias, c->ln_eps,
                                  &g->ln_f));
    STRIX_TRY(strix_linear_new(ps, "lm_head", c->d_model, c->vocab_size, false, std,
                               c->tie_weights ? g->wte->weight : NULL, &g->lm_head));
    if (c->dropout > 0.0f) STRIX_TRY(strix_dropout_new(g->be, c->dropout, 0, &g->drop));
    set_drop_modes(g, false); /* eval between forwards; g->training is the mode */
    return strix_params_alloc(ps);
}

strix_status strix_gpt_new(strix_backend *be, const strix_gpt_config *c, strix_gpt **out) {
    *out = NULL;
    STRIX_TRY(strix_gpt_config_check(c));
    strix_gpt *g = calloc(1, sizeof *g);
    if (!g) return strix_error(STRIX_ERR_ALLOC, "gpt: out of memory");
    g->be = be;
    g->cfg = *c;
    g->training = true;
    strix_params_init_empty(&g->params, be);
    strix_status s = build(g);
    if (s != STRIX_OK) {
        strix_gpt_free(g);
        return s;
    }
    *out = g;
    return STRIX_OK;
}

const strix_gpt_config *strix_gpt_config_of(const strix_gpt *g) { return &g->cfg; }

strix_params *strix_gpt_params(strix_gpt *g) { return &g->params; }

strix_status strix_gpt_init_weights(strix_gpt *g, uint64_t seed) {
    return strix_params_init(&g->params, seed);
}

void strix_gpt_set_training(strix_gpt *g, bool training) { g->training = training; }

bool strix_gpt_training(const strix_gpt *g) { return g->training; }

void strix_gpt_set_dropout_key(strix_gpt *g, uint64_t key) {
    g->drop_key = key;
    g->drop_count = 0;
}

// ---- forward / backward ------------------------------------------------------------------------

/* Grows the backend id/target buffers to hold n int32 each. */
static strix_status ensure_ids(strix_gpt *g, size_t n) {
    if (n <= g->ids_cap) return STRIX_OK;
    strix_free(g->be, g->ids);
    strix_free(g->be, g->targets);
    g->ids = g->targets = NULL;
    g->ids_cap = 0;
    STRIX_TRY(strix_alloc(g->be, n * sizeof(int32_t), (void **)&g->ids));
    STRIX_TRY(strix_alloc(g->be, n * sizeof(int32_t), (void **)&g->targets));
    g->ids_cap = n;
    return STRIX_OK;
}

/* Embeddings (token + position), their dropout, the blocks and ln_f over ids already on the
 * backend; returns ln_f's output (B,T,C). The dropout sites run in the modes set_drop_modes gave
 * them. */
static strix_status trunk_forward(strix_gpt *g, int B, int T, const strix_tensor **out) {
    strix_backend *be = g->be;
    int C = g->cfg.d_model;
    int64_t shape[2] = {B, T};
    const strix_tensor *x;
    STRIX_TRY(strix_embedding_forward(g->wte, g->ids, 2, shape, &x));
    // x[b,t,:] += wpe[t,:]: the first T rows of wpe are one (T·C) row vector
    if (g->wpe)
        STRIX_TRY(strix_add_row_vector(be, x->data, g->wpe->data, x->data, (size_t)B,
                                       (size_t)T * (size_t)C));
    if (g->drop) STRIX_TRY(strix_module_forward(&g->drop->base, x, &x));
    for (int l = 0; l < g->cfg.n_layer; l++) STRIX_TRY(strix_block_forward(g->h[l], x, &x));
    return strix_layernorm_forward(g->ln_f, x, out);
}

/* trunk_forward with the dropout sites in training mode and seeded for this forward when `drop`;
 * the sites are back in eval mode on return, whatever the status. */
static strix_status trunk_forward_drop(strix_gpt *g, int B, int T, bool drop,
                                       const strix_tensor **out) {
    if (!drop) return trunk_forward(g, B, T, out);
    uint64_t s = strix_seed_derive(g->drop_key, g->drop_count++);
    g->drop->seed = strix_seed_derive(s, 0);
    g->drop->offset = 0;
    for (int l = 0; l < g->cfg.n_layer; l++)
        strix_block_set_dropout_seed(g->h[l], strix_seed_derive(s, 1 + (uint64_t)l));
    set_drop_modes(g, true);
    strix_status st = trunk_forward(g, B, T, out);
    set_drop_modes(g, false);
    return st;
}

strix_status strix_gpt_forward(strix_gpt *g, const int32_t *ids, const int32_t *targets, int B,
                               int T, float *loss) {
    const strix_gpt_config *c = &g->cfg;
    g->can_backward = false;
    if (B <= 0 || T <= 0)
        return strix_error(STRIX_ERR_ARG, "gpt forward: B %d and T %d must be positive", B, T);
    if (T > c->block_size)
        return strix_error(STRIX_ERR_ARG, "gpt forward: T %d exceeds block_size %d", T,
                           c->block_size);
    size_t n = (size_t)B * (size_t)T, valid;
    STRIX_TRY(lm_check_batch("gpt forward", ids, targets, n, c->vocab_size, &valid));
    strix_backend *be = g->be;
    STRIX_TRY(ensure_ids(g, n));
    STRIX_TRY(strix_copy(be, g->ids, ids, n * sizeof(int32_t), STRIX_COPY_H2D));
    g->B = B;
    g->T = T;
    const strix_tensor *h, *logits;
    bool drop = targets && g->training && c->dropout > 0.0f;
    STRIX_TRY(trunk_forward_drop(g, B, T, drop, &h));
    STRIX_TRY(strix_linear_forward(g->lm_head, h, &logits));
    if (!targets) return STRIX_OK;

    STRIX_TRY(strix_copy(be, g->targets, targets, n * sizeof(int32_t), STRIX_COPY_H2D));
    STRIX_TRY(lm_cross_entropy(be, logits, g->targets, valid, &g->losses, &g->dlogits, loss));
    g->can_backward = true;
    return STRIX_OK;
}

const float *strix_gpt_logits(const strix_gpt *g) { return strix_linear_output(g->lm_head)->data; }

strix_status strix_gpt_backward(strix_gpt *g) { return strix_gpt_backward_scaled(g, 1.0f); }

strix_status strix_gpt_backward_scaled(strix_gpt *g, float scale) {
    if (!g->can_backward)
        return strix_error(STRIX_ERR_ARG,
                           "gpt backward: needs a forward with targets (and no decode since)");
    if (!isfinite(scale))
        return strix_error(STRIX_ERR_ARG, "gpt backward: loss scale %g is not finite",
                           (double)scale);
    // (scale·loss).backward(): the seed dlogits (already 1/valid from forward) times scale, in
    // place, so the forward is consumed; scale 1 leaves the seed and the path untouched
    if (scale != 1.0f) {
        STRIX_TRY(strix_axpby(g->be, scale, g->dlogits.data, 0.0f, NULL, g->dlogits.data,
                              (size_t)strix_tensor_numel(&g->dlogits)));
        g->can_backward = false;
    }
    const strix_tensor *d;
    STRIX_TRY(strix_linear_backward(g->lm_head, &g->dlogits, &d));
    STRIX_TRY(strix_layernorm_backward(g->ln_f, d, &d));
    for (int l = g->cfg.n_layer - 1; l >= 0; l--) STRIX_TRY(strix_block_backward(g->h[l], d, &d));
    if (g->drop) STRIX_TRY(strix_module_backward(&g->drop->base, d, &d));
    STRIX_TRY(strix_embedding_backward(g->wte, d));
    // dwpe[t,:] += Σ_b dx[b,t,:]
    if (g->wpe)
        STRIX_TRY(strix_column_sums(g->be, d->data, g->wpe->grad, (size_t)g->B,
                                    (size_t)g->T * (size_t)g->cfg.d_model, 1.0f));
    return STRIX_OK;
}

// ---- KV-cache decoding -------------------------------------------------------------------------

strix_status strix_gpt_decode_reset(strix_gpt *g) {
    g->decode_pos = 0;
    return STRIX_OK;
}

int strix_gpt_decode_pos(const strix_gpt *g) { return g->decode_pos; }

strix_status strix_gpt_decode_step(strix_gpt *g, int32_t token, float *logits) {
    const strix_gpt_config *c = &g->cfg;
    int pos = g->decode_pos;
    if (pos >= c->block_size)
        return strix_error(STRIX_ERR_ARG, "gpt decode: cache full (%d positions); reset it",
                           c->block_size);
    if (token < 0 || token >= c->vocab_size)
        return strix_error(STRIX_ERR_ARG, "gpt decode: token %d outside [0, %d)", token,
                           c->vocab_size);
    strix_backend *be = g->be;
    g->can_backward = false; // the step overwrites the buffers of the last forward
    STRIX_TRY(ensure_ids(g, 1));
    STRIX_TRY(strix_copy(be, g->ids, &token, sizeof token, STRIX_COPY_H2D));
    int64_t shape[2] = {1, 1};
    const strix_tensor *x;
    STRIX_TRY(strix_embedding_forward(g->wte, g->ids, 2, shape, &x));
    size_t C = (size_t)c->d_model;
    if (g->wpe)
        STRIX_TRY(strix_add(be, x->data, g->wpe->data + (size_t)pos * C, x->data, C));
    for (int l = 0; l < c->n_layer; l++) STRIX_TRY(strix_block_decode(g->h[l], x, pos, &x));
    STRIX_TRY(strix_layernorm_forward(g->ln_f, x, &x));
    STRIX_TRY(strix_linear_forward(g->lm_head, x, &x));
    STRIX_TRY(strix_copy(be, logits, x->data, (size_t)c->vocab_size * sizeof(float),
                         STRIX_COPY_D2H));
    g->decode_pos = pos + 1;
    return STRIX_OK;
}
