/*
 * optimizer.c - SGD, Adam and AdamW objects over a parameter block, with parameter groups
 * (torch.optim semantics, strix/optim.h). State lives in the block's m/v roles; each parameter
 * keeps its own step count. Every update is composed of backend primitives (axpby, adam_step)
 * over runs of parameters that are stored back to back and share group and step count.
 * Does not: allocate in a step, change ps->grad, or touch buffers, frozen parameters and tied
 * aliases.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optim/optim_internal.h"

typedef enum optim_kind { KIND_SGD, KIND_ADAM, KIND_ADAMW } optim_kind;

typedef struct optim_group {
    float lr_scale, weight_decay;
} optim_group;

struct strix_optimizer {
    optim_kind kind;
    strix_params *ps;
    strix_sgd_config sgd;
    strix_adamw_config adam;
    optim_group *groups; /* groups[0] is the default group */
    int group_count;
    int *group_of;       /* per parameter item */
    int64_t *steps;      /* per parameter item: updates taken */
    float *scratch;      /* Adam with L2 decay: g + wd·p (ps->total floats), else NULL */
};

static strix_status optimizer_new(strix_params *ps, optim_kind kind, float weight_decay,
                                  strix_optimizer **out) {
    *out = NULL;
    if (!ps->data)
        return strix_error(STRIX_ERR_ARG, "optimizer: the parameter block is not allocated");
    strix_optimizer *o = calloc(1, sizeof *o);
    if (!o) return strix_error(STRIX_ERR_ALLOC, "optimizer: out of memory");
    int n = ps->count > 0 ? ps->count : 1;
    o->kind = kind;
    o->ps = ps;
    o->groups = malloc(sizeof *o->groups);
    o->group_of = calloc((size_t)n, sizeof *o->group_of);
    o->steps = calloc((size_t)n, sizeof *o->steps);
    if (!o->groups || !o->group_of || !o->steps) {
        strix_optimizer_free(o);
        return strix_error(STRIX_ERR_ALLOC, "optimizer: out of memory");
    }
    o->groups[0] = (optim_group){.lr_scale = 1.0f, .weight_decay = weight_decay};
    o->group_count = 1;
    *out = o;
    return STRIX_OK;
}

/* Adam with L2 decay needs a scratch gradient; allocated once, outside the steps. */
static strix_status ensure_scratch(strix_optimizer *o, float weight_decay) {
    if (o->kind != KIND_ADAM || weight_decay == 0.0f || o->scratch || o->ps->total == 0)
        return STRIX_OK;
    return strix_alloc(o->ps->be, o->ps->total * sizeof(float), (void **)&o->scratch);
}

strix_status strix_optimizer_sgd(strix_params *ps, const strix_sgd_config *cfg,
                                 strix_optimizer **out) {
    *out = NULL;
    if (!(cfg->momentum >= 0.0f) || !(cfg->dampening >= 0.0f) || !(cfg->weight_decay >= 0.0f))
        return strix_error(STRIX_ERR_ARG, "SGD: momentum, dampening and weight decay must be >= 0");
    if (cfg->nesterov && (cfg->momentum <= 0.0f || cfg->dampening != 0.0f))
        return strix_error(STRIX_ERR_ARG, "SGD: Nesterov needs momentum > 0 and dampening 0");
    STRIX_TRY(optimizer_new(ps, KIND_SGD, cfg->weight_decay, out));
    (*out)->sgd = *cfg;
    return STRIX_OK;
}

static strix_status adam_new(strix_params *ps, const strix_adamw_config *cfg, optim_kind kind,
                             strix_optimizer **out) {
    *out = NULL;
    if (!(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f) || !(cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f))
        return strix_error(STRIX_ERR_ARG, "Adam: betas must lie in [0, 1) (got %g, %g)",
                           cfg->beta1, cfg->beta2);
    if (!(cfg->eps >= 0.0f) || !(cfg->weight_decay >= 0.0f))
        return strix_error(STRIX_ERR_ARG, "Adam: eps and weight decay must be >= 0");
    STRIX_TRY(optimizer_new(ps, kind, cfg->weight_decay, out));
    (*out)->adam = *cfg;
    strix_status s = ensure_scratch(*out, cfg->weight_decay);
    if (s != STRIX_OK) {
        strix_optimizer_free(*out);
        *out = NULL;
    }
    return s;
}

strix_status strix_optimizer_adam(strix_params *ps, const strix_adamw_config *cfg,
                                  strix_optimizer **out) {
    return adam_new(ps, cfg, KIND_ADAM, out);
}

strix_status strix_optimizer_adamw(strix_params *ps, const strix_adamw_config *cfg,
                                   strix_optimizer **out) {
    return adam_new(ps, cfg, KIND_ADAMW, out);
}

// ---- groups ------------------------------------------------------------------------------------

typedef struct group_match {
    const char *prefix;     /* or */
    strix_param_pred pred;
    void *user;
} group_match;

static bool matches(const group_match *m, const strix_param *p) {
    return m->pred ? m->pred(p, m->user) : strix_param_name_matches(p->name, m->prefix);
}

static strix_status add_group(strix_optimizer *o, const group_match *m, float lr_scale,
                              float weight_decay) {
    if (!(lr_scale >= 0.0f) || !(weight_decay >= 0.0f))
        return strix_error(STRIX_ERR_ARG, "optimizer group: lr_scale and weight decay must be "
                                          ">= 0");
    strix_params *ps = o->ps;
    int claimed = 0;
    for (int i = 0; i < ps->count; i++) {
        const strix_param *p = ps->items[i];
        if (!p->tied_to && !p->is_buffer && o->group_of[i] == 0 && matches(m, p)) claimed++;
    }
    if (!claimed) {
        if (m->pred) return strix_error(STRIX_ERR_ARG, "optimizer group: no parameter matches");
        return strix_error(STRIX_ERR_ARG, "optimizer group: no parameter matches '%s'",
                           m->prefix);
    }
    STRIX_TRY(ensure_scratch(o, weight_decay));
    optim_group *g = realloc(o->groups, (size_t)(o->group_count + 1) * sizeof *g);
    if (!g) return strix_error(STRIX_ERR_ALLOC, "optimizer group: out of memory");
    o->groups = g;
    int id = o->group_count++;
    g[id] = (optim_group){.lr_scale = lr_scale, .weight_decay = weight_decay};
    for (int i = 0; i < ps->count; i++) {
        const strix_param *p = ps->items[i];
        if (!p->tied_to && !p->is_buffer && o->group_of[i] == 0 && matches(m, p))
            o->group_of[i] = id;
    }
    return STRIX_OK;
}

strix_status strix_optimizer_add_group(strix_optimizer *o, const char *prefix, float lr_scale,
                                       float weight_decay) {
    group_match m = {.prefix = prefix};
    return add_group(o, &m, lr_scale, weight_decay);
}

strix_status strix_optimizer_add_group_if(strix_optimizer *o, strix_param_pred pred, void *user,
                                          float lr_scale, float weight_decay) {
    group_match m = {.pred = pred, .user = user};
    return add_group(o, &m, lr_scale, weight_decay);
}

bool strix_param_no_decay(const strix_param *p, void *user) {
    (void)user;
    return !p->decay;
}

// ---- the step ----------------------------------------------------------------------------------

typedef struct step_ctx {
    const strix_optimizer *o;
    int group;
} step_ctx;

/* Run class: the parameter's step count if it trains in this group, else -1. */
static int64_t step_class(const strix_params *ps, int i, void *user) {
    const step_ctx *c = user;
    if (!optim_trains(ps->items[i]) || c->o->group_of[i] != c->group) return -1;
    return c->o->steps[i];
}

/* SGD over one run of n floats at block offset `off`, `first` on the parameters' first step. */
static strix_status sgd_run(strix_optimizer *o, size_t off, size_t n, float lr, float wd,
                            bool first) {
    strix_params *ps = o->ps;
    strix_backend *be = ps->be;
    const strix_sgd_config *c = &o->sgd;
    float *p = ps->data + off, *buf = ps->m + off, *scratch = ps->v + off;
    const float *g = ps->grad + off;
    if (wd != 0.0f) { /* d_p = g + wd·p */
        STRIX_TRY(strix_axpby(be, 1.0f, g, wd, p, scratch, n));
        g = scratch;
    }
    if (c->momentum != 0.0f) {
        if (first) /* buf = clone(d_p) */
            STRIX_TRY(strix_axpby(be, 1.0f, g, 0.0f, NULL, buf, n));
        else       /* buf = μ·buf + (1 − dampening)·d_p */
            STRIX_TRY(strix_axpby(be, c->momentum, buf, 1.0f - c->dampening, g, buf, n));
        if (c->nesterov) { /* d_p = d_p + μ·buf */
            STRIX_TRY(strix_axpby(be, 1.0f, g, c->momentum, buf, scratch, n));
            g = scratch;
        } else {
            g = buf;
        }
    }
    return strix_axpby(be, 1.0f, p, -lr, g, p, n); /* p = p + (−lr)·d_p */
}

/* Adam / AdamW over one run whose parameters take their step `t` (1-based). */
static strix_status adam_run(strix_optimizer *o, size_t off, size_t n, float lr, float wd,
                             int64_t t) {
    strix_params *ps = o->ps;
    strix_backend *be = ps->be;
    const strix_adamw_config *c = &o->adam;
    float *p = ps->data + off;
    const float *g = ps->grad + off;
    if (wd != 0.0f && o->kind == KIND_ADAMW) /* p = (1 − lr·wd)·p */
        STRIX_TRY(strix_axpby(be, 1.0f - lr * wd, p, 0.0f, NULL, p, n));
    if (wd != 0.0f && o->kind == KIND_ADAM) { /* g = g + wd·p */
        float *scratch = o->scratch + off;
        STRIX_TRY(strix_axpby(be, 1.0f, g, wd, p, scratch, n));
        g = scratch;
    }
    float bc1 = (float)(1.0 - pow(c->beta1, (double)t));
    float bc2 = (float)(1.0 - pow(c->beta2, (double)t));
    return strix_adam_step(be, p, g, ps->m + off, ps->v + off, n, lr, c->beta1, c->beta2, c->eps,
                           bc1, bc2);
}

strix_status strix_optimizer_step(strix_optimizer *o, float lr) {
    if (!(lr >= 0.0f))
        return strix_error(STRIX_ERR_ARG, "optimizer step: lr must be >= 0 (got %g)", lr);
    strix_params *ps = o->ps;
    for (int gi = 0; gi < o->group_count; gi++) {
        const optim_group *g = &o->groups[gi];
        float lr_g = lr * g->lr_scale;
        step_ctx ctx = {.o = o, .group = gi};
        optim_run run;
        int at = 0;
        while (optim_next_run(ps, &at, step_class, &ctx, &run)) {
            if (o->kind == KIND_SGD)
                STRIX_TRY(sgd_run(o, run.offset, run.numel, lr_g, g->weight_decay, run.cls == 0));
            else
                STRIX_TRY(adam_run(o, run.offset, run.numel, lr_g, g->weight_decay, run.cls + 1));
            for (int i = run.begin; i < run.end; i++)
                if (step_class(ps, i, &ctx) == run.cls) o->steps[i]++;
        }
    }
    return STRIX_OK;
}

void strix_optimizer_set_steps(strix_optimizer *o, int64_t steps) {
    STRIX_ASSERT(steps >= 0, "optimizer: negative step count");
    for (int i = 0; i < o->ps->count; i++) o->steps[i] = steps;
}

int64_t strix_optimizer_steps(const strix_optimizer *o, const char *name) {
    for (int i = 0; i < o->ps->count; i++) {
        const strix_param *p = o->ps->items[i];
        if (strcmp(p->name, name) == 0) return p->tied_to || p->is_buffer ? -1 : o->steps[i];
    }
    return -1;
}

void strix_optimizer_free(strix_optimizer *o) {
    if (!o) return;
    if (o->scratch) strix_free(o->ps->be, o->scratch);
    free(o->groups);
    free(o->group_of);
    free(o->steps);
    free(o);
}
