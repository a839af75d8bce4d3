/*
 * gemm.cu - the GEMM slots of the CUDA/HIP backend: C = alpha·op(A)·op(B) + beta·C, row-major,
 * any leading dimensions, both transposes, and the strided batched form (strix/backend.h).
 *
 * Two engines:
 *   - cuBLAS (hipBLAS) by default. Row-major trick: a row-major (m,n) C is the column-major
 *     (n,m) Cᵀ, and Cᵀ = op(B)ᵀ·op(A)ᵀ, so we ask for the column-major product with the operands
 *     swapped: cublasSgemm(op_b, op_a, n, m, k, B, ldb, A, lda, C, ldc), where op_x is T exactly
 *     when x is stored transposed. FP32 math and no atomics (the handle's settings in
 *     cuda_backend.cu), so results reproduce on the same GPU; they match the CPU only to rounding
 *     (cuBLAS picks its own summation order). beta == 0 never reads C (cuBLAS's rule too).
 *   - our own tiled SGEMM: used when the build has no vendor BLAS (HIP without hipBLAS), when
 *     STRIX_CUDA_GEMM=own is set (so it is tested on NVIDIA too), for k == 0 (C = beta·C;
 *     strix_gemm_batched sends alpha == 0 as k = 0), and for sizes past cuBLAS's int range.
 *     64×64 output tiles per block of 256 threads, 16-deep k-slices staged in shared memory;
 *     each thread owns 4×4 outputs and sums each of them in ascending k from 0.0f, one fused
 *     multiply-add per product (fmaf: one rounding), then C = alpha·acc (+ beta·C): the same
 *     expression, in the same order, as the CPU's own kernel (src/backends/cpu/gemm.c), so it
 *     gives the CPU's bits. Slower than cuBLAS; correct everywhere.
 * The `skip` hint of strix_gemm_batch is ignored (allowed: the unwanted outputs are computed).
 */
#include <limits.h>
#include <math.h>

#include "backends/cuda/cuda_internal.h"

#define TG_BM 64  /* rows of C per block */
#define TG_BN 64  /* columns of C per block */
#define TG_BK 16  /* k-slice staged in shared memory */
#define TG_T 16   /* threads per block side: each owns (TG_BM / TG_T) × (TG_BN / TG_T) outputs */
#define TG_R (TG_BM / TG_T)
#define TG_C (TG_BN / TG_T)
#define TG_THREADS (TG_T * TG_T)
#define TG_MAX_GRID 65535u

/* One problem as the own kernel reads it (element strides and batch strides in floats). */
typedef struct tg_args {
    const float *a;
    size_t lda, stride_a;
    const float *b;
    size_t ldb, stride_b;
    float *c;
    size_t ldc, stride_c;
    size_t m, k, n, batch;
    float alpha, beta;
    bool ta, tb;
} tg_args;

/* Thread (tx, ty) of a block owns rows ty + TG_T·r and columns tx + TG_T·c of the block's tile
 * (r < TG_R, c < TG_C); grid-stride loops over row tiles (y) and batch items (z). */
static __global__ __launch_bounds__(TG_THREADS) void k_sgemm_tiled(tg_args g) {
    __shared__ float as[TG_BK][TG_BM + 1]; /* +1: no bank conflicts when staging */
    __shared__ float bs[TG_BK][TG_BN + 1];
    const int tid = (int)threadIdx.x;
    const int tx = tid % TG_T, ty = tid / TG_T;
    const size_t col0 = (size_t)blockIdx.x * TG_BN;
    const size_t row_tiles = (g.m + TG_BM - 1) / TG_BM;
    for (size_t item = blockIdx.z; item < g.batch; item += gridDim.z) {
        const float *A = g.a + item * g.stride_a;
        const float *B = g.b + item * g.stride_b;
        float *C = g.c + item * g.stride_c;
        for (size_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {
            const size_t row0 = tile * TG_BM;
            float acc[TG_R][TG_C];
            for (int r = 0; r < TG_R; r++)
                for (int c = 0; c < TG_C; c++) acc[r][c] = 0.0f;
            for (size_t p0 = 0; p0 < g.k; p0 += TG_BK) {
                /* Stage op(A)[row0.., p0..] and op(B)[p0.., col0..]; outside the matrix: 0
                 * (never summed: the loop below stops at k). Consecutive threads read
                 * consecutive stored elements. */
                for (int e = tid; e < TG_BM * TG_BK; e += TG_THREADS) {
                    int i = g.ta ? e % TG_BM : e / TG_BK, p = g.ta ? e / TG_BM : e % TG_BK;
                    size_t gi = row0 + (size_t)i, gp = p0 + (size_t)p;
                    float v = 0.0f;
                    if (gi < g.m && gp < g.k) v = g.ta ? A[gp * g.lda + gi] : A[gi * g.lda + gp];
                    as[p][i] = v;
                }
                for (int e = tid; e < TG_BK * TG_BN; e += TG_THREADS) {
                    int j = g.tb ? e / TG_BK : e % TG_BN, p = g.tb ? e % TG_BK : e / TG_BN;
                    size_t gj = col0 + (size_t)j, gp = p0 + (size_t)p;
                    float v = 0.0f;
                    if (gj < g.n && gp < g.k) v = g.tb ? B[gj * g.ldb + gp] : B[gp * g.ldb + gj];
                    bs[p][j] = v;
                }
                __syncthreads();
                const int kk = g.k - p0 < TG_BK ? (int)(g.k - p0) : TG_BK;
                for (int p = 0; p < kk; p++) { /* ascending k */
                    float ar[TG_R], br[TG_C];
                    for (int r = 0; r < TG_R; r++) ar[r] = as[p][ty + TG_T * r];
                    for (int c = 0; c < TG_C; c++) br[c] = bs[p][tx + TG_T * c];
                    for (int r = 0; r < TG_R; r++)
                        for (int c = 0; c < TG_C; c++)
                            acc[r][c] = fmaf(ar[r], br[c], acc[r][c]);
                }
                __syncthreads();
            }
            for (int r = 0; r < TG_R; r++) {
                size_t gi = row0 + (size_t)(ty + TG_T * r);
                if (gi >= g.m) continue;
                for (int c = 0; c < TG_C; c++) {
                    size_t gj = col0 + (size_t)(tx + TG_T * c);
                    if (gj >= g.n) continue;
                    float *dst = &C[gi * g.ldc + gj];
                    if (g.k == 0) /* no product: beta·C, beta 0 writing +0 (as the CPU) */
                        *dst = g.beta == 0.0f ? 0.0f : g.beta * *dst;
                    else if (g.beta == 0.0f) /* never reads C */
                        *dst = g.alpha * acc[r][c];
                    else
                        *dst = g.alpha * acc[r][c] + g.beta * *dst;
                }
            }
        }
    }
}

static strix_status own_gemm(strix_backend *be, const tg_args *g) {
    if (g->m == 0 || g->n == 0 || g->batch == 0) return STRIX_OK;
    size_t col_tiles = (g->n + TG_BN - 1) / TG_BN, row_tiles = (g->m + TG_BM - 1) / TG_BM;
    if (col_tiles > (size_t)INT_MAX)
        return strix_error(STRIX_ERR_UNSUPPORTED, "gemm: n = %zu is too large", g->n);
    dim3 grid((unsigned)col_tiles, (unsigned)(row_tiles < TG_MAX_GRID ? row_tiles : TG_MAX_GRID),
              (unsigned)(g->batch < TG_MAX_GRID ? g->batch : TG_MAX_GRID));
    k_sgemm_tiled<<<grid, TG_THREADS, 0, cuda_stream(be)>>>(*g);
    return cuda_launched(be, "gemm (own tiled kernel)");
}

#if STRIX_GPU_HAVE_BLAS
static bool fits_int(size_t v) { return v <= (size_t)INT_MAX; }

/* The vendor BLAS can take the problem: every size in int range, k > 0. */
static bool blas_takes(const tg_args *g) {
    return g->k > 0 && fits_int(g->m) && fits_int(g->n) && fits_int(g->k) && fits_int(g->lda) &&
           fits_int(g->ldb) && fits_int(g->ldc) && fits_int(g->batch) &&
           g->stride_a <= (size_t)LLONG_MAX && g->stride_b <= (size_t)LLONG_MAX &&
           g->stride_c <= (size_t)LLONG_MAX;
}

/* Cᵀ = op(B)ᵀ·op(A)ᵀ in column-major terms (header comment). */
static strix_status blas_gemm(strix_backend *be, const tg_args *g) {
    if (g->m == 0 || g->n == 0 || g->batch == 0) return STRIX_OK;
    cublasHandle_t h = cuda_blas(be);
    (void)cuda_stream(be); /* the device current */
    cublasOperation_t op_a = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_b = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    int m = (int)g->m, n = (int)g->n, k = (int)g->k;
    int lda = (int)(g->lda ? g->lda : 1), ldb = (int)(g->ldb ? g->ldb : 1);
    int ldc = (int)(g->ldc ? g->ldc : 1);
    cublasStatus_t st =
        g->batch == 1
            ? cublasSgemm(h, op_b, op_a, n, m, k, &g->alpha, g->b, ldb, g->a, lda, &g->beta, g->c,
                          ldc)
            : cublasSgemmStridedBatched(h, op_b, op_a, n, m, k, &g->alpha, g->b, ldb,
                                        (long long)g->stride_b, g->a, lda, (long long)g->stride_a,
                                        &g->beta, g->c, ldc, (long long)g->stride_c,
                                        (int)g->batch);
    STRIX_TRY(cuda_blas_check(st, g->batch == 1 ? "cublasSgemm" : "cublasSgemmStridedBatched"));
    return cuda_launched(be, "gemm (vendor BLAS)");
}
#endif

static strix_status run_gemm(strix_backend *be, const tg_args *g) {
#if STRIX_GPU_HAVE_BLAS
    if (!cuda_own_gemm(be) && blas_takes(g)) return blas_gemm(be, g);
#endif
    return own_gemm(be, g);
}

strix_status cuda_gemm_ex(strix_backend *be, const float *a, bool ta, const float *b, bool tb,
                          float *out, size_t m, size_t k, size_t n, float beta) {
    tg_args g = {a,   ta ? m : k, 0, b, tb ? k : n, 0, out, n, 0, m, k, n, 1,
                 1.0f, beta,      ta, tb};
    return run_gemm(be, &g);
}

strix_status cuda_gemm_batched(strix_backend *be, const strix_gemm_batch *gb) {
    tg_args g = {gb->a, gb->lda, gb->stride_a, gb->b, gb->ldb, gb->stride_b, gb->c, gb->ldc,
                 gb->stride_c, gb->m, gb->k, gb->n, gb->batch, gb->alpha, gb->beta, gb->ta,
                 gb->tb};
    return run_gemm(be, &g);
}

/* Packs nothing: cuBLAS and the own tiled kernel read B as stored (gemm_batched ignores
 * packed_b), so the packing needs 0 floats. */
strix_status cuda_gemm_pack_b(strix_backend *be, const strix_gemm_batch *g, float *packed,
                              size_t *floats) {
    (void)be, (void)g, (void)packed;
    *floats = 0;
    return STRIX_OK;
}
