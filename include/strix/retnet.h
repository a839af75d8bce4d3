/*
 * strix/retnet.h - the RetNet decoder layer (Sun et al. 2023, "Retentive Network: A Successor to
 * Transformer for Large Language Models") as torchscale defines it (torchscale 0.3's
 * torchscale/architecture/retnet.py DecoderLayer with component/multiscale_retention.py), one
 * strix_module mapping x (B,T,C) -> y (B,T,C), residuals included, so a character-LM wrapper
 * stacks it as it stacks GPT blocks.
 *
 * The layer (pre-norm, torchscale's decoder_normalize_before / subln default):
 *   xn = RMSNorm_1(x)                                   retention_layer_norm (weight, eps)
 *   q = xn·W_qᵀ, k = xn·W_kᵀ·d_k^(-1/2), v = xn·W_vᵀ, g = xn·W_gᵀ     (no biases; heads h < H of
 *       key size d_k = C/H and value size d_v = V/H, V = value_dim)
 *   q̃_t = c_{h,t}·Θ_t q_t, k̃_t = Θ_t k_t             Θ_t: torchscale's theta_shift, rotation of
 *       the pairs (2i, 2i+1) by t·θ_i, θ_i = 10000^(−i/(d_k/2 − 1)) (torch.linspace(0, 1, d_k/2));
 *       c_{h,t} = (Σ_{s<=t} γ_h^s)^(−1/2)  (torchscale's mask / sqrt(mask.sum(-1)) and its
 *       recurrent `scale`)
 *   o_t = Σ_{u<=t} γ_h^(t−u) (q̃_t·k̃_u) v_u            per head (paper Eq. 5-8: the retention)
 *   on = RMSNorm_nonaffine(o) per head (group_norm, eps)                       paper Eq. 8
 *   x1 = x + out_proj(swish(g) ⊙ on)                                           paper Eq. 8-9
 *   y = x1 + fc2(gelu(fc1(RMSNorm_2(x1))) ⊙ gate(RMSNorm_2(x1)))  final_layer_norm + torchscale's
 *       GLU FFN (activation_fn "gelu", the erf form)
 * Decay γ_h = 1 − 2^(−5−h): torchscale stores log(1 − 2^(−5 − arange(H))) (not a linspace) and
 * uses its exp; strix uses γ_h = 1 − 2^(−5−h) itself, exact in float for h < 19.
 *
 * One difference from torchscale, on purpose: its parallel form also divides each score row by
 * max(|row sum|, 1) and its chunkwise form by other detached row scalars (abs sums of the
 * chunk's scores and state), which its recurrent form does not. The group norm cancels any such
 * per-(b, h, t) scalar except through its eps, so torchscale's three forms agree only up to
 * eps·scalar²/mean(o²). strix computes the retention above (= torchscale's recurrent form, and its
 * parallel form whenever the row sums stay within [−1, 1]) in all three forms, which therefore
 * agree to rounding.
 *
 * Three forms of the same function:
 *   parallel   (strix_module_forward; backward and relevance refer to it) all T steps at once:
 *              scores Q̃K̃ᵀ ⊙ D (D[t][u] = γ^(t−u) for u <= t, else 0; γ^n as 1.0f multiplied by γ
 *              n times, as STRIX_SSM_RETNET_SCORES) and one GEMM with V per (b, h)
 *   chunkwise  (strix_retnet_block_forward_form, STRIX_RETNET_CHUNKWISE) chunks of
 *              cfg.chunk_size steps, each parallel inside plus the carried state
 *              S = Σ_u γ^(n−1−u) k̃_uᵀ v_u (d_k × d_v per head) from the chunks before (paper
 *              Eq. 7: chunkwise recurrent retention)
 *   recurrent  (STRIX_RETNET_RECURRENT, and forward_ex with io.state: decoding) step by step,
 *              S_t = γ S_{t−1} + k̃_tᵀ v_t, o_t = q̃_t S_t (paper Eq. 6); forward_ex on a state
 *              runs its x in chunks of cfg.chunk_size (1 step chunks for a (B,1,C) decode step,
 *              O(1) in the position) from the state and leaves the state at the end of x.
 * They agree to rounding, not bit for bit: the sums are associated differently (the parallel
 * form sums Σ_u in one GEMM, the others split it at chunk edges; tests/test_retnet.c measures
 * 2.4e-7 on values of order 1). T calls of forward_ex with (B,1,C) slices on one state give the
 * bits of the RECURRENT form on the whole x (the same operations in the same order) on a
 * backend whose GEMM gives the same bits for any row count (the own GEMM of "cpu"); with a BLAS
 * GEMM ("cpu-blas"), whose blocking follows the problem's shape, they agree to rounding.
 *
 * Parameters (torchscale's DecoderLayer names under `<prefix>.`, so a state dict of torchscale's
 * RetNetDecoder loads unchanged with prefix "layers.<i>"; weights (out, in) as nn.Linear):
 *   retention.q_proj.weight (C,C)  retention.k_proj.weight (C,C)  retention.v_proj.weight (V,C)
 *   retention.g_proj.weight (V,C)  retention.out_proj.weight (C,V)
 *   retention_layer_norm.weight (C)   ffn.fc1.weight (F,C)   ffn.fc2.weight (C,F)
 *   ffn.gate.weight (F,C)   final_layer_norm.weight (C)
 * (torchscale's buffers retnet_rel_pos.angle/decay belong to the decoder, not to a layer; strix
 * computes both from the config.) Linear weights get weight decay, the norm weights not.
 *
 * Module contracts as strix/nn.h: forward keeps a pointer to x (leave it unchanged until
 * backward); backward(dy) sets dx (`=`) and adds every parameter gradient (`+=`, none for a
 * frozen parameter); outputs are the module's buffers, valid until its next call of that kind.
 * Statuses: forward STRIX_ERR_SHAPE for an x that is not (B,T,C) with B, T >= 1; backward
 * STRIX_ERR_ARG before any forward, STRIX_ERR_UNSUPPORTED after a non-parallel one,
 * STRIX_ERR_SHAPE for a dy of another shape than y; forward_ex STRIX_ERR_UNSUPPORTED for ids, a
 * mask or more than one input, STRIX_ERR_ARG for a state of another module, STRIX_ERR_SHAPE for
 * an x whose batch differs from the state's (fixed by its first call); STRIX_ERR_ALLOC. The
 * layer has no train/eval difference (no dropout). General form: forward_ex with in[0] = x and
 * no state is the parallel forward; with io.state (strix_module_state_new: the zero state) it
 * continues the sequence and sets out[0] = y (n_out 1); backward_ex/relevance_ex are the
 * one-tensor calls.
 * All computation is backend primitives (GEMMs, permute_0213, rope_rotate, rms_norm, elementwise,
 * copy_2d, the lrp_* rules); nothing dereferences tensor data on the host.
 *
 * Relevance (LRP, of the last parallel forward, rule m->rule: kind EPSILON, epsilon
 * rule.epsilon, other kinds STRIX_ERR_UNSUPPORTED; STRIX_ERR_ARG before any forward,
 * STRIX_ERR_UNSUPPORTED after a chunkwise/recurrent/stateful one, STRIX_ERR_SHAPE for an r_out
 * of another shape than y; the layer norms by rule.layer_norm_detach_std as strix/layers.h's
 * RMSNorm):
 *   residual sums: the epsilon split (lrp_residual_split); fc2, out_proj and the q/k/v/gate/fc1
 *   projections: the epsilon rule (lrp_linear, bias-free: z = the output); the FFN's
 *   gelu(fc1)·gate product: the bilinear rule, half to each factor (lrp_bilinear_elementwise;
 *   AttnLRP, the spec's SwiGLU rule), GELU passes relevance through; the retention's swish gate:
 *   signal-take-all (the gate g detached, g_proj gets none: all of it to on); the group norm with
 *   the normalisation detached (epsilon rule of on = o/rms); o = (Q̃K̃ᵀ ⊙ D)·V: the bilinear rule
 *   on the product with V and on Q̃K̃ᵀ (lrp_bilinear_matmul, the constant D passing relevance
 *   on unchanged), the rotations Θ with c by the epsilon rule of RoPE (lrp_rope); the three
 *   input projections' shares summed (the sum RETNET_LRP_INPUT forms for value_dim = C, here in
 *   three lrp_linear calls so that value_dim may differ from C).
 * Every rule but the eps terms conserves: Σ r_x = Σ r_y up to the stabilisers' share.
 */
#ifndef STRIX_RETNET_H
#define STRIX_RETNET_H

#include "strix/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct strix_retnet_config {
    int d_model;        /* C, decoder_embed_dim */
    int n_head;         /* H, decoder_retention_heads, 1..64; C % H == 0, (C/H) even */
    int value_dim;      /* V, decoder_value_embed_dim; V % H == 0 */
    int ffn_dim;        /* F, decoder_ffn_embed_dim */
    float norm_eps;     /* layernorm_eps of the three RMSNorms (torchscale's RetNetConfig: 1e-6) */
    int chunk_size;     /* chunk length of the chunkwise form and of forward_ex on a state
                         * (recurrent_chunk_size; >= 1) */
    int layer_index;    /* the layer's depth (torchscale's `depth`; recorded, no effect here:
                         * torchscale uses it only for drop-path) */
} strix_retnet_config;

/* Defaults for d_model C and H heads: value_dim = 2·C and ffn_dim = 2·C, the paper's sizes
 * (Sun et al. 2023's parameter allocation: W_V, W_G d×2d, FFN 2d; torchscale's defaults 1280 for
 * 768 are 5/3·C, and 2·C keeps V % H == 0 for any H dividing C), norm_eps 1e-6 (RetNetConfig's
 * layernorm_eps), chunk_size 64 (RetNetConfig's recurrent_chunk_size 512 is for long
 * documents), layer_index 0. */
STRIX_API strix_retnet_config strix_retnet_config_default(int d_model, int n_head);

/* The three forms of strix_retnet_block_forward_form (above). */
typedef enum strix_retnet_form {
    STRIX_RETNET_PARALLEL, STRIX_RETNET_CHUNKWISE, STRIX_RETNET_RECURRENT
} strix_retnet_form;

/* Builds one decoder layer and declares its parameters under `<prefix>.` (names above) with
 * torchscale's init distributions (strix_params_init draws them; strix_retnet_block_init draws
 * only this layer's). *out is a strix_module: free it with strix_module_free. STRIX_ERR_ARG for
 * sizes < 1, C % H, (C/H) odd, V % H, norm_eps <= 0 or chunk_size < 1; STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_retnet_block_new(strix_params *ps, const char *prefix,
                                              const strix_retnet_config *cfg,
                                              strix_module **out);

/* torchscale's reset_parameters for this layer (after strix_params_alloc): q/k/v/g_proj
 * xavier_uniform with gain 2^−2.5, out_proj xavier_uniform (gain 1): U(−b, b),
 * b = gain·sqrt(6/(fan_in + fan_out)); the GLU's fc1/fc2/gate nn.Linear's default
 * U(−1/sqrt(fan_in), 1/sqrt(fan_in)); the RMSNorm weights 1. Parameter k of the layer (in the
 * order above) is drawn from the SplitMix64 stream strix_seed_derive(seed, k) (the values differ
 * from torch's, the distributions are the same). STRIX_ERR_ARG for a module that is not a RetNet
 * layer; the copy's statuses. */
STRIX_API strix_status strix_retnet_block_init(strix_module *m, uint64_t seed);

/* y = layer(x) in the given form from the zero state, x (B,T,C) with B, T >= 1, y (B,T,C) owned
 * by the module: PARALLEL is strix_module_forward, CHUNKWISE runs chunks of cfg.chunk_size
 * steps, RECURRENT one step at a time (chunks of 1), both on a scratch state of the module.
 * Backward and relevance need the PARALLEL form; after another form they return
 * STRIX_ERR_UNSUPPORTED. STRIX_ERR_SHAPE for another x, STRIX_ERR_ARG for an unknown form or a
 * module that is not a RetNet layer, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_retnet_block_forward_form(strix_module *m, const strix_tensor *x,
                                                       strix_retnet_form form,
                                                       const strix_tensor **y);

/* The values of torchscale's RetNetDecoder buffers for this config, computed on the host as
 * torchscale does in float: angle (d_k = C/H floats, `retnet_rel_pos.angle`) = θ_i repeated for
 * both members of pair i, θ_i = 1/10000^(linspace(0, 1, d_k/2)[i]); decay (H floats,
 * `retnet_rel_pos.decay`) = log(1 − 2^(−5−h)). A wrapper that declares them as buffers
 * (strix_params_add_buffer) loads torchscale's state dict strictly. Either pointer may be NULL.
 * STRIX_ERR_ARG for a config strix_retnet_block_new refuses. */
STRIX_API strix_status strix_retnet_rel_pos_values(const strix_retnet_config *cfg, float *angle,
                                                   float *decay);

/* The position a layer's decoding state (strix_module_state_new on a RetNet layer) has reached:
 * the number of steps its forward_ex calls consumed (0 when fresh). The state holds S (B,H,d_k,
 * d_v), the batch B fixed by its first call. -1 for NULL or a state of another kind of module. */
STRIX_API long long strix_retnet_state_position(const strix_module_state *st);

#ifdef __cplusplus
}
#endif
#endif
