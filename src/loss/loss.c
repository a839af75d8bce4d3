/*
 * loss.c - MSE, BCE-with-logits and KL-divergence losses on the backend primitives
 * (strix/loss.h). Cross-entropy is in cross_entropy.c.
 */
#include <math.h>
#include <string.h>

#include "loss/loss_internal.h"

strix_status strix_mse_loss(strix_loss_workspace *ws, const float *input, const float *target,
                            size_t n, strix_reduction reduction, float *grad, float grad_scale,
                            float *loss) {
    double den;
    STRIX_TRY(loss_divisor("mse_loss", reduction, n, 1, false, &den));
    strix_backend *be = ws->be;
    float *d = grad;
    if (!d) STRIX_TRY(loss_dev_scratch(ws, n, &d));
    STRIX_TRY(strix_axpby(be, 1.0f, input, -1.0f, target, d, n)); /* d = x − y */
    double ss = 0.0;
    STRIX_TRY(strix_sum_squares(be, d, n, &ss));
    *loss = (float)(ss / den);
    if (grad && n) STRIX_TRY(strix_axpby(be, (float)(2.0 * grad_scale / den), d, 0.0f, NULL,
                                         grad, n));
    return STRIX_OK;
}

strix_status strix_bce_with_logits_loss(strix_loss_workspace *ws, const float *logits,
                                        const float *target, size_t n, strix_reduction reduction,
                                        float *grad, float grad_scale, float *loss) {
    double den;
    STRIX_TRY(loss_divisor("bce_with_logits_loss", reduction, n, 1, false, &den));
    strix_backend *be = ws->be;
    float *per = NULL, total = 0.0f;
    STRIX_TRY(loss_dev_scratch(ws, n, &per));
    STRIX_TRY(strix_bce_with_logits(be, logits, target, per, n));
    STRIX_TRY(strix_sum(be, per, n, &total));
    *loss = (float)((double)total / den);
    if (grad && n)
        STRIX_TRY(strix_bce_with_logits_grad(be, logits, target, grad, n,
                                             (float)(grad_scale / den)));
    return STRIX_OK;
}

strix_status strix_kl_div_loss(strix_loss_workspace *ws, const float *input, const float *target,
                               size_t rows, size_t cols, strix_reduction reduction,
                               bool log_target, float *grad, float grad_scale, float *loss) {
    size_t n = rows * cols;
    double den;
    STRIX_TRY(loss_divisor("kl_div_loss", reduction, n, rows, true, &den));
    strix_backend *be = ws->be;
    float *scratch = NULL, total = 0.0f;
    float scale = (float)(grad_scale / den);
    if (log_target) {
        STRIX_TRY(loss_dev_scratch(ws, 2 * n, &scratch));
        float *e = scratch, *d = scratch + n;
        STRIX_TRY(strix_elementwise(be, STRIX_ACT_EXP, target, e, n));   /* e = exp(t) */
        STRIX_TRY(strix_axpby(be, 1.0f, target, -1.0f, input, d, n));   /* d = t − x */
        STRIX_TRY(strix_dot(be, e, d, n, &total));
        *loss = (float)((double)total / den);
        if (grad && n) STRIX_TRY(strix_axpby(be, -scale, e, 0.0f, NULL, grad, n));
        return STRIX_OK;
    }
    STRIX_TRY(loss_dev_scratch(ws, n, &scratch));
    float *d = scratch;
    STRIX_TRY(strix_elementwise(be, STRIX_ACT_LOG, target, d, n)); /* -inf/NaN where t <= 0 */
    STRIX_TRY(strix_axpby(be, 1.0f, d, -1.0f, input, d, n));      /* d = log t − x */
    /* where(t > 0, d, 0): ReLU's backward is the select t > 0 ? d : 0 (drops the -inf/NaN) */
    STRIX_TRY(strix_elementwise_backward(be, STRIX_ACT_RELU, target, d, d, n));
    STRIX_TRY(strix_dot(be, target, d, n, &total));
    *loss = (float)((double)total / den);
    if (grad && n) {
        STRIX_TRY(strix_axpby(be, -scale, target, 0.0f, NULL, grad, n));
        STRIX_TRY(strix_elementwise_backward(be, STRIX_ACT_RELU, target, grad, grad, n));
    }
    return STRIX_OK;
}
