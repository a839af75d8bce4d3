/*
 * bench_gemm.c - GFLOP/s of the own GEMM kernel ("cpu") and of OpenBLAS ("cpu-blas") at 1024³,
 * the GPT shapes of config A (B·T = 1024 rows, d_model 128), and attention's batched products,
 * on the current thread count (OMP_NUM_THREADS / OPENBLAS_NUM_THREADS, or argv[1]).
 *
 * Usage: bench_gemm [threads] [repeats]. Prints the median of `repeats` timed runs (after one
 * warm-up) beside the measured FMA peak (fma_peak.h) of the vector width the kernels use on this
 * CPU (strix_cpu_isa), on the same thread count. A benchmark, never a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strix/backend.h"

#include "bench_util.h"
#include "fma_peak.h"

typedef struct gemm_shape {
    const char *label;
    size_t m, k, n;
    bool ta, tb;
    size_t batch; /* 0: strix_gemm_ex; else strix_gemm_batched of packed items */
} gemm_shape;

static float *random_floats(size_t n, unsigned seed) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) & 0xFFFF) / 65535.0f - 0.5f;
    }
    return x;
}

/* Median seconds of one call on backend `be`. */
static double time_gemm(strix_backend *be, const gemm_shape *s, int repeats) {
    size_t items = s->batch ? s->batch : 1;
    float *a = random_floats(s->m * s->k * items, 1), *b = random_floats(s->k * s->n * items, 2);
    float *c = random_floats(s->m * s->n * items, 3);
    strix_gemm_batch g = {
        .a = a, .lda = s->ta ? s->m : s->k, .stride_a = s->m * s->k, .ta = s->ta,
        .b = b, .ldb = s->tb ? s->k : s->n, .stride_b = s->k * s->n, .tb = s->tb,
        .c = c, .ldc = s->n, .stride_c = s->m * s->n,
        .m = s->m, .k = s->k, .n = s->n, .batch = items, .alpha = 1.0f, .beta = 0.0f,
    };
    double *times = malloc((size_t)repeats * sizeof *times);
    for (int r = -1; r < repeats; r++) {
        double start = bench_now_s();
        strix_status st = s->batch ? strix_gemm_batched(be, &g)
                                   : strix_gemm_ex(be, a, s->ta, b, s->tb, c, s->m, s->k, s->n,
                                                   0.0f);
        if (st != STRIX_OK) {
            fprintf(stderr, "gemm failed: %s\n", strix_last_error());
            exit(1);
        }
        if (r >= 0) times[r] = bench_now_s() - start;
    }
    double median = bench_median(times, repeats);
    free(times), free(a), free(b), free(c);
    return median;
}

int main(int argc, char **argv) {
    if (argc > 1) strix_set_num_threads(atoi(argv[1]));
    int repeats = argc > 2 ? atoi(argv[2]) : 21;
    if (repeats < 1) repeats = 1;
    const gemm_shape shapes[] = {
        {"1024^3", 1024, 1024, 1024, false, false, 0},
        {"qkv   x(1024,128)·W(128,384)", 1024, 128, 384, false, false, 0},
        {"fc    x(1024,128)·W(128,512)", 1024, 128, 512, false, false, 0},
        {"proj  h(1024,512)·W(512,128)", 1024, 512, 128, false, false, 0},
        {"head  x(1024,128)·W(128,65)", 1024, 128, 65, false, false, 0},
        {"dW    x^T(128,1024)·dy(1024,384)", 128, 1024, 384, true, false, 0},
        {"dx    dy(1024,384)·W^T(384,128)", 1024, 384, 128, false, true, 0},
        {"att   64 x q(64,32)·k^T(32,64)", 64, 32, 64, false, true, 64},
        {"att   64 x p(64,64)·v(64,32)", 64, 64, 32, false, false, 64},
    };
    const char *names[] = {"cpu", "cpu-blas"};
    strix_backend *backends[2] = {NULL, NULL};
    for (int b = 0; b < 2; b++)
        if (strix_backend_init(names[b], &backends[b]) != STRIX_OK) backends[b] = NULL;
    int threads = strix_get_num_threads();
    const char *isa = strix_cpu_isa();
    int lanes = strcmp(isa, "avx512") == 0 ? 16 : 8;
    double peak = fma_peak_gflops(lanes, threads, false); /* measured again at the end */
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    printf("GEMM GFLOP/s, %d thread(s), median of %d, own kernels: %s, OPENBLAS_CORETYPE=%s\n",
           threads, repeats, isa, coretype ? coretype : "(auto)");
    if (!(peak > 0.0)) peak = 1.0;
    size_t shape_count = sizeof shapes / sizeof shapes[0];
    double gflops[sizeof shapes / sizeof shapes[0]][2] = {{0}};
    for (size_t s = 0; s < shape_count; s++) {
        const gemm_shape *sh = &shapes[s];
        double flops = 2.0 * (double)sh->m * (double)sh->k * (double)sh->n *
                       (double)(sh->batch ? sh->batch : 1);
        for (int b = 0; b < 2; b++)
            if (backends[b]) gflops[s][b] = flops / time_gemm(backends[b], sh, repeats) * 1e-9;
    }
    /* the peak of a busy or throttled moment is too low: keep the higher of two measurements */
    double again = fma_peak_gflops(lanes, threads, false);
    if (again > peak) peak = again;
    printf("(%%) = share of the measured peak: %.1f GFLOP/s (%d-lane FMA, %d threads, the higher "
           "of two measurements)\n", peak, lanes, threads);
    printf("%-36s %16s %16s\n", "shape (m,k)·(k,n)", "own (cpu)", "OpenBLAS");
    for (size_t s = 0; s < shape_count; s++) {
        printf("%-36s", shapes[s].label);
        for (int b = 0; b < 2; b++) {
            if (!backends[b])
                printf(" %16s", "n/a");
            else
                printf(" %7.1f (%4.0f%%)", gflops[s][b], 100.0 * gflops[s][b] / peak);
        }
        printf("\n");
    }
    for (int b = 0; b < 2; b++) strix_backend_free(backends[b]);
    return 0;
}
