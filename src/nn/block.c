/*
 * block.c - the pre-norm transformer block (nanoGPT Block):
 *   x1 = x + attn(ln_1(x));  y = x1 + mlp(ln_2(x1)).
 * Backward adds the residual paths back: dx1 = dy + ln_2'(mlp'(dy)); dx = dx1 + ln_1'(attn'(dx1)).
 * Relevance splits each residual sum by the epsilon rule and adds the branch's relevance back to
 * the skip share the same way.
 * Dropout (config p > 0, nanoGPT's resid_dropout and MLP dropout): Dropout modules on the
 * attention's and the MLP's outputs before the adds, and the attention's own dropout of its
 * probabilities; the block's mode (strix_module_set_training) reaches all three. With p = 0 the
 * modules do not exist, so the block runs exactly the kernels it ran before dropout existed.
 * Not here: post-norm or parallel-residual variants; relevance after a dropping forward.
 */
#include <stdlib.h>

#include "nn_internal.h"
#include "strix/layers.h"

static strix_status vt_forward(strix_module *m, const strix_tensor *x, const strix_tensor **y) {
    return strix_block_forward((strix_block *)m, x, y);
}
static strix_status vt_backward(strix_module *m, const strix_tensor *dy, const strix_tensor **dx) {
    return strix_block_backward((strix_block *)m, dy, dx);
}
static void vt_destroy(strix_module *m) {
    strix_block *b = (strix_block *)m;
    if (b->ln_1) strix_module_free(&b->ln_1->base);
    if (b->attn) strix_module_free(&b->attn->base);
    if (b->ln_2) strix_module_free(&b->ln_2->base);
    if (b->mlp) strix_module_free(&b->mlp->base);
    if (b->drop_attn) strix_module_free(&b->drop_attn->base);
    if (b->drop_mlp) strix_module_free(&b->drop_mlp->base);
    strix_tensor *ts[] = {&b->work->x1,      &b->work->out,        &b->work->dx1,   &b->work->dx,
                          &b->work->rel_res, &b->work->rel_branch, &b->work->rel_in};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    free(b);
}
static strix_status vt_relevance(strix_module *m, const strix_tensor *r, const strix_tensor **ri) {
    return strix_block_relevance((strix_block *)m, r, ri);
}
/* Whether a child module can be explained with rule kind k. */
static bool child_supports(const strix_module *m, strix_lrp_kind k) {
    if (!m->vt->relevance) return false;
    return m->vt->supports_rule ? m->vt->supports_rule(m, k) : k == STRIX_LRP_EPSILON;
}
static bool vt_supports_rule(const strix_module *m, strix_lrp_kind k) {
    const strix_block *b = (const strix_block *)m;
    return child_supports(&b->ln_1->base, k) && child_supports(&b->attn->base, k) &&
           child_supports(&b->ln_2->base, k) && child_supports(&b->mlp->base, k);
}
static strix_module *vt_child(strix_module *m, int i) {
    strix_block *b = (strix_block *)m;
    strix_module *kids[6];
    int n = 0;
    kids[n++] = &b->ln_1->base;
    kids[n++] = &b->attn->base;
    if (b->drop_attn) kids[n++] = &b->drop_attn->base;
    kids[n++] = &b->ln_2->base;
    kids[n++] = &b->mlp->base;
    if (b->drop_mlp) kids[n++] = &b->drop_mlp->base;
    return i >= 0 && i < n ? kids[i] : NULL;
}
/* A container's mode: the attention (its probabilities' dropout) and the Dropout modules. */
static void vt_set_training(strix_module *m, bool training) {
    strix_block *b = (strix_block *)m;
    strix_module_set_training(&b->attn->base, training);
    if (b->drop_attn) strix_module_set_training(&b->drop_attn->base, training);
    if (b->drop_mlp) strix_module_set_training(&b->drop_mlp->base, training);
}
static const strix_module_i block_vt = {
    .type = "Block", .forward = vt_forward, .backward = vt_backward, .destroy = vt_destroy,
    .relevance = vt_relevance, .supports_rule = vt_supports_rule, .child = vt_child,
    .set_training = vt_set_training};

strix_status strix_block_new(strix_params *ps, const char *prefix, const strix_block_config *cfg,
                             strix_block **out) {
    *out = NULL;
    int C = cfg->attn.d_model;
    int d_ff = cfg->d_ff > 0 ? cfg->d_ff : 4 * C;
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f))
        return strix_error(STRIX_ERR_ARG, "Block: dropout %g must be in [0, 1)",
                           (double)cfg->dropout);
    char name[STRIX_PARAM_NAME_MAX];
    strix_block *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("Block");
    m->base.vt = &block_vt;
    m->base.be = ps->be;
    strix_status s = nn_name(name, prefix, "ln_1");
    if (s == STRIX_OK) s = strix_layernorm_new(ps, name, C, cfg->bias, cfg->ln_eps, &m->ln_1);
    if (s == STRIX_OK) s = nn_name(name, prefix, "attn");
    if (s == STRIX_OK) {
        strix_attention_config ac = cfg->attn;
        ac.bias = cfg->bias;
        s = strix_attention_new(ps, name, &ac, &m->attn);
    }
    if (s == STRIX_OK) s = nn_name(name, prefix, "ln_2");
    if (s == STRIX_OK) s = strix_layernorm_new(ps, name, C, cfg->bias, cfg->ln_eps, &m->ln_2);
    if (s == STRIX_OK) s = nn_name(name, prefix, "mlp");
    if (s == STRIX_OK)
        s = strix_mlp_new(ps, name, C, d_ff, cfg->act, cfg->bias, cfg->attn.init_std,
                          cfg->attn.proj_init_std, &m->mlp);
    if (s == STRIX_OK && cfg->dropout > 0.0f)
        s = strix_dropout_new(ps->be, cfg->dropout, 0, &m->drop_attn);
    if (s == STRIX_OK && cfg->dropout > 0.0f)
        s = strix_dropout_new(ps->be, cfg->dropout, 0, &m->drop_mlp);
    if (s != STRIX_OK) {
        vt_destroy(&m->base);
        return s;
    }
    *out = m;
    return STRIX_OK;
}

strix_status strix_block_forward(strix_block *m, const strix_tensor *x, const strix_tensor **y) {
    strix_backend *be = m->base.be;
    const strix_tensor *a, *b;
    m->work->x = nn_view_of(x); /* relevance splits x1 = x + attn(...) */
    m->work->dropped = strix_module_training(&m->attn->base) && m->attn->dropout > 0.0f;
    STRIX_TRY(strix_layernorm_forward(m->ln_1, x, &a));
    STRIX_TRY(strix_attention_forward(m->attn, a, &b));
    if (m->drop_attn) {
        m->work->dropped |= m->drop_attn->training;
        STRIX_TRY(strix_module_forward(&m->drop_attn->base, b, &b));
    }
    STRIX_TRY(strix_tensor_ensure(be, &m->work->x1, x->ndim, x->shape));
    size_t n = (size_t)strix_tensor_numel(x);
    if (n > 0) STRIX_TRY(strix_add(be, x->data, b->data, m->work->x1.data, n));
    STRIX_TRY(strix_layernorm_forward(m->ln_2, &m->work->x1, &a));
    STRIX_TRY(strix_mlp_forward(m->mlp, a, &b));
    if (m->drop_mlp) STRIX_TRY(strix_module_forward(&m->drop_mlp->base, b, &b));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->out, x->ndim, x->shape));
    if (n > 0) STRIX_TRY(strix_add(be, m->work->x1.data, b->data, m->work->out.data, n));
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

const strix_tensor *strix_block_output(const strix_block *m) { return &m->work->out; }

const strix_tensor *strix_block_relevance_input(const strix_block *m) {
    return &m->work->rel_in;
}

strix_status strix_block_backward(strix_block *m, const strix_tensor *dy,
                                  const strix_tensor **dx) {
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("Block", dy, &m->work->out));
    size_t n = (size_t)strix_tensor_numel(dy);
    const strix_tensor *g = dy;
    if (m->drop_mlp) STRIX_TRY(strix_module_backward(&m->drop_mlp->base, g, &g));
    STRIX_TRY(strix_mlp_backward(m->mlp, g, &g));
    STRIX_TRY(strix_layernorm_backward(m->ln_2, g, &g));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->dx1, dy->ndim, dy->shape));
    if (n > 0) STRIX_TRY(strix_add(be, dy->data, g->data, m->work->dx1.data, n));
    g = &m->work->dx1;
    if (m->drop_attn) STRIX_TRY(strix_module_backward(&m->drop_attn->base, g, &g));
    STRIX_TRY(strix_attention_backward(m->attn, g, &g));
    STRIX_TRY(strix_layernorm_backward(m->ln_1, g, &g));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->dx, dy->ndim, dy->shape));
    if (n > 0) STRIX_TRY(strix_add(be, m->work->dx1.data, g->data, m->work->dx.data, n));
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

/* Relevance through one module's vtable slot. */
static strix_status sub_relevance(strix_module *m, const strix_tensor *r, const strix_tensor **ri) {
    if (!m->vt->relevance)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s has no relevance", m->vt->type);
    return m->vt->relevance(m, r, ri);
}

strix_status strix_block_relevance(strix_block *m, const strix_tensor *r_out,
                                   const strix_tensor **r_in) {
    strix_backend *be = m->base.be;
    if (m->work->dropped)
        return strix_error(STRIX_ERR_UNSUPPORTED, "Block relevance: the last forward dropped "
                           "(training mode with dropout); explain in eval mode");
    STRIX_TRY(nn_check_same("Block relevance", r_out, &m->work->out));
    STRIX_TRY(nn_check_same("Block relevance", r_out, &m->work->x));
    size_t n = (size_t)strix_tensor_numel(r_out);
    float eps = m->base.rule.epsilon;
    STRIX_TRY(strix_tensor_ensure(be, &m->work->rel_res, r_out->ndim, r_out->shape));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->rel_branch, r_out->ndim, r_out->shape));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->rel_in, r_out->ndim, r_out->shape));
    const strix_tensor *r;
    // y = x1 + mlp(ln_2(x1))
    if (n > 0)
        STRIX_TRY(strix_lrp_residual_split(be, m->work->x1.data, m->mlp->c_proj->work->out.data,
                                           r_out->data, m->work->rel_res.data,
                                           m->work->rel_branch.data, n, eps));
    STRIX_TRY(sub_relevance(&m->mlp->base, &m->work->rel_branch, &r));
    STRIX_TRY(strix_layernorm_relevance(m->ln_2, &m->work->x1, r, &r));
    if (n > 0) STRIX_TRY(strix_add(be, m->work->rel_res.data, r->data, m->work->rel_res.data, n));
    // x1 = x + attn(ln_1(x))
    if (n > 0)
        STRIX_TRY(strix_lrp_residual_split(be, m->work->x.data, m->attn->c_proj->work->out.data,
                                           m->work->rel_res.data, m->work->rel_in.data,
                                           m->work->rel_branch.data, n, eps));
    STRIX_TRY(sub_relevance(&m->attn->base, &m->work->rel_branch, &r));
    STRIX_TRY(strix_layernorm_relevance(m->ln_1, &m->work->x, r, &r));
    if (n > 0) STRIX_TRY(strix_add(be, m->work->rel_in.data, r->data, m->work->rel_in.data, n));
    if (r_in) *r_in = &m->work->rel_in;
    return STRIX_OK;
}

void strix_block_set_dropout_seed(strix_block *m, uint64_t seed) {
    m->attn->drop_seed = strix_seed_derive(seed, 0);
    m->attn->drop_offset = 0;
    if (m->drop_attn) {
        m->drop_attn->seed = strix_seed_derive(seed, 1);
        m->drop_attn->offset = 0;
    }
    if (m->drop_mlp) {
        m->drop_mlp->seed = strix_seed_derive(seed, 2);
        m->drop_mlp->offset = 0;
    }
}

strix_status strix_block_decode(strix_block *m, const strix_tensor *x, int pos,
                                const strix_tensor **y) {
    strix_backend *be = m->base.be;
    m->work->dropped = false;
    const strix_tensor *a, *b;
    STRIX_TRY(strix_layernorm_forward(m->ln_1, x, &a));
    STRIX_TRY(strix_attention_decode(m->attn, a, pos, &b));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->x1, x->ndim, x->shape));
    size_t n = (size_t)strix_tensor_numel(x);
    STRIX_TRY(strix_add(be, x->data, b->data, m->work->x1.data, n));
    STRIX_TRY(strix_layernorm_forward(m->ln_2, &m->work->x1, &a));
    STRIX_TRY(strix_mlp_forward(m->mlp, a, &b));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->out, x->ndim, x->shape));
    STRIX_TRY(strix_add(be, m->work->x1.data, b->data, m->work->out.data, n));
    if (y) *y = &m->work->out;
    return STRIX_OK;
}
