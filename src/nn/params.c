/*
 * params.c - the parameter block: declaration, layout, initialisation (strix/params.h).
 */
#include <stdlib.h>
#include <string.h>

#include "strix/params.h"

void strix_params_init_empty(strix_params *ps, strix_backend *be) {
    memset(ps, 0, sizeof *ps);
    ps->be = be;
}

static strix_param *push(strix_params *ps) {
    if (ps->count == ps->cap) {
        int cap = ps->cap ? 2 * ps->cap : 32;
        strix_param **items = realloc(ps->items, (size_t)cap * sizeof *items);
        if (!items) return NULL;
        ps->items = items;
        ps->cap = cap;
    }
    strix_param *p = calloc(1, sizeof *p);
    if (p) ps->items[ps->count++] = p;
    return p;
}

strix_param *strix_params_add(strix_params *ps, const char *name, int ndim, const int64_t *shape,
                              strix_init init, float init_std, bool decay) {
    STRIX_ASSERT(ps->data == NULL, "parameters added after strix_params_alloc: %s", name);
    STRIX_ASSERT(strix_params_find(ps, name) == NULL, "duplicate parameter %s", name);
    STRIX_ASSERT(ndim >= 1 && ndim <= STRIX_MAX_DIMS && strlen(name) < STRIX_PARAM_NAME_MAX);
    strix_param *p = push(ps);
    if (!p) return NULL;
    strcpy(p->name, name);
    p->ndim = ndim;
    p->numel = 1;
    for (int d = 0; d < STRIX_MAX_DIMS; d++) {
        p->shape[d] = d < ndim ? shape[d] : 1;
        p->numel *= (size_t)p->shape[d];
    }
    p->init = init;
    p->init_std = init_std;
    p->decay = decay;
    p->requires_grad = true;
    p->offset = ps->total;
    ps->total += p->numel;
    return p;
}

strix_param *strix_params_add_buffer(strix_params *ps, const char *name, int ndim,
                                     const int64_t *shape, strix_init init) {
    strix_param *p = strix_params_add(ps, name, ndim, shape, init, 0.0f, false);
    if (p) {
        p->requires_grad = false;
        p->is_buffer = true;
    }
    return p;
}

strix_param *strix_params_tie(strix_params *ps, const char *name, strix_param *target) {
    STRIX_ASSERT(ps->data == NULL && target && target->tied_to == NULL);
    strix_param *p = push(ps);
    if (!p) return NULL;
    *p = *target;
    strcpy(p->name, name);
    p->tied_to = target;
    return p;
}

strix_status strix_params_alloc(strix_params *ps) {
    size_t bytes = ps->total * sizeof(float);
    float **roles[4] = {&ps->data, &ps->grad, &ps->m, &ps->v};
    for (int r = 0; r < 4; r++) {
        STRIX_TRY(strix_alloc(ps->be, bytes, (void **)roles[r]));
        STRIX_TRY(strix_fill(ps->be, *roles[r], 0.0f, ps->total));
    }
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        p->data = ps->data + p->offset;
        p->grad = ps->grad + p->offset;
    }
    return STRIX_OK;
}

strix_status strix_params_init(strix_params *ps, uint64_t seed) {
    size_t max = 0;
    for (int i = 0; i < ps->count; i++)
        if (ps->items[i]->numel > max) max = ps->items[i]->numel;
    float *host = malloc((max ? max : 1) * sizeof(float));
    if (!host) return strix_error(STRIX_ERR_ALLOC, "params: out of memory");
    strix_status s = STRIX_OK;
    for (int i = 0; i < ps->count && s == STRIX_OK; i++) {
        const strix_param *p = ps->items[i];
        if (p->tied_to) continue;
        strix_rng rng;
        strix_rng_seed(&rng, strix_seed_derive(seed, (uint64_t)i));
        for (size_t j = 0; j < p->numel; j++) {
            switch (p->init) {
            case STRIX_INIT_ZEROS: host[j] = 0.0f; break;
            case STRIX_INIT_ONES: host[j] = 1.0f; break;
            case STRIX_INIT_NORMAL: host[j] = (float)(p->init_std * strix_rng_normal(&rng)); break;
            case STRIX_INIT_UNIFORM:
                host[j] = (float)(p->init_std * (2.0 * strix_rng_uniform(&rng) - 1.0));
                break;
            }
        }
        s = strix_copy(ps->be, p->data, host, p->numel * sizeof(float), STRIX_COPY_H2D);
    }
    free(host);
    return s;
}

strix_param *strix_params_find(const strix_params *ps, const char *name) {
    for (int i = 0; i < ps->count; i++)
        if (strcmp(ps->items[i]->name, name) == 0) return ps->items[i];
    return NULL;
}

bool strix_param_name_matches(const char *name, const char *prefix) {
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0) return false;
    return n == 0 || prefix[n - 1] == '.' || name[n] == '\0' || name[n] == '.';
}

strix_status strix_params_set_requires_grad(strix_params *ps, const char *prefix, bool flag) {
    int matched = 0;
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        if (p->is_buffer || !strix_param_name_matches(p->name, prefix)) continue;
        p->requires_grad = flag;
        if (p->tied_to) p->tied_to->requires_grad = flag;
        matched++;
    }
    if (!matched)
        return strix_error(STRIX_ERR_ARG, "set_requires_grad: no parameter matches '%s'", prefix);
    for (int i = 0; i < ps->count; i++) { /* aliases follow their target */
        strix_param *p = ps->items[i];
        if (p->tied_to) p->requires_grad = p->tied_to->requires_grad;
    }
    return STRIX_OK;
}

strix_status strix_params_zero_grad(strix_params *ps) {
    return strix_fill(ps->be, ps->grad, 0.0f, ps->total);
}

void strix_params_free(strix_params *ps) {
    if (!ps) return;
    if (ps->be) {
        strix_free(ps->be, ps->data);
        strix_free(ps->be, ps->grad);
        strix_free(ps->be, ps->m);
        strix_free(ps->be, ps->v);
    }
    for (int i = 0; i < ps->count; i++) free(ps->items[i]);
    free(ps->items);
    memset(ps, 0, sizeof *ps);
}
