/*
 * test_recurrent.c - the recurrent modules of strix/recurrent.h (torch.nn.RNN, LSTM, GRU) on
 * every CPU backend ("cpu", and "cpu-blas" when built):
 *  1. PyTorch goldens (tools/ref/recurrent_modules_ref.py, tests/golden/recurrent/): 1 and 2
 *     layers, bidirectional, with and without bias, with and without h0/c0, batch-first and
 *     time-major: y, h_n, c_n, dx, dh0, dc0 and every parameter gradient within 1e-5 abs +
 *     1e-4 rel, the torch parameters loaded by name;
 *  2. torch's state dict (a safetensors file written from torch) loads with strict names and
 *     gives torch's outputs;
 *  3. the general form (strix_module_io): h0/c0 as inputs, and a state that carries h, c from
 *     one call to the next (two calls of 2 and 3 steps = one call of 5);
 *  4. finite differences of the input and every parameter on tiny 2-layer bidirectional models;
 *  5. dropout between layers: eval mode is torch's no-dropout output, training masks come from
 *     (seed, offset) and differ from eval, finite differences through the masks;
 *  6. torch's parameter names, order, shapes and init bounds; errors for bad sizes and shapes.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nn_testutil.h"
#include "strix/recurrent.h"
#include "strix/state_dict.h"

#define GOLD_ATOL 1e-5
#define GOLD_RTOL 1e-4

#define OK(expr) assert_int_equal((expr), STRIX_OK)

static const tl_array *need(const tl_golden *gf, const char *name) {
    const tl_array *e = tl_golden_get(gf, name);
    if (!e) fail_msg("golden array %s missing", name);
    return e;
}

/* Whether the golden holds array `name` (tl_golden_get reports missing ones). */
static const tl_array *has(const tl_golden *gf, const char *name) {
    for (int i = 0; i < gf->count; i++)
        if (strcmp(gf->arrays[i].name, name) == 0) return &gf->arrays[i];
    return NULL;
}

static strix_tensor from_golden(strix_backend *be, const tl_array *a) {
    return tensor_from_host(be, a->ndim, a->shape, a->data);
}

static int same_as(strix_backend *be, const tl_golden *gf, const char *name,
                   const strix_tensor *t) {
    const tl_array *a = need(gf, name);
    assert_non_null(t);
    assert_int_equal(a->ndim, t->ndim);
    for (int d = 0; d < a->ndim; d++) assert_int_equal(a->shape[d], t->shape[d]);
    return check_backend(be, name, t->data, a->data, a->count, GOLD_ATOL, GOLD_RTOL) ? 0 : 1;
}

typedef struct gcase {
    const char *file;
    strix_rnn_mode mode;
    int layers;
    bool bidirectional, bias, batch_first;
} gcase;

static const gcase cases[] = {
    {"lstm_1l", STRIX_RNN_LSTM, 1, false, true, true},
    {"lstm_2l_bi", STRIX_RNN_LSTM, 2, true, true, true},
    {"lstm_2l_nobias", STRIX_RNN_LSTM, 2, false, false, true},
    {"lstm_bi_time_major", STRIX_RNN_LSTM, 1, true, true, false},
    {"gru_1l", STRIX_RNN_GRU, 1, false, true, true},
    {"gru_2l_bi", STRIX_RNN_GRU, 2, true, true, true},
    {"gru_2l_nobias", STRIX_RNN_GRU, 2, false, false, true},
    {"gru_bi_time_major", STRIX_RNN_GRU, 1, true, true, false},
    {"rnn_1l", STRIX_RNN_TANH, 1, false, true, true},
    {"rnn_2l_bi", STRIX_RNN_TANH, 2, true, true, true},
    {"rnn_1l_nobias", STRIX_RNN_TANH, 1, false, false, true},
};

enum { GB = 3, GT = 5, GI = 7, GH = 6 }; /* the goldens' sizes */

static void load_golden(const char *name, tl_golden *gf) {
    char path[256];
    snprintf(path, sizeof path, "tests/golden/recurrent/%s.bin", name);
    assert_true(tl_golden_load(path, gf));
}

static strix_rnn *build(built *b, strix_backend *be, const gcase *c) {
    begin(b, be);
    strix_rnn_config cfg = strix_rnn_config_default(c->mode, GI, GH);
    cfg.num_layers = c->layers;
    cfg.bidirectional = c->bidirectional;
    cfg.bias = c->bias;
    cfg.batch_first = c->batch_first;
    strix_rnn *m;
    OK(strix_rnn_new(&b->ps, "", &cfg, &m));
    b->m = &m->base;
    OK(strix_params_alloc(&b->ps));
    return m;
}

/* Uploads every "param.<name>" of the golden; every parameter of the module must be there. */
static void load_params(const tl_golden *gf, strix_params *ps) {
    int loaded = 0;
    for (int i = 0; i < gf->count; i++) {
        const tl_array *a = &gf->arrays[i];
        if (strncmp(a->name, "param.", 6) != 0) continue;
        strix_param *p = strix_params_find(ps, a->name + 6);
        if (!p) fail_msg("golden parameter %s not in the module", a->name + 6);
        assert_int_equal(a->count, p->numel);
        for (int d = 0; d < a->ndim; d++) assert_int_equal(a->shape[d], p->shape[d]);
        to_backend(ps->be, p->data, a->data, p->numel);
        loaded++;
    }
    assert_int_equal(loaded, ps->count);
}

/* Forward and backward of one golden case through the typed calls. */
static void golden_case(strix_backend *be, const gcase *c) {
    tl_golden gf;
    load_golden(c->file, &gf);
    built b;
    strix_rnn *m = build(&b, be, c);
    load_params(&gf, &b.ps);
    bool lstm = c->mode == STRIX_RNN_LSTM;
    const tl_array *h0a = has(&gf, "h0"), *c0a = has(&gf, "c0");
    strix_tensor x = from_golden(be, need(&gf, "x")), h0 = {0}, c0 = {0};
    if (h0a) h0 = from_golden(be, h0a);
    if (c0a) c0 = from_golden(be, c0a);
    const strix_tensor *y, *hn, *cn;
    OK(strix_rnn_forward(m, &x, h0a ? &h0 : NULL, c0a ? &c0 : NULL, &y, &hn, &cn));
    int bad = same_as(be, &gf, "y", y) + same_as(be, &gf, "h_n", hn);
    if (lstm) bad += same_as(be, &gf, "c_n", cn);
    else assert_null(cn);
    strix_tensor dy = from_golden(be, need(&gf, "dy")), dhn = from_golden(be, need(&gf, "dh_n"));
    strix_tensor dcn = {0};
    if (lstm) dcn = from_golden(be, need(&gf, "dc_n"));
    OK(strix_params_zero_grad(&b.ps));
    const strix_tensor *dx, *dh0, *dc0;
    OK(strix_rnn_backward(m, &dy, &dhn, lstm ? &dcn : NULL, &dx, &dh0, &dc0));
    bad += same_as(be, &gf, "dx", dx);
    if (h0a) bad += same_as(be, &gf, "dh0", dh0);
    if (c0a) bad += same_as(be, &gf, "dc0", dc0);
    for (int i = 0; i < b.ps.count; i++) {
        strix_param *p = b.ps.items[i];
        char key[160];
        snprintf(key, sizeof key, "grad.%s", p->name);
        const tl_array *g = need(&gf, key);
        assert_int_equal(g->count, p->numel);
        bad += check_backend(be, key, p->grad, g->data, p->numel, GOLD_ATOL, GOLD_RTOL) ? 0 : 1;
    }
    if (bad) fail_msg("%s: %d arrays differ from torch", c->file, bad);
    strix_tensor *ts[] = {&x, &h0, &c0, &dy, &dhn, &dcn};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    release(&b);
    tl_golden_free(&gf);
}

static void test_golden_lstm(void **state) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].mode == STRIX_RNN_LSTM) golden_case(*state, &cases[i]);
}

static void test_golden_gru(void **state) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].mode == STRIX_RNN_GRU) golden_case(*state, &cases[i]);
}

static void test_golden_rnn(void **state) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].mode == STRIX_RNN_TANH) golden_case(*state, &cases[i]);
}

/* torch's state dict file loads with strict names, unchanged, and gives torch's outputs. */
static void test_state_dict_from_torch(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    load_golden("lstm_2l_bi", &gf);
    built b;
    strix_rnn *m = build(&b, be, &cases[1]);
    OK(strix_state_dict_load(&b.ps, "tests/golden/recurrent/lstm_2l_bi_torch.st", true));
    strix_tensor x = from_golden(be, need(&gf, "x")), h0 = from_golden(be, need(&gf, "h0"));
    strix_tensor c0 = from_golden(be, need(&gf, "c0"));
    const strix_tensor *y, *hn, *cn;
    OK(strix_rnn_forward(m, &x, &h0, &c0, &y, &hn, &cn));
    assert_int_equal(same_as(be, &gf, "y", y) + same_as(be, &gf, "h_n", hn) +
                     same_as(be, &gf, "c_n", cn), 0);
    strix_tensor_free(&x);
    strix_tensor_free(&h0);
    strix_tensor_free(&c0);
    release(&b);
    tl_golden_free(&gf);
}

/* The general form: h0/c0 as io inputs give the typed call's results and their gradients as
 * out[1], out[2]; a state carries h_n, c_n, so two calls of 2 and 3 steps equal one of 5. */
static void test_module_io_and_state(void **state) {
    strix_backend *be = *state;
    for (int k = 0; k < 3; k++) {
        const gcase *c = k == 0 ? &cases[0] : k == 1 ? &cases[4] : &cases[8];
        bool lstm = c->mode == STRIX_RNN_LSTM;
        tl_golden gf;
        load_golden(c->file, &gf);
        built b;
        build(&b, be, c);
        load_params(&gf, &b.ps);
        strix_tensor x = from_golden(be, need(&gf, "x")), h0 = from_golden(be, need(&gf, "h0"));
        strix_tensor c0 = {0};
        if (lstm) c0 = from_golden(be, need(&gf, "c0"));
        strix_module_io io = strix_module_io_of(&x);
        io.n_in = lstm ? 3 : 2;
        io.in[1] = &h0;
        io.in[2] = lstm ? &c0 : NULL;
        OK(strix_module_forward_ex(b.m, &io));
        assert_int_equal(io.n_out, lstm ? 3 : 2);
        int bad = same_as(be, &gf, "y", io.out[0]) + same_as(be, &gf, "h_n", io.out[1]);
        if (lstm) bad += same_as(be, &gf, "c_n", io.out[2]);
        strix_tensor dy = from_golden(be, need(&gf, "dy"));
        strix_tensor dhn = from_golden(be, need(&gf, "dh_n")), dcn = {0};
        if (lstm) dcn = from_golden(be, need(&gf, "dc_n"));
        strix_module_io bio = strix_module_io_of(&dy);
        bio.n_in = lstm ? 3 : 2;
        bio.in[1] = &dhn;
        bio.in[2] = lstm ? &dcn : NULL;
        OK(strix_params_zero_grad(&b.ps));
        OK(strix_module_backward_ex(b.m, &bio));
        assert_int_equal(bio.n_out, lstm ? 3 : 2);
        bad += same_as(be, &gf, "dx", bio.out[0]) + same_as(be, &gf, "dh0", bio.out[1]);
        if (lstm) bad += same_as(be, &gf, "dc0", bio.out[2]);
        assert_int_equal(bad, 0);

        // a state from zeros: one call of T = 5 vs calls of 2 and 3 steps (x is (B,T,I))
        strix_module_state *st1, *st2;
        OK(strix_module_state_new(b.m, &st1));
        OK(strix_module_state_new(b.m, &st2));
        strix_module_io one = strix_module_io_of(&x);
        one.state = st1;
        OK(strix_module_forward_ex(b.m, &one));
        float *y_full = from_backend(be, one.out[0]->data, GB * GT * GH);
        float *h_full = from_backend(be, one.out[1]->data, GB * GH);
        float *xh = from_backend(be, x.data, GB * GT * GI);
        float *y_split = malloc(GB * GT * GH * sizeof(float));
        for (int part = 0; part < 2; part++) {
            int t0 = part == 0 ? 0 : 2, len = part == 0 ? 2 : 3;
            float *xs = malloc((size_t)GB * len * GI * sizeof(float));
            for (int bb = 0; bb < GB; bb++)
                memcpy(xs + (size_t)bb * len * GI, xh + ((size_t)bb * GT + t0) * GI,
                       (size_t)len * GI * sizeof(float));
            int64_t shp[3] = {GB, len, GI};
            strix_tensor xp = tensor_from_host(be, 3, shp, xs);
            strix_module_io io2 = strix_module_io_of(&xp);
            io2.state = st2;
            OK(strix_module_forward_ex(b.m, &io2));
            float *yp = from_backend(be, io2.out[0]->data, (size_t)GB * len * GH);
            for (int bb = 0; bb < GB; bb++)
                memcpy(y_split + ((size_t)bb * GT + t0) * GH, yp + (size_t)bb * len * GH,
                       (size_t)len * GH * sizeof(float));
            if (part == 1) assert_true(check_backend(be, "h_n split", io2.out[1]->data, h_full,
                                                     GB * GH, 1e-6, 1e-6));
            free(yp);
            free(xs);
            strix_tensor_free(&xp);
        }
        assert_true(tl_check_close("y split", y_split, y_full, GB * GT * GH, 1e-6, 1e-6));
        // a state of another module is refused
        built other;
        build(&other, be, c);
        strix_module_io wrong = strix_module_io_of(&x);
        wrong.state = st1;
        assert_int_equal(strix_module_forward_ex(other.m, &wrong), STRIX_ERR_ARG);
        release(&other);
        strix_module_state_free(b.m, st1);
        strix_module_state_free(b.m, st2);
        free(y_full);
        free(h_full);
        free(xh);
        free(y_split);
        strix_tensor *ts[] = {&x, &h0, &c0, &dy, &dhn, &dcn};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
        release(&b);
        tl_golden_free(&gf);
    }
}

/* Finite differences (the one-tensor calls: zero initial state) of x and every parameter. */
static void test_finite_differences(void **state) {
    strix_backend *be = *state;
    strix_rnn_mode modes[3] = {STRIX_RNN_LSTM, STRIX_RNN_GRU, STRIX_RNN_TANH};
    for (int k = 0; k < 3; k++) {
        for (int bf = 0; bf < 2; bf++) {
            built b;
            begin(&b, be);
            strix_rnn_config cfg = strix_rnn_config_default(modes[k], 3, 4);
            cfg.num_layers = 2;
            cfg.bidirectional = true;
            cfg.batch_first = bf;
            strix_rnn *m;
            OK(strix_rnn_new(&b.ps, "rnn", &cfg, &m));
            b.m = &m->base;
            OK(strix_params_alloc(&b.ps));
            OK(strix_params_init(&b.ps, 7 + (uint64_t)k));
            int64_t shape[3] = {2, 3, 3};
            fd_module(be, &b.ps, b.m, 3, shape, 40 + (uint64_t)k, false, 12);
            release(&b);
        }
    }
}

static double proj_loss(strix_backend *be, strix_rnn *m, const strix_tensor *x, const float *R,
                        size_t n) {
    m->offset = 0; // the same masks at every evaluation
    const strix_tensor *y;
    OK(strix_rnn_forward(m, x, NULL, NULL, &y, NULL, NULL));
    float *h = from_backend(be, y->data, n);
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)h[i] * R[i];
    free(h);
    return s;
}

/* Dropout 0.5 between the layers of the lstm_2l_bi golden: eval mode gives torch's y; a training
 * forward differs, repeats bit for bit from the same (seed, offset), advances offset by the size
 * of layer 0's output; its backward matches central differences with the masks held fixed. */
static void test_dropout(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    load_golden("lstm_2l_bi", &gf);
    gcase c = cases[1];
    built b;
    begin(&b, be);
    strix_rnn_config cfg = strix_rnn_config_default(c.mode, GI, GH);
    cfg.num_layers = 2;
    cfg.bidirectional = true;
    cfg.dropout = 0.5f;
    strix_rnn *m;
    OK(strix_rnn_new(&b.ps, "", &cfg, &m));
    b.m = &m->base;
    assert_true(strix_module_training(b.m));
    OK(strix_params_alloc(&b.ps));
    load_params(&gf, &b.ps);
    m->seed = 99;
    strix_tensor x = from_golden(be, need(&gf, "x")), h0 = from_golden(be, need(&gf, "h0"));
    strix_tensor c0 = from_golden(be, need(&gf, "c0"));
    const strix_tensor *y;
    strix_module_set_training(b.m, false);
    OK(strix_rnn_forward(m, &x, &h0, &c0, &y, NULL, NULL));
    assert_int_equal(same_as(be, &gf, "y", y), 0);
    assert_int_equal(m->offset, 0);
    strix_module_set_training(b.m, true);
    size_t ny = (size_t)GB * GT * 2 * GH;
    OK(strix_rnn_forward(m, &x, &h0, &c0, &y, NULL, NULL));
    assert_int_equal(m->offset, ny); // layer 0's output (T, B, 2H), the only dropout site
    float *y1 = from_backend(be, y->data, ny);
    size_t differ = 0;
    const float *ye = need(&gf, "y")->data;
    for (size_t i = 0; i < ny; i++) differ += fabsf(y1[i] - ye[i]) > 1e-4f;
    assert_true(differ > ny / 2);
    m->offset = 0;
    OK(strix_rnn_forward(m, &x, &h0, &c0, &y, NULL, NULL));
    assert_true(check_backend(be, "same masks", y->data, y1, ny, 0.0, 0.0));
    free(y1);

    // finite differences with the masks held fixed (offset reset before every forward)
    strix_rng rng;
    strix_rng_seed(&rng, 5);
    float *R = malloc(ny * sizeof(float));
    fill_uniform(&rng, R, ny, -1.0, 1.0);
    proj_loss(be, m, &x, R, ny);
    int64_t sy[3] = {GB, GT, 2 * GH};
    strix_tensor dy = tensor_from_host(be, 3, sy, R);
    OK(strix_params_zero_grad(&b.ps));
    const strix_tensor *dx;
    OK(strix_rnn_backward(m, &dy, NULL, NULL, &dx, NULL, NULL));
    float *gx = from_backend(be, dx->data, (size_t)GB * GT * GI);
    float *gp = from_backend(be, b.ps.grad, b.ps.total);
    struct { float *dev, *g; size_t n; } arrs[3] = {
        {x.data, gx, (size_t)GB * GT * GI},
        {m->weight_ih[0]->data, gp + m->weight_ih[0]->offset, m->weight_ih[0]->numel},
        {m->weight_ih[2]->data, gp + m->weight_ih[2]->offset, m->weight_ih[2]->numel}};
    int bad = 0;
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < 15; k++) {
            size_t i = (size_t)strix_rng_below(&rng, arrs[a].n);
            float v = get_one(be, arrs[a].dev, i), e = 1e-2f;
            set_one(be, arrs[a].dev, i, v + e);
            double lp = proj_loss(be, m, &x, R, ny);
            set_one(be, arrs[a].dev, i, v - e);
            double lm = proj_loss(be, m, &x, R, ny);
            set_one(be, arrs[a].dev, i, v);
            double fd = (lp - lm) / (2.0 * e), an = arrs[a].g[i];
            if (fabs(fd - an) > FD_ATOL + FD_RTOL * fabs(an)) {
                fprintf(stderr, "  dropout fd array %d [%zu]: analytic %g fd %g\n", a, i, an, fd);
                bad++;
            }
        }
    assert_int_equal(bad, 0);
    free(R);
    free(gx);
    free(gp);
    strix_tensor_free(&dy);
    strix_tensor_free(&x);
    strix_tensor_free(&h0);
    strix_tensor_free(&c0);
    release(&b);
    tl_golden_free(&gf);
}

/* torch's names in torch's order, shapes, and U(-1/sqrt(H), 1/sqrt(H)) values. */
static void test_names_and_init(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_rnn_config cfg = strix_rnn_config_default(STRIX_RNN_GRU, 5, 9);
    cfg.num_layers = 2;
    cfg.bidirectional = true;
    strix_rnn *m;
    OK(strix_rnn_new(&b.ps, "enc.rnn", &cfg, &m));
    b.m = &m->base;
    assert_string_equal(b.m->vt->type, "GRU");
    const char *want[] = {
        "enc.rnn.weight_ih_l0", "enc.rnn.weight_hh_l0", "enc.rnn.bias_ih_l0",
        "enc.rnn.bias_hh_l0", "enc.rnn.weight_ih_l0_reverse", "enc.rnn.weight_hh_l0_reverse",
        "enc.rnn.bias_ih_l0_reverse", "enc.rnn.bias_hh_l0_reverse", "enc.rnn.weight_ih_l1",
        "enc.rnn.weight_hh_l1", "enc.rnn.bias_ih_l1", "enc.rnn.bias_hh_l1",
        "enc.rnn.weight_ih_l1_reverse", "enc.rnn.weight_hh_l1_reverse",
        "enc.rnn.bias_ih_l1_reverse", "enc.rnn.bias_hh_l1_reverse"};
    assert_int_equal(b.ps.count, 16);
    for (int i = 0; i < 16; i++) assert_string_equal(b.ps.items[i]->name, want[i]);
    assert_int_equal(m->weight_ih[0]->shape[0], 27);
    assert_int_equal(m->weight_ih[0]->shape[1], 5);
    assert_int_equal(m->weight_ih[2]->shape[1], 18); // layer 1 reads both directions
    assert_int_equal(m->weight_hh[3]->shape[1], 9);
    assert_true(m->weight_ih[0]->decay);
    assert_false(m->bias_ih[0]->decay);
    OK(strix_params_alloc(&b.ps));
    OK(strix_params_init(&b.ps, 3));
    float *v = from_backend(be, b.ps.data, b.ps.total);
    double bound = 1.0 / 3.0, maxabs = 0.0;
    for (size_t i = 0; i < b.ps.total; i++) maxabs = fmax(maxabs, fabs((double)v[i]));
    assert_true(maxabs <= bound + 1e-7);
    assert_true(maxabs > 0.9 * bound); // spread over the whole interval
    free(v);
    release(&b);
}

static void test_errors(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_rnn *m = NULL;
    strix_rnn_config cfg = strix_rnn_config_default(STRIX_RNN_LSTM, 4, 0);
    assert_int_equal(strix_rnn_new(&ps, "a", &cfg, &m), STRIX_ERR_ARG);
    assert_null(m);
    cfg = strix_rnn_config_default(STRIX_RNN_LSTM, 0, 3);
    assert_int_equal(strix_rnn_new(&ps, "a", &cfg, &m), STRIX_ERR_ARG);
    cfg = strix_rnn_config_default(STRIX_RNN_LSTM, 4, 3);
    cfg.num_layers = 0;
    assert_int_equal(strix_rnn_new(&ps, "a", &cfg, &m), STRIX_ERR_ARG);
    cfg.num_layers = 2;
    cfg.dropout = 1.5f;
    assert_int_equal(strix_rnn_new(&ps, "a", &cfg, &m), STRIX_ERR_ARG);
    cfg.dropout = -0.1f;
    assert_int_equal(strix_rnn_new(&ps, "a", &cfg, &m), STRIX_ERR_ARG);
    cfg.dropout = 0.0f;
    cfg.mode = (strix_rnn_mode)7;
    assert_int_equal(strix_rnn_new(&ps, "a", &cfg, &m), STRIX_ERR_ARG);
    assert_int_equal(ps.count, 0);
    strix_params_free(&ps);

    built b;
    begin(&b, be);
    cfg = strix_rnn_config_default(STRIX_RNN_GRU, 4, 3);
    OK(strix_rnn_new(&b.ps, "g", &cfg, &m));
    b.m = &m->base;
    OK(strix_params_alloc(&b.ps));
    float zeros[64] = {0};
    int64_t s_ok[3] = {2, 5, 4}, s_last[3] = {2, 5, 3}, s_2d[2] = {5, 4}, s_t0[3] = {2, 0, 4};
    int64_t s_h_ok[3] = {1, 2, 3}, s_h_bad[3] = {1, 3, 3};
    strix_tensor x = tensor_from_host(be, 3, s_ok, zeros);
    strix_tensor xl = tensor_from_host(be, 3, s_last, zeros);
    strix_tensor x2 = tensor_from_host(be, 2, s_2d, zeros);
    strix_tensor x0 = strix_tensor_view(NULL, strix_backend_device(be), 3, s_t0);
    strix_tensor h = tensor_from_host(be, 3, s_h_ok, zeros);
    strix_tensor hb = tensor_from_host(be, 3, s_h_bad, zeros);
    const strix_tensor *y, *dx;
    assert_int_equal(strix_rnn_backward(m, &x, NULL, NULL, &dx, NULL, NULL), STRIX_ERR_ARG);
    assert_int_equal(strix_rnn_forward(m, &xl, NULL, NULL, &y, NULL, NULL), STRIX_ERR_SHAPE);
    assert_int_equal(strix_rnn_forward(m, &x2, NULL, NULL, &y, NULL, NULL), STRIX_ERR_SHAPE);
    assert_int_equal(strix_rnn_forward(m, &x0, NULL, NULL, &y, NULL, NULL), STRIX_ERR_SHAPE);
    assert_int_equal(strix_rnn_forward(m, &x, &hb, NULL, &y, NULL, NULL), STRIX_ERR_SHAPE);
    assert_int_equal(strix_rnn_forward(m, &x, &h, &h, &y, NULL, NULL), STRIX_ERR_ARG);
    OK(strix_rnn_forward(m, &x, &h, NULL, &y, NULL, NULL));
    assert_int_equal(y->shape[0], 2);
    assert_int_equal(y->shape[1], 5);
    assert_int_equal(y->shape[2], 3);
    assert_int_equal(strix_rnn_backward(m, &x, NULL, NULL, &dx, NULL, NULL), STRIX_ERR_SHAPE);
    assert_int_equal(strix_rnn_backward(m, y, &hb, NULL, &dx, NULL, NULL), STRIX_ERR_SHAPE);
    // the io form: a mask, ids or too many inputs are not taken
    strix_module_io io = strix_module_io_of(&x);
    io.n_in = 3;
    io.in[1] = &h;
    io.in[2] = &h;
    assert_int_equal(strix_module_forward_ex(b.m, &io), STRIX_ERR_UNSUPPORTED);
    io = strix_module_io_of(&x);
    io.mask = &x;
    assert_int_equal(strix_module_forward_ex(b.m, &io), STRIX_ERR_UNSUPPORTED);
    strix_tensor *ts[] = {&x, &xl, &x2, &h, &hb};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    release(&b);
}

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_golden_lstm),         BACKEND_TEST(test_golden_gru),
        BACKEND_TEST(test_golden_rnn),          BACKEND_TEST(test_state_dict_from_torch),
        BACKEND_TEST(test_module_io_and_state), BACKEND_TEST(test_finite_differences),
        BACKEND_TEST(test_dropout),             BACKEND_TEST(test_names_and_init),
        BACKEND_TEST(test_errors),
    };
    return run_on_each_backend("recurrent", tests, sizeof tests / sizeof tests[0]) ? 1 : 0;
}
