/*
 * backend_impl.h - the backend vtable (internal). One slot per primitive; each slot has the
 * signature of its public wrapper in include/strix/backend.h. A NULL slot means "unsupported": the
 * wrapper reports STRIX_ERR_UNSUPPORTED and never falls back to another backend.
 *
 * To add a backend: fill a `struct strix_backend_i` with designated initializers, register its name
 * in src/core/backend.c, and pass tests/test_ops.c with a column for it (docs/BACKENDS.md).
 */
#ifndef STRIX_BACKEND_IMPL_H
#define STRIX_BACKEND_IMPL_H

#include "strix/backend.h"

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
};

struct strix_backend {
    const struct strix_backend_i *vt;
    const char *name;
    strix_device device;
    void *ctx;  /* backend-private state */
};

/* Constructors of the built-in backends (src/backends/<name>/). */
strix_status strix_cpu_backend_create(bool use_blas, strix_backend **out);
#ifdef STRIX_HAVE_BLAS
/* Holds OpenBLAS's own thread pool at one thread, keeping the OpenMP thread count (cpu-blas). */
void strix_cpu_blas_hold_one_thread(void);
#endif

#endif
