/*
 * elementwise.c - the CPU backend's elementwise, vector and reduction slots: add, mul, axpby,
 * column_sums, add_row_vector, activations forward/backward, sum, dot, sum_squares.
 *
 * OpenMP splits only independent outputs (elements, columns), and only loops worth a region
 * (CPU_WORTH: these loops are memory-bound). sum and dot are one sequential pass
 * in ascending order, sum_squares one pass over 32 interleaved lanes (their documented reduction
 * orders), never split.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/activations.h"

/* Memory-bound loops: worth a region only when waking the threads pays (CPU_WORTH). */
#define BIG(n) CPU_WORTH(n)

strix_status cpu_add(strix_backend *be, const float *a, const float *b, float *out, size_t n) {
    (void)be;
    CPU_PARALLEL_FOR_IF(BIG(n))
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
    return STRIX_OK;
}

strix_status cpu_mul(strix_backend *be, const float *a, const float *b, float *out, size_t n) {
    (void)be;
    CPU_PARALLEL_FOR_IF(BIG(n))
    for (size_t i = 0; i < n; i++) out[i] = a[i] * b[i];
    return STRIX_OK;
}

strix_status cpu_axpby(strix_backend *be, float alpha, const float *x, float beta, const float *y,
                       float *out, size_t n) {
    (void)be;
    if (beta == 0.0f) {
        CPU_PARALLEL_FOR_IF(BIG(n))
        for (size_t i = 0; i < n; i++) out[i] = alpha * x[i];
    } else {
        CPU_PARALLEL_FOR_IF(BIG(n))
        for (size_t i = 0; i < n; i++) out[i] = alpha * x[i] + beta * y[i];
    }
    return STRIX_OK;
}

/* Columns per chunk of column_sums: one chunk's running sums stay in L1. */
#define COLUMN_CHUNK 256

strix_status cpu_column_sums(strix_backend *be, const float *in, float *out, size_t rows,
                             size_t cols, float beta) {
    (void)be;
    size_t chunks = (cols + COLUMN_CHUNK - 1) / COLUMN_CHUNK;
    CPU_PARALLEL_FOR_IF(chunks > 1 && BIG(rows * cols))
    for (size_t chunk = 0; chunk < chunks; chunk++) {
        size_t col0 = chunk * COLUMN_CHUNK;
        size_t width = cols - col0 < COLUMN_CHUNK ? cols - col0 : COLUMN_CHUNK;
        float sums[COLUMN_CHUNK];
        for (size_t j = 0; j < width; j++) sums[j] = 0.0f;
        for (size_t i = 0; i < rows; i++) {
            const float *row = in + i * cols + col0;
            for (size_t j = 0; j < width; j++) sums[j] += row[j];
        }
        float *dst = out + col0;
        if (beta == 0.0f) {
            for (size_t j = 0; j < width; j++) dst[j] = sums[j];
        } else {
            for (size_t j = 0; j < width; j++) dst[j] = beta * dst[j] + sums[j];
        }
    }
    return STRIX_OK;
}

strix_status cpu_add_row_vector(strix_backend *be, const float *in, const float *row, float *out,
                                size_t rows, size_t cols) {
    (void)be;
    CPU_PARALLEL_FOR_IF(BIG(rows * cols) && rows > 1)
    for (size_t i = 0; i < rows; i++) {
        const float *src = in + i * cols;
        float *dst = out + i * cols;
        for (size_t j = 0; j < cols; j++) dst[j] = src[j] + row[j];
    }
    return STRIX_OK;
}

strix_status cpu_clamp(strix_backend *be, const float *in, float lo, float hi, float *out,
                       size_t n) {
    (void)be;
    CPU_PARALLEL_FOR_IF(BIG(n))
    for (size_t i = 0; i < n; i++) out[i] = strix_clampf(in[i], lo, hi);
    return STRIX_OK;
}

strix_status cpu_elementwise(strix_backend *be, strix_act op, const float *in, float *out,
                             size_t n) {
    (void)be;
    if (op == STRIX_ACT_GELU) { /* GELU and ReLU get their own loops, so that they vectorise */
        CPU_PARALLEL_FOR_IF(CPU_BIG(4 * n))
        for (size_t i = 0; i < n; i++) out[i] = strix_gelu_forward(in[i]);
        return STRIX_OK;
    }
    if (op == STRIX_ACT_RELU) {
        CPU_PARALLEL_FOR_IF(BIG(n))
        for (size_t i = 0; i < n; i++) out[i] = strix_relu_forward(in[i]);
        return STRIX_OK;
    }
    CPU_PARALLEL_FOR_IF(CPU_BIG(4 * n))
    for (size_t i = 0; i < n; i++) out[i] = strix_act_forward(op, in[i]);
    return STRIX_OK;
}

strix_status cpu_elementwise_backward(strix_backend *be, strix_act op, const float *x,
                                      const float *grad_out, float *grad_in, size_t n) {
    (void)be;
    if (op == STRIX_ACT_GELU) {
        CPU_PARALLEL_FOR_IF(CPU_BIG(4 * n))
        for (size_t i = 0; i < n; i++) grad_in[i] = strix_gelu_backward(x[i], grad_out[i]);
        return STRIX_OK;
    }
    if (op == STRIX_ACT_RELU) {
        CPU_PARALLEL_FOR_IF(BIG(n))
        for (size_t i = 0; i < n; i++) grad_in[i] = strix_relu_backward(x[i], grad_out[i]);
        return STRIX_OK;
    }
    CPU_PARALLEL_FOR_IF(CPU_BIG(4 * n))
    for (size_t i = 0; i < n; i++) grad_in[i] = strix_act_backward(op, x[i], grad_out[i]);
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
