/*
 * cpu_internal.h - what the files of the CPU backend share: its private context (GEMM
 * workspaces), its threads (workers.c), its instruction-set choice (isa.c), and the prototypes of
 * every slot of its vtable.
 *
 * Not a public header: modules reach these functions only through include/strix/backend.h.
 */
#ifndef STRIX_CPU_INTERNAL_H
#define STRIX_CPU_INTERNAL_H

#include "core/backend_impl.h"

/* Work (elements touched) under which a loop stays on the calling thread (handing chunks to the
 * workers costs ~1 us, more when they sleep). Default 32768. tests/test_ops.c lowers it to 1 to
 * push every loop through the pool and check that results do not change; GEMM's own threshold
 * is 8x this. */
extern size_t cpu_parallel_min_work;
/* Sets cpu_parallel_min_work (0 restores the default) and returns the previous value. */
size_t cpu_set_parallel_min_work(size_t work);
#define CPU_BIG(work) ((size_t)(work) >= cpu_parallel_min_work)

// ---- threads (workers.c) ----------------------------------------------------------------------

/* A parallel loop's body over items [begin, end); `args` carries its operands. Items of one loop
 * write disjoint outputs, so the result never depends on which thread ran which items. */
typedef void cpu_range_fn(void *args, size_t begin, size_t end);
/* Runs fn over items [0, n) cut into `chunks` contiguous ranges (sizes differ by at most one)
 * that the calling thread and the worker threads claim in turn; returns when all are done. On
 * the calling thread alone, as fn(args, 0, n), when !worth, inside another loop, or with one
 * thread. */
void cpu_parallel_chunks(size_t n, size_t chunks, bool worth, cpu_range_fn *fn, void *args);
/* Chunks per thread a loop should have now: 1, or more while the workers run late (a core
 * shared with another busy process; workers.c). */
int cpu_chunks_per_thread(void);
/* cpu_parallel_chunks with cpu_chunks_per_thread() chunks per thread. */
void cpu_parallel_for(size_t n, bool worth, cpu_range_fn *fn, void *args);
/* Threads a loop started here would get: the pool's count, 1 inside a loop. */
int cpu_max_threads(void);
/* Index of the calling thread among a loop's threads (0: the caller, also outside loops). */
int cpu_thread_index(void);
/* The pool's thread count (strix_set_num_threads; default: the CPUs this process may use). */
int cpu_workers_count(void);
void cpu_workers_set_count(int n);

/* Marks a hot loop body (a cpu_range_fn) to be compiled for x86-64-v4 (AVX-512), v3 (AVX2, FMA)
 * and the build's baseline, the copy picked for the running CPU when the library loads (GCC's
 * function multiversioning): a portable build vectorises it as wide as -march=native would.
 * Without contraction (-ffp-contract=off) every copy does the same operations: the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(STRIX_NATIVE_BUILD)
#define CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CPU_CLONES
#endif

// ---- instruction sets (isa.c) ------------------------------------------------------------------

/* Vector levels of the hand-written kernels (GEMM, block products). AVX2 means AVX2 + FMA + F16C;
 * AVX512 means AVX-512 F, BW, DQ and VL (Skylake-X, Zen 4 and later). Kernels of a level are
 * compiled for it with __attribute__((target(...))), whatever the build's -march. */
typedef enum cpu_isa { CPU_ISA_SCALAR, CPU_ISA_AVX2, CPU_ISA_AVX512 } cpu_isa;
#define CPU_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define CPU_TARGET_AVX512                                                                       \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))
/* Whether the running CPU executes level isa. */
bool cpu_isa_supported(cpu_isa isa);
/* The level the kernels use: the best the CPU runs, or the one cpu_isa_force chose. */
cpu_isa cpu_isa_active(void);
/* Tests and benchmarks: makes the kernels use `isa` (ignored when the CPU cannot run it; -1
 * restores the best). Returns the level used before. Not thread-safe: call between loops. */
cpu_isa cpu_isa_force(int isa);
/* "scalar", "avx2" or "avx512". */
const char *cpu_isa_name(cpu_isa isa);

/* GEMM scratch of one thread: packed A block, packed B panel (all of k), accumulator tile, rows
 * of a produced operand (gen); and the thread's scratch of fused primitives (conv2d). */
typedef struct cpu_gemm_workspace {
    float *pack_a;
    float *pack_b;
    float *acc;
    float *gen;
    size_t pack_b_floats; /* capacity of pack_b */
    float *scratch;
    size_t scratch_floats; /* capacity of scratch */
} cpu_gemm_workspace;

/* Private state of a CPU backend. One host thread uses a backend at a time. */
typedef struct cpu_context {
    cpu_gemm_workspace *workspaces;
    int workspace_count;
} cpu_context;

/* 64-byte aligned host memory (size rounded up to 64); NULL on failure or for 0 bytes. */
void *cpu_aligned_alloc(size_t bytes);

/* Makes ctx hold `threads` workspaces able to run a GEMM of inner size k. STRIX_ERR_ALLOC. */
strix_status cpu_gemm_reserve(cpu_context *ctx, int threads, size_t k);
/* Frees every workspace of ctx. */
void cpu_gemm_release(cpu_context *ctx);
/* Whether `work` (elements touched, or multiply-adds / 8 for a GEMM) is worth a parallel loop. */
#define CPU_WORTH(work) CPU_BIG(work)
/* Makes each of `threads` workspaces hold at least `floats` floats of scratch. STRIX_ERR_ALLOC. */
strix_status cpu_scratch_reserve(cpu_context *ctx, int threads, size_t floats);
/* A stored operand produced on demand (conv patches): row(ctx, r, c0, count, dst) writes
 * elements [c0, c0 + count) of stored row r into dst. */
typedef struct cpu_gemm_source {
    void (*row)(const void *ctx, size_t r, size_t c0, size_t count, float *dst);
    const void *ctx;
} cpu_gemm_source;
/* One GEMM on the calling thread (cpu_gemm_run). A and B are stored (lda/ldb: stored row
 * strides), produced by a_src/b_src instead when those are set, or A comes packed whole
 * (packed_a, from cpu_gemm_pack_a). C (m, n, row stride ldc) = op(A)·op(B) (chain false) or,
 * with chain, C's values continue their sums: C = (C + a_0·b_0) + a_1·b_1 ... in ascending k.
 * Same bits as cpu_gemm_ex for any blocking. */
typedef struct cpu_gemm_args {
    const float *a; size_t lda; bool ta; const cpu_gemm_source *a_src; const float *packed_a;
    const float *b; size_t ldb; bool tb; const cpu_gemm_source *b_src;
    float *c; size_t ldc;
    size_t m, k, n;
    bool chain;
} cpu_gemm_args;
/* Runs g on the calling thread with workspace ws (reserved for g->k). */
void cpu_gemm_run(cpu_gemm_workspace *ws, const cpu_gemm_args *g);
/* A (m, k) = op(stored a) packed whole for cpu_gemm_args.packed_a:
 * cpu_gemm_packed_a_floats(m, k) floats at dst. Lets one A serve many GEMMs (a conv weight
 * over the examples). */
size_t cpu_gemm_packed_a_floats(size_t m, size_t k);
void cpu_gemm_pack_a(const float *a, size_t lda, bool ta, size_t m, size_t k, float *dst);

// ---- vtable slots (semantics: include/strix/backend.h and include/strix/ops/*.h) ---------------

/* cpu_<name> for every primitive of src/core/primitives.def. */
#define STRIX_PRIMITIVE(header, name, params, args)                                           \
    strix_status cpu_##name(strix_backend *be, STRIX_UNPAREN params);
#include "core/primitives.def"

#ifdef STRIX_HAVE_BLAS
/* The GEMM slots of cpu-blas (gemm_blas.c). */
strix_status cpu_blas_gemm_ex(strix_backend *be, const float *a, bool ta, const float *b, bool tb,
                              float *out, size_t m, size_t k, size_t n, float beta);
strix_status cpu_blas_gemm_batched(strix_backend *be, const strix_gemm_batch *g);
strix_status cpu_blas_gemm_pack_b(strix_backend *be, const strix_gemm_batch *g, float *packed,
                                  size_t *floats);
#endif

#endif
