/*
 * test_core.c - the core layer: tensor shapes and their size checks, grow-only buffers, statuses
 * and the last-error message, the SplitMix64 stream against its published first value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "strix/backend.h"

static void test_tensor_shapes(void **state) {
    (void)state;
    strix_backend *be;
    assert_int_equal(strix_backend_init("cpu", &be), STRIX_OK);
    strix_tensor t;
    const int64_t ok[3] = {2, 3, 4};
    assert_int_equal(strix_tensor_new(be, 3, ok, &t), STRIX_OK);
    assert_int_equal(strix_tensor_numel(&t), 24);
    assert_int_equal(t.shape[3], 1);
    float host[24];
    assert_int_equal(strix_copy(be, host, t.data, sizeof host, STRIX_COPY_D2H), STRIX_OK);
    for (int i = 0; i < 24; i++) assert_true(host[i] == 0.0f); /* new tensors are zeroed */

    /* ensure grows only when more elements are needed; a smaller shape keeps the buffer */
    float *before = t.data;
    const int64_t smaller[1] = {10};
    assert_int_equal(strix_tensor_ensure(be, &t, 1, smaller), STRIX_OK);
    assert_ptr_equal(t.data, before);
    assert_int_equal(strix_tensor_numel(&t), 10);
    assert_int_equal(t.capacity, 24);
    strix_tensor_free(&t);
    strix_tensor_free(NULL);

    /* bad shapes are STRIX_ERR_ARG, never an overflowed size or a NULL buffer with STRIX_OK */
    const int64_t negative[2] = {3, -1};
    const int64_t overflow_i64[2] = {(int64_t)1 << 62, 2};
    const int64_t overflow_bytes[2] = {(int64_t)1 << 61, 2};
    const int64_t five[5] = {1, 1, 1, 1, 1};
    assert_int_equal(strix_tensor_new(be, 2, negative, &t), STRIX_ERR_ARG);
    assert_int_equal(strix_tensor_new(be, 2, overflow_i64, &t), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "too large"));
    assert_int_equal(strix_tensor_new(be, 2, overflow_bytes, &t), STRIX_ERR_ARG);
    assert_int_equal(strix_tensor_new(be, 5, five, &t), STRIX_ERR_ARG);
    assert_null(t.data);
    strix_backend_free(be);
}

static void test_status_and_errors(void **state) {
    (void)state;
    assert_string_equal(strix_status_str(STRIX_OK), "STRIX_OK");
    assert_string_equal(strix_status_str(STRIX_ERR_FORMAT), "STRIX_ERR_FORMAT");
    assert_int_equal(strix_error(STRIX_ERR_IO, "cannot open '%s'", "x.txt"), STRIX_ERR_IO);
    assert_string_equal(strix_last_error(), "cannot open 'x.txt'");
    strix_clear_error();
    assert_string_equal(strix_last_error(), "");
}

static void test_rng(void **state) {
    (void)state;
    /* SplitMix64 seeded with 0: first output 0xE220A8397B1DCDAF (Steele, Lea, Flood 2014;
     * the reference sequence used by xoshiro's seeding) */
    strix_rng r;
    strix_rng_seed(&r, 0);
    assert_true(strix_rng_next(&r) == 0xE220A8397B1DCDAFULL);
    /* the counter uniform is U(seed,k) = (mix(seed + (k+1)·golden) >> 40)·2^-24, in [0,1) */
    for (uint64_t k = 0; k < 1000; k++) {
        float u = strix_uniform_counter(42, k);
        uint64_t z = strix_mix64(42 + (k + 1) * 0x9E3779B97F4A7C15ULL);
        assert_true(u == (float)(z >> 40) / 16777216.0f);
        assert_true(u >= 0.0f && u < 1.0f);
    }
    /* the stream is a pure function of its state: a copy replays it */
    strix_rng_seed(&r, 7);
    strix_rng copy = r;
    assert_true(strix_rng_uniform(&r) == strix_rng_uniform(&copy));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_shapes),
        cmocka_unit_test(test_status_and_errors),
        cmocka_unit_test(test_rng),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
