/*
 * norm.cu - CUDA/HIP backend: BatchNorm (training, running statistics, eval) and GroupNorm
 * (include/strix/ops/cnn.h).
 *
 * By default a block per channel (BatchNorm, GroupNorm's parameter grads) or per (example,
 * group) (GroupNorm) with the fixed-tree sums of block_reduce.h: deterministic, the CPU's results
 * to rounding, each element's formula the one of kernels/norm.h. With the init option
 * gpu_exact_reductions, one GPU thread per channel or (example, group) runs the function of
 * kernels/norm.h that the CPU loop runs, so every sum keeps the documented 16-lane order and the
 * results are the CPU's bits: slow for large channels (one thread walks n·spatial values) but
 * exact. No atomics.
 */
#include "backends/cuda/block_reduce.h"
#include "backends/cuda/cuda_internal.h"
#include "kernels/norm.h"

// ---- a block per channel (block_reduce.h) ------------------------------------------------------

/* Element k of channel ch's n·spatial values: example k / spatial, position k mod spatial. */
static __device__ inline size_t bn_at(size_t k, size_t c, size_t spatial, size_t ch) {
    return (k / spatial * c + ch) * spatial + k % spatial;
}

/* xhat = (x − mean)/std and out = gam·xhat (+ bet) over channel ch (kernels/norm.h's
 * strix_norm_row_apply per element). */
static __device__ inline void bn_apply(const float *in, const float *gamma, const float *beta,
                                       float *xhat, float *out, size_t count, size_t c,
                                       size_t spatial, size_t ch, float mean, float std) {
    float gam = gamma ? gamma[ch] : 1.0f, bet = beta ? beta[ch] : 0.0f;
    FOR_MY_ELEMENTS(k, count) {
        size_t at = bn_at(k, c, spatial, ch);
        float normed = (in[at] - mean) / std;
        float scaled = gamma ? gam * normed : normed;
        xhat[at] = normed;
        out[at] = beta ? scaled + bet : scaled;
    }
}

static __global__ void bn_forward_block(const float *in, const float *gamma, const float *beta,
                                        float *xhat, float *out, float *channel_std, size_t n,
                                        size_t c, size_t spatial, float eps) {
    __shared__ float buf[ROW_THREADS_MAX];
    size_t count = n * spatial;
    for (size_t ch = ROW_FIRST; ch < c; ch += ROW_STRIDE) {
        float part = 0.0f;
        FOR_MY_ELEMENTS(k, count) part += in[bn_at(k, c, spatial, ch)];
        float mean = block_sum(part, buf) / (float)count;
        part = 0.0f;
        FOR_MY_ELEMENTS(k, count) {
            float d = in[bn_at(k, c, spatial, ch)] - mean;
            part += d * d;
        }
        float std = sqrtf(block_sum(part, buf) / (float)count + eps);
        if (threadIdx.x == 0) channel_std[ch] = std;
        bn_apply(in, gamma, beta, xhat, out, count, c, spatial, ch, mean, std);
    }
}

/* The parameter sums Σ go·xhat (gamma_grad) and Σ go (beta_grad) of channel ch; with gam, also
 * sum_g = Σ go·gam and sum_gx = Σ go·gam·xhat (NULL: not needed). Every thread gets them. */
static __device__ inline void bn_grad_sums(const float *grad_out, const float *xhat, float gam,
                                           size_t count, size_t c, size_t spatial, size_t ch,
                                           float *buf, float *sum_g, float *sum_gx, float *sum_o,
                                           float *sum_ox) {
    float sg = 0.0f, sgx = 0.0f, so = 0.0f, sox = 0.0f;
    FOR_MY_ELEMENTS(k, count) {
        size_t at = bn_at(k, c, spatial, ch);
        float d = grad_out[at], xh = xhat[at], g = d * gam;
        sg += g;
        sgx += g * xh;
        so += d;
        sox += d * xh;
    }
    if (sum_g) *sum_g = block_sum(sg, buf);
    if (sum_gx) *sum_gx = block_sum(sgx, buf);
    *sum_o = block_sum(so, buf);
    *sum_ox = block_sum(sox, buf);
}

static __global__ void bn_backward_block(const float *grad_out, const float *gamma,
                                         const float *xhat, const float *channel_std,
                                         float *grad_in, float *gamma_grad, float *beta_grad,
                                         size_t n, size_t c, size_t spatial) {
    __shared__ float buf[ROW_THREADS_MAX];
    size_t count = n * spatial;
    float width = (float)count;
    for (size_t ch = ROW_FIRST; ch < c; ch += ROW_STRIDE) {
        float gam = gamma ? gamma[ch] : 1.0f, sum_g, sum_gx, sum_o, sum_ox;
        bn_grad_sums(grad_out, xhat, gam, count, c, spatial, ch, buf, &sum_g, &sum_gx, &sum_o,
                     &sum_ox);
        if (threadIdx.x == 0 && gamma_grad) gamma_grad[ch] = sum_ox;
        if (threadIdx.x == 0 && beta_grad) beta_grad[ch] = sum_o;
        float denom = width * channel_std[ch];
        FOR_MY_ELEMENTS(k, count) {
            size_t at = bn_at(k, c, spatial, ch);
            float g = grad_out[at] * gam;
            grad_in[at] = (width * g - sum_g - xhat[at] * sum_gx) / denom;
        }
    }
}

static __global__ void bn_update_running_block(const float *in, float *running_mean,
                                               float *running_var, size_t n, size_t c,
                                               size_t spatial, float momentum) {
    __shared__ float buf[ROW_THREADS_MAX];
    size_t count = n * spatial;
    if (count == 0) return;
    float keep = 1.0f - momentum;
    for (size_t ch = ROW_FIRST; ch < c; ch += ROW_STRIDE) {
        float part = 0.0f;
        FOR_MY_ELEMENTS(k, count) part += in[bn_at(k, c, spatial, ch)];
        float mean = block_sum(part, buf) / (float)count;
        if (threadIdx.x == 0) running_mean[ch] = keep * running_mean[ch] + momentum * mean;
        if (count < 2) continue;
        part = 0.0f;
        FOR_MY_ELEMENTS(k, count) {
            float d = in[bn_at(k, c, spatial, ch)] - mean;
            part += d * d;
        }
        float var = block_sum(part, buf) / (float)(count - 1);
        if (threadIdx.x == 0) running_var[ch] = keep * running_var[ch] + momentum * var;
    }
}

static __global__ void bn_eval_forward_block(const float *in, const float *gamma,
                                             const float *beta, const float *running_mean,
                                             const float *running_var, float *xhat, float *out,
                                             float *channel_std, size_t n, size_t c,
                                             size_t spatial, float eps) {
    size_t count = n * spatial;
    for (size_t ch = ROW_FIRST; ch < c; ch += ROW_STRIDE) {
        float mean = running_mean[ch], std = sqrtf(running_var[ch] + eps);
        if (threadIdx.x == 0) channel_std[ch] = std;
        bn_apply(in, gamma, beta, xhat, out, count, c, spatial, ch, mean, std);
    }
}

static __global__ void bn_eval_backward_block(const float *grad_out, const float *gamma,
                                              const float *xhat, const float *channel_std,
                                              float *grad_in, float *gamma_grad,
                                              float *beta_grad, size_t n, size_t c,
                                              size_t spatial) {
    __shared__ float buf[ROW_THREADS_MAX];
    size_t count = n * spatial;
    for (size_t ch = ROW_FIRST; ch < c; ch += ROW_STRIDE) {
        float gam = gamma ? gamma[ch] : 1.0f, std = channel_std[ch];
        if (gamma_grad || beta_grad) {
            float sum_o, sum_ox;
            bn_grad_sums(grad_out, xhat, gam, count, c, spatial, ch, buf, NULL, NULL, &sum_o,
                         &sum_ox);
            if (threadIdx.x == 0 && gamma_grad) gamma_grad[ch] = sum_ox;
            if (threadIdx.x == 0 && beta_grad) beta_grad[ch] = sum_o;
        }
        FOR_MY_ELEMENTS(k, count) {
            size_t at = bn_at(k, c, spatial, ch);
            grad_in[at] = grad_out[at] * gam / std;
        }
    }
}

/* GroupNorm block b of n·groups: D = cg·spatial contiguous values, channel ch0 + j / spatial. */
static __global__ void gn_forward_block(const float *in, const float *gamma, const float *beta,
                                        float *xhat, float *out, float *group_std, size_t blocks,
                                        size_t groups, size_t cg, size_t spatial, float eps) {
    __shared__ float buf[ROW_THREADS_MAX];
    size_t count = cg * spatial;
    for (size_t b = ROW_FIRST; b < blocks; b += ROW_STRIDE) {
        size_t at = b * count, ch0 = (b % groups) * cg;
        float mean, std;
        block_mean_std(in + at, count, eps, buf, &mean, &std);
        if (threadIdx.x == 0) group_std[b] = std;
        FOR_MY_ELEMENTS(j, count) {
            size_t ch = ch0 + j / spatial;
            float normed = (in[at + j] - mean) / std;
            float scaled = gamma ? gamma[ch] * normed : normed;
            xhat[at + j] = normed;
            out[at + j] = beta ? scaled + beta[ch] : scaled;
        }
    }
}

static __global__ void gn_backward_block(const float *grad_out, const float *gamma,
                                         const float *xhat, const float *group_std,
                                         float *grad_in, size_t blocks, size_t groups, size_t cg,
                                         size_t spatial) {
    __shared__ float buf[ROW_THREADS_MAX];
    size_t count = cg * spatial;
    float width = (float)count;
    for (size_t b = ROW_FIRST; b < blocks; b += ROW_STRIDE) {
        size_t at = b * count, ch0 = (b % groups) * cg;
        float sg = 0.0f, sgx = 0.0f;
        FOR_MY_ELEMENTS(j, count) {
            float g = grad_out[at + j] * (gamma ? gamma[ch0 + j / spatial] : 1.0f);
            sg += g;
            sgx += g * xhat[at + j];
        }
        float sum_g = block_sum(sg, buf), sum_gx = block_sum(sgx, buf);
        float denom = width * group_std[b];
        FOR_MY_ELEMENTS(j, count) {
            float g = grad_out[at + j] * (gamma ? gamma[ch0 + j / spatial] : 1.0f);
            grad_in[at + j] = (width * g - sum_g - xhat[at + j] * sum_gx) / denom;
        }
    }
}

/* GroupNorm's parameter grads: BatchNorm's channel sums Σ go·xhat and Σ go. */
static __global__ void gn_param_grads_block(const float *grad_out, const float *xhat,
                                            float *gamma_grad, float *beta_grad, size_t n,
                                            size_t c, size_t spatial) {
    __shared__ float buf[ROW_THREADS_MAX];
    size_t count = n * spatial;
    for (size_t ch = ROW_FIRST; ch < c; ch += ROW_STRIDE) {
        float sum_o, sum_ox;
        bn_grad_sums(grad_out, xhat, 1.0f, count, c, spatial, ch, buf, NULL, NULL, &sum_o,
                     &sum_ox);
        if (threadIdx.x == 0 && gamma_grad) gamma_grad[ch] = sum_ox;
        if (threadIdx.x == 0 && beta_grad) beta_grad[ch] = sum_o;
    }
}

// ---- one thread per channel: the exact reference -----------------------------------------------

/* The index of this thread's lane of a one-thread-per-lane launch. */
#define LANE() ((size_t)blockIdx.x * blockDim.x + threadIdx.x)

static __global__ void bn_forward_kernel(const float *in, const float *gamma, const float *beta,
                                         float *xhat, float *out, float *channel_std, size_t n,
                                         size_t c, size_t spatial, float eps) {
    size_t ch = LANE();
    if (ch >= c) return;
    strix_bn_channel_forward(in, gamma, beta, xhat, out, &channel_std[ch], n, c, spatial, ch, eps);
}

static __global__ void bn_backward_kernel(const float *grad_out, const float *gamma,
                                          const float *xhat, const float *channel_std,
                                          float *grad_in, float *gamma_grad, float *beta_grad,
                                          size_t n, size_t c, size_t spatial) {
    size_t ch = LANE();
    if (ch >= c) return;
    strix_bn_channel_backward(grad_out, gamma, xhat, channel_std[ch], grad_in, gamma_grad,
                              beta_grad, n, c, spatial, ch);
}

static __global__ void bn_update_running_kernel(const float *in, float *running_mean,
                                                float *running_var, size_t n, size_t c,
                                                size_t spatial, float momentum) {
    size_t ch = LANE();
    if (ch >= c) return;
    strix_bn_channel_update_running(in, running_mean, running_var, n, c, spatial, ch, momentum);
}

static __global__ void bn_eval_forward_kernel(const float *in, const float *gamma,
                                              const float *beta, const float *running_mean,
                                              const float *running_var, float *xhat, float *out,
                                              float *channel_std, size_t n, size_t c,
                                              size_t spatial, float eps) {
    size_t ch = LANE();
    if (ch >= c) return;
    strix_bn_channel_eval_forward(in, gamma, beta, running_mean[ch], running_var[ch], xhat, out,
                                  &channel_std[ch], n, c, spatial, ch, eps);
}

static __global__ void bn_eval_backward_kernel(const float *grad_out, const float *gamma,
                                               const float *xhat, const float *channel_std,
                                               float *grad_in, float *gamma_grad, float *beta_grad,
                                               size_t n, size_t c, size_t spatial) {
    size_t ch = LANE();
    if (ch >= c) return;
    strix_bn_channel_eval_backward(grad_out, gamma, xhat, channel_std[ch], grad_in, gamma_grad,
                                   beta_grad, n, c, spatial, ch);
}

static __global__ void gn_forward_kernel(const float *in, const float *gamma, const float *beta,
                                         float *xhat, float *out, float *group_std, size_t blocks,
                                         size_t groups, size_t cg, size_t spatial, float eps) {
    size_t b = LANE();
    if (b >= blocks) return;
    size_t at = b * cg * spatial, ch0 = (b % groups) * cg;
    group_std[b] = strix_gn_block_forward(in + at, gamma ? gamma + ch0 : NULL,
                                          beta ? beta + ch0 : NULL, xhat + at, out + at, cg,
                                          spatial, eps);
}

static __global__ void gn_param_grads_kernel(const float *grad_out, const float *xhat,
                                             float *gamma_grad, float *beta_grad, size_t n,
                                             size_t c, size_t spatial) {
    size_t ch = LANE();
    if (ch >= c) return;
    strix_gn_channel_param_grads(grad_out, xhat, gamma_grad, beta_grad, n, c, spatial, ch);
}

static __global__ void gn_backward_kernel(const float *grad_out, const float *gamma,
                                          const float *xhat, const float *group_std, float *grad_in,
                                          size_t blocks, size_t groups, size_t cg, size_t spatial) {
    size_t b = LANE();
    if (b >= blocks) return;
    size_t at = b * cg * spatial, ch0 = (b % groups) * cg;
    strix_gn_block_backward(grad_out + at, gamma ? gamma + ch0 : NULL, xhat + at, group_std[b],
                            grad_in + at, cg, spatial);
}

/* Launches `kernel` over `lanes` threads on the backend's stream (nothing for 0 lanes) and
 * returns the launch's status, naming `what`. */
#define NORM_LAUNCH(be, what, lanes, kernel, ...)                                              \
    do {                                                                                       \
        size_t norm_lanes_ = (lanes);                                                          \
        if (norm_lanes_ == 0) return STRIX_OK;                                                 \
        kernel<<<cuda_blocks(norm_lanes_), CUDA_BLOCK, 0, cuda_stream(be)>>>(__VA_ARGS__);     \
        return cuda_launched(be, what);                                                        \
    } while (0)

/* The block form of NORM_LAUNCH: `blocks` channels or groups of `width` values each, a block of
 * row_threads(width) threads apiece, unless the backend asks for exact reductions (then it
 * returns nothing and the caller goes on to NORM_LAUNCH). */
#define NORM_BLOCK_LAUNCH(be, what, blocks, width, kernel, ...)                                \
    do {                                                                                       \
        size_t norm_blocks_ = (blocks);                                                        \
        if (norm_blocks_ == 0) return STRIX_OK;                                                \
        if (!cuda_exact_reductions(be)) {                                                      \
            kernel<<<row_grid(norm_blocks_), row_threads(width), 0, cuda_stream(be)>>>(        \
                __VA_ARGS__);                                                                  \
            return cuda_launched(be, what);                                                    \
        }                                                                                      \
    } while (0)

strix_status cuda_batch_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                     const float *beta, float *xhat, float *out,
                                     float *channel_std, size_t n, size_t c, size_t spatial,
                                     float eps) {
    NORM_BLOCK_LAUNCH(be, "batch_norm_forward", c, n * spatial, bn_forward_block, in, gamma,
                      beta, xhat, out, channel_std, n, c, spatial, eps);
    NORM_LAUNCH(be, "batch_norm_forward", c, bn_forward_kernel, in, gamma, beta, xhat, out,
                channel_std, n, c, spatial, eps);
}

strix_status cuda_batch_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                      const float *xhat, const float *channel_std, float *grad_in,
                                      float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                      size_t spatial) {
    NORM_BLOCK_LAUNCH(be, "batch_norm_backward", c, n * spatial, bn_backward_block, grad_out,
                      gamma, xhat, channel_std, grad_in, gamma_grad, beta_grad, n, c, spatial);
    NORM_LAUNCH(be, "batch_norm_backward", c, bn_backward_kernel, grad_out, gamma, xhat,
                channel_std, grad_in, gamma_grad, beta_grad, n, c, spatial);
}

strix_status cuda_batch_norm_update_running(strix_backend *be, const float *in,
                                            float *running_mean, float *running_var, size_t n,
                                            size_t c, size_t spatial, float momentum) {
    NORM_BLOCK_LAUNCH(be, "batch_norm_update_running", c, n * spatial, bn_update_running_block,
                      in, running_mean, running_var, n, c, spatial, momentum);
    NORM_LAUNCH(be, "batch_norm_update_running", c, bn_update_running_kernel, in, running_mean,
                running_var, n, c, spatial, momentum);
}

strix_status cuda_batch_norm_eval_forward(strix_backend *be, const float *in, const float *gamma,
                                          const float *beta, const float *running_mean,
                                          const float *running_var, float *xhat, float *out,
                                          float *channel_std, size_t n, size_t c, size_t spatial,
                                          float eps) {
    NORM_BLOCK_LAUNCH(be, "batch_norm_eval_forward", c, n * spatial, bn_eval_forward_block, in,
                      gamma, beta, running_mean, running_var, xhat, out, channel_std, n, c,
                      spatial, eps);
    NORM_LAUNCH(be, "batch_norm_eval_forward", c, bn_eval_forward_kernel, in, gamma, beta,
                running_mean, running_var, xhat, out, channel_std, n, c, spatial, eps);
}

strix_status cuda_batch_norm_eval_backward(strix_backend *be, const float *grad_out,
                                           const float *gamma, const float *xhat,
                                           const float *channel_std, float *grad_in,
                                           float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                           size_t spatial) {
    NORM_BLOCK_LAUNCH(be, "batch_norm_eval_backward", c, n * spatial, bn_eval_backward_block,
                      grad_out, gamma, xhat, channel_std, grad_in, gamma_grad, beta_grad, n, c,
                      spatial);
    NORM_LAUNCH(be, "batch_norm_eval_backward", c, bn_eval_backward_kernel, grad_out, gamma, xhat,
                channel_std, grad_in, gamma_grad, beta_grad, n, c, spatial);
}

strix_status cuda_group_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                     const float *beta, float *xhat, float *out, float *group_std,
                                     size_t n, size_t c, size_t spatial, size_t groups, float eps) {
    NORM_BLOCK_LAUNCH(be, "group_norm_forward", n * groups, c / groups * spatial,
                      gn_forward_block, in, gamma, beta, xhat, out, group_std, n * groups, groups,
                      c / groups, spatial, eps);
    NORM_LAUNCH(be, "group_norm_forward", n * groups, gn_forward_kernel, in, gamma, beta, xhat,
                out, group_std, n * groups, groups, c / groups, spatial, eps);
}

strix_status cuda_group_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                      const float *xhat, const float *group_std, float *grad_in,
                                      float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                      size_t spatial, size_t groups) {
    if ((gamma_grad || beta_grad) && c > 0) { /* first: grad_in may alias grad_out */
        if (cuda_exact_reductions(be))
            gn_param_grads_kernel<<<cuda_blocks(c), CUDA_BLOCK, 0, cuda_stream(be)>>>(
                grad_out, xhat, gamma_grad, beta_grad, n, c, spatial);
        else
            gn_param_grads_block<<<row_grid(c), row_threads(n * spatial), 0, cuda_stream(be)>>>(
                grad_out, xhat, gamma_grad, beta_grad, n, c, spatial);
        STRIX_TRY(cuda_launched(be, "group_norm_backward (parameter grads)"));
    }
    NORM_BLOCK_LAUNCH(be, "group_norm_backward", n * groups, c / groups * spatial,
                      gn_backward_block, grad_out, gamma, xhat, group_std, grad_in, n * groups,
                      groups, c / groups, spatial);
    NORM_LAUNCH(be, "group_norm_backward", n * groups, gn_backward_kernel, grad_out, gamma, xhat,
                group_std, grad_in, n * groups, groups, c / groups, spatial);
}
