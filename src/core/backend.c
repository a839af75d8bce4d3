/*
 * backend.c - the public entry points of include/strix/backend.h (the registry that creates
 * backends by name is src/core/registry.c).
 *
 * Every primitive is a checked call into the vtable: a NULL slot returns STRIX_ERR_UNSUPPORTED
 * naming the backend and the primitive, and is never routed to another backend. Contract
 * violations (NULL handle, k > cols, odd head_dim) hit STRIX_ASSERT. This file holds no math.
 */
#include <string.h>

#include "core/backend_impl.h"

#ifdef STRIX_HAVE_OPENMP
#include <omp.h>
#endif

// ---- handle ------------------------------------------------------------------------------------

void strix_backend_free(strix_backend *be) {
    if (be) be->vt->destroy(be);
}

const char *strix_backend_name(const strix_backend *be) { return be->name; }

strix_device strix_backend_device(const strix_backend *be) { return be->device; }

// ---- threads -----------------------------------------------------------------------------------

void strix_set_num_threads(int n) {
#ifdef STRIX_HAVE_BLAS
    /* One threading model: the cpu-blas backend splits GEMMs across OpenMP threads and keeps
     * OpenBLAS's own pool at one thread (its spinning workers fought our OpenMP loops:
     * src/backends/cpu/gemm_blas.c). First, because OpenBLAS's OpenMP build implements this
     * call with omp_set_num_threads(1). */
    strix_cpu_blas_hold_one_thread();
#endif
#ifdef STRIX_HAVE_OPENMP
    if (n <= 0) n = omp_get_num_procs();
    omp_set_num_threads(n);
#endif
    (void)n;
}

int strix_get_num_threads(void) {
#ifdef STRIX_HAVE_OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

// ---- memory ------------------------------------------------------------------------------------

strix_status strix_backend_unsupported(const strix_backend *be, const char *op) {
    return strix_error(STRIX_ERR_UNSUPPORTED, "backend %s has no %s", be->name, op);
}

strix_status strix_alloc(strix_backend *be, size_t bytes, void **out) {
    STRIX_ASSERT(be != NULL && out != NULL, "alloc: NULL argument");
    *out = NULL;
    if (bytes == 0) return STRIX_OK;
    if (be->vt->alloc == NULL) return strix_backend_unsupported(be, "alloc");
    strix_status s = be->vt->alloc(be, bytes, out);
    if (s == STRIX_OK && *out == NULL)
        return strix_error(STRIX_ERR_ALLOC, "backend %s: allocation of %zu bytes gave NULL",
                           be->name, bytes);
    return s;
}

void strix_free(strix_backend *be, void *p) {
    if (p == NULL) return;
    STRIX_ASSERT(be != NULL && be->vt->free_buffer != NULL, "free: no backend");
    be->vt->free_buffer(be, p);
}

strix_status strix_copy(strix_backend *be, void *dst, const void *src, size_t bytes,
                        strix_copy_dir dir) {
    if (bytes == 0) return STRIX_OK;
    STRIX_DISPATCH(be, copy, dst, src, bytes, dir);
}

strix_status strix_fill(strix_backend *be, float *p, float value, size_t n) {
    if (n == 0) return STRIX_OK;
    STRIX_DISPATCH(be, fill, p, value, n);
}

strix_status strix_sync(strix_backend *be) {
    STRIX_ASSERT(be != NULL, "sync: NULL backend");
    if (be->vt->sync == NULL) return strix_backend_unsupported(be, "sync");
    return be->vt->sync(be);
}

// ---- GEMM --------------------------------------------------------------------------------------

strix_status strix_gemm_ex(strix_backend *be, const float *a, bool ta, const float *b, bool tb,
                           float *out, size_t m, size_t k, size_t n, float beta) {
    STRIX_ASSERT(m == 0 || n == 0 || out != a, "gemm_ex: out aliases a");
    STRIX_ASSERT(m == 0 || n == 0 || out != b, "gemm_ex: out aliases b");
    STRIX_DISPATCH(be, gemm_ex, a, ta, b, tb, out, m, k, n, beta);
}

strix_status strix_gemm(strix_backend *be, const float *a, const float *b, float *out, size_t m,
                        size_t k, size_t n) {
    return strix_gemm_ex(be, a, false, b, false, out, m, k, n, 0.0f);
}

strix_status strix_gemm_batched(strix_backend *be, const strix_gemm_batch *g) {
    STRIX_ASSERT(g != NULL, "gemm_batched: NULL batch");
    STRIX_ASSERT(g->lda >= (g->ta ? g->m : g->k), "gemm_batched: lda %zu too small", g->lda);
    STRIX_ASSERT(g->ldb >= (g->tb ? g->k : g->n), "gemm_batched: ldb %zu too small", g->ldb);
    STRIX_ASSERT(g->ldc >= g->n, "gemm_batched: ldc %zu < n %zu", g->ldc, g->n);
    STRIX_DISPATCH(be, gemm_batched, g);
}

// ---- elementwise and vector --------------------------------------------------------------------

strix_status strix_add(strix_backend *be, const float *a, const float *b, float *out, size_t n) {
    STRIX_DISPATCH(be, add, a, b, out, n);
}

strix_status strix_mul(strix_backend *be, const float *a, const float *b, float *out, size_t n) {
    STRIX_DISPATCH(be, mul, a, b, out, n);
}

strix_status strix_axpby(strix_backend *be, float alpha, const float *x, float beta,
                         const float *y, float *out, size_t n) {
    STRIX_DISPATCH(be, axpby, alpha, x, beta, y, out, n);
}

strix_status strix_clamp(strix_backend *be, const float *in, float lo, float hi, float *out,
                         size_t n) {
    STRIX_ASSERT(!(lo > hi), "clamp: lo %g > hi %g", lo, hi);
    STRIX_DISPATCH(be, clamp, in, lo, hi, out, n);
}

strix_status strix_column_sums(strix_backend *be, const float *in, float *out, size_t rows,
                               size_t cols, float beta) {
    STRIX_DISPATCH(be, column_sums, in, out, rows, cols, beta);
}

strix_status strix_add_row_vector(strix_backend *be, const float *in, const float *row,
                                  float *out, size_t rows, size_t cols) {
    STRIX_DISPATCH(be, add_row_vector, in, row, out, rows, cols);
}

strix_status strix_elementwise(strix_backend *be, strix_act op, const float *in, float *out,
                               size_t n) {
    STRIX_DISPATCH(be, elementwise, op, in, out, n);
}

strix_status strix_elementwise_backward(strix_backend *be, strix_act op, const float *x,
                                        const float *grad_out, float *grad_in, size_t n) {
    STRIX_DISPATCH(be, elementwise_backward, op, x, grad_out, grad_in, n);
}

strix_status strix_sum(strix_backend *be, const float *in, size_t n, float *out) {
    STRIX_DISPATCH(be, sum, in, n, out);
}

strix_status strix_dot(strix_backend *be, const float *a, const float *b, size_t n, float *out) {
    STRIX_DISPATCH(be, dot, a, b, n, out);
}

strix_status strix_sum_squares(strix_backend *be, const float *in, size_t n, double *out) {
    STRIX_DISPATCH(be, sum_squares, in, n, out);
}

// ---- rows --------------------------------------------------------------------------------------

strix_status strix_softmax_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                size_t cols) {
    STRIX_DISPATCH(be, softmax_rows, in, out, rows, cols);
}

strix_status strix_softmax_rows_backward(strix_backend *be, const float *y, const float *dy,
                                         float *dx, size_t rows, size_t cols) {
    STRIX_DISPATCH(be, softmax_rows_backward, y, dy, dx, rows, cols);
}

strix_status strix_logsumexp_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                  size_t cols) {
    STRIX_DISPATCH(be, logsumexp_rows, in, out, rows, cols);
}

strix_status strix_layer_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                      const float *beta, float *xhat, float *out,
                                      float *row_std, size_t rows, size_t cols, float eps) {
    STRIX_DISPATCH(be, layer_norm_forward, in, gamma, beta, xhat, out, row_std, rows, cols, eps);
}

strix_status strix_layer_norm_backward(strix_backend *be, const float *grad_out,
                                       const float *gamma, const float *xhat,
                                       const float *row_std, float *grad_in, size_t rows,
                                       size_t cols) {
    STRIX_DISPATCH(be, layer_norm_backward, grad_out, gamma, xhat, row_std, grad_in, rows, cols);
}

// ---- positions, layout, embedding --------------------------------------------------------------

strix_status strix_rope_rotate(strix_backend *be, const float *in, size_t ld_in,
                               const float *cos_table, const float *sin_table, float *out,
                               size_t ld_out, size_t rows, size_t seq_len, size_t pos0,
                               size_t head_dim, bool inverse) {
    STRIX_ASSERT((head_dim & 1) == 0, "rope: head_dim %zu is odd", head_dim);
    STRIX_ASSERT(ld_in >= head_dim && ld_out >= head_dim, "rope: row stride below head_dim");
    STRIX_ASSERT(seq_len > 0 || rows == 0, "rope: seq_len 0");
    STRIX_DISPATCH(be, rope_rotate, in, ld_in, cos_table, sin_table, out, ld_out, rows, seq_len,
                   pos0, head_dim, inverse);
}

strix_status strix_permute_0213(strix_backend *be, const float *in, float *out, size_t d0,
                                size_t d1, size_t d2, size_t d3) {
    STRIX_DISPATCH(be, permute_0213, in, out, d0, d1, d2, d3);
}

strix_status strix_gather_rows(strix_backend *be, const float *table, const int32_t *idx,
                               float *out, size_t count, size_t dim) {
    STRIX_DISPATCH(be, gather_rows, table, idx, out, count, dim);
}

strix_status strix_scatter_add_rows(strix_backend *be, const float *src, const int32_t *idx,
                                    float *table, size_t count, size_t dim) {
    STRIX_DISPATCH(be, scatter_add_rows, src, idx, table, count, dim);
}

// ---- fused -------------------------------------------------------------------------------------

strix_status strix_attn_softmax_causal(strix_backend *be, const float *scores, float *probs,
                                       size_t slices, size_t T, float scale) {
    STRIX_DISPATCH(be, attn_softmax_causal, scores, probs, slices, T, scale);
}

strix_status strix_attn_softmax_causal_backward(strix_backend *be, const float *probs,
                                                const float *dprobs, float *dscores,
                                                size_t slices, size_t T, float scale) {
    STRIX_DISPATCH(be, attn_softmax_causal_backward, probs, dprobs, dscores, slices, T, scale);
}

strix_status strix_softmax_cross_entropy(strix_backend *be, const float *logits,
                                         const int32_t *targets, float *losses, float *dlogits,
                                         size_t rows, size_t V, float grad_scale) {
    STRIX_DISPATCH(be, softmax_cross_entropy, logits, targets, losses, dlogits, rows, V,
                   grad_scale);
}

// ---- optimizer, regularisation, selection ------------------------------------------------------

strix_status strix_adam_step(strix_backend *be, float *param, const float *grad, float *m,
                             float *v, size_t n, float lr, float beta1, float beta2, float eps,
                             float bias_correction1, float bias_correction2) {
    STRIX_DISPATCH(be, adam_step, param, grad, m, v, n, lr, beta1, beta2, eps, bias_correction1,
                   bias_correction2);
}

strix_status strix_dropout_forward(strix_backend *be, const float *in, float *out, float *mask,
                                   size_t n, float p, float scale, uint64_t seed,
                                   uint64_t offset) {
    STRIX_DISPATCH(be, dropout_forward, in, out, mask, n, p, scale, seed, offset);
}

strix_status strix_top_k_rows(strix_backend *be, const float *in, float *vals, int32_t *idx,
                              size_t rows, size_t cols, size_t k, bool largest) {
    STRIX_ASSERT(rows == 0 || (k >= 1 && k <= cols), "top_k: k %zu outside [1, cols %zu]", k,
                 cols);
    STRIX_DISPATCH(be, top_k_rows, in, vals, idx, rows, cols, k, largest);
}

// ---- training extras: accumulation, strided copy, BCE, RMSNorm, masks -----------------------

strix_status strix_accumulate_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                   size_t cols) {
    STRIX_DISPATCH(be, accumulate_rows, in, out, rows, cols);
}

strix_status strix_copy_2d(strix_backend *be, float *dst, size_t dst_stride, const float *src,
                           size_t src_stride, size_t rows, size_t cols) {
    STRIX_DISPATCH(be, copy_2d, dst, dst_stride, src, src_stride, rows, cols);
}

strix_status strix_bce_with_logits(strix_backend *be, const float *logits, const float *target,
                                   float *out, size_t n) {
    STRIX_DISPATCH(be, bce_with_logits, logits, target, out, n);
}

strix_status strix_bce_with_logits_grad(strix_backend *be, const float *logits,
                                        const float *target, float *grad, size_t n, float scale) {
    STRIX_DISPATCH(be, bce_with_logits_grad, logits, target, grad, n, scale);
}

strix_status strix_rms_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                    float *out, float *row_rms, size_t rows, size_t cols,
                                    float eps) {
    STRIX_DISPATCH(be, rms_norm_forward, in, gamma, out, row_rms, rows, cols, eps);
}

strix_status strix_rms_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                     const float *in, const float *row_rms, float *grad_in,
                                     float *gamma_terms, size_t rows, size_t cols) {
    STRIX_DISPATCH(be, rms_norm_backward, grad_out, gamma, in, row_rms, grad_in, gamma_terms, rows,
                   cols);
}

strix_status strix_attention_mask_fill(strix_backend *be, float *scores, const float *keep,
                                       size_t B, size_t H, size_t Lq, size_t Lk, bool causal,
                                       size_t q_off, size_t window, float value) {
    STRIX_DISPATCH(be, attention_mask_fill, scores, keep, B, H, Lq, Lk, causal, q_off, window,
                   value);
}
