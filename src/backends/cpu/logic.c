/*
 * logic.c - CPU backend: fuzzy logic (t-norms, t-conorms, implications) and the power-mean
 * aggregator.
 *
 * The math is kernels/logic.h. Elements are independent; the aggregator's column sums run over
 * the rows ascending in each column (the row loop is outside so that columns vectorise, and
 * threads split columns), so results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/logic.h"

/* Columns per aggregator task. */
#define AGG_SPAN 256

strix_status cpu_logic_pointwise(strix_backend *be, strix_logic_op op, strix_logic_norm norm,
                                 const float *a, const float *b, const float *g_or_r,
                                 const float *y, float *out_a, float *out_b, size_t n, float eps) {
    (void)be;
    bool forward = strix_logic_is_forward(op), reads_y = strix_logic_reads_y(op, norm);
    CPU_PARALLEL_FOR_IF(CPU_BIG(n))
    for (size_t i = 0; i < n; i++) {
        float ra = 0.0f, rb = 0.0f;
        strix_logic_element(op, norm, a[i], b[i], forward ? 0.0f : g_or_r[i],
                            reads_y ? y[i] : 0.0f, eps, &ra, &rb);
        out_a[i] = ra;
        if (!forward) out_b[i] = rb;
    }
    return STRIX_OK;
}

strix_status cpu_aggregator_forward(strix_backend *be, const float *x, float *mean_pow, float *out,
                                    size_t n, size_t cols, float p) {
    (void)be;
    size_t spans = (cols + AGG_SPAN - 1) / AGG_SPAN;
    CPU_PARALLEL_FOR_IF(spans > 1 && CPU_BIG(n * cols))
    for (size_t s = 0; s < spans; s++) {
        size_t j0 = s * AGG_SPAN, j1 = j0 + AGG_SPAN < cols ? j0 + AGG_SPAN : cols;
        float total[AGG_SPAN];
        for (size_t j = j0; j < j1; j++) total[j - j0] = 0.0f;
        for (size_t i = 0; i < n; i++)
            for (size_t j = j0; j < j1; j++)
                total[j - j0] += strix_aggregator_pow(x[i * cols + j], p);
        for (size_t j = j0; j < j1; j++) {
            float m = total[j - j0] / (float)n;
            mean_pow[j] = m;
            out[j] = strix_aggregator_out(m, p);
        }
    }
    return STRIX_OK;
}

strix_status cpu_aggregator_backward(strix_backend *be, const float *x, const float *mean_pow,
                                     const float *grad_out, float *grad_in, size_t n, size_t cols,
                                     float p) {
    (void)be;
    CPU_PARALLEL_FOR_IF(n > 1 && CPU_BIG(n * cols))
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < cols; j++)
            grad_in[i * cols + j] =
                strix_aggregator_grad(x[i * cols + j], mean_pow[j], grad_out[j], p, n);
    return STRIX_OK;
}

strix_status cpu_aggregator_lrp(strix_backend *be, const float *x, const float *mean_pow,
                                const float *r_out, float *r_in, size_t n, size_t cols, float p,
                                float eps) {
    (void)be;
    CPU_PARALLEL_FOR_IF(n > 1 && CPU_BIG(n * cols))
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < cols; j++)
            r_in[i * cols + j] =
                strix_aggregator_relevance(x[i * cols + j], mean_pow[j], r_out[j], p, n, eps);
    return STRIX_OK;
}
