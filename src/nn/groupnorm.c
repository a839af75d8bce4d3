/*
 * groupnorm.c - GroupNorm (PyTorch nn.GroupNorm, affine) over (N, C, *) on the group-norm
 * primitive pair; γ/β grads come back overwritten in scratch and are added into the parameter
 * grads. Relevance: pass-through, or with rule.layer_norm_detach_std the epsilon rule of the map
 * with the group std held constant (as LXT treats LayerNorm).
 */
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

static strix_status gn_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    strix_groupnorm *m = (strix_groupnorm *)mod;
    STRIX_ASSERT(m->weight->data != NULL, "GroupNorm: parameters not allocated");
    if (x->ndim < 2 || x->shape[1] != m->num_channels)
        return strix_error(STRIX_ERR_SHAPE, "GroupNorm: input must be (N, %d, ...)",
                           m->num_channels);
    strix_backend *be = m->base.be;
    size_t n = (size_t)x->shape[0], C = (size_t)m->num_channels, G = (size_t)m->num_groups;
    size_t spatial = (size_t)nn_prod(x, 2);
    STRIX_TRY(nn_ensure_same(be, &m->work->out, x));
    STRIX_TRY(nn_ensure_same(be, &m->work->xhat, x));
    int64_t sshape[2] = {(int64_t)n, (int64_t)G};
    STRIX_TRY(strix_tensor_ensure(be, &m->work->std, 2, sshape));
    m->work->n = (int64_t)n;
    m->work->spatial = (int64_t)spatial;
    m->work->x = nn_view_of(x);
    if (n * spatial > 0)
        STRIX_TRY(strix_group_norm_forward(be, x->data, m->weight->data, m->bias->data,
                                           m->work->xhat.data, m->work->out.data, m->work->std.data,
                                           n, C, spatial, G, m->eps));
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

static strix_status gn_backward(strix_module *mod, const strix_tensor *dy,
                                const strix_tensor **dx) {
    strix_groupnorm *m = (strix_groupnorm *)mod;
    STRIX_TRY(nn_check_same("GroupNorm", dy, &m->work->out));
    strix_backend *be = m->base.be;
    size_t n = (size_t)m->work->n, C = (size_t)m->num_channels, G = (size_t)m->num_groups;
    size_t spatial = (size_t)m->work->spatial;
    bool gw = nn_wants_grad(m->weight), gb = nn_wants_grad(m->bias);
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, dy));
    STRIX_TRY(nn_ensure1(be, &m->work->gamma_grad, (int64_t)C));
    STRIX_TRY(nn_ensure1(be, &m->work->beta_grad, (int64_t)C));
    if (n * spatial > 0) {
        STRIX_TRY(strix_group_norm_backward(be, dy->data, m->weight->data, m->work->xhat.data,
                                            m->work->std.data, m->work->dx.data,
                                            gw ? m->work->gamma_grad.data : NULL,
                                            gb ? m->work->beta_grad.data : NULL, n, C, spatial, G));
        STRIX_TRY(nn_add_grad(be, m->weight, m->work->gamma_grad.data, C));
        STRIX_TRY(nn_add_grad(be, m->bias, m->work->beta_grad.data, C));
    }
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

static void gn_destroy(strix_module *mod) {
    strix_groupnorm *m = (strix_groupnorm *)mod;
    strix_tensor *ts[] = {&m->work->out, &m->work->xhat, &m->work->std, &m->work->dx,
                          &m->work->gamma_grad, &m->work->beta_grad};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    free(m);
}

static strix_status gn_relevance(strix_module *mod, const strix_tensor *r,
                                 const strix_tensor **r_in);

static const strix_module_i groupnorm_vt = {
    .type = "GroupNorm", .forward = gn_forward, .backward = gn_backward, .destroy = gn_destroy,
    .relevance = gn_relevance, .supports_rule = lrp_supports_all};

strix_status strix_groupnorm_new(strix_params *ps, const char *prefix, int num_groups,
                                 int num_channels, float eps, strix_groupnorm **out) {
    *out = NULL;
    if (num_groups <= 0 || num_channels <= 0 || num_channels % num_groups != 0 || !(eps > 0.0f))
        return strix_error(STRIX_ERR_ARG, "GroupNorm %s: %d groups must divide %d channels, eps "
                           "%g must be positive", prefix, num_groups, num_channels, (double)eps);
    char wname[STRIX_PARAM_NAME_MAX], bname[STRIX_PARAM_NAME_MAX];
    STRIX_TRY(nn_name(wname, prefix, "weight"));
    STRIX_TRY(nn_name(bname, prefix, "bias"));
    strix_groupnorm *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("GroupNorm");
    m->base.vt = &groupnorm_vt;
    m->base.be = ps->be;
    m->num_groups = num_groups;
    m->num_channels = num_channels;
    m->eps = eps;
    int64_t shape[1] = {num_channels};
    m->weight = strix_params_add(ps, wname, 1, shape, STRIX_INIT_ONES, 0.0f, false);
    if (m->weight) m->bias = strix_params_add(ps, bname, 1, shape, STRIX_INIT_ZEROS, 0.0f, false);
    if (!m->bias) {
        free(m);
        return NN_ALLOC_FAIL("GroupNorm");
    }
    *out = m;
    return STRIX_OK;
}

// ---- relevance (LRP) ---------------------------------------------------------------------------

/* Pass-through, or (layer_norm_detach_std) with the std of each (example, group) held constant,
 * y = γ(x − mean)/std + β is linear in x and the epsilon rule gives
 *   R_j = x_j·(γ_j·s_j − (1/M)·Σ_i γ_i·s_i)/std,  s = r/stab(z), z = y − β (or y: bias in),
 * the input gradient of the backward primitive with xhat = 0 (no std term), times x. */
static strix_status gn_relevance(strix_module *mod, const strix_tensor *r,
                                 const strix_tensor **r_in) {
    strix_groupnorm *m = (strix_groupnorm *)mod;
    STRIX_TRY(nn_check_same("GroupNorm", r, &m->work->out));
    const strix_lrp_rule *rule = &m->base.rule;
    if (!rule->layer_norm_detach_std) {
        if (r_in) *r_in = r;
        return STRIX_OK;
    }
    strix_backend *be = m->base.be;
    size_t n = (size_t)m->work->n, C = (size_t)m->num_channels, G = (size_t)m->num_groups;
    size_t spatial = (size_t)m->work->spatial, total = n * C * spatial;
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, r));
    if (total > 0) {
        float *block;
        STRIX_TRY(lrp_scratch(be, 3 * total + C, &block));
        float *z = block, *ratio = z + total, *zeros = ratio + total, *neg_beta = zeros + total;
        strix_status s = strix_fill(be, zeros, 0.0f, total);
        const float *den = m->work->out.data;
        if (s == STRIX_OK && !rule->bias_in_denominator) {
            s = strix_axpby(be, -1.0f, m->bias->data, 0.0f, NULL, neg_beta, C);
            if (s == STRIX_OK)
                s = strix_add_channel_vector(be, m->work->out.data, neg_beta, z, n, C, spatial);
            den = z;
        }
        if (s == STRIX_OK)
            s = strix_lrp_stabilized_divide(be, r->data, den, NULL, ratio, total, rule->epsilon,
                                            STRIX_LRP_GATE_NONE);
        if (s == STRIX_OK)
            s = strix_group_norm_backward(be, ratio, m->weight->data, zeros, m->work->std.data,
                                          m->work->dx.data, NULL, NULL, n, C, spatial, G);
        if (s == STRIX_OK) s = strix_mul(be, m->work->x.data, m->work->dx.data, m->work->dx.data,
                                         total);
        strix_free(be, block);
        STRIX_TRY(s);
    }
    if (r_in) *r_in = &m->work->dx;
    return STRIX_OK;
}
