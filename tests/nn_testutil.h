/*
 * nn_testutil.h - helpers shared by the module tests (test_nn.c, test_layers.c, test_gpt.c,
 * test_lrp.c, ...) on top of testlib.h (goldens, comparisons, backend list): host<->backend float
 * copies, owned tensors from host data, normal/uniform fills, random values for a whole parameter
 * block, golden int arrays, per-backend cmocka groups, finite-difference checks of a module's
 * backward. Test-only; header-only (static inline functions).
 */
#ifndef STRIX_NN_TESTUTIL_H
#define STRIX_NN_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strix/backend.h"
#include "strix/nn.h"
#include "strix/params.h"
#include "testlib.h"

// ---- backend copies ----------------------------------------------------------------------------

static inline void to_backend(strix_backend *be, float *dst, const float *src, size_t n) {
    if (strix_copy(be, dst, src, n * sizeof(float), STRIX_COPY_H2D) != STRIX_OK) abort();
}

/* A freshly malloc'ed host copy of n backend floats. */
static inline float *from_backend(strix_backend *be, const float *src, size_t n) {
    float *h = malloc((n ? n : 1) * sizeof(float));
    if (!h || strix_copy(be, h, src, n * sizeof(float), STRIX_COPY_D2H) != STRIX_OK) abort();
    return h;
}

/* An owned backend tensor holding host data. */
static inline strix_tensor tensor_from_host(strix_backend *be, int ndim, const int64_t *shape,
                                            const float *host) {
    strix_tensor t;
    if (strix_tensor_new(be, ndim, shape, &t) != STRIX_OK) abort();
    to_backend(be, t.data, host, (size_t)strix_tensor_numel(&t));
    return t;
}

// ---- random values -----------------------------------------------------------------------------

static inline void fill_normal(strix_rng *r, float *x, size_t n, double mean, double std) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(mean + std * strix_rng_normal(r));
}

static inline void fill_uniform(strix_rng *r, float *x, size_t n, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * strix_rng_uniform(r));
}

/* Random values for every parameter: ones-initialised ones 1 + N(0, 0.1), the rest N(0, std). */
static inline void randomize_params(strix_params *ps, uint64_t seed, double std) {
    strix_rng r;
    strix_rng_seed(&r, seed);
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        if (p->tied_to) continue;
        float *h = malloc(p->numel * sizeof(float));
        if (p->init == STRIX_INIT_ONES) fill_normal(&r, h, p->numel, 1.0, 0.1);
        else fill_normal(&r, h, p->numel, 0.0, p->ndim == 1 ? 0.1 : std);
        to_backend(ps->be, p->data, h, p->numel);
        free(h);
    }
}

// ---- comparison and goldens -------------------------------------------------------------------

/* tl_check_close of n backend floats against host values. */
static inline bool check_backend(strix_backend *be, const char *what, const float *dev,
                                 const float *want, size_t n, double atol, double rtol) {
    float *h = from_backend(be, dev, n);
    bool ok = tl_check_close(what, h, want, n, atol, rtol);
    free(h);
    return ok;
}

/* A malloc'ed int32 copy of a golden array of exact integers. */
static inline int32_t *golden_ints(const tl_array *a) {
    int32_t *out = malloc((a->count ? a->count : 1) * sizeof(int32_t));
    if (!out) abort();
    for (size_t i = 0; i < a->count; i++) out[i] = (int32_t)a->data[i];
    return out;
}

// ---- per-backend test groups (needs <cmocka.h> included first) -------------------------------

/* cmocka setup/teardown: the test's initial state is a backend name; the test gets the backend. */
static inline int backend_setup(void **state) {
    *state = tl_backend_open((const char *)*state);
    return *state ? 0 : -1;
}

static inline int backend_teardown(void **state) {
    strix_backend_free(*state);
    return 0;
}

/* A test of the per-backend groups: fn(void **state) gets a strix_backend * as *state. */
#define BACKEND_TEST(fn) cmocka_unit_test_setup_teardown(fn, backend_setup, backend_teardown)

/* Runs tests[0..n) (made with BACKEND_TEST) as one group per backend of this build, named
 * "<suite> on <backend>". Returns the number of failed tests. */
static inline int run_on_each_backend(const char *suite, struct CMUnitTest *tests, size_t n) {
    int failed = 0;
    for (size_t b = 0; b < TL_BACKEND_COUNT; b++) {
        strix_backend *probe = tl_backend_open(tl_backend_names[b]);
        if (!probe) continue; /* not in this build: skipped (tl_backend_open says so) */
        strix_backend_free(probe);
        for (size_t i = 0; i < n; i++) tests[i].initial_state = (void *)tl_backend_names[b];
        char group[64];
        snprintf(group, sizeof group, "%s on %s", suite, tl_backend_names[b]);
        failed += _cmocka_run_group_tests(group, tests, n, NULL, NULL);
    }
    return failed;
}

// ---- a module under test with its own parameter block (needs <cmocka.h> included first) ------

typedef struct built {
    strix_params ps;
    strix_module *m;
} built;

static inline void begin(built *b, strix_backend *be) {
    strix_params_init_empty(&b->ps, be);
    b->m = NULL;
}

/* Allocates the parameters and gives them random values (randomize_params, std 0.3). */
static inline void finish(built *b, uint64_t seed) {
    assert_int_equal(strix_params_alloc(&b->ps), STRIX_OK);
    if (b->ps.total) randomize_params(&b->ps, seed, 0.3);
}

static inline void release(built *b) {
    strix_module_free(b->m);
    strix_params_free(&b->ps);
}

// ---- module goldens of tools/ref (needs <cmocka.h> included first) --------------------------
//
// A golden file (tl_golden_load) holds "param.<name>" values and "grad.<name>" gradients under
// the model's parameter names, beside the scripts' own arrays (inputs, outputs).

/* The golden array `name`; fails the test when it is missing. */
static inline const tl_array *golden_need(const tl_golden *gf, const char *name) {
    const tl_array *e = tl_golden_get(gf, name);
    if (!e) fail_msg("golden array %s missing", name);
    return e;
}

/* A backend tensor holding a golden array. */
static inline strix_tensor golden_tensor(strix_backend *be, const tl_array *a) {
    return tensor_from_host(be, a->ndim, a->shape, a->data);
}

/* 0 when the backend tensor t equals golden array `name` (same element count; the same shape
 * when the ranks agree) within atol + rtol·|want|, else 1 (tl_check_close prints the first
 * differences). */
static inline int golden_same_as(strix_backend *be, const tl_golden *gf, const char *name,
                                 const strix_tensor *t, double atol, double rtol) {
    const tl_array *a = golden_need(gf, name);
    assert_non_null(t);
    assert_int_equal((size_t)strix_tensor_numel(t), a->count);
    if (a->ndim == t->ndim)
        for (int d = 0; d < a->ndim; d++) assert_int_equal(a->shape[d], t->shape[d]);
    return check_backend(be, name, t->data, a->data, a->count, atol, rtol) ? 0 : 1;
}

/* Loads every "param.<name>" of the golden into the parameter of that name (with the golden's
 * shape) and checks that every parameter of ps but the tied ones got one. A golden parameter ps
 * does not have fails the test unless `subset` (ps is part of the golden's model). */
static inline void golden_load_params(const tl_golden *gf, strix_params *ps, bool subset) {
    int loaded = 0, own = 0;
    for (int i = 0; i < gf->count; i++) {
        const tl_array *a = &gf->arrays[i];
        if (strncmp(a->name, "param.", 6) != 0) continue;
        strix_param *p = strix_params_find(ps, a->name + 6);
        if (!p && subset) continue;
        if (!p) fail_msg("golden parameter %s not in the model", a->name + 6);
        if (p->tied_to) continue; /* stored once, under the name declared first */
        assert_int_equal(a->count, p->numel);
        assert_int_equal(a->ndim, p->ndim);
        for (int d = 0; d < a->ndim; d++) assert_int_equal(a->shape[d], p->shape[d]);
        to_backend(ps->be, p->data, a->data, p->numel);
        loaded++;
    }
    for (int i = 0; i < ps->count; i++) own += ps->items[i]->tied_to ? 0 : 1;
    assert_int_equal(loaded, own);
}

/* The number of parameters (tied ones skipped) whose gradient differs from the golden's
 * "grad.<name>" beyond atol + rtol·|want|. */
static inline int golden_grads_match(strix_backend *be, const tl_golden *gf,
                                     const strix_params *ps, double atol, double rtol) {
    int bad = 0;
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        if (p->tied_to) continue;
        char key[160];
        snprintf(key, sizeof key, "grad.%s", p->name);
        const tl_array *g = golden_need(gf, key);
        assert_int_equal(g->count, p->numel);
        bad += check_backend(be, key, p->grad, g->data, p->numel, atol, rtol) ? 0 : 1;
    }
    return bad;
}

// ---- finite differences of modules (needs <cmocka.h> included first) --------------------------
//
// L = Σ y·R in double, R a fixed random projection of the output; values are perturbed in float
// (the modules compute in float); central differences with step FD_EPS (1e-3 with kinks, where a
// coordinate whose one-sided slopes disagree is skipped); |fd − analytic| <= FD_ATOL +
// FD_RTOL·|analytic|. The reasoning behind the numbers: tests/test_nn.c's header.

#define FD_EPS 1e-2
#define FD_ATOL 2e-3
#define FD_RTOL 1e-2

static inline void set_one(strix_backend *be, float *p, size_t i, float v) {
    assert_int_equal(strix_copy(be, p + i, &v, sizeof v, STRIX_COPY_H2D), STRIX_OK);
}

static inline float get_one(strix_backend *be, const float *p, size_t i) {
    float v;
    assert_int_equal(strix_copy(be, &v, p + i, sizeof v, STRIX_COPY_D2H), STRIX_OK);
    return v;
}

typedef struct fd_ctx {
    strix_backend *be;
    strix_module *m;
    strix_tensor *x;       /* input on the backend */
    float *R;              /* host projection, ny values */
    size_t ny;
    bool kinks;            /* skip coordinates whose one-sided slopes disagree (ReLU) */
    double eps;            /* FD_EPS, or 1e-3 with kinks (crossing one is then rarer) */
    int checked, skipped;
    double max_err;
} fd_ctx;

static inline double fd_loss(fd_ctx *c) {
    const strix_tensor *y;
    assert_int_equal(strix_module_forward(c->m, c->x, &y), STRIX_OK);
    assert_int_equal((size_t)strix_tensor_numel(y), c->ny);
    float *h = from_backend(c->be, y->data, c->ny);
    double s = 0.0;
    for (size_t i = 0; i < c->ny; i++) s += (double)h[i] * (double)c->R[i];
    free(h);
    return s;
}

/* Checks up to n_check coordinates of the backend array p (n floats) against host gradient g. */
static inline void fd_array(fd_ctx *c, const char *what, float *p, size_t n, const float *g,
                            int n_check, strix_rng *rng) {
    double L0 = fd_loss(c);
    size_t bad = 0;
    for (int k = 0; k < n_check && (size_t)k < n; k++) {
        size_t i = (size_t)n_check >= n ? (size_t)k : (size_t)strix_rng_below(rng, n);
        float v = get_one(c->be, p, i);
        float vp = (float)(v + c->eps), vm = (float)(v - c->eps);
        set_one(c->be, p, i, vp);
        double Lp = fd_loss(c);
        set_one(c->be, p, i, vm);
        double Lm = fd_loss(c);
        set_one(c->be, p, i, v);
        double fd = (Lp - Lm) / ((double)vp - (double)vm);
        if (c->kinks) {
            double sp = (Lp - L0) / ((double)vp - v), sm = (L0 - Lm) / ((double)v - vm);
            if (fabs(sp - sm) > FD_ATOL + FD_RTOL * fabs(fd)) {
                c->skipped++;
                continue;
            }
        }
        double err = fabs(fd - (double)g[i]);
        if (err > c->max_err) c->max_err = err;
        c->checked++;
        if (err > FD_ATOL + FD_RTOL * fabs((double)g[i])) {
            if (bad++ < 5)
                fprintf(stderr, "  %s[%zu]: analytic %.6g finite-diff %.6g\n", what, i, g[i], fd);
        }
    }
    fd_loss(c); // leave the module's caches at the unperturbed point
    assert_int_equal(bad, 0);
}

/* Full check of module m: x ~ N(0, 1) of the given shape, analytic backward with dy = R, then
 * finite differences of the input and of every parameter of ps (buffers excluded); at most a
 * tenth of the coordinates may be skipped at kinks. */
static inline void fd_module(strix_backend *be, strix_params *ps, strix_module *m, int ndim,
                             const int64_t *shape, uint64_t seed, bool kinks, int n_check) {
    strix_rng rng;
    strix_rng_seed(&rng, seed);
    size_t nx = 1;
    for (int d = 0; d < ndim; d++) nx *= (size_t)shape[d];
    float *xh = malloc(nx * sizeof(float));
    fill_normal(&rng, xh, nx, 0.0, 1.0);
    strix_tensor x = tensor_from_host(be, ndim, shape, xh);
    const strix_tensor *y;
    assert_int_equal(strix_module_forward(m, &x, &y), STRIX_OK);
    size_t ny = (size_t)strix_tensor_numel(y);
    float *R = malloc(ny * sizeof(float));
    fill_uniform(&rng, R, ny, -1.0, 1.0);
    strix_tensor dy = tensor_from_host(be, y->ndim, y->shape, R);
    if (ps->total) assert_int_equal(strix_params_zero_grad(ps), STRIX_OK);
    const strix_tensor *dx;
    assert_int_equal(strix_module_backward(m, &dy, &dx), STRIX_OK);
    assert_non_null(dx);
    assert_int_equal((size_t)strix_tensor_numel(dx), nx);
    float *dxh = from_backend(be, dx->data, nx);
    float *grads = ps->total ? from_backend(be, ps->grad, ps->total) : NULL;
    fd_ctx c = {.be = be, .m = m, .x = &x, .R = R, .ny = ny, .kinks = kinks,
                .eps = kinks ? 1e-3 : FD_EPS};
    fd_array(&c, "input", x.data, nx, dxh, n_check, &rng);
    for (int i = 0; i < ps->count; i++) {
        strix_param *p = ps->items[i];
        if (p->tied_to || p->is_buffer) continue;
        fd_array(&c, p->name, p->data, p->numel, grads + p->offset, n_check, &rng);
    }
    print_message("    %-20s checked %3d skipped %2d max |fd - analytic| %.2e\n", m->vt->type,
                  c.checked, c.skipped, c.max_err);
    assert_true(c.skipped * 10 <= c.checked);
    free(xh);
    free(R);
    free(dxh);
    free(grads);
    strix_tensor_free(&x);
    strix_tensor_free(&dy);
}

/* Number of golden arrays whose name starts with `prefix`. */
static inline int golden_count_prefix(const tl_golden *g, const char *prefix) {
    int n = 0;
    for (int i = 0; i < g->count; i++)
        if (strncmp(g->arrays[i].name, prefix, strlen(prefix)) == 0) n++;
    return n;
}

#endif
