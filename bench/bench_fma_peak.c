/*
 * bench_fma_peak.c - the measured fp32 peak of this CPU (fma_peak.h): FMA and separate
 * multiply + add, AVX2 and AVX-512 widths, on 1 thread and on `threads` threads at once. The
 * figure GEMM efficiency is quoted against. A benchmark, never a test.
 *
 * Usage: bench_fma_peak [threads]   (default: the strix thread count)
 */
#include <stdio.h>
#include <stdlib.h>

#include "strix/backend.h"

#include "fma_peak.h"

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : strix_get_num_threads();
    if (threads < 1) threads = 1;
    printf("fp32 peak, measured: 12 independent chains per thread, best of 3 (GFLOP/s)\n");
    printf("%-22s %10s %10s\n", "kernel", "1 thread", "threads");
    static const struct {
        const char *name;
        int lanes;
        bool muladd;
    } rows[] = {{"AVX2 ymm FMA", 8, false}, {"AVX2 ymm mul+add", 8, true},
                {"AVX-512 zmm FMA", 16, false}, {"AVX-512 zmm mul+add", 16, true}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (!fma_peak_supported(rows[i].lanes)) {
            printf("%-22s %10s\n", rows[i].name, "not on this CPU");
            continue;
        }
        printf("%-22s %10.1f %10.1f (%d)\n", rows[i].name,
               fma_peak_gflops(rows[i].lanes, 1, rows[i].muladd),
               fma_peak_gflops(rows[i].lanes, threads, rows[i].muladd), threads);
    }
    return 0;
}
