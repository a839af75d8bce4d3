/*
 * kernels/dropout.h - inverted dropout of one element with the counter RNG U(seed, k) of
 * docs/SEMANTICS.md "Counter-based uniform", so a mask depends only on (seed, offset + i) on every
 * backend.
 *
 * strix_kernel_uniform is a device-callable copy of strix_uniform_counter (include/strix/core.h);
 * tests/test_ops.c checks that the two agree bit for bit.
 */
#ifndef STRIX_KERNELS_DROPOUT_H
#define STRIX_KERNELS_DROPOUT_H

#include "kernels/common.h"

/* U(seed, k): SplitMix64 finalizer of seed + (k+1)·golden, top 24 bits scaled to [0,1). */
STRIX_HD static inline float strix_kernel_uniform(uint64_t seed, uint64_t k) {
    uint64_t z = seed + (k + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z = z ^ (z >> 31);
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* Element i (global counter offset + i): dropped iff U < p. Writes out = keep ? in·scale : 0 and,
 * if mask != NULL, *mask = 1 or 0. */
STRIX_HD static inline void strix_dropout_element(float in, float *out, float *mask, float p,
                                                  float scale, uint64_t seed, uint64_t counter) {
    bool keep = !(strix_kernel_uniform(seed, counter) < p);
    *out = keep ? in * scale : 0.0f;
    if (mask) *mask = keep ? 1.0f : 0.0f;
}

#endif
