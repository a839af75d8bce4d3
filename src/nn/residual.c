/*
 * residual.c - Residual: y = x + f(x) around one owned child module f. Backward adds the skip
 * path's dy to f's input gradient. No relevance rule here (the epsilon split comes with LRP).
 */
#include <stdlib.h>

#include "layers_internal.h"

static strix_status res_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    strix_residual *m = (strix_residual *)mod;
    strix_backend *be = m->base.be;
    const strix_tensor *fx;
    STRIX_TRY(strix_module_forward(m->f, x, &fx));
    STRIX_TRY(nn_check_same("Residual: f(x) and x", fx, x));
    STRIX_TRY(nn_ensure_same(be, &m->out, x));
    m->x = nn_view_of(x);
    size_t n = (size_t)strix_tensor_numel(x);
    if (n > 0) STRIX_TRY(strix_add(be, x->data, fx->data, m->out.data, n));
    if (y) *y = &m->out;
    return STRIX_OK;
}

static strix_status res_backward(strix_module *mod, const strix_tensor *dy,
                                 const strix_tensor **dx) {
    strix_residual *m = (strix_residual *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("Residual", dy, &m->out));
    const strix_tensor *df;
    STRIX_TRY(strix_module_backward(m->f, dy, &df));
    if (!df) return strix_error(STRIX_ERR_ARG, "Residual: f computes no input gradient");
    STRIX_TRY(nn_ensure_same(be, &m->dx, dy));
    size_t n = (size_t)strix_tensor_numel(dy);
    if (n > 0) STRIX_TRY(strix_add(be, dy->data, df->data, m->dx.data, n));
    if (dx) *dx = &m->dx;
    return STRIX_OK;
}

static void res_set_training(strix_module *mod, bool training) {
    strix_module_set_training(((strix_residual *)mod)->f, training);
}

static void res_destroy(strix_module *mod) {
    strix_residual *m = (strix_residual *)mod;
    strix_module_free(m->f);
    strix_tensor_free(&m->out);
    strix_tensor_free(&m->dx);
    free(m);
}

static const strix_module_i residual_vt = {
    .type = "Residual", .forward = res_forward, .backward = res_backward, .destroy = res_destroy,
    .set_training = res_set_training};

strix_status strix_residual_new(strix_module *f, strix_residual **out) {
    *out = NULL;
    STRIX_ASSERT(f != NULL, "Residual: NULL module");
    strix_residual *m = calloc(1, sizeof *m);
    if (!m) {
        strix_module_free(f);
        return NN_ALLOC_FAIL("Residual");
    }
    m->base.vt = &residual_vt;
    m->base.be = f->be;
    m->f = f;
    *out = m;
    return STRIX_OK;
}
