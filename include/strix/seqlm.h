/*
 * strix/seqlm.h - character language models built on the sequence modules: RNN, LSTM, GRU
 * (strix/recurrent.h), Mamba, RWKV and RetNet blocks. One model type for all of them:
 *
 *   ids (B,T) -> token embedding (V, d_model) -> the architecture's blocks -> final norm -> head
 *   (out_dim -> V) -> logits (B,T,V), mean cross-entropy against the targets.
 *
 * Per architecture (parameter names are those of the reference model, so its state dict loads):
 *   rnn, lstm, gru  encoder.weight, rnn.* (one torch.nn.RNN/LSTM/GRU of n_layer layers, hidden
 *                   `hidden`), norm.{weight,bias} (LayerNorm over hidden), decoder.{weight,bias}
 *                   (PyTorch's word_language_model example plus the norm)
 *   mamba           transformers' MambaForCausalLM: backbone.embeddings, backbone.layers.<i>
 *                   (strix/mamba.h: d_state, d_conv, expand), backbone.norm_f (RMSNorm),
 *                   lm_head tied to the embedding
 *   rwkv            transformers' RwkvForCausalLM: rwkv.embeddings, rwkv.blocks.<i> (strix/rwkv.h;
 *                   channel-mix width d_ff, 0: 4·d_model), rwkv.ln_out (LayerNorm), head
 *   retnet          torchscale's RetNetDecoder: embed_tokens, layers.<i> (strix/retnet.h: n_head
 *                   heads, value dim 2·d_model, FFN d_ff, 0: 2·d_model), layer_norm (RMSNorm),
 *                   output_projection (its rel-pos buffers are computed, not stored: load its
 *                   state dict non-strictly)
 * A state dict of the reference model of the same shape loads unchanged (strix/state_dict.h) and
 * gives its logits (tests/test_seqlm.c).
 * Training windows start from the zero state (truncated backpropagation through the window).
 * Generation is stateful: strix_seqlm_decode_step feeds one token through every block's state
 * (the RNN's h and c, an SSM's state), O(1) per character whatever the context length, and gives
 * the logits the full forward gives at that position (bit-identical for the RNN family, Mamba
 * and RWKV on the "cpu" backend; to rounding for RetNet, whose training forward is its parallel
 * form and whose decode step its recurrent one).
 *
 * Module contracts as strix/nn.h; all computation on the backend primitives. Not here: the
 * checkpoint format (strix/checkpoint.h), the generic model handle the command uses (strix/lm.h).
 */
#ifndef STRIX_SEQLM_H
#define STRIX_SEQLM_H

#include "strix/gpt.h"
#include "strix/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The architectures of a character LM (strix/lm.h serves all; this header builds all but GPT).
 * Append-only: checkpoints store the name (strix_arch_name), not the number. */
typedef enum strix_arch {
    STRIX_ARCH_GPT, STRIX_ARCH_RNN, STRIX_ARCH_LSTM, STRIX_ARCH_GRU,
    STRIX_ARCH_MAMBA, STRIX_ARCH_RWKV, STRIX_ARCH_RETNET
} strix_arch;

#define STRIX_ARCH_COUNT 7

/* "gpt", "rnn", "lstm", "gru", "mamba", "rwkv", "retnet"; NULL for an unknown value. */
STRIX_API const char *strix_arch_name(strix_arch a);
/* The architecture named `name` (as strix_arch_name) into *out: STRIX_OK, or STRIX_ERR_ARG with
 * a message listing the names. */
STRIX_API strix_status strix_arch_from_name(const char *name, strix_arch *out);
/* Whether the architecture is built by this header and implemented in this build. */
STRIX_API bool strix_seqlm_arch_available(strix_arch a);

typedef struct strix_seqlm_config {
    strix_arch arch;    /* not STRIX_ARCH_GPT */
    int vocab_size;     /* V */
    int block_size;     /* training window T */
    int n_layer;        /* recurrent layers or blocks */
    int d_model;        /* embedding and residual width */
    int hidden;         /* rnn/lstm/gru: hidden size (default d_model) */
    int d_state;        /* mamba: SSM state size N (default 16) */
    int d_conv;         /* mamba: causal conv taps (default 4) */
    int expand;         /* mamba: d_inner = expand·d_model (default 2) */
    int n_head;         /* retnet: heads (default 4) */
    int d_ff;           /* rwkv: channel-mix width (0: 4·d_model), retnet: FFN width (0:
                         * 2·d_model) */
    bool tie_weights;   /* head shares the embedding (mamba's default) */
} strix_seqlm_config;

/* The defaults of architecture `a` (vocab_size 0: set it from the data): block 128, n_layer 2,
 * d_model 128, hidden = d_model, d_state 16, d_conv 4, expand 2, n_head 4, d_ff 0, tie for
 * mamba. Sized for config A's parameter count (~0.8 M) at vocabulary ~65 when n_layer and
 * d_model are those of the architecture's row in the README's table. */
STRIX_API strix_seqlm_config strix_seqlm_config_default(strix_arch a);

/* Validates c: an architecture of this header built in, positive sizes, the fields the
 * architecture uses in range (fields it does not use are ignored). STRIX_ERR_ARG naming the
 * field; STRIX_ERR_UNSUPPORTED for an architecture not in this build. */
STRIX_API strix_status strix_seqlm_config_check(const strix_seqlm_config *c);

typedef struct strix_seqlm strix_seqlm;

/* Builds the model on `be` with its parameters declared and allocated (zero: call
 * strix_seqlm_init_weights or load weights). Statuses of strix_seqlm_config_check,
 * STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_seqlm_new(strix_backend *be, const strix_seqlm_config *c,
                                       strix_seqlm **out);
STRIX_API void strix_seqlm_free(strix_seqlm *m);
STRIX_API const strix_seqlm_config *strix_seqlm_config_of(const strix_seqlm *m);
STRIX_API strix_params *strix_seqlm_params(strix_seqlm *m);

/* The reference initialisation: every parameter by its declared distribution from `seed`
 * (strix_params_init; embedding N(0, 1) as torch.nn.Embedding, the RNN family U(±1/sqrt(H)), the
 * head as torch.nn.Linear), then the architecture's special inits. */
STRIX_API strix_status strix_seqlm_init_weights(strix_seqlm *m, uint64_t seed);

/* Forward over ids (B,T) (host int32 in [0,V)), any T >= 1, from the zero state. With targets
 * (host int32 (B,T); negative = ignored) the mean cross-entropy into *loss and what backward
 * needs. Logits (B,T,V) in backend memory: strix_seqlm_logits. STRIX_ERR_ARG for bad ids or
 * sizes, module errors. */
STRIX_API strix_status strix_seqlm_forward(strix_seqlm *m, const int32_t *ids,
                                           const int32_t *targets, int B, int T, float *loss);
STRIX_API const float *strix_seqlm_logits(const strix_seqlm *m);
/* Backward of scale·loss of the last forward with targets: parameter grads `+=`. STRIX_ERR_ARG
 * without such a forward (or after a decode step) or for a non-finite scale. */
STRIX_API strix_status strix_seqlm_backward_scaled(strix_seqlm *m, float scale);
/* PyTorch's train()/eval(); no module of these models behaves differently yet (no dropout). */
STRIX_API void strix_seqlm_set_training(strix_seqlm *m, bool training);
STRIX_API bool strix_seqlm_training(const strix_seqlm *m);

/* Stateful generation (batch 1): reset returns every block to the zero state; step feeds one
 * token and writes the next-token logits (V floats) to host memory. O(1) per step. pos counts
 * the steps since the reset. A step overwrites the activations of the last forward. */
STRIX_API strix_status strix_seqlm_decode_reset(strix_seqlm *m);
STRIX_API strix_status strix_seqlm_decode_step(strix_seqlm *m, int32_t token, float *logits);
STRIX_API int strix_seqlm_decode_pos(const strix_seqlm *m);

/* Explains the next-character prediction after ids[0..n) (host int32; all n ids: the state
 * carries the whole prompt, as in generation, so there is no window) with the config and result types of strix/gpt.h, so every architecture gives the
 * same table. LRP: an eval forward, the seed at the last position's logits (as the GPT's), then
 * the relevance slots of head (its rule), norm (the std held constant with
 * rule.layer_norm_detach_std, else passed through), each block (the module's own rules:
 * strix/recurrent.h for the RNN family) down to the token embeddings, summed over d_model per
 * position; softmax_gap is NaN and relevance_position NULL. The gradient methods as
 * strix_gpt_explain's, from the token embeddings. Sets the rule of every module; overwrites the
 * activations. Statuses as strix_gpt_explain's (STRIX_ERR_UNSUPPORTED naming the module for a
 * rule kind a block does not implement, checked before anything runs). On error *out is zeroed. */
STRIX_API strix_status strix_seqlm_explain(strix_seqlm *m, const int32_t *ids, int n,
                                           const strix_gpt_explain_config *cfg,
                                           strix_gpt_explanation *out);
/* The explained output of cfg for ids[0..n) (all of them) from one eval forward, as
 * strix_gpt_explain_output. */
STRIX_API strix_status strix_seqlm_explain_output(strix_seqlm *m, const int32_t *ids, int n,
                                                  const strix_gpt_explain_config *cfg,
                                                  double *value);

#ifdef __cplusplus
}
#endif
#endif
