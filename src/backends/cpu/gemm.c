/*
 * gemm.c - the CPU backend's own GEMM: C = alpha·op(A)·op(B) + beta·C, row-major, any leading
 * dimensions, both transposes, and the strided batched form.
 *
 * Design (GotoBLAS/BLIS layering, kept small):
 *   for each block of NC columns:      pack B (all of k) into NR-wide micro-panels
 *     for each block of MC rows:
 *       for each KC slice of k (ascending):   pack A into MR-high micro-panels
 *         for each NR micro-panel, for each MR micro-panel: the MR×NR micro-kernel
 *       final pass: C = alpha·acc + beta·C (beta == 0 never reads C)
 * The micro-kernel keeps MR×NR partial sums in registers over a KC slice and carries them to the
 * next slice through an accumulator tile in memory, so every element is the float chain
 * fma(a2, b2, fma(a1, b1, fma(a0, b0, 0))) ... in ascending k (one rounding per product), the same
 * as the naive loop with fmaf. Results are therefore bit-identical for any blocking and any thread
 * count, and for the AVX-512 (8×32), AVX2 (6×16) and scalar micro-kernels alike; the kernel is
 * chosen per call for the running CPU (cpu_isa_active, isa.c), whatever the build's -march.
 * Whole micro-tiles of a plain C = op(A)·op(B) accumulate in C itself; the tiles strix_gemm_skip
 * marks as unwanted or zero (causal attention) are skipped.
 * Threads split the output into row ranges or column ranges (cpu_chunks_per_thread parts per
 * thread, claimed in turn: workers.c); each computes its part alone. A stored A (transposed or
 * not) is read in place by the micro-kernel (only a last partial panel of rows is packed).
 * gemm_batched hands whole items to threads when the batch has at least as many items as
 * threads. Problems too small to pay for a parallel loop stay on the calling thread (CPU_WORTH).
 * For the fused primitives (conv.c) one GEMM also runs on the calling thread (cpu_gemm_run)
 * with three extras that keep the bits: a "chain" that continues the sums already in C (the
 * k-concatenation of several products), an A packed once for many GEMMs, and operands whose
 * stored rows a cpu_gemm_source produces while packing (conv patches, never stored whole).
 * gemm_batched can also read B packed once for many calls (cpu_gemm_pack_b: strix_gemm_pack_b,
 * a recurrent layer's W_hh over its steps): the same values as per-call packing, so the same bits
 * (the "cpu" backend only: cpu-blas packs nothing, gemm_blas.c).
 * Workspaces live in the backend context (no allocation once sizes are known), so one host
 * thread at a time may use a backend. Not here: the BLAS path (gemm_blas.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GEMM_X86 1
#endif

/* A micro-kernel and its tile: MR rows × NR columns of C held in registers (gemm_kernel_active
 * picks one per call from the running CPU's level, isa.c). */
typedef void micro_kernel_fn(size_t kc, const float *pa, size_t rs, size_t ks, const float *pb,
                             float *acc, size_t ld_acc, bool carry);
typedef struct gemm_kernel {
    size_t mr, nr;
    micro_kernel_fn *run;
    micro_kernel_fn *run_half; /* the first NR/2 columns only (edge panels), or NULL */
    bool avx2;                 /* packing may use AVX2 (transpose_8x8) */
} gemm_kernel;
static const gemm_kernel *gemm_kernel_active(void);
#define GEMM_NR_MAX 32
#define GEMM_KC 256
#define GEMM_MC 96  /* multiple of every MR (6 and 8) */
#define GEMM_NC 256 /* multiple of every NR (16 and 32) */

/* One operand as the kernel reads it: element (row, col) of op(X). */
typedef struct gemm_operand {
    const float *data;
    size_t ld;  /* row stride of the STORED matrix */
    bool trans; /* stored transposed: element (r, c) of op(X) is data[c·ld + r] */
    const cpu_gemm_source *src; /* non-NULL: the stored rows come from src (data unused) */
} gemm_operand;

/* Floats of a workspace's `gen` buffer: stored rows produced by a source before packing (at
 * most max(NR, MR)·KC of them, or NC for a row of B). */
#define GEMM_GEN_FLOATS (GEMM_NR_MAX * GEMM_KC)

typedef struct gemm_problem {
    gemm_operand a, b;
    float *c;
    size_t ldc;
    size_t m, k, n;
    float alpha, beta;
    strix_gemm_skip skip;
    size_t row_base, col_base; /* where this part starts in the whole item (for `skip`) */
    bool chain; /* C holds a running sum: continue it (alpha 1, beta 0 otherwise) */
    const float *packed_a; /* A already packed whole (cpu_gemm_pack_a), or NULL */
    const float *packed_b; /* B already packed whole (cpu_gemm_pack_b: NR-wide panels of all k,
                            * the first at this part's first column), or NULL */
    const gemm_kernel *kern; /* the micro-kernel and its tile */
} gemm_problem;

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }
static size_t min_size(size_t x, size_t y) { return x < y ? x : y; }

// ---- workspaces --------------------------------------------------------------------------------

/* pack_b holds every k-slice of one column block: k·NC floats. */
static size_t pack_b_floats_for(size_t k) { return (k ? k : 1) * GEMM_NC; }

strix_status cpu_gemm_reserve(cpu_context *ctx, int threads, size_t k) {
    if (threads > ctx->workspace_count) {
        cpu_gemm_workspace *grown =
            realloc(ctx->workspaces, (size_t)threads * sizeof *ctx->workspaces);
        if (!grown) return strix_error(STRIX_ERR_ALLOC, "cpu gemm: workspace table");
        memset(grown + ctx->workspace_count, 0,
               (size_t)(threads - ctx->workspace_count) * sizeof *grown);
        ctx->workspaces = grown;
        ctx->workspace_count = threads;
    }
    size_t need_b = pack_b_floats_for(k);
    for (int t = 0; t < threads; t++) {
        cpu_gemm_workspace *ws = &ctx->workspaces[t];
        if (!ws->pack_a) ws->pack_a = cpu_aligned_alloc(GEMM_MC * GEMM_KC * sizeof(float));
        if (!ws->gen) ws->gen = cpu_aligned_alloc(GEMM_GEN_FLOATS * sizeof(float));
        if (!ws->acc) ws->acc = cpu_aligned_alloc(GEMM_MC * GEMM_NC * sizeof(float));
        if (ws->pack_b_floats < need_b) {
            free(ws->pack_b);
            ws->pack_b = cpu_aligned_alloc(need_b * sizeof(float));
            ws->pack_b_floats = ws->pack_b ? need_b : 0;
        }
        if (!ws->pack_a || !ws->acc || !ws->pack_b || !ws->gen)
            return strix_error(STRIX_ERR_ALLOC, "cpu gemm: cannot allocate workspace (k=%zu)", k);
    }
    return STRIX_OK;
}

strix_status cpu_scratch_reserve(cpu_context *ctx, int threads, size_t floats) {
    STRIX_TRY(cpu_gemm_reserve(ctx, threads, 1));
    for (int t = 0; t < threads; t++) {
        cpu_gemm_workspace *ws = &ctx->workspaces[t];
        if (ws->scratch_floats >= floats) continue;
        free(ws->scratch);
        ws->scratch = cpu_aligned_alloc((floats ? floats : 1) * sizeof(float));
        ws->scratch_floats = ws->scratch ? floats : 0;
        if (!ws->scratch)
            return strix_error(STRIX_ERR_ALLOC, "cpu: cannot allocate %zu floats of scratch",
                               floats);
    }
    return STRIX_OK;
}

void cpu_gemm_release(cpu_context *ctx) {
    for (int t = 0; t < ctx->workspace_count; t++) {
        free(ctx->workspaces[t].pack_a);
        free(ctx->workspaces[t].pack_b);
        free(ctx->workspaces[t].acc);
        free(ctx->workspaces[t].scratch);
        free(ctx->workspaces[t].gen);
    }
    free(ctx->workspaces);
    ctx->workspaces = NULL;
    ctx->workspace_count = 0;
}

// ---- packing -----------------------------------------------------------------------------------

#ifdef GEMM_X86
/* dst[j·ld_dst + i] = src[i·ld_src + j] for an 8×8 block (data movement only). */
CPU_TARGET_AVX2 static void transpose_8x8(const float *src, size_t ld_src, float *dst,
                                          size_t ld_dst) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + (size_t)i * ld_src);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int j = 0; j < 4; j++) {
        _mm256_storeu_ps(dst + (size_t)j * ld_dst, _mm256_permute2f128_ps(r[j], r[j + 4], 0x20));
        _mm256_storeu_ps(dst + (size_t)(j + 4) * ld_dst,
                         _mm256_permute2f128_ps(r[j], r[j + 4], 0x31));
    }
}
#else
static void transpose_8x8(const float *src, size_t ld_src, float *dst, size_t ld_dst) {
    for (size_t i = 0; i < 8; i++)
        for (size_t j = 0; j < 8; j++) dst[j * ld_dst + i] = src[i * ld_src + j];
}
#endif

/* Stored rows [r0, r0+nr) × columns [c0, c0+nc) of operand x: a pointer to element (r0, c0)
 * and the row stride; a source writes them into gen first (nr·nc <= GEMM_GEN_FLOATS). */
static const float *stored_rows(const gemm_operand *x, size_t r0, size_t nr, size_t c0, size_t nc,
                                float *gen, size_t *ld) {
    if (!x->src) {
        *ld = x->ld;
        return x->data + r0 * x->ld + c0;
    }
    for (size_t r = 0; r < nr; r++) x->src->row(x->src->ctx, r0 + r, c0, nc, gen + r * nc);
    *ld = nc;
    return gen;
}

/* Packs rows [row0, row0+rows) × k-slice [p0, p0+kc) of op(A) into MR-high micro-panels:
 * panel q holds, for each p, the MR values of its rows (zeros past the last row). gen: scratch
 * for a source. */
static void pack_a(const gemm_kernel *kern, const gemm_operand *a, size_t row0, size_t rows,
                   size_t p0, size_t kc, float *dst, float *gen) {
    const size_t mr = kern->mr;
    for (size_t panel = 0; panel < rows; panel += mr) {
        size_t height = min_size(mr, rows - panel), ld;
        if (a->trans) {
            const float *base = stored_rows(a, p0, kc, row0 + panel, height, gen, &ld);
            for (size_t p = 0; p < kc; p++) {
                const float *src = base + p * ld;
                size_t r = 0;
                for (; r < height; r++) dst[r] = src[r];
                for (; r < mr; r++) dst[r] = 0.0f;
                dst += mr;
            }
        } else {
            const float *base = stored_rows(a, row0 + panel, height, p0, kc, gen, &ld);
            size_t p = 0;
            if (mr == 8 && height == mr && kern->avx2) /* 8 k at a time */
                for (; p + 8 <= kc; p += 8, dst += 8 * mr) transpose_8x8(base + p, ld, dst, mr);
            for (; p < kc; p++) {
                size_t r = 0;
                for (; r < height; r++) dst[r] = base[r * ld + p];
                for (; r < mr; r++) dst[r] = 0.0f;
                dst += mr;
            }
        }
    }
}

/* Packs k-slice [p0, p0+kc) × columns [col0, col0+cols) of op(B) into NR-wide micro-panels:
 * panel q holds, for each p, the NR values of its columns (zeros past the last column). gen:
 * scratch for a source. */
static void pack_b(const gemm_kernel *kern, const gemm_operand *b, size_t p0, size_t kc,
                   size_t col0, size_t cols, float *dst, float *gen) {
    const size_t nr = kern->nr;
    if (b->src && !b->trans) { /* one produced row of B (cols <= NC) at a time, into the panels */
        for (size_t p = 0; p < kc; p++) {
            b->src->row(b->src->ctx, p0 + p, col0, cols, gen);
            for (size_t panel = 0; panel < cols; panel += nr) {
                float *to = dst + panel * kc + p * nr;
                size_t width = min_size(nr, cols - panel), c = 0;
                memcpy(to, gen + panel, width * sizeof(float));
                for (c = width; c < nr; c++) to[c] = 0.0f;
            }
        }
        return;
    }
    for (size_t panel = 0; panel < cols; panel += nr) {
        size_t width = min_size(nr, cols - panel), ld;
        if (b->trans) {
            const float *base = stored_rows(b, col0 + panel, width, p0, kc, gen, &ld);
            /* 8 columns × 8 k at a time, then what is left one by one */
            size_t c8 = kern->avx2 ? width / 8 * 8 : 0, k8 = kc / 8 * 8;
            for (size_t c = 0; c < c8; c += 8)
                for (size_t p = 0; p < k8; p += 8)
                    transpose_8x8(base + c * ld + p, ld, dst + p * nr + c, nr);
            for (size_t c = 0; c < width; c++) {
                const float *src = base + c * ld;
                for (size_t p = c < c8 ? k8 : 0; p < kc; p++) dst[p * nr + c] = src[p];
            }
            for (size_t c = width; c < nr; c++)
                for (size_t p = 0; p < kc; p++) dst[p * nr + c] = 0.0f;
        } else {
            const float *base = stored_rows(b, p0, kc, col0 + panel, width, gen, &ld);
            for (size_t p = 0; p < kc; p++) {
                memcpy(dst + p * nr, base + p * ld, width * sizeof(float));
                for (size_t c = width; c < nr; c++) dst[p * nr + c] = 0.0f;
            }
        }
        dst += kc * nr;
    }
}

// ---- micro-kernels -----------------------------------------------------------------------------

/* acc (MR×NR, row stride ld_acc: the accumulator tile or a tile of C, so unaligned) =
 * (carry ? acc : 0) + Σ_p a_r[p]·pb[p] over p < kc: one fused multiply-add per product (a single
 * rounding, fmaf), ascending p. Element (r, p) of A is at pa[r·rs + p·ks]: packed (rs 1, ks MR),
 * or read in place from a stored A (rows: rs lda, ks 1; transposed: rs 1, ks lda). Every version
 * does the same operations per element, so they give the same bits. The "half" versions compute
 * the left NR/2 columns only (edge panels). */
static void micro_scalar(size_t kc, const float *pa, size_t rs, size_t ks, const float *pb,
                         float *acc, size_t ld_acc, bool carry) {
    enum { MR = 6, NR = 16 };
    float tile[MR][NR];
    for (size_t r = 0; r < MR; r++)
        for (size_t c = 0; c < NR; c++) tile[r][c] = carry ? acc[r * ld_acc + c] : 0.0f;
    for (size_t p = 0; p < kc; p++) {
        for (size_t r = 0; r < MR; r++) {
            float a = pa[r * rs + p * ks];
            for (size_t c = 0; c < NR; c++) tile[r][c] = fmaf(a, pb[c], tile[r][c]);
        }
        pb += NR;
    }
    for (size_t r = 0; r < MR; r++)
        for (size_t c = 0; c < NR; c++) acc[r * ld_acc + c] = tile[r][c];
}

#ifdef GEMM_X86
#define PACKED_AT(r) pa[r]
#define ROWS_AT(r) pa[(r) * rs]

/* AVX2: 6×16 (BLIS's Haswell/Zen sgemm tile), 12 ymm accumulators; TWO: both halves. */
#define K256_ROW(r, AT)                                                                        \
    do {                                                                                       \
        __m256 a = _mm256_broadcast_ss(&AT(r));                                                \
        c##r##0 = _mm256_fmadd_ps(a, b0, c##r##0);                                             \
        if (TWO) c##r##1 = _mm256_fmadd_ps(a, b1, c##r##1);                                    \
    } while (0)
#define K256_LOOP(AT, STEP)                                                                    \
    for (size_t p = 0; p < kc; p++, pa += STEP, pb += 16) {                                    \
        __m256 b0 = _mm256_load_ps(pb), b1 = TWO ? _mm256_load_ps(pb + 8) : b0;                \
        K256_ROW(0, AT); K256_ROW(1, AT); K256_ROW(2, AT);                                     \
        K256_ROW(3, AT); K256_ROW(4, AT); K256_ROW(5, AT);                                     \
    }
#define K256_LOAD(r)                                                                           \
    __m256 c##r##0 = carry ? _mm256_loadu_ps(acc + r * ld_acc) : _mm256_setzero_ps();          \
    __m256 c##r##1 = carry && TWO ? _mm256_loadu_ps(acc + r * ld_acc + 8) : _mm256_setzero_ps()
#define K256_STORE(r)                                                                          \
    _mm256_storeu_ps(acc + r * ld_acc, c##r##0);                                               \
    if (TWO) _mm256_storeu_ps(acc + r * ld_acc + 8, c##r##1)
#define DEFINE_K256(name, two)                                                                 \
    CPU_TARGET_AVX2 static void name(size_t kc, const float *pa, size_t rs, size_t ks,         \
                                     const float *pb, float *acc, size_t ld_acc, bool carry) { \
        enum { TWO = two };                                                                    \
        K256_LOAD(0); K256_LOAD(1); K256_LOAD(2); K256_LOAD(3); K256_LOAD(4); K256_LOAD(5);    \
        if (rs == 1) {                                                                         \
            K256_LOOP(PACKED_AT, ks)                                                           \
        } else {                                                                               \
            K256_LOOP(ROWS_AT, 1)                                                              \
        }                                                                                      \
        K256_STORE(0); K256_STORE(1); K256_STORE(2); K256_STORE(3); K256_STORE(4);             \
        K256_STORE(5);                                                                         \
    }
DEFINE_K256(micro_avx2, 1)
DEFINE_K256(micro_avx2_half, 0)

/* AVX-512: 8×32, 16 zmm accumulators; TWO: both halves. */
#define K512_ROW(r, AT)                                                                        \
    do {                                                                                       \
        __m512 a = _mm512_set1_ps(AT(r));                                                      \
        c##r##0 = _mm512_fmadd_ps(a, b0, c##r##0);                                             \
        if (TWO) c##r##1 = _mm512_fmadd_ps(a, b1, c##r##1);                                    \
    } while (0)
#define K512_LOOP(AT, STEP)                                                                    \
    for (size_t p = 0; p < kc; p++, pa += STEP, pb += 32) {                                    \
        __m512 b0 = _mm512_load_ps(pb), b1 = TWO ? _mm512_load_ps(pb + 16) : b0;               \
        K512_ROW(0, AT); K512_ROW(1, AT); K512_ROW(2, AT); K512_ROW(3, AT);                    \
        K512_ROW(4, AT); K512_ROW(5, AT); K512_ROW(6, AT); K512_ROW(7, AT);                    \
    }
#define K512_LOAD(r)                                                                           \
    __m512 c##r##0 = carry ? _mm512_loadu_ps(acc + r * ld_acc) : _mm512_setzero_ps();          \
    __m512 c##r##1 = carry && TWO ? _mm512_loadu_ps(acc + r * ld_acc + 16) : _mm512_setzero_ps()
#define K512_STORE(r)                                                                          \
    _mm512_storeu_ps(acc + r * ld_acc, c##r##0);                                               \
    if (TWO) _mm512_storeu_ps(acc + r * ld_acc + 16, c##r##1)
#define DEFINE_K512(name, two)                                                                 \
    CPU_TARGET_AVX512 static void name(size_t kc, const float *pa, size_t rs, size_t ks,       \
                                       const float *pb, float *acc, size_t ld_acc,             \
                                       bool carry) {                                           \
        enum { TWO = two };                                                                    \
        K512_LOAD(0); K512_LOAD(1); K512_LOAD(2); K512_LOAD(3);                                \
        K512_LOAD(4); K512_LOAD(5); K512_LOAD(6); K512_LOAD(7);                                \
        if (rs == 1) {                                                                         \
            K512_LOOP(PACKED_AT, ks)                                                           \
        } else {                                                                               \
            K512_LOOP(ROWS_AT, 1)                                                              \
        }                                                                                      \
        K512_STORE(0); K512_STORE(1); K512_STORE(2); K512_STORE(3);                            \
        K512_STORE(4); K512_STORE(5); K512_STORE(6); K512_STORE(7);                            \
    }
DEFINE_K512(micro_avx512, 1)
DEFINE_K512(micro_avx512_half, 0)
#endif

/* Indexed by cpu_isa. The scalar tile is AVX2's, so a forced scalar run packs as AVX2 does. */
static const gemm_kernel GEMM_KERNELS[] = {
    [CPU_ISA_SCALAR] = {6, 16, micro_scalar, NULL, false},
#ifdef GEMM_X86
    [CPU_ISA_AVX2] = {6, 16, micro_avx2, micro_avx2_half, true},
    [CPU_ISA_AVX512] = {8, 32, micro_avx512, micro_avx512_half, true},
#else
    [CPU_ISA_AVX2] = {6, 16, micro_scalar, NULL, false},
    [CPU_ISA_AVX512] = {6, 16, micro_scalar, NULL, false},
#endif
};

static const gemm_kernel *gemm_kernel_active(void) { return &GEMM_KERNELS[cpu_isa_active()]; }

// ---- one thread --------------------------------------------------------------------------------

/* C = alpha·acc + beta·C over the rows × cols block at (row0, col0) of pr (beta == 0 never reads
 * C). The first done_cols columns of the first done_rows rows are already in C (written there by
 * the micro-kernel). OUT_LOWER writes only the columns j <= i of the whole item. */
static void write_back(const gemm_problem *pr, const float *acc, size_t ld_acc, size_t row0,
                       size_t col0, size_t rows, size_t cols, size_t done_rows,
                       size_t done_cols) {
    float alpha = pr->alpha, beta = pr->beta;
    for (size_t i = 0; i < rows; i++) {
        const float *sums = acc + i * ld_acc;
        float *dst = pr->c + (row0 + i) * pr->ldc + col0;
        size_t row = pr->row_base + row0 + i, col = pr->col_base + col0, width = cols;
        if (pr->skip == STRIX_GEMM_OUT_LOWER) {
            if (col > row) continue;
            if (row - col + 1 < width) width = row - col + 1;
        }
        size_t j0 = i < done_rows ? done_cols : 0;
        if (beta == 0.0f) {
            for (size_t j = j0; j < width; j++) dst[j] = alpha * sums[j];
        } else {
            for (size_t j = j0; j < width; j++) dst[j] = alpha * sums[j] + beta * dst[j];
        }
    }
}

/* The whole problem on the calling thread with workspace ws (sized for pr->k). */
static void gemm_single(const gemm_problem *pr, cpu_gemm_workspace *ws) {
    size_t m = pr->m, k = pr->k, n = pr->n;
    if (m == 0 || n == 0) return;
    if (k == 0) { /* empty sums (also alpha 0, strix_gemm_batched): C = beta·C, beta 0 zeros */
        for (size_t i = 0; i < m; i++) {
            float *dst = pr->c + i * pr->ldc;
            for (size_t j = 0; j < n; j++) dst[j] = pr->beta == 0.0f ? 0.0f : pr->beta * dst[j];
        }
        return;
    }
    /* A plain C = op(A)·op(B): whole micro-tiles accumulate straight in C instead of the
     * accumulator tile (alpha 1 and beta 0 make write_back a copy, so the bits agree). Also with
     * `skip`: a tile is skipped or shortened alike in every k-slice, and what OUT_LOWER's tiles
     * on the diagonal write above it is unspecified anyway. A chain continues the sums held in
     * C: every tile carries from the start (edge tiles copy C into the accumulator first). */
    bool direct = (pr->alpha == 1.0f && pr->beta == 0.0f) || pr->chain;
    const gemm_kernel *kern = pr->kern;
    const size_t mr = kern->mr, nr = kern->nr;
    /* A stored (untransposed or transposed): the micro-kernel reads it in place, no packing;
     * element (r, p) at a_rs·r + a_ks·p */
    bool a_rows = !pr->a.src && !pr->packed_a;
    size_t a_rs = pr->a.trans ? 1 : pr->a.ld, a_ks = pr->a.trans ? pr->a.ld : 1;
    for (size_t col0 = 0; col0 < n; col0 += GEMM_NC) {
        size_t cols = min_size(GEMM_NC, n - col0);
        size_t cols_padded = round_up(cols, nr);
        /* B for every k-slice of this column block; slice p0 starts at p0·cols_padded. */
        for (size_t p0 = 0; p0 < k && !pr->packed_b; p0 += GEMM_KC) {
            size_t kc = min_size(GEMM_KC, k - p0);
            pack_b(kern, &pr->b, p0, kc, col0, cols, ws->pack_b + p0 * cols_padded, ws->gen);
        }
        for (size_t row0 = 0; row0 < m; row0 += GEMM_MC) {
            size_t rows = min_size(GEMM_MC, m - row0);
            size_t done_rows = direct ? rows / mr * mr : 0;
            size_t full_rows = rows / mr * mr; /* rows of whole micro-panels */
            size_t done_cols = direct ? cols / nr * nr : 0;
            for (size_t p0 = 0; p0 < k; p0 += GEMM_KC) {
                size_t kc = min_size(GEMM_KC, k - p0);
                const float *pa = ws->pack_a;
                if (pr->packed_a) /* the layout of cpu_gemm_pack_a */
                    pa = pr->packed_a + row0 * k + round_up(rows, mr) * p0;
                else if (a_rows) /* only the last, partial panel is packed (its rows may end) */
                    pack_a(kern, &pr->a, row0 + full_rows, rows - full_rows, p0, kc,
                           ws->pack_a + full_rows * kc, ws->gen);
                else
                    pack_a(kern, &pr->a, row0, rows, p0, kc, ws->pack_a, ws->gen);
                const float *b_slice = ws->pack_b + p0 * cols_padded;
                for (size_t jr = 0; jr < cols; jr += nr) {
                    /* packed whole: panel (col0 + jr) / NR holds all of k, slice p0 at p0·NR */
                    const float *pb = pr->packed_b ? pr->packed_b + (col0 + jr) * k + p0 * nr
                                                   : b_slice + jr * kc;
                    for (size_t ir = 0; ir < rows; ir += mr) {
                        /* the tile's first row and k-range [from, to) of this slice */
                        size_t row = pr->row_base + row0 + ir, from = 0, to = kc;
                        if (pr->skip == STRIX_GEMM_OUT_LOWER &&
                            pr->col_base + col0 + jr > row + mr - 1)
                            continue; /* wholly above the diagonal */
                        if (pr->skip == STRIX_GEMM_A_LOWER)
                            to = row + mr <= p0 ? 0 : min_size(kc, row + mr - p0);
                        if (pr->skip == STRIX_GEMM_A_UPPER)
                            from = row <= p0 ? 0 : min_size(kc, row - p0);
                        float *tile = ws->acc + ir * GEMM_NC + jr;
                        size_t ld_tile = GEMM_NC;
                        if (ir < done_rows && jr < done_cols) {
                            tile = pr->c + (row0 + ir) * pr->ldc + col0 + jr;
                            ld_tile = pr->ldc;
                        } else if (pr->chain && p0 == 0) {
                            size_t h = min_size(mr, rows - ir);
                            size_t w = min_size(nr, cols - jr);
                            const float *sums = pr->c + (row0 + ir) * pr->ldc + col0 + jr;
                            for (size_t r = 0; r < h; r++)
                                memcpy(tile + r * GEMM_NC, sums + r * pr->ldc, w * sizeof(float));
                        }
                        micro_kernel_fn *run = kern->run;
                        if (cols - jr <= nr / 2 && kern->run_half) run = kern->run_half;
                        bool carry = p0 > 0 || pr->chain;
                        if (a_rows && ir < full_rows)
                            run(to - from, pr->a.data + (row0 + ir) * a_rs + (p0 + from) * a_ks,
                                a_rs, a_ks, pb + from * nr, tile, ld_tile, carry);
                        else
                            run(to - from, pa + ir * kc + from * mr, 1, mr, pb + from * nr, tile,
                                ld_tile, carry);
                    }
                }
            }
            write_back(pr, ws->acc, GEMM_NC, row0, col0, rows, cols, done_rows, done_cols);
        }
    }
}

void cpu_gemm_run(cpu_gemm_workspace *ws, const cpu_gemm_args *g) {
    gemm_problem pr = {.a = {g->a, g->lda, g->ta, g->a_src}, .b = {g->b, g->ldb, g->tb, g->b_src},
                       .c = g->c, .ldc = g->ldc, .m = g->m, .k = g->k, .n = g->n, .alpha = 1.0f,
                       .beta = 0.0f, .chain = g->chain, .packed_a = g->packed_a,
                       .kern = gemm_kernel_active()};
    if (g->chain && g->k == 0) return; /* nothing to add */
    gemm_single(&pr, ws);
}

size_t cpu_gemm_packed_a_floats(size_t m, size_t k) {
    return round_up(m, gemm_kernel_active()->mr) * k;
}

/* Floats of one item's B packed whole: NR-wide panels of all k (zeros past the last column). */
static size_t packed_b_item_floats(size_t k, size_t n) {
    return round_up(n, gemm_kernel_active()->nr) * k;
}

void cpu_gemm_pack_a(const float *a, size_t lda, bool ta, size_t m, size_t k, float *dst) {
    gemm_operand op = {a, lda, ta, NULL};
    const gemm_kernel *kern = gemm_kernel_active();
    for (size_t row0 = 0; row0 < m; row0 += GEMM_MC) {
        size_t rows = min_size(GEMM_MC, m - row0);
        for (size_t p0 = 0; p0 < k; p0 += GEMM_KC)
            pack_a(kern, &op, row0, rows, p0, min_size(GEMM_KC, k - p0),
                   dst + row0 * k + round_up(rows, kern->mr) * p0, NULL);
    }
}

/* Part `part` of `parts` of the problem: a range of output rows (split_rows) or columns,
 * aligned to the micro-tile. Empty parts have m or n == 0. */
static gemm_problem gemm_part(const gemm_problem *pr, bool split_rows, size_t part, size_t parts) {
    gemm_problem sub = *pr;
    size_t extent = split_rows ? pr->m : pr->n;
    size_t unit = split_rows ? pr->kern->mr : pr->kern->nr;
    size_t units = (extent + unit - 1) / unit;
    size_t per_part = (units + parts - 1) / parts * unit;
    size_t begin = min_size(extent, part * per_part);
    size_t end = min_size(extent, begin + per_part);
    if (split_rows) {
        sub.m = end - begin;
        sub.row_base += begin;
        sub.a.data += pr->a.trans ? begin : begin * pr->a.ld;
        sub.c += begin * pr->ldc;
    } else {
        sub.n = end - begin;
        sub.col_base += begin;
        sub.b.data += pr->b.trans ? begin * pr->b.ld : begin;
        if (pr->packed_b) sub.packed_b += begin * pr->k; /* begin is a multiple of NR */
        sub.c += begin;
    }
    return sub;
}

typedef struct gemm_parts_args {
    const gemm_problem *pr;
    cpu_context *ctx;
    bool split_rows;
    size_t parts;
} gemm_parts_args;

static void gemm_parts_range(void *p, size_t part0, size_t part1) {
    const gemm_parts_args *g = p;
    for (size_t part = part0; part < part1; part++) {
        gemm_problem sub = gemm_part(g->pr, g->split_rows, part, g->parts);
        gemm_single(&sub, &g->ctx->workspaces[cpu_thread_index()]);
    }
}

/* Runs one problem on up to `threads` threads (workspaces already reserved). Each part packs its
 * share of one operand and all of the other: split the rows when B (k·n, packed whole by every
 * part) is the smaller operand, else the columns. */
static void gemm_threaded(const gemm_problem *pr, cpu_context *ctx, int threads) {
    double work = (double)pr->m * (double)pr->k * (double)pr->n;
    bool split_rows = pr->n <= pr->m;
    size_t unit = split_rows ? pr->kern->mr : pr->kern->nr;
    size_t units = ((split_rows ? pr->m : pr->n) + unit - 1) / unit;
    size_t parts = min_size(units, (size_t)threads * (size_t)cpu_chunks_per_thread());
    gemm_parts_args g = {pr, ctx, split_rows, parts};
    cpu_parallel_chunks(parts, parts, threads > 1 && CPU_WORTH(work / 8.0), gemm_parts_range, &g);
}

// ---- slots -------------------------------------------------------------------------------------

strix_status cpu_gemm_ex(strix_backend *be, const float *a, bool ta, const float *b, bool tb,
                         float *out, size_t m, size_t k, size_t n, float beta) {
    gemm_problem pr = {
        .a = {a, ta ? m : k, ta, NULL}, .b = {b, tb ? k : n, tb, NULL}, .c = out, .ldc = n,
        .m = m, .k = k, .n = n, .alpha = 1.0f, .beta = beta, .kern = gemm_kernel_active(),
    };
    cpu_context *ctx = be->ctx;
    int threads = cpu_max_threads();
    STRIX_TRY(cpu_gemm_reserve(ctx, threads, k));
    gemm_threaded(&pr, ctx, threads);
    return STRIX_OK;
}

typedef struct batch_args {
    const gemm_problem *first;
    const strix_gemm_batch *g;
    cpu_context *ctx;
    size_t packed_per_item;
} batch_args;

static void batch_range(void *p, size_t item0, size_t item1) {
    const batch_args *b = p;
    for (size_t item = item0; item < item1; item++) {
        gemm_problem pr = *b->first;
        pr.a.data += item * b->g->stride_a;
        pr.b.data += item * b->g->stride_b;
        pr.c += item * b->g->stride_c;
        if (pr.packed_b) pr.packed_b += item * b->packed_per_item;
        gemm_single(&pr, &b->ctx->workspaces[cpu_thread_index()]);
    }
}

strix_status cpu_gemm_batched(strix_backend *be, const strix_gemm_batch *g) {
    cpu_context *ctx = be->ctx;
    int threads = cpu_max_threads();
    STRIX_TRY(cpu_gemm_reserve(ctx, threads, g->k));
    gemm_problem first = {
        .a = {g->a, g->lda, g->ta, NULL}, .b = {g->b, g->ldb, g->tb, NULL}, .c = g->c,
        .ldc = g->ldc,
        .m = g->m, .k = g->k, .n = g->n, .alpha = g->alpha, .beta = g->beta, .skip = g->skip,
        .packed_b = g->packed_b, .kern = gemm_kernel_active(),
    };
    size_t packed_per_item = packed_b_item_floats(g->k, g->n);
    double work = (double)g->m * (double)g->k * (double)g->n * (double)g->batch;
    if (threads > 1 && g->batch >= (size_t)threads && CPU_WORTH(work / 8.0)) {
        /* Many items: whole items per thread, each on the single-thread kernel. */
        batch_args ba = {&first, g, ctx, packed_per_item};
        cpu_parallel_for(g->batch, true, batch_range, &ba);
        return STRIX_OK;
    }
    for (size_t item = 0; item < g->batch; item++) {
        gemm_problem pr = first;
        pr.a.data += item * g->stride_a;
        pr.b.data += item * g->stride_b;
        pr.c += item * g->stride_c;
        if (pr.packed_b) pr.packed_b += item * packed_per_item;
        gemm_threaded(&pr, ctx, threads);
    }
    return STRIX_OK;
}

typedef struct pack_b_args {
    const strix_gemm_batch *g;
    float *packed;
    size_t per_item, panels;
    const gemm_kernel *kern;
} pack_b_args;

/* Jobs [job0, job1): one NR-wide panel of one item each. */
static void pack_b_range(void *p, size_t job0, size_t job1) {
    const pack_b_args *pa = p;
    const strix_gemm_batch *g = pa->g;
    for (size_t job = job0; job < job1; job++) {
        size_t item = job / pa->panels, col0 = job % pa->panels * pa->kern->nr;
        gemm_operand op = {g->b + item * g->stride_b, g->ldb, g->tb, NULL};
        pack_b(pa->kern, &op, 0, g->k, col0, min_size(pa->kern->nr, g->n - col0),
               pa->packed + item * pa->per_item + col0 * g->k, NULL);
    }
}

/* Each item's op(B) as NR-wide panels of all k, the layout gemm_single reads through packed_b:
 * the same values pack_b gives slice by slice, so the products keep their bits. */
strix_status cpu_gemm_pack_b(strix_backend *be, const strix_gemm_batch *g, float *packed,
                             size_t *floats) {
    (void)be;
    size_t per_item = packed_b_item_floats(g->k, g->n);
    *floats = per_item * g->batch;
    if (!packed || per_item == 0) return STRIX_OK;
    const gemm_kernel *kern = gemm_kernel_active();
    pack_b_args pa = {g, packed, per_item, (g->n + kern->nr - 1) / kern->nr, kern};
    cpu_parallel_for(pa.panels * g->batch, CPU_WORTH(per_item * g->batch), pack_b_range, &pa);
    return STRIX_OK;
}
