/*
 * norm.c - CPU backend: BatchNorm (training, running statistics, eval) and GroupNorm
 * (include/strix/ops/cnn.h).
 *
 * The math and the summation order are kernels/norm.h. The worker pool splits channels
 * (BatchNorm) or (example, group) blocks (GroupNorm); every sum stays inside one item in its
 * documented order, so results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/norm.h"

#define MANY(units, work) ((units) > 1 && CPU_BIG(work))

/* Operands of the forward passes: per-channel (BatchNorm) or per-block (GroupNorm) stds. */
typedef struct norm_forward_args {
    const float *in, *gamma, *beta, *running_mean, *running_var;
    float *xhat, *out, *stds;
    size_t n, c, spatial, groups;
    float eps;
} norm_forward_args;

/* Operands of the backward passes (and of GroupNorm's parameter gradients). */
typedef struct norm_backward_args {
    const float *grad_out, *gamma, *xhat, *stds;
    float *grad_in, *gamma_grad, *beta_grad;
    size_t n, c, spatial, groups;
} norm_backward_args;

CPU_CLONES static void bn_forward_range(void *args, size_t ch0, size_t ch1) {
    const norm_forward_args *f = args;
    const float *in = f->in, *gamma = f->gamma, *beta = f->beta;
    float *xhat = f->xhat, *out = f->out, *channel_std = f->stds, eps = f->eps;
    size_t n = f->n, c = f->c, spatial = f->spatial;
    for (size_t ch = ch0; ch < ch1; ch++)
        strix_bn_channel_forward(in, gamma, beta, xhat, out, &channel_std[ch], n, c, spatial, ch,
                                 eps);
}

strix_status cpu_batch_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                    const float *beta, float *xhat, float *out, float *channel_std,
                                    size_t n, size_t c, size_t spatial, float eps) {
    (void)be;
    norm_forward_args f = {.in = in, .gamma = gamma, .beta = beta, .xhat = xhat, .out = out,
                           .stds = channel_std, .n = n, .c = c, .spatial = spatial, .eps = eps};
    cpu_parallel_for(c, MANY(c, 3 * n * c * spatial), bn_forward_range, &f);
    return STRIX_OK;
}

CPU_CLONES static void bn_backward_range(void *args, size_t ch0, size_t ch1) {
    const norm_backward_args *g = args;
    const float *grad_out = g->grad_out, *gamma = g->gamma, *xhat = g->xhat;
    const float *channel_std = g->stds;
    float *grad_in = g->grad_in, *gamma_grad = g->gamma_grad, *beta_grad = g->beta_grad;
    size_t n = g->n, c = g->c, spatial = g->spatial;
    for (size_t ch = ch0; ch < ch1; ch++)
        strix_bn_channel_backward(grad_out, gamma, xhat, channel_std[ch], grad_in, gamma_grad,
                                  beta_grad, n, c, spatial, ch);
}

strix_status cpu_batch_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                     const float *xhat, const float *channel_std, float *grad_in,
                                     float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                     size_t spatial) {
    (void)be;
    norm_backward_args g = {grad_out, gamma, xhat, channel_std, grad_in, gamma_grad, beta_grad,
                            n, c, spatial, 0};
    cpu_parallel_for(c, MANY(c, 2 * n * c * spatial), bn_backward_range, &g);
    return STRIX_OK;
}

typedef struct bn_running_args {
    const float *in;
    float *running_mean, *running_var;
    size_t n, c, spatial;
    float momentum;
} bn_running_args;

CPU_CLONES static void bn_update_running_range(void *args, size_t ch0, size_t ch1) {
    const bn_running_args *u = args;
    const float *in = u->in;
    float *running_mean = u->running_mean, *running_var = u->running_var;
    size_t n = u->n, c = u->c, spatial = u->spatial;
    float momentum = u->momentum;
    for (size_t ch = ch0; ch < ch1; ch++)
        strix_bn_channel_update_running(in, running_mean, running_var, n, c, spatial, ch,
                                        momentum);
}

strix_status cpu_batch_norm_update_running(strix_backend *be, const float *in, float *running_mean,
                                           float *running_var, size_t n, size_t c, size_t spatial,
                                           float momentum) {
    (void)be;
    bn_running_args u = {in, running_mean, running_var, n, c, spatial, momentum};
    cpu_parallel_for(c, MANY(c, 2 * n * c * spatial), bn_update_running_range, &u);
    return STRIX_OK;
}

CPU_CLONES static void bn_eval_forward_range(void *args, size_t ch0, size_t ch1) {
    const norm_forward_args *f = args;
    const float *in = f->in, *gamma = f->gamma, *beta = f->beta;
    const float *running_mean = f->running_mean, *running_var = f->running_var;
    float *xhat = f->xhat, *out = f->out, *channel_std = f->stds, eps = f->eps;
    size_t n = f->n, c = f->c, spatial = f->spatial;
    for (size_t ch = ch0; ch < ch1; ch++)
        strix_bn_channel_eval_forward(in, gamma, beta, running_mean[ch], running_var[ch], xhat,
                                      out, &channel_std[ch], n, c, spatial, ch, eps);
}

strix_status cpu_batch_norm_eval_forward(strix_backend *be, const float *in, const float *gamma,
                                         const float *beta, const float *running_mean,
                                         const float *running_var, float *xhat, float *out,
                                         float *channel_std, size_t n, size_t c, size_t spatial,
                                         float eps) {
    (void)be;
    norm_forward_args f = {in, gamma, beta, running_mean, running_var, xhat, out, channel_std,
                           n, c, spatial, 0, eps};
    cpu_parallel_for(c, MANY(c, n * c * spatial), bn_eval_forward_range, &f);
    return STRIX_OK;
}

CPU_CLONES static void bn_eval_backward_range(void *args, size_t ch0, size_t ch1) {
    const norm_backward_args *g = args;
    const float *grad_out = g->grad_out, *gamma = g->gamma, *xhat = g->xhat;
    const float *channel_std = g->stds;
    float *grad_in = g->grad_in, *gamma_grad = g->gamma_grad, *beta_grad = g->beta_grad;
    size_t n = g->n, c = g->c, spatial = g->spatial;
    for (size_t ch = ch0; ch < ch1; ch++)
        strix_bn_channel_eval_backward(grad_out, gamma, xhat, channel_std[ch], grad_in,
                                       gamma_grad, beta_grad, n, c, spatial, ch);
}

strix_status cpu_batch_norm_eval_backward(strix_backend *be, const float *grad_out,
                                          const float *gamma, const float *xhat,
                                          const float *channel_std, float *grad_in,
                                          float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                          size_t spatial) {
    (void)be;
    norm_backward_args g = {grad_out, gamma, xhat, channel_std, grad_in, gamma_grad, beta_grad,
                            n, c, spatial, 0};
    cpu_parallel_for(c, MANY(c, 2 * n * c * spatial), bn_eval_backward_range, &g);
    return STRIX_OK;
}

/* (example, group) blocks [b0, b1) of the GroupNorm forward. */
CPU_CLONES static void gn_forward_range(void *args, size_t b0, size_t b1) {
    const norm_forward_args *f = args;
    const float *in = f->in, *gamma = f->gamma, *beta = f->beta;
    float *xhat = f->xhat, *out = f->out, *group_std = f->stds, eps = f->eps;
    size_t groups = f->groups, spatial = f->spatial, cg = f->c / groups, size = cg * spatial;
    for (size_t b = b0; b < b1; b++) {
        size_t at = b * size, ch0 = (b % groups) * cg;
        group_std[b] = strix_gn_block_forward(in + at, gamma ? gamma + ch0 : NULL,
                                              beta ? beta + ch0 : NULL, xhat + at, out + at, cg,
                                              spatial, eps);
    }
}

strix_status cpu_group_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                    const float *beta, float *xhat, float *out, float *group_std,
                                    size_t n, size_t c, size_t spatial, size_t groups, float eps) {
    (void)be;
    size_t blocks = n * groups;
    norm_forward_args f = {.in = in, .gamma = gamma, .beta = beta, .xhat = xhat, .out = out,
                           .stds = group_std, .n = n, .c = c, .spatial = spatial,
                           .groups = groups, .eps = eps};
    cpu_parallel_for(blocks, MANY(blocks, 3 * n * c * spatial), gn_forward_range, &f);
    return STRIX_OK;
}

CPU_CLONES static void gn_param_grads_range(void *args, size_t ch0, size_t ch1) {
    const norm_backward_args *g = args;
    const float *grad_out = g->grad_out, *xhat = g->xhat;
    float *gamma_grad = g->gamma_grad, *beta_grad = g->beta_grad;
    size_t n = g->n, c = g->c, spatial = g->spatial;
    for (size_t ch = ch0; ch < ch1; ch++)
        strix_gn_channel_param_grads(grad_out, xhat, gamma_grad, beta_grad, n, c, spatial, ch);
}

/* (example, group) blocks [b0, b1) of the GroupNorm input gradient. */
CPU_CLONES static void gn_backward_range(void *args, size_t b0, size_t b1) {
    const norm_backward_args *g = args;
    const float *grad_out = g->grad_out, *gamma = g->gamma, *xhat = g->xhat;
    const float *group_std = g->stds;
    float *grad_in = g->grad_in;
    size_t groups = g->groups, spatial = g->spatial, cg = g->c / groups, size = cg * spatial;
    for (size_t b = b0; b < b1; b++) {
        size_t at = b * size, ch0 = (b % groups) * cg;
        strix_gn_block_backward(grad_out + at, gamma ? gamma + ch0 : NULL, xhat + at,
                                group_std[b], grad_in + at, cg, spatial);
    }
}

strix_status cpu_group_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                     const float *xhat, const float *group_std, float *grad_in,
                                     float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                     size_t spatial, size_t groups) {
    (void)be;
    size_t blocks = n * groups;
    norm_backward_args g = {grad_out, gamma, xhat, group_std, grad_in, gamma_grad, beta_grad,
                            n, c, spatial, groups};
    if (gamma_grad || beta_grad) /* first: grad_in may alias grad_out */
        cpu_parallel_for(c, MANY(c, n * c * spatial), gn_param_grads_range, &g);
    cpu_parallel_for(blocks, MANY(blocks, 2 * n * c * spatial), gn_backward_range, &g);
    return STRIX_OK;
}
