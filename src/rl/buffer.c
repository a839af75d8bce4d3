/*
 * buffer.c - the replay buffer (a ring of transitions in host memory) and generalized advantage
 * estimation of strix/rl.h. Plain loops on host floats; no backend, no threads.
 */
#include <stdlib.h>
#include <string.h>

#include "strix/rl.h"

// ---- replay buffer -----------------------------------------------------------------------------

strix_status strix_replay_init(strix_replay *r, int64_t capacity, int obs_dim, int action_dim) {
    STRIX_ASSERT(r);
    memset(r, 0, sizeof *r);
    if (capacity <= 0 || obs_dim <= 0 || action_dim <= 0)
        return strix_error(STRIX_ERR_ARG,
                           "replay buffer: capacity %lld, obs_dim %d and action_dim %d must be > 0",
                           (long long)capacity, obs_dim, action_dim);
    size_t cap = (size_t)capacity;
    if (cap > SIZE_MAX / sizeof(float) / ((size_t)obs_dim + (size_t)action_dim + 1))
        return strix_error(STRIX_ERR_ALLOC, "replay buffer: %lld transitions overflow memory",
                           (long long)capacity);
    r->obs = calloc(cap * (size_t)obs_dim, sizeof(float));
    r->next_obs = calloc(cap * (size_t)obs_dim, sizeof(float));
    r->actions = calloc(cap * (size_t)action_dim, sizeof(float));
    r->rewards = calloc(cap, sizeof(float));
    r->terminated = calloc(cap, sizeof(float));
    if (!r->obs || !r->next_obs || !r->actions || !r->rewards || !r->terminated) {
        strix_replay_free(r);
        return strix_error(STRIX_ERR_ALLOC, "replay buffer: out of memory for %lld transitions",
                           (long long)capacity);
    }
    r->capacity = capacity;
    r->obs_dim = obs_dim;
    r->action_dim = action_dim;
    return STRIX_OK;
}

void strix_replay_add(strix_replay *r, const float *obs, const float *action, float reward,
                      const float *next_obs, bool terminated) {
    STRIX_ASSERT(r && r->capacity > 0 && obs && action && next_obs);
    size_t i = (size_t)r->pos, od = (size_t)r->obs_dim, ad = (size_t)r->action_dim;
    memcpy(r->obs + i * od, obs, od * sizeof(float));
    memcpy(r->next_obs + i * od, next_obs, od * sizeof(float));
    memcpy(r->actions + i * ad, action, ad * sizeof(float));
    r->rewards[i] = reward;
    r->terminated[i] = terminated ? 1.0f : 0.0f;
    r->pos = (r->pos + 1) % r->capacity;
    if (r->size < r->capacity) r->size++;
}

void strix_replay_sample(const strix_replay *r, strix_rng *rng, int batch, float *obs,
                         float *actions, float *rewards, float *next_obs, float *terminated) {
    STRIX_ASSERT(r && rng && r->size > 0 && batch >= 0, "size %lld, batch %d",
                 r ? (long long)r->size : 0LL, batch);
    STRIX_ASSERT(obs && actions && rewards && next_obs && terminated);
    size_t od = (size_t)r->obs_dim, ad = (size_t)r->action_dim;
    for (size_t b = 0; b < (size_t)batch; b++) {
        size_t i = (size_t)strix_rng_below(rng, (uint64_t)r->size); /* a slot, not an age */
        memcpy(obs + b * od, r->obs + i * od, od * sizeof(float));
        memcpy(next_obs + b * od, r->next_obs + i * od, od * sizeof(float));
        memcpy(actions + b * ad, r->actions + i * ad, ad * sizeof(float));
        rewards[b] = r->rewards[i];
        terminated[b] = r->terminated[i];
    }
}

void strix_replay_free(strix_replay *r) {
    if (!r) return;
    free(r->obs);
    free(r->next_obs);
    free(r->actions);
    free(r->rewards);
    free(r->terminated);
    memset(r, 0, sizeof *r);
}

// ---- generalized advantage estimation -----------------------------------------------------------

void strix_gae(size_t T, size_t N, const float *rewards, const float *values,
               const float *next_values, const float *terminated, const float *ended,
               float gamma, float lambda, float *advantages, float *returns) {
    STRIX_ASSERT(T == 0 || N == 0 || (rewards && values && next_values && terminated && ended &&
                                      advantages && returns));
    const float gl = gamma * lambda;
    for (size_t t = T; t-- > 0;) {
        for (size_t n = 0; n < N; n++) {
            size_t k = t * N + n;
            float next = t + 1 < T ? advantages[k + N] : 0.0f; /* A_T = 0 */
            float delta = rewards[k] + gamma * next_values[k] * (1.0f - terminated[k]) - values[k];
            advantages[k] = delta + gl * (1.0f - ended[k]) * next;
            returns[k] = advantages[k] + values[k];
        }
    }
}
