/*
 * layout.cu - CUDA/HIP launchers of the position and data-movement slots: RoPE (interleaved and
 * rotate-half), permute_0213, gather_rows, scatter_add_rows, copy_2d and accumulate_rows (CPU:
 * src/backends/cpu/layout.c).
 *
 * Data movement is one thread per output element, bit-exact. accumulate_rows is one thread per
 * column adding the rows in ascending order (kernels/rows.h), as the CPU. scatter_add_rows has no
 * atomics: it becomes a gather, one thread per (table row touched, column) that adds that row's
 * sources in ascending i, which is the CPU's order for every table element (see below).
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/rope.h"
#include "kernels/rows.h"

/* Index of the calling thread in a 1-D launch of cuda_blocks(n) blocks of CUDA_BLOCK threads. */
static __device__ inline size_t lane_index(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

/* One thread per (row r, pair), in the interleaved or the rotate-half layout: row r is at
 * position pos0 + r mod seq_len. out may alias in (each thread reads its pair before writing
 * it). */
static __global__ void rope_kernel(const float *in, size_t ld_in, const float *cos_table,
                                   const float *sin_table, float *out, size_t ld_out, size_t rows,
                                   size_t seq_len, size_t pos0, size_t half, bool inverse,
                                   bool rotate_half) {
    size_t lane = lane_index();
    if (lane >= rows * half) return;
    size_t r = lane / half, pair = lane % half;
    size_t pos = pos0 + r % seq_len;
    const float *c = cos_table + pos * half, *s = sin_table + pos * half;
    const float *x = in + r * ld_in;
    float *y = out + r * ld_out;
    if (rotate_half) strix_rope_half_pair(x, y, c, s, pair, half, inverse);
    else strix_rope_pair(x, y, c, s, pair, inverse);
}

static strix_status rope_launch(strix_backend *be, const float *in, size_t ld_in,
                                const float *cos_table, const float *sin_table, float *out,
                                size_t ld_out, size_t rows, size_t seq_len, size_t pos0,
                                size_t head_dim, bool inverse, bool rotate_half,
                                const char *name) {
    size_t half = head_dim / 2;
    if (rows == 0 || half == 0) return STRIX_OK;
    rope_kernel<<<cuda_blocks(rows * half), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        in, ld_in, cos_table, sin_table, out, ld_out, rows, seq_len, pos0, half, inverse,
        rotate_half);
    return cuda_launched(be, name);
}

strix_status cuda_rope_rotate(strix_backend *be, const float *in, size_t ld_in,
                              const float *cos_table, const float *sin_table, float *out,
                              size_t ld_out, size_t rows, size_t seq_len, size_t pos0,
                              size_t head_dim, bool inverse) {
    return rope_launch(be, in, ld_in, cos_table, sin_table, out, ld_out, rows, seq_len, pos0,
                       head_dim, inverse, false, "rope_rotate");
}

strix_status cuda_rope_rotate_half(strix_backend *be, const float *in, size_t ld_in,
                                   const float *cos_table, const float *sin_table, float *out,
                                   size_t ld_out, size_t rows, size_t seq_len, size_t pos0,
                                   size_t head_dim, bool inverse) {
    return rope_launch(be, in, ld_in, cos_table, sin_table, out, ld_out, rows, seq_len, pos0,
                       head_dim, inverse, true, "rope_rotate_half");
}

/* One thread per output element of (d0, d2, d1, d3): out[i0][i2][i1][i3] = in[i0][i1][i2][i3]. */
static __global__ void permute_0213_kernel(const float *in, float *out, size_t d0, size_t d1,
                                           size_t d2, size_t d3) {
    size_t at = lane_index();
    if (at >= d0 * d1 * d2 * d3) return;
    size_t i3 = at % d3, rest = at / d3;
    size_t i1 = rest % d1;
    rest /= d1;
    size_t i2 = rest % d2, i0 = rest / d2;
    out[at] = in[((i0 * d1 + i1) * d2 + i2) * d3 + i3];
}

strix_status cuda_permute_0213(strix_backend *be, const float *in, float *out, size_t d0,
                               size_t d1, size_t d2, size_t d3) {
    size_t n = d0 * d1 * d2 * d3;
    if (n == 0) return STRIX_OK;
    permute_0213_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, out, d0, d1, d2,
                                                                            d3);
    return cuda_launched(be, "permute_0213");
}

/* One thread per output element (i, j): out[i][j] = table[idx[i]][j]. */
static __global__ void gather_rows_kernel(const float *table, const int32_t *idx, float *out,
                                          size_t count, size_t dim) {
    size_t at = lane_index();
    if (at >= count * dim) return;
    size_t i = at / dim, j = at % dim;
    out[at] = table[(size_t)idx[i] * dim + j];
}

strix_status cuda_gather_rows(strix_backend *be, const float *table, const int32_t *idx,
                              float *out, size_t count, size_t dim) {
    size_t n = count * dim;
    if (n == 0) return STRIX_OK;
    gather_rows_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(table, idx, out, count,
                                                                           dim);
    return cuda_launched(be, "gather_rows");
}

// ---- scatter_add_rows as a gather --------------------------------------------------------------

/* The CPU adds, for every column, table[idx[i]][j] += src[i][j] with i ascending. Here:
 * 1. scatter_group_kernel, one thread per i, counts (all i' < count, in tiles staged in shared
 *    memory): less = #{i' : idx[i'] < idx[i]}, before = #{i' < i : idx[i'] == idx[i]},
 *    same = #{i' : idx[i'] == idx[i]}. rank = less + before is i's place in the stable order of
 *    (idx, i), so order[rank] = i lists the sources of each table row together, i ascending. The
 *    first source of a row (before == 0) records its group: start[i] = rank, size[i] = same;
 *    the others record start[i] = -1.
 * 2. scatter_add_kernel, one thread per (i, column j) with start[i] >= 0: acc = table[idx[i]][j],
 *    then acc += src[order[start + q]][j] for q = 0, 1, ... size − 1 (i ascending), stored once.
 *    Every partial sum is a float, as the CPU's stores, so the bits are the CPU's.
 * Cost: count² integer compares (step 1, no column factor) plus count·dim adds. */
#define SCATTER_TILE CUDA_BLOCK

static __global__ void scatter_group_kernel(const int32_t *idx, size_t count, int32_t *order,
                                            int32_t *start, int32_t *size) {
    __shared__ int32_t tile[SCATTER_TILE];
    size_t i = lane_index();
    int32_t mine = i < count ? idx[i] : 0;
    size_t less = 0, before = 0, same = 0;
    for (size_t base = 0; base < count; base += SCATTER_TILE) {
        size_t width = count - base < SCATTER_TILE ? count - base : SCATTER_TILE;
        if (threadIdx.x < width) tile[threadIdx.x] = idx[base + threadIdx.x];
        __syncthreads();
        for (size_t k = 0; k < width; k++) {
            int32_t other = tile[k];
            less += other < mine;
            same += other == mine;
            before += other == mine && base + k < i;
        }
        __syncthreads();
    }
    if (i >= count) return;
    size_t rank = less + before;
    order[rank] = (int32_t)i;
    start[i] = before == 0 ? (int32_t)rank : -1;
    size[i] = (int32_t)same;
}

static __global__ void scatter_add_kernel(const float *src, const int32_t *idx, float *table,
                                          size_t count, size_t dim, const int32_t *order,
                                          const int32_t *start, const int32_t *size) {
    size_t at = lane_index();
    if (at >= count * dim) return;
    size_t i = at / dim, j = at % dim;
    if (start[i] < 0) return;
    size_t first = (size_t)start[i], n = (size_t)size[i];
    float *to = table + (size_t)idx[i] * dim + j;
    float acc = *to;
    for (size_t q = 0; q < n; q++) acc += src[(size_t)order[first + q] * dim + j];
    *to = acc;
}

strix_status cuda_scatter_add_rows(strix_backend *be, const float *src, const int32_t *idx,
                                   float *table, size_t count, size_t dim) {
    if (count == 0 || dim == 0) return STRIX_OK;
    STRIX_ASSERT(count <= (size_t)INT32_MAX, "scatter_add_rows: count %zu over INT32_MAX", count);
    void *scratch = NULL;
    STRIX_TRY(cuda_scratch(be, 3 * count * sizeof(int32_t), &scratch));
    int32_t *order = (int32_t *)scratch, *start = order + count, *size = start + count;
    cudaStream_t stream = cuda_stream(be);
    scatter_group_kernel<<<cuda_blocks(count), CUDA_BLOCK, 0, stream>>>(idx, count, order, start,
                                                                         size);
    STRIX_TRY(cuda_launched(be, "scatter_add_rows"));
    scatter_add_kernel<<<cuda_blocks(count * dim), CUDA_BLOCK, 0, stream>>>(
        src, idx, table, count, dim, order, start, size);
    return cuda_launched(be, "scatter_add_rows");
}

// ---- strided copies and row accumulation ------------------------------------------------------

/* One thread per column j: out[j] += in[i][j], i ascending (strix_accumulate_rows_cols, width 1).
 */
static __global__ void accumulate_rows_kernel(const float *in, float *out, size_t rows,
                                              size_t cols) {
    size_t j = lane_index();
    if (j < cols) strix_accumulate_rows_cols(in, out, rows, cols, j, 1);
}

strix_status cuda_accumulate_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                  size_t cols) {
    if (rows == 0 || cols == 0) return STRIX_OK;
    accumulate_rows_kernel<<<cuda_blocks(cols), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, out, rows,
                                                                                  cols);
    return cuda_launched(be, "accumulate_rows");
}

/* One thread per element (r, c) of the copied block. */
static __global__ void copy_2d_kernel(float *dst, size_t dst_stride, const float *src,
                                      size_t src_stride, size_t rows, size_t cols) {
    size_t at = lane_index();
    if (at >= rows * cols) return;
    size_t r = at / cols, c = at % cols;
    dst[r * dst_stride + c] = src[r * src_stride + c];
}

strix_status cuda_copy_2d(strix_backend *be, float *dst, size_t dst_stride, const float *src,
                          size_t src_stride, size_t rows, size_t cols) {
    size_t n = rows * cols;
    if (n == 0) return STRIX_OK;
    copy_2d_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(dst, dst_stride, src,
                                                                       src_stride, rows, cols);
    return cuda_launched(be, "copy_2d");
}
