/*
 * norm.c - CPU backend: BatchNorm (training, running statistics, eval) and GroupNorm
 * (include/strix/ops/cnn.h).
 *
 * The math and the summation order are kernels/norm.h. OpenMP splits channels (BatchNorm) or
 * (example, group) blocks (GroupNorm); every sum stays inside one thread in its documented
 * order, so results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/norm.h"

#define MANY(units, work) ((units) > 1 && CPU_BIG(work))

strix_status cpu_batch_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                    const float *beta, float *xhat, float *out, float *channel_std,
                                    size_t n, size_t c, size_t spatial, float eps) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY(c, 3 * n * c * spatial))
    for (size_t ch = 0; ch < c; ch++)
        strix_bn_channel_forward(in, gamma, beta, xhat, out, &channel_std[ch], n, c, spatial, ch,
                                 eps);
    return STRIX_OK;
}

strix_status cpu_batch_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                     const float *xhat, const float *channel_std, float *grad_in,
                                     float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                     size_t spatial) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY(c, 2 * n * c * spatial))
    for (size_t ch = 0; ch < c; ch++)
        strix_bn_channel_backward(grad_out, gamma, xhat, channel_std[ch], grad_in, gamma_grad,
                                  beta_grad, n, c, spatial, ch);
    return STRIX_OK;
}

strix_status cpu_batch_norm_update_running(strix_backend *be, const float *in, float *running_mean,
                                           float *running_var, size_t n, size_t c, size_t spatial,
                                           float momentum) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY(c, 2 * n * c * spatial))
    for (size_t ch = 0; ch < c; ch++)
        strix_bn_channel_update_running(in, running_mean, running_var, n, c, spatial, ch,
                                        momentum);
    return STRIX_OK;
}

strix_status cpu_batch_norm_eval_forward(strix_backend *be, const float *in, const float *gamma,
                                         const float *beta, const float *running_mean,
                                         const float *running_var, float *xhat, float *out,
                                         float *channel_std, size_t n, size_t c, size_t spatial,
                                         float eps) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY(c, n * c * spatial))
    for (size_t ch = 0; ch < c; ch++)
        strix_bn_channel_eval_forward(in, gamma, beta, running_mean[ch], running_var[ch], xhat,
                                      out, &channel_std[ch], n, c, spatial, ch, eps);
    return STRIX_OK;
}

strix_status cpu_batch_norm_eval_backward(strix_backend *be, const float *grad_out,
                                          const float *gamma, const float *xhat,
                                          const float *channel_std, float *grad_in,
                                          float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                          size_t spatial) {
    (void)be;
    CPU_PARALLEL_FOR_IF(MANY(c, 2 * n * c * spatial))
    for (size_t ch = 0; ch < c; ch++)
        strix_bn_channel_eval_backward(grad_out, gamma, xhat, channel_std[ch], grad_in,
                                       gamma_grad, beta_grad, n, c, spatial, ch);
    return STRIX_OK;
}

strix_status cpu_group_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                    const float *beta, float *xhat, float *out, float *group_std,
                                    size_t n, size_t c, size_t spatial, size_t groups, float eps) {
    (void)be;
    size_t cg = c / groups, blocks = n * groups, size = cg * spatial;
    CPU_PARALLEL_FOR_IF(MANY(blocks, 3 * n * c * spatial))
    for (size_t b = 0; b < blocks; b++) {
        size_t at = b * size, ch0 = (b % groups) * cg;
        group_std[b] = strix_gn_block_forward(in + at, gamma ? gamma + ch0 : NULL,
                                              beta ? beta + ch0 : NULL, xhat + at, out + at, cg,
                                              spatial, eps);
    }
    return STRIX_OK;
}

strix_status cpu_group_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                     const float *xhat, const float *group_std, float *grad_in,
                                     float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                     size_t spatial, size_t groups) {
    (void)be;
    size_t cg = c / groups, blocks = n * groups, size = cg * spatial;
    if (gamma_grad || beta_grad) { /* first: grad_in may alias grad_out */
        CPU_PARALLEL_FOR_IF(MANY(c, n * c * spatial))
        for (size_t ch = 0; ch < c; ch++)
            strix_gn_channel_param_grads(grad_out, xhat, gamma_grad, beta_grad, n, c, spatial, ch);
    }
    CPU_PARALLEL_FOR_IF(MANY(blocks, 2 * n * c * spatial))
    for (size_t b = 0; b < blocks; b++) {
        size_t at = b * size, ch0 = (b % groups) * cg;
        strix_gn_block_backward(grad_out + at, gamma ? gamma + ch0 : NULL, xhat + at,
                                group_std[b], grad_in + at, cg, spatial);
    }
    return STRIX_OK;
}
