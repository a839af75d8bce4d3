/*
 * loss.c - CPU backend: binary cross-entropy with logits and its gradient.
 *
 * Elementwise loops over kernels/loss.h; OpenMP splits elements, so results do not depend on the
 * thread count. No reductions here (the caller sums the per-element losses).
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/loss.h"

strix_status cpu_bce_with_logits(strix_backend *be, const float *logits, const float *target,
                                 float *out, size_t n) {
    (void)be;
    CPU_PARALLEL_FOR_IF(CPU_BIG(n))
    for (size_t i = 0; i < n; i++) out[i] = strix_bce_with_logits_elem(logits[i], target[i]);
    return STRIX_OK;
}

strix_status cpu_bce_with_logits_grad(strix_backend *be, const float *logits, const float *target,
                                      float *grad, size_t n, float scale) {
    (void)be;
    CPU_PARALLEL_FOR_IF(CPU_BIG(n))
    for (size_t i = 0; i < n; i++)
        grad[i] = strix_bce_with_logits_grad_elem(logits[i], target[i], scale);
    return STRIX_OK;
}
