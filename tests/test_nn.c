/*
 * test_nn.c - the modules of strix/nn.h on every CPU backend ("cpu", and "cpu-blas" when built):
 *
 *  1. Finite differences: each module's backward (input and parameter gradients) against central
 *     differences of a scalar loss L = Σ y·R, R a fixed random projection of the output. Values
 *     are perturbed in float (the modules compute in float) but L is summed in double. Coordinates
 *     are sampled (all of them for small tensors).
 *  2. PyTorch goldens (tools/ref/gpt_ref.py, tests/golden/gpt/): output, input gradient and
 *     parameter gradients of Linear, LayerNorm, attention (uniform; heterogeneous + RoPE), MLP
 *     (GELU, ReLU) and the block, at 1e-5 abs + 1e-4 rel.
 *
 * Finite-difference tolerances: with eps = 1e-2 the truncation error of the central difference is
 * O(eps²·|f'''|) ~ 1e-4 and the float rounding of the forward, divided by 2·eps, is ~1e-4 on these
 * sizes, so |fd − analytic| <= 2e-3 + 1e-2·|analytic| separates rounding from any real bug (a
 * wrong term is O(0.1..1)). ReLU's kink: with ReLU the step is 1e-3 (crossing a kink is then ten
 * times rarer) and a coordinate whose one-sided slopes differ by more than the tolerance is
 * skipped (a crossed kink makes |fd − analytic| about half that difference, smooth functions
 * differ by |f''|·eps ~ 1e-3); skips are counted and at most a tenth of the coordinates may be.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nn_testutil.h"
#include "strix/gpt.h"
#include "strix/layers.h"
#include "strix/nn.h"

#define GOLD_ATOL 1e-5
#define GOLD_RTOL 1e-4

#define OK(expr) assert_int_equal((expr), STRIX_OK)

// ---- module builders ---------------------------------------------------------------------------

static strix_attention_config attn_cfg(int C, int NH, const int *sizes, bool rope) {
    strix_attention_config a = {.d_model = C, .n_head = NH, .head_sizes = sizes,
                                .block_size = 8, .bias = true, .rope = rope,
                                .rope_base = 10000.0f, .init_std = 0.02f, .proj_init_std = 0.02f};
    return a;
}

// ---- finite-difference tests -------------------------------------------------------------------

static void test_fd_linear(void **state) {
    strix_backend *be = *state;
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        built b;
        begin(&b, be);
        strix_linear *l;
        OK(strix_linear_new(&b.ps, "m", 5, 7, with_bias, 0.02f, NULL, &l));
        b.m = &l->base;
        finish(&b, 11);
        int64_t shape3[3] = {3, 4, 5}, shape2[2] = {6, 5};
        if (with_bias) fd_module(be, &b.ps, b.m, 3, shape3, 1, false, 40);
        else fd_module(be, &b.ps, b.m, 2, shape2, 2, false, 40);
        release(&b);
    }
}

static void test_fd_embedding(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_embedding *e;
    OK(strix_embedding_new(&ps, "m", 7, 5, 0.02f, &e));
    OK(strix_params_alloc(&ps));
    randomize_params(&ps, 3, 0.5);
    // repeated ids: the scatter must accumulate
    int32_t ids_h[12] = {0, 3, 3, 6, 1, 3, 5, 0, 2, 6, 6, 4};
    int32_t *ids;
    OK(strix_alloc(be, sizeof ids_h, (void **)&ids));
    OK(strix_copy(be, ids, ids_h, sizeof ids_h, STRIX_COPY_H2D));
    int64_t shape[2] = {2, 6};
    const strix_tensor *y;
    OK(strix_embedding_forward(e, ids, 2, shape, &y));
    assert_int_equal(y->ndim, 3);
    assert_int_equal(y->shape[2], 5);
    strix_rng rng;
    strix_rng_seed(&rng, 4);
    float R[60];
    fill_uniform(&rng, R, 60, -1.0, 1.0);
    strix_tensor dy = tensor_from_host(be, 3, y->shape, R);
    OK(strix_params_zero_grad(&ps));
    OK(strix_embedding_backward(e, &dy));
    float *g = from_backend(be, e->weight->grad, 35);
    float *w = from_backend(be, e->weight->data, 35);
    float *out = from_backend(be, y->data, 60);
    // forward is an exact gather; the gradient is linear in R, so compare with the exact sum
    double want[35] = {0};
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 5; j++) {
            assert_true(out[i * 5 + j] == w[ids_h[i] * 5 + j]);
            want[ids_h[i] * 5 + j] += R[i * 5 + j];
        }
    for (int i = 0; i < 35; i++) assert_true(fabs(g[i] - want[i]) <= 1e-6);
    free(g);
    free(w);
    free(out);
    strix_tensor_free(&dy);
    strix_free(be, ids);
    strix_module_free(&e->base);
    strix_params_free(&ps);
}

static void test_fd_layernorm(void **state) {
    strix_backend *be = *state;
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        built b;
        begin(&b, be);
        strix_layernorm *ln;
        OK(strix_layernorm_new(&b.ps, "m", 16, with_bias, 1e-5f, &ln));
        b.m = &ln->base;
        finish(&b, 12);
        int64_t shape[3] = {2, 3, 16};
        fd_module(be, &b.ps, b.m, 3, shape, 5 + (uint64_t)with_bias, false, 48);
        release(&b);
    }
}

static void fd_attention(strix_backend *be, int C, int NH, const int *sizes, bool rope, int B,
                         int T, uint64_t seed) {
    built b;
    begin(&b, be);
    strix_attention *a;
    strix_attention_config cfg = attn_cfg(C, NH, sizes, rope);
    OK(strix_attention_new(&b.ps, "m", &cfg, &a));
    b.m = &a->base;
    finish(&b, seed);
    int64_t shape[3] = {B, T, C};
    fd_module(be, &b.ps, b.m, 3, shape, seed + 1, false, 30);
    release(&b);
}

static void test_fd_attention(void **state) {
    strix_backend *be = *state;
    fd_attention(be, 16, 2, NULL, false, 2, 5, 20);   // uniform heads of 8
    fd_attention(be, 16, 4, NULL, true, 2, 6, 22);    // RoPE, heads of 4
    int hetero[2] = {4, 12};
    fd_attention(be, 16, 2, hetero, false, 2, 5, 24); // heterogeneous
    int hetero3[3] = {2, 6, 8};
    fd_attention(be, 16, 3, hetero3, true, 1, 8, 26); // heterogeneous + RoPE, T = block_size
}

/* A host copy of a backend tensor (numel floats). */
static float *host_of(strix_backend *be, const strix_tensor *t) {
    return from_backend(be, t->data, (size_t)strix_tensor_numel(t));
}

static void assert_same_bits(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) assert_memory_equal(&a[i], &b[i], sizeof(float));
}

/* Attention under a fixed key mask as a one-tensor module (forward_ex with io.mask), so
 * fd_module checks the masked backward. */
typedef struct masked_attn {
    strix_module base;
    strix_attention *a;
    const strix_tensor *keep;
} masked_attn;

static strix_status masked_forward(strix_module *m, const strix_tensor *x,
                                   const strix_tensor **y) {
    masked_attn *w = (masked_attn *)m;
    strix_module_io io = strix_module_io_of(x);
    io.mask = w->keep;
    STRIX_TRY(strix_module_forward_ex(&w->a->base, &io));
    *y = io.out[0];
    return STRIX_OK;
}
static strix_status masked_backward(strix_module *m, const strix_tensor *dy,
                                    const strix_tensor **dx) {
    return strix_attention_backward(((masked_attn *)m)->a, dy, dx);
}
static const strix_module_i masked_vt = {.type = "MaskedAttention", .forward = masked_forward,
                                         .backward = masked_backward};

/* The key mask (B = 2, T = 5): sequence 0 masks key 3; sequence 1 masks keys 0, 3 and 4, so its
 * query 0 sees no key at all (probabilities 0: the output is c_proj's bias). */
static const float mask_keep[2][5] = {{1, 1, 1, 0, 1}, {0, 1, 1, 0, 0}};

static void test_fd_attention_masked(void **state) {
    strix_backend *be = *state;
    for (int rope = 0; rope < 2; rope++) {
        built b;
        begin(&b, be);
        strix_attention *a;
        strix_attention_config cfg = attn_cfg(16, 2, NULL, rope);
        OK(strix_attention_new(&b.ps, "m", &cfg, &a));
        b.m = &a->base;
        finish(&b, 40 + (uint64_t)rope);
        const int64_t kshape[2] = {2, 5}, shape[3] = {2, 5, 16};
        strix_tensor keep = tensor_from_host(be, 2, kshape, &mask_keep[0][0]);
        masked_attn w = {.base = {.vt = &masked_vt, .be = be}, .a = a, .keep = &keep};
        fd_module(be, &b.ps, &w.base, 3, shape, 42 + (uint64_t)rope, false, 40);

        // the mask acts: the fully masked query of sequence 1 is c_proj's bias alone, and an
        // unmasked forward differs; an all-ones mask is the causal mask bit for bit
        strix_rng rng;
        strix_rng_seed(&rng, 7);
        float xh[2 * 5 * 16], ones[10];
        fill_normal(&rng, xh, 160, 0.0, 1.0);
        for (int i = 0; i < 10; i++) ones[i] = 1.0f;
        strix_tensor x = tensor_from_host(be, 3, shape, xh);
        strix_tensor all = tensor_from_host(be, 2, kshape, ones);
        const strix_tensor *y;
        OK(masked_forward(&w.base, &x, &y));
        float *masked = host_of(be, y);
        float *bias = from_backend(be, a->c_proj->bias->data, 16);
        assert_same_bits(masked + 5 * 16, bias, 16);
        OK(strix_attention_forward(a, &x, &y));
        float *plain = host_of(be, y);
        int differ = 0;
        for (int i = 0; i < 160; i++) differ += masked[i] != plain[i];
        assert_true(differ > 100);
        // the relevance pass follows the mask: finite, different from the unmasked one, and
        // with an all-ones mask the unmasked one bit for bit
        strix_lrp_rule rule = {.kind = STRIX_LRP_EPSILON, .epsilon = 1e-6f};
        a->base.rule = a->c_attn->base.rule = a->c_proj->base.rule = rule;
        const strix_tensor *r_in;
        OK(strix_attention_relevance(a, y, &r_in));
        float *r_plain = host_of(be, r_in);
        OK(masked_forward(&w.base, &x, &y));
        OK(strix_attention_relevance(a, y, &r_in));
        float *r_masked = host_of(be, r_in);
        differ = 0;
        for (int i = 0; i < 160; i++) {
            assert_true(isfinite(r_masked[i]));
            differ += r_masked[i] != r_plain[i];
        }
        assert_true(differ > 100);
        w.keep = &all;
        OK(masked_forward(&w.base, &x, &y));
        float *same = host_of(be, y);
        assert_same_bits(plain, same, 160);
        OK(strix_attention_relevance(a, &x, &r_in)); /* r_out: any (B,T,C) values */
        float *r_all = host_of(be, r_in);
        OK(strix_attention_forward(a, &x, &y));
        OK(strix_attention_relevance(a, &x, &r_in));
        float *r_none = host_of(be, r_in);
        assert_same_bits(r_none, r_all, 160);
        free(r_plain);
        free(r_masked);
        free(r_all);
        free(r_none);
        // a mask not (B, T) is refused
        strix_module_io io = strix_module_io_of(&x);
        io.mask = &x;
        assert_int_equal(strix_module_forward_ex(&a->base, &io), STRIX_ERR_SHAPE);
        free(masked);
        free(bias);
        free(plain);
        free(same);
        strix_tensor_free(&x);
        strix_tensor_free(&all);
        strix_tensor_free(&keep);
        release(&b);
    }
}

static void test_fd_mlp(void **state) {
    strix_backend *be = *state;
    for (int act = 0; act < 2; act++) {
        built b;
        begin(&b, be);
        strix_mlp *m;
        strix_act op = act == 1 ? STRIX_ACT_RELU : STRIX_ACT_GELU;
        OK(strix_mlp_new(&b.ps, "m", 16, 24, op, true, 0.02f, 0.02f, &m));
        b.m = &m->base;
        finish(&b, 30 + (uint64_t)act);
        int64_t shape[3] = {2, 5, 16};
        fd_module(be, &b.ps, b.m, 3, shape, 32, op == STRIX_ACT_RELU, 30);
        release(&b);
    }
}

static void test_fd_block(void **state) {
    strix_backend *be = *state;
    for (int variant = 0; variant < 2; variant++) {
        built b;
        begin(&b, be);
        int hetero[2] = {6, 10};
        strix_block_config cfg = {.attn = attn_cfg(16, variant ? 2 : 4, variant ? hetero : NULL,
                                                   variant == 1),
                                  .d_ff = 32,
                                  .act = STRIX_ACT_GELU,
                                  .ln_eps = 1e-5f,
                                  .bias = variant == 0};
        strix_block *blk;
        OK(strix_block_new(&b.ps, "m", &cfg, &blk));
        b.m = &blk->base;
        finish(&b, 40 + (uint64_t)variant);
        int64_t shape[3] = {2, 7, 16};
        fd_module(be, &b.ps, b.m, 3, shape, 42, false, 16);
        release(&b);
    }
}

/* Mean cross-entropy of the last forward's logits, in double on the host. */
static double host_mean_ce(strix_backend *be, const strix_gpt *g, const int32_t *targets, int n,
                           int V) {
    float *lg = from_backend(be, strix_gpt_logits(g), (size_t)n * (size_t)V);
    double total = 0.0;
    for (int r = 0; r < n; r++) {
        const float *row = lg + (size_t)r * (size_t)V;
        double mx = row[0], s = 0.0;
        for (int j = 1; j < V; j++) mx = row[j] > mx ? row[j] : mx;
        for (int j = 0; j < V; j++) s += exp((double)row[j] - mx);
        total += mx + log(s) - (double)row[targets[r]];
    }
    free(lg);
    return total / n;
}

static void test_fd_gpt_loss(void **state) {
    strix_backend *be = *state;
    for (int variant = 0; variant < 2; variant++) {
        strix_gpt_config c = strix_gpt_config_default();
        c.vocab_size = 9;
        c.block_size = 6;
        c.n_layer = 2;
        c.d_model = 12;
        c.n_head = 2;
        if (variant) {
            c.head_sizes[0] = 4;
            c.head_sizes[1] = 8;
            c.rope = true;
            c.tie_weights = true;
            c.mlp_act = STRIX_ACT_RELU;
            c.bias = false;
            c.d_ff = 20;
        }
        strix_gpt *g;
        OK(strix_gpt_new(be, &c, &g));
        strix_params *ps = strix_gpt_params(g);
        randomize_params(ps, 50 + (uint64_t)variant, 0.3);
        enum { B = 2, T = 6 };
        int32_t ids[B * T], tg[B * T];
        strix_rng rng;
        strix_rng_seed(&rng, 51);
        for (int i = 0; i < B * T; i++) {
            ids[i] = (int32_t)strix_rng_below(&rng, (uint64_t)c.vocab_size);
            tg[i] = (int32_t)strix_rng_below(&rng, (uint64_t)c.vocab_size);
        }
        float loss;
        OK(strix_params_zero_grad(ps));
        OK(strix_gpt_forward(g, ids, tg, B, T, &loss));
        assert_true(fabs(loss - host_mean_ce(be, g, tg, B * T, c.vocab_size)) < 1e-5);
        OK(strix_gpt_backward(g));
        float *grads = from_backend(be, ps->grad, ps->total);
        const char *names[] = {"transformer.wte.weight", "transformer.wpe.weight",
                               "transformer.h.0.attn.c_attn.weight",
                               "transformer.h.0.ln_1.weight", "transformer.h.1.mlp.c_fc.weight",
                               "transformer.h.1.attn.c_proj.weight", "transformer.ln_f.weight",
                               "transformer.ln_f.bias", "lm_head.weight"};
        int checked = 0, skipped = 0;
        double max_err = 0.0;
        // ReLU: a smaller step makes crossing a kink rarer (rounding noise stays ~1e-4 here)
        double eps = c.mlp_act == STRIX_ACT_RELU ? 1e-3 : FD_EPS;
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            strix_param *p = strix_params_find(ps, names[k]);
            if (!p || p->tied_to) continue;
            for (int rep = 0; rep < 6; rep++) {
                size_t i = (size_t)strix_rng_below(&rng, p->numel);
                float v = get_one(be, p->data, i);
                float vp = (float)(v + eps), vm = (float)(v - eps);
                set_one(be, p->data, i, vp);
                OK(strix_gpt_forward(g, ids, NULL, B, T, NULL));
                double Lp = host_mean_ce(be, g, tg, B * T, c.vocab_size);
                set_one(be, p->data, i, vm);
                OK(strix_gpt_forward(g, ids, NULL, B, T, NULL));
                double Lm = host_mean_ce(be, g, tg, B * T, c.vocab_size);
                set_one(be, p->data, i, v);
                double fd = (Lp - Lm) / ((double)vp - (double)vm);
                double an = grads[p->offset + i];
                if (c.mlp_act == STRIX_ACT_RELU) {
                    OK(strix_gpt_forward(g, ids, NULL, B, T, NULL));
                    double L0 = host_mean_ce(be, g, tg, B * T, c.vocab_size);
                    double sp = (Lp - L0) / ((double)vp - v), sm = (L0 - Lm) / ((double)v - vm);
                    if (fabs(sp - sm) > FD_ATOL + FD_RTOL * fabs(fd)) {
                        skipped++;
                        continue;
                    }
                }
                double err = fabs(fd - an);
                if (err > max_err) max_err = err;
                checked++;
                if (err > FD_ATOL + FD_RTOL * fabs(an))
                    fprintf(stderr, "  %s[%zu]: analytic %.6g finite-diff %.6g\n", p->name, i, an,
                            fd);
                assert_true(err <= FD_ATOL + FD_RTOL * fabs(an));
            }
        }
        print_message("    GPT variant %d       checked %d skipped %d max |fd - analytic| %.2e\n",
                      variant, checked, skipped, max_err);
        assert_true(checked >= 30 && skipped * 10 <= checked);
        free(grads);
        strix_gpt_free(g);
    }
}

// ---- PyTorch goldens ---------------------------------------------------------------------------

/* Loads every parameter of ps from "param.<name>" arrays (shapes must match, every golden
 * parameter must exist in ps). */
static void load_params(const tl_golden *gf, strix_params *ps) {
    int loaded = 0;
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        char key[160];
        snprintf(key, sizeof key, "param.%s", p->name);
        const tl_array *e = tl_golden_get(gf, key);
        assert_non_null(e);
        assert_int_equal(e->count, p->numel);
        assert_int_equal(e->ndim, p->ndim);
        for (int d = 0; d < p->ndim; d++) assert_int_equal(e->shape[d], p->shape[d]);
        to_backend(ps->be, p->data, e->data, p->numel);
        loaded++;
    }
    assert_int_equal(loaded, golden_count_prefix(gf, "param."));
}

static const tl_array *need(const tl_golden *gf, const char *name) {
    const tl_array *e = tl_golden_get(gf, name);
    assert_non_null(e);
    return e;
}

/* The golden check of one module from the file at `path`; with `masked`, the file's "keep"
 * array is the forward's io.mask (forward_ex). */
static void golden_module_at(strix_backend *be, strix_params *ps, strix_module *m,
                             const char *path, bool masked) {
    tl_golden gf;
    assert_true(tl_golden_load(path, &gf));
    OK(strix_params_alloc(ps));
    load_params(&gf, ps);
    const tl_array *x = need(&gf, "x"), *y = need(&gf, "y"), *dy = need(&gf, "dy"),
                   *dx = need(&gf, "dx");
    strix_tensor xt = tensor_from_host(be, x->ndim, x->shape, x->data);
    strix_tensor keep = {0};
    const strix_tensor *out, *din;
    if (masked) {
        const tl_array *k = need(&gf, "keep");
        keep = tensor_from_host(be, k->ndim, k->shape, k->data);
        strix_module_io io = strix_module_io_of(&xt);
        io.mask = &keep;
        OK(strix_module_forward_ex(m, &io));
        out = io.out[0];
    } else {
        OK(strix_module_forward(m, &xt, &out));
    }
    assert_int_equal((size_t)strix_tensor_numel(out), y->count);
    int bad = !check_backend(be, "y", out->data, y->data, y->count, GOLD_ATOL, GOLD_RTOL);
    strix_tensor dyt = tensor_from_host(be, dy->ndim, dy->shape, dy->data);
    OK(strix_params_zero_grad(ps));
    OK(strix_module_backward(m, &dyt, &din));
    bad += !check_backend(be, "dx", din->data, dx->data, dx->count, GOLD_ATOL, GOLD_RTOL);
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        char key[160];
        snprintf(key, sizeof key, "grad.%s", p->name);
        const tl_array *e = need(&gf, key);
        assert_int_equal(e->count, p->numel);
        bad += !check_backend(be, key, p->grad, e->data, p->numel, GOLD_ATOL, GOLD_RTOL);
    }
    assert_int_equal(bad, 0);
    strix_tensor_free(&xt);
    strix_tensor_free(&dyt);
    strix_tensor_free(&keep);
    tl_golden_free(&gf);
}

static void golden_module(strix_backend *be, strix_params *ps, strix_module *m,
                          const char *file) {
    char path[256];
    snprintf(path, sizeof path, "tests/golden/gpt/%s", file);
    golden_module_at(be, ps, m, path, false);
}

/* The key-padding mask against torch's nn.MultiheadAttention with key_padding_mask
 * (tools/ref/attn_mask_ref.py): output, input and parameter gradients. */
static void test_golden_attention_masked(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_attention *a;
    strix_attention_config cfg = attn_cfg(16, 2, NULL, false);
    OK(strix_attention_new(&b.ps, "m", &cfg, &a));
    b.m = &a->base;
    golden_module_at(be, &b.ps, b.m, "tests/golden/attn_mask/attn_masked.bin", true);
    release(&b);
}

static void test_golden_linear_layernorm(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_linear *l;
    OK(strix_linear_new(&b.ps, "m", 5, 7, true, 0.02f, NULL, &l));
    b.m = &l->base;
    golden_module(be, &b.ps, b.m, "linear.bin");
    release(&b);

    begin(&b, be);
    strix_layernorm *ln;
    OK(strix_layernorm_new(&b.ps, "m", 16, true, 1e-5f, &ln));
    b.m = &ln->base;
    golden_module(be, &b.ps, b.m, "layernorm.bin");
    release(&b);
}

static void test_golden_attention(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_attention *a;
    strix_attention_config cfg = attn_cfg(16, 2, NULL, false);
    OK(strix_attention_new(&b.ps, "m", &cfg, &a));
    b.m = &a->base;
    golden_module(be, &b.ps, b.m, "attn_uniform.bin");
    release(&b);

    int sizes[2] = {4, 12};
    begin(&b, be);
    cfg = attn_cfg(16, 2, sizes, true);
    OK(strix_attention_new(&b.ps, "m", &cfg, &a));
    b.m = &a->base;
    golden_module(be, &b.ps, b.m, "attn_hetero_rope.bin");

    /* a decode step overwrites the forward's buffers: backward is refused until the next forward */
    const int64_t shape[3] = {2, 8, 16}, row[2] = {1, 16};
    strix_tensor x, x1;
    OK(strix_tensor_new(be, 3, shape, &x));
    OK(strix_tensor_new(be, 2, row, &x1));
    const strix_tensor *y, *y1, *dx;
    OK(strix_attention_forward(a, &x, &y));
    OK(strix_attention_decode(a, &x1, 0, &y1));
    assert_int_equal(strix_attention_backward(a, &x, &dx), STRIX_ERR_ARG);
    OK(strix_attention_forward(a, &x, &y));
    OK(strix_attention_backward(a, y, &dx));
    strix_tensor_free(&x);
    strix_tensor_free(&x1);
    release(&b);
}

static void test_golden_mlp_block(void **state) {
    strix_backend *be = *state;
    const char *files[2] = {"mlp_gelu.bin", "mlp_relu.bin"};
    for (int act = 0; act < 2; act++) {
        built b;
        begin(&b, be);
        strix_mlp *m;
        strix_act op = act == 1 ? STRIX_ACT_RELU : STRIX_ACT_GELU;
        OK(strix_mlp_new(&b.ps, "m", 16, 24, op, true, 0.02f, 0.02f, &m));
        b.m = &m->base;
        golden_module(be, &b.ps, b.m, files[act]);
        release(&b);
    }
    built b;
    begin(&b, be);
    strix_block_config cfg = {.attn = attn_cfg(16, 4, NULL, false), .d_ff = 32,
                              .act = STRIX_ACT_GELU, .ln_eps = 1e-5f, .bias = true};
    strix_block *blk;
    OK(strix_block_new(&b.ps, "m", &cfg, &blk));
    b.m = &blk->base;
    golden_module(be, &b.ps, b.m, "block.bin");
    release(&b);
}

// ---- construction errors -----------------------------------------------------------------------

static void test_bad_configs(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_attention *a = NULL;
    strix_attention_config cfg = attn_cfg(16, 3, NULL, false);
    assert_int_equal(strix_attention_new(&ps, "m", &cfg, &a), STRIX_ERR_ARG);
    assert_string_equal(strix_last_error(), "n_head 3 does not divide d_model 16");
    int sizes[2] = {4, 10};
    cfg = attn_cfg(16, 2, sizes, false);
    assert_int_equal(strix_attention_new(&ps, "m", &cfg, &a), STRIX_ERR_ARG);
    assert_string_equal(strix_last_error(), "head sizes sum to 14, not d_model 16");
    int odd[2] = {5, 11};
    cfg = attn_cfg(16, 2, odd, true);
    assert_int_equal(strix_attention_new(&ps, "m", &cfg, &a), STRIX_ERR_ARG);
    assert_string_equal(strix_last_error(), "RoPE needs an even head size (got 5)");
    assert_null(a);
    assert_int_equal(ps.count, 0); // nothing declared by a failed constructor

    // a wrong input width is a shape error, not a crash
    strix_linear *l;
    OK(strix_linear_new(&ps, "m", 4, 3, true, 0.02f, NULL, &l));
    OK(strix_params_alloc(&ps));
    int64_t shape[2] = {2, 5};
    strix_tensor x;
    OK(strix_tensor_new(be, 2, shape, &x));
    assert_int_equal(strix_linear_forward(l, &x, NULL), STRIX_ERR_SHAPE);
    strix_tensor_free(&x);
    strix_module_free(&l->base);
    strix_params_free(&ps);
}

// ---- main --------------------------------------------------------------------------------------

// ---- the general module form (strix_module_io) -------------------------------------------------

/* Embedding through the general form: alone it refuses the one-tensor forward; at the head of a
 * Sequential (Embedding -> Linear) forward_ex on ids, backward_ex and relevance_ex give exactly
 * (bit for bit) what the typed calls give. */
static void test_io_embedding_sequential(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_sequential *s;
    OK(strix_sequential_new(be, "", &s));
    b.m = &s->base;
    char name[STRIX_PARAM_NAME_MAX];
    strix_embedding *e;
    OK(strix_sequential_child_name(s, name));
    OK(strix_embedding_new(&b.ps, name, 7, 5, 0.02f, &e));
    OK(strix_sequential_add(s, &e->base));
    strix_linear *l;
    OK(strix_sequential_child_name(s, name));
    OK(strix_linear_new(&b.ps, name, 5, 3, true, 0.02f, NULL, &l));
    OK(strix_sequential_add(s, &l->base));
    finish(&b, 41);
    int32_t ids_h[8] = {0, 3, 3, 6, 1, 5, 0, 2};
    int32_t *ids;
    OK(strix_alloc(be, sizeof ids_h, (void **)&ids));
    OK(strix_copy(be, ids, ids_h, sizeof ids_h, STRIX_COPY_H2D));
    int64_t shape[2] = {2, 4}, yshape[3] = {2, 4, 3};
    strix_rng rng;
    strix_rng_seed(&rng, 42);
    float R[24];
    fill_uniform(&rng, R, 24, -1.0, 1.0);
    strix_tensor dy = tensor_from_host(be, 3, yshape, R);
    strix_lrp_rule eps = {.kind = STRIX_LRP_EPSILON, .epsilon = 1e-6f};
    s->base.rule = e->base.rule = l->base.rule = eps;

    // the one-tensor forward of an ids module is refused
    const strix_tensor *y, *t;
    assert_int_equal(strix_module_forward(&e->base, &dy, &y), STRIX_ERR_UNSUPPORTED);

    // the typed calls
    OK(strix_embedding_forward(e, ids, 2, shape, &t));
    OK(strix_linear_forward(l, t, &y));
    float *y_typed = host_of(be, y);
    OK(strix_params_zero_grad(&b.ps));
    OK(strix_linear_backward(l, &dy, &t));
    OK(strix_embedding_backward(e, t));
    float *g_typed = from_backend(be, b.ps.grad, b.ps.total);
    OK(strix_module_relevance(&l->base, &dy, &t));
    OK(strix_embedding_relevance(e, t, &t));
    assert_int_equal(t->ndim, 2);
    float *r_typed = host_of(be, t);

    // the general form through the Sequential
    strix_module_io io = strix_module_io_of_ids(ids, 2, shape);
    OK(strix_module_forward_ex(&s->base, &io));
    assert_int_equal(io.n_out, 1);
    assert_int_equal(io.out[0]->ndim, 3);
    assert_int_equal(io.out[0]->shape[2], 3);
    float *y_ex = host_of(be, io.out[0]);
    assert_same_bits(y_typed, y_ex, 24);
    OK(strix_params_zero_grad(&b.ps));
    strix_module_io bio = strix_module_io_of(&dy);
    OK(strix_module_backward_ex(&s->base, &bio));
    assert_int_equal(bio.n_out, 1);
    assert_null(bio.out[0]); /* ids have no gradient */
    float *g_ex = from_backend(be, b.ps.grad, b.ps.total);
    assert_same_bits(g_typed, g_ex, b.ps.total);
    strix_module_io rio = strix_module_io_of(&dy);
    OK(strix_module_relevance_ex(&s->base, &rio));
    assert_int_equal(rio.n_out, 1);
    assert_int_equal(rio.out[0]->ndim, 2);
    assert_int_equal(rio.out[0]->shape[0], 2);
    assert_int_equal(rio.out[0]->shape[1], 4);
    float *r_ex = host_of(be, rio.out[0]);
    assert_same_bits(r_typed, r_ex, 8);
    // and the relevance is not trivially zero
    double total = 0.0;
    for (int i = 0; i < 8; i++) total += fabs(r_ex[i]);
    assert_true(total > 1e-3);

    // an Embedding given a float input, or a mask, is refused
    strix_module_io bad = strix_module_io_of(&dy);
    assert_int_equal(strix_module_forward_ex(&s->base, &bad), STRIX_ERR_UNSUPPORTED);
    bad = strix_module_io_of_ids(ids, 2, shape);
    bad.mask = &dy;
    assert_int_equal(strix_module_forward_ex(&s->base, &bad), STRIX_ERR_UNSUPPORTED);
    free(y_typed), free(g_typed), free(r_typed), free(y_ex), free(g_ex), free(r_ex);
    strix_tensor_free(&dy);
    strix_free(be, ids);
    release(&b);
}

/* Attention's KV cache as state objects: a step through forward_ex on a state equals
 * strix_attention_decode bit for bit, and two states interleaved hold two independent sequences
 * (each equals its own run alone). States are checked against their owner. */
static void test_io_attention_state(void **state) {
    strix_backend *be = *state;
    built b;
    begin(&b, be);
    strix_attention_config cfg = attn_cfg(16, 4, NULL, true);
    strix_attention *a;
    OK(strix_attention_new(&b.ps, "attn", &cfg, &a));
    b.m = &a->base;
    strix_linear *other;
    OK(strix_linear_new(&b.ps, "other", 16, 16, true, 0.02f, NULL, &other));
    strix_attention *a2;
    OK(strix_attention_new(&b.ps, "attn2", &cfg, &a2));
    finish(&b, 43);
    enum { T = 5, C = 16 };
    strix_rng rng;
    strix_rng_seed(&rng, 44);
    float xh[2][T * C];
    fill_normal(&rng, xh[0], T * C, 0.0, 1.0);
    fill_normal(&rng, xh[1], T * C, 0.0, 1.0);
    int64_t row_shape[2] = {1, C};
    strix_tensor rows[2][T];
    for (int q = 0; q < 2; q++)
        for (int p = 0; p < T; p++) rows[q][p] = tensor_from_host(be, 2, row_shape, xh[q] + p * C);
    // alone: each sequence decoded with the module's own cache
    float alone[2][T * C];
    for (int q = 0; q < 2; q++)
        for (int p = 0; p < T; p++) {
            const strix_tensor *y;
            OK(strix_attention_decode(a, &rows[q][p], p, &y));
            float *h = host_of(be, y);
            memcpy(alone[q] + p * C, h, C * sizeof(float));
            free(h);
        }
    // interleaved on two states
    strix_module_state *st[2];
    OK(strix_module_state_new(&a->base, &st[0]));
    OK(strix_module_state_new(&a->base, &st[1]));
    for (int p = 0; p < T; p++)
        for (int q = 0; q < 2; q++) {
            strix_module_io io = strix_module_io_of(&rows[q][p]);
            io.state = st[q];
            io.pos = p;
            OK(strix_module_forward_ex(&a->base, &io));
            assert_int_equal(io.n_out, 1);
            float *h = host_of(be, io.out[0]);
            assert_same_bits(alone[q] + p * C, h, C);
            free(h);
        }
    // a state of another module, a state on a module without one, a mask
    strix_module_state *none = NULL;
    assert_int_equal(strix_module_state_new(&other->base, &none), STRIX_ERR_UNSUPPORTED);
    assert_null(none);
    strix_module_io io = strix_module_io_of(&rows[0][0]);
    io.mask = &rows[0][1];
    io.state = st[0]; /* a key mask is for full forwards, not decode steps */
    assert_int_equal(strix_module_forward_ex(&a->base, &io), STRIX_ERR_UNSUPPORTED);
    io.mask = NULL;
    assert_int_equal(strix_module_forward_ex(&other->base, &io), STRIX_ERR_UNSUPPORTED);
    assert_int_equal(strix_module_forward_ex(&a2->base, &io), STRIX_ERR_ARG);
    // a Residual passes the state on to its f: y = x + the decode step of a2 on a2's state
    const strix_tensor *y2;
    OK(strix_attention_decode(a2, &rows[0][0], 0, &y2));
    float *f_alone = host_of(be, y2);
    strix_residual *res;
    OK(strix_residual_new(&a2->base, &res)); /* owns a2 from here */
    strix_module_state *st2;
    OK(strix_module_state_new(&a2->base, &st2));
    io.state = st2;
    io.pos = 0;
    OK(strix_module_forward_ex(&res->base, &io));
    assert_int_equal(io.n_out, 1);
    float *sum = host_of(be, io.out[0]);
    for (int i = 0; i < C; i++) {
        float want = xh[0][i] + f_alone[i];
        assert_memory_equal(&sum[i], &want, sizeof(float));
    }
    free(f_alone);
    free(sum);
    strix_module_state_free(&a2->base, st2);
    strix_module_state_free(&a->base, st[0]);
    strix_module_state_free(&a->base, st[1]);
    for (int q = 0; q < 2; q++)
        for (int p = 0; p < T; p++) strix_tensor_free(&rows[q][p]);
    strix_module_free(&other->base);
    strix_module_free(&res->base);
    release(&b);
}

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_fd_linear),
        BACKEND_TEST(test_fd_embedding),
        BACKEND_TEST(test_fd_layernorm),
        BACKEND_TEST(test_fd_attention),
        BACKEND_TEST(test_fd_attention_masked),
        BACKEND_TEST(test_fd_mlp),
        BACKEND_TEST(test_fd_block),
        BACKEND_TEST(test_fd_gpt_loss),
        BACKEND_TEST(test_golden_linear_layernorm),
        BACKEND_TEST(test_golden_attention),
        BACKEND_TEST(test_golden_attention_masked),
        BACKEND_TEST(test_golden_mlp_block),
        BACKEND_TEST(test_bad_configs),
        BACKEND_TEST(test_io_embedding_sequential),
        BACKEND_TEST(test_io_attention_state),
    };
    return run_on_each_backend("nn", tests, sizeof tests / sizeof tests[0]) ? 1 : 0;
}
