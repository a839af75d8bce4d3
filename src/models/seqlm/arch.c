/*
 * arch.c - the architectures of strix_seqlm: per architecture the parameter names, the blocks it
 * stacks between embedding and norm, and its special inits. Adding an architecture is one entry
 * here (and its module in src/nn).
 */
#include "seqlm_internal.h"
#include "strix/recurrent.h"

// ---- RNN, LSTM, GRU: one torch.nn recurrent module of n_layer layers ---------------------------

static strix_status rnn_check(const strix_seqlm_config *c) {
    if (c->hidden < 1 || c->hidden > (1 << 16))
        return strix_error(STRIX_ERR_ARG, "seqlm: hidden %d outside [1, 65536]", c->hidden);
    return STRIX_OK;
}

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
     .rms_norm = false, .head_bias = true, .check = rnn_check, .build = rnn_build, .init = NULL}

static const seqlm_arch archs[] = {
    RNN_ENTRY(STRIX_ARCH_RNN),
    RNN_ENTRY(STRIX_ARCH_LSTM),
    RNN_ENTRY(STRIX_ARCH_GRU),
};

const seqlm_arch *seqlm_arch_of(strix_arch a) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (archs[i].arch == a) return &archs[i];
    return NULL;
}
