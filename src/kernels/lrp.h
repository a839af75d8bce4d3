/*
 * kernels/lrp.h - the math of the LRP primitives (include/strix/ops/lrp.h): the stabiliser and
 * the per-element / per-row / per-output rules.
 *
 * stab(z) = z + eps·sign(z) with sign(0) = +1 (spec §1; also for −0.0). The affine rules
 * (linear, conv, bilinear matmul, average pool) are written in the gradient×input form that
 * Zennit and LXT compute: out = x·Σ_k w_k·(r_k/stab(z_k)), the sum ascending from 0.0f and the
 * input multiplied last. Each has a one-output function (`_at`, one GPU lane per output); the CPU
 * backend runs the same per-output operations in the same order over blocks (strix_lrp_axpy),
 * so both give the same bits. No allocation, no OpenMP, no libc beyond common.h.
 */
#ifndef STRIX_KERNELS_LRP_H
#define STRIX_KERNELS_LRP_H

#include "kernels/common.h"

/* stab(z) = z + eps·(z >= 0 ? 1 : −1): +eps at z = 0 and z = −0.0; NaN gets −eps (stays NaN). */
STRIX_HD static inline float strix_lrp_stab(float z, float eps) {
    return z + (z >= 0.0f ? eps : -eps);
}

/* r/stab(z): the "s" of the epsilon rule. */
STRIX_HD static inline float strix_lrp_ratio(float r, float z, float eps) {
    return r / strix_lrp_stab(z, eps);
}

/* acc[t] += k·v[t] for t < len: one step of the ascending sums of the affine rules. */
STRIX_HD static inline void strix_lrp_axpy(float *acc, const float *v, float k, size_t len) {
    for (size_t t = 0; t < len; t++) acc[t] += k * v[t];
}

/* acc[t] = x[t]·acc[t] for t < len: the final input factor of the affine rules. */
STRIX_HD static inline void strix_lrp_times_input(float *acc, const float *x, size_t len) {
    for (size_t t = 0; t < len; t++) acc[t] = x[t] * acc[t];
}

// ---- affine rules, one output each -------------------------------------------------------------

/* lrp_linear output (row, i): x[i]·Σ_j W[j][i]·(r[j]/stab(z[j])), j ascending from 0.0f.
 * x_row, z_row, r_row are row `row`'s; W is (out, in). */
STRIX_HD static inline float strix_lrp_linear_at(const float *x_row, const float *w,
                                                 const float *z_row, const float *r_row,
                                                 size_t i, size_t in_features,
                                                 size_t out_features, float eps) {
    float acc = 0.0f;
    for (size_t j = 0; j < out_features; j++)
        acc += w[j * in_features + i] * strix_lrp_ratio(r_row[j], z_row[j], eps);
    return x_row[i] * acc;
}

/* lrp_conv output (example, p, q): col[p][q]·Σ_oc K[oc][p]·(r[oc][q]/stab(z[oc][q])), oc
 * ascending from 0.0f. col_n (P, Q), z_n and r_n (OC, Q) are the example's; K is (OC, P). */
STRIX_HD static inline float strix_lrp_conv_at(const float *col_n, const float *kernel,
                                               const float *z_n, const float *r_n, size_t p,
                                               size_t q, size_t out_channels, size_t patch,
                                               size_t cols, float eps) {
    float acc = 0.0f;
    for (size_t oc = 0; oc < out_channels; oc++) {
        size_t at = oc * cols + q;
        acc += kernel[oc * patch + p] * strix_lrp_ratio(r_n[at], z_n[at], eps);
    }
    return col_n[p * cols + q] * acc;
}

/* w_ik of the bilinear matmul rule: r_o/(2·o + eps·sign o) = r_o/stab(2·o) (sign(2o) = sign o). */
STRIX_HD static inline float strix_lrp_bilinear_weight(float r_o, float o, float eps) {
    return strix_lrp_ratio(r_o, 2.0f * o, eps);
}

/* B(j, k) of a (p, q) matrix stored (p, q), or (q, p) if transposed. */
STRIX_HD static inline size_t strix_lrp_b_index(size_t j, size_t k, size_t p, size_t q,
                                                bool transposed) {
    return transposed ? k * p + j : j * q + k;
}

/* r_a[i][j] of one slice: a[i][j]·Σ_k B(j,k)·w_ik, k ascending from 0.0f. */
STRIX_HD static inline float strix_lrp_bilinear_a_at(const float *a, const float *b,
                                                     const float *o, const float *r_o, size_t i,
                                                     size_t j, size_t p, size_t q, float eps,
                                                     bool b_transposed) {
    float acc = 0.0f;
    for (size_t k = 0; k < q; k++)
        acc += b[strix_lrp_b_index(j, k, p, q, b_transposed)] *
               strix_lrp_bilinear_weight(r_o[i * q + k], o[i * q + k], eps);
    return a[i * p + j] * acc;
}

/* r_b(j, k) of one slice: B(j,k)·Σ_i a[i][j]·w_ik, i ascending from 0.0f. */
STRIX_HD static inline float strix_lrp_bilinear_b_at(const float *a, const float *b,
                                                     const float *o, const float *r_o, size_t j,
                                                     size_t k, size_t m, size_t p, size_t q,
                                                     float eps, bool b_transposed) {
    float acc = 0.0f;
    for (size_t i = 0; i < m; i++)
        acc += a[i * p + j] * strix_lrp_bilinear_weight(r_o[i * q + k], o[i * q + k], eps);
    return b[strix_lrp_b_index(j, k, p, q, b_transposed)] * acc;
}

// ---- elementwise rules -------------------------------------------------------------------------

/* Residual split of y = a + b: writes (a/stab(y))·r and (b/stab(y))·r. */
STRIX_HD static inline void strix_lrp_residual_at(float a, float b, float r, float eps,
                                                  float *r_a, float *r_b) {
    float den = strix_lrp_stab(a + b, eps);
    *r_a = (a / den) * r;
    *r_b = (b / den) * r;
}

/* Bilinear rule of c = a·b, each operand's share: (c/stab(2c))·r = c/(2c + eps·sign c)·r. */
STRIX_HD static inline float strix_lrp_bilinear_elementwise_at(float a, float b, float r,
                                                               float eps) {
    float c = a * b;
    return (c / strix_lrp_stab(2.0f * c, eps)) * r;
}

/* Stabilised divide with a gate: r/stab(den) where the gate passes, else 0. mode: 0 every
 * element, 1 gate > 0, 2 gate < 0 (strix_lrp_gate). */
STRIX_HD static inline float strix_lrp_divide_at(float r, float den, float gate, int mode,
                                                 float eps) {
    bool pass = mode == 0 || (mode == 1 && gate > 0.0f) || (mode == 2 && gate < 0.0f);
    return pass ? strix_lrp_ratio(r, den, eps) : 0.0f;
}

// ---- rows --------------------------------------------------------------------------------------

/* AttnLRP softmax rule over one row: r_in[j] = x[j]·(r[j] − y[j]·Σ_k r[k]), the sum ascending
 * from 0.0f; x[j] = −inf (a masked score, y[j] = 0) gives 0, not NaN. r_in may alias x, y or r. */
STRIX_HD static inline void strix_lrp_softmax_row(const float *x, const float *y, const float *r,
                                                  float *r_in, size_t cols) {
    float total = 0.0f;
    for (size_t j = 0; j < cols; j++) total += r[j];
    for (size_t j = 0; j < cols; j++) {
        float xj = x[j];
        r_in[j] = xj == STRIX_NEG_INF ? 0.0f : xj * (r[j] - y[j] * total);
    }
}

/* Epsilon rule of one rotated pair (lo, hi) -> (y_lo, y_hi) = (lo·c − hi·s, lo·s + hi·c):
 * r_lo = (lo·c/stab(y_lo))·r_ylo + (lo·s/stab(y_hi))·r_yhi,
 * r_hi = (−hi·s/stab(y_lo))·r_ylo + (hi·c/stab(y_hi))·r_yhi. Reads every input before it writes
 * (r_in may alias r). */
STRIX_HD static inline void strix_lrp_rope_pair(const float *x, const float *y, const float *r,
                                                float c, float s, float *r_in, size_t pair,
                                                float eps) {
    float lo = x[2 * pair], hi = x[2 * pair + 1];
    float den_lo = strix_lrp_stab(y[2 * pair], eps), den_hi = strix_lrp_stab(y[2 * pair + 1], eps);
    float r_lo = r[2 * pair], r_hi = r[2 * pair + 1];
    float out_lo = ((lo * c) / den_lo) * r_lo + ((lo * s) / den_hi) * r_hi;
    float out_hi = ((-(hi * s)) / den_lo) * r_lo + ((hi * c) / den_hi) * r_hi;
    r_in[2 * pair] = out_lo;
    r_in[2 * pair + 1] = out_hi;
}

// ---- average pool ------------------------------------------------------------------------------

/* Window (oy, ox) of an average pool: Σ over its in-image taps, rows then columns ascending from
 * 0.0f (padding taps are zeros and skipped), divided by kh·kw (count_include_pad). */
STRIX_HD static inline float strix_lrp_avg_window(const float *plane, size_t h, size_t w,
                                                  size_t oy, size_t ox, size_t kh, size_t kw,
                                                  size_t sh, size_t sw, size_t ph, size_t pw) {
    float total = 0.0f;
    for (size_t i = 0; i < kh; i++) {
        size_t yy = oy * sh + i; /* + ph: padded coordinates */
        if (yy < ph || yy - ph >= h) continue;
        for (size_t j = 0; j < kw; j++) {
            size_t xx = ox * sw + j;
            if (xx < pw || xx - pw >= w) continue;
            total += plane[(yy - ph) * w + (xx - pw)];
        }
    }
    return total / (float)(kh * kw);
}

/* First and one-past-last window index along one axis that covers input coordinate `at`:
 * windows o with o·stride ≤ at + pad < o·stride + k, clipped to [0, out). */
STRIX_HD static inline void strix_lrp_window_range(size_t at, size_t pad, size_t k,
                                                   size_t stride, size_t out, size_t *first,
                                                   size_t *end) {
    size_t padded = at + pad;
    size_t lo = padded + 1 > k ? (padded + 1 - k + stride - 1) / stride : 0;
    size_t hi = padded / stride + 1;
    *first = lo;
    *end = hi < out ? hi : out;
}

/* Epsilon rule of an average pool at pixel (y, x) of one plane: the value to ADD to r_in there,
 * x·Σ_o (r_o/stab(z_o))/(kh·kw) over the windows o covering the pixel, row-major ascending from
 * 0.0f (the association of x·avg_pool_backward(r/stab(z))). */
STRIX_HD static inline float strix_lrp_avg_pool_at(const float *x_plane, const float *r_plane,
                                                   size_t h, size_t w, size_t oh, size_t ow,
                                                   size_t y, size_t x, size_t kh, size_t kw,
                                                   size_t sh, size_t sw, size_t ph, size_t pw,
                                                   float eps) {
    size_t y0, y1, x0, x1;
    strix_lrp_window_range(y, ph, kh, sh, oh, &y0, &y1);
    strix_lrp_window_range(x, pw, kw, sw, ow, &x0, &x1);
    float area = (float)(kh * kw), total = 0.0f;
    for (size_t oy = y0; oy < y1; oy++)
        for (size_t ox = x0; ox < x1; ox++) {
            float z = strix_lrp_avg_window(x_plane, h, w, oy, ox, kh, kw, sh, sw, ph, pw);
            total += strix_lrp_ratio(r_plane[oy * ow + ox], z, eps) / area;
        }
    return x_plane[y * w + x] * total;
}

#endif
