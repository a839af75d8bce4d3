/*
 * residual.c - Residual: y = x + f(x) around one owned child module f. Backward adds the skip
 * path's dy to f's input gradient. Relevance: the epsilon split of y between x and f(x)
 * (lrp_residual_split, eps = the Residual's rule), then f's relevance, added to the skip share.
 * In the general form (forward_ex) a mask or state in the io goes on to f.
 */
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

/* y = x + fx, fx = f's output for x. */
static strix_status res_sum(strix_residual *m, const strix_tensor *x, const strix_tensor *fx,
                            const strix_tensor **y) {
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("Residual: f(x) and x", fx, x));
    STRIX_TRY(nn_ensure_same(be, &m->work->out, x));
    m->work->x = nn_view_of(x);
    size_t n = (size_t)strix_tensor_numel(x);
    if (n > 0) STRIX_TRY(strix_add(be, x->data, fx->data, m->work->out.data, n));
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

static strix_status res_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    strix_residual *m = (strix_residual *)mod;
    const strix_tensor *fx;
    STRIX_TRY(strix_module_forward(m->f, x, &fx));
    return res_sum(m, x, fx, y);
}

/* The general form: one float input x; a mask and a state go to f (e.g. a decode step of an
 * attention f on its KV-cache state), y = x + f's one output. */
static strix_status res_forward_ex(strix_module *mod, strix_module_io *io) {
    strix_residual *m = (strix_residual *)mod;
    if (io->n_in != 1 || !io->in[0] || io->ids)
        return strix_error(STRIX_ERR_UNSUPPORTED, "Residual takes one float input (a mask or a "
                           "state goes on to f)");
    strix_module_io fio = *io;
    STRIX_TRY(strix_module_forward_ex(m->f, &fio));
    if (fio.n_out != 1 || !fio.out[0])
        return strix_error(STRIX_ERR_UNSUPPORTED, "Residual: f (%s) has %d outputs, not one",
                           m->f->vt->type, fio.n_out);
    io->n_out = 1;
    return res_sum(m, io->in[0], fio.out[0], &io->out[0]);
}

static strix_status res_backward(strix_module *mod, const strix_tensor *dy,
                                 const strix_tensor **dx) {
    strix_residual *m = (strix_residual *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("Residual", dy, &m->work->out));
    const strix_tensor *df;
    STRIX_TRY(strix_module_backward(m->f, dy, &df));
    if (!df) return strix_error(STRIX_ERR_ARG, "Residual: f computes no input gradient");
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, dy));
    size_t n = (size_t)strix_tensor_numel(dy);
    if (n > 0) STRIX_TRY(strix_add(be, dy->data, df->data, m->work->dx.data, n));
    if (dx) *dx = &m->work->dx;
    return STRIX_OK;
}

/* r_x = (x/stab(y))·r, r_f = (f(x)/stab(y))·r with f(x) = y − x (the output keeps no f(x)),
 * then r_in = r_x + relevance_f(r_f). */
static strix_status res_relevance(strix_module *mod, const strix_tensor *r,
                                  const strix_tensor **r_in) {
    strix_residual *m = (strix_residual *)mod;
    strix_backend *be = m->base.be;
    STRIX_TRY(nn_check_same("Residual relevance", r, &m->work->out));
    size_t n = (size_t)strix_tensor_numel(r);
    STRIX_TRY(nn_ensure_same(be, &m->work->dx, r));
    float *block;
    STRIX_TRY(lrp_scratch(be, 2 * n, &block));
    float *fx = block, *r_f = block + n;
    strix_tensor rf = strix_tensor_view(r_f, r->device, r->ndim, r->shape);
    const strix_tensor *rf_in = NULL;
    strix_status s = STRIX_OK;
    if (n > 0) s = strix_axpby(be, 1.0f, m->work->out.data, -1.0f, m->work->x.data, fx, n);
    if (s == STRIX_OK && n > 0)
        s = strix_lrp_residual_split(be, m->work->x.data, fx, r->data, m->work->dx.data, r_f, n,
                                     m->base.rule.epsilon);
    if (s == STRIX_OK) s = strix_module_relevance(m->f, &rf, &rf_in);
    if (s == STRIX_OK && (!rf_in || strix_tensor_numel(rf_in) != (int64_t)n))
        s = strix_error(STRIX_ERR_SHAPE, "Residual relevance: f's input relevance has another "
                        "size");
    if (s == STRIX_OK && n > 0) s = strix_add(be, m->work->dx.data, rf_in->data, m->work->dx.data,
                                              n);
    strix_free(be, block);
    if (s == STRIX_OK && r_in) *r_in = &m->work->dx;
    return s;
}

static strix_module *res_child(strix_module *mod, int i) {
    return i == 0 ? ((strix_residual *)mod)->f : NULL;
}

static void res_set_training(strix_module *mod, bool training) {
    strix_module_set_training(((strix_residual *)mod)->f, training);
}

static void res_destroy(strix_module *mod) {
    strix_residual *m = (strix_residual *)mod;
    strix_module_free(m->f);
    strix_tensor_free(&m->work->out);
    strix_tensor_free(&m->work->dx);
    free(m);
}

static const strix_module_i residual_vt = {
    .type = "Residual", .forward = res_forward, .backward = res_backward, .destroy = res_destroy,
    .set_training = res_set_training, .relevance = res_relevance,
    .supports_rule = lrp_supports_all, .child = res_child, .forward_ex = res_forward_ex};

strix_status strix_residual_new(strix_module *f, strix_residual **out) {
    *out = NULL;
    STRIX_ASSERT(f != NULL, "Residual: NULL module");
    strix_residual *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) {
        strix_module_free(f);
        return NN_ALLOC_FAIL("Residual");
    }
    m->base.vt = &residual_vt;
    m->base.be = f->be;
    m->f = f;
    *out = m;
    return STRIX_OK;
}
