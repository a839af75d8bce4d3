/*
 * layernorm.c - LayerNorm over the last dim (PyTorch nn.LayerNorm, elementwise affine).
 *
 * Forward keeps xhat and the row std for backward; the parameter grads are column sums (dgamma of
 * dy⊙xhat, dbeta of dy). Relevance: pass-through, or with rule.layer_norm_detach_std the
 * epsilon rule with the row std held constant (AttnLRP; LXT's layer_norm), from the input the
 * forward keeps a view of. No RMSNorm here, and no non-affine variant.
 */
#include <stdlib.h>

#include "nn_internal.h"
#include "nn/rules_internal.h"

static strix_status vt_forward(strix_module *m, const strix_tensor *x, const strix_tensor **y) {
    return strix_layernorm_forward((strix_layernorm *)m, x, y);
}
static strix_status vt_backward(strix_module *m, const strix_tensor *dy, const strix_tensor **dx) {
    return strix_layernorm_backward((strix_layernorm *)m, dy, dx);
}
static void vt_destroy(strix_module *m) {
    strix_layernorm *l = (strix_layernorm *)m;
    strix_tensor *ts[] = {&l->work->out, &l->work->xhat, &l->work->row_std, &l->work->dx,
                          &l->work->tmp};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    free(l);
}
static strix_status vt_relevance(strix_module *m, const strix_tensor *r,
                                 const strix_tensor **r_in) {
    return strix_layernorm_relevance((strix_layernorm *)m, NULL, r, r_in);
}
static const strix_module_i layernorm_vt = {
    .type = "LayerNorm", .forward = vt_forward, .backward = vt_backward, .destroy = vt_destroy,
    .relevance = vt_relevance, .supports_rule = lrp_supports_all};

strix_status strix_layernorm_new(strix_params *ps, const char *prefix, int dim, bool bias,
                                 float eps, strix_layernorm **out) {
    *out = NULL;
    if (dim <= 0 || !(eps > 0.0f))
        return strix_error(STRIX_ERR_ARG, "LayerNorm %s: dim %d and eps %g must be positive",
                           prefix, dim, (double)eps);
    char wname[STRIX_PARAM_NAME_MAX], bname[STRIX_PARAM_NAME_MAX];
    STRIX_TRY(nn_name(wname, prefix, "weight"));
    STRIX_TRY(nn_name(bname, prefix, "bias"));
    strix_layernorm *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("LayerNorm");
    m->base.vt = &layernorm_vt;
    m->base.be = ps->be;
    m->dim = dim;
    m->eps = eps;
    int64_t shape[1] = {dim};
    m->weight = strix_params_add(ps, wname, 1, shape, STRIX_INIT_ONES, 0.0f, false);
    if (m->weight && bias) {
        m->bias = strix_params_add(ps, bname, 1, shape, STRIX_INIT_ZEROS, 0.0f, false);
        if (!m->bias) m->weight = NULL;
    }
    if (!m->weight) {
        free(m);
        return NN_ALLOC_FAIL("LayerNorm");
    }
    *out = m;
    return STRIX_OK;
}

strix_status strix_layernorm_forward(strix_layernorm *m, const strix_tensor *x,
                                     const strix_tensor **y) {
    STRIX_ASSERT(m->weight->data != NULL, "LayerNorm: parameters not allocated");
    STRIX_TRY(nn_check_last("LayerNorm", x, m->dim));
    strix_backend *be = m->base.be;
    size_t rows = nn_rows(x);
    m->work->x = nn_view_of(x);
    int64_t rshape[1] = {(int64_t)rows};
    STRIX_TRY(nn_ensure_like(be, &m->work->out, x, m->dim));
    STRIX_TRY(nn_ensure_like(be, &m->work->xhat, x, m->dim));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->row_std, 1, rshape));
    if (rows > 0)
        STRIX_TRY(strix_layer_norm_forward(be, x->data, m->weight->data,
                                           m->bias ? m->bias->data : NULL, m->work->xhat.data,
                                           m->work->out.data, m->work->row_std.data, rows,
                                           (size_t)m->dim, m->eps));
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

strix_status strix_layernorm_backward(strix_layernorm *m, const strix_tensor *dy,
                                      const strix_tensor **dx) {
    STRIX_TRY(nn_check_same("LayerNorm", dy, &m->work->out));
    strix_backend *be = m->base.be;
    size_t rows = nn_rows(dy), cols = (size_t)m->dim;
    STRIX_TRY(nn_ensure_like(be, &m->work->dx, dy, m->dim));
    STRIX_TRY(nn_ensure_like(be, &m->work->tmp, dy, m->dim));
    if (rows > 0) {
        STRIX_TRY(strix_mul(be, dy->data, m->work->xhat.data, m->work->tmp.data, rows * cols));
        STRIX_TRY(strix_column_sums(be, m->work->tmp.data, m->weight->grad, rows, cols, 1.0f));
        if (m->bias) STRIX_TRY(strix_column_sums(be, dy->data, m->bias->grad, rows, cols, 1.0f));
        STRIX_TRY(strix_layer_norm_backward(be, dy->data, m->weight->data, m->work->xhat.data,
                                            m->work->row_std.data, m->work->dx.data, rows, cols));
    }
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

// ---- relevance (LRP) ---------------------------------------------------------------------------

/* Pass-through, or (layer_norm_detach_std) with the row std held constant the epsilon rule of
 * the linear map y = γ(x − mean)/std + β: s = r/stab(z), z = y − β (or y with the bias in the
 * denominator), then the LayerNorm input gradient of s with xhat = 0 (no std term),
 * (D·γs − Σγs)/(D·std), times x. */
strix_status strix_layernorm_relevance(strix_layernorm *m, const strix_tensor *x,
                                       const strix_tensor *r, const strix_tensor **r_in) {
    STRIX_TRY(nn_check_same("LayerNorm relevance", r, &m->work->out));
    const strix_lrp_rule *rule = &m->base.rule;
    if (!rule->layer_norm_detach_std) {
        if (r_in) *r_in = r;
        return STRIX_OK;
    }
    STRIX_TRY(lrp_rule_check(rule, "LayerNorm"));
    if (!x) x = &m->work->x;
    STRIX_TRY(nn_check_same("LayerNorm relevance: x", x, &m->work->out));
    strix_backend *be = m->base.be;
    size_t rows = nn_rows(r), cols = (size_t)m->dim, total = rows * cols;
    STRIX_TRY(nn_ensure_like(be, &m->work->dx, r, m->dim));
    if (total > 0) {
        float *block;
        STRIX_TRY(lrp_scratch(be, 3 * total + cols, &block));
        float *z = block, *ratio = z + total, *zeros = ratio + total, *neg_beta = zeros + total;
        strix_status s = strix_fill(be, zeros, 0.0f, total);
        const float *den = m->work->out.data;
        if (s == STRIX_OK && m->bias && !rule->bias_in_denominator) {
            s = strix_axpby(be, -1.0f, m->bias->data, 0.0f, NULL, neg_beta, cols);
            if (s == STRIX_OK) s = strix_add_row_vector(be, m->work->out.data, neg_beta, z, rows,
                                                        cols);
            den = z;
        }
        if (s == STRIX_OK)
            s = strix_lrp_stabilized_divide(be, r->data, den, NULL, ratio, total, rule->epsilon,
                                            STRIX_LRP_GATE_NONE);
        if (s == STRIX_OK)
            s = strix_layer_norm_backward(be, ratio, m->weight->data, zeros, m->work->row_std.data,
                                          m->work->dx.data, rows, cols);
        if (s == STRIX_OK) s = strix_mul(be, x->data, m->work->dx.data, m->work->dx.data, total);
        strix_free(be, block);
        STRIX_TRY(s);
    }
    if (r_in) *r_in = &m->work->dx;
    return STRIX_OK;
}
