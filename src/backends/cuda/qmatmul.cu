/*
 * qmatmul.cu - CUDA/HIP launcher of matmul_blocks: y (rows, out) = x (rows, in) · Wᵀ with W in
 * ggml's block format (CPU: src/backends/cpu/qmatmul.c).
 *
 * The simple form: one thread per y element calls kernels/quant.h's strix_quant_dot on its W row
 * and x row, decoding one block at a time into a local buffer, in the order the CPU uses (16 lane
 * sums, the pairwise fold), so it gives the CPU's bits (no contraction: -fmad=false). W rows are
 * not shared between threads through shared memory, and nothing is tiled: correct everywhere, not
 * tuned for speed.
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/quant.h"

/* One thread per (token r, output feature j), j fastest. */
static __global__ void matmul_blocks_kernel(const float *x, size_t rows, size_t in, int wtype,
                                            const uint8_t *w, size_t row_bytes, size_t out,
                                            float *y) {
    size_t lane = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (lane >= rows * out) return;
    size_t r = lane / out, j = lane % out;
    y[lane] = strix_quant_dot(wtype, w + j * row_bytes, x + r * in, in);
}

strix_status cuda_matmul_blocks(strix_backend *be, const float *x, size_t rows, size_t in,
                                int wtype, const void *w, size_t out, float *y) {
    if (rows == 0 || out == 0) return STRIX_OK;
    size_t block = 1, bytes = 0;
    strix_quant_block(wtype, &block, &bytes); /* the entry point checked the type and in */
    matmul_blocks_kernel<<<cuda_blocks(rows * out), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        x, rows, in, wtype, (const uint8_t *)w, in / block * bytes, out, y);
    return cuda_launched(be, "matmul_blocks");
}
