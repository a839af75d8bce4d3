/*
 * adamw.c - decoupled weight decay plus one fused Adam kernel over the parameter block.
 */
#include <math.h>

#include "strix/optim.h"

strix_adamw_config strix_adamw_defaults(float weight_decay) {
    strix_adamw_config c = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                            .weight_decay = weight_decay};
    return c;
}

strix_status strix_adamw_step(strix_params *ps, const strix_adamw_config *cfg, float lr,
                              int64_t t) {
    STRIX_ASSERT(t >= 1, "AdamW step counts from 1");
    if (cfg->weight_decay != 0.0f) {
        float keep = 1.0f - lr * cfg->weight_decay;
        for (int i = 0; i < ps->count; i++) {
            strix_param *p = ps->items[i];
            if (!p->decay || p->tied_to) continue;
            STRIX_TRY(strix_axpby(ps->be, keep, p->data, 0.0f, NULL, p->data, p->numel));
        }
    }
    float bc1 = (float)(1.0 - pow(cfg->beta1, (double)t));
    float bc2 = (float)(1.0 - pow(cfg->beta2, (double)t));
    return strix_adam_step(ps->be, ps->data, ps->grad, ps->m, ps->v, ps->total, lr, cfg->beta1,
                           cfg->beta2, cfg->eps, bc1, bc2);
}

float strix_lr_warmup_cosine(int64_t step, int64_t warmup, int64_t total, float lr,
                             float min_lr) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    if (step >= total) return min_lr;
    double ratio = (double)(step - warmup) / (double)(total - warmup > 0 ? total - warmup : 1);
    double coeff = 0.5 * (1.0 + cos(3.14159265358979323846 * ratio));
    return (float)(min_lr + coeff * (lr - min_lr));
}

strix_status strix_clip_grad_norm(strix_params *ps, float max_norm, double *norm) {
    double ss = 0.0;
    STRIX_TRY(strix_sum_squares(ps->be, ps->grad, ps->total, &ss));
    *norm = sqrt(ss);
    if (!isfinite(*norm))
        return strix_error(STRIX_ERR_NUMERIC, "gradient norm is %g; gradients left untouched",
                           *norm);
    if (max_norm > 0.0f && *norm > max_norm) {
        float scale = (float)(max_norm / (*norm + 1e-6));
        STRIX_TRY(strix_axpby(ps->be, scale, ps->grad, 0.0f, NULL, ps->grad, ps->total));
    }
    return STRIX_OK;
}
