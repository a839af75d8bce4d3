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
/* How much more work a parallel region of this backend's GEMM, CNN and elementwise loops needs
 * when OpenMP's worker threads sleep between regions (OMP_WAIT_POLICY=passive): waking one then
 * costs 25-50 us on the 2-core machines, the time of ~1M elements of a memory-bound loop, so
 * smaller loops run faster on the calling thread. 32 then, else 1. */
size_t cpu_region_cost_factor(void);
/* Whether `work` (elements touched, or multiply-adds / 8 for a GEMM) is worth a parallel region:
 * CPU_BIG with the threshold scaled by cpu_region_cost_factor, except a threshold lowered to 1
 * (tests that push every loop through OpenMP), taken as is. */
#define CPU_WORTH(work)                                                                         \
    ((size_t)(work) >= cpu_parallel_min_work *                                                  \
                           (cpu_parallel_min_work > 1 ? cpu_region_cost_factor() : 1))
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
strix_status cpu_clamp(strix_backend *be, const float *in, float lo, float hi, float *out,
                       size_t n);
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

strix_status cpu_accumulate_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                 size_t cols);
strix_status cpu_copy_2d(strix_backend *be, float *dst, size_t dst_stride, const float *src,
                         size_t src_stride, size_t rows, size_t cols);
strix_status cpu_bce_with_logits(strix_backend *be, const float *logits, const float *target,
                                 float *out, size_t n);
strix_status cpu_bce_with_logits_grad(strix_backend *be, const float *logits, const float *target,
                                      float *grad, size_t n, float scale);
strix_status cpu_rms_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                  float *out, float *row_rms, size_t rows, size_t cols, float eps);
strix_status cpu_rms_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                   const float *in, const float *row_rms, float *grad_in,
                                   float *gamma_terms, size_t rows, size_t cols);
strix_status cpu_attention_mask_fill(strix_backend *be, float *scores, const float *keep, size_t B,
                                     size_t H, size_t Lq, size_t Lk, bool causal, size_t q_off,
                                     size_t window, float value);
strix_status cpu_im2col(strix_backend *be, const float *in, float *col, size_t n, size_t c,
                        size_t h, size_t w, const strix_conv_geom *g);
strix_status cpu_col2im_add(strix_backend *be, const float *col, float *out, size_t n, size_t c,
                            size_t h, size_t w, const strix_conv_geom *g);
strix_status cpu_add_channel_vector(strix_backend *be, const float *in, const float *vec,
                                    float *out, size_t n, size_t c, size_t inner);
strix_status cpu_conv2d_forward(strix_backend *be, const float *in, const float *weight,
                                const float *bias, float *z, float *out, size_t n, size_t c,
                                size_t h, size_t w, size_t oc, const strix_conv_geom *g);
strix_status cpu_conv2d_backward(strix_backend *be, const float *in, const float *weight,
                                 const float *dy, float *dweight, float *dbias, float *dx, size_t n,
                                 size_t c, size_t h, size_t w, size_t oc, const strix_conv_geom *g);
strix_status cpu_max_pool_forward(strix_backend *be, const float *in, float *out, int32_t *argmax,
                                  size_t planes, size_t h, size_t w, const strix_conv_geom *g);
strix_status cpu_max_unpool(strix_backend *be, const float *src, const int32_t *argmax, float *dst,
                            size_t planes, size_t h, size_t w, const strix_conv_geom *g);
strix_status cpu_avg_pool_forward(strix_backend *be, const float *in, float *out, size_t planes,
                                  size_t h, size_t w, const strix_conv_geom *g);
strix_status cpu_avg_pool_backward(strix_backend *be, const float *grad_out, float *grad_in,
                                   size_t planes, size_t h, size_t w, const strix_conv_geom *g);
strix_status cpu_batch_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                    const float *beta, float *xhat, float *out, float *channel_std,
                                    size_t n, size_t c, size_t spatial, float eps);
strix_status cpu_batch_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                     const float *xhat, const float *channel_std, float *grad_in,
                                     float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                     size_t spatial);
strix_status cpu_batch_norm_update_running(strix_backend *be, const float *in, float *running_mean,
                                           float *running_var, size_t n, size_t c, size_t spatial,
                                           float momentum);
strix_status cpu_batch_norm_eval_forward(strix_backend *be, const float *in, const float *gamma,
                                         const float *beta, const float *running_mean,
                                         const float *running_var, float *xhat, float *out,
                                         float *channel_std, size_t n, size_t c, size_t spatial,
                                         float eps);
strix_status cpu_batch_norm_eval_backward(strix_backend *be, const float *grad_out,
                                          const float *gamma, const float *xhat,
                                          const float *channel_std, float *grad_in,
                                          float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                          size_t spatial);
strix_status cpu_group_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                    const float *beta, float *xhat, float *out, float *group_std,
                                    size_t n, size_t c, size_t spatial, size_t groups, float eps);
strix_status cpu_group_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                     const float *xhat, const float *group_std, float *grad_in,
                                     float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                     size_t spatial, size_t groups);
strix_status cpu_lrp_linear(strix_backend *be, const float *x, const float *w, const float *z,
                            const float *r, float *r_in, size_t rows, size_t in_features,
                            size_t out_features, float eps);
strix_status cpu_lrp_residual_split(strix_backend *be, const float *a, const float *b,
                                    const float *r, float *r_a, float *r_b, size_t n, float eps);
strix_status cpu_lrp_bilinear_elementwise(strix_backend *be, const float *a, const float *b,
                                          const float *r, float *r_out, size_t n, float eps);
strix_status cpu_lrp_bilinear_matmul(strix_backend *be, const float *a, const float *b,
                                     const float *o, const float *r_o, float *r_a, float *r_b,
                                     size_t slices, size_t m, size_t p, size_t q, float eps,
                                     bool b_transposed);
strix_status cpu_lrp_softmax_rows(strix_backend *be, const float *x, const float *y,
                                  const float *r, float *r_in, size_t rows, size_t cols);
strix_status cpu_lrp_rope(strix_backend *be, const float *x, const float *y, const float *r,
                          const float *cos_table, const float *sin_table, float *r_in, size_t rows,
                          size_t seq_len, size_t head_dim, float eps);
strix_status cpu_lrp_conv(strix_backend *be, const float *col, const float *kernel, const float *z,
                          const float *r, float *r_col, size_t n, size_t out_channels, size_t p,
                          size_t q, float eps);
strix_status cpu_lrp_avg_pool(strix_backend *be, const float *x, const float *r, float *r_in,
                              size_t planes, size_t h, size_t w, const strix_conv_geom *g,
                              float eps);
strix_status cpu_lrp_stabilized_divide(strix_backend *be, const float *r, const float *den,
                                       const float *gate, float *out, size_t n, float eps,
                                       strix_lrp_gate gate_mode);
strix_status cpu_logic_pointwise(strix_backend *be, strix_logic_op op, strix_logic_norm norm,
                                 const float *a, const float *b, const float *g_or_r,
                                 const float *y, float *out_a, float *out_b, size_t n, float eps);
strix_status cpu_aggregator_forward(strix_backend *be, const float *x, float *mean_pow, float *out,
                                    size_t n, size_t cols, float p);
strix_status cpu_aggregator_backward(strix_backend *be, const float *x, const float *mean_pow,
                                     const float *grad_out, float *grad_in, size_t n, size_t cols,
                                     float p);
strix_status cpu_aggregator_lrp(strix_backend *be, const float *x, const float *mean_pow,
                                const float *r_out, float *r_in, size_t n, size_t cols, float p,
                                float eps);
strix_status cpu_recurrent_cell(strix_backend *be, strix_cell_op op, const strix_cell_args *args,
                                size_t n);
strix_status cpu_gru_lrp_hprev(strix_backend *be, const float *h_prev, const float *w_hn,
                               const float *hn, const float *r_term_b, const float *direct,
                               float *r_hprev, size_t rows, size_t hidden, float eps);
strix_status cpu_ssm_pass(strix_backend *be, strix_ssm_op op, const strix_ssm_args *args);
strix_status cpu_rl_rows(strix_backend *be, strix_rl_op op, const strix_rl_args *args);
strix_status cpu_tanh_gaussian_forward(strix_backend *be, const float *mean, const float *log_std,
                                       const float *eps, float *action, float *std_cache,
                                       float *log_prob, size_t rows, size_t cols,
                                       float stabilizer);
strix_status cpu_tanh_gaussian_backward(strix_backend *be, const float *action,
                                        const float *std_cache, const float *eps,
                                        const float *grad_action, const float *grad_log_prob,
                                        float *grad_mean, float *grad_log_std, size_t rows,
                                        size_t cols, float stabilizer);

#endif
