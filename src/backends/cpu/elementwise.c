/*
 * elementwise.c - the CPU backend's elementwise, vector and reduction slots: add, mul, axpby,
 * column_sums, add_row_vector, activations forward/backward, sum, dot, sum_squares.
 *
 * Loops split only independent outputs (elements, columns), and only loops worth a region
 * (CPU_WORTH: these loops are memory-bound; workers.c). sum and dot are one sequential pass
 * in ascending order, sum_squares one pass over 32 interleaved lanes (their documented reduction
 * orders), never split.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/activations.h"

/* Memory-bound loops: worth a parallel loop only when waking the threads pays (CPU_WORTH). */
#define BIG(n) CPU_WORTH(n)

/* Operands of the elementwise loops: out[i] from x[i] (and y[i]), scalars alpha, beta, lo, hi. */
typedef struct ew_args {
    const float *x, *y;
    float *out;
    float alpha, beta;
    strix_act op;
} ew_args;

CPU_CLONES static void add_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x, *y = e->y;
    float *out = e->out;
    for (size_t i = i0; i < i1; i++) out[i] = x[i] + y[i];
}

CPU_CLONES static void mul_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x, *y = e->y;
    float *out = e->out;
    for (size_t i = i0; i < i1; i++) out[i] = x[i] * y[i];
}

CPU_CLONES static void scale_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x;
    float *out = e->out, alpha = e->alpha;
    for (size_t i = i0; i < i1; i++) out[i] = alpha * x[i];
}

CPU_CLONES static void axpby_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x, *y = e->y;
    float *out = e->out, alpha = e->alpha, beta = e->beta;
    for (size_t i = i0; i < i1; i++) out[i] = alpha * x[i] + beta * y[i];
}

static void clamp_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x;
    float *out = e->out, lo = e->alpha, hi = e->beta;
    for (size_t i = i0; i < i1; i++) out[i] = strix_clampf(x[i], lo, hi);
}

/* GELU and ReLU get their own loops, so that they vectorise. */
CPU_CLONES static void gelu_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x;
    float *out = e->out;
    for (size_t i = i0; i < i1; i++) out[i] = strix_gelu_forward(x[i]);
}

CPU_CLONES static void relu_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x;
    float *out = e->out;
    for (size_t i = i0; i < i1; i++) out[i] = strix_relu_forward(x[i]);
}

CPU_CLONES static void act_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x;
    float *out = e->out;
    for (size_t i = i0; i < i1; i++) out[i] = strix_act_forward(e->op, x[i]);
}

/* Backward: x the forward input, y the output gradient. */
CPU_CLONES static void gelu_backward_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x, *g = e->y;
    float *out = e->out;
    for (size_t i = i0; i < i1; i++) out[i] = strix_gelu_backward(x[i], g[i]);
}

CPU_CLONES static void relu_backward_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x, *g = e->y;
    float *out = e->out;
    for (size_t i = i0; i < i1; i++) out[i] = strix_relu_backward(x[i], g[i]);
}

CPU_CLONES static void act_backward_range(void *p, size_t i0, size_t i1) {
    const ew_args *e = p;
    const float *x = e->x, *g = e->y;
    float *out = e->out;
    for (size_t i = i0; i < i1; i++) out[i] = strix_act_backward(e->op, x[i], g[i]);
}

strix_status cpu_add(strix_backend *be, const float *a, const float *b, float *out, size_t n) {
    (void)be;
    cpu_parallel_for(n, BIG(n), add_range, &(ew_args){.x = a, .y = b, .out = out});
    return STRIX_OK;
}

strix_status cpu_mul(strix_backend *be, const float *a, const float *b, float *out, size_t n) {
    (void)be;
    cpu_parallel_for(n, BIG(n), mul_range, &(ew_args){.x = a, .y = b, .out = out});
    return STRIX_OK;
}

strix_status cpu_axpby(strix_backend *be, float alpha, const float *x, float beta, const float *y,
                       float *out, size_t n) {
    (void)be;
    ew_args e = {.x = x, .y = y, .out = out, .alpha = alpha, .beta = beta};
    cpu_parallel_for(n, BIG(n), beta == 0.0f ? scale_range : axpby_range, &e);
    return STRIX_OK;
}

/* Columns per chunk of column_sums: one chunk's running sums stay in L1. */
#define COLUMN_CHUNK 256

typedef struct column_sums_args {
    const float *in;
    float *out;
    size_t rows, cols;
    float beta;
} column_sums_args;

/* Column chunks [c0, c1) of column_sums. */
CPU_CLONES static void column_sums_range(void *p, size_t c0, size_t c1) {
    const column_sums_args *s = p;
    for (size_t chunk = c0; chunk < c1; chunk++) {
        size_t col0 = chunk * COLUMN_CHUNK;
        size_t width = s->cols - col0 < COLUMN_CHUNK ? s->cols - col0 : COLUMN_CHUNK;
        float sums[COLUMN_CHUNK];
        for (size_t j = 0; j < width; j++) sums[j] = 0.0f;
        for (size_t i = 0; i < s->rows; i++) {
            const float *row = s->in + i * s->cols + col0;
            for (size_t j = 0; j < width; j++) sums[j] += row[j];
        }
        float *dst = s->out + col0;
        if (s->beta == 0.0f) {
            for (size_t j = 0; j < width; j++) dst[j] = sums[j];
        } else {
            for (size_t j = 0; j < width; j++) dst[j] = s->beta * dst[j] + sums[j];
        }
    }
}

strix_status cpu_column_sums(strix_backend *be, const float *in, float *out, size_t rows,
                             size_t cols, float beta) {
    (void)be;
    size_t chunks = (cols + COLUMN_CHUNK - 1) / COLUMN_CHUNK;
    column_sums_args s = {in, out, rows, cols, beta};
    cpu_parallel_for(chunks, chunks > 1 && BIG(rows * cols), column_sums_range, &s);
    return STRIX_OK;
}

typedef struct row_vector_args {
    const float *in, *row;
    float *out;
    size_t cols;
} row_vector_args;

CPU_CLONES static void add_row_vector_range(void *p, size_t r0, size_t r1) {
    const row_vector_args *s = p;
    const float *row = s->row;
    for (size_t i = r0; i < r1; i++) {
        const float *src = s->in + i * s->cols;
        float *dst = s->out + i * s->cols;
        for (size_t j = 0; j < s->cols; j++) dst[j] = src[j] + row[j];
    }
}

strix_status cpu_add_row_vector(strix_backend *be, const float *in, const float *row, float *out,
                                size_t rows, size_t cols) {
    (void)be;
    row_vector_args s = {in, row, out, cols};
    cpu_parallel_for(rows, BIG(rows * cols) && rows > 1, add_row_vector_range, &s);
    return STRIX_OK;
}

strix_status cpu_clamp(strix_backend *be, const float *in, float lo, float hi, float *out,
                       size_t n) {
    (void)be;
    ew_args e = {.x = in, .out = out, .alpha = lo, .beta = hi};
    cpu_parallel_for(n, BIG(n), clamp_range, &e);
    return STRIX_OK;
}

strix_status cpu_elementwise(strix_backend *be, strix_act op, const float *in, float *out,
                             size_t n) {
    (void)be;
    ew_args e = {.x = in, .out = out, .op = op};
    if (op == STRIX_ACT_RELU)
        cpu_parallel_for(n, BIG(n), relu_range, &e);
    else
        cpu_parallel_for(n, CPU_BIG(4 * n), op == STRIX_ACT_GELU ? gelu_range : act_range, &e);
    return STRIX_OK;
}

strix_status cpu_elementwise_backward(strix_backend *be, strix_act op, const float *x,
                                      const float *grad_out, float *grad_in, size_t n) {
    (void)be;
    ew_args e = {.x = x, .y = grad_out, .out = grad_in, .op = op};
    if (op == STRIX_ACT_RELU)
        cpu_parallel_for(n, BIG(n), relu_backward_range, &e);
    else
        cpu_parallel_for(n, CPU_BIG(4 * n),
                         op == STRIX_ACT_GELU ? gelu_backward_range : act_backward_range, &e);
    return STRIX_OK;
}

strix_status cpu_sum(strix_backend *be, const float *in, size_t n, float *out) {
    (void)be;
    float total = 0.0f;
    for (size_t i = 0; i < n; i++) total += in[i];
    *out = total;
    return STRIX_OK;
}

strix_status cpu_dot(strix_backend *be, const float *a, const float *b, size_t n, float *out) {
    (void)be;
    float total = 0.0f;
    for (size_t i = 0; i < n; i++) total += a[i] * b[i];
    *out = total;
    return STRIX_OK;
}

/* Lanes of sum_squares: lane l sums the squares of in[i], i ≡ l (mod 32), i ascending; the lanes
 * are then folded in halves (lane l += lane l + 16 for l < 16, then + 8, + 4, + 2, + 1).
 * 32 independent sums keep the vector adders busy; the order depends on n only. */
#define SQUARE_LANES 32

strix_status cpu_sum_squares(strix_backend *be, const float *in, size_t n, double *out) {
    (void)be;
    double lanes[SQUARE_LANES] = {0.0};
    size_t full = n - n % SQUARE_LANES;
    for (size_t i = 0; i < full; i += SQUARE_LANES)
        for (size_t l = 0; l < SQUARE_LANES; l++)
            lanes[l] += (double)in[i + l] * (double)in[i + l];
    for (size_t i = full; i < n; i++) lanes[i - full] += (double)in[i] * (double)in[i];
    for (size_t half = SQUARE_LANES / 2; half > 0; half /= 2)
        for (size_t l = 0; l < half; l++) lanes[l] += lanes[l + half];
    *out = lanes[0];
    return STRIX_OK;
}
