/*
 * test_gemm.c - GEMM on odd and large shapes: the own kernel ("cpu") and OpenBLAS ("cpu-blas")
 * against a double-precision naive reference, the own kernel against the float naive loop bit for
 * bit (it promises ascending-k sums, independent of blocking and threads), both transposes,
 * beta 0 (NaN in out must not leak) and 1, and gemm_batched with leading dimensions wider than
 * the rows, batch strides, alpha, and untouched gaps between rows; and each micro-kernel the CPU
 * runs (scalar, AVX2, AVX-512), forced in turn.
 * Not here: the small PyTorch golden of gemm_ex (test_ops.c).
 */
#include <float.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "testlib.h"
#include "backends/cpu/cpu_internal.h" /* cpu_isa_force */

#define OK(call) assert_int_equal((call), STRIX_OK)

/* A stored operand of op(X) (rows × cols) with row stride ld: trans stores it (cols × rows). */
static float element(const float *x, size_t ld, bool trans, size_t r, size_t c) {
    return trans ? x[c * ld + r] : x[r * ld + c];
}

/* C = alpha·op(A)·op(B) + beta·C by the float loop of the contract: ascending k from 0.0f, one
 * fused multiply-add (fmaf, a single rounding) per product. beta 0 never reads C. */
static void naive_float(const float *a, size_t lda, bool ta, const float *b, size_t ldb, bool tb,
                        float *c, size_t ldc, size_t m, size_t k, size_t n, float alpha,
                        float beta) {
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            float sum = 0.0f;
            for (size_t p = 0; p < k; p++)
                sum = fmaf(element(a, lda, ta, i, p), element(b, ldb, tb, p, j), sum);
            c[i * ldc + j] = beta == 0.0f ? alpha * sum : alpha * sum + beta * c[i * ldc + j];
        }
}

/* The exact product in double (ref) and Σ|a·b| (mag), for the error bound. */
static void naive_double(const float *a, bool ta, const float *b, bool tb, size_t m, size_t k,
                         size_t n, double *ref, double *mag) {
    size_t lda = ta ? m : k, ldb = tb ? k : n;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double sum = 0.0, abs_sum = 0.0;
            for (size_t p = 0; p < k; p++) {
                double prod = (double)element(a, lda, ta, i, p) * element(b, ldb, tb, p, j);
                sum += prod;
                abs_sum += fabs(prod);
            }
            ref[i * n + j] = sum;
            mag[i * n + j] = abs_sum;
        }
}

/* |got − (ref + beta·c0)| <= (k + 2)·eps·(mag + |beta·c0|) + tiny: the rounding bound of a
 * float sum of k products in any order (blocked, FMA or not). */
static bool within_bound(const char *label, const float *got, const double *ref,
                         const double *mag, const float *c0, float beta, size_t count, size_t k) {
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) {
        double extra = beta == 0.0f ? 0.0 : (double)beta * c0[i];
        double want = ref[i] + extra;
        double bound = (double)(k + 2) * FLT_EPSILON * (mag[i] + fabs(extra)) + 1e-30;
        if (!(fabs(got[i] - want) <= bound)) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: got %.9g want %.9g bound %.3g\n", label, i, got[i],
                        want, bound);
            bad++;
        }
    }
    if (bad) fprintf(stderr, "%s: %zu of %zu outside the bound\n", label, bad, count);
    return bad == 0;
}

typedef struct shape {
    size_t m, k, n;
} shape;

/* Every backend, both transposes, beta 0 (NaN-filled out) and 1 on one shape. */
static bool check_shape(strix_backend *be, bool own_kernel, shape s, uint64_t seed) {
    size_t m = s.m, k = s.k, n = s.n;
    float *a = tl_malloc_floats(m * k), *b = tl_malloc_floats(k * n);
    float *c0 = tl_malloc_floats(m * n), *got = tl_malloc_floats(m * n);
    float *want = tl_malloc_floats(m * n);
    double *ref = malloc(m * n * sizeof *ref), *mag = malloc(m * n * sizeof *mag);
    tl_fill_uniform(a, m * k, seed, -1.0f, 1.0f);
    tl_fill_uniform(b, k * n, seed + 1, -1.0f, 1.0f);
    tl_fill_uniform(c0, m * n, seed + 2, -1.0f, 1.0f);
    float *da = tl_upload(be, a, m * k * 4), *db = tl_upload(be, b, k * n * 4);
    float *dc = tl_device_alloc(be, m * n * 4);
    bool ok = true;
    for (int t = 0; t < 4 && ok; t++) {
        bool ta = t & 1, tb = t & 2;
        naive_double(a, ta, b, tb, m, k, n, ref, mag);
        for (int beta_i = 0; beta_i < 2 && ok; beta_i++) {
            float beta = (float)beta_i;
            char label[128];
            snprintf(label, sizeof label, "%s %zux%zux%zu ta=%d tb=%d beta=%g",
                     strix_backend_name(be), m, k, n, ta, tb, beta);
            if (beta == 0.0f) {
                OK(strix_fill(be, dc, NAN, m * n));
            } else {
                OK(strix_copy(be, dc, c0, m * n * 4, STRIX_COPY_H2D));
            }
            OK(strix_gemm_ex(be, da, ta, db, tb, dc, m, k, n, beta));
            tl_download(be, got, dc, m * n * 4);
            ok = within_bound(label, got, ref, mag, c0, beta, m * n, k);
            if (ok && own_kernel) {
                memcpy(want, c0, m * n * 4);
                naive_float(a, ta ? m : k, ta, b, tb ? k : n, tb, want, n, m, k, n, 1.0f, beta);
                ok = tl_check_bits(label, got, want, m * n);
            }
        }
    }
    strix_free(be, da), strix_free(be, db), strix_free(be, dc);
    free(a), free(b), free(c0), free(got), free(want), free(ref), free(mag);
    return ok;
}

/* Odd and large shapes on one backend; returns how many were checked. */
static int odd_shape_cases(strix_backend *be, bool own) {
    static const size_t sizes[] = {1, 3, 17, 127};
    static const shape large[] = {
        {1037, 3, 17}, {17, 1037, 3}, {3, 17, 1037}, {1037, 127, 65}, {127, 1037, 17},
        {65, 127, 1037}, {1031, 517, 263},
    };
    uint64_t seed = 100;
    int checked = 0;
    for (size_t i = 0; i < 4; i++)
        for (size_t p = 0; p < 4; p++)
            for (size_t j = 0; j < 4; j++, checked++)
                assert_true(check_shape(be, own, (shape){sizes[i], sizes[p], sizes[j]}, seed += 3));
    for (size_t s = 0; s < sizeof large / sizeof large[0]; s++, checked++)
        assert_true(check_shape(be, own, large[s], seed += 3));
    return checked;
}

static void test_gemm_odd_shapes(void **state) {
    (void)state;
    double start = tl_seconds();
    for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++) {
        strix_backend *be = tl_backend_open(tl_backend_names[bi]);
        if (!be) continue;
        int checked = odd_shape_cases(be, strcmp(tl_backend_names[bi], "cpu") == 0);
        printf("  %-9s %d shapes x 4 transposes x beta {0,1} ok\n", strix_backend_name(be),
               checked);
        strix_backend_free(be);
    }
    printf("  %.1f s\n", tl_seconds() - start);
}

/* Every backend gives the same bits on 1 and 2 threads, split by rows and by columns (the own
 * kernel by its ascending-k contract, cpu-blas by its shape-only cut into BLAS calls). */
static void test_gemm_threads_bit_identical(void **state) {
    (void)state;
    static const shape shapes[] = {{517, 300, 129}, {129, 300, 517}, {1000, 1000, 1000}};
    for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++) {
        strix_backend *be = tl_backend_open(tl_backend_names[bi]);
        if (!be) continue;
        if (strix_backend_device(be) != STRIX_DEVICE_CPU) { /* thread counts are a CPU matter */
            strix_backend_free(be);
            continue;
        }
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            size_t m = shapes[s].m, k = shapes[s].k, n = shapes[s].n;
            float *a = tl_malloc_floats(m * k), *b = tl_malloc_floats(k * n);
            float *one = tl_malloc_floats(m * n), *two = tl_malloc_floats(m * n);
            tl_fill_uniform(a, m * k, 5 + s, -1.0f, 1.0f);
            tl_fill_uniform(b, k * n, 6 + s, -1.0f, 1.0f);
            tl_fill_uniform(one, m * n, 7 + s, -1.0f, 1.0f);
            memcpy(two, one, m * n * 4);
            strix_set_num_threads(1);
            OK(strix_gemm_ex(be, a, s == 1, b, s == 2, one, m, k, n, 1.0f));
            strix_set_num_threads(2);
            OK(strix_gemm_ex(be, a, s == 1, b, s == 2, two, m, k, n, 1.0f));
            strix_set_num_threads(0);
            char label[96];
            snprintf(label, sizeof label, "%s gemm %zux%zux%zu 1 vs 2 threads",
                     strix_backend_name(be), m, k, n);
            assert_true(tl_check_bits(label, one, two, m * n));
            free(a), free(b), free(one), free(two);
        }
        strix_backend_free(be);
    }
}

/* gemm_batched against the float loop (own kernel: bit-exact; BLAS: the rounding bound via a
 * double loop), with ld > row width, strides with gaps, alpha, beta, and sentinels in the gaps. */
static size_t ld_extra; /* added to every leading dimension (attention's head slices) */
static bool check_batched(strix_backend *be, bool own, size_t m, size_t k, size_t n, bool ta,
                          bool tb, size_t batch, float alpha, float beta, strix_gemm_skip skip) {
    size_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
    size_t lda = a_cols + 3 + ld_extra, ldb = b_cols + 5 + ld_extra, ldc = n + 2 + ld_extra;
    size_t stride_a = a_rows * lda + 7, stride_b = b_rows * ldb + 1, stride_c = m * ldc + 4;
    size_t size_a = stride_a * batch, size_b = stride_b * batch, size_c = stride_c * batch;
    float *a = tl_malloc_floats(size_a), *b = tl_malloc_floats(size_b);
    float *c = tl_malloc_floats(size_c), *want = tl_malloc_floats(size_c);
    float *got = tl_malloc_floats(size_c);
    tl_fill_uniform(a, size_a, 21, -1.0f, 1.0f);
    tl_fill_uniform(b, size_b, 22, -1.0f, 1.0f);
    tl_fill_uniform(c, size_c, 23, -1.0f, 1.0f);
    /* the zeros that A_LOWER / A_UPPER promise: op(A)[r][p] = 0 above / below the diagonal */
    for (size_t i = 0; i < batch && (skip == STRIX_GEMM_A_LOWER || skip == STRIX_GEMM_A_UPPER); i++)
        for (size_t r = 0; r < m; r++)
            for (size_t p = 0; p < k; p++)
                if (skip == STRIX_GEMM_A_LOWER ? p > r : p < r)
                    a[i * stride_a + (ta ? p * lda + r : r * lda + p)] = 0.0f;
    for (size_t i = 0; i < batch; i++) { /* beta 0: the C blocks hold NaN, gaps hold values */
        for (size_t r = 0; r < m && beta == 0.0f; r++)
            for (size_t j = 0; j < n; j++) c[i * stride_c + r * ldc + j] = NAN;
    }
    memcpy(want, c, size_c * 4);
    for (size_t i = 0; i < batch; i++)
        naive_float(a + i * stride_a, lda, ta, b + i * stride_b, ldb, tb, want + i * stride_c,
                    ldc, m, k, n, alpha, beta);
    float *da = tl_upload(be, a, size_a * 4), *db = tl_upload(be, b, size_b * 4);
    float *dc = tl_upload(be, c, size_c * 4);
    strix_gemm_batch g = {
        .a = da, .lda = lda, .stride_a = stride_a, .ta = ta,
        .b = db, .ldb = ldb, .stride_b = stride_b, .tb = tb,
        .c = dc, .ldc = ldc, .stride_c = stride_c,
        .m = m, .k = k, .n = n, .batch = batch, .alpha = alpha, .beta = beta, .skip = skip,
    };
    OK(strix_gemm_batched(be, &g));
    tl_download(be, got, dc, size_c * 4);
    for (size_t i = 0; i < batch && skip == STRIX_GEMM_OUT_LOWER; i++) /* j > r: unspecified */
        for (size_t r = 0; r < m; r++)
            for (size_t j = r + 1; j < n; j++)
                got[i * stride_c + r * ldc + j] = want[i * stride_c + r * ldc + j];
    char label[160];
    snprintf(label, sizeof label, "%s batched %zux%zux%zu ta=%d tb=%d batch=%zu beta=%g skip=%d",
             strix_backend_name(be), m, k, n, ta, tb, batch, beta, (int)skip);
    bool ok = own ? tl_check_bits(label, got, want, size_c)
                  : tl_check_close(label, got, want, size_c, 1e-5, 1e-3);
    strix_free(be, da), strix_free(be, db), strix_free(be, dc);
    free(a), free(b), free(c), free(want), free(got);
    return ok;
}

#define FULL STRIX_GEMM_FULL

/* Batched products, with and without causal skips, on one backend. */
static void batched_cases(strix_backend *be, bool own) {
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        assert_true(check_batched(be, own, 64, 32, 64, ta, tb, 7, 0.125f, 0.0f, FULL));
        assert_true(check_batched(be, own, 17, 33, 29, ta, tb, 1, 1.0f, 0.5f, FULL));
        assert_true(check_batched(be, own, 17, 33, 29, ta, tb, 5, -2.0f, 1.0f, FULL));
        assert_true(check_batched(be, own, 130, 260, 140, ta, tb, 2, 1.0f, 0.0f, FULL));
    }
    /* causal skips: attention's shapes, odd sizes, and one item big enough to be split
     * across threads by rows (130 x 140) or by columns (40 x 300); bit-exact on "cpu" */
    static const strix_gemm_skip skips[] = {STRIX_GEMM_OUT_LOWER, STRIX_GEMM_A_LOWER,
                                            STRIX_GEMM_A_UPPER};
    for (int t = 0; t < 12; t++) {
        bool ta = t & 1, tb = t & 2;
        strix_gemm_skip skip = skips[t / 4];
        assert_true(check_batched(be, own, 64, 64, 32, ta, tb, 5, 1.0f, 0.0f, skip));
        assert_true(check_batched(be, own, 64, 32, 64, ta, tb, 3, 0.5f, 1.0f, skip));
        assert_true(check_batched(be, own, 17, 19, 29, ta, tb, 2, 1.0f, 0.0f, skip));
        assert_true(check_batched(be, own, 130, 300, 140, ta, tb, 1, 1.0f, 0.0f, skip));
        assert_true(check_batched(be, own, 40, 300, 300, ta, tb, 1, 1.0f, 0.5f, skip));
        /* head slices of a (B,T,3C) buffer: row strides near 384, batch 16, T 64, hs 32 */
        ld_extra = 349;
        assert_true(check_batched(be, own, 64, 32, 64, ta, tb, 16, 1.0f, 0.0f, skip));
        assert_true(check_batched(be, own, 64, 64, 32, ta, tb, 16, 1.0f, 0.0f, skip));
        assert_true(check_batched(be, own, 63, 63, 17, ta, tb, 3, 1.0f, 0.0f, skip));
        assert_true(check_batched(be, own, 65, 65, 33, ta, tb, 3, 1.0f, 0.0f, skip));
        assert_true(check_batched(be, own, 65, 17, 65, ta, tb, 2, 1.0f, 0.0f, skip));
        ld_extra = 0;
    }
}

static void test_gemm_batched(void **state) {
    (void)state;
    for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++) {
        strix_backend *be = tl_backend_open(tl_backend_names[bi]);
        if (!be) continue;
        batched_cases(be, strcmp(tl_backend_names[bi], "cpu") == 0);
        strix_backend_free(be);
    }
}

/* Each micro-kernel this CPU runs (scalar, AVX2, AVX-512: chosen at run time, isa.c), forced in
 * turn on the own kernel, gives the naive fmaf loop's bits on every shape above. */
static void test_gemm_every_isa(void **state) {
    (void)state;
    strix_backend *be = tl_backend_open("cpu");
    assert_non_null(be);
    for (int isa = CPU_ISA_SCALAR; isa <= CPU_ISA_AVX512; isa++) {
        if (!cpu_isa_supported((cpu_isa)isa)) {
            printf("  %s: not on this CPU\n", cpu_isa_name((cpu_isa)isa));
            continue;
        }
        cpu_isa_force(isa);
        assert_int_equal(cpu_isa_active(), isa);
        int checked = odd_shape_cases(be, true);
        batched_cases(be, true);
        printf("  %s: %d shapes and the batched cases bit-exact\n", cpu_isa_name((cpu_isa)isa),
               checked);
    }
    cpu_isa_force(-1);
    strix_backend_free(be);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_odd_shapes),
        cmocka_unit_test(test_gemm_threads_bit_identical),
        cmocka_unit_test(test_gemm_batched),
        cmocka_unit_test(test_gemm_every_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
