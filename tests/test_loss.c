/*
 * test_loss.c - the losses of strix/loss.h on every CPU backend:
 *
 *  1. PyTorch goldens (tools/ref/optim_ref.py, tests/golden/optim/loss_*.bin): loss value and
 *     input gradient of MSE, cross-entropy (ignored rows, label smoothing 0/0.1/0.2/0.3, large
 *     logits, -inf logits), BCE-with-logits (±large logits) and KL (probability and log targets)
 *     for each reduction. Every case runs at 1 thread and at 2 threads with every loop forced
 *     parallel, and the two must be bit-identical; grad_scale and grad == input aliasing are
 *     checked on the way.
 *  2. Finite differences: each loss's gradient against central differences of its value (input
 *     perturbed on the host, loss evaluated on the backend).
 *  3. Exact edge cases: out-of-range targets, all rows ignored, bad options, KL's masked terms,
 *     and a workspace that stops allocating after the first call.
 * Golden tolerance: atol 1e-5 (values) / 1e-6 (gradients) + rtol 1e-4 (torch sums in a different
 * order). BCE needs strix_bce_with_logits: until a backend has it, its tests print SKIP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "backends/cpu/cpu_internal.h" /* cpu_set_parallel_min_work: force loops parallel */
#include "nn_testutil.h"
#include "strix/loss.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)
#define GOLD(name) "tests/golden/optim/" name ".bin"
#define LOSS_ATOL 1e-5
#define GRAD_ATOL 1e-6
#define RTOL 1e-4

typedef enum loss_kind { L_MSE, L_CE, L_BCE, L_KL, L_KL_LOG } loss_kind;

/* One loss evaluation: host inputs, options; results come back to the host. */
typedef struct loss_case {
    loss_kind kind;
    const float *x, *y;    /* input and target (CE: class indices as exact floats) */
    size_t rows, cols;     /* n = rows·cols (MSE/BCE: rows = n, cols = 1) */
    strix_reduction red;
    float smoothing, scale;
    bool alias;            /* grad written over the input buffer */
    bool want_grad;
} loss_case;

static size_t case_n(const loss_case *c) { return c->rows * c->cols; }

static strix_status call_loss(strix_loss_workspace *ws, const loss_case *c, const float *x,
                              const void *y, float *grad, float *loss) {
    size_t n = case_n(c);
    switch (c->kind) {
    case L_MSE: return strix_mse_loss(ws, x, y, n, c->red, grad, c->scale, loss);
    case L_CE:
        return strix_cross_entropy_loss(ws, x, y, c->rows, c->cols, c->red, c->smoothing, grad,
                                        c->scale, loss);
    case L_BCE: return strix_bce_with_logits_loss(ws, x, y, n, c->red, grad, c->scale, loss);
    case L_KL:
    case L_KL_LOG:
        return strix_kl_div_loss(ws, x, y, c->rows, c->cols, c->red, c->kind == L_KL_LOG, grad,
                                 c->scale, loss);
    }
    return STRIX_ERR_ARG;
}

/* Evaluates c on be: out[0] = loss, out[1..n] = grad (if wanted). Returns the loss's status. */
static strix_status eval_case(strix_backend *be, strix_loss_workspace *ws, const loss_case *c,
                              float *out) {
    size_t n = case_n(c);
    float *x = tl_upload(be, c->x, n * sizeof(float));
    void *y;
    if (c->kind == L_CE) {
        int32_t *t = malloc(c->rows * sizeof(int32_t));
        for (size_t i = 0; i < c->rows; i++) t[i] = (int32_t)c->y[i];
        y = tl_upload(be, t, c->rows * sizeof(int32_t));
        free(t);
    } else {
        y = tl_upload(be, c->y, n * sizeof(float));
    }
    float *grad = NULL;
    if (c->want_grad) grad = c->alias ? x : tl_device_alloc(be, n * sizeof(float));
    strix_status s = call_loss(ws, c, x, y, grad, &out[0]);
    if (s == STRIX_OK && grad) tl_download(be, out + 1, grad, n * sizeof(float));
    if (grad && grad != x) strix_free(be, grad);
    strix_free(be, x);
    strix_free(be, y);
    return s;
}

/* eval_case at 1 thread, then at 2 threads with every loop parallel; bit-identical. */
static strix_status eval_both(strix_backend *be, const loss_case *c, float *out) {
    size_t n = 1 + case_n(c);
    float *again = tl_malloc_floats(n);
    strix_loss_workspace ws;
    strix_loss_workspace_init(&ws, be);
    strix_set_num_threads(1);
    strix_status s = eval_case(be, &ws, c, out);
    if (s == STRIX_OK) {
        strix_set_num_threads(2);
        size_t previous = cpu_set_parallel_min_work(1);
        s = eval_case(be, &ws, c, again);
        cpu_set_parallel_min_work(previous);
        if (s == STRIX_OK)
            assert_true(tl_check_bits("1 vs 2 threads", out, again, c->want_grad ? n : 1));
    }
    strix_set_num_threads(0);
    strix_loss_workspace_free(&ws);
    free(again);
    return s;
}

/* Runs c against golden arrays `loss_name` / `grad_name`, plain, with grad_scale 0.5 and with
 * grad aliasing the input. Returns false if the backend lacks a primitive (SKIP). */
static bool check_golden(strix_backend *be, loss_case c, const tl_golden *g, const char *loss_name,
                         const char *grad_name) {
    size_t n = case_n(&c);
    float *out = tl_malloc_floats(1 + n);
    const tl_array *gl = tl_golden_get(g, loss_name), *gg = tl_golden_get(g, grad_name);
    assert_non_null(gl);
    assert_non_null(gg);
    assert_int_equal(gg->count, n);
    c.want_grad = true;
    c.scale = 1.0f;
    c.alias = false;
    strix_status s = eval_both(be, &c, out);
    if (s == STRIX_ERR_UNSUPPORTED) {
        fprintf(stderr, "SKIP %s: %s\n", loss_name, strix_last_error());
        free(out);
        return false;
    }
    OK(s);
    char label[96];
    snprintf(label, sizeof label, "%s", loss_name);
    assert_true(tl_check_close(label, out, gl->data, 1, LOSS_ATOL, RTOL));
    snprintf(label, sizeof label, "%s", grad_name);
    assert_true(tl_check_close(label, out + 1, gg->data, n, GRAD_ATOL, RTOL));

    /* grad_scale multiplies the gradient only; 0.5 is exact */
    float *half = tl_malloc_floats(1 + n);
    c.scale = 0.5f;
    OK(eval_both(be, &c, half));
    assert_true(tl_check_bits("loss with grad_scale", half, out, 1));
    for (size_t i = 0; i < n; i++) out[1 + i] *= 0.5f;
    snprintf(label, sizeof label, "%s x 0.5", grad_name);
    assert_true(tl_check_close(label, half + 1, out + 1, n, 1e-7, 1e-6));

    /* grad over the input buffer gives the same bits */
    float *aliased = tl_malloc_floats(1 + n);
    c.alias = true;
    OK(eval_both(be, &c, aliased));
    snprintf(label, sizeof label, "%s (grad aliases input)", grad_name);
    assert_true(tl_check_bits(label, aliased, half, 1 + n));
    free(aliased);
    free(half);
    free(out);
    return true;
}

static const char *red_name(strix_reduction r) {
    return r == STRIX_REDUCTION_MEAN ? "mean" : r == STRIX_REDUCTION_SUM ? "sum" : "batchmean";
}

// ---- goldens ------------------------------------------------------------------------------------

static void test_mse_golden(void **state) {
    strix_backend *be = *state;
    tl_golden g;
    assert_true(tl_golden_load(GOLD("loss_mse"), &g));
    const tl_array *x = tl_golden_get(&g, "input"), *y = tl_golden_get(&g, "target");
    for (int r = 0; r < 2; r++) {
        strix_reduction red = r ? STRIX_REDUCTION_SUM : STRIX_REDUCTION_MEAN;
        loss_case c = {.kind = L_MSE, .x = x->data, .y = y->data, .rows = x->count, .cols = 1,
                       .red = red};
        char ln[32], gn[32];
        snprintf(ln, sizeof ln, "loss_%s", red_name(red));
        snprintf(gn, sizeof gn, "grad_%s", red_name(red));
        check_golden(be, c, &g, ln, gn);
    }
    tl_golden_free(&g);
}

/* Every "loss_<tag><suffix>" / "grad_<tag><suffix>" of a cross-entropy golden. */
static void ce_golden_file(strix_backend *be, const char *file, const char *suffix,
                           const char *const *tags, int ntags) {
    tl_golden g;
    assert_true(tl_golden_load(file, &g));
    char xn[32], tn[32];
    snprintf(xn, sizeof xn, "logits%s", suffix);
    snprintf(tn, sizeof tn, "targets%s", suffix);
    const tl_array *x = tl_golden_get(&g, xn), *t = tl_golden_get(&g, tn);
    assert_non_null(x);
    assert_non_null(t);
    for (int i = 0; i < ntags; i++) {
        char ln[48], gn[48];
        snprintf(ln, sizeof ln, "loss_%s%s", tags[i], suffix);
        snprintf(gn, sizeof gn, "grad_%s%s", tags[i], suffix);
        loss_case c = {.kind = L_CE, .x = x->data, .y = t->data, .rows = (size_t)x->shape[0],
                       .cols = (size_t)x->shape[1]};
        c.red = strncmp(tags[i], "sum", 3) == 0 ? STRIX_REDUCTION_SUM : STRIX_REDUCTION_MEAN;
        c.smoothing = (float)atoi(strstr(tags[i], "_ls") + 3) / 100.0f;
        check_golden(be, c, &g, ln, gn);
    }
    tl_golden_free(&g);
}

static void test_ce_golden(void **state) {
    strix_backend *be = *state;
    static const char *const ignored[] = {"mean_ls0", "sum_ls0", "mean_ls10", "sum_ls10",
                                          "mean_ls30", "sum_ls30"};
    static const char *const all[] = {"mean_ls0", "sum_ls0", "mean_ls20", "sum_ls20"};
    ce_golden_file(be, GOLD("loss_ce"), "", ignored, 6); /* rows 3 and 9 ignored */
    ce_golden_file(be, GOLD("loss_ce"), "_all", all, 4);
}

static void test_ce_edge_golden(void **state) {
    strix_backend *be = *state;
    static const char *const tags[] = {"mean_ls0", "sum_ls0", "mean_ls10", "sum_ls10"};
    static const char *const inf_tags[] = {"mean_ls0", "sum_ls0"};
    ce_golden_file(be, GOLD("loss_ce_edge"), "", tags, 4);
    ce_golden_file(be, GOLD("loss_ce_edge"), "_inf", inf_tags, 2);
}

static void test_bce_golden(void **state) {
    strix_backend *be = *state;
    tl_golden g;
    assert_true(tl_golden_load(GOLD("loss_bce"), &g));
    const tl_array *x = tl_golden_get(&g, "logits"), *y = tl_golden_get(&g, "target");
    for (int r = 0; r < 2; r++) {
        strix_reduction red = r ? STRIX_REDUCTION_SUM : STRIX_REDUCTION_MEAN;
        loss_case c = {.kind = L_BCE, .x = x->data, .y = y->data, .rows = x->count, .cols = 1,
                       .red = red};
        char ln[32], gn[32];
        snprintf(ln, sizeof ln, "loss_%s", red_name(red));
        snprintf(gn, sizeof gn, "grad_%s", red_name(red));
        if (!check_golden(be, c, &g, ln, gn)) break;
    }
    tl_golden_free(&g);
}

static void test_kl_golden(void **state) {
    strix_backend *be = *state;
    tl_golden g;
    assert_true(tl_golden_load(GOLD("loss_kl"), &g));
    const tl_array *x = tl_golden_get(&g, "input"), *q = tl_golden_get(&g, "target");
    const strix_reduction reds[] = {STRIX_REDUCTION_BATCHMEAN, STRIX_REDUCTION_MEAN,
                                    STRIX_REDUCTION_SUM};
    for (int r = 0; r < 3; r++) {
        loss_case c = {.kind = L_KL, .x = x->data, .y = q->data, .rows = (size_t)x->shape[0],
                       .cols = (size_t)x->shape[1], .red = reds[r]};
        char ln[32], gn[32];
        snprintf(ln, sizeof ln, "loss_%s", red_name(reds[r]));
        snprintf(gn, sizeof gn, "grad_%s", red_name(reds[r]));
        check_golden(be, c, &g, ln, gn);
    }
    const tl_array *xl = tl_golden_get(&g, "input_lt"), *lq = tl_golden_get(&g, "target_lt");
    for (int r = 0; r < 3; r += 2) {
        loss_case c = {.kind = L_KL_LOG, .x = xl->data, .y = lq->data,
                       .rows = (size_t)xl->shape[0], .cols = (size_t)xl->shape[1],
                       .red = reds[r]};
        char ln[32], gn[32];
        snprintf(ln, sizeof ln, "loss_lt_%s", red_name(reds[r]));
        snprintf(gn, sizeof gn, "grad_lt_%s", red_name(reds[r]));
        check_golden(be, c, &g, ln, gn);
    }
    tl_golden_free(&g);
}

// ---- finite differences -------------------------------------------------------------------------

/* Central differences of the loss (SUM reduction, scale 1) against its gradient. */
static void check_fd(strix_backend *be, loss_case c, double eps, const char *what) {
    size_t n = case_n(&c);
    float *out = tl_malloc_floats(1 + n), *tmp = tl_malloc_floats(1 + n);
    float *x = tl_malloc_floats(n);
    memcpy(x, c.x, n * sizeof(float));
    strix_loss_workspace ws;
    strix_loss_workspace_init(&ws, be);
    c.want_grad = true;
    c.scale = 1.0f;
    strix_status s = eval_case(be, &ws, &c, out);
    if (s == STRIX_ERR_UNSUPPORTED) {
        fprintf(stderr, "SKIP finite differences of %s: %s\n", what, strix_last_error());
    } else {
        OK(s);
        c.want_grad = false;
        c.x = x;
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) {
            float keep = x[i];
            x[i] = (float)(keep + eps);
            double hi_x = x[i];
            OK(eval_case(be, &ws, &c, tmp));
            double hi = tmp[0];
            x[i] = (float)(keep - eps);
            double lo_x = x[i];
            OK(eval_case(be, &ws, &c, tmp));
            double lo = tmp[0];
            x[i] = keep;
            double fd = (hi - lo) / (hi_x - lo_x), an = out[1 + i];
            double err = fabs(fd - an);
            if (err > worst) worst = err;
            if (err > 2e-3 + 1e-2 * fabs(an)) {
                fprintf(stderr, "%s: d/dx[%zu] fd %.6g analytic %.6g\n", what, i, fd, an);
                fail();
            }
        }
        fprintf(stderr, "  fd %s: %zu coordinates, max |fd - analytic| %.2g\n", what, n, worst);
    }
    strix_loss_workspace_free(&ws);
    free(x);
    free(tmp);
    free(out);
}

static void test_loss_finite_differences(void **state) {
    strix_backend *be = *state;
    enum { R = 5, C = 7, N = R * C };
    float x[N], y[N], logp[N], q[N], lq[N], cls[R] = {2, -1, 0, 6, 3}, p01[N];
    tl_fill_uniform(x, N, 11, -2.0f, 2.0f);
    tl_fill_uniform(y, N, 12, -1.0f, 1.0f);
    tl_fill_uniform(p01, N, 13, 0.0f, 1.0f);
    /* log-probabilities and probabilities per row (q has an exact zero) */
    for (int r = 0; r < R; r++) {
        double mx = -1e30, s = 0.0, sq = 0.0;
        for (int j = 0; j < C; j++) mx = fmax(mx, x[r * C + j]);
        for (int j = 0; j < C; j++) s += exp(x[r * C + j] - mx);
        for (int j = 0; j < C; j++) logp[r * C + j] = (float)(x[r * C + j] - mx - log(s));
        for (int j = 0; j < C; j++) sq += (q[r * C + j] = (j + r) % 4 ? p01[r * C + j] : 0.0f);
        for (int j = 0; j < C; j++) q[r * C + j] = (float)(q[r * C + j] / sq);
        for (int j = 0; j < C; j++) lq[r * C + j] = (float)(0.5 * y[r * C + j] - 2.0);
    }
    loss_case mse = {.kind = L_MSE, .x = x, .y = y, .rows = N, .cols = 1,
                     .red = STRIX_REDUCTION_SUM};
    check_fd(be, mse, 1e-2, "mse");
    loss_case ce = {.kind = L_CE, .x = x, .y = cls, .rows = R, .cols = C,
                    .red = STRIX_REDUCTION_SUM, .smoothing = 0.25f};
    check_fd(be, ce, 1e-2, "cross-entropy (smoothing 0.25, one row ignored)");
    ce.smoothing = 0.0f;
    ce.red = STRIX_REDUCTION_MEAN;
    check_fd(be, ce, 1e-2, "cross-entropy (mean)");
    loss_case bce = {.kind = L_BCE, .x = x, .y = p01, .rows = N, .cols = 1,
                     .red = STRIX_REDUCTION_SUM};
    check_fd(be, bce, 1e-2, "bce_with_logits");
    loss_case kl = {.kind = L_KL, .x = logp, .y = q, .rows = R, .cols = C,
                    .red = STRIX_REDUCTION_SUM};
    check_fd(be, kl, 1e-2, "kl_div");
    loss_case kll = {.kind = L_KL_LOG, .x = logp, .y = lq, .rows = R, .cols = C,
                     .red = STRIX_REDUCTION_BATCHMEAN};
    check_fd(be, kll, 1e-2, "kl_div (log target)");
}

// ---- exact edge cases ---------------------------------------------------------------------------

static void test_ce_errors_and_empty(void **state) {
    strix_backend *be = *state;
    enum { R = 3, C = 4 };
    float x[R * C], marker[R * C];
    tl_fill_uniform(x, R * C, 21, -1.0f, 1.0f);
    for (int i = 0; i < R * C; i++) marker[i] = 7.0f;
    strix_loss_workspace ws;
    strix_loss_workspace_init(&ws, be);
    float *dx = tl_upload(be, x, sizeof x), *grad = tl_upload(be, marker, sizeof marker);
    float loss = 0.0f, back[R * C];

    int32_t bad[R] = {0, 4, 1}; /* 4 is not below 4 classes */
    int32_t *dbad = tl_upload(be, bad, sizeof bad);
    assert_int_equal(strix_cross_entropy_loss(&ws, dx, dbad, R, C, STRIX_REDUCTION_MEAN, 0.0f,
                                              grad, 1.0f, &loss), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "row 1"));
    tl_download(be, back, grad, sizeof back);
    assert_true(tl_check_bits("grad untouched after a bad target", back, marker, R * C));

    int32_t none[R] = {-1, -100, -1}; /* every row ignored */
    int32_t *dnone = tl_upload(be, none, sizeof none);
    for (int smooth = 0; smooth < 2; smooth++) {
        OK(strix_cross_entropy_loss(&ws, dx, dnone, R, C, STRIX_REDUCTION_MEAN, 0.1f * smooth,
                                    grad, 1.0f, &loss));
        assert_true(isnan(loss)); /* PyTorch: mean over nothing */
        OK(strix_cross_entropy_loss(&ws, dx, dnone, R, C, STRIX_REDUCTION_SUM, 0.1f * smooth,
                                    grad, 1.0f, &loss));
        assert_true(loss == 0.0f);
        tl_download(be, back, grad, sizeof back);
        for (int i = 0; i < R * C; i++) assert_true(back[i] == 0.0f);
    }
    int32_t ok[R] = {0, 1, 2};
    int32_t *dok = tl_upload(be, ok, sizeof ok);
    assert_int_equal(strix_cross_entropy_loss(&ws, dx, dok, R, C, STRIX_REDUCTION_MEAN, 1.5f,
                                              grad, 1.0f, &loss), STRIX_ERR_ARG);
    assert_int_equal(strix_cross_entropy_loss(&ws, dx, dok, R, C, STRIX_REDUCTION_BATCHMEAN,
                                              0.0f, grad, 1.0f, &loss), STRIX_ERR_ARG);
    assert_int_equal(strix_mse_loss(&ws, dx, dx, R * C, STRIX_REDUCTION_BATCHMEAN, NULL, 1.0f,
                                    &loss), STRIX_ERR_ARG);
    /* smoothing 1: only the uniform part, -Σ_c logp_c / C per row */
    OK(strix_cross_entropy_loss(&ws, dx, dok, R, C, STRIX_REDUCTION_SUM, 1.0f, NULL, 1.0f,
                                &loss));
    double want = 0.0;
    for (int r = 0; r < R; r++) {
        double mx = -1e30, s = 0.0;
        for (int j = 0; j < C; j++) mx = fmax(mx, x[r * C + j]);
        for (int j = 0; j < C; j++) s += exp(x[r * C + j] - mx);
        for (int j = 0; j < C; j++) want -= (x[r * C + j] - mx - log(s)) / C;
    }
    assert_true(fabs(loss - want) < 1e-5);
    strix_free(be, dok);
    strix_free(be, dnone);
    strix_free(be, dbad);
    strix_free(be, grad);
    strix_free(be, dx);
    strix_loss_workspace_free(&ws);
}

/* KL with probability targets: a -inf log-probability under a zero target contributes exactly 0
 * (torch 1.13 gives NaN there: 0·-inf), and its gradient is 0. */
static void test_kl_masked_terms(void **state) {
    strix_backend *be = *state;
    float x[6] = {-1.0f, -0.5f, -2.0f, -INFINITY, -0.25f, -3.0f};
    float q[6] = {0.5f, 0.5f, 0.0f, 0.0f, 0.75f, 0.25f};
    float xf[6] = {-1.0f, -0.5f, -2.0f, -9.0f, -0.25f, -3.0f};
    strix_loss_workspace ws;
    strix_loss_workspace_init(&ws, be);
    float *dx = tl_upload(be, x, sizeof x), *dxf = tl_upload(be, xf, sizeof xf);
    float *dq = tl_upload(be, q, sizeof q), *grad = tl_device_alloc(be, sizeof x);
    float loss = 0.0f, loss_f = 0.0f, g[6];
    OK(strix_kl_div_loss(&ws, dx, dq, 2, 3, STRIX_REDUCTION_BATCHMEAN, false, grad, 1.0f, &loss));
    OK(strix_kl_div_loss(&ws, dxf, dq, 2, 3, STRIX_REDUCTION_BATCHMEAN, false, NULL, 1.0f,
                         &loss_f));
    assert_true(isfinite(loss) && loss == loss_f);
    double want = 0.0;
    for (int i = 0; i < 6; i++)
        if (q[i] > 0.0f) want += q[i] * (log(q[i]) - x[i]);
    assert_true(fabs(loss - want / 2.0) < 1e-6);
    tl_download(be, g, grad, sizeof g);
    for (int i = 0; i < 6; i++) assert_true(g[i] == (q[i] > 0.0f ? -q[i] / 2.0f : 0.0f));
    strix_free(be, grad);
    strix_free(be, dq);
    strix_free(be, dxf);
    strix_free(be, dx);
    strix_loss_workspace_free(&ws);
}

/* After the first call of a given size the workspace is reused, not reallocated. */
static void test_workspace_reuse(void **state) {
    strix_backend *be = *state;
    enum { R = 16, C = 9 };
    float x[R * C];
    int32_t t[R];
    tl_fill_uniform(x, R * C, 31, -3.0f, 3.0f);
    for (int i = 0; i < R; i++) t[i] = i % 5 == 0 ? -1 : (i * 7) % C;
    float *dx = tl_upload(be, x, sizeof x), *grad = tl_device_alloc(be, sizeof x);
    int32_t *dt = tl_upload(be, t, sizeof t);
    strix_loss_workspace ws;
    strix_loss_workspace_init(&ws, be);
    float first = 0.0f, loss = 0.0f;
    OK(strix_cross_entropy_loss(&ws, dx, dt, R, C, STRIX_REDUCTION_MEAN, 0.1f, grad, 1.0f,
                                &first));
    void *dev = ws.dev, *host = ws.host;
    for (int k = 0; k < 3; k++) {
        OK(strix_cross_entropy_loss(&ws, dx, dt, R, C, STRIX_REDUCTION_MEAN, 0.1f, grad, 1.0f,
                                    &loss));
        OK(strix_mse_loss(&ws, dx, dx, R * C, STRIX_REDUCTION_MEAN, NULL, 1.0f, &loss));
        assert_true(ws.dev == dev && ws.host == host);
    }
    OK(strix_cross_entropy_loss(&ws, dx, dt, R, C, STRIX_REDUCTION_MEAN, 0.1f, grad, 1.0f,
                                &loss));
    assert_true(loss == first); /* deterministic */
    strix_loss_workspace_free(&ws);
    strix_loss_workspace_free(&ws); /* idempotent */
    strix_loss_workspace_free(NULL);
    strix_free(be, dt);
    strix_free(be, grad);
    strix_free(be, dx);
}

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_mse_golden),
        BACKEND_TEST(test_ce_golden),
        BACKEND_TEST(test_ce_edge_golden),
        BACKEND_TEST(test_bce_golden),
        BACKEND_TEST(test_kl_golden),
        BACKEND_TEST(test_loss_finite_differences),
        BACKEND_TEST(test_ce_errors_and_empty),
        BACKEND_TEST(test_kl_masked_terms),
        BACKEND_TEST(test_workspace_reuse),
    };
    return run_on_each_backend("loss", tests, sizeof tests / sizeof tests[0]);
}
