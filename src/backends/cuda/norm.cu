/*
 * norm.cu - CUDA/HIP backend: BatchNorm (training, running statistics, eval) and GroupNorm
 * (include/strix/ops/cnn.h).
 *
 * One GPU thread per channel (BatchNorm) or per (example, group) block (GroupNorm) runs the
 * per-channel / per-block function of kernels/norm.h that the CPU loop runs, so every sum keeps
 * the documented 16-lane order and the results are the CPU's bits. Slow for large channels (one
 * thread walks n·spatial values) but exact; no atomics.
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/norm.h"

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

strix_status cuda_batch_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                     const float *beta, float *xhat, float *out,
                                     float *channel_std, size_t n, size_t c, size_t spatial,
                                     float eps) {
    NORM_LAUNCH(be, "batch_norm_forward", c, bn_forward_kernel, in, gamma, beta, xhat, out,
                channel_std, n, c, spatial, eps);
}

strix_status cuda_batch_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                      const float *xhat, const float *channel_std, float *grad_in,
                                      float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                      size_t spatial) {
    NORM_LAUNCH(be, "batch_norm_backward", c, bn_backward_kernel, grad_out, gamma, xhat,
                channel_std, grad_in, gamma_grad, beta_grad, n, c, spatial);
}

strix_status cuda_batch_norm_update_running(strix_backend *be, const float *in,
                                            float *running_mean, float *running_var, size_t n,
                                            size_t c, size_t spatial, float momentum) {
    NORM_LAUNCH(be, "batch_norm_update_running", c, bn_update_running_kernel, in, running_mean,
                running_var, n, c, spatial, momentum);
}

strix_status cuda_batch_norm_eval_forward(strix_backend *be, const float *in, const float *gamma,
                                          const float *beta, const float *running_mean,
                                          const float *running_var, float *xhat, float *out,
                                          float *channel_std, size_t n, size_t c, size_t spatial,
                                          float eps) {
    NORM_LAUNCH(be, "batch_norm_eval_forward", c, bn_eval_forward_kernel, in, gamma, beta,
                running_mean, running_var, xhat, out, channel_std, n, c, spatial, eps);
}

strix_status cuda_batch_norm_eval_backward(strix_backend *be, const float *grad_out,
                                           const float *gamma, const float *xhat,
                                           const float *channel_std, float *grad_in,
                                           float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                           size_t spatial) {
    NORM_LAUNCH(be, "batch_norm_eval_backward", c, bn_eval_backward_kernel, grad_out, gamma, xhat,
                channel_std, grad_in, gamma_grad, beta_grad, n, c, spatial);
}

strix_status cuda_group_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                     const float *beta, float *xhat, float *out, float *group_std,
                                     size_t n, size_t c, size_t spatial, size_t groups, float eps) {
    NORM_LAUNCH(be, "group_norm_forward", n * groups, gn_forward_kernel, in, gamma, beta, xhat,
                out, group_std, n * groups, groups, c / groups, spatial, eps);
}

strix_status cuda_group_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                      const float *xhat, const float *group_std, float *grad_in,
                                      float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                      size_t spatial, size_t groups) {
    if ((gamma_grad || beta_grad) && c > 0) { /* first: grad_in may alias grad_out */
        gn_param_grads_kernel<<<cuda_blocks(c), CUDA_BLOCK, 0, cuda_stream(be)>>>(
            grad_out, xhat, gamma_grad, beta_grad, n, c, spatial);
        STRIX_TRY(cuda_launched(be, "group_norm_backward (parameter grads)"));
    }
    NORM_LAUNCH(be, "group_norm_backward", n * groups, gn_backward_kernel, grad_out, gamma, xhat,
                group_std, grad_in, n * groups, groups, c / groups, spatial);
}
