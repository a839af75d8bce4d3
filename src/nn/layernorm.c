/*
 * layernorm.c - LayerNorm over the last dim (PyTorch nn.LayerNorm, elementwise affine).
 *
 * Forward keeps xhat and the row std for backward; the parameter grads are column sums (dgamma of
 * dy⊙xhat, dbeta of dy). No RMSNorm here, and no non-affine variant.
 */
#include <stdlib.h>

#include "nn_internal.h"

static strix_status vt_forward(strix_module *m, const strix_tensor *x, const strix_tensor **y) {
    return strix_layernorm_forward((strix_layernorm *)m, x, y);
}
static strix_status vt_backward(strix_module *m, const strix_tensor *dy, const strix_tensor **dx) {
    return strix_layernorm_backward((strix_layernorm *)m, dy, dx);
}
static void vt_destroy(strix_module *m) {
    strix_layernorm *l = (strix_layernorm *)m;
    strix_tensor *ts[] = {&l->out, &l->xhat, &l->row_std, &l->dx, &l->tmp};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    free(l);
}
static const strix_module_i layernorm_vt = {
    .type = "LayerNorm", .forward = vt_forward, .backward = vt_backward, .destroy = vt_destroy};

strix_status strix_layernorm_new(strix_params *ps, const char *prefix, int dim, bool bias,
                                 float eps, strix_layernorm **out) {
    *out = NULL;
    if (dim <= 0 || !(eps > 0.0f))
        return strix_error(STRIX_ERR_ARG, "LayerNorm %s: dim %d and eps %g must be positive",
                           prefix, dim, (double)eps);
    char wname[STRIX_PARAM_NAME_MAX], bname[STRIX_PARAM_NAME_MAX];
    STRIX_TRY(nn_name(wname, prefix, "weight"));
    STRIX_TRY(nn_name(bname, prefix, "bias"));
    strix_layernorm *m = calloc(1, sizeof *m);
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
    int64_t rshape[1] = {(int64_t)rows};
    STRIX_TRY(nn_ensure_like(be, &m->out, x, m->dim));
    STRIX_TRY(nn_ensure_like(be, &m->xhat, x, m->dim));
    STRIX_TRY(strix_tensor_ensure(be, &m->row_std, 1, rshape));
    if (rows > 0)
        STRIX_TRY(strix_layer_norm_forward(be, x->data, m->weight->data,
                                           m->bias ? m->bias->data : NULL, m->xhat.data,
                                           m->out.data, m->row_std.data, rows, (size_t)m->dim,
                                           m->eps));
    if (y) *y = &m->out;
    return STRIX_OK;
}

strix_status strix_layernorm_backward(strix_layernorm *m, const strix_tensor *dy,
                                      const strix_tensor **dx) {
    STRIX_TRY(nn_check_same("LayerNorm", dy, &m->out));
    strix_backend *be = m->base.be;
    size_t rows = nn_rows(dy), cols = (size_t)m->dim;
    STRIX_TRY(nn_ensure_like(be, &m->dx, dy, m->dim));
    STRIX_TRY(nn_ensure_like(be, &m->tmp, dy, m->dim));
    if (rows > 0) {
        STRIX_TRY(strix_mul(be, dy->data, m->xhat.data, m->tmp.data, rows * cols));
        STRIX_TRY(strix_column_sums(be, m->tmp.data, m->weight->grad, rows, cols, 1.0f));
        if (m->bias) STRIX_TRY(strix_column_sums(be, dy->data, m->bias->grad, rows, cols, 1.0f));
        STRIX_TRY(strix_layer_norm_backward(be, dy->data, m->weight->data, m->xhat.data,
                                            m->row_std.data, m->dx.data, rows, cols));
    }
    if (dx) *dx = &m->dx;
    return STRIX_OK;
}
