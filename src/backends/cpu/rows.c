/*
 * rows.c - the CPU backend's row slots: softmax (+backward), logsumexp, LayerNorm forward and
 * backward, causal attention softmax (+backward), softmax cross-entropy, RMSNorm forward and
 * backward, and attention score masks.
 *
 * Each row is independent; OpenMP splits rows, and each row runs the kernels/rows.h function that
 * every backend shares, so results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/rows.h"

#define MANY_ROWS(rows, cols) ((rows) > 1 && CPU_BIG(2 * (rows) * (cols)))

strix_status cpu_softmax_rows(strix_backend *be, const float *in, float *out, size_t rows,
                              size_t cols) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY_ROWS(rows, cols))
    for (size_t r = 0; r < rows; r++) strix_softmax_row(in + r * cols, out + r * cols, cols);
    return STRIX_OK;
}

strix_status cpu_softmax_rows_backward(strix_backend *be, const float *y, const float *dy,
                                       float *dx, size_t rows, size_t cols) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY_ROWS(rows, cols))
    for (size_t r = 0; r < rows; r++)
        strix_softmax_row_backward(y + r * cols, dy + r * cols, dx + r * cols, cols);
    return STRIX_OK;
}

strix_status cpu_logsumexp_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                size_t cols) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY_ROWS(rows, cols))
    for (size_t r = 0; r < rows; r++) out[r] = strix_logsumexp_row(in + r * cols, cols);
    return STRIX_OK;
}

strix_status cpu_layer_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                    const float *beta, float *xhat, float *out, float *row_std,
                                    size_t rows, size_t cols, float eps) {
    (void)be;
    size_t groups = (rows + STRIX_LN_GROUP - 1) / STRIX_LN_GROUP;
    CPU_PARALLEL_FOR_IF(groups > 1 && MANY_ROWS(rows, cols))
    for (size_t g = 0; g < groups; g++) {
        size_t r = g * STRIX_LN_GROUP, at = r * cols;
        if (rows - r >= STRIX_LN_GROUP) /* a constant count: the row loops unroll */
            strix_layer_norm_rows_forward(in + at, gamma, beta, xhat + at, out + at, row_std + r,
                                          STRIX_LN_GROUP, cols, eps);
        else
            strix_layer_norm_rows_forward(in + at, gamma, beta, xhat + at, out + at, row_std + r,
                                          rows - r, cols, eps);
    }
    return STRIX_OK;
}

strix_status cpu_layer_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                     const float *xhat, const float *row_std, float *grad_in,
                                     size_t rows, size_t cols) {
    (void)be;
    size_t groups = (rows + STRIX_LN_GROUP - 1) / STRIX_LN_GROUP;
    CPU_PARALLEL_FOR_IF(groups > 1 && MANY_ROWS(rows, cols))
    for (size_t g = 0; g < groups; g++) {
        size_t r = g * STRIX_LN_GROUP, at = r * cols;
        size_t count = rows - r >= STRIX_LN_GROUP ? STRIX_LN_GROUP : rows - r;
        if (count == STRIX_LN_GROUP) /* a constant count: the row loops unroll */
            strix_layer_norm_rows_backward(grad_out + at, gamma, xhat + at, row_std + r,
                                           grad_in + at, STRIX_LN_GROUP, cols);
        else
            strix_layer_norm_rows_backward(grad_out + at, gamma, xhat + at, row_std + r,
                                           grad_in + at, count, cols);
    }
    return STRIX_OK;
}

strix_status cpu_attn_softmax_causal(strix_backend *be, const float *scores, float *probs,
                                     size_t slices, size_t T, float scale) {
    (void)be;
    size_t rows = slices * T;
    CPU_PARALLEL_FOR_IF(MANY_ROWS(rows, T / 2))
    for (size_t r = 0; r < rows; r++)
        strix_attn_causal_row_forward(scores + r * T, probs + r * T, r % T, T, scale);
    return STRIX_OK;
}

strix_status cpu_attn_softmax_causal_backward(strix_backend *be, const float *probs,
                                              const float *dprobs, float *dscores, size_t slices,
                                              size_t T, float scale) {
    (void)be;
    size_t rows = slices * T;
    CPU_PARALLEL_FOR_IF(MANY_ROWS(rows, T / 2))
    for (size_t r = 0; r < rows; r++) {
        strix_attn_causal_row_backward(probs + r * T, dprobs + r * T, dscores + r * T, r % T, T,
                                       scale);
    }
    return STRIX_OK;
}

strix_status cpu_softmax_cross_entropy(strix_backend *be, const float *logits,
                                       const int32_t *targets, float *losses, float *dlogits,
                                       size_t rows, size_t V, float grad_scale) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY_ROWS(rows, V))
    for (size_t r = 0; r < rows; r++) {
        losses[r] = strix_cross_entropy_row(logits + r * V, targets[r],
                                            dlogits ? dlogits + r * V : NULL, V, grad_scale);
    }
    return STRIX_OK;
}

// ---- RMSNorm and attention masks ---------------------------------------------------------------

strix_status cpu_rms_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                  float *out, float *row_rms, size_t rows, size_t cols,
                                  float eps) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY_ROWS(rows, cols))
    for (size_t r = 0; r < rows; r++)
        row_rms[r] = strix_rms_norm_row_forward(in + r * cols, gamma, out + r * cols, cols, eps);
    return STRIX_OK;
}

strix_status cpu_rms_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                   const float *in, const float *row_rms, float *grad_in,
                                   float *gamma_terms, size_t rows, size_t cols) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY_ROWS(rows, cols))
    for (size_t r = 0; r < rows; r++) {
        size_t at = r * cols;
        strix_rms_norm_row_backward(grad_out + at, gamma, in + at, row_rms[r], grad_in + at,
                                    gamma_terms ? gamma_terms + at : NULL, cols);
    }
    return STRIX_OK;
}

strix_status cpu_attention_mask_fill(strix_backend *be, float *scores, const float *keep, size_t B,
                                     size_t H, size_t Lq, size_t Lk, bool causal, size_t q_off,
                                     size_t window, float value) {
    (void)be;
    size_t rows = B * H * Lq;
    CPU_PARALLEL_FOR_IF(rows > 1 && CPU_BIG(rows * Lk))
    for (size_t r = 0; r < rows; r++) {
        size_t b = r / (H * Lq), i = r % Lq;
        strix_attention_mask_row(scores + r * Lk, keep ? keep + b * Lk : NULL, i, Lk, causal,
                                 q_off, window, value);
    }
    return STRIX_OK;
}
