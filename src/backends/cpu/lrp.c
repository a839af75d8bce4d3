/*
 * lrp.c - CPU backend: the LRP rules of include/strix/ops/lrp.h.
 *
 * The math is kernels/lrp.h. The affine rules (linear, conv, bilinear matmul) run blocked: each
 * task owns a block of outputs, works out each ratio r/stab(z) it needs once (conv and bilinear
 * keep a block of them in a small stack buffer), adds the terms into its outputs in the
 * documented order (strix_lrp_axpy), then multiplies by the input: the same per-output
 * operations as the kernels' `_at` functions (tests/ops/cases_lrp.c checks the bits).
 * Tasks own disjoint outputs, so results do not depend on the thread count or on which thread of
 * the worker pool runs which task.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/lrp.h"

/* Block sizes: outputs per task along the contiguous axis, and ratios held on the stack. */
#define LRP_SPAN 256
#define LRP_BLOCK 64

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

typedef struct lrp_linear_args {
    const float *x, *w, *z, *r;
    float *r_in;
    size_t in_features, out_features, spans;
    float eps;
} lrp_linear_args;

/* Tasks [t0, t1): (row, span of LRP_SPAN inputs) each. */
static void lrp_linear_range(void *args, size_t t0, size_t t1) {
    const lrp_linear_args *l = args;
    const float *x = l->x, *w = l->w, *z = l->z, *r = l->r;
    float *r_in = l->r_in;
    size_t in_features = l->in_features, out_features = l->out_features, spans = l->spans;
    float eps = l->eps;
    for (size_t t = t0; t < t1; t++) {
        size_t row = t / spans, i0 = (t % spans) * LRP_SPAN;
        size_t len = min_size(LRP_SPAN, in_features - i0);
        float *acc = r_in + row * in_features + i0;
        const float *z_row = z + row * out_features, *r_row = r + row * out_features;
        for (size_t i = 0; i < len; i++) acc[i] = 0.0f;
        for (size_t j = 0; j < out_features; j++)
            strix_lrp_axpy(acc, w + j * in_features + i0,
                           strix_lrp_ratio(r_row[j], z_row[j], eps), len);
        strix_lrp_times_input(acc, x + row * in_features + i0, len);
    }
}

strix_status cpu_lrp_linear(strix_backend *be, const float *x, const float *w, const float *z,
                            const float *r, float *r_in, size_t rows, size_t in_features,
                            size_t out_features, float eps) {
    (void)be;
    size_t spans = (in_features + LRP_SPAN - 1) / LRP_SPAN, tasks = rows * spans;
    lrp_linear_args l = {x, w, z, r, r_in, in_features, out_features, spans, eps};
    cpu_parallel_for(tasks, tasks > 1 && CPU_BIG(rows * in_features * out_features),
                     lrp_linear_range, &l);
    return STRIX_OK;
}

/* Operands of the elementwise rules: relevance r of a two-input op (a, b) into r_a (and r_b). */
typedef struct lrp_ew_args {
    const float *a, *b, *r;
    float *r_a, *r_b;
    float eps;
} lrp_ew_args;

static void residual_split_range(void *args, size_t i0, size_t i1) {
    const lrp_ew_args *e = args;
    const float *a = e->a, *b = e->b, *r = e->r;
    float *r_a = e->r_a, *r_b = e->r_b, eps = e->eps;
    for (size_t i = i0; i < i1; i++) {
        float ra, rb;
        strix_lrp_residual_at(a[i], b[i], r[i], eps, &ra, &rb);
        r_a[i] = ra;
        r_b[i] = rb;
    }
}

strix_status cpu_lrp_residual_split(strix_backend *be, const float *a, const float *b,
                                    const float *r, float *r_a, float *r_b, size_t n, float eps) {
    (void)be;
    lrp_ew_args e = {a, b, r, r_a, r_b, eps};
    cpu_parallel_for(n, CPU_BIG(n), residual_split_range, &e);
    return STRIX_OK;
}

static void bilinear_elementwise_range(void *args, size_t i0, size_t i1) {
    const lrp_ew_args *e = args;
    const float *a = e->a, *b = e->b, *r = e->r;
    float *r_out = e->r_a, eps = e->eps;
    for (size_t i = i0; i < i1; i++)
        r_out[i] = strix_lrp_bilinear_elementwise_at(a[i], b[i], r[i], eps);
}

strix_status cpu_lrp_bilinear_elementwise(strix_backend *be, const float *a, const float *b,
                                          const float *r, float *r_out, size_t n, float eps) {
    (void)be;
    lrp_ew_args e = {a, b, r, r_out, NULL, eps};
    cpu_parallel_for(n, CPU_BIG(n), bilinear_elementwise_range, &e);
    return STRIX_OK;
}

/* r_a of one row i of one slice: a[i][j]·Σ_k B(j,k)·w_ik (kernels: strix_lrp_bilinear_a_at). */
static void bilinear_a_row(const float *a, const float *b, const float *o, const float *r_o,
                           float *r_a, size_t i, size_t p, size_t q, float eps, bool b_transposed) {
    float weight[LRP_BLOCK];
    float *acc = r_a + i * p;
    for (size_t j = 0; j < p; j++) acc[j] = 0.0f;
    for (size_t k0 = 0; k0 < q; k0 += LRP_BLOCK) {
        size_t len = min_size(LRP_BLOCK, q - k0);
        for (size_t t = 0; t < len; t++)
            weight[t] = strix_lrp_bilinear_weight(r_o[i * q + k0 + t], o[i * q + k0 + t], eps);
        for (size_t t = 0; t < len; t++) {
            if (b_transposed) {
                strix_lrp_axpy(acc, b + (k0 + t) * p, weight[t], p);
            } else {
                for (size_t j = 0; j < p; j++) acc[j] += b[j * q + k0 + t] * weight[t];
            }
        }
    }
    strix_lrp_times_input(acc, a + i * p, p);
}

/* r_b of columns [k0, k0 + len) of one slice: B(j,k)·Σ_i a[i][j]·w_ik (kernels:
 * strix_lrp_bilinear_b_at). */
static void bilinear_b_block(const float *a, const float *b, const float *o, const float *r_o,
                             float *r_b, size_t k0, size_t len, size_t m, size_t p, size_t q,
                             float eps, bool b_transposed) {
    float weight[LRP_BLOCK];
    for (size_t j = 0; j < p; j++)
        for (size_t t = 0; t < len; t++)
            r_b[strix_lrp_b_index(j, k0 + t, p, q, b_transposed)] = 0.0f;
    for (size_t i = 0; i < m; i++) {
        for (size_t t = 0; t < len; t++)
            weight[t] = strix_lrp_bilinear_weight(r_o[i * q + k0 + t], o[i * q + k0 + t], eps);
        if (b_transposed) {
            for (size_t t = 0; t < len; t++)
                strix_lrp_axpy(r_b + (k0 + t) * p, a + i * p, weight[t], p);
        } else {
            for (size_t j = 0; j < p; j++)
                strix_lrp_axpy(r_b + j * q + k0, weight, a[i * p + j], len);
        }
    }
    if (b_transposed) {
        for (size_t t = 0; t < len; t++)
            strix_lrp_times_input(r_b + (k0 + t) * p, b + (k0 + t) * p, p);
    } else {
        for (size_t j = 0; j < p; j++) strix_lrp_times_input(r_b + j * q + k0, b + j * q + k0, len);
    }
}

typedef struct bilinear_args {
    const float *a, *b, *o, *r_o;
    float *r_a, *r_b;
    size_t m, p, q, blocks;
    float eps;
    bool b_transposed;
} bilinear_args;

/* Tasks [t0, t1) of r_a: (slice, row) each. */
static void bilinear_a_range(void *args, size_t t0, size_t t1) {
    const bilinear_args *g = args;
    size_t m = g->m, p = g->p, q = g->q;
    for (size_t t = t0; t < t1; t++) {
        size_t s = t / m, i = t % m;
        bilinear_a_row(g->a + s * m * p, g->b + s * p * q, g->o + s * m * q, g->r_o + s * m * q,
                       g->r_a + s * m * p, i, p, q, g->eps, g->b_transposed);
    }
}

/* Tasks [t0, t1) of r_b: (slice, block of LRP_BLOCK columns) each. */
static void bilinear_b_range(void *args, size_t t0, size_t t1) {
    const bilinear_args *g = args;
    size_t m = g->m, p = g->p, q = g->q, blocks = g->blocks;
    for (size_t t = t0; t < t1; t++) {
        size_t s = t / blocks, k0 = (t % blocks) * LRP_BLOCK;
        bilinear_b_block(g->a + s * m * p, g->b + s * p * q, g->o + s * m * q, g->r_o + s * m * q,
                         g->r_b + s * p * q, k0, min_size(LRP_BLOCK, q - k0), m, p, q, g->eps,
                         g->b_transposed);
    }
}

strix_status cpu_lrp_bilinear_matmul(strix_backend *be, const float *a, const float *b,
                                     const float *o, const float *r_o, float *r_a, float *r_b,
                                     size_t slices, size_t m, size_t p, size_t q, float eps,
                                     bool b_transposed) {
    (void)be;
    bool big = CPU_BIG(slices * m * p * q);
    size_t a_tasks = slices * m;
    size_t blocks = (q + LRP_BLOCK - 1) / LRP_BLOCK, b_tasks = slices * blocks;
    bilinear_args g = {a, b, o, r_o, r_a, r_b, m, p, q, blocks, eps, b_transposed};
    cpu_parallel_for(a_tasks, a_tasks > 1 && big, bilinear_a_range, &g);
    cpu_parallel_for(b_tasks, b_tasks > 1 && big, bilinear_b_range, &g);
    return STRIX_OK;
}

/* Operands of the row rules: x, y the op's input and output, r the relevance of y. */
typedef struct lrp_rows_args {
    const float *x, *y, *r, *cos_table, *sin_table;
    float *r_in;
    size_t cols, seq_len;
    float eps;
} lrp_rows_args;

static void lrp_softmax_range(void *args, size_t row0, size_t row1) {
    const lrp_rows_args *l = args;
    const float *x = l->x, *y = l->y, *r = l->r;
    float *r_in = l->r_in;
    size_t cols = l->cols;
    for (size_t row = row0; row < row1; row++) {
        size_t at = row * cols;
        strix_lrp_softmax_row(x + at, y + at, r + at, r_in + at, cols);
    }
}

strix_status cpu_lrp_softmax_rows(strix_backend *be, const float *x, const float *y,
                                  const float *r, float *r_in, size_t rows, size_t cols) {
    (void)be;
    lrp_rows_args l = {.x = x, .y = y, .r = r, .r_in = r_in, .cols = cols};
    cpu_parallel_for(rows, rows > 1 && CPU_BIG(rows * cols), lrp_softmax_range, &l);
    return STRIX_OK;
}

/* Rows [row0, row1) of rope; cols is head_dim. */
static void lrp_rope_range(void *args, size_t row0, size_t row1) {
    const lrp_rows_args *l = args;
    const float *x = l->x, *y = l->y, *r = l->r, *cos_table = l->cos_table;
    const float *sin_table = l->sin_table;
    float *r_in = l->r_in, eps = l->eps;
    size_t head_dim = l->cols, seq_len = l->seq_len, half = head_dim / 2;
    for (size_t row = row0; row < row1; row++) {
        size_t at = row * head_dim, pos = row % seq_len;
        for (size_t pair = 0; pair < half; pair++)
            strix_lrp_rope_pair(x + at, y + at, r + at, cos_table[pos * half + pair],
                                sin_table[pos * half + pair], r_in + at, pair, eps);
    }
}

strix_status cpu_lrp_rope(strix_backend *be, const float *x, const float *y, const float *r,
                          const float *cos_table, const float *sin_table, float *r_in, size_t rows,
                          size_t seq_len, size_t head_dim, float eps) {
    (void)be;
    lrp_rows_args l = {x, y, r, cos_table, sin_table, r_in, head_dim, seq_len, eps};
    cpu_parallel_for(rows, rows > 1 && CPU_BIG(rows * head_dim), lrp_rope_range, &l);
    return STRIX_OK;
}

typedef struct lrp_conv_args {
    const float *col, *kernel, *z, *r;
    float *r_col;
    size_t out_channels, p, q, blocks;
    float eps;
} lrp_conv_args;

/* Tasks [t0, t1): (example, block of LRP_BLOCK columns) each. */
static void lrp_conv_range(void *args, size_t t0, size_t t1) {
    const lrp_conv_args *l = args;
    const float *col = l->col, *kernel = l->kernel, *z = l->z, *r = l->r;
    float *r_col = l->r_col, eps = l->eps;
    size_t out_channels = l->out_channels, p = l->p, q = l->q, blocks = l->blocks;
    for (size_t t = t0; t < t1; t++) {
        size_t ex = t / blocks, q0 = (t % blocks) * LRP_BLOCK, len = min_size(LRP_BLOCK, q - q0);
        const float *col_n = col + ex * p * q, *z_n = z + ex * out_channels * q;
        const float *r_n = r + ex * out_channels * q;
        float *out = r_col + ex * p * q + q0;
        float ratio[LRP_BLOCK / 2][LRP_BLOCK]; /* ratios of LRP_BLOCK/2 channels x len columns */
        for (size_t pp = 0; pp < p; pp++)
            for (size_t c = 0; c < len; c++) out[pp * q + c] = 0.0f;
        for (size_t oc0 = 0; oc0 < out_channels; oc0 += LRP_BLOCK / 2) {
            size_t channels = min_size(LRP_BLOCK / 2, out_channels - oc0);
            for (size_t o = 0; o < channels; o++)
                for (size_t c = 0; c < len; c++) {
                    size_t at = (oc0 + o) * q + q0 + c;
                    ratio[o][c] = strix_lrp_ratio(r_n[at], z_n[at], eps);
                }
            for (size_t pp = 0; pp < p; pp++)
                for (size_t o = 0; o < channels; o++)
                    strix_lrp_axpy(out + pp * q, ratio[o], kernel[(oc0 + o) * p + pp], len);
        }
        for (size_t pp = 0; pp < p; pp++)
            strix_lrp_times_input(out + pp * q, col_n + pp * q + q0, len);
    }
}

strix_status cpu_lrp_conv(strix_backend *be, const float *col, const float *kernel, const float *z,
                          const float *r, float *r_col, size_t n, size_t out_channels, size_t p,
                          size_t q, float eps) {
    (void)be;
    size_t blocks = (q + LRP_BLOCK - 1) / LRP_BLOCK, tasks = n * blocks;
    lrp_conv_args l = {col, kernel, z, r, r_col, out_channels, p, q, blocks, eps};
    cpu_parallel_for(tasks, tasks > 1 && CPU_BIG(n * out_channels * p * q), lrp_conv_range, &l);
    return STRIX_OK;
}

typedef struct lrp_pool_args {
    const float *x, *r;
    float *r_in;
    size_t h, w, oh, ow;
    const strix_conv_geom *g;
    float eps;
} lrp_pool_args;

/* Input lines [t0, t1): (plane, row) each. */
static void lrp_avg_pool_range(void *args, size_t t0, size_t t1) {
    const lrp_pool_args *l = args;
    const float *x = l->x, *r = l->r;
    float *r_in = l->r_in, eps = l->eps;
    size_t h = l->h, w = l->w, oh = l->oh, ow = l->ow;
    const strix_conv_geom *g = l->g;
    for (size_t t = t0; t < t1; t++) {
        size_t plane = t / h, y = t % h;
        const float *x_plane = x + plane * h * w, *r_plane = r + plane * oh * ow;
        float *out = r_in + plane * h * w + y * w;
        for (size_t xx = 0; xx < w; xx++)
            out[xx] += strix_lrp_avg_pool_at(x_plane, r_plane, h, w, oh, ow, y, xx, g->kh,
                                             g->kw, g->stride_h, g->stride_w, g->pad_h,
                                             g->pad_w, eps);
    }
}

strix_status cpu_lrp_avg_pool(strix_backend *be, const float *x, const float *r, float *r_in,
                              size_t planes, size_t h, size_t w, const strix_conv_geom *g,
                              float eps) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w), lines = planes * h;
    lrp_pool_args l = {x, r, r_in, h, w, oh, ow, g, eps};
    cpu_parallel_for(lines, lines > 1 && CPU_BIG(planes * h * w * g->kh * g->kw),
                     lrp_avg_pool_range, &l);
    return STRIX_OK;
}

typedef struct lrp_divide_args {
    const float *r, *den, *gate;
    float *out;
    float eps;
    int mode;
} lrp_divide_args;

static void lrp_divide_range(void *args, size_t i0, size_t i1) {
    const lrp_divide_args *d = args;
    const float *r = d->r, *den = d->den, *gate = d->gate;
    float *out = d->out, eps = d->eps;
    int mode = d->mode;
    for (size_t i = i0; i < i1; i++)
        out[i] = strix_lrp_divide_at(r[i], den[i], gate ? gate[i] : 0.0f, mode, eps);
}

strix_status cpu_lrp_stabilized_divide(strix_backend *be, const float *r, const float *den,
                                       const float *gate, float *out, size_t n, float eps,
                                       strix_lrp_gate gate_mode) {
    (void)be;
    lrp_divide_args d = {r, den, gate, out, eps, (int)gate_mode};
    cpu_parallel_for(n, CPU_BIG(n), lrp_divide_range, &d);
    return STRIX_OK;
}
