/*
 * adamw.c - the AdamW defaults and the GPT trainer's optimizer: an AdamW object (optimizer.c) with
 * nanoGPT's decay split, a no-decay group for the parameters without the `decay` flag. Adds no
 * update of its own: the steps are the optimizer object's.
 */
#include "optim/optim_internal.h"

strix_adamw_config strix_adamw_defaults(float weight_decay) {
    strix_adamw_config c = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                            .weight_decay = weight_decay};
    return c;
}

strix_status strix_optimizer_adamw_split(strix_params *ps, const strix_adamw_config *cfg,
                                         strix_optimizer **out) {
    STRIX_TRY(strix_optimizer_adamw(ps, cfg, out));
    bool any = false; /* a group must claim something: skip it when every parameter decays */
    for (int i = 0; i < ps->count; i++) {
        const strix_param *p = ps->items[i];
        any |= !p->tied_to && !p->is_buffer && strix_param_no_decay(p, NULL);
    }
    strix_status s = any ? strix_optimizer_add_group_if(*out, strix_param_no_decay, NULL, 1.0f,
                                                        0.0f)
                         : STRIX_OK;
    if (s != STRIX_OK) {
        strix_optimizer_free(*out);
        *out = NULL;
    }
    return s;
}
