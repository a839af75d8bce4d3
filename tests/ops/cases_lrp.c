/*
 * cases_lrp.c - op-test cases of the LRP and fuzzy-logic primitives (include/strix/ops/lrp.h,
 * include/strix/ops/logic.h; harness: tests/ops/op_harness.h). Goldens: tools/ref/ops_lrp_ref.py
 * (float64 transcriptions of each rule, checked there against torch.autograd where an autograd
 * form exists).
 *
 * The extra tests check the exact edge cases (stab at z = 0 and −0, gates with zero gate
 * values, Gödel ties, the Łukasiewicz clamp on both sides and on its boundary, the implications
 * at a == b, a −inf softmax score), conservation where a rule conserves, every backward by
 * central differences, lrp_conv folded back against the autograd golden, and that the one-output
 * kernel functions (kernels/lrp.h, what a GPU lane runs) give the CPU's bits.
 */
#include "ops/op_harness.h"
#include "kernels/lrp.h"

#define LRP_GOLDEN(name) "tests/golden/ops/" name ".bin"

static size_t dim(op_run *run, const char *name, int axis) {
    return (size_t)need(run, name)->shape[axis];
}

// ---- runners (one per golden file) -------------------------------------------------------------

static void run_lrp_linear(op_run *run) {
    size_t rows = dim(run, "x", 0), fin = dim(run, "x", 1), fout = dim(run, "w", 0);
    float *r_in = output(run, rows * fin);
    OK(strix_lrp_linear(run->be, input(run, "x"), input(run, "w"), input(run, "z"),
                        input(run, "r"), r_in, rows, fin, fout, scalar(run, "eps")));
    collect(run, "r_in", "r_in", r_in, rows * fin, false);
}

static void run_lrp_conv(op_run *run) {
    size_t n = dim(run, "col", 0), p = dim(run, "col", 1), q = dim(run, "col", 2);
    size_t oc = dim(run, "kernel", 0);
    float *r_col = output(run, n * p * q);
    OK(strix_lrp_conv(run->be, input(run, "col"), input(run, "kernel"), input(run, "z"),
                      input(run, "r"), r_col, n, oc, p, q, scalar(run, "eps")));
    collect(run, "r_col", "r_col", r_col, n * p * q, false);
}

static strix_conv_geom geom_of(const tl_array *g) {
    return (strix_conv_geom){(size_t)g->data[0], (size_t)g->data[1], (size_t)g->data[2],
                             (size_t)g->data[3], (size_t)g->data[4], (size_t)g->data[5]};
}

static void run_lrp_avg_pool(op_run *run) {
    size_t planes = dim(run, "x", 0), h = dim(run, "x", 1), w = dim(run, "x", 2);
    strix_conv_geom g = geom_of(need(run, "geom"));
    float *r_in = input(run, "base"); /* `+=` onto a nonzero base */
    OK(strix_lrp_avg_pool(run->be, input(run, "x"), input(run, "r"), r_in, planes, h, w, &g,
                          scalar(run, "eps")));
    collect(run, "r_in (+= base)", "r_in", r_in, planes * h * w, false);
}

static void run_lrp_bilinear_matmul(op_run *run) {
    size_t slices = dim(run, "a", 0), m = dim(run, "a", 1), p = dim(run, "a", 2);
    size_t q = dim(run, "b", 2);
    float eps = scalar(run, "eps");
    float *a = input(run, "a"), *o = input(run, "o"), *r_o = input(run, "r_o");
    float *r_a = output(run, slices * m * p), *r_b = output(run, slices * p * q);
    OK(strix_lrp_bilinear_matmul(run->be, a, input(run, "b"), o, r_o, r_a, r_b, slices, m, p, q,
                                 eps, false));
    collect(run, "r_a", "r_a", r_a, slices * m * p, false);
    collect(run, "r_b", "r_b", r_b, slices * p * q, false);
    float *r_a2 = output(run, slices * m * p), *r_bt = output(run, slices * p * q);
    OK(strix_lrp_bilinear_matmul(run->be, a, input(run, "bt"), o, r_o, r_a2, r_bt, slices, m, p,
                                 q, eps, true));
    collect(run, "r_a (b transposed)", "r_a", r_a2, slices * m * p, false);
    collect(run, "r_b (transposed)", "r_bt", r_bt, slices * p * q, false);
}

static void run_lrp_bilinear_elementwise(op_run *run) {
    size_t n = count_of(run, "a");
    float eps = scalar(run, "eps");
    float *a = input(run, "a"), *b = input(run, "b"), *r = input(run, "r");
    float *out = output(run, n);
    OK(strix_lrp_bilinear_elementwise(run->be, a, b, r, out, n, eps));
    collect(run, "r_out", "r_out", out, n, false);
    OK(strix_lrp_bilinear_elementwise(run->be, a, b, r, r, n, eps));
    collect(run, "r_out (aliases r)", "r_out", r, n, false);
}

static void run_lrp_residual_split(op_run *run) {
    size_t n = count_of(run, "a");
    float eps = scalar(run, "eps");
    float *a = input(run, "a"), *b = input(run, "b"), *r = input(run, "r");
    float *r_a = output(run, n), *r_b = output(run, n);
    OK(strix_lrp_residual_split(run->be, a, b, r, r_a, r_b, n, eps));
    collect(run, "r_a", "r_a", r_a, n, false);
    collect(run, "r_b", "r_b", r_b, n, false);
    OK(strix_lrp_residual_split(run->be, a, b, r, a, b, n, eps));
    collect(run, "r_a (aliases a)", "r_a", a, n, false);
    collect(run, "r_b (aliases b)", "r_b", b, n, false);
}

static void run_lrp_softmax_rows(op_run *run) {
    size_t rows = dim(run, "x", 0), cols = dim(run, "x", 1), n = rows * cols;
    float *x = input(run, "x"), *y = input(run, "y"), *r = input(run, "r");
    float *r_in = output(run, n);
    OK(strix_lrp_softmax_rows(run->be, x, y, r, r_in, rows, cols));
    collect(run, "r_in", "r_in", r_in, n, false);
    OK(strix_lrp_softmax_rows(run->be, x, y, r, r, rows, cols));
    collect(run, "r_in (aliases r)", "r_in", r, n, false);
}

static void run_lrp_rope(op_run *run) {
    size_t rows = dim(run, "x", 0), hd = dim(run, "x", 1), n = rows * hd;
    size_t seq_len = (size_t)scalar(run, "seq_len");
    float eps = scalar(run, "eps");
    float *x = input(run, "x"), *y = input(run, "y"), *r = input(run, "r");
    float *c = input(run, "cos"), *s = input(run, "sin"), *r_in = output(run, n);
    OK(strix_lrp_rope(run->be, x, y, r, c, s, r_in, rows, seq_len, hd, eps));
    collect(run, "r_in", "r_in", r_in, n, false);
    OK(strix_lrp_rope(run->be, x, y, r, c, s, r, rows, seq_len, hd, eps));
    collect(run, "r_in (aliases r)", "r_in", r, n, false);
}

static void run_lrp_stabilized_divide(op_run *run) {
    size_t n = count_of(run, "r");
    float eps = scalar(run, "eps");
    float *r = input(run, "r"), *den = input(run, "den"), *gate = input(run, "gate");
    float *out = output(run, n);
    OK(strix_lrp_stabilized_divide(run->be, r, den, NULL, out, n, eps, STRIX_LRP_GATE_NONE));
    collect(run, "none", "out_none", out, n, false);
    float *pos = output(run, n), *neg = output(run, n);
    OK(strix_lrp_stabilized_divide(run->be, r, den, gate, pos, n, eps, STRIX_LRP_GATE_POSITIVE));
    collect(run, "positive", "out_positive", pos, n, false);
    OK(strix_lrp_stabilized_divide(run->be, r, den, gate, neg, n, eps, STRIX_LRP_GATE_NEGATIVE));
    collect(run, "negative", "out_negative", neg, n, false);
    OK(strix_lrp_stabilized_divide(run->be, r, den, gate, r, n, eps, STRIX_LRP_GATE_POSITIVE));
    collect(run, "positive (out aliases r)", "out_positive", r, n, false);
}

/* Golden arrays of each kind (0 conj, 1 disj, 2 impl): y, ga, gb, ra, rb. */
static const char *const logic_names[3][5] = {
    {"y_conj", "ga_conj", "gb_conj", "ra_conj", "rb_conj"},
    {"y_disj", "ga_disj", "gb_disj", "ra_disj", "rb_disj"},
    {"y_impl", "ga_impl", "gb_impl", "ra_impl", "rb_impl"},
};

/* Forward, backward and LRP of one kind against its golden arrays; the implication's LRP gets
 * y = NULL (it reads no y). */
static void run_logic_kind(op_run *run, strix_logic_norm norm, int kind) {
    size_t n = count_of(run, "a");
    float eps = scalar(run, "eps");
    float *a = input(run, "a"), *b = input(run, "b"), *g = input(run, "g"), *r = input(run, "r");
    strix_logic_op base = (strix_logic_op)(3 * kind);
    const char *const *nm = logic_names[kind];
    float *y = output(run, n), *oa = output(run, n), *ob = output(run, n);
    OK(strix_logic_pointwise(run->be, base, norm, a, b, NULL, NULL, y, NULL, n, eps));
    collect(run, nm[0], nm[0], y, n, false);
    OK(strix_logic_pointwise(run->be, (strix_logic_op)(base + 1), norm, a, b, g, NULL, oa, ob, n,
                             eps));
    collect(run, nm[1], nm[1], oa, n, false);
    collect(run, nm[2], nm[2], ob, n, false);
    float *ra = output(run, n), *rb = output(run, n);
    OK(strix_logic_pointwise(run->be, (strix_logic_op)(base + 2), norm, a, b, r,
                             kind == 2 ? NULL : y, ra, rb, n, eps));
    collect(run, nm[3], nm[3], ra, n, false);
    collect(run, nm[4], nm[4], rb, n, false);
}

static void run_logic(op_run *run, strix_logic_norm norm) {
    run_logic_kind(run, norm, 0);
    run_logic_kind(run, norm, 1);
    /* LRP with out_a aliasing a and out_b aliasing b (fresh copies of the inputs) */
    size_t n = count_of(run, "a");
    float eps = scalar(run, "eps");
    float *a2 = input(run, "a"), *b2 = input(run, "b"), *r = input(run, "r");
    float *y = input(run, "y_disj");
    OK(strix_logic_pointwise(run->be, STRIX_LOGIC_DISJ_LRP, norm, a2, b2, r, y, a2, b2, n, eps));
    collect(run, "ra_disj (aliases a)", "ra_disj", a2, n, false);
    collect(run, "rb_disj (aliases b)", "rb_disj", b2, n, false);
}

static void run_logic_impl(op_run *run, strix_logic_norm norm) {
    run_logic_kind(run, norm, 2);
    /* backward with out_a aliasing a and out_b aliasing b (Goguen reads both for each) */
    size_t n = count_of(run, "a");
    float eps = scalar(run, "eps");
    float *a2 = input(run, "a"), *b2 = input(run, "b"), *g = input(run, "g");
    OK(strix_logic_pointwise(run->be, STRIX_LOGIC_IMPL_BACKWARD, norm, a2, b2, g, NULL, a2, b2, n,
                             eps));
    collect(run, "ga_impl (aliases a)", "ga_impl", a2, n, false);
    collect(run, "gb_impl (aliases b)", "gb_impl", b2, n, false);
}

static void run_logic_product(op_run *run) { run_logic(run, STRIX_LOGIC_PRODUCT); }
static void run_logic_lukasiewicz(op_run *run) { run_logic(run, STRIX_LOGIC_LUKASIEWICZ); }
static void run_logic_godel(op_run *run) { run_logic(run, STRIX_LOGIC_GODEL); }
static void run_logic_impl_product(op_run *run) { run_logic_impl(run, STRIX_LOGIC_PRODUCT); }
static void run_logic_impl_lukasiewicz(op_run *run) {
    run_logic_impl(run, STRIX_LOGIC_LUKASIEWICZ);
}
static void run_logic_impl_godel(op_run *run) { run_logic_impl(run, STRIX_LOGIC_GODEL); }

static void run_logic_aggregator(op_run *run) {
    size_t n = dim(run, "x", 0), cols = dim(run, "x", 1);
    float eps = scalar(run, "eps");
    float *x = input(run, "x"), *go = input(run, "grad_out"), *r = input(run, "r_out");
    static const char *const tags[][5] = {
        {"p_p2", "mean_pow_p2", "out_p2", "grad_in_p2", "r_in_p2"},
        {"p_p3_5", "mean_pow_p3_5", "out_p3_5", "grad_in_p3_5", "r_in_p3_5"},
        {"p_pm1_5", "mean_pow_pm1_5", "out_pm1_5", "grad_in_pm1_5", "r_in_pm1_5"},
    };
    for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++) {
        float p = scalar(run, tags[t][0]);
        float *mean_pow = output(run, cols), *out = output(run, cols);
        float *grad = output(run, n * cols), *r_in = output(run, n * cols);
        OK(strix_aggregator_forward(run->be, x, mean_pow, out, n, cols, p));
        collect(run, tags[t][1], tags[t][1], mean_pow, cols, false);
        collect(run, tags[t][2], tags[t][2], out, cols, false);
        OK(strix_aggregator_backward(run->be, x, mean_pow, go, grad, n, cols, p));
        collect(run, tags[t][3], tags[t][3], grad, n * cols, false);
        OK(strix_aggregator_lrp(run->be, x, mean_pow, r, r_in, n, cols, p, eps));
        collect(run, tags[t][4], tags[t][4], r_in, n * cols, false);
    }
}

/* atol/rtol 1e-5/1e-4: each output is a short sum of O(1) terms against a float64 reference. */
const op_case ops_lrp_cases[] = {
    {"lrp_linear", run_lrp_linear, ATOL, RTOL},
    {"lrp_conv", run_lrp_conv, ATOL, RTOL},
    {"lrp_conv_wide", run_lrp_conv, ATOL, RTOL},
    {"lrp_avg_pool", run_lrp_avg_pool, ATOL, RTOL},
    {"lrp_avg_pool_overlap", run_lrp_avg_pool, ATOL, RTOL},
    {"lrp_bilinear_matmul", run_lrp_bilinear_matmul, ATOL, RTOL},
    {"lrp_bilinear_matmul_wide", run_lrp_bilinear_matmul, ATOL, RTOL},
    {"lrp_bilinear_elementwise", run_lrp_bilinear_elementwise, ATOL, RTOL},
    {"lrp_residual_split", run_lrp_residual_split, ATOL, RTOL},
    {"lrp_softmax_rows", run_lrp_softmax_rows, ATOL, RTOL},
    {"lrp_rope", run_lrp_rope, ATOL, RTOL},
    {"lrp_stabilized_divide", run_lrp_stabilized_divide, ATOL, RTOL},
    {"logic_product", run_logic_product, ATOL, RTOL},
    {"logic_lukasiewicz", run_logic_lukasiewicz, ATOL, RTOL},
    {"logic_godel", run_logic_godel, ATOL, RTOL},
    {"logic_aggregator", run_logic_aggregator, ATOL, RTOL},
    {"logic_impl_product", run_logic_impl_product, ATOL, RTOL},
    {"logic_impl_lukasiewicz", run_logic_impl_lukasiewicz, ATOL, RTOL},
    {"logic_impl_godel", run_logic_impl_godel, ATOL, RTOL},
};
const size_t ops_lrp_case_count = sizeof ops_lrp_cases / sizeof ops_lrp_cases[0];

// ---- exact edge cases --------------------------------------------------------------------------

/* Runs strix_lrp_stabilized_divide on host arrays and returns the result in `got`. */
static void divide_on(strix_backend *be, const float *r, const float *den, const float *gate,
                      float *got, size_t n, float eps, strix_lrp_gate mode) {
    float *dr = up(be, r, n), *dd = up(be, den, n), *dg = gate ? up(be, gate, n) : NULL;
    OK(strix_lrp_stabilized_divide(be, dr, dd, dg, dr, n, eps, mode)); /* out aliases r */
    down(be, got, dr, n);
    strix_free(be, dr), strix_free(be, dd), strix_free(be, dg);
}

/* stab(z) = z + eps·sign(z) with sign(0) = sign(−0) = +1; gates select with a hard zero (even
 * over NaN), and a zero gate passes neither sign. */
static void test_lrp_stab_and_gates(void **state) {
    (void)state;
    const float den[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 2.0f, 1.0f};
    const float r[] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, NAN};
    const float gate[] = {0.0f, -0.0f, 1.0f, -1.0f, NAN, 0.0f};
    const float want_none[] = {2.0f, 2.0f, 2.0f, -2.0f, 1.0f / 2.5f, NAN};
    const float want_pos[] = {0.0f, 0.0f, 2.0f, 0.0f, 0.0f, 0.0f};
    const float want_neg[] = {0.0f, 0.0f, 0.0f, -2.0f, 0.0f, 0.0f};
    FOR_EACH_BACKEND(be) {
        float got[6];
        divide_on(be, r, den, NULL, got, 6, 0.5f, STRIX_LRP_GATE_NONE);
        assert_true(tl_check_bits("divide none", got, want_none, 5));
        assert_true(isnan(got[5]));
        divide_on(be, r, den, gate, got, 6, 0.5f, STRIX_LRP_GATE_POSITIVE);
        assert_true(tl_check_bits("divide positive", got, want_pos, 6));
        divide_on(be, r, den, gate, got, 6, 0.5f, STRIX_LRP_GATE_NEGATIVE);
        assert_true(tl_check_bits("divide negative", got, want_neg, 6));

        /* lrp_linear at z = 0 and z = −0: s = r/(+eps) */
        const float x[] = {1.0f, 1.0f}, w[] = {1.0f, -1.0f}, zs[] = {0.0f, -0.0f};
        const float one = 1.0f, want[] = {4.0f, -4.0f};
        for (int k = 0; k < 2; k++) {
            float *dx = up(be, x, 2), *dw = up(be, w, 2), *dz = up(be, &zs[k], 1);
            float *drr = up(be, &one, 1), *din = up(be, x, 2);
            OK(strix_lrp_linear(be, dx, dw, dz, drr, din, 1, 2, 1, 0.25f));
            down(be, got, din, 2);
            assert_true(tl_check_bits("lrp_linear z = ±0", got, want, 2));
            strix_free(be, dx), strix_free(be, dw), strix_free(be, dz);
            strix_free(be, drr), strix_free(be, din);
        }

        /* residual split at y = 0 and the bilinear rule at c = 0 */
        const float a[] = {0.5f, 0.0f}, b[] = {-0.5f, 3.0f}, rr[] = {1.0f, 1.0f};
        float *da = up(be, a, 2), *db = up(be, b, 2), *dr = up(be, rr, 2);
        float *ra = up(be, rr, 2), *rb = up(be, rr, 2);
        OK(strix_lrp_residual_split(be, da, db, dr, ra, rb, 2, 0.25f));
        float got_a[2], got_b[2];
        down(be, got_a, ra, 2);
        down(be, got_b, rb, 2);
        assert_true(got_a[0] == 2.0f && got_b[0] == -2.0f);
        assert_true(got_a[1] == 0.0f && got_b[1] == 3.0f / 3.25f);
        OK(strix_lrp_bilinear_elementwise(be, da, db, dr, ra, 2, 0.25f));
        down(be, got_a, ra, 2);
        assert_true(got_a[1] == 0.0f);                     /* c = 0: no share */
        assert_true(got_a[0] == (-0.25f / (-0.5f - 0.25f))); /* c < 0: −eps */
        strix_free(be, da), strix_free(be, db), strix_free(be, dr);
        strix_free(be, ra), strix_free(be, rb);
    }
}

/* One logic pass on host arrays of 5 elements. */
static void logic_on(strix_backend *be, strix_logic_op op, strix_logic_norm norm, const float *a,
                     const float *b, const float *g, float *ga, float *gb) {
    float *da = up(be, a, 5), *db = up(be, b, 5), *dg = up(be, g, 5);
    float *oa = up(be, a, 5), *ob = up(be, b, 5), *dy = up(be, a, 5);
    OK(strix_logic_pointwise(be, op, norm, da, db, dg, dy, oa, ob, 5, 0.25f));
    down(be, ga, oa, 5);
    if (gb) down(be, gb, ob, 5);
    strix_free(be, da), strix_free(be, db), strix_free(be, dg);
    strix_free(be, oa), strix_free(be, ob), strix_free(be, dy);
}

/* Gödel ties go to a; Łukasiewicz passes gradient and relevance only strictly inside its linear
 * region (a + b − 1 > 0 for conj, a + b < 1 for disj, (1 − a) + b < 1 for impl), so the boundary
 * gets 0. The implications at a == b (elements 0, 3, 4) give 1 and nothing back; Gödel and
 * Goguen send all relevance to b; Łukasiewicz's shows its eps share (den −0.25 − 0.25). */
static void test_logic_ties_and_clamps(void **state) {
    (void)state;
    const float a[] = {0.3f, 0.25f, 0.75f, 0.25f, 0.0f};
    const float b[] = {0.3f, 0.75f, 0.5f, 0.25f, 0.0f};
    const float g[] = {2.0f, 2.0f, 2.0f, 2.0f, 2.0f}, r[] = {3.0f, 3.0f, 3.0f, 3.0f, 3.0f};
    const float G = 2.0f, R = 3.0f;
    const struct {
        strix_logic_op op;
        strix_logic_norm norm;
        const float *in;
        float want_a[5], want_b[5];
    } cases[] = {
        {STRIX_LOGIC_CONJ_FORWARD, STRIX_LOGIC_GODEL, g, {0.3f, 0.25f, 0.5f, 0.25f, 0.0f}, {0}},
        {STRIX_LOGIC_DISJ_FORWARD, STRIX_LOGIC_GODEL, g, {0.3f, 0.75f, 0.75f, 0.25f, 0.0f}, {0}},
        {STRIX_LOGIC_CONJ_BACKWARD, STRIX_LOGIC_GODEL, g, {G, G, 0, G, G}, {0, 0, G, 0, 0}},
        {STRIX_LOGIC_DISJ_BACKWARD, STRIX_LOGIC_GODEL, g, {G, 0, G, G, G}, {0, G, 0, 0, 0}},
        {STRIX_LOGIC_CONJ_LRP, STRIX_LOGIC_GODEL, r, {R, R, 0, R, R}, {0, 0, R, 0, 0}},
        {STRIX_LOGIC_DISJ_LRP, STRIX_LOGIC_GODEL, r, {R, 0, R, R, R}, {0, R, 0, 0, 0}},
        {STRIX_LOGIC_CONJ_FORWARD, STRIX_LOGIC_LUKASIEWICZ, g, {0, 0, 0.25f, 0, 0}, {0}},
        {STRIX_LOGIC_DISJ_FORWARD, STRIX_LOGIC_LUKASIEWICZ, g,
         {0.3f + 0.3f, 1.0f, 1.0f, 0.5f, 0.0f}, {0}},
        {STRIX_LOGIC_CONJ_BACKWARD, STRIX_LOGIC_LUKASIEWICZ, g, {0, 0, G, 0, 0}, {0, 0, G, 0, 0}},
        {STRIX_LOGIC_DISJ_BACKWARD, STRIX_LOGIC_LUKASIEWICZ, g, {G, 0, 0, G, G}, {G, 0, 0, G, G}},
        {STRIX_LOGIC_CONJ_LRP, STRIX_LOGIC_LUKASIEWICZ, r,
         {0, 0, (0.75f / 1.5f) * R, 0, 0}, {0, 0, (0.5f / 1.5f) * R, 0, 0}},
        {STRIX_LOGIC_DISJ_LRP, STRIX_LOGIC_LUKASIEWICZ, r,
         {(0.3f / (0.3f + 0.3f + 0.25f)) * R, 0, 0, (0.25f / 0.75f) * R, 0},
         {(0.3f / (0.3f + 0.3f + 0.25f)) * R, 0, 0, (0.25f / 0.75f) * R, 0}},
        {STRIX_LOGIC_IMPL_FORWARD, STRIX_LOGIC_GODEL, g, {1, 1, 0.5f, 1, 1}, {0}},
        {STRIX_LOGIC_IMPL_FORWARD, STRIX_LOGIC_PRODUCT, g, {1, 1, 0.5f / 0.75f, 1, 1}, {0}},
        {STRIX_LOGIC_IMPL_FORWARD, STRIX_LOGIC_LUKASIEWICZ, g, {1, 1, 0.75f, 1, 1}, {0}},
        {STRIX_LOGIC_IMPL_BACKWARD, STRIX_LOGIC_GODEL, g, {0, 0, 0, 0, 0}, {0, 0, G, 0, 0}},
        {STRIX_LOGIC_IMPL_BACKWARD, STRIX_LOGIC_PRODUCT, g,
         {0, 0, ((-0.5f / 0.75f) / 0.75f) * G, 0, 0}, {0, 0, G / 0.75f, 0, 0}},
        {STRIX_LOGIC_IMPL_BACKWARD, STRIX_LOGIC_LUKASIEWICZ, g, {0, 0, -G, 0, 0},
         {0, 0, G, 0, 0}},
        {STRIX_LOGIC_IMPL_LRP, STRIX_LOGIC_GODEL, r, {0, 0, 0, 0, 0}, {R, R, R, R, R}},
        {STRIX_LOGIC_IMPL_LRP, STRIX_LOGIC_PRODUCT, r, {0, 0, 0, 0, 0}, {R, R, R, R, R}},
        {STRIX_LOGIC_IMPL_LRP, STRIX_LOGIC_LUKASIEWICZ, r,
         {0, 0, (-0.75f / (-0.25f - 0.25f)) * R, 0, 0},
         {0, 0, (0.5f / (-0.25f - 0.25f)) * R, 0, 0}},
    };
    FOR_EACH_BACKEND(be) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            bool forward = cases[c].op == STRIX_LOGIC_CONJ_FORWARD ||
                           cases[c].op == STRIX_LOGIC_DISJ_FORWARD ||
                           cases[c].op == STRIX_LOGIC_IMPL_FORWARD;
            float got_a[5], got_b[5];
            logic_on(be, cases[c].op, cases[c].norm, a, b, cases[c].in, got_a,
                     forward ? NULL : got_b);
            char label[64];
            snprintf(label, sizeof label, "logic case %zu (a)", c);
            assert_true(tl_check_bits(label, got_a, cases[c].want_a, 5));
            snprintf(label, sizeof label, "logic case %zu (b)", c);
            if (!forward) assert_true(tl_check_bits(label, got_b, cases[c].want_b, 5));
        }
    }
}

// ---- finite differences ------------------------------------------------------------------------

/* Logic forward of n elements on the backend, into host y. */
static void logic_forward_on(strix_backend *be, strix_logic_op op, strix_logic_norm norm,
                             const float *a, const float *b, float *y, size_t n) {
    float *da = up(be, a, n), *db = up(be, b, n), *dy = up(be, a, n);
    OK(strix_logic_pointwise(be, op, norm, da, db, NULL, NULL, dy, NULL, n, 0.0f));
    down(be, y, dy, n);
    strix_free(be, da), strix_free(be, db), strix_free(be, dy);
}

/* True if |got − want| <= 1e-2·|want| + 1e-3 for every element; prints the first failure. */
static bool fd_close(const char *label, const float *got, const double *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (fabs((double)got[i] - want[i]) > 1e-2 * fabs(want[i]) + 1e-3) {
            fprintf(stderr, "%s[%zu]: backward %.7g, finite difference %.7g\n", label, i,
                    (double)got[i], want[i]);
            return false;
        }
    return true;
}

/* Every logic backward (conj, disj, impl) against central differences of its forward (elements
 * are independent, so all elements are perturbed at once), at points at least 0.05 from every
 * kink (the implications' kink is a == b). */
static void test_logic_backward_finite_differences(void **state) {
    (void)state;
    enum { N = 64 };
    const double h = 1e-2;
    float a[N], b[N], g[N], ap[N], am[N], bp[N], bm[N], yp[N], ym[N], ga[N], gb[N];
    double fa[N], fb[N];
    tl_fill_uniform(a, N, 11, 0.05f, 0.95f);
    tl_fill_uniform(b, N, 12, 0.05f, 0.95f);
    tl_fill_uniform(g, N, 13, -1.0f, 1.0f);
    for (size_t i = 0; i < N; i++) {
        if (fabsf(a[i] - b[i]) < 0.05f) b[i] = a[i] < 0.5f ? a[i] + 0.3f : a[i] - 0.3f;
        if (fabsf(a[i] + b[i] - 1.0f) < 0.05f) a[i] = a[i] < 0.5f ? a[i] - 0.04f : a[i] + 0.04f;
        if (fabsf(a[i] - b[i]) < 0.05f || fabsf(a[i] + b[i] - 1.0f) < 0.05f)
            a[i] = 0.1f, b[i] = 0.3f; /* both kinks far away */
        ap[i] = (float)(a[i] + h), am[i] = (float)(a[i] - h);
        bp[i] = (float)(b[i] + h), bm[i] = (float)(b[i] - h);
    }
    FOR_EACH_BACKEND(be) {
        for (int norm = STRIX_LOGIC_PRODUCT; norm <= STRIX_LOGIC_GODEL; norm++) {
            for (int kind = 0; kind < 3; kind++) { /* conj, disj, impl */
                strix_logic_op fwd = (strix_logic_op)(3 * kind);
                strix_logic_norm nm = (strix_logic_norm)norm;
                logic_forward_on(be, fwd, nm, ap, b, yp, N);
                logic_forward_on(be, fwd, nm, am, b, ym, N);
                for (size_t i = 0; i < N; i++)
                    fa[i] = g[i] * ((double)yp[i] - ym[i]) / ((double)ap[i] - am[i]);
                logic_forward_on(be, fwd, nm, a, bp, yp, N);
                logic_forward_on(be, fwd, nm, a, bm, ym, N);
                for (size_t i = 0; i < N; i++)
                    fb[i] = g[i] * ((double)yp[i] - ym[i]) / ((double)bp[i] - bm[i]);
                float *da = up(be, a, N), *db = up(be, b, N), *dg = up(be, g, N);
                float *oa = up(be, a, N), *ob = up(be, b, N);
                OK(strix_logic_pointwise(be, (strix_logic_op)(fwd + 1), nm, da, db, dg, NULL, oa,
                                         ob, N, 0.0f));
                down(be, ga, oa, N);
                down(be, gb, ob, N);
                strix_free(be, da), strix_free(be, db), strix_free(be, dg);
                strix_free(be, oa), strix_free(be, ob);
                char label[64];
                snprintf(label, sizeof label, "logic norm %d kind %d d/da", norm, kind);
                assert_true(fd_close(label, ga, fa, N));
                snprintf(label, sizeof label, "logic norm %d kind %d d/db", norm, kind);
                assert_true(fd_close(label, gb, fb, N));
            }
        }
    }
}

/* Aggregator forward of x (n, cols) on the backend, into host out (cols). */
static void aggregator_on(strix_backend *be, const float *x, float *out, size_t n, size_t cols,
                          float p) {
    float *dx = up(be, x, n * cols), *dm = up(be, x, cols), *dout = up(be, x, cols);
    OK(strix_aggregator_forward(be, dx, dm, dout, n, cols, p));
    down(be, out, dout, cols);
    strix_free(be, dx), strix_free(be, dm), strix_free(be, dout);
}

/* Aggregator backward against central differences of L = Σ_j g_j·out_j; a whole row i is
 * perturbed at once (out_j depends on column j only). */
static void test_aggregator_backward_finite_differences(void **state) {
    (void)state;
    enum { N = 5, C = 7 };
    const float powers[] = {2.0f, 3.5f, -1.5f, 0.5f};
    const double h = 5e-3;
    float x[N * C], go[C], xs[N * C], op[C], om[C], grad[N * C];
    double fd[N * C];
    tl_fill_uniform(x, N * C, 21, 0.2f, 1.0f);
    tl_fill_uniform(go, C, 22, -1.0f, 1.0f);
    FOR_EACH_BACKEND(be) {
        for (size_t t = 0; t < sizeof powers / sizeof powers[0]; t++) {
            float p = powers[t];
            for (size_t i = 0; i < N; i++) {
                float hi[C], lo[C];
                memcpy(xs, x, sizeof xs);
                for (size_t j = 0; j < C; j++) hi[j] = xs[i * C + j] = (float)(x[i * C + j] + h);
                aggregator_on(be, xs, op, N, C, p);
                for (size_t j = 0; j < C; j++) lo[j] = xs[i * C + j] = (float)(x[i * C + j] - h);
                aggregator_on(be, xs, om, N, C, p);
                for (size_t j = 0; j < C; j++)
                    fd[i * C + j] = go[j] * ((double)op[j] - om[j]) / ((double)hi[j] - lo[j]);
            }
            float *dx = up(be, x, N * C), *dm = up(be, x, C), *dout = up(be, x, C);
            float *dgo = up(be, go, C), *dgrad = up(be, x, N * C);
            OK(strix_aggregator_forward(be, dx, dm, dout, N, C, p));
            OK(strix_aggregator_backward(be, dx, dm, dgo, dgrad, N, C, p));
            down(be, grad, dgrad, N * C);
            OK(strix_aggregator_backward(be, dx, dm, dgo, dx, N, C, p)); /* grad_in aliases x */
            float alias[N * C];
            down(be, alias, dx, N * C);
            assert_true(tl_check_bits("aggregator backward in place", alias, grad, N * C));
            strix_free(be, dx), strix_free(be, dm), strix_free(be, dout);
            strix_free(be, dgo), strix_free(be, dgrad);
            char label[64];
            snprintf(label, sizeof label, "aggregator p=%g", (double)p);
            assert_true(fd_close(label, grad, fd, N * C));
        }
    }
}

// ---- conservation ------------------------------------------------------------------------------

/* |Σ got − Σ want| <= 1e-4·max(1, Σ|want|), sums in double. */
static bool conserves(const char *label, const float *got, size_t n_got, const float *want,
                      size_t n_want) {
    double sg = 0.0, sw = 0.0, mag = 0.0;
    for (size_t i = 0; i < n_got; i++) sg += got[i];
    for (size_t i = 0; i < n_want; i++) sw += want[i], mag += fabs(want[i]);
    double gap = fabs(sg - sw);
    if (gap <= 1e-4 * (mag > 1.0 ? mag : 1.0)) return true;
    fprintf(stderr, "%s: relevance in %.9g, out %.9g (gap %.3g)\n", label, sg, sw, gap);
    return false;
}

/* The rules that conserve do, with tiny eps, no bias and r = z·u (u in [0.5, 1.5], so no ratio
 * blows up): Σ r_in = Σ r for linear, conv, average pool, residual, RoPE, the bilinear matmul
 * halves together, the aggregator and every logic LRP (the Łukasiewicz implication's where
 * linear). */
static void test_lrp_conservation(void **state) {
    (void)state;
    const float eps = 1e-6f;
    enum { ROWS = 3, IN = 40, OUT = 11, S = 2, M = 4, P = 3, Q = 5, OC = 3, PP = 6, QQ = 5 };
    float x[ROWS * IN], w[OUT * IN], z[ROWS * OUT], r[ROWS * OUT], u[64], got[ROWS * IN];
    tl_fill_uniform(x, ROWS * IN, 31, -1.0f, 1.0f);
    tl_fill_uniform(w, OUT * IN, 32, -1.0f, 1.0f);
    tl_fill_uniform(u, 64, 33, 0.5f, 1.5f);
    for (size_t n = 0; n < ROWS; n++)
        for (size_t j = 0; j < OUT; j++) {
            double acc = 0.0;
            for (size_t i = 0; i < IN; i++) acc += (double)x[n * IN + i] * w[j * IN + i];
            z[n * OUT + j] = (float)acc;
            r[n * OUT + j] = (float)acc * u[(n * OUT + j) % 64];
        }
    float a[S * M * P], b[S * P * Q], o[S * M * Q], ro[S * M * Q], ra[S * M * P], rb[S * P * Q];
    tl_fill_uniform(a, S * M * P, 34, -1.0f, 1.0f);
    tl_fill_uniform(b, S * P * Q, 35, -1.0f, 1.0f);
    for (size_t s = 0; s < S; s++)
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < Q; k++) {
                double acc = 0.0;
                for (size_t j = 0; j < P; j++)
                    acc += (double)a[(s * M + i) * P + j] * b[(s * P + j) * Q + k];
                o[(s * M + i) * Q + k] = (float)acc;
                ro[(s * M + i) * Q + k] = (float)acc * u[(i * Q + k) % 64];
            }
    float col[PP * QQ], kern[OC * PP], zc[OC * QQ], rc[OC * QQ], rcol[PP * QQ];
    tl_fill_uniform(col, PP * QQ, 36, -1.0f, 1.0f);
    tl_fill_uniform(kern, OC * PP, 37, -1.0f, 1.0f);
    for (size_t oc = 0; oc < OC; oc++)
        for (size_t q = 0; q < QQ; q++) {
            double acc = 0.0;
            for (size_t p = 0; p < PP; p++) acc += (double)kern[oc * PP + p] * col[p * QQ + q];
            zc[oc * QQ + q] = (float)acc;
            rc[oc * QQ + q] = (float)acc * u[(oc * QQ + q) % 64];
        }
    FOR_EACH_BACKEND(be) {
        float *dx = up(be, x, ROWS * IN), *dw = up(be, w, OUT * IN), *dz = up(be, z, ROWS * OUT);
        float *dr = up(be, r, ROWS * OUT), *din = up(be, x, ROWS * IN);
        OK(strix_lrp_linear(be, dx, dw, dz, dr, din, ROWS, IN, OUT, eps));
        down(be, got, din, ROWS * IN);
        assert_true(conserves("lrp_linear", got, ROWS * IN, r, ROWS * OUT));
        strix_free(be, dx), strix_free(be, dw), strix_free(be, dz);
        strix_free(be, dr), strix_free(be, din);

        float *da = up(be, a, S * M * P), *db = up(be, b, S * P * Q), *dO = up(be, o, S * M * Q);
        float *dro = up(be, ro, S * M * Q), *dra = up(be, a, S * M * P);
        float *drb = up(be, b, S * P * Q);
        OK(strix_lrp_bilinear_matmul(be, da, db, dO, dro, dra, drb, S, M, P, Q, eps, false));
        down(be, ra, dra, S * M * P);
        down(be, rb, drb, S * P * Q);
        double halves[2] = {0.0, 0.0};
        for (size_t i = 0; i < S * M * P; i++) halves[0] += ra[i];
        for (size_t i = 0; i < S * P * Q; i++) halves[1] += rb[i];
        float both[2] = {(float)halves[0], (float)halves[1]};
        assert_true(conserves("bilinear matmul halves", both, 2, ro, S * M * Q));
        strix_free(be, da), strix_free(be, db), strix_free(be, dO);
        strix_free(be, dro), strix_free(be, dra), strix_free(be, drb);

        float *dcol = up(be, col, PP * QQ), *dk = up(be, kern, OC * PP);
        float *dzc = up(be, zc, OC * QQ), *drc = up(be, rc, OC * QQ), *drcol = up(be, col, PP * QQ);
        OK(strix_lrp_conv(be, dcol, dk, dzc, drc, drcol, 1, OC, PP, QQ, eps));
        down(be, rcol, drcol, PP * QQ);
        assert_true(conserves("lrp_conv", rcol, PP * QQ, rc, OC * QQ));
        strix_free(be, dcol), strix_free(be, dk), strix_free(be, dzc);
        strix_free(be, drc), strix_free(be, drcol);

        /* average pool 2 planes of 5x5, 2x2 windows stride 1 and 3x3 stride 2 pad 1, x > 0 */
        const strix_conv_geom geoms[] = {{2, 2, 1, 1, 0, 0}, {3, 3, 2, 2, 1, 1}};
        for (size_t gi = 0; gi < 2; gi++) {
            const strix_conv_geom *g = &geoms[gi];
            float px[50], pr[32], pin[50];
            size_t oh = strix_conv_out_h(g, 5), ow = strix_conv_out_w(g, 5);
            tl_fill_uniform(px, 50, 38, 0.1f, 1.0f);
            tl_fill_uniform(pr, 2 * oh * ow, 39, -1.0f, 1.0f);
            float *dpx = up(be, px, 50), *dpr = up(be, pr, 2 * oh * ow), *dpin = up(be, px, 50);
            OK(strix_fill(be, dpin, 0.0f, 50));
            OK(strix_lrp_avg_pool(be, dpx, dpr, dpin, 2, 5, 5, g, eps));
            down(be, pin, dpin, 50);
            assert_true(conserves("lrp_avg_pool", pin, 50, pr, 2 * oh * ow));
            strix_free(be, dpx), strix_free(be, dpr), strix_free(be, dpin);
        }

        /* residual split, elementwise: r_a + r_b = r */
        float ea[16], eb[16], er[16], era[16], erb[16];
        tl_fill_uniform(ea, 16, 40, -1.0f, 1.0f);
        tl_fill_uniform(eb, 16, 41, 1.5f, 2.0f); /* a + b >= 0.5 */
        tl_fill_uniform(er, 16, 42, -1.0f, 1.0f);
        float *dea = up(be, ea, 16), *deb = up(be, eb, 16), *der = up(be, er, 16);
        float *dera = up(be, ea, 16), *derb = up(be, eb, 16);
        OK(strix_lrp_residual_split(be, dea, deb, der, dera, derb, 16, eps));
        down(be, era, dera, 16);
        down(be, erb, derb, 16);
        for (size_t i = 0; i < 16; i++) assert_true(fabsf(era[i] + erb[i] - er[i]) <= 1e-5f);

        /* every logic LRP: r_a + r_b = r (Łukasiewicz where linear; here a + b in (1, 2)
         * for conj and (0, 1) for disj) */
        float la[16], lb[16], lc[16], ld[16];
        tl_fill_uniform(la, 16, 43, 0.55f, 0.95f);
        tl_fill_uniform(lb, 16, 44, 0.55f, 0.95f);
        tl_fill_uniform(lc, 16, 45, 0.05f, 0.45f);
        tl_fill_uniform(ld, 16, 46, 0.05f, 0.45f);
        for (int norm = STRIX_LOGIC_PRODUCT; norm <= STRIX_LOGIC_GODEL; norm++) {
            for (int disj = 0; disj < 2; disj++) {
                const float *ha = disj ? lc : la, *hb = disj ? ld : lb;
                strix_logic_op fwd = disj ? STRIX_LOGIC_DISJ_FORWARD : STRIX_LOGIC_CONJ_FORWARD;
                float *ga = up(be, ha, 16), *gb = up(be, hb, 16), *gy = up(be, ha, 16);
                OK(strix_logic_pointwise(be, fwd, (strix_logic_norm)norm, ga, gb, NULL, NULL, gy,
                                         NULL, 16, eps));
                OK(strix_logic_pointwise(be, (strix_logic_op)(fwd + 2), (strix_logic_norm)norm,
                                         ga, gb, der, gy, dea, deb, 16, eps));
                down(be, era, dea, 16);
                down(be, erb, deb, 16);
                for (size_t i = 0; i < 16; i++)
                    assert_true(fabsf(era[i] + erb[i] - er[i]) <= 1e-5f);
                strix_free(be, ga), strix_free(be, gb), strix_free(be, gy);
            }
        }
        /* the implications' LRP (y = NULL: not read) with a in [0.55, 0.95] > b in [0.05, 0.45]:
         * Gödel and Goguen give all of r to b; Łukasiewicz (linear there) conserves up to its
         * eps share, r_a + r_b = r·(b − a)/stab(b − a), to rounding */
        float *ia = up(be, la, 16), *ib = up(be, lc, 16);
        for (int norm = STRIX_LOGIC_PRODUCT; norm <= STRIX_LOGIC_GODEL; norm++) {
            OK(strix_logic_pointwise(be, STRIX_LOGIC_IMPL_LRP, (strix_logic_norm)norm, ia, ib, der,
                                     NULL, dea, deb, 16, eps));
            down(be, era, dea, 16);
            down(be, erb, deb, 16);
            for (size_t i = 0; i < 16; i++) {
                if (norm != STRIX_LOGIC_LUKASIEWICZ) {
                    assert_true(era[i] == 0.0f && erb[i] == er[i]);
                    continue;
                }
                double ba = (double)lc[i] - la[i], share = er[i] * ba / (ba - eps);
                double sum = (double)era[i] + erb[i];
                assert_true(fabs(sum - share) <= 1e-6 * (fabs(era[i]) + fabs(erb[i])) + 1e-7);
                assert_true(fabs(sum - er[i]) <= 2e-5 * fabs(er[i]) + 1e-7);
            }
        }
        strix_free(be, ia), strix_free(be, ib);
        strix_free(be, dea), strix_free(be, deb), strix_free(be, der);
        strix_free(be, dera), strix_free(be, derb);

        /* RoPE: each pair conserves; y = rotate(x) on the host, r = y·u */
        enum { RR = 4, HD = 6, L = 2 };
        float qx[RR * HD], qy[RR * HD], qr[RR * HD], qin[RR * HD], cs[L * HD / 2], sn[L * HD / 2];
        tl_fill_uniform(qx, RR * HD, 47, -1.0f, 1.0f);
        for (size_t i = 0; i < L * HD / 2; i++) {
            cs[i] = cosf(0.3f * (float)(i + 1)), sn[i] = sinf(0.3f * (float)(i + 1));
        }
        for (size_t row = 0; row < RR; row++)
            for (size_t k = 0; k < HD / 2; k++) {
                size_t at = row * HD + 2 * k, tab = (row % L) * (HD / 2) + k;
                float lo = qx[at], hi = qx[at + 1];
                qy[at] = lo * cs[tab] - hi * sn[tab];
                qy[at + 1] = lo * sn[tab] + hi * cs[tab];
                qr[at] = qy[at] * u[at % 64], qr[at + 1] = qy[at + 1] * u[(at + 1) % 64];
            }
        float *dqx = up(be, qx, RR * HD), *dqy = up(be, qy, RR * HD), *dqr = up(be, qr, RR * HD);
        float *dcs = up(be, cs, L * HD / 2), *dsn = up(be, sn, L * HD / 2);
        OK(strix_lrp_rope(be, dqx, dqy, dqr, dcs, dsn, dqr, RR, L, HD, eps)); /* r_in aliases r */
        down(be, qin, dqr, RR * HD);
        assert_true(conserves("lrp_rope", qin, RR * HD, qr, RR * HD));
        strix_free(be, dqx), strix_free(be, dqy), strix_free(be, dqr);
        strix_free(be, dcs), strix_free(be, dsn);

        /* aggregator: Σ_i r_in[i][j] = r_out[j] per column */
        float ax[5 * 7], aro[7], ain[5 * 7];
        tl_fill_uniform(ax, 35, 48, 0.1f, 1.0f);
        tl_fill_uniform(aro, 7, 49, -1.0f, 1.0f);
        float *dax = up(be, ax, 35), *dm = up(be, aro, 7), *dout = up(be, aro, 7);
        float *daro = up(be, aro, 7), *dain = up(be, ax, 35);
        OK(strix_aggregator_forward(be, dax, dm, dout, 5, 7, 2.5f));
        OK(strix_aggregator_lrp(be, dax, dm, daro, dain, 5, 7, 2.5f, eps));
        down(be, ain, dain, 35);
        for (size_t j = 0; j < 7; j++) {
            float column[5];
            for (size_t i = 0; i < 5; i++) column[i] = ain[i * 7 + j];
            assert_true(conserves("aggregator", column, 5, &aro[j], 1));
        }
        strix_free(be, dax), strix_free(be, dm), strix_free(be, dout);
        strix_free(be, daro), strix_free(be, dain);
    }
}

// ---- kernels and folding -----------------------------------------------------------------------

/* Runs a golden case's primitive and returns the named output on the host (malloc'd). */
static float *linear_on(strix_backend *be, const tl_golden *g) {
    const tl_array *x = tl_golden_get(g, "x"), *w = tl_golden_get(g, "w");
    size_t rows = (size_t)x->shape[0], fin = (size_t)x->shape[1], fout = (size_t)w->shape[0];
    float *dx = up(be, x->data, x->count), *dw = up(be, w->data, w->count);
    float *dz = up(be, tl_golden_get(g, "z")->data, rows * fout);
    float *dr = up(be, tl_golden_get(g, "r")->data, rows * fout), *din = up(be, x->data, x->count);
    OK(strix_lrp_linear(be, dx, dw, dz, dr, din, rows, fin, fout, tl_golden_scalar(g, "eps")));
    float *host = tl_malloc_floats(x->count);
    down(be, host, din, x->count);
    strix_free(be, dx), strix_free(be, dw), strix_free(be, dz), strix_free(be, dr);
    strix_free(be, din);
    return host;
}

static float *conv_on(strix_backend *be, const tl_golden *g) {
    const tl_array *col = tl_golden_get(g, "col"), *k = tl_golden_get(g, "kernel");
    const tl_array *z = tl_golden_get(g, "z");
    size_t n = (size_t)col->shape[0], p = (size_t)col->shape[1], q = (size_t)col->shape[2];
    float *dcol = up(be, col->data, col->count), *dk = up(be, k->data, k->count);
    float *dz = up(be, z->data, z->count), *dr = up(be, tl_golden_get(g, "r")->data, z->count);
    float *out = up(be, col->data, col->count);
    OK(strix_lrp_conv(be, dcol, dk, dz, dr, out, n, (size_t)k->shape[0], p, q,
                      tl_golden_scalar(g, "eps")));
    float *host = tl_malloc_floats(col->count);
    down(be, host, out, col->count);
    strix_free(be, dcol), strix_free(be, dk), strix_free(be, dz), strix_free(be, dr);
    strix_free(be, out);
    return host;
}

/* The one-output kernel functions (one GPU lane each) give the CPU backend's blocked results
 * bit for bit: lrp_linear (two spans), lrp_conv (two channel and two column blocks) and the
 * bilinear matmul (two column blocks, both layouts of B). */
static void test_lrp_kernel_lanes_match(void **state) {
    (void)state;
    tl_golden lin, conv, bil;
    assert_true(tl_golden_load(LRP_GOLDEN("lrp_linear"), &lin));
    assert_true(tl_golden_load(LRP_GOLDEN("lrp_conv_wide"), &conv));
    assert_true(tl_golden_load(LRP_GOLDEN("lrp_bilinear_matmul_wide"), &bil));
    FOR_EACH_BACKEND(be) {
        const tl_array *x = tl_golden_get(&lin, "x"), *w = tl_golden_get(&lin, "w");
        size_t rows = (size_t)x->shape[0], fin = (size_t)x->shape[1];
        size_t fout = (size_t)w->shape[0];
        float eps = tl_golden_scalar(&lin, "eps");
        float *got = linear_on(be, &lin), *want = tl_malloc_floats(x->count);
        for (size_t n = 0; n < rows; n++)
            for (size_t i = 0; i < fin; i++)
                want[n * fin + i] = strix_lrp_linear_at(
                    x->data + n * fin, w->data, tl_golden_get(&lin, "z")->data + n * fout,
                    tl_golden_get(&lin, "r")->data + n * fout, i, fin, fout, eps);
        assert_true(tl_check_bits("lrp_linear lanes", got, want, x->count));
        free(got), free(want);

        const tl_array *col = tl_golden_get(&conv, "col"), *k = tl_golden_get(&conv, "kernel");
        size_t nn = (size_t)col->shape[0], p = (size_t)col->shape[1], q = (size_t)col->shape[2];
        size_t oc = (size_t)k->shape[0];
        const float *zc = tl_golden_get(&conv, "z")->data, *rc = tl_golden_get(&conv, "r")->data;
        eps = tl_golden_scalar(&conv, "eps");
        got = conv_on(be, &conv), want = tl_malloc_floats(col->count);
        for (size_t e = 0; e < nn; e++)
            for (size_t pp = 0; pp < p; pp++)
                for (size_t qq = 0; qq < q; qq++)
                    want[(e * p + pp) * q + qq] = strix_lrp_conv_at(
                        col->data + e * p * q, k->data, zc + e * oc * q, rc + e * oc * q, pp, qq,
                        oc, p, q, eps);
        assert_true(tl_check_bits("lrp_conv lanes", got, want, col->count));
        free(got), free(want);

        const tl_array *a = tl_golden_get(&bil, "a");
        size_t s = (size_t)a->shape[0], m = (size_t)a->shape[1], pb = (size_t)a->shape[2];
        size_t qb = (size_t)tl_golden_get(&bil, "b")->shape[2];
        const float *o = tl_golden_get(&bil, "o")->data, *ro = tl_golden_get(&bil, "r_o")->data;
        eps = tl_golden_scalar(&bil, "eps");
        float *da = up(be, a->data, a->count), *dO = up(be, o, s * m * qb);
        float *dro = up(be, ro, s * m * qb), *dra = up(be, a->data, a->count);
        float *drb = up(be, ro, s * pb * qb);
        float *ra = tl_malloc_floats(a->count), *rb = tl_malloc_floats(s * pb * qb);
        float *wa = tl_malloc_floats(a->count), *wb = tl_malloc_floats(s * pb * qb);
        for (int t = 0; t < 2; t++) {
            const float *b = tl_golden_get(&bil, t ? "bt" : "b")->data;
            float *db = up(be, b, s * pb * qb);
            OK(strix_lrp_bilinear_matmul(be, da, db, dO, dro, dra, drb, s, m, pb, qb, eps, t));
            down(be, ra, dra, a->count);
            down(be, rb, drb, s * pb * qb);
            strix_free(be, db);
            for (size_t sl = 0; sl < s; sl++) {
                const float *as = a->data + sl * m * pb, *bs = b + sl * pb * qb;
                const float *os = o + sl * m * qb, *ros = ro + sl * m * qb;
                for (size_t i = 0; i < m; i++)
                    for (size_t j = 0; j < pb; j++)
                        wa[(sl * m + i) * pb + j] =
                            strix_lrp_bilinear_a_at(as, bs, os, ros, i, j, pb, qb, eps, t);
                for (size_t j = 0; j < pb; j++)
                    for (size_t kk = 0; kk < qb; kk++)
                        wb[sl * pb * qb + strix_lrp_b_index(j, kk, pb, qb, t)] =
                            strix_lrp_bilinear_b_at(as, bs, os, ros, j, kk, m, pb, qb, eps, t);
            }
            assert_true(tl_check_bits("bilinear r_a lanes", ra, wa, a->count));
            assert_true(tl_check_bits("bilinear r_b lanes", rb, wb, s * pb * qb));
        }
        free(ra), free(rb), free(wa), free(wb);
        strix_free(be, da), strix_free(be, dO), strix_free(be, dro);
        strix_free(be, dra), strix_free(be, drb);
    }
    tl_golden_free(&lin), tl_golden_free(&conv), tl_golden_free(&bil);
}

/* lrp_conv's r_col folded back to the image (on the host, in double) equals the autograd
 * golden x ⊙ ∂(z·(r/stab(z)).detach())/∂x of F.conv2d, for both conv goldens. */
static void test_lrp_conv_folds_to_autograd(void **state) {
    (void)state;
    const char *files[] = {LRP_GOLDEN("lrp_conv"), LRP_GOLDEN("lrp_conv_wide")};
    for (size_t f = 0; f < 2; f++) {
        tl_golden g;
        assert_true(tl_golden_load(files[f], &g));
        const float *geom = tl_golden_get(&g, "geom")->data;
        const float *shape = tl_golden_get(&g, "shape")->data;
        size_t kh = (size_t)geom[0], kw = (size_t)geom[1], sh = (size_t)geom[2];
        size_t sw = (size_t)geom[3], ph = (size_t)geom[4], pw = (size_t)geom[5];
        size_t n = (size_t)shape[0], c = (size_t)shape[1], h = (size_t)shape[2];
        size_t w = (size_t)shape[3];
        size_t oh = (h + 2 * ph - kh) / sh + 1, ow = (w + 2 * pw - kw) / sw + 1;
        const tl_array *want = tl_golden_get(&g, "r_in");
        FOR_EACH_BACKEND(be) {
            float *r_col = conv_on(be, &g);
            double *image = calloc(want->count, sizeof *image);
            for (size_t e = 0; e < n; e++)
                for (size_t ch = 0; ch < c; ch++)
                    for (size_t i = 0; i < kh; i++)
                        for (size_t j = 0; j < kw; j++)
                            for (size_t oy = 0; oy < oh; oy++)
                                for (size_t ox = 0; ox < ow; ox++) {
                                    size_t yy = oy * sh + i, xx = ox * sw + j; /* padded */
                                    if (yy < ph || yy - ph >= h || xx < pw || xx - pw >= w)
                                        continue;
                                    size_t p = (ch * kh + i) * kw + j, q = oy * ow + ox;
                                    image[((e * c + ch) * h + yy - ph) * w + xx - pw] +=
                                        r_col[(e * (c * kh * kw) + p) * (oh * ow) + q];
                                }
            float *folded = tl_malloc_floats(want->count);
            for (size_t i = 0; i < want->count; i++) folded[i] = (float)image[i];
            assert_true(tl_check_close("lrp_conv folded", folded, want->data, want->count, ATOL,
                                       RTOL));
            free(folded), free(image), free(r_col);
        }
        tl_golden_free(&g);
    }
}

const struct CMUnitTest ops_lrp_tests[] = {
    cmocka_unit_test(test_lrp_stab_and_gates),
    cmocka_unit_test(test_logic_ties_and_clamps),
    cmocka_unit_test(test_logic_backward_finite_differences),
    cmocka_unit_test(test_aggregator_backward_finite_differences),
    cmocka_unit_test(test_lrp_conservation),
    cmocka_unit_test(test_lrp_kernel_lanes_match),
    cmocka_unit_test(test_lrp_conv_folds_to_autograd),
};
const size_t ops_lrp_test_count = sizeof ops_lrp_tests / sizeof ops_lrp_tests[0];
