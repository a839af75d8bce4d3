/*
 * loss.c - CPU backend: binary cross-entropy with logits and its gradient.
 *
 * Elementwise loops over kernels/loss.h; threads split elements, so results do not depend on the
 * thread count. No reductions here (the caller sums the per-element losses).
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/loss.h"

/* Operands of the BCE loops: out[i] from logits[i] and target[i]. */
typedef struct bce_args {
    const float *logits, *target;
    float *out;
    float scale;
} bce_args;

static void bce_range(void *p, size_t i0, size_t i1) {
    const bce_args *a = p;
    const float *logits = a->logits, *target = a->target;
    float *out = a->out;
    for (size_t i = i0; i < i1; i++) out[i] = strix_bce_with_logits_elem(logits[i], target[i]);
}

static void bce_grad_range(void *p, size_t i0, size_t i1) {
    const bce_args *a = p;
    const float *logits = a->logits, *target = a->target;
    float *grad = a->out, scale = a->scale;
    for (size_t i = i0; i < i1; i++)
        grad[i] = strix_bce_with_logits_grad_elem(logits[i], target[i], scale);
}

strix_status cpu_bce_with_logits(strix_backend *be, const float *logits, const float *target,
                                 float *out, size_t n) {
    (void)be;
    bce_args a = {.logits = logits, .target = target, .out = out};
    cpu_parallel_for(n, CPU_BIG(n), bce_range, &a);
    return STRIX_OK;
}

strix_status cpu_bce_with_logits_grad(strix_backend *be, const float *logits, const float *target,
                                      float *grad, size_t n, float scale) {
    (void)be;
    bce_args a = {.logits = logits, .target = target, .out = grad, .scale = scale};
    cpu_parallel_for(n, CPU_BIG(n), bce_grad_range, &a);
    return STRIX_OK;
}
