/*
 * seqlm.c - the character LM of the sequence modules (strix/seqlm.h): embedding, the
 * architecture's blocks (arch.c), final norm and head, the cross-entropy loss, backward and the
 * stateful decode step. Every block is driven through the strix_module vtable, so this file does
 * not know which architecture it runs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/common/lm_loss.h"
#include "seqlm_internal.h"

static const char *const arch_names[STRIX_ARCH_COUNT] = {
    [STRIX_ARCH_GPT] = "gpt",     [STRIX_ARCH_RNN] = "rnn",   [STRIX_ARCH_LSTM] = "lstm",
    [STRIX_ARCH_GRU] = "gru",     [STRIX_ARCH_MAMBA] = "mamba", [STRIX_ARCH_RWKV] = "rwkv",
    [STRIX_ARCH_RETNET] = "retnet"};

const char *strix_arch_name(strix_arch a) {
    return (unsigned)a < STRIX_ARCH_COUNT ? arch_names[a] : NULL;
}

strix_status strix_arch_from_name(const char *name, strix_arch *out) {
    for (int a = 0; a < STRIX_ARCH_COUNT; a++)
        if (name && strcmp(name, arch_names[a]) == 0) {
            *out = (strix_arch)a;
            return STRIX_OK;
        }
    return strix_error(STRIX_ERR_ARG, "unknown architecture '%s' (gpt, rnn, lstm, gru, mamba, "
                       "rwkv or retnet)", name ? name : "");
}

bool strix_seqlm_arch_available(strix_arch a) { return seqlm_arch_of(a) != NULL; }

strix_seqlm_config strix_seqlm_config_default(strix_arch a) {
    return (strix_seqlm_config){.arch = a, .vocab_size = 0, .block_size = 128, .n_layer = 2,
                                .d_model = 128, .hidden = 128, .d_state = 16, .d_conv = 4,
                                .expand = 2, .n_head = 4, .d_ff = 0,
                                .tie_weights = a == STRIX_ARCH_MAMBA};
}

strix_status strix_seqlm_config_check(const strix_seqlm_config *c) {
    const char *name = strix_arch_name(c->arch);
    if (!name || c->arch == STRIX_ARCH_GPT)
        return strix_error(STRIX_ERR_ARG, "seqlm: architecture %s is not a sequence model",
                           name ? name : "(unknown)");
    const seqlm_arch *a = seqlm_arch_of(c->arch);
    if (!a)
        return strix_error(STRIX_ERR_UNSUPPORTED, "seqlm: architecture %s is not in this build",
                           name);
    if (c->vocab_size < 1 || c->vocab_size > (1 << 24))
        return strix_error(STRIX_ERR_ARG, "seqlm: vocab_size %d outside [1, 2^24]", c->vocab_size);
    if (c->block_size < 1 || c->block_size > (1 << 20))
        return strix_error(STRIX_ERR_ARG, "seqlm: block_size %d outside [1, 2^20]", c->block_size);
    if (c->n_layer < 1 || c->n_layer > SEQLM_MAX_BLOCKS)
        return strix_error(STRIX_ERR_ARG, "seqlm: n_layer %d outside [1, %d]", c->n_layer,
                           SEQLM_MAX_BLOCKS);
    if (c->d_model < 1 || c->d_model > (1 << 16))
        return strix_error(STRIX_ERR_ARG, "seqlm: d_model %d outside [1, 65536]", c->d_model);
    STRIX_TRY(a->check ? a->check(c) : STRIX_OK);
    int width = a->out_width(c);
    if (width < 2) /* a norm over one feature outputs only its bias: the input would not count */
        return strix_error(STRIX_ERR_ARG, "seqlm: %s %d: the final norm needs at least 2 features "
                           "(over one it outputs only its bias, whatever the input)",
                           width == c->d_model ? "d_model" : "hidden", width);
    if (c->tie_weights && width != c->d_model)
        return strix_error(STRIX_ERR_ARG, "seqlm: a tied head needs the blocks' output width "
                           "(%d) to equal d_model (%d)", width, c->d_model);
    return STRIX_OK;
}

// ---- construction ------------------------------------------------------------------------------

static strix_status build(strix_seqlm *m) {
    const seqlm_arch *a = m->arch;
    const strix_seqlm_config *c = &m->cfg;
    strix_params *ps = &m->params;
    STRIX_TRY(strix_embedding_new(ps, a->embed, c->vocab_size, c->d_model, a->embed_std,
                                  &m->emb));
    STRIX_TRY(a->build(m));
    if (a->rms_norm) {
        strix_rmsnorm *n;
        STRIX_TRY(strix_rmsnorm_new(ps, a->norm, m->out_dim, a->norm_eps, true, &n));
        m->norm = &n->base;
    } else {
        strix_layernorm *n;
        STRIX_TRY(strix_layernorm_new(ps, a->norm, m->out_dim, true, a->norm_eps, &n));
        m->norm = &n->base;
    }
    if (c->tie_weights) /* one weight: the head reads the embedding's table */
        STRIX_TRY(strix_linear_new(ps, a->head, m->out_dim, c->vocab_size, a->head_bias, 0.0f,
                                   m->emb->weight, &m->head));
    else if (a->head_std_scale > 0.0f)
        STRIX_TRY(strix_linear_new(ps, a->head, m->out_dim, c->vocab_size, a->head_bias,
                                   a->head_std_scale / sqrtf((float)m->out_dim), NULL, &m->head));
    else
        STRIX_TRY(strix_linear_new_default(ps, a->head, m->out_dim, c->vocab_size, a->head_bias,
                                           &m->head));
    return strix_params_alloc(ps);
}

strix_status strix_seqlm_new(strix_backend *be, const strix_seqlm_config *c, strix_seqlm **out) {
    *out = NULL;
    STRIX_TRY(strix_seqlm_config_check(c));
    strix_seqlm *m = calloc(1, sizeof *m);
    if (!m) return strix_error(STRIX_ERR_ALLOC, "seqlm: out of memory");
    m->be = be;
    m->cfg = *c;
    m->arch = seqlm_arch_of(c->arch);
    m->training = true;
    strix_params_init_empty(&m->params, be);
    strix_status s = build(m);
    if (s != STRIX_OK) {
        strix_seqlm_free(m);
        return s;
    }
    *out = m;
    return STRIX_OK;
}

void strix_seqlm_free(strix_seqlm *m) {
    if (!m) return;
    for (int i = 0; i < m->n_blocks; i++) {
        strix_module_state_free(m->blocks[i], m->states[i]);
        strix_module_free(m->blocks[i]);
    }
    strix_module_free(&m->emb->base);
    strix_module_free(m->norm);
    strix_module_free(m->head ? &m->head->base : NULL);
    strix_free(m->be, m->ids);
    strix_free(m->be, m->targets);
    strix_tensor_free(&m->losses);
    strix_tensor_free(&m->dlogits);
    strix_params_free(&m->params);
    free(m);
}

const strix_seqlm_config *strix_seqlm_config_of(const strix_seqlm *m) { return &m->cfg; }

strix_params *strix_seqlm_params(strix_seqlm *m) { return &m->params; }

strix_status strix_seqlm_init_weights(strix_seqlm *m, uint64_t seed) {
    STRIX_TRY(strix_params_init(&m->params, seed));
    return m->arch->init ? m->arch->init(m, strix_seed_derive(seed, 1)) : STRIX_OK;
}

void strix_seqlm_set_training(strix_seqlm *m, bool training) { m->training = training; }

bool strix_seqlm_training(const strix_seqlm *m) { return m->training; }

// ---- forward / backward ------------------------------------------------------------------------

strix_status seqlm_upload_ids(strix_seqlm *m, const int32_t *ids, size_t n) {
    if (n > m->ids_cap) {
        strix_free(m->be, m->ids);
        strix_free(m->be, m->targets);
        m->ids = m->targets = NULL;
        m->ids_cap = 0;
        STRIX_TRY(strix_alloc(m->be, n * sizeof(int32_t), (void **)&m->ids));
        STRIX_TRY(strix_alloc(m->be, n * sizeof(int32_t), (void **)&m->targets));
        m->ids_cap = n;
    }
    return strix_copy(m->be, m->ids, ids, n * sizeof(int32_t), STRIX_COPY_H2D);
}

strix_status strix_seqlm_forward(strix_seqlm *m, const int32_t *ids, const int32_t *targets,
                                 int B, int T, float *loss) {
    const strix_seqlm_config *c = &m->cfg;
    m->can_backward = false;
    if (B <= 0 || T <= 0)
        return strix_error(STRIX_ERR_ARG, "%s forward: B %d and T %d must be positive",
                           strix_arch_name(c->arch), B, T);
    size_t n = (size_t)B * (size_t)T, valid;
    char who[32];
    snprintf(who, sizeof who, "%s forward", strix_arch_name(c->arch));
    STRIX_TRY(lm_check_batch(who, ids, targets, n, c->vocab_size, &valid));
    strix_backend *be = m->be;
    STRIX_TRY(seqlm_upload_ids(m, ids, n));
    m->B = B;
    m->T = T;
    int64_t shape[2] = {B, T};
    const strix_tensor *x;
    STRIX_TRY(strix_embedding_forward(m->emb, m->ids, 2, shape, &x));
    for (int i = 0; i < m->n_blocks; i++) STRIX_TRY(strix_module_forward(m->blocks[i], x, &x));
    STRIX_TRY(strix_module_forward(m->norm, x, &x));
    const strix_tensor *logits;
    STRIX_TRY(strix_linear_forward(m->head, x, &logits));
    if (!targets) return STRIX_OK;

    STRIX_TRY(strix_copy(be, m->targets, targets, n * sizeof(int32_t), STRIX_COPY_H2D));
    STRIX_TRY(lm_cross_entropy(be, logits, m->targets, valid, &m->losses, &m->dlogits, loss));
    m->can_backward = true;
    return STRIX_OK;
}

const float *strix_seqlm_logits(const strix_seqlm *m) {
    return strix_linear_output(m->head)->data;
}

strix_status strix_seqlm_backward_scaled(strix_seqlm *m, float scale) {
    const char *who = strix_arch_name(m->cfg.arch);
    if (!m->can_backward)
        return strix_error(STRIX_ERR_ARG, "%s backward: needs a forward with targets (and no "
                           "decode step since)", who);
    if (!isfinite(scale))
        return strix_error(STRIX_ERR_ARG, "%s backward: loss scale %g is not finite", who,
                           (double)scale);
    if (scale != 1.0f) { /* (scale·loss).backward(), consuming the forward as the GPT does */
        STRIX_TRY(strix_axpby(m->be, scale, m->dlogits.data, 0.0f, NULL, m->dlogits.data,
                              (size_t)strix_tensor_numel(&m->dlogits)));
        m->can_backward = false;
    }
    const strix_tensor *d;
    STRIX_TRY(strix_linear_backward(m->head, &m->dlogits, &d));
    STRIX_TRY(strix_module_backward(m->norm, d, &d));
    for (int i = m->n_blocks - 1; i >= 0; i--) STRIX_TRY(strix_module_backward(m->blocks[i], d, &d));
    return strix_embedding_backward(m->emb, d);
}

// ---- stateful decoding -------------------------------------------------------------------------

strix_status strix_seqlm_decode_reset(strix_seqlm *m) {
    for (int i = 0; i < m->n_blocks; i++) {
        strix_module_state_free(m->blocks[i], m->states[i]);
        m->states[i] = NULL;
    }
    m->decode_pos = 0;
    return STRIX_OK;
}

int strix_seqlm_decode_pos(const strix_seqlm *m) { return m->decode_pos; }

strix_status strix_seqlm_decode_step(strix_seqlm *m, int32_t token, float *logits) {
    const strix_seqlm_config *c = &m->cfg;
    if (token < 0 || token >= c->vocab_size)
        return strix_error(STRIX_ERR_ARG, "%s decode: token %d outside [0, %d)",
                           strix_arch_name(c->arch), token, c->vocab_size);
    m->can_backward = false; /* the step overwrites the activations of the last forward */
    for (int i = 0; i < m->n_blocks; i++)
        if (!m->states[i]) STRIX_TRY(strix_module_state_new(m->blocks[i], &m->states[i]));
    STRIX_TRY(seqlm_upload_ids(m, &token, 1));
    int64_t shape[2] = {1, 1};
    const strix_tensor *x;
    STRIX_TRY(strix_embedding_forward(m->emb, m->ids, 2, shape, &x));
    for (int i = 0; i < m->n_blocks; i++) {
        strix_module_io io = strix_module_io_of(x);
        io.state = m->states[i];
        io.pos = m->decode_pos;
        STRIX_TRY(strix_module_forward_ex(m->blocks[i], &io));
        x = io.out[0];
    }
    STRIX_TRY(strix_module_forward(m->norm, x, &x));
    STRIX_TRY(strix_linear_forward(m->head, x, &x));
    STRIX_TRY(strix_copy(m->be, logits, x->data, (size_t)c->vocab_size * sizeof(float),
                         STRIX_COPY_D2H));
    m->decode_pos++;
    return STRIX_OK;
}
