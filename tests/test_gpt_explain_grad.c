/*
 * test_gpt_explain_grad.c - the gradient methods of strix_gpt_explain (gradient × input,
 * Integrated Gradients, saliency) and strix_gpt_explain_output, on every CPU backend.
 *
 * References, all computed here from the model's own forward (strix_gpt_explain_output) in double:
 *  - gradient × input of position t = d/ds f(wte[id_t]·(1 + s)) at s = 0 (the directional
 *    derivative along the embedding itself), by central differences, with and without a contrast;
 *  - saliency of position t = Σ_d |∂f/∂e[t][d]|, each partial by central differences;
 *  - Integrated Gradients: completeness (Σ attributions = f(x) − f(baseline) within 1e-3 with 64
 *    Gauss-Legendre points) and f(baseline) = the forward with the prompt's token embeddings set
 *    to zero.
 * The prompt's ids are distinct, so changing one row of wte changes one position. The model is a
 * tiny GPT (V 13, block 8, C 16, 2 heads, 2 layers) with N(0, 0.3) weights, so the logits are
 * far from zero. Tolerance: |got − ref| <= 2e-3·max(1, |ref|) (float32 forwards, h = 1e-2).
 * Also: LRP is unchanged by a gradient explanation run before it, and bad methods and steps are
 * refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "models/gpt/gpt_internal.h"
#include "nn_testutil.h"
#include "strix/gpt.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)
#define TOL 2e-3
#define H 1e-2

static const int32_t IDS[8] = {3, 1, 4, 12, 5, 9, 2, 6};

static strix_gpt *tiny_gpt(strix_backend *be, bool rope) {
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = 13;
    c.block_size = 8;
    c.n_layer = 2;
    c.n_head = 2;
    c.d_model = 16;
    c.rope = rope;
    strix_gpt *g;
    OK(strix_gpt_new(be, &c, &g));
    randomize_params(strix_gpt_params(g), 7, 0.3);
    return g;
}

static bool close_to(const char *what, int i, double got, double want) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    if (fabs(got - want) <= TOL * scale) return true;
    fprintf(stderr, "%s[%d]: got %.7g want %.7g\n", what, i, got, want);
    return false;
}

/* f with row `id` of wte replaced by `row` (C floats), restored after. */
static double f_with_row(strix_gpt *g, const strix_gpt_explain_config *cfg, int id,
                         const float *row) {
    size_t C = (size_t)g->cfg.d_model;
    float *w = g->wte->weight->data + (size_t)id * C;
    float *saved = from_backend(g->be, w, C);
    to_backend(g->be, w, row, C);
    double v;
    OK(strix_gpt_explain_output(g, IDS, 8, cfg, &v));
    to_backend(g->be, w, saved, C);
    free(saved);
    return v;
}

/* The row of id scaled by `scale`, as f. */
static double f_scaled(strix_gpt *g, const strix_gpt_explain_config *cfg, int id, double scale) {
    size_t C = (size_t)g->cfg.d_model;
    float *row = from_backend(g->be, g->wte->weight->data + (size_t)id * C, C);
    for (size_t d = 0; d < C; d++) row[d] = (float)(row[d] * scale);
    double v = f_with_row(g, cfg, id, row);
    free(row);
    return v;
}

static void check_gxi(strix_gpt *g, int32_t target, int32_t contrast) {
    strix_gpt_explain_config cfg = strix_gpt_explain_defaults();
    cfg.method = STRIX_GPT_EXPLAIN_GRADIENT_X_INPUT;
    cfg.target = target;
    cfg.contrast = contrast;
    strix_gpt_explanation e;
    OK(strix_gpt_explain(g, IDS, 8, &cfg, &e));
    assert_int_equal(e.T, 8);
    assert_null(e.relevance_position);
    assert_true(isnan(e.softmax_gap) && isnan(e.conserved_sum) && isnan(e.baseline_output));
    strix_gpt_explain_config fcfg = cfg;
    fcfg.target = e.target;
    double f0;
    OK(strix_gpt_explain_output(g, IDS, 8, &fcfg, &f0));
    assert_true(close_to("f(x)", 0, e.relevance_out_sum, f0));
    double sum = 0.0;
    bool ok = true;
    for (int t = 0; t < 8; t++) {
        double fd = (f_scaled(g, &fcfg, IDS[t], 1.0 + H) - f_scaled(g, &fcfg, IDS[t], 1.0 - H)) /
                    (2.0 * H);
        ok &= close_to(contrast >= 0 ? "gxi contrast" : "gxi", t, e.relevance[t], fd);
        sum += e.relevance[t];
    }
    assert_true(ok);
    assert_true(fabs(sum - e.relevance_in_sum) < 1e-5 * (1.0 + fabs(sum)));
    strix_gpt_explanation_free(&e);
}

static void test_gradient_x_input(void **state) {
    strix_gpt *g = tiny_gpt(*state, false);
    check_gxi(g, -1, -1);
    check_gxi(g, 2, 7);
    strix_gpt_free(g);
    g = tiny_gpt(*state, true); // RoPE: no position embeddings
    check_gxi(g, -1, -1);
    strix_gpt_free(g);
}

static void test_saliency(void **state) {
    strix_gpt *g = tiny_gpt(*state, false);
    size_t C = (size_t)g->cfg.d_model;
    strix_gpt_explain_config cfg = strix_gpt_explain_defaults();
    cfg.method = STRIX_GPT_EXPLAIN_SALIENCY;
    strix_gpt_explanation e;
    OK(strix_gpt_explain(g, IDS, 8, &cfg, &e));
    strix_gpt_explain_config fcfg = cfg;
    fcfg.target = e.target;
    bool ok = true;
    for (int t = 0; t < 8; t++) {
        float *row = from_backend(g->be, g->wte->weight->data + (size_t)IDS[t] * C, C);
        double l1 = 0.0;
        for (size_t d = 0; d < C; d++) {
            float keep = row[d];
            row[d] = (float)(keep + H);
            double up = f_with_row(g, &fcfg, IDS[t], row);
            row[d] = (float)(keep - H);
            double down = f_with_row(g, &fcfg, IDS[t], row);
            row[d] = keep;
            l1 += fabs((up - down) / (2.0 * H));
        }
        free(row);
        ok &= close_to("saliency", t, e.relevance[t], l1);
        ok &= e.relevance[t] >= 0.0f;
    }
    assert_true(ok);
    strix_gpt_explanation_free(&e);
    strix_gpt_free(g);
}

static void test_integrated_gradients(void **state) {
    strix_gpt *g = tiny_gpt(*state, false);
    size_t C = (size_t)g->cfg.d_model;
    strix_gpt_explain_config cfg = strix_gpt_explain_defaults();
    cfg.method = STRIX_GPT_EXPLAIN_INTEGRATED_GRADIENTS;
    cfg.ig_steps = 64;
    cfg.contrast = 11;
    strix_gpt_explanation e;
    OK(strix_gpt_explain(g, IDS, 8, &cfg, &e));
    strix_gpt_explain_config fcfg = cfg;
    fcfg.target = e.target;
    // f(baseline): every token embedding of the prompt zero (ids distinct: one row each)
    float *saved = from_backend(g->be, g->wte->weight->data, (size_t)13 * C);
    float *zero = calloc(C, sizeof(float));
    for (int t = 0; t < 8; t++) to_backend(g->be, g->wte->weight->data + IDS[t] * C, zero, C);
    double fb, fx;
    OK(strix_gpt_explain_output(g, IDS, 8, &fcfg, &fb));
    to_backend(g->be, g->wte->weight->data, saved, (size_t)13 * C);
    OK(strix_gpt_explain_output(g, IDS, 8, &fcfg, &fx));
    assert_true(close_to("f(baseline)", 0, e.baseline_output, fb));
    assert_true(close_to("f(x)", 0, e.relevance_out_sum, fx));
    assert_true(fabs(e.conserved_sum - (e.relevance_out_sum - e.baseline_output)) < 1e-6);
    assert_true(fabs(fx - fb) > 0.1); // a real test of completeness
    assert_true(close_to("completeness", 0, e.relevance_in_sum, fx - fb));
    fprintf(stderr, "IG 64 steps: sum %.6f, f(x) - f(x') %.6f\n", e.relevance_in_sum, fx - fb);
    strix_gpt_explanation_free(&e);
    // 1 Gauss-Legendre point: the gradient at x/2, times x
    cfg.ig_steps = 1;
    OK(strix_gpt_explain(g, IDS, 8, &cfg, &e));
    float *half = from_backend(g->be, g->wte->weight->data, (size_t)13 * C);
    for (size_t i = 0; i < (size_t)13 * C; i++) half[i] *= 0.5f;
    to_backend(g->be, g->wte->weight->data, half, (size_t)13 * C);
    strix_gpt_explanation gx;
    strix_gpt_explain_config gcfg = fcfg;
    gcfg.method = STRIX_GPT_EXPLAIN_GRADIENT_X_INPUT;
    OK(strix_gpt_explain(g, IDS, 8, &gcfg, &gx));
    to_backend(g->be, g->wte->weight->data, saved, (size_t)13 * C);
    bool ok = true;
    for (int t = 0; t < 8; t++) // gx = g(x/2)·x/2, IG(1) = g(x/2)·x
        ok &= close_to("IG 1 step", t, e.relevance[t], 2.0 * gx.relevance[t]);
    assert_true(ok);
    strix_gpt_explanation_free(&gx);
    strix_gpt_explanation_free(&e);
    free(half);
    free(zero);
    free(saved);
    strix_gpt_free(g);
}

static void test_lrp_unchanged_and_errors(void **state) {
    strix_gpt *g = tiny_gpt(*state, false);
    strix_gpt_explanation a, b, c;
    OK(strix_gpt_explain(g, IDS, 8, NULL, &a));
    assert_true(fabs(a.conserved_sum - a.relevance_out_sum) == 0.0 && isnan(a.baseline_output));
    strix_gpt_explain_config cfg = strix_gpt_explain_defaults();
    cfg.method = STRIX_GPT_EXPLAIN_INTEGRATED_GRADIENTS;
    OK(strix_gpt_explain(g, IDS, 8, &cfg, &c));
    OK(strix_gpt_explain(g, IDS, 8, NULL, &b));
    assert_memory_equal(a.relevance, b.relevance, 8 * sizeof(float));
    assert_true(a.relevance_in_sum == b.relevance_in_sum);
    cfg.ig_steps = 0;
    strix_gpt_explanation_free(&c);
    assert_int_equal(strix_gpt_explain(g, IDS, 8, &cfg, &c), STRIX_ERR_ARG);
    assert_null(c.relevance);
    cfg = strix_gpt_explain_defaults();
    cfg.method = (strix_gpt_explain_method)9;
    assert_int_equal(strix_gpt_explain(g, IDS, 8, &cfg, &c), STRIX_ERR_ARG);
    double v;
    cfg = strix_gpt_explain_defaults();
    cfg.target = 13;
    assert_int_equal(strix_gpt_explain_output(g, IDS, 8, &cfg, &v), STRIX_ERR_ARG);
    // the default output is the predicted token's logit, as the explanation reports
    OK(strix_gpt_explain_output(g, IDS, 8, NULL, &v));
    assert_true(v == (double)a.target_logit);
    strix_gpt_explanation_free(&a);
    strix_gpt_explanation_free(&b);
    strix_gpt_free(g);
}

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_gradient_x_input),
        BACKEND_TEST(test_saliency),
        BACKEND_TEST(test_integrated_gradients),
        BACKEND_TEST(test_lrp_unchanged_and_errors),
    };
    return run_on_each_backend("gpt_explain_grad", tests, sizeof tests / sizeof tests[0]) ? 1
                                                                                           : 0;
}
