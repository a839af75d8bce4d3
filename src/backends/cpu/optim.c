/*
 * optim.c - the CPU backend's optimizer, regularisation and selection slots: adam_step,
 * dropout_forward and top_k_rows, looping over kernels/{adam,dropout,topk}.h.
 *
 * Every element or row is independent, so OpenMP may split them freely.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/adam.h"
#include "kernels/dropout.h"
#include "kernels/topk.h"

strix_status cpu_adam_step(strix_backend *be, float *param, const float *grad, float *m, float *v,
                           size_t n, float lr, float beta1, float beta2, float eps,
                           float bias_correction1, float bias_correction2) {
    (void)be;
    CPU_PARALLEL_FOR_IF(CPU_BIG(n))
    for (size_t i = 0; i < n; i++) {
        strix_adam_element(&param[i], grad[i], &m[i], &v[i], lr, beta1, beta2, eps,
                           bias_correction1, bias_correction2);
    }
    return STRIX_OK;
}

strix_status cpu_dropout_forward(strix_backend *be, const float *in, float *out, float *mask,
                                 size_t n, float p, float scale, uint64_t seed, uint64_t offset) {
    (void)be;
    CPU_PARALLEL_FOR_IF(CPU_BIG(n))
    for (size_t i = 0; i < n; i++)
        strix_dropout_element(in[i], &out[i], mask ? &mask[i] : NULL, p, scale, seed, offset + i);
    return STRIX_OK;
}

strix_status cpu_top_k_rows(strix_backend *be, const float *in, float *vals, int32_t *idx,
                            size_t rows, size_t cols, size_t k, bool largest) {
    (void)be;
    CPU_PARALLEL_FOR_IF(rows > 1 && CPU_BIG(2 * rows * cols * (k < 8 ? k : 8)))
    for (size_t r = 0; r < rows; r++)
        strix_topk_row(in + r * cols, vals + r * k, idx + r * k, cols, k, largest);
    return STRIX_OK;
}
