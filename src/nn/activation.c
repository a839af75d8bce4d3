/*
 * activation.c - elementwise activation modules (PyTorch nn.ReLU, nn.Tanh, nn.Sigmoid, nn.SiLU,
 * nn.GELU with approximate "none" or "tanh") on the elementwise primitive pair; backward uses
 * the derivative at the kept input. Relevance passes through unchanged for every rule (Zennit's
 * Pass rule for activations; LXT's identity rule).
 */
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

static strix_status act_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    strix_activation *m = (strix_activation *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_ensure_same(be, &m->work->out, x));
    m->work->x = nn_view_of(x);
    size_t n = (size_t)strix_tensor_numel(x);
    if (n > 0) STRIX_TRY(strix_elementwise(be, m->op, x->data, m->work->out.data, n));
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

static strix_status act_backward(strix_module *mod, const strix_tensor *dy,
                                 const strix_tensor **dx) {
    strix_activation *m = (strix_activation *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same(m->base.vt->type, dy, &m->work->out));
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, dy));
    size_t n = (size_t)strix_tensor_numel(dy);
    if (n > 0) STRIX_TRY(strix_elementwise_backward(be, m->op, m->work->x.data, dy->data,
                                                    m->work->dx.data, n));
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

/* Pass-through: the input relevance is r itself. */
static strix_status act_relevance(strix_module *mod, const strix_tensor *r,
                                  const strix_tensor **r_in) {
    strix_activation *m = (strix_activation *)mod;
    STRIX_TRY(nn_check_same(m->base.vt->type, r, &m->work->out));
    if (r_in) *r_in = r;
    return STRIX_OK;
}

static void act_destroy(strix_module *mod) {
    strix_activation *m = (strix_activation *)mod;
    strix_tensor_free(&m->work->out);
    strix_tensor_free(&m->work->dx);
    free(m);
}

#define ACT_VT(var, name) \
    static const strix_module_i var = {.type = name, .forward = act_forward,                  \
                                      .backward = act_backward, .destroy = act_destroy,       \
                                      .relevance = act_relevance,                             \
                                      .supports_rule = lrp_supports_all}
ACT_VT(relu_vt, "ReLU");
ACT_VT(tanh_vt, "Tanh");
ACT_VT(sigmoid_vt, "Sigmoid");
ACT_VT(silu_vt, "SiLU");
ACT_VT(gelu_vt, "GELU");
ACT_VT(gelu_tanh_vt, "GELU"); // approximate="tanh"

strix_status strix_activation_new(strix_backend *be, strix_act op, strix_activation **out) {
    *out = NULL;
    const strix_module_i *vt;
    switch (op) {
    case STRIX_ACT_RELU: vt = &relu_vt; break;
    case STRIX_ACT_TANH: vt = &tanh_vt; break;
    case STRIX_ACT_SIGMOID: vt = &sigmoid_vt; break;
    case STRIX_ACT_SILU: vt = &silu_vt; break;
    case STRIX_ACT_GELU: vt = &gelu_vt; break;
    case STRIX_ACT_GELU_TANH: vt = &gelu_tanh_vt; break;
    default:
        return strix_error(STRIX_ERR_ARG, "activation module: op %d is not an activation layer",
                           (int)op);
    }
    strix_activation *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL(vt->type);
    m->base.vt = vt;
    m->base.be = be;
    m->op = op;
    *out = m;
    return STRIX_OK;
}
