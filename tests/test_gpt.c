/*
 * test_gpt.c - the GPT of strix/gpt.h against PyTorch, on every CPU backend ("cpu", and
 * "cpu-blas" when built). Goldens come from tools/ref/gpt_ref.py (tests/golden/gpt/gpt_a.bin:
 * learned positions, GELU, uniform heads, biases, untied; gpt_b.bin: heterogeneous heads (4,12),
 * RoPE, ReLU, d_ff 24, tied head, no biases), with weights loaded by nanoGPT parameter name:
 *
 *  - logits, loss and every parameter gradient at step 0 (1e-5 abs + 1e-4 rel);
 *  - the loss of 10 AdamW steps (lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.1 on the
 *    2-D weights only, nanoGPT's groups), taken by the trainer (strix_train_step, no clipping);
 *  - the KV-cache decode path gives the full forward's logits at every position;
 *  - determinism: two runs are bit-identical, and so are runs on 1 and 2 threads;
 *  - gradient accumulation: two micro-batches of B with the loss scaled by 1/2 give the gradient
 *    and the training steps of one batch of 2B (to rounding), scale 1 is the plain backward;
 *    a grad_accum 2 run on a corpus, stopped and resumed, is bit-identical to the whole run;
 *  - configuration checks and forward argument errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nn_testutil.h"
#include "strix/gpt.h"
#include "strix/gpt_train.h"
#include "strix/train.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)
#define ATOL 1e-5
#define RTOL 1e-4

// ---- golden models -----------------------------------------------------------------------------

typedef struct golden_model {
    const char *file;
    bool rope, tie, bias;
    strix_act act;
} golden_model;

static const golden_model MODELS[] = {
    {"tests/golden/gpt/gpt_a.bin", false, false, true, STRIX_ACT_GELU},
    {"tests/golden/gpt/gpt_b.bin", true, true, false, STRIX_ACT_RELU},
};

static const tl_array *need(const tl_golden *gf, const char *name) {
    const tl_array *e = tl_golden_get(gf, name);
    assert_non_null(e);
    return e;
}

static int golden_int(const tl_golden *gf, const char *name) {
    return (int)need(gf, name)->data[0];
}

/* Builds the golden model's GPT on `be` and loads its weights by name. */
static strix_gpt *load_model(strix_backend *be, const golden_model *gm, const tl_golden *gf) {
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = golden_int(gf, "cfg.V");
    c.block_size = golden_int(gf, "cfg.block");
    c.n_layer = golden_int(gf, "cfg.L");
    c.d_model = golden_int(gf, "cfg.C");
    c.d_ff = golden_int(gf, "cfg.d_ff");
    const tl_array *heads = need(gf, "cfg.heads");
    c.n_head = (int)heads->count;
    const float *hs = heads->data;
    bool uniform = true;
    for (int h = 0; h < c.n_head; h++) uniform = uniform && hs[h] == hs[0];
    for (int h = 0; h < c.n_head && !uniform; h++) c.head_sizes[h] = (int)hs[h];
    c.rope = gm->rope;
    c.tie_weights = gm->tie;
    c.bias = gm->bias;
    c.mlp_act = gm->act;
    strix_gpt *g;
    OK(strix_gpt_new(be, &c, &g));
    strix_params *ps = strix_gpt_params(g);
    // every strix parameter is in the state dict and every state-dict entry is a strix parameter
    assert_int_equal(ps->count, golden_count_prefix(gf, "param."));
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        char key[160];
        snprintf(key, sizeof key, "param.%s", p->name);
        const tl_array *e = need(gf, key);
        assert_int_equal(e->ndim, p->ndim);
        for (int d = 0; d < p->ndim; d++) assert_int_equal(e->shape[d], p->shape[d]);
        to_backend(be, p->data, e->data, p->numel);
    }
    return g;
}

/* A golden case: its file, the model with its weights, and its (B, T) batch of ids and targets. */
typedef struct golden_case {
    tl_golden gf;
    strix_gpt *g;
    strix_params *ps;
    int32_t *ids, *tg;
    int B, T;
} golden_case;

static void case_open(strix_backend *be, const golden_model *gm, golden_case *k) {
    assert_true(tl_golden_load(gm->file, &k->gf));
    k->g = load_model(be, gm, &k->gf);
    k->ps = strix_gpt_params(k->g);
    const tl_array *ids_a = need(&k->gf, "ids");
    k->ids = golden_ints(ids_a);
    k->tg = golden_ints(need(&k->gf, "targets"));
    k->B = (int)ids_a->shape[0], k->T = (int)ids_a->shape[1];
}

static void case_close(golden_case *k) {
    free(k->ids);
    free(k->tg);
    strix_gpt_free(k->g);
    tl_golden_free(&k->gf);
}

static void check_golden_step0(strix_backend *be, const golden_model *gm) {
    golden_case k;
    case_open(be, gm, &k);
    strix_gpt *g = k.g;
    strix_params *ps = k.ps;
    float loss;
    OK(strix_params_zero_grad(ps));
    OK(strix_gpt_forward(g, k.ids, k.tg, k.B, k.T, &loss));
    const tl_array *logits = need(&k.gf, "logits"), *want_loss = need(&k.gf, "loss");
    int bad = !check_backend(be, "logits", strix_gpt_logits(g), logits->data, logits->count,
                             ATOL, RTOL);
    bad += !tl_check_close("loss", &loss, want_loss->data, 1, ATOL, RTOL);
    OK(strix_gpt_backward(g));
    int grads = 0;
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        if (p->tied_to) continue; // PyTorch lists a tied weight once, with the summed gradient
        char key[160];
        snprintf(key, sizeof key, "grad.%s", p->name);
        const tl_array *e = need(&k.gf, key);
        assert_int_equal(e->count, p->numel);
        bad += !check_backend(be, key, p->grad, e->data, p->numel, ATOL, RTOL);
        grads++;
    }
    assert_int_equal(grads, golden_count_prefix(&k.gf, "grad."));
    print_message("    %s: loss %.7f (torch %.7f), %d gradients compared\n", gm->file, loss,
                  want_loss->data[0], grads);
    assert_int_equal(bad, 0);
    case_close(&k);
}

// ---- training through the trainer ---------------------------------------------------------------

/* The same batch at every step, as the trainer's caller-fed GPT batches. */
typedef struct fixed_batch {
    const int32_t *ids, *tg;
    size_t n;
} fixed_batch;

static strix_status fixed_next(void *user, int64_t step, int32_t *ids, int32_t *targets) {
    (void)step;
    const fixed_batch *b = user;
    memcpy(ids, b->ids, b->n * sizeof *ids);
    memcpy(targets, b->tg, b->n * sizeof *targets);
    return STRIX_OK;
}

/* Steps [0, steps) of the trainer on one fixed (B,T) batch: AdamW lr 1e-3 (constant), weight
 * decay 0.1 with nanoGPT's groups, no clipping; losses[s] of each step (before its update). */
static void train_fixed(strix_gpt *g, const int32_t *ids, const int32_t *tg, int B, int T,
                        int steps, float *losses) {
    strix_train_config cfg = {.steps = steps, .lr = 1e-3f, .min_lr = 1e-3f,
                              .weight_decay = 0.1f, .clip = 0.0f, .adam_beta1 = 0.9f,
                              .adam_beta2 = 0.999f, .adam_eps = 1e-8f, .batch = B};
    fixed_batch fb = {.ids = ids, .tg = tg, .n = (size_t)B * (size_t)T};
    strix_gpt_train_data d = {.batch = B, .seq_len = T, .next = fixed_next, .user = &fb};
    strix_train_model model;
    strix_optimizer *opt;
    OK(strix_gpt_train_model(g, &d, &model));
    OK(strix_train_optimizer(model.params, &cfg, &opt));
    for (int s = 0; s < steps; s++) {
        strix_train_step_result r;
        OK(strix_train_step(&cfg, &model, opt, NULL, s, &r));
        assert_false(r.skipped);
        assert_true(r.lr == 1e-3f);
        losses[s] = r.loss;
    }
    strix_optimizer_free(opt);
    strix_gpt_train_model_free(&model);
}

static void check_golden_adamw(strix_backend *be, const golden_model *gm) {
    golden_case k;
    case_open(be, gm, &k);
    strix_params *ps = k.ps;
    const tl_array *curve = need(&k.gf, "adamw_losses");
    assert_int_equal(curve->count, 11);
    float losses[11];
    train_fixed(k.g, k.ids, k.tg, k.B, k.T, 10, losses);
    OK(strix_params_zero_grad(ps));
    OK(strix_gpt_forward(k.g, k.ids, k.tg, k.B, k.T, &losses[10])); // after the 10th update
    // Same tolerance as step 0: the ten updates move each weight by at most ~1e-2 and the
    // rounding differences they carry stay far below it (measured max |diff| ~5e-7).
    bool ok = tl_check_close("adamw loss", losses, curve->data, 11, ATOL, RTOL);
    double worst = 0.0;
    for (int i = 0; i < 11; i++) {
        double d = fabs((double)losses[i] - curve->data[i]);
        worst = d > worst ? d : worst;
    }
    print_message("    %s: AdamW loss %.6f -> %.6f, max |diff| vs torch %.2e\n", gm->file,
                  losses[0], losses[10], worst);
    assert_true(ok);
    case_close(&k);
}

static void test_golden_step0(void **state) {
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        check_golden_step0(*state, &MODELS[i]);
}

static void test_golden_adamw(void **state) {
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        check_golden_adamw(*state, &MODELS[i]);
}

/* Parameter grads are `+=`: two backward passes without zero_grad give twice the gradient. */
static void test_grad_accumulates(void **state) {
    strix_backend *be = *state;
    for (size_t mi = 0; mi < sizeof MODELS / sizeof MODELS[0]; mi++) {
        golden_case k;
        case_open(be, &MODELS[mi], &k);
        strix_params *ps = k.ps;
        OK(strix_params_zero_grad(ps));
        OK(strix_gpt_forward(k.g, k.ids, k.tg, k.B, k.T, NULL));
        OK(strix_gpt_backward(k.g));
        float *once = from_backend(be, ps->grad, ps->total);
        OK(strix_gpt_forward(k.g, k.ids, k.tg, k.B, k.T, NULL));
        OK(strix_gpt_backward(k.g));
        float *twice = from_backend(be, ps->grad, ps->total);
        for (size_t i = 0; i < ps->total; i++) once[i] *= 2.0f;
        assert_true(tl_check_close("2 x grad", twice, once, ps->total, ATOL, RTOL));
        free(once);
        free(twice);
        case_close(&k);
    }
}

// ---- gradient accumulation ---------------------------------------------------------------------

/* Two micro-batches of one step: the golden batch (B,T) and a second one of B other sequences
 * (each id and target shifted by one, mod V), and both as one (2B,T) batch. */
typedef struct accum_batches {
    int32_t *ids[2], *tg[2]; /* the micro-batches, B·T each */
    int32_t *ids2, *tg2;     /* their concatenation, 2B·T */
    size_t n;                /* B·T */
    int calls;               /* caller-fed mode: batches handed out so far */
} accum_batches;

static void accum_open(const golden_case *k, int V, accum_batches *a) {
    a->n = (size_t)k->B * (size_t)k->T;
    a->ids2 = malloc(2 * a->n * sizeof *a->ids2);
    a->tg2 = malloc(2 * a->n * sizeof *a->tg2);
    assert_non_null(a->ids2);
    assert_non_null(a->tg2);
    for (size_t i = 0; i < a->n; i++) {
        a->ids2[i] = k->ids[i];
        a->tg2[i] = k->tg[i];
        a->ids2[a->n + i] = (k->ids[i] + 1) % V;
        a->tg2[a->n + i] = k->tg[i] < 0 ? k->tg[i] : (k->tg[i] + 1) % V;
    }
    for (int m = 0; m < 2; m++) {
        a->ids[m] = a->ids2 + (size_t)m * a->n;
        a->tg[m] = a->tg2 + (size_t)m * a->n;
    }
    a->calls = 0;
}

static void accum_close(accum_batches *a) {
    free(a->ids2);
    free(a->tg2);
}

/* grad_accum 2: micro-batch 0 then 1 of every step (the adapter calls once per micro-batch). */
static strix_status accum_next(void *user, int64_t step, int32_t *ids, int32_t *targets) {
    (void)step;
    accum_batches *a = user;
    int m = a->calls++ % 2;
    memcpy(ids, a->ids[m], a->n * sizeof *ids);
    memcpy(targets, a->tg[m], a->n * sizeof *targets);
    return STRIX_OK;
}

/* grad_accum 1: the (2B,T) batch at every step. */
static strix_status double_next(void *user, int64_t step, int32_t *ids, int32_t *targets) {
    (void)step;
    const accum_batches *a = user;
    memcpy(ids, a->ids2, 2 * a->n * sizeof *ids);
    memcpy(targets, a->tg2, 2 * a->n * sizeof *targets);
    return STRIX_OK;
}

/* The largest |a - b| / (1 + |b|) over n floats. */
static double worst_rel(const float *a, const float *b, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
        if (d > worst) worst = d;
    }
    return worst;
}

/* PyTorch's (loss / 2).backward() over two micro-batches of B sequences gives the gradient of
 * one batch of 2B: the seeds are equal bit for bit (1/(2·BT) = 0.5·(1/BT) exactly in float) and
 * only the sums over the 2B·T rows (weight GEMMs, embedding and position sums) run in another
 * order, two partial sums of B·T rows added instead of one sum: a few float ulps, below 1e-6
 * relative to 1 + |g| (measured at most 2.4e-7 on cpu and cpu-blas). And the scaled backward
 * consumes its forward. */
static void test_backward_scaled(void **state) {
    strix_backend *be = *state;
    for (size_t mi = 0; mi < sizeof MODELS / sizeof MODELS[0]; mi++) {
        golden_case k;
        case_open(be, &MODELS[mi], &k);
        strix_params *ps = k.ps;
        accum_batches a;
        accum_open(&k, strix_gpt_config_of(k.g)->vocab_size, &a);
        float loss2, loss[2];
        OK(strix_params_zero_grad(ps));
        OK(strix_gpt_forward(k.g, a.ids2, a.tg2, 2 * k.B, k.T, &loss2));
        OK(strix_gpt_backward(k.g));
        float *whole = from_backend(be, ps->grad, ps->total);
        OK(strix_params_zero_grad(ps));
        for (int m = 0; m < 2; m++) {
            OK(strix_gpt_forward(k.g, a.ids[m], a.tg[m], k.B, k.T, &loss[m]));
            OK(strix_gpt_backward_scaled(k.g, strix_grad_accum_scale(1, 2)));
            // the seed was scaled in place: a second backward of this forward is refused
            assert_int_equal(strix_gpt_backward_scaled(k.g, 0.5f), STRIX_ERR_ARG);
        }
        float *accum = from_backend(be, ps->grad, ps->total);
        double worst = worst_rel(accum, whole, ps->total);
        print_message("    %s: grad_accum 2 vs batch 2B: worst rel diff %.3g, loss %.7f vs "
                      "%.7f\n", MODELS[mi].file, worst, 0.5 * (loss[0] + loss[1]), loss2);
        assert_true(worst < 1e-6);
        assert_true(fabs(0.5 * ((double)loss[0] + loss[1]) - loss2) < 1e-6 * (1.0 + loss2));
        assert_true(loss[0] != loss[1]); // two different micro-batches
        // scale 1 is strix_gpt_backward, bit for bit; a non-finite scale is refused
        OK(strix_params_zero_grad(ps));
        OK(strix_gpt_forward(k.g, a.ids[0], a.tg[0], k.B, k.T, NULL));
        OK(strix_gpt_backward(k.g));
        float *plain = from_backend(be, ps->grad, ps->total);
        OK(strix_params_zero_grad(ps));
        OK(strix_gpt_forward(k.g, a.ids[0], a.tg[0], k.B, k.T, NULL));
        assert_int_equal(strix_gpt_backward_scaled(k.g, NAN), STRIX_ERR_ARG);
        OK(strix_gpt_backward_scaled(k.g, 1.0f));
        float *one = from_backend(be, ps->grad, ps->total);
        assert_memory_equal(plain, one, ps->total * sizeof *one);
        free(whole);
        free(accum);
        free(plain);
        free(one);
        accum_close(&a);
        case_close(&k);
    }
}

/* Four AdamW steps of the trainer with grad_accum 2 at batch B equal four steps at batch 2B on
 * the same sequences, to rounding: the gradients differ by a few ulps (test_backward_scaled), so
 * the weights agree to 1e-6 relative to 1 + |w| (measured at most 2.7e-7) and the losses to 1e-6.
 * adam_eps is 1e-4, not 1e-8: the key part of attn.c_attn.bias has a gradient that is zero in
 * exact arithmetic (softmax ignores the q·b_k added to a whole row of scores), so both runs
 * compute rounding noise there, different noise for the two summation orders, and with eps 1e-8
 * Adam's m/(sqrt(v) + eps) turns noise of any size into steps of ~lr (measured 1.5e-3 apart
 * after 4 steps); eps 1e-4 scales such noise (~1e-9) down to nothing and leaves the real
 * gradients (~1e-2) Adam's steps. */
static void test_train_grad_accum(void **state) {
    strix_backend *be = *state;
    for (size_t mi = 0; mi < sizeof MODELS / sizeof MODELS[0]; mi++) {
        enum { STEPS = 4 };
        float losses[2][STEPS];
        float *weights[2];
        int calls = 0;
        for (int run = 0; run < 2; run++) {
            golden_case k;
            case_open(be, &MODELS[mi], &k);
            accum_batches a;
            accum_open(&k, strix_gpt_config_of(k.g)->vocab_size, &a);
            int accum = run == 0 ? 2 : 1;
            strix_train_config cfg = {.steps = STEPS, .lr = 1e-3f, .min_lr = 1e-3f,
                                      .weight_decay = 0.1f, .clip = 0.0f, .adam_beta1 = 0.9f,
                                      .adam_beta2 = 0.999f, .adam_eps = 1e-4f,
                                      .batch = k.B * 2 / accum, .grad_accum = accum};
            strix_gpt_train_data d = {.batch = cfg.batch, .seq_len = k.T,
                                      .next = accum == 2 ? accum_next : double_next, .user = &a};
            strix_train_model model;
            strix_optimizer *opt;
            OK(strix_gpt_train_model(k.g, &d, &model));
            OK(strix_train_optimizer(model.params, &cfg, &opt));
            for (int s = 0; s < STEPS; s++) {
                strix_train_step_result r;
                OK(strix_train_step(&cfg, &model, opt, NULL, s, &r));
                assert_false(r.skipped);
                losses[run][s] = r.loss;
            }
            if (accum == 2) calls = a.calls;
            weights[run] = from_backend(be, k.ps->data, k.ps->total);
            size_t total = k.ps->total;
            strix_optimizer_free(opt);
            strix_gpt_train_model_free(&model);
            accum_close(&a);
            case_close(&k);
            if (run == 1) {
                double worst = worst_rel(weights[0], weights[1], total);
                print_message("    %s: 4 steps grad_accum 2 vs batch 2B: weights worst rel "
                              "diff %.3g\n", MODELS[mi].file, worst);
                assert_true(worst < 1e-6);
            }
        }
        assert_int_equal(calls, 2 * STEPS); // one batch per micro-batch
        assert_true(losses[0][STEPS - 1] < losses[0][0]); // it learns
        for (int s = 0; s < STEPS; s++)
            assert_true(fabsf(losses[0][s] - losses[1][s]) < 1e-6f * (1.0f + losses[1][s]));
        free(weights[0]);
        free(weights[1]);
    }
}

/* A run of the trainer on a corpus with grad_accum 2, both stream kinds. */
typedef struct accum_run {
    strix_gpt *g;
    strix_train_model model;
    strix_optimizer *opt;
    strix_train_state st;
} accum_run;

static strix_train_action stop_after_3(void *user, const strix_train_event *ev) {
    (void)user;
    return ev->kind == STRIX_TRAIN_EV_STEP && ev->step == 3 ? STRIX_TRAIN_STOP
                                                            : STRIX_TRAIN_CONTINUE;
}

/* Builds a run on `corpus` (weights from seed 5 when `init`) at the train state `st`. */
static void accum_run_open(strix_backend *be, const strix_corpus *corpus, bool sequential,
                           bool init, const strix_train_state *st, const strix_train_config *cfg,
                           accum_run *r) {
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = corpus->vocab.size;
    c.n_layer = 1;
    c.d_model = 16;
    c.n_head = 2;
    c.block_size = 16;
    OK(strix_gpt_new(be, &c, &r->g));
    if (init) OK(strix_gpt_init_weights(r->g, 5));
    r->st = *st;
    strix_gpt_train_data d = {.batch = cfg->batch, .corpus = corpus, .state = &r->st,
                              .sequential = sequential};
    OK(strix_gpt_train_model(r->g, &d, &r->model));
    OK(strix_train_optimizer(r->model.params, cfg, &r->opt));
}

static void accum_run_close(accum_run *r) {
    strix_optimizer_free(r->opt);
    strix_gpt_train_model_free(&r->model);
    strix_gpt_free(r->g);
}

/* A grad_accum 2 run stopped after step 3 and resumed (its weights, moments and stream state in
 * a fresh GPT) ends bit-identical to the uninterrupted run: the adapter draws micro-batch 0's
 * windows, then micro-batch 1's, from the one stream, so the state between steps is all a
 * resume needs. Random windows and the sequential walk. */
static void test_resume_grad_accum(void **state) {
    strix_backend *be = *state;
    char text[4096];
    strix_rng rng;
    strix_rng_seed(&rng, 11);
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)('a' + strix_rng_below(&rng, 7));
    strix_corpus corpus;
    OK(strix_corpus_from_bytes((const unsigned char *)text, sizeof text, &corpus));
    enum { STEPS = 6 };
    strix_train_config cfg = {.steps = STEPS, .lr = 1e-2f, .min_lr = 1e-3f, .warmup = 2,
                              .weight_decay = 0.1f, .clip = 1.0f, .adam_beta1 = 0.9f,
                              .adam_beta2 = 0.999f, .adam_eps = 1e-8f, .batch = 3,
                              .grad_accum = 2};
    for (int seq = 0; seq < 2; seq++) {
        strix_train_state st0 = {.data_rng = 99, .cursor = {.stride = 5}, .val_loss = NAN};
        accum_run a, b, c;
        accum_run_open(be, &corpus, seq, true, &st0, &cfg, &a);
        strix_train_result ra, rb, rc;
        OK(strix_train_run(&cfg, &a.model, a.opt, &a.st, NULL, &ra));
        assert_int_equal(ra.end, STRIX_TRAIN_FINISHED);
        // 2·3 windows per step: the stream moved by 36 windows
        if (seq) assert_int_equal(a.st.cursor.pos, 36 * 5);
        else assert_true(a.st.data_rng != st0.data_rng);

        accum_run_open(be, &corpus, seq, true, &st0, &cfg, &b);
        strix_train_hooks hb = {.on_event = stop_after_3};
        OK(strix_train_run(&cfg, &b.model, b.opt, &b.st, &hb, &rb));
        assert_int_equal(rb.end, STRIX_TRAIN_STOPPED);
        assert_int_equal(b.st.step, 3);
        accum_run_open(be, &corpus, seq, false, &b.st, &cfg, &c);
        strix_params *pa = a.model.params, *pb = b.model.params, *pc = c.model.params;
        size_t bytes = pb->total * sizeof(float);
        OK(strix_copy(be, pc->data, pb->data, bytes, STRIX_COPY_D2D));
        OK(strix_copy(be, pc->m, pb->m, bytes, STRIX_COPY_D2D));
        OK(strix_copy(be, pc->v, pb->v, bytes, STRIX_COPY_D2D));
        OK(strix_train_run(&cfg, &c.model, c.opt, &c.st, NULL, &rc));
        assert_int_equal(rc.first_step, 3);
        assert_int_equal(c.st.step, STEPS);
        float *wa = from_backend(be, pa->data, pa->total), *wc = from_backend(be, pc->data,
                                                                             pc->total);
        float *ma = from_backend(be, pa->m, pa->total), *mc = from_backend(be, pc->m, pc->total);
        float *va = from_backend(be, pa->v, pa->total), *vc = from_backend(be, pc->v, pc->total);
        assert_true(tl_check_bits("resumed params", wc, wa, pa->total));
        assert_true(tl_check_bits("resumed m", mc, ma, pa->total));
        assert_true(tl_check_bits("resumed v", vc, va, pa->total));
        assert_true(rc.loss == ra.loss);
        assert_true(c.st.data_rng == a.st.data_rng);
        assert_true(c.st.cursor.pos == a.st.cursor.pos && c.st.cursor.epoch == a.st.cursor.epoch);
        free(wa), free(wc), free(ma), free(mc), free(va), free(vc);
        accum_run_close(&a);
        accum_run_close(&b);
        accum_run_close(&c);
    }
    strix_corpus_free(&corpus);
}

// ---- KV-cache decoding -------------------------------------------------------------------------

static void test_decode_matches_forward(void **state) {
    strix_backend *be = *state;
    for (size_t mi = 0; mi < sizeof MODELS / sizeof MODELS[0]; mi++) {
        tl_golden gf;
        assert_true(tl_golden_load(MODELS[mi].file, &gf));
        strix_gpt *g = load_model(be, &MODELS[mi], &gf);
        const strix_gpt_config *c = strix_gpt_config_of(g);
        int T = c->block_size, V = c->vocab_size;
        const tl_array *ids_a = need(&gf, "ids");
        int32_t *ids = golden_ints(ids_a);
        for (int b = 0; b < (int)ids_a->shape[0]; b++) {
            const int32_t *seq = ids + (size_t)b * (size_t)ids_a->shape[1];
            OK(strix_gpt_forward(g, seq, NULL, 1, T, NULL));
            float *full = from_backend(be, strix_gpt_logits(g), (size_t)T * (size_t)V);
            OK(strix_gpt_decode_reset(g));
            float *step = malloc((size_t)V * sizeof(float));
            int bad = 0;
            for (int t = 0; t < T; t++) {
                assert_int_equal(strix_gpt_decode_pos(g), t);
                OK(strix_gpt_decode_step(g, seq[t], step));
                char what[32];
                snprintf(what, sizeof what, "decode pos %d", t);
                bad += !tl_check_close(what, step, full + (size_t)t * (size_t)V, (size_t)V,
                                       ATOL, RTOL);
            }
            assert_int_equal(bad, 0);
            // the cache holds block_size positions; one more is an error, reset starts over
            assert_int_equal(strix_gpt_decode_step(g, seq[0], step), STRIX_ERR_ARG);
            OK(strix_gpt_decode_reset(g));
            OK(strix_gpt_decode_step(g, seq[0], step));
            assert_true(tl_check_close("after reset", step, full, (size_t)V, ATOL, RTOL));
            // a decode step invalidates the last forward for backward
            assert_int_equal(strix_gpt_backward(g), STRIX_ERR_ARG);
            free(step);
            free(full);
        }
        free(ids);
        strix_gpt_free(g);
        tl_golden_free(&gf);
    }
}

// ---- determinism -------------------------------------------------------------------------------

typedef struct run_result {
    float losses[3];
    float *logits, *params, *grads;
} run_result;

/* Config A sizes (2 layers to keep the test short): 3 AdamW steps from seed-initialised weights,
 * snapshotting losses, the last logits, the parameters and the last gradients. */
static run_result train_run(strix_backend *be) {
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = 65;
    c.n_layer = 2;
    strix_gpt *g;
    OK(strix_gpt_new(be, &c, &g));
    OK(strix_gpt_init_weights(g, 1337));
    strix_params *ps = strix_gpt_params(g);
    enum { B = 8, T = 64 };
    static int32_t ids[B * T], tg[B * T];
    strix_rng rng;
    strix_rng_seed(&rng, 7);
    for (int i = 0; i < B * T; i++) {
        ids[i] = (int32_t)strix_rng_below(&rng, 65);
        tg[i] = (int32_t)strix_rng_below(&rng, 65);
    }
    run_result r;
    train_fixed(g, ids, tg, B, T, 3, r.losses);
    r.logits = from_backend(be, strix_gpt_logits(g), (size_t)B * T * 65);
    r.params = from_backend(be, ps->data, ps->total);
    r.grads = from_backend(be, ps->grad, ps->total);
    strix_gpt_free(g);
    return r;
}

/* True if two runs are bit-identical (prints the first differences otherwise). */
static bool same_run(const run_result *a, const run_result *b, size_t nparams) {
    bool ok = tl_check_bits("losses", a->losses, b->losses, 3);
    ok = tl_check_bits("logits", a->logits, b->logits, (size_t)8 * 64 * 65) && ok;
    ok = tl_check_bits("params", a->params, b->params, nparams) && ok;
    return tl_check_bits("grads", a->grads, b->grads, nparams) && ok;
}

static void free_run(run_result *r) {
    free(r->logits);
    free(r->params);
    free(r->grads);
}

static size_t model_size(strix_backend *be) {
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = 65;
    c.n_layer = 2;
    strix_gpt *probe;
    OK(strix_gpt_new(be, &c, &probe));
    size_t nparams = strix_gpt_params(probe)->total;
    strix_gpt_free(probe);
    return nparams;
}

/* Same seed, same backend, same thread count: bit-identical. */
static void test_determinism_repeat(void **state) {
    strix_backend *be = *state;
    size_t nparams = model_size(be);
    run_result a = train_run(be), b = train_run(be);
    bool same = same_run(&a, &b, nparams), learns = a.losses[2] < a.losses[0];
    free_run(&a);
    free_run(&b);
    assert_true(same);
    assert_true(learns);
}

/* DESIGN.md: results never depend on the thread count (1 vs 2 threads, bit for bit). */
static void test_determinism_threads(void **state) {
    strix_backend *be = *state;
    size_t nparams = model_size(be);
    int saved = strix_get_num_threads();
    strix_set_num_threads(2);
    run_result two = train_run(be);
    strix_set_num_threads(1);
    run_result one = train_run(be);
    strix_set_num_threads(saved);
    bool same = same_run(&two, &one, nparams);
    free_run(&two);
    free_run(&one);
    assert_true(same);
}

// ---- configuration and argument errors ---------------------------------------------------------

static void test_config(void **state) {
    (void)state;
    strix_gpt_config c = strix_gpt_config_default();
    assert_int_equal(c.vocab_size, 0);
    assert_int_equal(c.block_size, 64);
    assert_int_equal(c.n_layer, 4);
    assert_int_equal(c.n_head, 4);
    assert_int_equal(c.d_model, 128);
    assert_int_equal(c.d_ff, 0);
    assert_int_equal(c.mlp_act, STRIX_ACT_GELU);
    assert_false(c.rope);
    assert_false(c.tie_weights);
    assert_true(c.bias);
    assert_true(c.ln_eps == 1e-5f);
    assert_true(c.rope_base == 10000.0f);
    assert_int_equal(c.head_sizes[0], 0);

    assert_int_equal(strix_gpt_config_check(&c), STRIX_ERR_ARG); // vocab 0
    c.vocab_size = 65;
    OK(strix_gpt_config_check(&c));
    c.n_head = 3;
    assert_int_equal(strix_gpt_config_check(&c), STRIX_ERR_ARG);
    assert_string_equal(strix_last_error(), "n_head 3 does not divide d_model 128");
    c.d_model = 64;
    c.n_head = 3;
    c.head_sizes[0] = 20;
    c.head_sizes[1] = 20;
    c.head_sizes[2] = 20;
    assert_int_equal(strix_gpt_config_check(&c), STRIX_ERR_ARG);
    assert_string_equal(strix_last_error(), "head sizes sum to 60, not d_model 64");
    c.head_sizes[2] = 24;
    OK(strix_gpt_config_check(&c));
    c.rope = true;
    c.head_sizes[0] = 15;
    c.head_sizes[1] = 25;
    assert_int_equal(strix_gpt_config_check(&c), STRIX_ERR_ARG);
    assert_string_equal(strix_last_error(), "RoPE needs an even head size (got 15)");
    // non-finite floats never pass (a checkpoint could not store them), RoPE on or off
    c = strix_gpt_config_default();
    c.vocab_size = 65;
    c.ln_eps = INFINITY;
    assert_int_equal(strix_gpt_config_check(&c), STRIX_ERR_ARG);
    c.ln_eps = 1e-5f;
    c.rope_base = NAN;
    assert_int_equal(strix_gpt_config_check(&c), STRIX_ERR_ARG);
    c = strix_gpt_config_default();
    c.vocab_size = 65;
    c.block_size = 0;
    assert_int_equal(strix_gpt_config_check(&c), STRIX_ERR_ARG);
}

static void test_forward_errors(void **state) {
    strix_backend *be = *state;
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = 5;
    c.block_size = 4;
    c.n_layer = 1;
    c.d_model = 8;
    c.n_head = 2;
    strix_gpt *g;
    OK(strix_gpt_new(be, &c, &g));
    OK(strix_gpt_init_weights(g, 1));
    int32_t ids[10] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4}, tg[10] = {1, 2, 3, 4, 0, 1, 2, 3, 4, 0};
    float loss;
    assert_int_equal(strix_gpt_backward(g), STRIX_ERR_ARG); // no forward yet
    assert_int_equal(strix_gpt_forward(g, ids, tg, 2, 5, &loss), STRIX_ERR_ARG);
    assert_string_equal(strix_last_error(), "gpt forward: T 5 exceeds block_size 4");
    int32_t bad_ids[4] = {0, 1, 5, 2};
    assert_int_equal(strix_gpt_forward(g, bad_ids, tg, 1, 4, &loss), STRIX_ERR_ARG);
    assert_string_equal(strix_last_error(), "gpt forward: id 5 at 2 outside [0, 5)");
    bad_ids[2] = -1;
    assert_int_equal(strix_gpt_forward(g, bad_ids, tg, 1, 4, &loss), STRIX_ERR_ARG);
    assert_int_equal(strix_gpt_forward(g, ids, tg, 0, 4, &loss), STRIX_ERR_ARG);
    int32_t bad_tg[4] = {0, 9, 1, 1};
    assert_int_equal(strix_gpt_forward(g, ids, bad_tg, 1, 4, &loss), STRIX_ERR_ARG);
    // nanoGPT's ignore_index -1: ignored positions leave the mean over the others
    OK(strix_gpt_forward(g, ids, tg, 2, 4, &loss));
    assert_true(fabsf(loss - logf(5.0f)) < 0.05f); // near-uniform logits at init
    int32_t partial[8] = {-1, 2, -1, -1, -1, -1, -1, -1};
    float loss_one, loss_ref;
    OK(strix_gpt_forward(g, ids, partial, 2, 4, &loss_one));
    // the same position alone: causal attention makes position 1 depend on ids 0..1 only
    int32_t short_tg[2] = {-1, 2};
    OK(strix_gpt_forward(g, ids, short_tg, 1, 2, &loss_ref));
    assert_true(loss_one > 0.0f && fabsf(loss_one - loss_ref) <= 1e-5f);
    OK(strix_gpt_backward(g));
    strix_gpt_free(g);
}

// ---- main --------------------------------------------------------------------------------------

int main(void) {
    struct CMUnitTest tests[] = {
        BACKEND_TEST(test_config),
        BACKEND_TEST(test_forward_errors),
        BACKEND_TEST(test_golden_step0),
        BACKEND_TEST(test_golden_adamw),
        BACKEND_TEST(test_decode_matches_forward),
        BACKEND_TEST(test_determinism_repeat),
        BACKEND_TEST(test_determinism_threads),
        BACKEND_TEST(test_grad_accumulates),
        BACKEND_TEST(test_backward_scaled),
        BACKEND_TEST(test_train_grad_accum),
        BACKEND_TEST(test_resume_grad_accum),
    };
    return run_on_each_backend("gpt", tests, sizeof tests / sizeof tests[0]) ? 1 : 0;
}
