/*
 * fma_peak.h - the measured fp32 peak of this CPU (DESIGN.md: "the measured FMA peak", not a
 * nominal clock): GFLOP/s of 12 independent FMA chains in registers per thread, for the AVX2 (ymm)
 * and AVX-512 (zmm) widths, on 1..64 threads at once; the best of three runs. Also the rate of
 * separate multiply + add pairs, for comparison. Header-only, for bench_fma_peak.c and
 * bench_gemm.c; never part of the library or the tests.
 */
#ifndef STRIX_BENCH_FMA_PEAK_H
#define STRIX_BENCH_FMA_PEAK_H

#include <pthread.h>
#include <stdbool.h>

#include "bench_util.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FMA_PEAK_ITERS (1L << 24)

#define FMA_PEAK_CHAINS(T, SET, OP, RED)                                                          \
    T c0 = SET(1.0f), c1 = SET(1.1f), c2 = SET(1.2f), c3 = SET(1.3f), c4 = SET(1.4f),            \
      c5 = SET(1.5f), c6 = SET(1.6f), c7 = SET(1.7f), c8 = SET(1.8f), c9 = SET(1.9f),            \
      c10 = SET(2.0f), c11 = SET(2.1f);                                                           \
    T a = SET(seed), b = SET(0.999999f);                                                          \
    for (long i = 0; i < FMA_PEAK_ITERS; i++) {                                                   \
        c0 = OP(a, b, c0), c1 = OP(a, b, c1), c2 = OP(a, b, c2), c3 = OP(a, b, c3);               \
        c4 = OP(a, b, c4), c5 = OP(a, b, c5), c6 = OP(a, b, c6), c7 = OP(a, b, c7);               \
        c8 = OP(a, b, c8), c9 = OP(a, b, c9), c10 = OP(a, b, c10), c11 = OP(a, b, c11);           \
        __asm__ volatile("" : "+x"(a));                                                           \
    }                                                                                             \
    T s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;                            \
    return RED(s)

#define FMA_PEAK_FMA256(a, b, c) _mm256_fmadd_ps(a, b, c)
#define FMA_PEAK_MULADD256(a, b, c) _mm256_add_ps(_mm256_mul_ps(a, b), c)
#define FMA_PEAK_FMA512(a, b, c) _mm512_fmadd_ps(a, b, c)
#define FMA_PEAK_MULADD512(a, b, c) _mm512_add_ps(_mm512_mul_ps(a, b), c)

__attribute__((target("avx2,fma"))) static float fma_peak_fma256(float seed) {
    FMA_PEAK_CHAINS(__m256, _mm256_set1_ps, FMA_PEAK_FMA256, _mm256_cvtss_f32);
}
__attribute__((target("avx2,fma"))) static float fma_peak_muladd256(float seed) {
    FMA_PEAK_CHAINS(__m256, _mm256_set1_ps, FMA_PEAK_MULADD256, _mm256_cvtss_f32);
}
__attribute__((target("avx512f"))) static float fma_peak_fma512(float seed) {
    FMA_PEAK_CHAINS(__m512, _mm512_set1_ps, FMA_PEAK_FMA512, _mm512_cvtss_f32);
}
__attribute__((target("avx512f"))) static float fma_peak_muladd512(float seed) {
    FMA_PEAK_CHAINS(__m512, _mm512_set1_ps, FMA_PEAK_MULADD512, _mm512_cvtss_f32);
}

typedef struct fma_peak_job {
    float (*run)(float);
    float sink;
} fma_peak_job;

static void *fma_peak_thread(void *arg) {
    fma_peak_job *j = arg;
    j->sink = j->run(1.0f + 1e-7f * (float)((size_t)arg % 7));
    return NULL;
}

/* Whether this CPU runs the kernels of `lanes` (8: AVX2 + FMA, 16: AVX-512F). */
static inline bool fma_peak_supported(int lanes) {
    __builtin_cpu_init();
    return lanes == 16 ? __builtin_cpu_supports("avx512f") != 0
                       : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* GFLOP/s (2 per multiply-add) of `threads` threads started together on the `lanes`-wide
 * kernels, FMA or (muladd) separate multiply and add; the best of three runs. 0 when the CPU
 * lacks the instructions. */
static inline double fma_peak_gflops(int lanes, int threads, bool muladd) {
    if (!fma_peak_supported(lanes)) return 0.0;
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    float (*run)(float) = lanes == 16 ? (muladd ? fma_peak_muladd512 : fma_peak_fma512)
                                      : (muladd ? fma_peak_muladd256 : fma_peak_fma256);
    double best = 0.0;
    for (int round = 0; round < 3; round++) {
        pthread_t tid[64];
        fma_peak_job jobs[64];
        double start = bench_now_s();
        for (int t = 0; t < threads; t++) {
            jobs[t].run = run;
            pthread_create(&tid[t], NULL, fma_peak_thread, &jobs[t]);
        }
        for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
        double gflops = (double)threads * FMA_PEAK_ITERS * 12.0 * lanes * 2.0 /
                        (bench_now_s() - start) * 1e-9;
        if (gflops > best) best = gflops;
    }
    return best;
}
#else
static inline bool fma_peak_supported(int lanes) { return (void)lanes, false; }
static inline double fma_peak_gflops(int lanes, int threads, bool muladd) {
    return (void)lanes, (void)threads, (void)muladd, 0.0;
}
#endif

#endif
