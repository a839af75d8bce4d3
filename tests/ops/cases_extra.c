/*
 * cases_extra.c - op tests of the "extra" primitives (tests/ops/op_harness.h): accumulate_rows,
 * copy_2d, BCE with logits, RMSNorm, attention masks, the tanh-Gaussian policy, strix_rl_rows and
 * the rotate-half RoPE.
 *
 * Golden cases (tools/ref/ops_extra_ref.py, PyTorch 1.13) run on every backend at 1 and 2
 * threads. The extra tests pin exact edge values (BCE at ±inf, accumulation order, mask rules,
 * PPO clip bounds, DQN target ties, invalid actions), allowed aliases, and check every backward
 * against central differences in double.
 */
#include "ops/op_harness.h"

// ---- golden runners ----------------------------------------------------------------------------

static void run_accumulate_rows(op_run *run) {
    const tl_array *x = need(run, "x");
    size_t rows = (size_t)x->shape[0], cols = (size_t)x->shape[1];
    float *in = input(run, "x"), *out = input(run, "out0");
    OK(strix_accumulate_rows(run->be, in, out, rows, cols));
    collect(run, "out (row by row)", "out", out, cols, true); /* the order is the contract */
}

static void run_copy_2d(op_run *run) {
    size_t rows = (size_t)scalar(run, "rows"), cols = (size_t)scalar(run, "cols");
    size_t src_stride = (size_t)scalar(run, "src_stride");
    size_t dst_stride = (size_t)scalar(run, "dst_stride");
    size_t src_off = (size_t)scalar(run, "src_off"), dst_off = (size_t)scalar(run, "dst_off");
    float *src = input(run, "src"), *dst = input(run, "dst0");
    OK(strix_copy_2d(run->be, dst + dst_off, dst_stride, src + src_off, src_stride, rows, cols));
    collect(run, "dst", "dst", dst, count_of(run, "dst"), true);
}

static void run_bce_with_logits(op_run *run) {
    size_t n = count_of(run, "x");
    float scale = scalar(run, "scale");
    float *x = input(run, "x"), *y = input(run, "y");
    float *out = output(run, n), *grad = output(run, n);
    OK(strix_bce_with_logits(run->be, x, y, out, n));
    collect(run, "out", "out", out, n, false);
    OK(strix_bce_with_logits_grad(run->be, x, y, grad, n, scale));
    collect(run, "grad", "grad", grad, n, false);
    float *x2 = input(run, "x");
    OK(strix_bce_with_logits(run->be, x2, y, x2, n));
    collect(run, "out (in place)", "out", x2, n, false);
    OK(strix_bce_with_logits_grad(run->be, x, y, x, n, scale));
    collect(run, "grad (in place)", "grad", x, n, false);
}

static void run_rms_norm(op_run *run) {
    const tl_array *xa = need(run, "x");
    size_t rows = (size_t)xa->shape[0], cols = (size_t)xa->shape[1], n = xa->count;
    float eps = scalar(run, "eps");
    float *x = input(run, "x"), *gamma = input(run, "gamma"), *dout = input(run, "dout");
    float *out = output(run, n), *rms = output(run, rows), *dx = output(run, n);
    float *terms = output(run, n), *dgamma = output(run, cols);
    OK(strix_rms_norm_forward(run->be, x, gamma, out, rms, rows, cols, eps));
    collect(run, "out", "out", out, n, false);
    collect(run, "row_rms", "row_rms", rms, rows, false);
    OK(strix_rms_norm_backward(run->be, dout, gamma, x, rms, dx, terms, rows, cols));
    collect(run, "dx", "dx", dx, n, false);
    collect(run, "gamma_terms", "gamma_terms", terms, n, false);
    OK(strix_column_sums(run->be, terms, dgamma, rows, cols, 0.0f));
    collect(run, "dgamma (column sums of gamma_terms)", "dgamma", dgamma, cols, false);
    float *x2 = input(run, "x");
    OK(strix_rms_norm_forward(run->be, x2, NULL, x2, rms, rows, cols, eps));
    collect(run, "out (no gamma, in place)", "out_plain", x2, n, false);
    OK(strix_rms_norm_backward(run->be, dout, NULL, x, rms, dout, NULL, rows, cols));
    collect(run, "dx (no gamma, in place, no terms)", "dx_plain", dout, n, false);
}

static const struct {
    const char *golden;
    bool causal, keep;
    size_t q_off, window;
    float value;
} mask_configs[] = { /* tools/ref/ops_extra_ref.py MASK_CONFIGS */
    {"out_causal", true, false, 0, 0, -INFINITY},
    {"out_window_keep", true, true, 2, 3, -INFINITY},
    {"out_keep_only", false, true, 0, 0, -3.40282347e38f},
    {"out_offset", true, false, 2, 0, -1e9f},
};

static void run_attention_mask_fill(op_run *run) {
    const tl_array *s = need(run, "scores");
    size_t B = (size_t)s->shape[0], H = (size_t)s->shape[1];
    size_t Lq = (size_t)s->shape[2], Lk = (size_t)s->shape[3];
    float *keep = input(run, "keep");
    for (size_t c = 0; c < sizeof mask_configs / sizeof mask_configs[0]; c++) {
        float *scores = input(run, "scores");
        OK(strix_attention_mask_fill(run->be, scores, mask_configs[c].keep ? keep : NULL, B, H,
                                     Lq, Lk, mask_configs[c].causal, mask_configs[c].q_off,
                                     mask_configs[c].window, mask_configs[c].value));
        collect(run, mask_configs[c].golden, mask_configs[c].golden, scores, s->count, true);
    }
}

static void run_tanh_gaussian(op_run *run) {
    const tl_array *m = need(run, "mean");
    size_t rows = (size_t)m->shape[0], cols = (size_t)m->shape[1], n = m->count;
    float stab = scalar(run, "stabilizer");
    float *mean = input(run, "mean"), *log_std = input(run, "log_std"), *eps = input(run, "eps");
    float *ga = input(run, "grad_action"), *glp = input(run, "grad_log_prob");
    float *action = output(run, n), *std = output(run, n), *lp = output(run, rows);
    float *gm = output(run, n), *gls = output(run, n);
    OK(strix_tanh_gaussian_forward(run->be, mean, log_std, eps, action, std, lp, rows, cols,
                                   stab));
    collect(run, "action", "action", action, n, false);
    collect(run, "std", "std", std, n, false);
    collect(run, "log_prob", "log_prob", lp, rows, false);
    OK(strix_tanh_gaussian_backward(run->be, action, std, eps, ga, glp, gm, gls, rows, cols,
                                    stab));
    collect(run, "grad_mean", "grad_mean", gm, n, false);
    collect(run, "grad_log_std", "grad_log_std", gls, n, false);
    /* the aliases the header allows: action over mean, std over log_std; grads over action/std */
    OK(strix_tanh_gaussian_forward(run->be, mean, log_std, eps, mean, log_std, lp, rows, cols,
                                   stab));
    OK(strix_tanh_gaussian_backward(run->be, mean, log_std, eps, ga, glp, mean, log_std, rows,
                                    cols, stab));
    collect(run, "grad_mean (in place)", "grad_mean", mean, n, false);
    collect(run, "grad_log_std (in place)", "grad_log_std", log_std, n, false);
}

static void run_rl_rows(op_run *run) {
    const tl_array *qa = need(run, "q");
    size_t rows = (size_t)qa->shape[0], cols = (size_t)qa->shape[1], n = qa->count;
    strix_backend *be = run->be;
    float *actions = input(run, "actions");

    float *q = input(run, "q"), *targets = input(run, "targets");
    float *loss = output(run, rows), *grad = output(run, n);
    strix_rl_args a = {.in = {q, actions, targets}, .out = {loss}, .rows = rows, .cols = cols,
                       .scale = scalar(run, "dqn_scale")};
    OK(strix_rl_rows(be, STRIX_RL_DQN_LOSS, &a));
    collect(run, "dqn loss", "dqn_loss", loss, rows, false);
    a.out[0] = grad; /* NaN-filled: the whole row must be written */
    OK(strix_rl_rows(be, STRIX_RL_DQN_GRAD, &a));
    collect(run, "dqn grad", "dqn_grad", grad, n, false);
    float *q2 = input(run, "q");
    a.in[0] = q2, a.out[0] = q2;
    OK(strix_rl_rows(be, STRIX_RL_DQN_GRAD, &a));
    collect(run, "dqn grad (in place)", "dqn_grad", q2, n, false);

    float *logits = input(run, "pg_logits"), *pg_actions = input(run, "pg_actions");
    float *returns = input(run, "returns");
    float *probs = output(run, n), *pg_loss = output(run, rows), *pg_grad = output(run, n);
    a = (strix_rl_args){.in = {logits, pg_actions, returns}, .out = {probs, pg_loss},
                        .rows = rows, .cols = cols, .scale = scalar(run, "pg_scale")};
    OK(strix_rl_rows(be, STRIX_RL_PG_LOSS, &a));
    collect(run, "pg probs", "pg_probs", probs, n, false);
    collect(run, "pg loss", "pg_loss", pg_loss, rows, false);
    a.in[0] = probs;
    a.out[0] = pg_grad;
    OK(strix_rl_rows(be, STRIX_RL_PG_GRAD, &a));
    collect(run, "pg grad", "pg_grad", pg_grad, n, false);
    a.out[0] = probs; /* in place over the probs */
    OK(strix_rl_rows(be, STRIX_RL_PG_GRAD, &a));
    collect(run, "pg grad (in place)", "pg_grad", probs, n, false);
    float *logits2 = input(run, "pg_logits"), *pg_loss2 = output(run, rows);
    a.in[0] = logits2, a.out[0] = logits2, a.out[1] = pg_loss2;
    OK(strix_rl_rows(be, STRIX_RL_PG_LOSS, &a));
    collect(run, "pg probs (in place)", "pg_probs", logits2, n, false);
    collect(run, "pg loss (in place)", "pg_loss", pg_loss2, rows, false);

    float *ppo_logits = input(run, "ppo_logits"), *old = input(run, "old_logp");
    float *adv = input(run, "adv");
    float *ppo_probs = output(run, n), *ppo_loss = output(run, rows);
    float *ratio = output(run, rows), *mask = output(run, rows), *ppo_grad = output(run, n);
    a = (strix_rl_args){.in = {ppo_logits, actions, old, adv},
                        .out = {ppo_probs, ppo_loss, ratio, mask}, .rows = rows, .cols = cols,
                        .scale = scalar(run, "ppo_scale"), .lower = scalar(run, "lower"),
                        .upper = scalar(run, "upper")};
    OK(strix_rl_rows(be, STRIX_RL_PPO_LOSS, &a));
    collect(run, "ppo probs", "ppo_probs", ppo_probs, n, false);
    collect(run, "ppo loss", "ppo_loss", ppo_loss, rows, false);
    collect(run, "ppo ratio", "ppo_ratio", ratio, rows, false);
    collect(run, "ppo mask", "ppo_mask", mask, rows, true);
    float *ppo_logits2 = input(run, "ppo_logits"), *ppo_loss2 = output(run, rows);
    a.in[0] = ppo_logits2, a.out[0] = ppo_logits2, a.out[1] = ppo_loss2;
    OK(strix_rl_rows(be, STRIX_RL_PPO_LOSS, &a));
    collect(run, "ppo probs (in place)", "ppo_probs", ppo_logits2, n, false);
    collect(run, "ppo loss (in place)", "ppo_loss", ppo_loss2, rows, false);
    a = (strix_rl_args){.in = {ppo_probs, actions, ratio, mask, adv}, .out = {ppo_grad},
                        .rows = rows, .cols = cols, .scale = scalar(run, "ppo_scale")};
    OK(strix_rl_rows(be, STRIX_RL_PPO_GRAD, &a));
    collect(run, "ppo grad", "ppo_grad", ppo_grad, n, false);

    float *select = input(run, "select"), *evalq = input(run, "evalq");
    float *rewards = input(run, "rewards"), *done = input(run, "done");
    float *target = output(run, rows), *plain = output(run, rows);
    a = (strix_rl_args){.in = {select, evalq, rewards, done}, .out = {target}, .rows = rows,
                        .cols = cols, .gamma = scalar(run, "gamma")};
    OK(strix_rl_rows(be, STRIX_RL_DQN_TARGET, &a));
    collect(run, "double dqn target", "target_double", target, rows, false);
    a.in[0] = evalq;
    a.out[0] = plain;
    OK(strix_rl_rows(be, STRIX_RL_DQN_TARGET, &a));
    collect(run, "dqn target", "target_plain", plain, rows, false);

    float *src = input(run, "src"), *dst = input(run, "dst"), *blend = output(run, n);
    a = (strix_rl_args){.in = {src, dst}, .out = {blend}, .rows = rows, .cols = cols,
                        .tau = scalar(run, "tau")};
    OK(strix_rl_rows(be, STRIX_RL_POLYAK_BLEND, &a));
    collect(run, "polyak", "polyak", blend, n, false);
    a.rows = n, a.cols = 1, a.out[0] = dst; /* in place, another split of the elements */
    OK(strix_rl_rows(be, STRIX_RL_POLYAK_BLEND, &a));
    collect(run, "polyak (in place)", "polyak", dst, n, false);
}

/* Rotate-half RoPE: forward and inverse against the Hugging Face formula; rows in a wider buffer
 * rotated in place with the gap columns untouched. */
static void run_rope_rotate_half(op_run *run) {
    const tl_array *x = need(run, "x");
    size_t rows = (size_t)x->shape[0], head_dim = (size_t)x->shape[1], n = x->count;
    size_t seq_len = (size_t)scalar(run, "seq_len"), pos0 = (size_t)scalar(run, "pos0");
    float *in = input(run, "x"), *cos_t = input(run, "cos"), *sin_t = input(run, "sin");
    float *out = output(run, n), *inv = output(run, n);
    OK(strix_rope_rotate_half(run->be, in, head_dim, cos_t, sin_t, out, head_dim, rows, seq_len,
                              pos0, head_dim, false));
    collect(run, "out", "out", out, n, false);
    OK(strix_rope_rotate_half(run->be, in, head_dim, cos_t, sin_t, inv, head_dim, rows, seq_len,
                              pos0, head_dim, true));
    collect(run, "inverse", "inv", inv, n, false);
    OK(strix_rope_rotate_half(run->be, out, head_dim, cos_t, sin_t, out, head_dim, rows, seq_len,
                              pos0, head_dim, true));
    collect(run, "inverse of out (in place) = x", "x", out, n, false);
    size_t ld = head_dim + 3;
    float *host = tl_malloc_floats(rows * ld);
    for (size_t r = 0; r < rows; r++) {
        memcpy(host + r * ld, x->data + r * head_dim, head_dim * sizeof(float));
        for (size_t j = head_dim; j < ld; j++) host[r * ld + j] = -7.0f;
    }
    float *wide = keep(run, tl_upload(run->be, host, rows * ld * sizeof(float)));
    OK(strix_rope_rotate_half(run->be, wide, ld, cos_t, sin_t, wide, ld, rows, seq_len, pos0,
                              head_dim, false));
    tl_download(run->be, host, wide, rows * ld * sizeof(float));
    float *packed_host = tl_malloc_floats(n);
    for (size_t r = 0; r < rows; r++) {
        memcpy(packed_host + r * head_dim, host + r * ld, head_dim * sizeof(float));
        for (size_t j = head_dim; j < ld; j++) assert_true(host[r * ld + j] == -7.0f);
    }
    float *packed = keep(run, tl_upload(run->be, packed_host, n * sizeof(float)));
    collect(run, "out (strided, in place)", "out", packed, n, false);
    free(host);
    free(packed_host);
}

/* atol/rtol 1e-5/1e-4: every output is O(1..10) and a handful of roundings (float sums of at most
 * 23 terms); data movement, masks and the row-by-row accumulation are compared bit for bit. */
const op_case ops_extra_cases[] = {
    {"accumulate_rows", run_accumulate_rows, 0.0, 0.0},
    {"copy_2d", run_copy_2d, 0.0, 0.0},
    {"bce_with_logits", run_bce_with_logits, ATOL, RTOL},
    {"rms_norm", run_rms_norm, ATOL, RTOL},
    {"attention_mask_fill", run_attention_mask_fill, 0.0, 0.0},
    {"tanh_gaussian", run_tanh_gaussian, ATOL, RTOL},
    {"rl_rows", run_rl_rows, ATOL, RTOL},
    {"rope_rotate_half", run_rope_rotate_half, ATOL, RTOL},
};
const size_t ops_extra_case_count = sizeof ops_extra_cases / sizeof ops_extra_cases[0];

// ---- helpers of the extra tests ----------------------------------------------------------------

/* Central-difference check: |fd − an| <= 1e-2·max(|fd|, |an|) + atol, printing the first miss. */
static bool fd_close(const char *label, size_t i, double fd, double an, double atol) {
    double bound = 1e-2 * fmax(fabs(fd), fabs(an)) + atol;
    if (fabs(fd - an) <= bound) return true;
    fprintf(stderr, "  %s[%zu]: finite difference %.7g vs backward %.7g\n", label, i, fd, an);
    return false;
}

static double weighted_sum(const float *x, const float *w, size_t n) {
    double total = 0.0;
    for (size_t i = 0; i < n; i++) total += (double)x[i] * (double)w[i];
    return total;
}

// ---- exact edge cases --------------------------------------------------------------------------

/* docs/SEMANTICS.md, edge cases: BCE at ±inf is the limit (finite when the target agrees with the sign), never
 * NaN; ±1000 is finite and exact. */
static void test_bce_infinities(void **state) {
    (void)state;
    const float inf = INFINITY;
    const float x[] = {inf, inf, -inf, -inf, 1000.0f, -1000.0f, 1000.0f, -1000.0f, inf, -inf, NAN};
    const float y[] = {1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 0.5f, 0.25f, 1.0f};
    const float want[] = {0.0f, inf, 0.0f, inf, 0.0f, 0.0f, 1000.0f, 1000.0f, inf, inf, NAN};
    const float want_grad[] = {0.0f, 2.0f, 0.0f, -2.0f, 0.0f, 0.0f, 2.0f, -2.0f, 1.0f, -0.5f, NAN};
    const size_t n = sizeof x / sizeof x[0];
    FOR_EACH_BACKEND(be) {
        float *dx = up(be, x, n), *dy = up(be, y, n), *out = up(be, x, n);
        float got[sizeof x / sizeof x[0]];
        OK(strix_bce_with_logits(be, dx, dy, out, n));
        down(be, got, out, n);
        assert_true(tl_check_bits("bce at ±inf and ±1000", got, want, n - 1));
        assert_true(isnan(got[n - 1]));
        OK(strix_bce_with_logits_grad(be, dx, dy, dx, n, 2.0f)); /* in place */
        down(be, got, dx, n);
        assert_true(tl_check_bits("bce grad at ±inf and ±1000", got, want_grad, n - 1));
        assert_true(isnan(got[n - 1]));
        strix_free(be, dx), strix_free(be, dy), strix_free(be, out);
    }
}

/* accumulate_rows adds each row straight into out: ((out + r0) + r1) + ..., not column_sums'
 * out + (r0 + r1 + ...). With out = 2^24 and rows of 1 every single add is lost (ties to even). */
static void test_accumulate_rows_order(void **state) {
    (void)state;
    enum { ROWS = 4, COLS = 3 };
    const float start[COLS] = {16777216.0f, 1.0f, -2.5f};
    float in[ROWS * COLS];
    for (int i = 0; i < ROWS; i++) {
        in[i * COLS] = 1.0f;
        in[i * COLS + 1] = 0.1f * (float)(i + 1);
        in[i * COLS + 2] = -0.3f;
    }
    float want[COLS];
    for (int j = 0; j < COLS; j++) {
        want[j] = start[j];
        for (int i = 0; i < ROWS; i++) want[j] += in[i * COLS + j];
    }
    assert_true(want[0] == 16777216.0f); /* each +1 rounds away */
    FOR_EACH_BACKEND(be) {
        float *din = up(be, in, ROWS * COLS), *out = up(be, start, COLS);
        float *sums = up(be, start, COLS);
        float got[COLS], got_sums[COLS];
        OK(strix_accumulate_rows(be, din, out, ROWS, COLS));
        down(be, got, out, COLS);
        assert_true(tl_check_bits("accumulate_rows order", got, want, COLS));
        OK(strix_column_sums(be, din, sums, ROWS, COLS, 1.0f));
        down(be, got_sums, sums, COLS);
        assert_true(got_sums[0] == 16777220.0f); /* 2^24 + 4: a different association */
        OK(strix_accumulate_rows(be, din, out, 0, COLS)); /* no rows: out unchanged */
        down(be, got_sums, out, COLS);
        assert_true(tl_check_bits("accumulate_rows, 0 rows", got_sums, want, COLS));
        strix_free(be, din), strix_free(be, out), strix_free(be, sums);
    }
}

static void test_copy_2d_edges(void **state) {
    (void)state;
    float src[24], dst[24], want[24];
    for (int i = 0; i < 24; i++) src[i] = (float)i + 0.5f, dst[i] = -1.0f;
    FOR_EACH_BACKEND(be) {
        float *ds = up(be, src, 24), *dd = up(be, dst, 24);
        float got[24];
        OK(strix_copy_2d(be, dd, 4, ds, 4, 0, 4)); /* nothing to copy */
        OK(strix_copy_2d(be, dd, 4, ds, 4, 3, 0));
        down(be, got, dd, 24);
        assert_true(tl_check_bits("copy_2d empty", got, dst, 24));
        OK(strix_copy_2d(be, dd, 6, ds, 6, 4, 6)); /* contiguous */
        down(be, got, dd, 24);
        assert_true(tl_check_bits("copy_2d contiguous", got, src, 24));
        /* a column block of (4, 6) into the left of a (6, 4) buffer: one time step of (N, L, D) */
        for (int i = 0; i < 24; i++) want[i] = -1.0f;
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 2; c++) want[r * 4 + c] = src[r * 6 + 3 + c];
        float *dd2 = up(be, dst, 24);
        OK(strix_copy_2d(be, dd2, 4, ds + 3, 6, 4, 2));
        down(be, got, dd2, 24);
        assert_true(tl_check_bits("copy_2d strided", got, want, 24));
        strix_free(be, ds), strix_free(be, dd), strix_free(be, dd2);
    }
}

/* Mask rules on (1, 1, 4, 6), q_off 2: causal hides j > i + 2; window 2 keeps j in
 * {i + 1, i + 2}; keep hides column 4 everywhere; value lands only where masked. */
static void test_attention_mask_rules(void **state) {
    (void)state;
    enum { LQ = 4, LK = 6 };
    float scores[LQ * LK], keep[LK] = {1, 1, 1, 1, 0, 1};
    for (int i = 0; i < LQ * LK; i++) scores[i] = (float)i;
    FOR_EACH_BACKEND(be) {
        float *dk = up(be, keep, LK);
        float got[LQ * LK], want[LQ * LK];
        for (int mode = 0; mode < 4; mode++) {
            bool causal = mode != 3, use_keep = mode >= 2;
            size_t window = mode == 1 || mode == 2 ? 2 : 0;
            for (int i = 0; i < LQ; i++) {
                for (int j = 0; j < LK; j++) {
                    bool hide = causal && (j > i + 2 || (window && j + 2 <= i + 2));
                    if (use_keep && j == 4) hide = true;
                    want[i * LK + j] = hide ? -7.0f : scores[i * LK + j];
                }
            }
            float *ds = up(be, scores, LQ * LK);
            OK(strix_attention_mask_fill(be, ds, use_keep ? dk : NULL, 1, 1, LQ, LK, causal, 2,
                                         window, -7.0f));
            down(be, got, ds, LQ * LK);
            assert_true(tl_check_bits("mask rules", got, want, LQ * LK));
            strix_free(be, ds);
        }
        float *ds = up(be, scores, LQ * LK); /* nothing to do: untouched */
        OK(strix_attention_mask_fill(be, ds, NULL, 1, 1, LQ, LK, false, 0, 0, -INFINITY));
        down(be, got, ds, LQ * LK);
        assert_true(tl_check_bits("mask, nothing masked", got, scores, LQ * LK));
        strix_free(be, ds), strix_free(be, dk);
    }
}

/* PPO mask at the clip bounds: ratio == upper (A > 0) and ratio == lower (A < 0) still pass the
 * gradient (mask 1, the comparisons are strict); one ulp beyond, the mask is 0 and the loss is the
 * constant clipped term. The unclipped side (A > 0 below lower, A < 0 above upper) keeps mask 1. */
static void test_ppo_clip_bounds(void **state) {
    (void)state;
    enum { ROWS = 4, COLS = 3 };
    const float logits[ROWS * COLS] = {0.3f, -1.0f, 2.0f, 1.0f, 0.0f, -0.5f,
                                       0.2f, 0.2f, 0.9f, -1.0f, 1.5f, 0.1f};
    const float actions[ROWS] = {2, 0, 1, 1};
    const float adv_pos[ROWS] = {1.5f, 1.5f, 1.5f, 1.5f}, adv_neg[ROWS] = {-2.f, -2.f, -2.f, -2.f};
    const float old_zero[ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};
    FOR_EACH_BACKEND(be) {
        float *dl = up(be, logits, ROWS * COLS), *da = up(be, actions, ROWS);
        float *dold = up(be, old_zero, ROWS), *dpos = up(be, adv_pos, ROWS);
        float *dneg = up(be, adv_neg, ROWS);
        float *probs = up(be, logits, ROWS * COLS), *loss = up(be, old_zero, ROWS);
        float *ratio = up(be, old_zero, ROWS), *mask = up(be, old_zero, ROWS);
        strix_rl_args a = {.in = {dl, da, dold, dpos}, .out = {probs, loss, ratio, mask},
                           .rows = ROWS, .cols = COLS, .lower = 0.0f, .upper = 10.0f};
        OK(strix_rl_rows(be, STRIX_RL_PPO_LOSS, &a)); /* old = 0: ratio = π(a) */
        float r[ROWS], got_mask[ROWS], got_loss[ROWS];
        down(be, r, ratio, ROWS);
        for (int i = 0; i < ROWS; i++) {
            float bound[2] = {r[i], nextafterf(r[i], 0.0f)}; /* at the bound, one ulp below */
            for (int k = 0; k < 2; k++) {
                a.in[3] = dpos, a.upper = bound[k], a.lower = 0.0f; /* A > 0 against upper */
                OK(strix_rl_rows(be, STRIX_RL_PPO_LOSS, &a));
                down(be, got_mask, mask, ROWS);
                down(be, got_loss, loss, ROWS);
                assert_true(got_mask[i] == (k == 0 ? 1.0f : 0.0f));
                assert_true(got_loss[i] == -(k == 0 ? r[i] * 1.5f : bound[1] * 1.5f));
                float low[2] = {r[i], nextafterf(r[i], 1.0f)}; /* at the bound, one ulp above */
                a.in[3] = dneg, a.lower = low[k], a.upper = 10.0f; /* A < 0 against lower */
                OK(strix_rl_rows(be, STRIX_RL_PPO_LOSS, &a));
                down(be, got_mask, mask, ROWS);
                down(be, got_loss, loss, ROWS);
                assert_true(got_mask[i] == (k == 0 ? 1.0f : 0.0f));
                assert_true(got_loss[i] == -(k == 0 ? r[i] * -2.0f : low[1] * -2.0f));
            }
            /* unclipped side: A > 0 with ratio < lower, A < 0 with ratio > upper: mask 1 */
            a.in[3] = dpos, a.lower = 2.0f, a.upper = 3.0f;
            OK(strix_rl_rows(be, STRIX_RL_PPO_LOSS, &a));
            down(be, got_mask, mask, ROWS);
            down(be, got_loss, loss, ROWS);
            assert_true(got_mask[i] == 1.0f && got_loss[i] == -(r[i] * 1.5f));
            a.in[3] = dneg, a.lower = 0.0f, a.upper = 1e-3f;
            OK(strix_rl_rows(be, STRIX_RL_PPO_LOSS, &a));
            down(be, got_mask, mask, ROWS);
            down(be, got_loss, loss, ROWS);
            assert_true(got_mask[i] == 1.0f && got_loss[i] == -(r[i] * -2.0f));
        }
        /* a zero mask zeroes the gradient row */
        float *grad = up(be, logits, ROWS * COLS), got[ROWS * COLS];
        const float zeros[ROWS] = {0};
        float *dzero = up(be, zeros, ROWS);
        strix_rl_args g = {.in = {probs, da, ratio, dzero, dpos}, .out = {grad}, .rows = ROWS,
                           .cols = COLS, .scale = 0.25f};
        OK(strix_rl_rows(be, STRIX_RL_PPO_GRAD, &g));
        down(be, got, grad, ROWS * COLS);
        for (int i = 0; i < ROWS * COLS; i++) assert_true(got[i] == 0.0f);
        strix_free(be, dl), strix_free(be, da), strix_free(be, dold), strix_free(be, dpos);
        strix_free(be, dneg), strix_free(be, probs), strix_free(be, loss), strix_free(be, ratio);
        strix_free(be, mask), strix_free(be, grad), strix_free(be, dzero);
    }
}

/* DQN target: ties go to the lowest index, NaN never wins; DQN_GRAD writes whole rows. */
static void test_dqn_target_ties(void **state) {
    (void)state;
    enum { ROWS = 4, COLS = 4 };
    const float select[ROWS * COLS] = {2.0f, 5.0f, 5.0f, 1.0f, /* tie: 1 */
                                       3.0f, 3.0f, 3.0f, 3.0f, /* all tied: 0 */
                                       1.0f, NAN, 3.0f, 3.0f,  /* NaN skipped, tie: 2 */
                                       -1.0f, -2.0f, -0.5f, -3.0f};
    const size_t best[ROWS] = {1, 0, 2, 2};
    const float evalq[ROWS * COLS] = {10, 11, 12, 13, 20, 21, 22, 23,
                                      30, 31, 32, 33, 40, 41, 42, 43};
    const float rewards[ROWS] = {1.0f, -1.0f, 0.5f, 0.0f}, done[ROWS] = {0, 1, 0, 0};
    const float gamma = 0.9f;
    float want[ROWS];
    for (int r = 0; r < ROWS; r++)
        want[r] = rewards[r] + (gamma * (1.0f - done[r])) * evalq[r * COLS + best[r]];
    FOR_EACH_BACKEND(be) {
        float *ds = up(be, select, ROWS * COLS), *de = up(be, evalq, ROWS * COLS);
        float *dr = up(be, rewards, ROWS), *dd = up(be, done, ROWS), *out = up(be, done, ROWS);
        float got[ROWS * COLS];
        strix_rl_args a = {.in = {ds, de, dr, dd}, .out = {out}, .rows = ROWS, .cols = COLS,
                           .gamma = gamma};
        OK(strix_rl_rows(be, STRIX_RL_DQN_TARGET, &a));
        down(be, got, out, ROWS);
        assert_true(tl_check_bits("dqn target ties", got, want, ROWS));
        /* DQN_GRAD: scale·(Q[a] − target) at a, exact zeros elsewhere, over a NaN-filled row */
        const float actions[ROWS] = {3, 0, 1, 2}, targets[ROWS] = {1, 2, 3, 4};
        float *da = up(be, actions, ROWS), *dt = up(be, targets, ROWS);
        float *grad = up(be, select, ROWS * COLS);
        a = (strix_rl_args){.in = {de, da, dt}, .out = {grad}, .rows = ROWS, .cols = COLS,
                            .scale = 0.5f};
        OK(strix_rl_rows(be, STRIX_RL_DQN_GRAD, &a));
        down(be, got, grad, ROWS * COLS);
        for (int r = 0; r < ROWS; r++) {
            for (int j = 0; j < COLS; j++) {
                float w = j == (int)actions[r] ? 0.5f * (evalq[r * COLS + j] - targets[r]) : 0.0f;
                assert_true(memcmp(&got[r * COLS + j], &w, sizeof w) == 0);
            }
        }
        strix_free(be, ds), strix_free(be, de), strix_free(be, dr), strix_free(be, dd);
        strix_free(be, out), strix_free(be, da), strix_free(be, dt), strix_free(be, grad);
    }
}

/* Invalid actions (out of range, fractional, NaN) and unknown ops are STRIX_ERR_ARG, and nothing
 * is written; PG on a row whose logits are all -inf gives probs 0 (no NaN). */
static void test_rl_errors_and_masked_rows(void **state) {
    (void)state;
    const float q[6] = {1, 2, 3, 4, 5, 6}, targets[2] = {0, 0};
    const float bad[][2] = {{0.0f, 3.0f}, {-1.0f, 0.0f}, {0.0f, 1.5f}, {NAN, 0.0f}};
    FOR_EACH_BACKEND(be) {
        float *dq = up(be, q, 6), *dt = up(be, targets, 2), *out = up(be, q, 6);
        float got[6];
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            float *da = up(be, bad[b], 2);
            strix_rl_args a = {.in = {dq, da, dt}, .out = {out}, .rows = 2, .cols = 3,
                               .scale = 1.0f};
            assert_int_equal(strix_rl_rows(be, STRIX_RL_DQN_GRAD, &a), STRIX_ERR_ARG);
            assert_non_null(strstr(strix_last_error(), "action"));
            down(be, got, out, 6);
            assert_true(tl_check_bits("untouched after a bad action", got, q, 6));
            strix_free(be, da);
        }
        strix_rl_args a = {.in = {dq, dq, dt}, .out = {out}, .rows = 2, .cols = 3};
        assert_int_equal(strix_rl_rows(be, (strix_rl_op)99, &a), STRIX_ERR_ARG);
        a.rows = 0; /* nothing to do */
        OK(strix_rl_rows(be, STRIX_RL_DQN_LOSS, &a));
        /* PG on an all -inf row: probs 0, logπ = -inf, loss +inf for R > 0, gradient row 0 */
        const float logits[6] = {-INFINITY, -INFINITY, -INFINITY, 0.0f, 1.0f, -INFINITY};
        const float acts[2] = {1, 1}, rets[2] = {2.0f, 1.0f};
        float *dl = up(be, logits, 6), *dacts = up(be, acts, 2), *drets = up(be, rets, 2);
        float *loss = up(be, rets, 2), loss_host[2];
        a = (strix_rl_args){.in = {dl, dacts, drets}, .out = {out, loss}, .rows = 2, .cols = 3,
                            .scale = 1.0f};
        OK(strix_rl_rows(be, STRIX_RL_PG_LOSS, &a));
        down(be, got, out, 6);
        down(be, loss_host, loss, 2);
        for (int j = 0; j < 3; j++) assert_true(got[j] == 0.0f);
        assert_true(got[5] == 0.0f && loss_host[0] == INFINITY && isfinite(loss_host[1]));
        a.in[0] = out;
        OK(strix_rl_rows(be, STRIX_RL_PG_GRAD, &a));
        down(be, got, out, 6);
        assert_true(got[0] == 0.0f && got[1] == -2.0f && got[2] == 0.0f && got[5] == 0.0f);
        strix_free(be, dq), strix_free(be, dt), strix_free(be, out), strix_free(be, dl);
        strix_free(be, dacts), strix_free(be, drets), strix_free(be, loss);
    }
}

// ---- finite differences ------------------------------------------------------------------------

/* RMSNorm: L = Σ out·w; grad_in and gamma's grad (column sums of gamma_terms) vs central
 * differences of L over x and gamma. Also grad_in aliasing grad_out with gamma_terms written. */
static void test_rms_norm_fd(void **state) {
    (void)state;
    enum { ROWS = 3, COLS = 7, N = ROWS * COLS };
    float x[N], gamma[COLS], w[N];
    tl_fill_uniform(x, N, 21, -2.0f, 2.0f);
    tl_fill_uniform(gamma, COLS, 22, 0.5f, 1.5f);
    tl_fill_uniform(w, N, 23, -1.0f, 1.0f);
    const float eps = 1e-5f, h = 1e-2f;
    FOR_EACH_BACKEND(be) {
        float *dx = up(be, x, N), *dg = up(be, gamma, COLS), *dw = up(be, w, N);
        float *out = up(be, x, N), *rms = up(be, x, ROWS), *gin = up(be, x, N);
        float *terms = up(be, x, N), *dgamma = up(be, gamma, COLS), *inplace = up(be, w, N);
        float *terms2 = up(be, x, N);
        float an_x[N], an_g[COLS], got[N], got2[N], y[N];
        OK(strix_rms_norm_forward(be, dx, dg, out, rms, ROWS, COLS, eps));
        OK(strix_rms_norm_backward(be, dw, dg, dx, rms, gin, terms, ROWS, COLS));
        OK(strix_column_sums(be, terms, dgamma, ROWS, COLS, 0.0f));
        down(be, an_x, gin, N);
        down(be, an_g, dgamma, COLS);
        OK(strix_rms_norm_backward(be, inplace, dg, dx, rms, inplace, terms2, ROWS, COLS));
        down(be, got, inplace, N);
        assert_true(tl_check_bits("rms backward in place", got, an_x, N));
        down(be, got, terms, N);
        down(be, got2, terms2, N);
        assert_true(tl_check_bits("rms gamma_terms in place", got2, got, N));
        bool ok = true;
        for (size_t i = 0; i < N + COLS; i++) {
            float *host = i < N ? x : gamma, *dev = i < N ? dx : dg;
            size_t at = i < N ? i : i - N, len = i < N ? N : COLS;
            float keep_v = host[at];
            double L[2];
            for (int s = 0; s < 2; s++) {
                host[at] = keep_v + (s ? -h : h);
                strix_copy(be, dev, host, len * sizeof(float), STRIX_COPY_H2D);
                OK(strix_rms_norm_forward(be, dx, dg, out, rms, ROWS, COLS, eps));
                down(be, y, out, N);
                L[s] = weighted_sum(y, w, N);
            }
            host[at] = keep_v;
            strix_copy(be, dev, host, len * sizeof(float), STRIX_COPY_H2D);
            double fd = (L[0] - L[1]) / (2.0 * (double)h);
            ok = fd_close(i < N ? "rms dx" : "rms dgamma", at, fd, i < N ? an_x[at] : an_g[at],
                          1e-3) && ok;
        }
        assert_true(ok);
        strix_free(be, dx), strix_free(be, dg), strix_free(be, dw), strix_free(be, out);
        strix_free(be, rms), strix_free(be, gin), strix_free(be, terms), strix_free(be, dgamma);
        strix_free(be, inplace), strix_free(be, terms2);
    }
}

/* BCE: grad (scale s) vs central differences of s·Σ bce(x, y). */
static void test_bce_fd(void **state) {
    (void)state;
    enum { N = 12 };
    float x[N], y[N], loss[N], an[N];
    tl_fill_uniform(x, N, 31, -4.0f, 4.0f);
    tl_fill_uniform(y, N, 32, 0.0f, 1.0f);
    const float s = 0.75f, h = 1e-2f;
    FOR_EACH_BACKEND(be) {
        float *dx = up(be, x, N), *dy = up(be, y, N), *out = up(be, x, N);
        OK(strix_bce_with_logits_grad(be, dx, dy, out, N, s));
        down(be, an, out, N);
        bool ok = true;
        for (size_t i = 0; i < N; i++) {
            float xs[2] = {x[i] + h, x[i] - h};
            double L[2];
            for (int k = 0; k < 2; k++) {
                float *d1 = up(be, &xs[k], 1);
                OK(strix_bce_with_logits(be, d1, dy + i, d1, 1));
                down(be, loss, d1, 1);
                L[k] = (double)s * loss[0];
                strix_free(be, d1);
            }
            ok = fd_close("bce grad", i, (L[0] - L[1]) / (2.0 * (double)h), an[i], 1e-4) && ok;
        }
        assert_true(ok);
        strix_free(be, dx), strix_free(be, dy), strix_free(be, out);
    }
}

/* tanh-Gaussian: L = Σ action·ga + Σ log_prob·glp; grad_mean and grad_log_std vs central
 * differences over mean and log_std (eps fixed). */
static void test_tanh_gaussian_fd(void **state) {
    (void)state;
    enum { ROWS = 3, COLS = 4, N = ROWS * COLS };
    float mean[N], log_std[N], eps[N], ga[N], glp[ROWS];
    tl_fill_uniform(mean, N, 41, -0.8f, 0.8f);
    tl_fill_uniform(log_std, N, 42, -1.5f, 0.0f);
    tl_fill_uniform(eps, N, 43, -1.5f, 1.5f);
    tl_fill_uniform(ga, N, 44, -1.0f, 1.0f);
    tl_fill_uniform(glp, ROWS, 45, -1.0f, 1.0f);
    const float stab = 1e-6f, h = 1e-2f;
    FOR_EACH_BACKEND(be) {
        float *dm = up(be, mean, N), *ds = up(be, log_std, N), *de = up(be, eps, N);
        float *dga = up(be, ga, N), *dglp = up(be, glp, ROWS);
        float *act = up(be, mean, N), *std = up(be, mean, N), *lp = up(be, glp, ROWS);
        float *gm = up(be, mean, N), *gs = up(be, mean, N);
        float an_m[N], an_s[N], a_host[N], lp_host[ROWS];
        OK(strix_tanh_gaussian_forward(be, dm, ds, de, act, std, lp, ROWS, COLS, stab));
        OK(strix_tanh_gaussian_backward(be, act, std, de, dga, dglp, gm, gs, ROWS, COLS, stab));
        down(be, an_m, gm, N);
        down(be, an_s, gs, N);
        bool ok = true;
        for (size_t i = 0; i < 2 * N; i++) {
            float *host = i < N ? mean : log_std, *dev = i < N ? dm : ds;
            size_t at = i % N;
            float keep_v = host[at];
            double L[2];
            for (int k = 0; k < 2; k++) {
                host[at] = keep_v + (k ? -h : h);
                strix_copy(be, dev, host, N * sizeof(float), STRIX_COPY_H2D);
                OK(strix_tanh_gaussian_forward(be, dm, ds, de, act, std, lp, ROWS, COLS, stab));
                down(be, a_host, act, N);
                down(be, lp_host, lp, ROWS);
                L[k] = weighted_sum(a_host, ga, N) + weighted_sum(lp_host, glp, ROWS);
            }
            host[at] = keep_v;
            strix_copy(be, dev, host, N * sizeof(float), STRIX_COPY_H2D);
            double fd = (L[0] - L[1]) / (2.0 * (double)h);
            ok = fd_close(i < N ? "grad_mean" : "grad_log_std", at, fd,
                          i < N ? an_m[at] : an_s[at], 1e-3) && ok;
        }
        assert_true(ok);
        strix_free(be, dm), strix_free(be, ds), strix_free(be, de), strix_free(be, dga);
        strix_free(be, dglp), strix_free(be, act), strix_free(be, std), strix_free(be, lp);
        strix_free(be, gm), strix_free(be, gs);
    }
}

/* Per-row loss of op at host Q/logits `x` (the other slots from `base`), summed in double. */
static double rl_loss_sum(strix_backend *be, strix_rl_op op, const strix_rl_args *base,
                          float *dev_x, const float *x, float *scratch_n, float *scratch_rows[3]) {
    size_t rows = base->rows, n = rows * base->cols;
    strix_copy(be, dev_x, x, n * sizeof(float), STRIX_COPY_H2D);
    strix_rl_args a = *base;
    a.in[0] = dev_x;
    if (op == STRIX_RL_DQN_LOSS) {
        a.out[0] = scratch_rows[0];
    } else {
        a.out[0] = scratch_n, a.out[1] = scratch_rows[0];
        a.out[2] = scratch_rows[1], a.out[3] = scratch_rows[2];
    }
    OK(strix_rl_rows(be, op, &a));
    float loss[16];
    down(be, loss, op == STRIX_RL_DQN_LOSS ? a.out[0] : a.out[1], rows);
    double total = 0.0;
    for (size_t r = 0; r < rows; r++) total += loss[r];
    return total;
}

/* DQN, PG and PPO gradients vs central differences of their summed losses over Q/logits:
 * DQN_GRAD (scale s) is (s/2)·d(Σ loss); PG_GRAD and PPO_GRAD are s·d(Σ loss). The PPO rows are
 * kept away from the clip kinks (the finite step must not cross them). */
static void test_rl_grads_fd(void **state) {
    (void)state;
    enum { ROWS = 6, COLS = 4, N = ROWS * COLS };
    float x[N], targets[ROWS], returns[ROWS], old[ROWS], adv[ROWS];
    const float actions[ROWS] = {0, 3, 1, 2, 2, 0};
    tl_fill_uniform(x, N, 51, -2.0f, 2.0f);
    tl_fill_uniform(targets, ROWS, 52, -1.0f, 1.0f);
    tl_fill_uniform(returns, ROWS, 53, -2.0f, 2.0f);
    tl_fill_uniform(adv, ROWS, 54, -1.5f, 1.5f);
    const float s = 1.0f / ROWS, h = 1e-2f, lower = 0.8f, upper = 1.2f;
    FOR_EACH_BACKEND(be) {
        float *dx = up(be, x, N), *da = up(be, actions, ROWS), *dt = up(be, targets, ROWS);
        float *dr = up(be, returns, ROWS), *dadv = up(be, adv, ROWS);
        float *scratch = up(be, x, N), *rows_buf[3], *grad = up(be, x, N);
        for (int k = 0; k < 3; k++) rows_buf[k] = up(be, targets, ROWS);
        /* old log-probs that put ratios at 1.5, 0.5, 1.0, 1.3, 0.6, 0.95: both clip sides */
        const float want_ratio[ROWS] = {1.5f, 0.5f, 1.0f, 1.3f, 0.6f, 0.95f};
        float probs[N];
        strix_rl_args pg = {.in = {dx, da, dr}, .out = {scratch, rows_buf[0]}, .rows = ROWS,
                            .cols = COLS, .scale = s};
        OK(strix_rl_rows(be, STRIX_RL_PG_LOSS, &pg));
        down(be, probs, scratch, N);
        for (int r = 0; r < ROWS; r++)
            old[r] = logf(probs[r * COLS + (int)actions[r]]) - logf(want_ratio[r]);
        float *dold = up(be, old, ROWS);
        const struct {
            strix_rl_op loss, grad;
            strix_rl_args args;
            double factor;
            const char *label;
        } cases[] = {
            {STRIX_RL_DQN_LOSS, STRIX_RL_DQN_GRAD,
             {.in = {dx, da, dt}, .rows = ROWS, .cols = COLS, .scale = s}, 0.5 * s, "dqn"},
            {STRIX_RL_PG_LOSS, STRIX_RL_PG_GRAD,
             {.in = {dx, da, dr}, .rows = ROWS, .cols = COLS, .scale = s}, s, "pg"},
            {STRIX_RL_PPO_LOSS, STRIX_RL_PPO_GRAD,
             {.in = {dx, da, dold, dadv}, .rows = ROWS, .cols = COLS, .scale = s,
              .lower = lower, .upper = upper}, s, "ppo"},
        };
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            strix_rl_args a = cases[c].args;
            /* the gradient at x: loss pass first where the grad reads its outputs */
            strix_copy(be, dx, x, N * sizeof(float), STRIX_COPY_H2D);
            if (cases[c].grad == STRIX_RL_DQN_GRAD) {
                a.out[0] = grad;
            } else {
                strix_rl_args l = a;
                l.out[0] = scratch, l.out[1] = rows_buf[0];
                l.out[2] = rows_buf[1], l.out[3] = rows_buf[2];
                OK(strix_rl_rows(be, cases[c].loss, &l));
                a.in[0] = scratch, a.out[0] = grad;
                if (cases[c].grad == STRIX_RL_PPO_GRAD) {
                    a.in[2] = rows_buf[1], a.in[3] = rows_buf[2], a.in[4] = dadv;
                } else {
                    a.in[2] = dr;
                }
            }
            OK(strix_rl_rows(be, cases[c].grad, &a));
            float an[N];
            down(be, an, grad, N);
            bool ok = true;
            for (size_t i = 0; i < N; i++) {
                float keep_v = x[i];
                x[i] = keep_v + h;
                double up_l = rl_loss_sum(be, cases[c].loss, &cases[c].args, dx, x, scratch,
                                          rows_buf);
                x[i] = keep_v - h;
                double down_l = rl_loss_sum(be, cases[c].loss, &cases[c].args, dx, x, scratch,
                                            rows_buf);
                x[i] = keep_v;
                double fd = cases[c].factor * (up_l - down_l) / (2.0 * (double)h);
                ok = fd_close(cases[c].label, i, fd, an[i], 1e-4) && ok;
            }
            assert_true(ok);
        }
        strix_copy(be, dx, x, N * sizeof(float), STRIX_COPY_H2D);
        strix_free(be, dx), strix_free(be, da), strix_free(be, dt), strix_free(be, dr);
        strix_free(be, dadv), strix_free(be, scratch), strix_free(be, grad), strix_free(be, dold);
        for (int k = 0; k < 3; k++) strix_free(be, rows_buf[k]);
    }
}

/* A STRIX_ASSERT hook that jumps back into the test (cmocka's own hook is not installed). */
/* Rotate-half RoPE: L = Σ w·rope(x); its backward, the inverse rotation of w, vs central
 * differences of L over x. */
static void test_rope_rotate_half_fd(void **state) {
    (void)state;
    enum { ROWS = 6, SEQ = 3, D = 8, POS0 = 1, MAXPOS = 5, N = ROWS * D };
    float x[N], w[N], cos_t[MAXPOS * D / 2], sin_t[MAXPOS * D / 2], y[N], an[N];
    tl_fill_uniform(x, N, 41, -2.0f, 2.0f);
    tl_fill_uniform(w, N, 42, -1.0f, 1.0f);
    for (int p = 0; p < MAXPOS; p++)
        for (int i = 0; i < D / 2; i++) {
            double angle = p * pow(10000.0, -2.0 * i / D);
            cos_t[p * D / 2 + i] = (float)cos(angle), sin_t[p * D / 2 + i] = (float)sin(angle);
        }
    const float h = 1e-2f;
    FOR_EACH_BACKEND(be) {
        float *dx = up(be, x, N), *dw = up(be, w, N), *out = up(be, x, N);
        float *dc = up(be, cos_t, MAXPOS * D / 2), *ds = up(be, sin_t, MAXPOS * D / 2);
        OK(strix_rope_rotate_half(be, dw, D, dc, ds, out, D, ROWS, SEQ, POS0, D, true));
        down(be, an, out, N);
        bool ok = true;
        for (size_t i = 0; i < N; i++) {
            float keep_v = x[i];
            double L[2];
            for (int s = 0; s < 2; s++) {
                x[i] = keep_v + (s ? -h : h);
                strix_copy(be, dx, x, N * sizeof(float), STRIX_COPY_H2D);
                OK(strix_rope_rotate_half(be, dx, D, dc, ds, out, D, ROWS, SEQ, POS0, D, false));
                down(be, y, out, N);
                L[s] = weighted_sum(y, w, N);
            }
            x[i] = keep_v;
            ok = fd_close("rope_rotate_half dx", i, (L[0] - L[1]) / (2.0 * (double)h), an[i],
                          1e-4) && ok;
        }
        assert_true(ok);
        strix_free(be, dx), strix_free(be, dw), strix_free(be, out), strix_free(be, dc);
        strix_free(be, ds);
    }
}

/* The contract of the generated entry point (src/core/primitives.def): an odd head_dim or a row
 * stride below it fails a STRIX_ASSERT naming the primitive, before any backend runs. */
static void test_rope_rotate_half_contract(void **state) {
    (void)state;
    float x[8] = {0}, table[4] = {0};
    strix_backend *be = tl_backend_open("cpu");
    assert_non_null(be);
    assert_contract_broken(strix_rope_rotate_half(be, x, 8, table, table, x, 8, 1, 1, 0, 7, false),
                           "rope_rotate_half");
    assert_contract_broken(strix_rope_rotate_half(be, x, 4, table, table, x, 8, 1, 1, 0, 8, false),
                           "rope_rotate_half");
    OK(strix_rope_rotate_half(be, x, 8, table, table, x, 8, 1, 1, 0, 8, false));
    strix_backend_free(be);
}

const struct CMUnitTest ops_extra_tests[] = {
    cmocka_unit_test(test_bce_infinities),
    cmocka_unit_test(test_accumulate_rows_order),
    cmocka_unit_test(test_copy_2d_edges),
    cmocka_unit_test(test_attention_mask_rules),
    cmocka_unit_test(test_ppo_clip_bounds),
    cmocka_unit_test(test_dqn_target_ties),
    cmocka_unit_test(test_rl_errors_and_masked_rows),
    cmocka_unit_test(test_rms_norm_fd),
    cmocka_unit_test(test_bce_fd),
    cmocka_unit_test(test_tanh_gaussian_fd),
    cmocka_unit_test(test_rl_grads_fd),
    cmocka_unit_test(test_rope_rotate_half_fd),
    cmocka_unit_test(test_rope_rotate_half_contract),
};
const size_t ops_extra_test_count = sizeof ops_extra_tests / sizeof ops_extra_tests[0];
