/*
 * kernels/cnn.h - per-row, per-plane and per-pixel math of im2col/col2im and of max/average
 * pooling (include/strix/ops/cnn.h, docs/SEMANTICS.md "CNN orders").
 *
 * Each function handles one lane: a row (or a piece of one) of col, a row, a plane or one pixel
 * of an image plane (col2im, pool backward gathers), one pooled output or one output row. The
 * gathers add each pixel's taps in the documented order onto its value in the destination, so
 * the row, plane and pixel functions give the same bits (the pixel ones are what a GPU lane
 * runs). Selections (max pool, unpool) are selects, not branches on the data: a branch that the
 * data steers mispredicts half the time. Geometry (strix_conv_geom) has strides >= 1; the
 * window of output oy covers input rows oy·sh − ph .. oy·sh − ph + kh − 1 (likewise for
 * columns). No allocation, no libc beyond math.h.
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

/* Outputs [*lo, *hi) along one axis whose tap t lands inside the image, as strix_cnn_taps_inside
 * but with no division at stride 1 (the common case: these run once per row of col). */
STRIX_HD static inline void strix_cnn_taps_inside_fast(size_t t, size_t stride, size_t pad,
                                                       size_t len, size_t on, size_t *lo,
                                                       size_t *hi) {
    if (stride != 1) {
        strix_cnn_taps_inside(t, stride, pad, len, on, lo, hi);
        return;
    }
    size_t first = t >= pad ? 0 : pad - t;
    size_t last = len + pad > t ? len + pad - t : 0;
    if (last > on) last = on;
    *lo = first;
    *hi = first < last ? last : first;
}

/* Outputs ox in [x_from, x_to) of row oy of tap (i, j) of im2col, into dst[ox − x_from], given
 * the tap's column range [lo, hi) (strix_cnn_taps_inside of j): plane[oy·sh − ph + i]
 * [ox·sw − pw + j], 0 outside the (h, w) plane. */
STRIX_HD static inline void strix_im2col_row_part(const float *plane, float *dst, size_t i,
                                                  size_t j, size_t oy, size_t x_from,
                                                  size_t x_to, size_t h, size_t w, size_t lo,
                                                  size_t hi, const strix_conv_geom *g) {
    size_t iy = oy * g->stride_h + i; /* + ph */
    if (iy < g->pad_h || iy - g->pad_h >= h) {
        for (size_t ox = x_from; ox < x_to; ox++) dst[ox - x_from] = 0.0f;
        return;
    }
    const float *row = plane + (iy - g->pad_h) * w;
    if (lo < x_from) lo = x_from;
    if (hi > x_to) hi = x_to;
    if (hi < lo) hi = lo;
    for (size_t ox = x_from; ox < lo; ox++) dst[ox - x_from] = 0.0f;
    if (g->stride_w == 1) {
        const float *src = row + (lo + j - g->pad_w);
        for (size_t t = 0; t < hi - lo; t++) dst[lo - x_from + t] = src[t];
    } else {
        for (size_t ox = lo; ox < hi; ox++)
            dst[ox - x_from] = row[ox * g->stride_w + j - g->pad_w];
    }
    for (size_t ox = hi; ox < x_to; ox++) dst[ox - x_from] = 0.0f;
}

/* Columns q in [q0, q1) of row (i, j) of one plane's col into dst[q − q0] (q = oy·ow + ox), the
 * values of strix_im2col_row_part (a bit-exact copy). At stride 1 with ow == w (a "same" width) the
 * outputs whose tap lands inside the image form one shifted contiguous run, copied at once,
 * after which the columns that wrapped around into the neighbouring image row are zeroed. */
STRIX_HD static inline void strix_im2col_tap_range(const float *plane, float *dst, size_t i,
                                                   size_t j, size_t h, size_t w, size_t oh,
                                                   size_t ow, size_t q0, size_t q1,
                                                   const strix_conv_geom *g) {
    if (q0 >= q1) return;
    size_t x_lo, x_hi; /* outputs whose tap lands inside the image, per axis */
    strix_cnn_taps_inside_fast(j, g->stride_w, g->pad_w, w, ow, &x_lo, &x_hi);
    if (g->stride_h != 1 || g->stride_w != 1 || ow != w) {
        for (size_t oy = q0 / ow, at = q0; at < q1; oy++) {
            size_t x_from = at - oy * ow, x_to = q1 - oy * ow < ow ? q1 - oy * ow : ow;
            strix_im2col_row_part(plane, dst + (at - q0), i, j, oy, x_from, x_to, h, w, x_lo,
                                  x_hi, g);
            at = oy * ow + x_to;
        }
        return;
    }
    size_t y_lo, y_hi;
    strix_cnn_taps_inside_fast(i, 1, g->pad_h, h, oh, &y_lo, &y_hi);
    size_t first = 0, end = 0; /* the run of outputs [first, end) that may read the image */
    if (y_lo < y_hi && x_lo < x_hi) first = y_lo * w + x_lo, end = (y_hi - 1) * w + x_hi;
    size_t a = first > q0 ? first : q0, b = end < q1 ? end : q1;
    if (b < a) b = a;
    for (size_t t = q0; t < a; t++) dst[t - q0] = 0.0f;
    if (b > a) {
        /* output (oy, ox) reads pixel (oy + i − ph, ox + j − pw): index t + (i − ph)·w + j − pw */
        const float *src = plane + (a + i * w + j - (g->pad_h * w + g->pad_w));
        float *to = dst + (a - q0);
        for (size_t t = 0; t < b - a; t++) to[t] = src[t];
        /* the wrapped columns of the rows in [a, b), column by column (few, long loops) */
        size_t oy0 = a / w, oy1 = (b - 1) / w + 1;
        for (size_t x = 0; x < x_lo; x++)
            for (size_t oy = oy0; oy < oy1; oy++)
                if (oy * w + x >= a && oy * w + x < b) dst[oy * w + x - q0] = 0.0f;
        for (size_t x = x_hi; x < w; x++)
            for (size_t oy = oy0; oy < oy1; oy++)
                if (oy * w + x >= a && oy * w + x < b) dst[oy * w + x - q0] = 0.0f;
    }
    for (size_t t = b; t < q1; t++) dst[t - q0] = 0.0f;
}

/* Whole row (i, j) of one plane's col: dst[oy·ow + ox] for every output (strix_im2col_tap_range
 * over all of them). */
STRIX_HD static inline void strix_im2col_tap(const float *plane, float *dst, size_t i, size_t j,
                                             size_t h, size_t w, size_t oh, size_t ow,
                                             const strix_conv_geom *g) {
    strix_im2col_tap_range(plane, dst, i, j, h, w, oh, ow, 0, oh * ow, g);
}

/* The col rows of one example: every tap (ci, i, j) of its c planes (in (c, h, w)) into col
 * (c·kh·kw, oh·ow), as strix_im2col_tap. */
STRIX_HD static inline void strix_im2col_example(const float *in, float *col, size_t c, size_t h,
                                                 size_t w, size_t oh, size_t ow,
                                                 const strix_conv_geom *g) {
    for (size_t ci = 0; ci < c; ci++)
        for (size_t i = 0; i < g->kh; i++)
            for (size_t j = 0; j < g->kw; j++, col += oh * ow)
                strix_im2col_tap(in + ci * h * w, col, i, j, h, w, oh, ow, g);
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

/* Row y of tap (i, j) added into out_row at columns [x_lo, x_hi) (stride 1, ow == w). */
STRIX_HD static inline void strix_col2im_tap_row(const float *src, float *out_row, size_t y,
                                                 size_t i, size_t j, size_t x_lo, size_t x_hi,
                                                 size_t ow, const strix_conv_geom *g) {
    const float *from = src + (y + g->pad_h - i) * ow + (x_lo + g->pad_w - j);
    for (size_t x = 0; x < x_hi - x_lo; x++) out_row[x_lo + x] += from[x];
}

/* One whole (h, w) plane of col2im_add, in place in out: taps i descending, then j descending,
 * each added to every pixel it reaches before the next tap starts, so every pixel gets the
 * additions of strix_col2im_pixel in the same order (same bits). At stride 1 with ow == w the
 * inner rows of a tap are one contiguous add over whole image rows (aligned alike for every
 * tap, so each pass reads what the last one stored at the same offsets); the pixels of those
 * rows that the tap does not reach are saved before and restored after, a few rows at a time.
 * The tap's first and last rows are added on their own (their sources end at the tap's row). */
#define STRIX_COL2IM_SAVED 64
STRIX_HD static inline void strix_col2im_plane(const float *col_ch, float *out, size_t h,
                                               size_t w, size_t oh, size_t ow,
                                               const strix_conv_geom *g) {
    if (g->stride_h != 1 || g->stride_w != 1 || ow != w) {
        for (size_t y = 0; y < h; y++) strix_col2im_row(col_ch, out + y * w, y, w, oh, ow, g);
        return;
    }
    for (size_t i = g->kh; i-- > 0;) {
        /* pixel (y, x) takes output (y + ph − i, x + pw − j) of tap (i, j) */
        size_t y_lo = i > g->pad_h ? i - g->pad_h : 0;
        size_t y_hi = oh + i > g->pad_h ? oh + i - g->pad_h : 0;
        if (y_hi > h) y_hi = h;
        if (y_lo >= y_hi) continue;
        for (size_t j = g->kw; j-- > 0;) {
            size_t x_lo = j > g->pad_w ? j - g->pad_w : 0;
            size_t x_hi = ow + j > g->pad_w ? ow + j - g->pad_w : 0;
            if (x_hi > w) x_hi = w;
            if (x_lo >= x_hi) continue;
            const float *src = col_ch + (i * g->kw + j) * oh * ow; /* (oh, ow) of this tap */
            size_t gap = w - (x_hi - x_lo); /* pixels of a row the tap does not reach */
            size_t rows = gap == 0 ? h : gap <= 4 ? 16 : 1; /* rows·gap <= SAVED */
            if (rows == 1 || y_hi - y_lo < 3) { /* row by row */
                for (size_t y = y_lo; y < y_hi; y++)
                    strix_col2im_tap_row(src, out + y * w, y, i, j, x_lo, x_hi, ow, g);
                continue;
            }
            strix_col2im_tap_row(src, out + y_lo * w, y_lo, i, j, x_lo, x_hi, ow, g);
            for (size_t y0 = y_lo + 1; y0 + 1 < y_hi; y0 += rows) {
                size_t y1 = y_hi - 1 - y0 < rows ? y_hi - 1 : y0 + rows;
                float saved[STRIX_COL2IM_SAVED]; /* column by column: few, long loops */
                size_t k = 0;
                for (size_t x = 0; x < x_lo; x++)
                    for (size_t y = y0; y < y1; y++) saved[k++] = out[y * w + x];
                for (size_t x = x_hi; x < w; x++)
                    for (size_t y = y0; y < y1; y++) saved[k++] = out[y * w + x];
                /* pixel t of these rows takes element t + (ph − i)·w + pw − j of the tap */
                float *dst = out + y0 * w;
                const float *at = src + ((y0 + g->pad_h - i) * w + g->pad_w - j);
                for (size_t t = 0; t < (y1 - y0) * w; t++) dst[t] += at[t];
                k = 0;
                for (size_t x = 0; x < x_lo; x++)
                    for (size_t y = y0; y < y1; y++) out[y * w + x] = saved[k++];
                for (size_t x = x_hi; x < w; x++)
                    for (size_t y = y0; y < y1; y++) out[y * w + x] = saved[k++];
            }
            strix_col2im_tap_row(src, out + (y_hi - 1) * w, y_hi - 1, i, j, x_lo, x_hi, ow, g);
        }
    }
}

// ---- pooling -----------------------------------------------------------------------------------

/* One tap of a max-pool scan: strict >, so the first maximum wins and NaN never wins. Written as
 * selects, not a branch: which tap wins depends on the data, and a branch mispredicts. */
STRIX_HD static inline void strix_max_pool_take(float v, int32_t at, float *best, int32_t *where) {
    bool take = v > *best;
    *where = take ? at : *where;
    *best = take ? v : *best;
}

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
        for (size_t j = j_lo; j < j_hi; j++)
            strix_max_pool_take(plane[at + j], (int32_t)(at + j), &best, &where);
    }
    *arg = where;
    return best;
}

/* Outputs [*x_lo, *x_hi) along a row whose window columns all lie inside [0, w):
 * ox·sw >= pw and ox·sw − pw + kw <= w. */
STRIX_HD static inline void strix_max_pool_inner_cols(size_t w, size_t ow,
                                                      const strix_conv_geom *g, size_t *x_lo,
                                                      size_t *x_hi) {
    strix_cnn_taps_inside(0, g->stride_w, g->pad_w, w, ow, x_lo, x_hi);
    if (g->kw <= w) {
        size_t hi = (w - g->kw + g->pad_w) / g->stride_w + 1;
        if (hi < *x_hi) *x_hi = hi;
    } else {
        *x_hi = *x_lo;
    }
    if (*x_hi < *x_lo) *x_hi = *x_lo;
}

/* Output row oy of one plane's max pool: out_row[ox], arg_row[ox] for ox < ow, the same scan as
 * strix_max_pool_at (same bits). [x_lo, x_hi) is strix_max_pool_inner_cols: those windows take a
 * loop without bounds; the 2x2 stride-2 window (the common one) has its own unrolled loop. */
STRIX_HD static inline void strix_max_pool_row(const float *plane, float *out_row,
                                               int32_t *arg_row, size_t oy, size_t h, size_t w,
                                               size_t ow, size_t x_lo, size_t x_hi,
                                               const strix_conv_geom *g) {
    size_t i_lo, i_hi;
    strix_cnn_window_taps(oy, g->kh, g->stride_h, g->pad_h, h, &i_lo, &i_hi);
    for (size_t ox = 0; ox < x_lo; ox++)
        out_row[ox] = strix_max_pool_at(plane, &arg_row[ox], oy, ox, h, w, g);
    size_t y0 = oy * g->stride_h - g->pad_h; /* mod 2^64: y0 + i >= 0 for i >= i_lo */
    if (g->kh == 2 && g->kw == 2 && g->stride_w == 2 && i_lo == 0 && i_hi == 2) {
        const float *r0 = plane + y0 * w, *r1 = r0 + w;
        int32_t at0 = (int32_t)(y0 * w), at1 = at0 + (int32_t)w;
        for (size_t ox = x_lo; ox < x_hi; ox++) {
            size_t x = 2 * ox - g->pad_w; /* >= 0 inside [x_lo, x_hi) */
            float best = STRIX_NEG_INF;
            int32_t where = -1;
            strix_max_pool_take(r0[x], at0 + (int32_t)x, &best, &where);
            strix_max_pool_take(r0[x + 1], at0 + (int32_t)x + 1, &best, &where);
            strix_max_pool_take(r1[x], at1 + (int32_t)x, &best, &where);
            strix_max_pool_take(r1[x + 1], at1 + (int32_t)x + 1, &best, &where);
            out_row[ox] = best;
            arg_row[ox] = where;
        }
    } else {
        for (size_t ox = x_lo; ox < x_hi; ox++) {
            size_t x = ox * g->stride_w - g->pad_w;
            float best = STRIX_NEG_INF;
            int32_t where = -1;
            for (size_t i = i_lo; i < i_hi; i++) {
                size_t at = (y0 + i) * w + x;
                for (size_t j = 0; j < g->kw; j++)
                    strix_max_pool_take(plane[at + j], (int32_t)(at + j), &best, &where);
            }
            out_row[ox] = best;
            arg_row[ox] = where;
        }
    }
    for (size_t ox = x_hi; ox < ow; ox++)
        out_row[ox] = strix_max_pool_at(plane, &arg_row[ox], oy, ox, h, w, g);
}

/* Max-unpool gather for pixel (y, x) of one plane: acc = dst value passed in; acc += src[o] for
 * every output o (ascending) whose window covers the pixel and whose argmax is y·w + x (a select,
 * so the data never steers a branch). */
STRIX_HD static inline float strix_max_unpool_pixel(const float *src, const int32_t *argmax,
                                                    float acc, size_t y, size_t x, size_t w,
                                                    size_t oh, size_t ow,
                                                    const strix_conv_geom *g) {
    size_t y_lo, y_hi, x_lo, x_hi;
    strix_cnn_windows_over(y, g->kh, g->stride_h, g->pad_h, oh, &y_lo, &y_hi);
    strix_cnn_windows_over(x, g->kw, g->stride_w, g->pad_w, ow, &x_lo, &x_hi);
    int32_t me = (int32_t)(y * w + x);
    for (size_t oy = y_lo; oy < y_hi; oy++)
        for (size_t ox = x_lo; ox < x_hi; ox++) {
            bool hit = argmax[oy * ow + ox] == me;
            acc = hit ? acc + src[oy * ow + ox] : acc;
        }
    return acc;
}

/* Row y of one plane of max_unpool, in place in dst_row (w floats): every pixel gets exactly the
 * additions of strix_max_unpool_pixel in the same order (outputs ascending: window rows oy, then
 * ox). Each window visits its taps on row y and adds where the argmax points there, as selects. */
STRIX_HD static inline void strix_max_unpool_row(const float *src, const int32_t *argmax,
                                                 float *dst_row, size_t y, size_t w, size_t oh,
                                                 size_t ow, const strix_conv_geom *g) {
    size_t y_lo, y_hi;
    strix_cnn_windows_over(y, g->kh, g->stride_h, g->pad_h, oh, &y_lo, &y_hi);
    int32_t row0 = (int32_t)(y * w);
    for (size_t oy = y_lo; oy < y_hi; oy++) {
        const float *s = src + oy * ow;
        const int32_t *a = argmax + oy * ow;
        if (g->kw == 2 && g->stride_w == 2 && g->pad_w == 0 && 2 * ow <= w) {
            for (size_t ox = 0; ox < ow; ox++) {
                /* the winner's offset from the window's left column: 0 or 1 if on this row */
                int32_t d = a[ox] - (row0 + (int32_t)(2 * ox)); /* no overflow: >= -2^31 */
                float v0 = dst_row[2 * ox], v1 = dst_row[2 * ox + 1];
                dst_row[2 * ox] = d == 0 ? v0 + s[ox] : v0;
                dst_row[2 * ox + 1] = d == 1 ? v1 + s[ox] : v1;
            }
            continue;
        }
        for (size_t ox = 0; ox < ow; ox++) {
            size_t j_lo, j_hi;
            strix_cnn_window_taps(ox, g->kw, g->stride_w, g->pad_w, w, &j_lo, &j_hi);
            int64_t left = (int64_t)(ox * g->stride_w) - (int64_t)g->pad_w; /* may be < 0 */
            int64_t d = (int64_t)a[ox] - row0 - left; /* the winner's tap column, if on row y */
            for (size_t j = j_lo; j < j_hi; j++) {
                float *cell = dst_row + (left + (int64_t)j);
                float v = *cell;
                *cell = d == (int64_t)j ? v + s[ox] : v;
            }
        }
    }
}

/* Max unpool of output row oy of one plane as a scatter, for DISJOINT windows only (stride_h >=
 * kh and stride_w >= kw): each window adds src[o] at its argmax if that pixel lies inside the
 * window (argmax -1 or a pixel outside adds nothing). A pixel is then covered by at most one
 * window and gets at most one term, so the bits equal strix_max_unpool_pixel's; the branches
 * test only where the argmax is valid, which the data almost never changes. */
STRIX_HD static inline void strix_max_unpool_scatter_row(const float *src, const int32_t *argmax,
                                                         float *dst_plane, size_t oy, size_t h,
                                                         size_t w, size_t ow,
                                                         const strix_conv_geom *g) {
    size_t i_lo, i_hi;
    strix_cnn_window_taps(oy, g->kh, g->stride_h, g->pad_h, h, &i_lo, &i_hi);
    int64_t y0 = (int64_t)(oy * g->stride_h) - (int64_t)g->pad_h;
    int64_t first = (y0 + (int64_t)i_lo) * (int64_t)w; /* first pixel of the window's rows */
    int64_t end = (y0 + (int64_t)i_hi) * (int64_t)w;   /* one past their last pixel */
    if (i_hi - i_lo == 2 && g->kw == 2 && g->pad_w == 0 && (ow - 1) * g->stride_w + 2 <= w) {
        /* two full rows, two columns inside (the 2x2 pool): the winner is at an offset
         * d ∈ {0, 1, w, w + 1} from the window's first pixel */
        uint64_t wide = (uint64_t)w;
        for (size_t ox = 0; ox < ow; ox++) {
            int64_t a = argmax[oy * ow + ox];
            uint64_t d = (uint64_t)(a - first - (int64_t)(ox * g->stride_w));
            /* which row won is data: reduce d to its column by arithmetic, not a branch */
            uint64_t col = d - wide * (uint64_t)(d >= wide);
            if (col < 2 && d < 2 * wide) dst_plane[a] += src[oy * ow + ox];
        }
        return;
    }
    for (size_t ox = 0; ox < ow; ox++) {
        int64_t a = argmax[oy * ow + ox];
        if (a < first || a >= end) continue;
        int64_t x = a - first; /* its column: x mod w, by selects (no division) */
        for (size_t i = i_lo + 1; i < i_hi; i++) x -= (int64_t)(x >= (int64_t)w) * (int64_t)w;
        int64_t x0 = (int64_t)(ox * g->stride_w) - (int64_t)g->pad_w;
        if (x < x0 || x >= x0 + (int64_t)g->kw) continue;
        dst_plane[a] += src[oy * ow + ox];
    }
}

/* Max unpool of output row oy of one plane for 2-wide windows that tile the row (kw = stride_w
 * = 2, pad_w = 0) and DISJOINT window rows (stride_h >= kh): pixel x < 2·ow of an input row of
 * the window belongs to output x/2 alone and adds its src when the argmax is that pixel (a
 * select, as strix_max_unpool_pixel, same bits); the rest of the plane is untouched. Written as
 * a contiguous masked add over each input row, after spreading src and argmax to pixel pairs,
 * so that it vectorises. */
#define STRIX_UNPOOL_CHUNK 32
STRIX_HD static inline void strix_max_unpool_pairs_row(const float *src, const int32_t *argmax,
                                                       float *dst_plane, size_t oy, size_t h,
                                                       size_t w, size_t ow,
                                                       const strix_conv_geom *g) {
    size_t i_lo, i_hi;
    strix_cnn_window_taps(oy, g->kh, g->stride_h, g->pad_h, h, &i_lo, &i_hi);
    size_t y0 = oy * g->stride_h - g->pad_h; /* mod 2^64: y0 + i >= 0 for i >= i_lo */
    for (size_t ox0 = 0; ox0 < ow; ox0 += STRIX_UNPOOL_CHUNK) {
        size_t count = ow - ox0 < STRIX_UNPOOL_CHUNK ? ow - ox0 : STRIX_UNPOOL_CHUNK;
        float s2[2 * STRIX_UNPOOL_CHUNK];
        int32_t a2[2 * STRIX_UNPOOL_CHUNK];
        for (size_t k = 0; k < count; k++) {
            s2[2 * k] = s2[2 * k + 1] = src[oy * ow + ox0 + k];
            a2[2 * k] = a2[2 * k + 1] = argmax[oy * ow + ox0 + k];
        }
        for (size_t i = i_lo; i < i_hi; i++) {
            int32_t at = (int32_t)((y0 + i) * w + 2 * ox0); /* index of pixel t = 0 */
            float *row = dst_plane + (y0 + i) * w + 2 * ox0;
            for (size_t t = 0; t < 2 * count; t++) {
                float v = row[t];
                row[t] = a2[t] == at + (int32_t)t ? v + s2[t] : v;
            }
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
