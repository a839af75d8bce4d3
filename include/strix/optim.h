/*
 * strix/optim.h - optimizers over a parameter block (SGD, Adam, AdamW with parameter groups),
 * learning-rate schedules, gradient clipping and the gradient-accumulation scale.
 *
 * Semantics follow PyTorch (torch.optim.SGD/Adam/AdamW, torch.optim.lr_scheduler,
 * torch.nn.utils.clip_grad_norm_/clip_grad_value_). Every update skips buffers (is_buffer),
 * frozen parameters (requires_grad false) and tied aliases (their storage is updated once, through
 * the parameter they are tied to, under that parameter's flags). Updates are elementwise, so doing
 * them per run of parameters or over the whole block gives the same bits.
 *
 * There is one optimizer API: the objects below (the trainer, strix/train.h, steps one).
 * Not here: optimizer state in checkpoints (the block's m/v roles are saved by strix/checkpoint.h;
 * the step count is the caller's), LBFGS and other closure-based optimizers.
 */
#ifndef STRIX_OPTIM_H
#define STRIX_OPTIM_H

#include "strix/params.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- optimizer configs -----------------------------------------------------------------------

typedef struct strix_adamw_config {
    float beta1, beta2, eps; /* 0.9, 0.999, 1e-8 (PyTorch defaults) */
    float weight_decay;      /* AdamW: decoupled; Adam: L2, added to the gradient */
} strix_adamw_config;

/* PyTorch torch.optim.AdamW defaults, except weight_decay (0.01 there) which is passed in. */
STRIX_API strix_adamw_config strix_adamw_defaults(float weight_decay);

// ---- optimizer objects with parameter groups --------------------------------------------------

/* torch.optim.SGD options; all zero is PyTorch's default (plain SGD). */
typedef struct strix_sgd_config {
    float momentum;     /* μ; 0 = no momentum buffer */
    float dampening;    /* buf = μ·buf + (1 − dampening)·g after the first step */
    float weight_decay; /* L2: g += wd·p before everything else */
    bool nesterov;      /* step by g + μ·buf (needs μ > 0 and dampening 0) */
} strix_sgd_config;

typedef struct strix_optimizer strix_optimizer;

/* Predicate choosing the parameters of a group. */
typedef bool (*strix_param_pred)(const strix_param *p, void *user);

/* SGD (torch.optim.SGD): per trainable parameter, with g its gradient:
 *   g = g + wd·p                      (if wd != 0)
 *   buf = g (first step of p), else buf = μ·buf + (1 − dampening)·g   (if μ != 0)
 *   g = nesterov ? g + μ·buf : buf    (if μ != 0)
 *   p = p + (−lr)·g
 * The momentum buffer lives in the block's m role, the modified gradient in its v role (scratch),
 * so ps->grad is never changed. STRIX_ERR_ARG for negative values or Nesterov without momentum
 * (or with dampening); STRIX_ERR_ALLOC. The block must be allocated (strix_params_alloc). */
STRIX_API strix_status strix_optimizer_sgd(strix_params *ps, const strix_sgd_config *cfg,
                                           strix_optimizer **out);

/* Adam (Kingma & Ba 2015; torch.optim.Adam): g = g + wd·p (L2, if wd != 0; into a scratch copy,
 * allocated here, ps->grad is never changed), then strix_adam_step with bias corrections of the
 * parameter's own step count (1-based), state in the block's m and v roles. STRIX_ERR_ARG for
 * betas outside [0, 1), eps or wd < 0; STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_optimizer_adam(strix_params *ps, const strix_adamw_config *cfg,
                                            strix_optimizer **out);

/* AdamW (torch.optim.AdamW): p = (1 − lr·wd)·p (decoupled, every member of the group, if
 * wd != 0), then the Adam update without weight decay. Errors as strix_optimizer_adam. */
STRIX_API strix_status strix_optimizer_adamw(strix_params *ps, const strix_adamw_config *cfg,
                                             strix_optimizer **out);

/* AdamW with nanoGPT's decay split (configure_optimizers; the GPT trainer's optimizer, the
 * strix_train_optimizer of strix/train.h): the default group decays by cfg->weight_decay, and the
 * trainable parameters without the `decay` flag (biases, LayerNorm gains) form a group with
 * weight decay 0 (strix_param_no_decay; no group when there are none). Per step and parameter:
 * p = (1 − lr·wd)·p if it decays, then one Adam update; the bits of the first wave's
 * strix_adamw_step. Errors as strix_optimizer_adamw. */
STRIX_API strix_status strix_optimizer_adamw_split(strix_params *ps,
                                                   const strix_adamw_config *cfg,
                                                   strix_optimizer **out);

/* Adds a parameter group: the parameters whose dotted name matches `prefix` (as
 * strix_params_set_requires_grad) and that no earlier group claimed, with its own learning-rate
 * multiplier (the group's lr is lr·lr_scale at each step) and weight decay. Parameters no group
 * claims form the default group (lr_scale 1, the constructor's weight decay). STRIX_ERR_ARG
 * naming the prefix if it claims nothing (buffers and tied aliases never count); STRIX_ERR_ALLOC.
 */
STRIX_API strix_status strix_optimizer_add_group(strix_optimizer *opt, const char *prefix,
                                                 float lr_scale, float weight_decay);

/* The same with a predicate: the parameters for which pred(p, user) is true. */
STRIX_API strix_status strix_optimizer_add_group_if(strix_optimizer *opt, strix_param_pred pred,
                                                    void *user, float lr_scale,
                                                    float weight_decay);

/* Predicate: parameters without the `decay` flag (biases, LayerNorm gains). A group
 * (strix_param_no_decay, NULL, 1, 0) gives nanoGPT's decay split
 * (strix_optimizer_adamw_split). */
STRIX_API bool strix_param_no_decay(const strix_param *p, void *user);

/* One update of every trainable parameter with base learning rate lr (>= 0; STRIX_ERR_ARG
 * otherwise). Each parameter counts its own steps (as PyTorch's per-parameter state): a frozen
 * parameter keeps its count and momentum until it trains again. Allocates nothing. */
STRIX_API strix_status strix_optimizer_step(strix_optimizer *opt, float lr);

/* Sets every parameter's step count to `steps` (>= 0), e.g. when resuming from a checkpoint that
 * restored the block's m/v roles after `steps` updates. 0 makes SGD's next step start a fresh
 * momentum buffer. */
STRIX_API void strix_optimizer_set_steps(strix_optimizer *opt, int64_t steps);

/* Steps taken by parameter `name` (-1 if there is none, or it is a buffer or a tied alias). */
STRIX_API int64_t strix_optimizer_steps(const strix_optimizer *opt, const char *name);

/* Frees the optimizer (not the parameter block). NULL is a no-op. */
STRIX_API void strix_optimizer_free(strix_optimizer *opt);

// ---- learning-rate schedules ------------------------------------------------------------------

typedef enum strix_lr_kind {
    STRIX_LR_CONSTANT, /* lr */
    STRIX_LR_STEP,     /* StepLR: lr·gamma^floor(t/step_size) */
    STRIX_LR_LINEAR,   /* LinearLR: lr·(start + (end − start)·min(t, total_iters)/total_iters) */
    STRIX_LR_COSINE    /* CosineAnnealingLR: eta_min + (lr − eta_min)·(1 + cos(π·t/t_max))/2 */
} strix_lr_kind;

/* A schedule: a value for every 0-based step t (PyTorch's scheduler.get_last_lr() after t calls
 * of scheduler.step()). With warmup_steps W > 0 the schedule is torch's
 * SequentialLR([LinearLR(warmup_start, 1.0, W), main], milestones=[W]): for t < W,
 * lr·(warmup_start + (1 − warmup_start)·t/W), then the main schedule at t − W. Build one with the
 * constructors below. */
typedef struct strix_lr_schedule {
    strix_lr_kind kind;
    float lr;                    /* base learning rate */
    int64_t warmup_steps;        /* W; 0 = no warmup */
    float warmup_start;          /* warmup's first factor (LinearLR start_factor), in (0, 1] */
    int64_t step_size;           /* STEP */
    float gamma;                 /* STEP */
    float start_factor, end_factor; /* LINEAR */
    int64_t total_iters;         /* LINEAR */
    int64_t t_max;               /* COSINE: like torch, the curve goes back up after t_max */
    float eta_min;               /* COSINE */
} strix_lr_schedule;

/* Constant lr (no warmup). */
STRIX_API strix_lr_schedule strix_lr_constant(float lr);
/* torch StepLR(step_size, gamma). */
STRIX_API strix_lr_schedule strix_lr_step(float lr, int64_t step_size, float gamma);
/* torch LinearLR(start_factor, end_factor, total_iters): e.g. (1, 0, T) decays linearly to 0. */
STRIX_API strix_lr_schedule strix_lr_linear(float lr, float start_factor, float end_factor,
                                            int64_t total_iters);
/* torch CosineAnnealingLR(T_max = t_max, eta_min). */
STRIX_API strix_lr_schedule strix_lr_cosine(float lr, int64_t t_max, float eta_min);
/* `s` with a linear warmup of `steps` steps starting at factor start_factor. */
STRIX_API strix_lr_schedule strix_lr_with_warmup(strix_lr_schedule s, int64_t steps,
                                                 float start_factor);

/* The learning rate at 0-based step t (t < 0 is treated as 0), computed in double in closed form
 * (torch's recursive updates agree to rounding). Degenerate sizes (step_size, total_iters, t_max
 * <= 0) act as 1. */
STRIX_API float strix_lr_at(const strix_lr_schedule *s, int64_t t);

/* Linear warmup from lr/warmup to lr over `warmup` steps, then cosine decay to min_lr at `total`
 * and min_lr after it (nanoGPT get_lr; the GPT trainer's schedule). `step` is 0-based. */
STRIX_API float strix_lr_warmup_cosine(int64_t step, int64_t warmup, int64_t total, float lr,
                                       float min_lr);

// ---- clipping and accumulation ----------------------------------------------------------------

/* Global L2 norm of the gradients of the trainable parameters (sum of squares in double,
 * docs/SEMANTICS.md; strix_sum_squares over each run of trainable parameters stored back to back,
 * the run sums added in block order - one run, the whole block, when everything trains). If
 * max_norm > 0 and the norm exceeds it, those grads *= max_norm/(norm + 1e-6)
 * (torch.nn.utils.clip_grad_norm_). A non-finite norm leaves grads untouched and returns
 * STRIX_ERR_NUMERIC; *norm is always set. */
STRIX_API strix_status strix_clip_grad_norm(strix_params *ps, float max_norm, double *norm);

/* Clamps every gradient of the trainable parameters into [−clip, clip]
 * (torch.nn.utils.clip_grad_value_); NaN stays NaN. clip >= 0, else STRIX_ERR_ARG. The backend
 * has no clamp primitive yet, so the values make a round trip through a small host buffer (a
 * bit-exact selection; allocates nothing). */
STRIX_API strix_status strix_clip_grad_value(strix_params *ps, float clip);

/* Gradient accumulation: the grad_scale that makes the 'mean' loss of a micro-batch of `count`
 * items (rows or tokens) contribute its share of the mean over `total` items: count/total. With
 * k equal micro-batches this is 1/k; with a 'sum' loss pass 1/total instead. Losses (strix/loss.h)
 * take it as grad_scale and module backwards add (`+=`) into the grads, so after the last micro-
 * batch the grads equal one big batch's (to rounding). total > 0. */
STRIX_API float strix_grad_accum_scale(size_t count, size_t total);

#ifdef __cplusplus
}
#endif
#endif
