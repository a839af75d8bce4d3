/*
 * elementwise.cu - CUDA/HIP launchers of the elementwise, vector and reduction slots: add, mul,
 * axpby, clamp, column_sums, add_row_vector, activations forward/backward, sum, dot, sum_squares.
 * The CPU loops of src/backends/cpu/elementwise.c, one GPU thread per output lane calling the
 * same kernels/activations.h functions.
 *
 * Orders: by default column_sums and sum_squares sum in fixed trees of blocks (below; the order
 * depends on the shape only, so runs are bit-identical, and the results are the CPU's to
 * rounding). With the init option gpu_exact_reductions, column_sums gives each column one owner
 * thread that adds the rows ascending from 0.0f, and sum_squares follows its documented 32-lane
 * order on one block: the CPU's bits, slowly. sum and dot are the CPU's single ascending pass
 * for n <= SUM_SEQUENTIAL_MAX, and above it a fixed two-stage tree that depends on n only
 * (docs/SEMANTICS.md: multi-block dot/sum match the CPU to rounding). No atomics.
 */
#include "backends/cuda/block_reduce.h"
#include "backends/cuda/cuda_internal.h"
#include "kernels/activations.h"

/* Index of the calling thread in a 1-D launch of cuda_blocks(n) blocks of CUDA_BLOCK threads. */
static __device__ inline size_t lane_index(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

// ---- elementwise -------------------------------------------------------------------------------

static __global__ void add_kernel(const float *a, const float *b, float *out, size_t n) {
    size_t i = lane_index();
    if (i < n) out[i] = a[i] + b[i];
}

strix_status cuda_add(strix_backend *be, const float *a, const float *b, float *out, size_t n) {
    if (n == 0) return STRIX_OK;
    add_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(a, b, out, n);
    return cuda_launched(be, "add");
}

static __global__ void mul_kernel(const float *a, const float *b, float *out, size_t n) {
    size_t i = lane_index();
    if (i < n) out[i] = a[i] * b[i];
}

strix_status cuda_mul(strix_backend *be, const float *a, const float *b, float *out, size_t n) {
    if (n == 0) return STRIX_OK;
    mul_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(a, b, out, n);
    return cuda_launched(be, "mul");
}

/* beta == 0 never reads y (y may be NULL then), as the CPU. */
static __global__ void axpby_kernel(float alpha, const float *x, float beta, const float *y,
                                    float *out, size_t n) {
    size_t i = lane_index();
    if (i >= n) return;
    if (beta == 0.0f)
        out[i] = alpha * x[i];
    else
        out[i] = alpha * x[i] + beta * y[i];
}

strix_status cuda_axpby(strix_backend *be, float alpha, const float *x, float beta, const float *y,
                        float *out, size_t n) {
    if (n == 0) return STRIX_OK;
    axpby_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(alpha, x, beta, y, out, n);
    return cuda_launched(be, "axpby");
}

static __global__ void clamp_kernel(const float *in, float lo, float hi, float *out, size_t n) {
    size_t i = lane_index();
    if (i < n) out[i] = strix_clampf(in[i], lo, hi);
}

strix_status cuda_clamp(strix_backend *be, const float *in, float lo, float hi, float *out,
                        size_t n) {
    if (n == 0) return STRIX_OK;
    clamp_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, lo, hi, out, n);
    return cuda_launched(be, "clamp");
}

/* column_sums: a block of CUDA_BLOCK threads per COLSUM_COLS columns. Thread c < COLSUM_COLS
 * owns column j = block·COLSUM_COLS + c: sum = Σ_i in[i][j], i ascending from 0.0f (one running
 * float, the CPU's sum), then out[j] = sum (beta == 0: out not read) or beta·out[j] + sum. It
 * reads the rows from shared tiles of COLSUM_ROWS rows, which the block's other warps load, the
 * next tile while the owners add the current one (two buffers), so the adds never wait on memory
 * for long. */
#define COLSUM_COLS 32
#define COLSUM_ROWS 128

/* Rows [r0 + first, r0 + count) step `step` of the block's columns into tile (0 past cols). */
static __device__ inline void column_sums_load(const float *in, size_t cols, size_t j, size_t r0,
                                               size_t count, unsigned first, unsigned step,
                                               float (*tile)[COLSUM_COLS], unsigned c) {
    for (size_t rr = first; rr < count; rr += step)
        tile[rr][c] = j < cols ? in[(r0 + rr) * cols + j] : 0.0f;
}

static __global__ void column_sums_kernel(const float *in, float *out, size_t rows, size_t cols,
                                          float beta) {
    __shared__ float tile[2][COLSUM_ROWS][COLSUM_COLS];
    unsigned c = threadIdx.x % COLSUM_COLS;
    unsigned slot = threadIdx.x / COLSUM_COLS, slots = blockDim.x / COLSUM_COLS;
    size_t j = (size_t)blockIdx.x * COLSUM_COLS + c;
    size_t tiles = (rows + COLSUM_ROWS - 1) / COLSUM_ROWS;
    float sum = 0.0f;
    if (tiles > 0) /* tile 0: every warp loads */
        column_sums_load(in, cols, j, 0, rows < COLSUM_ROWS ? rows : COLSUM_ROWS, slot, slots,
                         tile[0], c);
    __syncthreads();
    for (size_t k = 0; k < tiles; k++) {
        size_t r0 = k * COLSUM_ROWS;
        if (slot > 0 && k + 1 < tiles) { /* warps 1.. load tile k + 1 into the other buffer */
            size_t next = r0 + COLSUM_ROWS;
            size_t count = rows - next < COLSUM_ROWS ? rows - next : COLSUM_ROWS;
            column_sums_load(in, cols, j, next, count, slot - 1, slots - 1, tile[(k + 1) & 1], c);
        }
        if (slot == 0) { /* warp 0 adds tile k, rows ascending */
            size_t count = rows - r0 < COLSUM_ROWS ? rows - r0 : COLSUM_ROWS;
            for (size_t rr = 0; rr < count; rr++) sum += tile[k & 1][rr][c];
        }
        __syncthreads();
    }
    if (slot == 0 && j < cols) out[j] = beta == 0.0f ? sum : beta * out[j] + sum;
}

/* column_sums, block form. The rows are cut into `chunks` runs of `chunk` rows (both from the
 * row count alone, column_sums_runs); block (x, y) sums the columns [32x, 32x + 32) over run y:
 * thread (c, s) of its 32 x COLSUM_SLOTS adds rows s, s + COLSUM_SLOTS, ... of the run ascending
 * from 0.0f (a warp reads 32 neighbouring floats of a row), the slots fold in halves, and
 * partial[y][j] is written. Then one thread per column adds its partials in ascending y from
 * 0.0f and applies beta. */
#define COLSUM_SLOTS 8
#define COLSUM_CHUNK_ROWS 256
#define COLSUM_MAX_CHUNKS 1024

static void column_sums_runs(size_t rows, size_t *chunks, size_t *chunk) {
    size_t n = (rows + COLSUM_CHUNK_ROWS - 1) / COLSUM_CHUNK_ROWS;
    *chunks = n < COLSUM_MAX_CHUNKS ? n : COLSUM_MAX_CHUNKS;
    *chunk = *chunks ? (rows + *chunks - 1) / *chunks : 0;
}

static __global__ void column_sums_partial_kernel(const float *in, float *partial, size_t rows,
                                                  size_t cols, size_t chunk) {
    __shared__ float part[COLSUM_SLOTS][COLSUM_COLS];
    unsigned c = threadIdx.x % COLSUM_COLS, s = threadIdx.x / COLSUM_COLS;
    size_t j = (size_t)blockIdx.x * COLSUM_COLS + c;
    size_t r0 = (size_t)blockIdx.y * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
    float sum = 0.0f;
    if (j < cols)
        for (size_t r = r0 + s; r < r1; r += COLSUM_SLOTS) sum += in[r * cols + j];
    part[s][c] = sum;
    __syncthreads();
    for (unsigned half = COLSUM_SLOTS / 2; half > 0; half /= 2) {
        if (s < half) part[s][c] += part[s + half][c];
        __syncthreads();
    }
    if (s == 0 && j < cols) partial[(size_t)blockIdx.y * cols + j] = part[0][c];
}

static __global__ void column_sums_finish_kernel(const float *partial, float *out, size_t chunks,
                                                 size_t cols, float beta) {
    size_t j = lane_index();
    if (j >= cols) return;
    float sum = 0.0f;
    for (size_t y = 0; y < chunks; y++) sum += partial[y * cols + j];
    out[j] = beta == 0.0f ? sum : beta * out[j] + sum;
}

strix_status cuda_column_sums(strix_backend *be, const float *in, float *out, size_t rows,
                              size_t cols, float beta) {
    if (cols == 0) return STRIX_OK;
    if (!cuda_exact_reductions(be)) {
        size_t chunks, chunk;
        column_sums_runs(rows, &chunks, &chunk);
        void *scratch = NULL;
        STRIX_TRY(cuda_scratch(be, (chunks ? chunks : 1) * cols * sizeof(float), &scratch));
        float *partial = (float *)scratch;
        cudaStream_t stream = cuda_stream(be);
        if (chunks > 0) {
            dim3 grid((unsigned)((cols + COLSUM_COLS - 1) / COLSUM_COLS), (unsigned)chunks);
            column_sums_partial_kernel<<<grid, COLSUM_COLS * COLSUM_SLOTS, 0, stream>>>(
                in, partial, rows, cols, chunk);
            STRIX_TRY(cuda_launched(be, "column_sums"));
        }
        column_sums_finish_kernel<<<cuda_blocks(cols), CUDA_BLOCK, 0, stream>>>(partial, out,
                                                                                chunks, cols, beta);
        return cuda_launched(be, "column_sums");
    }
    size_t blocks = (cols + COLSUM_COLS - 1) / COLSUM_COLS;
    column_sums_kernel<<<(unsigned)blocks, CUDA_BLOCK, 0, cuda_stream(be)>>>(in, out, rows, cols,
                                                                             beta);
    return cuda_launched(be, "column_sums");
}

/* One thread per element (i, j); out may alias in. */
static __global__ void add_row_vector_kernel(const float *in, const float *row, float *out,
                                             size_t rows, size_t cols) {
    size_t at = lane_index();
    if (at < rows * cols) out[at] = in[at] + row[at % cols];
}

strix_status cuda_add_row_vector(strix_backend *be, const float *in, const float *row, float *out,
                                 size_t rows, size_t cols) {
    size_t n = rows * cols;
    if (n == 0) return STRIX_OK;
    add_row_vector_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, row, out, rows,
                                                                              cols);
    return cuda_launched(be, "add_row_vector");
}

static __global__ void elementwise_kernel(strix_act op, const float *in, float *out, size_t n) {
    size_t i = lane_index();
    if (i < n) out[i] = strix_act_forward(op, in[i]);
}

strix_status cuda_elementwise(strix_backend *be, strix_act op, const float *in, float *out,
                              size_t n) {
    if (n == 0) return STRIX_OK;
    elementwise_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(op, in, out, n);
    return cuda_launched(be, "elementwise");
}

static __global__ void elementwise_backward_kernel(strix_act op, const float *x,
                                                   const float *grad_out, float *grad_in,
                                                   size_t n) {
    size_t i = lane_index();
    if (i < n) grad_in[i] = strix_act_backward(op, x[i], grad_out[i]);
}

strix_status cuda_elementwise_backward(strix_backend *be, strix_act op, const float *x,
                                       const float *grad_out, float *grad_in, size_t n) {
    if (n == 0) return STRIX_OK;
    elementwise_backward_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        op, x, grad_out, grad_in, n);
    return cuda_launched(be, "elementwise_backward");
}

// ---- sum and dot -------------------------------------------------------------------------------

/* Up to this n, sum and dot run on one thread in the CPU's order (ascending from 0.0f): the same
 * bits as the CPU, and cheap at this size (the GPT's loss sum is B·T values). */
#define SUM_SEQUENTIAL_MAX 4096
/* Blocks of the first stage above SUM_SEQUENTIAL_MAX: a constant, so the order depends on n
 * only, never on the device. */
#define SUM_BLOCKS 512

/* *out = Σ a[i] (b == NULL) or Σ a[i]·b[i], i ascending from 0.0f, on one thread. */
static __global__ void sum_sequential_kernel(const float *a, const float *b, size_t n,
                                             float *out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    float total = 0.0f;
    if (b) {
        for (size_t i = 0; i < n; i++) total += a[i] * b[i];
    } else {
        for (size_t i = 0; i < n; i++) total += a[i];
    }
    *out = total;
}

/* Stage 1 of the tree, SUM_BLOCKS blocks of CUDA_BLOCK threads (S = SUM_BLOCKS·CUDA_BLOCK
 * threads in all): thread g = block·CUDA_BLOCK + t sums the terms i = g, g + S, g + 2S, ...
 * ascending from 0.0f; the block then folds its CUDA_BLOCK sums in halves
 * (s[t] += s[t + h] for t < h, h = CUDA_BLOCK/2, ..., 1) and writes s[0] to partial[block].
 * Stage 2 (sum_sequential_kernel) adds the SUM_BLOCKS partials ascending from 0.0f. */
static __global__ void sum_partials_kernel(const float *a, const float *b, size_t n,
                                           float *partial) {
    __shared__ float sums[CUDA_BLOCK];
    size_t stride = (size_t)gridDim.x * blockDim.x;
    float total = 0.0f;
    if (b) {
        for (size_t i = lane_index(); i < n; i += stride) total += a[i] * b[i];
    } else {
        for (size_t i = lane_index(); i < n; i += stride) total += a[i];
    }
    total = block_sum(total, sums);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

/* Σ a[i] (b NULL) or Σ a[i]·b[i] to the host; `what` names the slot in errors. */
static strix_status sum_or_dot(strix_backend *be, const float *a, const float *b, size_t n,
                               float *out, const char *what) {
    if (n == 0) {
        *out = 0.0f;
        return STRIX_OK;
    }
    void *scratch = NULL;
    STRIX_TRY(cuda_scratch(be, (SUM_BLOCKS + 1) * sizeof(float), &scratch));
    float *partial = (float *)scratch, *result = partial + SUM_BLOCKS;
    cudaStream_t stream = cuda_stream(be);
    if (n <= SUM_SEQUENTIAL_MAX) {
        sum_sequential_kernel<<<1, 1, 0, stream>>>(a, b, n, result);
        STRIX_TRY(cuda_launched(be, what));
    } else {
        sum_partials_kernel<<<SUM_BLOCKS, CUDA_BLOCK, 0, stream>>>(a, b, n, partial);
        STRIX_TRY(cuda_launched(be, what));
        sum_sequential_kernel<<<1, 1, 0, stream>>>(partial, NULL, SUM_BLOCKS, result);
        STRIX_TRY(cuda_launched(be, what));
    }
    return cuda_download(be, out, result, sizeof(float));
}

strix_status cuda_sum(strix_backend *be, const float *in, size_t n, float *out) {
    return sum_or_dot(be, in, NULL, n, out, "sum");
}

strix_status cuda_dot(strix_backend *be, const float *a, const float *b, size_t n, float *out) {
    return sum_or_dot(be, a, b, n, out, "dot");
}

// ---- sum_squares -------------------------------------------------------------------------------

/* The 32 lanes of the documented order (include/strix/backend.h; CPU: SQUARE_LANES). */
#define SQUARE_LANES 32
/* Elements per tile: the block stages a tile in shared memory with coalesced loads, then the
 * lane threads add it; loads of a tile overlap, the lanes' add chains stay in order. */
#define SQUARE_TILE (SQUARE_LANES * 256)

/* One block of CUDA_BLOCK threads. Lane l (thread l < 32) sums in[i]², i ≡ l (mod 32) ascending
 * from 0.0 in double, tile after tile; the lanes are then folded in halves (lane l += lane
 * l + 16, then + 8, + 4, + 2, + 1) and lane 0 is written: the CPU's order, so its bits. */
static __global__ void sum_squares_kernel(const float *in, size_t n, double *out) {
    __shared__ float tile[SQUARE_TILE];
    __shared__ double lanes[SQUARE_LANES];
    unsigned t = threadIdx.x;
    double lane_sum = 0.0;
    for (size_t base = 0; base < n; base += SQUARE_TILE) {
        size_t count = n - base < SQUARE_TILE ? n - base : SQUARE_TILE;
        for (size_t k = t; k < count; k += blockDim.x) tile[k] = in[base + k];
        __syncthreads();
        if (t < SQUARE_LANES) {
            /* base is a multiple of 32: tile index k = t + 32·m is element i ≡ t (mod 32). */
            for (size_t k = t; k < count; k += SQUARE_LANES)
                lane_sum += (double)tile[k] * (double)tile[k];
        }
        __syncthreads();
    }
    if (t < SQUARE_LANES) lanes[t] = lane_sum;
    __syncthreads();
    for (unsigned half = SQUARE_LANES / 2; half > 0; half /= 2) {
        if (t < half) lanes[t] += lanes[t + half];
        __syncthreads();
    }
    if (t == 0) *out = lanes[0];
}

/* sum_squares, block form: SQUARE_BLOCKS blocks of CUDA_BLOCK threads (S threads in all, a
 * constant, so the order depends on n only): thread g sums in[i]² for i = g, g + S, ...
 * ascending from 0.0 in double; the block folds its sums in halves into partial[block]; then one
 * thread adds the partials ascending from 0.0. */
#define SQUARE_BLOCKS 512

static __global__ void sum_squares_partial_kernel(const float *in, size_t n, double *partial) {
    __shared__ double sums[CUDA_BLOCK];
    size_t stride = (size_t)gridDim.x * blockDim.x;
    double total = 0.0;
    for (size_t i = lane_index(); i < n; i += stride) total += (double)in[i] * (double)in[i];
    total = block_sum(total, sums);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

static __global__ void sum_squares_finish_kernel(double *partial) {
    double total = 0.0;
    for (unsigned b = 0; b < SQUARE_BLOCKS; b++) total += partial[b];
    partial[SQUARE_BLOCKS] = total;
}

strix_status cuda_sum_squares(strix_backend *be, const float *in, size_t n, double *out) {
    if (n == 0) {
        *out = 0.0;
        return STRIX_OK;
    }
    void *scratch = NULL;
    if (!cuda_exact_reductions(be)) {
        STRIX_TRY(cuda_scratch(be, (SQUARE_BLOCKS + 1) * sizeof(double), &scratch));
        double *partial = (double *)scratch;
        cudaStream_t stream = cuda_stream(be);
        sum_squares_partial_kernel<<<SQUARE_BLOCKS, CUDA_BLOCK, 0, stream>>>(in, n, partial);
        STRIX_TRY(cuda_launched(be, "sum_squares"));
        sum_squares_finish_kernel<<<1, 1, 0, stream>>>(partial);
        STRIX_TRY(cuda_launched(be, "sum_squares"));
        return cuda_download(be, out, partial + SQUARE_BLOCKS, sizeof(double));
    }
    STRIX_TRY(cuda_scratch(be, sizeof(double), &scratch));
    double *result = (double *)scratch;
    sum_squares_kernel<<<1, CUDA_BLOCK, 0, cuda_stream(be)>>>(in, n, result);
    STRIX_TRY(cuda_launched(be, "sum_squares"));
    return cuda_download(be, out, result, sizeof(double));
}
