/*
 * test_dist.c - the communicator of strix/dist.h. Run alone (a world of one) by ctest as
 * test_dist, and under mpirun as test_dist_np3 (three ranks: a count that is no power of two, and
 * a gradient length no chunking divides). Checks:
 *  - the fixed tree adds in its documented order, not left to right (hand-made sums whose float
 *    rounding tells the orders apart, for 3, 4 and 5 shards);
 *  - the gradient sum of size·2 shards equals, bit for bit, the tree one process computes over
 *    all of them, on every rank, whatever the world size;
 *  - broadcast from a non-zero root, max and all-gather in rank order;
 *  - the launcher's environment: world size and processes per machine, and a world of one when
 *    no launcher announced itself.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "strix/dist.h"
#include "testlib.h"

static strix_dist *world;

static void test_tree_order(void **unused) {
    (void)unused;
    /* 3 shards: x0 + (x1 + x2). Left to right, 1 + 1e8 rounds to 1e8 and the sum is 0. */
    float three[3] = {1.0f, 1e8f, -1e8f};
    strix_dist_tree(three, 3, 1);
    assert_true(three[0] == 1.0f);
    /* 4 shards: (x0 + x1) + (x2 + x3); left to right gives 0, pairs give 2 */
    float four[4] = {1e8f, -1e8f, 1.0f, 1.0f};
    float l2r = ((four[0] + four[1]) + four[2]) + four[3];
    strix_dist_tree(four, 4, 1);
    assert_true(four[0] == 2.0f && l2r == 2.0f); /* agree here; next case tells them apart */
    float four_b[4] = {1.0f, 1e8f, -1e8f, 1.0f}; /* (1 + 1e8) + (-1e8 + 1) = 1e8 - 1e8 = 0 */
    strix_dist_tree(four_b, 4, 1);
    assert_true(four_b[0] == 0.0f);
    /* 5 shards: (x0 + x1) + (x2 + (x3 + x4)) */
    float five[5] = {1.0f, 1.0f, 1e8f, -1e8f, 1.0f};
    float want = (1.0f + 1.0f) + (1e8f + (-1e8f + 1.0f));
    strix_dist_tree(five, 5, 1);
    assert_true(five[0] == want);
    /* several columns at once, each its own tree; one row is itself */
    float rows[3][2] = {{1.0f, 2.0f}, {1e8f, 3.0f}, {-1e8f, 4.0f}};
    strix_dist_tree(&rows[0][0], 3, 2);
    assert_true(rows[0][0] == 1.0f && rows[0][1] == 9.0f);
    float one[2] = {5.0f, -7.0f};
    strix_dist_tree(one, 1, 2);
    assert_true(one[0] == 5.0f && one[1] == -7.0f);
}

/* Shard s of the test gradient: n values of mixed magnitude, the same on every rank. */
static void shard_values(float *row, int s, size_t n) {
    tl_fill_uniform(row, n, 1000u + (uint64_t)s, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i += 7) row[i] *= 1e6f; /* rounding that depends on the order */
}

static void test_sum_shards(void **unused) {
    (void)unused;
    enum { LOCAL = 2 };
    const size_t n = 1001; /* no world size 2..4 divides it: uneven chunks */
    int N = strix_dist_size(world), r = strix_dist_rank(world), S = N * LOCAL;
    float *all = malloc((size_t)S * n * sizeof *all), *mine = malloc(LOCAL * n * sizeof *mine);
    float *got = malloc(n * sizeof *got);
    assert_non_null(all);
    assert_non_null(mine);
    assert_non_null(got);
    for (int s = 0; s < S; s++) shard_values(all + (size_t)s * n, s, n);
    for (int l = 0; l < LOCAL; l++) shard_values(mine + (size_t)l * n, r * LOCAL + l, n);
    /* the left-to-right sum of the first columns, which the test data tell apart from the tree */
    float l2r[64];
    for (size_t i = 0; i < 64; i++) {
        l2r[i] = 0.0f;
        for (int s = 0; s < S; s++) l2r[i] += all[(size_t)s * n + i];
    }
    bool differs = false;
    strix_dist_tree(all, S, n); /* what one process computes over all S shards */
    for (size_t i = 0; i < 64; i++) differs |= l2r[i] != all[i];
    if (S > 2) assert_true(differs);
    assert_int_equal(strix_dist_sum_shards(world, mine, LOCAL, n, got), STRIX_OK);
    assert_true(tl_check_bits("sum of shards vs one process's tree", got, all, n));
    assert_int_equal(strix_dist_sum_shards(world, mine, 0, n, got), STRIX_ERR_ARG);
    free(all);
    free(mine);
    free(got);
}

static void test_collectives(void **unused) {
    (void)unused;
    int N = strix_dist_size(world), r = strix_dist_rank(world);
    int root = N - 1;
    double msg[2] = {r == root ? 3.25 : -1.0, r == root ? -0.5 : 0.0};
    assert_int_equal(strix_dist_broadcast(world, msg, sizeof msg, root), STRIX_OK);
    assert_true(msg[0] == 3.25 && msg[1] == -0.5);
    assert_int_equal(strix_dist_broadcast(world, msg, sizeof msg, N), STRIX_ERR_ARG);
    int64_t v = 10 * r - 3;
    assert_int_equal(strix_dist_max(world, &v), STRIX_OK);
    assert_int_equal(v, 10 * (N - 1) - 3);
    float mine[2] = {(float)r, (float)(100 + r)}, all[2 * 16];
    assert_true(N <= 16);
    assert_int_equal(strix_dist_allgather_floats(world, mine, 2, all), STRIX_OK);
    for (int q = 0; q < N; q++) assert_true(all[2 * q] == (float)q && all[2 * q + 1] == 100 + q);
    assert_int_equal(strix_dist_barrier(world), STRIX_OK);
}

static void test_environment(void **unused) {
    (void)unused;
    if (strix_dist_launched_size() > 0) { /* under mpirun: the launcher's own variables */
        assert_int_equal(strix_dist_launched_size(), strix_dist_size(world));
        assert_true(strix_dist_local_size() >= 1);
        return;
    }
    assert_int_equal(strix_dist_size(world), 1);
    assert_int_equal(strix_dist_rank(world), 0);
    assert_int_equal(strix_dist_local_size(), 1);
    setenv("PMI_SIZE", "4", 1);
    setenv("MPI_LOCALNRANKS", "2", 1);
    assert_int_equal(strix_dist_launched_size(), 4);
    assert_int_equal(strix_dist_local_size(), 2);
    setenv("PMI_SIZE", "four", 1); /* not a count: no launcher */
    assert_int_equal(strix_dist_launched_size(), 0);
    unsetenv("PMI_SIZE");
    unsetenv("MPI_LOCALNRANKS");
    strix_dist *solo;
    assert_int_equal(strix_dist_open_solo(&solo), STRIX_OK);
    assert_int_equal(strix_dist_size(solo), 1);
    float rows[2] = {1.0f, 2.0f}, out;
    assert_int_equal(strix_dist_sum_shards(solo, rows, 2, 1, &out), STRIX_OK);
    assert_true(out == 3.0f);
    strix_dist_abort(solo, 1); /* a world of one: returns, doing nothing */
    strix_dist_close(solo);
    strix_dist_close(NULL);
    assert_int_equal(strix_dist_rank(NULL), 0);
    assert_int_equal(strix_dist_size(NULL), 1);
}

static int setup(void **unused) {
    (void)unused;
    return strix_dist_open(&world) == STRIX_OK ? 0 : -1;
}

static int teardown(void **unused) {
    (void)unused;
    strix_dist_close(world);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_order),
        cmocka_unit_test(test_sum_shards),
        cmocka_unit_test(test_collectives),
        cmocka_unit_test(test_environment),
    };
    return cmocka_run_group_tests_name("dist", tests, setup, teardown);
}
