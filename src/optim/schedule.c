/*
 * schedule.c - learning-rate schedules as closed-form functions of the step (torch.optim.
 * lr_scheduler StepLR, LinearLR, CosineAnnealingLR, warmup via SequentialLR), and nanoGPT's
 * warmup + cosine used by the GPT trainer. Host-only arithmetic in double.
 */
#include <math.h>

#include "strix/optim.h"

#define PI 3.14159265358979323846

strix_lr_schedule strix_lr_constant(float lr) {
    strix_lr_schedule s = {.kind = STRIX_LR_CONSTANT, .lr = lr, .warmup_start = 1.0f};
    return s;
}

strix_lr_schedule strix_lr_step(float lr, int64_t step_size, float gamma) {
    strix_lr_schedule s = strix_lr_constant(lr);
    s.kind = STRIX_LR_STEP;
    s.step_size = step_size;
    s.gamma = gamma;
    return s;
}

strix_lr_schedule strix_lr_linear(float lr, float start_factor, float end_factor,
                                  int64_t total_iters) {
    strix_lr_schedule s = strix_lr_constant(lr);
    s.kind = STRIX_LR_LINEAR;
    s.start_factor = start_factor;
    s.end_factor = end_factor;
    s.total_iters = total_iters;
    return s;
}

strix_lr_schedule strix_lr_cosine(float lr, int64_t t_max, float eta_min) {
    strix_lr_schedule s = strix_lr_constant(lr);
    s.kind = STRIX_LR_COSINE;
    s.t_max = t_max;
    s.eta_min = eta_min;
    return s;
}

strix_lr_schedule strix_lr_with_warmup(strix_lr_schedule s, int64_t steps, float start_factor) {
    s.warmup_steps = steps;
    s.warmup_start = start_factor;
    return s;
}

/* The main schedule at its own step t >= 0. */
static double main_lr(const strix_lr_schedule *s, int64_t t) {
    double lr = s->lr;
    switch (s->kind) {
    case STRIX_LR_CONSTANT: return lr;
    case STRIX_LR_STEP: {
        int64_t size = s->step_size > 0 ? s->step_size : 1;
        return lr * pow((double)s->gamma, (double)(t / size));
    }
    case STRIX_LR_LINEAR: {
        int64_t total = s->total_iters > 0 ? s->total_iters : 1;
        double done = (double)(t < total ? t : total) / (double)total;
        return lr * (s->start_factor + (s->end_factor - (double)s->start_factor) * done);
    }
    case STRIX_LR_COSINE: {
        int64_t t_max = s->t_max > 0 ? s->t_max : 1;
        double eta = s->eta_min;
        return eta + (lr - eta) * (1.0 + cos(PI * (double)t / (double)t_max)) / 2.0;
    }
    }
    return lr;
}

float strix_lr_at(const strix_lr_schedule *s, int64_t t) {
    if (t < 0) t = 0;
    if (t < s->warmup_steps) {
        double f = s->warmup_start + (1.0 - s->warmup_start) * (double)t / (double)s->warmup_steps;
        return (float)(s->lr * f);
    }
    return (float)main_lr(s, t - s->warmup_steps);
}

float strix_lr_warmup_cosine(int64_t step, int64_t warmup, int64_t total, float lr,
                             float min_lr) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    if (step >= total) return min_lr;
    double ratio = (double)(step - warmup) / (double)(total - warmup > 0 ? total - warmup : 1);
    double coeff = 0.5 * (1.0 + cos(PI * ratio));
    return (float)(min_lr + coeff * (lr - min_lr));
}
