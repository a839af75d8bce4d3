/*
 * cuda_internal.h - what the files of the CUDA backend share (compiled by nvcc, and by hipcc
 * through vendor.h for the HIP backend): the private context, launch helpers, status checks, and
 * the prototypes of every slot of its vtable. Kernels call the per-lane math of src/kernels/,
 * the same functions the CPU loops call, one GPU thread per lane.
 *
 * Kernels are `static __global__`, use no warp shuffles or warp-size assumptions and no atomics
 * in reductions (vendor.h says why). Launch pattern, one thread per lane:
 *     k_op<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(...);
 *     return cuda_launched(be, "op");
 *
 * Not a public header: modules reach these functions only through include/strix/backend.h.
 */
#ifndef STRIX_CUDA_INTERNAL_H
#define STRIX_CUDA_INTERNAL_H

#include "backends/cuda/vendor.h"
#include "core/backend_impl.h"

/* Threads per block of the one-thread-per-lane launches. */
#define CUDA_BLOCK 256

/* Blocks of CUDA_BLOCK threads that cover n lanes (at least 1). */
static inline unsigned cuda_blocks(size_t n) {
    size_t b = (n + CUDA_BLOCK - 1) / CUDA_BLOCK;
    return (unsigned)(b ? b : 1);
}

/* Private state of a CUDA/HIP backend (cuda_backend.cu): device, stream, BLAS handle, caching
 * allocator, a growing scratch workspace. */
typedef struct cuda_context cuda_context;

/* The backend's stream: every launch and copy goes on it (no per-op synchronisation). Also makes
 * the backend's device current on this host thread when another one was. */
cudaStream_t cuda_stream(const strix_backend *be);

/* STRIX_OK, or STRIX_ERR_DEVICE naming `what` and the runtime's message, for the last launch
 * (cudaGetLastError). Use after every kernel launch: `return cuda_launched(be, "softmax_rows");` */
strix_status cuda_launched(const strix_backend *be, const char *what);

/* Checks a runtime call's result: STRIX_ERR_DEVICE naming the call (STRIX_ERR_ALLOC for out of
 * memory). */
strix_status cuda_check(cudaError_t err, const char *call);
#define CUDA_TRY(call)                                                                         \
    do {                                                                                       \
        strix_status cuda_try_s_ = cuda_check((call), #call);                                 \
        if (cuda_try_s_ != STRIX_OK) return cuda_try_s_;                                       \
    } while (0)

#if STRIX_GPU_HAVE_BLAS
/* The backend's cuBLAS (hipBLAS) handle, bound to its stream; FP32 math (TF32 only with
 * the init option tf32), atomics not allowed. */
cublasHandle_t cuda_blas(const strix_backend *be);

/* Checks a cuBLAS (hipBLAS) status: STRIX_ERR_DEVICE naming the call. */
strix_status cuda_blas_check(cublasStatus_t st, const char *call);
#endif

/* True when the GEMM slots use our own tiled kernel (gemm.cu) rather than the vendor BLAS: no
 * BLAS in this build (HIP without hipBLAS), or the init option gpu_gemm = STRIX_GPU_GEMM_OWN
 * (the strix command sets it for STRIX_CUDA_GEMM=own). */
bool cuda_own_gemm(const strix_backend *be);

/* A device scratch buffer of at least `bytes`, owned by the backend and reused by the next call
 * that asks (one stream: kernels queued earlier finish first). Valid until the next
 * cuda_scratch call. STRIX_ERR_ALLOC / STRIX_ERR_DEVICE. */
strix_status cuda_scratch(strix_backend *be, size_t bytes, void **out);

/* Copies `bytes` device -> host on the stream and waits (for results that return to the host). */
strix_status cuda_download(strix_backend *be, void *host, const void *device, size_t bytes);

// ---- vtable slots (semantics: include/strix/backend.h and include/strix/ops/*.h) ---------------

void cuda_destroy(strix_backend *be);
strix_status cuda_sync(strix_backend *be);
strix_status cuda_alloc(strix_backend *be, size_t bytes, void **out);
void cuda_free_buffer(strix_backend *be, void *p);
strix_status cuda_copy(strix_backend *be, void *dst, const void *src, size_t bytes,
                       strix_copy_dir dir);
strix_status cuda_fill(strix_backend *be, float *p, float value, size_t n);
strix_status cuda_gemm_ex(strix_backend *be, const float *a, bool ta, const float *b, bool tb,
                          float *out, size_t m, size_t k, size_t n, float beta);
strix_status cuda_gemm_batched(strix_backend *be, const strix_gemm_batch *g);
strix_status cuda_add(strix_backend *be, const float *a, const float *b, float *out, size_t n);
strix_status cuda_mul(strix_backend *be, const float *a, const float *b, float *out, size_t n);
strix_status cuda_axpby(strix_backend *be, float alpha, const float *x, float beta, const float *y,
                        float *out, size_t n);
strix_status cuda_clamp(strix_backend *be, const float *in, float lo, float hi, float *out,
                        size_t n);
strix_status cuda_column_sums(strix_backend *be, const float *in, float *out, size_t rows,
                              size_t cols, float beta);
strix_status cuda_add_row_vector(strix_backend *be, const float *in, const float *row, float *out,
                                 size_t rows, size_t cols);
strix_status cuda_elementwise(strix_backend *be, strix_act op, const float *in, float *out,
                              size_t n);
strix_status cuda_elementwise_backward(strix_backend *be, strix_act op, const float *x,
                                       const float *grad_out, float *grad_in, size_t n);
strix_status cuda_sum(strix_backend *be, const float *in, size_t n, float *out);
strix_status cuda_dot(strix_backend *be, const float *a, const float *b, size_t n, float *out);
strix_status cuda_sum_squares(strix_backend *be, const float *in, size_t n, double *out);
strix_status cuda_softmax_rows(strix_backend *be, const float *in, float *out, size_t rows,
                               size_t cols);
strix_status cuda_softmax_rows_backward(strix_backend *be, const float *y, const float *dy,
                                        float *dx, size_t rows, size_t cols);
strix_status cuda_logsumexp_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                 size_t cols);
strix_status cuda_layer_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                     const float *beta, float *xhat, float *out, float *row_std,
                                     size_t rows, size_t cols, float eps);
strix_status cuda_layer_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                      const float *xhat, const float *row_std, float *grad_in,
                                      size_t rows, size_t cols);
strix_status cuda_rope_rotate(strix_backend *be, const float *in, size_t ld_in,
                              const float *cos_table, const float *sin_table, float *out,
                              size_t ld_out, size_t rows, size_t seq_len, size_t pos0,
                              size_t head_dim, bool inverse);
strix_status cuda_permute_0213(strix_backend *be, const float *in, float *out, size_t d0,
                               size_t d1, size_t d2, size_t d3);
strix_status cuda_gather_rows(strix_backend *be, const float *table, const int32_t *idx,
                              float *out, size_t count, size_t dim);
strix_status cuda_scatter_add_rows(strix_backend *be, const float *src, const int32_t *idx,
                                   float *table, size_t count, size_t dim);
strix_status cuda_attn_softmax_causal(strix_backend *be, const float *scores, float *probs,
                                      size_t slices, size_t T, float scale);
strix_status cuda_attn_softmax_causal_backward(strix_backend *be, const float *probs,
                                               const float *dprobs, float *dscores, size_t slices,
                                               size_t T, float scale);
strix_status cuda_softmax_cross_entropy(strix_backend *be, const float *logits,
                                        const int32_t *targets, float *losses, float *dlogits,
                                        size_t rows, size_t V, float grad_scale);
strix_status cuda_adam_step(strix_backend *be, float *param, const float *grad, float *m, float *v,
                            size_t n, float lr, float beta1, float beta2, float eps,
                            float bias_correction1, float bias_correction2);
strix_status cuda_dropout_forward(strix_backend *be, const float *in, float *out, float *mask,
                                  size_t n, float p, float scale, uint64_t seed, uint64_t offset);
strix_status cuda_top_k_rows(strix_backend *be, const float *in, float *vals, int32_t *idx,
                             size_t rows, size_t cols, size_t k, bool largest);
strix_status cuda_accumulate_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                  size_t cols);
strix_status cuda_copy_2d(strix_backend *be, float *dst, size_t dst_stride, const float *src,
                          size_t src_stride, size_t rows, size_t cols);
strix_status cuda_bce_with_logits(strix_backend *be, const float *logits, const float *target,
                                  float *out, size_t n);
strix_status cuda_bce_with_logits_grad(strix_backend *be, const float *logits, const float *target,
                                       float *grad, size_t n, float scale);
strix_status cuda_rms_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                   float *out, float *row_rms, size_t rows, size_t cols, float eps);
strix_status cuda_rms_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                    const float *in, const float *row_rms, float *grad_in,
                                    float *gamma_terms, size_t rows, size_t cols);
strix_status cuda_attention_mask_fill(strix_backend *be, float *scores, const float *keep,
                                      size_t B, size_t H, size_t Lq, size_t Lk, bool causal,
                                      size_t q_off, size_t window, float value);
strix_status cuda_im2col(strix_backend *be, const float *in, float *col, size_t n, size_t c,
                         size_t h, size_t w, const strix_conv_geom *g);
strix_status cuda_col2im_add(strix_backend *be, const float *col, float *out, size_t n, size_t c,
                             size_t h, size_t w, const strix_conv_geom *g);
strix_status cuda_add_channel_vector(strix_backend *be, const float *in, const float *vec,
                                     float *out, size_t n, size_t c, size_t inner);
strix_status cuda_conv2d_forward(strix_backend *be, const float *in, const float *weight,
                                 const float *bias, float *z, float *out, size_t n, size_t c,
                                 size_t h, size_t w, size_t oc, const strix_conv_geom *g);
strix_status cuda_conv2d_backward(strix_backend *be, const float *in, const float *weight,
                                  const float *dy, float *dweight, float *dbias, float *dx,
                                  size_t n, size_t c, size_t h, size_t w, size_t oc,
                                  const strix_conv_geom *g);
strix_status cuda_max_pool_forward(strix_backend *be, const float *in, float *out, int32_t *argmax,
                                   size_t planes, size_t h, size_t w, const strix_conv_geom *g);
strix_status cuda_max_unpool(strix_backend *be, const float *src, const int32_t *argmax,
                             float *dst, size_t planes, size_t h, size_t w,
                             const strix_conv_geom *g);
strix_status cuda_avg_pool_forward(strix_backend *be, const float *in, float *out, size_t planes,
                                   size_t h, size_t w, const strix_conv_geom *g);
strix_status cuda_avg_pool_backward(strix_backend *be, const float *grad_out, float *grad_in,
                                    size_t planes, size_t h, size_t w, const strix_conv_geom *g);
strix_status cuda_batch_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                     const float *beta, float *xhat, float *out,
                                     float *channel_std, size_t n, size_t c, size_t spatial,
                                     float eps);
strix_status cuda_batch_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                      const float *xhat, const float *channel_std, float *grad_in,
                                      float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                      size_t spatial);
strix_status cuda_batch_norm_update_running(strix_backend *be, const float *in,
                                            float *running_mean, float *running_var, size_t n,
                                            size_t c, size_t spatial, float momentum);
strix_status cuda_batch_norm_eval_forward(strix_backend *be, const float *in, const float *gamma,
                                          const float *beta, const float *running_mean,
                                          const float *running_var, float *xhat, float *out,
                                          float *channel_std, size_t n, size_t c, size_t spatial,
                                          float eps);
strix_status cuda_batch_norm_eval_backward(strix_backend *be, const float *grad_out,
                                           const float *gamma, const float *xhat,
                                           const float *channel_std, float *grad_in,
                                           float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                           size_t spatial);
strix_status cuda_group_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                     const float *beta, float *xhat, float *out, float *group_std,
                                     size_t n, size_t c, size_t spatial, size_t groups, float eps);
strix_status cuda_group_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                      const float *xhat, const float *group_std, float *grad_in,
                                      float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                      size_t spatial, size_t groups);
strix_status cuda_lrp_linear(strix_backend *be, const float *x, const float *w, const float *z,
                             const float *r, float *r_in, size_t rows, size_t in_features,
                             size_t out_features, float eps);
strix_status cuda_lrp_residual_split(strix_backend *be, const float *a, const float *b,
                                     const float *r, float *r_a, float *r_b, size_t n, float eps);
strix_status cuda_lrp_bilinear_elementwise(strix_backend *be, const float *a, const float *b,
                                           const float *r, float *r_out, size_t n, float eps);
strix_status cuda_lrp_bilinear_matmul(strix_backend *be, const float *a, const float *b,
                                      const float *o, const float *r_o, float *r_a, float *r_b,
                                      size_t slices, size_t m, size_t p, size_t q, float eps,
                                      bool b_transposed);
strix_status cuda_lrp_softmax_rows(strix_backend *be, const float *x, const float *y,
                                   const float *r, float *r_in, size_t rows, size_t cols);
strix_status cuda_lrp_rope(strix_backend *be, const float *x, const float *y, const float *r,
                           const float *cos_table, const float *sin_table, float *r_in,
                           size_t rows, size_t seq_len, size_t head_dim, float eps);
strix_status cuda_lrp_conv(strix_backend *be, const float *col, const float *kernel,
                           const float *z, const float *r, float *r_col, size_t n,
                           size_t out_channels, size_t p, size_t q, float eps);
strix_status cuda_lrp_avg_pool(strix_backend *be, const float *x, const float *r, float *r_in,
                               size_t planes, size_t h, size_t w, const strix_conv_geom *g,
                               float eps);
strix_status cuda_lrp_stabilized_divide(strix_backend *be, const float *r, const float *den,
                                        const float *gate, float *out, size_t n, float eps,
                                        strix_lrp_gate gate_mode);
strix_status cuda_logic_pointwise(strix_backend *be, strix_logic_op op, strix_logic_norm norm,
                                  const float *a, const float *b, const float *g_or_r,
                                  const float *y, float *out_a, float *out_b, size_t n, float eps);
strix_status cuda_aggregator_forward(strix_backend *be, const float *x, float *mean_pow,
                                     float *out, size_t n, size_t cols, float p);
strix_status cuda_aggregator_backward(strix_backend *be, const float *x, const float *mean_pow,
                                      const float *grad_out, float *grad_in, size_t n, size_t cols,
                                      float p);
strix_status cuda_aggregator_lrp(strix_backend *be, const float *x, const float *mean_pow,
                                 const float *r_out, float *r_in, size_t n, size_t cols, float p,
                                 float eps);
strix_status cuda_recurrent_cell(strix_backend *be, strix_cell_op op, const strix_cell_args *args,
                                 size_t n);
strix_status cuda_gru_lrp_hprev(strix_backend *be, const float *h_prev, const float *w_hn,
                                const float *hn, const float *r_term_b, const float *direct,
                                float *r_hprev, size_t rows, size_t hidden, float eps);
strix_status cuda_ssm_pass(strix_backend *be, strix_ssm_op op, const strix_ssm_args *args);
strix_status cuda_rl_rows(strix_backend *be, strix_rl_op op, const strix_rl_args *args);
strix_status cuda_tanh_gaussian_forward(strix_backend *be, const float *mean, const float *log_std,
                                        const float *eps, float *action, float *std_cache,
                                        float *log_prob, size_t rows, size_t cols, float stabilizer);
strix_status cuda_tanh_gaussian_backward(strix_backend *be, const float *action,
                                         const float *std_cache, const float *eps,
                                         const float *grad_action, const float *grad_log_prob,
                                         float *grad_mean, float *grad_log_std, size_t rows,
                                         size_t cols, float stabilizer);

#endif
