/*
 * bench_util.h - helpers shared by the benchmarks (bench/bench_*.c): a monotonic clock, the
 * median of a sample, and the layer-zoo models of bench_zoo.c (also timed by bench_explain.c).
 * Header-only (static inline); never part of the library or the tests.
 */
#ifndef STRIX_BENCH_UTIL_H
#define STRIX_BENCH_UTIL_H

#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "strix/layers.h"

// ---- timing ------------------------------------------------------------------------------------

/* Seconds on the monotonic clock. */
static inline double bench_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (the upper one for even n; sorts v). */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

// ---- the layer-zoo models ----------------------------------------------------------------------
//
//   mlp: Linear(256,512) ReLU Linear(512,512) ReLU Linear(512,10).
//   cnn: (Conv2d 3x3 p1, BatchNorm2d, ReLU, MaxPool2d 2) x2 (3->32->64 channels), Flatten,
//        Linear(64*8*8,10); input 3x32x32.
// The first layer computes no input gradient (PyTorch computes none either). Children are
// appended to `net`, their parameters registered in `ps`.

#define BENCH_ZOO_CLASSES 10

static inline strix_status bench_zoo_linear(strix_params *ps, strix_sequential *net, int in,
                                            int out, bool first) {
    char name[STRIX_PARAM_NAME_MAX];
    strix_linear *lin;
    STRIX_TRY(strix_sequential_child_name(net, name));
    STRIX_TRY(strix_linear_new_default(ps, name, in, out, true, &lin));
    STRIX_TRY(strix_sequential_add(net, &lin->base));
    if (first) lin->need_input_grad = false;
    return STRIX_OK;
}

static inline strix_status bench_zoo_relu(strix_params *ps, strix_sequential *net) {
    strix_activation *relu;
    STRIX_TRY(strix_activation_new(ps->be, STRIX_ACT_RELU, &relu));
    return strix_sequential_add(net, &relu->base);
}

static inline strix_status bench_zoo_mlp(strix_params *ps, strix_sequential *net) {
    STRIX_TRY(bench_zoo_linear(ps, net, 256, 512, true));
    STRIX_TRY(bench_zoo_relu(ps, net));
    STRIX_TRY(bench_zoo_linear(ps, net, 512, 512, false));
    STRIX_TRY(bench_zoo_relu(ps, net));
    return bench_zoo_linear(ps, net, 512, BENCH_ZOO_CLASSES, false);
}

static inline strix_status bench_zoo_cnn(strix_params *ps, strix_sequential *net) {
    const int chans[3] = {3, 32, 64};
    char name[STRIX_PARAM_NAME_MAX];
    for (int i = 0; i < 2; i++) {
        strix_conv2d_config cc = {.in_channels = chans[i], .out_channels = chans[i + 1],
                                  .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1,
                                  .bias = true};
        strix_conv2d *conv;
        STRIX_TRY(strix_sequential_child_name(net, name));
        STRIX_TRY(strix_conv2d_new(ps, name, &cc, &conv));
        STRIX_TRY(strix_sequential_add(net, &conv->base));
        if (i == 0) conv->need_input_grad = false;
        strix_batchnorm *bn;
        STRIX_TRY(strix_sequential_child_name(net, name));
        STRIX_TRY(strix_batchnorm2d_new(ps, name, chans[i + 1], 1e-5f, 0.1f, &bn));
        STRIX_TRY(strix_sequential_add(net, &bn->base));
        STRIX_TRY(bench_zoo_relu(ps, net));
        strix_pool2d_config pc = {.kernel_h = 2, .kernel_w = 2};
        strix_maxpool2d *pool;
        STRIX_TRY(strix_maxpool2d_new(ps->be, &pc, &pool));
        STRIX_TRY(strix_sequential_add(net, &pool->base));
    }
    strix_flatten *flat;
    STRIX_TRY(strix_flatten_new(ps->be, 1, -1, &flat));
    STRIX_TRY(strix_sequential_add(net, &flat->base));
    return bench_zoo_linear(ps, net, 64 * 8 * 8, BENCH_ZOO_CLASSES, false);
}

#endif
