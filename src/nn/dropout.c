/*
 * dropout.c - Dropout (PyTorch nn.Dropout, inverted) on the counter-RNG dropout primitive.
 *
 * The mask of a forward is a pure function of (seed, offset): backward re-applies the same
 * primitive with the same (seed, offset) to dy, which selects and scales exactly the elements
 * the forward kept, so no mask is stored. Eval mode and p = 0 are the identity (views).
 * Relevance passes through (every rule): unchanged in eval mode, and after a training forward
 * through the same mask without the scale (y = x/(1 − p) on kept units gives them all of their
 * relevance, dropped units get none).
 */
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

static strix_status dropout_fwd(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    strix_dropout *m = (strix_dropout *)mod;
    strix_backend *be = m->base.be;
    if (!m->training || m->p == 0.0f) {
        m->work->last_dropped = false;
        m->work->ident_out = nn_view_of(x);
        if (y) *y = &m->work->ident_out;
        return STRIX_OK;
    }
    size_t n = (size_t)strix_tensor_numel(x);
    STRIX_TRY(nn_ensure_same(be, &m->work->out, x));
    float scale = m->p < 1.0f ? 1.0f / (1.0f - m->p) : 0.0f;
    if (n > 0)
        STRIX_TRY(strix_dropout_forward(be, x->data, m->work->out.data, NULL, n, m->p, scale,
                                        m->seed, m->offset));
    m->work->last_dropped = true;
    m->work->last_offset = m->offset;
    m->offset += n;
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

static strix_status dropout_bwd(strix_module *mod, const strix_tensor *dy,
                                const strix_tensor **dx) {
    strix_dropout *m = (strix_dropout *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("Dropout", dy,
                            m->work->last_dropped ? &m->work->out : &m->work->ident_out));
    if (!m->work->last_dropped) {
        m->work->ident_dx = nn_view_of(dy);
        if (dx) *dx = &m->work->ident_dx;
        return STRIX_OK;
    }
    size_t n = (size_t)strix_tensor_numel(dy);
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, dy));
    float scale = m->p < 1.0f ? 1.0f / (1.0f - m->p) : 0.0f;
    if (n > 0)
        STRIX_TRY(strix_dropout_forward(be, dy->data, m->work->dx.data, NULL, n, m->p, scale,
                                        m->seed, m->work->last_offset));
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

static strix_status dropout_relevance(strix_module *mod, const strix_tensor *r,
                                      const strix_tensor **r_in) {
    strix_dropout *m = (strix_dropout *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("Dropout", r,
                            m->work->last_dropped ? &m->work->out : &m->work->ident_out));
    if (!m->work->last_dropped) {
        if (r_in) *r_in = r;
        return STRIX_OK;
    }
    size_t n = (size_t)strix_tensor_numel(r);
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, r));
    if (n > 0)
        STRIX_TRY(strix_dropout_forward(be, r->data, m->work->dx.data, NULL, n, m->p, 1.0f, m->seed,
                                        m->work->last_offset));
    if (r_in) *r_in = &m->work->dx;
    return STRIX_OK;
}

static void dropout_set_training(strix_module *mod, bool training) {
    ((strix_dropout *)mod)->training = training;
}

static void dropout_destroy(strix_module *mod) {
    strix_dropout *m = (strix_dropout *)mod;
    strix_tensor_free(&m->work->out);
    strix_tensor_free(&m->work->dx);
    free(m);
}

static bool dropout_get_training(const strix_module *mod) {
    return ((const strix_dropout *)mod)->training;
}
static const strix_module_i dropout_vt = {
    .type = "Dropout", .forward = dropout_fwd, .backward = dropout_bwd, .destroy = dropout_destroy,
    .set_training = dropout_set_training,
    .get_training = dropout_get_training, .relevance = dropout_relevance,
    .supports_rule = lrp_supports_all};

strix_status strix_dropout_new(strix_backend *be, float p, uint64_t seed, strix_dropout **out) {
    *out = NULL;
    if (!(p >= 0.0f && p <= 1.0f))
        return strix_error(STRIX_ERR_ARG, "Dropout: p %g must be in [0, 1]", (double)p);
    strix_dropout *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("Dropout");
    m->base.vt = &dropout_vt;
    m->base.be = be;
    m->p = p;
    m->seed = seed;
    m->training = true;
    *out = m;
    return STRIX_OK;
}
