/*
 * logic.cu - CUDA/HIP launchers of the fuzzy-logic primitives (t-norms, t-conorms, implications)
 * and the power-mean aggregator (include/strix/ops/logic.h); the math is src/kernels/logic.h, as in
 * src/backends/cpu/logic.c.
 *
 * One thread per element; the aggregator's forward runs one thread per column, summing the rows
 * ascending from 0.0f like the CPU. Powers are the device's powf (equal to rounding, not
 * necessarily to the bit, to the host's).
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/logic.h"

/* Global index of the calling thread (one lane each). */
static __device__ inline size_t logic_lane(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

// ---- kernels -----------------------------------------------------------------------------------

static __global__ void logic_pointwise_kernel(strix_logic_op op, strix_logic_norm norm,
                                              const float *a, const float *b,
                                              const float *g_or_r, const float *y, float *out_a,
                                              float *out_b, size_t n, float eps, bool forward,
                                              bool reads_y) {
    size_t i = logic_lane();
    if (i >= n) return;
    float ra = 0.0f, rb = 0.0f;
    strix_logic_element(op, norm, a[i], b[i], forward ? 0.0f : g_or_r[i], reads_y ? y[i] : 0.0f,
                        eps, &ra, &rb);
    out_a[i] = ra;
    if (!forward) out_b[i] = rb;
}

/* Lane = column j: mean_pow[j] = (Σ_i x[i][j]^p)/n, i ascending from 0.0f. */
static __global__ void aggregator_forward_kernel(const float *x, float *mean_pow, float *out,
                                                 size_t n, size_t cols, float p) {
    size_t j = logic_lane();
    if (j >= cols) return;
    float total = 0.0f;
    for (size_t i = 0; i < n; i++) total += strix_aggregator_pow(x[i * cols + j], p);
    float m = total / (float)n;
    mean_pow[j] = m;
    out[j] = strix_aggregator_out(m, p);
}

/* Lane (i, j) of (n, cols). */
static __global__ void aggregator_backward_kernel(const float *x, const float *mean_pow,
                                                  const float *grad_out, float *grad_in, size_t n,
                                                  size_t cols, float p) {
    size_t at = logic_lane();
    if (at >= n * cols) return;
    size_t j = at % cols;
    grad_in[at] = strix_aggregator_grad(x[at], mean_pow[j], grad_out[j], p, n);
}

/* Lane (i, j) of (n, cols). */
static __global__ void aggregator_lrp_kernel(const float *x, const float *mean_pow,
                                             const float *r_out, float *r_in, size_t n,
                                             size_t cols, float p, float eps) {
    size_t at = logic_lane();
    if (at >= n * cols) return;
    size_t j = at % cols;
    r_in[at] = strix_aggregator_relevance(x[at], mean_pow[j], r_out[j], p, n, eps);
}

// ---- launchers ---------------------------------------------------------------------------------

strix_status cuda_logic_pointwise(strix_backend *be, strix_logic_op op, strix_logic_norm norm,
                                  const float *a, const float *b, const float *g_or_r,
                                  const float *y, float *out_a, float *out_b, size_t n, float eps) {
    bool forward = strix_logic_is_forward(op), reads_y = strix_logic_reads_y(op, norm);
    if (n == 0) return STRIX_OK;
    logic_pointwise_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        op, norm, a, b, g_or_r, y, out_a, out_b, n, eps, forward, reads_y);
    return cuda_launched(be, "logic_pointwise");
}

strix_status cuda_aggregator_forward(strix_backend *be, const float *x, float *mean_pow,
                                     float *out, size_t n, size_t cols, float p) {
    if (cols == 0) return STRIX_OK;
    aggregator_forward_kernel<<<cuda_blocks(cols), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        x, mean_pow, out, n, cols, p);
    return cuda_launched(be, "aggregator_forward");
}

strix_status cuda_aggregator_backward(strix_backend *be, const float *x, const float *mean_pow,
                                      const float *grad_out, float *grad_in, size_t n, size_t cols,
                                      float p) {
    if (n * cols == 0) return STRIX_OK;
    aggregator_backward_kernel<<<cuda_blocks(n * cols), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        x, mean_pow, grad_out, grad_in, n, cols, p);
    return cuda_launched(be, "aggregator_backward");
}

strix_status cuda_aggregator_lrp(strix_backend *be, const float *x, const float *mean_pow,
                                 const float *r_out, float *r_in, size_t n, size_t cols, float p,
                                 float eps) {
    if (n * cols == 0) return STRIX_OK;
    aggregator_lrp_kernel<<<cuda_blocks(n * cols), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        x, mean_pow, r_out, r_in, n, cols, p, eps);
    return cuda_launched(be, "aggregator_lrp");
}
