/*
 * pool.c - CPU backend: max pooling (+ the gather-form unpool) and average pooling (+ backward)
 * (include/strix/ops/cnn.h).
 *
 * The math is kernels/cnn.h (one output row per call forward, one image row per call for the
 * gathers). Max unpool over disjoint windows (stride >= kernel, the usual pool) runs per output
 * row instead: every pixel then gets at most one term, so the branch-free pair gather (2-wide
 * windows) or the scatter give the gather's bits. OpenMP splits planes, and each output is
 * written by one thread, so results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/cnn.h"

/* A pool does ~4 times a copy's work per element (CPU_WORTH). */
#define MANY_PLANES(planes, work) ((planes) > 1 && CPU_WORTH(4 * (work)))

strix_status cpu_max_pool_forward(strix_backend *be, const float *in, float *out, int32_t *argmax,
                                  size_t planes, size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w), x_lo, x_hi;
    strix_max_pool_inner_cols(w, ow, g, &x_lo, &x_hi);
    CPU_PARALLEL_FOR_IF(MANY_PLANES(planes, planes * oh * ow * g->kh * g->kw))
    for (size_t p = 0; p < planes; p++) {
        const float *src = in + p * h * w;
        float *dst = out + p * oh * ow;
        int32_t *arg = argmax + p * oh * ow;
        for (size_t oy = 0; oy < oh; oy++)
            strix_max_pool_row(src, dst + oy * ow, arg + oy * ow, oy, h, w, ow, x_lo, x_hi, g);
    }
    return STRIX_OK;
}

strix_status cpu_max_unpool(strix_backend *be, const float *src, const int32_t *argmax, float *dst,
                            size_t planes, size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    /* disjoint windows: every pixel gets at most one term, and the scatter gives the same bits;
     * 2-wide windows tiling the rows take the vectorised pairs */
    bool disjoint = g->stride_h >= g->kh && g->stride_w >= g->kw;
    bool pairs = disjoint && g->kw == 2 && g->stride_w == 2 && g->pad_w == 0;
    CPU_PARALLEL_FOR_IF(MANY_PLANES(planes, planes * h * w))
    for (size_t p = 0; p < planes; p++) {
        const float *s = src + p * oh * ow;
        const int32_t *arg = argmax + p * oh * ow;
        float *d = dst + p * h * w;
        if (pairs) {
            for (size_t oy = 0; oy < oh; oy++)
                strix_max_unpool_pairs_row(s, arg, d, oy, h, w, ow, g);
        } else if (disjoint) {
            for (size_t oy = 0; oy < oh; oy++)
                strix_max_unpool_scatter_row(s, arg, d, oy, h, w, ow, g);
        } else {
            for (size_t y = 0; y < h; y++)
                strix_max_unpool_row(s, arg, d + y * w, y, w, oh, ow, g);
        }
    }
    return STRIX_OK;
}

strix_status cpu_avg_pool_forward(strix_backend *be, const float *in, float *out, size_t planes,
                                  size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    CPU_PARALLEL_FOR_IF(MANY_PLANES(planes, planes * oh * ow * g->kh * g->kw))
    for (size_t p = 0; p < planes; p++) {
        const float *src = in + p * h * w;
        float *dst = out + p * oh * ow;
        for (size_t oy = 0; oy < oh; oy++)
            for (size_t ox = 0; ox < ow; ox++)
                dst[oy * ow + ox] = strix_avg_pool_at(src, oy, ox, h, w, g);
    }
    return STRIX_OK;
}

strix_status cpu_avg_pool_backward(strix_backend *be, const float *grad_out, float *grad_in,
                                   size_t planes, size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    CPU_PARALLEL_FOR_IF(MANY_PLANES(planes, planes * h * w * g->kh * g->kw))
    for (size_t p = 0; p < planes; p++) {
        const float *go = grad_out + p * oh * ow;
        float *gi = grad_in + p * h * w;
        for (size_t y = 0; y < h; y++) strix_avg_pool_backward_row(go, gi + y * w, y, w, oh, ow, g);
    }
    return STRIX_OK;
}
