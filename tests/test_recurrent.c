/*
 * test_recurrent.c - the recurrent modules of strix/recurrent.h (torch.nn.RNN, LSTM, GRU) on
 * every CPU backend ("cpu", and "cpu-blas" when built):
 *  1. PyTorch goldens (tools/ref/recurrent_modules_ref.py, tests/golden/recurrent/): 1 and 2
 *     layers, bidirectional, with and without bias, with and without h0/c0, batch-first and
 *     time-major, RNN with tanh and relu, LSTM with and without proj_size: y, h_n, c_n, dx,
 *     dh0, dc0 and every parameter gradient within 1e-5 abs + 1e-4 rel, the torch parameters
 *     loaded by name; every parameter after 10 AdamW steps (LSTM, GRU, LSTM with projections)
 *     against torch.optim.AdamW, same tolerance;
 *  2. torch's state dict (a safetensors file written from torch) loads with strict names and
 *     gives torch's outputs;
 *  3. the general form (strix_module_io): h0/c0 as inputs, and a state that carries h, c from
 *     one call to the next (two calls of 2 and 3 steps = one call of 5; T calls of one step
 *     = one call of T, bit for bit on "cpu"; another batch size is refused);
 *  4. finite differences of the input and every parameter on tiny 2-layer bidirectional models
 *     (every mode, LSTM also with projections);
 *  5. dropout between layers: eval mode is torch's no-dropout output, training masks come from
 *     (seed, offset) and differ from eval, finite differences through the masks;
 *  6. torch's parameter names, order, shapes and init bounds (also weight_hr, and
 *     strix_rnn_reset_parameters); errors for bad sizes, proj_size and shapes;
 *  7. relevance (LRP, Arras et al. 2019): input, h0 and c0 relevance against a float64 numpy
 *     transcription of the rule (tools/ref/recurrent_lrp_ref.py; LSTM and GRU, 1 layer and 2
 *     layers bidirectional, RNN tanh and relu and LSTM with projections 2 layers bidirectional)
 *     within 1e-5 abs + 1e-4 rel,
 *     conservation with the gap measured and bounded, relevance seeded at the last step
 *     reaching t = 0, errors;
 *  8. learning: issue 12's running-parity task (6 sequences of 10 bits), LSTM and GRU 60/60.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nn_testutil.h"
#include "strix/loss.h"
#include "strix/optim.h"
#include "strix/recurrent.h"
#include "strix/state_dict.h"

#define GOLD_ATOL 1e-5
#define GOLD_RTOL 1e-4

#define OK(expr) assert_int_equal((expr), STRIX_OK)

static const tl_array *need(const tl_golden *gf, const char *name) {
    return golden_need(gf, name);
}

/* Whether the golden holds array `name` (tl_golden_get reports missing ones). */
static const tl_array *has(const tl_golden *gf, const char *name) {
    for (int i = 0; i < gf->count; i++)
        if (strcmp(gf->arrays[i].name, name) == 0) return &gf->arrays[i];
    return NULL;
}

static strix_tensor from_golden(strix_backend *be, const tl_array *a) {
    return golden_tensor(be, a);
}

/* A tensor of N(0, 1) values from rng, shape given. */
static strix_tensor rand_tensor_of(strix_backend *be, strix_rng *rng, int ndim,
                                   const int64_t *shape) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    float *h = malloc(n * sizeof *h);
    assert_non_null(h);
    fill_normal(rng, h, n, 0.0, 1.0);
    strix_tensor t = tensor_from_host(be, ndim, shape, h);
    free(h);
    return t;
}

static int same_as(strix_backend *be, const tl_golden *gf, const char *name,
                   const strix_tensor *t) {
    return golden_same_as(be, gf, name, t, GOLD_ATOL, GOLD_RTOL);
}

enum { GB = 3, GT = 5, GI = 7, GH = 6, GP = 5 }; /* the goldens' sizes (GP: proj_size) */

typedef struct gcase {
    const char *file;
    strix_rnn_mode mode;
    int layers;
    bool bidirectional, bias, batch_first;
    int proj_size; /* LSTM projections, 0 = off */
} gcase;

static const gcase cases[] = {
    {"lstm_1l", STRIX_RNN_LSTM, 1, false, true, true, 0},
    {"lstm_2l_bi", STRIX_RNN_LSTM, 2, true, true, true, 0},
    {"lstm_2l_nobias", STRIX_RNN_LSTM, 2, false, false, true, 0},
    {"lstm_bi_time_major", STRIX_RNN_LSTM, 1, true, true, false, 0},
    {"gru_1l", STRIX_RNN_GRU, 1, false, true, true, 0},
    {"gru_2l_bi", STRIX_RNN_GRU, 2, true, true, true, 0},
    {"gru_2l_nobias", STRIX_RNN_GRU, 2, false, false, true, 0},
    {"gru_bi_time_major", STRIX_RNN_GRU, 1, true, true, false, 0},
    {"rnn_1l", STRIX_RNN_TANH, 1, false, true, true, 0},
    {"rnn_2l_bi", STRIX_RNN_TANH, 2, true, true, true, 0},
    {"rnn_1l_nobias", STRIX_RNN_TANH, 1, false, false, true, 0},
    {"rnn_relu_1l", STRIX_RNN_RELU, 1, false, true, true, 0},
    {"rnn_relu_2l_bi", STRIX_RNN_RELU, 2, true, true, true, 0},
    {"lstm_proj_1l", STRIX_RNN_LSTM, 1, false, true, true, GP},
    {"lstm_proj_2l_bi", STRIX_RNN_LSTM, 2, true, true, true, GP},
    {"lstm_proj_bi_time_major", STRIX_RNN_LSTM, 1, true, false, false, GP},
};

#ifndef PARITY_STEPS
#define PARITY_STEPS 400
#endif

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
    cfg.proj_size = c->proj_size;
    strix_rnn *m;
    OK(strix_rnn_new(&b->ps, "", &cfg, &m));
    b->m = &m->base;
    OK(strix_params_alloc(&b->ps));
    return m;
}

/* Uploads every "param.<name>" of the golden; every parameter of the module must be there. */
static void load_params(const tl_golden *gf, strix_params *ps) {
    golden_load_params(gf, ps, false);
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
        if (cases[i].mode == STRIX_RNN_TANH || cases[i].mode == STRIX_RNN_RELU)
            golden_case(*state, &cases[i]);
}

/* 10 AdamW steps against torch.optim.AdamW (lr 0.01, the defaults: betas 0.9, 0.999, eps 1e-8,
 * weight decay 0.01 on every parameter; strix_optimizer_adamw with strix_adamw_defaults(0.01))
 * on the fixed loss Σ y·dy + Σ h_n·dh_n (+ Σ c_n·dc_n) from torch's initial weights: every
 * parameter after the last step within 1e-5 abs + 1e-4 rel (LSTM and GRU 2 layers
 * bidirectional, LSTM with projections). */
static void test_adamw_steps(void **state) {
    strix_backend *be = *state;
    static const gcase ac[] = {
        {"lstm_adamw_2l_bi", STRIX_RNN_LSTM, 2, true, true, true, 0},
        {"gru_adamw_2l_bi", STRIX_RNN_GRU, 2, true, true, true, 0},
        {"lstm_proj_adamw", STRIX_RNN_LSTM, 1, false, true, true, GP},
    };
    for (size_t ci = 0; ci < sizeof ac / sizeof ac[0]; ci++) {
        const gcase *c = &ac[ci];
        bool lstm = c->mode == STRIX_RNN_LSTM;
        tl_golden gf;
        load_golden(c->file, &gf);
        built b;
        strix_rnn *m = build(&b, be, c);
        load_params(&gf, &b.ps);
        strix_optimizer *opt;
        strix_adamw_config cfg = strix_adamw_defaults(0.01f);
        OK(strix_optimizer_adamw(&b.ps, &cfg, &opt));
        float lr = need(&gf, "lr")->data[0];
        const tl_array *steps = need(&gf, "loss");
        strix_tensor x = from_golden(be, need(&gf, "x")), dy = from_golden(be, need(&gf, "dy"));
        strix_tensor dhn = from_golden(be, need(&gf, "dh_n")), dcn = {0};
        if (lstm) dcn = from_golden(be, need(&gf, "dc_n"));
        for (size_t k = 0; k < steps->count; k++) {
            const strix_tensor *y, *hn;
            OK(strix_rnn_forward(m, &x, NULL, NULL, &y, &hn, NULL));
            OK(strix_params_zero_grad(&b.ps));
            OK(strix_rnn_backward(m, &dy, &dhn, lstm ? &dcn : NULL, NULL, NULL, NULL));
            OK(strix_optimizer_step(opt, lr));
        }
        int bad = 0;
        for (int i = 0; i < b.ps.count; i++) {
            strix_param *p = b.ps.items[i];
            char key[160];
            snprintf(key, sizeof key, "final.%s", p->name);
            const tl_array *g = need(&gf, key);
            assert_int_equal(g->count, p->numel);
            bad += check_backend(be, key, p->data, g->data, p->numel, GOLD_ATOL, GOLD_RTOL) ? 0
                                                                                          : 1;
        }
        if (bad) fail_msg("%s: %d parameters differ from torch after %lld AdamW steps", c->file,
                          bad, (long long)steps->count);
        assert_int_equal(steps->count, 10);
        strix_tensor *ts[] = {&x, &dy, &dhn, &dcn};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
        strix_optimizer_free(opt);
        release(&b);
        tl_golden_free(&gf);
    }
}

/* Stateful decoding: T calls of forward_ex on (B,1,I) slices with one state give the one full
 * call's y and h_n, c_n, bit for bit on "cpu" (each step runs the same operations in the same
 * order; cpu-blas: 1e-6, the BLAS may block the T·B-row input GEMM differently from the B-row
 * one); a later call with another batch size is STRIX_ERR_SHAPE. Every mode, 2 layers
 * bidirectional off (a reverse direction needs the whole sequence), LSTM also with
 * projections. */
static void test_state_steps(void **state) {
    strix_backend *be = *state;
    bool exact = strcmp(strix_backend_name(be), "cpu") == 0;
    double tol = exact ? 0.0 : 1e-6;
    strix_rnn_mode modes[5] = {STRIX_RNN_LSTM, STRIX_RNN_GRU, STRIX_RNN_TANH, STRIX_RNN_RELU,
                               STRIX_RNN_LSTM};
    for (int k = 0; k < 5; k++) {
        enum { SB = 2, ST = 6, SI = 5, SH = 7 };
        built b;
        begin(&b, be);
        strix_rnn_config cfg = strix_rnn_config_default(modes[k], SI, SH);
        cfg.num_layers = 2;
        cfg.proj_size = k == 4 ? 3 : 0;
        strix_rnn *m;
        OK(strix_rnn_new(&b.ps, "", &cfg, &m));
        b.m = &m->base;
        OK(strix_params_alloc(&b.ps));
        OK(strix_params_init(&b.ps, 21 + (uint64_t)k));
        int hr = m->out_size;
        bool lstm = modes[k] == STRIX_RNN_LSTM;
        strix_rng rng;
        strix_rng_seed(&rng, 3 + (uint64_t)k);
        int64_t sx[3] = {SB, ST, SI};
        strix_tensor x = rand_tensor_of(be, &rng, 3, sx);
        strix_module_state *full, *step;
        OK(strix_module_state_new(b.m, &full));
        OK(strix_module_state_new(b.m, &step));
        strix_module_io io = strix_module_io_of(&x);
        io.state = full;
        OK(strix_module_forward_ex(b.m, &io));
        size_t ny = (size_t)SB * ST * hr, nh = 2 * (size_t)SB * hr, nc = 2 * (size_t)SB * SH;
        float *y_full = from_backend(be, io.out[0]->data, ny);
        float *h_full = from_backend(be, io.out[1]->data, nh);
        float *c_full = lstm ? from_backend(be, io.out[2]->data, nc) : NULL;
        float *xh = from_backend(be, x.data, (size_t)SB * ST * SI);
        float *y_steps = malloc(ny * sizeof(float));
        for (int t = 0; t < ST; t++) {
            float xs[SB * SI];
            for (int bb = 0; bb < SB; bb++)
                memcpy(xs + bb * SI, xh + ((size_t)bb * ST + t) * SI, SI * sizeof(float));
            int64_t s1[3] = {SB, 1, SI};
            strix_tensor xt = tensor_from_host(be, 3, s1, xs);
            strix_module_io is = strix_module_io_of(&xt);
            is.state = step;
            OK(strix_module_forward_ex(b.m, &is));
            float *yt = from_backend(be, is.out[0]->data, (size_t)SB * hr);
            for (int bb = 0; bb < SB; bb++)
                memcpy(y_steps + ((size_t)bb * ST + t) * hr, yt + (size_t)bb * hr,
                       (size_t)hr * sizeof(float));
            if (t == ST - 1) {
                assert_true(check_backend(be, "h_n by steps", is.out[1]->data, h_full, nh, tol,
                                          tol));
                if (lstm)
                    assert_true(check_backend(be, "c_n by steps", is.out[2]->data, c_full, nc,
                                              tol, tol));
            }
            free(yt);
            strix_tensor_free(&xt);
        }
        assert_true(tl_check_close("y by steps", y_steps, y_full, ny, tol, tol));
        // the state's batch is fixed by its first call
        int64_t s3[3] = {SB + 1, 1, SI};
        float zeros[(SB + 1) * SI];
        memset(zeros, 0, sizeof zeros);
        strix_tensor xb = tensor_from_host(be, 3, s3, zeros);
        strix_module_io ib = strix_module_io_of(&xb);
        ib.state = step;
        assert_int_equal(strix_module_forward_ex(b.m, &ib), STRIX_ERR_SHAPE);
        strix_tensor_free(&xb);
        strix_module_state_free(b.m, full);
        strix_module_state_free(b.m, step);
        free(y_full);
        free(h_full);
        free(c_full);
        free(xh);
        free(y_steps);
        strix_tensor_free(&x);
        release(&b);
    }
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
 * out[1], out[2]; a state carries h_n, c_n, so two calls of 2 and 3 steps equal one of 5
 * (LSTM, GRU, RNN tanh and relu, LSTM with projections). */
static void test_module_io_and_state(void **state) {
    strix_backend *be = *state;
    static const char *const names[] = {"lstm_1l", "gru_1l", "rnn_1l", "rnn_relu_1l",
                                        "lstm_proj_1l"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const gcase *c = NULL;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (strcmp(cases[i].file, names[k]) == 0) c = &cases[i];
        assert_non_null(c);
        const int YW = c->proj_size ? c->proj_size : GH; /* y and h width (1 layer, 1 dir) */
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
        float *y_full = from_backend(be, one.out[0]->data, GB * GT * YW);
        float *h_full = from_backend(be, one.out[1]->data, GB * YW);
        float *xh = from_backend(be, x.data, GB * GT * GI);
        float *y_split = malloc(GB * GT * YW * sizeof(float));
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
            float *yp = from_backend(be, io2.out[0]->data, (size_t)GB * len * YW);
            for (int bb = 0; bb < GB; bb++)
                memcpy(y_split + ((size_t)bb * GT + t0) * YW, yp + (size_t)bb * len * YW,
                       (size_t)len * YW * sizeof(float));
            if (part == 1) assert_true(check_backend(be, "h_n split", io2.out[1]->data, h_full,
                                                     GB * YW, 1e-6, 1e-6));
            free(yp);
            free(xs);
            strix_tensor_free(&xp);
        }
        assert_true(tl_check_close("y split", y_split, y_full, GB * GT * YW, 1e-6, 1e-6));
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
    strix_rnn_mode modes[5] = {STRIX_RNN_LSTM, STRIX_RNN_GRU, STRIX_RNN_TANH, STRIX_RNN_RELU,
                               STRIX_RNN_LSTM};
    for (int k = 0; k < 5; k++) {
        for (int bf = 0; bf < 2; bf++) {
            built b;
            begin(&b, be);
            strix_rnn_config cfg = strix_rnn_config_default(modes[k], 3, 4);
            cfg.num_layers = 2;
            cfg.bidirectional = true;
            cfg.batch_first = bf;
            cfg.proj_size = k == 4 ? 3 : 0; // LSTM with projections
            strix_rnn *m;
            OK(strix_rnn_new(&b.ps, "rnn", &cfg, &m));
            b.m = &m->base;
            OK(strix_params_alloc(&b.ps));
            OK(strix_params_init(&b.ps, 7 + (uint64_t)k));
            int64_t shape[3] = {2, 3, 3};
            // relu: coordinates at a kink are skipped (at most a tenth)
            fd_module(be, &b.ps, b.m, 3, shape, 40 + (uint64_t)k, modes[k] == STRIX_RNN_RELU,
                      12);
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

    // LSTM with projections: weight_hr after the biases (torch's order), h width proj_size
    begin(&b, be);
    cfg = strix_rnn_config_default(STRIX_RNN_LSTM, 5, 9);
    cfg.num_layers = 2;
    cfg.bidirectional = true;
    cfg.proj_size = 4;
    OK(strix_rnn_new(&b.ps, "lm", &cfg, &m));
    b.m = &m->base;
    const char *want_p[] = {"lm.weight_ih_l0", "lm.weight_hh_l0", "lm.bias_ih_l0",
                            "lm.bias_hh_l0", "lm.weight_hr_l0", "lm.weight_ih_l0_reverse"};
    assert_int_equal(b.ps.count, 20);
    for (int i = 0; i < 6; i++) assert_string_equal(b.ps.items[i]->name, want_p[i]);
    assert_string_equal(b.ps.items[19]->name, "lm.weight_hr_l1_reverse");
    assert_int_equal(m->weight_hh[0]->shape[1], 4);
    assert_int_equal(m->weight_ih[2]->shape[1], 8); // layer 1 reads 2·proj_size
    assert_int_equal(m->weight_hr[3]->shape[0], 4);
    assert_int_equal(m->weight_hr[3]->shape[1], 9);
    assert_true(m->weight_hr[0]->decay);
    assert_int_equal(m->out_size, 4);
    OK(strix_params_alloc(&b.ps));
    OK(strix_params_init(&b.ps, 3));
    float *wr = from_backend(be, m->weight_hr[1]->data, (size_t)m->weight_hr[1]->numel);
    maxabs = 0.0;
    for (size_t i = 0; i < (size_t)m->weight_hr[1]->numel; i++)
        maxabs = fmax(maxabs, fabs(wr[i]));
    assert_true(maxabs <= bound + 1e-7); // U(-1/sqrt(H), 1/sqrt(H)), H = hidden_size
    assert_true(maxabs > 0.8 * bound);
    free(wr);
    release(&b);
    // reset_parameters: the module's parameters only, from the seed, within the bound
    strix_linear *other;
    begin(&b, be);
    cfg = strix_rnn_config_default(STRIX_RNN_LSTM, 5, 9);
    cfg.proj_size = 4;
    OK(strix_rnn_new(&b.ps, "lm", &cfg, &m));
    b.m = &m->base;
    OK(strix_linear_new_default(&b.ps, "head", 4, 2, true, &other));
    OK(strix_params_alloc(&b.ps));
    OK(strix_params_init(&b.ps, 5));
    float *before = from_backend(be, b.ps.data, b.ps.total);
    OK(strix_rnn_reset_parameters(m, 11));
    float *once = from_backend(be, b.ps.data, b.ps.total);
    OK(strix_rnn_reset_parameters(m, 11));
    float *twice = from_backend(be, b.ps.data, b.ps.total);
    assert_memory_equal(once, twice, b.ps.total * sizeof(float)); // the seed alone decides
    size_t head_at = other->weight->offset, changed = 0;
    for (size_t i = 0; i < b.ps.total; i++) {
        if (i >= head_at) assert_true(once[i] == before[i]); // the head is left alone
        else {
            changed += once[i] != before[i];
            assert_true(fabs(once[i]) <= bound + 1e-7);
        }
    }
    assert_true(changed > head_at * 9 / 10);
    free(before);
    free(once);
    free(twice);
    strix_module_free(&other->base);
    release(&b);
    // RNN with relu: type "RNN", torch's names
    begin(&b, be);
    cfg = strix_rnn_config_default(STRIX_RNN_RELU, 5, 9);
    OK(strix_rnn_new(&b.ps, "r", &cfg, &m));
    b.m = &m->base;
    assert_string_equal(b.m->vt->type, "RNN");
    assert_int_equal(b.ps.count, 4);
    assert_string_equal(b.ps.items[1]->name, "r.weight_hh_l0");
    assert_null(m->weight_hr[0]);
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
    cfg.mode = STRIX_RNN_LSTM; // proj_size: 0 < proj_size < hidden_size, LSTM only
    cfg.proj_size = 3;
    assert_int_equal(strix_rnn_new(&ps, "a", &cfg, &m), STRIX_ERR_ARG);
    cfg.proj_size = -1;
    assert_int_equal(strix_rnn_new(&ps, "a", &cfg, &m), STRIX_ERR_ARG);
    cfg.proj_size = 2;
    cfg.mode = STRIX_RNN_GRU;
    assert_int_equal(strix_rnn_new(&ps, "a", &cfg, &m), STRIX_ERR_ARG);
    cfg.mode = STRIX_RNN_RELU;
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

// ---- relevance (LRP, Arras et al. 2019) --------------------------------------------------------

/* A module of mode with these sizes under prefix "", parameters allocated (values unset). */
static strix_rnn *build_proj(built *b, strix_backend *be, strix_rnn_mode mode, int I, int H,
                             int layers, bool bidirectional, bool bias, int proj_size) {
    begin(b, be);
    strix_rnn_config cfg = strix_rnn_config_default(mode, I, H);
    cfg.num_layers = layers;
    cfg.bidirectional = bidirectional;
    cfg.bias = bias;
    cfg.proj_size = proj_size;
    strix_rnn *m;
    OK(strix_rnn_new(&b->ps, "", &cfg, &m));
    b->m = &m->base;
    OK(strix_params_alloc(&b->ps));
    return m;
}

static strix_rnn *build_sized(built *b, strix_backend *be, strix_rnn_mode mode, int I, int H,
                              int layers, bool bidirectional, bool bias) {
    return build_proj(b, be, mode, I, H, layers, bidirectional, bias, 0);
}

static void set_epsilon(strix_rnn *m, float eps) {
    m->base.rule = (strix_lrp_rule){.kind = STRIX_LRP_EPSILON, .epsilon = eps};
}

typedef struct lcase {
    const char *file;
    strix_rnn_mode mode;
    int layers;
    bool bidirectional;
    int proj_size;
} lcase;

/* Input, h0 and c0 relevance of tools/ref/recurrent_lrp_ref.py's float64 transcription of the
 * rule (LSTM and GRU 1 layer; LSTM, GRU, RNN tanh and relu, LSTM with proj_size 3, 2 layers
 * bidirectional; B=2, T=4, I=3, H=5, torch
 * init with biases, eps 1e-2: with 1e-3 one input of gru_lrp_2l_bi sits on a near-zero
 * denominator and float32 misses it by 2e-3), through relevance_ex. */
static void test_lrp_golden(void **state) {
    strix_backend *be = *state;
    static const lcase lc[] = {{"lstm_lrp_1l", STRIX_RNN_LSTM, 1, false, 0},
                               {"gru_lrp_1l", STRIX_RNN_GRU, 1, false, 0},
                               {"lstm_lrp_2l_bi", STRIX_RNN_LSTM, 2, true, 0},
                               {"gru_lrp_2l_bi", STRIX_RNN_GRU, 2, true, 0},
                               {"rnn_lrp_2l_bi", STRIX_RNN_TANH, 2, true, 0},
                               {"rnn_relu_lrp_2l_bi", STRIX_RNN_RELU, 2, true, 0},
                               {"lstm_proj_lrp_2l_bi", STRIX_RNN_LSTM, 2, true, 3}};
    for (size_t ci = 0; ci < sizeof lc / sizeof lc[0]; ci++) {
        const lcase *c = &lc[ci];
        bool lstm = c->mode == STRIX_RNN_LSTM;
        tl_golden gf;
        load_golden(c->file, &gf);
        built b;
        strix_rnn *m = build_proj(&b, be, c->mode, 3, 5, c->layers, c->bidirectional, true,
                                  c->proj_size);
        load_params(&gf, &b.ps);
        set_epsilon(m, need(&gf, "eps")->data[0]);
        strix_tensor x = from_golden(be, need(&gf, "x")), h0 = from_golden(be, need(&gf, "h0"));
        strix_tensor c0 = {0}, rcn = {0};
        if (lstm) c0 = from_golden(be, need(&gf, "c0"));
        strix_module_io io = strix_module_io_of(&x);
        io.n_in = lstm ? 3 : 2;
        io.in[1] = &h0;
        io.in[2] = lstm ? &c0 : NULL;
        OK(strix_module_forward_ex(b.m, &io));
        strix_tensor ry = from_golden(be, need(&gf, "r_y"));
        strix_tensor rhn = from_golden(be, need(&gf, "r_h_n"));
        if (lstm) rcn = from_golden(be, need(&gf, "r_c_n"));
        strix_module_io ri = {.n_in = lstm ? 3 : 2, .in = {&ry, &rhn, lstm ? &rcn : NULL}};
        OK(strix_module_relevance_ex(b.m, &ri));
        assert_int_equal(ri.n_out, lstm ? 3 : 2);
        int bad = same_as(be, &gf, "r_x", ri.out[0]) + same_as(be, &gf, "r_h0", ri.out[1]);
        if (lstm) bad += same_as(be, &gf, "r_c0", ri.out[2]);
        if (bad) fail_msg("%s: %d relevance arrays differ from the reference", c->file, bad);
        // the one-tensor relevance (zero h_n, c_n relevance) is relevance_ex with y's alone
        const strix_tensor *rx1;
        OK(strix_module_forward_ex(b.m, &io));
        OK(strix_module_relevance(b.m, &ry, &rx1));
        assert_int_equal(rx1->ndim, 3);
        assert_int_equal(rx1->shape[2], 3);
        strix_tensor *ts[] = {&x, &h0, &c0, &ry, &rhn, &rcn};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
        release(&b);
        tl_golden_free(&gf);
    }
}

/* Σ t (abs: Σ |t|) on the host in double. */
static double host_sum_of(strix_backend *be, const strix_tensor *t, bool abs_values) {
    size_t n = (size_t)strix_tensor_numel(t);
    float *h = from_backend(be, t->data, n);
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += abs_values ? fabs((double)h[i]) : h[i];
    free(h);
    return s;
}

static double host_sum(strix_backend *be, const strix_tensor *t) {
    return host_sum_of(be, t, false);
}

/* A tensor of n N(0, 1) values (seed), shape given. */
static strix_tensor rand_tensor(strix_backend *be, strix_rng *rng, int ndim, const int64_t *shape) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    float *h = malloc(n * sizeof *h);
    assert_non_null(h);
    fill_normal(rng, h, n, 0.0, 1.0);
    strix_tensor t = tensor_from_host(be, ndim, shape, h);
    free(h);
    return t;
}

/* Conservation: eps 1e-9, random h0/c0 and N(0, 1) relevance seeds: Σ r_x + Σ r_h0 (+ Σ r_c0)
 * = Σ r_y + Σ r_h_n (+ Σ r_c_n). Without biases the rule conserves exactly in real arithmetic
 * (every split is a/(a + b)); what is left is float32 rounding and the eps terms: gap / Σ
 * |seeds| measured <= 3e-6 (LSTM and GRU, 1 layer and 2 layers bidirectional, B 3, T 6, both
 * CPU backends), bounded at 1e-3. LSTM with biases conserves as well (the default rule's
 * denominators are pre-bias; measured <= 6e-6). GRU's denominators n_pre and hn include the
 * biases, which absorb relevance: measured 0.55 (1 layer) and 0.056 (2 layers), asserted >
 * 1e-2, so the test tells a rule that keeps everything from one that drops the bias share.
 * LSTM with projections (proj_size 3: the projection's epsilon rule has no bias) and the relu
 * RNN (pre-bias denominators) conserve as LSTM does, bounded at 1e-3. */
static void test_lrp_conservation(void **state) {
    strix_backend *be = *state;
    strix_rnn_mode modes[4] = {STRIX_RNN_LSTM, STRIX_RNN_GRU, STRIX_RNN_LSTM, STRIX_RNN_RELU};
    static const char *const what[4] = {"LSTM", "GRU", "LSTM proj", "RNN relu"};
    for (int mi = 0; mi < 4; mi++)
        for (int shape = 0; shape < 2; shape++)
            for (int bias = 0; bias < 2; bias++) {
                bool lstm = modes[mi] == STRIX_RNN_LSTM, bi = shape == 1;
                int layers = shape ? 2 : 1, dirs = bi ? 2 : 1, I = 4, H = 5;
                int Hr = mi == 2 ? 3 : H;
                int64_t Bn = 3, Tn = 6;
                built b;
                strix_rnn *m = build_proj(&b, be, modes[mi], I, H, layers, bi, bias,
                                          mi == 2 ? Hr : 0);
                randomize_params(&b.ps, 11 + (uint64_t)mi, 0.5);
                set_epsilon(m, 1e-9f);
                strix_rng rng;
                strix_rng_seed(&rng, 99);
                int64_t sx[3] = {Bn, Tn, I}, ss[3] = {layers * dirs, Bn, H};
                int64_t sr[3] = {layers * dirs, Bn, Hr}, sy[3] = {Bn, Tn, dirs * Hr};
                strix_tensor x = rand_tensor(be, &rng, 3, sx), h0 = rand_tensor(be, &rng, 3, sr);
                strix_tensor c0 = rand_tensor(be, &rng, 3, ss);
                strix_tensor ry = rand_tensor(be, &rng, 3, sy);
                strix_tensor rhn = rand_tensor(be, &rng, 3, sr);
                strix_tensor rcn = rand_tensor(be, &rng, 3, ss);
                const strix_tensor *rx, *rh0, *rc0;
                OK(strix_rnn_forward(m, &x, &h0, lstm ? &c0 : NULL, NULL, NULL, NULL));
                OK(strix_rnn_relevance(m, &ry, &rhn, lstm ? &rcn : NULL, &rx, &rh0, &rc0));
                double in = host_sum(be, &ry) + host_sum(be, &rhn);
                if (lstm) in += host_sum(be, &rcn);
                double out = host_sum(be, rx) + host_sum(be, rh0) + (lstm ? host_sum(be, rc0) : 0);
                double scale = host_sum_of(be, &ry, true) + host_sum_of(be, &rhn, true) +
                               (lstm ? host_sum_of(be, &rcn, true) : 0.0);
                double gap = fabs(out - in) / scale;
                print_message("LRP conservation %s %dL%s bias %d: seeded %.6f, reached %.6f, "
                              "gap %.2e\n", what[mi], layers, bi ? " bi" : "", bias,
                              in, out, gap);
                if (!bias || modes[mi] != STRIX_RNN_GRU) assert_true(gap < 1e-3);
                else assert_true(gap > 1e-2);
                strix_tensor *ts[] = {&x, &h0, &c0, &ry, &rhn, &rcn};
                for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
                release(&b);
            }
}

/* Relevance seeded at the last step of y only reaches the first step's input (T = 8), for
 * LSTM and GRU, forward and through the reverse direction of a bidirectional one (which reads
 * t = T−1 first, so its early steps are the late ones and the first step is reached at once). */
static void test_lrp_reaches_early_steps(void **state) {
    strix_backend *be = *state;
    strix_rnn_mode modes[2] = {STRIX_RNN_LSTM, STRIX_RNN_GRU};
    for (int mi = 0; mi < 2; mi++) {
        int I = 3, H = 4;
        int64_t Bn = 2, Tn = 8;
        built b;
        strix_rnn *m = build_sized(&b, be, modes[mi], I, H, 1, false, true);
        randomize_params(&b.ps, 5, 0.6);
        set_epsilon(m, 1e-6f);
        strix_rng rng;
        strix_rng_seed(&rng, 7);
        int64_t sx[3] = {Bn, Tn, I}, sy[3] = {Bn, Tn, H};
        strix_tensor x = rand_tensor(be, &rng, 3, sx);
        const strix_tensor *y, *rx;
        OK(strix_rnn_forward(m, &x, NULL, NULL, &y, NULL, NULL));
        float *yh = from_backend(be, y->data, (size_t)(Bn * Tn * H));
        float *rh = calloc((size_t)(Bn * Tn * H), sizeof *rh);
        for (int64_t bb = 0; bb < Bn; bb++) // seed R = y at the last step (Σ = its output)
            for (int j = 0; j < H; j++) {
                size_t k = (size_t)((bb * Tn + Tn - 1) * H + j);
                rh[k] = yh[k];
            }
        strix_tensor ry = tensor_from_host(be, 3, sy, rh);
        OK(strix_rnn_relevance(m, &ry, NULL, NULL, &rx, NULL, NULL));
        float *r = from_backend(be, rx->data, (size_t)(Bn * Tn * I));
        for (int64_t bb = 0; bb < Bn; bb++) {
            double first = 0.0;
            for (int i = 0; i < I; i++) first += fabs(r[(bb * Tn + 0) * I + i]);
            print_message("%s: |R| at t = 0, row %lld: %.3e\n",
                          modes[mi] == STRIX_RNN_LSTM ? "LSTM" : "GRU", (long long)bb, first);
            assert_true(first > 1e-6); // measured >= 4.9e-5 (LSTM), 5e-2 (GRU)
            assert_true(isfinite(first));
        }
        free(yh);
        free(rh);
        free(r);
        strix_tensor_free(&x);
        strix_tensor_free(&ry);
        release(&b);
    }
}

/* Relevance errors: before a forward, a rule other than epsilon, a wrong shape. */
static void test_lrp_errors(void **state) {
    strix_backend *be = *state;
    built b;
    strix_rnn *m = build_sized(&b, be, STRIX_RNN_GRU, 2, 3, 1, false, true);
    randomize_params(&b.ps, 3, 0.5);
    float zeros[64] = {0};
    int64_t sx[3] = {2, 4, 2}, sy[3] = {2, 4, 3}, sbad[3] = {2, 4, 2};
    strix_tensor x = tensor_from_host(be, 3, sx, zeros), ry = tensor_from_host(be, 3, sy, zeros);
    strix_tensor rb = tensor_from_host(be, 3, sbad, zeros);
    const strix_tensor *rx;
    set_epsilon(m, 1e-6f);
    assert_int_equal(strix_rnn_relevance(m, &ry, NULL, NULL, &rx, NULL, NULL), STRIX_ERR_ARG);
    OK(strix_rnn_forward(m, &x, NULL, NULL, NULL, NULL, NULL));
    assert_int_equal(strix_rnn_relevance(m, &rb, NULL, NULL, &rx, NULL, NULL), STRIX_ERR_SHAPE);
    assert_int_equal(strix_rnn_relevance(m, &ry, NULL, &ry, &rx, NULL, NULL), STRIX_ERR_ARG);
    m->base.rule.kind = STRIX_LRP_GAMMA;
    m->base.rule.gamma = 0.25f;
    assert_int_equal(strix_rnn_relevance(m, &ry, NULL, NULL, &rx, NULL, NULL),
                     STRIX_ERR_UNSUPPORTED);
    set_epsilon(m, 1e-6f);
    OK(strix_rnn_relevance(m, &ry, NULL, NULL, &rx, NULL, NULL));
    strix_tensor_free(&x);
    strix_tensor_free(&ry);
    strix_tensor_free(&rb);
    release(&b);
}

// ---- learning: running parity ------------------------------------------------------------------

/* Issue 12's running-parity XOR task: 6 fixed binary sequences of length 10, the target at step
 * t the XOR of bits 0..t. A 1-layer module (hidden 8) + Linear(8, 1) head trained with AdamW
 * (lr 0.02, no weight decay, full batch, BCE with logits) for a fixed number of steps classifies
 * all 60 steps (logit > 0 <=> parity 1). Seeds fixed: the run is deterministic. Measured: 60/60
 * for both from 100 steps on (loss 0.04), and with init seeds 1, 7, 99 as well; at 400 steps the
 * loss is 0.0014 (LSTM) and 0.0009 (GRU), asserted < 0.05; the test takes well under a second. */
static int parity_run(strix_backend *be, strix_rnn_mode mode, int steps, double *loss_out) {
    enum { NB = 6, NT = 10, NH = 8 };
    static const int bits[NB][NT] = {
        {1, 0, 1, 1, 0, 0, 1, 0, 1, 1}, {0, 1, 1, 0, 1, 0, 0, 1, 1, 1},
        {1, 1, 0, 0, 0, 1, 1, 1, 0, 1}, {0, 0, 1, 0, 1, 1, 0, 1, 0, 0},
        {1, 0, 0, 1, 1, 1, 0, 0, 1, 0}, {0, 1, 0, 1, 0, 1, 1, 0, 0, 1}};
    float xh[NB * NT], yt[NB * NT];
    for (int b = 0; b < NB; b++) {
        int par = 0;
        for (int t = 0; t < NT; t++) {
            par ^= bits[b][t];
            xh[b * NT + t] = (float)bits[b][t];
            yt[b * NT + t] = (float)par;
        }
    }
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_rnn_config cfg = strix_rnn_config_default(mode, 1, NH);
    strix_rnn *rnn;
    strix_linear *head;
    OK(strix_rnn_new(&ps, "rnn", &cfg, &rnn));
    OK(strix_linear_new_default(&ps, "head", NH, 1, true, &head));
    OK(strix_params_alloc(&ps));
    OK(strix_params_init(&ps, 1234));
    strix_optimizer *opt;
    strix_adamw_config ac = strix_adamw_defaults(0.0f);
    OK(strix_optimizer_adamw(&ps, &ac, &opt));
    strix_loss_workspace ws;
    strix_loss_workspace_init(&ws, be);
    int64_t sx[3] = {NB, NT, 1};
    strix_tensor x = tensor_from_host(be, 3, sx, xh), tgt = tensor_from_host(be, 3, sx, yt);
    strix_tensor dlog;
    OK(strix_tensor_new(be, 3, sx, &dlog));
    int correct = 0;
    for (int step = 0; step <= steps; step++) {
        const strix_tensor *y, *logits, *dy, *dx;
        OK(strix_rnn_forward(rnn, &x, NULL, NULL, &y, NULL, NULL));
        OK(strix_module_forward(&head->base, y, &logits));
        float loss;
        OK(strix_bce_with_logits_loss(&ws, logits->data, tgt.data, NB * NT, STRIX_REDUCTION_MEAN,
                                      dlog.data, 1.0f, &loss));
        *loss_out = loss;
        if (step == steps) { // evaluate the trained model
            float *lh = from_backend(be, logits->data, NB * NT);
            for (int i = 0; i < NB * NT; i++) correct += (lh[i] > 0.0f) == (yt[i] > 0.5f);
            free(lh);
            break;
        }
        OK(strix_params_zero_grad(&ps));
        OK(strix_module_backward(&head->base, &dlog, &dy));
        OK(strix_rnn_backward(rnn, dy, NULL, NULL, &dx, NULL, NULL));
        OK(strix_optimizer_step(opt, 0.02f));
    }
    strix_tensor_free(&x);
    strix_tensor_free(&tgt);
    strix_tensor_free(&dlog);
    strix_loss_workspace_free(&ws);
    strix_optimizer_free(opt);
    strix_module_free(&rnn->base);
    strix_module_free(&head->base);
    strix_params_free(&ps);
    return correct;
}

static void test_running_parity(void **state) {
    strix_backend *be = *state;
    strix_rnn_mode modes[2] = {STRIX_RNN_LSTM, STRIX_RNN_GRU};
    for (int i = 0; i < 2; i++) {
        double loss = 0.0;
        int correct = parity_run(be, modes[i], PARITY_STEPS, &loss);
        print_message("running parity %s: %d/60 after %d AdamW steps, loss %.4f\n",
                      i == 0 ? "LSTM" : "GRU", correct, PARITY_STEPS, loss);
        assert_int_equal(correct, 60);
        assert_true(loss < 0.05);
    }
}

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_adamw_steps),         BACKEND_TEST(test_state_steps),
        BACKEND_TEST(test_golden_lstm),         BACKEND_TEST(test_golden_gru),
        BACKEND_TEST(test_golden_rnn),          BACKEND_TEST(test_state_dict_from_torch),
        BACKEND_TEST(test_module_io_and_state), BACKEND_TEST(test_finite_differences),
        BACKEND_TEST(test_dropout),             BACKEND_TEST(test_names_and_init),
        BACKEND_TEST(test_errors),              BACKEND_TEST(test_lrp_golden),
        BACKEND_TEST(test_lrp_conservation),    BACKEND_TEST(test_lrp_reaches_early_steps),
        BACKEND_TEST(test_lrp_errors),          BACKEND_TEST(test_running_parity),
    };
    return run_on_each_backend("recurrent", tests, sizeof tests / sizeof tests[0]) ? 1 : 0;
}
