/*
 * strix/ops/lrp.h - Layer-wise Relevance Propagation primitives of the device backend (included
 * by strix/backend.h; same conventions: backend pointers, row-major float32, `=` unless `+=` is
 * said, every call returns STRIX_OK or STRIX_ERR_UNSUPPORTED). The fuzzy-logic primitives and
 * their LRP rules: strix/ops/logic.h.
 *
 * The stabiliser of every rule is stab(z) = z + eps·sign(z) with sign(0) = +1, also for −0.0
 * (docs/SEMANTICS.md). Rules: Bach et al. 2015 (epsilon), Montavon et al. 2019 (overview), Achtibat
 * et al. 2024 (AttnLRP: the softmax rule and the bilinear "Eq. 15" rule). The affine rules are
 * computed in the gradient×input form of Zennit and LXT, x·Σ_k w_k·(r_k/stab(z_k)): the same value
 * as the per-term sums Σ_k x·w_k/stab(z_k)·r_k of pulsatrix, up to rounding. Sums run over the
 * named index ascending from 0.0f. Outputs must not alias inputs unless a function says so.
 */
#ifndef STRIX_OPS_LRP_H
#define STRIX_OPS_LRP_H

#include "strix/ops/cnn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which elements lrp_stabilized_divide lets through. */
typedef enum strix_lrp_gate {
    STRIX_LRP_GATE_NONE,     /* every element */
    STRIX_LRP_GATE_POSITIVE, /* gate[i] > 0 */
    STRIX_LRP_GATE_NEGATIVE  /* gate[i] < 0 */
} strix_lrp_gate;

/* Epsilon rule of a Linear layer: r_in[n][i] = x[n][i]·Σ_j W[j][i]·(r[n][j]/stab(z[n][j])), j
 * ascending (= Σ_j x·W[j][i]/stab(z)·r). strix: W is (out, in) as nn.Linear stores it (the
 * pulsatrix one is (in, out)); z (rows, out) is the PRE-bias output x·Wᵀ (bias out of the
 * denominator; pass z with the bias for Zennit's convention). x, r_in (rows, in). With zero bias
 * and eps -> 0, Σ r_in = Σ r. */
STRIX_API strix_status strix_lrp_linear(strix_backend *be, const float *x, const float *w,
                                        const float *z, const float *r, float *r_in, size_t rows,
                                        size_t in_features, size_t out_features, float eps);
/* Epsilon split of a residual sum y = a + b (n): r_a = (a/stab(a + b))·r, r_b = (b/stab(a + b))·r.
 * r_a or r_b may alias a, b or r (elementwise). */
STRIX_API strix_status strix_lrp_residual_split(strix_backend *be, const float *a,
                                                const float *b, const float *r, float *r_a,
                                                float *r_b, size_t n, float eps);
/* Bilinear rule for c = a⊙b (n): both operands get r_out = (c/(2c + eps·sign c))·r, c = a·b
 * computed here (half each). r_out may alias a, b or r. */
STRIX_API strix_status strix_lrp_bilinear_elementwise(strix_backend *be, const float *a,
                                                      const float *b, const float *r,
                                                      float *r_out, size_t n, float eps);
/* Bilinear rule for `slices` products O = A·B, A (m,p), B (p,q) (or stored (q,p) if
 * b_transposed, and then r_b too), O and r_o (m,q), slices back to back:
 * w_ik = r_o_ik/(2·o_ik + eps·sign o_ik); r_a_ij = a_ij·Σ_k b_jk·w_ik (k ascending);
 * r_b_jk = b_jk·Σ_i a_ij·w_ik (i ascending). Σ r_a + Σ r_b = Σ r_o up to the eps terms. */
STRIX_API strix_status strix_lrp_bilinear_matmul(strix_backend *be, const float *a,
                                                 const float *b, const float *o,
                                                 const float *r_o, float *r_a, float *r_b,
                                                 size_t slices, size_t m, size_t p, size_t q,
                                                 float eps, bool b_transposed);
/* AttnLRP softmax rule per row of (rows, cols): r_in = x·(r − y·Σ_j r), y = softmax(x), the sum
 * ascending. A score x = −inf (masked, y = 0) gets 0, not NaN. Does not conserve relevance.
 * r_in may alias x, y or r. */
STRIX_API strix_status strix_lrp_softmax_rows(strix_backend *be, const float *x, const float *y,
                                              const float *r, float *r_in, size_t rows,
                                              size_t cols);
/* Epsilon rule of RoPE over (rows, head_dim), row r at position r mod seq_len, pairs (2i, 2i+1),
 * tables (seq_len, head_dim/2) as for strix_rope_rotate; x the input, y = rotate(x) the output.
 * Each input of a pair takes its share of both outputs, the lo output first:
 * r_lo = (lo·c/stab(y_lo))·r_ylo + (lo·s/stab(y_hi))·r_yhi,
 * r_hi = (−hi·s/stab(y_lo))·r_ylo + (hi·c/stab(y_hi))·r_yhi. head_dim even. r_in may alias x,
 * y or r. */
STRIX_API strix_status strix_lrp_rope(strix_backend *be, const float *x, const float *y,
                                      const float *r, const float *cos_table,
                                      const float *sin_table, float *r_in, size_t rows,
                                      size_t seq_len, size_t head_dim, float eps);
/* Epsilon rule of a convolution in patch space: r_col[n][p][q] = col[n][p][q]·Σ_oc K[oc][p]·
 * (r[n][oc][q]/stab(z[n][oc][q])), oc ascending. col (n, P, Q) from im2col, K (OC, P), z and r
 * (n, OC, Q) with z pre-bias. The caller folds r_col back with col2im_add. */
STRIX_API strix_status strix_lrp_conv(strix_backend *be, const float *col, const float *kernel,
                                      const float *z, const float *r, float *r_col, size_t n,
                                      size_t out_channels, size_t p, size_t q, float eps);
/* Epsilon rule of an average pool (geometry as strix_avg_pool_forward, count_include_pad): each
 * window o has z_o = Σ its in-image x (rows then columns ascending; padding taps are 0)/(kh·kw),
 * and each pixel gets r_in += x·Σ_o (r_o/stab(z_o))/(kh·kw) over the windows covering it in
 * row-major order (`+=`; the caller zeroes r_in). Padding gets no relevance. x and r_in
 * (planes, h, w), r (planes, oh, ow). */
STRIX_API strix_status strix_lrp_avg_pool(strix_backend *be, const float *x, const float *r,
                                          float *r_in, size_t planes, size_t h, size_t w,
                                          const strix_conv_geom *g, float eps);
/* The one non-GEMM step of the affine rules (Zennit): out[i] = passes(gate[i]) ? r[i]/stab(den[i])
 * : 0 (a hard zero). gate may be NULL with STRIX_LRP_GATE_NONE. out may alias r, den or gate. */
STRIX_API strix_status strix_lrp_stabilized_divide(strix_backend *be, const float *r,
                                                   const float *den, const float *gate,
                                                   float *out, size_t n, float eps,
                                                   strix_lrp_gate gate_mode);

#ifdef __cplusplus
}
#endif
#endif
