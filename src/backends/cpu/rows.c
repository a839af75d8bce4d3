/*
 * rows.c - the CPU backend's row slots: softmax (+backward), logsumexp, LayerNorm forward and
 * backward, causal attention softmax (+backward), softmax cross-entropy, RMSNorm forward and
 * backward, and attention score masks.
 *
 * Each row is independent; the worker pool splits rows, and each row runs the kernels/rows.h
 * function that every backend shares, so results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/rows.h"

#define MANY_ROWS(rows, cols) ((rows) > 1 && CPU_BIG(2 * (rows) * (cols)))

/* Operands of the softmax-like rows: in (x, y or probs), dy (the output gradient), out. */
typedef struct row_args {
    const float *in, *dy;
    float *out;
    size_t cols;
    float scale;
} row_args;

CPU_CLONES static void softmax_range(void *args, size_t r0, size_t r1) {
    const row_args *a = args;
    const float *in = a->in;
    float *out = a->out;
    size_t cols = a->cols;
    for (size_t r = r0; r < r1; r++) strix_softmax_row(in + r * cols, out + r * cols, cols);
}

strix_status cpu_softmax_rows(strix_backend *be, const float *in, float *out, size_t rows,
                              size_t cols) {
    (void)be;
    row_args a = {.in = in, .out = out, .cols = cols};
    cpu_parallel_for(rows, MANY_ROWS(rows, cols), softmax_range, &a);
    return STRIX_OK;
}

CPU_CLONES static void softmax_backward_range(void *args, size_t r0, size_t r1) {
    const row_args *a = args;
    const float *y = a->in, *dy = a->dy;
    float *dx = a->out;
    size_t cols = a->cols;
    for (size_t r = r0; r < r1; r++)
        strix_softmax_row_backward(y + r * cols, dy + r * cols, dx + r * cols, cols);
}

strix_status cpu_softmax_rows_backward(strix_backend *be, const float *y, const float *dy,
                                       float *dx, size_t rows, size_t cols) {
    (void)be;
    row_args a = {.in = y, .dy = dy, .out = dx, .cols = cols};
    cpu_parallel_for(rows, MANY_ROWS(rows, cols), softmax_backward_range, &a);
    return STRIX_OK;
}

/* out: one value per row. */
CPU_CLONES static void logsumexp_range(void *args, size_t r0, size_t r1) {
    const row_args *a = args;
    const float *in = a->in;
    float *out = a->out;
    size_t cols = a->cols;
    for (size_t r = r0; r < r1; r++) out[r] = strix_logsumexp_row(in + r * cols, cols);
}

strix_status cpu_logsumexp_rows(strix_backend *be, const float *in, float *out, size_t rows,
                                size_t cols) {
    (void)be;
    row_args a = {.in = in, .out = out, .cols = cols};
    cpu_parallel_for(rows, MANY_ROWS(rows, cols), logsumexp_range, &a);
    return STRIX_OK;
}

/* Operands of the normalisation rows (LayerNorm, RMSNorm). Forward: in -> out (and xhat),
 * row_std the per-row statistic. Backward: grad_out -> grad_in, x is xhat (LayerNorm) or the
 * input (RMSNorm). */
typedef struct norm_rows_args {
    const float *in, *gamma, *beta, *grad_out, *x, *row_stat;
    float *xhat, *out, *row_std, *grad_in, *gamma_terms;
    size_t rows, cols;
    float eps;
} norm_rows_args;

/* Groups [g0, g1) of STRIX_LN_GROUP rows. */
CPU_CLONES static void layer_norm_forward_range(void *args, size_t g0, size_t g1) {
    const norm_rows_args *a = args;
    const float *in = a->in, *gamma = a->gamma, *beta = a->beta;
    float *xhat = a->xhat, *out = a->out, *row_std = a->row_std, eps = a->eps;
    size_t rows = a->rows, cols = a->cols;
    for (size_t g = g0; g < g1; g++) {
        size_t r = g * STRIX_LN_GROUP, at = r * cols;
        if (rows - r >= STRIX_LN_GROUP) /* a constant count: the row loops unroll */
            strix_layer_norm_rows_forward(in + at, gamma, beta, xhat + at, out + at, row_std + r,
                                          STRIX_LN_GROUP, cols, eps);
        else
            strix_layer_norm_rows_forward(in + at, gamma, beta, xhat + at, out + at, row_std + r,
                                          rows - r, cols, eps);
    }
}

strix_status cpu_layer_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                    const float *beta, float *xhat, float *out, float *row_std,
                                    size_t rows, size_t cols, float eps) {
    (void)be;
    size_t groups = (rows + STRIX_LN_GROUP - 1) / STRIX_LN_GROUP;
    norm_rows_args a = {.in = in, .gamma = gamma, .beta = beta, .xhat = xhat, .out = out,
                        .row_std = row_std, .rows = rows, .cols = cols, .eps = eps};
    cpu_parallel_for(groups, groups > 1 && MANY_ROWS(rows, cols), layer_norm_forward_range, &a);
    return STRIX_OK;
}

/* Groups [g0, g1) of STRIX_LN_GROUP rows. */
CPU_CLONES static void layer_norm_backward_range(void *args, size_t g0, size_t g1) {
    const norm_rows_args *a = args;
    const float *grad_out = a->grad_out, *gamma = a->gamma, *xhat = a->x;
    const float *row_std = a->row_stat;
    float *grad_in = a->grad_in;
    size_t rows = a->rows, cols = a->cols;
    for (size_t g = g0; g < g1; g++) {
        size_t r = g * STRIX_LN_GROUP, at = r * cols;
        size_t count = rows - r >= STRIX_LN_GROUP ? STRIX_LN_GROUP : rows - r;
        if (count == STRIX_LN_GROUP) /* a constant count: the row loops unroll */
            strix_layer_norm_rows_backward(grad_out + at, gamma, xhat + at, row_std + r,
                                           grad_in + at, STRIX_LN_GROUP, cols);
        else
            strix_layer_norm_rows_backward(grad_out + at, gamma, xhat + at, row_std + r,
                                           grad_in + at, count, cols);
    }
}

strix_status cpu_layer_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                     const float *xhat, const float *row_std, float *grad_in,
                                     size_t rows, size_t cols) {
    (void)be;
    size_t groups = (rows + STRIX_LN_GROUP - 1) / STRIX_LN_GROUP;
    norm_rows_args a = {.grad_out = grad_out, .gamma = gamma, .x = xhat, .row_stat = row_std,
                        .grad_in = grad_in, .rows = rows, .cols = cols};
    cpu_parallel_for(groups, groups > 1 && MANY_ROWS(rows, cols), layer_norm_backward_range, &a);
    return STRIX_OK;
}

/* Rows [r0, r1) of slices of T rows; cols is T. */
CPU_CLONES static void attn_causal_range(void *args, size_t r0, size_t r1) {
    const row_args *a = args;
    const float *scores = a->in;
    float *probs = a->out, scale = a->scale;
    size_t T = a->cols;
    for (size_t r = r0; r < r1; r++)
        strix_attn_causal_row_forward(scores + r * T, probs + r * T, r % T, T, scale);
}

strix_status cpu_attn_softmax_causal(strix_backend *be, const float *scores, float *probs,
                                     size_t slices, size_t T, float scale) {
    (void)be;
    size_t rows = slices * T;
    row_args a = {.in = scores, .out = probs, .cols = T, .scale = scale};
    cpu_parallel_for(rows, MANY_ROWS(rows, T / 2), attn_causal_range, &a);
    return STRIX_OK;
}

CPU_CLONES static void attn_causal_backward_range(void *args, size_t r0, size_t r1) {
    const row_args *a = args;
    const float *probs = a->in, *dprobs = a->dy;
    float *dscores = a->out, scale = a->scale;
    size_t T = a->cols;
    for (size_t r = r0; r < r1; r++) {
        strix_attn_causal_row_backward(probs + r * T, dprobs + r * T, dscores + r * T, r % T, T,
                                       scale);
    }
}

strix_status cpu_attn_softmax_causal_backward(strix_backend *be, const float *probs,
                                              const float *dprobs, float *dscores, size_t slices,
                                              size_t T, float scale) {
    (void)be;
    size_t rows = slices * T;
    row_args a = {.in = probs, .dy = dprobs, .out = dscores, .cols = T, .scale = scale};
    cpu_parallel_for(rows, MANY_ROWS(rows, T / 2), attn_causal_backward_range, &a);
    return STRIX_OK;
}

typedef struct cross_entropy_args {
    const float *logits;
    const int32_t *targets;
    float *losses, *dlogits;
    size_t V;
    float grad_scale;
} cross_entropy_args;

CPU_CLONES static void cross_entropy_range(void *args, size_t r0, size_t r1) {
    const cross_entropy_args *a = args;
    const float *logits = a->logits;
    const int32_t *targets = a->targets;
    float *losses = a->losses, *dlogits = a->dlogits, grad_scale = a->grad_scale;
    size_t V = a->V;
    for (size_t r = r0; r < r1; r++) {
        losses[r] = strix_cross_entropy_row(logits + r * V, targets[r],
                                            dlogits ? dlogits + r * V : NULL, V, grad_scale);
    }
}

strix_status cpu_softmax_cross_entropy(strix_backend *be, const float *logits,
                                       const int32_t *targets, float *losses, float *dlogits,
                                       size_t rows, size_t V, float grad_scale) {
    (void)be;
    cross_entropy_args a = {logits, targets, losses, dlogits, V, grad_scale};
    cpu_parallel_for(rows, MANY_ROWS(rows, V), cross_entropy_range, &a);
    return STRIX_OK;
}

// ---- RMSNorm and attention masks ---------------------------------------------------------------

/* row_std: the rows' RMS. */
CPU_CLONES static void rms_norm_forward_range(void *args, size_t r0, size_t r1) {
    const norm_rows_args *a = args;
    const float *in = a->in, *gamma = a->gamma;
    float *out = a->out, *row_rms = a->row_std, eps = a->eps;
    size_t cols = a->cols;
    for (size_t r = r0; r < r1; r++)
        row_rms[r] = strix_rms_norm_row_forward(in + r * cols, gamma, out + r * cols, cols, eps);
}

strix_status cpu_rms_norm_forward(strix_backend *be, const float *in, const float *gamma,
                                  float *out, float *row_rms, size_t rows, size_t cols,
                                  float eps) {
    (void)be;
    norm_rows_args a = {.in = in, .gamma = gamma, .out = out, .row_std = row_rms, .rows = rows,
                        .cols = cols, .eps = eps};
    cpu_parallel_for(rows, MANY_ROWS(rows, cols), rms_norm_forward_range, &a);
    return STRIX_OK;
}

CPU_CLONES static void rms_norm_backward_range(void *args, size_t r0, size_t r1) {
    const norm_rows_args *a = args;
    const float *grad_out = a->grad_out, *gamma = a->gamma, *in = a->x;
    const float *row_rms = a->row_stat;
    float *grad_in = a->grad_in, *gamma_terms = a->gamma_terms;
    size_t cols = a->cols;
    for (size_t r = r0; r < r1; r++) {
        size_t at = r * cols;
        strix_rms_norm_row_backward(grad_out + at, gamma, in + at, row_rms[r], grad_in + at,
                                    gamma_terms ? gamma_terms + at : NULL, cols);
    }
}

strix_status cpu_rms_norm_backward(strix_backend *be, const float *grad_out, const float *gamma,
                                   const float *in, const float *row_rms, float *grad_in,
                                   float *gamma_terms, size_t rows, size_t cols) {
    (void)be;
    norm_rows_args a = {.grad_out = grad_out, .gamma = gamma, .x = in, .row_stat = row_rms,
                        .grad_in = grad_in, .gamma_terms = gamma_terms, .rows = rows,
                        .cols = cols};
    cpu_parallel_for(rows, MANY_ROWS(rows, cols), rms_norm_backward_range, &a);
    return STRIX_OK;
}

typedef struct mask_args {
    float *scores;
    const float *keep;
    size_t H, Lq, Lk, q_off, window;
    bool causal;
    float value;
} mask_args;

/* Score rows [r0, r1) of (B, H, Lq) rows of Lk. */
CPU_CLONES static void mask_fill_range(void *args, size_t r0, size_t r1) {
    const mask_args *a = args;
    float *scores = a->scores, value = a->value;
    const float *keep = a->keep;
    size_t H = a->H, Lq = a->Lq, Lk = a->Lk, q_off = a->q_off, window = a->window;
    bool causal = a->causal;
    for (size_t r = r0; r < r1; r++) {
        size_t b = r / (H * Lq), i = r % Lq;
        strix_attention_mask_row(scores + r * Lk, keep ? keep + b * Lk : NULL, i, Lk, causal,
                                 q_off, window, value);
    }
}

strix_status cpu_attention_mask_fill(strix_backend *be, float *scores, const float *keep, size_t B,
                                     size_t H, size_t Lq, size_t Lk, bool causal, size_t q_off,
                                     size_t window, float value) {
    (void)be;
    size_t rows = B * H * Lq;
    mask_args a = {scores, keep, H, Lq, Lk, q_off, window, causal, value};
    cpu_parallel_for(rows, rows > 1 && CPU_BIG(rows * Lk), mask_fill_range, &a);
    return STRIX_OK;
}
