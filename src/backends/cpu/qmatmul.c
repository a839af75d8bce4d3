/*
 * qmatmul.c - the CPU loops of strix_matmul_blocks: y (rows, out) = x (rows, in) · Wᵀ with W in
 * ggml's block format (kernels/quant.h), never dequantized whole.
 *
 * Every y element is the dot product of kernels/quant.h's strix_quant_dot, in its order: 16 lane
 * sums, value i into lane i mod 16, i ascending, then the pairwise fold (8, 4, 2, 1). The lanes
 * are one AVX-512 vector, two AVX2 vectors or an array of 16 (scalar), each product a multiply
 * then an add (no FMA), so all three levels give the same bits as the kernel function, the GPU
 * launcher and strix_gguf_dot. The loops are compiled once per level (cpu_isa: qmatmul_level.h,
 * included once per QM_LEVEL), the vector levels with CPU_TARGET_AVX512 / CPU_TARGET_AVX2
 * whatever the build's -march; each call runs the level cpu_isa_active() names. Two paths, the
 * same sums:
 *   rows <= QM_FEW_ROWS (token generation, memory-bound): four W rows at a time, each block
 *     decoded and multiplied straight away with the x of four tokens (or one), never stored (Q4_0,
 *     Q4_1 and Q8_0 at the vector levels into vector registers by the vector spelling of the
 *     kernel's formulas below, F32 read in place, the other types by the kernel functions into
 *     a small buffer in L1), the next rows prefetched; up to 16 independent lane chains share
 *     each decoded block and x's loads.
 *   more rows (prompts, compute-bound): a tile of QM_TILE W rows decoded into the thread's
 *     scratch once (decode_row), then every token against it with a register block of
 *     QM_MR tokens by QM_NR W rows (6 × 4 lane vectors with AVX-512, 2 × 2 otherwise), each
 *     group of tokens against the whole tile (so y is written in whole lines), the lanes folded
 *     in registers (AVX-512: four y at once).
 * Threads split the output features into contiguous ranges (whole groups or tiles; workers.c);
 * each y element comes from one thread, so the thread count never changes a bit. Not here: the
 * kernel math (kernels/quant.h), argument checks (src/core/backend.c).
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/quant.h"

#if defined(__x86_64__) || defined(__i386__)
#define QM_X86 1
#include <immintrin.h>
#endif

#define QM_TILE 16     /* W rows decoded per tile (rows > QM_FEW_ROWS) */
#define QM_FEW_ROWS 12 /* up to this many tokens, W is decoded block by block per token group */
#define QM_GEMV_ROWS 4   /* W rows of the few-rows path at a time */
#define QM_GEMV_TOKENS 4 /* tokens of the few-rows path at a time */
#define QM_CHUNK 256   /* values of a one-value type (F32, F16, BF16) decoded at a time */

/* The levels (cpu_isa's order), for the preprocessor. */
#define QM_SCALAR 0
#define QM_AVX2 1
#define QM_AVX512 2

// ---- decoding (every level) ---------------------------------------------------------------------

/* No target attribute: these inline into the loops of every level. */
#define QM_COMMON static inline __attribute__((always_inline))

/* Whether `type` has a vector decoder (the AVX2 and AVX-512 levels' block_lanes). */
QM_COMMON bool vector_type(int type) {
    return type == STRIX_BLOCK_Q4_0 || type == STRIX_BLOCK_Q4_1 || type == STRIX_BLOCK_Q8_0;
}

/* Values one decode step yields: a block, or a run of up to QM_CHUNK values of a one-value
 * type (a multiple of 16 except at the row's end). */
QM_COMMON size_t step_values(int type, size_t block, size_t left) {
    (void)type;
    if (block > 1) return block;
    return left < QM_CHUNK ? left : QM_CHUNK;
}

/* `count` values of W starting at value i of a row (its bytes at row) into buf. The callers
 * are inlined with a constant `type`, so the switch leaves one decoder, inlined too. */
QM_COMMON void decode_step(int type, const uint8_t *row, size_t i, size_t block, size_t bytes,
                           size_t count, float *buf) {
    const uint8_t *b = row + i / block * bytes;
    switch (type) {
    case STRIX_BLOCK_Q4_0: strix_quant_q4_0(b, buf); break;
    case STRIX_BLOCK_Q4_1: strix_quant_q4_1(b, buf); break;
    case STRIX_BLOCK_Q5_0: strix_quant_q5_0(b, buf); break;
    case STRIX_BLOCK_Q5_1: strix_quant_q5_1(b, buf); break;
    case STRIX_BLOCK_Q8_0: strix_quant_q8_0(b, buf); break;
    case STRIX_BLOCK_Q4_K: strix_quant_q4_k(b, buf); break;
    case STRIX_BLOCK_Q6_K: strix_quant_q6_k(b, buf); break;
    default: strix_quant_decode_row(type, b, count, buf); break; /* F16, BF16 */
    }
}

/* Calls call(t) with t the constant of wtype, so that each type gets its own copy of the
 * always-inline loops with its decoder inlined. */
#define QM_SWITCH(wtype, call)                                                                 \
    switch (wtype) {                                                                           \
    case STRIX_BLOCK_F32: call(STRIX_BLOCK_F32); break;                                        \
    case STRIX_BLOCK_F16: call(STRIX_BLOCK_F16); break;                                        \
    case STRIX_BLOCK_BF16: call(STRIX_BLOCK_BF16); break;                                      \
    case STRIX_BLOCK_Q4_0: call(STRIX_BLOCK_Q4_0); break;                                      \
    case STRIX_BLOCK_Q4_1: call(STRIX_BLOCK_Q4_1); break;                                      \
    case STRIX_BLOCK_Q5_0: call(STRIX_BLOCK_Q5_0); break;                                      \
    case STRIX_BLOCK_Q5_1: call(STRIX_BLOCK_Q5_1); break;                                      \
    case STRIX_BLOCK_Q8_0: call(STRIX_BLOCK_Q8_0); break;                                      \
    case STRIX_BLOCK_Q4_K: call(STRIX_BLOCK_Q4_K); break;                                      \
    case STRIX_BLOCK_Q6_K: call(STRIX_BLOCK_Q6_K); break;                                      \
    default: break;                                                                            \
    }

/* Operands of a product's parallel loop (cpu_matmul_blocks): W (wtype, rows row_bytes apart),
 * x (rows, in), y (rows, out); the tile path's scratch in ctx's workspaces. */
typedef struct qm_args {
    int wtype;
    const uint8_t *w;
    size_t row_bytes;
    const float *x;
    size_t rows, in;
    float *y;
    size_t out;
    cpu_context *ctx;
    bool parallel; /* the loop may run on several threads: scratch by cpu_thread_index() */
} qm_args;

// ---- the loops of each level --------------------------------------------------------------------

#define QM_LEVEL QM_SCALAR
#include "backends/cpu/qmatmul_level.h"
#undef QM_LEVEL
#ifdef QM_X86
#define QM_LEVEL QM_AVX2
#include "backends/cpu/qmatmul_level.h"
#undef QM_LEVEL
#define QM_LEVEL QM_AVX512
#include "backends/cpu/qmatmul_level.h"
#undef QM_LEVEL
/* f of the level isa */
#define QM_PICK(isa, f)                                                                        \
    ((isa) == CPU_ISA_AVX512 ? f##_avx512 : (isa) == CPU_ISA_AVX2 ? f##_avx2 : f##_scalar)
#else
#define QM_PICK(isa, f) ((void)(isa), f##_scalar)
#endif

// ---- the slot -----------------------------------------------------------------------------------

strix_status cpu_matmul_blocks(strix_backend *be, const float *x, size_t rows, size_t in,
                               int wtype, const void *w, size_t out, float *y) {
    if (rows == 0 || out == 0) return STRIX_OK;
    if (in == 0) {
        for (size_t i = 0; i < rows * out; i++) y[i] = 0.0f; /* empty sums */
        return STRIX_OK;
    }
    size_t block = 1, bytes = 0;
    strix_quant_block(wtype, &block, &bytes); /* the entry point checked the type and in */
    cpu_context *ctx = be->ctx;
    /* few rows: values read times tokens; else multiply-adds / 8 (as the GEMM) */
    double weights = (double)in * (double)out;
    double work = rows <= QM_FEW_ROWS ? (double)rows * weights : (double)rows * weights / 8.0;
    int threads = cpu_max_threads();
    bool parallel = threads > 1 && CPU_WORTH(work);
    qm_args a = {wtype, w, in / block * bytes, x, rows, in, y, out, ctx, parallel};
    cpu_isa isa = cpu_isa_active();
    if (rows <= QM_FEW_ROWS) { /* contiguous ranges of whole groups of QM_GEMV_ROWS features */
        size_t groups = (out + QM_GEMV_ROWS - 1) / QM_GEMV_ROWS;
        cpu_parallel_for(groups, parallel, QM_PICK(isa, gemv_groups_range), &a);
        return STRIX_OK;
    }
    STRIX_TRY(cpu_scratch_reserve(ctx, parallel ? threads : 1, QM_TILE * in));
    size_t tiles = (out + QM_TILE - 1) / QM_TILE; /* contiguous ranges of tiles */
    cpu_parallel_for(tiles, parallel, QM_PICK(isa, gemm_tiles_range), &a);
    return STRIX_OK;
}
