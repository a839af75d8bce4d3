/*
 * flatten.c - Flatten (PyTorch nn.Flatten): a reshape. The output is a view of the input and the
 * input gradient a view of dy; nothing is copied or allocated. Relevance is reshaped the same
 * way (a view of r, every rule).
 */
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

static strix_status flatten_forward(strix_module *mod, const strix_tensor *x,
                                    const strix_tensor **y) {
    strix_flatten *m = (strix_flatten *)mod;
    int nd = x->ndim;
    int s = m->start_dim < 0 ? m->start_dim + nd : m->start_dim;
    int e = m->end_dim < 0 ? m->end_dim + nd : m->end_dim;
    if (s < 0 || e >= nd || s > e)
        return strix_error(STRIX_ERR_SHAPE, "Flatten: dims %d..%d out of range for %d-d input",
                           m->start_dim, m->end_dim, nd);
    int64_t shape[STRIX_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < s; d++) shape[k++] = x->shape[d];
    int64_t merged = 1;
    for (int d = s; d <= e; d++) merged *= x->shape[d];
    shape[k++] = merged;
    for (int d = e + 1; d < nd; d++) shape[k++] = x->shape[d];
    m->work->in_ndim = nd;
    for (int d = 0; d < STRIX_MAX_DIMS; d++) m->work->in_shape[d] = d < nd ? x->shape[d] : 1;
    m->work->out = nn_reshape_view(x, k, shape);
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

static strix_status flatten_backward(strix_module *mod, const strix_tensor *dy,
                                     const strix_tensor **dx) {
    strix_flatten *m = (strix_flatten *)mod;
    STRIX_TRY(nn_check_same("Flatten", dy, &m->work->out));
    m->work->dx = nn_reshape_view(dy, m->work->in_ndim, m->work->in_shape);
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

/* Pass-through: a view of r with the input's shape (kept in dx, as backward does). */
static strix_status flatten_relevance(strix_module *mod, const strix_tensor *r,
                                      const strix_tensor **r_in) {
    strix_flatten *m = (strix_flatten *)mod;
    STRIX_TRY(nn_check_same("Flatten", r, &m->work->out));
    m->work->dx = nn_reshape_view(r, m->work->in_ndim, m->work->in_shape);
    if (r_in) *r_in = &m->work->dx;
    return STRIX_OK;
}

static void flatten_destroy(strix_module *mod) { free(mod); }

static const strix_module_i flatten_vt = {
    .type = "Flatten", .forward = flatten_forward, .backward = flatten_backward,
    .destroy = flatten_destroy, .relevance = flatten_relevance,
    .supports_rule = lrp_supports_all};

strix_status strix_flatten_new(strix_backend *be, int start_dim, int end_dim,
                               strix_flatten **out) {
    *out = NULL;
    strix_flatten *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("Flatten");
    m->base.vt = &flatten_vt;
    m->base.be = be;
    m->start_dim = start_dim;
    m->end_dim = end_dim;
    *out = m;
    return STRIX_OK;
}
