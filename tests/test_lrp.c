/*
 * test_lrp.c - LRP (strix/lrp.h) and the relevance of the layer zoo, on every CPU backend:
 *
 *  1. Zennit 1.0.0 goldens (tools/ref/lrp_ref.py, tests/golden/lrp/): an MLP and a 2-conv CNN
 *     (average pool, max pool, and a BatchNorm variant merged by Zennit's canonizer) with
 *     nonzero biases and mixed-sign inputs; uniform epsilon (1e-6, 0.25, bias in and out of the
 *     denominator), z-plus, alpha2-beta1, gamma 0.25, the composites EpsilonPlus,
 *     EpsilonAlpha2Beta1, EpsilonGammaBox, one-hot / contrastive / predicted-class seeds. Input
 *     relevance within 1e-4·max(1, |ref|).
 *  2. Conservation: epsilon with the bias out of the denominator, z-plus and alpha-beta conserve
 *     |ΣR_in − ΣR_out| <= 1e-4·|ΣR_out| (also through Residual and the std-detached norms);
 *     epsilon with the bias in the denominator does not.
 *  3. LRP-0 with the bias in the denominator equals Gradient×Input on ReLU networks (an
 *     independent check against the modules' backward).
 *  4. Targets: logit vs one-hot seeds, extra classes and contrasts by linearity; bad targets.
 *  5. Rule checks before any propagation: an unsupported or invalid rule leaves every module
 *     and buffer untouched; custom composites see leaves in forward order.
 *  6. Per-module rules against host transcriptions (Residual split, BatchNorm's own epsilon
 *     rule, GroupNorm/LayerNorm/RMSNorm with the std held constant, Dropout masks, pass-through),
 *     and bit-identical results at 1 and 2 threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nn/rules_internal.h"
#include "nn_testutil.h"
#include "strix/layers.h"
#include "strix/lrp.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)
#define REL_TOL 1e-4  /* golden relevance: |got − want| <= REL_TOL·max(1, |want|) */
#define CONS_TOL 1e-4 /* conservation, relative */

// ---- helpers -----------------------------------------------------------------------------------

/* |got − want| <= tol·max(1, |want|) everywhere; prints the worst element on failure. */
static bool close_scaled(const char *what, const float *got, const float *want, size_t n,
                         double tol) {
    double worst = 0.0;
    size_t at = 0;
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        double w = want[i], g = got[i];
        double err = fabs(g - w) / fmax(1.0, fabs(w));
        if (!(err <= tol)) ok = false;
        if (!(err <= worst)) worst = err, at = i;
    }
    if (!ok)
        fprintf(stderr, "%s: worst error %.3g at %zu (got %.9g, want %.9g)\n", what, worst, at,
                (double)got[at], (double)want[at]);
    return ok;
}

static double host_sum(const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s;
}

static strix_module *act(strix_backend *be, strix_act op) {
    strix_activation *m;
    OK(strix_activation_new(be, op, &m));
    return &m->base;
}

static const char *next_name(strix_sequential *s) {
    static char name[STRIX_PARAM_NAME_MAX];
    OK(strix_sequential_child_name(s, name));
    return name;
}

static void add(strix_sequential *s, strix_module *m) { OK(strix_sequential_add(s, m)); }

static strix_linear *linear(strix_params *ps, strix_sequential *s, int in, int out, bool bias) {
    strix_linear *l;
    OK(strix_linear_new_default(ps, next_name(s), in, out, bias, &l));
    add(s, &l->base);
    return l;
}

static strix_conv2d *conv(strix_params *ps, strix_sequential *s, int ic, int oc, int k, int pad) {
    strix_conv2d_config c = {.in_channels = ic, .out_channels = oc, .kernel_h = k, .kernel_w = k,
                             .pad_h = pad, .pad_w = pad, .bias = true};
    strix_conv2d *m;
    OK(strix_conv2d_new(ps, next_name(s), &c, &m));
    add(s, &m->base);
    return m;
}

static strix_module *pool(strix_backend *be, bool max, int k) {
    strix_pool2d_config c = {.kernel_h = k, .kernel_w = k};
    if (max) {
        strix_maxpool2d *m;
        OK(strix_maxpool2d_new(be, &c, &m));
        return &m->base;
    }
    strix_avgpool2d *m;
    OK(strix_avgpool2d_new(be, &c, &m));
    return &m->base;
}

static strix_module *flatten(strix_backend *be) {
    strix_flatten *f;
    OK(strix_flatten_new(be, 1, -1, &f));
    return &f->base;
}

static float stabf(float z, float eps) { return z + (z >= 0.0f ? eps : -eps); }

static const char *lrp_kind_name_host(strix_lrp_kind k) {
    const char *names[] = {"epsilon", "gamma", "alpha-beta", "z-box"};
    return names[k];
}

// ---- the golden models -------------------------------------------------------------------------

typedef struct model {
    strix_backend *be;
    strix_params ps;
    strix_sequential *seq;
    tl_golden g;
    strix_tensor x;
    int64_t batch, classes;
    int32_t *target;
    int32_t contrast;
} model;

static const tl_array *need(const tl_golden *g, const char *name) {
    const tl_array *a = tl_golden_get(g, name);
    assert_non_null(a);
    return a;
}

/* The model of tests/golden/lrp/<kind>.bin with its weights and input. */
static void model_load(strix_backend *be, const char *kind, model *md) {
    memset(md, 0, sizeof *md);
    md->be = be;
    char path[128];
    snprintf(path, sizeof path, "tests/golden/lrp/%s.bin", kind);
    assert_true(tl_golden_load(path, &md->g));
    strix_params_init_empty(&md->ps, be);
    OK(strix_sequential_new(be, "", &md->seq));
    strix_sequential *s = md->seq;
    if (strcmp(kind, "mlp") == 0) {
        linear(&md->ps, s, 6, 9, true);
        add(s, act(be, STRIX_ACT_RELU));
        linear(&md->ps, s, 9, 7, true);
        add(s, act(be, STRIX_ACT_RELU));
        linear(&md->ps, s, 7, 5, true);
    } else {
        conv(&md->ps, s, 2, 4, 3, 1);
        if (strcmp(kind, "cnn_bn") == 0) {
            strix_batchnorm *bn;
            OK(strix_batchnorm2d_new(&md->ps, next_name(s), 4, 1e-5f, 0.1f, &bn));
            add(s, &bn->base);
        }
        add(s, act(be, STRIX_ACT_RELU));
        conv(&md->ps, s, 4, 5, 3, 0);
        add(s, act(be, STRIX_ACT_RELU));
        add(s, pool(be, strcmp(kind, "cnn_max") == 0, 2));
        add(s, flatten(be));
        linear(&md->ps, s, 45, 4, true);
    }
    OK(strix_params_alloc(&md->ps));
    for (int i = 0; i < md->ps.count; i++) {
        strix_param *p = md->ps.items[i];
        const tl_array *a = need(&md->g, p->name);
        assert_int_equal(a->count, p->numel);
        to_backend(be, p->data, a->data, p->numel);
    }
    const tl_array *x = need(&md->g, "x");
    md->x = tensor_from_host(be, x->ndim, x->shape, x->data);
    const tl_array *y = need(&md->g, "y");
    md->batch = y->shape[0];
    md->classes = y->shape[1];
    md->target = golden_ints(need(&md->g, "target"));
    md->contrast = (int32_t)tl_golden_scalar(&md->g, "contrast");
    strix_module_set_training(&md->seq->base, false);
}

static void model_free(model *md) {
    strix_module_free(&md->seq->base);
    strix_params_free(&md->ps);
    strix_tensor_free(&md->x);
    tl_golden_free(&md->g);
    free(md->target);
}

static strix_module *root(model *md) { return &md->seq->base; }

static strix_lrp_rule bias_in(strix_lrp_rule r) {
    r.bias_in_denominator = true;
    return r;
}

/* The composite of golden case `name` (lrp_ref.py's composites()). */
static strix_lrp_composite case_composite(const char *name) {
    if (strcmp(name, "eps_biasout") == 0)
        return strix_lrp_composite_uniform(strix_lrp_epsilon(1e-6f));
    if (strcmp(name, "eps025") == 0)
        return strix_lrp_composite_uniform(bias_in(strix_lrp_epsilon(0.25f)));
    if (strcmp(name, "zplus") == 0) return strix_lrp_composite_uniform(bias_in(strix_lrp_zplus()));
    if (strcmp(name, "ab21") == 0)
        return strix_lrp_composite_uniform(bias_in(strix_lrp_alpha_beta(2.0f, 1.0f)));
    if (strcmp(name, "gamma") == 0)
        return strix_lrp_composite_uniform(bias_in(strix_lrp_gamma(0.25f)));
    if (strcmp(name, "eps_plus") == 0)
        return strix_lrp_composite_preset(STRIX_COMPOSITE_EPSILON_PLUS);
    if (strcmp(name, "eps_ab21") == 0)
        return strix_lrp_composite_preset(STRIX_COMPOSITE_EPSILON_ALPHA2_BETA1);
    if (strcmp(name, "eps_gamma_box") == 0) {
        strix_lrp_composite c = strix_lrp_composite_preset(STRIX_COMPOSITE_EPSILON_GAMMA_BOX);
        c.rule.low = -3.0f;
        c.rule.high = 3.0f;
        return c;
    }
    return strix_lrp_composite_uniform(bias_in(strix_lrp_epsilon(1e-6f))); /* eps, seeds */
}

static const char *const golden_cases[] = {
    "eps", "eps_biasout", "eps025", "zplus", "ab21", "gamma", "eps_plus", "eps_ab21",
    "eps_gamma_box", "onehot", "contrast", "pred"};

/* Explains golden case `name` of md and compares with R_<name>; returns the worst error. */
static double golden_case(model *md, const char *name) {
    strix_lrp_composite c = case_composite(name);
    OK(strix_lrp_assign(root(md), &c));
    strix_lrp_target t = strix_lrp_target_default();
    t.classes = md->target;
    if (strcmp(name, "onehot") == 0) t.seed = STRIX_LRP_SEED_ONE_HOT;
    if (strcmp(name, "contrast") == 0) t.contrast = md->contrast;
    if (strcmp(name, "pred") == 0) t.classes = NULL;
    strix_lrp_explanation e;
    OK(strix_lrp_explain(root(md), &md->x, &t, &e));
    char key[64];
    snprintf(key, sizeof key, "R_%s", name);
    const tl_array *want = need(&md->g, key);
    assert_int_equal((size_t)strix_tensor_numel(&md->x), want->count);
    assert_int_equal(e.ndim, md->x.ndim);
    bool ok = close_scaled(key, e.relevance, want->data, want->count, REL_TOL);
    snprintf(key, sizeof key, "seed_%s", name);
    const tl_array *seed = need(&md->g, key);
    double seed_sum = host_sum(seed->data, seed->count);
    if (!(fabs(e.relevance_out_sum - seed_sum) <= 1e-5 * fmax(1.0, fabs(seed_sum)))) {
        fprintf(stderr, "%s: output sum %.9g, golden seed sum %.9g\n", name, e.relevance_out_sum,
                seed_sum);
        ok = false;
    }
    if (!ok) fail_msg("golden case %s", name);
    double worst = 0.0;
    for (size_t i = 0; i < want->count; i++)
        worst = fmax(worst, fabs((double)e.relevance[i] - want->data[i]) /
                                fmax(1.0, fabs(want->data[i])));
    strix_lrp_explanation_free(&e);
    return worst;
}

static void golden_model(strix_backend *be, const char *kind) {
    model md;
    model_load(be, kind, &md);
    double worst = 0.0;
    for (size_t i = 0; i < sizeof golden_cases / sizeof golden_cases[0]; i++)
        worst = fmax(worst, golden_case(&md, golden_cases[i]));
    printf("lrp golden %s on %s: %zu cases, worst error %.2g·max(1, |ref|)\n", kind,
           strix_backend_name(be), sizeof golden_cases / sizeof golden_cases[0], worst);
    // the predicted classes are the argmax of the golden logits
    strix_lrp_explanation e;
    OK(strix_lrp_explain(root(&md), &md.x, NULL, &e));
    const tl_array *y = need(&md.g, "y");
    for (int64_t n = 0; n < md.batch; n++) {
        int32_t best = 0;
        for (int64_t k = 1; k < md.classes; k++)
            if (y->data[n * md.classes + k] > y->data[n * md.classes + best]) best = (int32_t)k;
        assert_int_equal(e.predicted[n], best);
    }
    assert_int_equal(e.batch, md.batch);
    assert_int_equal(e.classes, md.classes);
    strix_lrp_explanation_free(&e);
    model_free(&md);
}

static void test_golden_mlp(void **state) { golden_model(*state, "mlp"); }
static void test_golden_cnn_avg(void **state) { golden_model(*state, "cnn_avg"); }
static void test_golden_cnn_max(void **state) { golden_model(*state, "cnn_max"); }
static void test_golden_cnn_bn(void **state) { golden_model(*state, "cnn_bn"); }

// ---- conservation ------------------------------------------------------------------------------

static double explain_gap(strix_module *m, const strix_tensor *x, const strix_lrp_target *t,
                          strix_lrp_rule rule, double *out_sum) {
    strix_lrp_composite c = strix_lrp_composite_uniform(rule);
    OK(strix_lrp_assign(m, &c));
    strix_lrp_explanation e;
    OK(strix_lrp_explain(m, x, t, &e));
    double gap = fabs(e.relevance_in_sum - e.relevance_out_sum);
    *out_sum = e.relevance_out_sum;
    strix_lrp_explanation_free(&e);
    return gap / fmax(1e-12, fabs(*out_sum));
}

static void conservation_of(strix_backend *be, const char *kind) {
    model md;
    model_load(be, kind, &md);
    strix_lrp_target t = strix_lrp_target_default();
    t.classes = md.target;
    const char *names[] = {"epsilon", "z-plus", "alpha2-beta1"};
    strix_lrp_rule rules[] = {strix_lrp_epsilon(1e-7f), strix_lrp_zplus(),
                              strix_lrp_alpha_beta(2.0f, 1.0f)};
    double out_sum;
    for (int i = 0; i < 3; i++) {
        double gap = explain_gap(root(&md), &md.x, &t, rules[i], &out_sum);
        if (!(gap <= CONS_TOL))
            fail_msg("%s %s: relative conservation gap %.3g", kind, names[i], gap);
    }
    // the bias in the denominator takes the biases' share: no conservation
    double gap = explain_gap(root(&md), &md.x, &t, bias_in(strix_lrp_epsilon(1e-7f)), &out_sum);
    if (!(gap > 1e-3)) fail_msg("%s: epsilon with the bias in conserves (gap %.3g)", kind, gap);
    model_free(&md);
}

static void test_conservation(void **state) {
    strix_backend *be = *state;
    conservation_of(be, "mlp");
    conservation_of(be, "cnn_avg");
    conservation_of(be, "cnn_max");
    conservation_of(be, "cnn_bn");
}

// ---- LRP-0 = Gradient×Input --------------------------------------------------------------------

/* Epsilon 0 with the bias in the denominator on a ReLU network is gradient×input (the target
 * logit's gradient, by the modules' backward). */
static void grad_times_input_of(strix_backend *be, const char *kind) {
    model md;
    model_load(be, kind, &md);
    strix_lrp_composite c = strix_lrp_composite_uniform(bias_in(strix_lrp_epsilon(0.0f)));
    c.stabilizer = 1e-30f;
    OK(strix_lrp_assign(root(&md), &c));
    strix_lrp_target t = strix_lrp_target_default();
    t.classes = md.target; /* logit seed: R = x·∂y_t/∂x */
    strix_lrp_explanation e;
    OK(strix_lrp_explain(root(&md), &md.x, &t, &e));
    const strix_tensor *y, *dx;
    OK(strix_module_forward(root(&md), &md.x, &y));
    size_t ny = (size_t)(md.batch * md.classes), nx = (size_t)strix_tensor_numel(&md.x);
    float *seed = calloc(ny, sizeof(float));
    for (int64_t n = 0; n < md.batch; n++) seed[n * md.classes + md.target[n]] = 1.0f;
    strix_tensor dy = tensor_from_host(be, 2, y->shape, seed);
    OK(strix_module_backward(root(&md), &dy, &dx));
    float *g = from_backend(be, dx->data, nx), *x = from_backend(be, md.x.data, nx);
    for (size_t i = 0; i < nx; i++) g[i] *= x[i];
    if (!close_scaled(kind, e.relevance, g, nx, 1e-4)) fail_msg("%s: LRP-0 != grad x input", kind);
    free(g);
    free(x);
    free(seed);
    strix_tensor_free(&dy);
    strix_lrp_explanation_free(&e);
    model_free(&md);
}

static void test_lrp0_is_grad_times_input(void **state) {
    grad_times_input_of(*state, "mlp");
    grad_times_input_of(*state, "cnn_avg");
    grad_times_input_of(*state, "cnn_max");
}

// ---- targets -----------------------------------------------------------------------------------

/* Relevance (host, caller frees) of the MLP with epsilon, bias out, for target t. */
static float *explain_mlp(model *md, const strix_lrp_target *t) {
    strix_lrp_explanation e;
    OK(strix_lrp_explain(root(md), &md->x, t, &e));
    size_t n = (size_t)strix_tensor_numel(&md->x);
    float *r = malloc(n * sizeof(float));
    memcpy(r, e.relevance, n * sizeof(float));
    strix_lrp_explanation_free(&e);
    return r;
}

static void test_targets(void **state) {
    strix_backend *be = *state;
    model md;
    model_load(be, "mlp", &md);
    strix_lrp_composite c = strix_lrp_composite_uniform(strix_lrp_epsilon(1e-6f));
    OK(strix_lrp_assign(root(&md), &c));
    size_t nx = (size_t)strix_tensor_numel(&md.x), feat = nx / (size_t)md.batch;
    const tl_array *y = need(&md.g, "y");
    strix_lrp_target t = strix_lrp_target_default();
    t.classes = md.target;
    float *logit = explain_mlp(&md, &t);
    t.seed = STRIX_LRP_SEED_ONE_HOT;
    float *onehot = explain_mlp(&md, &t);
    // the epsilon rule is linear in the seed: logit seed = logit · one-hot seed, per example
    float *scaled = malloc(nx * sizeof(float));
    for (size_t i = 0; i < nx; i++) {
        int64_t n = (int64_t)(i / feat);
        scaled[i] = y->data[n * md.classes + md.target[n]] * onehot[i];
    }
    assert_true(close_scaled("logit vs one-hot", logit, scaled, nx, 1e-5));
    // extra class 4 (no example's target): R(target + 4) = R(target) + R(4)
    int32_t four[5] = {4, 4, 4, 4, 4}, extra = 4;
    t.seed = STRIX_LRP_SEED_LOGIT;
    t.classes = four;
    float *r4 = explain_mlp(&md, &t);
    t.classes = md.target;
    t.n_extra = 1;
    t.extra = &extra;
    float *both = explain_mlp(&md, &t);
    for (size_t i = 0; i < nx; i++) scaled[i] = logit[i] + r4[i];
    assert_true(close_scaled("extra class", both, scaled, nx, 1e-5));
    // contrast 4: R(target) − R(4), and the output sum is the difference of the logits
    t.n_extra = 0;
    t.contrast = 4;
    strix_lrp_explanation e;
    OK(strix_lrp_explain(root(&md), &md.x, &t, &e));
    for (size_t i = 0; i < nx; i++) scaled[i] = logit[i] - r4[i];
    assert_true(close_scaled("contrast", e.relevance, scaled, nx, 1e-5));
    double diff = 0.0;
    for (int64_t n = 0; n < md.batch; n++)
        diff += (double)y->data[n * md.classes + md.target[n]] - y->data[n * md.classes + 4];
    assert_true(fabs(e.relevance_out_sum - diff) <= 1e-5 * fmax(1.0, fabs(diff)));
    strix_lrp_explanation_free(&e);
    // bad targets: errors, and the explanation is zeroed
    int32_t bad[5] = {0, 1, 5, 0, 0};
    t = strix_lrp_target_default();
    t.classes = bad;
    assert_int_equal(strix_lrp_explain(root(&md), &md.x, &t, &e), STRIX_ERR_ARG);
    assert_null(e.relevance);
    assert_null(e.predicted);
    t.classes = md.target;
    t.contrast = 2; /* example 0's target */
    assert_int_equal(strix_lrp_explain(root(&md), &md.x, &t, &e), STRIX_ERR_ARG);
    t.contrast = -2;
    assert_int_equal(strix_lrp_explain(root(&md), &md.x, &t, &e), STRIX_ERR_ARG);
    t.contrast = -1;
    t.n_extra = 1;
    t.extra = NULL;
    assert_int_equal(strix_lrp_explain(root(&md), &md.x, &t, &e), STRIX_ERR_ARG);
    // a bad input shape is the forward's error
    int64_t wrong[2] = {5, 4};
    strix_tensor xw;
    OK(strix_tensor_new(be, 2, wrong, &xw));
    assert_int_equal(strix_lrp_explain(root(&md), &xw, NULL, &e), STRIX_ERR_SHAPE);
    strix_tensor_free(&xw);
    free(logit);
    free(onehot);
    free(scaled);
    free(r4);
    free(both);
    model_free(&md);
}

// ---- rule checks before propagation ------------------------------------------------------------

/* A module that supports only the epsilon rule (NULL supports_rule) and counts its calls. */
typedef struct probe {
    strix_module base;
    strix_tensor out;
    int forwards, relevances;
} probe;

static strix_status probe_forward(strix_module *m, const strix_tensor *x,
                                  const strix_tensor **y) {
    probe *p = (probe *)m;
    p->forwards++;
    p->out = *x;
    p->out.owner = NULL;
    if (y) *y = &p->out;
    return STRIX_OK;
}

static strix_status probe_relevance(strix_module *m, const strix_tensor *r,
                                    const strix_tensor **r_in) {
    ((probe *)m)->relevances++;
    *r_in = r;
    return STRIX_OK;
}

static void probe_destroy(strix_module *m) { free(m); }

static const strix_module_i probe_vt = {.type = "Probe", .forward = probe_forward,
                                        .destroy = probe_destroy,
                                        .relevance = probe_relevance};
static const strix_module_i mute_vt = {.type = "Mute", .forward = probe_forward,
                                       .destroy = probe_destroy};

static probe *probe_new(strix_backend *be, const strix_module_i *vt) {
    probe *p = calloc(1, sizeof *p);
    p->base.vt = vt;
    p->base.be = be;
    return p;
}

/* The MLP of the goldens with a probe between its first ReLU and second Linear. */
typedef struct probed {
    model md;
    probe *p;
    strix_linear *l0, *l2;
} probed;

static void probed_build(strix_backend *be, probed *pb, const strix_module_i *vt) {
    model *md = &pb->md;
    memset(md, 0, sizeof *md);
    md->be = be;
    strix_params_init_empty(&md->ps, be);
    OK(strix_sequential_new(be, "", &md->seq));
    strix_sequential *s = md->seq;
    pb->l0 = linear(&md->ps, s, 6, 9, true);
    add(s, act(be, STRIX_ACT_RELU));
    pb->p = probe_new(be, vt);
    add(s, &pb->p->base);
    pb->l2 = linear(&md->ps, s, 9, 3, true);
    OK(strix_params_alloc(&md->ps));
    OK(strix_params_init(&md->ps, 5));
    int64_t shape[2] = {4, 6};
    float xh[24];
    tl_fill_uniform(xh, 24, 3, -1.0f, 1.0f);
    md->x = tensor_from_host(be, 2, shape, xh);
}

static void rules_of(strix_module *m, strix_lrp_rule *out, int *n) {
    out[(*n)++] = m->rule;
    if (m->vt->child)
        for (int i = 0; m->vt->child(m, i); i++) rules_of(m->vt->child(m, i), out, n);
}

static void test_rule_checks(void **state) {
    strix_backend *be = *state;
    probed pb;
    probed_build(be, &pb, &probe_vt);
    strix_module *m = root(&pb.md);
    strix_lrp_composite eps = strix_lrp_composite_uniform(strix_lrp_epsilon(1e-6f));
    OK(strix_lrp_assign(m, &eps));
    strix_lrp_rule before[8], after[8];
    int nb = 0, na = 0;
    rules_of(m, before, &nb);
    assert_int_equal(nb, 5);
    // the probe is a leaf without weights: it gets epsilon from every preset; a custom
    // composite giving it gamma is refused, and nothing is assigned
    strix_lrp_composite bad[5] = {
        strix_lrp_composite_uniform(strix_lrp_alpha_beta(2.0f, 0.5f)),
        strix_lrp_composite_uniform(strix_lrp_epsilon(-1.0f)),
        strix_lrp_composite_uniform(strix_lrp_zbox(1.0f, -1.0f)),
        strix_lrp_composite_uniform(strix_lrp_gamma(-0.5f)),
        strix_lrp_composite_uniform(strix_lrp_epsilon(NAN)),
    };
    for (int i = 0; i < 5; i++) {
        assert_int_equal(strix_lrp_assign(m, &bad[i]), STRIX_ERR_ARG);
        na = 0;
        rules_of(m, after, &na);
        assert_memory_equal(before, after, sizeof(strix_lrp_rule) * (size_t)nb);
    }
    // a rule the probe does not support: UNSUPPORTED from assign, nothing changed ...
    pb.p->base.rule = strix_lrp_gamma(0.25f);
    assert_int_equal(strix_lrp_check(m), STRIX_ERR_UNSUPPORTED);
    pb.p->base.rule = before[3];
    // ... and from explain before anything runs: no forward, no relevance, no buffer written
    pb.p->base.rule = strix_lrp_gamma(0.25f);
    strix_lrp_explanation e;
    assert_int_equal(strix_lrp_explain(m, &pb.md.x, NULL, &e), STRIX_ERR_UNSUPPORTED);
    assert_non_null(strstr(strix_last_error(), "Probe"));
    assert_int_equal(pb.p->forwards, 0);
    assert_int_equal(pb.p->relevances, 0);
    assert_null(strix_linear_output(pb.l0)->data);
    assert_null(strix_linear_input_grad(pb.l0)->data);
    assert_null(strix_linear_input_grad(pb.l2)->data);
    assert_null(e.relevance);
    pb.p->base.rule = before[3];
    // the same model explains once the rules are valid
    OK(strix_lrp_explain(m, &pb.md.x, NULL, &e));
    assert_int_equal(pb.p->relevances, 1);
    strix_lrp_explanation_free(&e);
    model_free(&pb.md);
    // a module without a relevance slot is refused by assign and explain
    probed_build(be, &pb, &mute_vt);
    m = root(&pb.md);
    assert_int_equal(strix_lrp_assign(m, &eps), STRIX_ERR_UNSUPPORTED);
    assert_non_null(strstr(strix_last_error(), "Mute"));
    assert_int_equal(strix_lrp_explain(m, &pb.md.x, NULL, &e), STRIX_ERR_UNSUPPORTED);
    assert_int_equal(pb.p->forwards, 0);
    model_free(&pb.md);
    // a LayerNorm in a Sequential: pass-through and the std-detached rule (which reads the input
    // view the forward keeps) both explain, and both conserve with the bias out of the
    // denominator; they differ
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_sequential *s;
    OK(strix_sequential_new(be, "", &s));
    strix_linear *l = linear(&ps, s, 4, 3, true);
    strix_layernorm *ln;
    OK(strix_layernorm_new(&ps, next_name(s), 3, true, 1e-5f, &ln));
    add(s, &ln->base);
    OK(strix_params_alloc(&ps));
    OK(strix_params_init(&ps, 61));
    float xh[8];
    tl_fill_uniform(xh, 8, 62, -1.0f, 1.0f);
    strix_tensor x = tensor_from_host(be, 2, (int64_t[]){2, 4}, xh);
    // never assigned: refused (a fresh module's all-zero rule would be epsilon 0)
    assert_int_equal(strix_lrp_explain(&s->base, &x, NULL, &e), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "strix_lrp_assign"));
    OK(strix_lrp_assign(&s->base, &eps));
    OK(strix_lrp_explain(&s->base, &x, NULL, &e));
    assert_true(fabs(e.relevance_in_sum - e.relevance_out_sum) <= 1e-4 * fabs(e.relevance_out_sum));
    float through[8];
    memcpy(through, e.relevance, sizeof through);
    strix_lrp_explanation_free(&e);
    strix_lrp_rule rule = strix_lrp_epsilon(1e-9f);
    rule.layer_norm_detach_std = true;
    strix_lrp_composite cd = strix_lrp_composite_uniform(rule);
    OK(strix_lrp_assign(&s->base, &cd));
    OK(strix_lrp_explain(&s->base, &x, NULL, &e));
    assert_true(fabs(e.relevance_in_sum - e.relevance_out_sum) <= 1e-4 * fabs(e.relevance_out_sum));
    bool differ = false;
    for (int i = 0; i < 8; i++) differ = differ || e.relevance[i] != through[i];
    assert_true(differ);
    strix_lrp_explanation_free(&e);
    (void)l;
    strix_tensor_free(&x);
    strix_module_free(&s->base);
    strix_params_free(&ps);
}

/* Records (index, type) of every call. */
typedef struct custom_log {
    int count;
    int index[16];
    char type[16][16];
} custom_log;

static strix_lrp_rule custom_rule(int index, const strix_module *m, void *user) {
    custom_log *log = user;
    log->index[log->count] = index;
    snprintf(log->type[log->count], sizeof log->type[0], "%s", m->vt->type);
    log->count++;
    strix_lrp_rule r = strix_lrp_epsilon(1e-6f);
    if (index == 0) r = strix_lrp_zplus();
    return r;
}

static void test_composites(void **state) {
    strix_backend *be = *state;
    model md;
    model_load(be, "mlp", &md);
    custom_log log = {0};
    strix_lrp_composite c = strix_lrp_composite_custom(custom_rule, &log);
    OK(strix_lrp_assign(root(&md), &c));
    const char *types[5] = {"Linear", "ReLU", "Linear", "ReLU", "Linear"};
    assert_int_equal(log.count, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(log.index[i], i);
        assert_string_equal(log.type[i], types[i]);
    }
    assert_int_equal(strix_sequential_at(md.seq, 0)->rule.kind, STRIX_LRP_ALPHA_BETA);
    assert_int_equal(strix_sequential_at(md.seq, 2)->rule.kind, STRIX_LRP_EPSILON);
    assert_int_equal(md.seq->base.rule.kind, STRIX_LRP_EPSILON); /* the container */
    // presets: Linear epsilon with the bias in; weightless modules get the stabilizer
    c = strix_lrp_composite_preset(STRIX_COMPOSITE_EPSILON_PLUS);
    c.rule.epsilon = 0.5f;
    c.stabilizer = 1e-3f;
    OK(strix_lrp_assign(root(&md), &c));
    strix_lrp_rule r0 = strix_sequential_at(md.seq, 0)->rule;
    assert_int_equal(r0.kind, STRIX_LRP_EPSILON);
    assert_true(r0.epsilon == 0.5f && r0.bias_in_denominator);
    strix_lrp_rule r1 = strix_sequential_at(md.seq, 1)->rule;
    assert_true(r1.kind == STRIX_LRP_EPSILON && r1.epsilon == 1e-3f);
    // a custom composite without its callback, an unknown kind
    c = strix_lrp_composite_custom(NULL, NULL);
    assert_int_equal(strix_lrp_assign(root(&md), &c), STRIX_ERR_ARG);
    c.kind = (strix_lrp_composite_kind)42;
    assert_int_equal(strix_lrp_assign(root(&md), &c), STRIX_ERR_ARG);
    model_free(&md);
}

// ---- the affine rules against a host transcription ---------------------------------------------

/* Zennit's affine rules (src/nn/rules_internal.h) for one row of a Linear W (out, in), in
 * double. */
static void affine_host(const strix_lrp_rule *rule, const float *x, const float *w,
                        const float *b, int in, int out, const float *r, float *res) {
    double xp[8], xn[8], acc[8] = {0};
    for (int i = 0; i < in; i++) xp[i] = fmax(x[i], 0.0), xn[i] = fmin(x[i], 0.0);
    bool bias = b && rule->bias_in_denominator;
    float e = rule->epsilon, g = rule->gamma;
    for (int j = 0; j < out; j++) {
        const float *wj = w + j * in;
        double bj = bias ? b[j] : 0.0, bp = fmax(bj, 0.0), bn = fmin(bj, 0.0);
        double z = 0.0, zp = 0.0, zn = 0.0, o = bj;
        for (int i = 0; i < in; i++) o += (double)x[i] * wj[i];
        switch (rule->kind) {
        case STRIX_LRP_EPSILON: {
            double sj = r[j] / stabf((float)o, e);
            for (int i = 0; i < in; i++) acc[i] += x[i] * wj[i] * sj;
            break;
        }
        case STRIX_LRP_ALPHA_BETA: {
            zp = bp, zn = bn;
            for (int i = 0; i < in; i++) {
                zp += xp[i] * fmax(wj[i], 0.0) + xn[i] * fmin(wj[i], 0.0);
                zn += xp[i] * fmin(wj[i], 0.0) + xn[i] * fmax(wj[i], 0.0);
            }
            double sp = r[j] / stabf((float)zp, e), sn = r[j] / stabf((float)zn, e);
            for (int i = 0; i < in; i++)
                acc[i] += rule->alpha * (xp[i] * fmax(wj[i], 0.0) + xn[i] * fmin(wj[i], 0.0)) * sp -
                          rule->beta * (xp[i] * fmin(wj[i], 0.0) + xn[i] * fmax(wj[i], 0.0)) * sn;
            break;
        }
        case STRIX_LRP_GAMMA: {
            double wp[8], wn[8];
            zp = bj + g * bp, zn = bj + g * bn;
            for (int i = 0; i < in; i++) {
                wp[i] = wj[i] + g * fmax(wj[i], 0.0), wn[i] = wj[i] + g * fmin(wj[i], 0.0);
                zp += xp[i] * wp[i] + xn[i] * wn[i];
                zn += xp[i] * wn[i] + xn[i] * wp[i];
            }
            double sp = o > 0 ? r[j] / stabf((float)zp, e) : 0.0;
            double sn = o < 0 ? r[j] / stabf((float)zn, e) : 0.0;
            for (int i = 0; i < in; i++)
                acc[i] += (xp[i] * wp[i] + xn[i] * wn[i]) * sp +
                          (xp[i] * wn[i] + xn[i] * wp[i]) * sn;
            break;
        }
        case STRIX_LRP_ZBOX: {
            for (int i = 0; i < in; i++)
                z += (double)x[i] * wj[i] - rule->low * fmax(wj[i], 0.0) -
                     rule->high * fmin(wj[i], 0.0);
            double sj = r[j] / stabf((float)z, e);
            for (int i = 0; i < in; i++)
                acc[i] += ((double)x[i] * wj[i] - rule->low * fmax(wj[i], 0.0) -
                           rule->high * fmin(wj[i], 0.0)) * sj;
            break;
        }
        }
    }
    for (int i = 0; i < in; i++) res[i] = (float)acc[i];
}

/* Every rule, bias in and out of the denominator, with and without a bias, vs the host. */
static void test_linear_rules_host(void **state) {
    strix_backend *be = *state;
    for (int has_bias = 0; has_bias < 2; has_bias++) {
        strix_params ps;
        strix_params_init_empty(&ps, be);
        strix_linear *l;
        OK(strix_linear_new_default(&ps, "l", 5, 4, has_bias, &l));
        OK(strix_params_alloc(&ps));
        OK(strix_params_init(&ps, 31));
        if (has_bias) {
            float bh[4] = {0.4f, -0.3f, 0.25f, -0.6f};
            to_backend(be, l->bias->data, bh, 4);
        }
        float xh[15], rh[12];
        tl_fill_uniform(xh, 15, 32, -2.0f, 2.0f);
        tl_fill_uniform(rh, 12, 33, -1.0f, 1.0f);
        int64_t xs[2] = {3, 5}, rs[2] = {3, 4};
        strix_tensor x = tensor_from_host(be, 2, xs, xh), r = tensor_from_host(be, 2, rs, rh);
        const strix_tensor *y, *rin;
        OK(strix_module_forward(&l->base, &x, &y));
        float *w = from_backend(be, l->weight->data, 20);
        float *b = has_bias ? from_backend(be, l->bias->data, 4) : NULL;
        strix_lrp_rule rules[5] = {strix_lrp_epsilon(1e-3f), strix_lrp_zplus(),
                                   strix_lrp_alpha_beta(2.0f, 1.0f), strix_lrp_gamma(0.3f),
                                   strix_lrp_zbox(-2.0f, 2.0f)};
        for (int k = 0; k < 5; k++)
            for (int in = 0; in < 2; in++) {
                strix_lrp_rule rule = rules[k];
                rule.epsilon = 1e-3f;
                rule.bias_in_denominator = in;
                l->base.rule = rule;
                OK(strix_module_relevance(&l->base, &r, &rin));
                float *got = from_backend(be, rin->data, 15), want[15];
                for (int n = 0; n < 3; n++)
                    affine_host(&rule, xh + 5 * n, w, b, 5, 4, rh + 4 * n, want + 5 * n);
                char what[64];
                snprintf(what, sizeof what, "%s bias %d in %d", lrp_kind_name_host(rule.kind),
                         has_bias, in);
                if (!close_scaled(what, got, want, 15, 1e-4)) fail_msg("%s", what);
                free(got);
            }
        free(w);
        free(b);
        strix_tensor_free(&x);
        strix_tensor_free(&r);
        strix_module_free(&l->base);
        strix_params_free(&ps);
    }
}

/* The affine machinery in chunks: a Linear map (rows x·Wᵀ) explained all at once and two rows
 * at a time gives the same bits on the own GEMM kernel (to rounding with BLAS). */
typedef struct test_map {
    strix_backend *be;
    size_t in, out;
} test_map;

static strix_status tmap_forward(void *ctx, size_t count, const float *in, const float *w,
                                 const float *b, float *z, bool accumulate) {
    test_map *c = ctx;
    STRIX_TRY(strix_gemm_ex(c->be, in, false, w, true, z, count, c->in, c->out,
                            accumulate ? 1.0f : 0.0f));
    return b ? strix_add_row_vector(c->be, z, b, z, count, c->out) : STRIX_OK;
}

static strix_status tmap_backward(void *ctx, size_t count, const float *s, const float *w,
                                  float *g) {
    test_map *c = ctx;
    return strix_gemm_ex(c->be, s, false, w, false, g, count, c->out, c->in, 0.0f);
}

static void test_chunks(void **state) {
    strix_backend *be = *state;
    enum { ROWS = 9, IN = 7, OUT = 5 };
    float xh[ROWS * IN], wh[OUT * IN], bh[OUT], rh[ROWS * OUT];
    tl_fill_uniform(xh, ROWS * IN, 51, -2.0f, 2.0f);
    tl_fill_uniform(wh, OUT * IN, 52, -1.0f, 1.0f);
    tl_fill_uniform(bh, OUT, 53, -0.5f, 0.5f);
    tl_fill_uniform(rh, ROWS * OUT, 54, -1.0f, 1.0f);
    int64_t xs[1] = {ROWS * IN}, ws[1] = {OUT * IN}, bs[1] = {OUT}, rs[1] = {ROWS * OUT};
    strix_tensor x = tensor_from_host(be, 1, xs, xh), w = tensor_from_host(be, 1, ws, wh);
    strix_tensor b = tensor_from_host(be, 1, bs, bh), r = tensor_from_host(be, 1, rs, rh);
    strix_tensor out;
    OK(strix_tensor_new(be, 1, xs, &out));
    test_map map = {.be = be, .in = IN, .out = OUT};
    strix_lrp_rule rules[4] = {strix_lrp_epsilon(1e-3f), strix_lrp_gamma(0.25f),
                               strix_lrp_alpha_beta(2.0f, 1.0f), strix_lrp_zbox(-2.0f, 2.0f)};
    bool exact = strcmp(strix_backend_name(be), "cpu") == 0;
    for (int k = 0; k < 4; k++) {
        rules[k].bias_in_denominator = true;
        float *res[2];
        for (int pass = 0; pass < 2; pass++) {
            lrp_affine a = {.be = be, .ctx = &map, .items = ROWS, .chunk = pass ? 2 : 0,
                            .in_item = IN, .out_item = OUT, .w_n = OUT * IN, .b_n = OUT,
                            .x = x.data, .w = w.data, .b = b.data, .forward = tmap_forward,
                            .backward = tmap_backward};
            OK(lrp_affine_relevance(&a, &rules[k], r.data, out.data));
            res[pass] = from_backend(be, out.data, ROWS * IN);
        }
        if (exact) assert_true(tl_check_bits("chunks", res[0], res[1], ROWS * IN));
        else assert_true(close_scaled("chunks", res[0], res[1], ROWS * IN, 1e-5));
        free(res[0]), free(res[1]);
    }
    strix_tensor *ts[] = {&x, &w, &b, &r, &out};
    for (int i = 0; i < 5; i++) strix_tensor_free(ts[i]);
}

// ---- module rules against host transcriptions --------------------------------------------------

/* Residual(Linear): r_in = x/stab(y)·r + epsilon rule of the Linear for f(x)/stab(y)·r. */
static void test_residual(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_linear *l;
    OK(strix_linear_new_default(&ps, "f", 4, 4, true, &l));
    strix_residual *res;
    OK(strix_residual_new(&l->base, &res));
    OK(strix_params_alloc(&ps));
    OK(strix_params_init(&ps, 11));
    float xh[12], rh[12];
    tl_fill_uniform(xh, 12, 1, -1.0f, 1.0f);
    tl_fill_uniform(rh, 12, 2, -1.0f, 1.0f);
    int64_t shape[2] = {3, 4};
    strix_tensor x = tensor_from_host(be, 2, shape, xh), r = tensor_from_host(be, 2, shape, rh);
    const strix_tensor *y, *rin;
    OK(strix_module_forward(&res->base, &x, &y));
    strix_lrp_composite c = strix_lrp_composite_uniform(strix_lrp_epsilon(1e-3f));
    c.stabilizer = 1e-2f;
    OK(strix_lrp_assign(&res->base, &c));
    OK(strix_module_relevance(&res->base, &r, &rin));
    float *got = from_backend(be, rin->data, 12), *w = from_backend(be, l->weight->data, 16);
    float *b = from_backend(be, l->bias->data, 4), want[12];
    for (int n = 0; n < 3; n++) {
        double z[4], fx[4], rf[4];
        for (int j = 0; j < 4; j++) {
            z[j] = 0.0;
            for (int i = 0; i < 4; i++) z[j] += (double)xh[n * 4 + i] * w[j * 4 + i];
            fx[j] = z[j] + b[j];
            double yv = xh[n * 4 + j] + fx[j];
            want[n * 4 + j] = (float)(xh[n * 4 + j] / stabf((float)yv, 1e-2f) * rh[n * 4 + j]);
            rf[j] = fx[j] / stabf((float)yv, 1e-2f) * rh[n * 4 + j];
        }
        for (int i = 0; i < 4; i++) {
            double acc = 0.0;
            for (int j = 0; j < 4; j++)
                acc += (double)xh[n * 4 + i] * w[j * 4 + i] / stabf((float)z[j], 1e-3f) * rf[j];
            want[n * 4 + i] += (float)acc;
        }
    }
    assert_true(close_scaled("Residual", got, want, 12, 1e-4));
    free(got);
    free(w);
    free(b);
    strix_tensor_free(&x);
    strix_tensor_free(&r);
    strix_module_free(&res->base);
    strix_params_free(&ps);
}

/* A Residual network conserves with epsilon (bias out). */
static void test_residual_conservation(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_sequential *s, *inner;
    OK(strix_sequential_new(be, "", &s));
    linear(&ps, s, 5, 6, true);
    OK(strix_sequential_new(be, "1.f", &inner));
    linear(&ps, inner, 6, 6, true);
    add(inner, act(be, STRIX_ACT_RELU));
    strix_residual *res;
    OK(strix_residual_new(&inner->base, &res));
    OK(strix_sequential_child_name(s, (char[STRIX_PARAM_NAME_MAX]){0}));
    add(s, &res->base);
    linear(&ps, s, 6, 3, true);
    OK(strix_params_alloc(&ps));
    OK(strix_params_init(&ps, 21));
    float xh[20];
    tl_fill_uniform(xh, 20, 22, -2.0f, 2.0f);
    int64_t shape[2] = {4, 5};
    strix_tensor x = tensor_from_host(be, 2, shape, xh);
    double out_sum;
    double gap = explain_gap(&s->base, &x, NULL, strix_lrp_epsilon(1e-7f), &out_sum);
    if (!(gap <= CONS_TOL)) fail_msg("residual conservation gap %.3g", gap);
    strix_tensor_free(&x);
    strix_module_free(&s->base);
    strix_params_free(&ps);
}

/* BatchNorm1d on its own (not after an affine layer): the epsilon rule of y = s·x + t. */
static void test_batchnorm_own_rule(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_batchnorm *bn;
    OK(strix_batchnorm1d_new(&ps, "bn", 5, 1e-5f, 0.1f, &bn));
    OK(strix_params_alloc(&ps));
    float g[5] = {1.2f, -0.7f, 0.5f, 2.0f, 0.9f}, beta[5] = {0.1f, -0.3f, 0.2f, 0.0f, 0.5f};
    float mean[5] = {0.2f, -0.1f, 0.4f, 0.0f, -0.5f}, var[5] = {1.5f, 0.6f, 2.0f, 1.0f, 0.8f};
    to_backend(be, bn->weight->data, g, 5);
    to_backend(be, bn->bias->data, beta, 5);
    to_backend(be, bn->running_mean->data, mean, 5);
    to_backend(be, bn->running_var->data, var, 5);
    strix_module_set_training(&bn->base, false);
    float xh[15], rh[15];
    tl_fill_uniform(xh, 15, 4, -1.0f, 1.0f);
    tl_fill_uniform(rh, 15, 5, -1.0f, 1.0f);
    int64_t shape[2] = {3, 5};
    strix_tensor x = tensor_from_host(be, 2, shape, xh), r = tensor_from_host(be, 2, shape, rh);
    const strix_tensor *y, *rin;
    OK(strix_module_forward(&bn->base, &x, &y));
    for (int in = 0; in < 2; in++) {
        strix_lrp_rule rule = strix_lrp_epsilon(1e-2f);
        rule.bias_in_denominator = in;
        bn->base.rule = rule;
        OK(strix_module_relevance(&bn->base, &r, &rin));
        float *got = from_backend(be, rin->data, 15), want[15];
        for (int i = 0; i < 15; i++) {
            int ch = i % 5;
            double std = sqrt((double)var[ch] + 1e-5), z = g[ch] * xh[i] / std;
            double yv = z + beta[ch] - g[ch] * mean[ch] / std;
            want[i] = (float)(z * rh[i] / stabf((float)(in ? yv : z), 1e-2f));
        }
        assert_true(close_scaled("BatchNorm own rule", got, want, 15, 1e-4));
        free(got);
    }
    strix_tensor_free(&x);
    strix_tensor_free(&r);
    strix_module_free(&bn->base);
    strix_params_free(&ps);
}

/* The std-detached rule of a normalisation over groups of `len` values (host, double):
 * R_j = x_j·(γ_j s_j − mean_i(γ_i s_i))/std, s = r/stab(z), z = γ·xhat (+ β). */
static void detached_norm_host(const float *x, const float *r, const float *gamma,
                               const float *beta, size_t groups, size_t len, size_t period,
                               size_t inner, float eps_norm, float eps, bool bias,
                               float *out) {
    for (size_t gi = 0; gi < groups; gi++) {
        const float *xg = x + gi * len;
        double mean = 0.0, var = 0.0;
        for (size_t k = 0; k < len; k++) mean += xg[k];
        mean /= (double)len;
        for (size_t k = 0; k < len; k++) var += (xg[k] - mean) * (xg[k] - mean);
        double std = sqrt(var / (double)len + eps_norm), total = 0.0;
        double *gs = malloc(len * sizeof(double));
        for (size_t k = 0; k < len; k++) {
            size_t ch = ((gi * len + k) / inner) % period;
            double z = gamma[ch] * (xg[k] - mean) / std + (bias ? beta[ch] : 0.0);
            gs[k] = gamma[ch] * r[gi * len + k] / stabf((float)z, eps);
            total += gs[k];
        }
        for (size_t k = 0; k < len; k++)
            out[gi * len + k] = (float)(xg[k] * (gs[k] - total / (double)len) / std);
        free(gs);
    }
}

static void test_norms_detached(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_groupnorm *gn;
    OK(strix_groupnorm_new(&ps, "gn", 2, 4, 1e-5f, &gn));
    strix_layernorm *ln;
    OK(strix_layernorm_new(&ps, "ln", 6, true, 1e-5f, &ln));
    strix_rmsnorm *rms;
    OK(strix_rmsnorm_new(&ps, "rms", 6, 1e-6f, true, &rms));
    OK(strix_params_alloc(&ps));
    randomize_params(&ps, 3, 0.3);
    float xh[48], rh[48], want[48];
    tl_fill_uniform(xh, 48, 6, -2.0f, 2.0f);
    tl_fill_uniform(rh, 48, 7, -1.0f, 1.0f);
    for (int in = 0; in < 2; in++) {
        strix_lrp_rule rule = strix_lrp_epsilon(1e-3f);
        rule.layer_norm_detach_std = true;
        rule.bias_in_denominator = in;
        // GroupNorm over (2, 4, 2, 3): groups of 2 channels x 6 values
        int64_t gshape[4] = {2, 4, 2, 3};
        strix_tensor x = tensor_from_host(be, 4, gshape, xh);
        strix_tensor r = tensor_from_host(be, 4, gshape, rh);
        const strix_tensor *y, *rin;
        OK(strix_module_forward(&gn->base, &x, &y));
        gn->base.rule = rule;
        OK(strix_module_relevance(&gn->base, &r, &rin));
        float *gg = from_backend(be, gn->weight->data, 4);
        float *gb = from_backend(be, gn->bias->data, 4);
        detached_norm_host(xh, rh, gg, gb, 4, 12, 4, 6, 1e-5f, 1e-3f, in, want);
        float *got = from_backend(be, rin->data, 48);
        assert_true(close_scaled("GroupNorm detached", got, want, 48, 1e-4));
        free(got), free(gg), free(gb);
        if (!in) { /* conservation with the bias out and a tiny eps */
            gn->base.rule.epsilon = 1e-7f;
            OK(strix_module_relevance(&gn->base, &r, &rin));
            got = from_backend(be, rin->data, 48);
            double si = host_sum(got, 48), so = host_sum(rh, 48), mag = 0.0;
            for (int i = 0; i < 48; i++) mag += fabs(rh[i]);
            if (!(fabs(si - so) <= CONS_TOL * mag)) fail_msg("GroupNorm: %g vs %g", si, so);
            free(got);
        }
        strix_tensor_free(&x);
        strix_tensor_free(&r);
        // LayerNorm over rows of 6 (8 rows), through the vtable slot (the kept view of x)
        int64_t lshape[2] = {8, 6};
        x = tensor_from_host(be, 2, lshape, xh);
        r = tensor_from_host(be, 2, lshape, rh);
        OK(strix_layernorm_forward(ln, &x, &y));
        ln->base.rule = rule;
        OK(strix_module_relevance(&ln->base, &r, &rin));
        gg = from_backend(be, ln->weight->data, 6), gb = from_backend(be, ln->bias->data, 6);
        detached_norm_host(xh, rh, gg, gb, 8, 6, 6, 1, 1e-5f, 1e-3f, in, want);
        got = from_backend(be, rin->data, 48);
        assert_true(close_scaled("LayerNorm detached", got, want, 48, 1e-4));
        free(got), free(gb);
        // RMSNorm: y = γx/rms, r_in = y·r/stab(y)
        OK(strix_module_forward(&rms->base, &x, &y));
        float *yh = from_backend(be, y->data, 48);
        rms->base.rule = rule;
        OK(strix_module_relevance(&rms->base, &r, &rin));
        for (int i = 0; i < 48; i++) want[i] = yh[i] * rh[i] / stabf(yh[i], 1e-3f);
        got = from_backend(be, rin->data, 48);
        assert_true(close_scaled("RMSNorm detached", got, want, 48, 1e-5));
        free(got), free(yh), free(gg);
        // pass-through without the flag: r itself
        rule.layer_norm_detach_std = false;
        gn->base.rule = ln->base.rule = rms->base.rule = rule;
        OK(strix_module_relevance(&ln->base, &r, &rin));
        assert_ptr_equal(rin, &r);
        OK(strix_module_relevance(&rms->base, &r, &rin));
        assert_ptr_equal(rin, &r);
        strix_tensor_free(&x);
        strix_tensor_free(&r);
    }
    strix_module_free(&gn->base);
    strix_module_free(&ln->base);
    strix_module_free(&rms->base);
    strix_params_free(&ps);
}

/* Pass-through modules: activations, Flatten, Dropout (eval: r; training: r on kept units). */
static void test_pass_through(void **state) {
    strix_backend *be = *state;
    float xh[24], rh[24];
    tl_fill_uniform(xh, 24, 8, -1.0f, 1.0f);
    tl_fill_uniform(rh, 24, 9, 0.5f, 1.5f);
    int64_t shape[4] = {2, 3, 2, 2};
    strix_tensor x = tensor_from_host(be, 4, shape, xh), r = tensor_from_host(be, 4, shape, rh);
    const strix_tensor *y, *rin;
    strix_act ops[] = {STRIX_ACT_RELU, STRIX_ACT_TANH, STRIX_ACT_SIGMOID, STRIX_ACT_SILU,
                       STRIX_ACT_GELU, STRIX_ACT_GELU_TANH};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        strix_module *a = act(be, ops[i]);
        OK(strix_module_forward(a, &x, &y));
        OK(strix_module_relevance(a, &r, &rin));
        assert_ptr_equal(rin, &r);
        strix_module_free(a);
    }
    strix_module *f = flatten(be);
    OK(strix_module_forward(f, &x, &y));
    strix_tensor rf = strix_tensor_view(r.data, r.device, 2, (int64_t[]){2, 12});
    OK(strix_module_relevance(f, &rf, &rin));
    assert_int_equal(rin->ndim, 4);
    assert_ptr_equal(rin->data, r.data);
    strix_module_free(f);
    strix_dropout *d;
    OK(strix_dropout_new(be, 0.5f, 77, &d));
    OK(strix_module_forward(&d->base, &x, &y));
    float *yh = from_backend(be, y->data, 24);
    OK(strix_module_relevance(&d->base, &r, &rin));
    float *got = from_backend(be, rin->data, 24);
    int kept = 0;
    for (int i = 0; i < 24; i++) {
        bool keep = yh[i] != 0.0f;
        kept += keep;
        assert_true(got[i] == (keep ? rh[i] : 0.0f));
    }
    assert_true(kept > 0 && kept < 24);
    free(got), free(yh);
    strix_module_set_training(&d->base, false);
    OK(strix_module_forward(&d->base, &x, &y));
    OK(strix_module_relevance(&d->base, &r, &rin));
    assert_ptr_equal(rin, &r);
    strix_module_free(&d->base);
    strix_tensor_free(&x);
    strix_tensor_free(&r);
}

/* AvgPool2d with padding and overlapping windows vs the host: each pixel gets
 * x·Σ_o r_o/stab(z_o)/K over the windows o covering it, z_o the window mean (count_include_pad);
 * AdaptiveAvgPool2d equals the average pool of its derived geometry bit for bit. */
static void test_avg_pools(void **state) {
    strix_backend *be = *state;
    enum { N = 2, C = 2, H = 5, W = 6, K = 3, S = 2, P = 1, OH = 3, OW = 3 };
    float xh[N * C * H * W], rh[N * C * OH * OW], want[N * C * H * W];
    tl_fill_uniform(xh, N * C * H * W, 41, -1.0f, 2.0f);
    tl_fill_uniform(rh, N * C * OH * OW, 42, -1.0f, 1.0f);
    int64_t xs[4] = {N, C, H, W}, rs[4] = {N, C, OH, OW};
    strix_tensor x = tensor_from_host(be, 4, xs, xh), r = tensor_from_host(be, 4, rs, rh);
    strix_pool2d_config cfg = {.kernel_h = K, .kernel_w = K, .stride_h = S, .stride_w = S,
                               .pad_h = P, .pad_w = P};
    strix_avgpool2d *ap;
    OK(strix_avgpool2d_new(be, &cfg, &ap));
    const strix_tensor *y, *rin;
    OK(strix_module_forward(&ap->base, &x, &y));
    assert_int_equal(y->shape[2], OH);
    assert_int_equal(y->shape[3], OW);
    ap->base.rule = strix_lrp_epsilon(1e-3f);
    OK(strix_module_relevance(&ap->base, &r, &rin));
    memset(want, 0, sizeof want);
    for (int pl = 0; pl < N * C; pl++)
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++) {
                double z = 0.0;
                for (int i = 0; i < K; i++)
                    for (int j = 0; j < K; j++) {
                        int yy = oy * S - P + i, xx = ox * S - P + j;
                        if (yy >= 0 && yy < H && xx >= 0 && xx < W) z += xh[(pl * H + yy) * W + xx];
                    }
                z /= K * K;
                double ratio = rh[(pl * OH + oy) * OW + ox] / stabf((float)z, 1e-3f) / (K * K);
                for (int i = 0; i < K; i++)
                    for (int j = 0; j < K; j++) {
                        int yy = oy * S - P + i, xx = ox * S - P + j;
                        if (yy >= 0 && yy < H && xx >= 0 && xx < W) {
                            size_t at = (size_t)((pl * H + yy) * W + xx);
                            want[at] += (float)(xh[at] * ratio);
                        }
                    }
            }
    float *got = from_backend(be, rin->data, N * C * H * W);
    assert_true(close_scaled("AvgPool2d", got, want, N * C * H * W, 1e-4));
    free(got);
    strix_module_free(&ap->base);
    strix_tensor_free(&x);
    strix_tensor_free(&r);
    // AdaptiveAvgPool2d((2, 3)) over 4x6 is the 2x2 pool with stride 2
    int64_t as[4] = {N, C, 4, 6}, ars[4] = {N, C, 2, 3};
    x = tensor_from_host(be, 4, as, xh);
    r = tensor_from_host(be, 4, ars, rh);
    strix_avgpool2d *ad, *plain;
    OK(strix_adaptive_avgpool2d_new(be, 2, 3, &ad));
    strix_pool2d_config c2 = {.kernel_h = 2, .kernel_w = 2};
    OK(strix_avgpool2d_new(be, &c2, &plain));
    float *res[2];
    strix_avgpool2d *pools[2] = {ad, plain};
    for (int k = 0; k < 2; k++) {
        OK(strix_module_forward(&pools[k]->base, &x, &y));
        pools[k]->base.rule = strix_lrp_epsilon(1e-6f);
        OK(strix_module_relevance(&pools[k]->base, &r, &rin));
        res[k] = from_backend(be, rin->data, N * C * 24);
    }
    assert_true(tl_check_bits("adaptive", res[0], res[1], N * C * 24));
    free(res[0]), free(res[1]);
    strix_module_free(&ad->base);
    strix_module_free(&plain->base);
    strix_tensor_free(&x);
    strix_tensor_free(&r);
}

/* strix_lrp_explain restores the BatchNorm/Dropout training flags. */
static void test_modes_restored(void **state) {
    strix_backend *be = *state;
    model md;
    model_load(be, "cnn_bn", &md);
    strix_module_set_training(root(&md), true);
    strix_lrp_composite c = strix_lrp_composite_preset(STRIX_COMPOSITE_EPSILON_PLUS);
    OK(strix_lrp_assign(root(&md), &c));
    strix_lrp_explanation e;
    OK(strix_lrp_explain(root(&md), &md.x, NULL, &e));
    strix_batchnorm *bn = (strix_batchnorm *)strix_sequential_at(md.seq, 1);
    assert_true(bn->training);
    assert_false(strix_batchnorm_last_training(bn));
    // the mode through the module interface: BatchNorm has one, the Sequential and Conv2d not
    assert_true(strix_module_has_mode(&bn->base));
    assert_true(strix_module_training(&bn->base));
    assert_false(strix_module_has_mode(root(&md)));
    assert_false(strix_module_has_mode(strix_sequential_at(md.seq, 0)));
    strix_module_set_training(root(&md), false);
    assert_false(strix_module_training(&bn->base));
    assert_false(bn->training);
    assert_true(strix_module_training(root(&md))); /* no mode of its own */
    strix_lrp_explanation_free(&e);
    model_free(&md);
}

// ---- thread-count independence -----------------------------------------------------------------

static void test_thread_count_independence(void **state) {
    strix_backend *be = *state;
    const char *kinds[] = {"mlp", "cnn_avg", "cnn_max", "cnn_bn"};
    const char *names[] = {"eps", "zplus", "ab21", "gamma", "eps_gamma_box"};
    int saved = strix_get_num_threads();
    for (size_t k = 0; k < 4; k++) {
        model md;
        model_load(be, kinds[k], &md);
        size_t nx = (size_t)strix_tensor_numel(&md.x);
        for (size_t i = 0; i < 5; i++) {
            strix_lrp_composite c = case_composite(names[i]);
            OK(strix_lrp_assign(root(&md), &c));
            float *res[2];
            for (int t = 0; t < 2; t++) {
                strix_set_num_threads(t + 1);
                strix_lrp_explanation e;
                OK(strix_lrp_explain(root(&md), &md.x, NULL, &e));
                res[t] = malloc(nx * sizeof(float));
                memcpy(res[t], e.relevance, nx * sizeof(float));
                strix_lrp_explanation_free(&e);
            }
            assert_true(tl_check_bits(names[i], res[0], res[1], nx));
            free(res[0]), free(res[1]);
        }
        model_free(&md);
    }
    strix_set_num_threads(saved);
}

// ---- ids in: the general form (strix_lrp_explain_ex) -------------------------------------------

/* An Embedding-headed model, Sequential(Embedding(10, 5), Flatten, Linear(20, 6) without bias),
 * explained from int32 ids with the epsilon rule: the relevance has the ids' shape (3, 4), each
 * id's value is the sum over its row of the Linear's epsilon relevance (a host transcription in
 * double), and without a bias the total is conserved. */
static void test_explain_ids(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_sequential *s;
    OK(strix_sequential_new(be, "", &s));
    char name[STRIX_PARAM_NAME_MAX];
    strix_embedding *e;
    OK(strix_sequential_child_name(s, name));
    OK(strix_embedding_new(&ps, name, 10, 5, 0.5f, &e));
    OK(strix_sequential_add(s, &e->base));
    strix_flatten *f;
    OK(strix_flatten_new(be, 1, -1, &f));
    OK(strix_sequential_add(s, &f->base));
    strix_linear *l;
    OK(strix_sequential_child_name(s, name));
    OK(strix_linear_new(&ps, name, 20, 6, false, 0.5f, NULL, &l));
    OK(strix_sequential_add(s, &l->base));
    OK(strix_params_alloc(&ps));
    randomize_params(&ps, 51, 0.5);
    enum { N = 3, T = 4, D = 5, K = 6 };
    int32_t ids_h[N * T] = {1, 4, 4, 9, 0, 2, 7, 4, 3, 3, 8, 5};
    int32_t *ids;
    OK(strix_alloc(be, sizeof ids_h, (void **)&ids));
    OK(strix_copy(be, ids, ids_h, sizeof ids_h, STRIX_COPY_H2D));
    strix_lrp_composite c = strix_lrp_composite_uniform(strix_lrp_epsilon(1e-6f));
    OK(strix_lrp_assign(&s->base, &c));
    int64_t shape[2] = {N, T};
    strix_module_io io = strix_module_io_of_ids(ids, 2, shape);
    strix_lrp_explanation ex;
    OK(strix_lrp_explain_ex(&s->base, &io, NULL, &ex));
    assert_int_equal(ex.ndim, 2);
    assert_int_equal(ex.shape[0], N);
    assert_int_equal(ex.shape[1], T);
    assert_true(fabs(ex.relevance_in_sum - ex.relevance_out_sum) <=
                CONS_TOL * fabs(ex.relevance_out_sum));
    // host transcription: x[n] = the embedding rows, z = x·Wᵀ, r = the predicted logit's seed
    float *emb = from_backend(be, e->weight->data, 10 * D);
    float *w = from_backend(be, l->weight->data, K * T * D);
    double total_abs = 0.0;
    for (int n = 0; n < N; n++) {
        double x[T * D], z[K];
        for (int t = 0; t < T; t++)
            for (int d = 0; d < D; d++) x[t * D + d] = emb[ids_h[n * T + t] * D + d];
        int best = 0;
        for (int k = 0; k < K; k++) {
            z[k] = 0.0;
            for (int i = 0; i < T * D; i++) z[k] += x[i] * w[k * T * D + i];
            if (z[k] > z[best]) best = k;
        }
        assert_int_equal(ex.predicted[n], best);
        double sk = z[best] / (z[best] + 1e-6 * (z[best] >= 0 ? 1.0 : -1.0)); /* r/stab(z) */
        for (int t = 0; t < T; t++) {
            double want = 0.0;
            for (int d = 0; d < D; d++) want += x[t * D + d] * w[best * T * D + t * D + d] * sk;
            double got = ex.relevance[n * T + t];
            assert_true(fabs(got - want) <= REL_TOL * fmax(1.0, fabs(want)));
            total_abs += fabs(got);
        }
    }
    assert_true(total_abs > 1e-2);
    // an io with neither one float input nor ids is refused
    strix_lrp_explanation bad;
    strix_module_io none = {0};
    assert_int_equal(strix_lrp_explain_ex(&s->base, &none, NULL, &bad), STRIX_ERR_ARG);
    free(emb);
    free(w);
    strix_lrp_explanation_free(&ex);
    strix_free(be, ids);
    strix_module_free(&s->base);
    strix_params_free(&ps);
}

// ---- main --------------------------------------------------------------------------------------

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_explain_ids),
        BACKEND_TEST(test_golden_mlp),
        BACKEND_TEST(test_golden_cnn_avg),
        BACKEND_TEST(test_golden_cnn_max),
        BACKEND_TEST(test_golden_cnn_bn),
        BACKEND_TEST(test_conservation),
        BACKEND_TEST(test_lrp0_is_grad_times_input),
        BACKEND_TEST(test_targets),
        BACKEND_TEST(test_rule_checks),
        BACKEND_TEST(test_composites),
        BACKEND_TEST(test_linear_rules_host),
        BACKEND_TEST(test_chunks),
        BACKEND_TEST(test_residual),
        BACKEND_TEST(test_residual_conservation),
        BACKEND_TEST(test_batchnorm_own_rule),
        BACKEND_TEST(test_norms_detached),
        BACKEND_TEST(test_pass_through),
        BACKEND_TEST(test_avg_pools),
        BACKEND_TEST(test_modes_restored),
        BACKEND_TEST(test_thread_count_independence),
    };
    return run_on_each_backend("lrp", tests, sizeof tests / sizeof tests[0]) ? 1 : 0;
}
