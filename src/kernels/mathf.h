/*
 * kernels/mathf.h - expf and erff written as branch-free float arithmetic, so the CPU backend's
 * loops vectorise (glibc's expf/erff are scalar calls) and every backend evaluates the same
 * expression. Accuracy (exhaustive over the float range, against double exp/erf):
 * strix_kernel_expf ≤ 1 ulp on [-87.33, 88.37]; strix_kernel_erff ≤ 1.16 ulp everywhere.
 *
 * The polynomials are our own minimax-style fits (weighted least squares at Chebyshev nodes,
 * reweighted towards equal ripple), rounded to float. No -ffast-math is needed or assumed.
 */
#ifndef STRIX_KERNELS_MATHF_H
#define STRIX_KERNELS_MATHF_H

#include "kernels/common.h"

/* The bits of a float as int32 and back (a union: vectorises on the CPU, valid in CUDA). */
typedef union strix_float_bits {
    float f;
    int32_t i;
} strix_float_bits;

/* e^x. x = n·ln2 + r with |r| <= ln2/2 (Cody–Waite split of ln2), e^r = 1 + r + r²·P(r), times
 * 2^n built from the exponent bits. x < -87.33 gives 0 (results below FLT_MIN are flushed);
 * x > 88.37 gives +inf (so 2^n never overflows: true e^x overflows from 88.72); NaN stays NaN.
 * The clamps are on x only: a clamp on n made GCC emit the polynomial twice. They are written so
 * that NaN also lands inside the range (float -> int32 of NaN is undefined behaviour). */
STRIX_HD static inline float strix_kernel_expf(float x) {
    float xc = x > -87.33f ? x : -87.33f;
    xc = xc < 88.37f ? xc : 88.37f;
    float n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f; /* round to nearest (1.5·2^23) */
    float r = xc - n * 0.693145751953125f; /* ln2 high part: n·hi is exact */
    r = r - n * 1.428606765330187045e-06f; /* ln2 low part */
    float p = 1.985779210e-04f;
    p = p * r + 1.393360439e-03f;
    p = p * r + 8.333360738e-03f;
    p = p * r + 4.166646547e-02f;
    p = p * r + 1.666666653e-01f;
    p = p * r + 0.5f;
    float er = 1.0f + (r + (r * r) * p);
    strix_float_bits scale;
    scale.i = ((int32_t)n + 127) * 8388608; /* 2^n: biased exponent in bits 23..30 */
    float y = er * scale.f;
    y = x < -87.33f ? 0.0f : y;
    y = x > 88.37f ? INFINITY : y;
    return x == x ? y : x; /* NaN in, NaN out */
}

/* erf(x), odd, given e = e^(−x²) from the caller (GELU's backward shares it with the normal pdf).
 * |x| < 0.875: x + x·P(x²). Above: 1 − e·Q(1/t − 0.696), t = min(|x|, 4), where Q fits
 * erfc(t)·e^(t²) on [0.875, 4]; from |x| = 4 on, e·Q < 2e-8 and the result rounds to ±1. */
STRIX_HD static inline float strix_kernel_erff_e(float x, float e) {
    float a = fabsf(x);
    float a2 = a * a;
    float p = 8.675611042e-05f;
    p = p * a2 - 8.211158763e-04f;
    p = p * a2 + 5.206752704e-03f;
    p = p * a2 - 2.686158714e-02f;
    p = p * a2 + 1.128373306e-01f;
    p = p * a2 - 3.761263607e-01f;
    p = p * a2 + 1.283791669e-01f;
    float small = a + a * p;
    float t = a < 0.875f ? 0.875f : (a > 4.0f ? 4.0f : a);
    float u = 1.0f / t - 6.964285714e-01f;
    float q = -2.080027238e-02f;
    q = q * u + 1.130748088e-02f;
    q = q * u + 1.179551166e-02f;
    q = q * u - 2.328011096e-02f;
    q = q * u + 3.102536273e-02f;
    q = q * u - 3.093627631e-02f;
    q = q * u + 9.554520903e-03f;
    q = q * u + 4.832219373e-02f;
    q = q * u - 1.624575607e-01f;
    q = q * u + 3.583542690e-01f;
    q = q * u + 3.323958882e-01f;
    float large = 1.0f - e * q;
    return copysignf(a < 0.875f ? small : large, x);
}

/* erf(x), ≤ 1.16 ulp. */
STRIX_HD static inline float strix_kernel_erff(float x) {
    return strix_kernel_erff_e(x, strix_kernel_expf(-(x * x)));
}

#endif
