/*
 * pool.c - CPU backend: max pooling (+ the gather-form unpool) and average pooling (+ backward)
 * (include/strix/ops/cnn.h).
 *
 * The math is kernels/cnn.h (one output row per call forward, one image row per call for the
 * gathers). Max unpool over disjoint windows (stride >= kernel, the usual pool) runs per output
 * row instead: every pixel then gets at most one term, so the branch-free pair gather (2-wide
 * windows) or the scatter give the gather's bits. Threads split planes, and each output is
 * written by one thread, so results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/cnn.h"

/* A pool does ~4 times a copy's work per element (CPU_WORTH). */
#define MANY_PLANES(planes, work) ((planes) > 1 && CPU_WORTH(4 * (work)))

/* Operands of the pool loops over planes [p0, p1): planes of `in` (h, w) and `out` (oh, ow),
 * forward; the reverse for the backward and the unpool. */
typedef struct pool_args {
    const float *in;
    float *out;
    const int32_t *arg_in;
    int32_t *arg_out;
    size_t h, w, oh, ow, x_lo, x_hi;
    bool pairs, disjoint; /* max unpool */
    const strix_conv_geom *g;
} pool_args;

static void max_pool_range(void *args, size_t p0, size_t p1) {
    const pool_args *a = args;
    const strix_conv_geom *g = a->g;
    size_t h = a->h, w = a->w, oh = a->oh, ow = a->ow, x_lo = a->x_lo, x_hi = a->x_hi;
    for (size_t p = p0; p < p1; p++) {
        const float *src = a->in + p * h * w;
        float *dst = a->out + p * oh * ow;
        int32_t *arg = a->arg_out + p * oh * ow;
        for (size_t oy = 0; oy < oh; oy++)
            strix_max_pool_row(src, dst + oy * ow, arg + oy * ow, oy, h, w, ow, x_lo, x_hi, g);
    }
}

strix_status cpu_max_pool_forward(strix_backend *be, const float *in, float *out, int32_t *argmax,
                                  size_t planes, size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w), x_lo, x_hi;
    strix_max_pool_inner_cols(w, ow, g, &x_lo, &x_hi);
    pool_args a = {.in = in, .out = out, .arg_out = argmax, .h = h, .w = w, .oh = oh, .ow = ow,
                   .x_lo = x_lo, .x_hi = x_hi, .g = g};
    cpu_parallel_for(planes, MANY_PLANES(planes, planes * oh * ow * g->kh * g->kw), max_pool_range,
                     &a);
    return STRIX_OK;
}

static void max_unpool_range(void *args, size_t p0, size_t p1) {
    const pool_args *a = args;
    const strix_conv_geom *g = a->g;
    size_t h = a->h, w = a->w, oh = a->oh, ow = a->ow;
    bool pairs = a->pairs, disjoint = a->disjoint;
    for (size_t p = p0; p < p1; p++) {
        const float *s = a->in + p * oh * ow;
        const int32_t *arg = a->arg_in + p * oh * ow;
        float *d = a->out + p * h * w;
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
}

strix_status cpu_max_unpool(strix_backend *be, const float *src, const int32_t *argmax, float *dst,
                            size_t planes, size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    /* disjoint windows: every pixel gets at most one term, and the scatter gives the same bits;
     * 2-wide windows tiling the rows take the vectorised pairs */
    bool disjoint = g->stride_h >= g->kh && g->stride_w >= g->kw;
    bool pairs = disjoint && g->kw == 2 && g->stride_w == 2 && g->pad_w == 0;
    pool_args a = {.in = src, .out = dst, .arg_in = argmax, .h = h, .w = w, .oh = oh, .ow = ow,
                   .pairs = pairs, .disjoint = disjoint, .g = g};
    cpu_parallel_for(planes, MANY_PLANES(planes, planes * h * w), max_unpool_range, &a);
    return STRIX_OK;
}

static void avg_pool_range(void *args, size_t p0, size_t p1) {
    const pool_args *a = args;
    const strix_conv_geom *g = a->g;
    size_t h = a->h, w = a->w, oh = a->oh, ow = a->ow;
    for (size_t p = p0; p < p1; p++) {
        const float *src = a->in + p * h * w;
        float *dst = a->out + p * oh * ow;
        for (size_t oy = 0; oy < oh; oy++)
            for (size_t ox = 0; ox < ow; ox++)
                dst[oy * ow + ox] = strix_avg_pool_at(src, oy, ox, h, w, g);
    }
}

strix_status cpu_avg_pool_forward(strix_backend *be, const float *in, float *out, size_t planes,
                                  size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    pool_args a = {.in = in, .out = out, .h = h, .w = w, .oh = oh, .ow = ow, .g = g};
    cpu_parallel_for(planes, MANY_PLANES(planes, planes * oh * ow * g->kh * g->kw), avg_pool_range,
                     &a);
    return STRIX_OK;
}

static void avg_pool_backward_range(void *args, size_t p0, size_t p1) {
    const pool_args *a = args;
    const strix_conv_geom *g = a->g;
    size_t h = a->h, w = a->w, oh = a->oh, ow = a->ow;
    for (size_t p = p0; p < p1; p++) {
        const float *go = a->in + p * oh * ow;
        float *gi = a->out + p * h * w;
        for (size_t y = 0; y < h; y++) strix_avg_pool_backward_row(go, gi + y * w, y, w, oh, ow, g);
    }
}

strix_status cpu_avg_pool_backward(strix_backend *be, const float *grad_out, float *grad_in,
                                   size_t planes, size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    pool_args a = {.in = grad_out, .out = grad_in, .h = h, .w = w, .oh = oh, .ow = ow, .g = g};
    cpu_parallel_for(planes, MANY_PLANES(planes, planes * h * w * g->kh * g->kw),
                     avg_pool_backward_range, &a);
    return STRIX_OK;
}
