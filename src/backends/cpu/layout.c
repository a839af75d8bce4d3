/*
 * layout.c - the CPU backend's position and data-movement slots: RoPE (interleaved and
 * rotate-half), permute_0213, gather_rows, scatter_add_rows, copy_2d and accumulate_rows.
 *
 * Data movement is bit-exact. scatter_add_rows and accumulate_rows add in ascending i for every
 * column; OpenMP splits columns, never i, so the sums keep their order on any thread count.
 */
#include <string.h>

#include "backends/cpu/cpu_internal.h"
#include "kernels/rope.h"
#include "kernels/rows.h"

/* Rows r of `in` rotated at positions pos0 + r % seq_len, in the interleaved or the rotate-half
 * layout; rows are independent. */
static void rope_rows(const float *in, size_t ld_in, const float *cos_table,
                      const float *sin_table, float *out, size_t ld_out, size_t rows,
                      size_t seq_len, size_t pos0, size_t head_dim, bool inverse,
                      bool rotate_half) {
    size_t half = head_dim / 2;
    CPU_PARALLEL_FOR_IF(rows > 1 && CPU_BIG(rows * head_dim))
    for (size_t r = 0; r < rows; r++) {
        size_t pos = pos0 + r % seq_len;
        const float *c = cos_table + pos * half, *s = sin_table + pos * half;
        const float *x = in + r * ld_in;
        float *y = out + r * ld_out;
        if (rotate_half) strix_rope_half_row(x, y, c, s, head_dim, inverse);
        else strix_rope_row(x, y, c, s, head_dim, inverse);
    }
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

strix_status cpu_permute_0213(strix_backend *be, const float *in, float *out, size_t d0,
                              size_t d1, size_t d2, size_t d3) {
    (void)be;
    size_t outer = d0 * d2; /* output rows of (d1, d3) blocks: (i0, i2) */
    size_t row_bytes = d3 * sizeof(float);
    CPU_PARALLEL_FOR_IF(outer > 1 && CPU_BIG(d0 * d1 * d2 * d3))
    for (size_t block = 0; block < outer; block++) {
        size_t i0 = block / d2, i2 = block % d2;
        for (size_t i1 = 0; i1 < d1; i1++) {
            const float *src = in + ((i0 * d1 + i1) * d2 + i2) * d3;
            float *dst = out + ((i0 * d2 + i2) * d1 + i1) * d3;
            memcpy(dst, src, row_bytes);
        }
    }
    return STRIX_OK;
}

strix_status cpu_gather_rows(strix_backend *be, const float *table, const int32_t *idx,
                             float *out, size_t count, size_t dim) {
    (void)be;
    CPU_PARALLEL_FOR_IF(count > 1 && CPU_BIG(count * dim))
    for (size_t i = 0; i < count; i++)
        memcpy(out + i * dim, table + (size_t)idx[i] * dim, dim * sizeof(float));
    return STRIX_OK;
}

/* Columns per chunk of scatter_add_rows (the unit OpenMP hands out). */
#define SCATTER_CHUNK 64

strix_status cpu_scatter_add_rows(strix_backend *be, const float *src, const int32_t *idx,
                                  float *table, size_t count, size_t dim) {
    (void)be;
    size_t chunks = (dim + SCATTER_CHUNK - 1) / SCATTER_CHUNK;
    CPU_PARALLEL_FOR_IF(chunks > 1 && CPU_BIG(count * dim))
    for (size_t chunk = 0; chunk < chunks; chunk++) {
        size_t col0 = chunk * SCATTER_CHUNK;
        size_t width = dim - col0 < SCATTER_CHUNK ? dim - col0 : SCATTER_CHUNK;
        for (size_t i = 0; i < count; i++) {
            const float *from = src + i * dim + col0;
            float *to = table + (size_t)idx[i] * dim + col0;
            for (size_t j = 0; j < width; j++) to[j] += from[j];
        }
    }
    return STRIX_OK;
}

// ---- strided copies and row accumulation ------------------------------------------------------

/* Columns per chunk of accumulate_rows (the unit OpenMP hands out). */
#define ACCUMULATE_CHUNK 64

strix_status cpu_accumulate_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                 size_t cols) {
    (void)be;
    size_t chunks = (cols + ACCUMULATE_CHUNK - 1) / ACCUMULATE_CHUNK;
    CPU_PARALLEL_FOR_IF(chunks > 1 && CPU_BIG(rows * cols))
    for (size_t chunk = 0; chunk < chunks; chunk++) {
        size_t col0 = chunk * ACCUMULATE_CHUNK;
        size_t width = cols - col0 < ACCUMULATE_CHUNK ? cols - col0 : ACCUMULATE_CHUNK;
        strix_accumulate_rows_cols(in, out, rows, cols, col0, width);
    }
    return STRIX_OK;
}

strix_status cpu_copy_2d(strix_backend *be, float *dst, size_t dst_stride, const float *src,
                         size_t src_stride, size_t rows, size_t cols) {
    (void)be;
    if (cols == 0) return STRIX_OK;
    CPU_PARALLEL_FOR_IF(rows > 1 && CPU_BIG(rows * cols))
    for (size_t r = 0; r < rows; r++)
        memcpy(dst + r * dst_stride, src + r * src_stride, cols * sizeof(float));
    return STRIX_OK;
}
