/*
 * strix/rwkv.h - the RWKV-4 block (Peng et al. 2023, "RWKV: Reinventing RNNs for the Transformer
 * Era") as transformers 4.40's RwkvBlock defines it, with the parameter names of
 * RwkvForCausalLM's state dict, so a state dict of transformers loads unchanged
 * (strix/state_dict.h) and gives its outputs. A block maps x (B,T,C) to y (B,T,C), residuals
 * included; a character LM stacks them between an Embedding and LayerNorm + head.
 *
 *   h  = pre_ln(x) (layer 0 only), else x
 *   h1 = h + att(ln1(h)),  y = h1 + ffn(ln2(h1))
 * time-mix att(a): token shift a_{t-1} (a_{-1} = the state's last row, 0 when fresh),
 *   xm = a·mu_m + a_{t-1}·(1 - mu_m) for m = k, v, r (time_mix_key/value/receptance),
 *   k = key(xk), v = value(xv), r = sigmoid(receptance(xr)) (Linears without bias),
 *   att = output(r·wkv), wkv the WKV recurrence with u = time_first, w = -e^time_decay in the
 *   numerically stable form with a running maximum (strix/ops/ssm.h STRIX_SSM_RWKV_STABLE_*,
 *   transformers' rwkv_linear_attention_cpu, the RWKV-v4 form): a state (num, den, max) stands
 *   for the plain sums num·e^max, den·e^max, and every exponent taken is <= 0, so it neither
 *   overflows on long sequences nor on large keys;
 * channel-mix ffn(c): the same token shift with its own mixes (time_mix_key/receptance),
 *   ffn = sigmoid(receptance(xr))·value(relu(key(xk))²).
 * LayerNorms have weight and bias, eps = layer_norm_epsilon.
 *
 * Parameters (declared at construction under `<prefix>.`, HF's names and shapes; A = attention
 * hidden size, I = intermediate size):
 *   pre_ln.{weight,bias} (C) [layer 0 only], ln1.{weight,bias}, ln2.{weight,bias} (C)
 *   attention.time_decay (A), attention.time_first (A),
 *   attention.time_mix_{key,value,receptance} (1,1,C),
 *   attention.{key,value,receptance}.weight (A,C), attention.output.weight (C,A),
 *   feed_forward.time_mix_{key,receptance} (1,1,C), feed_forward.key.weight (I,C),
 *   feed_forward.receptance.weight (C,C), feed_forward.value.weight (C,I).
 * Linear weights get weight decay; LayerNorms and the time_* vectors do not.
 * For RwkvForCausalLM use prefix "rwkv.blocks.<i>" (the model adds rwkv.embeddings.weight,
 * rwkv.ln_out.{weight,bias} with eps 1e-5, head.weight without bias, untied).
 *
 * State (strix_module_state_new; forward_ex with io.state): per example the last ln1 output
 * (time-mix shift), the last ln2 output (channel-mix shift) and (num, den, max) per channel,
 * HF's `state` list for one layer; fresh it is (0, 0, 0, 0, -1e38). forward_ex with a state
 * continues the sequence from it and leaves it at the end of x, so T calls with (B,1,C) slices
 * give the one full forward bit for bit on a backend whose GEMM rows do not depend on the row
 * count (the CPU backend; tests/test_rwkv.c checks it) and to rounding otherwise; a step costs
 * O(1) in the sequence length. The state's B is fixed by its first call (another B:
 * STRIX_ERR_SHAPE).
 *
 * Module contracts as strix/nn.h: forward keeps a pointer to x; backward(dy) of the last forward
 * (one-tensor or with a state) sets dx (`=`) and adds every parameter gradient (`+=`, none for
 * frozen ones). No gradient reaches the initial state.
 *
 * Errors: constructor STRIX_ERR_ARG (sizes < 1, layer outside [0, n_layer), eps <= 0),
 * STRIX_ERR_ALLOC; forward STRIX_ERR_SHAPE (x not (B,T,C) with B, T >= 1, a state of another
 * B), STRIX_ERR_ARG (a state of another module); backward / relevance STRIX_ERR_ARG before a
 * forward, STRIX_ERR_SHAPE for another shape than the forward's output.
 */
#ifndef STRIX_RWKV_H
#define STRIX_RWKV_H

#include "strix/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RwkvConfig's fields for one block. */
typedef struct strix_rwkv_config {
    int d_model;               /* hidden_size, C */
    int attention_hidden_size; /* A; RwkvConfig's default: d_model */
    int intermediate_size;     /* I; default 4·d_model */
    float layer_norm_epsilon;  /* default 1e-5 */
    int layer;                 /* layer_id: layer 0 has pre_ln; also the init's ratios */
    int n_layer;               /* num_hidden_layers (the init's ratios) */
} strix_rwkv_config;

/* RwkvConfig's defaults for d_model: A = d_model, I = 4·d_model, eps 1e-5, layer 0 of 1. */
STRIX_API strix_rwkv_config strix_rwkv_config_default(int d_model);

/* One RwkvBlock (RwkvSelfAttention + RwkvFeedForward). Handles of the parameters; pre_ln NULL
 * unless layer 0. */
typedef struct strix_rwkv_block {
    strix_module base;
    strix_rwkv_config cfg;
    strix_layernorm *pre_ln, *ln1, *ln2;
    strix_param *time_decay, *time_first;                 /* (A) */
    strix_param *att_mix_k, *att_mix_v, *att_mix_r;       /* (1,1,C) */
    strix_linear *att_key, *att_value, *att_receptance, *att_output;
    strix_param *ffn_mix_k, *ffn_mix_r;                   /* (1,1,C) */
    strix_linear *ffn_key, *ffn_receptance, *ffn_value;
    /* Opaque: the caches and scratch of the last calls (src/nn/rwkv.c). */
    struct strix_rwkv_work *work;
} strix_rwkv_block;

/* Declares the parameters above under `<prefix>.` and builds the block (the module vtable:
 * forward, backward, relevance, forward_ex with a state, state_new / state_free). The values
 * come from strix_rwkv_block_init (strix_params_init alone leaves the time_* vectors at 0 and
 * draws the Linears). STRIX_ERR_ARG / STRIX_ERR_ALLOC as the header says. */
STRIX_API strix_status strix_rwkv_block_new(strix_params *ps, const char *prefix,
                                            const strix_rwkv_config *cfg, strix_module **out);

/* RwkvPreTrainedModel._init_weights for this block (after strix_params_alloc), with
 * r01 = layer/(n_layer - 1) (0 when n_layer is 1, where transformers divides by zero) and
 * r10 = 1 - layer/n_layer, tw_i = i/C:
 *   time_decay_h = -5 + 8·(h/(A - 1))^(0.7 + 1.3·r01) (h/(A-1) = 0 when A = 1),
 *   time_first = 1 (transformers' ones_like(log(0.3) + zigzag): the zigzag is discarded there),
 *   att time_mix_key = tw^r10, time_mix_value = tw^r10 + 0.3·r01, time_mix_receptance =
 *   tw^(0.5·r10); ffn time_mix_key = time_mix_receptance = tw^r10;
 * LayerNorms weight 1, bias 0; the Linears as transformers leaves them (nn.Linear's
 * reset_parameters: U(-1/sqrt(in), 1/sqrt(in))), drawn on the host from strix_seed_derive(seed,
 * k) for the k-th Linear in declaration order (so the values differ from torch's). Computed in
 * double, rounded to float. STRIX_ERR_ARG for a module that is not an RWKV block, the copy's
 * errors. */
STRIX_API strix_status strix_rwkv_block_init(strix_module *m, uint64_t seed);

/* LRP of the last forward (the relevance slot; rule m->rule, EPSILON only, eps =
 * rule.epsilon), r_y (B,T,C) -> *r_x (B,T,C), the module's buffer:
 *   residuals y = h1 + ffn and h1 = h + att split by the epsilon rule (lrp_residual_split);
 *   channel-mix: the receptance gate takes none (signal-take-all), value's epsilon rule, the
 *     squared ReLU with its gate detached (relu(z)·[relu(z)]: relevance passes to z unchanged),
 *     key's epsilon rule, the token shift's epsilon rule (mu·x_t and (1 - mu)·x_{t-1});
 *   time-mix: output's epsilon rule, the gate r takes none, the WKV epsilon rule with the
 *     quotient detached (STRIX_SSM_RWKV_STABLE_LRP: only the values get relevance, through
 *     the output and the state), value's epsilon rule, the token shift's rule;
 *   LayerNorms (ln1, ln2, pre_ln) by the epsilon rule with the std detached (whatever
 *     rule.layer_norm_detach_std says; strix_layernorm_relevance), the biases out of the
 *     denominators unless rule.bias_in_denominator (then they absorb a share).
 * No biases elsewhere, so with eps -> 0 Σ r_x = Σ r_y (tests/test_rwkv.c measures the gap);
 * after a stateful call the initial state absorbs the relevance its terms would get, which is
 * dropped. STRIX_ERR_UNSUPPORTED for another rule kind; errors as backward. */
STRIX_API strix_status strix_rwkv_block_relevance(strix_module *m, const strix_tensor *r_y,
                                                  const strix_tensor **r_x);

#ifdef __cplusplus
}
#endif
#endif
