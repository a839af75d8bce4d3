/*
 * rmsnorm.c - RMSNorm over the last dim (PyTorch nn.RMSNorm, optional elementwise affine) on the
 * rms-norm primitive pair; the γ gradient is the column sum of the per-element terms dy·x/rms
 * the backward primitive writes. Relevance: pass-through, or with rule.layer_norm_detach_std the
 * epsilon rule of y = (γ/rms)·x with the rms held constant (LXT's RMSNorm).
 */
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

static strix_status rms_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    strix_rmsnorm *m = (strix_rmsnorm *)mod;
    STRIX_ASSERT(!m->weight || m->weight->data != NULL, "RMSNorm: parameters not allocated");
    STRIX_TRY(nn_check_last("RMSNorm", x, m->dim));
    strix_backend *be = m->base.be;
    size_t rows = nn_rows(x);
    STRIX_TRY(nn_ensure_same(be, &m->work->out, x));
    STRIX_TRY(nn_ensure1(be, &m->work->rms, (int64_t)rows));
    m->work->x = nn_view_of(x);
    if (rows > 0)
        STRIX_TRY(strix_rms_norm_forward(be, x->data, m->weight ? m->weight->data : NULL,
                                         m->work->out.data, m->work->rms.data, rows, (size_t)m->dim,
                                         m->eps));
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

static strix_status rms_backward(strix_module *mod, const strix_tensor *dy,
                                 const strix_tensor **dx) {
    strix_rmsnorm *m = (strix_rmsnorm *)mod;
    STRIX_TRY(nn_check_same("RMSNorm", dy, &m->work->out));
    strix_backend *be = m->base.be;
    size_t rows = nn_rows(dy), cols = (size_t)m->dim;
    bool gw = m->weight && nn_wants_grad(m->weight);
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, dy));
    if (gw) STRIX_TRY(nn_ensure_same(be, &m->work->terms, dy));
    if (rows > 0) {
        STRIX_TRY(strix_rms_norm_backward(be, dy->data, m->weight ? m->weight->data : NULL,
                                          m->work->x.data, m->work->rms.data, m->work->dx.data,
                                          gw ? m->work->terms.data : NULL, rows, cols));
        if (gw)
            STRIX_TRY(strix_column_sums(be, m->work->terms.data, m->weight->grad, rows, cols,
                                        1.0f));
    }
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

static void rms_destroy(strix_module *mod) {
    strix_rmsnorm *m = (strix_rmsnorm *)mod;
    strix_tensor *ts[] = {&m->work->out, &m->work->rms, &m->work->dx, &m->work->terms};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    free(m);
}

static strix_status rms_relevance(strix_module *mod, const strix_tensor *r,
                                  const strix_tensor **r_in);

static const strix_module_i rmsnorm_vt = {
    .type = "RMSNorm", .forward = rms_forward, .backward = rms_backward, .destroy = rms_destroy,
    .relevance = rms_relevance, .supports_rule = lrp_supports_all};

strix_status strix_rmsnorm_new(strix_params *ps, const char *prefix, int dim, float eps,
                               bool affine, strix_rmsnorm **out) {
    *out = NULL;
    if (dim <= 0 || !(eps > 0.0f))
        return strix_error(STRIX_ERR_ARG, "RMSNorm %s: dim %d and eps %g must be positive",
                           prefix, dim, (double)eps);
    char wname[STRIX_PARAM_NAME_MAX];
    STRIX_TRY(nn_name(wname, prefix, "weight"));
    strix_rmsnorm *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("RMSNorm");
    m->base.vt = &rmsnorm_vt;
    m->base.be = ps->be;
    m->dim = dim;
    m->eps = eps;
    if (affine) {
        int64_t shape[1] = {dim};
        m->weight = strix_params_add(ps, wname, 1, shape, STRIX_INIT_ONES, 0.0f, false);
        if (!m->weight) {
            free(m);
            return NN_ALLOC_FAIL("RMSNorm");
        }
    }
    *out = m;
    return STRIX_OK;
}

// ---- relevance (LRP) ---------------------------------------------------------------------------

/* Pass-through, or (layer_norm_detach_std) the epsilon rule of the diagonal map y = (γ/rms)·x:
 * z = y (no bias), r_in = y·(r/stab(y)). */
static strix_status rms_relevance(strix_module *mod, const strix_tensor *r,
                                  const strix_tensor **r_in) {
    strix_rmsnorm *m = (strix_rmsnorm *)mod;
    STRIX_TRY(nn_check_same("RMSNorm", r, &m->work->out));
    if (!m->base.rule.layer_norm_detach_std) {
        if (r_in) *r_in = r;
        return STRIX_OK;
    }
    strix_backend *be = m->base.be;
    size_t total = (size_t)strix_tensor_numel(r);
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, r));
    if (total > 0) {
        STRIX_TRY(strix_lrp_stabilized_divide(be, r->data, m->work->out.data, NULL,
                                              m->work->dx.data, total, m->base.rule.epsilon,
                                              STRIX_LRP_GATE_NONE));
        STRIX_TRY(strix_mul(be, m->work->out.data, m->work->dx.data, m->work->dx.data, total));
    }
    if (r_in) *r_in = &m->work->dx;
    return STRIX_OK;
}
