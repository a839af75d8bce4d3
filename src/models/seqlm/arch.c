/*
 * arch.c - the architectures of strix_seqlm: per architecture the parameter names, the blocks it
 * stacks between embedding and norm, and its special inits. Adding an architecture is one entry
 * here (and its module in src/nn).
 */
#include <stdio.h>

#include "seqlm_internal.h"
#include "strix/mamba.h"
#include "strix/recurrent.h"
#include "strix/retnet.h"
#include "strix/rwkv.h"

// ---- RNN, LSTM, GRU: one torch.nn recurrent module of n_layer layers ---------------------------

static strix_status rnn_check(const strix_seqlm_config *c) {
    if (c->hidden < 1 || c->hidden > (1 << 16))
        return strix_error(STRIX_ERR_ARG, "seqlm: hidden %d outside [1, 65536]", c->hidden);
    return STRIX_OK;
}

static int rnn_width(const strix_seqlm_config *c) { return c->hidden; }
static int model_width(const strix_seqlm_config *c) { return c->d_model; }

static strix_status rnn_build(strix_seqlm *m) {
    const strix_seqlm_config *c = &m->cfg;
    strix_rnn_mode mode = c->arch == STRIX_ARCH_LSTM ? STRIX_RNN_LSTM
                          : c->arch == STRIX_ARCH_GRU ? STRIX_RNN_GRU : STRIX_RNN_TANH;
    strix_rnn_config rc = strix_rnn_config_default(mode, c->d_model, c->hidden);
    rc.num_layers = c->n_layer;
    strix_rnn *r;
    STRIX_TRY(strix_rnn_new(&m->params, "rnn", &rc, &r));
    m->blocks[m->n_blocks++] = &r->base;
    m->out_dim = c->hidden;
    return STRIX_OK;
}

#define RNN_ENTRY(a) \
    {.arch = (a), .embed = "encoder", .norm = "norm", .head = "decoder", .embed_std = 1.0f, \
     .rms_norm = false, .norm_eps = 1e-5f, .head_bias = true, .check = rnn_check, \
     .out_width = rnn_width, .build = rnn_build, .init = NULL}

/* Each block's prefix: "<stem>.<layer>". */
static void block_prefix(char *buf, size_t cap, const char *stem, int layer) {
    snprintf(buf, cap, "%s.%d", stem, layer);
}

/* Runs init(block, derive(seed, layer)) over the blocks. */
static strix_status init_blocks(strix_seqlm *m, uint64_t seed,
                                strix_status (*init)(strix_module *, uint64_t)) {
    for (int i = 0; i < m->n_blocks; i++)
        STRIX_TRY(init(m->blocks[i], strix_seed_derive(seed, (uint64_t)i)));
    return STRIX_OK;
}

// ---- Mamba: transformers' MambaForCausalLM blocks ----------------------------------------------

static strix_mamba_config mamba_layer(const strix_seqlm_config *c, int layer) {
    strix_mamba_config b = strix_mamba_config_default(c->d_model);
    b.d_state = c->d_state;
    b.d_conv = c->d_conv;
    b.expand = c->expand;
    b.n_layer = c->n_layer;
    b.layer_idx = layer;
    return b;
}

static strix_status mamba_check(const strix_seqlm_config *c) {
    if (c->d_state < 1 || c->d_state > 4096 || c->d_conv < 1 || c->d_conv > 64 ||
        c->expand < 1 || c->expand > 64)
        return strix_error(STRIX_ERR_ARG, "seqlm: mamba needs d_state in [1, 4096] (got %d), "
                           "d_conv in [1, 64] (got %d) and expand in [1, 64] (got %d)",
                           c->d_state, c->d_conv, c->expand);
    return STRIX_OK;
}

static strix_status mamba_build(strix_seqlm *m) {
    for (int l = 0; l < m->cfg.n_layer; l++) {
        char prefix[48];
        block_prefix(prefix, sizeof prefix, "backbone.layers", l);
        strix_mamba_config b = mamba_layer(&m->cfg, l);
        STRIX_TRY(strix_mamba_block_new(&m->params, prefix, &b, &m->blocks[m->n_blocks]));
        m->n_blocks++;
    }
    m->out_dim = m->cfg.d_model;
    return STRIX_OK;
}

static strix_status mamba_init(strix_seqlm *m, uint64_t seed) {
    return init_blocks(m, seed, strix_mamba_block_init);
}

// ---- RWKV: transformers' RwkvForCausalLM blocks ------------------------------------------------

static strix_status rwkv_check(const strix_seqlm_config *c) {
    if (c->d_ff < 0) return strix_error(STRIX_ERR_ARG, "seqlm: d_ff %d < 0", c->d_ff);
    return STRIX_OK;
}

static strix_status rwkv_build(strix_seqlm *m) {
    for (int l = 0; l < m->cfg.n_layer; l++) {
        char prefix[32];
        block_prefix(prefix, sizeof prefix, "rwkv.blocks", l);
        strix_rwkv_config b = strix_rwkv_config_default(m->cfg.d_model);
        if (m->cfg.d_ff > 0) b.intermediate_size = m->cfg.d_ff;
        b.layer = l;
        b.n_layer = m->cfg.n_layer;
        STRIX_TRY(strix_rwkv_block_new(&m->params, prefix, &b, &m->blocks[m->n_blocks]));
        m->n_blocks++;
    }
    m->out_dim = m->cfg.d_model;
    return STRIX_OK;
}

static strix_status rwkv_init(strix_seqlm *m, uint64_t seed) {
    return init_blocks(m, seed, strix_rwkv_block_init);
}

// ---- RetNet: torchscale's RetNetDecoder layers -------------------------------------------------

/* The layer config of the LM's: value_dim 2·C (the paper's), ffn d_ff (0: 2·C). */
static strix_retnet_config retnet_layer(const strix_seqlm_config *c, int layer) {
    strix_retnet_config r = strix_retnet_config_default(c->d_model, c->n_head);
    if (c->d_ff > 0) r.ffn_dim = c->d_ff;
    r.layer_index = layer;
    return r;
}

static strix_status retnet_check(const strix_seqlm_config *c) {
    if (c->n_head < 1 || c->n_head > 64 || c->d_model % c->n_head != 0 ||
        (c->d_model / c->n_head) % 2 != 0)
        return strix_error(STRIX_ERR_ARG, "seqlm: retnet needs heads (%d) in [1, 64] dividing "
                           "d_model (%d) into even head sizes", c->n_head, c->d_model);
    if (c->d_ff < 0) return strix_error(STRIX_ERR_ARG, "seqlm: d_ff %d < 0", c->d_ff);
    return STRIX_OK;
}

static strix_status retnet_build(strix_seqlm *m) {
    for (int l = 0; l < m->cfg.n_layer; l++) {
        char prefix[32];
        block_prefix(prefix, sizeof prefix, "layers", l);
        strix_retnet_config r = retnet_layer(&m->cfg, l);
        STRIX_TRY(strix_retnet_block_new(&m->params, prefix, &r, &m->blocks[m->n_blocks]));
        m->n_blocks++;
    }
    m->out_dim = m->cfg.d_model;
    return STRIX_OK;
}

static strix_status retnet_init(strix_seqlm *m, uint64_t seed) {
    return init_blocks(m, seed, strix_retnet_block_init);
}

static const seqlm_arch archs[] = {
    RNN_ENTRY(STRIX_ARCH_RNN),
    RNN_ENTRY(STRIX_ARCH_LSTM),
    RNN_ENTRY(STRIX_ARCH_GRU),
    /* MambaForCausalLM: backbone.embeddings N(0, initializer_range 0.1), backbone.layers.<i>,
     * the RMSNorm backbone.norm_f (eps 1e-5), lm_head tied to the embedding (no bias) */
    {.arch = STRIX_ARCH_MAMBA, .embed = "backbone.embeddings", .norm = "backbone.norm_f",
     .head = "lm_head", .embed_std = 0.1f, .rms_norm = true, .norm_eps = 1e-5f,
     .head_bias = false, .check = mamba_check, .out_width = model_width, .build = mamba_build, .init = mamba_init},
    /* RwkvForCausalLM: rwkv.embeddings (nn.Embedding's N(0, 1)), rwkv.blocks.<i> (block 0 with
     * pre_ln), the LayerNorm rwkv.ln_out (eps 1e-5), head without bias, not tied */
    {.arch = STRIX_ARCH_RWKV, .embed = "rwkv.embeddings", .norm = "rwkv.ln_out", .head = "head",
     .embed_std = 1.0f, .rms_norm = false, .norm_eps = 1e-5f, .head_bias = false,
     .check = rwkv_check, .out_width = model_width, .build = rwkv_build, .init = rwkv_init},
    /* torchscale's RetNetDecoder: embed_tokens (no embedding scale), layers.<i>, the final
     * RMSNorm layer_norm (eps 1e-6), output_projection N(0, d^-1/2) without bias */
    {.arch = STRIX_ARCH_RETNET, .embed = "embed_tokens", .norm = "layer_norm",
     .head = "output_projection", .embed_std = 1.0f, .rms_norm = true, .norm_eps = 1e-6f,
     .head_bias = false, .head_std_scale = 1.0f, .check = retnet_check, .out_width = model_width,
     .build = retnet_build,
     .init = retnet_init},
};

const seqlm_arch *seqlm_arch_of(strix_arch a) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (archs[i].arch == a) return &archs[i];
    return NULL;
}
