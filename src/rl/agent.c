/*
 * agent.c - what every agent shares: names, CleanRL's default hyper-parameters and their checks,
 * building an agent, the environments' stepping and the episode history, acting, evaluation and
 * the explanation of an action. The algorithms are dqn.c, pg.c (REINFORCE, A2C, PPO) and sac.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rl/rl_internal.h"

static const char *const algo_names[] = {"dqn", "reinforce", "a2c", "ppo", "sac"};

const char *strix_rl_algo_name(strix_rl_algo algo) {
    return (unsigned)algo < 5 ? algo_names[algo] : "?";
}

strix_status strix_rl_algo_of(const char *name, strix_rl_algo *out) {
    for (int i = 0; i < 5; i++)
        if (name && strcmp(name, algo_names[i]) == 0) {
            *out = (strix_rl_algo)i;
            return STRIX_OK;
        }
    return strix_error(STRIX_ERR_ARG, "unknown algorithm '%s' (dqn, reinforce, a2c, ppo, sac)",
                       name ? name : "");
}

static bool discrete_algo(strix_rl_algo algo) { return algo != STRIX_ALGO_SAC; }

static strix_status check_fit(strix_rl_algo algo, strix_env_kind env) {
    const strix_env_spec *s = strix_env_spec_of(env);
    if (discrete_algo(algo) != (s->n_actions > 0))
        return strix_error(STRIX_ERR_ARG, "%s needs %s actions; %s has %s ones",
                           strix_rl_algo_name(algo), discrete_algo(algo) ? "discrete"
                                                                         : "continuous",
                           s->name, s->n_actions > 0 ? "discrete" : "continuous");
    return STRIX_OK;
}

strix_status strix_agent_defaults(strix_rl_algo algo, strix_env_kind env, uint64_t seed,
                                  strix_agent_config *out) {
    if ((unsigned)algo > STRIX_ALGO_SAC)
        return strix_error(STRIX_ERR_ARG, "unknown algorithm %d", (int)algo);
    STRIX_TRY(check_fit(algo, env));
    strix_agent_config c = {.algo = algo, .env = env, .seed = seed, .total_steps = 500000,
                            .gamma = 0.99f, .adam_eps = 1e-5f};
    switch (algo) {
    case STRIX_ALGO_PPO: /* CleanRL ppo.py */
        c.hidden[0] = c.hidden[1] = 64;
        c.lr = 2.5e-4f;
        c.anneal_lr = true;
        c.n_envs = 4;
        c.n_steps = 128;
        c.gae_lambda = 0.95f;
        c.epochs = 4;
        c.minibatches = 4;
        c.clip_coef = 0.2f;
        c.clip_vloss = true;
        c.norm_adv = true;
        c.ent_coef = 0.01f;
        c.vf_coef = 0.5f;
        c.max_grad_norm = 0.5f;
        break;
    case STRIX_ALGO_A2C: /* Stable-Baselines3's A2C defaults (rl-zoo: 8 envs on CartPole), Adam */
        c.hidden[0] = c.hidden[1] = 64;
        c.lr = 7e-4f;
        c.n_envs = 8;
        c.n_steps = 5;
        c.gae_lambda = 1.0f;
        c.epochs = 1;
        c.minibatches = 1;
        c.vf_coef = 0.5f;
        c.max_grad_norm = 0.5f;
        break;
    case STRIX_ALGO_REINFORCE: /* ppo.py's networks; one whole episode per environment */
        c.hidden[0] = c.hidden[1] = 64;
        c.lr = 1e-3f;
        c.n_envs = 4;
        c.n_steps = 1;
        c.gae_lambda = 1.0f;
        c.epochs = 1;
        c.minibatches = 1;
        c.norm_adv = true;
        c.vf_coef = 0.5f;
        c.max_grad_norm = 0.5f;
        break;
    case STRIX_ALGO_DQN: /* CleanRL dqn.py */
        c.hidden[0] = 120;
        c.hidden[1] = 84;
        c.lr = 2.5e-4f;
        c.adam_eps = 1e-8f;
        c.n_envs = 1;
        c.buffer_size = 10000;
        c.batch_size = 128;
        c.learning_starts = 10000;
        c.train_freq = 10;
        c.target_freq = 500;
        c.tau = 1.0f;
        c.eps_start = 1.0f;
        c.eps_end = 0.05f;
        c.eps_fraction = 0.5f;
        break;
    case STRIX_ALGO_SAC: /* CleanRL sac_continuous_action.py */
        c.total_steps = 50000;
        c.hidden[0] = c.hidden[1] = 256;
        c.lr = 1e-3f;
        c.policy_lr = 3e-4f;
        c.adam_eps = 1e-8f;
        c.n_envs = 1;
        c.buffer_size = 1000000;
        c.batch_size = 256;
        c.learning_starts = 5000;
        c.target_freq = 1;
        c.tau = 0.005f;
        c.policy_freq = 2;
        c.alpha = 0.2f;
        c.autotune = true;
        break;
    }
    *out = c;
    return STRIX_OK;
}

#define BAD(cond, ...)                                                                         \
    do {                                                                                       \
        if (cond) return strix_error(STRIX_ERR_ARG, __VA_ARGS__);                              \
    } while (0)

static bool pos_finite(float x) { return isfinite(x) && x > 0.0f; }
static bool unit(float x) { return isfinite(x) && x >= 0.0f && x <= 1.0f; }

strix_status strix_agent_config_check(const strix_agent_config *c) {
    BAD((unsigned)c->algo > STRIX_ALGO_SAC, "unknown algorithm %d", (int)c->algo);
    BAD((unsigned)c->env > STRIX_ENV_PENDULUM, "unknown environment %d", (int)c->env);
    STRIX_TRY(check_fit(c->algo, c->env));
    BAD(c->total_steps <= 0, "steps must be positive (got %lld)", (long long)c->total_steps);
    BAD(c->hidden[0] < 1 || c->hidden[1] < 1 || c->hidden[0] > 4096 || c->hidden[1] > 4096,
        "hidden sizes must be in 1..4096 (got %d, %d)", c->hidden[0], c->hidden[1]);
    BAD(!pos_finite(c->lr), "lr must be a positive number");
    BAD(!unit(c->gamma), "gamma must be in [0, 1]");
    BAD(!pos_finite(c->adam_eps), "adam_eps must be positive");
    BAD(!isfinite(c->max_grad_norm) || c->max_grad_norm < 0.0f, "max_grad_norm must be >= 0");
    BAD(c->n_envs < 1 || c->n_envs > 1024, "envs must be in 1..1024 (got %d)", c->n_envs);
    if (c->algo == STRIX_ALGO_DQN || c->algo == STRIX_ALGO_SAC) {
        BAD(c->n_envs != 1, "%s steps one environment", strix_rl_algo_name(c->algo));
        BAD(c->buffer_size < 1 || c->buffer_size > ((int64_t)1 << 28),
            "buffer size must be in 1..2^28");
        BAD(c->batch_size < 1 || c->batch_size > 65536, "batch size must be in 1..65536");
        BAD(c->target_freq < 1, "target_freq must be >= 1");
        BAD(!(c->tau > 0.0f && c->tau <= 1.0f), "tau must be in (0, 1]");
        /* updates come at steps g > learning_starts (0-based, g < total_steps), DQN's only
         * where g is a multiple of train_freq */
        int64_t every = c->algo == STRIX_ALGO_DQN && c->train_freq > 0 ? c->train_freq : 1;
        BAD(c->learning_starts < 0 || c->learning_starts > c->total_steps ||
                (c->learning_starts / every + 1) * every > c->total_steps - 1,
            "learning_starts (%lld) leaves no update within the run's %lld steps",
            (long long)c->learning_starts, (long long)c->total_steps);
    }
    if (c->algo == STRIX_ALGO_DQN) {
        BAD(c->train_freq < 1, "train_freq must be >= 1");
        BAD(!unit(c->eps_start) || !unit(c->eps_end) || !unit(c->eps_fraction),
            "epsilons and their fraction must be in [0, 1]");
    } else if (c->algo == STRIX_ALGO_SAC) {
        BAD(!pos_finite(c->policy_lr), "policy_lr must be a positive number");
        BAD(c->policy_freq < 1, "policy_freq must be >= 1");
        BAD(!pos_finite(c->alpha), "alpha must be a positive number");
    } else {
        BAD(c->n_steps < 1 || c->n_steps > 65536, "n_steps must be in 1..65536");
        BAD(!unit(c->gae_lambda), "gae_lambda must be in [0, 1]");
        BAD(c->epochs < 1 || c->minibatches < 1, "epochs and minibatches must be >= 1");
        if (c->algo != STRIX_ALGO_REINFORCE) {
            BAD((c->n_envs * c->n_steps) % c->minibatches != 0,
                "minibatches (%d) must divide envs x n_steps (%d)", c->minibatches,
                c->n_envs * c->n_steps);
            BAD((int64_t)c->n_envs * c->n_steps > c->total_steps,
                "one rollout (envs %d x n_steps %d) is longer than the run's %lld steps",
                c->n_envs, c->n_steps, (long long)c->total_steps);
        }
        BAD(!unit(c->clip_coef), "clip_coef must be in [0, 1]");
        BAD(!isfinite(c->ent_coef) || !isfinite(c->vf_coef) || c->vf_coef < 0.0f,
            "ent_coef and vf_coef must be numbers (vf_coef >= 0)");
    }
    return STRIX_OK;
}

// ---- building and freeing ----------------------------------------------------------------------

static const rl_algo_i *algo_of(strix_rl_algo algo) {
    switch (algo) {
    case STRIX_ALGO_DQN: return &rl_dqn_algo;
    case STRIX_ALGO_SAC: return &rl_sac_algo;
    default: return &rl_pg_algo;
    }
}

strix_status strix_agent_new(strix_backend *be, const strix_agent_config *cfg,
                             strix_agent **out) {
    *out = NULL;
    STRIX_TRY(strix_agent_config_check(cfg));
    strix_agent *a = calloc(1, sizeof *a);
    if (!a) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    a->cfg = *cfg;
    a->spec = strix_env_spec_of(cfg->env);
    a->algo = algo_of(cfg->algo);
    a->be = be;
    a->last_loss = NAN;
    strix_rng_seed(&a->rng, strix_seed_derive(cfg->seed, 1));
    strix_status st = strix_backend_init("cpu", &a->host);
    a->n_envs = cfg->n_envs;
    if (st == STRIX_OK) {
        a->envs = calloc((size_t)a->n_envs, sizeof *a->envs);
        a->obs = calloc((size_t)a->n_envs * (size_t)a->spec->obs_dim, sizeof(float));
        a->ep_return = calloc((size_t)a->n_envs, sizeof(double));
        a->ep_length = calloc((size_t)a->n_envs, sizeof(int));
        if (!a->envs || !a->obs || !a->ep_return || !a->ep_length)
            st = strix_error(STRIX_ERR_ALLOC, "out of memory");
    }
    if (st == STRIX_OK) st = a->algo->build(a);
    for (int b = 0; b < a->n_blocks && st == STRIX_OK; b++) {
        rl_block *bl = &a->blocks[b];
        st = strix_params_alloc(&bl->ps);
        if (st == STRIX_OK) st = strix_params_init(&bl->ps, strix_seed_derive(cfg->seed, 100 + b));
    }
    if (st == STRIX_OK) st = a->algo->init(a);
    for (int i = 0; i < a->n_envs && st == STRIX_OK; i++) {
        strix_env_init(&a->envs[i], cfg->env, strix_seed_derive(cfg->seed, 1000 + (uint64_t)i));
        strix_env_reset(&a->envs[i], a->obs + (size_t)i * (size_t)a->spec->obs_dim);
    }
    if (st != STRIX_OK) {
        strix_agent_free(a);
        return st;
    }
    *out = a;
    return STRIX_OK;
}

void strix_agent_free(strix_agent *a) {
    if (!a) return;
    if (a->algo && a->algo->free) a->algo->free(a);
    for (int i = 0; i < a->n_nets; i++) {
        strix_module_free(&a->nets[i].seq->base);
        strix_tensor_free(&a->nets[i].x);
        strix_tensor_free(&a->nets[i].dy);
    }
    for (int b = 0; b < a->n_blocks; b++) {
        strix_optimizer_free(a->blocks[b].opt);
        strix_params_free(&a->blocks[b].ps);
    }
    strix_replay_free(&a->replay);
    strix_backend_free(a->host);
    free(a->envs);
    free(a->obs);
    free(a->ep_return);
    free(a->ep_length);
    free(a->episodes);
    free(a);
}

const strix_agent_config *strix_agent_config_of(const strix_agent *a) { return &a->cfg; }

// ---- the run -----------------------------------------------------------------------------------

strix_status strix_agent_iterate(strix_agent *a) {
    if (strix_agent_done(a)) return STRIX_OK;
    STRIX_TRY(a->algo->iterate(a));
    a->iterations++;
    return STRIX_OK;
}

bool strix_agent_done(const strix_agent *a) { return a->steps >= a->cfg.total_steps; }

strix_rl_progress strix_agent_progress(const strix_agent *a) {
    strix_rl_progress p = {.steps = a->steps, .updates = a->updates,
                           .episodes = a->n_episodes, .mean_return = NAN,
                           .last_loss = a->last_loss};
    if (a->n_episodes > 0) {
        int64_t from = a->n_episodes > RL_WINDOW ? a->n_episodes - RL_WINDOW : 0;
        double sum = 0.0;
        for (int64_t i = from; i < a->n_episodes; i++) sum += a->episodes[i].ret;
        p.mean_return = sum / (double)(a->n_episodes - from);
    }
    return p;
}

const strix_rl_episode *strix_agent_episodes(const strix_agent *a, int64_t *count) {
    *count = a->n_episodes;
    return a->episodes;
}

strix_status rl_episode_end(strix_agent *a, int i) {
    if (a->n_episodes == a->cap_episodes) {
        int64_t cap = a->cap_episodes ? 2 * a->cap_episodes : 1024;
        strix_rl_episode *e = realloc(a->episodes, sizeof *e * (size_t)cap);
        if (!e) return strix_error(STRIX_ERR_ALLOC, "out of memory");
        a->episodes = e;
        a->cap_episodes = cap;
    }
    a->episodes[a->n_episodes++] = (strix_rl_episode){.step = a->steps,
                                                      .ret = a->ep_return[i],
                                                      .length = a->ep_length[i]};
    a->ep_return[i] = 0.0;
    a->ep_length[i] = 0;
    return STRIX_OK;
}

strix_status rl_env_step(strix_agent *a, int i, const float *action, float *next_obs,
                         float *reward, bool *terminated, bool *ended) {
    int od = a->spec->obs_dim;
    double r = 0.0;
    bool term = false, trunc = false;
    STRIX_TRY(strix_env_step(&a->envs[i], action, next_obs, &r, &term, &trunc));
    a->ep_return[i] += r;
    a->ep_length[i]++;
    *reward = (float)r;
    *terminated = term;
    *ended = term || trunc;
    float *row = a->obs + (size_t)i * (size_t)od;
    if (*ended) {
        STRIX_TRY(rl_episode_end(a, i));
        strix_env_reset(&a->envs[i], row);
    } else {
        memcpy(row, next_obs, sizeof(float) * (size_t)od);
    }
    return STRIX_OK;
}

int rl_argmax(const float *row, int n) {
    int best = 0;
    for (int j = 1; j < n; j++)
        if (row[j] > row[best]) best = j;
    return best;
}

void rl_random_action(strix_agent *a, strix_rng *rng, float *action) {
    const strix_env_spec *s = a->spec;
    if (s->n_actions > 0) {
        action[0] = (float)strix_rng_below(rng, (uint64_t)s->n_actions);
        return;
    }
    for (int j = 0; j < s->action_dim; j++)
        action[j] = s->action_low +
                    (float)strix_rng_uniform(rng) * (s->action_high - s->action_low);
}

// ---- acting, evaluating, explaining ------------------------------------------------------------

strix_status strix_agent_act(strix_agent *a, const float *obs, bool deterministic,
                             strix_rng *rng, float *action) {
    return a->algo->act(a, obs, deterministic, rng, action);
}

strix_status strix_agent_evaluate(strix_agent *a, int episodes, uint64_t seed, double *returns,
                                  double *mean, double *std) {
    if (episodes < 1) return strix_error(STRIX_ERR_ARG, "episodes must be >= 1");
    strix_env env;
    strix_env_init(&env, a->cfg.env, seed);
    strix_rng rng;
    strix_rng_seed(&rng, strix_seed_derive(seed, 7));
    float obs[STRIX_ENV_MAX_OBS], action[STRIX_ENV_MAX_OBS];
    double sum = 0.0, sq = 0.0;
    for (int e = 0; e < episodes; e++) {
        strix_env_reset(&env, obs);
        double ret = 0.0;
        bool term = false, trunc = false;
        while (!term && !trunc) {
            double r = 0.0;
            STRIX_TRY(a->algo->act(a, obs, true, &rng, action));
            STRIX_TRY(strix_env_step(&env, action, obs, &r, &term, &trunc));
            ret += r;
        }
        if (returns) returns[e] = ret;
        sum += ret;
        sq += ret * ret;
    }
    double m = sum / episodes;
    if (mean) *mean = m;
    if (std) *std = sqrt(fmax(0.0, sq / episodes - m * m));
    return STRIX_OK;
}

strix_module *strix_agent_policy_net(strix_agent *a) { return &a->nets[0].seq->base; }

/* The default rules (Montavon et al. 2019, Sec. 10.2: LRP-γ in the lower layers, LRP-ε in the
 * upper one, the bias in the denominator as Zennit): gamma 0.25 on the hidden Linear layers,
 * epsilon 1e-6 on the output layer and the activations. Leaves: Linear, act, Linear, act,
 * Linear, so the output layer is leaf 4. */
static strix_lrp_rule default_rule(int index, const strix_module *m, void *user) {
    (void)user;
    bool hidden = strcmp(m->vt->type, "Linear") == 0 && index < 4;
    strix_lrp_rule r = hidden ? strix_lrp_gamma(0.25f) : strix_lrp_epsilon(1e-6f);
    r.bias_in_denominator = true;
    return r;
}

strix_status strix_agent_explain(strix_agent *a, const float *obs,
                                 const strix_lrp_composite *composite, float *relevance,
                                 float *action, float *output) {
    strix_module *net = strix_agent_policy_net(a);
    strix_lrp_composite c = composite ? *composite
                                      : strix_lrp_composite_custom(default_rule, NULL);
    STRIX_TRY(strix_lrp_assign(net, &c));
    STRIX_TRY(a->algo->act(a, obs, true, NULL, action));
    strix_lrp_target t = strix_lrp_target_default();
    int32_t cls = 0;
    t.classes = &cls;
    int n = a->spec->n_actions;
    if (n > 0) { /* the chosen action against the best other one */
        float q[64];
        STRIX_ASSERT(n <= 64, "too many actions");
        STRIX_TRY(rl_net_forward(a, &a->nets[0], obs, 1, q));
        cls = (int32_t)action[0];
        int other = -1;
        for (int j = 0; j < n; j++)
            if (j != cls && (other < 0 || q[j] > q[other])) other = j;
        t.contrast = other;
    }
    int od = a->spec->obs_dim;
    int64_t shape[2] = {1, od};
    strix_tensor x = {0};
    STRIX_TRY(strix_tensor_new(a->be, 2, shape, &x));
    strix_status st = strix_copy(a->be, x.data, obs, sizeof(float) * (size_t)od, STRIX_COPY_H2D);
    strix_lrp_explanation e = {0};
    if (st == STRIX_OK) st = strix_lrp_explain(net, &x, &t, &e);
    if (st == STRIX_OK) {
        /* continuous: oriented along the action taken, so positive relevance is "for it" */
        float sign = n == 0 && e.relevance_out_sum < 0.0 ? -1.0f : 1.0f;
        for (int i = 0; i < od; i++) relevance[i] = sign * e.relevance[i];
        if (output) *output = sign * (float)e.relevance_out_sum;
    }
    strix_lrp_explanation_free(&e);
    strix_tensor_free(&x);
    return st;
}
