/*
 * batchnorm.c - BatchNorm1d/2d (PyTorch nn.BatchNorm*d, affine, with running statistics) and
 * its folding into the preceding Conv2d or Linear for inference.
 *
 * Training: batch statistics forward, then the running-statistics update and the batch counter
 * (+1 on the backend, so nothing is read back). Eval: the running statistics. The backward of
 * each mode is its own primitive; γ/β grads come back overwritten in scratch and are added into
 * the parameter grads. Momentum None (PyTorch's cumulative average) is not supported.
 * Relevance (when Sequential did not merge it into the preceding layer, src/nn/lrp_fold.c): the
 * epsilon rule of the per-channel affine map y = s·x + t, s = γ/std of the last forward.
 */
#include <stdlib.h>
#include <string.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

static strix_status bn_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y);
static strix_status bn_backward(strix_module *mod, const strix_tensor *dy,
                                const strix_tensor **dx);

static void bn_destroy(strix_module *mod) {
    strix_batchnorm *m = (strix_batchnorm *)mod;
    strix_tensor *ts[] = {&m->work->out, &m->work->xhat, &m->work->std, &m->work->dx,
                          &m->work->gamma_grad, &m->work->beta_grad, &m->work->one,
                          &m->work->zeros};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    free(m);
}

static void bn_set_training(strix_module *mod, bool training) {
    ((strix_batchnorm *)mod)->training = training;
}

static strix_status bn_relevance(strix_module *mod, const strix_tensor *r,
                                 const strix_tensor **r_in);

static bool bn_get_training(const strix_module *mod) {
    return ((const strix_batchnorm *)mod)->training;
}
static const strix_module_i bn2d_vt = {
    .type = "BatchNorm2d", .forward = bn_forward, .backward = bn_backward, .destroy = bn_destroy,
    .set_training = bn_set_training, .get_training = bn_get_training, .relevance = bn_relevance,
    .supports_rule = lrp_supports_all};
static const strix_module_i bn1d_vt = {
    .type = "BatchNorm1d", .forward = bn_forward, .backward = bn_backward, .destroy = bn_destroy,
    .set_training = bn_set_training, .get_training = bn_get_training, .relevance = bn_relevance,
    .supports_rule = lrp_supports_all};

static strix_status bn_new(strix_params *ps, const char *prefix, int C, float eps,
                           float momentum, int in_ndim, const strix_module_i *vt,
                           strix_batchnorm **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    if (C <= 0 || !(eps > 0.0f) || !(momentum >= 0.0f && momentum <= 1.0f))
        return strix_error(STRIX_ERR_ARG, "%s %s: num_features %d and eps %g must be positive, "
                           "momentum %g in [0, 1]", vt->type, prefix, C, (double)eps,
                           (double)momentum);
    static const char *const suffix[5] = {"weight", "bias", "running_mean", "running_var",
                                          "num_batches_tracked"};
    char names[5][STRIX_PARAM_NAME_MAX];
    for (int i = 0; i < 5; i++) STRIX_TRY(nn_name(names[i], prefix, suffix[i]));
    strix_batchnorm *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL(vt->type);
    m->base.vt = vt;
    m->base.be = ps->be;
    m->num_features = C;
    m->in_ndim = in_ndim;
    m->eps = eps;
    m->momentum = momentum;
    m->training = true;
    int64_t shape[1] = {C}, one[1] = {1};
    strix_status s = strix_tensor_new(ps->be, 1, one, &m->work->one);
    if (s == STRIX_OK) s = strix_fill(ps->be, m->work->one.data, 1.0f, 1);
    if (s != STRIX_OK) {
        free(m);
        return s;
    }
    m->weight = strix_params_add(ps, names[0], 1, shape, STRIX_INIT_ONES, 0.0f, false);
    if (m->weight)
        m->bias = strix_params_add(ps, names[1], 1, shape, STRIX_INIT_ZEROS, 0.0f, false);
    if (m->bias)
        m->running_mean = strix_params_add_buffer(ps, names[2], 1, shape, STRIX_INIT_ZEROS);
    if (m->running_mean)
        m->running_var = strix_params_add_buffer(ps, names[3], 1, shape, STRIX_INIT_ONES);
    if (m->running_var)
        m->num_batches_tracked = strix_params_add_buffer(ps, names[4], 1, one, STRIX_INIT_ZEROS);
    if (!m->num_batches_tracked) {
        strix_tensor_free(&m->work->one);
        free(m);
        return NN_ALLOC_FAIL(vt->type);
    }
    *out = m;
    return STRIX_OK;
}

strix_status strix_batchnorm2d_new(strix_params *ps, const char *prefix, int num_features,
                                   float eps, float momentum, strix_batchnorm **out) {
    return bn_new(ps, prefix, num_features, eps, momentum, 4, &bn2d_vt, out);
}

strix_status strix_batchnorm1d_new(strix_params *ps, const char *prefix, int num_features,
                                   float eps, float momentum, strix_batchnorm **out) {
    return bn_new(ps, prefix, num_features, eps, momentum, 2, &bn1d_vt, out);
}

static strix_status bn_check(const strix_batchnorm *m, const strix_tensor *x) {
    const char *who = m->base.vt->type;
    bool rank_ok = m->in_ndim == 4 ? x->ndim == 4 : (x->ndim == 2 || x->ndim == 3);
    if (!rank_ok)
        return strix_error(STRIX_ERR_SHAPE, "%s: input has %d dims, expected %s", who, x->ndim,
                           m->in_ndim == 4 ? "(N, C, H, W)" : "(N, C) or (N, C, L)");
    if (x->shape[1] != m->num_features)
        return strix_error(STRIX_ERR_SHAPE, "%s: input has %lld channels, expected %d", who,
                           (long long)x->shape[1], m->num_features);
    return STRIX_OK;
}

static strix_status bn_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    strix_batchnorm *m = (strix_batchnorm *)mod;
    STRIX_ASSERT(m->weight->data != NULL, "BatchNorm: parameters not allocated");
    STRIX_TRY(bn_check(m, x));
    m->work->x = nn_view_of(x);
    if (m->folded) {
        m->work->out = nn_view_of(x);
        if (y) *y = &m->work->out;
        return STRIX_OK;
    }
    strix_backend *be = m->base.be;
    size_t n = (size_t)x->shape[0], C = (size_t)m->num_features;
    size_t spatial = (size_t)nn_prod(x, 2);
    if (m->training && n * spatial < 2)
        return strix_error(STRIX_ERR_SHAPE, "%s: expected more than 1 value per channel when "
                           "training (input has %zu)", m->base.vt->type, n * spatial);
    STRIX_TRY(nn_ensure_same(be, &m->work->out, x));
    STRIX_TRY(nn_ensure_same(be, &m->work->xhat, x));
    STRIX_TRY(nn_ensure1(be, &m->work->std, (int64_t)C));
    m->work->n = (int64_t)n;
    m->work->spatial = (int64_t)spatial;
    m->work->last_training = m->training;
    if (m->training) {
        STRIX_TRY(strix_batch_norm_forward(be, x->data, m->weight->data, m->bias->data,
                                           m->work->xhat.data, m->work->out.data, m->work->std.data,
                                           n, C, spatial, m->eps));
        STRIX_TRY(strix_batch_norm_update_running(be, x->data, m->running_mean->data,
                                                  m->running_var->data, n, C, spatial,
                                                  m->momentum));
        STRIX_TRY(strix_add(be, m->num_batches_tracked->data, m->work->one.data,
                            m->num_batches_tracked->data, 1));
    } else if (n > 0) {
        STRIX_TRY(strix_batch_norm_eval_forward(be, x->data, m->weight->data, m->bias->data,
                                                m->running_mean->data, m->running_var->data,
                                                m->work->xhat.data, m->work->out.data,
                                                m->work->std.data, n, C, spatial, m->eps));
    }
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

static strix_status bn_backward(strix_module *mod, const strix_tensor *dy,
                                const strix_tensor **dx) {
    strix_batchnorm *m = (strix_batchnorm *)mod;
    STRIX_TRY(nn_check_same(m->base.vt->type, dy, &m->work->out));
    if (m->folded) {
        m->work->dx = nn_view_of(dy);
        if (dx) *dx = &m->work->dx;
        return STRIX_OK;
    }
    strix_backend *be = m->base.be;
    size_t n = (size_t)m->work->n, C = (size_t)m->num_features, spatial = (size_t)m->work->spatial;
    bool gw = nn_wants_grad(m->weight), gb = nn_wants_grad(m->bias);
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, dy));
    STRIX_TRY(nn_ensure1(be, &m->work->gamma_grad, (int64_t)C));
    STRIX_TRY(nn_ensure1(be, &m->work->beta_grad, (int64_t)C));
    float *gg = gw ? m->work->gamma_grad.data : NULL, *bg = gb ? m->work->beta_grad.data : NULL;
    if (n * spatial > 0) {
        if (m->work->last_training)
            STRIX_TRY(strix_batch_norm_backward(be, dy->data, m->weight->data, m->work->xhat.data,
                                                m->work->std.data, m->work->dx.data, gg, bg, n, C,
                                                spatial));
        else
            STRIX_TRY(strix_batch_norm_eval_backward(be, dy->data, m->weight->data,
                                                     m->work->xhat.data, m->work->std.data,
                                                     m->work->dx.data, gg, bg, n, C, spatial));
        STRIX_TRY(nn_add_grad(be, m->weight, m->work->gamma_grad.data, C));
        STRIX_TRY(nn_add_grad(be, m->bias, m->work->beta_grad.data, C));
    }
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

// ---- folding -----------------------------------------------------------------------------------

bool strix_batchnorm_last_training(const strix_batchnorm *bn) {
    return bn->work->last_training;
}

strix_status strix_batchnorm_fold(strix_batchnorm *bn, strix_module *prev) {
    STRIX_ASSERT(bn && prev, "batchnorm_fold: NULL argument");
    STRIX_ASSERT(bn->weight->data != NULL, "BatchNorm: parameters not allocated");
    if (bn->folded) return strix_error(STRIX_ERR_ARG, "BatchNorm fold: already folded");
    strix_param *w, *b;
    size_t rows, inner;
    if (strcmp(prev->vt->type, "Conv2d") == 0) {
        strix_conv2d *c = (strix_conv2d *)prev;
        w = c->weight, b = c->bias;
        rows = (size_t)c->cfg.out_channels;
        inner = (size_t)c->cfg.in_channels * (size_t)c->cfg.kernel_h * (size_t)c->cfg.kernel_w;
    } else if (strcmp(prev->vt->type, "Linear") == 0) {
        strix_linear *l = (strix_linear *)prev;
        w = l->weight, b = l->bias;
        rows = (size_t)l->out_features;
        inner = (size_t)l->in_features;
    } else {
        return strix_error(STRIX_ERR_ARG, "BatchNorm fold: cannot fold into a %s (only Conv2d "
                           "and Linear)", prev->vt->type);
    }
    if (!b)
        return strix_error(STRIX_ERR_ARG, "BatchNorm fold: the %s has no bias to take the shift "
                           "(build it with bias)", prev->vt->type);
    if (rows != (size_t)bn->num_features)
        return strix_error(STRIX_ERR_ARG, "BatchNorm fold: %s has %zu outputs, BatchNorm %d "
                           "channels", prev->vt->type, rows, bn->num_features);
    if (w->tied_to)
        return strix_error(STRIX_ERR_ARG, "BatchNorm fold: the %s weight is tied", prev->vt->type);
    strix_backend *be = bn->base.be;
    size_t C = rows;
    // scratch: zeros (C) stand for a zero mean and shift; out/xhat hold one (1, C, inner) pass
    STRIX_TRY(nn_ensure1(be, &bn->work->zeros, (int64_t)C));
    STRIX_TRY(strix_fill(be, bn->work->zeros.data, 0.0f, C));
    STRIX_TRY(nn_ensure4(be, &bn->work->out, 1, (int64_t)C, (int64_t)inner, 1));
    STRIX_TRY(nn_ensure4(be, &bn->work->xhat, 1, (int64_t)C, (int64_t)inner, 1));
    STRIX_TRY(nn_ensure1(be, &bn->work->std, (int64_t)C));
    // b' = γ·(b − running_mean)/std + β: the eval BatchNorm of b seen as (1, C, 1)
    STRIX_TRY(strix_batch_norm_eval_forward(be, b->data, bn->weight->data, bn->bias->data,
                                            bn->running_mean->data, bn->running_var->data,
                                            bn->work->xhat.data, bn->work->out.data,
                                            bn->work->std.data, 1, C, 1, bn->eps));
    STRIX_TRY(strix_copy(be, b->data, bn->work->out.data, C * sizeof(float), STRIX_COPY_D2D));
    // W' = γ·(W − 0)/std + 0: the eval BatchNorm of W seen as (1, C, inner)
    STRIX_TRY(strix_batch_norm_eval_forward(be, w->data, bn->weight->data, bn->work->zeros.data,
                                            bn->work->zeros.data, bn->running_var->data,
                                            bn->work->xhat.data, bn->work->out.data,
                                            bn->work->std.data, 1, C, inner, bn->eps));
    STRIX_TRY(strix_copy(be, w->data, bn->work->out.data, C * inner * sizeof(float),
                         STRIX_COPY_D2D));
    STRIX_TRY(strix_fill(be, bn->weight->data, 1.0f, C));
    STRIX_TRY(strix_fill(be, bn->bias->data, 0.0f, C));
    STRIX_TRY(strix_fill(be, bn->running_mean->data, 0.0f, C));
    STRIX_TRY(strix_fill(be, bn->running_var->data, 1.0f, C));
    // from now on out/dx are views of the input/gradient: release the owned buffers
    strix_tensor *ts[] = {&bn->work->out, &bn->work->xhat, &bn->work->std, &bn->work->dx,
                          &bn->work->gamma_grad, &bn->work->beta_grad, &bn->work->zeros};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    bn->folded = true;
    return STRIX_OK;
}

// ---- relevance (LRP) ---------------------------------------------------------------------------

/* Epsilon rule of y = s·x + t per channel: z = s·x (the eval backward primitive applied to x:
 * x·γ/std), r_in = z·(r/stab(z)), or z·(r/stab(y)) with the bias in the denominator. A folded
 * BatchNorm is the identity: r passes through. */
static strix_status bn_relevance(strix_module *mod, const strix_tensor *r,
                                 const strix_tensor **r_in) {
    strix_batchnorm *m = (strix_batchnorm *)mod;
    STRIX_TRY(nn_check_same(m->base.vt->type, r, &m->work->out));
    if (m->folded) {
        if (r_in) *r_in = r;
        return STRIX_OK;
    }
    strix_backend *be = m->base.be;
    size_t n = (size_t)m->work->n, C = (size_t)m->num_features, spatial = (size_t)m->work->spatial;
    size_t total = n * C * spatial;
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, r));
    if (total > 0) {
        float *block;
        STRIX_TRY(lrp_scratch(be, 2 * total, &block));
        float *z = block, *ratio = block + total;
        const strix_lrp_rule *rule = &m->base.rule;
        strix_status s = strix_batch_norm_eval_backward(be, m->work->x.data, m->weight->data,
                                                        m->work->xhat.data, m->work->std.data, z,
                                                        NULL, NULL, n, C, spatial);
        if (s == STRIX_OK)
            s = strix_lrp_stabilized_divide(be, r->data,
                                            rule->bias_in_denominator ? m->work->out.data : z, NULL,
                                            ratio, total, rule->epsilon, STRIX_LRP_GATE_NONE);
        if (s == STRIX_OK) s = strix_mul(be, z, ratio, m->work->dx.data, total);
        strix_free(be, block);
        STRIX_TRY(s);
    }
    if (r_in) *r_in = &m->work->dx;
    return STRIX_OK;
}
