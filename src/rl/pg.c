/*
 * pg.c - the policy-gradient agents on one actor-critic pair (CleanRL ppo.py's Agent: "actor" obs
 * -> 64 -> 64 -> actions and "critic" obs -> 64 -> 64 -> 1, tanh, orthogonal init with gains √2,
 * 0.01 (actor's output) and 1 (critic's output), one Adam over both, global-norm clipping):
 *   PPO (Schulman et al. 2017): rollouts of n_steps on n_envs environments, GAE, `epochs` passes
 *     of shuffled minibatches: clipped surrogate, optionally clipped value loss, entropy bonus,
 *     advantages normalised per minibatch; lr annealed linearly to 0 when anneal_lr.
 *   A2C (Mnih et al. 2016, synchronous): the same rollouts, one update per rollout on all of it:
 *     −logπ(a)·A, value loss, entropy bonus.
 *   REINFORCE (Williams 1992) with a learned baseline: each iteration runs one whole episode on
 *     each environment; A = G − V(s) with G the discounted return (bootstrapped from V of the
 *     last observation only at a time-limit truncation), one update on all of it.
 * The heads (softmax, log-probabilities, the PG/PPO terms) are the backend's rl_rows primitives
 * on host arrays; GAE is strix_gae.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rl/rl_internal.h"

#define PG_MAX_ACTIONS 64

typedef struct pg_priv {
    int64_t cap;                 /* rollout rows */
    int64_t rows;                /* rows of the current rollout */
    /* the rollout, one row per (step, env): time-major (t·N + i) for PPO and A2C, env-major
     * (episode after episode) for REINFORCE */
    float *obs, *next_obs;       /* (cap, obs_dim) */
    float *actions, *logp, *values, *next_values, *rewards, *terminated, *ended;
    float *adv, *returns;
    int64_t *seg_start, *seg_len; /* REINFORCE: each environment's episode */
    /* minibatch scratch */
    int64_t *perm;
    float *mb_obs, *mb_act, *mb_logp, *mb_adv, *mb_ret, *mb_val;
    float *logits, *probs, *loss, *ratio, *mask, *dlogits, *v, *dv;
    float *step_logits, *step_values;  /* (N, n) and (N) while collecting */
} pg_priv;

static pg_priv *priv_of(strix_agent *a) { return a->priv; }

int64_t rl_pg_rollout_rows(const strix_agent *a) { return ((const pg_priv *)a->priv)->rows; }

static strix_status pg_build(strix_agent *a) {
    const strix_env_spec *s = a->spec;
    const strix_agent_config *c = &a->cfg;
    STRIX_ASSERT(s->n_actions <= PG_MAX_ACTIONS, "too many actions");
    rl_block *b = rl_block_add(a, "ac");
    STRIX_TRY(rl_net_add(a, b, "actor", s->obs_dim, s->n_actions, STRIX_ACT_TANH, NULL));
    STRIX_TRY(rl_net_add(a, b, "critic", s->obs_dim, 1, STRIX_ACT_TANH, NULL));
    pg_priv *p = calloc(1, sizeof *p);
    if (!p) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    a->priv = p;
    size_t N = (size_t)c->n_envs, od = (size_t)s->obs_dim, n = (size_t)s->n_actions;
    p->cap = c->algo == STRIX_ALGO_REINFORCE ? (int64_t)N * s->max_steps
                                             : (int64_t)N * c->n_steps;
    size_t R = (size_t)p->cap;
    float **rowv[] = {&p->actions, &p->logp, &p->values, &p->next_values, &p->rewards,
                      &p->terminated, &p->ended, &p->adv, &p->returns, &p->mb_act, &p->mb_logp,
                      &p->mb_adv, &p->mb_ret, &p->mb_val, &p->loss, &p->ratio, &p->mask, &p->v,
                      &p->dv};
    for (size_t k = 0; k < sizeof rowv / sizeof *rowv; k++) *rowv[k] = malloc(sizeof(float) * R);
    float **obsv[] = {&p->obs, &p->next_obs, &p->mb_obs};
    for (size_t k = 0; k < 3; k++) *obsv[k] = malloc(sizeof(float) * R * od);
    float **actv[] = {&p->logits, &p->probs, &p->dlogits};
    for (size_t k = 0; k < 3; k++) *actv[k] = malloc(sizeof(float) * R * n);
    p->step_logits = malloc(sizeof(float) * N * n);
    p->step_values = malloc(sizeof(float) * N);
    p->perm = malloc(sizeof(int64_t) * R);
    p->seg_start = malloc(sizeof(int64_t) * N);
    p->seg_len = malloc(sizeof(int64_t) * N);
    for (size_t k = 0; k < sizeof rowv / sizeof *rowv; k++)
        if (!*rowv[k]) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    if (!p->obs || !p->next_obs || !p->mb_obs || !p->logits || !p->probs || !p->dlogits ||
        !p->step_logits || !p->step_values || !p->perm || !p->seg_start || !p->seg_len)
        return strix_error(STRIX_ERR_ALLOC, "out of memory");
    return STRIX_OK;
}

static strix_status pg_init(strix_agent *a) {
    STRIX_TRY(rl_net_init_orthogonal(a, &a->nets[0], sqrt(2.0), 0.01));
    STRIX_TRY(rl_net_init_orthogonal(a, &a->nets[1], sqrt(2.0), 1.0));
    strix_adamw_config ac = strix_adamw_defaults(0.0f);
    ac.eps = a->cfg.adam_eps;
    return strix_optimizer_adam(&a->blocks[0].ps, &ac, &a->blocks[0].opt);
}

static void pg_free(strix_agent *a) {
    pg_priv *p = a->priv;
    if (!p) return;
    void *all[] = {p->obs, p->next_obs, p->actions, p->logp, p->values, p->next_values,
                   p->rewards, p->terminated, p->ended, p->adv, p->returns, p->seg_start,
                   p->seg_len, p->perm, p->mb_obs, p->mb_act, p->mb_logp, p->mb_adv, p->mb_ret,
                   p->mb_val, p->logits, p->probs, p->loss, p->ratio, p->mask, p->dlogits, p->v,
                   p->dv, p->step_logits, p->step_values};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++) free(all[k]);
    free(p);
    a->priv = NULL;
}

/* probs (n) = softmax(logits) of one row and, when `action` is set, *logp = log π(action),
 * through the PG_LOSS primitive (return 1: loss = −log π). */
static strix_status policy_heads(strix_agent *a, const float *logits, const float *action,
                                 float *probs, float *logp) {
    float any = 0.0f, one = 1.0f, loss = 0.0f;
    strix_rl_args g = {.in = {logits, action ? action : &any, &one}, .out = {probs, &loss},
                       .rows = 1, .cols = (size_t)a->spec->n_actions};
    STRIX_TRY(strix_rl_rows(a->host, STRIX_RL_PG_LOSS, &g));
    if (logp) *logp = -loss;
    return STRIX_OK;
}

/* A draw from row `probs` (n): the first j whose cumulative probability exceeds u·total. */
static int sample_row(const float *probs, int n, strix_rng *rng) {
    double total = 0.0;
    for (int j = 0; j < n; j++) total += probs[j];
    double u = strix_rng_uniform(rng) * total, cum = 0.0;
    int last = 0;
    for (int j = 0; j < n; j++) {
        if (probs[j] <= 0.0f) continue;
        last = j;
        cum += probs[j];
        if (u < cum) return j;
    }
    return last;
}

static strix_status pg_act(strix_agent *a, const float *obs, bool deterministic,
                           strix_rng *rng, float *action) {
    int n = a->spec->n_actions;
    float logits[PG_MAX_ACTIONS], probs[PG_MAX_ACTIONS];
    STRIX_TRY(rl_net_forward(a, &a->nets[0], obs, 1, logits));
    if (deterministic) {
        action[0] = (float)rl_argmax(logits, n);
        return STRIX_OK;
    }
    STRIX_TRY(policy_heads(a, logits, NULL, probs, NULL));
    action[0] = (float)sample_row(probs, n, rng);
    return STRIX_OK;
}

// ---- collecting ----------------------------------------------------------------------------------

/* Acts on the N environments' current observations, stores row base + i of each, steps them. */
static strix_status collect_step(strix_agent *a, int64_t base, int first, int count) {
    pg_priv *p = priv_of(a);
    int od = a->spec->obs_dim, n = a->spec->n_actions;
    const float *obs = a->obs + (size_t)first * (size_t)od;
    STRIX_TRY(rl_net_forward(a, &a->nets[0], obs, count, p->step_logits));
    STRIX_TRY(rl_net_forward(a, &a->nets[1], obs, count, p->step_values));
    float probs[PG_MAX_ACTIONS];
    for (int i = 0; i < count; i++) {
        int64_t r = base + i;
        const float *lg = p->step_logits + (size_t)i * (size_t)n;
        STRIX_TRY(policy_heads(a, lg, NULL, probs, NULL));
        float act = (float)sample_row(probs, n, &a->rng), logp = 0.0f;
        STRIX_TRY(policy_heads(a, lg, &act, probs, &logp));
        memcpy(p->obs + (size_t)r * (size_t)od, obs + (size_t)i * (size_t)od,
               sizeof(float) * (size_t)od);
        p->actions[r] = act;
        p->logp[r] = logp;
        p->values[r] = p->step_values[i];
        bool term = false, ended = false;
        a->steps++;
        STRIX_TRY(rl_env_step(a, first + i, &act, p->next_obs + (size_t)r * (size_t)od,
                              &p->rewards[r], &term, &ended));
        p->terminated[r] = term ? 1.0f : 0.0f;
        p->ended[r] = ended ? 1.0f : 0.0f;
    }
    return STRIX_OK;
}

/* V of every row's real next observation. */
static strix_status next_values(strix_agent *a) {
    pg_priv *p = priv_of(a);
    return rl_net_forward(a, &a->nets[1], p->next_obs, (int)p->rows, p->next_values);
}

static strix_status collect_rollout(strix_agent *a) {
    pg_priv *p = priv_of(a);
    const strix_agent_config *c = &a->cfg;
    int N = c->n_envs;
    if (c->algo == STRIX_ALGO_REINFORCE) { /* one whole episode per environment */
        p->rows = 0;
        for (int i = 0; i < N; i++) {
            p->seg_start[i] = p->rows;
            do {
                STRIX_TRY(collect_step(a, p->rows, i, 1));
                p->rows++;
            } while (p->ended[p->rows - 1] == 0.0f);
            p->seg_len[i] = p->rows - p->seg_start[i];
        }
    } else {
        for (int t = 0; t < c->n_steps; t++) STRIX_TRY(collect_step(a, (int64_t)t * N, 0, N));
        p->rows = (int64_t)c->n_steps * N;
    }
    STRIX_TRY(next_values(a));
    if (c->algo == STRIX_ALGO_REINFORCE) {
        for (int i = 0; i < N; i++) {
            int64_t s = p->seg_start[i];
            strix_gae((size_t)p->seg_len[i], 1, p->rewards + s, p->values + s,
                      p->next_values + s, p->terminated + s, p->ended + s, c->gamma,
                      c->gae_lambda, p->adv + s, p->returns + s);
        }
    } else {
        strix_gae((size_t)c->n_steps, (size_t)N, p->rewards, p->values, p->next_values,
                  p->terminated, p->ended, c->gamma, c->gae_lambda, p->adv, p->returns);
    }
    return STRIX_OK;
}

// ---- updating ----------------------------------------------------------------------------------

/* (x − mean)/(std + 1e-8) with torch's unbiased std, in double, ascending. */
static void normalize(float *x, int64_t n) {
    if (n < 2) return;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += x[i];
    double mean = sum / (double)n, sq = 0.0;
    for (int64_t i = 0; i < n; i++) sq += (x[i] - mean) * (x[i] - mean);
    double sd = sqrt(sq / (double)(n - 1));
    for (int64_t i = 0; i < n; i++) x[i] = (float)((x[i] - mean) / (sd + 1e-8));
}

strix_status rl_pg_loss(strix_agent *a, const int64_t *rows, int64_t M, double *loss_out) {
    pg_priv *p = priv_of(a);
    const strix_agent_config *c = &a->cfg;
    int od = a->spec->obs_dim, n = a->spec->n_actions;
    for (int64_t k = 0; k < M; k++) {
        int64_t r = rows[k];
        memcpy(p->mb_obs + (size_t)k * (size_t)od, p->obs + (size_t)r * (size_t)od,
               sizeof(float) * (size_t)od);
        p->mb_act[k] = p->actions[r];
        p->mb_logp[k] = p->logp[r];
        p->mb_adv[k] = p->adv[r];
        p->mb_ret[k] = p->returns[r];
        p->mb_val[k] = p->values[r];
    }
    if (c->norm_adv) normalize(p->mb_adv, M);
    STRIX_TRY(rl_net_forward(a, &a->nets[0], p->mb_obs, (int)M, p->logits));
    float scale = 1.0f / (float)M;
    double pg = 0.0;
    if (c->algo == STRIX_ALGO_PPO) {
        strix_rl_args l = {.in = {p->logits, p->mb_act, p->mb_logp, p->mb_adv},
                           .out = {p->probs, p->loss, p->ratio, p->mask}, .rows = (size_t)M,
                           .cols = (size_t)n, .scale = scale, .lower = 1.0f - c->clip_coef,
                           .upper = 1.0f + c->clip_coef};
        STRIX_TRY(strix_rl_rows(a->host, STRIX_RL_PPO_LOSS, &l));
        strix_rl_args g = {.in = {p->probs, p->mb_act, p->ratio, p->mask, p->mb_adv},
                           .out = {p->dlogits}, .rows = (size_t)M, .cols = (size_t)n,
                           .scale = scale};
        STRIX_TRY(strix_rl_rows(a->host, STRIX_RL_PPO_GRAD, &g));
    } else {
        strix_rl_args l = {.in = {p->logits, p->mb_act, p->mb_adv}, .out = {p->probs, p->loss},
                           .rows = (size_t)M, .cols = (size_t)n, .scale = scale};
        STRIX_TRY(strix_rl_rows(a->host, STRIX_RL_PG_LOSS, &l));
        strix_rl_args g = {.in = {p->probs, p->mb_act, p->mb_adv}, .out = {p->dlogits},
                           .rows = (size_t)M, .cols = (size_t)n, .scale = scale};
        STRIX_TRY(strix_rl_rows(a->host, STRIX_RL_PG_GRAD, &g));
    }
    for (int64_t k = 0; k < M; k++) pg += p->loss[k];
    pg /= (double)M;
    /* entropy bonus: d(−ent_coef·mean H)/dz_j = ent_coef/M · p_j·(log p_j + H) */
    double ent = 0.0;
    for (int64_t k = 0; k < M; k++) {
        const float *pr = p->probs + (size_t)k * (size_t)n;
        double h = 0.0;
        for (int j = 0; j < n; j++)
            if (pr[j] > 0.0f) h -= (double)pr[j] * log((double)pr[j]);
        ent += h;
        if (c->ent_coef != 0.0f)
            for (int j = 0; j < n; j++) {
                double lp = pr[j] > 0.0f ? log((double)pr[j]) : 0.0;
                p->dlogits[(size_t)k * (size_t)n + (size_t)j] +=
                    (float)((double)c->ent_coef * scale * pr[j] * (lp + h));
            }
    }
    ent /= (double)M;
    /* value loss 0.5·mean((v − R)²), PPO optionally clipped around the rollout's values */
    STRIX_TRY(rl_net_forward(a, &a->nets[1], p->mb_obs, (int)M, p->v));
    double vl = 0.0;
    for (int64_t k = 0; k < M; k++) {
        double v = p->v[k], R = p->mb_ret[k], old = p->mb_val[k], d = v - R, g = d;
        double l = d * d;
        if (c->algo == STRIX_ALGO_PPO && c->clip_vloss) {
            double dv = v - old, cc = c->clip_coef;
            bool inside = dv > -cc && dv < cc;
            double vc = old + (inside ? dv : (dv < 0 ? -cc : cc)), lc = (vc - R) * (vc - R);
            if (lc > l) {
                l = lc;
                g = inside ? vc - R : 0.0;
            }
        }
        vl += 0.5 * l;
        p->dv[k] = (float)((double)c->vf_coef * g / (double)M);
    }
    vl /= (double)M;
    double loss = pg - (double)c->ent_coef * ent + (double)c->vf_coef * vl;
    if (!isfinite(loss)) return strix_error(STRIX_ERR_NUMERIC, "the %s loss is not finite",
                                            strix_rl_algo_name(c->algo));
    STRIX_TRY(rl_block_zero_grad(&a->blocks[0]));
    STRIX_TRY(rl_net_backward(a, &a->nets[1], p->dv, (int)M, NULL));
    STRIX_TRY(rl_net_backward(a, &a->nets[0], p->dlogits, (int)M, NULL));
    *loss_out = loss;
    return STRIX_OK;
}

/* One gradient step on the rollout rows rows[0..M) (the whole rollout for A2C/REINFORCE). */
static strix_status update_minibatch(strix_agent *a, const int64_t *rows, int64_t M, float lr,
                                     double *loss) {
    STRIX_TRY(rl_pg_loss(a, rows, M, loss));
    STRIX_TRY(rl_block_step(&a->blocks[0], a->cfg.max_grad_norm, lr));
    a->updates++;
    return STRIX_OK;
}

static strix_status pg_iterate(strix_agent *a) {
    pg_priv *p = priv_of(a);
    const strix_agent_config *c = &a->cfg;
    float lr = c->lr;
    if (c->anneal_lr) { /* CleanRL: lr·(1 − (iteration − 1)/num_iterations), 1-based */
        int64_t batch = (int64_t)c->n_envs * c->n_steps;
        int64_t total = (c->total_steps + batch - 1) / batch;
        lr = (float)((1.0 - (double)a->iterations / (double)total) * (double)c->lr);
    }
    STRIX_TRY(collect_rollout(a));
    int64_t B = p->rows;
    for (int64_t i = 0; i < B; i++) p->perm[i] = i;
    double loss = NAN;
    if (c->algo != STRIX_ALGO_PPO) {
        STRIX_TRY(update_minibatch(a, p->perm, B, lr, &loss));
    } else {
        int64_t M = B / c->minibatches;
        for (int e = 0; e < c->epochs; e++) {
            for (int64_t i = B - 1; i > 0; i--) { /* Fisher-Yates */
                int64_t j = (int64_t)strix_rng_below(&a->rng, (uint64_t)i + 1);
                int64_t t = p->perm[i];
                p->perm[i] = p->perm[j];
                p->perm[j] = t;
            }
            for (int m = 0; m < c->minibatches; m++)
                STRIX_TRY(update_minibatch(a, p->perm + (size_t)m * (size_t)M, M, lr, &loss));
        }
    }
    a->last_loss = loss;
    return STRIX_OK;
}

const rl_algo_i rl_pg_algo = {
    .build = pg_build, .init = pg_init, .iterate = pg_iterate, .act = pg_act, .free = pg_free};
