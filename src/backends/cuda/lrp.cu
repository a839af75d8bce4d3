/*
 * lrp.cu - CUDA/HIP launchers of the LRP rules (include/strix/ops/lrp.h); the math is
 * src/kernels/lrp.h, the same functions the CPU loops of src/backends/cpu/lrp.c call.
 *
 * One thread per output. The affine rules (linear, conv, bilinear matmul) run the kernels'
 * `_at` functions: each thread sums its own terms in the documented order (slow but exact: the
 * CPU's blocked loops perform the same operations per output, so the bits agree). The softmax
 * rule runs one thread per row (its output may alias its inputs, and every output of a row needs
 * the row's sum), RoPE one thread per rotated pair. No atomics, no shared memory.
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/lrp.h"

/* Global index of the calling thread (one lane each). */
static __device__ inline size_t lrp_lane(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

// ---- kernels -----------------------------------------------------------------------------------

/* Lane (row, i) of (rows, in_features). */
static __global__ void lrp_linear_kernel(const float *x, const float *w, const float *z,
                                         const float *r, float *r_in, size_t rows,
                                         size_t in_features, size_t out_features, float eps) {
    size_t o = lrp_lane();
    if (o >= rows * in_features) return;
    size_t row = o / in_features, i = o % in_features;
    r_in[o] = strix_lrp_linear_at(x + row * in_features, w, z + row * out_features,
                                  r + row * out_features, i, in_features, out_features, eps);
}

static __global__ void lrp_residual_kernel(const float *a, const float *b, const float *r,
                                           float *r_a, float *r_b, size_t n, float eps) {
    size_t i = lrp_lane();
    if (i >= n) return;
    float ra, rb;
    strix_lrp_residual_at(a[i], b[i], r[i], eps, &ra, &rb);
    r_a[i] = ra;
    r_b[i] = rb;
}

static __global__ void lrp_bilinear_elementwise_kernel(const float *a, const float *b,
                                                       const float *r, float *r_out, size_t n,
                                                       float eps) {
    size_t i = lrp_lane();
    if (i >= n) return;
    r_out[i] = strix_lrp_bilinear_elementwise_at(a[i], b[i], r[i], eps);
}

/* Lane (slice, i, j) of r_a (slices, m, p). */
static __global__ void lrp_bilinear_a_kernel(const float *a, const float *b, const float *o,
                                             const float *r_o, float *r_a, size_t slices,
                                             size_t m, size_t p, size_t q, float eps,
                                             bool b_transposed) {
    size_t lane = lrp_lane();
    if (lane >= slices * m * p) return;
    size_t s = lane / (m * p), ij = lane % (m * p), i = ij / p, j = ij % p;
    r_a[lane] = strix_lrp_bilinear_a_at(a + s * m * p, b + s * p * q, o + s * m * q,
                                        r_o + s * m * q, i, j, p, q, eps, b_transposed);
}

/* Lane (slice, stored index) of r_b, stored (p, q) or (q, p) when transposed. */
static __global__ void lrp_bilinear_b_kernel(const float *a, const float *b, const float *o,
                                             const float *r_o, float *r_b, size_t slices,
                                             size_t m, size_t p, size_t q, float eps,
                                             bool b_transposed) {
    size_t lane = lrp_lane();
    if (lane >= slices * p * q) return;
    size_t s = lane / (p * q), at = lane % (p * q);
    size_t j = b_transposed ? at % p : at / q, k = b_transposed ? at / p : at % q;
    r_b[lane] = strix_lrp_bilinear_b_at(a + s * m * p, b + s * p * q, o + s * m * q,
                                        r_o + s * m * q, j, k, m, p, q, eps, b_transposed);
}

/* Lane = row. */
static __global__ void lrp_softmax_kernel(const float *x, const float *y, const float *r,
                                          float *r_in, size_t rows, size_t cols) {
    size_t row = lrp_lane();
    if (row >= rows) return;
    size_t at = row * cols;
    strix_lrp_softmax_row(x + at, y + at, r + at, r_in + at, cols);
}

/* Lane (row, pair). */
static __global__ void lrp_rope_kernel(const float *x, const float *y, const float *r,
                                       const float *cos_table, const float *sin_table,
                                       float *r_in, size_t rows, size_t seq_len,
                                       size_t head_dim, float eps) {
    size_t half = head_dim / 2, lane = lrp_lane();
    if (lane >= rows * half) return;
    size_t row = lane / half, pair = lane % half, at = row * head_dim, pos = row % seq_len;
    strix_lrp_rope_pair(x + at, y + at, r + at, cos_table[pos * half + pair],
                        sin_table[pos * half + pair], r_in + at, pair, eps);
}

/* Lane (example, p, q) of r_col (n, P, Q). */
static __global__ void lrp_conv_kernel(const float *col, const float *kernel, const float *z,
                                       const float *r, float *r_col, size_t n,
                                       size_t out_channels, size_t p, size_t q, float eps) {
    size_t lane = lrp_lane();
    if (lane >= n * p * q) return;
    size_t ex = lane / (p * q), pq = lane % (p * q), pp = pq / q, qq = pq % q;
    r_col[lane] = strix_lrp_conv_at(col + ex * p * q, kernel, z + ex * out_channels * q,
                                    r + ex * out_channels * q, pp, qq, out_channels, p, q, eps);
}

/* Lane (plane, y, x) of r_in (planes, h, w); `+=`. */
static __global__ void lrp_avg_pool_kernel(const float *x, const float *r, float *r_in,
                                           size_t planes, size_t h, size_t w, size_t oh,
                                           size_t ow, strix_conv_geom g, float eps) {
    size_t lane = lrp_lane();
    if (lane >= planes * h * w) return;
    size_t plane = lane / (h * w), yx = lane % (h * w), yy = yx / w, xx = yx % w;
    r_in[lane] += strix_lrp_avg_pool_at(x + plane * h * w, r + plane * oh * ow, h, w, oh, ow, yy,
                                        xx, g.kh, g.kw, g.stride_h, g.stride_w, g.pad_h, g.pad_w,
                                        eps);
}

static __global__ void lrp_divide_kernel(const float *r, const float *den, const float *gate,
                                         float *out, size_t n, float eps, int mode) {
    size_t i = lrp_lane();
    if (i >= n) return;
    out[i] = strix_lrp_divide_at(r[i], den[i], gate ? gate[i] : 0.0f, mode, eps);
}

// ---- launchers ---------------------------------------------------------------------------------

strix_status cuda_lrp_linear(strix_backend *be, const float *x, const float *w, const float *z,
                             const float *r, float *r_in, size_t rows, size_t in_features,
                             size_t out_features, float eps) {
    size_t lanes = rows * in_features;
    if (lanes == 0) return STRIX_OK;
    lrp_linear_kernel<<<cuda_blocks(lanes), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        x, w, z, r, r_in, rows, in_features, out_features, eps);
    return cuda_launched(be, "lrp_linear");
}

strix_status cuda_lrp_residual_split(strix_backend *be, const float *a, const float *b,
                                     const float *r, float *r_a, float *r_b, size_t n, float eps) {
    if (n == 0) return STRIX_OK;
    lrp_residual_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(a, b, r, r_a, r_b, n,
                                                                             eps);
    return cuda_launched(be, "lrp_residual_split");
}

strix_status cuda_lrp_bilinear_elementwise(strix_backend *be, const float *a, const float *b,
                                           const float *r, float *r_out, size_t n, float eps) {
    if (n == 0) return STRIX_OK;
    lrp_bilinear_elementwise_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        a, b, r, r_out, n, eps);
    return cuda_launched(be, "lrp_bilinear_elementwise");
}

strix_status cuda_lrp_bilinear_matmul(strix_backend *be, const float *a, const float *b,
                                      const float *o, const float *r_o, float *r_a, float *r_b,
                                      size_t slices, size_t m, size_t p, size_t q, float eps,
                                      bool b_transposed) {
    size_t a_lanes = slices * m * p, b_lanes = slices * p * q;
    if (a_lanes > 0) {
        lrp_bilinear_a_kernel<<<cuda_blocks(a_lanes), CUDA_BLOCK, 0, cuda_stream(be)>>>(
            a, b, o, r_o, r_a, slices, m, p, q, eps, b_transposed);
        STRIX_TRY(cuda_launched(be, "lrp_bilinear_matmul (r_a)"));
    }
    if (b_lanes > 0) {
        lrp_bilinear_b_kernel<<<cuda_blocks(b_lanes), CUDA_BLOCK, 0, cuda_stream(be)>>>(
            a, b, o, r_o, r_b, slices, m, p, q, eps, b_transposed);
        STRIX_TRY(cuda_launched(be, "lrp_bilinear_matmul (r_b)"));
    }
    return STRIX_OK;
}

strix_status cuda_lrp_softmax_rows(strix_backend *be, const float *x, const float *y,
                                   const float *r, float *r_in, size_t rows, size_t cols) {
    if (rows == 0 || cols == 0) return STRIX_OK;
    lrp_softmax_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(x, y, r, r_in, rows,
                                                                            cols);
    return cuda_launched(be, "lrp_softmax_rows");
}

strix_status cuda_lrp_rope(strix_backend *be, const float *x, const float *y, const float *r,
                           const float *cos_table, const float *sin_table, float *r_in,
                           size_t rows, size_t seq_len, size_t head_dim, float eps) {
    size_t lanes = rows * (head_dim / 2);
    if (lanes == 0) return STRIX_OK;
    lrp_rope_kernel<<<cuda_blocks(lanes), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        x, y, r, cos_table, sin_table, r_in, rows, seq_len, head_dim, eps);
    return cuda_launched(be, "lrp_rope");
}

strix_status cuda_lrp_conv(strix_backend *be, const float *col, const float *kernel,
                           const float *z, const float *r, float *r_col, size_t n,
                           size_t out_channels, size_t p, size_t q, float eps) {
    size_t lanes = n * p * q;
    if (lanes == 0) return STRIX_OK;
    lrp_conv_kernel<<<cuda_blocks(lanes), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        col, kernel, z, r, r_col, n, out_channels, p, q, eps);
    return cuda_launched(be, "lrp_conv");
}

strix_status cuda_lrp_avg_pool(strix_backend *be, const float *x, const float *r, float *r_in,
                               size_t planes, size_t h, size_t w, const strix_conv_geom *g,
                               float eps) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w), lanes = planes * h * w;
    if (lanes == 0) return STRIX_OK;
    lrp_avg_pool_kernel<<<cuda_blocks(lanes), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        x, r, r_in, planes, h, w, oh, ow, *g, eps);
    return cuda_launched(be, "lrp_avg_pool");
}

strix_status cuda_lrp_stabilized_divide(strix_backend *be, const float *r, const float *den,
                                        const float *gate, float *out, size_t n, float eps,
                                        strix_lrp_gate gate_mode) {
    if (n == 0) return STRIX_OK;
    lrp_divide_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(r, den, gate, out, n, eps,
                                                                          (int)gate_mode);
    return cuda_launched(be, "lrp_stabilized_divide");
}
