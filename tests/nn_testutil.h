/*
 * nn_testutil.h - helpers shared by tests/test_nn.c and tests/test_gpt.c on top of testlib.h
 * (goldens, comparisons, backend list): host<->backend float copies, owned tensors from host
 * data, normal/uniform fills, random values for a whole parameter block, golden int arrays.
 * Test-only; header-only (static inline functions). Knows no module semantics.
 */
#ifndef STRIX_NN_TESTUTIL_H
#define STRIX_NN_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strix/backend.h"
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

/* Number of golden arrays whose name starts with `prefix`. */
static inline int golden_count_prefix(const tl_golden *g, const char *prefix) {
    int n = 0;
    for (int i = 0; i < g->count; i++)
        if (strncmp(g->arrays[i].name, prefix, strlen(prefix)) == 0) n++;
    return n;
}

#endif
