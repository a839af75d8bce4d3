/*
 * strix/ops/rl.h - reinforcement-learning primitives of the device backend: per-row DQN / policy-
 * gradient / PPO terms, DQN targets, Polyak blending, and SAC's tanh-Gaussian policy (included by
 * strix/backend.h; same conventions). Per-row terms are reduced by the caller (column_sums).
 */
#ifndef STRIX_OPS_RL_H
#define STRIX_OPS_RL_H

#include "strix/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ops of strix_rl_rows (docs/SEMANTICS.md). Slots below; `rows` is the batch and `cols` the
 * number of actions (DQN_*, PG_*, PPO_*). Per-row vectors are (rows), matrices (rows, cols).
 * Actions (in[1] of every op but DQN_TARGET and POLYAK_BLEND) are whole-number floats in
 * [0, cols); otherwise STRIX_ERR_ARG, before anything is written. Outputs are overwritten (`=`).
 * Row softmaxes subtract the row max, sum the exps ascending from 0.0f, and give
 * logπ(a) = (x_a − max) − log Σ; a -inf logit gets probability 0, an all -inf row gives probs 0
 * and logπ = -inf. Losses are per row: the caller reduces them (column_sums) and passes the
 * matching `scale` to the _GRAD op (e.g. 1/rows for a mean). */
typedef enum strix_rl_op {
    /* in[0] Q (rows, cols), in[1] actions, in[2] targets; out[0] loss = (Q[a] − target)². */
    STRIX_RL_DQN_LOSS,
    /* Same inputs; out[0] dQ (rows, cols) = scale·(Q[a] − target) in column a, 0 in the others
     * (the whole row is written). The 2 of the square is the caller's: scale = 2/rows is the
     * gradient of the mean loss. out[0] may alias in[0]. */
    STRIX_RL_DQN_GRAD,
    /* in[0] logits (rows, cols), in[1] actions, in[2] returns R; out[0] probs (rows, cols) =
     * softmax(logits), out[1] loss = −logπ(a)·R (REINFORCE). out[0] may alias in[0]. */
    STRIX_RL_PG_LOSS,
    /* in[0] probs from PG_LOSS, in[1] actions, in[2] returns R; out[0] dlogits (rows, cols) =
     * (R·scale)·(p − onehot(a)), the gradient of scale·Σ loss. out[0] may alias in[0]. */
    STRIX_RL_PG_GRAD,
    /* in[0] logits (rows, cols), in[1] actions, in[2] old log-probs, in[3] advantages A;
     * out[0] probs (rows, cols), out[1] loss = −min(ratio·A, clip(ratio, lower, upper)·A),
     * out[2] ratio = e^(logπ(a) − old), out[3] mask = 0 where the clipped term is the minimum and
     * constant, (A >= 0 and ratio > upper) or (A < 0 and ratio < lower), else 1 (PPO-Clip,
     * Schulman et al. 2017, eq. 7). out[0] may alias in[0]. */
    STRIX_RL_PPO_LOSS,
    /* in[0] probs, in[1] actions, in[2] ratio, in[3] mask (all from PPO_LOSS), in[4] advantages
     * A; out[0] dlogits (rows, cols) = −(A·ratio)·mask·scale·(onehot(a) − p), the gradient of
     * scale·Σ loss. out[0] may alias in[0]. */
    STRIX_RL_PPO_GRAD,
    /* in[0] select Q (rows, cols), in[1] eval Q (rows, cols), in[2] rewards, in[3] done (0/1);
     * out[0] target = reward + (gamma·(1 − done))·eval[best], best = argmax of the select row
     * (strict >, scanned from column 0: ties go to the lowest index; a NaN wins only in column
     * 0, the start). DQN passes the target network's Q as both; Double DQN selects with the
     * online network. */
    STRIX_RL_DQN_TARGET,
    /* in[0] src (online weights), in[1] dst (target weights), rows·cols elements (any split);
     * out[0] = tau·src + (1 − tau)·dst. out[0] may alias in[0] or in[1] (in place: in[1]). */
    STRIX_RL_POLYAK_BLEND
} strix_rl_op;

/* Arguments of strix_rl_rows; slots unused by an op are ignored (may be NULL). */
typedef struct strix_rl_args {
    const float *in[5];
    float *out[4];
    size_t rows, cols;
    float scale;        /* gradient scale of the _GRAD ops (e.g. 1/rows) */
    float lower, upper; /* PPO clip range (1−ε, 1+ε) */
    float gamma;        /* DQN_TARGET discount */
    float tau;          /* POLYAK_BLEND factor, in (0, 1] */
} strix_rl_args;

/* One fused RL pass of op over args (slots per op above); rows == 0 or cols == 0 does nothing.
 * Returns STRIX_ERR_ARG for an invalid action or an unknown op. Missing slots are asserted. */
STRIX_API strix_status strix_rl_rows(strix_backend *be, strix_rl_op op,
                                     const strix_rl_args *args);

/* SAC's tanh-Gaussian policy (Haarnoja et al. 2018, App. C) per (rows, cols): std = exp(log_std),
 * action = tanh(mean + std·eps), std_cache = std (all (rows, cols)), log_prob[r] (rows) =
 * Σ_j (−eps²/2 − log_std − log(2π)/2 − log(1 − action² + stabilizer)), every term and the sum
 * in double, j ascending, rounded to float once. eps is the caller's N(0,1) noise. action may
 * alias mean and std_cache may alias log_std. The usual stabilizer is 1e-6. */
STRIX_API strix_status strix_tanh_gaussian_forward(strix_backend *be, const float *mean,
                                                   const float *log_std, const float *eps,
                                                   float *action, float *std_cache,
                                                   float *log_prob, size_t rows, size_t cols,
                                                   float stabilizer);
/* Its backward, per element (grad_log_prob is per row, (rows); the rest (rows, cols)):
 * gu = ga(1−a²) + glp·2a(1−a²)/(1−a²+stabilizer); grad_mean = gu; grad_log_std = gu·std·eps −
 * glp (eps held constant: the reparameterisation trick). Outputs `=`; each may alias any
 * (rows, cols) input of its own element. */
STRIX_API strix_status strix_tanh_gaussian_backward(strix_backend *be, const float *action,
                                                    const float *std_cache, const float *eps,
                                                    const float *grad_action,
                                                    const float *grad_log_prob,
                                                    float *grad_mean, float *grad_log_std,
                                                    size_t rows, size_t cols, float stabilizer);

#ifdef __cplusplus
}
#endif
#endif
