/*
 * strix/mamba.h - the Mamba block (Gu & Dao 2023, "Mamba: Linear-Time Sequence Modeling with
 * Selective State Spaces", Alg. 2 and Sec. 3.4) as transformers 4.40's MambaBlock/MambaMixer
 * define it (the pure-PyTorch MambaMixer.slow_forward), with its MambaLRP relevance (Jafari et
 * al., NeurIPS 2024). A block maps x (B,T,C) -> y (B,T,C), residual included:
 *
 *   n      = RMSNorm(x)·w_norm                           rms = sqrt(mean(x²) + rms_norm_eps)
 *   [u0|z] = in_proj(n)                                  (B,T,2·E), E = d_inner = expand·C
 *   c      = depthwise causal conv1d(u0) + conv bias     d_conv taps, left zero padding:
 *            c[t,e] = Σ_k w[e,k]·u0[t+k−(K−1), e]        (u0 at t < 0 is 0, or the state)
 *   u      = SiLU(c)
 *   [dt|Bm|Cm] = x_proj(u)                               (B,T,R+2S), R = dt_rank, S = d_state
 *   delta  = softplus(dt_proj(dt))                       dt_proj has a bias
 *   h_t    = exp(delta·A)⊙h_{t−1} + delta·Bm_t·u_t,  ys_t = Cm_t·h_t + D⊙u_t,  A = −exp(A_log)
 *   y      = x + out_proj(ys ⊙ SiLU(z))
 * (the selective scan is strix_ssm_pass's STRIX_SSM_MAMBA_FORWARD). Parameters, declared under
 * `<prefix>.` with MambaForCausalLM's names (prefix "backbone.layers.0" gives its state dict):
 *   norm.weight (C) ones, no decay
 *   mixer.A_log (E,S) log(1..S) per row, no decay     mixer.D (E) ones, no decay
 *   mixer.conv1d.weight (E,1,K) decay                  mixer.conv1d.bias (E), with conv_bias
 *   mixer.in_proj.weight (2E,C) decay                  mixer.x_proj.weight (R+2S,E) decay
 *   mixer.dt_proj.weight (E,R) decay                   mixer.dt_proj.bias (E) no decay
 *   mixer.out_proj.weight (C,E) decay   (in_proj/out_proj biases with `bias`, no decay)
 * Module contracts as strix/nn.h (forward keeps a pointer to x; buffers are the module's; backward
 * `=` into dx, parameter grads `+=`; everything through backend primitives).
 *
 * State (strix_module_state_new, MambaCache of transformers): per batch row the conv window (the
 * last K−1 conv inputs u0, (B,K−1,E)) and the SSM state h (B,E,S), zeros when fresh. forward_ex
 * with io.state continues the sequence from it and stores the end of x back; a decode step costs
 * O(1) in the sequence length. Calling it T times with (B,1,C) slices gives the bits of one
 * forward over (B,T,C) (the same operations in the same order: the window is the padding, h the
 * scan's h0). The state's B is fixed by its first call (another B: STRIX_ERR_SHAPE).
 * A backward or relevance after a stateful call treats the incoming state as a constant: no
 * gradient and no relevance flow into it (truncated at the chunk boundary).
 */
#ifndef STRIX_MAMBA_H
#define STRIX_MAMBA_H

#include "strix/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MambaConfig's block arguments (transformers 4.40 names in brackets). */
typedef struct strix_mamba_config {
    int d_model;        /* C [hidden_size] */
    int d_state;        /* S [state_size], 16 */
    int d_conv;         /* K [conv_kernel], 4 */
    int expand;         /* E = expand·C [expand], 2 */
    int dt_rank;        /* R [time_step_rank]; 0: ceil(C/16) ("auto") */
    bool conv_bias;     /* [use_conv_bias], true */
    bool bias;          /* in_proj/out_proj biases [use_bias], false */
    float rms_norm_eps; /* [layer_norm_epsilon], 1e-5 */
    float dt_min, dt_max;   /* [time_step_min/max], 0.001, 0.1 */
    float dt_init_floor;    /* [time_step_floor], 1e-4 */
    float dt_scale;         /* [time_step_scale], 1 */
    bool rescale_prenorm_residual; /* out_proj weight / sqrt(n_layer) at init, false */
    int n_layer;        /* [num_hidden_layers], for the rescale; 1 */
    int layer_idx;      /* the block's index in the model (informative, as MambaMixer's) */
} strix_mamba_config;

/* The block: public configuration, parameters and children; caches are private. */
typedef struct strix_mamba_block {
    strix_module base;
    strix_mamba_config cfg;      /* dt_rank resolved */
    int d_inner;                 /* E */
    struct strix_rmsnorm *norm;  /* <prefix>.norm */
    strix_linear *in_proj, *x_proj, *dt_proj, *out_proj; /* <prefix>.mixer.* */
    strix_param *conv_weight, *conv_bias; /* conv_bias NULL without it */
    strix_param *A_log, *D;
    /* Opaque: the caches and scratch of the last calls (src/nn/mamba.c). */
    struct strix_mamba_work *work;
} strix_mamba_block;

/* MambaConfig's defaults for d_model (listed at the fields above). */
STRIX_API strix_mamba_config strix_mamba_config_default(int d_model);

/* Declares the block's parameters under `<prefix>.` (names above; values come from
 * strix_mamba_block_init or a state dict after strix_params_alloc) and builds it; *out is the
 * module (a strix_mamba_block). STRIX_ERR_ARG for sizes < 1 (d_model, d_state, d_conv, expand,
 * dt_rank < 0, n_layer < 1), eps <= 0 or a bad dt range; STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_mamba_block_new(strix_params *ps, const char *prefix,
                                             const strix_mamba_config *cfg, strix_module **out);

/* Draws the block's parameters (after strix_params_alloc) as MambaPreTrainedModel._init_weights
 * and MambaMixer.__init__ do, from a SplitMix64 stream of `seed` (values differ from torch's, the
 * distributions are the same): Linear weights U(±1/sqrt(in)) (kaiming_uniform a = sqrt(5)),
 * Linear biases 0; conv1d weight and bias U(±1/sqrt(K)) (Conv1d's reset_parameters, fan_in = K);
 * dt_proj weight U(±R^-0.5·dt_scale); dt_proj bias = softplus⁻¹(dt) = dt + log(−expm1(−dt)),
 * dt = exp(U·(log dt_max − log dt_min) + log dt_min) floored at dt_init_floor; A_log[e,s] =
 * log(s+1); D = 1; norm weight 1; with rescale_prenorm_residual, out_proj weight /
 * sqrt(n_layer). STRIX_ERR_ARG if m is not a Mamba block or its parameters are not allocated. */
STRIX_API strix_status strix_mamba_block_init(strix_module *m, uint64_t seed);

/* The vtable slots, callable directly (m a Mamba block):
 *   forward(x (B,T,C)) -> y (B,T,C) on a fresh zero state.
 *   backward(dy) -> dx (`=`), parameter grads `+=` (every parameter, A_log, D, conv and dt bias
 *     included) of the last forward or forward_ex.
 *   relevance(r_y) -> r_x (B,T,C), MambaLRP of the last forward with m->rule (EPSILON only, else
 *     STRIX_ERR_UNSUPPORTED; eps = rule.epsilon), each step's rule from the top:
 *       y = x + f: the epsilon split r_x' = x·r/stab(y), r_f = f·r/stab(y) (lrp_residual_split);
 *       out_proj, in_proj: the epsilon rule of a Linear (lrp_linear; pre-bias z unless
 *         rule.bias_in_denominator);
 *       o = ys ⊙ SiLU(z): the half rule, each operand gets (o/stab(2·o))·r ≈ r/2
 *         (lrp_bilinear_elementwise; MambaLRP's o/2 + [o/2] with the bracket detached);
 *       SiLU: passes relevance through (MambaLRP: x·[SiLU(x)/x] detached);
 *       the selective scan with Abar, Bbar, Cm detached: STRIX_SSM_MAMBA_LRP (x_proj, dt_proj,
 *         delta get none);
 *       conv1d: the epsilon rule of the depthwise map, r_u0[s] = u0[s]·Σ_k w_k·r_c[t]/stab(z_c[t])
 *         over the taps t = s + (K−1) − k, z_c pre-bias (with the bias by
 *         rule.bias_in_denominator); the zero padding (or a state's window) absorbs the rest;
 *       RMSNorm with 1/rms detached: passes relevance through.
 *     With the default rule, Σ r_x = Σ r_y up to the eps terms (a fresh state); with
 *     bias_in_denominator the conv bias absorbs a share. r_x is the module's buffer.
 * General form: forward_ex takes in[0] = x and optionally io.state; sets out[0] = y (n_out 1).
 * backward_ex and relevance_ex take in[0] and set out[0]. Statuses: STRIX_ERR_SHAPE for an x not
 * (B,T,C) with B, T >= 1, a dy/r_y of another shape than the last output, a state of another
 * batch size; STRIX_ERR_ARG before a forward or for a state of another module;
 * STRIX_ERR_UNSUPPORTED for ids, a mask or more inputs; STRIX_ERR_ALLOC. */

#ifdef __cplusplus
}
#endif
#endif
