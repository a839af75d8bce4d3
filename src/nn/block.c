/*
 * block.c - the pre-norm transformer block (nanoGPT Block):
 *   x1 = x + attn(ln_1(x));  y = x1 + mlp(ln_2(x1)).
 * Backward adds the residual paths back: dx1 = dy + ln_2'(mlp'(dy)); dx = dx1 + ln_1'(attn'(dx1)).
 * Not here: dropout, post-norm or parallel-residual variants.
 */
#include <stdlib.h>

#include "nn_internal.h"

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
    strix_tensor *ts[] = {&b->x1, &b->out, &b->dx1, &b->dx};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    free(b);
}
static const strix_module_i block_vt = {
    .type = "Block", .forward = vt_forward, .backward = vt_backward, .destroy = vt_destroy};

strix_status strix_block_new(strix_params *ps, const char *prefix, const strix_block_config *cfg,
                             strix_block **out) {
    *out = NULL;
    int C = cfg->attn.d_model;
    int d_ff = cfg->d_ff > 0 ? cfg->d_ff : 4 * C;
    char name[STRIX_PARAM_NAME_MAX];
    strix_block *m = calloc(1, sizeof *m);
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
    STRIX_TRY(strix_layernorm_forward(m->ln_1, x, &a));
    STRIX_TRY(strix_attention_forward(m->attn, a, &b));
    STRIX_TRY(strix_tensor_ensure(be, &m->x1, x->ndim, x->shape));
    size_t n = (size_t)strix_tensor_numel(x);
    if (n > 0) STRIX_TRY(strix_add(be, x->data, b->data, m->x1.data, n));
    STRIX_TRY(strix_layernorm_forward(m->ln_2, &m->x1, &a));
    STRIX_TRY(strix_mlp_forward(m->mlp, a, &b));
    STRIX_TRY(strix_tensor_ensure(be, &m->out, x->ndim, x->shape));
    if (n > 0) STRIX_TRY(strix_add(be, m->x1.data, b->data, m->out.data, n));
    if (y) *y = &m->out;
    return STRIX_OK;
}

strix_status strix_block_backward(strix_block *m, const strix_tensor *dy,
                                  const strix_tensor **dx) {
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("Block", dy, &m->out));
    size_t n = (size_t)strix_tensor_numel(dy);
    const strix_tensor *g;
    STRIX_TRY(strix_mlp_backward(m->mlp, dy, &g));
    STRIX_TRY(strix_layernorm_backward(m->ln_2, g, &g));
    STRIX_TRY(strix_tensor_ensure(be, &m->dx1, dy->ndim, dy->shape));
    if (n > 0) STRIX_TRY(strix_add(be, dy->data, g->data, m->dx1.data, n));
    STRIX_TRY(strix_attention_backward(m->attn, &m->dx1, &g));
    STRIX_TRY(strix_layernorm_backward(m->ln_1, g, &g));
    STRIX_TRY(strix_tensor_ensure(be, &m->dx, dy->ndim, dy->shape));
    if (n > 0) STRIX_TRY(strix_add(be, m->dx1.data, g->data, m->dx.data, n));
    if (dx) *dx = &m->dx;
    return STRIX_OK;
}

strix_status strix_block_decode(strix_block *m, const strix_tensor *x, int pos,
                                const strix_tensor **y) {
    strix_backend *be = m->base.be;
    const strix_tensor *a, *b;
    STRIX_TRY(strix_layernorm_forward(m->ln_1, x, &a));
    STRIX_TRY(strix_attention_decode(m->attn, a, pos, &b));
    STRIX_TRY(strix_tensor_ensure(be, &m->x1, x->ndim, x->shape));
    size_t n = (size_t)strix_tensor_numel(x);
    STRIX_TRY(strix_add(be, x->data, b->data, m->x1.data, n));
    STRIX_TRY(strix_layernorm_forward(m->ln_2, &m->x1, &a));
    STRIX_TRY(strix_mlp_forward(m->mlp, a, &b));
    STRIX_TRY(strix_tensor_ensure(be, &m->out, x->ndim, x->shape));
    STRIX_TRY(strix_add(be, m->x1.data, b->data, m->out.data, n));
    if (y) *y = &m->out;
    return STRIX_OK;
}
