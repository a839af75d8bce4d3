/*
 * rl_internal.h - what the agent files of src/rl share: the agent struct, the algorithm table,
 * the networks' helpers (net.c) and the run's common parts (agent.c).
 *
 * An agent owns up to RL_MAX_BLOCKS parameter blocks (strix/params.h), each with the networks
 * declared in it and, unless it is a target copy, its Adam optimizer. The networks run on the
 * agent's backend; what is computed per batch row on top of them (the losses' heads, targets,
 * advantages, the tanh-Gaussian policy) runs on host arrays through a CPU backend (`host`), with
 * the same primitives, so an agent on a GPU moves only its networks' inputs and outputs.
 */
#ifndef STRIX_RL_INTERNAL_H
#define STRIX_RL_INTERNAL_H

#include "strix/layers.h"
#include "strix/rl.h"

#define RL_MAX_BLOCKS 4
#define RL_MAX_NETS 6
#define RL_WINDOW 100 /* episodes of the running mean return */

/* A parameter block: its networks' parameters and, when trained, its optimizer. */
typedef struct rl_block {
    const char *name;       /* "q", "q_target", "ac", "actor", "critic", "critic_target", "alpha" */
    strix_params ps;
    strix_optimizer *opt;   /* NULL for a target copy */
} rl_block;

/* A network: a Sequential MLP in one of the blocks, with a device input and gradient buffer. */
typedef struct rl_net {
    strix_sequential *seq;
    int in, out;
    strix_tensor x, dy;     /* device staging of the last forward's input and the output grad */
} rl_net;

typedef struct rl_algo_i {
    /* Declares the blocks and networks (a->blocks, a->nets; nets[0] picks the actions) and the
     * algorithm's scratch; strix_agent_new then allocates, initialises and makes optimizers. */
    strix_status (*build)(strix_agent *a);
    /* After the blocks are allocated and drawn: special initialisations, target copies. */
    strix_status (*init)(strix_agent *a);
    strix_status (*iterate)(strix_agent *a);
    strix_status (*act)(strix_agent *a, const float *obs, bool deterministic, strix_rng *rng,
                        float *action);
    void (*free)(strix_agent *a);
} rl_algo_i;

struct strix_agent {
    strix_agent_config cfg;
    const strix_env_spec *spec;
    const rl_algo_i *algo;
    strix_backend *be;      /* networks */
    strix_backend *host;    /* "cpu": per-row heads on host arrays */
    rl_block blocks[RL_MAX_BLOCKS];
    int n_blocks;
    rl_net nets[RL_MAX_NETS];
    int n_nets;
    /* environments: n_envs of them, their current observations and running episodes */
    strix_env *envs;
    int n_envs;
    float *obs;             /* (n_envs, obs_dim) */
    double *ep_return;      /* (n_envs) */
    int *ep_length;         /* (n_envs) */
    strix_rng rng;          /* the agent's draws: actions, exploration, minibatches, samples */
    strix_replay replay;    /* DQN, SAC */
    int64_t steps, updates, iterations;
    double last_loss;
    strix_rl_episode *episodes;
    int64_t n_episodes, cap_episodes;
    void *priv;             /* the algorithm's scratch (no state of the run) */
};

extern const rl_algo_i rl_dqn_algo, rl_pg_algo, rl_sac_algo;

// ---- net.c -------------------------------------------------------------------------------------

/* Declares block `name` (index a->n_blocks). */
rl_block *rl_block_add(strix_agent *a, const char *name);
/* Declares an MLP in block b under `prefix`: in -> hidden[0] -> hidden[1] -> out with activation
 * `act` between (PyTorch nn.Linear default init), as network a->n_nets. */
strix_status rl_net_add(strix_agent *a, rl_block *b, const char *prefix, int in, int out,
                        strix_act act, rl_net **out_net);
/* Re-initialises every Linear of net n orthogonally (torch.nn.init.orthogonal_, biases 0) with
 * gain `gain` for the hidden layers and `last_gain` for the output layer (CleanRL's layer_init). */
strix_status rl_net_init_orthogonal(strix_agent *a, rl_net *n, double gain, double last_gain);
/* y_host (rows, out) = net(x_host (rows, in)); the forward's caches stay for rl_net_backward. */
strix_status rl_net_forward(strix_agent *a, rl_net *n, const float *x_host, int rows,
                            float *y_host);
/* Backward of the last forward with dy_host (rows, out): parameter grads `+=`; *dx (device, may
 * be NULL) gets the input gradient. */
strix_status rl_net_backward(strix_agent *a, rl_net *n, const float *dy_host, int rows,
                             const strix_tensor **dx);
/* dst block's values = tau·src + (1 − tau)·dst (tau 1: a copy); same layouts. */
strix_status rl_block_blend(strix_agent *a, rl_block *dst, const rl_block *src, float tau);
/* Zero grads, nothing else. */
strix_status rl_block_zero_grad(rl_block *b);
/* Clip (max_norm > 0) and one Adam step with lr; *norm the gradient norm before clipping. A
 * non-finite norm: STRIX_ERR_NUMERIC, nothing changed. */
strix_status rl_block_step(rl_block *b, float max_norm, float lr);

// ---- agent.c: the run's common parts ------------------------------------------------------------

/* Records a finished episode of environment i and clears its running return. */
strix_status rl_episode_end(strix_agent *a, int i);
/* Steps environment i with `action`; adds the reward to its running episode; on an episode's
 * end records it and resets the environment. next_obs (obs_dim) gets the step's real next
 * observation (the final one when the episode ended) and a->obs row i the observation to act on
 * next. */
strix_status rl_env_step(strix_agent *a, int i, const float *action, float *next_obs,
                         float *reward, bool *terminated, bool *ended);
/* Argmax of row (n values), ties to the lowest index. */
int rl_argmax(const float *row, int n);
/* A uniform random action of the agent's environment into action. */
void rl_random_action(strix_agent *a, strix_rng *rng, float *action);

// ---- the losses, for the tests' finite differences -----------------------------------------------

/* pg.c: the loss of the last rollout's rows rows[0..M) with the current parameters; its
 * gradient into block 0's grads (zeroed first). rl_pg_rollout_rows: the rows of the last
 * rollout. */
strix_status rl_pg_loss(strix_agent *a, const int64_t *rows, int64_t M, double *loss);
int64_t rl_pg_rollout_rows(const strix_agent *a);
/* sac.c: the actor's and the critics' losses on the last sampled batch with temperature alpha,
 * drawing the policy's noise from a->rng; gradients into the actor's / critics' block grads
 * (zeroed first). */
strix_status rl_sac_actor_loss(strix_agent *a, float alpha, double *loss);
strix_status rl_sac_critic_loss(strix_agent *a, float alpha, double *loss);

#endif
