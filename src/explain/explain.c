/*
 * explain.c - strix_lrp_explain (strix/lrp.h): checks the rules, runs the model forward in eval
 * mode, seeds the output relevance on the host (targets, extra classes, contrast), walks the
 * modules' relevance slots back to the input and returns the input relevance with both sums.
 *
 * The seed and the sums are host work on small arrays (batch × classes, the input): sums are
 * taken in double in ascending order, so they do not depend on the thread count. The training
 * flags of BatchNorm and Dropout modules (the modules with a mode) are saved and restored.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "explain/explain_internal.h"

strix_lrp_target strix_lrp_target_default(void) {
    return (strix_lrp_target){.seed = STRIX_LRP_SEED_LOGIT, .classes = NULL, .n_extra = 0,
                              .extra = NULL, .contrast = -1};
}

void strix_lrp_explanation_free(strix_lrp_explanation *e) {
    if (!e) return;
    free(e->relevance);
    free(e->predicted);
    memset(e, 0, sizeof *e);
}

// ---- seeding -----------------------------------------------------------------------------------

/* argmax of each row of y (batch, classes): the first maximum; NaN never wins (all NaN: 0). */
static void argmax_rows(const float *y, int64_t batch, int64_t classes, int32_t *out) {
    for (int64_t n = 0; n < batch; n++) {
        const float *row = y + n * classes;
        int32_t best = 0;
        float best_v = -INFINITY;
        bool found = false;
        for (int64_t k = 0; k < classes; k++)
            if (!isnan(row[k]) && (!found || row[k] > best_v)) {
                best = (int32_t)k, best_v = row[k], found = true;
            }
        out[n] = best;
    }
}

/* seed[n][k] = value of class k (its logit or 1) times sign; marks it seeded. */
static strix_status seed_class(const strix_lrp_target *t, const float *y_row, float *seed_row,
                               bool *seeded_row, int64_t classes, int32_t k, float sign,
                               int64_t n, const char *what) {
    if (k < 0 || k >= classes)
        return strix_error(STRIX_ERR_ARG, "LRP explain: %s class %d of example %lld is not in "
                           "[0, %lld)", what, (int)k, (long long)n, (long long)classes);
    if (seeded_row[k]) return STRIX_OK;
    float v = 1.0f;
    if (t->seed == STRIX_LRP_SEED_LOGIT) {
        v = y_row[k];
        if (!isfinite(v))
            return strix_error(STRIX_ERR_NUMERIC, "LRP explain: the %s logit %d of example %lld "
                               "is %g", what, (int)k, (long long)n, (double)v);
    }
    seed_row[k] = sign * v;
    seeded_row[k] = true;
    return STRIX_OK;
}

/* Builds the host seed (batch, classes) from the target; *sum = Σ seed in double. */
static strix_status build_seed(const strix_lrp_target *t, const float *y, const int32_t *pred,
                               int64_t batch, int64_t classes, float *seed, bool *seeded,
                               double *sum) {
    if (t->seed != STRIX_LRP_SEED_LOGIT && t->seed != STRIX_LRP_SEED_ONE_HOT)
        return strix_error(STRIX_ERR_ARG, "LRP explain: unknown seed kind %d", (int)t->seed);
    if (t->n_extra < 0 || (t->n_extra > 0 && !t->extra))
        return strix_error(STRIX_ERR_ARG, "LRP explain: %d extra classes without an array",
                           t->n_extra);
    for (int64_t n = 0; n < batch; n++) {
        const float *y_row = y + n * classes;
        float *s_row = seed + n * classes;
        bool *d_row = seeded + n * classes;
        int32_t k = t->classes ? t->classes[n] : pred[n];
        STRIX_TRY(seed_class(t, y_row, s_row, d_row, classes, k, 1.0f, n, "target"));
        for (int e = 0; e < t->n_extra; e++)
            STRIX_TRY(seed_class(t, y_row, s_row, d_row, classes, t->extra[e], 1.0f, n,
                                 "extra"));
        if (t->contrast >= 0) {
            if (t->contrast < classes && d_row[t->contrast])
                return strix_error(STRIX_ERR_ARG, "LRP explain: the contrast class %d is also "
                                   "explained for example %lld", (int)t->contrast,
                                   (long long)n);
            STRIX_TRY(seed_class(t, y_row, s_row, d_row, classes, t->contrast, -1.0f, n,
                                 "contrast"));
        } else if (t->contrast != -1) {
            return strix_error(STRIX_ERR_ARG, "LRP explain: contrast %d (use -1 for none)",
                               (int)t->contrast);
        }
    }
    double total = 0.0;
    for (int64_t i = 0; i < batch * classes; i++) total += seed[i];
    *sum = total;
    return STRIX_OK;
}

// ---- the explainer -----------------------------------------------------------------------------

static bool same_shape(const strix_tensor *a, int ndim, const int64_t *shape) {
    if (a->ndim != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (a->shape[d] != shape[d]) return false;
    return true;
}

/* Host scratch of one explanation. */
typedef struct explain_host {
    float *y, *seed;
    bool *seeded;
} explain_host;

/* The input's shape: the float input in[0], or the ids when the model takes ids. */
static void input_shape(const strix_module_io *io, int *ndim, int64_t shape[STRIX_MAX_DIMS]) {
    for (int d = 0; d < STRIX_MAX_DIMS; d++) shape[d] = 1;
    if (io->ids) {
        *ndim = io->ids_ndim;
        for (int d = 0; d < io->ids_ndim; d++) shape[d] = io->ids_shape[d];
    } else {
        *ndim = io->in[0]->ndim;
        for (int d = 0; d < *ndim; d++) shape[d] = io->in[0]->shape[d];
    }
}

static strix_status explain_run(strix_module *model, const strix_module_io *in,
                                const strix_lrp_target *t, strix_lrp_explanation *out,
                                explain_host *h, strix_tensor *seed_t) {
    strix_backend *be = model->be;
    strix_module_io io = *in;
    STRIX_TRY(strix_module_forward_ex(model, &io));
    const strix_tensor *y = io.n_out == 1 ? io.out[0] : NULL;
    int xdim;
    int64_t xshape[STRIX_MAX_DIMS];
    input_shape(in, &xdim, xshape);
    if (!y || y->ndim != 2 || xdim < 1 || y->shape[0] != xshape[0])
        return strix_error(STRIX_ERR_SHAPE, "LRP explain: the model output must be one (batch, "
                           "classes) tensor with the input's batch; it has %d dims",
                           y ? y->ndim : 0);
    int64_t batch = y->shape[0], classes = y->shape[1];
    size_t ny = (size_t)(batch * classes);
    out->batch = batch, out->classes = classes;
    h->y = malloc((ny ? ny : 1) * sizeof(float));
    h->seed = calloc(ny ? ny : 1, sizeof(float));
    h->seeded = calloc(ny ? ny : 1, sizeof(bool));
    out->predicted = malloc((size_t)(batch ? batch : 1) * sizeof(int32_t));
    if (!h->y || !h->seed || !h->seeded || !out->predicted)
        return strix_error(STRIX_ERR_ALLOC, "LRP explain: out of memory");
    if (ny > 0) STRIX_TRY(strix_copy(be, h->y, y->data, ny * sizeof(float), STRIX_COPY_D2H));
    argmax_rows(h->y, batch, classes, out->predicted);
    if (batch > 0 && classes == 0)
        return strix_error(STRIX_ERR_SHAPE, "LRP explain: the model has no output classes");
    STRIX_TRY(build_seed(t, h->y, out->predicted, batch, classes, h->seed, h->seeded,
                         &out->relevance_out_sum));
    int64_t yshape[2] = {batch, classes};
    STRIX_TRY(strix_tensor_new(be, 2, yshape, seed_t));
    if (ny > 0)
        STRIX_TRY(strix_copy(be, seed_t->data, h->seed, ny * sizeof(float), STRIX_COPY_H2D));
    strix_module_io rio = {0};
    rio.n_in = 1;
    rio.in[0] = seed_t;
    STRIX_TRY(strix_module_relevance_ex(model, &rio));
    // the input's relevance: the float input's entry, or the ids' (after no float inputs)
    const strix_tensor *r_in = rio.n_out >= 1 ? rio.out[0] : NULL;
    if (!r_in || !same_shape(r_in, xdim, xshape))
        return strix_error(STRIX_ERR_SHAPE, "LRP explain: the input relevance does not have the "
                           "input's shape");
    size_t nx = (size_t)strix_tensor_numel(r_in);
    out->ndim = xdim;
    for (int d = 0; d < STRIX_MAX_DIMS; d++) out->shape[d] = xshape[d];
    out->relevance = malloc((nx ? nx : 1) * sizeof(float));
    if (!out->relevance) return strix_error(STRIX_ERR_ALLOC, "LRP explain: out of memory");
    if (nx > 0)
        STRIX_TRY(strix_copy(be, out->relevance, r_in->data, nx * sizeof(float),
                             STRIX_COPY_D2H));
    double total = 0.0;
    for (size_t i = 0; i < nx; i++) total += out->relevance[i];
    out->relevance_in_sum = total;
    if (!isfinite(total))
        return strix_error(STRIX_ERR_NUMERIC, "LRP: the input relevance is not finite (a rule "
                           "with epsilon 0 met a zero pre-activation, or the model's output is "
                           "not finite)");
    return STRIX_OK;
}

strix_status strix_lrp_explain_ex(strix_module *model, const strix_module_io *in,
                                  const strix_lrp_target *target, strix_lrp_explanation *out) {
    STRIX_ASSERT(model && in && out, "strix_lrp_explain_ex: NULL argument");
    memset(out, 0, sizeof *out);
    if (!in->ids && (in->n_in != 1 || !in->in[0]))
        return strix_error(STRIX_ERR_ARG, "LRP explain: the input is one float tensor or ids");
    if (in->ids && in->n_in != 0)
        return strix_error(STRIX_ERR_ARG, "LRP explain: ids and float inputs together");
    STRIX_TRY(strix_lrp_check(model));
    strix_lrp_target t = target ? *target : strix_lrp_target_default();
    lrp_modes modes = {0};
    strix_status s = lrp_modes_save(model, &modes);
    explain_host h = {0};
    strix_tensor seed_t = {0};
    if (s == STRIX_OK) {
        strix_module_set_training(model, false);
        s = explain_run(model, in, &t, out, &h, &seed_t);
    }
    lrp_modes_restore(&modes);
    strix_tensor_free(&seed_t);
    free(h.y);
    free(h.seed);
    free(h.seeded);
    if (s != STRIX_OK) strix_lrp_explanation_free(out);
    return s;
}

strix_status strix_lrp_explain(strix_module *model, const strix_tensor *x,
                               const strix_lrp_target *target, strix_lrp_explanation *out) {
    STRIX_ASSERT(model && x && out, "strix_lrp_explain: NULL argument");
    strix_module_io io = strix_module_io_of(x);
    return strix_lrp_explain_ex(model, &io, target, out);
}
