/*
 * adamw.c - strix_adamw_step, the GPT trainer's optimizer: decoupled weight decay on the `decay`
 * parameters, then one fused Adam kernel over each run of trainable parameters (the whole block
 * in one call when everything trains, as in the GPT). The optimizer objects are in optimizer.c.
 */
#include <math.h>

#include "optim/optim_internal.h"

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
            if (!p->decay || !optim_trains(p)) continue;
            STRIX_TRY(strix_axpby(ps->be, keep, p->data, 0.0f, NULL, p->data, p->numel));
        }
    }
    float bc1 = (float)(1.0 - pow(cfg->beta1, (double)t));
    float bc2 = (float)(1.0 - pow(cfg->beta2, (double)t));
    optim_run run;
    int at = 0;
    while (optim_next_run(ps, &at, optim_class_trains, NULL, &run)) {
        size_t o = run.offset;
        STRIX_TRY(strix_adam_step(ps->be, ps->data + o, ps->grad + o, ps->m + o, ps->v + o,
                                  run.numel, lr, cfg->beta1, cfg->beta2, cfg->eps, bc1, bc2));
    }
    return STRIX_OK;
}
