/*
 * ops_cnn.c - the hand-written entry points of include/strix/ops/cnn.h: the convolution, pooling
 * and group-norm primitives with more checks than a dispatch (the others are generated from
 * src/core/primitives.def in src/core/ops_dispatch.c). No math here; the output-size helpers are in
 * src/core/backend_shared.c.
 */
#include "core/backend_impl.h"

strix_status strix_im2col(strix_backend *be, const float *in, float *col, size_t n, size_t c,
                          size_t h, size_t w, const strix_conv_geom *g) {
    STRIX_ASSERT(g->stride_h > 0 && g->stride_w > 0, "im2col: stride 0");
    STRIX_DISPATCH(be, im2col, in, col, n, c, h, w, g);
}

strix_status strix_col2im_add(strix_backend *be, const float *col, float *out, size_t n, size_t c,
                              size_t h, size_t w, const strix_conv_geom *g) {
    STRIX_ASSERT(g->stride_h > 0 && g->stride_w > 0, "col2im_add: stride 0");
    STRIX_DISPATCH(be, col2im_add, col, out, n, c, h, w, g);
}

strix_status strix_conv2d_forward(strix_backend *be, const float *in, const float *weight,
                                  const float *bias, float *z, float *out, size_t n, size_t c,
                                  size_t h, size_t w, size_t oc, const strix_conv_geom *g) {
    STRIX_ASSERT(g->stride_h > 0 && g->stride_w > 0, "conv2d_forward: stride 0");
    STRIX_DISPATCH(be, conv2d_forward, in, weight, bias, z, out, n, c, h, w, oc, g);
}

strix_status strix_conv2d_backward(strix_backend *be, const float *in, const float *weight,
                                   const float *dy, float *dweight, float *dbias, float *dx,
                                   size_t n, size_t c, size_t h, size_t w, size_t oc,
                                   const strix_conv_geom *g) {
    STRIX_ASSERT(g->stride_h > 0 && g->stride_w > 0, "conv2d_backward: stride 0");
    STRIX_DISPATCH(be, conv2d_backward, in, weight, dy, dweight, dbias, dx, n, c, h, w, oc, g);
}

strix_status strix_max_pool_forward(strix_backend *be, const float *in, float *out,
                                    int32_t *argmax, size_t planes, size_t h, size_t w,
                                    const strix_conv_geom *g) {
    STRIX_ASSERT(g->stride_h > 0 && g->stride_w > 0, "max_pool_forward: stride 0");
    STRIX_ASSERT(h * w <= (size_t)INT32_MAX, "max_pool_forward: plane of %zu pixels", h * w);
    STRIX_DISPATCH(be, max_pool_forward, in, out, argmax, planes, h, w, g);
}

strix_status strix_max_unpool(strix_backend *be, const float *src, const int32_t *argmax,
                              float *dst, size_t planes, size_t h, size_t w,
                              const strix_conv_geom *g) {
    STRIX_ASSERT(g->stride_h > 0 && g->stride_w > 0, "max_unpool: stride 0");
    STRIX_DISPATCH(be, max_unpool, src, argmax, dst, planes, h, w, g);
}

strix_status strix_avg_pool_forward(strix_backend *be, const float *in, float *out, size_t planes,
                                    size_t h, size_t w, const strix_conv_geom *g) {
    STRIX_ASSERT(g->stride_h > 0 && g->stride_w > 0, "avg_pool_forward: stride 0");
    STRIX_DISPATCH(be, avg_pool_forward, in, out, planes, h, w, g);
}

strix_status strix_avg_pool_backward(strix_backend *be, const float *grad_out, float *grad_in,
                                     size_t planes, size_t h, size_t w, const strix_conv_geom *g) {
    STRIX_ASSERT(g->stride_h > 0 && g->stride_w > 0, "avg_pool_backward: stride 0");
    STRIX_DISPATCH(be, avg_pool_backward, grad_out, grad_in, planes, h, w, g);
}

strix_status strix_group_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                      const float *beta, float *xhat, float *out, float *group_std,
                                      size_t n, size_t c, size_t spatial, size_t groups,
                                      float eps) {
    STRIX_ASSERT(groups > 0 && c % groups == 0, "group_norm_forward: %zu channels, %zu groups", c,
                 groups);
    STRIX_DISPATCH(be, group_norm_forward, in, gamma, beta, xhat, out, group_std, n, c, spatial,
                   groups, eps);
}

strix_status strix_group_norm_backward(strix_backend *be, const float *grad_out,
                                       const float *gamma, const float *xhat,
                                       const float *group_std, float *grad_in, float *gamma_grad,
                                       float *beta_grad, size_t n, size_t c, size_t spatial,
                                       size_t groups) {
    STRIX_ASSERT(groups > 0 && c % groups == 0, "group_norm_backward: %zu channels, %zu groups",
                 c, groups);
    STRIX_DISPATCH(be, group_norm_backward, grad_out, gamma, xhat, group_std, grad_in, gamma_grad,
                   beta_grad, n, c, spatial, groups);
}
