/*
 * cpu_internal.h - what the files of the CPU backend share: its private context (GEMM
 * workspaces), the OpenMP helpers, and the prototypes of every slot of its vtable.
 *
 * Not a public header: modules reach these functions only through include/strix/backend.h.
 */
#ifndef STRIX_CPU_INTERNAL_H
#define STRIX_CPU_INTERNAL_H

#include "core/backend_impl.h"

#ifdef _OPENMP
#include <omp.h>
#define CPU_PRAGMA(text) _Pragma(#text)
/* A parallel loop over independent outputs, taken only when `cond` holds (enough work). */
#define CPU_PARALLEL_FOR_IF(cond) CPU_PRAGMA(omp parallel for schedule(static) if(cond))
#else
#define CPU_PARALLEL_FOR_IF(cond)
#endif

/* Work (elements touched) under which a loop stays on the calling thread (an OpenMP region
 * costs ~1-5 us). Default 32768. tests/test_ops.c lowers it to 1 to push every loop through
 * OpenMP and check that results do not change; GEMM's own threshold is 8x this. */
extern size_t cpu_parallel_min_work;
/* Sets cpu_parallel_min_work (0 restores the default) and returns the previous value. */
size_t cpu_set_parallel_min_work(size_t work);
#define CPU_BIG(work) ((size_t)(work) >= cpu_parallel_min_work)

/* Threads an OpenMP region started here would get (1 without OpenMP or inside a region). */
int cpu_max_threads(void);
/* Index of the calling thread in the current region (0 outside). */
int cpu_thread_index(void);

/* GEMM scratch of one thread: packed A block, packed B panel (all of k), accumulator tile. */
typedef struct cpu_gemm_workspace {
    float *pack_a;
    float *pack_b;
    float *acc;
    size_t pack_b_floats; /* capacity of pack_b */
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

// ---- vtable slots (semantics: include/strix/backend.h) -----------------------------------------

strix_status cpu_gemm_ex(strix_backend *be, const float *a, bool ta, const float *b, bool tb,
                         float *out, size_t m, size_t k, size_t n, float beta);
strix_status cpu_gemm_batched(strix_backend *be, const strix_gemm_batch *g);
#ifdef STRIX_HAVE_BLAS
strix_status cpu_blas_gemm_ex(strix_backend *be, const float *a, bool ta, const float *b, bool tb,
                              float *out, size_t m, size_t k, size_t n, float beta);
strix_status cpu_blas_gemm_batched(strix_backend *be, const strix_gemm_batch *g);
#endif

strix_status cpu_add(strix_backend *be, const float *a, const float *b, float *out, size_t n);
strix_status cpu_mul(strix_backend *be, const float *a, const float *b, float *out, size_t n);
strix_status cpu_axpby(strix_backend *be, float alpha, const float *x, float beta, const float *y,
                       float *out, size_t n);
strix_status cpu_column_sums(strix_backend *be, const float *in, float *out, size_t rows,
                             size_t cols, float beta);
strix_status cpu_add_row_vector(strix_backend *be, const float *in, const float *row, float *out,
                                size_t rows, size_t cols);
strix_status cpu_elementwise(strix_backend *be, strix_act op, const float *in, float *out,
                             size_t n);
strix_status cpu_elementwise_backward(strix_backend *be, strix_act op, const float *x,
                                      const float *grad_out, float *grad_in, size_t n);
strix_status cpu_sum(strix_backend *be, const float *in, size_t n, float *out);
strix_status cpu_dot(strix_backend *be, const float *a, const float *b, size_t n, float *out);
strix_status cpu_sum_squares(strix_backend *be, const float *in, size_t n, double *out);

strix_status cpu_softmax_rows(strix_backend *be, const float *in, float *out, size_t rows,
                              size_t cols);
strix_status cpu_softmax_rows_backward(strix_backend *be, const float *y, const float *dy,
                                       float *dx, size_t rows, size_t cols);
strix_status cpu_logsumexp_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                size_t cols);
strix_status cpu_layer_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                    const float *beta, float *xhat, float *out, float *row_std,
                                    size_t rows, size_t cols, float eps);
strix_status cpu_layer_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                     const float *xhat, const float *row_std, float *grad_in,
                                     size_t rows, size_t cols);
strix_status cpu_attn_softmax_causal(strix_backend *be, const float *scores, float *probs,
                                     size_t slices, size_t T, float scale);
strix_status cpu_attn_softmax_causal_backward(strix_backend *be, const float *probs,
                                              const float *dprobs, float *dscores, size_t slices,
                                              size_t T, float scale);
strix_status cpu_softmax_cross_entropy(strix_backend *be, const float *logits,
                                       const int32_t *targets, float *losses, float *dlogits,
                                       size_t rows, size_t V, float grad_scale);

strix_status cpu_rope_rotate(strix_backend *be, const float *in, size_t ld_in,
                             const float *cos_table, const float *sin_table, float *out,
                             size_t ld_out, size_t rows, size_t seq_len, size_t pos0,
                             size_t head_dim, bool inverse);
strix_status cpu_permute_0213(strix_backend *be, const float *in, float *out, size_t d0,
                              size_t d1, size_t d2, size_t d3);
strix_status cpu_gather_rows(strix_backend *be, const float *table, const int32_t *idx,
                             float *out, size_t count, size_t dim);
strix_status cpu_scatter_add_rows(strix_backend *be, const float *src, const int32_t *idx,
                                  float *table, size_t count, size_t dim);

strix_status cpu_adam_step(strix_backend *be, float *param, const float *grad, float *m, float *v,
                           size_t n, float lr, float beta1, float beta2, float eps,
                           float bias_correction1, float bias_correction2);
strix_status cpu_dropout_forward(strix_backend *be, const float *in, float *out, float *mask,
                                 size_t n, float p, float scale, uint64_t seed, uint64_t offset);
strix_status cpu_top_k_rows(strix_backend *be, const float *in, float *vals, int32_t *idx,
                            size_t rows, size_t cols, size_t k, bool largest);

#endif
