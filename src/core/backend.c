/*
 * backend.c - the public entry points of include/strix/backend.h (the registry that creates
 * backends by name is src/core/registry.c).
 *
 * Every primitive is a checked call into the vtable: a NULL slot returns STRIX_ERR_UNSUPPORTED
 * naming the backend and the primitive, and is never routed to another backend. Contract
 * violations (NULL handle, k > cols, odd head_dim) hit STRIX_ASSERT. The entry points that only
 * dispatch are generated from src/core/primitives.def (src/core/ops_dispatch.c); this file keeps
 * the memory calls and the strix/backend.h primitives with more checks. It holds no math.
 */
#include <string.h>

#include "core/backend_impl.h"
#include "kernels/quant.h" /* block sizes and type names */

// ---- handle ------------------------------------------------------------------------------------

void strix_backend_free(strix_backend *be) {
    if (be) be->vt->destroy(be);
}

const char *strix_backend_name(const strix_backend *be) { return be->name; }

strix_device strix_backend_device(const strix_backend *be) { return be->device; }

// ---- threads -----------------------------------------------------------------------------------

void strix_set_num_threads(int n) {
#ifdef STRIX_HAVE_BLAS
    /* One threading model: the cpu-blas backend splits GEMMs across strix's own threads and
     * keeps OpenBLAS's pool at one thread (its spinning workers would fight ours:
     * src/backends/cpu/gemm_blas.c). */
    strix_cpu_blas_hold_one_thread();
#endif
    strix_cpu_set_threads(n);
}

int strix_get_num_threads(void) { return strix_cpu_threads(); }

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

// ---- primitives with more checks than a dispatch (the others: src/core/ops_dispatch.c) ----------

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

strix_status strix_matmul_blocks(strix_backend *be, const float *x, size_t rows, size_t in,
                                 int wtype, const void *w, size_t out, float *y) {
    size_t values = 1;
    if (!strix_quant_block(wtype, &values, NULL)) {
        const char *name = strix_quant_type_name(wtype);
        return strix_error(STRIX_ERR_UNSUPPORTED,
                           "matmul_blocks: weights of type %s (%d) are not supported "
                           "(F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q6_K are)",
                           name ? name : "unknown", wtype);
    }
    if (in % values != 0)
        return strix_error(STRIX_ERR_ARG,
                           "matmul_blocks: in = %zu is not a multiple of the %zu values of a %s "
                           "block", in, values, strix_quant_type_name(wtype));
    STRIX_ASSERT(rows == 0 || out == 0 || y != NULL, "matmul_blocks: NULL y");
    STRIX_ASSERT(rows == 0 || in == 0 || out == 0 || x != NULL, "matmul_blocks: NULL x");
    STRIX_ASSERT(rows == 0 || in == 0 || out == 0 || w != NULL, "matmul_blocks: NULL w");
    STRIX_ASSERT(rows == 0 || out == 0 || (y != x && (const void *)y != w),
                 "matmul_blocks: y aliases x or w");
    STRIX_DISPATCH(be, matmul_blocks, x, rows, in, wtype, w, out, y);
}

strix_status strix_gemm_batched(strix_backend *be, const strix_gemm_batch *g) {
    STRIX_ASSERT(g != NULL, "gemm_batched: NULL batch");
    STRIX_ASSERT(g->lda >= (g->ta ? g->m : g->k), "gemm_batched: lda %zu too small", g->lda);
    STRIX_ASSERT(g->ldb >= (g->tb ? g->k : g->n), "gemm_batched: ldb %zu too small", g->ldb);
    STRIX_ASSERT(g->ldc >= g->n, "gemm_batched: ldc %zu < n %zu", g->ldc, g->n);
    if (g->alpha == 0.0f && g->k > 0) {
        /* Reference BLAS: alpha 0 forms no product, C = beta·C, and A and B are never read (NaN
         * there does not leak). Every backend treats k = 0 so (beta 0 writes zeros). */
        strix_gemm_batch none = *g;
        none.k = 0;
        STRIX_DISPATCH(be, gemm_batched, &none);
    }
    STRIX_DISPATCH(be, gemm_batched, g);
}

strix_status strix_gemm_pack_b(strix_backend *be, const strix_gemm_batch *g, float *packed,
                               size_t *floats) {
    STRIX_ASSERT(g != NULL && floats != NULL, "gemm_pack_b: NULL batch or size");
    STRIX_ASSERT(g->ldb >= (g->tb ? g->k : g->n), "gemm_pack_b: ldb %zu too small", g->ldb);
    STRIX_DISPATCH(be, gemm_pack_b, g, packed, floats);
}

strix_status strix_clamp(strix_backend *be, const float *in, float lo, float hi, float *out,
                         size_t n) {
    STRIX_ASSERT(!(lo > hi), "clamp: lo %g > hi %g", lo, hi);
    STRIX_DISPATCH(be, clamp, in, lo, hi, out, n);
}

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

strix_status strix_top_k_rows(strix_backend *be, const float *in, float *vals, int32_t *idx,
                              size_t rows, size_t cols, size_t k, bool largest) {
    STRIX_ASSERT(rows == 0 || (k >= 1 && k <= cols), "top_k: k %zu outside [1, cols %zu]", k,
                 cols);
    STRIX_DISPATCH(be, top_k_rows, in, vals, idx, rows, cols, k, largest);
}
