/*
 * test_layers.c - the layer zoo (strix/layers.h), Linear's default init, and PyTorch state dicts
 * (strix/state_dict.h), on every CPU backend ("cpu", and "cpu-blas" when built):
 *
 *  1. PyTorch goldens (tools/ref/layers_ref.py, tests/golden/layers/): output, input gradient
 *     and parameter gradients of each layer at 1e-4 abs + 1e-4 rel; BatchNorm in training and
 *     eval mode with its running statistics and batch counter; a real torch CNN (Sequential of
 *     Conv2d, BatchNorm2d, ReLU, MaxPool2d, AdaptiveAvgPool2d, Flatten, Linear) loaded from the
 *     torch state dict file, in both modes.
 *  2. Finite differences of every backward (input and parameter gradients), as in test_nn.c:
 *     L = Σ y·R in double, central differences with eps 1e-2 (1e-3 for piecewise-linear layers,
 *     whose kinks are skipped when the one-sided slopes disagree), |fd − analytic| <= 2e-3 +
 *     1e-2·|analytic|.
 *  3. Exact behaviour: dropout masks against the counter RNG computed on the host, train/eval
 *     switches through containers, BatchNorm's one-value-per-channel error, BN folding (folded
 *     eval output == unfolded), thread-count independence (bit-identical at 1 and 2 threads),
 *     state-dict round trips and bad files (each an error that leaves the parameters intact).
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "nn_testutil.h"
#include "strix/layers.h"
#include "strix/state_dict.h"

#define GOLD_ATOL 1e-4
#define GOLD_RTOL 1e-4

#define OK(expr) assert_int_equal((expr), STRIX_OK)

static char tmp_dir[64];

static const char *in_tmp(const char *name) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    return path;
}

// ---- builders ----------------------------------------------------------------------------------

static strix_conv2d *conv(strix_params *ps, const char *name, int ic, int oc, int kh, int kw,
                          int sh, int sw, int ph, int pw, bool bias) {
    strix_conv2d_config c = {.in_channels = ic, .out_channels = oc, .kernel_h = kh,
                             .kernel_w = kw, .stride_h = sh, .stride_w = sw, .pad_h = ph,
                             .pad_w = pw, .bias = bias};
    strix_conv2d *m;
    OK(strix_conv2d_new(ps, name, &c, &m));
    return m;
}

static strix_module *pool(strix_backend *be, bool max, int kh, int kw, int sh, int sw, int ph,
                          int pw) {
    strix_pool2d_config c = {.kernel_h = kh, .kernel_w = kw, .stride_h = sh, .stride_w = sw,
                             .pad_h = ph, .pad_w = pw};
    if (max) {
        strix_maxpool2d *m;
        OK(strix_maxpool2d_new(be, &c, &m));
        return &m->base;
    }
    strix_avgpool2d *m;
    OK(strix_avgpool2d_new(be, &c, &m));
    return &m->base;
}

static strix_module *act(strix_backend *be, strix_act op) {
    strix_activation *m;
    OK(strix_activation_new(be, op, &m));
    return &m->base;
}

/* Appends child to s. */
static void add(strix_sequential *s, strix_module *child) { OK(strix_sequential_add(s, child)); }

/* The next child name of s (for children with parameters). */
static const char *next_name(strix_sequential *s) {
    static char name[STRIX_PARAM_NAME_MAX];
    OK(strix_sequential_child_name(s, name));
    return name;
}

/* The torch CNN of layers_ref.py's cnn_model(): names "0.weight" ... "9.bias". */
typedef struct cnn {
    strix_params ps;
    strix_sequential *seq;
    strix_conv2d *c0, *c4;
    strix_batchnorm *b1, *b5;
    strix_linear *l9;
} cnn;

static void cnn_build(strix_backend *be, cnn *n) {
    strix_params_init_empty(&n->ps, be);
    OK(strix_sequential_new(be, "", &n->seq));
    strix_sequential *s = n->seq;
    n->c0 = conv(&n->ps, next_name(s), 3, 4, 3, 3, 1, 1, 1, 1, true);
    add(s, &n->c0->base);
    OK(strix_batchnorm2d_new(&n->ps, next_name(s), 4, 1e-5f, 0.1f, &n->b1));
    add(s, &n->b1->base);
    add(s, act(be, STRIX_ACT_RELU));
    add(s, pool(be, true, 2, 2, 0, 0, 0, 0));
    n->c4 = conv(&n->ps, next_name(s), 4, 6, 3, 2, 1, 2, 1, 0, true);
    add(s, &n->c4->base);
    OK(strix_batchnorm2d_new(&n->ps, next_name(s), 6, 1e-5f, 0.1f, &n->b5));
    add(s, &n->b5->base);
    add(s, act(be, STRIX_ACT_RELU));
    strix_avgpool2d *ap;
    OK(strix_adaptive_avgpool2d_new(be, 2, 3, &ap));
    add(s, &ap->base);
    strix_flatten *fl;
    OK(strix_flatten_new(be, 1, -1, &fl));
    add(s, &fl->base);
    OK(strix_linear_new_default(&n->ps, next_name(s), 36, 5, true, &n->l9));
    add(s, &n->l9->base);
    OK(strix_params_alloc(&n->ps));
}

static void cnn_free(cnn *n) {
    strix_module_free(&n->seq->base);
    strix_params_free(&n->ps);
}

// ---- golden helpers ----------------------------------------------------------------------------

static const tl_array *need(const tl_golden *gf, const char *name) {
    const tl_array *e = tl_golden_get(gf, name);
    assert_non_null(e);
    return e;
}

static void load_golden(const char *file, tl_golden *gf) {
    char path[256];
    snprintf(path, sizeof path, "tests/golden/layers/%s", file);
    assert_true(tl_golden_load(path, gf));
}

/* The CNN with torch's weights (cnn_torch.st) and its golden file (cnn.bin). */
static void cnn_torch(strix_backend *be, cnn *n, tl_golden *gf) {
    cnn_build(be, n);
    OK(strix_state_dict_load(&n->ps, "tests/golden/layers/cnn_torch.st", true));
    load_golden("cnn.bin", gf);
}

/* Uploads every "param.<name>" array into the parameter <name> (which must exist). */
static void load_params(const tl_golden *gf, strix_params *ps) {
    for (int i = 0; i < gf->count; i++) {
        const tl_array *a = &gf->arrays[i];
        if (strncmp(a->name, "param.", 6) != 0) continue;
        strix_param *p = strix_params_find(ps, a->name + 6);
        if (!p) fail_msg("golden parameter %s not in the model", a->name + 6);
        assert_int_equal(a->count, p->numel);
        to_backend(ps->be, p->data, a->data, p->numel);
    }
}

/* Backend floats vs golden array `name` (counts must match). */
static bool same_as(strix_backend *be, const tl_golden *gf, const char *name, const float *dev,
                    size_t n) {
    const tl_array *a = need(gf, name);
    assert_int_equal(a->count, n);
    return check_backend(be, name, dev, a->data, n, GOLD_ATOL, GOLD_RTOL);
}

/* Forward on `<pre>x`, compare with `<pre>y`; backward of `<pre>dy`, compare `<pre>dx` and every
 * non-buffer parameter's grad with `<pre>grad.<name>` (grads zeroed first). */
static void golden_pass(strix_backend *be, strix_params *ps, strix_module *m,
                        const tl_golden *gf, const char *pre) {
    char key[160];
    snprintf(key, sizeof key, "%sx", pre);
    const tl_array *x = need(gf, key);
    strix_tensor xt = tensor_from_host(be, x->ndim, x->shape, x->data);
    const strix_tensor *y, *dx;
    OK(strix_module_forward(m, &xt, &y));
    snprintf(key, sizeof key, "%sy", pre);
    int bad = !same_as(be, gf, key, y->data, (size_t)strix_tensor_numel(y));
    snprintf(key, sizeof key, "%sdy", pre);
    const tl_array *dy = need(gf, key);
    assert_int_equal(dy->count, (size_t)strix_tensor_numel(y));
    strix_tensor dyt = tensor_from_host(be, y->ndim, y->shape, dy->data);
    if (ps && ps->total) OK(strix_params_zero_grad(ps));
    OK(strix_module_backward(m, &dyt, &dx));
    snprintf(key, sizeof key, "%sdx", pre);
    bad += !same_as(be, gf, key, dx->data, (size_t)strix_tensor_numel(dx));
    for (int i = 0; ps && i < ps->count; i++) {
        strix_param *p = ps->items[i];
        if (p->is_buffer) continue;
        snprintf(key, sizeof key, "%sgrad.%s", pre, p->name);
        bad += !same_as(be, gf, key, p->grad, p->numel);
    }
    assert_int_equal(bad, 0);
    strix_tensor_free(&xt);
    strix_tensor_free(&dyt);
}

/* A host copy of the whole value block. */
static float *snapshot(const strix_params *ps) { return from_backend(ps->be, ps->data, ps->total); }

// ---- golden tests ------------------------------------------------------------------------------

static void test_golden_conv(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    built b;
    begin(&b, be);
    b.m = &conv(&b.ps, "m", 3, 4, 3, 2, 2, 1, 1, 1, true)->base;
    OK(strix_params_alloc(&b.ps));
    load_golden("conv_bias.bin", &gf);
    load_params(&gf, &b.ps);
    golden_pass(be, &b.ps, b.m, &gf, "");
    tl_golden_free(&gf);
    release(&b);

    begin(&b, be);
    b.m = &conv(&b.ps, "m", 4, 5, 3, 3, 0, 0, 0, 0, false)->base;
    OK(strix_params_alloc(&b.ps));
    load_golden("conv_nobias.bin", &gf);
    load_params(&gf, &b.ps);
    golden_pass(be, &b.ps, b.m, &gf, "");
    assert_null(strix_params_find(&b.ps, "m.bias"));
    tl_golden_free(&gf);
    release(&b);
}

static void test_golden_pools(void **state) {
    strix_backend *be = *state;
    struct {
        const char *file;
        strix_module *m;
    } cases[] = {
        {"maxpool.bin", pool(be, true, 3, 2, 2, 1, 1, 1)},
        {"maxpool_ties.bin", pool(be, true, 2, 2, 0, 0, 0, 0)},
        {"avgpool.bin", pool(be, false, 3, 3, 2, 2, 1, 1)},
        {"avgpool_default.bin", pool(be, false, 2, 2, 0, 0, 0, 0)},
        {"adaptive.bin", NULL},
    };
    strix_avgpool2d *ad;
    OK(strix_adaptive_avgpool2d_new(be, 2, 3, &ad));
    cases[4].m = &ad->base;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tl_golden gf;
        load_golden(cases[i].file, &gf);
        golden_pass(be, NULL, cases[i].m, &gf, "");
        tl_golden_free(&gf);
        strix_module_free(cases[i].m);
    }
}

/* Train step, running statistics and counter, then eval, against a layers_ref.py bn_case. */
static void golden_bn(strix_backend *be, const char *file, bool two_d, int C, float eps,
                      float momentum) {
    tl_golden gf;
    load_golden(file, &gf);
    built b;
    begin(&b, be);
    strix_batchnorm *bn;
    if (two_d) OK(strix_batchnorm2d_new(&b.ps, "m", C, eps, momentum, &bn));
    else OK(strix_batchnorm1d_new(&b.ps, "m", C, eps, momentum, &bn));
    b.m = &bn->base;
    OK(strix_params_alloc(&b.ps));
    load_params(&gf, &b.ps);
    float three = 3.0f;
    to_backend(be, bn->num_batches_tracked->data, &three, 1);
    golden_pass(be, &b.ps, b.m, &gf, "");
    int bad = !same_as(be, &gf, "after.running_mean", bn->running_mean->data, (size_t)C);
    bad += !same_as(be, &gf, "after.running_var", bn->running_var->data, (size_t)C);
    bad += !same_as(be, &gf, "after.num_batches_tracked", bn->num_batches_tracked->data, 1);
    assert_int_equal(bad, 0);
    float *before = snapshot(&b.ps);
    strix_module_set_training(b.m, false);
    golden_pass(be, &b.ps, b.m, &gf, "eval.");
    float *after = snapshot(&b.ps);
    assert_true(tl_check_bits("eval leaves the statistics", after, before, b.ps.total));
    free(before);
    free(after);
    tl_golden_free(&gf);
    release(&b);
}

static void test_golden_batchnorm(void **state) {
    strix_backend *be = *state;
    golden_bn(be, "batchnorm2d.bin", true, 4, 1e-5f, 0.1f);
    golden_bn(be, "batchnorm1d.bin", false, 5, 1e-5f, 0.1f);
    golden_bn(be, "batchnorm1d_3d.bin", false, 3, 1e-3f, 0.25f);
}

static void test_golden_group_rms_norm(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    built b;
    begin(&b, be);
    strix_groupnorm *gn;
    OK(strix_groupnorm_new(&b.ps, "m", 3, 6, 1e-5f, &gn));
    b.m = &gn->base;
    OK(strix_params_alloc(&b.ps));
    load_golden("groupnorm.bin", &gf);
    load_params(&gf, &b.ps);
    golden_pass(be, &b.ps, b.m, &gf, "");
    tl_golden_free(&gf);
    release(&b);

    const char *files[2] = {"rmsnorm.bin", "rmsnorm_eps.bin"};
    for (int v = 0; v < 2; v++) {
        begin(&b, be);
        strix_rmsnorm *rn;
        OK(strix_rmsnorm_new(&b.ps, "m", v ? 11 : 16, v ? 1e-3f : STRIX_RMSNORM_DEFAULT_EPS,
                             v == 0, &rn));
        b.m = &rn->base;
        OK(strix_params_alloc(&b.ps));
        assert_int_equal(b.ps.count, v ? 0 : 1);
        load_golden(files[v], &gf);
        load_params(&gf, &b.ps);
        golden_pass(be, &b.ps, b.m, &gf, "");
        tl_golden_free(&gf);
        release(&b);
    }
}

static void test_golden_activations(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    load_golden("activations.bin", &gf);
    struct {
        const char *name;
        strix_act op;
        const char *type;
    } acts[] = {{"relu", STRIX_ACT_RELU, "ReLU"}, {"tanh", STRIX_ACT_TANH, "Tanh"},
                {"sigmoid", STRIX_ACT_SIGMOID, "Sigmoid"}, {"silu", STRIX_ACT_SILU, "SiLU"},
                {"gelu", STRIX_ACT_GELU, "GELU"}, {"gelu_tanh", STRIX_ACT_GELU_TANH, "GELU"}};
    const tl_array *x = need(&gf, "x"), *dy = need(&gf, "dy");
    strix_tensor xt = tensor_from_host(be, x->ndim, x->shape, x->data);
    strix_tensor dyt = tensor_from_host(be, dy->ndim, dy->shape, dy->data);
    int bad = 0;
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        strix_module *m = act(be, acts[i].op);
        assert_string_equal(m->vt->type, acts[i].type);
        const strix_tensor *y, *dx;
        OK(strix_module_forward(m, &xt, &y));
        char key[32];
        snprintf(key, sizeof key, "y_%s", acts[i].name);
        bad += !same_as(be, &gf, key, y->data, x->count);
        OK(strix_module_backward(m, &dyt, &dx));
        snprintf(key, sizeof key, "dx_%s", acts[i].name);
        bad += !same_as(be, &gf, key, dx->data, x->count);
        strix_module_free(m);
    }
    assert_int_equal(bad, 0);
    strix_activation *neg;
    assert_int_equal(strix_activation_new(be, STRIX_ACT_NEG, &neg), STRIX_ERR_ARG);
    strix_tensor_free(&xt);
    strix_tensor_free(&dyt);
    tl_golden_free(&gf);
}

static void test_golden_residual(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_sequential *s;
    OK(strix_sequential_new(be, "m", &s));
    strix_linear *l;
    OK(strix_linear_new_default(&b.ps, next_name(s), 5, 6, true, &l));
    add(s, &l->base);
    add(s, act(be, STRIX_ACT_GELU));
    OK(strix_linear_new_default(&b.ps, next_name(s), 6, 5, true, &l));
    add(s, &l->base);
    strix_residual *r;
    OK(strix_residual_new(&s->base, &r));
    b.m = &r->base;
    OK(strix_params_alloc(&b.ps));
    assert_non_null(strix_params_find(&b.ps, "m.2.bias"));
    tl_golden gf;
    load_golden("residual.bin", &gf);
    load_params(&gf, &b.ps);
    golden_pass(be, &b.ps, b.m, &gf, "");
    tl_golden_free(&gf);
    release(&b);
}

/* The torch CNN: state dict from torch's file, train step (output, input and parameter grads,
 * running statistics, counter), then eval. */
static void test_golden_cnn(void **state) {
    strix_backend *be = *state;
    cnn n;
    tl_golden gf;
    cnn_torch(be, &n, &gf);
    int bad = 0;
    char key[160];
    for (int i = 0; i < n.ps.count; i++) {
        strix_param *p = n.ps.items[i];
        snprintf(key, sizeof key, "param.%s", p->name);
        float *h = from_backend(be, p->data, p->numel);
        bad += !tl_check_bits(key, h, need(&gf, key)->data, p->numel);
        free(h);
    }
    assert_int_equal(bad, 0);
    assert_true(get_one(be, n.b1->num_batches_tracked->data, 0) == 7.0f);

    const tl_array *x = need(&gf, "x"), *dy = need(&gf, "dy");
    strix_tensor xt = tensor_from_host(be, x->ndim, x->shape, x->data);
    strix_tensor dyt = tensor_from_host(be, dy->ndim, dy->shape, dy->data);
    for (int mode = 0; mode < 2; mode++) {
        const char *tag = mode == 0 ? "train" : "eval";
        strix_module_set_training(&n.seq->base, mode == 0);
        const strix_tensor *y, *dx;
        OK(strix_module_forward(&n.seq->base, &xt, &y));
        assert_int_equal(y->ndim, 2);
        snprintf(key, sizeof key, "y_%s", tag);
        bad += !same_as(be, &gf, key, y->data, (size_t)strix_tensor_numel(y));
        OK(strix_params_zero_grad(&n.ps));
        OK(strix_module_backward(&n.seq->base, &dyt, &dx));
        snprintf(key, sizeof key, "dx_%s", tag);
        bad += !same_as(be, &gf, key, dx->data, x->count);
        for (int i = 0; i < n.ps.count; i++) {
            strix_param *p = n.ps.items[i];
            if (p->is_buffer) continue;
            snprintf(key, sizeof key, "grad_%s.%s", tag, p->name);
            bad += !same_as(be, &gf, key, p->grad, p->numel);
        }
        if (mode == 0) {
            const char *bufs[] = {"1.running_mean", "1.running_var", "1.num_batches_tracked",
                                  "5.running_mean", "5.running_var", "5.num_batches_tracked"};
            for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++) {
                strix_param *p = strix_params_find(&n.ps, bufs[k]);
                snprintf(key, sizeof key, "after.%s", bufs[k]);
                bad += !same_as(be, &gf, key, p->data, p->numel);
            }
        }
    }
    assert_int_equal(bad, 0);
    strix_tensor_free(&xt);
    strix_tensor_free(&dyt);
    tl_golden_free(&gf);
    cnn_free(&n);
}

// ---- exact behaviour ---------------------------------------------------------------------------

/* Forward + backward of the CNN in training mode at 1 and at 2 threads: bit-identical. */
static void test_thread_count_independence(void **state) {
    strix_backend *be = *state;
    cnn n;
    cnn_build(be, &n);
    OK(strix_params_init(&n.ps, 9));
    int64_t shape[4] = {4, 3, 12, 12};
    size_t nx = 4 * 3 * 12 * 12;
    float *xh = malloc(nx * sizeof(float)), R[20];
    strix_rng rng;
    strix_rng_seed(&rng, 10);
    fill_normal(&rng, xh, nx, 0.0, 1.0);
    fill_uniform(&rng, R, 20, -1.0, 1.0);
    strix_tensor x = tensor_from_host(be, 4, shape, xh);
    float *start = snapshot(&n.ps);
    float *res[2][3];
    int saved = strix_get_num_threads();
    for (int t = 0; t < 2; t++) {
        strix_set_num_threads(t + 1);
        to_backend(be, n.ps.data, start, n.ps.total);
        const strix_tensor *y, *dx;
        OK(strix_module_forward(&n.seq->base, &x, &y));
        strix_tensor dy = tensor_from_host(be, y->ndim, y->shape, R);
        OK(strix_params_zero_grad(&n.ps));
        OK(strix_module_backward(&n.seq->base, &dy, &dx));
        res[t][0] = from_backend(be, y->data, 20);
        res[t][1] = from_backend(be, dx->data, nx);
        res[t][2] = from_backend(be, n.ps.grad, n.ps.total);
        strix_tensor_free(&dy);
    }
    strix_set_num_threads(saved);
    assert_true(tl_check_bits("y", res[0][0], res[1][0], 20));
    assert_true(tl_check_bits("dx", res[0][1], res[1][1], nx));
    assert_true(tl_check_bits("grads", res[0][2], res[1][2], n.ps.total));
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 3; k++) free(res[t][k]);
    free(start);
    free(xh);
    strix_tensor_free(&x);
    cnn_free(&n);
}

static void test_dropout(void **state) {
    strix_backend *be = *state;
    const float p = 0.3f;
    const uint64_t seed = 77;
    strix_dropout *d;
    OK(strix_dropout_new(be, p, seed, &d));
    enum { N = 1000 };
    int64_t shape[2] = {40, 25};
    float xh[N], dyh[N];
    strix_rng rng;
    strix_rng_seed(&rng, 5);
    fill_normal(&rng, xh, N, 0.0, 1.0);
    fill_normal(&rng, dyh, N, 0.0, 1.0);
    strix_tensor x = tensor_from_host(be, 2, shape, xh);
    strix_tensor dy = tensor_from_host(be, 2, shape, dyh);
    const float scale = 1.0f / (1.0f - p);
    float *first = NULL;
    for (int call = 0; call < 3; call++) {
        if (call == 2) d->offset = 0; // rewinding the offset replays the first mask
        uint64_t off = d->offset;
        const strix_tensor *y, *dx;
        OK(strix_module_forward(&d->base, &x, &y));
        assert_true(d->offset == off + N);
        OK(strix_module_backward(&d->base, &dy, &dx));
        float *yh = from_backend(be, y->data, N), *dxh = from_backend(be, dx->data, N);
        int dropped = 0;
        for (int i = 0; i < N; i++) {
            bool keep = !(strix_uniform_counter(seed, off + (uint64_t)i) < p);
            dropped += !keep;
            float want_y = keep ? xh[i] * scale : 0.0f, want_dx = keep ? dyh[i] * scale : 0.0f;
            assert_true(memcmp(&yh[i], &want_y, 4) == 0 && memcmp(&dxh[i], &want_dx, 4) == 0);
        }
        assert_true(dropped > 240 && dropped < 360); // 300 expected, sd 14.5
        if (call == 0) first = yh;
        else {
            bool same = memcmp(first, yh, sizeof(float) * N) == 0;
            assert_true(call == 2 ? same : !same);
            free(yh);
        }
        free(dxh);
    }
    free(first);
    // eval mode: the identity (a view of x), and its backward a view of dy
    strix_module_set_training(&d->base, false);
    uint64_t off = d->offset;
    const strix_tensor *y, *dx;
    OK(strix_module_forward(&d->base, &x, &y));
    assert_ptr_equal(y->data, x.data);
    OK(strix_module_backward(&d->base, &dy, &dx));
    assert_ptr_equal(dx->data, dy.data);
    assert_true(d->offset == off);
    strix_module_free(&d->base);
    // p = 1 drops everything
    OK(strix_dropout_new(be, 1.0f, seed, &d));
    OK(strix_module_forward(&d->base, &x, &y));
    float *yh = from_backend(be, y->data, N);
    for (int i = 0; i < N; i++) assert_true(yh[i] == 0.0f);
    free(yh);
    strix_module_free(&d->base);
    assert_int_equal(strix_dropout_new(be, 1.5f, seed, &d), STRIX_ERR_ARG);
    strix_tensor_free(&x);
    strix_tensor_free(&dy);
}

static void test_train_eval_modes(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_sequential *s;
    OK(strix_sequential_new(be, "net", &s));
    strix_linear *l;
    OK(strix_linear_new_default(&b.ps, next_name(s), 4, 3, true, &l));
    add(s, &l->base);
    strix_batchnorm *bn;
    OK(strix_batchnorm1d_new(&b.ps, next_name(s), 3, 1e-5f, 0.1f, &bn));
    add(s, &bn->base);
    strix_dropout *d;
    OK(strix_dropout_new(be, 0.5f, 1, &d));
    add(s, &d->base);
    b.m = &s->base;
    assert_string_equal(strix_sequential_at(s, 1)->vt->type, "BatchNorm1d");
    assert_non_null(strix_params_find(&b.ps, "net.1.running_var"));
    assert_non_null(strix_params_find(&b.ps, "net.1.num_batches_tracked"));
    finish(&b, 3);
    assert_true(bn->training && d->training);
    strix_module_set_training(b.m, false);
    assert_true(!bn->training && !d->training);
    strix_module_set_training(b.m, true);
    assert_true(bn->training && d->training);

    // one value per channel in training: an error, running statistics untouched
    int64_t one[2] = {1, 4};
    float xh[4] = {0.5f, -1.0f, 2.0f, 0.25f};
    strix_tensor x1 = tensor_from_host(be, 2, one, xh);
    float *before = snapshot(&b.ps);
    const strix_tensor *y;
    assert_int_equal(strix_module_forward(b.m, &x1, &y), STRIX_ERR_SHAPE);
    assert_non_null(strstr(strix_last_error(), "more than 1 value per channel"));
    float *after = snapshot(&b.ps);
    assert_true(tl_check_bits("statistics after the refused batch", after, before, b.ps.total));
    free(after);
    // eval mode takes it, uses the running statistics, and changes nothing
    strix_module_set_training(b.m, false);
    OK(strix_module_forward(b.m, &x1, &y));
    after = snapshot(&b.ps);
    assert_true(tl_check_bits("statistics after eval", after, before, b.ps.total));
    free(after);
    free(before);
    strix_tensor_free(&x1);

    // BatchNorm2d with (1, C, 1, 1) in training is refused too; (1, C, 1, 2) is fine
    strix_batchnorm *bn2;
    strix_params ps2;
    strix_params_init_empty(&ps2, be);
    OK(strix_batchnorm2d_new(&ps2, "bn", 2, 1e-5f, 0.1f, &bn2));
    OK(strix_params_alloc(&ps2));
    int64_t s11[4] = {1, 2, 1, 1}, s12[4] = {1, 2, 1, 2};
    strix_tensor a = tensor_from_host(be, 4, s11, xh), c = tensor_from_host(be, 4, s12, xh);
    assert_int_equal(strix_module_forward(&bn2->base, &a, &y), STRIX_ERR_SHAPE);
    OK(strix_module_forward(&bn2->base, &c, &y));
    assert_true(get_one(be, bn2->num_batches_tracked->data, 0) == 1.0f);
    strix_tensor_free(&a);
    strix_tensor_free(&c);
    strix_module_free(&bn2->base);
    strix_params_free(&ps2);
    release(&b);
}

/* Folded eval output == unfolded eval output: the CNN (both BatchNorm2d into their Conv2d) and
 * a Linear + BatchNorm1d. */
static void test_bn_fold(void **state) {
    strix_backend *be = *state;
    cnn n;
    tl_golden gf;
    cnn_torch(be, &n, &gf);
    const tl_array *x = need(&gf, "x");
    strix_tensor xt = tensor_from_host(be, x->ndim, x->shape, x->data);
    strix_module_set_training(&n.seq->base, false);
    const strix_tensor *y;
    OK(strix_module_forward(&n.seq->base, &xt, &y));
    float *want = from_backend(be, y->data, 15);
    // errors first: wrong partner, channel mismatch
    assert_int_equal(strix_batchnorm_fold(n.b1, strix_sequential_at(n.seq, 2)), STRIX_ERR_ARG);
    assert_int_equal(strix_batchnorm_fold(n.b1, &n.c4->base), STRIX_ERR_ARG);
    OK(strix_batchnorm_fold(n.b1, &n.c0->base));
    OK(strix_batchnorm_fold(n.b5, &n.c4->base));
    assert_int_equal(strix_batchnorm_fold(n.b5, &n.c4->base), STRIX_ERR_ARG); // already folded
    OK(strix_module_forward(&n.seq->base, &xt, &y));
    float *got = from_backend(be, y->data, 15);
    assert_true(tl_check_close("folded CNN", got, want, 15, 1e-5, 1e-5));
    free(got);
    // a folded BatchNorm is the identity in training mode too, and passes gradients through
    strix_module_set_training(&n.seq->base, true);
    OK(strix_module_forward(&n.seq->base, &xt, &y));
    got = from_backend(be, y->data, 15);
    assert_true(tl_check_close("folded CNN, training mode", got, want, 15, 1e-5, 1e-5));
    strix_tensor dyt = tensor_from_host(be, y->ndim, y->shape, want);
    const strix_tensor *dx;
    OK(strix_module_backward(&n.seq->base, &dyt, &dx));
    free(got);
    free(want);
    strix_tensor_free(&dyt);
    strix_tensor_free(&xt);
    tl_golden_free(&gf);
    cnn_free(&n);

    // Linear(6, 4) + BatchNorm1d(4) with random statistics
    built b;
    begin(&b, be);
    strix_sequential *s;
    OK(strix_sequential_new(be, "", &s));
    strix_linear *l;
    OK(strix_linear_new_default(&b.ps, next_name(s), 6, 4, true, &l));
    add(s, &l->base);
    strix_batchnorm *bn;
    OK(strix_batchnorm1d_new(&b.ps, next_name(s), 4, 1e-5f, 0.1f, &bn));
    add(s, &bn->base);
    b.m = &s->base;
    finish(&b, 21);
    float rv[4] = {0.5f, 1.7f, 0.9f, 2.5f};
    to_backend(be, bn->running_var->data, rv, 4);
    strix_module_set_training(b.m, false);
    int64_t shape[2] = {5, 6};
    float xh[30];
    strix_rng rng;
    strix_rng_seed(&rng, 22);
    fill_normal(&rng, xh, 30, 0.0, 1.0);
    strix_tensor x2 = tensor_from_host(be, 2, shape, xh);
    OK(strix_module_forward(b.m, &x2, &y));
    want = from_backend(be, y->data, 20);
    OK(strix_batchnorm_fold(bn, &l->base));
    OK(strix_module_forward(b.m, &x2, &y));
    got = from_backend(be, y->data, 20);
    assert_true(tl_check_close("folded Linear", got, want, 20, 1e-5, 1e-5));
    free(got);
    free(want);
    strix_tensor_free(&x2);
    release(&b);

    // a Conv2d without bias cannot take the shift
    begin(&b, be);
    strix_conv2d *c = conv(&b.ps, "c", 2, 3, 1, 1, 0, 0, 0, 0, false);
    OK(strix_batchnorm2d_new(&b.ps, "bn", 3, 1e-5f, 0.1f, &bn));
    OK(strix_params_alloc(&b.ps));
    assert_int_equal(strix_batchnorm_fold(bn, &c->base), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "no bias"));
    strix_module_free(&c->base);
    strix_module_free(&bn->base);
    strix_params_free(&b.ps);
}

static void test_default_init(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_linear *l;
    OK(strix_linear_new_default(&ps, "fc", 256, 64, true, &l));
    strix_conv2d *c = conv(&ps, "conv", 8, 32, 3, 3, 0, 0, 0, 0, true);
    OK(strix_params_alloc(&ps));
    OK(strix_params_init(&ps, 123));
    struct {
        strix_param *p;
        double bound;
    } checks[] = {{l->weight, 1.0 / 16.0}, {l->bias, 1.0 / 16.0},
                  {c->weight, 1.0 / sqrt(72.0)}, {c->bias, 1.0 / sqrt(72.0)}};
    for (size_t k = 0; k < 4; k++) {
        strix_param *p = checks[k].p;
        float *h = from_backend(be, p->data, p->numel);
        double sum = 0.0, sq = 0.0, mx = 0.0;
        for (size_t i = 0; i < p->numel; i++) {
            sum += h[i];
            sq += (double)h[i] * h[i];
            mx = fmax(mx, fabs(h[i]));
        }
        double b = checks[k].bound, mean = sum / p->numel, var = sq / p->numel;
        assert_true(mx <= b && mx > 0.8 * b);
        // U(-b, b): mean 0 (standard error b/sqrt(3n)), mean square b²/3 (relative standard
        // error sqrt(4/5)/sqrt(n)); both within 4.5 standard errors
        assert_true(fabs(mean) < 4.5 * b / sqrt(3.0 * p->numel));
        if (fabs(var / (b * b / 3.0) - 1.0) >= 4.5 * sqrt(0.8 / p->numel))
            fail_msg("%s: variance %g, want %g", p->name, var, b * b / 3.0);
        free(h);
    }
    assert_true(l->weight->decay && !l->bias->decay && c->weight->decay && !c->bias->decay);
    strix_module_free(&l->base);
    strix_module_free(&c->base);
    strix_params_free(&ps);
}

// ---- state dicts -------------------------------------------------------------------------------

static void test_state_dict_roundtrip(void **state) {
    strix_backend *be = *state;
    cnn a, b;
    cnn_build(be, &a);
    cnn_build(be, &b);
    OK(strix_params_init(&a.ps, 5));
    float five = 5.0f;
    to_backend(be, a.b5->num_batches_tracked->data, &five, 1);
    const char *path = in_tmp("cnn.st");
    OK(strix_state_dict_save(&a.ps, path));
    strix_safetensors *st;
    OK(strix_safetensors_read(path, &st));
    assert_int_equal(strix_safetensors_count(st), a.ps.count);
    const strix_st_tensor *t = strix_safetensors_find(st, "5.num_batches_tracked");
    assert_non_null(t);
    assert_int_equal(t->ndim, 0);
    assert_int_equal(strix_safetensors_dtype(st, t), STRIX_ST_I64);
    assert_true(t->data[0] == 5.0f);
    t = strix_safetensors_find(st, "4.weight");
    assert_int_equal(strix_safetensors_dtype(st, t), STRIX_ST_F32);
    assert_int_equal(t->ndim, 4);
    assert_int_equal(t->shape[3], 2);
    assert_string_equal(strix_safetensors_meta(st, "format"), "pt");
    strix_safetensors_free(st);
    OK(strix_state_dict_load(&b.ps, path, true));
    float *ha = snapshot(&a.ps), *hb = snapshot(&b.ps);
    assert_true(tl_check_bits("round trip", hb, ha, a.ps.total));
    free(ha);
    free(hb);
    cnn_free(&a);
    cnn_free(&b);
    unlink(path);

    // tied weights are stored once; on load the tied name is optional
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_linear *l1, *l2;
    OK(strix_linear_new(&ps, "enc", 3, 4, false, 0.5f, NULL, &l1));
    OK(strix_linear_new(&ps, "dec", 3, 4, true, 0.5f, l1->weight, &l2));
    OK(strix_params_alloc(&ps));
    OK(strix_params_init(&ps, 8));
    path = in_tmp("tied.st");
    OK(strix_state_dict_save(&ps, path));
    OK(strix_safetensors_read(path, &st));
    assert_int_equal(strix_safetensors_count(st), 2); // enc.weight, dec.bias
    assert_null(strix_safetensors_find(st, "dec.weight"));
    strix_safetensors_free(st);
    float *before = snapshot(&ps);
    OK(strix_fill(be, ps.data, 0.0f, ps.total));
    OK(strix_state_dict_load(&ps, path, true));
    float *after = snapshot(&ps);
    assert_true(tl_check_bits("tied round trip", after, before, ps.total));
    // a torch-style file that lists both names loads too (strict)
    float w[12] = {0}, bias[4] = {1, 2, 3, 4};
    strix_st_tensor both[3] = {{.name = "enc.weight", .ndim = 2, .shape = {4, 3}, .data = w},
                               {.name = "dec.weight", .ndim = 2, .shape = {4, 3}, .data = w},
                               {.name = "dec.bias", .ndim = 1, .shape = {4}, .data = bias}};
    OK(strix_safetensors_write(path, both, 3, NULL, 0));
    OK(strix_state_dict_load(&ps, path, true));
    assert_true(get_one(be, l2->bias->data, 3) == 4.0f && get_one(be, l2->weight->data, 5) == 0);
    free(before);
    free(after);
    unlink(path);
    strix_module_free(&l1->base);
    strix_module_free(&l2->base);
    strix_params_free(&ps);
}

/* Writes the parameters of ps to `file` as a state dict with one change (see below). */
enum variant { V_MISSING, V_SHAPE, V_UNEXPECTED, V_DTYPE_WEIGHT, V_DTYPE_COUNTER };

static const char *write_variant(const strix_params *ps, enum variant v, const char *file) {
    float *host = snapshot(ps);
    strix_st_tensor ts[32];
    strix_st_dtype dts[32];
    int n = 0;
    for (int i = 0; i < ps->count; i++) {
        const strix_param *p = ps->items[i];
        if (v == V_MISSING && strcmp(p->name, "5.running_var") == 0) continue;
        strix_st_tensor *t = &ts[n];
        t->name = p->name;
        t->data = host + p->offset;
        t->ndim = p->ndim;
        for (int d = 0; d < p->ndim; d++) t->shape[d] = p->shape[d];
        bool counter = strstr(p->name, "num_batches_tracked") != NULL;
        dts[n] = counter ? STRIX_ST_I64 : STRIX_ST_F32;
        if (counter) t->ndim = 0;
        if (v == V_SHAPE && strcmp(p->name, "4.weight") == 0) { // (6,4,3,2) -> (6,4,2,3)
            t->shape[2] = 2;
            t->shape[3] = 3;
        }
        if (v == V_DTYPE_COUNTER && counter) dts[n] = STRIX_ST_F32;
        n++;
    }
    static const float whole[6] = {1, 2, 3, 4, 5, 6};
    if (v == V_UNEXPECTED) {
        dts[n] = STRIX_ST_F32;
        ts[n++] = (strix_st_tensor){.name = "10.weight", .ndim = 1, .shape = {3}, .data = whole};
    }
    if (v == V_DTYPE_WEIGHT) {
        for (int i = 0; i < n; i++)
            if (strcmp(ts[i].name, "9.bias") == 0) {
                ts[i].data = whole;
                dts[i] = STRIX_ST_I64;
            }
    }
    const char *path = in_tmp(file);
    if (strix_safetensors_write_typed(path, ts, dts, n, NULL, 0) != STRIX_OK)
        fail_msg("writing %s: %s", file, strix_last_error());
    free(host);
    return path;
}

static void test_state_dict_bad_files(void **state) {
    strix_backend *be = *state;
    cnn src, dst;
    cnn_build(be, &src);
    cnn_build(be, &dst);
    OK(strix_params_init(&src.ps, 6));
    OK(strix_params_init(&dst.ps, 7));
    float *orig = snapshot(&dst.ps);
    struct {
        enum variant v;
        const char *file;
        bool strict;
        strix_status want;
        const char *phrase;
    } cases[] = {
        {V_MISSING, "missing.st", true, STRIX_ERR_FORMAT, "missing key '5.running_var'"},
        {V_SHAPE, "shape.st", true, STRIX_ERR_SHAPE, "'4.weight' has shape (6, 4, 2, 3)"},
        {V_SHAPE, "shape.st", false, STRIX_ERR_SHAPE, "model has (6, 4, 3, 2)"},
        {V_UNEXPECTED, "extra.st", true, STRIX_ERR_FORMAT, "unexpected key '10.weight'"},
        {V_DTYPE_WEIGHT, "dtype_w.st", true, STRIX_ERR_FORMAT, "'9.bias' has dtype I64"},
        {V_DTYPE_COUNTER, "dtype_c.st", false, STRIX_ERR_FORMAT,
         "'1.num_batches_tracked' has dtype F32"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *path = write_variant(&src.ps, cases[k].v, cases[k].file);
        strix_status s = strix_state_dict_load(&dst.ps, path, cases[k].strict);
        if (s != cases[k].want || !strstr(strix_last_error(), cases[k].phrase))
            fail_msg("%s: got %s '%s', expected %s with '%s'", cases[k].file,
                     strix_status_str(s), strix_last_error(), strix_status_str(cases[k].want),
                     cases[k].phrase);
        float *now = snapshot(&dst.ps);
        assert_true(tl_check_bits(cases[k].file, now, orig, dst.ps.total));
        free(now);
    }
    // a truncated file: the reader's format error, nothing changed
    const char *full = in_tmp("missing.st");
    FILE *f = fopen(full, "rb");
    assert_non_null(f);
    unsigned char buf[4096];
    size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *cut = in_tmp("cut.st");
    f = fopen(cut, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, got - 10, f), got - 10);
    fclose(f);
    assert_int_equal(strix_state_dict_load(&dst.ps, cut, true), STRIX_ERR_FORMAT);
    assert_int_equal(strix_state_dict_load(&dst.ps, in_tmp("absent.st"), true), STRIX_ERR_IO);
    float *now = snapshot(&dst.ps);
    assert_true(tl_check_bits("after bad files", now, orig, dst.ps.total));
    free(now);

    // not strict: an unexpected key is ignored, a missing one keeps its value
    OK(strix_state_dict_load(&dst.ps, in_tmp("extra.st"), false));
    float *want = snapshot(&src.ps);
    now = snapshot(&dst.ps);
    assert_true(tl_check_bits("non-strict, extra key", now, want, dst.ps.total));
    free(now);
    OK(strix_params_init(&dst.ps, 7));
    OK(strix_state_dict_load(&dst.ps, in_tmp("missing.st"), false));
    now = snapshot(&dst.ps);
    strix_param *rv = strix_params_find(&dst.ps, "5.running_var");
    for (size_t i = 0; i < dst.ps.total; i++) {
        bool kept = i >= rv->offset && i < rv->offset + rv->numel;
        assert_true(now[i] == (kept ? orig[i] : want[i]));
    }
    free(now);
    free(want);
    free(orig);
    const char *files[] = {"missing.st", "shape.st", "extra.st", "dtype_w.st", "dtype_c.st",
                           "cut.st"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) unlink(in_tmp(files[k]));
    cnn_free(&src);
    cnn_free(&dst);
}

// ---- shape and configuration errors ------------------------------------------------------------

static void test_errors(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_conv2d_config bad = {.in_channels = 3, .out_channels = 0, .kernel_h = 3, .kernel_w = 3};
    strix_conv2d *c;
    assert_int_equal(strix_conv2d_new(&ps, "c", &bad, &c), STRIX_ERR_ARG);
    assert_null(c);
    strix_pool2d_config pc = {.kernel_h = 2, .kernel_w = 2, .pad_h = 2};
    strix_maxpool2d *mp;
    assert_int_equal(strix_maxpool2d_new(be, &pc, &mp), STRIX_ERR_ARG);
    strix_groupnorm *gn;
    assert_int_equal(strix_groupnorm_new(&ps, "g", 4, 6, 1e-5f, &gn), STRIX_ERR_ARG);
    strix_avgpool2d *ap;
    assert_int_equal(strix_adaptive_avgpool2d_new(be, 0, 2, &ap), STRIX_ERR_ARG);
    strix_batchnorm *bn;
    assert_int_equal(strix_batchnorm2d_new(&ps, "b", 3, 1e-5f, 1.5f, &bn), STRIX_ERR_ARG);
    assert_int_equal(ps.count, 0);

    c = conv(&ps, "c", 3, 4, 5, 5, 1, 1, 0, 0, true);
    OK(strix_batchnorm2d_new(&ps, "b", 4, 1e-5f, 0.1f, &bn));
    OK(strix_params_alloc(&ps));
    int64_t s_small[4] = {1, 3, 4, 4}, s_chan[4] = {1, 2, 8, 8}, s_3d[3] = {3, 8, 8};
    strix_tensor x;
    const strix_tensor *y;
    OK(strix_tensor_new(be, 4, s_small, &x));
    assert_int_equal(strix_module_forward(&c->base, &x, &y), STRIX_ERR_SHAPE); // 5x5 on 4x4
    strix_tensor_free(&x);
    OK(strix_tensor_new(be, 4, s_chan, &x));
    assert_int_equal(strix_module_forward(&c->base, &x, &y), STRIX_ERR_SHAPE); // 2 channels
    assert_int_equal(strix_module_forward(&bn->base, &x, &y), STRIX_ERR_SHAPE);
    strix_tensor_free(&x);
    OK(strix_tensor_new(be, 3, s_3d, &x));
    assert_int_equal(strix_module_forward(&c->base, &x, &y), STRIX_ERR_SHAPE); // not 4-d
    strix_tensor_free(&x);

    // adaptive pooling of a size that is not a multiple: unsupported
    OK(strix_adaptive_avgpool2d_new(be, 2, 2, &ap));
    int64_t s_odd[4] = {1, 1, 5, 4};
    OK(strix_tensor_new(be, 4, s_odd, &x));
    assert_int_equal(strix_module_forward(&ap->base, &x, &y), STRIX_ERR_UNSUPPORTED);
    strix_flatten *fl;
    OK(strix_flatten_new(be, 2, 5, &fl));
    assert_int_equal(strix_module_forward(&fl->base, &x, &y), STRIX_ERR_SHAPE);
    strix_module_free(&fl->base);
    OK(strix_flatten_new(be, 0, -2, &fl)); // (1,1,5,4) -> (5, 4)
    OK(strix_module_forward(&fl->base, &x, &y));
    assert_int_equal(y->ndim, 2);
    assert_true(y->shape[0] == 5 && y->shape[1] == 4 && y->data == x.data);
    strix_module_free(&fl->base);
    // Residual around a shape-changing module
    strix_residual *r;
    OK(strix_residual_new(&ap->base, &r));
    int64_t s_even[4] = {1, 1, 4, 4};
    strix_tensor x4;
    OK(strix_tensor_new(be, 4, s_even, &x4));
    assert_int_equal(strix_module_forward(&r->base, &x4, &y), STRIX_ERR_SHAPE);
    strix_tensor_free(&x4);
    strix_module_free(&r->base);
    // an empty Sequential is the identity
    strix_sequential *s;
    OK(strix_sequential_new(be, "", &s));
    char name[STRIX_PARAM_NAME_MAX];
    OK(strix_sequential_child_name(s, name));
    assert_string_equal(name, "0");
    OK(strix_module_forward(&s->base, &x, &y));
    assert_ptr_equal(y->data, x.data);
    strix_module_free(&s->base);
    strix_tensor_free(&x);
    strix_module_free(&c->base);
    strix_module_free(&bn->base);
    strix_params_free(&ps);
}

// ---- finite differences ------------------------------------------------------------------------

static void test_fd_conv_pool(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    b.m = &conv(&b.ps, "c", 3, 4, 3, 2, 2, 1, 1, 1, true)->base;
    finish(&b, 1);
    int64_t s1[4] = {2, 3, 6, 5};
    fd_module(be, &b.ps, b.m, 4, s1, 2, false, 30);
    release(&b);

    begin(&b, be);
    b.m = &conv(&b.ps, "c", 2, 3, 1, 3, 1, 2, 0, 1, false)->base;
    finish(&b, 3);
    int64_t s2[4] = {3, 2, 4, 5};
    fd_module(be, &b.ps, b.m, 4, s2, 4, false, 30);
    release(&b);

    struct {
        strix_module *m;
        bool kinks;
    } pools[3] = {{pool(be, true, 3, 2, 2, 1, 1, 1), true},
                  {pool(be, false, 3, 3, 2, 2, 1, 1), false}};
    strix_avgpool2d *ap;
    OK(strix_adaptive_avgpool2d_new(be, 2, 1, &ap));
    pools[2].m = &ap->base;
    int64_t s3[4] = {2, 2, 6, 5};
    for (int k = 0; k < 3; k++) {
        begin(&b, be);
        b.m = pools[k].m;
        finish(&b, 5);
        fd_module(be, &b.ps, b.m, 4, s3, 6 + (uint64_t)k, pools[k].kinks, 40);
        release(&b);
    }
}

static void test_fd_norms(void **state) {
    strix_backend *be = *state;
    built b;
    for (int mode = 0; mode < 3; mode++) { // BN2d train, BN2d eval, BN1d train
        begin(&b, be);
        strix_batchnorm *bn;
        if (mode < 2) OK(strix_batchnorm2d_new(&b.ps, "bn", 3, 1e-5f, 0.1f, &bn));
        else OK(strix_batchnorm1d_new(&b.ps, "bn", 4, 1e-5f, 0.1f, &bn));
        b.m = &bn->base;
        finish(&b, 10 + (uint64_t)mode);
        float rv[3] = {0.7f, 1.3f, 2.0f};
        to_backend(be, bn->running_var->data, rv, 3);
        strix_module_set_training(b.m, mode != 1);
        int64_t s4[4] = {3, 3, 2, 2}, s2[2] = {6, 4};
        if (mode < 2) fd_module(be, &b.ps, b.m, 4, s4, 11, false, 30);
        else fd_module(be, &b.ps, b.m, 2, s2, 12, false, 24);
        release(&b);
    }
    begin(&b, be);
    strix_groupnorm *gn;
    OK(strix_groupnorm_new(&b.ps, "gn", 2, 6, 1e-5f, &gn));
    b.m = &gn->base;
    finish(&b, 13);
    int64_t sg[3] = {2, 6, 5};
    fd_module(be, &b.ps, b.m, 3, sg, 14, false, 30);
    release(&b);
    for (int affine = 0; affine < 2; affine++) {
        begin(&b, be);
        strix_rmsnorm *rn;
        OK(strix_rmsnorm_new(&b.ps, "rms", 7, 1e-5f, affine, &rn));
        b.m = &rn->base;
        finish(&b, 15);
        int64_t sr[2] = {5, 7};
        fd_module(be, &b.ps, b.m, 2, sr, 16, false, 35);
        release(&b);
    }
}

static void test_fd_activations_containers(void **state) {
    strix_backend *be = *state;
    built b;
    strix_act ops[] = {STRIX_ACT_RELU, STRIX_ACT_TANH, STRIX_ACT_SIGMOID, STRIX_ACT_SILU,
                       STRIX_ACT_GELU, STRIX_ACT_GELU_TANH};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        begin(&b, be);
        b.m = act(be, ops[k]);
        finish(&b, 1);
        int64_t s[2] = {4, 5};
        fd_module(be, &b.ps, b.m, 2, s, 20 + k, ops[k] == STRIX_ACT_RELU, 20);
        release(&b);
    }
    // a small CNN: Conv2d, GroupNorm, SiLU, AvgPool2d, Flatten, Linear
    begin(&b, be);
    strix_sequential *s;
    OK(strix_sequential_new(be, "net", &s));
    add(s, &conv(&b.ps, next_name(s), 2, 4, 3, 3, 1, 1, 1, 1, true)->base);
    strix_groupnorm *gn;
    OK(strix_groupnorm_new(&b.ps, next_name(s), 2, 4, 1e-5f, &gn));
    add(s, &gn->base);
    add(s, act(be, STRIX_ACT_SILU));
    add(s, pool(be, false, 2, 2, 0, 0, 0, 0));
    strix_flatten *fl;
    OK(strix_flatten_new(be, 1, -1, &fl));
    add(s, &fl->base);
    strix_linear *l;
    OK(strix_linear_new_default(&b.ps, next_name(s), 16, 3, true, &l));
    add(s, &l->base);
    b.m = &s->base;
    finish(&b, 30);
    assert_non_null(strix_params_find(&b.ps, "net.5.weight"));
    int64_t sc[4] = {2, 2, 4, 4};
    fd_module(be, &b.ps, b.m, 4, sc, 31, false, 12);
    release(&b);
    // Residual(Sequential(Linear, Tanh, Linear))
    begin(&b, be);
    OK(strix_sequential_new(be, "res", &s));
    OK(strix_linear_new_default(&b.ps, next_name(s), 6, 8, true, &l));
    add(s, &l->base);
    add(s, act(be, STRIX_ACT_TANH));
    OK(strix_linear_new_default(&b.ps, next_name(s), 8, 6, false, &l));
    add(s, &l->base);
    strix_residual *r;
    OK(strix_residual_new(&s->base, &r));
    b.m = &r->base;
    finish(&b, 32);
    int64_t sr[2] = {3, 6};
    fd_module(be, &b.ps, b.m, 2, sr, 33, false, 20);
    release(&b);
}

// ---- main --------------------------------------------------------------------------------------

int main(void) {
    strcpy(tmp_dir, "/tmp/strix_test_layers_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_golden_conv),
        BACKEND_TEST(test_golden_pools),
        BACKEND_TEST(test_golden_batchnorm),
        BACKEND_TEST(test_golden_group_rms_norm),
        BACKEND_TEST(test_golden_activations),
        BACKEND_TEST(test_golden_residual),
        BACKEND_TEST(test_golden_cnn),
        BACKEND_TEST(test_thread_count_independence),
        BACKEND_TEST(test_dropout),
        BACKEND_TEST(test_train_eval_modes),
        BACKEND_TEST(test_bn_fold),
        BACKEND_TEST(test_default_init),
        BACKEND_TEST(test_state_dict_roundtrip),
        BACKEND_TEST(test_state_dict_bad_files),
        BACKEND_TEST(test_errors),
        BACKEND_TEST(test_fd_conv_pool),
        BACKEND_TEST(test_fd_norms),
        BACKEND_TEST(test_fd_activations_containers),
    };
    int failed = run_on_each_backend("layers", tests, sizeof tests / sizeof tests[0]);
    rmdir(tmp_dir);
    return failed ? 1 : 0;
}
