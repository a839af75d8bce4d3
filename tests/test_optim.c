/*
 * test_optim.c - optimizers, LR schedules, clipping, freezing and gradient accumulation
 * (strix/optim.h, strix_params_set_requires_grad) on every CPU backend:
 *
 *  1. PyTorch goldens (tools/ref/optim_ref.py, tests/golden/optim/): 5-step trajectories with
 *     fixed per-step gradients and learning rates of SGD (plain, momentum, Nesterov + weight
 *     decay, dampening + weight decay), Adam with L2 decay, AdamW with two groups (own lr scale and
 *     weight decay) beside a frozen parameter and a buffer that must not move; schedule values of
 *     StepLR, LinearLR, CosineAnnealingLR and warmups (SequentialLR / LambdaLR); clip_grad_value_
 *     and clip_grad_norm_ with a frozen parameter left out. Trajectories run at 1 thread and at 2
 *     threads with every loop parallel: bit-identical.
 *  2. Exact checks: the optimizer's AdamW with the no-decay group, built by hand or by
 *     strix_optimizer_adamw_split (the GPT trainer's optimizer), gives the bits of the first
 *     wave's strix_adamw_step (transcribed here from the same primitives);
 *     strix_clip_grad_norm over a fully trainable block is the whole-block sum of squares; SGD
 *     momentum across freeze/unfreeze against a host transcription; prefix matching and errors.
 *  3. Gradient accumulation: two micro-batches with strix_grad_accum_scale give one big batch's
 *     gradients and optimizer step (Linear + cross-entropy with ignored rows, with and without
 *     label smoothing).
 * Golden tolerance: atol 1e-6 + rtol 1e-5 (torch orders its Adam expression differently).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "backends/cpu/cpu_internal.h" /* cpu_set_parallel_min_work: force loops parallel */
#include "nn_testutil.h"
#include "strix/loss.h"
#include "strix/nn.h"
#include "strix/optim.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)
#define GOLD(name) "tests/golden/optim/" name ".bin"
#define ATOL 1e-6
#define RTOL 1e-5
#define STEPS 5

// ---- blocks -------------------------------------------------------------------------------------

typedef struct pdecl {
    const char *name;
    int ndim;
    int64_t shape[2];
    bool decay, buffer;
} pdecl;

/* A block of the declared parameters, allocated and zero-filled. */
static void block_new(strix_backend *be, strix_params *ps, const pdecl *d, int n) {
    strix_params_init_empty(ps, be);
    for (int i = 0; i < n; i++) {
        strix_param *p = d[i].buffer
                             ? strix_params_add_buffer(ps, d[i].name, d[i].ndim, d[i].shape,
                                                       STRIX_INIT_ZEROS)
                             : strix_params_add(ps, d[i].name, d[i].ndim, d[i].shape,
                                                STRIX_INIT_ZEROS, 0.0f, d[i].decay);
        assert_non_null(p);
    }
    OK(strix_params_alloc(ps));
}

static strix_param *param(strix_params *ps, const char *name) {
    strix_param *p = strix_params_find(ps, name);
    assert_non_null(p);
    return p;
}

static void set_data(strix_params *ps, const char *name, const float *v) {
    strix_param *p = param(ps, name);
    to_backend(ps->be, p->data, v, p->numel);
}

static void set_grad(strix_params *ps, const char *name, const float *v) {
    strix_param *p = param(ps, name);
    to_backend(ps->be, p->grad, v, p->numel);
}

static void fill_grad(strix_params *ps, const char *name, float value) {
    strix_param *p = param(ps, name);
    OK(strix_fill(ps->be, p->grad, value, p->numel));
}

/* A host copy of the whole block's values (caller frees). */
static float *block_values(strix_params *ps) { return from_backend(ps->be, ps->data, ps->total); }

/* Sets 1 thread (pass 0) or 2 threads with every CPU loop parallel (pass 1); returns the previous
 * parallel threshold for restore_threads. */
static size_t use_threads(int pass) {
    strix_set_num_threads(pass ? 2 : 1);
    return pass ? cpu_set_parallel_min_work(1) : cpu_set_parallel_min_work(0);
}

static void restore_threads(size_t previous) {
    cpu_set_parallel_min_work(previous);
    strix_set_num_threads(0);
}

// ---- optimizer trajectories ---------------------------------------------------------------------

typedef enum opt_kind { OPT_SGD, OPT_ADAM } opt_kind;

/* Runs the golden trajectory of a (w (5,3), b (7)) problem; compares every step and checks that
 * 1 and 2 threads give the same bits. */
static void run_fixed_problem(strix_backend *be, const char *file, opt_kind kind) {
    tl_golden g;
    assert_true(tl_golden_load(file, &g));
    const pdecl d[] = {{"w", 2, {5, 3}, true, false}, {"b", 1, {7}, false, false}};
    const tl_array *lrs = tl_golden_get(&g, "lrs");
    float *final[2] = {NULL, NULL};
    for (int pass = 0; pass < 2; pass++) {
        size_t previous = use_threads(pass);
        strix_params ps;
        block_new(be, &ps, d, 2);
        set_data(&ps, "w", tl_golden_get(&g, "w")->data);
        set_data(&ps, "b", tl_golden_get(&g, "b")->data);
        strix_optimizer *opt = NULL;
        if (kind == OPT_SGD) {
            strix_sgd_config c = {.momentum = tl_golden_scalar(&g, "momentum"),
                                  .dampening = tl_golden_scalar(&g, "dampening"),
                                  .weight_decay = tl_golden_scalar(&g, "weight_decay"),
                                  .nesterov = tl_golden_scalar(&g, "nesterov") != 0.0f};
            OK(strix_optimizer_sgd(&ps, &c, &opt));
        } else {
            strix_adamw_config c = strix_adamw_defaults(0.1f);
            OK(strix_optimizer_adam(&ps, &c, &opt));
        }
        for (int s = 0; s < STEPS; s++) {
            char name[32];
            snprintf(name, sizeof name, "gw_s%d", s);
            set_grad(&ps, "w", tl_golden_get(&g, name)->data);
            snprintf(name, sizeof name, "gb_s%d", s);
            set_grad(&ps, "b", tl_golden_get(&g, name)->data);
            float *grads = from_backend(be, ps.grad, ps.total);
            OK(strix_optimizer_step(opt, lrs->data[s]));
            float *after = from_backend(be, ps.grad, ps.total);
            assert_true(tl_check_bits("grads are not changed by a step", after, grads, ps.total));
            free(after);
            free(grads);
            for (int k = 0; k < 2; k++) {
                snprintf(name, sizeof name, "%s_s%d", d[k].name, s);
                const tl_array *want = tl_golden_get(&g, name);
                strix_param *p = param(&ps, d[k].name);
                char label[96];
                snprintf(label, sizeof label, "%s %s", file, name);
                assert_true(check_backend(be, label, p->data, want->data, p->numel, ATOL, RTOL));
            }
        }
        assert_int_equal(strix_optimizer_steps(opt, "w"), STEPS);
        final[pass] = block_values(&ps);
        strix_optimizer_free(opt);
        strix_params_free(&ps);
        restore_threads(previous);
    }
    assert_true(tl_check_bits("1 vs 2 threads", final[0], final[1], 15 + 7));
    free(final[0]);
    free(final[1]);
    tl_golden_free(&g);
}

static void test_sgd_golden(void **state) {
    run_fixed_problem(*state, GOLD("sgd_plain"), OPT_SGD);
    run_fixed_problem(*state, GOLD("sgd_momentum"), OPT_SGD);
    run_fixed_problem(*state, GOLD("sgd_nesterov"), OPT_SGD);
    run_fixed_problem(*state, GOLD("sgd_damp_wd"), OPT_SGD);
}

static void test_adam_golden(void **state) { run_fixed_problem(*state, GOLD("adam_l2"), OPT_ADAM); }

/* AdamW, groups enc.weight (lr x1, wd 0.1: the default group) and enc.bias (lr x0.5, wd 0);
 * head.weight frozen and bn.running_mean a buffer, both with non-zero grads to be ignored. */
static void test_adamw_groups_golden(void **state) {
    strix_backend *be = *state;
    tl_golden g;
    assert_true(tl_golden_load(GOLD("adamw_groups"), &g));
    const pdecl d[] = {{"enc.weight", 2, {4, 3}, true, false},
                       {"enc.bias", 1, {4}, false, false},
                       {"head.weight", 2, {2, 4}, true, false},
                       {"bn.running_mean", 1, {4}, false, true}};
    const tl_array *lrs = tl_golden_get(&g, "lrs");
    float *final[2] = {NULL, NULL};
    for (int pass = 0; pass < 2; pass++) {
        size_t previous = use_threads(pass);
        strix_params ps;
        block_new(be, &ps, d, 4);
        for (int k = 0; k < 4; k++) set_data(&ps, d[k].name, tl_golden_get(&g, d[k].name)->data);
        OK(strix_params_set_requires_grad(&ps, "head", false));
        strix_optimizer *opt = NULL;
        strix_adamw_config c = strix_adamw_defaults(0.1f);
        OK(strix_optimizer_adamw(&ps, &c, &opt));
        OK(strix_optimizer_add_group(opt, "enc.bias", 0.5f, 0.0f));
        float *before = block_values(&ps);
        for (int s = 0; s < STEPS; s++) {
            char name[48];
            snprintf(name, sizeof name, "g_enc.weight_s%d", s);
            set_grad(&ps, "enc.weight", tl_golden_get(&g, name)->data);
            snprintf(name, sizeof name, "g_enc.bias_s%d", s);
            set_grad(&ps, "enc.bias", tl_golden_get(&g, name)->data);
            fill_grad(&ps, "head.weight", 0.75f - (float)s);
            fill_grad(&ps, "bn.running_mean", 3.0f);
            OK(strix_optimizer_step(opt, lrs->data[s]));
            for (int k = 0; k < 2; k++) {
                snprintf(name, sizeof name, "%s_s%d", d[k].name, s);
                strix_param *p = param(&ps, d[k].name);
                assert_true(check_backend(be, name, p->data, tl_golden_get(&g, name)->data,
                                          p->numel, ATOL, RTOL));
            }
        }
        float *after = block_values(&ps);
        for (int k = 2; k < 4; k++) { /* frozen and buffer: same bits, no optimizer state */
            strix_param *p = param(&ps, d[k].name);
            assert_true(tl_check_bits(d[k].name, after + p->offset, before + p->offset, p->numel));
            float *m = from_backend(be, ps.m + p->offset, p->numel);
            float *v = from_backend(be, ps.v + p->offset, p->numel);
            for (size_t i = 0; i < p->numel; i++) assert_true(m[i] == 0.0f && v[i] == 0.0f);
            free(m);
            free(v);
        }
        assert_int_equal(strix_optimizer_steps(opt, "enc.bias"), STEPS);
        assert_int_equal(strix_optimizer_steps(opt, "head.weight"), 0);
        assert_int_equal(strix_optimizer_steps(opt, "bn.running_mean"), -1);
        final[pass] = after;
        free(before);
        strix_optimizer_free(opt);
        strix_params_free(&ps);
        restore_threads(previous);
    }
    assert_true(tl_check_bits("1 vs 2 threads", final[0], final[1], 12 + 4 + 8 + 4));
    free(final[0]);
    free(final[1]);
    tl_golden_free(&g);
}

/* The first wave's strix_adamw_step (the GPT's optimizer before the optimizer objects took
 * over), from the same primitives: p *= 1 − lr·wd for the trainable `decay` parameters, then one
 * Adam update with the bias corrections of step t of every trainable parameter. */
static strix_status legacy_adamw_step(strix_params *ps, const strix_adamw_config *cfg, float lr,
                                      int64_t t) {
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        if (p->tied_to || p->is_buffer || !p->requires_grad || !p->decay) continue;
        if (cfg->weight_decay == 0.0f) continue;
        STRIX_TRY(strix_axpby(ps->be, 1.0f - lr * cfg->weight_decay, p->data, 0.0f, NULL,
                              p->data, p->numel));
    }
    float bc1 = (float)(1.0 - pow(cfg->beta1, (double)t));
    float bc2 = (float)(1.0 - pow(cfg->beta2, (double)t));
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        if (p->tied_to || p->is_buffer || !p->requires_grad) continue;
        size_t o = p->offset;
        STRIX_TRY(strix_adam_step(ps->be, ps->data + o, ps->grad + o, ps->m + o, ps->v + o,
                                  p->numel, lr, cfg->beta1, cfg->beta2, cfg->eps, bc1, bc2));
    }
    return STRIX_OK;
}

/* The optimizer's AdamW with a no-decay group (by hand and strix_optimizer_adamw_split) gives
 * the first wave's strix_adamw_step's bits on a block with a tied weight; the split optimizer
 * leaves buffers and frozen parameters alone. */
static void test_adamw_matches_legacy(void **state) {
    strix_backend *be = *state;
    strix_params a, b, bs;
    strix_params *blocks[3] = {&a, &b, &bs};
    for (int k = 0; k < 3; k++) {
        strix_params *ps = blocks[k];
        strix_params_init_empty(ps, be);
        const int64_t emb[2] = {9, 4}, vec[1] = {4}, lin[2] = {4, 4};
        strix_param *wte = strix_params_add(ps, "wte.weight", 2, emb, STRIX_INIT_NORMAL, 0.5f,
                                            true);
        assert_non_null(strix_params_add(ps, "ln.weight", 1, vec, STRIX_INIT_ONES, 0.0f, false));
        assert_non_null(strix_params_add(ps, "fc.weight", 2, lin, STRIX_INIT_NORMAL, 0.5f, true));
        assert_non_null(strix_params_add(ps, "fc.bias", 1, vec, STRIX_INIT_NORMAL, 0.5f, false));
        assert_non_null(strix_params_tie(ps, "lm_head.weight", wte));
        OK(strix_params_alloc(ps));
        OK(strix_params_init(ps, 42));
    }
    strix_adamw_config c = strix_adamw_defaults(0.1f);
    strix_optimizer *opt = NULL;
    OK(strix_optimizer_adamw(&b, &c, &opt));
    OK(strix_optimizer_add_group_if(opt, strix_param_no_decay, NULL, 1.0f, 0.0f));
    strix_optimizer *split = NULL;
    OK(strix_optimizer_adamw_split(&bs, &c, &split));
    float *g = tl_malloc_floats(a.total);
    for (int s = 0; s < 4; s++) {
        tl_fill_uniform(g, a.total, 100 + (uint64_t)s, -1.0f, 1.0f);
        to_backend(be, a.grad, g, a.total);
        to_backend(be, b.grad, g, b.total);
        to_backend(be, bs.grad, g, bs.total);
        float lr = 1e-2f * (float)(s + 1);
        OK(legacy_adamw_step(&a, &c, lr, s + 1));
        OK(strix_optimizer_step(opt, lr));
        OK(strix_optimizer_step(split, lr));
    }
    float *va = block_values(&a), *vb = block_values(&b), *vs = block_values(&bs);
    assert_true(tl_check_bits("optimizer AdamW vs strix_adamw_step", va, vb, a.total));
    assert_true(tl_check_bits("strix_optimizer_adamw_split vs strix_adamw_step", va, vs,
                              a.total));
    free(va);
    free(vb);
    free(vs);
    free(g);
    strix_optimizer_free(opt);
    strix_optimizer_free(split);
    strix_params_free(&a);
    strix_params_free(&b);
    strix_params_free(&bs);

    /* the split optimizer skips a frozen parameter and a buffer */
    const pdecl d[] = {{"x", 1, {6}, true, false}, {"y", 1, {5}, true, false},
                       {"z", 1, {3}, true, true}};
    strix_params ps;
    block_new(be, &ps, d, 3);
    float ones[6] = {1, 1, 1, 1, 1, 1};
    for (int k = 0; k < 3; k++) set_data(&ps, d[k].name, ones);
    OK(strix_fill(be, ps.grad, 0.5f, ps.total));
    OK(strix_params_set_requires_grad(&ps, "y", false));
    OK(strix_optimizer_adamw_split(&ps, &c, &split));
    OK(strix_optimizer_step(split, 0.1f));
    strix_optimizer_free(split);
    float *v = block_values(&ps);
    for (size_t i = 0; i < ps.total; i++) assert_true((v[i] == 1.0f) == (i >= 6));
    free(v);
    strix_params_free(&ps);
}

/* SGD with momentum across a freeze: the frozen parameter keeps its values, step count and
 * momentum; after unfreezing it continues from its buffer (PyTorch's per-parameter state).
 * Checked bit for bit against a host transcription of the same float expressions. */
static void test_sgd_freeze_unfreeze(void **state) {
    strix_backend *be = *state;
    const pdecl d[] = {{"a", 1, {3}, false, false}, {"b", 1, {3}, false, false}};
    strix_params ps;
    block_new(be, &ps, d, 2);
    float pa[3] = {1.0f, -2.0f, 0.5f}, pb[3] = {0.25f, 3.0f, -1.0f};
    float ba[3] = {0}, bb[3] = {0};
    set_data(&ps, "a", pa);
    set_data(&ps, "b", pb);
    strix_sgd_config c = {.momentum = 0.9f};
    strix_optimizer *opt = NULL;
    OK(strix_optimizer_sgd(&ps, &c, &opt));
    const float lr = 0.1f;
    int steps_b = 0;
    for (int s = 0; s < 5; s++) {
        bool b_trains = s == 0 || s == 4;
        if (s == 1) OK(strix_params_set_requires_grad(&ps, "b", false));
        if (s == 4) OK(strix_params_set_requires_grad(&ps, "b", true));
        float g[3] = {0.5f * (float)s - 1.0f, 0.25f, -0.75f + 0.125f * (float)s};
        set_grad(&ps, "a", g);
        set_grad(&ps, "b", g);
        OK(strix_optimizer_step(opt, lr));
        for (int i = 0; i < 3; i++) {
            ba[i] = s == 0 ? g[i] : 0.9f * ba[i] + 1.0f * g[i];
            pa[i] = 1.0f * pa[i] + -lr * ba[i];
            if (b_trains) {
                bb[i] = steps_b == 0 ? g[i] : 0.9f * bb[i] + 1.0f * g[i];
                pb[i] = 1.0f * pb[i] + -lr * bb[i];
            }
        }
        steps_b += b_trains;
        float *v = block_values(&ps);
        assert_true(tl_check_bits("a", v, pa, 3));
        assert_true(tl_check_bits("b", v + 3, pb, 3));
        free(v);
    }
    assert_int_equal(strix_optimizer_steps(opt, "a"), 5);
    assert_int_equal(strix_optimizer_steps(opt, "b"), 2);
    strix_optimizer_set_steps(opt, 0);
    assert_int_equal(strix_optimizer_steps(opt, "b"), 0);
    strix_optimizer_free(opt);
    strix_optimizer_free(NULL);
    strix_params_free(&ps);
}

static void test_optimizer_errors(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    const int64_t shape[1] = {4};
    assert_non_null(strix_params_add(&ps, "enc.w", 1, shape, STRIX_INIT_ZEROS, 0.0f, true));
    assert_non_null(strix_params_add_buffer(&ps, "enc.stat", 1, shape, STRIX_INIT_ZEROS));
    strix_optimizer *opt = NULL;
    strix_sgd_config sgd = {0};
    assert_int_equal(strix_optimizer_sgd(&ps, &sgd, &opt), STRIX_ERR_ARG); /* not allocated */
    assert_null(opt);
    OK(strix_params_alloc(&ps));
    sgd.nesterov = true;
    assert_int_equal(strix_optimizer_sgd(&ps, &sgd, &opt), STRIX_ERR_ARG);
    sgd.momentum = 0.9f;
    sgd.dampening = 0.1f;
    assert_int_equal(strix_optimizer_sgd(&ps, &sgd, &opt), STRIX_ERR_ARG);
    sgd.dampening = 0.0f;
    OK(strix_optimizer_sgd(&ps, &sgd, &opt));
    assert_int_equal(strix_optimizer_add_group(opt, "dec", 1.0f, 0.0f), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "'dec'"));
    assert_int_equal(strix_optimizer_add_group(opt, "enc.stat", 1.0f, 0.0f), STRIX_ERR_ARG);
    OK(strix_optimizer_add_group(opt, "enc", 2.0f, 0.0f));
    assert_int_equal(strix_optimizer_add_group(opt, "enc", 1.0f, 0.0f), STRIX_ERR_ARG); /* taken */
    assert_int_equal(strix_optimizer_step(opt, -1.0f), STRIX_ERR_ARG);
    assert_int_equal(strix_optimizer_step(opt, NAN), STRIX_ERR_ARG);
    strix_optimizer_free(opt);
    strix_adamw_config bad = strix_adamw_defaults(0.0f);
    bad.beta2 = 1.0f;
    assert_int_equal(strix_optimizer_adam(&ps, &bad, &opt), STRIX_ERR_ARG);
    bad = strix_adamw_defaults(-0.1f);
    assert_int_equal(strix_optimizer_adamw(&ps, &bad, &opt), STRIX_ERR_ARG);
    strix_params_free(&ps);
}

// ---- freezing -----------------------------------------------------------------------------------

static void test_set_requires_grad(void **state) {
    strix_backend *be = *state;
    strix_params ps;
    strix_params_init_empty(&ps, be);
    const int64_t shape[1] = {2};
    const char *names[] = {"blocks.1.w", "blocks.10.w", "blocks.1.b", "emb.weight"};
    for (int i = 0; i < 4; i++)
        assert_non_null(strix_params_add(&ps, names[i], 1, shape, STRIX_INIT_ZEROS, 0.0f, true));
    strix_param *head = strix_params_tie(&ps, "lm_head.weight", param(&ps, "emb.weight"));
    assert_non_null(head);
    strix_param *buf = strix_params_add_buffer(&ps, "bn.running_mean", 1, shape, STRIX_INIT_ZEROS);
    assert_non_null(buf);
    OK(strix_params_alloc(&ps));
    for (int i = 0; i < 4; i++) assert_true(param(&ps, names[i])->requires_grad);
    assert_false(buf->requires_grad);

    OK(strix_params_set_requires_grad(&ps, "blocks.1", false)); /* not blocks.10 */
    assert_false(param(&ps, "blocks.1.w")->requires_grad);
    assert_false(param(&ps, "blocks.1.b")->requires_grad);
    assert_true(param(&ps, "blocks.10.w")->requires_grad);
    OK(strix_params_set_requires_grad(&ps, "blocks.", false)); /* a trailing dot: both */
    assert_false(param(&ps, "blocks.10.w")->requires_grad);
    OK(strix_params_set_requires_grad(&ps, "blocks.10.w", true)); /* a whole name */
    assert_true(param(&ps, "blocks.10.w")->requires_grad);

    assert_int_equal(strix_params_set_requires_grad(&ps, "block", false), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "'block'"));
    assert_int_equal(strix_params_set_requires_grad(&ps, "bn", true), STRIX_ERR_ARG);
    assert_false(buf->requires_grad); /* buffers never match */

    OK(strix_params_set_requires_grad(&ps, "lm_head", false)); /* tied: one storage */
    assert_false(param(&ps, "emb.weight")->requires_grad);
    assert_false(head->requires_grad);
    OK(strix_params_set_requires_grad(&ps, "", true)); /* everything but buffers */
    for (int i = 0; i < 4; i++) assert_true(param(&ps, names[i])->requires_grad);
    assert_true(head->requires_grad);
    assert_false(buf->requires_grad);
    assert_true(strix_param_name_matches("a.b", "a") && !strix_param_name_matches("ab", "a"));
    strix_params_free(&ps);
}

// ---- schedules ----------------------------------------------------------------------------------

static void test_lr_schedules_golden(void **state) {
    (void)state;
    tl_golden g;
    assert_true(tl_golden_load(GOLD("lr_schedules"), &g));
    float lr = tl_golden_scalar(&g, "base_lr");
    int n = (int)tl_golden_scalar(&g, "steps");
    struct {
        const char *name;
        strix_lr_schedule s;
    } cases[] = {
        {"lr_step", strix_lr_step(lr, 3, 0.5f)},
        {"lr_linear", strix_lr_linear(lr, 1.0f, 0.1f, 10)},
        {"lr_linear_up", strix_lr_linear(lr, 0.25f, 1.0f, 6)},
        {"lr_cosine", strix_lr_cosine(lr, 10, 1e-3f)},
        {"lr_warm_cosine", strix_lr_with_warmup(strix_lr_cosine(lr, 12, 1e-3f), 5, 0.1f)},
        {"lr_warm_step", strix_lr_with_warmup(strix_lr_step(lr, 5, 0.3f), 4, 0.2f)},
        {"lr_warm_linear", strix_lr_with_warmup(strix_lr_linear(lr, 1.0f, 0.0f, 15), 3, 0.5f)},
        {"lr_warm_const", strix_lr_with_warmup(strix_lr_constant(lr), 6, 0.1f)},
    };
    float *got = tl_malloc_floats((size_t)n);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const tl_array *want = tl_golden_get(&g, cases[c].name);
        assert_int_equal(want->count, n);
        for (int t = 0; t < n; t++) got[t] = strix_lr_at(&cases[c].s, t);
        assert_true(tl_check_close(cases[c].name, got, want->data, (size_t)n, 1e-9, 1e-6));
    }
    strix_lr_schedule k = strix_lr_constant(0.5f);
    assert_true(strix_lr_at(&k, -3) == 0.5f && strix_lr_at(&k, 1000000) == 0.5f);
    /* the GPT trainer's nanoGPT schedule is unchanged */
    assert_true(strix_lr_warmup_cosine(0, 10, 100, 1.0f, 0.1f) == 0.1f);
    assert_true(strix_lr_warmup_cosine(9, 10, 100, 1.0f, 0.1f) == 1.0f);
    assert_true(strix_lr_warmup_cosine(10, 10, 100, 1.0f, 0.1f) == 1.0f);
    assert_true(strix_lr_warmup_cosine(55, 10, 100, 1.0f, 0.1f) == 0.55f);
    assert_true(strix_lr_warmup_cosine(100, 10, 100, 1.0f, 0.1f) == 0.1f);
    free(got);
    tl_golden_free(&g);
}

// ---- clipping -----------------------------------------------------------------------------------

static void clip_block(strix_backend *be, strix_params *ps, const tl_golden *g) {
    const pdecl d[] = {{"w", 2, {5, 3}, true, false}, {"frozen", 1, {4}, true, false},
                       {"b", 1, {7}, false, false}, {"buf", 1, {3}, false, true}};
    block_new(be, ps, d, 4);
    OK(strix_params_set_requires_grad(ps, "frozen", false));
    set_grad(ps, "w", tl_golden_get(g, "gw")->data);
    set_grad(ps, "b", tl_golden_get(g, "gb")->data);
    set_grad(ps, "frozen", tl_golden_get(g, "gfrozen")->data);
    fill_grad(ps, "buf", 100.0f);
}

static void test_clip_golden(void **state) {
    strix_backend *be = *state;
    tl_golden g;
    assert_true(tl_golden_load(GOLD("clip"), &g));
    strix_params ps;
    clip_block(be, &ps, &g);
    float *before = from_backend(be, ps.grad, ps.total);
    OK(strix_clip_grad_value(&ps, tl_golden_scalar(&g, "value")));
    float *after = from_backend(be, ps.grad, ps.total);
    assert_true(tl_check_bits("w clipped", after + param(&ps, "w")->offset,
                              tl_golden_get(&g, "gw_value")->data, 15));
    assert_true(tl_check_bits("b clipped", after + param(&ps, "b")->offset,
                              tl_golden_get(&g, "gb_value")->data, 7));
    size_t fo = param(&ps, "frozen")->offset, bo = param(&ps, "buf")->offset;
    assert_true(tl_check_bits("frozen untouched", after + fo, before + fo, 4));
    assert_true(tl_check_bits("buffer untouched", after + bo, before + bo, 3));
    free(after);
    free(before);
    strix_params_free(&ps);

    clip_block(be, &ps, &g);
    before = from_backend(be, ps.grad, ps.total);
    double norm = 0.0;
    OK(strix_clip_grad_norm(&ps, tl_golden_scalar(&g, "max_norm"), &norm));
    float normf = (float)norm;
    assert_true(tl_check_close("norm", &normf, tl_golden_get(&g, "norm")->data, 1, 0.0, 1e-6));
    after = from_backend(be, ps.grad, ps.total);
    assert_true(tl_check_close("w by norm", after + param(&ps, "w")->offset,
                               tl_golden_get(&g, "gw_norm")->data, 15, 1e-7, 1e-6));
    assert_true(tl_check_close("b by norm", after + param(&ps, "b")->offset,
                               tl_golden_get(&g, "gb_norm")->data, 7, 1e-7, 1e-6));
    assert_true(tl_check_bits("frozen untouched", after + fo, before + fo, 4));
    assert_true(tl_check_bits("buffer untouched", after + bo, before + bo, 3));
    free(after);
    free(before);
    strix_params_free(&ps);
    tl_golden_free(&g);
}

static void test_clip_exact(void **state) {
    strix_backend *be = *state;
    /* a fully trainable block: the norm is the whole block's sum of squares, as before */
    const pdecl d[] = {{"a", 2, {33, 17}, true, false}, {"b", 1, {29}, false, false}};
    strix_params ps;
    block_new(be, &ps, d, 2);
    float *g = tl_malloc_floats(ps.total);
    tl_fill_uniform(g, ps.total, 7, -3.0f, 3.0f);
    to_backend(be, ps.grad, g, ps.total);
    double whole = 0.0, norm = 0.0;
    OK(strix_sum_squares(be, ps.grad, ps.total, &whole));
    OK(strix_clip_grad_norm(&ps, 0.0f, &norm)); /* max_norm 0: measure only */
    assert_true(norm == sqrt(whole));
    float *same = from_backend(be, ps.grad, ps.total);
    assert_true(tl_check_bits("max_norm 0 leaves grads", same, g, ps.total));
    free(same);

    /* a non-finite norm: STRIX_ERR_NUMERIC, grads untouched */
    g[5] = NAN;
    to_backend(be, ps.grad, g, ps.total);
    assert_int_equal(strix_clip_grad_norm(&ps, 1.0f, &norm), STRIX_ERR_NUMERIC);
    assert_true(isnan(norm));
    same = from_backend(be, ps.grad, ps.total);
    assert_true(tl_check_bits("NaN norm leaves grads", same, g, ps.total));
    free(same);

    /* clip by value: NaN stays, ±inf and big values clamp, small values are kept bit for bit */
    g[6] = INFINITY;
    g[7] = -INFINITY;
    g[8] = 0.25f;
    g[9] = -0.0f;
    to_backend(be, ps.grad, g, ps.total);
    OK(strix_clip_grad_value(&ps, 0.5f));
    same = from_backend(be, ps.grad, ps.total);
    assert_true(isnan(same[5]) && same[6] == 0.5f && same[7] == -0.5f && same[8] == 0.25f);
    assert_true(same[9] == 0.0f && signbit(same[9]));
    for (size_t i = 10; i < ps.total; i++)
        assert_true(same[i] == (g[i] > 0.5f ? 0.5f : g[i] < -0.5f ? -0.5f : g[i]));
    free(same);
    assert_int_equal(strix_clip_grad_value(&ps, -1.0f), STRIX_ERR_ARG);
    assert_int_equal(strix_clip_grad_value(&ps, NAN), STRIX_ERR_ARG);
    free(g);
    strix_params_free(&ps);
}

// ---- gradient accumulation ----------------------------------------------------------------------

typedef struct accum_model {
    strix_params ps;
    strix_linear *fc;
} accum_model;

static void accum_model_new(strix_backend *be, accum_model *m) {
    strix_params_init_empty(&m->ps, be);
    OK(strix_linear_new(&m->ps, "fc", 6, 5, true, 0.5f, NULL, &m->fc));
    OK(strix_params_alloc(&m->ps));
    OK(strix_params_init(&m->ps, 9));
    OK(strix_params_set_requires_grad(&m->ps, "fc", true));
}

/* Forward + cross-entropy + backward of rows [r0, r0 + rows) of x (8,6) / t (8); grads `+=`.
 * Returns the loss. */
static float accum_pass(strix_backend *be, accum_model *m, strix_loss_workspace *ws,
                        const float *x, const int32_t *t, int r0, int rows, float smoothing,
                        float scale) {
    const int64_t shape[2] = {rows, 6};
    strix_tensor xt = tensor_from_host(be, 2, shape, x + r0 * 6);
    int32_t *dt = tl_upload(be, t + r0, (size_t)rows * sizeof(int32_t));
    const strix_tensor *y, *dx;
    OK(strix_linear_forward(m->fc, &xt, &y));
    strix_tensor dy;
    const int64_t yshape[2] = {rows, 5};
    OK(strix_tensor_new(be, 2, yshape, &dy));
    float loss = 0.0f;
    OK(strix_cross_entropy_loss(ws, y->data, dt, (size_t)rows, 5, STRIX_REDUCTION_MEAN,
                                smoothing, dy.data, scale, &loss));
    OK(strix_linear_backward(m->fc, &dy, &dx));
    strix_tensor_free(&dy);
    strix_free(be, dt);
    strix_tensor_free(&xt);
    return loss;
}

static void test_grad_accumulation(void **state) {
    strix_backend *be = *state;
    float x[8 * 6];
    tl_fill_uniform(x, 48, 77, -2.0f, 2.0f);
    const int32_t t[8] = {1, -1, 4, 0, 2, -1, -1, 3}; /* 2 + 3 counted rows per half */
    for (int smooth = 0; smooth < 2; smooth++) {
        float eps = 0.15f * (float)smooth;
        accum_model big, acc;
        accum_model_new(be, &big);
        accum_model_new(be, &acc);
        strix_loss_workspace ws;
        strix_loss_workspace_init(&ws, be);
        OK(strix_params_zero_grad(&big.ps));
        float loss_big = accum_pass(be, &big, &ws, x, t, 0, 8, eps, 1.0f);
        OK(strix_params_zero_grad(&acc.ps));
        float l0 = accum_pass(be, &acc, &ws, x, t, 0, 4, eps, strix_grad_accum_scale(3, 5));
        float l1 = accum_pass(be, &acc, &ws, x, t, 4, 4, eps, strix_grad_accum_scale(2, 5));
        assert_true(fabs(loss_big - (l0 * 3.0 + l1 * 2.0) / 5.0) < 1e-6);
        float *gb = from_backend(be, big.ps.grad, big.ps.total);
        float *ga = from_backend(be, acc.ps.grad, acc.ps.total);
        assert_true(tl_check_close("accumulated grads", ga, gb, big.ps.total, 1e-7, 1e-5));
        strix_optimizer *ob = NULL, *oa = NULL;
        strix_adamw_config c = strix_adamw_defaults(0.01f);
        OK(strix_optimizer_adamw(&big.ps, &c, &ob));
        OK(strix_optimizer_adamw(&acc.ps, &c, &oa));
        OK(strix_optimizer_step(ob, 1e-3f));
        OK(strix_optimizer_step(oa, 1e-3f));
        float *vb = block_values(&big.ps), *va = block_values(&acc.ps);
        assert_true(tl_check_close("params after the step", va, vb, big.ps.total, 1e-6, 1e-5));
        free(va);
        free(vb);
        free(ga);
        free(gb);
        strix_optimizer_free(oa);
        strix_optimizer_free(ob);
        strix_loss_workspace_free(&ws);
        strix_module_free(&acc.fc->base);
        strix_module_free(&big.fc->base);
        strix_params_free(&acc.ps);
        strix_params_free(&big.ps);
    }
    assert_true(strix_grad_accum_scale(1, 4) == 0.25f);
}

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_sgd_golden),
        BACKEND_TEST(test_adam_golden),
        BACKEND_TEST(test_adamw_groups_golden),
        BACKEND_TEST(test_adamw_matches_legacy),
        BACKEND_TEST(test_sgd_freeze_unfreeze),
        BACKEND_TEST(test_optimizer_errors),
        BACKEND_TEST(test_set_requires_grad),
        BACKEND_TEST(test_lr_schedules_golden),
        BACKEND_TEST(test_clip_golden),
        BACKEND_TEST(test_clip_exact),
        BACKEND_TEST(test_grad_accumulation),
    };
    return run_on_each_backend("optim", tests, sizeof tests / sizeof tests[0]);
}
