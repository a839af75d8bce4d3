/*
 * conv.c - CPU backend: im2col, col2im_add and add_channel_vector (include/strix/ops/cnn.h).
 *
 * The math is kernels/cnn.h; here OpenMP splits independent outputs only: im2col by rows of col,
 * col2im by image rows (each row owns its pixels and adds their taps in the documented order),
 * add_channel_vector by (example, channel) rows. Results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/cnn.h"

strix_status cpu_im2col(strix_backend *be, const float *in, float *col, size_t n, size_t c,
                        size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    STRIX_ASSERT(g->stride_h > 0 && g->stride_w > 0, "im2col: stride 0");
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    size_t taps = g->kh * g->kw, rows = n * c * taps; /* rows of col: (example, channel, tap) */
    if (oh == 0 || ow == 0) return STRIX_OK;
    CPU_PARALLEL_FOR_IF(rows > 1 && CPU_BIG(rows * oh * ow))
    for (size_t r = 0; r < rows; r++) {
        size_t plane = r / taps, tap = r % taps;
        const float *src = in + plane * h * w;
        float *dst = col + r * oh * ow;
        for (size_t oy = 0; oy < oh; oy++)
            strix_im2col_row(src, dst + oy * ow, tap / g->kw, tap % g->kw, oy, h, w, ow, g);
    }
    return STRIX_OK;
}

strix_status cpu_col2im_add(strix_backend *be, const float *col, float *out, size_t n, size_t c,
                            size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    STRIX_ASSERT(g->stride_h > 0 && g->stride_w > 0, "col2im_add: stride 0");
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    size_t rows = n * c * h; /* image rows: (example, channel, y) */
    if (oh == 0 || ow == 0) return STRIX_OK;
    CPU_PARALLEL_FOR_IF(rows > 1 && CPU_BIG(rows * w * g->kh * g->kw))
    for (size_t r = 0; r < rows; r++) {
        size_t plane = r / h, y = r % h;
        strix_col2im_row(col + plane * g->kh * g->kw * oh * ow, out + r * w, y, w, oh, ow, g);
    }
    return STRIX_OK;
}

strix_status cpu_add_channel_vector(strix_backend *be, const float *in, const float *vec,
                                    float *out, size_t n, size_t c, size_t inner) {
    (void)be;
    size_t rows = n * c;
    CPU_PARALLEL_FOR_IF(rows > 1 && CPU_BIG(rows * inner))
    for (size_t r = 0; r < rows; r++) {
        float v = vec[r % c];
        const float *x = in + r * inner;
        float *y = out + r * inner;
        for (size_t k = 0; k < inner; k++) y[k] = x[k] + v;
    }
    return STRIX_OK;
}
