/*
 * mlp.c - the transformer MLP (nanoGPT MLP): c_fc -> GELU (erf) or ReLU -> c_proj.
 *
 * The activation's input (c_fc's output) is kept for backward, which runs the activation
 * derivative in place on c_proj's input-gradient buffer. Relevance: c_proj's rule, the activation
 * passes relevance through (AttnLRP's identity rule), c_fc's rule. No dropout, no gated (SwiGLU)
 * variant.
 */
#include <stdlib.h>

#include "nn_internal.h"

static strix_status vt_forward(strix_module *m, const strix_tensor *x, const strix_tensor **y) {
    return strix_mlp_forward((strix_mlp *)m, x, y);
}
static strix_status vt_backward(strix_module *m, const strix_tensor *dy, const strix_tensor **dx) {
    return strix_mlp_backward((strix_mlp *)m, dy, dx);
}
static void vt_destroy(strix_module *m) {
    strix_mlp *p = (strix_mlp *)m;
    strix_module_free(&p->c_fc->base);
    strix_module_free(&p->c_proj->base);
    strix_tensor_free(&p->work->h);
    free(p);
}
static strix_status vt_relevance(strix_module *m, const strix_tensor *r, const strix_tensor **ri) {
    return strix_mlp_relevance((strix_mlp *)m, r, ri);
}
/* Whether a child module can be explained with rule kind k. */
static bool child_supports(const strix_module *m, strix_lrp_kind k) {
    if (!m->vt->relevance) return false;
    return m->vt->supports_rule ? m->vt->supports_rule(m, k) : k == STRIX_LRP_EPSILON;
}
static bool vt_supports_rule(const strix_module *m, strix_lrp_kind k) {
    const strix_mlp *p = (const strix_mlp *)m;
    return child_supports(&p->c_fc->base, k) && child_supports(&p->c_proj->base, k);
}
static strix_module *vt_child(strix_module *m, int i) {
    strix_mlp *p = (strix_mlp *)m;
    return i == 0 ? &p->c_fc->base : i == 1 ? &p->c_proj->base : NULL;
}
static const strix_module_i mlp_vt = {
    .type = "MLP", .forward = vt_forward, .backward = vt_backward, .destroy = vt_destroy,
    .relevance = vt_relevance, .supports_rule = vt_supports_rule, .child = vt_child};

strix_status strix_mlp_new(strix_params *ps, const char *prefix, int d_model, int d_ff,
                           strix_act act, bool bias, float init_std, float proj_init_std,
                           strix_mlp **out) {
    *out = NULL;
    if (act != STRIX_ACT_GELU && act != STRIX_ACT_RELU)
        return strix_error(STRIX_ERR_ARG, "MLP %s: unknown activation %d", prefix, (int)act);
    char name[STRIX_PARAM_NAME_MAX];
    strix_mlp *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("MLP");
    m->base.vt = &mlp_vt;
    m->base.be = ps->be;
    m->act = act;
    strix_status s = nn_name(name, prefix, "c_fc");
    if (s == STRIX_OK)
        s = strix_linear_new(ps, name, d_model, d_ff, bias, init_std, NULL, &m->c_fc);
    if (s == STRIX_OK) s = nn_name(name, prefix, "c_proj");
    if (s == STRIX_OK)
        s = strix_linear_new(ps, name, d_ff, d_model, bias, proj_init_std, NULL, &m->c_proj);
    if (s != STRIX_OK) {
        if (m->c_fc) strix_module_free(&m->c_fc->base);
        free(m);
        return s;
    }
    *out = m;
    return STRIX_OK;
}

strix_status strix_mlp_forward(strix_mlp *m, const strix_tensor *x, const strix_tensor **y) {
    const strix_tensor *pre;
    STRIX_TRY(strix_linear_forward(m->c_fc, x, &pre));
    STRIX_TRY(nn_ensure_like(m->base.be, &m->work->h, pre, pre->shape[pre->ndim - 1]));
    size_t n = (size_t)strix_tensor_numel(pre);
    if (n > 0) STRIX_TRY(strix_elementwise(m->base.be, m->act, pre->data, m->work->h.data, n));
    return strix_linear_forward(m->c_proj, &m->work->h, y);
}

strix_status strix_mlp_backward(strix_mlp *m, const strix_tensor *dy, const strix_tensor **dx) {
    const strix_tensor *dh;
    STRIX_TRY(strix_linear_backward(m->c_proj, dy, &dh));
    size_t n = (size_t)strix_tensor_numel(dh);
    // d(pre) = dh ⊙ act'(pre), in place in c_proj's input-gradient buffer
    float *dpre = m->c_proj->work->dx.data;
    if (n > 0)
        STRIX_TRY(strix_elementwise_backward(m->base.be, m->act, m->c_fc->work->out.data,
                                             dpre, dpre, n));
    return strix_linear_backward(m->c_fc, &m->c_proj->work->dx, dx);
}

/* Relevance through one module's vtable slot. */
static strix_status sub_relevance(strix_module *m, const strix_tensor *r, const strix_tensor **ri) {
    if (!m->vt->relevance)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s has no relevance", m->vt->type);
    return m->vt->relevance(m, r, ri);
}

strix_status strix_mlp_relevance(strix_mlp *m, const strix_tensor *r_out,
                                 const strix_tensor **r_in) {
    const strix_tensor *rh;
    STRIX_TRY(sub_relevance(&m->c_proj->base, r_out, &rh));
    // the activation is elementwise, one input per output: its relevance passes unchanged
    return sub_relevance(&m->c_fc->base, rh, r_in);
}
