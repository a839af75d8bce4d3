/*
 * backend_impl.h - the backend vtable (internal). One slot per primitive; each slot has the
 * signature of its public wrapper in include/strix/backend.h. A NULL slot means "unsupported": the
 * wrapper reports STRIX_ERR_UNSUPPORTED and never falls back to another backend. The wrappers
 * (src/core/backend.c, src/core/ops_*.c) make the argument checks every backend relies on (bad
 * op -> STRIX_ERR_ARG, contract violations -> STRIX_ASSERT) before the call; slots do not repeat
 * them. Checks that read the data (RL actions) stay with the backend that holds it.
 *
 * To add a backend: fill a `struct strix_backend_i` with designated initializers, register its name
 * in src/core/backend.c, and pass tests/test_ops.c with a column for it (docs/BACKENDS.md).
 */
#ifndef STRIX_BACKEND_IMPL_H
#define STRIX_BACKEND_IMPL_H

#include "strix/backend.h"

#ifdef __cplusplus
extern "C" { /* the GPU backends' .cu files are C++ */
#endif

struct strix_backend_i {
    // lifecycle and memory
    void (*destroy)(strix_backend *be);
    strix_status (*sync)(strix_backend *be);
    strix_status (*alloc)(strix_backend *be, size_t bytes, void **out);
    void (*free_buffer)(strix_backend *be, void *p);
    strix_status (*copy)(strix_backend *be, void *dst, const void *src, size_t bytes,
                         strix_copy_dir dir);
    strix_status (*fill)(strix_backend *be, float *p, float value, size_t n);

    // GEMM
    strix_status (*gemm_ex)(strix_backend *be, const float *a, bool ta, const float *b, bool tb,
                            float *out, size_t m, size_t k, size_t n, float beta);
    strix_status (*gemm_batched)(strix_backend *be, const strix_gemm_batch *g);

    // elementwise and vector
    strix_status (*add)(strix_backend *be, const float *a, const float *b, float *out, size_t n);
    strix_status (*mul)(strix_backend *be, const float *a, const float *b, float *out, size_t n);
    strix_status (*axpby)(strix_backend *be, float alpha, const float *x, float beta,
                          const float *y, float *out, size_t n);
    strix_status (*clamp)(strix_backend *be, const float *in, float lo, float hi, float *out,
                          size_t n);
    strix_status (*column_sums)(strix_backend *be, const float *in, float *out, size_t rows,
                                size_t cols, float beta);
    strix_status (*add_row_vector)(strix_backend *be, const float *in, const float *row,
                                   float *out, size_t rows, size_t cols);
    strix_status (*elementwise)(strix_backend *be, strix_act op, const float *in, float *out,
                                size_t n);
    strix_status (*elementwise_backward)(strix_backend *be, strix_act op, const float *x,
                                         const float *grad_out, float *grad_in, size_t n);
    strix_status (*sum)(strix_backend *be, const float *in, size_t n, float *out);
    strix_status (*dot)(strix_backend *be, const float *a, const float *b, size_t n, float *out);
    strix_status (*sum_squares)(strix_backend *be, const float *in, size_t n, double *out);

    // rows
    strix_status (*softmax_rows)(strix_backend *be, const float *in, float *out, size_t rows,
                                 size_t cols);
    strix_status (*softmax_rows_backward)(strix_backend *be, const float *y, const float *dy,
                                          float *dx, size_t rows, size_t cols);
    strix_status (*logsumexp_rows)(strix_backend *be, const float *in, float *out, size_t rows,
                                   size_t cols);
    strix_status (*layer_norm_forward)(strix_backend *be, const float *in, const float *gamma,
                                       const float *beta, float *xhat, float *out,
                                       float *row_std, size_t rows, size_t cols, float eps);
    strix_status (*layer_norm_backward)(strix_backend *be, const float *grad_out,
                                        const float *gamma, const float *xhat,
                                        const float *row_std, float *grad_in, size_t rows,
                                        size_t cols);

    // positions, layout, embedding
    strix_status (*rope_rotate)(strix_backend *be, const float *in, size_t ld_in,
                                const float *cos_table, const float *sin_table, float *out,
                                size_t ld_out, size_t rows, size_t seq_len, size_t pos0,
                                size_t head_dim, bool inverse);
    strix_status (*permute_0213)(strix_backend *be, const float *in, float *out, size_t d0,
                                 size_t d1, size_t d2, size_t d3);
    strix_status (*gather_rows)(strix_backend *be, const float *table, const int32_t *idx,
                                float *out, size_t count, size_t dim);
    strix_status (*scatter_add_rows)(strix_backend *be, const float *src, const int32_t *idx,
                                     float *table, size_t count, size_t dim);

    // fused
    strix_status (*attn_softmax_causal)(strix_backend *be, const float *scores, float *probs,
                                        size_t slices, size_t T, float scale);
    strix_status (*attn_softmax_causal_backward)(strix_backend *be, const float *probs,
                                                 const float *dprobs, float *dscores,
                                                 size_t slices, size_t T, float scale);
    strix_status (*softmax_cross_entropy)(strix_backend *be, const float *logits,
                                          const int32_t *targets, float *losses, float *dlogits,
                                          size_t rows, size_t V, float grad_scale);

    // optimizer, regularisation, selection
    strix_status (*adam_step)(strix_backend *be, float *param, const float *grad, float *m,
                              float *v, size_t n, float lr, float beta1, float beta2, float eps,
                              float bias_correction1, float bias_correction2);
    strix_status (*dropout_forward)(strix_backend *be, const float *in, float *out, float *mask,
                                    size_t n, float p, float scale, uint64_t seed,
                                    uint64_t offset);
    strix_status (*top_k_rows)(strix_backend *be, const float *in, float *vals, int32_t *idx,
                               size_t rows, size_t cols, size_t k, bool largest);

    // strix/backend.h
    strix_status (*accumulate_rows)(strix_backend *be, const float *in, float *out, size_t rows,
                                    size_t cols);
    strix_status (*copy_2d)(strix_backend *be, float *dst, size_t dst_stride, const float *src,
                            size_t src_stride, size_t rows, size_t cols);
    strix_status (*bce_with_logits)(strix_backend *be, const float *logits, const float *target,
                                    float *out, size_t n);
    strix_status (*bce_with_logits_grad)(strix_backend *be, const float *logits,
                                         const float *target, float *grad, size_t n, float scale);
    strix_status (*rms_norm_forward)(strix_backend *be, const float *in, const float *gamma,
                                     float *out, float *row_rms, size_t rows, size_t cols,
                                     float eps);
    strix_status (*rms_norm_backward)(strix_backend *be, const float *grad_out, const float *gamma,
                                      const float *in, const float *row_rms, float *grad_in,
                                      float *gamma_terms, size_t rows, size_t cols);
    strix_status (*attention_mask_fill)(strix_backend *be, float *scores, const float *keep,
                                        size_t B, size_t H, size_t Lq, size_t Lk, bool causal,
                                        size_t q_off, size_t window, float value);

    // strix/ops/cnn.h
    strix_status (*im2col)(strix_backend *be, const float *in, float *col, size_t n, size_t c,
                           size_t h, size_t w, const strix_conv_geom *g);
    strix_status (*col2im_add)(strix_backend *be, const float *col, float *out, size_t n, size_t c,
                               size_t h, size_t w, const strix_conv_geom *g);
    strix_status (*add_channel_vector)(strix_backend *be, const float *in, const float *vec,
                                       float *out, size_t n, size_t c, size_t inner);
    strix_status (*conv2d_forward)(strix_backend *be, const float *in, const float *weight,
                                   const float *bias, float *z, float *out, size_t n, size_t c,
                                   size_t h, size_t w, size_t oc, const strix_conv_geom *g);
    strix_status (*conv2d_backward)(strix_backend *be, const float *in, const float *weight,
                                    const float *dy, float *dweight, float *dbias, float *dx,
                                    size_t n, size_t c, size_t h, size_t w, size_t oc,
                                    const strix_conv_geom *g);
    strix_status (*max_pool_forward)(strix_backend *be, const float *in, float *out,
                                     int32_t *argmax, size_t planes, size_t h, size_t w,
                                     const strix_conv_geom *g);
    strix_status (*max_unpool)(strix_backend *be, const float *src, const int32_t *argmax,
                               float *dst, size_t planes, size_t h, size_t w,
                               const strix_conv_geom *g);
    strix_status (*avg_pool_forward)(strix_backend *be, const float *in, float *out, size_t planes,
                                     size_t h, size_t w, const strix_conv_geom *g);
    strix_status (*avg_pool_backward)(strix_backend *be, const float *grad_out, float *grad_in,
                                      size_t planes, size_t h, size_t w, const strix_conv_geom *g);
    strix_status (*batch_norm_forward)(strix_backend *be, const float *in, const float *gamma,
                                       const float *beta, float *xhat, float *out,
                                       float *channel_std, size_t n, size_t c, size_t spatial,
                                       float eps);
    strix_status (*batch_norm_backward)(strix_backend *be, const float *grad_out,
                                        const float *gamma, const float *xhat,
                                        const float *channel_std, float *grad_in,
                                        float *gamma_grad, float *beta_grad, size_t n, size_t c,
                                        size_t spatial);
    strix_status (*batch_norm_update_running)(strix_backend *be, const float *in,
                                              float *running_mean, float *running_var, size_t n,
                                              size_t c, size_t spatial, float momentum);
    strix_status (*batch_norm_eval_forward)(strix_backend *be, const float *in, const float *gamma,
                                            const float *beta, const float *running_mean,
                                            const float *running_var, float *xhat, float *out,
                                            float *channel_std, size_t n, size_t c, size_t spatial,
                                            float eps);
    strix_status (*batch_norm_eval_backward)(strix_backend *be, const float *grad_out,
                                             const float *gamma, const float *xhat,
                                             const float *channel_std, float *grad_in,
                                             float *gamma_grad, float *beta_grad, size_t n,
                                             size_t c, size_t spatial);
    strix_status (*group_norm_forward)(strix_backend *be, const float *in, const float *gamma,
                                       const float *beta, float *xhat, float *out,
                                       float *group_std, size_t n, size_t c, size_t spatial,
                                       size_t groups, float eps);
    strix_status (*group_norm_backward)(strix_backend *be, const float *grad_out,
                                        const float *gamma, const float *xhat,
                                        const float *group_std, float *grad_in, float *gamma_grad,
                                        float *beta_grad, size_t n, size_t c, size_t spatial,
                                        size_t groups);

    // strix/ops/lrp.h
    strix_status (*lrp_linear)(strix_backend *be, const float *x, const float *w, const float *z,
                               const float *r, float *r_in, size_t rows, size_t in_features,
                               size_t out_features, float eps);
    strix_status (*lrp_residual_split)(strix_backend *be, const float *a, const float *b,
                                       const float *r, float *r_a, float *r_b, size_t n,
                                       float eps);
    strix_status (*lrp_bilinear_elementwise)(strix_backend *be, const float *a, const float *b,
                                             const float *r, float *r_out, size_t n, float eps);
    strix_status (*lrp_bilinear_matmul)(strix_backend *be, const float *a, const float *b,
                                        const float *o, const float *r_o, float *r_a, float *r_b,
                                        size_t slices, size_t m, size_t p, size_t q, float eps,
                                        bool b_transposed);
    strix_status (*lrp_softmax_rows)(strix_backend *be, const float *x, const float *y,
                                     const float *r, float *r_in, size_t rows, size_t cols);
    strix_status (*lrp_rope)(strix_backend *be, const float *x, const float *y, const float *r,
                             const float *cos_table, const float *sin_table, float *r_in,
                             size_t rows, size_t seq_len, size_t head_dim, float eps);
    strix_status (*lrp_conv)(strix_backend *be, const float *col, const float *kernel,
                             const float *z, const float *r, float *r_col, size_t n,
                             size_t out_channels, size_t p, size_t q, float eps);
    strix_status (*lrp_avg_pool)(strix_backend *be, const float *x, const float *r, float *r_in,
                                 size_t planes, size_t h, size_t w, const strix_conv_geom *g,
                                 float eps);
    strix_status (*lrp_stabilized_divide)(strix_backend *be, const float *r, const float *den,
                                          const float *gate, float *out, size_t n, float eps,
                                          strix_lrp_gate gate_mode);
    strix_status (*logic_pointwise)(strix_backend *be, strix_logic_op op, strix_logic_norm norm,
                                    const float *a, const float *b, const float *g_or_r,
                                    const float *y, float *out_a, float *out_b, size_t n,
                                    float eps);
    strix_status (*aggregator_forward)(strix_backend *be, const float *x, float *mean_pow,
                                       float *out, size_t n, size_t cols, float p);
    strix_status (*aggregator_backward)(strix_backend *be, const float *x, const float *mean_pow,
                                        const float *grad_out, float *grad_in, size_t n,
                                        size_t cols, float p);
    strix_status (*aggregator_lrp)(strix_backend *be, const float *x, const float *mean_pow,
                                   const float *r_out, float *r_in, size_t n, size_t cols, float p,
                                   float eps);

    // strix/ops/recurrent.h
    strix_status (*recurrent_cell)(strix_backend *be, strix_cell_op op,
                                   const strix_cell_args *args, size_t n);
    strix_status (*gru_lrp_hprev)(strix_backend *be, const float *h_prev, const float *w_hn,
                                  const float *hn, const float *r_term_b, const float *direct,
                                  float *r_hprev, size_t rows, size_t hidden, float eps);
    strix_status (*ssm_pass)(strix_backend *be, strix_ssm_op op, const strix_ssm_args *args);

    // strix/ops/rl.h
    strix_status (*rl_rows)(strix_backend *be, strix_rl_op op, const strix_rl_args *args);
    strix_status (*tanh_gaussian_forward)(strix_backend *be, const float *mean,
                                          const float *log_std, const float *eps, float *action,
                                          float *std_cache, float *log_prob, size_t rows,
                                          size_t cols, float stabilizer);
    strix_status (*tanh_gaussian_backward)(strix_backend *be, const float *action,
                                           const float *std_cache, const float *eps,
                                           const float *grad_action, const float *grad_log_prob,
                                           float *grad_mean, float *grad_log_std, size_t rows,
                                           size_t cols, float stabilizer);
};

struct strix_backend {
    const struct strix_backend_i *vt;
    const char *name;
    strix_device device;
    void *ctx;  /* backend-private state */
};

/* STRIX_ERR_UNSUPPORTED naming the backend and the primitive (src/core/backend.c). */
strix_status strix_backend_unsupported(const strix_backend *be, const char *op);

/* The body of a public primitive: checks the handle, then returns the slot's result, or
 * STRIX_ERR_UNSUPPORTED for a NULL slot (never another backend). */
#define STRIX_DISPATCH(be, slot, ...)                                                          \
    do {                                                                                       \
        STRIX_ASSERT((be) != NULL, "NULL backend in " #slot);                                  \
        if ((be)->vt->slot == NULL) return strix_backend_unsupported((be), #slot);             \
        return (be)->vt->slot((be), __VA_ARGS__);                                              \
    } while (0)

/* Argument checks the wrappers make before dispatch (the backends rely on them): asserts that
 * args->in[k] is non-NULL for every bit k of `in_mask` (k < n_in), and likewise args->out[k] for
 * `out_mask` (k < n_out); `name` and `op` go into the message. */
#define STRIX_ASSERT_SLOTS(name, op, args, in_mask, n_in, out_mask, n_out)                     \
    do {                                                                                       \
        for (int k_ = 0; k_ < (n_in); k_++)                                                    \
            STRIX_ASSERT(!((in_mask) >> k_ & 1u) || (args)->in[k_] != NULL,                    \
                         "%s op %d: in[%d] is NULL", (name), (int)(op), k_);                   \
        for (int k_ = 0; k_ < (n_out); k_++)                                                   \
            STRIX_ASSERT(!((out_mask) >> k_ & 1u) || (args)->out[k_] != NULL,                  \
                         "%s op %d: out[%d] is NULL", (name), (int)(op), k_);                  \
    } while (0)

/* STRIX_OK if every action actions[k] (host memory, k < count; the actions of rows row0 + k) is a
 * whole number in [0, cols), else STRIX_ERR_ARG naming the first bad row (src/core/ops_rl.c).
 * The backends call it before they write anything: the CPU on in[1], a GPU on chunks it copied
 * down. */
strix_status strix_rl_check_actions(const float *actions, size_t count, size_t row0, size_t cols);

/* Constructors of the built-in backends (src/backends/<name>/). */
strix_status strix_cpu_backend_create(bool use_blas, strix_backend **out);

/* The GPU backends (src/backends/cuda/, compiled by nvcc for CUDA and by hipcc for HIP; C
 * linkage), each built into its run-time plugin (src/core/plugin.h, plugin.c) and in tests/gpu_emu.
 * `device` is the device index; `hip` says which vendor the caller asks for and must match the
 * build of the function (strix_cuda_: false, strix_hip_: true), else STRIX_ERR_UNSUPPORTED; `opt`
 * the init options (NULL = defaults). STRIX_ERR_DEVICE when the machine has no such GPU or its
 * runtime fails, STRIX_ERR_ARG for a device index out of range, STRIX_ERR_ALLOC. */
strix_status strix_cuda_backend_create(int device, bool hip, const strix_backend_options *opt,
                                       strix_backend **out);
strix_status strix_hip_backend_create(int device, bool hip, const strix_backend_options *opt,
                                      strix_backend **out);

/* What a GPU backend's caching allocator holds: bytes taken from the device (reserved), bytes
 * handed out (in_use), device allocations made so far (device_mallocs; it stops growing once a
 * training step has run). */
typedef struct strix_gpu_memstats {
    size_t reserved_bytes, in_use_bytes, device_mallocs;
} strix_gpu_memstats;
void strix_cuda_memory_stats(const strix_backend *be, strix_gpu_memstats *out);
void strix_hip_memory_stats(const strix_backend *be, strix_gpu_memstats *out);
/* The stats of any backend: false (and zeros) for a CPU backend and for a GPU backend that did
 * not come from a plugin (src/core/registry.c). */
bool strix_gpu_memory_stats(const strix_backend *be, strix_gpu_memstats *out);

#ifdef STRIX_HAVE_BLAS
/* Holds OpenBLAS's own thread pool at one thread, keeping the OpenMP thread count (cpu-blas). */
void strix_cpu_blas_hold_one_thread(void);
#endif

#ifdef __cplusplus
}
#endif

#endif
