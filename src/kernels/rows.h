/*
 * kernels/rows.h - per-row math: softmax and its backward, logsumexp, LayerNorm forward/backward,
 * the causal attention softmax (microGPT fused_attn_softmax) and softmax cross-entropy.
 *
 * Each function handles ONE row; the backend decides which rows run where. Every sum runs over
 * the columns in ascending order from 0.0f. Aliasing rules are the public ones of
 * include/strix/backend.h: each function reads an element before it writes the same index, so
 * out == in is safe wherever the API allows it. Rows whose every entry is -inf carry "no mass"
 * (docs/SEMANTICS.md, edge cases): softmax gives zeros, logsumexp gives -inf. Exponentials are
 * strix_kernel_expf (kernels/mathf.h), computed in a loop of their own so that it vectorises.
 */
#ifndef STRIX_KERNELS_ROWS_H
#define STRIX_KERNELS_ROWS_H

#include "kernels/common.h"
#include "kernels/mathf.h"

/* Largest entry of x[0..cols) (NaN entries are skipped); -inf for an empty or all -inf row. */
STRIX_HD static inline float strix_row_max(const float *x, size_t cols) {
    float best = STRIX_NEG_INF;
    for (size_t j = 0; j < cols; j++)
        if (x[j] > best) best = x[j];
    return best;
}

/* out = softmax(in) over one row: e_j = exp(x_j − max) stored, then divided by Σe (ascending).
 * All -inf gives zeros. out may alias in. */
STRIX_HD static inline void strix_softmax_row(const float *in, float *out, size_t cols) {
    float row_max = strix_row_max(in, cols);
    if (row_max == STRIX_NEG_INF) {
        for (size_t j = 0; j < cols; j++) out[j] = 0.0f;
        return;
    }
    float total = 0.0f;
    for (size_t j = 0; j < cols; j++) out[j] = strix_kernel_expf(in[j] - row_max);
    for (size_t j = 0; j < cols; j++) total += out[j];
    for (size_t j = 0; j < cols; j++) out[j] = out[j] / total;
}

/* dx = y ⊙ (dy − Σ_j y_j·dy_j) over one row, from the softmax output y. dx may alias dy. */
STRIX_HD static inline void strix_softmax_row_backward(const float *y, const float *dy, float *dx,
                                                       size_t cols) {
    float dot = 0.0f;
    for (size_t j = 0; j < cols; j++) dot += y[j] * dy[j];
    for (size_t j = 0; j < cols; j++) dx[j] = y[j] * (dy[j] - dot);
}

/* max + log Σ exp(x − max) over one row; ±inf max returns the max itself (all -inf → -inf). */
STRIX_HD static inline float strix_logsumexp_row(const float *in, size_t cols) {
    float row_max = strix_row_max(in, cols);
    if (isinf(row_max)) return row_max;
    float total = 0.0f;
    for (size_t j = 0; j < cols; j++) total += strix_kernel_expf(in[j] - row_max);
    return row_max + logf(total);
}

/* Rows that strix_layer_norm_rows_forward handles side by side. */
#define STRIX_LN_GROUP 8

/* LayerNorm of `count` (1..STRIX_LN_GROUP) consecutive rows of width cols, each row on its own:
 * mean = Σx/D; var = Σ(x − mean)²/D (biased, second pass); std = sqrt(var + eps);
 * xhat = (x − mean)/std; out = gamma·xhat + beta (NULL gamma/beta act as 1/0); row_std[r] = std.
 * Every sum of a row runs over its columns in ascending order; the rows' sums are interleaved
 * only so that their dependency chains overlap. xhat and out may alias in. */
STRIX_HD static inline void strix_layer_norm_rows_forward(const float *in, const float *gamma,
                                                          const float *beta, float *xhat,
                                                          float *out, float *row_std, size_t count,
                                                          size_t cols, float eps) {
    float mean[STRIX_LN_GROUP], squares[STRIX_LN_GROUP];
    for (size_t r = 0; r < count; r++) mean[r] = 0.0f;
    for (size_t j = 0; j < cols; j++)
        for (size_t r = 0; r < count; r++) mean[r] += in[r * cols + j];
    for (size_t r = 0; r < count; r++) {
        mean[r] = mean[r] / (float)cols;
        squares[r] = 0.0f;
    }
    for (size_t j = 0; j < cols; j++) {
        for (size_t r = 0; r < count; r++) {
            float centred = in[r * cols + j] - mean[r];
            squares[r] += centred * centred;
        }
    }
    for (size_t r = 0; r < count; r++) {
        float std = sqrtf(squares[r] / (float)cols + eps);
        row_std[r] = std;
        const float *x = in + r * cols;
        float *xh = xhat + r * cols, *y = out + r * cols;
        for (size_t j = 0; j < cols; j++) {
            float normed = (x[j] - mean[r]) / std;
            xh[j] = normed;
            float scaled = gamma ? gamma[j] * normed : normed;
            y[j] = beta ? scaled + beta[j] : scaled;
        }
    }
}

/* LayerNorm input gradient of `count` (1..STRIX_LN_GROUP) consecutive rows, each on its own:
 * g = grad_out·gamma (gamma NULL = 1); grad_in = (D·g − Σg − xhat·Σ(g·xhat)) / (D·std), the sums
 * over the row's columns ascending (rows interleaved only to overlap their chains).
 * grad_in may alias grad_out. */
STRIX_HD static inline void strix_layer_norm_rows_backward(const float *grad_out,
                                                           const float *gamma, const float *xhat,
                                                           const float *row_std, float *grad_in,
                                                           size_t count, size_t cols) {
    float sum_g[STRIX_LN_GROUP], sum_g_xhat[STRIX_LN_GROUP];
    for (size_t r = 0; r < count; r++) sum_g[r] = 0.0f, sum_g_xhat[r] = 0.0f;
    for (size_t j = 0; j < cols; j++) {
        for (size_t r = 0; r < count; r++) {
            size_t at = r * cols + j;
            float g = gamma ? grad_out[at] * gamma[j] : grad_out[at];
            sum_g[r] += g;
            sum_g_xhat[r] += g * xhat[at];
        }
    }
    float width = (float)cols;
    for (size_t r = 0; r < count; r++) {
        float denom = width * row_std[r];
        const float *dy = grad_out + r * cols, *xh = xhat + r * cols;
        float *dx = grad_in + r * cols;
        for (size_t j = 0; j < cols; j++) {
            float g = gamma ? dy[j] * gamma[j] : dy[j];
            dx[j] = (width * g - sum_g[r] - xh[j] * sum_g_xhat[r]) / denom;
        }
    }
}

/* Row i (query position) of a causal (T,T) score block: probs[j] = softmax_j(scale·scores[j])
 * over j <= i, 0 for j > i. A row whose visible scores are all -inf gives zeros. probs may alias
 * scores. */
STRIX_HD static inline void strix_attn_causal_row_forward(const float *scores, float *probs,
                                                          size_t i, size_t T, float scale) {
    size_t visible = i + 1;
    float row_max = STRIX_NEG_INF;
    for (size_t j = 0; j < visible; j++) {
        float z = scale * scores[j];
        if (z > row_max) row_max = z;
    }
    if (row_max == STRIX_NEG_INF) {
        for (size_t j = 0; j < T; j++) probs[j] = 0.0f;
        return;
    }
    float total = 0.0f;
    for (size_t j = 0; j < visible; j++) probs[j] = strix_kernel_expf(scale * scores[j] - row_max);
    for (size_t j = 0; j < visible; j++) total += probs[j];
    for (size_t j = 0; j < visible; j++) probs[j] = probs[j] / total;
    for (size_t j = visible; j < T; j++) probs[j] = 0.0f;
}

/* Backward of strix_attn_causal_row_forward for row i:
 * dscores[j] = scale·(p_j·(dp_j − Σ_{l<=i} p_l·dp_l)) for j <= i, 0 above the diagonal.
 * dscores may alias dprobs. */
STRIX_HD static inline void strix_attn_causal_row_backward(const float *probs, const float *dprobs,
                                                           float *dscores, size_t i, size_t T,
                                                           float scale) {
    size_t visible = i + 1;
    float dot = 0.0f;
    for (size_t j = 0; j < visible; j++) dot += probs[j] * dprobs[j];
    for (size_t j = 0; j < visible; j++) dscores[j] = scale * (probs[j] * (dprobs[j] - dot));
    for (size_t j = visible; j < T; j++) dscores[j] = 0.0f;
}

/* Softmax cross-entropy of one row of V logits with target t. Returns the loss
 * logsumexp(x) − x[t] and, if dlogits != NULL, writes (softmax(x) − onehot(t))·grad_scale.
 * t < 0: loss 0 and a zero gradient row. -inf logits get exactly 0 gradient. An all -inf row
 * returns +inf with a zero gradient. dlogits may alias logits (the loss is computed first). */
STRIX_HD static inline float strix_cross_entropy_row(const float *logits, int32_t target,
                                                     float *dlogits, size_t V, float grad_scale) {
    if (target < 0) {
        if (dlogits)
            for (size_t j = 0; j < V; j++) dlogits[j] = 0.0f;
        return 0.0f;
    }
    float row_max = strix_row_max(logits, V);
    if (row_max == STRIX_NEG_INF) {
        if (dlogits)
            for (size_t j = 0; j < V; j++) dlogits[j] = 0.0f;
        return INFINITY;
    }
    float total = 0.0f;
    for (size_t j = 0; j < V; j++) total += strix_kernel_expf(logits[j] - row_max);
    float loss = (row_max + logf(total)) - logits[target];
    if (dlogits) {
        for (size_t j = 0; j < V; j++) {
            float prob = strix_kernel_expf(logits[j] - row_max) / total;
            float onehot = (size_t)target == j ? 1.0f : 0.0f;
            dlogits[j] = (prob - onehot) * grad_scale;
        }
    }
    return loss;
}

// ---- extras: accumulate_rows, RMSNorm, attention masks -----------------------------------------

/* accumulate_rows over the column range [col0, col0 + width) of (rows, cols):
 * out[j] += in[i][j] for i ascending, each term added straight into out[j] (`+=`; not
 * column_sums' association, which sums from 0.0f first). The CPU hands out column chunks, a GPU
 * one column per thread (width 1). No alias. */
STRIX_HD static inline void strix_accumulate_rows_cols(const float *in, float *out, size_t rows,
                                                       size_t cols, size_t col0, size_t width) {
    for (size_t i = 0; i < rows; i++) {
        const float *row = in + i * cols + col0;
        for (size_t j = 0; j < width; j++) out[col0 + j] += row[j];
    }
}

/* RMSNorm of one row (Zhang & Sennrich 2019): rms = sqrt(Σx²/D + eps), the squares summed in
 * ascending order from 0.0f; out = gamma·(x/rms) (gamma NULL = 1). Returns rms. out may alias in.
 */
STRIX_HD static inline float strix_rms_norm_row_forward(const float *in, const float *gamma,
                                                        float *out, size_t cols, float eps) {
    float squares = 0.0f;
    for (size_t j = 0; j < cols; j++) squares += in[j] * in[j];
    float rms = sqrtf(squares / (float)cols + eps);
    for (size_t j = 0; j < cols; j++) {
        float normed = in[j] / rms;
        out[j] = gamma ? gamma[j] * normed : normed;
    }
    return rms;
}

/* RMSNorm backward of one row: g = grad_out·gamma (gamma NULL = 1), t = Σ_j g·x (ascending);
 * grad_in = g/rms − x·c with c = t/D/rms/rms/rms (that is x·t/(D·rms³), divided step by step so
 * that rms³ cannot overflow); gamma_terms = grad_out·x/rms when not NULL (the caller's
 * column_sums turn them into gamma's gradient). grad_in may alias grad_out (each element is read
 * before it is written). */
STRIX_HD static inline void strix_rms_norm_row_backward(const float *grad_out, const float *gamma,
                                                        const float *in, float rms,
                                                        float *grad_in, float *gamma_terms,
                                                        size_t cols) {
    float t = 0.0f;
    for (size_t j = 0; j < cols; j++) {
        float g = gamma ? grad_out[j] * gamma[j] : grad_out[j];
        t += g * in[j];
    }
    float c = t / (float)cols / rms / rms / rms;
    for (size_t j = 0; j < cols; j++) {
        float go = grad_out[j], x = in[j];
        float g = gamma ? go * gamma[j] : go;
        if (gamma_terms) gamma_terms[j] = go * x / rms;
        grad_in[j] = g / rms - x * c;
    }
}

/* Masks one score row (query i of its (b, h) slice) of Lk keys: row[j] = value when
 * causal and j > i + q_off (the future); or causal, window > 0 and j + window <= i + q_off (out of
 * the sliding window: a query sees its own position and the window − 1 before it); or keep
 * != NULL and keep[j] == 0 (keep is the (b) row of the (B, Lk) padding mask). Other entries are
 * untouched. */
STRIX_HD static inline void strix_attention_mask_row(float *row, const float *keep, size_t i,
                                                     size_t Lk, bool causal, size_t q_off,
                                                     size_t window, float value) {
    size_t pos = i + q_off;
    for (size_t j = 0; j < Lk; j++) {
        bool masked = causal && (j > pos || (window > 0 && j + window <= pos));
        if (keep && keep[j] == 0.0f) masked = true;
        if (masked) row[j] = value;
    }
}

#endif
