/*
 * optim.c - the CPU backend's optimizer, regularisation and selection slots: adam_step,
 * dropout_forward and top_k_rows, looping over kernels/{adam,dropout,topk}.h.
 *
 * Every element or row is independent, so threads may split them freely.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/adam.h"
#include "kernels/dropout.h"
#include "kernels/topk.h"

typedef struct adam_args {
    float *param, *m, *v;
    const float *grad;
    float lr, beta1, beta2, eps, bias_correction1, bias_correction2;
} adam_args;

CPU_CLONES static void adam_range(void *p, size_t i0, size_t i1) {
    const adam_args *a = p;
    float *param = a->param, *m = a->m, *v = a->v;
    const float *grad = a->grad;
    float lr = a->lr, beta1 = a->beta1, beta2 = a->beta2, eps = a->eps;
    float bias_correction1 = a->bias_correction1, bias_correction2 = a->bias_correction2;
    for (size_t i = i0; i < i1; i++) {
        strix_adam_element(&param[i], grad[i], &m[i], &v[i], lr, beta1, beta2, eps,
                           bias_correction1, bias_correction2);
    }
}

strix_status cpu_adam_step(strix_backend *be, float *param, const float *grad, float *m, float *v,
                           size_t n, float lr, float beta1, float beta2, float eps,
                           float bias_correction1, float bias_correction2) {
    (void)be;
    adam_args a = {param, m, v, grad, lr, beta1, beta2, eps, bias_correction1, bias_correction2};
    cpu_parallel_for(n, CPU_BIG(n), adam_range, &a);
    return STRIX_OK;
}

typedef struct dropout_args {
    const float *in;
    float *out, *mask;
    float p, scale;
    uint64_t seed, offset;
} dropout_args;

static void dropout_range(void *args, size_t i0, size_t i1) {
    const dropout_args *a = args;
    const float *in = a->in;
    float *out = a->out, *mask = a->mask, p = a->p, scale = a->scale;
    uint64_t seed = a->seed, offset = a->offset;
    for (size_t i = i0; i < i1; i++)
        strix_dropout_element(in[i], &out[i], mask ? &mask[i] : NULL, p, scale, seed, offset + i);
}

strix_status cpu_dropout_forward(strix_backend *be, const float *in, float *out, float *mask,
                                 size_t n, float p, float scale, uint64_t seed, uint64_t offset) {
    (void)be;
    dropout_args a = {in, out, mask, p, scale, seed, offset};
    cpu_parallel_for(n, CPU_BIG(n), dropout_range, &a);
    return STRIX_OK;
}

typedef struct top_k_args {
    const float *in;
    float *vals;
    int32_t *idx;
    size_t cols, k;
    bool largest;
} top_k_args;

static void top_k_range(void *p, size_t r0, size_t r1) {
    const top_k_args *a = p;
    size_t cols = a->cols, k = a->k;
    for (size_t r = r0; r < r1; r++)
        strix_topk_row(a->in + r * cols, a->vals + r * k, a->idx + r * k, cols, k, a->largest);
}

strix_status cpu_top_k_rows(strix_backend *be, const float *in, float *vals, int32_t *idx,
                            size_t rows, size_t cols, size_t k, bool largest) {
    (void)be;
    top_k_args a = {in, vals, idx, cols, k, largest};
    cpu_parallel_for(rows, rows > 1 && CPU_BIG(2 * rows * cols * (k < 8 ? k : 8)), top_k_range,
                     &a);
    return STRIX_OK;
}
