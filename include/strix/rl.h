/*
 * strix/rl.h - reinforcement learning: Gymnasium-style environments (CartPole-v1, a continuous
 * CartPole, Pendulum-v1), a replay buffer, generalized advantage estimation, and agents built on
 * the library's modules and optimizers (DQN and Double DQN, REINFORCE, A2C, PPO, SAC), with their
 * training loop, checkpoints and explanations (LRP through the policy or Q-network).
 *
 * Environments are plain structs simulated on the host in double precision; observations are
 * float32, as Gymnasium returns them. Actions are float arrays: a discrete action is a whole
 * number in [0, n_actions), a continuous one action_dim values. Every random draw of an
 * environment or an agent comes from a strix_rng seeded from the run's seed, so one seed gives
 * the same run bit for bit, on any thread count.
 */
#ifndef STRIX_RL_H
#define STRIX_RL_H

#include "strix/lrp.h"
#include "strix/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- environments ------------------------------------------------------------------------------

typedef enum strix_env_kind {
    STRIX_ENV_CARTPOLE,            /* "cartpole": Gymnasium CartPole-v1 */
    STRIX_ENV_CARTPOLE_CONTINUOUS, /* "cartpole-continuous": force = clamp(a, −1, 1)·force_mag */
    STRIX_ENV_PENDULUM             /* "pendulum": Gymnasium Pendulum-v1 */
} strix_env_kind;

#define STRIX_ENV_MAX_OBS 4
#define STRIX_ENV_MAX_STATE 4

/* What an environment takes and gives. */
typedef struct strix_env_spec {
    const char *name;       /* the command's name: "cartpole", "cartpole-continuous", "pendulum" */
    const char *gym_id;     /* the Gymnasium id it follows: "CartPole-v1", "Pendulum-v1" */
    int obs_dim;            /* 4, 4, 3 */
    int state_dim;          /* 4, 4, 2 (the double-precision state of strix_env.state) */
    int n_actions;          /* discrete: the number of actions (2); continuous: 0 */
    int action_dim;         /* continuous: 1; discrete: 1 (one whole-number float) */
    float action_low, action_high; /* continuous bounds (−1, 1 / −2, 2); discrete: 0, n − 1 */
    int max_steps;          /* episode length limit (truncation): 500, 500, 200 */
    const char *obs_names[STRIX_ENV_MAX_OBS]; /* "cart position", ... (explanations) */
    const char *action_names[2];              /* discrete: "left", "right"; continuous: "torque"
                                               * or "force" in [0] */
} strix_env_spec;

/* One environment. Public so a checkpoint can store it whole; change it only through the calls
 * below (or strix_env_set_state in tests). */
typedef struct strix_env {
    strix_env_kind kind;
    double state[STRIX_ENV_MAX_STATE]; /* CartPole: x, x_dot, theta, theta_dot; Pendulum: th, thdot */
    int steps;            /* steps since the last reset */
    bool needs_reset;     /* true before the first reset and after an episode ended */
    strix_rng rng;        /* the stream of the reset draws */
} strix_env;

/* The spec of `kind` (static storage). */
STRIX_API const strix_env_spec *strix_env_spec_of(strix_env_kind kind);
/* The kind named `name` (strix_env_spec.name). STRIX_ERR_ARG naming the known ones otherwise. */
STRIX_API strix_status strix_env_kind_of(const char *name, strix_env_kind *out);

/* A fresh environment whose resets draw from a stream seeded with `seed`. Call strix_env_reset
 * before the first step. */
STRIX_API void strix_env_init(strix_env *e, strix_env_kind kind, uint64_t seed);
/* Starts an episode: CartPole's four state values U(−0.05, 0.05), Pendulum's angle U(−π, π) and
 * velocity U(−1, 1) (Gymnasium's ranges; the draws are strix_rng_uniform of e->rng, not numpy's
 * stream), steps = 0. Writes the observation (obs_dim floats) into obs (NULL: not written). */
STRIX_API void strix_env_reset(strix_env *e, float *obs);
/* The observation of the current state (CartPole: the state as float; Pendulum: cos θ, sin θ,
 * θ̇ as float). */
STRIX_API void strix_env_observe(const strix_env *e, float *obs);
/* Sets the state (state_dim values; tests replay Gymnasium's episodes from its initial state)
 * and starts an episode there: steps = 0. */
STRIX_API void strix_env_set_state(strix_env *e, const double *state);
/* One step with `action` (action_dim floats), Gymnasium's equations in its order, in double:
 *   CartPole-v1: force ±force_mag (action 1: +), explicit Euler (x, ẋ, θ, θ̇ updated with the
 *   old derivatives), reward 1 on every step including the last, terminated when |x| > 2.4 or
 *   |θ| > 12° (0.2094… rad), truncated at 500 steps; the continuous CartPole takes
 *   force = clamp(a, −1, 1)·force_mag.
 *   Pendulum-v1: u = clip(a, −2, 2), reward −(normalize(θ)² + 0.1·θ̇² + 0.001·u²),
 *   θ̇' = clip(θ̇ + (3g/(2l)·sin θ + 3/(m l²)·u)·dt, −8, 8), θ' = θ + θ̇'·dt; never terminates,
 *   truncated at 200 steps. As in Gymnasium with a float32 action, the terms of u (u², 0.001·u²,
 *   3·u) are float32 and the squares are pow() calls (NumPy's x**2), the rest double.
 * Writes obs (obs_dim floats; NULL: not written), *reward, *terminated, *truncated. After an
 * episode ends the next call needs a reset. STRIX_ERR_ARG (nothing changed) for a step before a
 * reset or after the end, a NaN or infinite action, or a discrete action that is not a whole
 * number in [0, n_actions). */
STRIX_API strix_status strix_env_step(strix_env *e, const float *action, float *obs,
                                      double *reward, bool *terminated, bool *truncated);

// ---- replay buffer -----------------------------------------------------------------------------

/* A ring of the last `capacity` transitions (obs, action, reward, next_obs, terminated), host
 * memory, float32. */
typedef struct strix_replay {
    int64_t capacity, size, pos; /* pos: the slot the next transition overwrites */
    int obs_dim, action_dim;
    float *obs, *next_obs;       /* (capacity, obs_dim) */
    float *actions;              /* (capacity, action_dim) */
    float *rewards, *terminated; /* (capacity) */
} strix_replay;

/* STRIX_ERR_ARG for non-positive sizes, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_replay_init(strix_replay *r, int64_t capacity, int obs_dim,
                                         int action_dim);
/* Stores one transition at pos (overwriting the oldest once full). `terminated` is true only for
 * a real end (not a time-limit truncation): the target bootstraps from next_obs otherwise. */
STRIX_API void strix_replay_add(strix_replay *r, const float *obs, const float *action,
                                float reward, const float *next_obs, bool terminated);
/* Draws `batch` indices uniformly with replacement (strix_rng_below(rng, size), in order) and
 * gathers them into the five (batch, ...) arrays. The buffer must hold a transition. */
STRIX_API void strix_replay_sample(const strix_replay *r, strix_rng *rng, int batch, float *obs,
                                   float *actions, float *rewards, float *next_obs,
                                   float *terminated);
STRIX_API void strix_replay_free(strix_replay *r);

// ---- generalized advantage estimation -----------------------------------------------------------

/* GAE (Schulman et al. 2016, Eq. 16) over a rollout of T steps of N environments, arrays (T, N)
 * time-major:
 *   δ_t = r_t + γ·V'_t·(1 − terminated_t) − V_t
 *   A_t = δ_t + γλ·(1 − ended_t)·A_{t+1}          (A_T = 0), returns_t = A_t + V_t
 * V'_t is the value of the step's true next observation: the final observation of an episode
 * that ended at t (so a time-limit truncation bootstraps from it, as Gymnasium recommends), the
 * next step's observation otherwise. ended_t is 1 where the episode ended at t (terminated or
 * truncated), so no advantage crosses an episode's end; terminated_t is 1 for a real end only.
 * Computed in float, t descending. advantages and returns (T, N) are overwritten. */
STRIX_API void strix_gae(size_t T, size_t N, const float *rewards, const float *values,
                         const float *next_values, const float *terminated, const float *ended,
                         float gamma, float lambda, float *advantages, float *returns);

// ---- agents ------------------------------------------------------------------------------------

typedef enum strix_rl_algo {
    STRIX_ALGO_DQN,       /* "dqn": Mnih et al. 2015, Double DQN (van Hasselt et al. 2016) with
                           * double_q */
    STRIX_ALGO_REINFORCE, /* "reinforce": Williams 1992, with a learned baseline */
    STRIX_ALGO_A2C,       /* "a2c": Mnih et al. 2016, synchronous */
    STRIX_ALGO_PPO,       /* "ppo": Schulman et al. 2017, PPO-Clip */
    STRIX_ALGO_SAC        /* "sac": Haarnoja et al. 2018, twin Q, learned temperature */
} strix_rl_algo;

/* The hyper-parameters of an agent: everything that decides its numbers. The defaults
 * (strix_agent_defaults) are CleanRL's for the same task (dqn.py, ppo.py,
 * sac_continuous_action.py); the fields an algorithm does not use are ignored. */
typedef struct strix_agent_config {
    strix_rl_algo algo;
    strix_env_kind env;
    uint64_t seed;
    int64_t total_steps;   /* environment steps of the run (the schedules' horizon) */
    int hidden[2];         /* widths of the two hidden layers of every network */
    float lr;              /* Adam learning rate (SAC: the critics') */
    float policy_lr;       /* SAC: the actor's and the temperature's */
    bool anneal_lr;        /* on-policy: lr decays linearly to 0 over the run */
    float gamma;           /* discount */
    float adam_eps;        /* Adam epsilon (1e-5 on-policy, 1e-8 DQN and SAC) */
    float max_grad_norm;   /* global-norm clipping (0: off) */
    /* on-policy (REINFORCE, A2C, PPO) */
    int n_envs;            /* environments stepped together */
    int n_steps;           /* steps per environment per rollout (REINFORCE: whole episodes are
                            * collected until at least n_envs·n_steps steps) */
    float gae_lambda;      /* 1: plain discounted returns */
    int epochs, minibatches; /* PPO: passes over the rollout and minibatches per pass */
    float clip_coef;       /* PPO ratio clip ε */
    bool clip_vloss;       /* PPO value clipping */
    bool norm_adv;         /* advantage normalisation per minibatch */
    float ent_coef, vf_coef;
    /* off-policy (DQN, SAC) */
    int64_t buffer_size;
    int batch_size;
    int64_t learning_starts; /* steps of random actions before the first update */
    int train_freq;        /* DQN: env steps per update */
    int target_freq;       /* steps between target-network updates */
    float tau;             /* Polyak factor of the target update (1: hard copy) */
    float eps_start, eps_end, eps_fraction; /* DQN ε-greedy: linear over fraction·total_steps */
    bool double_q;         /* DQN: Double DQN targets */
    int policy_freq;       /* SAC: critic updates per actor update (the actor then takes as many) */
    float alpha;           /* SAC: initial temperature (learned when autotune) */
    bool autotune;         /* SAC: learn the temperature towards target entropy −action_dim */
} strix_agent_config;

/* CleanRL's hyper-parameters for algo on env (REINFORCE takes ppo.py's networks and lr). Sets
 * total_steps to 500,000 (SAC: 50,000). STRIX_ERR_ARG when the algorithm does not fit the action
 * space (DQN, REINFORCE, A2C and PPO need discrete actions, SAC continuous ones), naming both. */
STRIX_API strix_status strix_agent_defaults(strix_rl_algo algo, strix_env_kind env, uint64_t seed,
                                            strix_agent_config *out);
/* The algorithm named `name` ("dqn", "reinforce", "a2c", "ppo", "sac"); STRIX_ERR_ARG otherwise. */
STRIX_API strix_status strix_rl_algo_of(const char *name, strix_rl_algo *out);
STRIX_API const char *strix_rl_algo_name(strix_rl_algo algo);
/* Checks every field's range; STRIX_ERR_ARG naming the first bad one. */
STRIX_API strix_status strix_agent_config_check(const strix_agent_config *cfg);

typedef struct strix_agent strix_agent;

/* One finished episode of the training run. */
typedef struct strix_rl_episode {
    int64_t step;     /* environment steps of the run when it ended */
    double ret;       /* undiscounted return */
    int length;
} strix_rl_episode;

/* Where a run stands. */
typedef struct strix_rl_progress {
    int64_t steps;        /* environment steps so far */
    int64_t updates;      /* gradient updates so far */
    int64_t episodes;     /* finished episodes */
    double mean_return;   /* of the last 100 episodes (NaN before the first) */
    double last_loss;     /* the last update's loss (NaN before the first) */
} strix_rl_progress;

/* Builds the agent's networks (initialised from cfg->seed), optimizers, environments and buffers
 * on backend `be`. STRIX_ERR_ARG for a bad config (strix_agent_config_check), STRIX_ERR_ALLOC,
 * backend errors. */
STRIX_API strix_status strix_agent_new(strix_backend *be, const strix_agent_config *cfg,
                                       strix_agent **out);
STRIX_API void strix_agent_free(strix_agent *a);
STRIX_API const strix_agent_config *strix_agent_config_of(const strix_agent *a);

/* Advances training by one iteration: on-policy, one rollout and its update; DQN and SAC, one
 * environment step and the updates due at it. Appends finished episodes to the agent's history
 * (strix_agent_episodes). A run is done when progress.steps >= total_steps
 * (strix_agent_done); a call then does nothing. STRIX_ERR_NUMERIC when a loss turns non-finite
 * (nothing is updated by that step), backend errors. */
STRIX_API strix_status strix_agent_iterate(strix_agent *a);
STRIX_API bool strix_agent_done(const strix_agent *a);
STRIX_API strix_rl_progress strix_agent_progress(const strix_agent *a);
/* Every finished episode of the run so far, in order (valid until the next iterate). */
STRIX_API const strix_rl_episode *strix_agent_episodes(const strix_agent *a, int64_t *count);

/* The action for one observation (obs_dim floats) into action (action_dim floats): the greedy
 * one (argmax of Q or of the policy's logits, ties to the lowest index; SAC: the tanh of the
 * mean, scaled) when deterministic, else a draw from the policy with `rng` (DQN: ε-greedy with
 * the end ε). Runs the networks in inference; changes nothing in the agent. */
STRIX_API strix_status strix_agent_act(strix_agent *a, const float *obs, bool deterministic,
                                       strix_rng *rng, float *action);

/* Runs `episodes` fresh episodes of the agent's environment with deterministic actions, resets
 * drawn from a stream seeded with `seed`; returns[i] (may be NULL) gets episode i's return, and
 * *mean and *std (population) their statistics. Changes nothing in the agent. */
STRIX_API strix_status strix_agent_evaluate(strix_agent *a, int episodes, uint64_t seed,
                                            double *returns, double *mean, double *std);

/* Saves the whole agent to `path` atomically (a safetensors file): config, the backend's name,
 * every network and
 * target network, optimizer moments and step counts, environments, replay buffer, random
 * streams and the episode history, so strix_agent_load continues the run bit for bit.
 * STRIX_ERR_IO (the previous file untouched), STRIX_ERR_ALLOC, backend errors. */
STRIX_API strix_status strix_agent_save(strix_agent *a, const char *path);
/* Loads an agent saved by strix_agent_save onto `be`. STRIX_ERR_IO, STRIX_ERR_FORMAT (the
 * message says what is wrong: not an agent file, a bad config, a missing or misshapen tensor,
 * an inconsistent state), STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_agent_load(strix_backend *be, const char *path, strix_agent **out);

/* A cheap test of whether `path` is an agent file: its header is read (lazily, mapped) and its
 * format checked, nothing else. backend (cap bytes; may be NULL) gets the name of the backend
 * that saved it ("" in files that lack it). STRIX_ERR_FORMAT naming the path for another file,
 * STRIX_ERR_IO, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_agent_probe(const char *path, char *backend, size_t cap);

/* The network that picks the agent's actions (DQN: the Q-network; REINFORCE, A2C, PPO: the
 * policy, whose outputs are the action logits; SAC: the actor, whose outputs are the mean and
 * log-std heads before the tanh), a Sequential of Linear and activation modules taking
 * (batch, obs_dim). For LRP (strix/lrp.h) and inspection; do not train it. */
STRIX_API strix_module *strix_agent_policy_net(strix_agent *a);

/* LRP of the action taken at `obs` (obs_dim floats): the relevance of every observation feature
 * for the greedy action. With discrete actions the explained value is the chosen action's output
 * minus the best other action's (DQN: Q-values; REINFORCE, A2C, PPO: logits; the target's
 * `contrast`, strix/lrp.h), so the baseline both share drops out: "why this action rather than
 * the other"; SAC: the pre-tanh mean of action dimension 0, oriented along the action (its
 * absolute value, the relevance negated with it when the mean is negative), so that positive
 * relevance is for the action taken in every case. `composite` NULL: LRP-γ (0.25) on
 * the hidden Linear layers and LRP-ε (1e-6) on the output layer, the bias in the denominators
 * (Montavon et al. 2019, Sec. 10.2), which stays stable on ReLU networks where a uniform
 * epsilon rule divides by near-zero pre-activations. relevance gets obs_dim floats; *action
 * the greedy action; *output the explained value (the relevance sums to about it, less what
 * the biases absorb). Statuses of strix_lrp_explain. */
STRIX_API strix_status strix_agent_explain(strix_agent *a, const float *obs,
                                           const strix_lrp_composite *composite,
                                           float *relevance, float *action, float *output);

#ifdef __cplusplus
}
#endif
#endif
