/*
 * attribution.c - the gradient explainers of strix/attribution.h (Saliency, Gradient×Input,
 * Integrated Gradients, SmoothGrad, Grad-CAM), Captum 0.9's semantics.
 *
 * The model passes are the modules' own forward/backward on the backend. Everything else -
 * building interpolated or noisy inputs, one-hot seeds, the sums over steps and samples - runs
 * on the host, serially, in the documented order: results do not depend on the thread count or
 * on the chunk size. A run (attr_run) freezes the parameters, forces the first leaf's input
 * gradient on, and undoes both at the end.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "explain/explain_internal.h"
#include "strix/attribution.h"

#define ATTR_DEFAULT_ROWS 256
#define ATTR_PI 3.14159265358979323846

typedef struct attr_run {
    strix_module *model;
    strix_backend *be;
    strix_params *ps;
    bool *flags;             /* saved requires_grad of ps->items */
    strix_linear *lin;       /* first leaf whose need_input_grad was forced on */
    strix_conv2d *conv;
    int ndim;
    int64_t shape[STRIX_MAX_DIMS];
    int64_t batch, feat;     /* examples, values per example */
    int64_t classes;
    int64_t cap_rows;        /* rows the chunk buffers hold */
    int64_t seeded_rows;     /* rows of the one-hot seed now on the backend */
    strix_tensor xin, dy;    /* backend: chunk input, one-hot seed */
    float *hx;               /* host: x (batch, feat) */
    float *hin, *hg;         /* host: chunk input and its gradient (cap_rows, feat) */
    float *hy, *hdy;         /* host: chunk outputs and seed (cap_rows, classes) */
    int32_t *target;         /* = out->target */
    lrp_modes modes;         /* training flags to restore */
} attr_run;

// ---- result ------------------------------------------------------------------------------------

void strix_attribution_free(strix_attribution *a) {
    if (!a) return;
    free(a->values);
    free(a->target);
    free(a->predicted);
    free(a->output);
    free(a->example_sum);
    free(a->baseline_output);
    free(a->output_delta);
    memset(a, 0, sizeof *a);
}

static int64_t numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* Allocates the per-example arrays and `values` of the given shape. */
static strix_status result_alloc(strix_attribution *out, int ndim, const int64_t *shape,
                                 int64_t batch, bool ig) {
    size_t nb = (size_t)batch;
    out->ndim = ndim;
    for (int d = 0; d < STRIX_MAX_DIMS; d++) out->shape[d] = d < ndim ? shape[d] : 1;
    out->batch = batch;
    out->values = calloc((size_t)numel_of(ndim, shape), sizeof(float));
    out->target = calloc(nb, sizeof(int32_t));
    out->predicted = calloc(nb, sizeof(int32_t));
    out->output = calloc(nb, sizeof(float));
    out->example_sum = calloc(nb, sizeof(double));
    bool ok = out->values && out->target && out->predicted && out->output && out->example_sum;
    if (ig) {
        out->baseline_output = calloc(nb, sizeof(float));
        out->output_delta = calloc(nb, sizeof(double));
        ok = ok && out->baseline_output && out->output_delta;
    }
    return ok ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "attribution: out of memory");
}

/* example_sum and attribution_sum from values (index order, in double). */
static void result_sums(strix_attribution *out) {
    int64_t per = numel_of(out->ndim, out->shape) / out->batch;
    out->attribution_sum = 0.0;
    for (int64_t b = 0; b < out->batch; b++) {
        double s = 0.0;
        for (int64_t j = 0; j < per; j++) s += (double)out->values[b * per + j];
        out->example_sum[b] = s;
        out->attribution_sum += s;
    }
}

// ---- a run: setup and teardown -----------------------------------------------------------------

/* The first leaf in forward order (through `child`, or Sequential's children), or m itself. */
static strix_module *first_leaf(strix_module *m) {
    for (int depth = 0; depth < 64; depth++) {
        strix_module *c = NULL;
        if (m->vt->child) {
            c = m->vt->child(m, 0);
        } else if (strcmp(m->vt->type, "Sequential") == 0) {
            strix_sequential *s = (strix_sequential *)m;
            c = s->count > 0 ? s->children[0] : NULL;
        }
        if (!c) return m;
        m = c;
    }
    return m;
}

/* Eval mode, frozen parameters, the first leaf's input gradient on; x's geometry. */
static strix_status run_setup(attr_run *r, strix_module *model, const strix_tensor *x,
                              const strix_attr_config *cfg) {
    memset(r, 0, sizeof *r);
    if (!model || !x) return strix_error(STRIX_ERR_ARG, "attribution: NULL model or input");
    if (x->ndim < 2 || x->ndim > STRIX_MAX_DIMS)
        return strix_error(STRIX_ERR_SHAPE, "attribution: input has %d dims, expected "
                           "(batch, ...) with 2 to %d", x->ndim, STRIX_MAX_DIMS);
    r->model = model;
    r->be = model->be;
    r->ndim = x->ndim;
    for (int d = 0; d < STRIX_MAX_DIMS; d++) r->shape[d] = d < x->ndim ? x->shape[d] : 1;
    r->batch = x->shape[0];
    r->feat = r->batch > 0 ? strix_tensor_numel(x) / r->batch : 0;
    if (r->batch < 1 || r->feat < 1)
        return strix_error(STRIX_ERR_SHAPE, "attribution: empty input");
    STRIX_TRY(lrp_modes_save(model, &r->modes));
    strix_module_set_training(model, false);
    if (cfg && cfg->params && cfg->params->count > 0) {
        strix_params *ps = cfg->params;
        r->flags = malloc(sizeof(bool) * (size_t)ps->count);
        if (!r->flags) return strix_error(STRIX_ERR_ALLOC, "attribution: out of memory");
        for (int i = 0; i < ps->count; i++) r->flags[i] = ps->items[i]->requires_grad;
        for (int i = 0; i < ps->count; i++) ps->items[i]->requires_grad = false;
        r->ps = ps;
    }
    strix_module *leaf = first_leaf(model);
    if (strcmp(leaf->vt->type, "Linear") == 0) {
        strix_linear *lin = (strix_linear *)leaf;
        if (!lin->need_input_grad) lin->need_input_grad = true, r->lin = lin;
    } else if (strcmp(leaf->vt->type, "Conv2d") == 0) {
        strix_conv2d *conv = (strix_conv2d *)leaf;
        if (!conv->need_input_grad) conv->need_input_grad = true, r->conv = conv;
    }
    return STRIX_OK;
}

/* Undoes run_setup's changes (training flags included) and frees the run's buffers. */
static void run_teardown(attr_run *r) {
    lrp_modes_restore(&r->modes);
    if (r->ps)
        for (int i = 0; i < r->ps->count; i++) r->ps->items[i]->requires_grad = r->flags[i];
    if (r->lin) r->lin->need_input_grad = false;
    if (r->conv) r->conv->need_input_grad = false;
    free(r->flags);
    free(r->hx);
    free(r->hin);
    free(r->hg);
    free(r->hy);
    free(r->hdy);
    strix_tensor_free(&r->xin);
    strix_tensor_free(&r->dy);
    memset(r, 0, sizeof *r);
}

/* Host and backend buffers for chunks of `rows` rows (classes must be known). */
static strix_status run_reserve(attr_run *r, int64_t rows) {
    if (rows <= r->cap_rows) return STRIX_OK;
    free(r->hin);
    free(r->hg);
    free(r->hy);
    free(r->hdy);
    r->hin = malloc(sizeof(float) * (size_t)(rows * r->feat));
    r->hg = malloc(sizeof(float) * (size_t)(rows * r->feat));
    r->hy = malloc(sizeof(float) * (size_t)(rows * r->classes));
    r->hdy = malloc(sizeof(float) * (size_t)(rows * r->classes));
    r->seeded_rows = 0;
    if (!r->hin || !r->hg || !r->hy || !r->hdy) {
        r->cap_rows = 0;
        return strix_error(STRIX_ERR_ALLOC, "attribution: out of memory");
    }
    r->cap_rows = rows;
    return STRIX_OK;
}

// ---- passes ------------------------------------------------------------------------------------

/* Checks y is (rows, classes) (classes fixed by the first pass) and copies it to r->hy. */
static strix_status take_output(attr_run *r, const strix_tensor *y, int64_t rows) {
    if (y->ndim != 2 || y->shape[0] != rows || y->shape[1] < 1)
        return strix_error(STRIX_ERR_SHAPE, "attribution: the model's output must be (batch, "
                           "classes); got %d dims, first %lld", y->ndim, (long long)y->shape[0]);
    if (r->classes == 0) {
        r->classes = y->shape[1];
        STRIX_TRY(run_reserve(r, r->batch));
    } else if (y->shape[1] != r->classes) {
        return strix_error(STRIX_ERR_SHAPE, "attribution: output width changed");
    }
    return strix_copy(r->be, r->hy, y->data, sizeof(float) * (size_t)(rows * r->classes),
                      STRIX_COPY_D2H);
}

/* After the first forward (outputs in r->hy): predicted classes, targets, outputs. */
static strix_status take_targets(attr_run *r, const strix_attr_config *cfg,
                                 strix_attribution *out) {
    const int64_t C = r->classes;
    for (int64_t b = 0; b < r->batch; b++) {
        const float *row = r->hy + b * C;
        int32_t best = 0;
        for (int64_t c = 1; c < C; c++)
            if (row[c] > row[best]) best = (int32_t)c;
        out->predicted[b] = best;
        int32_t t = cfg && cfg->targets ? cfg->targets[b] : best;
        if (t < 0 || t >= C)
            return strix_error(STRIX_ERR_ARG, "attribution: target %d of example %lld is not a "
                               "class (0..%lld)", (int)t, (long long)b, (long long)C - 1);
        out->target[b] = t;
        out->output[b] = row[t];
    }
    r->target = out->target;
    return STRIX_OK;
}

/* The first forward, of x itself: outputs, predictions and targets; x stays the model's input. */
static strix_status run_first_forward(attr_run *r, const strix_tensor *x,
                                      const strix_attr_config *cfg, strix_attribution *out) {
    const strix_tensor *y = NULL;
    STRIX_TRY(strix_module_forward(r->model, x, &y));
    STRIX_TRY(take_output(r, y, r->batch));
    STRIX_TRY(take_targets(r, cfg, out));
    r->hx = malloc(sizeof(float) * (size_t)(r->batch * r->feat));
    if (!r->hx) return strix_error(STRIX_ERR_ALLOC, "attribution: out of memory");
    return strix_copy(r->be, r->hx, x->data, sizeof(float) * (size_t)(r->batch * r->feat),
                      STRIX_COPY_D2H);
}

/* The one-hot seed of `rows` rows (row i explains example i mod batch) on the backend. */
static strix_status run_seed(attr_run *r, int64_t rows) {
    if (r->seeded_rows == rows) return STRIX_OK;
    const int64_t C = r->classes;
    memset(r->hdy, 0, sizeof(float) * (size_t)(rows * C));
    for (int64_t i = 0; i < rows; i++) r->hdy[i * C + r->target[i % r->batch]] = 1.0f;
    int64_t shape[2] = {rows, C};
    STRIX_TRY(strix_tensor_ensure(r->be, &r->dy, 2, shape));
    STRIX_TRY(strix_copy(r->be, r->dy.data, r->hdy, sizeof(float) * (size_t)(rows * C),
                         STRIX_COPY_H2D));
    r->seeded_rows = rows;
    return STRIX_OK;
}

/* Backward of the last forward (`rows` rows) from the one-hot seed; the input gradient to r->hg. */
static strix_status run_backward(attr_run *r, int64_t rows) {
    STRIX_TRY(run_seed(r, rows));
    const strix_tensor *dx = NULL;
    STRIX_TRY(strix_module_backward(r->model, &r->dy, &dx));
    if (!dx)
        return strix_error(STRIX_ERR_ARG, "attribution: the model computes no input gradient "
                           "(its first layer has need_input_grad off?)");
    if (strix_tensor_numel(dx) != rows * r->feat)
        return strix_error(STRIX_ERR_SHAPE, "attribution: input gradient has the wrong size");
    return strix_copy(r->be, r->hg, dx->data, sizeof(float) * (size_t)(rows * r->feat),
                      STRIX_COPY_D2H);
}

/* Uploads r->hin (rows, ...) and runs the forward on it: outputs in r->hy. */
static strix_status run_chunk_forward(attr_run *r, int64_t rows) {
    int64_t shape[STRIX_MAX_DIMS];
    for (int d = 0; d < STRIX_MAX_DIMS; d++) shape[d] = r->shape[d];
    shape[0] = rows;
    STRIX_TRY(strix_tensor_ensure(r->be, &r->xin, r->ndim, shape));
    STRIX_TRY(strix_copy(r->be, r->xin.data, r->hin, sizeof(float) * (size_t)(rows * r->feat),
                         STRIX_COPY_H2D));
    const strix_tensor *y = NULL;
    STRIX_TRY(strix_module_forward(r->model, &r->xin, &y));
    return take_output(r, y, rows);
}

/* run_chunk_forward, then the backward: input gradient in r->hg. */
static strix_status run_chunk(attr_run *r, int64_t rows) {
    STRIX_TRY(run_chunk_forward(r, rows));
    return run_backward(r, rows);
}

/* Whole batches per chunk for cfg->max_rows. */
static int64_t batches_per_chunk(const attr_run *r, const strix_attr_config *cfg) {
    int64_t max_rows = cfg && cfg->max_rows > 0 ? cfg->max_rows : ATTR_DEFAULT_ROWS;
    int64_t k = max_rows / r->batch;
    return k < 1 ? 1 : k;
}

/* Shared ending: sums on success; on failure frees the result. */
static strix_status run_finish(attr_run *r, strix_status s, strix_attribution *out) {
    run_teardown(r);
    if (s == STRIX_OK) result_sums(out);
    else strix_attribution_free(out);
    return s;
}

// ---- Saliency, Gradient×Input ------------------------------------------------------------------

/* The gradient at x itself into out->values, then `post` applied per element. */
typedef enum grad_post { POST_NONE, POST_ABS, POST_TIMES_INPUT } grad_post;

static strix_status gradient_at_x(strix_module *model, const strix_tensor *x,
                                  const strix_attr_config *cfg, grad_post post,
                                  strix_attribution *out) {
    STRIX_ASSERT(out, "attribution: NULL result");
    memset(out, 0, sizeof *out);
    attr_run r;
    strix_status s = run_setup(&r, model, x, cfg);
    if (s == STRIX_OK) s = result_alloc(out, r.ndim, r.shape, r.batch, false);
    if (s == STRIX_OK) s = run_first_forward(&r, x, cfg, out);
    if (s == STRIX_OK) s = run_backward(&r, r.batch);
    if (s == STRIX_OK) {
        size_t n = (size_t)(r.batch * r.feat);
        for (size_t i = 0; i < n; i++) {
            float g = r.hg[i];
            out->values[i] = post == POST_ABS ? fabsf(g) : post == POST_TIMES_INPUT ? r.hx[i] * g
                                                                                     : g;
        }
    }
    return run_finish(&r, s, out);
}

strix_status strix_attr_saliency(strix_module *model, const strix_tensor *x,
                                 const strix_attr_config *cfg, bool abs,
                                 strix_attribution *out) {
    return gradient_at_x(model, x, cfg, abs ? POST_ABS : POST_NONE, out);
}

strix_status strix_attr_input_x_gradient(strix_module *model, const strix_tensor *x,
                                         const strix_attr_config *cfg, strix_attribution *out) {
    return gradient_at_x(model, x, cfg, POST_TIMES_INPUT, out);
}

// ---- Integrated Gradients ----------------------------------------------------------------------

/* n-point Gauss-Legendre rule on [-1, 1]: nodes t ascending, weights v (Σ v = 2), by Newton's
 * method on P_n from the three-term recurrence, in double (numpy's leggauss to rounding). */
static void gauss_legendre(int n, double *t, double *v) {
    for (int i = 0; i < (n + 1) / 2; i++) {
        double z = cos(ATTR_PI * ((double)i + 0.75) / ((double)n + 0.5)); /* i-th largest root */
        double dp = 1.0;
        for (int it = 0; it < 100; it++) {
            double p0 = 1.0, p1 = z;
            for (int k = 2; k <= n; k++) {
                double p2 = ((2.0 * k - 1.0) * z * p1 - (k - 1.0) * p0) / (double)k;
                p0 = p1;
                p1 = p2;
            }
            dp = n == 1 ? 1.0 : (double)n * (z * p1 - p0) / (z * z - 1.0);
            double dz = p1 / dp;
            z -= dz;
            if (fabs(dz) < 1e-16) break;
        }
        if (2 * i + 1 == n) z = 0.0; /* the middle node of an odd rule */
        double p0 = 1.0, p1 = z; /* P_n'(z) at the final z */
        for (int k = 2; k <= n; k++) {
            double p2 = ((2.0 * k - 1.0) * z * p1 - (k - 1.0) * p0) / (double)k;
            p0 = p1;
            p1 = p2;
        }
        dp = n == 1 ? 1.0 : (double)n * (z * p1 - p0) / (z * z - 1.0);
        double w = 2.0 / ((1.0 - z * z) * dp * dp);
        t[n - 1 - i] = z;
        t[i] = -z;
        v[i] = v[n - 1 - i] = w;
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += v[i];
    for (int i = 0; i < n; i++) v[i] *= 2.0 / sum;
}

/* torch.linspace(start, end, n) in float32, element i (ATen's CPU kernel: float step, the first
 * half counted from start, the second from end). */
static float linspace_f(double start, double end, int n, int i) {
    float s = (float)start, e = (float)end;
    float step = (e - s) / (float)(n - 1);
    return i < n / 2 ? s + step * (float)i : e - step * (float)(n - 1 - i);
}

/* Captum's alphas and step sizes for `method` (as float32, the precision they are used in). */
static strix_status ig_points(strix_ig_method method, int n, float *alpha, float *w) {
    if (method == STRIX_IG_GAUSS_LEGENDRE) {
        if (n < 1) return strix_error(STRIX_ERR_ARG, "integrated gradients: n_steps %d < 1", n);
        double *t = malloc(sizeof(double) * (size_t)n), *v = malloc(sizeof(double) * (size_t)n);
        if (!t || !v) {
            free(t);
            free(v);
            return strix_error(STRIX_ERR_ALLOC, "integrated gradients: out of memory");
        }
        gauss_legendre(n, t, v);
        for (int k = 0; k < n; k++) {
            alpha[k] = (float)(0.5 * (1.0 + t[k]));
            w[k] = (float)(0.5 * v[k]);
        }
        free(t);
        free(v);
        return STRIX_OK;
    }
    if (method < STRIX_IG_RIEMANN_TRAPEZOID || method > STRIX_IG_RIEMANN_MIDDLE)
        return strix_error(STRIX_ERR_ARG, "integrated gradients: unknown method %d", (int)method);
    if (n < 2)
        return strix_error(STRIX_ERR_ARG, "integrated gradients: Riemann rules need n_steps >= 2"
                           " (got %d)", n);
    double dn = (double)n;
    for (int k = 0; k < n; k++) {
        w[k] = (float)(1.0 / dn);
        switch (method) {
        case STRIX_IG_RIEMANN_TRAPEZOID: alpha[k] = linspace_f(0.0, 1.0, n, k); break;
        case STRIX_IG_RIEMANN_LEFT: alpha[k] = linspace_f(0.0, 1.0 - 1.0 / dn, n, k); break;
        case STRIX_IG_RIEMANN_RIGHT: alpha[k] = linspace_f(1.0 / dn, 1.0, n, k); break;
        default:
            alpha[k] = linspace_f(1.0 / (2.0 * dn), 1.0 - 1.0 / (2.0 * dn), n, k);
            break;
        }
    }
    if (method == STRIX_IG_RIEMANN_TRAPEZOID) w[0] = w[n - 1] = (float)(1.0 / dn / 2.0);
    return STRIX_OK;
}

strix_status strix_attr_integrated_gradients(strix_module *model, const strix_tensor *x,
                                             const strix_tensor *baseline, int n_steps,
                                             strix_ig_method method,
                                             const strix_attr_config *cfg,
                                             strix_attribution *out) {
    STRIX_ASSERT(out, "integrated gradients: NULL result");
    memset(out, 0, sizeof *out);
    attr_run r;
    float *alpha = NULL, *w = NULL, *hb = NULL, *diff = NULL, *total = NULL;
    strix_status s = run_setup(&r, model, x, cfg);
    if (s == STRIX_OK && n_steps < 1)
        s = strix_error(STRIX_ERR_ARG, "integrated gradients: n_steps %d < 1", n_steps);
    if (s == STRIX_OK && baseline) {
        bool same = baseline->ndim == x->ndim;
        for (int d = 0; same && d < x->ndim; d++) same = baseline->shape[d] == x->shape[d];
        if (!same) s = strix_error(STRIX_ERR_ARG, "integrated gradients: baseline shape differs "
                                   "from the input's");
    }
    size_t n = (size_t)(r.batch * r.feat);
    if (s == STRIX_OK) {
        alpha = malloc(sizeof(float) * (size_t)n_steps);
        w = malloc(sizeof(float) * (size_t)n_steps);
        hb = calloc(n, sizeof(float));
        diff = malloc(sizeof(float) * n);
        total = calloc(n, sizeof(float));
        if (!alpha || !w || !hb || !diff || !total)
            s = strix_error(STRIX_ERR_ALLOC, "integrated gradients: out of memory");
    }
    if (s == STRIX_OK) s = ig_points(method, n_steps, alpha, w);
    if (s == STRIX_OK) s = result_alloc(out, r.ndim, r.shape, r.batch, true);
    if (s == STRIX_OK) s = run_first_forward(&r, x, cfg, out);
    if (s == STRIX_OK && baseline)
        s = strix_copy(r.be, hb, baseline->data, sizeof(float) * n, STRIX_COPY_D2H);
    if (s == STRIX_OK) { // f(baseline): one forward of the baseline rows
        memcpy(r.hin, hb, sizeof(float) * n);
        s = run_chunk_forward(&r, r.batch);
    }
    if (s == STRIX_OK) {
        for (int64_t b = 0; b < r.batch; b++) {
            out->baseline_output[b] = r.hy[b * r.classes + out->target[b]];
            out->output_delta[b] = (double)out->output[b] - (double)out->baseline_output[b];
            out->output_delta_sum += out->output_delta[b];
        }
        for (size_t i = 0; i < n; i++) diff[i] = r.hx[i] - hb[i];
    }
    int64_t per_chunk = s == STRIX_OK ? batches_per_chunk(&r, cfg) : 1;
    if (per_chunk > n_steps) per_chunk = n_steps;
    if (s == STRIX_OK) s = run_reserve(&r, per_chunk * r.batch);
    for (int k0 = 0; s == STRIX_OK && k0 < n_steps; k0 += (int)per_chunk) {
        int kc = n_steps - k0 < per_chunk ? n_steps - k0 : (int)per_chunk;
        for (int kk = 0; kk < kc; kk++) {
            float a = alpha[k0 + kk], *dst = r.hin + (size_t)kk * n;
            for (size_t i = 0; i < n; i++) dst[i] = hb[i] + a * diff[i];
        }
        s = run_chunk(&r, (int64_t)kc * r.batch);
        for (int kk = 0; s == STRIX_OK && kk < kc; kk++) {
            float wk = w[k0 + kk];
            const float *g = r.hg + (size_t)kk * n;
            for (size_t i = 0; i < n; i++) total[i] += wk * g[i];
        }
    }
    if (s == STRIX_OK)
        for (size_t i = 0; i < n; i++) out->values[i] = total[i] * diff[i];
    free(alpha);
    free(w);
    free(hb);
    free(diff);
    free(total);
    return run_finish(&r, s, out);
}

// ---- SmoothGrad --------------------------------------------------------------------------------

strix_status strix_attr_smoothgrad(strix_module *model, const strix_tensor *x,
                                   const strix_smoothgrad_config *sg,
                                   const strix_attr_config *cfg, strix_attribution *out) {
    STRIX_ASSERT(out && sg, "smoothgrad: NULL argument");
    memset(out, 0, sizeof *out);
    attr_run r;
    float *noise = NULL, *sum = NULL;
    strix_status s = run_setup(&r, model, x, cfg);
    const int ns = sg->n_samples;
    if (s == STRIX_OK && ns < 1)
        s = strix_error(STRIX_ERR_ARG, "smoothgrad: n_samples %d < 1", ns);
    if (s == STRIX_OK && !sg->noise && !(isfinite(sg->stdev) && sg->stdev >= 0.0f))
        s = strix_error(STRIX_ERR_ARG, "smoothgrad: stdev %g is not a finite value >= 0",
                        (double)sg->stdev);
    if (s == STRIX_OK && (sg->base < STRIX_SMOOTHGRAD_SALIENCY ||
                          sg->base > STRIX_SMOOTHGRAD_INPUT_X_GRADIENT))
        s = strix_error(STRIX_ERR_ARG, "smoothgrad: unknown base %d", (int)sg->base);
    const size_t n = (size_t)(r.batch * r.feat), F = (size_t)r.feat;
    const float *nz = sg->noise;
    if (s == STRIX_OK) {
        sum = calloc(n, sizeof(float));
        if (!nz) noise = malloc(sizeof(float) * n * (size_t)ns);
        if (!sum || (!nz && !noise)) s = strix_error(STRIX_ERR_ALLOC, "smoothgrad: out of memory");
    }
    if (s == STRIX_OK && !nz) {
        strix_rng rng;
        strix_rng_seed(&rng, sg->seed);
        for (size_t i = 0; i < n * (size_t)ns; i++)
            noise[i] = sg->stdev * (float)strix_rng_normal(&rng);
        nz = noise;
    }
    if (s == STRIX_OK) s = result_alloc(out, r.ndim, r.shape, r.batch, false);
    if (s == STRIX_OK) s = run_first_forward(&r, x, cfg, out);
    int64_t per_chunk = s == STRIX_OK ? batches_per_chunk(&r, cfg) : 1;
    if (per_chunk > ns) per_chunk = ns;
    if (s == STRIX_OK) s = run_reserve(&r, per_chunk * r.batch);
    const size_t B = (size_t)r.batch;
    for (int s0 = 0; s == STRIX_OK && s0 < ns; s0 += (int)per_chunk) {
        int sc = ns - s0 < per_chunk ? ns - s0 : (int)per_chunk;
        // chunk row (ss, b) holds example b plus its noise of sample s0 + ss
        for (int ss = 0; ss < sc; ss++)
            for (size_t b = 0; b < B; b++) {
                const float *xb = r.hx + b * F;
                const float *nb = nz + (b * (size_t)ns + (size_t)(s0 + ss)) * F;
                float *dst = r.hin + ((size_t)ss * B + b) * F;
                for (size_t j = 0; j < F; j++) dst[j] = xb[j] + nb[j];
            }
        s = run_chunk(&r, (int64_t)sc * r.batch);
        for (int ss = 0; s == STRIX_OK && ss < sc; ss++) {
            const float *g = r.hg + (size_t)ss * n, *xi = r.hin + (size_t)ss * n;
            for (size_t i = 0; i < n; i++) {
                float a = sg->base == STRIX_SMOOTHGRAD_SALIENCY ? fabsf(g[i])
                          : sg->base == STRIX_SMOOTHGRAD_GRADIENT ? g[i]
                                                                  : xi[i] * g[i];
                sum[i] += a;
            }
        }
    }
    if (s == STRIX_OK)
        for (size_t i = 0; i < n; i++) out->values[i] = sum[i] / (float)ns;
    free(noise);
    free(sum);
    return run_finish(&r, s, out);
}

// ---- Grad-CAM ----------------------------------------------------------------------------------

strix_status strix_attr_grad_cam(strix_sequential *model, int layer, const strix_tensor *x,
                                 const strix_attr_config *cfg, bool relu,
                                 strix_attribution *out) {
    STRIX_ASSERT(out, "grad-cam: NULL result");
    memset(out, 0, sizeof *out);
    attr_run r;
    float *act = NULL, *grad = NULL;
    int64_t ashape[STRIX_MAX_DIMS] = {1, 1, 1, 1};
    int andim = 0;
    strix_status s = run_setup(&r, model ? &model->base : NULL, x, cfg);
    if (s == STRIX_OK && (layer < 0 || layer >= model->count))
        s = strix_error(STRIX_ERR_ARG, "grad-cam: layer %d is not a child (0..%d)", layer,
                        model->count - 1);
    // forward child by child, keeping a host copy of the layer's output A
    const strix_tensor *cur = x;
    for (int i = 0; s == STRIX_OK && i < model->count; i++) {
        s = strix_module_forward(model->children[i], cur, &cur);
        if (s != STRIX_OK || i != layer) continue;
        if (cur->ndim < 2 || cur->shape[0] != r.batch) {
            s = strix_error(STRIX_ERR_SHAPE, "grad-cam: layer %d's output is not (batch, "
                            "channels, ...)", layer);
            break;
        }
        andim = cur->ndim;
        for (int d = 0; d < andim; d++) ashape[d] = cur->shape[d];
        size_t na = (size_t)strix_tensor_numel(cur);
        act = malloc(sizeof(float) * na);
        grad = malloc(sizeof(float) * na);
        if (!act || !grad) s = strix_error(STRIX_ERR_ALLOC, "grad-cam: out of memory");
        if (s == STRIX_OK) s = strix_copy(r.be, act, cur->data, sizeof(float) * na,
                                          STRIX_COPY_D2H);
    }
    int64_t cam_shape[STRIX_MAX_DIMS];
    for (int d = 0; d < STRIX_MAX_DIMS; d++) cam_shape[d] = d == 1 ? 1 : ashape[d];
    if (s == STRIX_OK) s = result_alloc(out, andim, cam_shape, r.batch, false);
    if (s == STRIX_OK) s = take_output(&r, cur, r.batch);
    if (s == STRIX_OK) s = take_targets(&r, cfg, out);
    if (s == STRIX_OK) s = run_seed(&r, r.batch);
    // backward from the last child down to the one after `layer`: G = dL/dA
    const strix_tensor *g = &r.dy;
    for (int i = model ? model->count - 1 : -1; s == STRIX_OK && i > layer; i--) {
        s = strix_module_backward(model->children[i], g, &g);
        if (s == STRIX_OK && !g)
            s = strix_error(STRIX_ERR_ARG, "grad-cam: child %d computes no input gradient", i);
    }
    const size_t B = (size_t)ashape[0], C = (size_t)ashape[1];
    const size_t S = (size_t)(numel_of(andim, ashape) / (int64_t)(B * C));
    if (s == STRIX_OK && (size_t)strix_tensor_numel(g) != B * C * S)
        s = strix_error(STRIX_ERR_SHAPE, "grad-cam: gradient size differs from the layer's");
    if (s == STRIX_OK)
        s = strix_copy(r.be, grad, g->data, sizeof(float) * B * C * S, STRIX_COPY_D2H);
    if (s == STRIX_OK) {
        for (size_t b = 0; b < B; b++) {
            float *cam = out->values + b * S;
            for (size_t q = 0; q < S; q++) cam[q] = 0.0f;
            for (size_t c = 0; c < C; c++) {
                const float *gc = grad + (b * C + c) * S, *ac = act + (b * C + c) * S;
                float wsum = 0.0f;
                for (size_t q = 0; q < S; q++) wsum += gc[q];
                float wc = wsum / (float)S;
                for (size_t q = 0; q < S; q++) cam[q] += wc * ac[q];
            }
            if (relu)
                for (size_t q = 0; q < S; q++) cam[q] = cam[q] > 0.0f ? cam[q] : 0.0f;
        }
    }
    free(act);
    free(grad);
    return run_finish(&r, s, out);
}
