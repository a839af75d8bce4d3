/*
 * strix/optim.h - AdamW over a parameter block, learning-rate schedules, gradient clipping.
 */
#ifndef STRIX_OPTIM_H
#define STRIX_OPTIM_H

#include "strix/params.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct strix_adamw_config {
    float beta1, beta2, eps; /* 0.9, 0.999, 1e-8 (PyTorch defaults) */
    float weight_decay;      /* decoupled; applied to parameters with `decay` set */
} strix_adamw_config;

/* PyTorch torch.optim.AdamW defaults, except weight_decay (0.01 there) which is passed in. */
STRIX_API strix_adamw_config strix_adamw_defaults(float weight_decay);

/* One AdamW step (Loshchilov & Hutter 2019, Alg. 2; torch.optim.AdamW): for decayed parameters
 * p *= 1 − lr·wd, then one Adam update of the whole block with bias corrections of step `t`
 * (1-based). Uses ps->m / ps->v. */
STRIX_API strix_status strix_adamw_step(strix_params *ps, const strix_adamw_config *cfg, float lr,
                                        int64_t t);

/* Linear warmup from lr/warmup to lr over `warmup` steps, then cosine decay to min_lr at `total`
 * (nanoGPT get_lr). `step` is 0-based. */
STRIX_API float strix_lr_warmup_cosine(int64_t step, int64_t warmup, int64_t total, float lr,
                                       float min_lr);

/* Global L2 norm of all gradients (sum of squares in double, decisions.md). If max_norm > 0 and
 * the norm exceeds it, grads *= max_norm/(norm + 1e-6) (torch.nn.utils.clip_grad_norm_). A
 * non-finite norm leaves grads untouched and returns STRIX_ERR_NUMERIC; *norm is always set. */
STRIX_API strix_status strix_clip_grad_norm(strix_params *ps, float max_norm, double *norm);

#ifdef __cplusplus
}
#endif
#endif
