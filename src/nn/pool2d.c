/*
 * pool2d.c - MaxPool2d, AvgPool2d and AdaptiveAvgPool2d (PyTorch nn.*Pool2d, floor mode,
 * dilation 1) over NCHW planes, each on its backend primitive pair. The adaptive pool handles
 * only input sizes that are multiples of the output size (then it is an ordinary average pool).
 * Relevance: MaxPool2d gives each window's relevance to its argmax (winner takes all: the
 * backward applied to r, which is what Zennit 1.0.0 does by leaving max pools to the gradient);
 * the average pools use the epsilon rule of the window means (lrp_avg_pool; Zennit's Norm rule)
 * with the eps of the module's rule.
 */
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

/* Geometry of a pool config; STRIX_ERR_ARG for bad values (who names the layer). */
static strix_status pool_geom(const char *who, const strix_pool2d_config *cfg,
                              strix_conv_geom *g) {
    int sh = cfg->stride_h ? cfg->stride_h : cfg->kernel_h;
    int sw = cfg->stride_w ? cfg->stride_w : cfg->kernel_w;
    if (cfg->kernel_h <= 0 || cfg->kernel_w <= 0 || sh <= 0 || sw <= 0 || cfg->pad_h < 0 ||
        cfg->pad_w < 0)
        return strix_error(STRIX_ERR_ARG, "%s: kernel %dx%d and stride %dx%d must be positive, "
                           "padding %dx%d non-negative", who, cfg->kernel_h, cfg->kernel_w, sh,
                           sw, cfg->pad_h, cfg->pad_w);
    if (2 * cfg->pad_h > cfg->kernel_h || 2 * cfg->pad_w > cfg->kernel_w)
        return strix_error(STRIX_ERR_ARG, "%s: padding %dx%d is over half the kernel %dx%d", who,
                           cfg->pad_h, cfg->pad_w, cfg->kernel_h, cfg->kernel_w);
    *g = (strix_conv_geom){.kh = (size_t)cfg->kernel_h, .kw = (size_t)cfg->kernel_w,
                           .stride_h = (size_t)sh, .stride_w = (size_t)sw,
                           .pad_h = (size_t)cfg->pad_h, .pad_w = (size_t)cfg->pad_w};
    return STRIX_OK;
}

/* Output size of g over x (N, C, H, W); STRIX_ERR_SHAPE if the window does not fit. */
static strix_status pool_out(const char *who, const strix_conv_geom *g, const strix_tensor *x,
                             int64_t *oh, int64_t *ow) {
    STRIX_TRY(nn_check_nchw(who, x, -1));
    *oh = (int64_t)strix_conv_out_h(g, (size_t)x->shape[2]);
    *ow = (int64_t)strix_conv_out_w(g, (size_t)x->shape[3]);
    if (*oh == 0 || *ow == 0)
        return strix_error(STRIX_ERR_SHAPE, "%s: window %zux%zu does not fit the %lldx%lld input",
                           who, g->kh, g->kw, (long long)x->shape[2], (long long)x->shape[3]);
    return STRIX_OK;
}

// ---- MaxPool2d ---------------------------------------------------------------------------------

static strix_status max_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    strix_maxpool2d *m = (strix_maxpool2d *)mod;
    strix_backend *be = m->base.be;
    int64_t OH, OW;
    STRIX_TRY(pool_out("MaxPool2d", &m->geom, x, &OH, &OW));
    m->work->N = x->shape[0], m->work->C = x->shape[1], m->work->H = x->shape[2],
    m->work->W = x->shape[3];
    m->work->OH = OH, m->work->OW = OW;
    size_t planes = (size_t)(m->work->N * m->work->C);
    STRIX_TRY(nn_ensure4(be, &m->work->out, m->work->N, m->work->C, OH, OW));
    STRIX_TRY(nn_ensure_i32(be, &m->work->argmax, &m->work->argmax_cap,
                            planes * (size_t)(OH * OW)));
    if (planes > 0)
        STRIX_TRY(strix_max_pool_forward(be, x->data, m->work->out.data, m->work->argmax, planes,
                                         (size_t)m->work->H, (size_t)m->work->W, &m->geom));
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

static strix_status max_backward(strix_module *mod, const strix_tensor *dy,
                                 const strix_tensor **dx) {
    strix_maxpool2d *m = (strix_maxpool2d *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("MaxPool2d", dy, &m->work->out));
    STRIX_TRY(nn_ensure4(be, &m->work->dx, m->work->N, m->work->C, m->work->H, m->work->W));
    size_t planes = (size_t)(m->work->N * m->work->C);
    if (planes > 0) {
        STRIX_TRY(strix_fill(be, m->work->dx.data, 0.0f, (size_t)strix_tensor_numel(&m->work->dx)));
        STRIX_TRY(strix_max_unpool(be, dy->data, m->work->argmax, m->work->dx.data, planes,
                                   (size_t)m->work->H, (size_t)m->work->W, &m->geom));
    }
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

static void max_destroy(strix_module *mod) {
    strix_maxpool2d *m = (strix_maxpool2d *)mod;
    strix_free(m->base.be, m->work->argmax);
    strix_tensor_free(&m->work->out);
    strix_tensor_free(&m->work->dx);
    free(m);
}

/* Winner takes all: each window's relevance goes to its argmax (max_unpool into zeroed dx). */
static strix_status max_relevance(strix_module *mod, const strix_tensor *r,
                                  const strix_tensor **r_in) {
    strix_maxpool2d *m = (strix_maxpool2d *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("MaxPool2d relevance", r, &m->work->out));
    STRIX_TRY(nn_ensure4(be, &m->work->dx, m->work->N, m->work->C, m->work->H, m->work->W));
    size_t planes = (size_t)(m->work->N * m->work->C);
    if (planes > 0) {
        STRIX_TRY(strix_fill(be, m->work->dx.data, 0.0f, (size_t)strix_tensor_numel(&m->work->dx)));
        STRIX_TRY(strix_max_unpool(be, r->data, m->work->argmax, m->work->dx.data, planes,
                                   (size_t)m->work->H, (size_t)m->work->W, &m->geom));
    }
    if (r_in) *r_in = &m->work->dx;
    return STRIX_OK;
}

static const strix_module_i maxpool_vt = {
    .type = "MaxPool2d", .forward = max_forward, .backward = max_backward, .destroy = max_destroy,
    .relevance = max_relevance, .supports_rule = lrp_supports_all};

strix_status strix_maxpool2d_new(strix_backend *be, const strix_pool2d_config *cfg,
                                 strix_maxpool2d **out) {
    *out = NULL;
    strix_conv_geom g;
    STRIX_TRY(pool_geom("MaxPool2d", cfg, &g));
    strix_maxpool2d *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("MaxPool2d");
    m->base.vt = &maxpool_vt;
    m->base.be = be;
    m->geom = g;
    *out = m;
    return STRIX_OK;
}

// ---- AvgPool2d / AdaptiveAvgPool2d -------------------------------------------------------------

static strix_status avg_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    strix_avgpool2d *m = (strix_avgpool2d *)mod;
    strix_backend *be = m->base.be;
    const char *who = m->base.vt->type;
    if (m->adaptive) {
        STRIX_TRY(nn_check_nchw(who, x, -1));
        int64_t H = x->shape[2], W = x->shape[3];
        if (H % m->out_h != 0 || W % m->out_w != 0 || H == 0 || W == 0)
            return strix_error(STRIX_ERR_UNSUPPORTED,
                               "AdaptiveAvgPool2d: input %lldx%lld is not a multiple of the "
                               "output %lldx%lld (only that case is supported)", (long long)H,
                               (long long)W, (long long)m->out_h, (long long)m->out_w);
        size_t kh = (size_t)(H / m->out_h), kw = (size_t)(W / m->out_w);
        m->geom = (strix_conv_geom){.kh = kh, .kw = kw, .stride_h = kh, .stride_w = kw};
    }
    int64_t OH, OW;
    STRIX_TRY(pool_out(who, &m->geom, x, &OH, &OW));
    m->work->N = x->shape[0], m->work->C = x->shape[1], m->work->H = x->shape[2],
    m->work->W = x->shape[3];
    m->work->OH = OH, m->work->OW = OW;
    m->work->x = nn_view_of(x);
    size_t planes = (size_t)(m->work->N * m->work->C);
    STRIX_TRY(nn_ensure4(be, &m->work->out, m->work->N, m->work->C, OH, OW));
    if (planes > 0)
        STRIX_TRY(strix_avg_pool_forward(be, x->data, m->work->out.data, planes, (size_t)m->work->H,
                                         (size_t)m->work->W, &m->geom));
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

static strix_status avg_backward(strix_module *mod, const strix_tensor *dy,
                                 const strix_tensor **dx) {
    strix_avgpool2d *m = (strix_avgpool2d *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same(m->base.vt->type, dy, &m->work->out));
    STRIX_TRY(nn_ensure4(be, &m->work->dx, m->work->N, m->work->C, m->work->H, m->work->W));
    size_t planes = (size_t)(m->work->N * m->work->C);
    if (planes > 0) {
        STRIX_TRY(strix_fill(be, m->work->dx.data, 0.0f, (size_t)strix_tensor_numel(&m->work->dx)));
        STRIX_TRY(strix_avg_pool_backward(be, dy->data, m->work->dx.data, planes,
                                          (size_t)m->work->H, (size_t)m->work->W, &m->geom));
    }
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

static void avg_destroy(strix_module *mod) {
    strix_avgpool2d *m = (strix_avgpool2d *)mod;
    strix_tensor_free(&m->work->out);
    strix_tensor_free(&m->work->dx);
    free(m);
}

/* Epsilon rule of the window means: dx = 0, then lrp_avg_pool adds x·Σ_o (r_o/stab(z_o))/K. */
static strix_status avg_relevance(strix_module *mod, const strix_tensor *r,
                                  const strix_tensor **r_in) {
    strix_avgpool2d *m = (strix_avgpool2d *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("AvgPool2d relevance", r, &m->work->out));
    STRIX_TRY(lrp_rule_check(&m->base.rule, m->base.vt->type));
    STRIX_TRY(nn_ensure4(be, &m->work->dx, m->work->N, m->work->C, m->work->H, m->work->W));
    size_t planes = (size_t)(m->work->N * m->work->C);
    if (planes > 0) {
        STRIX_TRY(strix_fill(be, m->work->dx.data, 0.0f, (size_t)strix_tensor_numel(&m->work->dx)));
        STRIX_TRY(strix_lrp_avg_pool(be, m->work->x.data, r->data, m->work->dx.data, planes,
                                     (size_t)m->work->H, (size_t)m->work->W, &m->geom,
                                     m->base.rule.epsilon));
    }
    if (r_in) *r_in = &m->work->dx;
    return STRIX_OK;
}

static const strix_module_i avgpool_vt = {
    .type = "AvgPool2d", .forward = avg_forward, .backward = avg_backward, .destroy = avg_destroy,
    .relevance = avg_relevance, .supports_rule = lrp_supports_all};
static const strix_module_i adaptive_vt = {
    .type = "AdaptiveAvgPool2d", .forward = avg_forward, .backward = avg_backward,
    .destroy = avg_destroy, .relevance = avg_relevance, .supports_rule = lrp_supports_all};

strix_status strix_avgpool2d_new(strix_backend *be, const strix_pool2d_config *cfg,
                                 strix_avgpool2d **out) {
    *out = NULL;
    strix_conv_geom g;
    STRIX_TRY(pool_geom("AvgPool2d", cfg, &g));
    strix_avgpool2d *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("AvgPool2d");
    m->base.vt = &avgpool_vt;
    m->base.be = be;
    m->geom = g;
    *out = m;
    return STRIX_OK;
}

strix_status strix_adaptive_avgpool2d_new(strix_backend *be, int out_h, int out_w,
                                          strix_avgpool2d **out) {
    *out = NULL;
    if (out_h <= 0 || out_w <= 0)
        return strix_error(STRIX_ERR_ARG, "AdaptiveAvgPool2d: output %dx%d must be positive",
                           out_h, out_w);
    strix_avgpool2d *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("AdaptiveAvgPool2d");
    m->base.vt = &adaptive_vt;
    m->base.be = be;
    m->adaptive = true;
    m->out_h = out_h;
    m->out_w = out_w;
    *out = m;
    return STRIX_OK;
}
