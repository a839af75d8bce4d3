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

typedef struct pointwise_args {
    strix_logic_op op;
    strix_logic_norm norm;
    const float *a, *b, *g_or_r, *y;
    float *out_a, *out_b;
    float eps;
} pointwise_args;

static void pointwise_range(void *p, size_t i0, size_t i1) {
    const pointwise_args *pa = p;
    strix_logic_op op = pa->op;
    strix_logic_norm norm = pa->norm;
    const float *a = pa->a, *b = pa->b, *g_or_r = pa->g_or_r, *y = pa->y;
    float *out_a = pa->out_a, *out_b = pa->out_b, eps = pa->eps;
    bool forward = strix_logic_is_forward(op), reads_y = strix_logic_reads_y(op, norm);
    for (size_t i = i0; i < i1; i++) {
        float ra = 0.0f, rb = 0.0f;
        strix_logic_element(op, norm, a[i], b[i], forward ? 0.0f : g_or_r[i],
                            reads_y ? y[i] : 0.0f, eps, &ra, &rb);
        out_a[i] = ra;
        if (!forward) out_b[i] = rb;
    }
}

strix_status cpu_logic_pointwise(strix_backend *be, strix_logic_op op, strix_logic_norm norm,
                                 const float *a, const float *b, const float *g_or_r,
                                 const float *y, float *out_a, float *out_b, size_t n, float eps) {
    (void)be;
    pointwise_args pa = {op, norm, a, b, g_or_r, y, out_a, out_b, eps};
    cpu_parallel_for(n, CPU_BIG(n), pointwise_range, &pa);
    return STRIX_OK;
}

typedef struct aggregator_forward_args {
    const float *x;
    float *mean_pow, *out;
    size_t n, cols;
    float p;
} aggregator_forward_args;

/* Column spans [s0, s1) of the forward. */
static void aggregator_forward_range(void *args, size_t s0, size_t s1) {
    const aggregator_forward_args *a = args;
    const float *x = a->x;
    float *mean_pow = a->mean_pow, *out = a->out, p = a->p;
    size_t n = a->n, cols = a->cols;
    for (size_t s = s0; s < s1; s++) {
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
}

strix_status cpu_aggregator_forward(strix_backend *be, const float *x, float *mean_pow, float *out,
                                    size_t n, size_t cols, float p) {
    (void)be;
    size_t spans = (cols + AGG_SPAN - 1) / AGG_SPAN;
    aggregator_forward_args a = {x, mean_pow, out, n, cols, p};
    cpu_parallel_for(spans, spans > 1 && CPU_BIG(n * cols), aggregator_forward_range, &a);
    return STRIX_OK;
}

/* Operands of the aggregator's backward and LRP: x (n, cols), per column mean_pow and the
 * incoming grad (grad_out or r_out); out (n, cols). */
typedef struct aggregator_back_args {
    const float *x, *mean_pow, *grad;
    float *out;
    size_t n, cols;
    float p, eps;
} aggregator_back_args;

static void aggregator_backward_range(void *args, size_t i0, size_t i1) {
    const aggregator_back_args *a = args;
    const float *x = a->x, *mean_pow = a->mean_pow, *grad_out = a->grad;
    float *grad_in = a->out, p = a->p;
    size_t n = a->n, cols = a->cols;
    for (size_t i = i0; i < i1; i++)
        for (size_t j = 0; j < cols; j++)
            grad_in[i * cols + j] =
                strix_aggregator_grad(x[i * cols + j], mean_pow[j], grad_out[j], p, n);
}

strix_status cpu_aggregator_backward(strix_backend *be, const float *x, const float *mean_pow,
                                     const float *grad_out, float *grad_in, size_t n, size_t cols,
                                     float p) {
    (void)be;
    aggregator_back_args a = {x, mean_pow, grad_out, grad_in, n, cols, p, 0.0f};
    cpu_parallel_for(n, n > 1 && CPU_BIG(n * cols), aggregator_backward_range, &a);
    return STRIX_OK;
}

static void aggregator_lrp_range(void *args, size_t i0, size_t i1) {
    const aggregator_back_args *a = args;
    const float *x = a->x, *mean_pow = a->mean_pow, *r_out = a->grad;
    float *r_in = a->out, p = a->p, eps = a->eps;
    size_t n = a->n, cols = a->cols;
    for (size_t i = i0; i < i1; i++)
        for (size_t j = 0; j < cols; j++)
            r_in[i * cols + j] =
                strix_aggregator_relevance(x[i * cols + j], mean_pow[j], r_out[j], p, n, eps);
}

strix_status cpu_aggregator_lrp(strix_backend *be, const float *x, const float *mean_pow,
                                const float *r_out, float *r_in, size_t n, size_t cols, float p,
                                float eps) {
    (void)be;
    aggregator_back_args a = {x, mean_pow, r_out, r_in, n, cols, p, eps};
    cpu_parallel_for(n, n > 1 && CPU_BIG(n * cols), aggregator_lrp_range, &a);
    return STRIX_OK;
}
