/*
 * clip.c - gradient clipping by global norm and by value over the trainable parameters, and the
 * gradient-accumulation scale. Buffers, frozen parameters and tied aliases are left out.
 */
#include <math.h>

#include "optim/optim_internal.h"

strix_status strix_clip_grad_norm(strix_params *ps, float max_norm, double *norm) {
    double ss = 0.0;
    optim_run run;
    int at = 0;
    while (optim_next_run(ps, &at, optim_class_trains, NULL, &run)) {
        double part = 0.0;
        STRIX_TRY(strix_sum_squares(ps->be, ps->grad + run.offset, run.numel, &part));
        ss += part;
    }
    *norm = sqrt(ss);
    if (!isfinite(*norm))
        return strix_error(STRIX_ERR_NUMERIC, "gradient norm is %g; gradients left untouched",
                           *norm);
    if (max_norm > 0.0f && *norm > max_norm) {
        float scale = (float)(max_norm / (*norm + 1e-6));
        at = 0;
        while (optim_next_run(ps, &at, optim_class_trains, NULL, &run)) {
            float *g = ps->grad + run.offset;
            STRIX_TRY(strix_axpby(ps->be, scale, g, 0.0f, NULL, g, run.numel));
        }
    }
    return STRIX_OK;
}

strix_status strix_clip_grad_value(strix_params *ps, float clip) {
    if (!(clip >= 0.0f))
        return strix_error(STRIX_ERR_ARG, "clip_grad_value: clip must be >= 0 (got %g)", clip);
    optim_run run;
    int at = 0;
    while (optim_next_run(ps, &at, optim_class_trains, NULL, &run)) {
        float *g = ps->grad + run.offset; /* torch.clamp: NaN compares false and stays */
        STRIX_TRY(strix_clamp(ps->be, g, -clip, clip, g, run.numel));
    }
    return STRIX_OK;
}

float strix_grad_accum_scale(size_t count, size_t total) {
    STRIX_ASSERT(total > 0, "grad_accum_scale: total must be > 0");
    return (float)((double)count / (double)total);
}
