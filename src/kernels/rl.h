/*
 * kernels/rl.h - per-row math of the reinforcement-learning primitives: the rows of each
 * strix_rl_op (slots documented in include/strix/ops/rl.h) and SAC's tanh-Gaussian policy
 * (Haarnoja et al. 2018, "Soft Actor-Critic", appendix C).
 *
 * Each function handles ONE row (one element for the Polyak blend and the tanh-Gaussian
 * backward); the backend decides which rows run where. Row sums run over the columns in ascending
 * order (softmax sums from 0.0f in float, the log-probability of the policy from 0.0 in double).
 * Every function reads what it needs of a row before writing it, so the aliases the public
 * header allows are safe. Actions are whole-number floats already checked to be in [0, cols).
 */
#ifndef STRIX_KERNELS_RL_H
#define STRIX_KERNELS_RL_H

#include "strix/backend.h"
#include "kernels/common.h"
#include "kernels/mathf.h"
#include "kernels/rows.h"

#define STRIX_HALF_LOG_2PI 0.91893853320467274178 /* log(2π)/2, in double */

/* Action of row r (in[1] of every op that takes actions). */
STRIX_HD static inline size_t strix_rl_action(const strix_rl_args *a, size_t r) {
    return (size_t)a->in[1][r];
}

/* DQN_LOSS row r: out[0][r] = (Q[r][a] − target[r])². */
STRIX_HD static inline void strix_rl_dqn_loss_row(const strix_rl_args *a, size_t r) {
    float diff = a->in[0][r * a->cols + strix_rl_action(a, r)] - a->in[2][r];
    a->out[0][r] = diff * diff;
}

/* DQN_GRAD row r: out[0][r][a] = scale·(Q[r][a] − target[r]), 0 in the other columns. */
STRIX_HD static inline void strix_rl_dqn_grad_row(const strix_rl_args *a, size_t r) {
    size_t action = strix_rl_action(a, r);
    float grad = a->scale * (a->in[0][r * a->cols + action] - a->in[2][r]);
    float *out = a->out[0] + r * a->cols;
    for (size_t j = 0; j < a->cols; j++) out[j] = j == action ? grad : 0.0f;
}

/* Softmax of one row of logits into probs (probs may alias logits) and returns
 * logπ(action) = (x[action] − max) − log Σ_j e^(x_j − max), the exps summed ascending from 0.0f.
 * An all -inf row gives probs 0 and logπ = -inf; a -inf logit gets probability exactly 0. */
STRIX_HD static inline float strix_rl_log_softmax_row(const float *logits, float *probs,
                                                      size_t cols, size_t action) {
    float chosen = logits[action];
    float row_max = strix_row_max(logits, cols);
    if (row_max == STRIX_NEG_INF) {
        for (size_t j = 0; j < cols; j++) probs[j] = 0.0f;
        return STRIX_NEG_INF;
    }
    float total = 0.0f;
    for (size_t j = 0; j < cols; j++) probs[j] = strix_kernel_expf(logits[j] - row_max);
    for (size_t j = 0; j < cols; j++) total += probs[j];
    for (size_t j = 0; j < cols; j++) probs[j] = probs[j] / total;
    return (chosen - row_max) - logf(total);
}

/* PG_LOSS row r: out[0] row = softmax(logits), out[1][r] = −logπ(a)·R. */
STRIX_HD static inline void strix_rl_pg_loss_row(const strix_rl_args *a, size_t r) {
    size_t at = r * a->cols;
    float ret = a->in[2][r];
    float log_prob =
        strix_rl_log_softmax_row(a->in[0] + at, a->out[0] + at, a->cols, strix_rl_action(a, r));
    a->out[1][r] = -log_prob * ret;
}

/* PG_GRAD row r: out[0][r][j] = (R·scale)·(p_j − [j == a]), p the PG_LOSS probs. */
STRIX_HD static inline void strix_rl_pg_grad_row(const strix_rl_args *a, size_t r) {
    size_t at = r * a->cols, action = strix_rl_action(a, r);
    float weight = a->in[2][r] * a->scale;
    for (size_t j = 0; j < a->cols; j++) {
        float onehot = j == action ? 1.0f : 0.0f;
        a->out[0][at + j] = weight * (a->in[0][at + j] - onehot);
    }
}

/* PPO_LOSS row r: probs, ratio = e^(logπ(a) − old), loss = −min(ratio·A, clip(ratio)·A) with
 * clip(ratio) = min(max(ratio, lower), upper), and mask = 0 where the clipped branch is the
 * (constant) minimum: (A >= 0 and ratio > upper) or (A < 0 and ratio < lower); else 1. */
STRIX_HD static inline void strix_rl_ppo_loss_row(const strix_rl_args *a, size_t r) {
    size_t at = r * a->cols;
    float old = a->in[2][r], adv = a->in[3][r];
    float log_prob =
        strix_rl_log_softmax_row(a->in[0] + at, a->out[0] + at, a->cols, strix_rl_action(a, r));
    float ratio = strix_kernel_expf(log_prob - old);
    float low = ratio < a->lower ? a->lower : ratio;
    float clipped = low > a->upper ? a->upper : low;
    float plain_term = ratio * adv, clipped_term = clipped * adv;
    a->out[1][r] = -(clipped_term < plain_term ? clipped_term : plain_term);
    a->out[2][r] = ratio;
    bool frozen = (adv >= 0.0f && ratio > a->upper) || (adv < 0.0f && ratio < a->lower);
    a->out[3][r] = frozen ? 0.0f : 1.0f;
}

/* PPO_GRAD row r: out[0][r][j] = w·([j == a] − p_j), w = −(A·ratio)·mask·scale. */
STRIX_HD static inline void strix_rl_ppo_grad_row(const strix_rl_args *a, size_t r) {
    size_t at = r * a->cols, action = strix_rl_action(a, r);
    float weight = -(a->in[4][r] * a->in[2][r]) * a->in[3][r] * a->scale;
    for (size_t j = 0; j < a->cols; j++) {
        float onehot = j == action ? 1.0f : 0.0f;
        a->out[0][at + j] = weight * (onehot - a->in[0][at + j]);
    }
}

/* DQN_TARGET row r: best = argmax of the select row (strict >, from column 0: ties go to the
 * lowest index; NaN wins only as column 0, the start), out[0][r] = reward +
 * (gamma·(1 − done))·eval[r][best]. */
STRIX_HD static inline void strix_rl_dqn_target_row(const strix_rl_args *a, size_t r) {
    const float *select = a->in[0] + r * a->cols;
    size_t best = 0;
    for (size_t j = 1; j < a->cols; j++)
        if (select[j] > select[best]) best = j;
    float bootstrap = a->gamma * (1.0f - a->in[3][r]);
    a->out[0][r] = a->in[2][r] + bootstrap * a->in[1][r * a->cols + best];
}

/* POLYAK_BLEND element i: out[0][i] = tau·src[i] + (1 − tau)·dst[i]. */
STRIX_HD static inline void strix_rl_polyak_elem(const strix_rl_args *a, size_t i) {
    a->out[0][i] = a->tau * a->in[0][i] + (1.0f - a->tau) * a->in[1][i];
}

/* One row (one element for POLYAK_BLEND) of op. */
STRIX_HD static inline void strix_rl_row(strix_rl_op op, const strix_rl_args *a, size_t r) {
    switch (op) {
    case STRIX_RL_DQN_LOSS: strix_rl_dqn_loss_row(a, r); break;
    case STRIX_RL_DQN_GRAD: strix_rl_dqn_grad_row(a, r); break;
    case STRIX_RL_PG_LOSS: strix_rl_pg_loss_row(a, r); break;
    case STRIX_RL_PG_GRAD: strix_rl_pg_grad_row(a, r); break;
    case STRIX_RL_PPO_LOSS: strix_rl_ppo_loss_row(a, r); break;
    case STRIX_RL_PPO_GRAD: strix_rl_ppo_grad_row(a, r); break;
    case STRIX_RL_DQN_TARGET: strix_rl_dqn_target_row(a, r); break;
    case STRIX_RL_POLYAK_BLEND: strix_rl_polyak_elem(a, r); break;
    }
}

// ---- SAC tanh-Gaussian policy ------------------------------------------------------------------

/* One row of the tanh-Gaussian policy (Haarnoja et al. 2018, App. C): per column
 * std = e^log_std, action = tanh(mean + std·eps); returns the row's log-probability
 * Σ_j ((((−0.5·ε²) − log_std) − log(2π)/2) − log(1 − a² + stabilizer)), every term and the sum
 * (ascending from 0.0) in double, rounded to float once. Inputs of a column are read before its
 * outputs are written (action may alias mean, std_cache may alias log_std). */
STRIX_HD static inline float strix_tanh_gaussian_row_forward(const float *mean,
                                                             const float *log_std,
                                                             const float *eps, float *action,
                                                             float *std_cache, size_t cols,
                                                             float stabilizer) {
    double total = 0.0;
    for (size_t j = 0; j < cols; j++) {
        float ls = log_std[j], noise = eps[j];
        float std = strix_kernel_expf(ls);
        float act = tanhf(mean[j] + std * noise);
        std_cache[j] = std;
        action[j] = act;
        double e = (double)noise, a2 = (double)act * (double)act;
        total += ((-0.5 * e * e - (double)ls) - STRIX_HALF_LOG_2PI) -
                 log(1.0 - a2 + (double)stabilizer);
    }
    return (float)total;
}

/* Backward of one element, glp the gradient of its row's log-probability:
 * om = 1 − a²; gu = ga·om + glp·((2a·om)/(om + stabilizer)); grad_mean = gu;
 * grad_log_std = gu·std·eps − glp (eps is the caller's noise, held constant). */
STRIX_HD static inline void strix_tanh_gaussian_elem_backward(float a, float std, float eps,
                                                              float ga, float glp,
                                                              float stabilizer, float *grad_mean,
                                                              float *grad_log_std) {
    float om = 1.0f - a * a;
    float dlogp_du = (2.0f * a * om) / (om + stabilizer);
    float gu = ga * om + glp * dlogp_du;
    *grad_mean = gu;
    *grad_log_std = gu * std * eps - glp;
}

#endif
