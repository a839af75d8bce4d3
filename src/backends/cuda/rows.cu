/*
 * rows.cu - CUDA/HIP launchers of the row slots: softmax (+backward), logsumexp, LayerNorm
 * forward and backward, causal attention softmax (+backward), softmax cross-entropy, RMSNorm
 * forward and backward, and attention score masks.
 *
 * Two kernels per reduction. By default a block per row (block_reduce.h): coalesced reads and a
 * fixed-tree sum, deterministic, the CPU's results to rounding; each element's formula is the one
 * of kernels/rows.h. With the init option gpu_exact_reductions, the exact reference: the CPU
 * loops of src/backends/cpu/rows.c with one GPU thread per row, each calling the same
 * kernels/rows.h function on its row, so every sum keeps the CPU's order (columns ascending from
 * 0.0f) and the CPU's bits. LayerNorm runs its group function with a count of 1 (the CPU's
 * groups of STRIX_LN_GROUP rows only interleave independent rows, so a row's bits are the
 * same). The masks reduce nothing: one kernel, one thread per row.
 */
#include "backends/cuda/block_reduce.h"
#include "backends/cuda/cuda_internal.h"
#include "kernels/rows.h"

/* Index of the calling thread in a 1-D launch of cuda_blocks(n) blocks of CUDA_BLOCK threads. */
static __device__ inline size_t lane_index(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

// ---- block per row (block_reduce.h) -----------------------------------------------------------

static __global__ void softmax_rows_block(const float *in, float *out, size_t rows, size_t cols) {
    __shared__ float buf[ROW_THREADS_MAX];
    for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE) {
        const float *x = in + r * cols;
        float *y = out + r * cols;
        float row_max = STRIX_NEG_INF;
        FOR_MY_ELEMENTS(j, cols) if (x[j] > row_max) row_max = x[j];
        row_max = block_max(row_max, buf);
        if (row_max == STRIX_NEG_INF) {
            FOR_MY_ELEMENTS(j, cols) y[j] = 0.0f;
            continue;
        }
        float part = 0.0f;
        FOR_MY_ELEMENTS(j, cols) {
            float e = strix_kernel_expf(x[j] - row_max);
            y[j] = e;
            part += e;
        }
        float total = block_sum(part, buf);
        FOR_MY_ELEMENTS(j, cols) y[j] = y[j] / total;
    }
}

static __global__ void softmax_rows_backward_block(const float *y, const float *dy, float *dx,
                                                   size_t rows, size_t cols) {
    __shared__ float buf[ROW_THREADS_MAX];
    for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE) {
        size_t at = r * cols;
        float part = 0.0f;
        FOR_MY_ELEMENTS(j, cols) part += y[at + j] * dy[at + j];
        float dot = block_sum(part, buf);
        FOR_MY_ELEMENTS(j, cols) dx[at + j] = y[at + j] * (dy[at + j] - dot);
    }
}

static __global__ void logsumexp_rows_block(const float *in, float *out, size_t rows,
                                            size_t cols) {
    __shared__ float buf[ROW_THREADS_MAX];
    for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE) {
        const float *x = in + r * cols;
        float row_max = STRIX_NEG_INF;
        FOR_MY_ELEMENTS(j, cols) if (x[j] > row_max) row_max = x[j];
        row_max = block_max(row_max, buf);
        if (isinf(row_max)) {
            if (threadIdx.x == 0) out[r] = row_max;
            continue;
        }
        float part = 0.0f;
        FOR_MY_ELEMENTS(j, cols) part += strix_kernel_expf(x[j] - row_max);
        float total = block_sum(part, buf);
        if (threadIdx.x == 0) out[r] = row_max + logf(total);
    }
}

static __global__ void layer_norm_forward_block(const float *in, const float *gamma,
                                                const float *beta, float *xhat, float *out,
                                                float *row_std, size_t rows, size_t cols,
                                                float eps) {
    __shared__ float buf[ROW_THREADS_MAX];
    for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE) {
        size_t at = r * cols;
        float mean, std;
        block_mean_std(in + at, cols, eps, buf, &mean, &std);
        if (threadIdx.x == 0) row_std[r] = std;
        FOR_MY_ELEMENTS(j, cols) {
            float normed = (in[at + j] - mean) / std;
            xhat[at + j] = normed;
            float scaled = gamma ? gamma[j] * normed : normed;
            out[at + j] = beta ? scaled + beta[j] : scaled;
        }
    }
}

static __global__ void layer_norm_backward_block(const float *grad_out, const float *gamma,
                                                 const float *xhat, const float *row_std,
                                                 float *grad_in, size_t rows, size_t cols) {
    __shared__ float buf[ROW_THREADS_MAX];
    float width = (float)cols;
    for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE) {
        size_t at = r * cols;
        float part_g = 0.0f, part_gx = 0.0f;
        FOR_MY_ELEMENTS(j, cols) {
            float g = gamma ? grad_out[at + j] * gamma[j] : grad_out[at + j];
            part_g += g;
            part_gx += g * xhat[at + j];
        }
        float sum_g = block_sum(part_g, buf), sum_g_xhat = block_sum(part_gx, buf);
        float denom = width * row_std[r];
        FOR_MY_ELEMENTS(j, cols) {
            float g = gamma ? grad_out[at + j] * gamma[j] : grad_out[at + j];
            grad_in[at + j] = (width * g - sum_g - xhat[at + j] * sum_g_xhat) / denom;
        }
    }
}

/* Row r of slices·T rows is query position r mod T of its (T, T) block. */
static __global__ void attn_softmax_causal_block(const float *scores, float *probs, size_t rows,
                                                 size_t T, float scale) {
    __shared__ float buf[ROW_THREADS_MAX];
    for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE) {
        const float *x = scores + r * T;
        float *p = probs + r * T;
        size_t visible = r % T + 1;
        float row_max = STRIX_NEG_INF;
        FOR_MY_ELEMENTS(j, visible) {
            float z = scale * x[j];
            if (z > row_max) row_max = z;
        }
        row_max = block_max(row_max, buf);
        if (row_max == STRIX_NEG_INF) {
            FOR_MY_ELEMENTS(j, T) p[j] = 0.0f;
            continue;
        }
        float part = 0.0f;
        FOR_MY_ELEMENTS(j, visible) {
            float e = strix_kernel_expf(scale * x[j] - row_max);
            p[j] = e;
            part += e;
        }
        float total = block_sum(part, buf);
        FOR_MY_ELEMENTS(j, T) p[j] = j < visible ? p[j] / total : 0.0f;
    }
}

static __global__ void attn_softmax_causal_backward_block(const float *probs,
                                                          const float *dprobs, float *dscores,
                                                          size_t rows, size_t T, float scale) {
    __shared__ float buf[ROW_THREADS_MAX];
    for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE) {
        size_t at = r * T, visible = r % T + 1;
        float part = 0.0f;
        FOR_MY_ELEMENTS(j, visible) part += probs[at + j] * dprobs[at + j];
        float dot = block_sum(part, buf);
        FOR_MY_ELEMENTS(j, T) {
            dscores[at + j] =
                j < visible ? scale * (probs[at + j] * (dprobs[at + j] - dot)) : 0.0f;
        }
    }
}

/* targets are device int32 (< 0: ignored row), in range as the CPU assumes. logits[target] is
 * read before the last reduction, so dlogits may alias logits. */
static __global__ void softmax_cross_entropy_block(const float *logits, const int32_t *targets,
                                                   float *losses, float *dlogits, size_t rows,
                                                   size_t V, float grad_scale) {
    __shared__ float buf[ROW_THREADS_MAX];
    for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE) {
        const float *x = logits + r * V;
        float *dx = dlogits ? dlogits + r * V : NULL;
        int32_t target = targets[r];
        float row_max = STRIX_NEG_INF;
        if (target >= 0) FOR_MY_ELEMENTS(j, V) if (x[j] > row_max) row_max = x[j];
        if (target >= 0) row_max = block_max(row_max, buf);
        if (target < 0 || row_max == STRIX_NEG_INF) {
            if (dx) FOR_MY_ELEMENTS(j, V) dx[j] = 0.0f;
            if (threadIdx.x == 0) losses[r] = target < 0 ? 0.0f : INFINITY;
            continue;
        }
        float picked = x[target], part = 0.0f;
        FOR_MY_ELEMENTS(j, V) part += strix_kernel_expf(x[j] - row_max);
        float total = block_sum(part, buf);
        if (threadIdx.x == 0) losses[r] = (row_max + logf(total)) - picked;
        if (dx) {
            FOR_MY_ELEMENTS(j, V) {
                float prob = strix_kernel_expf(x[j] - row_max) / total;
                float onehot = (size_t)target == j ? 1.0f : 0.0f;
                dx[j] = (prob - onehot) * grad_scale;
            }
        }
    }
}

static __global__ void rms_norm_forward_block(const float *in, const float *gamma, float *out,
                                              float *row_rms, size_t rows, size_t cols,
                                              float eps) {
    __shared__ float buf[ROW_THREADS_MAX];
    for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE) {
        size_t at = r * cols;
        float part = 0.0f;
        FOR_MY_ELEMENTS(j, cols) part += in[at + j] * in[at + j];
        float rms = sqrtf(block_sum(part, buf) / (float)cols + eps);
        if (threadIdx.x == 0) row_rms[r] = rms;
        FOR_MY_ELEMENTS(j, cols) {
            float normed = in[at + j] / rms;
            out[at + j] = gamma ? gamma[j] * normed : normed;
        }
    }
}

static __global__ void rms_norm_backward_block(const float *grad_out, const float *gamma,
                                               const float *in, const float *row_rms,
                                               float *grad_in, float *gamma_terms, size_t rows,
                                               size_t cols) {
    __shared__ float buf[ROW_THREADS_MAX];
    for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE) {
        size_t at = r * cols;
        float rms = row_rms[r], part = 0.0f;
        FOR_MY_ELEMENTS(j, cols) {
            float g = gamma ? grad_out[at + j] * gamma[j] : grad_out[at + j];
            part += g * in[at + j];
        }
        float c = block_sum(part, buf) / (float)cols / rms / rms / rms;
        FOR_MY_ELEMENTS(j, cols) {
            float go = grad_out[at + j], x = in[at + j];
            float g = gamma ? go * gamma[j] : go;
            if (gamma_terms) gamma_terms[at + j] = go * x / rms;
            grad_in[at + j] = g / rms - x * c;
        }
    }
}

/* Launches the block-per-row `kernel` over `rows` rows of `width` on the backend's stream and
 * returns the launch's status, naming `what`. */
#define ROW_BLOCK_LAUNCH(be, what, rows, width, kernel, ...)                                   \
    do {                                                                                       \
        kernel<<<row_grid(rows), row_threads(width), 0, cuda_stream(be)>>>(__VA_ARGS__);       \
        return cuda_launched(be, what);                                                        \
    } while (0)

// ---- one thread per row: the exact reference ---------------------------------------------------

static __global__ void softmax_rows_kernel(const float *in, float *out, size_t rows, size_t cols) {
    size_t r = lane_index();
    if (r < rows) strix_softmax_row(in + r * cols, out + r * cols, cols);
}

strix_status cuda_softmax_rows(strix_backend *be, const float *in, float *out, size_t rows,
                               size_t cols) {
    if (rows == 0) return STRIX_OK;
    if (!cuda_exact_reductions(be))
        ROW_BLOCK_LAUNCH(be, "softmax_rows", rows, cols, softmax_rows_block, in, out, rows, cols);
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
    if (!cuda_exact_reductions(be))
        ROW_BLOCK_LAUNCH(be, "softmax_rows_backward", rows, cols, softmax_rows_backward_block, y,
                         dy, dx, rows, cols);
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
    if (!cuda_exact_reductions(be))
        ROW_BLOCK_LAUNCH(be, "logsumexp_rows", rows, cols, logsumexp_rows_block, in, out, rows,
                         cols);
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
    if (!cuda_exact_reductions(be))
        ROW_BLOCK_LAUNCH(be, "layer_norm_forward", rows, cols, layer_norm_forward_block, in, gamma,
                         beta, xhat, out, row_std, rows, cols, eps);
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
    if (!cuda_exact_reductions(be))
        ROW_BLOCK_LAUNCH(be, "layer_norm_backward", rows, cols, layer_norm_backward_block,
                         grad_out, gamma, xhat, row_std, grad_in, rows, cols);
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
    if (!cuda_exact_reductions(be))
        ROW_BLOCK_LAUNCH(be, "attn_softmax_causal", rows, T, attn_softmax_causal_block, scores,
                         probs, rows, T, scale);
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
    if (!cuda_exact_reductions(be))
        ROW_BLOCK_LAUNCH(be, "attn_softmax_causal_backward", rows, T,
                         attn_softmax_causal_backward_block, probs, dprobs, dscores, rows, T,
                         scale);
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
    if (!cuda_exact_reductions(be))
        ROW_BLOCK_LAUNCH(be, "softmax_cross_entropy", rows, V, softmax_cross_entropy_block,
                         logits, targets, losses, dlogits, rows, V, grad_scale);
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
    if (!cuda_exact_reductions(be))
        ROW_BLOCK_LAUNCH(be, "rms_norm_forward", rows, cols, rms_norm_forward_block, in, gamma,
                         out, row_rms, rows, cols, eps);
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
    if (!cuda_exact_reductions(be))
        ROW_BLOCK_LAUNCH(be, "rms_norm_backward", rows, cols, rms_norm_backward_block, grad_out,
                         gamma, in, row_rms, grad_in, gamma_terms, rows, cols);
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
