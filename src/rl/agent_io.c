/*
 * agent_io.c - the agent file: one safetensors file holding everything a run needs to continue
 * bit for bit (strix_agent_save / strix_agent_load).
 *
 * Tensors:
 *   <block>.<param>                 every parameter of every block (F32), e.g. "q.network.0.weight",
 *                                   "ac.actor.4.bias", "critic_target.qf2.0.weight", "alpha.log_alpha"
 *   <block>.optim.m.<param>, .v.    Adam's moments of the trained blocks (F32)
 *   env.state (n_envs, 4)           each environment's double state, as its I64 bits
 *   env.position (n_envs, 3)        steps, needs_reset, reset stream (I64)
 *   env.obs (n_envs, obs_dim)       the observations to act on next (F32)
 *   env.episode (n_envs, 2)         the running episodes: return bits, length (I64)
 *   episodes.step, .return, .length the finished episodes (I64, I64 bits, I32; absent when none)
 *   replay.obs, .actions, .rewards, .next_obs, .terminated   the first `size` slots (F32)
 * __metadata__: format "strix-rl-agent", format_version "1", backend (the name of the backend
 * that ran it: its GEMM decides the rounding, so a run continues bit for bit on the same one),
 * every strix_agent_config field
 * under its name (floats as the shortest text that reads back as the same float), and the run:
 * steps, updates, iterations, episodes, last_loss (hex bits), rng (16 hex digits), replay_size,
 * replay_pos, <block>.adam_steps.
 */
#define _POSIX_C_SOURCE 200809L // strdup

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rl/rl_internal.h"
#include "strix/safetensors.h"

#define FORMAT "strix-rl-agent"

// ---- the config as metadata --------------------------------------------------------------------

typedef enum field_type { F_INT, F_I64, F_U64, F_FLOAT, F_BOOL, F_ALGO, F_ENV } field_type;

typedef struct field {
    const char *key;
    field_type type;
    size_t offset;
} field;

#define FIELD(name, type) {#name, type, offsetof(strix_agent_config, name)}
static const field fields[] = {
    FIELD(algo, F_ALGO), FIELD(env, F_ENV), FIELD(seed, F_U64), FIELD(total_steps, F_I64),
    {"hidden0", F_INT, offsetof(strix_agent_config, hidden)},
    {"hidden1", F_INT, offsetof(strix_agent_config, hidden) + sizeof(int)},
    FIELD(lr, F_FLOAT), FIELD(policy_lr, F_FLOAT), FIELD(anneal_lr, F_BOOL),
    FIELD(gamma, F_FLOAT), FIELD(adam_eps, F_FLOAT), FIELD(max_grad_norm, F_FLOAT),
    FIELD(n_envs, F_INT), FIELD(n_steps, F_INT), FIELD(gae_lambda, F_FLOAT),
    FIELD(epochs, F_INT), FIELD(minibatches, F_INT), FIELD(clip_coef, F_FLOAT),
    FIELD(clip_vloss, F_BOOL), FIELD(norm_adv, F_BOOL), FIELD(ent_coef, F_FLOAT),
    FIELD(vf_coef, F_FLOAT), FIELD(buffer_size, F_I64), FIELD(batch_size, F_INT),
    FIELD(learning_starts, F_I64), FIELD(train_freq, F_INT), FIELD(target_freq, F_INT),
    FIELD(tau, F_FLOAT), FIELD(eps_start, F_FLOAT), FIELD(eps_end, F_FLOAT),
    FIELD(eps_fraction, F_FLOAT), FIELD(double_q, F_BOOL), FIELD(policy_freq, F_INT),
    FIELD(alpha, F_FLOAT), FIELD(autotune, F_BOOL)};
#define N_FIELDS (sizeof fields / sizeof *fields)

static void field_text(const strix_agent_config *c, const field *f, char *buf, size_t cap) {
    const char *p = (const char *)c + f->offset;
    switch (f->type) {
    case F_INT: snprintf(buf, cap, "%d", *(const int *)p); break;
    case F_I64: snprintf(buf, cap, "%" PRId64, *(const int64_t *)p); break;
    case F_U64: snprintf(buf, cap, "%" PRIu64, *(const uint64_t *)p); break;
    case F_BOOL: snprintf(buf, cap, "%s", *(const bool *)p ? "true" : "false"); break;
    case F_ALGO: snprintf(buf, cap, "%s", strix_rl_algo_name(*(const strix_rl_algo *)p)); break;
    case F_ENV: snprintf(buf, cap, "%s", strix_env_spec_of(*(const strix_env_kind *)p)->name); break;
    case F_FLOAT: {
        float v = *(const float *)p;
        for (int digits = 6; digits <= 9; digits++) { /* the shortest that reads back */
            snprintf(buf, cap, "%.*g", digits, (double)v);
            if (strtof(buf, NULL) == v) break;
        }
        break;
    }
    }
}

static strix_status field_parse(strix_agent_config *c, const field *f, const char *s) {
    char *p = (char *)c + f->offset, *end = NULL;
    errno = 0;
    switch (f->type) {
    case F_INT: {
        long v = strtol(s, &end, 10);
        if (*s && !*end && !errno && v >= -2147483647L && v <= 2147483647L) {
            *(int *)p = (int)v;
            return STRIX_OK;
        }
        break;
    }
    case F_I64: {
        long long v = strtoll(s, &end, 10);
        if (*s && !*end && !errno) {
            *(int64_t *)p = v;
            return STRIX_OK;
        }
        break;
    }
    case F_U64: {
        unsigned long long v = strtoull(s, &end, 10);
        if (*s && *s != '-' && !*end && !errno) {
            *(uint64_t *)p = v;
            return STRIX_OK;
        }
        break;
    }
    case F_FLOAT: {
        float v = strtof(s, &end);
        if (*s && !*end && !errno) {
            *(float *)p = v;
            return STRIX_OK;
        }
        break;
    }
    case F_BOOL:
        if (!strcmp(s, "true") || !strcmp(s, "false")) {
            *(bool *)p = !strcmp(s, "true");
            return STRIX_OK;
        }
        break;
    case F_ALGO:
        if (strix_rl_algo_of(s, (strix_rl_algo *)p) == STRIX_OK) return STRIX_OK;
        break;
    case F_ENV:
        if (strix_env_kind_of(s, (strix_env_kind *)p) == STRIX_OK) return STRIX_OK;
        break;
    }
    return strix_error(STRIX_ERR_FORMAT, "bad value '%s' for %s", s, f->key);
}

// ---- saving ------------------------------------------------------------------------------------

#define MAX_META 96
#define MAX_TENSORS 160

typedef struct writer {
    strix_st_tensor t[MAX_TENSORS];
    strix_st_dtype dt[MAX_TENSORS];
    const void *raw[MAX_TENSORS];
    char *names[MAX_TENSORS];
    void *owned[MAX_TENSORS]; /* host copies */
    int n;
    strix_st_meta meta[MAX_META];
    char keys[MAX_META][96], values[MAX_META][64];
    int n_meta;
} writer;

static void meta_add(writer *w, const char *key, const char *fmt, ...) STRIX_PRINTF(3, 4);
static void meta_add(writer *w, const char *key, const char *fmt, ...) {
    STRIX_ASSERT(w->n_meta < MAX_META, "too many metadata keys");
    int i = w->n_meta++;
    snprintf(w->keys[i], sizeof w->keys[i], "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->values[i], sizeof w->values[i], fmt, ap);
    va_end(ap);
    w->meta[i] = (strix_st_meta){w->keys[i], w->values[i]};
}

/* Adds a tensor of host data (copied when `copy`: the writer then owns it). rows may be 0 (then
 * the tensor is left out). */
static strix_status tensor_add(writer *w, const char *name, int ndim, int64_t d0, int64_t d1,
                               strix_st_dtype dtype, const void *data, size_t bytes, bool copy) {
    if (d0 == 0 || d1 == 0) return STRIX_OK;
    STRIX_ASSERT(w->n < MAX_TENSORS, "too many tensors");
    int i = w->n;
    w->names[i] = strdup(name);
    void *buf = (void *)data;
    if (copy) {
        buf = malloc(bytes);
        if (buf) memcpy(buf, data, bytes);
        w->owned[i] = buf;
    }
    if (!w->names[i] || !buf) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    w->n++;
    w->t[i] = (strix_st_tensor){.name = w->names[i], .ndim = ndim, .shape = {d0, d1, 1, 1}};
    w->dt[i] = dtype;
    if (dtype == STRIX_ST_F32) {
        w->t[i].data = buf;
        w->raw[i] = NULL;
    } else {
        w->raw[i] = buf;
    }
    return STRIX_OK;
}

/* Adds a device array (n floats) under name, copied to the host. */
static strix_status device_add(strix_agent *a, writer *w, const char *name, const strix_param *p,
                               const float *dev) {
    float *h = malloc(sizeof(float) * p->numel);
    if (!h) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    strix_status st = strix_copy(a->be, h, dev, sizeof(float) * p->numel, STRIX_COPY_D2H);
    if (st == STRIX_OK) {
        STRIX_ASSERT(w->n < MAX_TENSORS, "too many tensors");
        int i = w->n++;
        w->names[i] = strdup(name);
        w->owned[i] = h;
        w->t[i] = (strix_st_tensor){.name = w->names[i], .ndim = p->ndim, .data = h};
        for (int k = 0; k < STRIX_MAX_DIMS; k++) w->t[i].shape[k] = p->shape[k];
        w->dt[i] = STRIX_ST_F32;
        if (!w->names[i]) st = strix_error(STRIX_ERR_ALLOC, "out of memory");
    } else {
        free(h);
    }
    return st;
}

static void writer_free(writer *w) {
    for (int i = 0; i < w->n; i++) {
        free(w->names[i]);
        free(w->owned[i]);
    }
}

static strix_status save_blocks(strix_agent *a, writer *w) {
    char name[256];
    for (int b = 0; b < a->n_blocks; b++) {
        rl_block *bl = &a->blocks[b];
        for (int i = 0; i < bl->ps.count; i++) {
            const strix_param *p = bl->ps.items[i];
            snprintf(name, sizeof name, "%s.%s", bl->name, p->name);
            STRIX_TRY(device_add(a, w, name, p, p->data));
            if (!bl->opt) continue;
            snprintf(name, sizeof name, "%s.optim.m.%s", bl->name, p->name);
            STRIX_TRY(device_add(a, w, name, p, bl->ps.m + p->offset));
            snprintf(name, sizeof name, "%s.optim.v.%s", bl->name, p->name);
            STRIX_TRY(device_add(a, w, name, p, bl->ps.v + p->offset));
        }
        if (bl->opt) {
            snprintf(name, sizeof name, "%s.adam_steps", bl->name);
            meta_add(w, name, "%" PRId64, strix_optimizer_steps(bl->opt, bl->ps.items[0]->name));
        }
    }
    return STRIX_OK;
}

static strix_status save_run(strix_agent *a, writer *w) {
    int N = a->n_envs, od = a->spec->obs_dim;
    int64_t *state = calloc((size_t)N * 4, sizeof(int64_t));
    int64_t *pos = calloc((size_t)N * 3, sizeof(int64_t));
    int64_t *ep = calloc((size_t)N * 2, sizeof(int64_t));
    strix_status st = state && pos && ep ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "out of memory");
    for (int i = 0; i < N && st == STRIX_OK; i++) {
        memcpy(state + 4 * i, a->envs[i].state, sizeof(double) * 4);
        pos[3 * i] = a->envs[i].steps;
        pos[3 * i + 1] = a->envs[i].needs_reset;
        memcpy(&pos[3 * i + 2], &a->envs[i].rng.state, sizeof(int64_t));
        memcpy(&ep[2 * i], &a->ep_return[i], sizeof(double));
        ep[2 * i + 1] = a->ep_length[i];
    }
    if (st == STRIX_OK)
        st = tensor_add(w, "env.state", 2, N, 4, STRIX_ST_I64, state, sizeof(int64_t) * 4 * N, true);
    if (st == STRIX_OK)
        st = tensor_add(w, "env.position", 2, N, 3, STRIX_ST_I64, pos, sizeof(int64_t) * 3 * N, true);
    if (st == STRIX_OK)
        st = tensor_add(w, "env.episode", 2, N, 2, STRIX_ST_I64, ep, sizeof(int64_t) * 2 * N, true);
    if (st == STRIX_OK)
        st = tensor_add(w, "env.obs", 2, N, od, STRIX_ST_F32, a->obs,
                        sizeof(float) * (size_t)N * (size_t)od, false);
    free(state);
    free(pos);
    free(ep);
    STRIX_TRY(st);
    int64_t E = a->n_episodes;
    int64_t *es = malloc(sizeof(int64_t) * (size_t)(E ? E : 1));
    int64_t *er = malloc(sizeof(int64_t) * (size_t)(E ? E : 1));
    int32_t *el = malloc(sizeof(int32_t) * (size_t)(E ? E : 1));
    st = es && er && el ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "out of memory");
    for (int64_t i = 0; i < E && st == STRIX_OK; i++) {
        es[i] = a->episodes[i].step;
        memcpy(&er[i], &a->episodes[i].ret, sizeof(double));
        el[i] = a->episodes[i].length;
    }
    if (st == STRIX_OK)
        st = tensor_add(w, "episodes.step", 1, E, 1, STRIX_ST_I64, es, sizeof(int64_t) * E, true);
    if (st == STRIX_OK)
        st = tensor_add(w, "episodes.return", 1, E, 1, STRIX_ST_I64, er, sizeof(int64_t) * E, true);
    if (st == STRIX_OK)
        st = tensor_add(w, "episodes.length", 1, E, 1, STRIX_ST_I32, el, sizeof(int32_t) * E, true);
    free(es);
    free(er);
    free(el);
    STRIX_TRY(st);
    const strix_replay *r = &a->replay;
    if (r->capacity > 0) {
        size_t S = (size_t)r->size;
        STRIX_TRY(tensor_add(w, "replay.obs", 2, r->size, r->obs_dim, STRIX_ST_F32, r->obs,
                             sizeof(float) * S * (size_t)r->obs_dim, false));
        STRIX_TRY(tensor_add(w, "replay.next_obs", 2, r->size, r->obs_dim, STRIX_ST_F32,
                             r->next_obs, sizeof(float) * S * (size_t)r->obs_dim, false));
        STRIX_TRY(tensor_add(w, "replay.actions", 2, r->size, r->action_dim, STRIX_ST_F32,
                             r->actions, sizeof(float) * S * (size_t)r->action_dim, false));
        STRIX_TRY(tensor_add(w, "replay.rewards", 1, r->size, 1, STRIX_ST_F32, r->rewards,
                             sizeof(float) * S, false));
        STRIX_TRY(tensor_add(w, "replay.terminated", 1, r->size, 1, STRIX_ST_F32,
                             r->terminated, sizeof(float) * S, false));
    }
    uint64_t loss_bits;
    memcpy(&loss_bits, &a->last_loss, sizeof loss_bits);
    meta_add(w, "steps", "%" PRId64, a->steps);
    meta_add(w, "updates", "%" PRId64, a->updates);
    meta_add(w, "iterations", "%" PRId64, a->iterations);
    meta_add(w, "episodes", "%" PRId64, a->n_episodes);
    meta_add(w, "last_loss", "%016" PRIx64, loss_bits);
    meta_add(w, "rng", "%016" PRIx64, a->rng.state);
    meta_add(w, "replay_size", "%" PRId64, r->size);
    meta_add(w, "replay_pos", "%" PRId64, r->pos);
    return STRIX_OK;
}

strix_status strix_agent_save(strix_agent *a, const char *path) {
    writer *w = calloc(1, sizeof *w);
    if (!w) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    meta_add(w, "format", FORMAT);
    meta_add(w, "format_version", "1");
    meta_add(w, "backend", "%s", strix_backend_name(a->be));
    char buf[64];
    for (size_t i = 0; i < N_FIELDS; i++) {
        field_text(&a->cfg, &fields[i], buf, sizeof buf);
        meta_add(w, fields[i].key, "%s", buf);
    }
    strix_status st = save_blocks(a, w);
    if (st == STRIX_OK) st = save_run(a, w);
    if (st == STRIX_OK)
        st = strix_safetensors_write_ex(path, w->t, w->dt, w->raw, w->n, w->meta, w->n_meta);
    writer_free(w);
    free(w);
    return st;
}

// ---- loading -----------------------------------------------------------------------------------

/* The tensor `name` with dtype and shape (d0, d1) (d1 0: one dim), or an error naming it. */
static strix_status need(const strix_safetensors *f, const char *name, strix_st_dtype dtype,
                         int64_t d0, int64_t d1, const strix_st_tensor **out) {
    const strix_st_tensor *t = strix_safetensors_find(f, name);
    if (!t) return strix_error(STRIX_ERR_FORMAT, "the agent file has no tensor %s", name);
    bool ok = t->dtype == dtype && t->ndim == (d1 ? 2 : 1) && t->shape[0] == d0 &&
              (!d1 || t->shape[1] == d1);
    if (!ok) return strix_error(STRIX_ERR_FORMAT, "tensor %s has the wrong type or shape", name);
    *out = t;
    return STRIX_OK;
}

static strix_status meta_i64(const strix_safetensors *f, const char *key, int64_t lo, int64_t hi,
                             int64_t *out) {
    const char *s = strix_safetensors_meta(f, key);
    if (!s) return strix_error(STRIX_ERR_FORMAT, "the agent file has no '%s'", key);
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return strix_error(STRIX_ERR_FORMAT, "bad '%s' in the agent file: %s", key, s);
    *out = v;
    return STRIX_OK;
}

static strix_status meta_hex(const strix_safetensors *f, const char *key, uint64_t *out) {
    const char *s = strix_safetensors_meta(f, key);
    if (!s) return strix_error(STRIX_ERR_FORMAT, "the agent file has no '%s'", key);
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 16);
    if (strlen(s) != 16 || *end || errno)
        return strix_error(STRIX_ERR_FORMAT, "bad '%s' in the agent file: %s", key, s);
    *out = v;
    return STRIX_OK;
}

static strix_status to_device(strix_agent *a, const strix_safetensors *f, const char *name,
                              const strix_param *p, float *dev) {
    const strix_st_tensor *t = strix_safetensors_find(f, name);
    if (!t) return strix_error(STRIX_ERR_FORMAT, "the agent file has no tensor %s", name);
    bool ok = t->dtype == STRIX_ST_F32 && t->ndim == p->ndim && t->data;
    for (int k = 0; ok && k < p->ndim; k++) ok = t->shape[k] == p->shape[k];
    if (!ok) return strix_error(STRIX_ERR_FORMAT, "tensor %s has the wrong type or shape", name);
    for (size_t i = 0; i < p->numel; i++)
        if (!isfinite(t->data[i]))
            return strix_error(STRIX_ERR_FORMAT, "tensor %s holds a non-finite value", name);
    return strix_copy(a->be, dev, t->data, sizeof(float) * p->numel, STRIX_COPY_H2D);
}

static strix_status load_blocks(strix_agent *a, const strix_safetensors *f, int *used) {
    char name[256];
    for (int b = 0; b < a->n_blocks; b++) {
        rl_block *bl = &a->blocks[b];
        for (int i = 0; i < bl->ps.count; i++) {
            const strix_param *p = bl->ps.items[i];
            snprintf(name, sizeof name, "%s.%s", bl->name, p->name);
            STRIX_TRY(to_device(a, f, name, p, p->data));
            ++*used;
            if (!bl->opt) continue;
            snprintf(name, sizeof name, "%s.optim.m.%s", bl->name, p->name);
            STRIX_TRY(to_device(a, f, name, p, bl->ps.m + p->offset));
            snprintf(name, sizeof name, "%s.optim.v.%s", bl->name, p->name);
            STRIX_TRY(to_device(a, f, name, p, bl->ps.v + p->offset));
            *used += 2;
        }
        if (bl->opt) {
            int64_t steps = 0;
            snprintf(name, sizeof name, "%s.adam_steps", bl->name);
            STRIX_TRY(meta_i64(f, name, 0, INT64_MAX, &steps));
            strix_optimizer_set_steps(bl->opt, steps);
        }
    }
    return STRIX_OK;
}

static strix_status load_run(strix_agent *a, const strix_safetensors *f, int *used) {
    int N = a->n_envs, od = a->spec->obs_dim;
    const strix_st_tensor *ts = NULL, *tp = NULL, *te = NULL, *to = NULL;
    STRIX_TRY(need(f, "env.state", STRIX_ST_I64, N, 4, &ts));
    STRIX_TRY(need(f, "env.position", STRIX_ST_I64, N, 3, &tp));
    STRIX_TRY(need(f, "env.episode", STRIX_ST_I64, N, 2, &te));
    STRIX_TRY(need(f, "env.obs", STRIX_ST_F32, N, od, &to));
    *used += 4;
    int64_t steps, updates, iterations, E, rsize, rpos;
    uint64_t rng, loss_bits;
    /* an iteration takes at most one rollout or one batch of whole episodes past the end */
    const strix_agent_config *c = &a->cfg;
    int64_t slack = (int64_t)c->n_envs * (c->n_steps > a->spec->max_steps ? c->n_steps
                                                                          : a->spec->max_steps);
    STRIX_TRY(meta_i64(f, "steps", 0, c->total_steps + slack, &steps));
    STRIX_TRY(meta_i64(f, "updates", 0, INT64_MAX, &updates));
    STRIX_TRY(meta_i64(f, "iterations", 0, steps, &iterations));
    STRIX_TRY(meta_i64(f, "episodes", 0, steps, &E));
    STRIX_TRY(meta_hex(f, "rng", &rng));
    STRIX_TRY(meta_hex(f, "last_loss", &loss_bits));
    STRIX_TRY(meta_i64(f, "replay_size", 0, a->replay.capacity, &rsize));
    STRIX_TRY(meta_i64(f, "replay_pos", 0, a->replay.capacity ? a->replay.capacity - 1 : 0, &rpos));
    if (rsize < a->replay.capacity && rpos != rsize)
        return strix_error(STRIX_ERR_FORMAT, "inconsistent replay position in the agent file");
    const strix_st_tensor *es = NULL, *er = NULL, *el = NULL;
    if (E > 0) {
        STRIX_TRY(need(f, "episodes.step", STRIX_ST_I64, E, 0, &es));
        STRIX_TRY(need(f, "episodes.return", STRIX_ST_I64, E, 0, &er));
        STRIX_TRY(need(f, "episodes.length", STRIX_ST_I32, E, 0, &el));
        *used += 3;
    }
    const strix_st_tensor *ro = NULL, *rn = NULL, *ra = NULL, *rr = NULL, *rt = NULL;
    strix_replay *r = &a->replay;
    if (rsize > 0) {
        STRIX_TRY(need(f, "replay.obs", STRIX_ST_F32, rsize, r->obs_dim, &ro));
        STRIX_TRY(need(f, "replay.next_obs", STRIX_ST_F32, rsize, r->obs_dim, &rn));
        STRIX_TRY(need(f, "replay.actions", STRIX_ST_F32, rsize, r->action_dim, &ra));
        STRIX_TRY(need(f, "replay.rewards", STRIX_ST_F32, rsize, 0, &rr));
        STRIX_TRY(need(f, "replay.terminated", STRIX_ST_F32, rsize, 0, &rt));
        *used += 5;
    }
    /* every check passed: apply */
    for (int i = 0; i < N; i++) {
        const unsigned char *s = (const unsigned char *)ts->raw + 32 * (size_t)i;
        const unsigned char *p = (const unsigned char *)tp->raw + 24 * (size_t)i;
        const unsigned char *e = (const unsigned char *)te->raw + 16 * (size_t)i;
        int64_t pos[3], ep[2];
        memcpy(a->envs[i].state, s, 32);
        memcpy(pos, p, 24);
        memcpy(ep, e, 16);
        if (pos[0] < 0 || pos[0] > a->spec->max_steps || (pos[1] != 0 && pos[1] != 1) ||
            ep[1] < 0 || ep[1] > a->spec->max_steps)
            return strix_error(STRIX_ERR_FORMAT, "inconsistent environment %d in the agent file", i);
        a->envs[i].steps = (int)pos[0];
        a->envs[i].needs_reset = pos[1] != 0;
        memcpy(&a->envs[i].rng.state, &pos[2], sizeof(uint64_t));
        memcpy(&a->ep_return[i], &ep[0], sizeof(double));
        a->ep_length[i] = (int)ep[1];
    }
    memcpy(a->obs, to->data, sizeof(float) * (size_t)N * (size_t)od);
    if (E > a->cap_episodes) {
        strix_rl_episode *ne = realloc(a->episodes, sizeof *ne * (size_t)E);
        if (!ne) return strix_error(STRIX_ERR_ALLOC, "out of memory");
        a->episodes = ne;
        a->cap_episodes = E;
    }
    for (int64_t i = 0; i < E; i++) {
        strix_rl_episode *e = &a->episodes[i];
        int32_t len;
        memcpy(&e->step, (const char *)es->raw + 8 * i, 8);
        memcpy(&e->ret, (const char *)er->raw + 8 * i, 8);
        memcpy(&len, (const char *)el->raw + 4 * i, 4);
        e->length = len;
        if (!isfinite(e->ret) || len < 1 || len > a->spec->max_steps || e->step < len ||
            e->step > steps || (i > 0 && e->step < a->episodes[i - 1].step))
            return strix_error(STRIX_ERR_FORMAT, "inconsistent episode %" PRId64
                               " in the agent file", i);
    }
    a->n_episodes = E;
    if (rsize > 0) {
        memcpy(r->obs, ro->data, sizeof(float) * (size_t)rsize * (size_t)r->obs_dim);
        memcpy(r->next_obs, rn->data, sizeof(float) * (size_t)rsize * (size_t)r->obs_dim);
        memcpy(r->actions, ra->data, sizeof(float) * (size_t)rsize * (size_t)r->action_dim);
        memcpy(r->rewards, rr->data, sizeof(float) * (size_t)rsize);
        memcpy(r->terminated, rt->data, sizeof(float) * (size_t)rsize);
    }
    r->size = rsize;
    r->pos = rpos;
    a->steps = steps;
    a->updates = updates;
    a->iterations = iterations;
    a->rng.state = rng;
    memcpy(&a->last_loss, &loss_bits, sizeof loss_bits);
    return STRIX_OK;
}

strix_status strix_agent_probe(const char *path, char *backend, size_t cap) {
    strix_safetensors *f = NULL;
    strix_st_read_options lazy = {.lazy = true, .no_mmap = true};
    STRIX_TRY(strix_safetensors_read_ex(path, &lazy, &f));
    const char *format = strix_safetensors_meta(f, "format");
    const char *be = strix_safetensors_meta(f, "backend");
    strix_status st = STRIX_OK;
    if (!format || strcmp(format, FORMAT) != 0)
        st = strix_error(STRIX_ERR_FORMAT, "%s is not a strix agent file (format '%s')", path,
                         format ? format : "none");
    else if (backend && cap > 0)
        snprintf(backend, cap, "%s", be ? be : "");
    strix_safetensors_free(f);
    return st;
}

strix_status strix_agent_load(strix_backend *be, const char *path, strix_agent **out) {
    *out = NULL;
    /* read into memory, not mapped: a file rewritten in place (cp) while it loads gives a
     * format error, never a SIGBUS */
    strix_safetensors *f = NULL;
    strix_st_read_options in_memory = {.no_mmap = true};
    STRIX_TRY(strix_safetensors_read_ex(path, &in_memory, &f));
    strix_status st = STRIX_OK;
    const char *format = strix_safetensors_meta(f, "format");
    const char *version = strix_safetensors_meta(f, "format_version");
    if (!format || strcmp(format, FORMAT) != 0)
        st = strix_error(STRIX_ERR_FORMAT, "%s is not a strix agent file (format '%s')", path,
                         format ? format : "none");
    else if (!version || strcmp(version, "1") != 0)
        st = strix_error(STRIX_ERR_FORMAT, "%s: unknown agent format version '%s'", path,
                         version ? version : "none");
    strix_agent_config cfg = {0};
    for (size_t i = 0; i < N_FIELDS && st == STRIX_OK; i++) {
        const char *v = strix_safetensors_meta(f, fields[i].key);
        st = v ? field_parse(&cfg, &fields[i], v)
               : strix_error(STRIX_ERR_FORMAT, "the agent file has no '%s'", fields[i].key);
    }
    if (st == STRIX_OK && strix_agent_config_check(&cfg) != STRIX_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", strix_last_error());
        st = strix_error(STRIX_ERR_FORMAT, "%s: bad agent config: %s", path, why);
    }
    strix_agent *a = NULL;
    if (st == STRIX_OK) st = strix_agent_new(be, &cfg, &a);
    int used = 0;
    if (st == STRIX_OK) st = load_blocks(a, f, &used);
    if (st == STRIX_OK) st = load_run(a, f, &used);
    if (st == STRIX_ERR_FORMAT && strncmp(strix_last_error(), path, strlen(path)) != 0) {
        char why[512];
        snprintf(why, sizeof why, "%s", strix_last_error());
        st = strix_error(STRIX_ERR_FORMAT, "%s: %s", path, why);
    }
    if (st == STRIX_OK && used != strix_safetensors_count(f))
        st = strix_error(STRIX_ERR_FORMAT, "%s holds %d tensors that are not this agent's", path,
                         strix_safetensors_count(f) - used);
    strix_safetensors_free(f);
    if (st != STRIX_OK) {
        strix_agent_free(a);
        return st;
    }
    *out = a;
    return STRIX_OK;
}
