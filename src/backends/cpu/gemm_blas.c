/*
 * gemm_blas.c - the cpu-blas backend's GEMM slots on OpenBLAS (cblas_sgemm, row-major).
 *
 * One threading model, on purpose: the CPU backend's worker pool (workers.c). OpenBLAS is held to
 * one thread (strix_cpu_blas_hold_one_thread), and a large GEMM is cut into 64-row (or 64-column)
 * blocks of the output that the pool's threads share, each block one single-threaded
 * cblas_sgemm. Debian's pthread OpenBLAS would otherwise keep a second pool of workers spinning
 * against ours (DESIGN.md, "oversubscription").
 * The cut depends only on the shape, so results are bit-identical for any thread count; they
 * match the own kernel only to rounding (OpenBLAS uses FMA and its own k-blocking).
 * beta == 0 never reads C (BLAS rule). Compiled only with STRIX_HAVE_BLAS.
 */
#ifdef STRIX_HAVE_BLAS

#include <cblas.h>

#include "backends/cpu/cpu_internal.h"

void strix_cpu_blas_hold_one_thread(void) { openblas_set_num_threads(1); }

typedef struct blas_problem {
    const float *a;
    size_t lda;
    bool ta;
    const float *b;
    size_t ldb;
    bool tb;
    float *c;
    size_t ldc;
    size_t m, k, n;
    float alpha, beta;
} blas_problem;

static void blas_gemm(const blas_problem *p) {
    if (p->m == 0 || p->n == 0) return;
    if (p->k == 0) { /* empty product (also alpha 0): C = beta·C, beta 0 writing zeros */
        for (size_t i = 0; i < p->m; i++)
            for (size_t j = 0; j < p->n; j++) {
                float *cell = p->c + i * p->ldc + j;
                *cell = p->beta == 0.0f ? 0.0f : p->beta * *cell;
            }
        return;
    }
    cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans,
                p->tb ? CblasTrans : CblasNoTrans, (blasint)p->m, (blasint)p->n, (blasint)p->k,
                p->alpha, p->a, (blasint)p->lda, p->b, (blasint)p->ldb, p->beta, p->c,
                (blasint)p->ldc);
}

/* Rows (or columns) per block of a split GEMM. The split depends only on the shape, never on
 * the thread count, so every output element comes from the same cblas_sgemm call on any number
 * of threads: results are bit-identical whatever the thread count. */
#define BLAS_BLOCK 64

/* Output block `block` (BLAS_BLOCK rows or columns) of problem p. */
static blas_problem blas_block(const blas_problem *p, bool split_rows, size_t block) {
    blas_problem sub = *p;
    size_t extent = split_rows ? p->m : p->n;
    size_t begin = block * BLAS_BLOCK;
    size_t width = extent - begin < BLAS_BLOCK ? extent - begin : BLAS_BLOCK;
    if (split_rows) {
        sub.m = width;
        sub.a += p->ta ? begin : begin * p->lda;
        sub.c += begin * p->ldc;
    } else {
        sub.n = width;
        sub.b += p->tb ? begin * p->ldb : begin;
        sub.c += begin;
    }
    return sub;
}

/* Operands of blas_blocks_range: the problem and the direction of its cut. */
typedef struct blas_blocks_args {
    const blas_problem *p;
    bool split_rows;
} blas_blocks_args;

/* Output blocks [block0, block1), each one single-threaded cblas_sgemm. */
static void blas_blocks_range(void *args, size_t block0, size_t block1) {
    const blas_blocks_args *a = args;
    for (size_t block = block0; block < block1; block++) {
        blas_problem sub = blas_block(a->p, a->split_rows, block);
        blas_gemm(&sub);
    }
}

/* Large problems: BLAS_BLOCK-wide output blocks (along the longer of m, n), spread over the
 * pool's threads. */
static void blas_gemm_threaded(const blas_problem *p) {
    bool split_rows = p->m >= p->n;
    size_t extent = split_rows ? p->m : p->n;
    double work = (double)p->m * (double)p->k * (double)p->n;
    if (extent <= BLAS_BLOCK || work < (1 << 18)) { /* shape-only rule */
        blas_gemm(p);
        return;
    }
    size_t blocks = (extent + BLAS_BLOCK - 1) / BLAS_BLOCK;
    blas_blocks_args a = {p, split_rows};
    cpu_parallel_for(blocks, cpu_max_threads() > 1 && work >= 8.0 * (double)cpu_parallel_min_work,
                     blas_blocks_range, &a);
}

strix_status cpu_blas_gemm_ex(strix_backend *be, const float *a, bool ta, const float *b, bool tb,
                              float *out, size_t m, size_t k, size_t n, float beta) {
    (void)be;
    blas_problem p = {a, ta ? m : k, ta, b, tb ? k : n, tb, out, n, m, k, n, 1.0f, beta};
    blas_gemm_threaded(&p);
    return STRIX_OK;
}

/* Small items (attention's (T,T,hd) products) stay on the own kernel, one parallel loop over the
 * batch: it is as fast as per-item cblas_sgemm there (bench_gemm) and bit-reproducible. Large
 * items go to cblas_sgemm, each split across the threads. */
strix_status cpu_blas_gemm_batched(strix_backend *be, const strix_gemm_batch *g) {
    double work = (double)g->m * (double)g->k * (double)g->n;
    if (work < 4.0e6) return cpu_gemm_batched(be, g);
    for (size_t item = 0; item < g->batch; item++) {
        blas_problem p = {g->a + item * g->stride_a, g->lda, g->ta, g->b + item * g->stride_b,
                          g->ldb, g->tb, g->c + item * g->stride_c, g->ldc, g->m, g->k, g->n,
                          g->alpha, g->beta};
        blas_gemm_threaded(&p);
    }
    return STRIX_OK;
}

/* Packs nothing (0 floats), so strix_rnn keeps its per-step GEMMs as they were here: the
 * backward's on cblas_sgemm (faster at (32,256)x(256,256) than the own kernel even with B packed
 * once), and gemm_batched ignores packed_b. */
strix_status cpu_blas_gemm_pack_b(strix_backend *be, const strix_gemm_batch *g, float *packed,
                                  size_t *floats) {
    (void)be, (void)g, (void)packed;
    *floats = 0;
    return STRIX_OK;
}

#else
typedef int strix_cpu_gemm_blas_unused; /* ISO C forbids an empty translation unit */
#endif
