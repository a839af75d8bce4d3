/*
 * layout.c - the CPU backend's position and data-movement slots: RoPE (interleaved and
 * rotate-half), permute_0213, gather_rows, scatter_add_rows, copy_2d and accumulate_rows.
 *
 * Data movement is bit-exact. scatter_add_rows and accumulate_rows add in ascending i for every
 * column; threads split columns, never i, so the sums keep their order on any thread count.
 */
#include <string.h>

#include "backends/cpu/cpu_internal.h"
#include "kernels/rope.h"
#include "kernels/rows.h"

typedef struct rope_args {
    const float *in, *cos_table, *sin_table;
    float *out;
    size_t ld_in, ld_out, seq_len, pos0, head_dim;
    bool inverse, rotate_half;
} rope_args;

static void rope_range(void *p, size_t r0, size_t r1) {
    const rope_args *a = p;
    const float *in = a->in, *cos_table = a->cos_table, *sin_table = a->sin_table;
    float *out = a->out;
    size_t ld_in = a->ld_in, ld_out = a->ld_out, seq_len = a->seq_len, pos0 = a->pos0;
    size_t head_dim = a->head_dim, half = head_dim / 2;
    bool inverse = a->inverse, rotate_half = a->rotate_half;
    for (size_t r = r0; r < r1; r++) {
        size_t pos = pos0 + r % seq_len;
        const float *c = cos_table + pos * half, *s = sin_table + pos * half;
        const float *x = in + r * ld_in;
        float *y = out + r * ld_out;
        if (rotate_half) strix_rope_half_row(x, y, c, s, head_dim, inverse);
        else strix_rope_row(x, y, c, s, head_dim, inverse);
    }
}

/* Rows r of `in` rotated at positions pos0 + r % seq_len, in the interleaved or the rotate-half
 * layout; rows are independent. */
static void rope_rows(const float *in, size_t ld_in, const float *cos_table,
                      const float *sin_table, float *out, size_t ld_out, size_t rows,
                      size_t seq_len, size_t pos0, size_t head_dim, bool inverse,
                      bool rotate_half) {
    rope_args a = {in, cos_table, sin_table, out, ld_in, ld_out, seq_len, pos0, head_dim, inverse,
                   rotate_half};
    cpu_parallel_for(rows, rows > 1 && CPU_BIG(rows * head_dim), rope_range, &a);
}

strix_status cpu_rope_rotate(strix_backend *be, const float *in, size_t ld_in,
                             const float *cos_table, const float *sin_table, float *out,
                             size_t ld_out, size_t rows, size_t seq_len, size_t pos0,
                             size_t head_dim, bool inverse) {
    (void)be;
    rope_rows(in, ld_in, cos_table, sin_table, out, ld_out, rows, seq_len, pos0, head_dim,
              inverse, false);
    return STRIX_OK;
}

strix_status cpu_rope_rotate_half(strix_backend *be, const float *in, size_t ld_in,
                                  const float *cos_table, const float *sin_table, float *out,
                                  size_t ld_out, size_t rows, size_t seq_len, size_t pos0,
                                  size_t head_dim, bool inverse) {
    (void)be;
    rope_rows(in, ld_in, cos_table, sin_table, out, ld_out, rows, seq_len, pos0, head_dim,
              inverse, true);
    return STRIX_OK;
}

typedef struct permute_args {
    const float *in;
    float *out;
    size_t d1, d2, d3;
} permute_args;

/* Output blocks [b0, b1) of permute_0213. */
static void permute_range(void *p, size_t b0, size_t b1) {
    const permute_args *a = p;
    const float *in = a->in;
    float *out = a->out;
    size_t d1 = a->d1, d2 = a->d2, d3 = a->d3;
    size_t row_bytes = d3 * sizeof(float);
    for (size_t block = b0; block < b1; block++) {
        size_t i0 = block / d2, i2 = block % d2;
        for (size_t i1 = 0; i1 < d1; i1++) {
            const float *src = in + ((i0 * d1 + i1) * d2 + i2) * d3;
            float *dst = out + ((i0 * d2 + i2) * d1 + i1) * d3;
            memcpy(dst, src, row_bytes);
        }
    }
}

strix_status cpu_permute_0213(strix_backend *be, const float *in, float *out, size_t d0,
                              size_t d1, size_t d2, size_t d3) {
    (void)be;
    size_t outer = d0 * d2; /* output rows of (d1, d3) blocks: (i0, i2) */
    permute_args a = {in, out, d1, d2, d3};
    cpu_parallel_for(outer, outer > 1 && CPU_BIG(d0 * d1 * d2 * d3), permute_range, &a);
    return STRIX_OK;
}

/* Operands of gather_rows and scatter_add_rows: rows idx[i] of table (count rows of dim). */
typedef struct rows_args {
    const float *src;
    const int32_t *idx;
    float *dst;
    size_t count, dim;
} rows_args;

/* Rows [i0, i1) of gather_rows: dst row i = src row idx[i]. */
static void gather_range(void *p, size_t i0, size_t i1) {
    const rows_args *a = p;
    const float *table = a->src;
    const int32_t *idx = a->idx;
    float *out = a->dst;
    size_t dim = a->dim;
    for (size_t i = i0; i < i1; i++)
        memcpy(out + i * dim, table + (size_t)idx[i] * dim, dim * sizeof(float));
}

strix_status cpu_gather_rows(strix_backend *be, const float *table, const int32_t *idx,
                             float *out, size_t count, size_t dim) {
    (void)be;
    rows_args a = {table, idx, out, count, dim};
    cpu_parallel_for(count, count > 1 && CPU_BIG(count * dim), gather_range, &a);
    return STRIX_OK;
}

/* Columns per chunk of scatter_add_rows (the unit the threads share out). */
#define SCATTER_CHUNK 64

/* Column chunks [c0, c1) of scatter_add_rows: dst row idx[i] += src row i, i ascending. */
static void scatter_add_range(void *p, size_t c0, size_t c1) {
    const rows_args *a = p;
    const float *src = a->src;
    const int32_t *idx = a->idx;
    float *table = a->dst;
    size_t count = a->count, dim = a->dim;
    for (size_t chunk = c0; chunk < c1; chunk++) {
        size_t col0 = chunk * SCATTER_CHUNK;
        size_t width = dim - col0 < SCATTER_CHUNK ? dim - col0 : SCATTER_CHUNK;
        for (size_t i = 0; i < count; i++) {
            const float *from = src + i * dim + col0;
            float *to = table + (size_t)idx[i] * dim + col0;
            for (size_t j = 0; j < width; j++) to[j] += from[j];
        }
    }
}

strix_status cpu_scatter_add_rows(strix_backend *be, const float *src, const int32_t *idx,
                                  float *table, size_t count, size_t dim) {
    (void)be;
    size_t chunks = (dim + SCATTER_CHUNK - 1) / SCATTER_CHUNK;
    rows_args a = {src, idx, table, count, dim};
    cpu_parallel_for(chunks, chunks > 1 && CPU_BIG(count * dim), scatter_add_range, &a);
    return STRIX_OK;
}

// ---- strided copies and row accumulation ------------------------------------------------------

/* Columns per chunk of accumulate_rows (the unit the threads share out). */
#define ACCUMULATE_CHUNK 64

/* Operands of accumulate_rows and copy_2d: (rows, cols) from src (row stride src_stride) to dst
 * (row stride dst_stride). */
typedef struct copy_args {
    const float *src;
    float *dst;
    size_t src_stride, dst_stride, rows, cols;
} copy_args;

/* Column chunks [c0, c1) of accumulate_rows. */
static void accumulate_range(void *p, size_t c0, size_t c1) {
    const copy_args *a = p;
    const float *in = a->src;
    float *out = a->dst;
    size_t rows = a->rows, cols = a->cols;
    for (size_t chunk = c0; chunk < c1; chunk++) {
        size_t col0 = chunk * ACCUMULATE_CHUNK;
        size_t width = cols - col0 < ACCUMULATE_CHUNK ? cols - col0 : ACCUMULATE_CHUNK;
        strix_accumulate_rows_cols(in, out, rows, cols, col0, width);
    }
}

strix_status cpu_accumulate_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                 size_t cols) {
    (void)be;
    size_t chunks = (cols + ACCUMULATE_CHUNK - 1) / ACCUMULATE_CHUNK;
    copy_args a = {in, out, cols, cols, rows, cols};
    cpu_parallel_for(chunks, chunks > 1 && CPU_BIG(rows * cols), accumulate_range, &a);
    return STRIX_OK;
}

static void copy_2d_range(void *p, size_t r0, size_t r1) {
    const copy_args *a = p;
    const float *src = a->src;
    float *dst = a->dst;
    size_t src_stride = a->src_stride, dst_stride = a->dst_stride, cols = a->cols;
    for (size_t r = r0; r < r1; r++)
        memcpy(dst + r * dst_stride, src + r * src_stride, cols * sizeof(float));
}

strix_status cpu_copy_2d(strix_backend *be, float *dst, size_t dst_stride, const float *src,
                         size_t src_stride, size_t rows, size_t cols) {
    (void)be;
    if (cols == 0) return STRIX_OK;
    copy_args a = {src, dst, src_stride, dst_stride, rows, cols};
    cpu_parallel_for(rows, rows > 1 && CPU_BIG(rows * cols), copy_2d_range, &a);
    return STRIX_OK;
}
