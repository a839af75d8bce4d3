/*
 * cpu_backend.c - the CPU backends' vtables, constructor and memory slots.
 *
 * "cpu" is the reference: plain deterministic loops over the kernel headers and our own blocked
 * GEMM. "cpu-blas" is the same table with the GEMM slots on OpenBLAS. Every slot is filled.
 * This file does not register names (src/core/backend.c does) and holds no math.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_internal.h"

#define CPU_PARALLEL_MIN_WORK_DEFAULT 32768
size_t cpu_parallel_min_work = CPU_PARALLEL_MIN_WORK_DEFAULT;

size_t cpu_set_parallel_min_work(size_t work) {
    size_t previous = cpu_parallel_min_work;
    cpu_parallel_min_work = work ? work : CPU_PARALLEL_MIN_WORK_DEFAULT;
    return previous;
}

int cpu_max_threads(void) {
#ifdef _OPENMP
    return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
    return 1;
#endif
}

int cpu_thread_index(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

void *cpu_aligned_alloc(size_t bytes) {
    if (bytes == 0) return NULL;
    size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded < bytes) return NULL; /* overflow */
    return aligned_alloc(64, rounded);
}

// ---- lifecycle and memory ----------------------------------------------------------------------

static void cpu_destroy(strix_backend *be) {
    cpu_context *ctx = be->ctx;
    cpu_gemm_release(ctx);
    free(ctx);
    free(be);
}

static strix_status cpu_sync(strix_backend *be) {
    (void)be;
    return STRIX_OK;
}

static strix_status cpu_alloc(strix_backend *be, size_t bytes, void **out) {
    (void)be;
    *out = cpu_aligned_alloc(bytes);
    if (!*out) return strix_error(STRIX_ERR_ALLOC, "cpu: cannot allocate %zu bytes", bytes);
    return STRIX_OK;
}

static void cpu_free_buffer(strix_backend *be, void *p) {
    (void)be;
    free(p);
}

static strix_status cpu_copy(strix_backend *be, void *dst, const void *src, size_t bytes,
                             strix_copy_dir dir) {
    (void)be;
    (void)dir;
    if (bytes) memmove(dst, src, bytes);
    return STRIX_OK;
}

static strix_status cpu_fill(strix_backend *be, float *p, float value, size_t n) {
    (void)be;
    CPU_PARALLEL_FOR_IF(CPU_BIG(n / 4))
    for (size_t i = 0; i < n; i++) p[i] = value;
    return STRIX_OK;
}

// ---- vtables -----------------------------------------------------------------------------------

/* Every slot except the GEMM family, shared by both tables. */
#define CPU_COMMON_SLOTS                                                                       \
    .destroy = cpu_destroy, .sync = cpu_sync, .alloc = cpu_alloc,                              \
    .free_buffer = cpu_free_buffer, .copy = cpu_copy, .fill = cpu_fill,                        \
    .add = cpu_add, .mul = cpu_mul, .axpby = cpu_axpby, .clamp = cpu_clamp,                    \
    .column_sums = cpu_column_sums,                                                            \
    .add_row_vector = cpu_add_row_vector, .elementwise = cpu_elementwise,                      \
    .elementwise_backward = cpu_elementwise_backward, .sum = cpu_sum, .dot = cpu_dot,          \
    .sum_squares = cpu_sum_squares, .softmax_rows = cpu_softmax_rows,                          \
    .softmax_rows_backward = cpu_softmax_rows_backward, .logsumexp_rows = cpu_logsumexp_rows,  \
    .layer_norm_forward = cpu_layer_norm_forward,                                              \
    .layer_norm_backward = cpu_layer_norm_backward, .rope_rotate = cpu_rope_rotate,            \
    .permute_0213 = cpu_permute_0213, .gather_rows = cpu_gather_rows,                          \
    .scatter_add_rows = cpu_scatter_add_rows, .attn_softmax_causal = cpu_attn_softmax_causal,  \
    .attn_softmax_causal_backward = cpu_attn_softmax_causal_backward,                          \
    .softmax_cross_entropy = cpu_softmax_cross_entropy, .adam_step = cpu_adam_step,            \
    .dropout_forward = cpu_dropout_forward, .top_k_rows = cpu_top_k_rows,                      \
    .accumulate_rows = cpu_accumulate_rows, .copy_2d = cpu_copy_2d,                            \
    .bce_with_logits = cpu_bce_with_logits, .bce_with_logits_grad = cpu_bce_with_logits_grad,  \
    .rms_norm_forward = cpu_rms_norm_forward, .rms_norm_backward = cpu_rms_norm_backward,      \
    .attention_mask_fill = cpu_attention_mask_fill, .im2col = cpu_im2col,                      \
    .col2im_add = cpu_col2im_add, .add_channel_vector = cpu_add_channel_vector,                \
    .conv2d_forward = cpu_conv2d_forward, .conv2d_backward = cpu_conv2d_backward,              \
    .max_pool_forward = cpu_max_pool_forward, .max_unpool = cpu_max_unpool,                    \
    .avg_pool_forward = cpu_avg_pool_forward, .avg_pool_backward = cpu_avg_pool_backward,      \
    .batch_norm_forward = cpu_batch_norm_forward,                                              \
    .batch_norm_backward = cpu_batch_norm_backward,                                            \
    .batch_norm_update_running = cpu_batch_norm_update_running,                                \
    .batch_norm_eval_forward = cpu_batch_norm_eval_forward,                                    \
    .batch_norm_eval_backward = cpu_batch_norm_eval_backward,                                  \
    .group_norm_forward = cpu_group_norm_forward,                                              \
    .group_norm_backward = cpu_group_norm_backward, .lrp_linear = cpu_lrp_linear,              \
    .lrp_residual_split = cpu_lrp_residual_split,                                              \
    .lrp_bilinear_elementwise = cpu_lrp_bilinear_elementwise,                                  \
    .lrp_bilinear_matmul = cpu_lrp_bilinear_matmul, .lrp_softmax_rows = cpu_lrp_softmax_rows,  \
    .lrp_rope = cpu_lrp_rope, .lrp_conv = cpu_lrp_conv, .lrp_avg_pool = cpu_lrp_avg_pool,      \
    .lrp_stabilized_divide = cpu_lrp_stabilized_divide,                                        \
    .logic_pointwise = cpu_logic_pointwise, .aggregator_forward = cpu_aggregator_forward,      \
    .aggregator_backward = cpu_aggregator_backward, .aggregator_lrp = cpu_aggregator_lrp,      \
    .recurrent_cell = cpu_recurrent_cell, .gru_lrp_hprev = cpu_gru_lrp_hprev,                  \
    .ssm_pass = cpu_ssm_pass, .rl_rows = cpu_rl_rows,                                          \
    .tanh_gaussian_forward = cpu_tanh_gaussian_forward,                                        \
    .tanh_gaussian_backward = cpu_tanh_gaussian_backward

static const struct strix_backend_i cpu_vtable = {
    CPU_COMMON_SLOTS,
    .gemm_ex = cpu_gemm_ex,
    .gemm_batched = cpu_gemm_batched,
};

#ifdef STRIX_HAVE_BLAS
/* GEMM slots on OpenBLAS, threaded by OpenMP (gemm_blas.c); small batched items stay on the
 * own kernel. */
static const struct strix_backend_i cpu_blas_vtable = {
    CPU_COMMON_SLOTS,
    .gemm_ex = cpu_blas_gemm_ex,
    .gemm_batched = cpu_blas_gemm_batched,
};
#endif

strix_status strix_cpu_backend_create(bool use_blas, strix_backend **out) {
    *out = NULL;
#ifndef STRIX_HAVE_BLAS
    if (use_blas)
        return strix_error(STRIX_ERR_UNSUPPORTED, "cpu-blas: strix was built without OpenBLAS");
#endif
    strix_backend *be = calloc(1, sizeof *be);
    cpu_context *ctx = calloc(1, sizeof *ctx);
    if (!be || !ctx) {
        free(be);
        free(ctx);
        return strix_error(STRIX_ERR_ALLOC, "cpu: cannot allocate the backend handle");
    }
    be->vt = &cpu_vtable;
    be->name = "cpu";
#ifdef STRIX_HAVE_BLAS
    if (use_blas) {
        be->vt = &cpu_blas_vtable;
        be->name = "cpu-blas";
        strix_cpu_blas_hold_one_thread();
    }
#endif
    be->device = STRIX_DEVICE_CPU;
    be->ctx = ctx;
    *out = be;
    return STRIX_OK;
}
