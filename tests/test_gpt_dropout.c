/*
 * test_gpt_dropout.c - dropout in the GPT (strix_gpt_config.dropout, nanoGPT's GPTConfig.dropout)
 * on every CPU backend:
 *
 *  - p = 0 builds no dropout module (the block has its 4 children) and an eval forward, or a
 *    training forward without targets, of a p > 0 model gives the p = 0 model's bits (loss,
 *    logits) on the same weights; a training forward with targets does drop (another loss);
 *  - the fraction of dropped elements of the embedding site (B·T·C = 24576 values) is within 3
 *    sigma of p, and every kept element is exactly the eval value times 1/(1 − p);
 *  - gradients with p > 0 match central finite differences of the summed loss with the masks
 *    held fixed (the same key gives the same masks), for every parameter tensor (the attention
 *    probabilities' dropout included, through c_attn), and differ from the p = 0 gradients;
 *  - masks are functions of (key, forward): the same key repeats the loss and the gradients bit
 *    for bit, another key changes them, 1 and 2 threads agree bit for bit;
 *  - the trainer adapter evaluates in eval mode (val loss = the p = 0 model's) and restores the
 *    mode; explanations after a training forward equal the p = 0 model's; relevance straight
 *    after a dropping forward is refused (STRIX_ERR_UNSUPPORTED);
 *  - config checks (dropout outside [0, 1)) and the checkpoint JSON (round trip, a missing
 *    "dropout" reads as 0, a bad one is refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "models/gpt/gpt_internal.h"
#include "nn/nn_internal.h"
#include "nn_testutil.h"
#include "strix/checkpoint.h"
#include "strix/gpt.h"
#include "strix/gpt_train.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)

enum { V = 11 };

/* A tiny GPT (2 layers, C 16, 2 heads, block 8) with weights N(0, 0.2) from `seed`. */
static strix_gpt *tiny(strix_backend *be, float p, bool rope, uint64_t seed) {
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = V;
    c.block_size = 8;
    c.n_layer = 2;
    c.n_head = 2;
    c.d_model = 16;
    c.rope = rope;
    c.dropout = p;
    strix_gpt *g;
    OK(strix_gpt_new(be, &c, &g));
    randomize_params(strix_gpt_params(g), seed, 0.2);
    return g;
}

static void random_ids(uint64_t seed, int32_t *ids, int32_t *tg, size_t n) {
    strix_rng r;
    strix_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        ids[i] = (int32_t)strix_rng_below(&r, V);
        tg[i] = (int32_t)strix_rng_below(&r, V);
    }
}

static size_t n_children(strix_module *m) {
    size_t n = 0;
    while (m->vt->child(m, (int)n)) n++;
    return n;
}

// ---- p = 0 and eval mode -----------------------------------------------------------------------

static void test_eval_equals_p0(void **state) {
    strix_backend *be = *state;
    enum { B = 3, T = 8 };
    int32_t ids[B * T], tg[B * T];
    random_ids(5, ids, tg, B * T);
    strix_gpt *g0 = tiny(be, 0.0f, false, 11), *g1 = tiny(be, 0.3f, false, 11);
    assert_null(g0->drop);
    assert_null(g0->h[0]->drop_attn);
    assert_int_equal(n_children(&g0->h[0]->base), 4);
    assert_int_equal(n_children(&g1->h[0]->base), 6);
    assert_true(strix_gpt_training(g1)); /* PyTorch: a new model is in training mode */
    float l0, l1, l_train;
    OK(strix_gpt_forward(g0, ids, tg, B, T, &l0));
    float *lg0 = from_backend(be, strix_gpt_logits(g0), (size_t)B * T * V);
    // training mode, no targets: nothing is dropped
    OK(strix_gpt_forward(g1, ids, NULL, B, T, NULL));
    float *lg_nt = from_backend(be, strix_gpt_logits(g1), (size_t)B * T * V);
    bool same_nt = tl_check_bits("logits (no targets)", lg_nt, lg0, (size_t)B * T * V);
    free(lg_nt);
    assert_true(same_nt);
    // training mode with targets drops: another loss
    OK(strix_gpt_forward(g1, ids, tg, B, T, &l_train));
    assert_true(fabsf(l_train - l0) > 1e-4f);
    // eval mode: the p = 0 bits
    strix_gpt_set_training(g1, false);
    assert_false(strix_gpt_training(g1));
    OK(strix_gpt_forward(g1, ids, tg, B, T, &l1));
    assert_true(l1 == l0);
    float *lg1 = from_backend(be, strix_gpt_logits(g1), (size_t)B * T * V);
    assert_true(tl_check_bits("logits (eval)", lg1, lg0, (size_t)B * T * V));
    print_message("    loss p=0 %.6f, p=0.3 eval %.6f, p=0.3 training %.6f\n", (double)l0,
                  (double)l1, (double)l_train);
    free(lg0);
    free(lg1);
    strix_gpt_free(g0);
    strix_gpt_free(g1);
}

// ---- the fraction dropped ----------------------------------------------------------------------

static void test_drop_fraction(void **state) {
    strix_backend *be = *state;
    enum { B = 24, T = 64, C = 16 };
    const float p = 0.3f;
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = V;
    c.block_size = T;
    c.n_layer = 1;
    c.n_head = 2;
    c.d_model = C;
    c.dropout = p;
    strix_gpt *g;
    OK(strix_gpt_new(be, &c, &g));
    OK(strix_gpt_init_weights(g, 3));
    static int32_t ids[B * T], tg[B * T];
    random_ids(9, ids, tg, B * T);
    size_t n = (size_t)B * T * C;
    strix_gpt_set_training(g, false);
    OK(strix_gpt_forward(g, ids, tg, B, T, NULL));
    float *x_eval = from_backend(be, g->h[0]->work->x.data, n); /* block 0's input */
    strix_gpt_set_training(g, true);
    strix_gpt_set_dropout_key(g, 42);
    OK(strix_gpt_forward(g, ids, tg, B, T, NULL));
    float *x_drop = from_backend(be, g->h[0]->work->x.data, n);
    size_t dropped = 0, wrong = 0;
    float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++) {
        assert_true(x_eval[i] != 0.0f);
        if (x_drop[i] == 0.0f) dropped++;
        else if (x_drop[i] != x_eval[i] * scale) wrong++;
    }
    double frac = (double)dropped / (double)n, sigma = sqrt(p * (1.0 - p) / (double)n);
    print_message("    dropped %zu of %zu: %.4f (p %.2f, sigma %.4f)\n", dropped, n, frac,
                  (double)p, sigma);
    assert_int_equal(wrong, 0);
    assert_true(fabs(frac - p) <= 3.0 * sigma);
    free(x_eval);
    free(x_drop);
    strix_gpt_free(g);
}

// ---- gradients by finite differences -----------------------------------------------------------

enum { FB = 3, FT = 8 };

/* The summed loss Σ rows of one training forward with key 77 (so the same masks every time), in
 * double from the per-row losses. */
static double sum_loss(strix_gpt *g, const int32_t *ids, const int32_t *tg) {
    strix_gpt_set_dropout_key(g, 77);
    OK(strix_gpt_forward(g, ids, tg, FB, FT, NULL));
    float *rows = from_backend(g->be, g->losses.data, FB * FT);
    double s = 0.0;
    for (int i = 0; i < FB * FT; i++) s += rows[i];
    free(rows);
    return s;
}

/* ∂Σloss/∂θ of the key-77 forward (host copy of the gradient block). */
static float *sum_grads(strix_gpt *g, const int32_t *ids, const int32_t *tg) {
    strix_params *ps = strix_gpt_params(g);
    OK(strix_params_zero_grad(ps));
    strix_gpt_set_dropout_key(g, 77);
    OK(strix_gpt_forward(g, ids, tg, FB, FT, NULL));
    OK(strix_gpt_backward_scaled(g, (float)(FB * FT))); /* the mean's 1/valid undone */
    return from_backend(g->be, ps->grad, ps->total);
}

static void check_fd(strix_backend *be, bool rope) {
    int32_t ids[FB * FT], tg[FB * FT];
    random_ids(21, ids, tg, FB * FT);
    strix_gpt *g = tiny(be, 0.25f, rope, 13), *g0 = tiny(be, 0.0f, rope, 13);
    strix_params *ps = strix_gpt_params(g);
    float *grad = sum_grads(g, ids, tg), *grad0 = sum_grads(g0, ids, tg);
    size_t differ = 0;
    for (size_t i = 0; i < ps->total; i++) differ += grad[i] != grad0[i];
    assert_true(differ > ps->total / 2);
    strix_rng rng;
    strix_rng_seed(&rng, 99);
    const double eps = 3e-3;
    int checked = 0, bad = 0;
    double max_err = 0.0;
    for (int t = 0; t < ps->count; t++) {
        strix_param *p = ps->items[t];
        if (p->tied_to) continue;
        const float *gp = grad + p->offset;
        size_t top = 0; /* the largest gradient, then random coordinates */
        for (size_t i = 1; i < p->numel; i++)
            if (fabsf(gp[i]) > fabsf(gp[top])) top = i;
        for (int k = 0; k < 6; k++) {
            size_t i = k == 0 ? top : (size_t)strix_rng_below(&rng, p->numel);
            float v = get_one(be, p->data, i);
            float vp = (float)(v + eps), vm = (float)(v - eps);
            set_one(be, p->data, i, vp);
            double lp = sum_loss(g, ids, tg);
            set_one(be, p->data, i, vm);
            double lm = sum_loss(g, ids, tg);
            set_one(be, p->data, i, v);
            double fd = (lp - lm) / ((double)vp - (double)vm), err = fabs(fd - (double)gp[i]);
            if (err > max_err) max_err = err;
            checked++;
            if (err > 2e-3 + 1e-2 * fabs((double)gp[i]) && bad++ < 5)
                fprintf(stderr, "  %s[%zu]: analytic %.6g finite-diff %.6g\n", p->name, i,
                        (double)gp[i], fd);
        }
    }
    print_message("    rope %d: %d coordinates, max |fd - analytic| %.2e; %zu of %zu grads differ "
                  "from p = 0\n", rope, checked, max_err, differ, ps->total);
    assert_int_equal(bad, 0);
    free(grad);
    free(grad0);
    strix_gpt_free(g);
    strix_gpt_free(g0);
}

static void test_grad_fd(void **state) {
    check_fd(*state, false);
    check_fd(*state, true);
}

// ---- determinism -------------------------------------------------------------------------------

static void test_masks_keyed(void **state) {
    strix_backend *be = *state;
    int32_t ids[FB * FT], tg[FB * FT];
    random_ids(4, ids, tg, FB * FT);
    strix_gpt *g = tiny(be, 0.2f, false, 17);
    size_t np = strix_gpt_params(g)->total;
    int saved = strix_get_num_threads();
    strix_set_num_threads(2);
    double a = sum_loss(g, ids, tg);
    float *ga = sum_grads(g, ids, tg);
    strix_set_num_threads(1);
    double b = sum_loss(g, ids, tg);
    float *gb = sum_grads(g, ids, tg);
    strix_set_num_threads(saved);
    assert_true(a == b);
    assert_true(tl_check_bits("grads, 2 vs 1 threads", ga, gb, np));
    // the key's second forward uses the next masks; another key other masks
    strix_gpt_set_dropout_key(g, 77);
    float l1, l2, l3;
    OK(strix_gpt_forward(g, ids, tg, FB, FT, &l1));
    OK(strix_gpt_forward(g, ids, tg, FB, FT, &l2));
    strix_gpt_set_dropout_key(g, 78);
    OK(strix_gpt_forward(g, ids, tg, FB, FT, &l3));
    assert_true(l1 != l2 && l1 != l3 && l2 != l3);
    assert_true(fabs((double)l1 * FB * FT - a) < 1e-3 * fabs(a));
    free(ga);
    free(gb);
    strix_gpt_free(g);
}

// ---- the adapter, explanations, relevance ------------------------------------------------------

static void test_adapter_eval_mode(void **state) {
    strix_backend *be = *state;
    static char text[4096];
    strix_rng r;
    strix_rng_seed(&r, 1);
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)('a' + strix_rng_below(&r, V));
    strix_corpus corpus;
    OK(strix_corpus_from_bytes((const unsigned char *)text, sizeof text, &corpus));
    OK(strix_corpus_split(&corpus, 0.25));
    assert_int_equal(corpus.vocab.size, V);
    double val[2];
    for (int k = 0; k < 2; k++) {
        strix_gpt *g = tiny(be, k ? 0.4f : 0.0f, false, 23);
        strix_train_state st = {.data_rng = 5};
        strix_gpt_train_data d = {.batch = 4, .corpus = &corpus, .state = &st,
                                  .eval_batches = 3, .eval_seed = 6, .dropout_seed = 8};
        strix_train_model m;
        OK(strix_gpt_train_model(g, &d, &m));
        OK(m.eval(m.ctx, &val[k]));
        assert_true(strix_gpt_training(g)); /* restored */
        float loss;
        strix_train_slice sl = {.step = 0, .micro = 0, .shard = 0, .shards = 1, .grad_scale = 1.0f};
        OK(m.loss_step(m.ctx, &sl, &loss));
        strix_gpt_train_model_free(&m);
        strix_gpt_free(g);
    }
    print_message("    val loss p=0 %.6f, p=0.4 %.6f\n", val[0], val[1]);
    assert_true(val[0] == val[1]);
    strix_corpus_free(&corpus);
}

static void test_explain_no_drop(void **state) {
    strix_backend *be = *state;
    int32_t ids[FB * FT], tg[FB * FT];
    random_ids(31, ids, tg, FB * FT);
    strix_gpt *g0 = tiny(be, 0.0f, false, 29), *g1 = tiny(be, 0.5f, false, 29);
    // relevance straight after a dropping forward is refused
    OK(strix_gpt_forward(g1, ids, tg, FB, FT, NULL));
    const strix_tensor *r_out = strix_block_output(g1->h[1]), *r_in;
    assert_int_equal(strix_block_relevance(g1->h[1], r_out, &r_in), STRIX_ERR_UNSUPPORTED);
    assert_int_equal(strix_attention_relevance(g1->h[1]->attn, &g1->h[1]->attn->c_proj->work->out,
                                               &r_in),
                     STRIX_ERR_UNSUPPORTED);
    strix_gpt_explain_method methods[2] = {STRIX_GPT_EXPLAIN_LRP,
                                           STRIX_GPT_EXPLAIN_GRADIENT_X_INPUT};
    for (int k = 0; k < 2; k++) {
        strix_gpt_explain_config ec = strix_gpt_explain_defaults();
        ec.method = methods[k];
        strix_gpt_explanation e0, e1;
        OK(strix_gpt_explain(g0, ids, FT, &ec, &e0));
        OK(strix_gpt_forward(g1, ids, tg, FB, FT, NULL)); /* a training forward first */
        OK(strix_gpt_explain(g1, ids, FT, &ec, &e1));
        assert_int_equal(e0.T, e1.T);
        assert_true(tl_check_bits("relevance", e1.relevance, e0.relevance, (size_t)e0.T));
        assert_true(e0.target_logit == e1.target_logit);
        strix_gpt_explanation_free(&e0);
        strix_gpt_explanation_free(&e1);
    }
    strix_gpt_free(g0);
    strix_gpt_free(g1);
}

// ---- configuration and checkpoint JSON ---------------------------------------------------------

static void test_config_json(void **state) {
    (void)state;
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = V;
    assert_true(c.dropout == 0.0f);
    const float bad[] = {-0.1f, 1.0f, 1.5f, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        c.dropout = bad[i];
        assert_int_equal(strix_gpt_config_check(&c), STRIX_ERR_ARG);
    }
    c.dropout = 0.1f;
    OK(strix_gpt_config_check(&c));
    char *json;
    OK(strix_gpt_config_to_json(&c, &json));
    assert_non_null(strstr(json, "\"dropout\":0.1"));
    strix_gpt_config back;
    OK(strix_gpt_config_from_json(json, &back));
    assert_true(back.dropout == 0.1f);
    // a file written before dropout existed: the key is missing, dropout 0
    char *at = strstr(json, ",\"dropout\":0.1");
    assert_non_null(at);
    memmove(at, at + strlen(",\"dropout\":0.1"), strlen(at + strlen(",\"dropout\":0.1")) + 1);
    assert_null(strstr(json, "dropout"));
    OK(strix_gpt_config_from_json(json, &back));
    assert_true(back.dropout == 0.0f);
    assert_int_equal(back.vocab_size, V);
    free(json);
    c.dropout = 0.0f;
    OK(strix_gpt_config_to_json(&c, &json));
    char bad_json[1024];
    char *d = strstr(json, "\"dropout\":0");
    assert_non_null(d);
    snprintf(bad_json, sizeof bad_json, "%.*s\"dropout\":1}", (int)(d - json), json);
    assert_int_equal(strix_gpt_config_from_json(bad_json, &back), STRIX_ERR_FORMAT);
    assert_non_null(strstr(strix_last_error(), "dropout"));
    free(json);
}

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_config_json),
        BACKEND_TEST(test_eval_equals_p0),
        BACKEND_TEST(test_drop_fraction),
        BACKEND_TEST(test_grad_fd),
        BACKEND_TEST(test_masks_keyed),
        BACKEND_TEST(test_adapter_eval_mode),
        BACKEND_TEST(test_explain_no_drop),
    };
    return run_on_each_backend("gpt dropout", tests, sizeof tests / sizeof tests[0]) ? 1 : 0;
}
