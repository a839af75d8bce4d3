/*
 * dqn.c - DQN (Mnih et al. 2015) and Double DQN (van Hasselt et al. 2016), as CleanRL's dqn.py:
 * one environment, ε-greedy with ε linear from eps_start to eps_end over eps_fraction of the
 * run, a uniform replay buffer, after learning_starts steps one update every train_freq steps on
 * a batch: target r + γ(1 − terminated)·Q_target(s', argmax), mean squared error, Adam; the
 * target network copied (or Polyak-blended with tau < 1) every target_freq steps.
 * Networks: "network.0/2/4" (CleanRL's QNetwork names), obs -> hidden -> hidden -> actions, ReLU.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rl/rl_internal.h"

typedef struct dqn_priv {
    float *obs, *actions, *rewards, *next_obs, *terminated; /* the sampled batch */
    float *q_next, *q_select, *q, *target, *loss, *grad;    /* (B, n) or (B) */
} dqn_priv;

static strix_status dqn_build(strix_agent *a) {
    const strix_env_spec *s = a->spec;
    rl_block *q = rl_block_add(a, "q");
    rl_block *t = rl_block_add(a, "q_target");
    STRIX_TRY(rl_net_add(a, q, "network", s->obs_dim, s->n_actions, STRIX_ACT_RELU, NULL));
    STRIX_TRY(rl_net_add(a, t, "network", s->obs_dim, s->n_actions, STRIX_ACT_RELU, NULL));
    int64_t cap = a->cfg.buffer_size < a->cfg.total_steps ? a->cfg.buffer_size
                                                          : a->cfg.total_steps;
    STRIX_TRY(strix_replay_init(&a->replay, cap, s->obs_dim, 1));
    size_t B = (size_t)a->cfg.batch_size, n = (size_t)s->n_actions, od = (size_t)s->obs_dim;
    dqn_priv *p = calloc(1, sizeof *p);
    if (!p) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    a->priv = p;
    p->obs = malloc(sizeof(float) * B * od);
    p->next_obs = malloc(sizeof(float) * B * od);
    p->actions = malloc(sizeof(float) * B);
    p->rewards = malloc(sizeof(float) * B);
    p->terminated = malloc(sizeof(float) * B);
    p->q_next = malloc(sizeof(float) * B * n);
    p->q_select = malloc(sizeof(float) * B * n);
    p->q = malloc(sizeof(float) * B * n);
    p->target = malloc(sizeof(float) * B);
    p->loss = malloc(sizeof(float) * B);
    p->grad = malloc(sizeof(float) * B * n);
    if (!p->obs || !p->next_obs || !p->actions || !p->rewards || !p->terminated || !p->q_next ||
        !p->q_select || !p->q || !p->target || !p->loss || !p->grad)
        return strix_error(STRIX_ERR_ALLOC, "out of memory");
    return STRIX_OK;
}

static strix_status dqn_init(strix_agent *a) {
    strix_adamw_config ac = strix_adamw_defaults(0.0f);
    ac.eps = a->cfg.adam_eps;
    STRIX_TRY(strix_optimizer_adam(&a->blocks[0].ps, &ac, &a->blocks[0].opt));
    return rl_block_blend(a, &a->blocks[1], &a->blocks[0], 1.0f); /* target = online */
}

static void dqn_free(strix_agent *a) {
    dqn_priv *p = a->priv;
    if (!p) return;
    free(p->obs);
    free(p->next_obs);
    free(p->actions);
    free(p->rewards);
    free(p->terminated);
    free(p->q_next);
    free(p->q_select);
    free(p->q);
    free(p->target);
    free(p->loss);
    free(p->grad);
    free(p);
    a->priv = NULL;
}

/* CleanRL's linear_schedule: start + (end − start)·t/duration, held at end afterwards. */
static double epsilon_at(const strix_agent_config *c, int64_t t) {
    double duration = (double)c->eps_fraction * (double)c->total_steps;
    double slope = duration > 0.0 ? ((double)c->eps_end - c->eps_start) / duration : -INFINITY;
    double e = slope * (double)t + c->eps_start;
    return e > c->eps_end ? e : c->eps_end;
}

static strix_status dqn_act(strix_agent *a, const float *obs, bool deterministic,
                            strix_rng *rng, float *action) {
    if (!deterministic && strix_rng_uniform(rng) < a->cfg.eps_end) {
        rl_random_action(a, rng, action);
        return STRIX_OK;
    }
    float q[64];
    STRIX_TRY(rl_net_forward(a, &a->nets[0], obs, 1, q));
    action[0] = (float)rl_argmax(q, a->spec->n_actions);
    return STRIX_OK;
}

/* One update on a sampled batch. */
static strix_status dqn_train(strix_agent *a) {
    dqn_priv *p = a->priv;
    const strix_agent_config *c = &a->cfg;
    int B = c->batch_size, n = a->spec->n_actions;
    strix_replay_sample(&a->replay, &a->rng, B, p->obs, p->actions, p->rewards, p->next_obs,
                        p->terminated);
    STRIX_TRY(rl_net_forward(a, &a->nets[1], p->next_obs, B, p->q_next));
    const float *select = p->q_next;
    if (c->double_q) { /* the online network picks the action, the target one values it */
        STRIX_TRY(rl_net_forward(a, &a->nets[0], p->next_obs, B, p->q_select));
        select = p->q_select;
    }
    strix_rl_args t = {.in = {select, p->q_next, p->rewards, p->terminated},
                       .out = {p->target}, .rows = (size_t)B, .cols = (size_t)n,
                       .gamma = c->gamma};
    STRIX_TRY(strix_rl_rows(a->host, STRIX_RL_DQN_TARGET, &t));
    STRIX_TRY(rl_net_forward(a, &a->nets[0], p->obs, B, p->q));
    strix_rl_args l = {.in = {p->q, p->actions, p->target}, .out = {p->loss},
                       .rows = (size_t)B, .cols = (size_t)n, .scale = 2.0f / (float)B};
    STRIX_TRY(strix_rl_rows(a->host, STRIX_RL_DQN_LOSS, &l));
    double loss = 0.0;
    for (int i = 0; i < B; i++) loss += p->loss[i];
    loss /= B;
    if (!isfinite(loss)) return strix_error(STRIX_ERR_NUMERIC, "the DQN loss is not finite");
    l.out[0] = p->grad;
    STRIX_TRY(strix_rl_rows(a->host, STRIX_RL_DQN_GRAD, &l));
    STRIX_TRY(rl_block_zero_grad(&a->blocks[0]));
    STRIX_TRY(rl_net_backward(a, &a->nets[0], p->grad, B, NULL));
    STRIX_TRY(rl_block_step(&a->blocks[0], c->max_grad_norm, c->lr));
    a->updates++;
    a->last_loss = loss;
    return STRIX_OK;
}

static strix_status dqn_iterate(strix_agent *a) {
    const strix_agent_config *c = &a->cfg;
    int od = a->spec->obs_dim;
    int64_t g = a->steps; /* CleanRL's global_step of this step */
    float obs[STRIX_ENV_MAX_OBS], next[STRIX_ENV_MAX_OBS], action[1], reward;
    memcpy(obs, a->obs, sizeof(float) * (size_t)od);
    if (strix_rng_uniform(&a->rng) < epsilon_at(c, g)) {
        rl_random_action(a, &a->rng, action);
    } else {
        float q[64];
        STRIX_TRY(rl_net_forward(a, &a->nets[0], obs, 1, q));
        action[0] = (float)rl_argmax(q, a->spec->n_actions);
    }
    bool term = false, ended = false;
    a->steps++;
    STRIX_TRY(rl_env_step(a, 0, action, next, &reward, &term, &ended));
    strix_replay_add(&a->replay, obs, action, reward, next, term);
    if (g > c->learning_starts) {
        if (g % c->train_freq == 0) STRIX_TRY(dqn_train(a));
        if (g % c->target_freq == 0)
            STRIX_TRY(rl_block_blend(a, &a->blocks[1], &a->blocks[0], c->tau));
    }
    return STRIX_OK;
}

const rl_algo_i rl_dqn_algo = {
    .build = dqn_build, .init = dqn_init, .iterate = dqn_iterate, .act = dqn_act,
    .free = dqn_free};
