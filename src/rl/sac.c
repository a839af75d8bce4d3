/*
 * sac.c - Soft Actor-Critic (Haarnoja et al. 2018, with the learned temperature of Haarnoja et
 * al. 2018b), as CleanRL's sac_continuous_action.py:
 *   actor "actor": obs -> h -> h -> (mean, raw log-std) per action dimension, ReLU; log-std =
 *     −5 + 3.5·(tanh(raw) + 1); action = tanh(mean + std·ε)·scale + bias (the primitives
 *     strix_tanh_gaussian_forward/backward), ε ~ N(0, 1) from the agent's stream;
 *   twin critics "qf1", "qf2": (obs, action) -> h -> h -> 1, ReLU, with Polyak-averaged targets;
 *   random actions for learning_starts steps, then every step one critic update on a batch
 *   (target r + γ(1 − terminated)·(min Q_target(s', a') − α·log π(a'|s'))), every policy_freq
 *   steps policy_freq actor updates (mean of α·log π − min Q) each followed by a temperature
 *   update (mean of −α·(log π + target entropy), target entropy −action_dim), then the targets
 *   blended with tau every target_freq steps.
 * log π is the density of the scaled action: the primitive's log-probability minus
 * action_dim·log(scale). Without autotune the temperature stays cfg.alpha; with it, it starts
 * at 1 (log α = 0), as CleanRL.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rl/rl_internal.h"

#define LOG_STD_MIN (-5.0f)
#define LOG_STD_MAX 2.0f
#define STABILIZER 1e-6f

typedef struct sac_priv {
    float *obs, *actions, *rewards, *next_obs, *terminated; /* the sampled batch */
    float *head, *mean, *log_std, *raw_tanh, *eps, *act, *std, *logp; /* the policy's draw */
    float *qin, *q1, *q2, *target, *dq1, *dq2, *dhead, *ga, *glp, *gmean, *glog, *dx;
} sac_priv;

enum { ACTOR, QF1, QF2, QF1_T, QF2_T };
enum { B_ACTOR, B_CRITIC, B_TARGET, B_ALPHA };

static strix_status sac_build(strix_agent *a) {
    const strix_env_spec *s = a->spec;
    int od = s->obs_dim, d = s->action_dim;
    rl_block *actor = rl_block_add(a, "actor");
    rl_block *critic = rl_block_add(a, "critic");
    rl_block *target = rl_block_add(a, "critic_target");
    rl_block *alpha = rl_block_add(a, "alpha");
    STRIX_TRY(rl_net_add(a, actor, "actor", od, 2 * d, STRIX_ACT_RELU, NULL));
    STRIX_TRY(rl_net_add(a, critic, "qf1", od + d, 1, STRIX_ACT_RELU, NULL));
    STRIX_TRY(rl_net_add(a, critic, "qf2", od + d, 1, STRIX_ACT_RELU, NULL));
    STRIX_TRY(rl_net_add(a, target, "qf1", od + d, 1, STRIX_ACT_RELU, NULL));
    STRIX_TRY(rl_net_add(a, target, "qf2", od + d, 1, STRIX_ACT_RELU, NULL));
    int64_t one = 1;
    if (!strix_params_add(&alpha->ps, "log_alpha", 1, &one, STRIX_INIT_ZEROS, 0.0f, false))
        return strix_error(STRIX_ERR_ALLOC, "out of memory");
    int64_t cap = a->cfg.buffer_size < a->cfg.total_steps ? a->cfg.buffer_size
                                                          : a->cfg.total_steps;
    STRIX_TRY(strix_replay_init(&a->replay, cap, od, d));
    sac_priv *p = calloc(1, sizeof *p);
    if (!p) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    a->priv = p;
    size_t B = (size_t)a->cfg.batch_size;
    struct { float **ptr; size_t cols; } arrays[] = {
        {&p->obs, (size_t)od}, {&p->next_obs, (size_t)od}, {&p->actions, (size_t)d},
        {&p->rewards, 1}, {&p->terminated, 1}, {&p->head, 2 * (size_t)d},
        {&p->mean, (size_t)d}, {&p->log_std, (size_t)d}, {&p->raw_tanh, (size_t)d},
        {&p->eps, (size_t)d}, {&p->act, (size_t)d}, {&p->std, (size_t)d}, {&p->logp, 1},
        {&p->qin, (size_t)(od + d)}, {&p->q1, 1}, {&p->q2, 1}, {&p->target, 1},
        {&p->dq1, 1}, {&p->dq2, 1}, {&p->dhead, 2 * (size_t)d}, {&p->ga, (size_t)d},
        {&p->glp, 1}, {&p->gmean, (size_t)d}, {&p->glog, (size_t)d},
        {&p->dx, (size_t)(od + d)}};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++) {
        *arrays[k].ptr = malloc(sizeof(float) * B * arrays[k].cols);
        if (!*arrays[k].ptr) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    }
    return STRIX_OK;
}

static void sac_free(strix_agent *a) {
    sac_priv *p = a->priv;
    if (!p) return;
    float *all[] = {p->obs, p->actions, p->rewards, p->next_obs, p->terminated, p->head,
                    p->mean, p->log_std, p->raw_tanh, p->eps, p->act, p->std, p->logp, p->qin,
                    p->q1, p->q2, p->target, p->dq1, p->dq2, p->dhead, p->ga, p->glp,
                    p->gmean, p->glog, p->dx};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++) free(all[k]);
    free(p);
    a->priv = NULL;
}

static strix_status sac_init(strix_agent *a) {
    const strix_agent_config *c = &a->cfg;
    strix_adamw_config ac = strix_adamw_defaults(0.0f);
    ac.eps = c->adam_eps;
    STRIX_TRY(strix_optimizer_adam(&a->blocks[B_ACTOR].ps, &ac, &a->blocks[B_ACTOR].opt));
    STRIX_TRY(strix_optimizer_adam(&a->blocks[B_CRITIC].ps, &ac, &a->blocks[B_CRITIC].opt));
    STRIX_TRY(strix_optimizer_adam(&a->blocks[B_ALPHA].ps, &ac, &a->blocks[B_ALPHA].opt));
    if (!c->autotune) { /* log α fixed at log(alpha) */
        float la = logf(c->alpha);
        STRIX_TRY(strix_copy(a->be, a->blocks[B_ALPHA].ps.data, &la, sizeof la,
                             STRIX_COPY_H2D));
    }
    return rl_block_blend(a, &a->blocks[B_TARGET], &a->blocks[B_CRITIC], 1.0f);
}

static float action_scale(const strix_env_spec *s) {
    return 0.5f * (s->action_high - s->action_low);
}
static float action_bias(const strix_env_spec *s) {
    return 0.5f * (s->action_high + s->action_low);
}

static strix_status alpha_of(strix_agent *a, float *alpha) {
    float la = 0.0f;
    STRIX_TRY(strix_copy(a->be, &la, a->blocks[B_ALPHA].ps.data, sizeof la, STRIX_COPY_D2H));
    *alpha = expf(la);
    return STRIX_OK;
}

/* The policy at obs (rows): head, mean, log-std (squashed), a draw (rng; NULL: ε = 0), the
 * tanh action p->act, its std and log π of the scaled action (p->logp). */
static strix_status policy(strix_agent *a, const float *obs, int rows, strix_rng *rng) {
    sac_priv *p = a->priv;
    int d = a->spec->action_dim;
    STRIX_TRY(rl_net_forward(a, &a->nets[ACTOR], obs, rows, p->head));
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < d; j++) {
            size_t k = (size_t)r * (size_t)d + (size_t)j;
            float t = tanhf(p->head[(size_t)r * 2 * (size_t)d + (size_t)d + (size_t)j]);
            p->mean[k] = p->head[(size_t)r * 2 * (size_t)d + (size_t)j];
            p->raw_tanh[k] = t;
            p->log_std[k] = LOG_STD_MIN + 0.5f * (LOG_STD_MAX - LOG_STD_MIN) * (t + 1.0f);
            p->eps[k] = rng ? (float)strix_rng_normal(rng) : 0.0f;
        }
    STRIX_TRY(strix_tanh_gaussian_forward(a->host, p->mean, p->log_std, p->eps, p->act, p->std,
                                          p->logp, (size_t)rows, (size_t)d, STABILIZER));
    float shift = (float)d * logf(action_scale(a->spec));
    for (int r = 0; r < rows; r++) p->logp[r] -= shift;
    return STRIX_OK;
}

/* p->qin (rows, od + d) = obs ⊕ (tanh action·scale + bias), or ⊕ env_actions when given. */
static void q_input(strix_agent *a, const float *obs, const float *tanh_act,
                    const float *env_actions, int rows) {
    sac_priv *p = a->priv;
    int od = a->spec->obs_dim, d = a->spec->action_dim, w = od + d;
    float scale = action_scale(a->spec), bias = action_bias(a->spec);
    for (int r = 0; r < rows; r++) {
        float *row = p->qin + (size_t)r * (size_t)w;
        memcpy(row, obs + (size_t)r * (size_t)od, sizeof(float) * (size_t)od);
        for (int j = 0; j < d; j++)
            row[od + j] = env_actions ? env_actions[(size_t)r * (size_t)d + (size_t)j]
                                      : tanh_act[(size_t)r * (size_t)d + (size_t)j] * scale + bias;
    }
}

static strix_status sac_act(strix_agent *a, const float *obs, bool deterministic,
                            strix_rng *rng, float *action) {
    sac_priv *p = a->priv;
    STRIX_TRY(policy(a, obs, 1, deterministic ? NULL : rng));
    float scale = action_scale(a->spec), bias = action_bias(a->spec);
    for (int j = 0; j < a->spec->action_dim; j++) action[j] = p->act[j] * scale + bias;
    return STRIX_OK;
}

strix_status rl_sac_critic_loss(strix_agent *a, float alpha, double *loss_out) {
    sac_priv *p = a->priv;
    const strix_agent_config *c = &a->cfg;
    int B = c->batch_size;
    STRIX_TRY(policy(a, p->next_obs, B, &a->rng));
    q_input(a, p->next_obs, p->act, NULL, B);
    STRIX_TRY(rl_net_forward(a, &a->nets[QF1_T], p->qin, B, p->q1));
    STRIX_TRY(rl_net_forward(a, &a->nets[QF2_T], p->qin, B, p->q2));
    for (int r = 0; r < B; r++) {
        float m = p->q1[r] < p->q2[r] ? p->q1[r] : p->q2[r];
        p->target[r] = p->rewards[r] + (1.0f - p->terminated[r]) * c->gamma *
                                           (m - alpha * p->logp[r]);
    }
    q_input(a, p->obs, NULL, p->actions, B);
    STRIX_TRY(rl_net_forward(a, &a->nets[QF1], p->qin, B, p->q1));
    STRIX_TRY(rl_net_forward(a, &a->nets[QF2], p->qin, B, p->q2));
    double loss = 0.0;
    for (int r = 0; r < B; r++) {
        float e1 = p->q1[r] - p->target[r], e2 = p->q2[r] - p->target[r];
        loss += (double)e1 * e1 + (double)e2 * e2;
        p->dq1[r] = 2.0f * e1 / (float)B;
        p->dq2[r] = 2.0f * e2 / (float)B;
    }
    loss /= B;
    if (!isfinite(loss)) return strix_error(STRIX_ERR_NUMERIC, "the SAC critic loss is not finite");
    STRIX_TRY(rl_block_zero_grad(&a->blocks[B_CRITIC]));
    STRIX_TRY(rl_net_backward(a, &a->nets[QF1], p->dq1, B, NULL));
    STRIX_TRY(rl_net_backward(a, &a->nets[QF2], p->dq2, B, NULL));
    *loss_out = loss;
    return STRIX_OK;
}

static strix_status critic_update(strix_agent *a, float alpha) {
    double loss = 0.0;
    STRIX_TRY(rl_sac_critic_loss(a, alpha, &loss));
    STRIX_TRY(rl_block_step(&a->blocks[B_CRITIC], a->cfg.max_grad_norm, a->cfg.lr));
    a->last_loss = loss;
    a->updates++;
    return STRIX_OK;
}

/* Adds the action columns of the Q network's input gradient (device) into p->ga. */
static strix_status add_action_grad(strix_agent *a, const strix_tensor *dx, int B) {
    sac_priv *p = a->priv;
    int od = a->spec->obs_dim, d = a->spec->action_dim, w = od + d;
    STRIX_TRY(strix_copy(a->be, p->dx, dx->data, sizeof(float) * (size_t)B * (size_t)w,
                         STRIX_COPY_D2H));
    float scale = action_scale(a->spec);
    for (int r = 0; r < B; r++)
        for (int j = 0; j < d; j++)
            p->ga[(size_t)r * (size_t)d + (size_t)j] += p->dx[(size_t)r * (size_t)w + (size_t)(od + j)] * scale;
    return STRIX_OK;
}

strix_status rl_sac_actor_loss(strix_agent *a, float alpha, double *loss_out) {
    sac_priv *p = a->priv;
    const strix_agent_config *c = &a->cfg;
    int B = c->batch_size, d = a->spec->action_dim;
    float *alpha_p = &alpha;
    STRIX_TRY(policy(a, p->obs, B, &a->rng));
    q_input(a, p->obs, p->act, NULL, B);
    STRIX_TRY(rl_net_forward(a, &a->nets[QF1], p->qin, B, p->q1));
    STRIX_TRY(rl_net_forward(a, &a->nets[QF2], p->qin, B, p->q2));
    double loss = 0.0;
    for (int r = 0; r < B; r++) { /* d/dQ of mean(α·log π − min Q) goes to the smaller Q */
        bool first = p->q1[r] <= p->q2[r];
        loss += (double)*alpha_p * p->logp[r] - (first ? p->q1[r] : p->q2[r]);
        p->dq1[r] = first ? -1.0f / (float)B : 0.0f;
        p->dq2[r] = first ? 0.0f : -1.0f / (float)B;
        p->glp[r] = *alpha_p / (float)B;
    }
    loss /= B;
    if (!isfinite(loss)) return strix_error(STRIX_ERR_NUMERIC, "the SAC actor loss is not finite");
    memset(p->ga, 0, sizeof(float) * (size_t)B * (size_t)d);
    const strix_tensor *dx = NULL;
    STRIX_TRY(rl_net_backward(a, &a->nets[QF1], p->dq1, B, &dx));
    STRIX_TRY(add_action_grad(a, dx, B));
    STRIX_TRY(rl_net_backward(a, &a->nets[QF2], p->dq2, B, &dx));
    STRIX_TRY(add_action_grad(a, dx, B));
    STRIX_TRY(strix_tanh_gaussian_backward(a->host, p->act, p->std, p->eps, p->ga, p->glp,
                                           p->gmean, p->glog, (size_t)B, (size_t)d,
                                           STABILIZER));
    for (int r = 0; r < B; r++)
        for (int j = 0; j < d; j++) {
            size_t k = (size_t)r * (size_t)d + (size_t)j, h = (size_t)r * 2 * (size_t)d;
            float t = p->raw_tanh[k];
            p->dhead[h + (size_t)j] = p->gmean[k];
            p->dhead[h + (size_t)d + (size_t)j] =
                p->glog[k] * 0.5f * (LOG_STD_MAX - LOG_STD_MIN) * (1.0f - t * t);
        }
    STRIX_TRY(rl_block_zero_grad(&a->blocks[B_ACTOR]));
    /* the actor's forward of this update was policy() above */
    STRIX_TRY(rl_net_backward(a, &a->nets[ACTOR], p->dhead, B, NULL));
    *loss_out = loss;
    return STRIX_OK;
}

static strix_status actor_update(strix_agent *a, float *alpha) {
    sac_priv *p = a->priv;
    const strix_agent_config *c = &a->cfg;
    int B = c->batch_size, d = a->spec->action_dim;
    double loss = 0.0;
    STRIX_TRY(rl_sac_actor_loss(a, *alpha, &loss));
    STRIX_TRY(rl_block_step(&a->blocks[B_ACTOR], c->max_grad_norm, c->policy_lr));
    if (c->autotune) { /* d/dlog α of mean(−α·(log π + H̄)) = −α·mean(log π + H̄) */
        STRIX_TRY(policy(a, p->obs, B, &a->rng));
        double m = 0.0;
        for (int r = 0; r < B; r++) m += (double)p->logp[r] - (double)d;
        m /= B;
        float g = (float)(-(double)*alpha * m);
        rl_block *lb = &a->blocks[B_ALPHA];
        STRIX_TRY(strix_copy(a->be, lb->ps.grad, &g, sizeof g, STRIX_COPY_H2D));
        STRIX_TRY(strix_optimizer_step(lb->opt, c->lr));
        STRIX_TRY(alpha_of(a, alpha));
    }
    return STRIX_OK;
}

static strix_status sac_iterate(strix_agent *a) {
    sac_priv *p = a->priv;
    const strix_agent_config *c = &a->cfg;
    int od = a->spec->obs_dim, d = a->spec->action_dim;
    int64_t g = a->steps; /* CleanRL's global_step of this step */
    float obs[STRIX_ENV_MAX_OBS], next[STRIX_ENV_MAX_OBS], action[STRIX_ENV_MAX_OBS], reward;
    memcpy(obs, a->obs, sizeof(float) * (size_t)od);
    if (g < c->learning_starts) {
        rl_random_action(a, &a->rng, action);
    } else {
        STRIX_TRY(policy(a, obs, 1, &a->rng));
        float scale = action_scale(a->spec), bias = action_bias(a->spec);
        for (int j = 0; j < d; j++) action[j] = p->act[j] * scale + bias;
    }
    bool term = false, ended = false;
    a->steps++;
    STRIX_TRY(rl_env_step(a, 0, action, next, &reward, &term, &ended));
    strix_replay_add(&a->replay, obs, action, reward, next, term);
    if (g > c->learning_starts) {
        float alpha = 0.0f;
        STRIX_TRY(alpha_of(a, &alpha));
        strix_replay_sample(&a->replay, &a->rng, c->batch_size, p->obs, p->actions, p->rewards,
                            p->next_obs, p->terminated);
        STRIX_TRY(critic_update(a, alpha));
        if (g % c->policy_freq == 0)
            for (int k = 0; k < c->policy_freq; k++) STRIX_TRY(actor_update(a, &alpha));
        if (g % c->target_freq == 0)
            STRIX_TRY(rl_block_blend(a, &a->blocks[B_TARGET], &a->blocks[B_CRITIC], c->tau));
    }
    return STRIX_OK;
}

const rl_algo_i rl_sac_algo = {
    .build = sac_build, .init = sac_init, .iterate = sac_iterate, .act = sac_act,
    .free = sac_free};
