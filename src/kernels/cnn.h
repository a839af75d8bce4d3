/*
 * kernels/cnn.h - per-row and per-pixel math of im2col/col2im and of max/average pooling
 * (include/strix/ops/cnn.h, spec/backend-semantics.md §1.1 "CNN").
 *
 * Each function handles one lane: a row of col (im2col), a row or one pixel of an image plane
 * (col2im, pool backward gathers) or one pooled output. Gathers read their pixel's value from
 * the destination, add the taps in the documented order and store once, so a row function and a
 * pixel function give the same bits. Geometry (strix_conv_geom) has strides >= 1; the window of
 * output oy covers input rows oy·sh − ph .. oy·sh − ph + kh − 1 (likewise for columns). No
 * allocation, no libc beyond math.h.
 */
#ifndef STRIX_KERNELS_CNN_H
#define STRIX_KERNELS_CNN_H

#include "kernels/common.h"
#include "strix/ops/cnn.h"

/* Outputs [*lo, *hi) along one axis whose window covers input coordinate y: the o < on with
 * o·stride − pad <= y <= o·stride − pad + k − 1 (empty: *lo == *hi). */
STRIX_HD static inline void strix_cnn_windows_over(size_t y, size_t k, size_t stride, size_t pad,
                                                   size_t on, size_t *lo, size_t *hi) {
    size_t top = y + pad; /* o·stride <= top and o·stride >= top − k + 1 */
    size_t first = top + 1 >= k ? (top + 1 - k + stride - 1) / stride : 0;
    size_t last = top / stride + 1;
    if (last > on) last = on;
    *lo = first;
    *hi = first < last ? last : first;
}

/* Outputs [*lo, *hi) along one axis whose tap `t` (0..k) lands inside the image [0, len):
 * 0 <= o·stride − pad + t < len. */
STRIX_HD static inline void strix_cnn_taps_inside(size_t t, size_t stride, size_t pad, size_t len,
                                                  size_t on, size_t *lo, size_t *hi) {
    size_t first = t >= pad ? 0 : (pad - t + stride - 1) / stride;
    size_t last = len + pad > t ? (len + pad - t - 1) / stride + 1 : 0;
    if (last > on) last = on;
    *lo = first;
    *hi = first < last ? last : first;
}

/* Taps [*lo, *hi) of the window of output o along one axis that land inside the image [0, len):
 * 0 <= o·stride − pad + t < len, t < k. */
STRIX_HD static inline void strix_cnn_window_taps(size_t o, size_t k, size_t stride, size_t pad,
                                                  size_t len, size_t *lo, size_t *hi) {
    size_t start = o * stride; /* padded coordinate of tap 0 */
    size_t first = pad > start ? pad - start : 0;
    size_t last = len + pad > start ? len + pad - start : 0;
    if (last > k) last = k;
    *lo = first;
    *hi = first < last ? last : first;
}

// ---- im2col / col2im ---------------------------------------------------------------------------

/* One row of im2col: dst[ox] (ox < ow) = plane[oy·sh − ph + i][ox·sw − pw + j], 0 outside the
 * (h, w) plane. Bit-exact copy. */
STRIX_HD static inline void strix_im2col_row(const float *plane, float *dst, size_t i, size_t j,
                                             size_t oy, size_t h, size_t w, size_t ow,
                                             const strix_conv_geom *g) {
    size_t iy = oy * g->stride_h + i; /* + ph */
    if (iy < g->pad_h || iy - g->pad_h >= h) {
        for (size_t ox = 0; ox < ow; ox++) dst[ox] = 0.0f;
        return;
    }
    const float *row = plane + (iy - g->pad_h) * w;
    size_t lo, hi;
    strix_cnn_taps_inside(j, g->stride_w, g->pad_w, w, ow, &lo, &hi);
    for (size_t ox = 0; ox < lo; ox++) dst[ox] = 0.0f;
    if (g->stride_w == 1) {
        const float *src = row + (lo + j - g->pad_w);
        for (size_t t = 0; t < hi - lo; t++) dst[lo + t] = src[t];
    } else {
        for (size_t ox = lo; ox < hi; ox++) dst[ox] = row[ox * g->stride_w + j - g->pad_w];
    }
    for (size_t ox = hi; ox < ow; ox++) dst[ox] = 0.0f;
}

/* One pixel of col2im_add: acc = out[y][x]; then, for kernel row i descending and column j
 * descending, acc += col of tap (i, j) at the output whose window puts that tap on (y, x) (taps
 * that fall between strides or outside the output are skipped); returns acc. col_ch points at
 * the kh·kw rows (each oh·ow long) of this pixel's channel. */
STRIX_HD static inline float strix_col2im_pixel(const float *col_ch, float acc, size_t y, size_t x,
                                                size_t oh, size_t ow, const strix_conv_geom *g) {
    size_t ty = y + g->pad_h, tx = x + g->pad_w;
    for (size_t i = g->kh; i-- > 0;) {
        if (ty < i || (ty - i) % g->stride_h != 0) continue;
        size_t oy = (ty - i) / g->stride_h;
        if (oy >= oh) continue;
        for (size_t j = g->kw; j-- > 0;) {
            if (tx < j || (tx - j) % g->stride_w != 0) continue;
            size_t ox = (tx - j) / g->stride_w;
            if (ox >= ow) continue;
            acc += col_ch[(i * g->kw + j) * oh * ow + oy * ow + ox];
        }
    }
    return acc;
}

/* Row y of one (h, w) plane of col2im_add, in place in out_row (w floats): every pixel gets
 * exactly the additions of strix_col2im_pixel, in the same order (taps i descending, then j
 * descending), so the bits agree; the loop over x runs innermost and is contiguous at stride 1. */
STRIX_HD static inline void strix_col2im_row(const float *col_ch, float *out_row, size_t y,
                                             size_t w, size_t oh, size_t ow,
                                             const strix_conv_geom *g) {
    size_t ty = y + g->pad_h, sw = g->stride_w;
    for (size_t i = g->kh; i-- > 0;) {
        if (ty < i || (ty - i) % g->stride_h != 0) continue;
        size_t oy = (ty - i) / g->stride_h;
        if (oy >= oh) continue;
        for (size_t j = g->kw; j-- > 0;) {
            const float *src = col_ch + (i * g->kw + j) * oh * ow + oy * ow;
            size_t lo, hi; /* outputs ox whose tap j lands on a pixel x = ox·sw − pw + j */
            strix_cnn_taps_inside(j, sw, g->pad_w, w, ow, &lo, &hi);
            if (lo >= hi) continue;
            float *dst = out_row + (lo * sw + j - g->pad_w);
            if (sw == 1) {
                for (size_t t = 0; t < hi - lo; t++) dst[t] += src[lo + t];
            } else {
                for (size_t t = 0; t < hi - lo; t++) dst[t * sw] += src[lo + t];
            }
        }
    }
}

// ---- pooling -----------------------------------------------------------------------------------

/* Max over the window of output (oy, ox) of one (h, w) plane: rows then columns ascending, strict
 * > from -inf (first maximum wins; NaN, -inf and padding taps never win). *arg = y·w + x of the
 * winner, -1 if none (the result is then -inf). */
STRIX_HD static inline float strix_max_pool_at(const float *plane, int32_t *arg, size_t oy,
                                               size_t ox, size_t h, size_t w,
                                               const strix_conv_geom *g) {
    float best = STRIX_NEG_INF;
    int32_t where = -1;
    size_t i_lo, i_hi, j_lo, j_hi;
    strix_cnn_window_taps(oy, g->kh, g->stride_h, g->pad_h, h, &i_lo, &i_hi);
    strix_cnn_window_taps(ox, g->kw, g->stride_w, g->pad_w, w, &j_lo, &j_hi);
    for (size_t i = i_lo; i < i_hi; i++) {
        size_t at = (oy * g->stride_h + i - g->pad_h) * w + ox * g->stride_w - g->pad_w;
        for (size_t j = j_lo; j < j_hi; j++) {
            float v = plane[at + j];
            if (v > best) {
                best = v;
                where = (int32_t)(at + j);
            }
        }
    }
    *arg = where;
    return best;
}

/* Max-unpool gather for pixel (y, x) of one plane: acc = dst value passed in; acc += src[o] for
 * every output o (ascending) whose window covers the pixel and whose argmax is y·w + x. */
STRIX_HD static inline float strix_max_unpool_pixel(const float *src, const int32_t *argmax,
                                                    float acc, size_t y, size_t x, size_t w,
                                                    size_t oh, size_t ow,
                                                    const strix_conv_geom *g) {
    size_t y_lo, y_hi, x_lo, x_hi;
    strix_cnn_windows_over(y, g->kh, g->stride_h, g->pad_h, oh, &y_lo, &y_hi);
    strix_cnn_windows_over(x, g->kw, g->stride_w, g->pad_w, ow, &x_lo, &x_hi);
    int32_t me = (int32_t)(y * w + x);
    for (size_t oy = y_lo; oy < y_hi; oy++)
        for (size_t ox = x_lo; ox < x_hi; ox++)
            if (argmax[oy * ow + ox] == me) acc += src[oy * ow + ox];
    return acc;
}

/* Row y of one plane of max_unpool, in place in dst_row (w floats): every pixel gets exactly the
 * additions of strix_max_unpool_pixel in the same order (outputs ascending). */
STRIX_HD static inline void strix_max_unpool_row(const float *src, const int32_t *argmax,
                                                 float *dst_row, size_t y, size_t w, size_t oh,
                                                 size_t ow, const strix_conv_geom *g) {
    size_t y_lo, y_hi;
    strix_cnn_windows_over(y, g->kh, g->stride_h, g->pad_h, oh, &y_lo, &y_hi);
    int64_t row0 = (int64_t)(y * w);
    for (size_t oy = y_lo; oy < y_hi; oy++) {
        for (size_t ox = 0; ox < ow; ox++) {
            int64_t a = argmax[oy * ow + ox] - row0;
            if (a < 0 || a >= (int64_t)w) continue;
            size_t tx = (size_t)a + g->pad_w, left = ox * g->stride_w; /* window covers x? */
            if (tx < left || tx - left >= g->kw) continue;
            dst_row[a] += src[oy * ow + ox];
        }
    }
}

/* Average of the window of output (oy, ox): the taps inside the plane summed rows then columns
 * ascending from 0.0f (padding adds nothing, i.e. counts as 0), divided by kh·kw. */
STRIX_HD static inline float strix_avg_pool_at(const float *plane, size_t oy, size_t ox,
                                               size_t h, size_t w, const strix_conv_geom *g) {
    float sum = 0.0f;
    size_t i_lo, i_hi, j_lo, j_hi;
    strix_cnn_window_taps(oy, g->kh, g->stride_h, g->pad_h, h, &i_lo, &i_hi);
    strix_cnn_window_taps(ox, g->kw, g->stride_w, g->pad_w, w, &j_lo, &j_hi);
    for (size_t i = i_lo; i < i_hi; i++) {
        size_t at = (oy * g->stride_h + i - g->pad_h) * w + ox * g->stride_w - g->pad_w;
        for (size_t j = j_lo; j < j_hi; j++) sum += plane[at + j];
    }
    return sum / (float)(g->kh * g->kw);
}

/* Average-pool backward gather for pixel (y, x): acc = grad_in value passed in; acc +=
 * grad_out[o]/(kh·kw) for every output o (ascending) whose window covers the pixel. */
STRIX_HD static inline float strix_avg_pool_backward_pixel(const float *grad_out, float acc,
                                                           size_t y, size_t x, size_t oh,
                                                           size_t ow, const strix_conv_geom *g) {
    size_t y_lo, y_hi, x_lo, x_hi;
    strix_cnn_windows_over(y, g->kh, g->stride_h, g->pad_h, oh, &y_lo, &y_hi);
    strix_cnn_windows_over(x, g->kw, g->stride_w, g->pad_w, ow, &x_lo, &x_hi);
    float size = (float)(g->kh * g->kw);
    for (size_t oy = y_lo; oy < y_hi; oy++)
        for (size_t ox = x_lo; ox < x_hi; ox++) acc += grad_out[oy * ow + ox] / size;
    return acc;
}

/* Row y of one plane of avg_pool_backward, in place in grad_row (w floats): every pixel gets
 * exactly the additions of strix_avg_pool_backward_pixel in the same order (outputs ascending). */
STRIX_HD static inline void strix_avg_pool_backward_row(const float *grad_out, float *grad_row,
                                                        size_t y, size_t w, size_t oh, size_t ow,
                                                        const strix_conv_geom *g) {
    size_t y_lo, y_hi;
    strix_cnn_windows_over(y, g->kh, g->stride_h, g->pad_h, oh, &y_lo, &y_hi);
    float size = (float)(g->kh * g->kw);
    for (size_t oy = y_lo; oy < y_hi; oy++) {
        for (size_t ox = 0; ox < ow; ox++) {
            float term = grad_out[oy * ow + ox] / size;
            size_t j_lo, j_hi;
            strix_cnn_window_taps(ox, g->kw, g->stride_w, g->pad_w, w, &j_lo, &j_hi);
            size_t left = ox * g->stride_w - g->pad_w; /* mod 2^64: left + j >= 0 for j >= j_lo */
            for (size_t j = j_lo; j < j_hi; j++) grad_row[left + j] += term;
        }
    }
}

#endif
