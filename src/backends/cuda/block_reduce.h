/*
 * block_reduce.h - the block-per-row pattern of the CUDA/HIP backend (rows.cu, norm.cu): one
 * block of row_threads(width) threads per row (or channel), grid-striding over the rows. Thread t
 * takes the elements t, t + nt, t + 2·nt, ... in ascending order (coalesced: neighbouring threads
 * read neighbouring floats), and the block combines the threads' partial results in a fixed
 * binary tree in shared memory: t with t + s for s = nt/2, nt/4, ..., 1.
 *
 * The order depends only on the width, never on scheduling: two runs give the same bits, with no
 * atomics and no warp shuffles (vendor.h). It is not the CPU's ascending order, so results match
 * the CPU to rounding; the one-thread-per-row kernels (init option gpu_exact_reductions) keep
 * the CPU's bits. Every thread of a block must reach each block_sum/block_max (the branches
 * around them depend on the row only). tests/gpu_emu runs these with real barriers (gen.cmake sets
 * EMU_THREADED in a file that includes this header).
 */
#ifndef STRIX_CUDA_BLOCK_REDUCE_H
#define STRIX_CUDA_BLOCK_REDUCE_H

#include "backends/cuda/cuda_internal.h"
#include "kernels/common.h"

/* Most threads of a row block (a power of two), and most blocks of a row grid. */
#define ROW_THREADS_MAX 256
#define ROW_GRID_MAX 65535u

/* Threads for a row of `width` elements: a power of two from 32 to ROW_THREADS_MAX, about four
 * elements a thread. */
static inline unsigned row_threads(size_t width) {
    unsigned nt = 32;
    while (nt < ROW_THREADS_MAX && (size_t)nt * 4 < width) nt *= 2;
    return nt;
}

/* Blocks for `rows` rows (each block strides over rows by the grid size). */
static inline unsigned row_grid(size_t rows) {
    return rows < ROW_GRID_MAX ? (unsigned)rows : ROW_GRID_MAX;
}

/* Row r of this block's rows: for (size_t r = ROW_FIRST; r < rows; r += ROW_STRIDE). */
#define ROW_FIRST ((size_t)blockIdx.x)
#define ROW_STRIDE ((size_t)gridDim.x)
/* The elements j of a row of `width` this thread takes, ascending. */
#define FOR_MY_ELEMENTS(j, width) for (size_t j = threadIdx.x; j < (width); j += blockDim.x)

/* Σ of every thread's v (float or double) by the fixed tree; every thread gets the total. buf:
 * shared memory of blockDim.x values, free again on return. */
template <typename T> static __device__ inline T block_sum(T v, T *buf) {
    unsigned t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) buf[t] = buf[t] + buf[t + s];
        __syncthreads();
    }
    T total = buf[0];
    __syncthreads();
    return total;
}

/* The largest of every thread's v (NaN-free partials: each starts at -inf and takes x only when
 * x > it, as strix_row_max), by the same tree. */
static __device__ inline float block_max(float v, float *buf) {
    unsigned t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s && buf[t + s] > buf[t]) buf[t] = buf[t + s];
        __syncthreads();
    }
    float best = buf[0];
    __syncthreads();
    return best;
}

/* Mean and std = sqrt(Σ(x − mean)²/width + eps) of the contiguous x[0..width) (two passes,
 * the variance biased), the normalisations' statistics; every thread gets them. */
static __device__ inline void block_mean_std(const float *x, size_t width, float eps, float *buf,
                                             float *mean, float *std) {
    float part = 0.0f;
    FOR_MY_ELEMENTS(j, width) part += x[j];
    float m = block_sum(part, buf) / (float)width;
    part = 0.0f;
    FOR_MY_ELEMENTS(j, width) {
        float centred = x[j] - m;
        part += centred * centred;
    }
    *mean = m;
    *std = sqrtf(block_sum(part, buf) / (float)width + eps);
}

#endif
