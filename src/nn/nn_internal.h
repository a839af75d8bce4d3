/*
 * nn_internal.h - small helpers shared by the modules of src/nn (shape arithmetic, parameter
 * names). Host-side bookkeeping only; no tensor data is touched here.
 */
#ifndef STRIX_NN_INTERNAL_H
#define STRIX_NN_INTERNAL_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strix/nn.h"

/* Rows of a tensor seen as (rows, last dim). */
static inline size_t nn_rows(const strix_tensor *t) {
    int64_t last = t->shape[t->ndim - 1];
    return last > 0 ? (size_t)(strix_tensor_numel(t) / last) : 0;
}

/* STRIX_ERR_SHAPE unless the last dim of x is `dim`. */
static inline strix_status nn_check_last(const char *who, const strix_tensor *x, int dim) {
    if (x->ndim < 1 || x->shape[x->ndim - 1] != dim)
        return strix_error(STRIX_ERR_SHAPE, "%s: input last dim %lld, expected %d", who,
                           x->ndim >= 1 ? (long long)x->shape[x->ndim - 1] : -1LL, dim);
    return STRIX_OK;
}

/* STRIX_ERR_SHAPE unless a and b have the same shape. */
static inline strix_status nn_check_same(const char *who, const strix_tensor *a,
                                         const strix_tensor *b) {
    bool same = a->ndim == b->ndim;
    for (int d = 0; same && d < a->ndim; d++) same = a->shape[d] == b->shape[d];
    if (!same) return strix_error(STRIX_ERR_SHAPE, "%s: gradient shape differs from forward", who);
    return STRIX_OK;
}

/* out = x's shape with the last dim replaced by `last`, into t (grows only when needed). */
static inline strix_status nn_ensure_like(strix_backend *be, strix_tensor *t, const strix_tensor *x,
                                          int64_t last) {
    int64_t shape[STRIX_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) shape[d] = x->shape[d];
    shape[x->ndim - 1] = last;
    return strix_tensor_ensure(be, t, x->ndim, shape);
}

/* A view (non-owning copy) of a tensor, so a module can keep its input's pointer and shape. */
static inline strix_tensor nn_view_of(const strix_tensor *x) {
    strix_tensor v = *x;
    v.owner = NULL;
    v.capacity = 0;
    return v;
}

/* name = prefix + "." + suffix (or suffix alone for an empty prefix); STRIX_ERR_ARG if too long. */
static inline strix_status nn_name(char name[STRIX_PARAM_NAME_MAX], const char *prefix,
                                   const char *suffix) {
    int n = (prefix && prefix[0]) ? snprintf(name, STRIX_PARAM_NAME_MAX, "%s.%s", prefix, suffix)
                                  : snprintf(name, STRIX_PARAM_NAME_MAX, "%s", suffix);
    if (n < 0 || n >= STRIX_PARAM_NAME_MAX)
        return strix_error(STRIX_ERR_ARG, "parameter name too long: %s.%s", prefix, suffix);
    return STRIX_OK;
}

#define NN_ALLOC_FAIL(who) strix_error(STRIX_ERR_ALLOC, "%s: out of memory", who)

/* The common head of every module state object (strix_module_state of strix/nn.h): the module
 * that made it. A module's state struct starts with it and checks `owner` on use. */
struct strix_module_state {
    const strix_module *owner;
};

/* One zeroed block for a module struct and its private work struct (the `work` member points
 * at the second part, aligned for any type), so free(m) releases both. */
static inline size_t nn_work_offset(size_t pub_size) {
    size_t a = _Alignof(max_align_t);
    return (pub_size + a - 1) / a * a;
}
#define NN_CALLOC_WITH_WORK(m)                                                                    \
    do {                                                                                          \
        (m) = calloc(1, nn_work_offset(sizeof *(m)) + sizeof *(m)->work);                         \
        if (m) (m)->work = (void *)((char *)(m) + nn_work_offset(sizeof *(m)));                   \
    } while (0)

/* ---- the private state of the modules of strix/nn.h (caches of the last forward for backward
 * and relevance, scratch buffers); the public structs hold only configuration, parameters and
 * children. Tensors are owned unless marked as views. */

struct strix_linear_work {
    strix_tensor x;             /* view of the input of the last forward */
    strix_tensor out, dx;
};

struct strix_embedding_work {
    const int32_t *ids;         /* backend pointer of the last forward's ids */
    size_t count;
    strix_tensor out;
    strix_tensor rel, ones;     /* relevance: per-id sums, and a row of ones for them */
    int32_t *host_ids;          /* GPU backends: host copy of the ids being checked */
    size_t host_cap;            /* ids host_ids holds room for */
};

struct strix_layernorm_work {
    strix_tensor x;             /* view of the input of the last forward (relevance) */
    strix_tensor out, xhat, row_std, dx, tmp;
};

struct strix_mlp_work {
    strix_tensor h;             /* activation output (..., d_ff) */
};

struct strix_block_work {
    strix_tensor x;             /* view of the input of the last forward */
    strix_tensor x1, out, dx1, dx;
    strix_tensor rel_res, rel_branch, rel_in; /* relevance: residual share, branch share, r_in */
    bool dropped;               /* the last forward ran a dropout site in training mode */
};

#endif
