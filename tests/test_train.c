/*
 * test_train.c - the trainer of strix/train.h on a tiny model: linear regression y = W·x + b
 * (W 2x3 with weight decay, b 2 without) with a mean-squared-error loss, its forward and backward
 * written out on the host (the "cpu" backend's blocks are host memory), batches drawn from a pool
 * of 32 rows by a stream whose state is the train state's data_rng. Checks:
 *  - gradient accumulation: 2 micro-batches of 4 rows give the run on batches of 8 (to rounding);
 *  - gradient shards on one process: the clipped grads are the shards' sum bit for bit (each
 *    shard's micro-batches from zeroed grads), a rounding away from the plain step; shards that
 *    do not divide the batch are refused;
 *  - resume from the checkpoint saved at an evaluation continues bit-identically;
 *  - the stop flag, set during a step, ends the run after that step with a save; a STOP_EVAL
 *    request evaluates first; events come in order (EVAL before its save, STEP after);
 *  - a non-finite loss skips the update but counts the step; STRIX_TRAIN_MAX_SKIPS in a row fail
 *    as diverged without a save, and so does a run all of whose steps were skipped (at its end or
 *    at an early stop) and an evaluation with a non-finite loss (its EVAL event, no save);
 *  - argument errors.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "strix/train.h"
#include "testlib.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)
#define POOL 32
#define NIN 3
#define NOUT 2

static float X[POOL][NIN], Y[POOL][NOUT];

/* The tiny model and what the tests observe of it. */
typedef struct tiny {
    strix_backend *be;
    strix_params ps;
    strix_param *w, *b;
    strix_train_state *state;   /* data_rng: the batch stream */
    int rows;                   /* rows per micro-batch */
    int drawn[64];              /* the pool rows of the micro-batch drawn last */
    int64_t drawn_step;         /* its step and micro-batch (-1: none) */
    int drawn_micro;
    int loss_calls, evals, saves, hook_calls;
    int64_t nan_from;           /* loss NaN from this step on (-1: never) */
    int64_t stop_at;            /* loss_step of this step sets *stop (-1: never) */
    volatile sig_atomic_t stop;
    /* the last save: parameters, moments and state */
    float saved_data[NOUT * NIN + NOUT], saved_m[NOUT * NIN + NOUT], saved_v[NOUT * NIN + NOUT];
    strix_train_state saved_state;
    char events[256];           /* S step, K skipped, e eval event, L loop end; E eval, V save */
    int n_events;
} tiny;

static void note(tiny *t, char c) {
    if (t->n_events < (int)sizeof t->events - 1) t->events[t->n_events++] = c;
}

static strix_status tiny_loss_step(void *ctx, const strix_train_slice *sl, float *loss) {
    tiny *t = ctx;
    t->loss_calls++;
    if (sl->step == t->stop_at) t->stop = 1;
    if (sl->step != t->drawn_step || sl->micro != t->drawn_micro) { /* once per micro-batch */
        strix_rng rng = {.state = t->state->data_rng};
        for (int r = 0; r < t->rows; r++) t->drawn[r] = (int)strix_rng_below(&rng, POOL);
        t->state->data_rng = rng.state;
        t->drawn_step = sl->step;
        t->drawn_micro = sl->micro;
    }
    const float *W = t->w->data, *b = t->b->data;
    float *gW = t->w->grad, *gb = t->b->grad;
    int rows = t->rows / sl->shards, r0 = sl->shard * rows;
    float coef = sl->grad_scale * 2.0f / (float)(rows * NOUT); /* d/dŷ of the mean of squares */
    double sum = 0.0;
    for (int r = r0; r < r0 + rows; r++) {
        int i = t->drawn[r];
        for (int o = 0; o < NOUT; o++) {
            float pred = b[o];
            for (int j = 0; j < NIN; j++) pred += W[o * NIN + j] * X[i][j];
            float d = pred - Y[i][o];
            sum += (double)d * d;
            gb[o] += coef * d;
            for (int j = 0; j < NIN; j++) gW[o * NIN + j] += coef * d * X[i][j];
        }
    }
    *loss = sl->step >= t->nan_from && t->nan_from >= 0 ? NAN : (float)(sum / (rows * NOUT));
    return STRIX_OK;
}

/* The mean loss over the whole pool: no stream, so it never perturbs training. */
static strix_status tiny_eval(void *ctx, double *val) {
    tiny *t = ctx;
    t->evals++;
    note(t, 'E');
    const float *W = t->w->data, *b = t->b->data;
    double sum = 0.0;
    for (int i = 0; i < POOL; i++)
        for (int o = 0; o < NOUT; o++) {
            float pred = b[o];
            for (int j = 0; j < NIN; j++) pred += W[o * NIN + j] * X[i][j];
            sum += (double)(pred - Y[i][o]) * (pred - Y[i][o]);
        }
    *val = sum / (POOL * NOUT);
    return STRIX_OK;
}

static strix_status tiny_save(void *ctx, const strix_train_state *state) {
    tiny *t = ctx;
    t->saves++;
    note(t, 'V');
    size_t n = t->ps.total * sizeof(float);
    memcpy(t->saved_data, t->ps.data, n);
    memcpy(t->saved_m, t->ps.m, n);
    memcpy(t->saved_v, t->ps.v, n);
    t->saved_state = *state;
    return STRIX_OK;
}

static void tiny_new(tiny *t, strix_train_state *state, int rows) {
    memset(t, 0, sizeof *t);
    OK(strix_backend_init("cpu", &t->be));
    strix_params_init_empty(&t->ps, t->be);
    const int64_t ws[2] = {NOUT, NIN}, bs[1] = {NOUT};
    t->w = strix_params_add(&t->ps, "fc.weight", 2, ws, STRIX_INIT_NORMAL, 0.5f, true);
    t->b = strix_params_add(&t->ps, "fc.bias", 1, bs, STRIX_INIT_NORMAL, 0.5f, false);
    assert_non_null(t->w);
    assert_non_null(t->b);
    OK(strix_params_alloc(&t->ps));
    OK(strix_params_init(&t->ps, 42));
    assert_int_equal(t->ps.total, NOUT * NIN + NOUT);
    t->state = state;
    t->rows = rows;
    t->nan_from = -1;
    t->stop_at = -1;
    t->drawn_step = -1;
}

static void tiny_free(tiny *t) {
    strix_params_free(&t->ps);
    strix_backend_free(t->be);
}

static strix_train_model tiny_model(tiny *t) {
    return (strix_train_model){.ctx = t, .params = &t->ps, .loss_step = tiny_loss_step,
                               .eval = tiny_eval, .save = tiny_save};
}

static strix_train_config tiny_config(int64_t steps) {
    return (strix_train_config){.steps = steps, .lr = 0.05f, .min_lr = 0.005f, .warmup = 2,
                                .weight_decay = 0.1f, .clip = 1.0f, .adam_beta1 = 0.9f,
                                .adam_beta2 = 0.999f, .adam_eps = 1e-8f, .batch = 8,
                                .eval_every = 3, .grad_accum = 1};
}

static strix_train_state fresh_state(void) {
    return (strix_train_state){.step = 0, .data_rng = strix_seed_derive(7, 2), .val_loss = NAN};
}

static strix_train_action record_event(void *user, const strix_train_event *ev) {
    tiny *t = user;
    note(t, "SKeL"[ev->kind]);
    return STRIX_TRAIN_CONTINUE;
}

static int setup(void **state) {
    (void)state;
    strix_rng rng;
    strix_rng_seed(&rng, 99);
    const float A[NOUT][NIN] = {{1.5f, -2.0f, 0.5f}, {0.25f, 1.0f, -1.0f}}, c[NOUT] = {0.3f, -0.7f};
    for (int i = 0; i < POOL; i++) {
        for (int j = 0; j < NIN; j++) X[i][j] = strix_rng_uniform(&rng) * 2.0f - 1.0f;
        for (int o = 0; o < NOUT; o++) {
            Y[i][o] = c[o] + 0.05f * (strix_rng_uniform(&rng) - 0.5f);
            for (int j = 0; j < NIN; j++) Y[i][o] += A[o][j] * X[i][j];
        }
    }
    return 0;
}

// ---- gradient accumulation ---------------------------------------------------------------------

static void test_grad_accum(void **unused) {
    (void)unused;
    enum { STEPS = 20 };
    strix_train_state sa = fresh_state(), sb = fresh_state();
    tiny a, b;
    tiny_new(&a, &sa, 4); /* 2 micro-batches of 4 rows */
    tiny_new(&b, &sb, 8); /* one batch of 8 */
    strix_train_config ca = tiny_config(STEPS), cb = tiny_config(STEPS);
    ca.grad_accum = 2;
    strix_train_model ma = tiny_model(&a), mb = tiny_model(&b);
    strix_optimizer *oa, *ob;
    OK(strix_train_optimizer(&a.ps, &ca, &oa));
    OK(strix_train_optimizer(&b.ps, &cb, &ob));
    float la[STEPS], lb[STEPS];
    double val_start, val_end;
    OK(tiny_eval(&b, &val_start));
    for (int s = 0; s < STEPS; s++) {
        strix_train_step_result ra, rb;
        OK(strix_train_step(&ca, &ma, oa, NULL, s, &ra));
        OK(strix_train_step(&cb, &mb, ob, NULL, s, &rb));
        la[s] = ra.loss;
        lb[s] = rb.loss;
        assert_true(ra.lr == rb.lr && ra.lr > 0.0f);
        assert_true(fabs(ra.grad_norm - rb.grad_norm) <= 1e-5 * rb.grad_norm);
    }
    assert_int_equal(a.loss_calls, 2 * STEPS);
    assert_int_equal(b.loss_calls, STEPS);
    assert_true(sa.data_rng == sb.data_rng); /* the same rows were drawn */
    assert_true(tl_check_close("accum 2 vs batch 8: losses", la, lb, STEPS, 1e-6, 1e-5));
    assert_true(tl_check_close("accum 2 vs batch 8: params", a.ps.data, b.ps.data, a.ps.total,
                               1e-6, 1e-5));
    OK(tiny_eval(&b, &val_end));
    print_message("    loss over the pool %.4f -> %.4f in %d steps\n", val_start, val_end, STEPS);
    assert_true(val_end < 0.5 * val_start); /* it learns */
    strix_optimizer_free(oa);
    strix_optimizer_free(ob);
    tiny_free(&a);
    tiny_free(&b);
}

// ---- gradient shards ---------------------------------------------------------------------------

/* grad_shards 2 with grad_accum 2 on one process: the grads the step clips are, bit for bit,
 * shard 0's plus shard 1's, each the sum of its two micro-batches computed from zeroed grads with
 * the loss scaled 1/(k·S) = 1/4 (the tree of strix/dist.h for two shards is one addition); the
 * step's loss is the mean of the shard losses; and the result is a rounding away from the plain
 * step's. */
static void test_sharded_step(void **unused) {
    (void)unused;
    strix_train_state st = fresh_state(), st0 = st;
    tiny t;
    tiny_new(&t, &st, 8);
    strix_train_config cfg = tiny_config(5);
    cfg.grad_accum = 2;
    cfg.grad_shards = 2;
    cfg.clip = 0.0f; /* measured only: the grads stay as the sum left them */
    strix_train_model m = tiny_model(&t);
    strix_optimizer *opt;
    OK(strix_train_optimizer(&t.ps, &cfg, &opt));
    float w0[NOUT * NIN + NOUT];
    memcpy(w0, t.ps.data, sizeof w0);
    strix_train_step_result r;
    OK(strix_train_step(&cfg, &m, opt, NULL, 0, &r));
    assert_int_equal(t.loss_calls, 4);
    float got[NOUT * NIN + NOUT];
    memcpy(got, t.ps.grad, sizeof got);

    /* the same slices by hand, in the trainer's order (micro-batch, then shard) */
    memcpy(t.ps.data, w0, sizeof w0);
    st = st0;
    t.drawn_step = -1;
    float rows[2][NOUT * NIN + NOUT], loss[2] = {0, 0};
    size_t n = t.ps.total;
    for (int micro = 0; micro < 2; micro++)
        for (int shard = 0; shard < 2; shard++) {
            strix_train_slice sl = {.step = 0, .micro = micro, .shard = shard, .shards = 2,
                                    .grad_scale = 0.25f};
            float l;
            OK(strix_params_zero_grad(&t.ps));
            OK(tiny_loss_step(&t, &sl, &l));
            for (size_t i = 0; i < n; i++)
                rows[shard][i] = micro == 0 ? t.ps.grad[i] : rows[shard][i] + t.ps.grad[i];
            loss[shard] += l;
        }
    float want[NOUT * NIN + NOUT];
    for (size_t i = 0; i < n; i++) want[i] = rows[0][i] + rows[1][i];
    assert_true(tl_check_bits("sharded grads = shard 0 + shard 1", got, want, n));
    float want_loss = (loss[0] / 2.0f + loss[1] / 2.0f) / 2.0f;
    assert_true(r.loss == want_loss);

    /* the plain step on the same rows: the same gradient to rounding */
    memcpy(t.ps.data, w0, sizeof w0);
    st = st0;
    t.drawn_step = -1;
    cfg.grad_shards = 1;
    strix_train_step_result p;
    OK(strix_train_step(&cfg, &m, opt, NULL, 0, &p));
    assert_true(tl_check_close("sharded vs plain grads", got, t.ps.grad, n, 1e-6, 1e-5));
    assert_true(fabsf(p.loss - r.loss) <= 1e-6f * fabsf(p.loss));

    /* shards that do not divide the batch: one clear error */
    cfg.grad_shards = 3;
    assert_int_equal(strix_train_step(&cfg, &m, opt, NULL, 1, &r), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "not divisible by 3 gradient shards"));
    strix_optimizer_free(opt);
    tiny_free(&t);
}

// ---- resume ------------------------------------------------------------------------------------

static void test_resume_bit_identical(void **unused) {
    (void)unused;
    enum { STEPS = 8 };
    strix_train_config cfg = tiny_config(STEPS); /* evaluates and saves at 3, 6 and 8 */
    strix_train_state sa = fresh_state();
    tiny a;
    tiny_new(&a, &sa, 8);
    strix_train_model ma = tiny_model(&a);
    strix_optimizer *oa;
    OK(strix_train_optimizer(&a.ps, &cfg, &oa));
    strix_train_hooks ha = {.on_event = record_event, .user = &a};
    strix_train_result ra;
    OK(strix_train_run(&cfg, &ma, oa, &sa, &ha, &ra));
    assert_int_equal(ra.end, STRIX_TRAIN_FINISHED);
    assert_int_equal(sa.step, STEPS);
    assert_int_equal(ra.val_step, STEPS);
    assert_int_equal(a.evals, 3);
    assert_int_equal(a.saves, 3);
    assert_string_equal(a.events, "SSEeVSSSEeVSSEeVSL");
    assert_false(isnan(sa.val_loss));

    /* a run stopped right after step 3's save, resumed from it in a fresh process */
    strix_train_state sb = fresh_state();
    tiny b;
    tiny_new(&b, &sb, 8);
    strix_train_model mb = tiny_model(&b);
    strix_optimizer *ob;
    OK(strix_train_optimizer(&b.ps, &cfg, &ob));
    b.stop_at = 2; /* the third step (0-based 2) raises the flag */
    strix_train_hooks hb = {.stop = &b.stop};
    strix_train_result rb;
    OK(strix_train_run(&cfg, &mb, ob, &sb, &hb, &rb));
    assert_int_equal(rb.end, STRIX_TRAIN_INTERRUPTED);
    assert_int_equal(sb.step, 3);
    assert_int_equal(b.saves, 1); /* step 3 saved at its evaluation; no second save */
    strix_optimizer_free(ob);
    tiny c;
    strix_train_state sc = b.saved_state;
    tiny_new(&c, &sc, 8);
    size_t n = c.ps.total * sizeof(float);
    memcpy(c.ps.data, b.saved_data, n);
    memcpy(c.ps.m, b.saved_m, n);
    memcpy(c.ps.v, b.saved_v, n);
    strix_train_model mc = tiny_model(&c);
    strix_optimizer *oc;
    OK(strix_train_optimizer(&c.ps, &cfg, &oc));
    strix_train_result rc;
    OK(strix_train_run(&cfg, &mc, oc, &sc, NULL, &rc));
    assert_int_equal(rc.first_step, 3);
    assert_int_equal(sc.step, STEPS);
    assert_true(tl_check_bits("resumed params", c.ps.data, a.ps.data, a.ps.total));
    assert_true(tl_check_bits("resumed m", c.ps.m, a.ps.m, a.ps.total));
    assert_true(tl_check_bits("resumed v", c.ps.v, a.ps.v, a.ps.total));
    assert_true(rc.loss == ra.loss);
    assert_true(sc.val_loss == sa.val_loss);
    assert_true(sc.data_rng == sa.data_rng);
    strix_optimizer_free(oa);
    strix_optimizer_free(oc);
    tiny_free(&a);
    tiny_free(&b);
    tiny_free(&c);
}

// ---- stopping ----------------------------------------------------------------------------------

static strix_train_action stop_at_4(void *user, const strix_train_event *ev) {
    tiny *t = user;
    note(t, "SKeL"[ev->kind]);
    return ev->kind == STRIX_TRAIN_EV_STEP && ev->step == 4 ? STRIX_TRAIN_STOP_EVAL
                                                            : STRIX_TRAIN_CONTINUE;
}

static void test_stop(void **unused) {
    (void)unused;
    strix_train_config cfg = tiny_config(10);
    /* the stop flag raised during step 5 (0-based 4): the step ends, then a save, no eval */
    strix_train_state st = fresh_state();
    tiny t;
    tiny_new(&t, &st, 8);
    t.stop_at = 4;
    strix_train_model m = tiny_model(&t);
    strix_optimizer *opt;
    OK(strix_train_optimizer(&t.ps, &cfg, &opt));
    strix_train_hooks h = {.on_event = record_event, .user = &t, .stop = &t.stop};
    strix_train_result r;
    OK(strix_train_run(&cfg, &m, opt, &st, &h, &r));
    assert_int_equal(r.end, STRIX_TRAIN_INTERRUPTED);
    assert_int_equal(st.step, 5);
    assert_int_equal(t.loss_calls, 5);
    assert_int_equal(t.saves, 2);                /* at the step-3 evaluation and at the stop */
    assert_int_equal(t.saved_state.step, 5);
    assert_int_equal(r.val_step, 3);
    assert_string_equal(t.events, "SSEeVSSSLV");
    assert_true(tl_check_bits("saved = final", t.saved_data, t.ps.data, t.ps.total));
    strix_optimizer_free(opt);
    tiny_free(&t);

    /* a stop request with evaluation after step 4: evaluates, then saves */
    st = fresh_state();
    tiny_new(&t, &st, 8);
    m = tiny_model(&t);
    OK(strix_train_optimizer(&t.ps, &cfg, &opt));
    h = (strix_train_hooks){.on_event = stop_at_4, .user = &t};
    OK(strix_train_run(&cfg, &m, opt, &st, &h, &r));
    assert_int_equal(r.end, STRIX_TRAIN_STOPPED);
    assert_int_equal(st.step, 4);
    assert_int_equal(r.val_step, 4);
    assert_int_equal(t.evals, 2);
    assert_string_equal(t.events, "SSEeVSSLEeV");
    strix_optimizer_free(opt);
    tiny_free(&t);
}

// ---- non-finite steps --------------------------------------------------------------------------

static void test_skip_and_diverge(void **unused) {
    (void)unused;
    strix_train_config cfg = tiny_config(STRIX_TRAIN_MAX_SKIPS + 50);
    cfg.eval_every = 1000;
    strix_train_state st = fresh_state();
    tiny t;
    tiny_new(&t, &st, 8);
    strix_train_model m = tiny_model(&t);
    m.eval = NULL;
    m.save = NULL;
    strix_optimizer *opt;
    OK(strix_train_optimizer(&t.ps, &cfg, &opt));
    strix_train_step_result r;
    OK(strix_train_step(&cfg, &m, opt, NULL, 0, &r));
    assert_false(r.skipped);
    float before[NOUT * NIN + NOUT];
    memcpy(before, t.ps.data, sizeof before);
    t.nan_from = 1;
    OK(strix_train_step(&cfg, &m, opt, NULL, 1, &r));
    assert_true(r.skipped);
    assert_true(isnan(r.loss));
    assert_true(tl_check_bits("a skipped step moves nothing", t.ps.data, before, t.ps.total));
    assert_int_equal(strix_optimizer_steps(opt, "fc.weight"), 2); /* but it counts */

    /* from step 2 on every loss is NaN: the run fails after STRIX_TRAIN_MAX_SKIPS of them */
    st.step = 2;
    t.n_events = 0;
    memset(t.events, 0, sizeof t.events);
    strix_train_hooks h = {.on_event = record_event, .user = &t};
    strix_train_result res;
    assert_int_equal(strix_train_run(&cfg, &m, opt, &st, &h, &res), STRIX_ERR_NUMERIC);
    assert_non_null(strstr(strix_last_error(), "training diverged: 10 steps in a row (steps 3 "
                                               "to 12) had a non-finite loss or gradient norm; "
                                               "no update since step 2"));
    assert_int_equal(st.step, 2 + STRIX_TRAIN_MAX_SKIPS - 1);
    assert_int_equal(res.skipped, STRIX_TRAIN_MAX_SKIPS);
    assert_int_equal(res.skip_since, 2);
    assert_int_equal(t.saves, 0);
    assert_true(tl_check_bits("diverged: nothing moved", t.ps.data, before, t.ps.total));
    strix_optimizer_free(opt);
    tiny_free(&t);
}

/* Fewer skipped steps than STRIX_TRAIN_MAX_SKIPS still fail when they are all the run had, and a
 * non-finite validation loss is never saved. */
static void test_no_update_run(void **unused) {
    (void)unused;
    strix_train_config cfg = tiny_config(5);
    cfg.eval_every = 2;
    strix_train_state st = fresh_state();
    tiny t;
    tiny_new(&t, &st, 8);
    t.nan_from = 0;
    strix_train_model m = tiny_model(&t);
    strix_optimizer *opt;
    OK(strix_train_optimizer(&t.ps, &cfg, &opt));
    strix_train_hooks h = {.on_event = record_event, .user = &t, .stop = &t.stop};
    strix_train_result res;
    assert_int_equal(strix_train_run(&cfg, &m, opt, &st, &h, &res), STRIX_ERR_NUMERIC);
    assert_non_null(strstr(strix_last_error(), "training diverged: every step of the run: 5 "
                                               "steps in a row (steps 1 to 5)"));
    assert_int_equal(res.skipped, 5);
    assert_int_equal(res.skip_since, 0);
    /* the evaluations at steps 2 and 4 saved the unchanged weights; the last step saves nothing */
    assert_string_equal(t.events, "KSKEeVSKSKEeVSKL");
    assert_int_equal(t.saves, 2);

    /* a run (here a resumed one) whose steps were all skipped until an early stop fails too */
    cfg = tiny_config(20);
    cfg.eval_every = 100;
    t.nan_from = 3;
    t.stop_at = 4;
    t.saves = 0;
    st.step = 3;
    assert_int_equal(strix_train_run(&cfg, &m, opt, &st, &h, &res), STRIX_ERR_NUMERIC);
    assert_int_equal(res.end, STRIX_TRAIN_INTERRUPTED);
    assert_int_equal(res.skipped, 2);
    assert_int_equal(res.skip_since, 3);
    assert_int_equal(t.saves, 0);
    /* the same stop after an update is a success, the skipped steps reported */
    st.step = 2;
    t.stop = 0;
    OK(strix_train_run(&cfg, &m, opt, &st, &h, &res));
    assert_int_equal(res.skipped, 2);
    assert_int_equal(res.skip_since, 3);
    assert_int_equal(t.saves, 1);

    /* an evaluation that gives NaN (NaN weights): reported, not saved */
    st = fresh_state();
    t.nan_from = -1;
    t.stop_at = -1;
    t.stop = 0;
    t.saves = 0;
    cfg = tiny_config(4);
    cfg.eval_every = 2;
    ((float *)t.w->data)[0] = NAN;
    assert_int_equal(strix_train_run(&cfg, &m, opt, &st, &h, &res), STRIX_ERR_NUMERIC);
    assert_non_null(strstr(strix_last_error(), "the validation loss at step 2 is nan; not "
                                               "saved"));
    assert_int_equal(t.saves, 0);
    strix_optimizer_free(opt);
    tiny_free(&t);
}

static void test_errors(void **unused) {
    (void)unused;
    strix_train_state st = fresh_state();
    tiny t;
    tiny_new(&t, &st, 8);
    strix_train_model m = tiny_model(&t);
    strix_train_config cfg = tiny_config(0);
    strix_optimizer *opt;
    OK(strix_train_optimizer(&t.ps, &cfg, &opt));
    assert_int_equal(strix_train_run(&cfg, &m, opt, &st, NULL, NULL), STRIX_ERR_ARG);
    cfg = tiny_config(3);
    cfg.eval_every = -1;
    assert_int_equal(strix_train_run(&cfg, &m, opt, &st, NULL, NULL), STRIX_ERR_ARG);
    assert_int_equal(t.loss_calls, 0);
    /* finished already: nothing runs, one save at the end as for any stop */
    cfg = tiny_config(3);
    st.step = 3;
    OK(strix_train_run(&cfg, &m, opt, &st, NULL, NULL));
    assert_int_equal(t.loss_calls, 0);
    assert_int_equal(t.saves, 1);
    assert_int_equal(t.evals, 0);
    strix_optimizer_free(opt);
    tiny_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grad_accum),
        cmocka_unit_test(test_sharded_step),
        cmocka_unit_test(test_resume_bit_identical),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_skip_and_diverge),
        cmocka_unit_test(test_no_update_run),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests_name("train", tests, setup, NULL);
}
