/*
 * cases_cnn.c - op-test cases of the CNN primitives (include/strix/ops/cnn.h; harness:
 * tests/ops/op_harness.h).
 *
 * Golden cases (tools/ref/ops_cnn_ref.py, PyTorch 1.13): im2col vs F.unfold and col2im_add vs
 * F.fold into a non-zero base, max pool vs F.max_pool2d(return_indices) and max_unpool vs its
 * autograd (also `+=` into a base), avg pool vs F.avg_pool2d and its autograd, add_channel_vector
 * (also in place), BatchNorm training/running/eval vs F.batch_norm + autograd, GroupNorm vs
 * F.group_norm + autograd (with and without gamma/beta, backward in place).
 * Extra tests: im2col/col2im against host transcriptions of the documented orders (bit for bit,
 * pad > kernel, windows that do not fit) and their adjointness; the pool edge cases (ties, NaN,
 * -inf, padding, argmax -1); the row-wise gathers against the one-pixel kernels a GPU lane
 * runs; BatchNorm's documented lane order bit for bit, M = 1 and M = 0; central differences
 * (double) for every backward.
 */
#include <string.h>

#include "ops/op_harness.h"
#include "kernels/cnn.h"

static strix_conv_geom geom_of(op_run *run) {
    strix_conv_geom g = {
        .kh = (size_t)scalar(run, "kh"), .kw = (size_t)scalar(run, "kw"),
        .stride_h = (size_t)scalar(run, "sh"), .stride_w = (size_t)scalar(run, "sw"),
        .pad_h = (size_t)scalar(run, "ph"), .pad_w = (size_t)scalar(run, "pw"),
    };
    return g;
}

static size_t dim(op_run *run, const char *name, int d) {
    return (size_t)need(run, name)->shape[d];
}

// ---- golden runners ----------------------------------------------------------------------------

static void run_im2col(op_run *run) {
    strix_conv_geom g = geom_of(run);
    size_t n = dim(run, "x", 0), c = dim(run, "x", 1), h = dim(run, "x", 2), w = dim(run, "x", 3);
    size_t cols = count_of(run, "col");
    float *col = output(run, cols);
    OK(strix_im2col(run->be, input(run, "x"), col, n, c, h, w, &g));
    collect(run, "col", "col", col, cols, true);
    float *out = input(run, "base"); /* adds into a non-zero image */
    OK(strix_col2im_add(run->be, input(run, "y"), out, n, c, h, w, &g));
    collect(run, "fold", "fold", out, n * c * h * w, false);
}

static void run_max_pool(op_run *run) {
    strix_conv_geom g = geom_of(run);
    size_t planes = dim(run, "x", 0) * dim(run, "x", 1), h = dim(run, "x", 2);
    size_t w = dim(run, "x", 3), outs = count_of(run, "out"), pixels = planes * h * w;
    float *out = output(run, outs);
    int32_t *arg = keep(run, tl_device_alloc(run->be, outs * sizeof(int32_t)));
    OK(strix_max_pool_forward(run->be, input(run, "x"), out, arg, planes, h, w, &g));
    collect(run, "out", "out", out, outs, true);
    collect_i32(run, "argmax", "argmax", arg, outs);
    float *dx = output(run, pixels), *dy = input(run, "dy");
    OK(strix_fill(run->be, dx, 0.0f, pixels));
    OK(strix_max_unpool(run->be, dy, arg, dx, planes, h, w, &g));
    collect(run, "dx", "dx", dx, pixels, false);
    float *acc = input(run, "base");
    OK(strix_max_unpool(run->be, dy, arg, acc, planes, h, w, &g));
    collect(run, "dx (+= base)", "dx_acc", acc, pixels, false);
}

static void run_avg_pool(op_run *run) {
    strix_conv_geom g = geom_of(run);
    size_t planes = dim(run, "x", 0) * dim(run, "x", 1), h = dim(run, "x", 2);
    size_t w = dim(run, "x", 3), outs = count_of(run, "out"), pixels = planes * h * w;
    float *out = output(run, outs);
    OK(strix_avg_pool_forward(run->be, input(run, "x"), out, planes, h, w, &g));
    collect(run, "out", "out", out, outs, false);
    float *dx = output(run, pixels), *dy = input(run, "dy");
    OK(strix_fill(run->be, dx, 0.0f, pixels));
    OK(strix_avg_pool_backward(run->be, dy, dx, planes, h, w, &g));
    collect(run, "dx", "dx", dx, pixels, false);
    float *acc = input(run, "base");
    OK(strix_avg_pool_backward(run->be, dy, acc, planes, h, w, &g));
    collect(run, "dx (+= base)", "dx_acc", acc, pixels, false);
}

static void run_add_channel_vector(op_run *run) {
    size_t n = dim(run, "x", 0), c = dim(run, "x", 1), inner = dim(run, "x", 2);
    size_t count = n * c * inner;
    float *x = input(run, "x"), *vec = input(run, "vec"), *out = output(run, count);
    OK(strix_add_channel_vector(run->be, x, vec, out, n, c, inner));
    collect(run, "out", "out", out, count, false);
    OK(strix_add_channel_vector(run->be, x, vec, x, n, c, inner));
    collect(run, "out (in place)", "out", x, count, false);
}

static void run_batch_norm(op_run *run) {
    size_t n = dim(run, "x", 0), c = dim(run, "x", 1), s = dim(run, "x", 2), count = n * c * s;
    float eps = scalar(run, "eps");
    float *x = input(run, "x"), *gamma = input(run, "gamma"), *beta = input(run, "beta");
    float *xhat = output(run, count), *out = output(run, count), *std = output(run, c);
    float *dx = output(run, count), *dgamma = output(run, c), *dbeta = output(run, c);
    OK(strix_batch_norm_forward(run->be, x, gamma, beta, xhat, out, std, n, c, s, eps));
    collect(run, "out", "out", out, count, false);
    collect(run, "xhat", "xhat", xhat, count, false);
    collect(run, "std", "std", std, c, false);
    float *dy = input(run, "dy");
    OK(strix_batch_norm_backward(run->be, dy, gamma, xhat, std, dx, dgamma, dbeta, n, c, s));
    collect(run, "dx", "dx", dx, count, false);
    collect(run, "dgamma", "dgamma", dgamma, c, false);
    collect(run, "dbeta", "dbeta", dbeta, c, false);
    /* no gamma/beta; backward in place without parameter grads */
    float *out_plain = output(run, count);
    OK(strix_batch_norm_forward(run->be, x, NULL, NULL, xhat, out_plain, std, n, c, s, eps));
    collect(run, "out (no gamma/beta)", "out_plain", out_plain, count, false);
    OK(strix_batch_norm_backward(run->be, dy, NULL, xhat, std, dy, NULL, NULL, n, c, s));
    collect(run, "dx (no gamma, in place)", "dx_plain", dy, count, false);
    /* running statistics */
    float *rm = input(run, "rm0"), *rv = input(run, "rv0");
    OK(strix_batch_norm_update_running(run->be, x, rm, rv, n, c, s, scalar(run, "momentum")));
    collect(run, "running mean", "rm1", rm, c, false);
    collect(run, "running var", "rv1", rv, c, false);
    /* eval mode from rm0/rv0 */
    float *xhat_e = output(run, count), *out_e = output(run, count), *std_e = output(run, c);
    OK(strix_batch_norm_eval_forward(run->be, x, gamma, beta, input(run, "rm0"),
                                     input(run, "rv0"), xhat_e, out_e, std_e, n, c, s, eps));
    collect(run, "eval out", "out_eval", out_e, count, false);
    collect(run, "eval xhat", "xhat_eval", xhat_e, count, false);
    collect(run, "eval std", "std_eval", std_e, c, false);
    float *dx_e = output(run, count), *dgamma_e = output(run, c), *dbeta_e = output(run, c);
    OK(strix_batch_norm_eval_backward(run->be, input(run, "dy"), gamma, xhat_e, std_e, dx_e,
                                      dgamma_e, dbeta_e, n, c, s));
    collect(run, "eval dx", "dx_eval", dx_e, count, false);
    collect(run, "eval dgamma", "dgamma_eval", dgamma_e, c, false);
    collect(run, "eval dbeta", "dbeta_eval", dbeta_e, c, false);
    /* in place: out aliases x */
    OK(strix_batch_norm_forward(run->be, x, gamma, beta, xhat, x, std, n, c, s, eps));
    collect(run, "out (in place)", "out", x, count, false);
}

static void run_group_norm(op_run *run) {
    size_t n = dim(run, "x", 0), c = dim(run, "x", 1), s = dim(run, "x", 2), count = n * c * s;
    size_t groups = (size_t)scalar(run, "groups");
    float eps = scalar(run, "eps");
    float *x = input(run, "x"), *gamma = input(run, "gamma"), *beta = input(run, "beta");
    float *xhat = output(run, count), *out = output(run, count), *std = output(run, n * groups);
    float *dx = output(run, count), *dgamma = output(run, c), *dbeta = output(run, c);
    OK(strix_group_norm_forward(run->be, x, gamma, beta, xhat, out, std, n, c, s, groups, eps));
    collect(run, "out", "out", out, count, false);
    collect(run, "xhat", "xhat", xhat, count, false);
    collect(run, "std", "std", std, n * groups, false);
    float *dy = input(run, "dy");
    OK(strix_group_norm_backward(run->be, dy, gamma, xhat, std, dx, dgamma, dbeta, n, c, s,
                                 groups));
    collect(run, "dx", "dx", dx, count, false);
    collect(run, "dgamma", "dgamma", dgamma, c, false);
    collect(run, "dbeta", "dbeta", dbeta, c, false);
    /* in place (grad_in aliases grad_out) with parameter grads */
    float *dgamma2 = output(run, c), *dbeta2 = output(run, c);
    OK(strix_group_norm_backward(run->be, dy, gamma, xhat, std, dy, dgamma2, dbeta2, n, c, s,
                                 groups));
    collect(run, "dx (in place)", "dx", dy, count, false);
    collect(run, "dgamma (in place)", "dgamma", dgamma2, c, false);
    collect(run, "dbeta (in place)", "dbeta", dbeta2, c, false);
    float *out_plain = output(run, count), *dx_plain = output(run, count);
    OK(strix_group_norm_forward(run->be, x, NULL, NULL, xhat, out_plain, std, n, c, s, groups,
                                eps));
    collect(run, "out (no gamma/beta)", "out_plain", out_plain, count, false);
    OK(strix_group_norm_backward(run->be, input(run, "dy"), NULL, xhat, std, dx_plain, NULL,
                                 NULL, n, c, s, groups));
    collect(run, "dx (no gamma)", "dx_plain", dx_plain, count, false);
}

/* atol/rtol 1e-5/1e-4: every output is O(1) (BatchNorm sums up to ~20) and a handful of float
 * roundings away from PyTorch's float64 result; selections (im2col, max pool) are bit-exact. */
/* The fused Conv2d against F.conv2d and its autograd (weight/bias grads added into a base), and
 * bit for bit against its documented composition on the forward: im2col then W·col. */
static void run_conv2d(op_run *run) {
    strix_conv_geom g = geom_of(run);
    size_t n = dim(run, "x", 0), c = dim(run, "x", 1), h = dim(run, "x", 2), w = dim(run, "x", 3);
    size_t oc = (size_t)scalar(run, "oc"), nz = count_of(run, "z");
    bool bias = tl_golden_get(run->g, "bias") != NULL;
    float *x = input(run, "x"), *wt = input(run, "weight"), *b = bias ? input(run, "bias") : NULL;
    float *z = output(run, nz), *out = bias ? output(run, nz) : NULL;
    OK(strix_conv2d_forward(run->be, x, wt, b, z, out, n, c, h, w, oc, &g));
    collect(run, "z", "z", z, nz, false);
    collect(run, "out", "out", bias ? out : z, nz, false);
    float *dw = input(run, "dw_base"), *db = bias ? input(run, "db_base") : NULL;
    float *dx = output(run, n * c * h * w);
    OK(strix_conv2d_backward(run->be, x, wt, input(run, "dy"), dw, db, dx, n, c, h, w, oc, &g));
    collect(run, "dx", "dx", dx, n * c * h * w, false);
    collect(run, "dw", "dw", dw, count_of(run, "dw"), false);
    if (bias) collect(run, "db", "db", db, oc, false);
    /* composition: per example im2col then the own GEMM (same bits on every backend's own
     * kernel; checked against z within rounding on cpu-blas) */
    size_t P = c * g.kh * g.kw, Q = nz / (n * oc);
    float *col = output(run, n * P * Q), *zc = output(run, nz);
    OK(strix_im2col(run->be, x, col, n, c, h, w, &g));
    for (size_t e = 0; e < n; e++)
        OK(strix_gemm(run->be, wt, col + e * P * Q, zc + e * oc * Q, oc, P, Q));
    float *zh = tl_malloc_floats(nz), *zch = tl_malloc_floats(nz);
    tl_download(run->be, zh, z, nz * sizeof(float));
    tl_download(run->be, zch, zc, nz * sizeof(float));
    if (strcmp(strix_backend_name(run->be), "cpu") == 0)
        assert_true(tl_check_bits("conv2d z vs im2col+gemm", zh, zch, nz));
    free(zh);
    free(zch);
}

const op_case ops_cnn_cases[] = {
    {"cnn_im2col_k3s1p1", run_im2col, ATOL, RTOL},
    {"cnn_im2col_k2x3s2x1p0x1", run_im2col, ATOL, RTOL},
    {"cnn_im2col_k5x4s2x3p2x1", run_im2col, ATOL, RTOL},
    {"cnn_im2col_k2s3p1", run_im2col, ATOL, RTOL},
    {"cnn_im2col_k1s2", run_im2col, ATOL, RTOL},
    {"cnn_max_pool_k2s2", run_max_pool, ATOL, RTOL},
    {"cnn_max_pool_k3s2p1", run_max_pool, ATOL, RTOL},
    {"cnn_max_pool_k3x2s1x2p1x0", run_max_pool, ATOL, RTOL},
    {"cnn_max_pool_ties", run_max_pool, ATOL, RTOL},
    {"cnn_avg_pool_k2s2", run_avg_pool, ATOL, RTOL},
    {"cnn_avg_pool_k3s1p1", run_avg_pool, ATOL, RTOL},
    {"cnn_avg_pool_k3x2s2x1p1x0", run_avg_pool, ATOL, RTOL},
    {"cnn_add_channel_vector", run_add_channel_vector, ATOL, RTOL},
    {"cnn_batch_norm_a", run_batch_norm, ATOL, RTOL},
    {"cnn_batch_norm_b", run_batch_norm, ATOL, RTOL},
    {"cnn_batch_norm_c", run_batch_norm, ATOL, RTOL},
    {"cnn_group_norm_a", run_group_norm, ATOL, RTOL},
    {"cnn_group_norm_b", run_group_norm, ATOL, RTOL},
    {"cnn_group_norm_c", run_group_norm, ATOL, RTOL},
    {"cnn_conv2d_k3s1p1", run_conv2d, ATOL, RTOL},
    {"cnn_conv2d_k2x3s2x1p0x1_nobias", run_conv2d, ATOL, RTOL},
};
const size_t ops_cnn_case_count = sizeof ops_cnn_cases / sizeof ops_cnn_cases[0];

// ---- im2col / col2im against host transcriptions -----------------------------------------------

typedef struct conv_shape {
    size_t n, c, h, w;
    strix_conv_geom g;
} conv_shape;

/* Odd sizes, non-square kernels, stride > kernel, padding >= kernel, windows that do not fit. */
static const conv_shape conv_shapes[] = {
    {2, 3, 7, 5, {3, 3, 1, 1, 1, 1}},   {1, 2, 17, 23, {3, 2, 2, 1, 1, 0}},
    {2, 1, 11, 9, {2, 3, 3, 2, 2, 3}},  {1, 3, 6, 8, {5, 4, 1, 3, 2, 1}},
    {1, 1, 4, 4, {1, 1, 1, 1, 0, 0}},   {1, 2, 3, 3, {5, 5, 1, 1, 0, 0}}, /* no output */
    {3, 2, 5, 6, {2, 2, 2, 2, 0, 0}},   {1, 1, 9, 7, {4, 3, 2, 2, 3, 2}},
};

/* Value of pixel (y, x) seen by tap (i, j) of output (oy, ox), 0 outside. */
static float tap_of(const float *plane, const conv_shape *s, size_t i, size_t j, size_t oy,
                    size_t ox) {
    long y = (long)(oy * s->g.stride_h + i) - (long)s->g.pad_h;
    long x = (long)(ox * s->g.stride_w + j) - (long)s->g.pad_w;
    if (y < 0 || x < 0 || y >= (long)s->h || x >= (long)s->w) return 0.0f;
    return plane[(size_t)y * s->w + (size_t)x];
}

static void test_im2col_col2im_orders(void **state) {
    (void)state;
    for (size_t si = 0; si < sizeof conv_shapes / sizeof conv_shapes[0]; si++) {
        const conv_shape *s = &conv_shapes[si];
        const strix_conv_geom *g = &s->g;
        size_t oh = strix_conv_out_h(g, s->h), ow = strix_conv_out_w(g, s->w);
        size_t planes = s->n * s->c, pixels = planes * s->h * s->w, kk = g->kh * g->kw;
        size_t cols = planes * kk * oh * ow;
        float *x = tl_malloc_floats(pixels), *y = tl_malloc_floats(cols);
        float *base = tl_malloc_floats(pixels), *want_col = tl_malloc_floats(cols);
        float *want_img = tl_malloc_floats(pixels), *got = tl_malloc_floats(cols + pixels);
        tl_fill_uniform(x, pixels, 100 + si, -1.0f, 1.0f);
        tl_fill_uniform(y, cols, 200 + si, -1.0f, 1.0f);
        tl_fill_uniform(base, pixels, 300 + si, -1.0f, 1.0f);
        /* im2col: row p = (ci·kh + i)·kw + j of example e, column oy·ow + ox */
        for (size_t pl = 0; pl < planes; pl++)
            for (size_t i = 0; i < g->kh; i++)
                for (size_t j = 0; j < g->kw; j++)
                    for (size_t oy = 0; oy < oh; oy++)
                        for (size_t ox = 0; ox < ow; ox++)
                            want_col[((pl * kk + i * g->kw + j) * oh + oy) * ow + ox] =
                                tap_of(x + pl * s->h * s->w, s, i, j, oy, ox);
        /* col2im: each pixel from its base value, taps i descending then j descending */
        double dot_col = 0.0, dot_img = 0.0;
        for (size_t pl = 0; pl < planes; pl++) {
            for (size_t py = 0; py < s->h; py++) {
                for (size_t px = 0; px < s->w; px++) {
                    float acc = base[(pl * s->h + py) * s->w + px];
                    for (size_t i = g->kh; i-- > 0;) {
                        for (size_t j = g->kw; j-- > 0;) {
                            long ty = (long)(py + g->pad_h) - (long)i;
                            long tx = (long)(px + g->pad_w) - (long)j;
                            if (ty < 0 || tx < 0 || ty % (long)g->stride_h != 0 ||
                                tx % (long)g->stride_w != 0)
                                continue;
                            size_t oy = (size_t)ty / g->stride_h, ox = (size_t)tx / g->stride_w;
                            if (oy >= oh || ox >= ow) continue;
                            acc += y[((pl * kk + i * g->kw + j) * oh + oy) * ow + ox];
                        }
                    }
                    want_img[(pl * s->h + py) * s->w + px] = acc;
                    /* the pixel lane of the GPU backends gives the same bits */
                    float lane = strix_col2im_pixel(y + pl * kk * oh * ow,
                                                    base[(pl * s->h + py) * s->w + px], py, px,
                                                    oh, ow, g);
                    assert_true(memcmp(&lane, &acc, sizeof acc) == 0);
                }
            }
        }
        for (size_t k = 0; k < cols; k++) dot_col += (double)want_col[k] * (double)y[k];
        for (size_t k = 0; k < pixels; k++)
            dot_img += (double)x[k] * ((double)want_img[k] - (double)base[k]);
        /* adjoint: <im2col(x), y> = <x, col2im(y)> (col2im is im2col's backward) */
        assert_true(fabs(dot_col - dot_img) <= 1e-4 * (1.0 + fabs(dot_col)));
        FOR_EACH_BACKEND(be) {
            float *dx = up(be, x, pixels), *dcol = up(be, y, cols), *dimg = up(be, base, pixels);
            float *dout = up(be, y, cols); /* overwritten (all of it) by im2col */
            OK(strix_im2col(be, dx, dout, s->n, s->c, s->h, s->w, g));
            down(be, got, dout, cols);
            assert_true(tl_check_bits("im2col order", got, want_col, cols));
            OK(strix_col2im_add(be, dcol, dimg, s->n, s->c, s->h, s->w, g));
            down(be, got, dimg, pixels);
            assert_true(tl_check_bits("col2im_add order", got, want_img, pixels));
            strix_free(be, dx), strix_free(be, dcol), strix_free(be, dimg), strix_free(be, dout);
        }
        free(x), free(y), free(base), free(want_col), free(want_img), free(got);
    }
}

// ---- pooling edge cases ------------------------------------------------------------------------

/* Max pool of one plane on every backend; checks values and argmax exactly. */
static void expect_max_pool(const float *plane, size_t h, size_t w, strix_conv_geom g,
                            const float *want, const int32_t *want_arg, const char *label) {
    size_t outs = strix_conv_out_h(&g, h) * strix_conv_out_w(&g, w);
    float got[64];
    int32_t got_arg[64];
    assert_true(outs <= 64);
    FOR_EACH_BACKEND(be) {
        float *in = up(be, plane, h * w), *out = tl_device_alloc(be, outs * sizeof(float));
        int32_t *arg = tl_device_alloc(be, outs * sizeof(int32_t));
        OK(strix_max_pool_forward(be, in, out, arg, 1, h, w, &g));
        down(be, got, out, outs);
        tl_download(be, got_arg, arg, outs * sizeof(int32_t));
        assert_true(tl_check_bits(label, got, want, outs));
        assert_true(tl_check_i32(label, got_arg, want_arg, outs));
        /* unpool of ones into 10s: +1 at each winner, nothing for argmax -1 */
        float ones[64], tens[64], back[64], want_back[64];
        for (size_t k = 0; k < 64; k++) ones[k] = 1.0f, tens[k] = 10.0f;
        for (size_t k = 0; k < h * w; k++) want_back[k] = 10.0f;
        for (size_t k = 0; k < outs; k++)
            if (want_arg[k] >= 0) want_back[want_arg[k]] += 1.0f;
        float *src = up(be, ones, outs), *dst = up(be, tens, h * w);
        OK(strix_max_unpool(be, src, arg, dst, 1, h, w, &g));
        down(be, back, dst, h * w);
        assert_true(tl_check_bits(label, back, want_back, h * w));
        strix_free(be, in), strix_free(be, out), strix_free(be, arg), strix_free(be, src);
        strix_free(be, dst);
    }
}

static void test_max_pool_edges(void **state) {
    (void)state;
    const float inf = INFINITY;
    strix_conv_geom k2 = {2, 2, 2, 2, 0, 0};
    /* ties: the first maximum in row-then-column order wins */
    const float ties[] = {1, 2, 2, 0, 2, 2, 2, 0, 5, 5, 5, 5, 5, 5, 5, 5};
    expect_max_pool(ties, 4, 4, k2, (const float[]){2, 2, 5, 5}, (const int32_t[]){1, 2, 8, 10},
                    "max pool ties");
    /* NaN never wins (PyTorch would propagate it); all NaN or all -inf: -inf and argmax -1 */
    const float nan_plane[] = {NAN, -3, NAN, NAN, -5, NAN, NAN, NAN,
                               -inf, -inf, 7, NAN, -inf, -inf, NAN, 7};
    expect_max_pool(nan_plane, 4, 4, k2, (const float[]){-3, -inf, -inf, 7},
                    (const int32_t[]){1, -1, -1, 10}, "max pool NaN");
    /* padding taps never win, even over negative values; pad >= kernel: all-padding windows */
    const float neg[] = {-4, -3, -2, -1, -6, -5, -9, -8, -7};
    strix_conv_geom k2p1 = {2, 2, 2, 2, 1, 1};
    expect_max_pool(neg, 3, 3, k2p1, (const float[]){-4, -2, -1, -5},
                    (const int32_t[]){0, 2, 3, 5}, "max pool padding");
    strix_conv_geom k1p1 = {1, 1, 1, 1, 1, 1};
    const float two[] = {3, -1, 0, 2};
    expect_max_pool(two, 2, 2, k1p1,
                    (const float[]){-inf, -inf, -inf, -inf, -inf, 3, -1, -inf, -inf, 0, 2, -inf,
                                    -inf, -inf, -inf, -inf},
                    (const int32_t[]){-1, -1, -1, -1, -1, 0, 1, -1, -1, 2, 3, -1, -1, -1, -1, -1},
                    "max pool all-padding windows");
    /* overlapping windows: one pixel wins two windows and gets both gradients */
    const float peak[] = {0, 0, 0, 0, 9, 0, 0, 0, 0};
    strix_conv_geom k2s1 = {2, 2, 1, 1, 0, 0};
    expect_max_pool(peak, 3, 3, k2s1, (const float[]){9, 9, 9, 9}, (const int32_t[]){4, 4, 4, 4},
                    "max pool shared winner");
}

static void test_avg_pool_edges(void **state) {
    (void)state;
    /* count_include_pad: corner windows of a 3x3 window over a 2x2 plane of ones hold 4 ones */
    const float ones[] = {1, 1, 1, 1};
    strix_conv_geom k3p1 = {3, 3, 1, 1, 1, 1};
    const float want[] = {4.0f / 9.0f, 4.0f / 9.0f, 4.0f / 9.0f, 4.0f / 9.0f};
    /* backward of ones: every pixel is in the 4 windows, each gives 1/9 */
    const float ninth = 1.0f / 9.0f;
    const float want_back = (((2.0f + ninth) + ninth) + ninth) + ninth;
    FOR_EACH_BACKEND(be) {
        float *in = up(be, ones, 4), *out = up(be, ones, 4), got[4];
        OK(strix_avg_pool_forward(be, in, out, 1, 2, 2, &k3p1));
        down(be, got, out, 4);
        assert_true(tl_check_bits("avg pool padding", got, want, 4));
        OK(strix_fill(be, out, 2.0f, 4));
        OK(strix_avg_pool_backward(be, in, out, 1, 2, 2, &k3p1));
        down(be, got, out, 4);
        for (int k = 0; k < 4; k++) assert_true(got[k] == want_back);
        strix_free(be, in), strix_free(be, out);
    }
}

/* The gathers against their one-pixel kernels (what a GPU lane runs), bit for bit: unpool with
 * argmax from the forward and with arbitrary indices (-1, outside the window), avg backward. */
static void test_pool_gathers_match_pixel_lanes(void **state) {
    (void)state;
    for (size_t si = 0; si < sizeof conv_shapes / sizeof conv_shapes[0]; si++) {
        const conv_shape *s = &conv_shapes[si];
        const strix_conv_geom *g = &s->g;
        size_t oh = strix_conv_out_h(g, s->h), ow = strix_conv_out_w(g, s->w);
        size_t planes = s->n * s->c, plane = s->h * s->w, pixels = planes * plane;
        size_t outs = planes * oh * ow;
        float *x = tl_malloc_floats(pixels), *base = tl_malloc_floats(pixels);
        float *go = tl_malloc_floats(outs + 1), *want = tl_malloc_floats(pixels);
        float *got = tl_malloc_floats(pixels), *pick = tl_malloc_floats(outs + 1);
        int32_t *arg = malloc((outs + 1) * sizeof *arg);
        tl_fill_uniform(x, pixels, 400 + si, -1.0f, 1.0f);
        tl_fill_uniform(base, pixels, 500 + si, -1.0f, 1.0f);
        tl_fill_uniform(go, outs + 1, 600 + si, -1.0f, 1.0f);
        tl_fill_uniform(pick, outs + 1, 700 + si, 0.0f, 1.0f);
        FOR_EACH_BACKEND(be) {
            float *dx = up(be, x, pixels), *dgo = up(be, go, outs), *dimg = up(be, base, pixels);
            float *dout = tl_device_alloc(be, outs * sizeof(float));
            int32_t *darg = tl_device_alloc(be, outs * sizeof(int32_t));
            for (int mode = 0; mode < 3; mode++) {
                if (mode == 0) { /* max pool's own argmax */
                    OK(strix_max_pool_forward(be, dx, dout, darg, planes, s->h, s->w, g));
                    tl_download(be, arg, darg, outs * sizeof(int32_t));
                } else if (mode == 1) { /* any index in the plane, or -1 */
                    for (size_t k = 0; k < outs; k++)
                        arg[k] = (int32_t)(pick[k] * (float)(plane + 1)) - 1;
                    OK(strix_copy(be, darg, arg, outs * sizeof(int32_t), STRIX_COPY_H2D));
                }
                OK(strix_copy(be, dimg, base, pixels * sizeof(float), STRIX_COPY_H2D));
                if (mode < 2)
                    OK(strix_max_unpool(be, dgo, darg, dimg, planes, s->h, s->w, g));
                else
                    OK(strix_avg_pool_backward(be, dgo, dimg, planes, s->h, s->w, g));
                down(be, got, dimg, pixels);
                for (size_t p = 0; p < planes; p++) {
                    for (size_t y = 0; y < s->h; y++) {
                        for (size_t xx = 0; xx < s->w; xx++) {
                            size_t at = p * plane + y * s->w + xx;
                            const float *src = go + p * oh * ow;
                            want[at] = mode < 2 ? strix_max_unpool_pixel(src, arg + p * oh * ow,
                                                                         base[at], y, xx, s->w,
                                                                         oh, ow, g)
                                                : strix_avg_pool_backward_pixel(src, base[at], y,
                                                                                xx, oh, ow, g);
                        }
                    }
                }
                assert_true(tl_check_bits(mode < 2 ? "max_unpool vs pixel lanes"
                                                   : "avg_pool_backward vs pixel lanes",
                                          got, want, pixels));
            }
            strix_free(be, dx), strix_free(be, dgo), strix_free(be, dimg), strix_free(be, dout);
            strix_free(be, darg);
        }
        free(x), free(base), free(go), free(want), free(got), free(pick), free(arg);
    }
}

// ---- BatchNorm: documented lane order, M = 1, M = 0 --------------------------------------------

/* The documented 16-lane sum over the rows of channel ch (kernels/norm.h, written out again). */
static float lane_sum(const float *v, size_t n, size_t c, size_t s, size_t ch, float mean,
                      bool squares) {
    float lanes[16] = {0};
    for (size_t e = 0; e < n; e++) {
        for (size_t k = 0; k < s; k++) {
            float x = v[(e * c + ch) * s + k];
            float d = x - mean;
            lanes[k % 16] += squares ? d * d : x;
        }
    }
    for (size_t half = 8; half > 0; half /= 2)
        for (size_t l = 0; l < half; l++) lanes[l] += lanes[l + half];
    return lanes[0];
}

static void test_batch_norm_order_and_edges(void **state) {
    (void)state;
    const size_t n = 3, c = 2, s = 37, count = n * c * s;
    float *x = tl_malloc_floats(count);
    tl_fill_uniform(x, count, 77, 4.0f, 6.0f); /* an offset: the two-pass variance matters */
    float want_std[2], want_rm[2], want_rv[2], rm0[2] = {0.5f, -1.0f}, rv0[2] = {2.0f, 3.0f};
    for (size_t ch = 0; ch < c; ch++) {
        float mean = lane_sum(x, n, c, s, ch, 0.0f, false) / (float)(n * s);
        float sq = lane_sum(x, n, c, s, ch, mean, true);
        want_std[ch] = sqrtf(sq / (float)(n * s) + 1e-5f);
        want_rm[ch] = (1.0f - 0.1f) * rm0[ch] + 0.1f * mean;
        want_rv[ch] = (1.0f - 0.1f) * rv0[ch] + 0.1f * (sq / (float)(n * s - 1));
    }
    FOR_EACH_BACKEND(be0) { /* a GPU's block sums to rounding, its exact twin bit for bit */
        strix_backend *twin = op_exact_twin(bi_);
        FOR_BACKEND_AND_TWIN(be, be0, twin) {
            bool bits = strix_backend_device(be) == STRIX_DEVICE_CPU || be == twin;
            float *dx = up(be, x, count), *xhat = up(be, x, count), *out = up(be, x, count);
            float *std = up(be, x, c), *rm = up(be, rm0, c), *rv = up(be, rv0, c), small[2];
            OK(strix_batch_norm_forward(be, dx, NULL, NULL, xhat, out, std, n, c, s, 1e-5f));
            down(be, small, std, c);
            assert_true(op_check_order("batch norm std (lane order)", small, want_std, c, bits));
            OK(strix_batch_norm_update_running(be, dx, rm, rv, n, c, s, 0.1f));
            down(be, small, rm, c);
            assert_true(op_check_order("running mean", small, want_rm, c, bits));
            down(be, small, rv, c);
            assert_true(op_check_order("running var", small, want_rv, c, bits));
            /* M = 1 (one example, one position): var 0, xhat 0, out = beta; running var kept */
            const float one[] = {3.0f, -2.0f}, gamma[] = {2.0f, 3.0f}, beta[] = {0.25f, -0.5f};
            float *d1 = up(be, one, 2), *dg = up(be, gamma, 2), *db = up(be, beta, 2);
            OK(strix_copy(be, rm, rm0, sizeof rm0, STRIX_COPY_H2D));
            OK(strix_copy(be, rv, rv0, sizeof rv0, STRIX_COPY_H2D));
            OK(strix_batch_norm_forward(be, d1, dg, db, xhat, out, std, 1, 2, 1, 1e-5f));
            down(be, small, out, 2);
            assert_true(small[0] == 0.25f && small[1] == -0.5f);
            down(be, small, std, 2);
            assert_true(small[0] == sqrtf(1e-5f) && small[1] == sqrtf(1e-5f));
            OK(strix_batch_norm_update_running(be, d1, rm, rv, 1, 2, 1, 0.1f));
            down(be, small, rm, 2);
            assert_true(small[0] == (1.0f - 0.1f) * 0.5f + 0.1f * 3.0f);
            assert_true(small[1] == (1.0f - 0.1f) * -1.0f + 0.1f * -2.0f);
            down(be, small, rv, 2);
            assert_true(tl_check_bits("running var kept (M = 1)", small, rv0, 2));
            /* M = 0: nothing changes */
            OK(strix_copy(be, rm, rm0, sizeof rm0, STRIX_COPY_H2D));
            OK(strix_batch_norm_update_running(be, d1, rm, rv, 0, 2, 1, 0.1f));
            down(be, small, rm, 2);
            assert_true(tl_check_bits("running mean kept (M = 0)", small, rm0, 2));
            strix_free(be, dx), strix_free(be, xhat), strix_free(be, out), strix_free(be, std);
            strix_free(be, rm), strix_free(be, rv), strix_free(be, d1), strix_free(be, dg);
            strix_free(be, db);
        }
        strix_backend_free(twin);
    }
    free(x);
}

// ---- finite differences ------------------------------------------------------------------------

/* A scalar loss L(params) = Σ R·forward(params), evaluated on the backend in float, summed in
 * double. params is the host array the check perturbs. */
typedef double (*fd_loss)(strix_backend *be, const float *params, const void *ctx);

/* Central differences in double of every parameter against the analytic gradient. */
static bool check_fd(strix_backend *be, float *params, size_t count, const float *analytic,
                     fd_loss loss, const void *ctx, float eps, const char *label) {
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) {
        float keep_value = params[i];
        float hi = keep_value + eps, lo = keep_value - eps;
        params[i] = hi;
        double up_loss = loss(be, params, ctx);
        params[i] = lo;
        double down_loss = loss(be, params, ctx);
        params[i] = keep_value;
        double fd = (up_loss - down_loss) / ((double)hi - (double)lo);
        double err = fabs(fd - (double)analytic[i]);
        if (err > 1e-3 + 1e-2 * fabs(fd)) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: analytic %.6g, finite differences %.6g\n", label, i,
                        analytic[i], fd);
            bad++;
        }
    }
    if (bad) fprintf(stderr, "%s: %zu of %zu gradients off\n", label, bad, count);
    return bad == 0;
}

static double weighted(strix_backend *be, const float *device, const float *weights, size_t n) {
    float host[512];
    assert_true(n <= 512);
    down(be, host, device, n);
    double total = 0.0;
    for (size_t k = 0; k < n; k++) total += (double)host[k] * (double)weights[k];
    return total;
}

/* BatchNorm / GroupNorm: params = x (n, c, s), then gamma (c), then beta (c). */
typedef struct norm_ctx {
    size_t n, c, s, groups; /* groups 0: BatchNorm */
    bool eval;
    const float *weights, *running_mean, *running_var;
} norm_ctx;

static double norm_loss(strix_backend *be, const float *params, const void *ctx_) {
    const norm_ctx *ctx = ctx_;
    size_t count = ctx->n * ctx->c * ctx->s, c = ctx->c;
    float *x = up(be, params, count), *gamma = up(be, params + count, c);
    float *beta = up(be, params + count + c, c), *xhat = up(be, params, count);
    float *out = up(be, params, count), *std = up(be, params, count);
    if (ctx->groups) {
        OK(strix_group_norm_forward(be, x, gamma, beta, xhat, out, std, ctx->n, c, ctx->s,
                                    ctx->groups, 1e-5f));
    } else if (ctx->eval) {
        float *rm = up(be, ctx->running_mean, c), *rv = up(be, ctx->running_var, c);
        OK(strix_batch_norm_eval_forward(be, x, gamma, beta, rm, rv, xhat, out, std, ctx->n, c,
                                         ctx->s, 1e-5f));
        strix_free(be, rm), strix_free(be, rv);
    } else {
        OK(strix_batch_norm_forward(be, x, gamma, beta, xhat, out, std, ctx->n, c, ctx->s,
                                    1e-5f));
    }
    double total = weighted(be, out, ctx->weights, count);
    strix_free(be, x), strix_free(be, gamma), strix_free(be, beta), strix_free(be, xhat);
    strix_free(be, out), strix_free(be, std);
    return total;
}

/* The analytic gradient of norm_loss (dx, dgamma, dbeta concatenated) from the backend. */
static void norm_grads(strix_backend *be, const norm_ctx *ctx, const float *params, float *grads) {
    size_t count = ctx->n * ctx->c * ctx->s, c = ctx->c;
    float *x = up(be, params, count), *gamma = up(be, params + count, c);
    float *beta = up(be, params + count + c, c), *xhat = up(be, params, count);
    float *out = up(be, params, count), *std = up(be, params, count);
    float *go = up(be, ctx->weights, count), *dx = up(be, params, count);
    float *dgamma = up(be, params, c), *dbeta = up(be, params, c);
    if (ctx->groups) {
        OK(strix_group_norm_forward(be, x, gamma, beta, xhat, out, std, ctx->n, c, ctx->s,
                                    ctx->groups, 1e-5f));
        OK(strix_group_norm_backward(be, go, gamma, xhat, std, dx, dgamma, dbeta, ctx->n, c,
                                     ctx->s, ctx->groups));
    } else if (ctx->eval) {
        float *rm = up(be, ctx->running_mean, c), *rv = up(be, ctx->running_var, c);
        OK(strix_batch_norm_eval_forward(be, x, gamma, beta, rm, rv, xhat, out, std, ctx->n, c,
                                         ctx->s, 1e-5f));
        OK(strix_batch_norm_eval_backward(be, go, gamma, xhat, std, dx, dgamma, dbeta, ctx->n,
                                          c, ctx->s));
        strix_free(be, rm), strix_free(be, rv);
    } else {
        OK(strix_batch_norm_forward(be, x, gamma, beta, xhat, out, std, ctx->n, c, ctx->s,
                                    1e-5f));
        OK(strix_batch_norm_backward(be, go, gamma, xhat, std, dx, dgamma, dbeta, ctx->n, c,
                                     ctx->s));
    }
    down(be, grads, dx, count);
    down(be, grads + count, dgamma, c);
    down(be, grads + count + c, dbeta, c);
    strix_free(be, x), strix_free(be, gamma), strix_free(be, beta), strix_free(be, xhat);
    strix_free(be, out), strix_free(be, std), strix_free(be, go), strix_free(be, dx);
    strix_free(be, dgamma), strix_free(be, dbeta);
}

static void fd_norm(norm_ctx ctx, const char *label) {
    size_t count = ctx.n * ctx.c * ctx.s, total = count + 2 * ctx.c;
    float params[256], grads[256], weights[256], rm[8], rv[8];
    assert_true(total <= 256 && ctx.c <= 8);
    tl_fill_uniform(params, count, 11, -2.0f, 2.0f);
    tl_fill_uniform(params + count, 2 * ctx.c, 12, -1.5f, 1.5f);
    tl_fill_uniform(weights, count, 13, -1.0f, 1.0f);
    tl_fill_uniform(rm, ctx.c, 14, -0.5f, 0.5f);
    tl_fill_uniform(rv, ctx.c, 15, 0.5f, 1.5f);
    ctx.weights = weights, ctx.running_mean = rm, ctx.running_var = rv;
    FOR_EACH_BACKEND(be) {
        norm_grads(be, &ctx, params, grads);
        assert_true(check_fd(be, params, total, grads, norm_loss, &ctx, 1e-2f, label));
    }
}

static void test_norm_finite_differences(void **state) {
    (void)state;
    fd_norm((norm_ctx){.n = 2, .c = 3, .s = 5}, "batch norm backward");
    fd_norm((norm_ctx){.n = 3, .c = 2, .s = 4, .eval = true}, "batch norm eval backward");
    fd_norm((norm_ctx){.n = 2, .c = 4, .s = 5, .groups = 2}, "group norm backward");
}

/* Pools and im2col: params = the input image; the gradient comes from the gather primitives. */
typedef enum { FD_MAX_POOL, FD_AVG_POOL, FD_IM2COL } fd_pool_kind;

typedef struct pool_ctx {
    fd_pool_kind kind;
    conv_shape shape;
    const float *weights;
} pool_ctx;

static size_t pool_outputs(const pool_ctx *ctx) {
    const conv_shape *s = &ctx->shape;
    size_t per = strix_conv_out_h(&s->g, s->h) * strix_conv_out_w(&s->g, s->w);
    size_t taps = ctx->kind == FD_IM2COL ? s->g.kh * s->g.kw : 1;
    return s->n * s->c * taps * per;
}

static double pool_loss(strix_backend *be, const float *params, const void *ctx_) {
    const pool_ctx *ctx = ctx_;
    const conv_shape *s = &ctx->shape;
    size_t pixels = s->n * s->c * s->h * s->w, outs = pool_outputs(ctx);
    float *x = up(be, params, pixels), *out = up(be, ctx->weights, outs);
    int32_t *arg = tl_device_alloc(be, outs * sizeof(int32_t));
    if (ctx->kind == FD_MAX_POOL)
        OK(strix_max_pool_forward(be, x, out, arg, s->n * s->c, s->h, s->w, &s->g));
    else if (ctx->kind == FD_AVG_POOL)
        OK(strix_avg_pool_forward(be, x, out, s->n * s->c, s->h, s->w, &s->g));
    else
        OK(strix_im2col(be, x, out, s->n, s->c, s->h, s->w, &s->g));
    double total = weighted(be, out, ctx->weights, outs);
    strix_free(be, x), strix_free(be, out), strix_free(be, arg);
    return total;
}

static void fd_pool(pool_ctx ctx, const char *label) {
    const conv_shape *s = &ctx.shape;
    size_t pixels = s->n * s->c * s->h * s->w, outs = pool_outputs(&ctx);
    float params[256], grads[256], weights[512];
    assert_true(pixels <= 256 && outs <= 512);
    /* distinct values 0.05 apart (shuffled): no max-pool winner changes within eps */
    for (size_t k = 0; k < pixels; k++) params[k] = 0.05f * (float)((k * 37) % pixels) - 1.0f;
    tl_fill_uniform(weights, outs, 21, -1.0f, 1.0f);
    ctx.weights = weights;
    FOR_EACH_BACKEND(be) {
        float *x = up(be, params, pixels), *go = up(be, weights, outs);
        float *out = up(be, weights, outs), *dx = up(be, params, pixels);
        int32_t *arg = tl_device_alloc(be, outs * sizeof(int32_t));
        OK(strix_fill(be, dx, 0.0f, pixels));
        size_t planes = s->n * s->c;
        if (ctx.kind == FD_MAX_POOL) {
            OK(strix_max_pool_forward(be, x, out, arg, planes, s->h, s->w, &s->g));
            OK(strix_max_unpool(be, go, arg, dx, planes, s->h, s->w, &s->g));
        } else if (ctx.kind == FD_AVG_POOL) {
            OK(strix_avg_pool_backward(be, go, dx, planes, s->h, s->w, &s->g));
        } else {
            OK(strix_col2im_add(be, go, dx, s->n, s->c, s->h, s->w, &s->g));
        }
        down(be, grads, dx, pixels);
        assert_true(check_fd(be, params, pixels, grads, pool_loss, &ctx, 1e-3f, label));
        strix_free(be, x), strix_free(be, go), strix_free(be, out), strix_free(be, dx);
        strix_free(be, arg);
    }
}

static void test_pool_conv_finite_differences(void **state) {
    (void)state;
    fd_pool((pool_ctx){FD_MAX_POOL, {2, 2, 5, 6, {3, 3, 2, 2, 1, 1}}, NULL}, "max pool backward");
    fd_pool((pool_ctx){FD_MAX_POOL, {1, 3, 5, 5, {2, 3, 1, 2, 1, 1}}, NULL},
            "max pool backward (overlap)");
    fd_pool((pool_ctx){FD_AVG_POOL, {2, 2, 5, 6, {3, 2, 2, 1, 1, 0}}, NULL}, "avg pool backward");
    fd_pool((pool_ctx){FD_IM2COL, {1, 2, 5, 4, {3, 2, 2, 1, 1, 1}}, NULL}, "col2im (im2col grad)");
}

const struct CMUnitTest ops_cnn_tests[] = {
    cmocka_unit_test(test_im2col_col2im_orders),
    cmocka_unit_test(test_max_pool_edges),
    cmocka_unit_test(test_avg_pool_edges),
    cmocka_unit_test(test_pool_gathers_match_pixel_lanes),
    cmocka_unit_test(test_batch_norm_order_and_edges),
    cmocka_unit_test(test_norm_finite_differences),
    cmocka_unit_test(test_pool_conv_finite_differences),
};
const size_t ops_cnn_test_count = sizeof ops_cnn_tests / sizeof ops_cnn_tests[0];
