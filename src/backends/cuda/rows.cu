/*
 * rows.cu - CUDA/HIP launchers of the row slots: softmax (+backward), logsumexp, LayerNorm
 * forward and backward, causal attention softmax (+backward), softmax cross-entropy, RMSNorm
 * forward and backward, and attention score masks.
 *
 * The CPU loops of src/backends/cpu/rows.c with one GPU thread per row, each calling the same
 * kernels/rows.h function on its row, so every sum keeps the CPU's order (columns ascending from
 * 0.0f). LayerNorm runs its group function with a count of 1 (the CPU's groups of STRIX_LN_GROUP
 * rows only interleave independent rows, so a row's bits are the same).
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/rows.h"

/* Index of the calling thread in a 1-D launch of cuda_blocks(n) blocks of CUDA_BLOCK threads. */
static __device__ inline size_t lane_index(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

static __global__ void softmax_rows_kernel(const float *in, float *out, size_t rows, size_t cols) {
    size_t r = lane_index();
    if (r < rows) strix_softmax_row(in + r * cols, out + r * cols, cols);
}

strix_status cuda_softmax_rows(strix_backend *be, const float *in, float *out, size_t rows,
                               size_t cols) {
    if (rows == 0) return STRIX_OK;
    softmax_rows_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, out, rows,
                                                                               cols);
    return cuda_launched(be, "softmax_rows");
}

static __global__ void softmax_rows_backward_kernel(const float *y, const float *dy, float *dx,
                                                    size_t rows, size_t cols) {
    size_t r = lane_index();
    if (r < rows) strix_softmax_row_backward(y + r * cols, dy + r * cols, dx + r * cols, cols);
}

strix_status cuda_softmax_rows_backward(strix_backend *be, const float *y, const float *dy,
                                        float *dx, size_t rows, size_t cols) {
    if (rows == 0) return STRIX_OK;
    softmax_rows_backward_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        y, dy, dx, rows, cols);
    return cuda_launched(be, "softmax_rows_backward");
}

static __global__ void logsumexp_rows_kernel(const float *in, float *out, size_t rows,
                                             size_t cols) {
    size_t r = lane_index();
    if (r < rows) out[r] = strix_logsumexp_row(in + r * cols, cols);
}

strix_status cuda_logsumexp_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                 size_t cols) {
    if (rows == 0) return STRIX_OK;
    logsumexp_rows_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, out, rows,
                                                                                 cols);
    return cuda_launched(be, "logsumexp_rows");
}

// ---- LayerNorm ---------------------------------------------------------------------------------

static __global__ void layer_norm_forward_kernel(const float *in, const float *gamma,
                                                 const float *beta, float *xhat, float *out,
                                                 float *row_std, size_t rows, size_t cols,
                                                 float eps) {
    size_t r = lane_index();
    if (r >= rows) return;
    size_t at = r * cols;
    strix_layer_norm_rows_forward(in + at, gamma, beta, xhat + at, out + at, row_std + r, 1, cols,
                                  eps);
}

strix_status cuda_layer_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                     const float *beta, float *xhat, float *out, float *row_std,
                                     size_t rows, size_t cols, float eps) {
    if (rows == 0) return STRIX_OK;
    layer_norm_forward_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        in, gamma, beta, xhat, out, row_std, rows, cols, eps);
    return cuda_launched(be, "layer_norm_forward");
}

static __global__ void layer_norm_backward_kernel(const float *grad_out, const float *gamma,
                                                  const float *xhat, const float *row_std,
                                                  float *grad_in, size_t rows, size_t cols) {
    size_t r = lane_index();
    if (r >= rows) return;
    size_t at = r * cols;
    strix_layer_norm_rows_backward(grad_out + at, gamma, xhat + at, row_std + r, grad_in + at, 1,
                                   cols);
}

strix_status cuda_layer_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                      const float *xhat, const float *row_std, float *grad_in,
                                      size_t rows, size_t cols) {
    if (rows == 0) return STRIX_OK;
    layer_norm_backward_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        grad_out, gamma, xhat, row_std, grad_in, rows, cols);
    return cuda_launched(be, "layer_norm_backward");
}

// ---- fused attention softmax and cross-entropy -------------------------------------------------

/* Row r of slices·T rows is query position r mod T of its (T, T) block. */
static __global__ void attn_softmax_causal_kernel(const float *scores, float *probs, size_t rows,
                                                  size_t T, float scale) {
    size_t r = lane_index();
    if (r < rows) strix_attn_causal_row_forward(scores + r * T, probs + r * T, r % T, T, scale);
}

strix_status cuda_attn_softmax_causal(strix_backend *be, const float *scores, float *probs,
                                      size_t slices, size_t T, float scale) {
    size_t rows = slices * T;
    if (rows == 0) return STRIX_OK;
    attn_softmax_causal_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        scores, probs, rows, T, scale);
    return cuda_launched(be, "attn_softmax_causal");
}

static __global__ void attn_softmax_causal_backward_kernel(const float *probs,
                                                           const float *dprobs, float *dscores,
                                                           size_t rows, size_t T, float scale) {
    size_t r = lane_index();
    if (r < rows) {
        strix_attn_causal_row_backward(probs + r * T, dprobs + r * T, dscores + r * T, r % T, T,
                                       scale);
    }
}

strix_status cuda_attn_softmax_causal_backward(strix_backend *be, const float *probs,
                                               const float *dprobs, float *dscores, size_t slices,
                                               size_t T, float scale) {
    size_t rows = slices * T;
    if (rows == 0) return STRIX_OK;
    attn_softmax_causal_backward_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        probs, dprobs, dscores, rows, T, scale);
    return cuda_launched(be, "attn_softmax_causal_backward");
}

/* targets are device int32 (< 0: ignored row), in range as the CPU assumes. */
static __global__ void softmax_cross_entropy_kernel(const float *logits, const int32_t *targets,
                                                    float *losses, float *dlogits, size_t rows,
                                                    size_t V, float grad_scale) {
    size_t r = lane_index();
    if (r >= rows) return;
    losses[r] = strix_cross_entropy_row(logits + r * V, targets[r],
                                        dlogits ? dlogits + r * V : NULL, V, grad_scale);
}

strix_status cuda_softmax_cross_entropy(strix_backend *be, const float *logits,
                                        const int32_t *targets, float *losses, float *dlogits,
                                        size_t rows, size_t V, float grad_scale) {
    if (rows == 0) return STRIX_OK;
    softmax_cross_entropy_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        logits, targets, losses, dlogits, rows, V, grad_scale);
    return cuda_launched(be, "softmax_cross_entropy");
}

// ---- RMSNorm and attention masks ---------------------------------------------------------------

static __global__ void rms_norm_forward_kernel(const float *in, const float *gamma, float *out,
                                               float *row_rms, size_t rows, size_t cols,
                                               float eps) {
    size_t r = lane_index();
    if (r < rows)
        row_rms[r] = strix_rms_norm_row_forward(in + r * cols, gamma, out + r * cols, cols, eps);
}

strix_status cuda_rms_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                   float *out, float *row_rms, size_t rows, size_t cols,
                                   float eps) {
    if (rows == 0) return STRIX_OK;
    rms_norm_forward_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        in, gamma, out, row_rms, rows, cols, eps);
    return cuda_launched(be, "rms_norm_forward");
}

static __global__ void rms_norm_backward_kernel(const float *grad_out, const float *gamma,
                                                const float *in, const float *row_rms,
                                                float *grad_in, float *gamma_terms, size_t rows,
                                                size_t cols) {
    size_t r = lane_index();
    if (r >= rows) return;
    size_t at = r * cols;
    strix_rms_norm_row_backward(grad_out + at, gamma, in + at, row_rms[r], grad_in + at,
                                gamma_terms ? gamma_terms + at : NULL, cols);
}

strix_status cuda_rms_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                    const float *in, const float *row_rms, float *grad_in,
                                    float *gamma_terms, size_t rows, size_t cols) {
    if (rows == 0) return STRIX_OK;
    rms_norm_backward_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        grad_out, gamma, in, row_rms, grad_in, gamma_terms, rows, cols);
    return cuda_launched(be, "rms_norm_backward");
}

/* Row r of the (B, H, Lq) rows: batch b = r / (H·Lq), query i = r mod Lq. */
static __global__ void attention_mask_fill_kernel(float *scores, const float *keep, size_t rows,
                                                  size_t H, size_t Lq, size_t Lk, bool causal,
                                                  size_t q_off, size_t window, float value) {
    size_t r = lane_index();
    if (r >= rows) return;
    size_t b = r / (H * Lq), i = r % Lq;
    strix_attention_mask_row(scores + r * Lk, keep ? keep + b * Lk : NULL, i, Lk, causal, q_off,
                             window, value);
}

strix_status cuda_attention_mask_fill(strix_backend *be, float *scores, const float *keep,
                                      size_t B, size_t H, size_t Lq, size_t Lk, bool causal,
                                      size_t q_off, size_t window, float value) {
    size_t rows = B * H * Lq;
    if (rows == 0 || Lk == 0) return STRIX_OK;
    attention_mask_fill_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        scores, keep, rows, H, Lq, Lk, causal, q_off, window, value);
    return cuda_launched(be, "attention_mask_fill");
}
