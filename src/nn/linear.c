/*
 * linear.c - Linear (PyTorch nn.Linear): y = x·Wᵀ + b with W stored (out, in).
 *
 * One GEMM plus a row-vector add forward; two GEMMs and a column sum backward; relevance: the
 * epsilon rule is the backend's lrp_linear primitive (one implementation of that rule), gamma,
 * alpha-beta and z-box the affine LRP rules of src/nn/lrp_affine.c with the GEMMs as the map.
 * Does not do initialisation itself (the parameter block draws values; strix_linear_new_default
 * only sets PyTorch's distribution).
 */
#include <math.h>
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

static strix_status vt_relevance(strix_module *m, const strix_tensor *r,
                                 const strix_tensor **r_in);

static strix_status vt_forward(strix_module *m, const strix_tensor *x, const strix_tensor **y) {
    return strix_linear_forward((strix_linear *)m, x, y);
}
static strix_status vt_backward(strix_module *m, const strix_tensor *dy, const strix_tensor **dx) {
    return strix_linear_backward((strix_linear *)m, dy, dx);
}
static void vt_destroy(strix_module *m) {
    strix_linear *l = (strix_linear *)m;
    strix_tensor_free(&l->work->out);
    strix_tensor_free(&l->work->dx);
    free(l);
}
static const strix_module_i linear_vt = {
    .type = "Linear", .forward = vt_forward, .backward = vt_backward, .destroy = vt_destroy,
    .relevance = vt_relevance, .supports_rule = lrp_supports_all};

strix_status strix_linear_new(strix_params *ps, const char *prefix, int in_features,
                              int out_features, bool bias, float init_std,
                              strix_param *tied_weight, strix_linear **out) {
    *out = NULL;
    if (in_features <= 0 || out_features <= 0)
        return strix_error(STRIX_ERR_ARG, "Linear %s: sizes %d -> %d must be positive", prefix,
                           in_features, out_features);
    char name[STRIX_PARAM_NAME_MAX];
    STRIX_TRY(nn_name(name, prefix, "weight"));
    if (tied_weight && (tied_weight->ndim != 2 || tied_weight->shape[0] != out_features ||
                        tied_weight->shape[1] != in_features))
        return strix_error(STRIX_ERR_SHAPE, "Linear %s: tied weight %s is not (%d, %d)", prefix,
                           tied_weight->name, out_features, in_features);
    strix_linear *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("Linear");
    m->base.vt = &linear_vt;
    m->base.be = ps->be;
    m->in_features = in_features;
    m->out_features = out_features;
    m->need_input_grad = true;
    int64_t wshape[2] = {out_features, in_features};
    m->weight = tied_weight ? strix_params_tie(ps, name, tied_weight)
                            : strix_params_add(ps, name, 2, wshape, STRIX_INIT_NORMAL, init_std,
                                               true);
    if (m->weight && bias) {
        int64_t bshape[1] = {out_features};
        strix_status s = nn_name(name, prefix, "bias");
        if (s != STRIX_OK) {
            free(m);
            return s;
        }
        m->bias = strix_params_add(ps, name, 1, bshape, STRIX_INIT_ZEROS, 0.0f, false);
        if (!m->bias) m->weight = NULL;
    }
    if (!m->weight) {
        free(m);
        return NN_ALLOC_FAIL("Linear");
    }
    *out = m;
    return STRIX_OK;
}

strix_status strix_linear_new_default(strix_params *ps, const char *prefix, int in_features,
                                      int out_features, bool bias, strix_linear **out) {
    STRIX_TRY(strix_linear_new(ps, prefix, in_features, out_features, bias, 0.0f, NULL, out));
    // kaiming_uniform_(a=sqrt(5)): gain sqrt(2/(1+5)), bound gain·sqrt(3/fan_in) = 1/sqrt(fan_in)
    float bound = (float)(1.0 / sqrt((double)in_features));
    strix_linear *m = *out;
    m->weight->init = STRIX_INIT_UNIFORM;
    m->weight->init_std = bound;
    if (m->bias) {
        m->bias->init = STRIX_INIT_UNIFORM;
        m->bias->init_std = bound;
    }
    return STRIX_OK;
}

strix_status strix_linear_forward(strix_linear *m, const strix_tensor *x, const strix_tensor **y) {
    STRIX_ASSERT(m->weight->data != NULL, "Linear: parameters not allocated");
    STRIX_TRY(nn_check_last("Linear", x, m->in_features));
    strix_backend *be = m->base.be;
    size_t rows = nn_rows(x), in = (size_t)m->in_features, out = (size_t)m->out_features;
    STRIX_TRY(nn_ensure_like(be, &m->work->out, x, m->out_features));
    m->work->x = nn_view_of(x);
    if (rows > 0) {
        STRIX_TRY(strix_gemm_ex(be, x->data, false, m->weight->data, true, m->work->out.data, rows,
                                in, out, 0.0f));
        if (m->bias)
            STRIX_TRY(strix_add_row_vector(be, m->work->out.data, m->bias->data, m->work->out.data,
                                           rows, out));
    }
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

const strix_tensor *strix_linear_output(const strix_linear *m) { return &m->work->out; }

const strix_tensor *strix_linear_input_grad(const strix_linear *m) { return &m->work->dx; }

strix_status strix_linear_backward(strix_linear *m, const strix_tensor *dy,
                                   const strix_tensor **dx) {
    STRIX_TRY(nn_check_same("Linear", dy, &m->work->out));
    strix_backend *be = m->base.be;
    size_t rows = nn_rows(dy), in = (size_t)m->in_features, out = (size_t)m->out_features;
    if (rows > 0) {
        // dW (out,in) += dyᵀ (out,rows) · x (rows,in)
        if (nn_wants_grad(m->weight))
            STRIX_TRY(strix_gemm_ex(be, dy->data, true, m->work->x.data, false, m->weight->grad,
                                    out, rows, in, 1.0f));
        if (m->bias && nn_wants_grad(m->bias))
            STRIX_TRY(strix_column_sums(be, dy->data, m->bias->grad, rows, out, 1.0f));
    }
    if (m->need_input_grad) {
        STRIX_TRY(nn_ensure_like(be, &m->work->dx, dy, m->in_features));
        // dx (rows,in) = dy (rows,out) · W (out,in)
        if (rows > 0)
            STRIX_TRY(strix_gemm_ex(be, dy->data, false, m->weight->data, false, m->work->dx.data,
                                    rows, out, in, 0.0f));
    }
    if (dx) *dx = m->need_input_grad ? &m->work->dx : NULL;
    return STRIX_OK;
}

// ---- relevance (LRP) ---------------------------------------------------------------------------

/* The map of the affine rules: rows of x (count, in) times Wᵀ, W (out, in). */
typedef struct linear_map {
    strix_backend *be;
    size_t in, out;
} linear_map;

static strix_status lin_map_forward(void *ctx, size_t count, const float *in, const float *w,
                                    const float *b, float *z, bool accumulate) {
    linear_map *c = ctx;
    STRIX_TRY(strix_gemm_ex(c->be, in, false, w, true, z, count, c->in, c->out,
                            accumulate ? 1.0f : 0.0f));
    if (b) STRIX_TRY(strix_add_row_vector(c->be, z, b, z, count, c->out));
    return STRIX_OK;
}

static strix_status lin_map_backward(void *ctx, size_t count, const float *s, const float *w,
                                     float *g) {
    linear_map *c = ctx;
    // g (count, in) = s (count, out) · W (out, in)
    return strix_gemm_ex(c->be, s, false, w, false, g, count, c->out, c->in, 0.0f);
}

/* The epsilon rule is exactly the backend's lrp_linear primitive, R = x⊙(Wᵀ·(r/stab z)), with
 * z the pre-bias output (or with the bias, for bias_in_denominator): kept from the forward when
 * the affine description has it, else recomputed into scratch. */
static strix_status epsilon_relevance(const lrp_affine *a, const strix_lrp_rule *rule,
                                      const float *r, float *r_in) {
    linear_map *map = a->ctx;
    bool with_bias = rule->bias_in_denominator && a->b;
    const float *z = with_bias ? a->z_full : a->z_pre;
    float *scratch = NULL;
    strix_status s = STRIX_OK;
    if (!z && a->items > 0) {
        s = lrp_scratch(a->be, a->items * a->out_item, &scratch);
        if (s == STRIX_OK)
            s = lin_map_forward(map, a->items, a->x, a->w, with_bias ? a->b : NULL, scratch,
                                false);
        z = scratch;
    }
    if (s == STRIX_OK && a->items > 0)
        s = strix_lrp_linear(a->be, a->x, a->w, z, r, r_in, a->items, map->in, map->out,
                             rule->epsilon);
    if (scratch) strix_free(a->be, scratch);
    return s;
}

strix_status lrp_linear_relevance_ex(strix_linear *m, const strix_tensor *x, const float *w,
                                     const float *b, const float *z, const strix_tensor *r,
                                     const strix_tensor **r_in) {
    if (!x) x = &m->work->x;
    STRIX_TRY(nn_check_same("Linear relevance", r, &m->work->out));
    STRIX_TRY(nn_check_same("Linear relevance input", x, &m->work->x));
    STRIX_TRY(lrp_rule_check(&m->base.rule, "Linear"));
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_ensure_like(be, &m->work->dx, x, m->in_features));
    linear_map map = {.be = be, .in = (size_t)m->in_features, .out = (size_t)m->out_features};
    size_t widest = map.in > map.out ? map.in : map.out;
    lrp_affine a = {.be = be, .ctx = &map, .items = nn_rows(x),
                    .chunk = lrp_chunk_items(4 * widest * sizeof(float)), .in_item = map.in,
                    .out_item = map.out, .w_n = map.out * map.in, .b_n = b ? map.out : 0,
                    .x = x->data, .w = w, .b = b,
                    // z = x·Wᵀ + b, which is also the pre-bias z when there is no bias
                    .z_pre = !b ? z : NULL, .z_full = z,
                    .forward = lin_map_forward, .backward = lin_map_backward};
    if (m->base.rule.kind == STRIX_LRP_EPSILON)
        STRIX_TRY(epsilon_relevance(&a, &m->base.rule, r->data, m->work->dx.data));
    else
        STRIX_TRY(lrp_affine_relevance(&a, &m->base.rule, r->data, m->work->dx.data));
    if (r_in) *r_in = &m->work->dx;
    return STRIX_OK;
}

strix_status lrp_linear_relevance(strix_linear *m, const float *w, const float *b,
                                  const strix_tensor *r, const strix_tensor **r_in) {
    // with its own parameters, the forward's output is the map's z
    bool own = w == m->weight->data && b == (m->bias ? m->bias->data : NULL);
    return lrp_linear_relevance_ex(m, NULL, w, b, own ? m->work->out.data : NULL, r, r_in);
}

static strix_status vt_relevance(strix_module *m, const strix_tensor *r,
                                 const strix_tensor **r_in) {
    strix_linear *l = (strix_linear *)m;
    return lrp_linear_relevance(l, l->weight->data, l->bias ? l->bias->data : NULL, r, r_in);
}
