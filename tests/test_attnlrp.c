/*
 * test_attnlrp.c - AttnLRP of the GPT's modules and of strix_gpt_explain, on every CPU backend.
 *
 * References: tests/golden/attnlrp/{mha,mha_rope,gpt,gpt_rope,gpt_relu}.bin written by
 * tools/ref/attnlrp_ref.py from LXT 2.1's explicit rules and from an independent transcription of
 * the published rules (Achtibat et al. 2024), both in float64 and with strix's stabiliser
 * z + eps·sign(z):
 *  - mha / mha_rope: causal self-attention (B 2, T 7, C 16, 2 heads) -> Flatten -> Linear(112, 5):
 *    input relevance, relevance of q|k|v and the softmax gap, per rule configuration;
 *  - gpt / gpt_rope / gpt_relu: the tiny GPT (V 11, block 8, C 16, 2 heads, 2 layers): the
 *    per-position token and position relevance of strix_gpt_explain, the sums, the softmax gap,
 *    and the relevance at each block's input.
 * Tolerance: |got − ref| <= 1e-4·max(1, |ref|). Configurations: lxt (eps 1e-6, bias in the
 * denominator, LayerNorm std held constant), eps (eps 0.05), out (bias out of the denominator),
 * ident (LayerNorm passes relevance through), onehot (one-hot seed with a contrast class).
 * Also: conservation (MLP exactly; attention, block and GPT up to the softmax gap, which is
 * measured and bounded), the attention inside strix_lrp_explain, unsupported or malformed rules
 * refused before anything runs, argument errors, long prompts, Embedding's relevance, and
 * bit-identical results on 1 and 2 threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "models/gpt/gpt_internal.h"
#include "nn_testutil.h"
#include "strix/gpt.h"
#include "strix/layers.h"
#include "strix/lrp.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)
#define TOL 1e-4

// ---- helpers -----------------------------------------------------------------------------------

/* True if every |got − want| <= TOL·max(1, |want|); prints the first 5 failures and the largest
 * scaled error. */
static bool check_rel(const char *label, const float *got, const float *want, size_t n) {
    size_t bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i], scale = fabs(w) > 1.0 ? fabs(w) : 1.0;
        double err = fabs(g - w) / scale;
        if (!(err <= TOL)) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: got %.9g want %.9g\n", label, i, g, w);
            bad++;
        }
        if (err > worst || isnan(err)) worst = err;
    }
    if (bad)
        fprintf(stderr, "%s: %zu of %zu off (worst scaled error %.3g)\n", label, bad, n, worst);
    return bad == 0;
}

static bool check_rel_backend(strix_backend *be, const char *label, const float *dev,
                              const float *want, size_t n) {
    float *h = from_backend(be, dev, n);
    bool ok = check_rel(label, h, want, n);
    free(h);
    return ok;
}

static const tl_array *need(const tl_golden *gf, const char *name) {
    const tl_array *e = tl_golden_get(gf, name);
    assert_non_null(e);
    return e;
}

/* The array `prefix.cfg`, or NULL without a message. */
static const tl_array *find2(const tl_golden *gf, const char *prefix, const char *cfg) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s", prefix, cfg);
    for (int i = 0; i < gf->count; i++)
        if (strcmp(gf->arrays[i].name, name) == 0) return &gf->arrays[i];
    return NULL;
}

static float scalar2(const tl_golden *gf, const char *prefix, const char *cfg) {
    const tl_array *a = find2(gf, prefix, cfg);
    assert_non_null(a);
    return a->data[0];
}

/* Uploads every parameter of ps from the golden's "param.<name>" arrays. */
static void load_params(strix_params *ps, const tl_golden *gf) {
    assert_int_equal(ps->count, golden_count_prefix(gf, "param."));
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        char key[160];
        snprintf(key, sizeof key, "param.%s", p->name);
        const tl_array *e = need(gf, key);
        assert_int_equal(e->count, p->numel);
        to_backend(ps->be, p->data, e->data, p->numel);
    }
}

/* The rule configurations of tools/ref/attnlrp_ref.py. */
typedef struct rule_cfg {
    const char *name;
    float eps;
    bool bias_in, detach, one_hot;
} rule_cfg;

static const rule_cfg CFGS[] = {
    {"lxt", 1e-6f, true, true, false},   {"eps", 0.05f, true, true, false},
    {"out", 1e-6f, false, true, false},  {"ident", 1e-6f, true, false, false},
    {"onehot", 1e-6f, true, true, true},
};
#define N_CFGS (sizeof CFGS / sizeof CFGS[0])

static strix_lrp_rule rule_of(const rule_cfg *c) {
    strix_lrp_rule r = strix_lrp_epsilon(c->eps);
    r.bias_in_denominator = c->bias_in;
    r.layer_norm_detach_std = c->detach;
    return r;
}

/* Sets the rule of m and of every module inside it. */
static void set_rule_all(strix_module *m, const strix_lrp_rule *r) {
    m->rule = *r;
    strix_module *c;
    for (int i = 0; m->vt->child && (c = m->vt->child(m, i)) != NULL; i++) set_rule_all(c, r);
}

static double host_sum(strix_backend *be, const float *dev, size_t n) {
    float *h = from_backend(be, dev, n);
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += h[i];
    free(h);
    return s;
}

// ---- the attention block (mha*.bin) ------------------------------------------------------------

typedef struct mha_model {
    strix_params ps;
    strix_attention *attn;
    strix_linear *head;
    int B, T, C, K;
    strix_tensor x, seed;
    int32_t targets[8];
} mha_model;

static void mha_build(strix_backend *be, const tl_golden *gf, bool rope, mha_model *mm) {
    const tl_array *x = need(gf, "x"), *tg = need(gf, "targets");
    mm->B = (int)x->shape[0];
    mm->T = (int)x->shape[1];
    mm->C = (int)x->shape[2];
    mm->K = (int)need(gf, "param.head.bias")->count;
    strix_params_init_empty(&mm->ps, be);
    strix_attention_config ac = {.d_model = mm->C, .n_head = 2, .block_size = mm->T,
                                 .bias = true, .rope = rope, .rope_base = 10000.0f,
                                 .init_std = 0.02f, .proj_init_std = 0.02f};
    OK(strix_attention_new(&mm->ps, "attn", &ac, &mm->attn));
    OK(strix_linear_new(&mm->ps, "head", mm->T * mm->C, mm->K, true, 0.02f, NULL, &mm->head));
    OK(strix_params_alloc(&mm->ps));
    load_params(&mm->ps, gf);
    mm->x = tensor_from_host(be, 3, x->shape, x->data);
    for (int b = 0; b < mm->B; b++) mm->targets[b] = (int32_t)tg->data[b];
    int64_t sshape[2] = {mm->B, mm->K};
    OK(strix_tensor_new(be, 2, sshape, &mm->seed));
}

static void mha_free(mha_model *mm) {
    strix_module_free(&mm->attn->base);
    strix_module_free(&mm->head->base);
    strix_tensor_free(&mm->x);
    strix_tensor_free(&mm->seed);
    strix_params_free(&mm->ps);
}

/* Forward, target-logit seed, relevance back to x; *r_in (B,T,C) and logits on the host. */
static void mha_explain(strix_backend *be, mha_model *mm, const strix_lrp_rule *rule,
                        const strix_tensor **r_in, float *logits) {
    const strix_tensor *a, *y, *r;
    OK(strix_attention_forward(mm->attn, &mm->x, &a));
    int64_t fshape[2] = {mm->B, (int64_t)mm->T * mm->C};
    strix_tensor flat = strix_tensor_view(a->data, strix_backend_device(be), 2, fshape);
    OK(strix_linear_forward(mm->head, &flat, &y));
    size_t BK = (size_t)mm->B * (size_t)mm->K;
    tl_download(be, logits, y->data, BK * sizeof(float));
    float seed[64] = {0};
    for (int b = 0; b < mm->B; b++)
        seed[b * mm->K + mm->targets[b]] = logits[b * mm->K + mm->targets[b]];
    to_backend(be, mm->seed.data, seed, BK);
    set_rule_all(&mm->attn->base, rule);
    set_rule_all(&mm->head->base, rule);
    OK(strix_module_relevance(&mm->head->base, &mm->seed, &r));
    strix_tensor r3 = strix_tensor_view(r->data, strix_backend_device(be), 3, mm->x.shape);
    OK(strix_attention_relevance(mm->attn, &r3, r_in));
}

static void check_mha_file(strix_backend *be, const char *file, bool rope) {
    tl_golden gf;
    assert_true(tl_golden_load(file, &gf));
    mha_model mm;
    mha_build(be, &gf, rope, &mm);
    int bad = 0, runs = 0;
    for (size_t c = 0; c < N_CFGS; c++) {
        const tl_array *want = find2(&gf, "r", CFGS[c].name);
        if (!want) continue;
        strix_lrp_rule rule = rule_of(&CFGS[c]);
        const strix_tensor *r_in;
        float logits[64];
        mha_explain(be, &mm, &rule, &r_in, logits);
        char label[64];
        snprintf(label, sizeof label, "%s r.%s", file, CFGS[c].name);
        bad += !check_rel_backend(be, label, r_in->data, want->data, want->count);
        const tl_array *rqkv = find2(&gf, "rqkv", CFGS[c].name);
        bad += !check_rel_backend(be, "rqkv", strix_attention_relevance_qkv(mm.attn)->data,
                                  rqkv->data, rqkv->count);
        float gap = (float)strix_attention_softmax_gap(mm.attn);
        float want_gap = scalar2(&gf, "gap", CFGS[c].name);
        bad += !check_rel("softmax gap", &gap, &want_gap, 1);
        if (c == 0) {
            const tl_array *lg = need(&gf, "logits");
            bad += !check_rel("logits", logits, lg->data, lg->count);
        }
        runs++;
    }
    assert_int_equal(runs, 3);
    print_message("    %s: %d rule configurations compared\n", file, runs);
    assert_int_equal(bad, 0);
    mha_free(&mm);
    tl_golden_free(&gf);
}

static void test_mha_vs_lxt(void **state) {
    check_mha_file(*state, "tests/golden/attnlrp/mha.bin", false);
}

static void test_mha_rope(void **state) {
    check_mha_file(*state, "tests/golden/attnlrp/mha_rope.bin", true);
}

/* The attention module inside Sequential(attn, Flatten, Linear), explained by strix_lrp_explain
 * with a uniform composite: the framework walks the attention's vtable and children. */
static void test_mha_in_lrp_explain(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    assert_true(tl_golden_load("tests/golden/attnlrp/mha.bin", &gf));
    const tl_array *x = need(&gf, "x"), *tg = need(&gf, "targets"), *want = need(&gf, "r.lxt");
    int T = (int)x->shape[1], C = (int)x->shape[2], K = 5;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_sequential *seq;
    strix_attention *attn;
    strix_flatten *flat;
    strix_linear *head;
    OK(strix_sequential_new(be, "", &seq));
    strix_attention_config ac = {.d_model = C, .n_head = 2, .block_size = T, .bias = true,
                                 .rope_base = 10000.0f, .init_std = 0.02f,
                                 .proj_init_std = 0.02f};
    OK(strix_attention_new(&ps, "attn", &ac, &attn));
    OK(strix_sequential_add(seq, &attn->base));
    OK(strix_flatten_new(be, 1, -1, &flat));
    OK(strix_sequential_add(seq, &flat->base));
    OK(strix_linear_new(&ps, "head", T * C, K, true, 0.02f, NULL, &head));
    OK(strix_sequential_add(seq, &head->base));
    OK(strix_params_alloc(&ps));
    load_params(&ps, &gf);
    strix_lrp_rule rule = rule_of(&CFGS[0]);
    strix_lrp_composite comp = strix_lrp_composite_uniform(rule);
    OK(strix_lrp_assign(&seq->base, &comp));
    strix_tensor xt = tensor_from_host(be, 3, x->shape, x->data);
    int32_t classes[2] = {(int32_t)tg->data[0], (int32_t)tg->data[1]};
    strix_lrp_target target = strix_lrp_target_default();
    target.classes = classes;
    strix_lrp_explanation e;
    OK(strix_lrp_explain(&seq->base, &xt, &target, &e));
    assert_int_equal(e.ndim, 3);
    assert_true(check_rel("lrp_explain r", e.relevance, want->data, want->count));
    float out_sum = (float)e.relevance_out_sum;
    assert_true(check_rel("out sum", &out_sum, &need(&gf, "out_sum.lxt")->data[0], 1));
    strix_lrp_explanation_free(&e);
    strix_tensor_free(&xt);
    strix_module_free(&seq->base);
    strix_params_free(&ps);
    tl_golden_free(&gf);
}

// ---- the GPT (gpt*.bin) ------------------------------------------------------------------------

static strix_gpt *load_gpt(strix_backend *be, const tl_golden *gf, bool rope, strix_act act) {
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = (int)need(gf, "cfg.V")->data[0];
    c.block_size = (int)need(gf, "cfg.block")->data[0];
    c.n_layer = (int)need(gf, "cfg.L")->data[0];
    c.d_model = (int)need(gf, "cfg.C")->data[0];
    c.d_ff = (int)need(gf, "cfg.d_ff")->data[0];
    c.n_head = (int)need(gf, "cfg.heads")->count;
    c.rope = rope;
    c.mlp_act = act;
    c.bias = true;
    c.tie_weights = false;
    strix_gpt *g;
    OK(strix_gpt_new(be, &c, &g));
    load_params(strix_gpt_params(g), gf);
    return g;
}

static strix_gpt_explain_config explain_cfg(const rule_cfg *c, const tl_golden *gf) {
    strix_gpt_explain_config e = strix_gpt_explain_defaults();
    e.rule = rule_of(c);
    e.one_hot_seed = c->one_hot;
    e.target = c->one_hot ? (int32_t)scalar2(gf, "target", c->name) : -1;
    e.contrast = (int32_t)scalar2(gf, "contrast", c->name);
    return e;
}

static void check_gpt_file(strix_backend *be, const char *file, bool rope, strix_act act) {
    tl_golden gf;
    assert_true(tl_golden_load(file, &gf));
    strix_gpt *g = load_gpt(be, &gf, rope, act);
    const tl_array *ids_a = need(&gf, "ids");
    int32_t *ids = golden_ints(ids_a);
    int T = (int)ids_a->count, bad = 0, runs = 0;
    int V = g->cfg.vocab_size;
    const tl_array *logits = need(&gf, "logits");
    for (size_t c = 0; c < N_CFGS; c++) {
        const rule_cfg *rc = &CFGS[c];
        const tl_array *rtok = find2(&gf, "rtok", rc->name);
        if (!rtok) continue;
        strix_gpt_explain_config ec = explain_cfg(rc, &gf);
        strix_gpt_explanation e;
        OK(strix_gpt_explain(g, ids, T, &ec, &e));
        assert_int_equal(e.T, T);
        assert_int_equal(e.target, (int32_t)scalar2(&gf, "target", rc->name));
        assert_int_equal(e.predicted, (int32_t)need(&gf, "predicted")->data[0]);
        char label[96];
        snprintf(label, sizeof label, "%s tokens.%s", file, rc->name);
        bad += !check_rel(label, e.relevance, rtok->data, (size_t)T);
        const tl_array *rpos = find2(&gf, "rpos", rc->name);
        if (rpos) {
            assert_non_null(e.relevance_position);
            snprintf(label, sizeof label, "%s positions.%s", file, rc->name);
            bad += !check_rel(label, e.relevance_position, rpos->data, (size_t)T);
        } else {
            assert_null(e.relevance_position);
        }
        float sums[3] = {(float)e.relevance_out_sum, (float)e.relevance_in_sum,
                         (float)e.softmax_gap};
        float want[3] = {scalar2(&gf, "out_sum", rc->name), scalar2(&gf, "in_sum", rc->name),
                         scalar2(&gf, "gap", rc->name)};
        snprintf(label, sizeof label, "%s sums (out, in, gap).%s", file, rc->name);
        bad += !check_rel(label, sums, want, 3);
        float tl = logits->data[(size_t)(T - 1) * (size_t)V + (size_t)e.target];
        bad += !check_rel("target logit", &e.target_logit, &tl, 1);
        if (c == 0) // the relevance reaching each block's input
            for (int l = 0; l < g->cfg.n_layer; l++) {
                char name[32];
                snprintf(name, sizeof name, "rblock%d", l);
                const tl_array *rb = find2(&gf, name, "lxt");
                bad += !check_rel_backend(be, name, strix_block_relevance_input(g->h[l])->data,
                                          rb->data, rb->count);
            }
        print_message("    %s %-6s target %d: out %.5f in %.5f softmax gap %.5f\n", file,
                      rc->name, e.target, e.relevance_out_sum, e.relevance_in_sum, e.softmax_gap);
        strix_gpt_explanation_free(&e);
        runs++;
    }
    assert_true(runs >= 4);
    assert_int_equal(bad, 0);
    free(ids);
    strix_gpt_free(g);
    tl_golden_free(&gf);
}

static void test_gpt_vs_lxt(void **state) {
    check_gpt_file(*state, "tests/golden/attnlrp/gpt.bin", false, STRIX_ACT_GELU);
}
static void test_gpt_rope(void **state) {
    check_gpt_file(*state, "tests/golden/attnlrp/gpt_rope.bin", true, STRIX_ACT_GELU);
}
static void test_gpt_relu(void **state) {
    check_gpt_file(*state, "tests/golden/attnlrp/gpt_relu.bin", false, STRIX_ACT_RELU);
}

/* NULL config = the defaults = LXT's AttnLRP config (the lxt column); probabilities from the
 * reference logits. */
static void test_gpt_defaults(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    assert_true(tl_golden_load("tests/golden/attnlrp/gpt.bin", &gf));
    strix_gpt *g = load_gpt(be, &gf, false, STRIX_ACT_GELU);
    const tl_array *ids_a = need(&gf, "ids"), *logits = need(&gf, "logits");
    int32_t *ids = golden_ints(ids_a);
    int T = (int)ids_a->count, V = g->cfg.vocab_size;
    strix_gpt_explanation e;
    OK(strix_gpt_explain(g, ids, T, NULL, &e));
    assert_true(check_rel("default tokens", e.relevance, need(&gf, "rtok.lxt")->data, (size_t)T));
    const float *last = logits->data + (size_t)(T - 1) * (size_t)V;
    double total = 0.0;
    for (int v = 0; v < V; v++) total += exp((double)last[v] - (double)last[e.predicted]);
    float p = (float)(1.0 / total);
    assert_true(check_rel("predicted prob", &e.predicted_prob, &p, 1));
    assert_true(e.target_prob == e.predicted_prob);
    assert_true(e.relevance_out_sum == (double)e.target_logit);
    strix_gpt_explanation_free(&e);
    strix_gpt_explanation_free(&e); // zeroed: freeing again is harmless
    strix_gpt_explanation_free(NULL);
    free(ids);
    strix_gpt_free(g);
    tl_golden_free(&gf);
}

// ---- conservation ------------------------------------------------------------------------------

/* Relative conservation error |Σin − (Σout − gap)|/|Σout|. */
static double conservation(double in, double out, double gap) {
    return fabs(in - (out - gap)) / fabs(out);
}

static strix_tensor random_tensor(strix_backend *be, int ndim, const int64_t *shape,
                                  uint64_t seed, float lo, float hi) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    float *h = tl_malloc_floats(n);
    tl_fill_uniform(h, n, seed, lo, hi);
    strix_tensor t = tensor_from_host(be, ndim, shape, h);
    free(h);
    return t;
}

/* Epsilon with the bias out of the denominator and a tiny eps conserves through the MLP exactly
 * (the activation passes relevance on, each Linear conserves); the attention and the block lose
 * only what the softmax rule does not conserve (the bilinear rule and the residual splits
 * conserve), measured as strix_attention_softmax_gap; the gap itself is nonzero. */
static void test_conservation_modules(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_block_config bc = {.attn = {.d_model = 16, .n_head = 2, .block_size = 8,
                                      .rope_base = 10000.0f, .init_std = 0.3f,
                                      .proj_init_std = 0.3f},
                             .d_ff = 40, .act = STRIX_ACT_GELU, .ln_eps = 1e-5f,
                             .bias = true};
    strix_block *blk;
    OK(strix_block_new(&ps, "blk", &bc, &blk));
    OK(strix_params_alloc(&ps));
    randomize_params(&ps, 21, 0.3);
    int64_t shape[3] = {2, 6, 16};
    strix_tensor x = random_tensor(be, 3, shape, 5, -2.0f, 2.0f);
    strix_tensor r = random_tensor(be, 3, shape, 6, 0.0f, 1.0f);
    size_t n = 2 * 6 * 16;
    double out = host_sum(be, r.data, n);
    strix_lrp_rule rule = strix_lrp_epsilon(1e-9f);
    rule.layer_norm_detach_std = true;
    set_rule_all(&blk->base, &rule);
    const strix_tensor *y, *ri;
    OK(strix_block_forward(blk, &x, &y));
    // the MLP alone
    OK(strix_mlp_relevance(blk->mlp, &r, &ri));
    double mlp_err = conservation(host_sum(be, ri->data, n), out, 0.0);
    // the attention alone
    OK(strix_attention_relevance(blk->attn, &r, &ri));
    double gap_a = strix_attention_softmax_gap(blk->attn);
    double attn_err = conservation(host_sum(be, ri->data, n), out, gap_a);
    // the block
    OK(strix_block_relevance(blk, &r, &ri));
    double gap_b = strix_attention_softmax_gap(blk->attn);
    double blk_err = conservation(host_sum(be, ri->data, n), out, gap_b);
    print_message("    relative conservation error: MLP %.2e, attention %.2e (gap %.4f of %.4f), "
                  "block %.2e (gap %.4f)\n", mlp_err, attn_err, gap_a, out, blk_err, gap_b);
    assert_true(mlp_err <= 1e-4);
    assert_true(attn_err <= 1e-4);
    assert_true(blk_err <= 1e-4);
    assert_true(fabs(gap_a) > 1e-3 && fabs(gap_b) > 1e-3);
    strix_tensor_free(&x);
    strix_tensor_free(&r);
    strix_module_free(&blk->base);
    strix_params_free(&ps);
}

/* The whole GPT: with the bias out of the denominator, Σ R_in = Σ R_out − softmax gap for the
 * epsilon rule and for z-plus on the Linears; the softmax gap of LXT's config stays below the
 * bound recorded from the reference model (0.119 of the output relevance; bound 0.15). */
static void test_conservation_gpt(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    assert_true(tl_golden_load("tests/golden/attnlrp/gpt.bin", &gf));
    strix_gpt *g = load_gpt(be, &gf, false, STRIX_ACT_GELU);
    const tl_array *ids_a = need(&gf, "ids");
    int32_t *ids = golden_ints(ids_a);
    int T = (int)ids_a->count;
    strix_gpt_explain_config ec = strix_gpt_explain_defaults();
    strix_gpt_explanation e;
    const char *names[2] = {"epsilon", "z-plus"};
    for (int k = 0; k < 2; k++) {
        ec.rule = k == 0 ? strix_lrp_epsilon(1e-9f) : strix_lrp_zplus();
        if (k == 1) ec.rule.epsilon = 1e-9f;
        ec.rule.bias_in_denominator = false;
        ec.rule.layer_norm_detach_std = true;
        OK(strix_gpt_explain(g, ids, T, &ec, &e));
        double err = conservation(e.relevance_in_sum, e.relevance_out_sum, e.softmax_gap);
        print_message("    GPT %s, bias out: in %.6f out %.6f softmax gap %.6f, error %.2e\n",
                      names[k], e.relevance_in_sum, e.relevance_out_sum, e.softmax_gap, err);
        assert_true(err <= 1e-4);
        strix_gpt_explanation_free(&e);
    }
    OK(strix_gpt_explain(g, ids, T, NULL, &e));
    double ratio = fabs(e.softmax_gap) / fabs(e.relevance_out_sum);
    print_message("    softmax gap (LXT config): %.4f of %.4f = %.3f (bound 0.15)\n", e.softmax_gap,
                  e.relevance_out_sum, ratio);
    assert_true(ratio <= 0.15);
    strix_gpt_explanation_free(&e);
    free(ids);
    strix_gpt_free(g);
    tl_golden_free(&gf);
}

// ---- errors: refused before anything runs ------------------------------------------------------

static bool gamma_refused(const strix_module *m, strix_lrp_kind k) {
    (void)m;
    return k != STRIX_LRP_GAMMA;
}

/* An unsupported or malformed rule, or bad arguments, return an error before any rule is set or
 * any forward runs: the logits of an earlier forward and a sentinel rule stay untouched. */
static void test_refused_before_propagation(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    assert_true(tl_golden_load("tests/golden/attnlrp/gpt.bin", &gf));
    strix_gpt *g = load_gpt(be, &gf, false, STRIX_ACT_GELU);
    int T = 8, V = g->cfg.vocab_size;
    int32_t other[8] = {1, 2, 3, 4, 5, 6, 7, 8}, ids[8] = {0, 1, 0, 2, 10, 3, 3, 9};
    OK(strix_gpt_forward(g, other, NULL, 1, T, NULL));
    size_t nl = (size_t)T * (size_t)V;
    float *before = from_backend(be, strix_gpt_logits(g), nl);
    strix_lrp_rule sentinel = strix_lrp_epsilon(0.123f);
    set_rule_all(&g->h[1]->base, &sentinel);
    set_rule_all(&g->lm_head->base, &sentinel);

    // a module that refuses gamma (its own vtable copy)
    strix_module *mp = &g->h[1]->mlp->c_proj->base;
    const strix_module_i *saved = mp->vt;
    strix_module_i no_gamma = *saved;
    no_gamma.supports_rule = gamma_refused;
    mp->vt = &no_gamma;
    strix_gpt_explain_config ec = strix_gpt_explain_defaults();
    ec.rule = strix_lrp_gamma(0.25f);
    strix_gpt_explanation e;
    assert_int_equal(strix_gpt_explain(g, ids, T, &ec, &e), STRIX_ERR_UNSUPPORTED);
    print_message("    %s\n", strix_last_error());
    assert_non_null(strstr(strix_last_error(), "gamma"));
    assert_non_null(strstr(strix_last_error(), "Linear"));
    assert_null(e.relevance);
    // a module without a relevance slot
    no_gamma.supports_rule = saved->supports_rule;
    no_gamma.relevance = NULL;
    ec = strix_gpt_explain_defaults();
    assert_int_equal(strix_gpt_explain(g, ids, T, &ec, &e), STRIX_ERR_UNSUPPORTED);
    mp->vt = saved;
    // malformed rules
    ec.rule = strix_lrp_alpha_beta(2.0f, 0.0f);
    assert_int_equal(strix_gpt_explain(g, ids, T, &ec, &e), STRIX_ERR_ARG);
    ec.rule = strix_lrp_epsilon(-1.0f);
    assert_int_equal(strix_gpt_explain(g, ids, T, &ec, &e), STRIX_ERR_ARG);
    // bad arguments
    ec = strix_gpt_explain_defaults();
    assert_int_equal(strix_gpt_explain(g, ids, 0, &ec, &e), STRIX_ERR_ARG);
    int32_t bad_ids[8] = {0, 1, 2, 3, 4, 5, 6, 11};
    assert_int_equal(strix_gpt_explain(g, bad_ids, T, &ec, &e), STRIX_ERR_ARG);
    ec.target = V;
    assert_int_equal(strix_gpt_explain(g, ids, T, &ec, &e), STRIX_ERR_ARG);
    ec.target = 4;
    ec.contrast = 4;
    assert_int_equal(strix_gpt_explain(g, ids, T, &ec, &e), STRIX_ERR_ARG);
    ec.contrast = -2;
    assert_int_equal(strix_gpt_explain(g, ids, T, &ec, &e), STRIX_ERR_ARG);
    assert_null(e.relevance);
    // nothing ran and no rule changed
    float *after = from_backend(be, strix_gpt_logits(g), nl);
    assert_true(tl_check_bits("logits untouched", after, before, nl));
    assert_true(g->h[1]->attn->base.rule.epsilon == 0.123f);
    assert_true(g->h[1]->mlp->c_fc->base.rule.epsilon == 0.123f);
    assert_true(g->lm_head->base.rule.epsilon == 0.123f);
    // and the same model explains fine afterwards
    ec = strix_gpt_explain_defaults();
    OK(strix_gpt_explain(g, ids, T, &ec, &e));
    strix_gpt_explanation_free(&e);
    // a NaN next-token logit is refused, never explained
    float nan_w = NAN;
    to_backend(be, g->lm_head->weight->data, &nan_w, 1);
    assert_int_equal(strix_gpt_explain(g, ids, T, &ec, &e), STRIX_ERR_NUMERIC);
    assert_null(e.relevance);
    free(before);
    free(after);
    strix_gpt_free(g);
    tl_golden_free(&gf);
}

/* Attention relevance needs a forward: refused after a decode step. */
static void test_attention_after_decode(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_attention_config ac = {.d_model = 8, .n_head = 2, .block_size = 4, .bias = true,
                                 .rope_base = 10000.0f, .init_std = 0.3f, .proj_init_std = 0.3f};
    strix_attention *a;
    OK(strix_attention_new(&ps, "a", &ac, &a));
    OK(strix_params_alloc(&ps));
    randomize_params(&ps, 3, 0.3);
    int64_t shape[3] = {1, 3, 8}, one[2] = {1, 8};
    strix_tensor x = random_tensor(be, 3, shape, 1, -1.0f, 1.0f);
    strix_tensor x1 = random_tensor(be, 2, one, 2, -1.0f, 1.0f);
    strix_lrp_rule rule = strix_lrp_epsilon(1e-6f);
    set_rule_all(&a->base, &rule);
    const strix_tensor *y, *ri;
    OK(strix_attention_forward(a, &x, &y));
    OK(strix_attention_decode(a, &x1, 0, &y));
    assert_int_equal(strix_attention_relevance(a, &x, &ri), STRIX_ERR_ARG);
    strix_tensor_free(&x);
    strix_tensor_free(&x1);
    strix_module_free(&a->base);
    strix_params_free(&ps);
}

// ---- more behaviour ----------------------------------------------------------------------------

/* A prompt longer than block_size explains its last block_size ids; 1 and 2 threads give the
 * same bits. */
static void test_long_prompt_and_threads(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    assert_true(tl_golden_load("tests/golden/attnlrp/gpt_rope.bin", &gf));
    strix_gpt *g = load_gpt(be, &gf, true, STRIX_ACT_GELU);
    int32_t ids[13] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9};
    strix_gpt_explanation a, b, c;
    int saved = strix_get_num_threads();
    strix_set_num_threads(1);
    OK(strix_gpt_explain(g, ids, 13, NULL, &a));
    OK(strix_gpt_explain(g, ids + 5, 8, NULL, &b));
    strix_set_num_threads(2);
    OK(strix_gpt_explain(g, ids, 13, NULL, &c));
    strix_set_num_threads(saved);
    assert_int_equal(a.T, 8);
    assert_true(tl_check_bits("long prompt", a.relevance, b.relevance, 8));
    assert_true(tl_check_bits("2 threads", a.relevance, c.relevance, 8));
    assert_true(a.relevance_in_sum == c.relevance_in_sum && a.softmax_gap == c.softmax_gap);
    // a prompt of one id: the softmax has one entry, relevance still flows to the token
    strix_gpt_explanation d;
    OK(strix_gpt_explain(g, ids, 1, NULL, &d));
    assert_int_equal(d.T, 1);
    assert_true(isfinite(d.relevance[0]) && d.relevance[0] != 0.0f);
    strix_gpt_explanation_free(&d);
    strix_gpt_explanation_free(&a);
    strix_gpt_explanation_free(&b);
    strix_gpt_explanation_free(&c);
    strix_gpt_free(g);
    tl_golden_free(&gf);
}

/* The attention's relevance on 1 and 2 threads is bit-identical (MHA golden, RoPE). */
static void test_attention_threads(void **state) {
    strix_backend *be = *state;
    tl_golden gf;
    assert_true(tl_golden_load("tests/golden/attnlrp/mha_rope.bin", &gf));
    mha_model mm;
    mha_build(be, &gf, true, &mm);
    strix_lrp_rule rule = rule_of(&CFGS[0]);
    const strix_tensor *r;
    float logits[64];
    size_t n = (size_t)strix_tensor_numel(&mm.x);
    int saved = strix_get_num_threads();
    strix_set_num_threads(1);
    mha_explain(be, &mm, &rule, &r, logits);
    float *one = from_backend(be, r->data, n);
    strix_set_num_threads(2);
    mha_explain(be, &mm, &rule, &r, logits);
    float *two = from_backend(be, r->data, n);
    strix_set_num_threads(saved);
    assert_true(tl_check_bits("attention relevance, 1 vs 2 threads", one, two, n));
    free(one);
    free(two);
    mha_free(&mm);
    tl_golden_free(&gf);
}

/* Embedding: each id's relevance is the sum of its row; any rule kind. */
static void test_embedding_relevance(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_embedding *emb;
    OK(strix_embedding_new(&ps, "emb", 5, 3, 1.0f, &emb));
    OK(strix_params_alloc(&ps));
    OK(strix_params_init(&ps, 1));
    int32_t host_ids[3] = {1, 4, 1};
    int32_t *ids = tl_upload(be, host_ids, sizeof host_ids);
    int64_t shape[1] = {3}, rshape[2] = {3, 3};
    const strix_tensor *y, *ri;
    OK(strix_embedding_forward(emb, ids, 1, shape, &y));
    float r[9] = {1, 2, 3, 0.5f, 0.25f, -1, 4, -4, 8}, want[3] = {6, -0.25f, 8};
    strix_tensor rt = tensor_from_host(be, 2, rshape, r);
    assert_true(emb->base.vt->supports_rule(&emb->base, STRIX_LRP_ZBOX));
    emb->base.rule = strix_lrp_gamma(0.25f);
    OK(strix_module_relevance(&emb->base, &rt, &ri));
    assert_int_equal(ri->ndim, 1);
    assert_int_equal(ri->shape[0], 3);
    float *got = from_backend(be, ri->data, 3);
    assert_true(tl_check_bits("embedding relevance", got, want, 3));
    // a relevance of the wrong shape
    int64_t bad_shape[2] = {3, 2};
    strix_tensor bad = tensor_from_host(be, 2, bad_shape, r);
    assert_int_equal(strix_embedding_relevance(emb, &bad, &ri), STRIX_ERR_SHAPE);
    free(got);
    strix_tensor_free(&bad);
    strix_tensor_free(&rt);
    strix_free(be, ids);
    strix_module_free(&emb->base);
    strix_params_free(&ps);
}

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_mha_vs_lxt),
        BACKEND_TEST(test_mha_rope),
        BACKEND_TEST(test_mha_in_lrp_explain),
        BACKEND_TEST(test_gpt_vs_lxt),
        BACKEND_TEST(test_gpt_rope),
        BACKEND_TEST(test_gpt_relu),
        BACKEND_TEST(test_gpt_defaults),
        BACKEND_TEST(test_conservation_modules),
        BACKEND_TEST(test_conservation_gpt),
        BACKEND_TEST(test_refused_before_propagation),
        BACKEND_TEST(test_attention_after_decode),
        BACKEND_TEST(test_long_prompt_and_threads),
        BACKEND_TEST(test_attention_threads),
        BACKEND_TEST(test_embedding_relevance),
    };
    return run_on_each_backend("attnlrp", tests, sizeof tests / sizeof tests[0]) ? 1 : 0;
}
