/*
 * test_ops.c - every backend primitive on every backend, against PyTorch goldens
 * (tests/golden/ops/<case>.bin, written by tools/ref/ops_ref.py), plus the exact edge cases of
 * docs/SEMANTICS.md (edge cases).
 *
 * Table-driven (ggml test-backend-ops style, tests/ops/op_harness.h): each table lists {golden
 * file, runner, tolerance}; each case runs on every backend of tl_backend_names[] (a new backend
 * = a new name there), at 1 and 2 threads, bit-identical. This file holds the GPT's primitives
 * (the "core" table) and main(); tests/ops/cases_<group>.c hold the others.
 * Not here: GEMM on large and odd shapes (test_gemm.c), gradients by finite differences.
 */
#include "ops/op_harness.h"
#include "backends/cpu/cpu_internal.h" /* cpu_set_parallel_min_work */
#include "core/backend_impl.h"
#include "kernels/dropout.h"
#include "strix/nn.h"

// ---- runners (one per golden file) -------------------------------------------------------------

static void run_softmax_rows(op_run *run) {
    const tl_array *x = need(run, "x");
    size_t rows = (size_t)x->shape[0], cols = (size_t)x->shape[1], n = x->count;
    float *in = input(run, "x"), *dy = input(run, "dy");
    float *y = output(run, n), *dx = output(run, n);
    OK(strix_softmax_rows(run->be, in, y, rows, cols));
    collect(run, "y", "y", y, n, false);
    OK(strix_softmax_rows_backward(run->be, y, dy, dx, rows, cols));
    collect(run, "dx", "dx", dx, n, false);
    OK(strix_softmax_rows(run->be, in, in, rows, cols)); /* in place */
    collect(run, "y (in place)", "y", in, n, false);
    OK(strix_softmax_rows_backward(run->be, y, dy, dy, rows, cols)); /* dx aliases dy */
    collect(run, "dx (in place)", "dx", dy, n, false);
}

static void run_logsumexp_rows(op_run *run) {
    const tl_array *x = need(run, "x");
    size_t rows = (size_t)x->shape[0], cols = (size_t)x->shape[1];
    float *out = output(run, rows);
    OK(strix_logsumexp_rows(run->be, input(run, "x"), out, rows, cols));
    collect(run, "out", "out", out, rows, false);
}

static void run_layer_norm(op_run *run) {
    const tl_array *x = need(run, "x");
    size_t rows = (size_t)x->shape[0], cols = (size_t)x->shape[1], n = x->count;
    float eps = scalar(run, "eps");
    float *in = input(run, "x"), *gamma = input(run, "gamma"), *beta = input(run, "beta");
    float *dout = input(run, "dout");
    float *xhat = output(run, n), *out = output(run, n), *std = output(run, rows);
    float *dx = output(run, n);
    OK(strix_layer_norm_forward(run->be, in, gamma, beta, xhat, out, std, rows, cols, eps));
    collect(run, "out", "out", out, n, false);
    collect(run, "xhat", "xhat", xhat, n, false);
    collect(run, "row_std", "row_std", std, rows, false);
    OK(strix_layer_norm_backward(run->be, dout, gamma, xhat, std, dx, rows, cols));
    collect(run, "dx", "dx", dx, n, false);
    OK(strix_layer_norm_forward(run->be, in, NULL, NULL, xhat, out, std, rows, cols, eps));
    collect(run, "out (no gamma/beta)", "out_plain", out, n, false);
    OK(strix_layer_norm_backward(run->be, dout, NULL, xhat, std, dout, rows, cols));
    collect(run, "dx (no gamma, in place)", "dx_plain", dout, n, false);
}

static const struct {
    strix_act op;
    const char *name;
} activations[] = {
    {STRIX_ACT_RELU, "relu"},           {STRIX_ACT_NEG, "neg"},   {STRIX_ACT_TANH, "tanh"},
    {STRIX_ACT_SIGMOID, "sigmoid"},     {STRIX_ACT_SILU, "silu"}, {STRIX_ACT_EXP, "exp"},
    {STRIX_ACT_GELU_TANH, "gelu_tanh"}, {STRIX_ACT_GELU, "gelu"},
};

static void run_activations(op_run *run) {
    size_t n = count_of(run, "x");
    float *x = input(run, "x"), *dy = input(run, "dy");
    for (size_t a = 0; a < sizeof activations / sizeof activations[0]; a++) {
        char y_name[32], dx_name[32];
        snprintf(y_name, sizeof y_name, "y_%s", activations[a].name);
        snprintf(dx_name, sizeof dx_name, "dx_%s", activations[a].name);
        float *y = output(run, n), *dx = output(run, n);
        OK(strix_elementwise(run->be, activations[a].op, x, y, n));
        collect(run, y_name, need(run, y_name)->name, y, n, false);
        OK(strix_elementwise_backward(run->be, activations[a].op, x, dy, dx, n));
        collect(run, dx_name, need(run, dx_name)->name, dx, n, false);
    }
}

static void run_cross_entropy(op_run *run) {
    const tl_array *logits = need(run, "logits");
    size_t rows = (size_t)logits->shape[0], V = (size_t)logits->shape[1];
    float grad_scale = scalar(run, "grad_scale");
    float *x = input(run, "logits");
    int32_t *targets = input_i32(run, "targets");
    float *losses = output(run, rows), *dlogits = output(run, rows * V);
    OK(strix_softmax_cross_entropy(run->be, x, targets, losses, dlogits, rows, V, grad_scale));
    collect(run, "losses", "losses", losses, rows, false);
    collect(run, "dlogits", "dlogits", dlogits, rows * V, false);
    float *losses_only = output(run, rows);
    OK(strix_softmax_cross_entropy(run->be, x, targets, losses_only, NULL, rows, V, grad_scale));
    collect(run, "losses (no grad)", "losses", losses_only, rows, false);
    OK(strix_softmax_cross_entropy(run->be, x, targets, losses, x, rows, V, grad_scale));
    collect(run, "dlogits (in place)", "dlogits", x, rows * V, false);
}

static void run_attn_softmax_causal(op_run *run) {
    const tl_array *scores = need(run, "scores");
    size_t slices = (size_t)scores->shape[0], T = (size_t)scores->shape[1], n = scores->count;
    float scale = scalar(run, "scale");
    float *s = input(run, "scores"), *dp = input(run, "dprobs");
    float *p = output(run, n), *ds = output(run, n);
    OK(strix_attn_softmax_causal(run->be, s, p, slices, T, scale));
    collect(run, "probs", "probs", p, n, false);
    OK(strix_attn_softmax_causal_backward(run->be, p, dp, ds, slices, T, scale));
    collect(run, "dscores", "dscores", ds, n, false);
    OK(strix_attn_softmax_causal(run->be, s, s, slices, T, scale));
    collect(run, "probs (in place)", "probs", s, n, false);
    OK(strix_attn_softmax_causal_backward(run->be, p, dp, dp, slices, T, scale));
    collect(run, "dscores (in place)", "dscores", dp, n, false);
}

static void run_rope(op_run *run) {
    const tl_array *x = need(run, "x");
    size_t rows = (size_t)x->shape[0], head_dim = (size_t)x->shape[1];
    size_t seq_len = (size_t)scalar(run, "seq_len"), pos0 = (size_t)scalar(run, "pos0");
    float *in = input(run, "x"), *cos_t = input(run, "cos"), *sin_t = input(run, "sin");
    float *out = output(run, x->count);
    OK(strix_rope_rotate(run->be, in, head_dim, cos_t, sin_t, out, head_dim, rows, seq_len, pos0,
                         head_dim, false));
    collect(run, "out", "out", out, x->count, false);
    OK(strix_rope_rotate(run->be, in, head_dim, cos_t, sin_t, out, head_dim, rows, seq_len, pos0,
                         head_dim, true));
    collect(run, "inverse", "inv", out, x->count, false);
    /* Strided and in place: rows live in a wider buffer (row stride ld), like a head slice of
     * a (B,T,3C) activation; the gap columns must stay untouched. */
    size_t ld = head_dim + 5;
    float *host = tl_malloc_floats(rows * ld);
    for (size_t r = 0; r < rows; r++) {
        memcpy(host + r * ld, x->data + r * head_dim, head_dim * sizeof(float));
        for (size_t j = head_dim; j < ld; j++) host[r * ld + j] = -7.0f;
    }
    float *wide = keep(run, tl_upload(run->be, host, rows * ld * sizeof(float)));
    OK(strix_rope_rotate(run->be, wide, ld, cos_t, sin_t, wide, ld, rows, seq_len, pos0,
                         head_dim, false));
    tl_download(run->be, host, wide, rows * ld * sizeof(float));
    float *packed = output(run, rows * head_dim);
    float *packed_host = tl_malloc_floats(rows * head_dim);
    for (size_t r = 0; r < rows; r++) {
        memcpy(packed_host + r * head_dim, host + r * ld, head_dim * sizeof(float));
        for (size_t j = head_dim; j < ld; j++) assert_true(host[r * ld + j] == -7.0f);
    }
    OK(strix_copy(run->be, packed, packed_host, rows * head_dim * sizeof(float), STRIX_COPY_H2D));
    collect(run, "out (strided, in place)", "out", packed, rows * head_dim, false);
    free(host);
    free(packed_host);
}

static void run_permute_0213(op_run *run) {
    const tl_array *x = need(run, "x");
    float *out = output(run, x->count);
    OK(strix_permute_0213(run->be, input(run, "x"), out, (size_t)x->shape[0],
                          (size_t)x->shape[1], (size_t)x->shape[2], (size_t)x->shape[3]));
    collect(run, "out", "out", out, x->count, true);
}

static void run_gather_rows(op_run *run) {
    const tl_array *table = need(run, "table");
    size_t count = count_of(run, "idx"), dim = (size_t)table->shape[1];
    float *out = output(run, count * dim);
    OK(strix_gather_rows(run->be, input(run, "table"), input_i32(run, "idx"), out, count, dim));
    collect(run, "out", "out", out, count * dim, true);
}

static void run_scatter_add_rows(op_run *run) {
    const tl_array *table = need(run, "table");
    size_t count = count_of(run, "idx"), dim = (size_t)table->shape[1];
    float *t = input(run, "table");
    OK(strix_scatter_add_rows(run->be, input(run, "src"), input_i32(run, "idx"), t, count, dim));
    collect(run, "out", "out", t, table->count, false);
}

static void run_adam_step(op_run *run) {
    size_t n = count_of(run, "param");
    float *p = input(run, "param"), *m = input(run, "m"), *v = input(run, "v");
    OK(strix_adam_step(run->be, p, input(run, "grad"), m, v, n, scalar(run, "lr"),
                       scalar(run, "beta1"), scalar(run, "beta2"), scalar(run, "eps"),
                       scalar(run, "bc1"), scalar(run, "bc2")));
    collect(run, "param", "param_out", p, n, false);
    collect(run, "m", "m_out", m, n, false);
    collect(run, "v", "v_out", v, n, false);
}

static void top_k_one(op_run *run, const char *input_name, size_t k, bool largest,
                      const char *vals_name, const char *idx_name) {
    const tl_array *x = need(run, input_name);
    size_t rows = (size_t)x->shape[0], cols = (size_t)x->shape[1];
    float *vals = output(run, rows * k);
    int32_t *idx = keep(run, tl_device_alloc(run->be, rows * k * sizeof(int32_t)));
    OK(strix_top_k_rows(run->be, input(run, input_name), vals, idx, rows, cols, k, largest));
    collect(run, vals_name, vals_name, vals, rows * k, true);
    collect_i32(run, idx_name, idx_name, idx, rows * k);
}

static void run_top_k_rows(op_run *run) {
    top_k_one(run, "x", 7, true, "vals_largest", "idx_largest");
    top_k_one(run, "x", 7, false, "vals_smallest", "idx_smallest");
    top_k_one(run, "small", 9, true, "small_vals_largest", "small_idx_largest");
    top_k_one(run, "small", 9, false, "small_vals_smallest", "small_idx_smallest");
}

static void run_column_sums(op_run *run) {
    const tl_array *x = need(run, "x");
    size_t rows = (size_t)x->shape[0], cols = (size_t)x->shape[1];
    float *in = input(run, "x");
    float *out = output(run, cols); /* NaN-filled: beta == 0 must not read it */
    OK(strix_column_sums(run->be, in, out, rows, cols, 0.0f));
    collect(run, "out", "out", out, cols, false);
    float *prev = input(run, "prev");
    OK(strix_column_sums(run->be, in, prev, rows, cols, 0.5f));
    collect(run, "out (beta 0.5)", "out_beta", prev, cols, false);
}

static void run_add_row_vector(op_run *run) {
    const tl_array *x = need(run, "x");
    size_t rows = (size_t)x->shape[0], cols = (size_t)x->shape[1];
    float *in = input(run, "x"), *row = input(run, "row"), *out = output(run, x->count);
    OK(strix_add_row_vector(run->be, in, row, out, rows, cols));
    collect(run, "out", "out", out, x->count, false);
    OK(strix_add_row_vector(run->be, in, row, in, rows, cols));
    collect(run, "out (in place)", "out", in, x->count, false);
}

static void run_axpby(op_run *run) {
    size_t n = count_of(run, "x");
    float alpha = scalar(run, "alpha"), beta = scalar(run, "beta");
    float *x = input(run, "x"), *y = input(run, "y"), *out = output(run, n);
    OK(strix_axpby(run->be, alpha, x, beta, y, out, n));
    collect(run, "out", "out", out, n, false);
    OK(strix_axpby(run->be, alpha, x, beta, y, y, n));
    collect(run, "out (aliases y)", "out", y, n, false);
}

static void run_gemm_ex(op_run *run) {
    size_t m = (size_t)scalar(run, "m"), k = (size_t)scalar(run, "k"), n = (size_t)scalar(run, "n");
    static const char *const tags[] = {"nn", "nt", "tn", "tt"};
    for (int t = 0; t < 4; t++) {
        bool ta = tags[t][0] == 't', tb = tags[t][1] == 't';
        char a_name[16], b_name[16], c_name[16], out0[16], out1[16];
        snprintf(a_name, sizeof a_name, "a_%s", tags[t]);
        snprintf(b_name, sizeof b_name, "b_%s", tags[t]);
        snprintf(c_name, sizeof c_name, "c_%s", tags[t]);
        snprintf(out0, sizeof out0, "out0_%s", tags[t]);
        snprintf(out1, sizeof out1, "out1_%s", tags[t]);
        float *a = input(run, a_name), *b = input(run, b_name);
        float *c = output(run, m * n); /* NaN-filled: beta == 0 must not read it */
        OK(strix_gemm_ex(run->be, a, ta, b, tb, c, m, k, n, 0.0f));
        collect(run, out0, need(run, out0)->name, c, m * n, false);
        float *c1 = input(run, c_name);
        OK(strix_gemm_ex(run->be, a, ta, b, tb, c1, m, k, n, 1.0f));
        collect(run, out1, need(run, out1)->name, c1, m * n, false);
    }
}

/* atol/rtol 1e-5/1e-4 everywhere: every output is O(1) and each op is a handful of roundings
 * away from PyTorch's float32 (or float64-rounded) result. */
const op_case ops_core_cases[] = {
    {"softmax_rows", run_softmax_rows, ATOL, RTOL},
    {"logsumexp_rows", run_logsumexp_rows, ATOL, RTOL},
    {"layer_norm", run_layer_norm, ATOL, RTOL},
    {"activations", run_activations, ATOL, RTOL},
    {"cross_entropy", run_cross_entropy, ATOL, RTOL},
    {"attn_softmax_causal", run_attn_softmax_causal, ATOL, RTOL},
    {"rope", run_rope, ATOL, RTOL},
    {"permute_0213", run_permute_0213, 0.0, 0.0},
    {"gather_rows", run_gather_rows, 0.0, 0.0},
    {"scatter_add_rows", run_scatter_add_rows, ATOL, RTOL},
    {"adam_step", run_adam_step, ATOL, RTOL},
    {"top_k_rows", run_top_k_rows, 0.0, 0.0},
    {"column_sums", run_column_sums, ATOL, RTOL},
    {"add_row_vector", run_add_row_vector, ATOL, RTOL},
    {"axpby", run_axpby, ATOL, RTOL},
    {"gemm_ex", run_gemm_ex, ATOL, RTOL},
};

/* Every table: the core one here and those of tests/ops/cases_<group>.c. */
static void test_golden_cases(void **state) {
    (void)state;
    const struct {
        const op_case *cases;
        size_t count;
    } tables[] = {
        {ops_core_cases, sizeof ops_core_cases / sizeof ops_core_cases[0]},
        {ops_extra_cases, ops_extra_case_count},
        {ops_cnn_cases, ops_cnn_case_count},
        {ops_lrp_cases, ops_lrp_case_count},
        {ops_recurrent_cases, ops_recurrent_case_count},
    };
    int failures = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        failures += run_op_cases(tables[t].cases, tables[t].count);
    printf("  %d op x backend runs failed\n", failures);
    assert_int_equal(failures, 0);
}

// ---- exact edge cases (docs/SEMANTICS.md) -------------------------------------------------

static void test_relu_kink(void **state) {
    (void)state;
    const float x[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 2.0f};
    const float g[] = {1.0f, 1.0f, 1.0f, 1.0f, 3.0f};
    const float want_dx[] = {0.0f, 0.0f, 1.0f, 0.0f, 3.0f};
    const float want_y[] = {0.0f, -0.0f, 1e-30f, 0.0f, 2.0f};
    FOR_EACH_BACKEND(be) {
        float *dx = up(be, x, 5), *dg = up(be, g, 5), *dy = up(be, x, 5);
        float got[5];
        OK(strix_elementwise_backward(be, STRIX_ACT_RELU, dx, dg, dg, 5));
        down(be, got, dg, 5);
        assert_true(tl_check_bits("relu backward", got, want_dx, 5));
        OK(strix_elementwise(be, STRIX_ACT_RELU, dx, dy, 5));
        down(be, got, dy, 5);
        assert_true(tl_check_bits("relu forward", got, want_y, 5));
        strix_free(be, dx), strix_free(be, dg), strix_free(be, dy);
    }
}

static void test_softmax_infinities(void **state) {
    (void)state;
    const float ninf = -INFINITY;
    const float x[] = {ninf, 0.0f, ninf, 0.0f, /* */ ninf, ninf, ninf, ninf};
    const float want[] = {0.0f, 0.5f, 0.0f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f};
    const float dy[] = {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, 2.0f, 3.0f, 4.0f};
    const float want_dx[] = {0.0f, -0.5f, 0.0f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f};
    const float want_lse[] = {0.69314718f, -INFINITY};
    FOR_EACH_BACKEND(be) {
        float *in = up(be, x, 8), *out = up(be, x, 8), *d = up(be, dy, 8), *lse = up(be, x, 2);
        float got[8];
        OK(strix_softmax_rows(be, in, out, 2, 4));
        down(be, got, out, 8);
        assert_true(tl_check_bits("softmax with -inf", got, want, 8));
        OK(strix_softmax_rows_backward(be, out, d, d, 2, 4));
        down(be, got, d, 8);
        assert_true(tl_check_close("softmax backward with -inf", got, want_dx, 8, 0.0, 0.0));
        OK(strix_logsumexp_rows(be, in, lse, 2, 4));
        down(be, got, lse, 2);
        assert_true(tl_check_close("logsumexp with -inf", got, want_lse, 2, 1e-6, 0.0));
        assert_true(isinf(got[1]) && got[1] < 0);
        /* attention: a query row whose visible keys are all -inf carries no mass */
        const float scores[] = {ninf, 5.0f, 1.0f, ninf};
        float *s = up(be, scores, 4);
        OK(strix_attn_softmax_causal(be, s, s, 1, 2, 1.0f));
        down(be, got, s, 4);
        const float want_p[] = {0.0f, 0.0f, 1.0f, 0.0f}; /* row 0 masked; row 1 = (1, -inf) */
        assert_true(tl_check_bits("attn softmax all masked", got, want_p, 4));
        strix_free(be, in), strix_free(be, out), strix_free(be, d), strix_free(be, lse);
        strix_free(be, s);
    }
}

static void test_cross_entropy_edges(void **state) {
    (void)state;
    const float ninf = -INFINITY;
    const float logits[] = {ninf, ninf, 1.0f, 2.0f, ninf, /* */ 3.0f, 1.0f, 0.0f, 2.0f, 5.0f};
    const int32_t targets[] = {3, -1};
    FOR_EACH_BACKEND(be) {
        float *x = up(be, logits, 10), *losses = up(be, logits, 2), *grad = up(be, logits, 10);
        int32_t *t = tl_upload(be, targets, sizeof targets);
        float got[10], loss[2];
        OK(strix_softmax_cross_entropy(be, x, t, losses, grad, 2, 5, 0.5f));
        down(be, got, grad, 10);
        down(be, loss, losses, 2);
        double want_loss = log(exp(-1.0) + 1.0); /* lse(1, 2) - 2 */
        assert_true(isfinite(loss[0]) && fabs(loss[0] - want_loss) < 1e-6);
        assert_true(loss[1] == 0.0f);
        for (int j = 0; j < 5; j++) {
            if (j == 0 || j == 1 || j == 4) assert_true(got[j] == 0.0f && !signbit(got[j]));
        }
        assert_true(fabs(got[3] - 0.5 * (1.0 / (1.0 + exp(-1.0)) - 1.0)) < 1e-6);
        for (int j = 5; j < 10; j++) assert_true(got[j] == 0.0f); /* ignored row */
        strix_free(be, x), strix_free(be, losses), strix_free(be, grad), strix_free(be, t);
    }
}

static void test_top_k_nan_and_ties(void **state) {
    (void)state;
    const float nan = NAN;
    const float row[] = {1.0f, nan, 3.0f, 3.0f, nan, -1.0f, 3.0f};
    struct {
        size_t k;
        bool largest;
        int32_t idx[7];
    } cases[] = {
        {4, true, {1, 4, 2, 3}},
        {7, true, {1, 4, 2, 3, 6, 0, 5}},     /* k == cols */
        {7, false, {5, 0, 2, 3, 6, 1, 4}},    /* torch.topk: NaN is the largest value */
        {3, false, {5, 0, 2}},
    };
    const float equal[] = {2.0f, 2.0f, 2.0f, 2.0f, 2.0f};
    FOR_EACH_BACKEND(be) {
        float *in = up(be, row, 7), *vals = up(be, row, 7), *eq = up(be, equal, 5);
        int32_t *idx = tl_device_alloc(be, 7 * sizeof(int32_t));
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            size_t k = cases[c].k;
            int32_t got_idx[7];
            float got_vals[7], want_vals[7];
            OK(strix_top_k_rows(be, in, vals, idx, 1, 7, k, cases[c].largest));
            tl_download(be, got_idx, idx, k * sizeof(int32_t));
            down(be, got_vals, vals, k);
            assert_true(tl_check_i32("top-k idx", got_idx, cases[c].idx, k));
            for (size_t j = 0; j < k; j++) want_vals[j] = row[cases[c].idx[j]];
            assert_true(tl_check_bits("top-k vals", got_vals, want_vals, k));
        }
        int32_t got_idx[5];
        const int32_t want_idx[] = {0, 1, 2, 3, 4};
        OK(strix_top_k_rows(be, eq, vals, idx, 1, 5, 5, true));
        tl_download(be, got_idx, idx, sizeof got_idx);
        assert_true(tl_check_i32("top-k all ties", got_idx, want_idx, 5));
        OK(strix_top_k_rows(be, eq, vals, idx, 1, 5, 3, false));
        tl_download(be, got_idx, idx, 3 * sizeof(int32_t));
        assert_true(tl_check_i32("top-k all ties, smallest", got_idx, want_idx, 3));
        strix_free(be, in), strix_free(be, vals), strix_free(be, eq), strix_free(be, idx);
    }
}

static void test_dropout_mask(void **state) {
    (void)state;
    const size_t n = 100000;
    const float p = 0.3f, scale = 1.0f / 0.7f;
    const uint64_t seed = 42, offset = 1000;
    for (uint64_t k = 0; k < 4096; k++) /* the kernel's device-callable copy of U(seed, k) */
        assert_true(strix_kernel_uniform(seed ^ k, k * 977) == strix_uniform_counter(seed ^ k, k * 977));
    float *host = tl_malloc_floats(n), *got = tl_malloc_floats(n), *mask = tl_malloc_floats(n);
    tl_fill_uniform(host, n, 7, -2.0f, 2.0f);
    FOR_EACH_BACKEND(be) {
        float *in = up(be, host, n), *out = up(be, host, n), *dmask = up(be, host, n);
        OK(strix_dropout_forward(be, in, out, dmask, n, p, scale, seed, offset));
        down(be, got, out, n);
        down(be, mask, dmask, n);
        size_t dropped = 0, bad = 0;
        for (size_t i = 0; i < n; i++) {
            bool drop = strix_uniform_counter(seed, offset + i) < p;
            float want = drop ? 0.0f : host[i] * scale;
            float want_mask = drop ? 0.0f : 1.0f;
            if (memcmp(&got[i], &want, 4) != 0 || memcmp(&mask[i], &want_mask, 4) != 0) bad++;
            dropped += drop;
        }
        assert_int_equal(bad, 0);
        double fraction = (double)dropped / (double)n;
        assert_true(fabs(fraction - p) < 0.01);
        OK(strix_dropout_forward(be, in, in, NULL, n, p, scale, seed, offset)); /* no mask */
        down(be, mask, in, n);
        assert_true(tl_check_bits("dropout in place, no mask", mask, got, n));
        strix_free(be, in), strix_free(be, out), strix_free(be, dmask);
    }
    free(host), free(got), free(mask);
}

static void test_reductions(void **state) {
    (void)state;
    const size_t n = 1000;
    float *host = tl_malloc_floats(n), *other = tl_malloc_floats(n), *big = tl_malloc_floats(n);
    tl_fill_uniform(host, n, 11, -1.0f, 1.0f);
    tl_fill_uniform(other, n, 12, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) big[i] = 1e20f; /* Σx² = 1e43: overflows float, not double */
    float want_sum = 0.0f, want_dot = 0.0f;
    for (size_t i = 0; i < n; i++) want_sum += host[i], want_dot += host[i] * other[i];
    FOR_EACH_BACKEND(be) {
        float *x = up(be, host, n), *y = up(be, other, n), *b = up(be, big, n);
        float sum = 0.0f, dot = 0.0f;
        double squares = 0.0;
        OK(strix_sum(be, x, n, &sum));
        OK(strix_dot(be, x, y, n, &dot));
        assert_true(sum == want_sum && dot == want_dot); /* ascending, from 0.0f */
        OK(strix_sum_squares(be, b, n, &squares));
        assert_true(isfinite(squares));
        assert_true(fabs(squares / (1000.0 * (double)1e20f * (double)1e20f) - 1.0) < 1e-12);
        /* The documented 32-lane order, bit for bit on the CPU and on a GPU's exact twin; a
         * GPU's default block tree gives it to double rounding. */
        strix_backend *twin = op_exact_twin(bi_);
        FOR_BACKEND_AND_TWIN(on, be, twin) {
            bool bits = strix_backend_device(on) == STRIX_DEVICE_CPU || on == twin;
            float *xs = up(on, host, n);
            for (size_t len = 0; len <= n; len += 45) {
                double lanes[32] = {0.0};
                for (size_t i = 0; i < len; i++)
                    lanes[i % 32] += (double)host[i] * (double)host[i];
                for (size_t half = 16; half > 0; half /= 2)
                    for (size_t l = 0; l < half; l++) lanes[l] += lanes[l + half];
                OK(strix_sum_squares(on, xs, len, &squares));
                assert_true(bits ? squares == lanes[0]
                                 : fabs(squares - lanes[0]) <= 1e-14 * lanes[0]);
            }
            strix_free(on, xs);
        }
        strix_backend_free(twin);
        OK(strix_sum(be, x, 0, &sum));
        assert_true(sum == 0.0f);
        strix_free(be, x), strix_free(be, y), strix_free(be, b);
    }
    free(host), free(other), free(big);
}

static void test_beta_zero_ignores_nan(void **state) {
    (void)state;
    const float x[] = {1.0f, -2.0f, 3.0f, 0.5f};
    const float nan4[] = {NAN, NAN, NAN, NAN};
    const float want[] = {0.5f, -1.0f, 1.5f, 0.25f};
    FOR_EACH_BACKEND(be) {
        float *dx = up(be, x, 4), *dy = up(be, nan4, 4), *out = up(be, nan4, 4);
        float got[4];
        OK(strix_axpby(be, 0.5f, dx, 0.0f, dy, out, 4));
        down(be, got, out, 4);
        assert_true(tl_check_bits("axpby beta 0, NaN y", got, want, 4));
        OK(strix_axpby(be, 0.5f, dx, 0.0f, NULL, dx, 4)); /* y may be NULL when beta == 0 */
        down(be, got, dx, 4);
        assert_true(tl_check_bits("axpby beta 0, NULL y", got, want, 4));
        /* gemm (2x2)·(2x2) into NaN with beta 0 */
        const float a[] = {1.0f, 2.0f, 3.0f, 4.0f};
        const float want_c[] = {7.0f, 10.0f, 15.0f, 22.0f};
        float *da = up(be, a, 4), *dc = up(be, nan4, 4);
        OK(strix_gemm_ex(be, da, false, da, false, dc, 2, 2, 2, 0.0f));
        down(be, got, dc, 4);
        assert_true(tl_check_bits("gemm beta 0, NaN out", got, want_c, 4));
        strix_free(be, dx), strix_free(be, dy), strix_free(be, out), strix_free(be, da);
        strix_free(be, dc);
    }
}

/* Our own expf/erff (kernels/mathf.h) at the edges of their range: exact limits, NaN kept. */
static void test_exp_gelu_edges(void **state) {
    (void)state;
    const float x[] = {NAN, -INFINITY, INFINITY, -100.0f, 100.0f, 0.0f, -87.0f, 88.0f};
    FOR_EACH_BACKEND(be) {
        float *dx = up(be, x, 8), *dy = up(be, x, 8);
        float got[8];
        OK(strix_elementwise(be, STRIX_ACT_EXP, dx, dy, 8));
        down(be, got, dy, 8);
        assert_true(isnan(got[0]));
        /* exp(-100) = 3.8e-44 is subnormal: libm keeps it, mathf.h (softmax, GELU) flushes it */
        assert_true(got[1] == 0.0f && got[2] == INFINITY && got[3] >= 0.0f && got[3] < 1e-40f);
        assert_true(got[4] == INFINITY && got[5] == 1.0f);
        assert_true(fabs(got[6] / exp(-87.0) - 1.0) < 2.4e-7); /* 1 ulp ~ 1.2e-7 relative */
        assert_true(fabs(got[7] / exp(88.0) - 1.0) < 2.4e-7);
        OK(strix_elementwise(be, STRIX_ACT_GELU, dx, dy, 8));
        down(be, got, dy, 8);
        assert_true(isnan(got[0]) && isnan(got[1])); /* PyTorch: gelu(-inf) = -inf·0 = nan */
        assert_true(got[2] == INFINITY && got[3] == 0.0f);
        assert_true(got[4] == 100.0f && got[5] == 0.0f);
        strix_free(be, dx), strix_free(be, dy);
    }
}

/* add and mul: one rounding each, so every backend gives the host's bits; 1001 elements (a tail
 * past any block size), in place and out of place. */
static void test_add_mul_exact(void **state) {
    (void)state;
    enum { N = 1001 };
    float a[N], b[N], sum[N], prod[N], got[N];
    tl_fill_uniform(a, N, 71, -3.0f, 3.0f);
    tl_fill_uniform(b, N, 72, -3.0f, 3.0f);
    for (int i = 0; i < N; i++) sum[i] = a[i] + b[i], prod[i] = a[i] * b[i];
    FOR_EACH_BACKEND(be) {
        float *da = up(be, a, N), *db = up(be, b, N), *out = up(be, a, N);
        OK(strix_add(be, da, db, out, N));
        down(be, got, out, N);
        assert_true(tl_check_bits("add", got, sum, N));
        OK(strix_mul(be, da, db, da, N)); /* out aliases a */
        down(be, got, da, N);
        assert_true(tl_check_bits("mul in place", got, prod, N));
        strix_free(be, da);
        strix_free(be, db);
        strix_free(be, out);
    }
}

/* strix_gemm_batched with row strides and batch strides larger than the items (a head slice of
 * a packed buffer), A transposed, alpha and beta: against a float64 host product, and the gaps
 * between the items of C untouched. (test_gemm.c covers large and odd shapes.) */
static void test_gemm_batched_strided(void **state) {
    (void)state;
    enum { BATCH = 3, M = 5, K = 7, N = 4, LDA = M + 2, LDB = N + 3, LDC = N + 1 };
    enum { SA = K * LDA + 3, SB = K * LDB + 1, SC = M * LDC + 2 };
    float a[BATCH * SA], b[BATCH * SB], c[BATCH * SC], want[BATCH * SC], got[BATCH * SC];
    tl_fill_uniform(a, BATCH * SA, 81, -1.0f, 1.0f);
    tl_fill_uniform(b, BATCH * SB, 82, -1.0f, 1.0f);
    tl_fill_uniform(c, BATCH * SC, 83, -1.0f, 1.0f);
    const float alpha = 0.5f, beta = 1.0f;
    memcpy(want, c, sizeof c);
    for (int t = 0; t < BATCH; t++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0.0; /* op(A)[i][p] = A[p][i] (ta), B[p][j] */
                for (int p = 0; p < K; p++)
                    acc += (double)a[t * SA + p * LDA + i] * b[t * SB + p * LDB + j];
                float *cij = &want[t * SC + i * LDC + j];
                *cij = (float)(alpha * acc + beta * (double)*cij);
            }
    FOR_EACH_BACKEND(be) {
        float *da = up(be, a, BATCH * SA), *db = up(be, b, BATCH * SB);
        float *dc = up(be, c, BATCH * SC);
        strix_gemm_batch g = {.a = da, .lda = LDA, .stride_a = SA, .ta = true,
                              .b = db, .ldb = LDB, .stride_b = SB, .tb = false,
                              .c = dc, .ldc = LDC, .stride_c = SC,
                              .m = M, .k = K, .n = N, .batch = BATCH,
                              .alpha = alpha, .beta = beta, .skip = STRIX_GEMM_FULL};
        OK(strix_gemm_batched(be, &g));
        down(be, got, dc, BATCH * SC);
        assert_true(tl_check_close("gemm_batched", got, want, BATCH * SC, ATOL, RTOL));
        for (int t = 0; t < BATCH; t++) /* the gaps: exactly the input */
            for (int e = 0; e < SC; e++)
                if ((e / LDC >= M || e % LDC >= N) && got[t * SC + e] != c[t * SC + e])
                    fail_msg("gemm_batched wrote C[%d] outside item %d", t * SC + e, t);
        strix_free(be, da);
        strix_free(be, db);
        strix_free(be, dc);
    }
}

/* strix_gemm_pack_b: a batched GEMM reading B packed once gives the bits of the same call
 * without packing, on every backend, at 1 and at 2 threads with every loop pushed through the
 * thread pool: both transposes, edge panels (n not a multiple of the micro-tile), several KC
 * slices and NC column blocks, strides, alpha and beta; and item i of a packing used alone
 * (b + i·stride_b, packed + i·(floats of one item)), as a recurrent layer does for GRU's n gate.
 * Backends that pack nothing (cpu-blas, GPUs) ask for 0 floats and get packed_b NULL. */
static void test_gemm_pack_b(void **state) {
    (void)state;
    static const size_t shapes[][3] = {{1, 1, 1}, {5, 7, 37}, {32, 300, 300}, {70, 40, 17}};
    enum { BATCH = 3 };
    FOR_EACH_BACKEND(be) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int v = 0; v < 4; v++) {
                size_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
                bool ta = v == 3, tb = v % 2 == 1;
                size_t lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 1;
                size_t sa = (ta ? k : m) * lda, sb = (tb ? n : k) * ldb + 3, sc = m * ldc;
                size_t na = BATCH * sa, nb = BATCH * sb, nc = BATCH * sc;
                float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float));
                float *c = malloc(nc * sizeof(float)), *want = malloc(nc * sizeof(float));
                float *got = malloc(nc * sizeof(float));
                assert_true(a && b && c && want && got);
                tl_fill_uniform(a, na, 101 + s, -1.0f, 1.0f);
                tl_fill_uniform(b, nb, 102 + s, -1.0f, 1.0f);
                tl_fill_uniform(c, nc, 103 + s, -1.0f, 1.0f);
                float *da = up(be, a, na), *db = up(be, b, nb);
                strix_gemm_batch g = {.a = da, .lda = lda, .stride_a = sa, .ta = ta,
                                      .b = db, .ldb = ldb, .stride_b = sb, .tb = tb,
                                      .ldc = ldc, .stride_c = sc, .m = m, .k = k, .n = n,
                                      .batch = BATCH, .alpha = v == 2 ? 0.5f : 1.0f,
                                      .beta = v == 0 ? 0.0f : 1.0f};
                size_t floats = 0, one = 0;
                OK(strix_gemm_pack_b(be, &g, NULL, &floats));
                strix_gemm_batch g1 = g;
                g1.batch = 1;
                OK(strix_gemm_pack_b(be, &g1, NULL, &one));
                assert_int_equal(floats, one * BATCH);
                float *packed = NULL;
                if (floats > 0) {
                    assert_int_equal(strix_alloc(be, floats * sizeof(float), (void **)&packed),
                                     STRIX_OK);
                    size_t again = 0;
                    OK(strix_gemm_pack_b(be, &g, packed, &again));
                    assert_int_equal(again, floats);
                }
                char label[96];
                for (int threads = 1; threads <= 2; threads++) {
                    strix_set_num_threads(threads);
                    size_t previous = cpu_set_parallel_min_work(threads == 2 ? 1 : 0);
                    float *dc = up(be, c, nc);
                    g.c = dc;
                    g.packed_b = NULL;
                    OK(strix_gemm_batched(be, &g));
                    down(be, want, dc, nc);
                    strix_free(be, dc);
                    dc = up(be, c, nc);
                    g.c = dc;
                    g.packed_b = packed;
                    OK(strix_gemm_batched(be, &g));
                    down(be, got, dc, nc);
                    snprintf(label, sizeof label, "%s gemm packed B %zux%zux%zu v%d threads %d",
                             strix_backend_name(be), m, k, n, v, threads);
                    assert_true(tl_check_bits(label, got, want, nc));
                    strix_free(be, dc);
                    dc = up(be, c, nc); /* item 2 alone, from the packing of the batch */
                    g1 = g;
                    g1.b = db + 2 * sb;
                    g1.c = dc + 2 * sc;
                    g1.a = da + 2 * sa;
                    g1.batch = 1;
                    g1.packed_b = packed ? packed + 2 * one : NULL;
                    OK(strix_gemm_batched(be, &g1));
                    down(be, got, dc, nc);
                    strix_free(be, dc);
                    /* cuBLAS/hipBLAS choose another kernel for one item than for a batch (seen
                     * on an H200): to rounding there; the own kernels give the same bits. */
                    const char *bn = strix_backend_name(be);
                    if (strcmp(bn, "cuda") == 0 || strcmp(bn, "hip") == 0)
                        assert_true(tl_check_close(label, got + 2 * sc, want + 2 * sc, sc,
                                                   ATOL, RTOL));
                    else
                        assert_true(tl_check_bits(label, got + 2 * sc, want + 2 * sc, sc));
                    cpu_set_parallel_min_work(previous);
                }
                strix_set_num_threads(0);
                strix_free(be, packed);
                strix_free(be, da);
                strix_free(be, db);
                free(a), free(b), free(c), free(want), free(got);
            }
    }
}

/* alpha = 0 forms no product (reference BLAS): C = beta·C exactly, beta 0 writing +0 over NaN,
 * with A and B all NaN, on every backend and on every path: small items, items past the own
 * kernel's KC and NC blocks, and items large enough for cpu-blas's cblas_sgemm. gemm_ex with
 * k = 0 is the same empty product. */
static void test_gemm_alpha_zero(void **state) {
    (void)state;
    static const size_t shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {70, 300, 260}, {200, 200, 200}};
    static const float betas[] = {0.0f, 1.0f, -0.5f};
    enum { BATCH = 2 };
    size_t most = 300 * 260 * BATCH; /* floats of the largest operand (B of 70x300x260) */
    float *nan_ab = malloc(most * sizeof(float)), *c = malloc(most * sizeof(float));
    float *want = malloc(most * sizeof(float)), *got = malloc(most * sizeof(float));
    assert_true(nan_ab && c && want && got);
    for (size_t i = 0; i < most; i++) nan_ab[i] = NAN;
    FOR_EACH_BACKEND(be) {
        float *dab = up(be, nan_ab, most);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            size_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2], nc = BATCH * m * n;
            for (size_t bi = 0; bi < 3; bi++) {
                float beta = betas[bi];
                if (beta == 0.0f) {
                    for (size_t i = 0; i < nc; i++) c[i] = NAN, want[i] = 0.0f;
                } else {
                    tl_fill_uniform(c, nc, 91 + (uint64_t)s, -2.0f, 2.0f);
                    c[0] = -0.0f; /* beta·(-0) keeps its sign: no 0 + beta·C */
                    for (size_t i = 0; i < nc; i++) want[i] = beta * c[i];
                }
                float *dc = up(be, c, nc);
                bool ta = (s + bi) % 2 == 1, tb = s % 2 == 1;
                strix_gemm_batch g = {.a = dab, .lda = ta ? m : k, .stride_a = m * k, .ta = ta,
                                      .b = dab, .ldb = tb ? k : n, .stride_b = k * n, .tb = tb,
                                      .c = dc, .ldc = n, .stride_c = m * n,
                                      .m = m, .k = k, .n = n, .batch = BATCH,
                                      .alpha = 0.0f, .beta = beta};
                OK(strix_gemm_batched(be, &g));
                down(be, got, dc, nc);
                char label[96];
                snprintf(label, sizeof label, "%s gemm_batched alpha 0 %zux%zux%zu beta %g",
                         strix_backend_name(be), m, k, n, (double)beta);
                assert_true(tl_check_bits(label, got, want, nc));
                if (beta != 0.0f) memcpy(c, want, nc * sizeof(float)); /* C now holds beta·C */
                else for (size_t i = 0; i < nc; i++) c[i] = 1.0f;
                strix_free(be, dc);
                dc = up(be, c, m * n);
                OK(strix_gemm_ex(be, dab, ta, dab, tb, dc, m, 0, n, beta)); /* k = 0 */
                for (size_t i = 0; i < m * n; i++) want[i] = beta == 0.0f ? 0.0f : beta * c[i];
                down(be, got, dc, m * n);
                snprintf(label, sizeof label, "%s gemm_ex k 0 %zux%zu beta %g",
                         strix_backend_name(be), m, n, (double)beta);
                assert_true(tl_check_bits(label, got, want, m * n));
                strix_free(be, dc);
            }
        }
        strix_free(be, dab);
    }
    free(nan_ab), free(c), free(want), free(got);
}

/* The Embedding module refuses ids outside [0, V) before it touches its table, on every backend
 * (a GPU backend checks a host copy of its device ids): forward with id -1 or V at position 4 is
 * STRIX_ERR_ARG naming the id and the position, its output buffer keeps the last good forward
 * and *y is not set; backward over ids changed to a bad one after the forward is refused alike
 * with the gradient untouched, as is a backward after a refused forward. (Under ASan a read or
 * write outside the table would stop the test.) */
static void test_embedding_id_checks(void **state) {
    (void)state;
    enum { V = 5, D = 3, N = 6 };
    const int64_t shape[2] = {2, 3};
    float table[V * D], dy_host[N * D], want_y[N * D], want_grad[V * D] = {0}, got[V * D];
    tl_fill_uniform(table, V * D, 101, -1.0f, 1.0f);
    tl_fill_uniform(dy_host, N * D, 102, -1.0f, 1.0f);
    const int32_t good[N] = {0, 4, 2, 4, 1, 3};
    for (int i = 0; i < N; i++)
        for (int d = 0; d < D; d++) {
            want_y[i * D + d] = table[good[i] * D + d];
            want_grad[good[i] * D + d] += dy_host[i * D + d]; /* ascending i, as the scatter */
        }
    const int32_t bad_ids[2] = {-1, V};
    FOR_EACH_BACKEND(be) {
        strix_params ps;
        strix_params_init_empty(&ps, be);
        strix_embedding *e;
        OK(strix_embedding_new(&ps, "wte", V, D, 0.02f, &e));
        OK(strix_params_alloc(&ps));
        OK(strix_copy(be, e->weight->data, table, sizeof table, STRIX_COPY_H2D));
        int32_t *ids = tl_upload(be, good, sizeof good);
        const strix_tensor *y = NULL;
        OK(strix_embedding_forward(e, ids, 2, shape, &y));
        float ygot[N * D];
        down(be, ygot, y->data, N * D);
        assert_true(tl_check_bits("embedding forward", ygot, want_y, N * D));
        strix_tensor dy = {0};
        OK(strix_tensor_ensure(be, &dy, 3, y->shape));
        OK(strix_copy(be, dy.data, dy_host, sizeof dy_host, STRIX_COPY_H2D));
        for (int b = 0; b < 2; b++) {
            int32_t bad[N];
            memcpy(bad, good, sizeof bad);
            bad[4] = bad_ids[b];
            char want_msg[64];
            snprintf(want_msg, sizeof want_msg, "id %d at position 4 outside [0, %d)", bad[4], V);
            /* forward: refused, output untouched, *y not set */
            OK(strix_copy(be, ids, bad, sizeof bad, STRIX_COPY_H2D));
            const strix_tensor *y2 = NULL;
            assert_int_equal(strix_embedding_forward(e, ids, 2, shape, &y2), STRIX_ERR_ARG);
            if (!strstr(strix_last_error(), want_msg) || !strstr(strix_last_error(), "forward"))
                fail_msg("%s: forward error '%s' lacks '%s'", strix_backend_name(be),
                         strix_last_error(), want_msg);
            assert_null(y2);
            down(be, ygot, y->data, N * D);
            assert_true(tl_check_bits("embedding output after a refused forward", ygot, want_y,
                                      N * D));
            /* a backward after the refused forward: refused, grad untouched */
            assert_int_equal(strix_embedding_backward(e, &dy), STRIX_ERR_ARG);
            assert_non_null(strstr(strix_last_error(), want_msg));
            /* a good forward, then the caller's ids change before backward */
            OK(strix_copy(be, ids, good, sizeof good, STRIX_COPY_H2D));
            OK(strix_embedding_forward(e, ids, 2, shape, &y2));
            OK(strix_copy(be, ids, bad, sizeof bad, STRIX_COPY_H2D));
            assert_int_equal(strix_embedding_backward(e, &dy), STRIX_ERR_ARG);
            if (!strstr(strix_last_error(), want_msg) || !strstr(strix_last_error(), "backward"))
                fail_msg("%s: backward error '%s' lacks '%s'", strix_backend_name(be),
                         strix_last_error(), want_msg);
            down(be, got, e->weight->grad, V * D);
            for (int i = 0; i < V * D; i++)
                if (got[i] != 0.0f) fail_msg("grad[%d] = %g after a refused backward", i, got[i]);
        }
        /* good ids again: the backward scatters exactly */
        OK(strix_copy(be, ids, good, sizeof good, STRIX_COPY_H2D));
        OK(strix_embedding_forward(e, ids, 2, shape, &y));
        OK(strix_embedding_backward(e, &dy));
        down(be, got, e->weight->grad, V * D);
        assert_true(tl_check_bits("embedding backward", got, want_grad, V * D));
        strix_tensor_free(&dy);
        strix_free(be, ids);
        strix_module_free(&e->base);
        strix_params_free(&ps);
    }
}

/* strix_clamp (torch.clamp: NaN stays NaN, infinities clamp) and the LOG activation. */
static void test_clamp_and_log(void **state) {
    (void)state;
    const float x[] = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f, NAN, -INFINITY, INFINITY};
    const float want[] = {-1.0f, -1.0f, 0.0f, 0.5f, 1.0f, NAN, -1.0f, 1.0f};
    const float pos[] = {1.0f, 2.0f, 0.25f, 1e-30f, 3e30f, 0.0f};
    const float g[] = {1.0f, 3.0f, 2.0f, 1.0f, 1.0f, 1.0f};
    FOR_EACH_BACKEND(be) {
        float *d = up(be, x, 8), got[8];
        OK(strix_clamp(be, d, -1.0f, 1.0f, d, 8)); /* in place */
        down(be, got, d, 8);
        for (int i = 0; i < 8; i++) {
            if (isnan(want[i])) assert_true(isnan(got[i]));
            else assert_true(got[i] == want[i]);
        }
        float *p = up(be, pos, 6), *dg = up(be, g, 6), y[6], dx[6];
        OK(strix_elementwise(be, STRIX_ACT_LOG, p, p, 6));
        down(be, y, p, 6);
        assert_true(y[0] == 0.0f && y[5] == -INFINITY);
        for (int i = 1; i < 5; i++) {
            double ref = log((double)pos[i]);
            assert_true(fabs(y[i] - ref) <= 1e-6 * fabs(ref));
        }
        float *p2 = up(be, pos, 6);
        OK(strix_elementwise_backward(be, STRIX_ACT_LOG, p2, dg, dg, 6)); /* grad_in == grad_out */
        down(be, dx, dg, 6);
        assert_true(dx[0] == 1.0f && dx[1] == 1.5f && dx[2] == 8.0f && dx[5] == INFINITY);
        strix_free(be, d);
        strix_free(be, p);
        strix_free(be, p2);
        strix_free(be, dg);
    }
}

static void test_registry_and_unsupported(void **state) {
    (void)state;
    strix_backend *be = NULL;
    assert_int_equal(strix_backend_init("no-such-backend", &be), STRIX_ERR_ARG);
    assert_null(be);
    assert_non_null(strstr(strix_last_error(), "no-such-backend"));
    strix_status s = strix_backend_init("cpu-blas", &be);
#ifdef STRIX_HAVE_BLAS
    assert_int_equal(s, STRIX_OK);
    assert_string_equal(strix_backend_name(be), "cpu-blas");
    strix_backend_free(be);
#else
    assert_int_equal(s, STRIX_ERR_UNSUPPORTED);
#endif
    OK(strix_backend_init("cpu", &be));
    assert_string_equal(strix_backend_name(be), "cpu");
    assert_int_equal(strix_backend_device(be), STRIX_DEVICE_CPU);
    void *p = (void *)1;
    OK(strix_alloc(be, 0, &p));
    assert_null(p);
    strix_free(be, NULL);
    /* A NULL slot is reported, never routed elsewhere. */
    struct strix_backend_i partial = *be->vt;
    partial.softmax_rows = NULL;
    const struct strix_backend_i *original = be->vt;
    be->vt = &partial;
    float x[4] = {0};
    assert_int_equal(strix_softmax_rows(be, x, x, 1, 4), STRIX_ERR_UNSUPPORTED);
    assert_non_null(strstr(strix_last_error(), "softmax_rows"));
    assert_non_null(strstr(strix_last_error(), "cpu"));
    be->vt = original;
    strix_set_num_threads(1);
    assert_int_equal(strix_get_num_threads(), 1);
    strix_set_num_threads(0);
    assert_true(strix_get_num_threads() >= 1);
    strix_backend_free(be);
    strix_backend_free(NULL);
}

// ---- the slot table: filled, covered, support matrix --------------------------------------------

/* Names of the empty slots of table vt (lifecycle, memory and every primitive of
 * src/core/primitives.def), each printed with `backend`; returns how many. */
static int empty_slots(const char *backend, const struct strix_backend_i *vt) {
    int empty = 0;
    const struct {
        const char *name;
        bool filled;
    } lifecycle[] = {
        {"destroy", vt->destroy != NULL}, {"sync", vt->sync != NULL},
        {"alloc", vt->alloc != NULL},     {"free_buffer", vt->free_buffer != NULL},
        {"copy", vt->copy != NULL},       {"fill", vt->fill != NULL},
    };
    for (size_t i = 0; i < sizeof lifecycle / sizeof lifecycle[0]; i++)
        if (!lifecycle[i].filled) {
            printf("  backend %s: slot %s is empty\n", backend, lifecycle[i].name);
            empty++;
        }
    for (int id = 0; id < STRIX_PRIMITIVE_COUNT; id++)
        if (!strix_backend_i_has(vt, id)) {
            printf("  backend %s: slot %s is empty\n", backend, strix_primitive_name(id));
            empty++;
        }
    return empty;
}

/* Every slot of every backend table this build has (cpu, cpu-blas, and the GPU table: real, or
 * as compiled in tests/gpu_emu) is filled; a forgotten `.foo = cuda_foo` fails here by name. */
static void test_every_slot_filled(void **state) {
    (void)state;
    int empty = 0, tables = 0;
    for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++) {
        strix_backend *be = tl_backend_open(tl_backend_names[bi]);
        if (!be) continue;
        empty += empty_slots(strix_backend_name(be), be->vt);
        tables++;
        if (bi == 0) {
            /* The check sees an empty slot, by name, in the middle of the list and at its end. */
            struct strix_backend_i holes = *be->vt;
            holes.rope_rotate = NULL;
            holes.tanh_gaussian_backward = NULL;
            assert_false(strix_backend_i_has(&holes, STRIX_PRIM_rope_rotate));
            assert_false(strix_backend_i_has(&holes, STRIX_PRIM_tanh_gaussian_backward));
            assert_int_equal(empty_slots("cpu (two slots emptied on purpose)", &holes), 2);
            assert_string_equal(strix_primitive_name(STRIX_PRIM_rope_rotate), "rope_rotate");
            assert_string_equal(strix_primitive_header(STRIX_PRIM_conv2d_forward),
                                "strix/ops/cnn.h");
        }
        strix_backend_free(be);
    }
    printf("  %d slots of %d tables empty (%d primitives)\n", empty, tables,
           (int)STRIX_PRIMITIVE_COUNT);
    assert_true(tables >= 1);
    assert_int_equal(empty, 0);
}

/* Every primitive slot was dispatched by at least one op case (golden table or cmocka test) on
 * every backend that opened: the counters of op_backend_open. Runs after every other test. */
static void test_every_slot_covered(void **state) {
    (void)state;
    int uncovered = 0, backends = 0;
    for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++) {
        if (!op_backend_opened[bi]) continue;
        backends++;
        for (int id = 0; id < STRIX_PRIMITIVE_COUNT; id++)
            if (op_slot_hits[bi][id] == 0) {
                printf("  backend %s: no op case dispatched primitive %s\n",
                       op_backend_opened[bi], strix_primitive_name(id));
                uncovered++;
            }
    }
    printf("  %d primitive x backend pairs without a case\n", uncovered);
    assert_true(backends >= 1);
    assert_int_equal(uncovered, 0);
}

/* The cell of primitive `id` in the column of backend bi: whether the table fills the slot, and
 * whether a case dispatched it. `filled` < 0: the backend did not open in this run. */
static const char *support_cell(int filled, unsigned long hits) {
    if (filled < 0) return "·";
    if (!filled) return "—";
    return hits ? "tested" : "filled";
}

/* Writes the support matrix (docs/OPS.md) from the tables and counters of this run. The GPU
 * columns come from whichever GPU backend opened: a real one, or the host emulation
 * (test_ops_gpu_emu), whose table is the one cuda_backend.cu compiles for both vendors. */
static int write_support(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    int filled[TL_BACKEND_COUNT][STRIX_PRIMITIVE_COUNT];
    unsigned long hits[TL_BACKEND_COUNT][STRIX_PRIMITIVE_COUNT];
    const char *source[TL_BACKEND_COUNT] = {0};
    for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++) {
        strix_backend *be = op_backend_opened[bi] ? tl_backend_open(tl_backend_names[bi]) : NULL;
        source[bi] = be ? op_backend_opened[bi] : NULL;
        for (int id = 0; id < STRIX_PRIMITIVE_COUNT; id++) {
            filled[bi][id] = be ? strix_backend_i_has(be->vt, id) : -1;
            hits[bi][id] = op_slot_hits[bi][id];
        }
        strix_backend_free(be);
    }
    /* One GPU table serves "cuda" and "hip": a column that did not open takes the other's. */
    size_t cuda = 0, hip = 0;
    for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++) {
        if (strcmp(tl_backend_names[bi], "cuda") == 0) cuda = bi;
        if (strcmp(tl_backend_names[bi], "hip") == 0) hip = bi;
    }
    for (int pass = 0; cuda != hip && pass < 2; pass++) {
        size_t to = pass ? hip : cuda, from = pass ? cuda : hip;
        if (source[to] || !source[from]) continue;
        source[to] = source[from];
        memcpy(filled[to], filled[from], sizeof filled[to]);
        memcpy(hits[to], hits[from], sizeof hits[to]);
    }
    fprintf(f, "# Primitives x backends\n\n"
               "Generated by `test_ops --support docs/OPS.md`; do not edit. Regenerate from the "
               "source root with\n`build/tests/test_ops_gpu_emu --support docs/OPS.md` (the "
               "emulated GPU table fills the cuda and hip\ncolumns) or, on a GPU machine, "
               "`build-gpu/tests/test_ops --support docs/OPS.md`.\n\n"
               "%d primitives, one per entry of `src/core/primitives.def` (the list that "
               "generates the vtable slots,\nthe backends' prototypes and tables, and the "
               "plain entry points). A cell says whether the backend's\ntable fills the slot "
               "and whether an op case of `tests/test_ops.c` / `tests/ops/` dispatched it "
               "there\n(`tested`: filled and dispatched, `filled`: never dispatched, `—`: "
               "empty slot, STRIX_ERR_UNSUPPORTED;\n`·`: backend not in the run that wrote "
               "this file).\n\nColumns of this run:",
            (int)STRIX_PRIMITIVE_COUNT);
    for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++)
        fprintf(f, "%s %s = %s", bi ? "," : "", tl_backend_names[bi],
                source[bi] ? source[bi] : "not in this build");
    fprintf(f, ".\n\n| primitive | declared in |");
    for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++) fprintf(f, " %s |", tl_backend_names[bi]);
    fprintf(f, "\n|---|---|");
    for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++) fprintf(f, "---|");
    fprintf(f, "\n");
    for (int id = 0; id < STRIX_PRIMITIVE_COUNT; id++) {
        fprintf(f, "| `%s` | `%s` |", strix_primitive_name(id), strix_primitive_header(id));
        for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++)
            fprintf(f, " %s |", support_cell(filled[bi][id], hits[bi][id]));
        fprintf(f, "\n");
    }
    return fclose(f) == 0 ? 0 : 1;
}

/* test_ops [--support FILE]: every op test; with --support, also writes the support matrix
 * (docs/OPS.md) when every test passed. */
int main(int argc, char **argv) {
    const char *support = NULL;
    if (argc == 3 && strcmp(argv[1], "--support") == 0) {
        support = argv[2];
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [--support FILE]\n", argv[0]);
        return 2;
    }
    const struct CMUnitTest core[] = {
        cmocka_unit_test(test_golden_cases),
        cmocka_unit_test(test_relu_kink),
        cmocka_unit_test(test_softmax_infinities),
        cmocka_unit_test(test_cross_entropy_edges),
        cmocka_unit_test(test_top_k_nan_and_ties),
        cmocka_unit_test(test_dropout_mask),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_beta_zero_ignores_nan),
        cmocka_unit_test(test_exp_gelu_edges),
        cmocka_unit_test(test_add_mul_exact),
        cmocka_unit_test(test_gemm_batched_strided),
        cmocka_unit_test(test_gemm_pack_b),
        cmocka_unit_test(test_gemm_alpha_zero),
        cmocka_unit_test(test_embedding_id_checks),
        cmocka_unit_test(test_clamp_and_log),
        cmocka_unit_test(test_registry_and_unsupported),
        cmocka_unit_test(test_every_slot_filled),
    };
    int failed = cmocka_run_group_tests_name("core", core, NULL, NULL);
    const struct {
        const char *name;
        const struct CMUnitTest *tests;
        size_t count;
    } groups[] = {
        {"extra", ops_extra_tests, ops_extra_test_count},
        {"cnn", ops_cnn_tests, ops_cnn_test_count},
        {"lrp", ops_lrp_tests, ops_lrp_test_count},
        {"recurrent", ops_recurrent_tests, ops_recurrent_test_count},
        {"quant", ops_quant_tests, ops_quant_test_count},
    };
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (groups[i].count) failed += _cmocka_run_group_tests(groups[i].name, groups[i].tests,
                                                               groups[i].count, NULL, NULL);
    const struct CMUnitTest coverage[] = {cmocka_unit_test(test_every_slot_covered)};
    failed += cmocka_run_group_tests_name("coverage", coverage, NULL, NULL);
    if (support && failed == 0) failed += write_support(support);
    return failed;
}
