/*
 * kernels/quant.h - ggml's block formats (the tensor types of GGUF files) as float32, once: the
 * binary16 and bfloat16 conversions, the block layouts of F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, Q4_K and Q6_K (ggml-common.h's block_q4_0 ... block_q6_K), and the dot product of a row in
 * block format with float32 x in the one order strix uses for it. src/io/gguf_quant.c
 * (dequantization, strix_gguf_dot), the CPU loops (src/backends/cpu/qmatmul.c) and the GPU
 * launcher (src/backends/cuda/qmatmul.cu) of strix_matmul_blocks call these functions.
 *
 * Each value is computed as ggml's dequantize_row_* and gguf-py's gguf/quants.py compute it: the
 * f16 scales converted exactly, then the float32 products and sums in the order written below
 * (the build has no contraction: -ffp-contract=off, nvcc -fmad=false), so every caller gets ggml's
 * bits. Blocks are read byte by byte (little-endian, any alignment). Types are strix_block_type
 * numbers (ggml.h's enum ggml_type). Not here: quantizing, file parsing (src/io/gguf.c).
 */
#ifndef STRIX_KERNELS_QUANT_H
#define STRIX_KERNELS_QUANT_H

#include <string.h>

#include "kernels/common.h"
#include "strix/backend.h" /* strix_block_type */

#define STRIX_QUANT_BLOCK_MAX 256 /* values of the largest block (the K types) */
#define STRIX_QUANT_LANES 16      /* partial sums of strix_quant_dot */

// ---- scalars ------------------------------------------------------------------------------------

STRIX_HD static inline float strix_quant_bits_to_float(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* IEEE binary16 bits -> float32 bits, exact (subnormals normalised, inf/NaN payload kept), in
 * integers only (so a process with DAZ/FTZ set still gets the exact value): a normal half moves
 * its exponent and mantissa into a float32's place and adds 112 to the exponent. */
STRIX_HD static inline uint32_t strix_half_to_float_bits(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, rest = (uint32_t)(h & 0x7fffu) << 13;
    if (rest >= 0x0f800000u) return sign | 0x70000000u | rest; /* inf, NaN: exponent 0xff */
    if (rest >= 0x00800000u) return sign | (rest + 0x38000000u); /* normal: exponent + 112 */
    if (rest == 0) return sign;
    uint32_t man = rest >> 13, e = 0; /* subnormal m·2^-24: leading 1 to the implicit bit */
    while (!(man & 0x400u)) man <<= 1, e++;
    return sign | ((113u - e) << 23) | ((man & 0x3ffu) << 13);
}

/* The little-endian binary16 at p as float32, exactly. */
STRIX_HD static inline float strix_half_at(const uint8_t *p) {
    return strix_quant_bits_to_float(strix_half_to_float_bits((uint16_t)(p[0] | p[1] << 8)));
}

/* The little-endian bfloat16 at p as float32 (its bits are the upper half), exactly. */
STRIX_HD static inline float strix_bf16_at(const uint8_t *p) {
    return strix_quant_bits_to_float(((uint32_t)p[0] | (uint32_t)p[1] << 8) << 16);
}

STRIX_HD static inline uint32_t strix_quant_u32_at(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// ---- block sizes --------------------------------------------------------------------------------

/* Values and bytes of one block of `type` (1 and 4 for F32, 32 and 20 for Q4_1, 256 and 144 for
 * Q4_K, ...); false (outputs untouched) for a type strix does not read. */
STRIX_HD static inline bool strix_quant_block(int type, size_t *values, size_t *bytes) {
    size_t v, b;
    switch (type) {
    case STRIX_BLOCK_F32: v = 1, b = 4; break;
    case STRIX_BLOCK_F16:
    case STRIX_BLOCK_BF16: v = 1, b = 2; break;
    case STRIX_BLOCK_Q4_0: v = 32, b = 2 + 16; break;
    case STRIX_BLOCK_Q4_1: v = 32, b = 2 + 2 + 16; break;
    case STRIX_BLOCK_Q5_0: v = 32, b = 2 + 4 + 16; break;
    case STRIX_BLOCK_Q5_1: v = 32, b = 2 + 2 + 4 + 16; break;
    case STRIX_BLOCK_Q8_0: v = 32, b = 2 + 32; break;
    case STRIX_BLOCK_Q4_K: v = 256, b = 2 + 2 + 12 + 128; break;
    case STRIX_BLOCK_Q6_K: v = 256, b = 128 + 64 + 16 + 2; break;
    default: return false;
    }
    if (values) *values = v;
    if (bytes) *bytes = b;
    return true;
}

/* ggml's name of type t ("Q4_1", "IQ4_XS", ...) for every number gguf-py 0.19's
 * GGMLQuantizationType has, read by strix or not; NULL for a number ggml does not (or no longer)
 * use (4, 5, 31-33, 36-38, ...). */
STRIX_HD static inline const char *strix_quant_type_name(int t) {
    switch (t) {
    case 0: return "F32";     case 1: return "F16";      case 2: return "Q4_0";
    case 3: return "Q4_1";    case 6: return "Q5_0";     case 7: return "Q5_1";
    case 8: return "Q8_0";    case 9: return "Q8_1";     case 10: return "Q2_K";
    case 11: return "Q3_K";   case 12: return "Q4_K";    case 13: return "Q5_K";
    case 14: return "Q6_K";   case 15: return "Q8_K";    case 16: return "IQ2_XXS";
    case 17: return "IQ2_XS"; case 18: return "IQ3_XXS"; case 19: return "IQ1_S";
    case 20: return "IQ4_NL"; case 21: return "IQ3_S";   case 22: return "IQ2_S";
    case 23: return "IQ4_XS"; case 24: return "I8";      case 25: return "I16";
    case 26: return "I32";    case 27: return "I64";     case 28: return "F64";
    case 29: return "IQ1_M";  case 30: return "BF16";    case 34: return "TQ1_0";
    case 35: return "TQ2_0";  case 39: return "MXFP4";   case 40: return "NVFP4";
    case 41: return "Q1_0";
    default: return NULL;
    }
}

// ---- blocks -------------------------------------------------------------------------------------

/* Q4_0: d, qs[16]; value j < 16 is the low nibble of qs[j], value 16 + j its high nibble;
 * x = d·(q - 8). */
STRIX_HD static inline void strix_quant_q4_0(const uint8_t *b, float *y) {
    float d = strix_half_at(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) y[j] = d * (float)((int)(qs[j] & 0x0F) - 8);
    for (int j = 0; j < 16; j++) y[j + 16] = d * (float)((int)(qs[j] >> 4) - 8);
}

/* Q4_1: d, m, qs[16]; nibbles as Q4_0; x = d·q + m. */
STRIX_HD static inline void strix_quant_q4_1(const uint8_t *b, float *y) {
    float d = strix_half_at(b), m = strix_half_at(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < 16; j++) y[j] = d * (float)(qs[j] & 0x0F) + m;
    for (int j = 0; j < 16; j++) y[j + 16] = d * (float)(qs[j] >> 4) + m;
}

/* Q5_0: d, qh (u32: bit j is the fifth bit of value j), qs[16] (nibbles as Q4_0);
 * x = d·(q - 16). */
STRIX_HD static inline void strix_quant_q5_0(const uint8_t *b, float *y) {
    float d = strix_half_at(b);
    uint32_t qh = strix_quant_u32_at(b + 2);
    const uint8_t *qs = b + 6;
    for (int j = 0; j < 16; j++) {
        int lo = (int)((qs[j] & 0x0Fu) | ((qh >> j) & 1u) << 4);
        int hi = (int)((uint32_t)(qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4);
        y[j] = d * (float)(lo - 16);
        y[j + 16] = d * (float)(hi - 16);
    }
}

/* Q5_1: d, m, qh, qs[16] (as Q5_0); x = d·q + m. */
STRIX_HD static inline void strix_quant_q5_1(const uint8_t *b, float *y) {
    float d = strix_half_at(b), m = strix_half_at(b + 2);
    uint32_t qh = strix_quant_u32_at(b + 4);
    const uint8_t *qs = b + 8;
    for (int j = 0; j < 16; j++) {
        uint32_t lo = (qs[j] & 0x0Fu) | ((qh >> j) & 1u) << 4;
        uint32_t hi = (uint32_t)(qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4;
        y[j] = d * (float)lo + m;
        y[j + 16] = d * (float)hi + m;
    }
}

/* Q8_0: d, qs[32] (int8); x = q·d. */
STRIX_HD static inline void strix_quant_q8_0(const uint8_t *b, float *y) {
    float d = strix_half_at(b);
    for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q4_K: the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes (ggml's
 * get_scale_min_k4). */
STRIX_HD static inline void strix_quant_scale_min_k4(int j, const uint8_t *s, uint32_t *sc,
                                                     uint32_t *m) {
    if (j < 4) {
        *sc = s[j] & 63u;
        *m = s[j + 4] & 63u;
    } else {
        *sc = (s[j + 4] & 0x0Fu) | (uint32_t)(s[j - 4] >> 6) << 4;
        *m = (uint32_t)(s[j + 4] >> 4) | (uint32_t)(s[j] >> 6) << 4;
    }
}

/* Q4_K: d, dmin, scales[12], qs[128]: four chunks of 64 values, chunk c from qs[32c..32c+32):
 * its first 32 values the low nibbles (sub-block 2c), the next 32 the high nibbles (2c + 1);
 * x = (d·sc)·q - (dmin·m). */
STRIX_HD static inline void strix_quant_q4_k(const uint8_t *b, float *y) {
    float d = strix_half_at(b), dmin = strix_half_at(b + 2);
    const uint8_t *scales = b + 4, *q = b + 16;
    for (int c = 0; c < 4; c++, q += 32, y += 64) {
        uint32_t sc, m;
        strix_quant_scale_min_k4(2 * c, scales, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        strix_quant_scale_min_k4(2 * c + 1, scales, &sc, &m);
        float d2 = d * (float)sc, m2 = dmin * (float)m;
        for (int l = 0; l < 32; l++) y[l] = d1 * (float)(q[l] & 0x0F) - m1;
        for (int l = 0; l < 32; l++) y[32 + l] = d2 * (float)(q[l] >> 4) - m2;
    }
}

/* Q6_K: ql[128], qh[64], scales[16] (int8), d: two halves of 128 values, half h from
 * ql[64h..64h+64), qh[32h..32h+32), scales[8h..8h+8); value l + 32k (k 0..3) of a half is the
 * low (k even) or high nibble of ql[l + 32(k & 1)] with bits 2k, 2k+1 of qh[l] on top, minus 32;
 * value i of a half = (d·scale[i / 16])·q. */
STRIX_HD static inline void strix_quant_q6_k(const uint8_t *b, float *y) {
    float d = strix_half_at(b + 208);
    for (int h = 0; h < 2; h++, y += 128) {
        const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        const int8_t *sc = (const int8_t *)(b + 192 + 8 * h);
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = (int)((ql[l] & 0x0Fu) | ((qh[l] >> 0) & 3u) << 4) - 32;
            int q2 = (int)((ql[l + 32] & 0x0Fu) | ((qh[l] >> 2) & 3u) << 4) - 32;
            int q3 = (int)((uint32_t)(ql[l] >> 4) | ((qh[l] >> 4) & 3u) << 4) - 32;
            int q4 = (int)((uint32_t)(ql[l + 32] >> 4) | ((qh[l] >> 6) & 3u) << 4) - 32;
            y[l] = d * (float)sc[is] * (float)q1;
            y[l + 32] = d * (float)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)sc[is + 6] * (float)q4;
        }
    }
}

/* One block of `type` at b into y[0..values) (=); a type strix does not read writes nothing (the
 * callers check the type first). */
STRIX_HD static inline void strix_quant_decode(int type, const uint8_t *b, float *y) {
    switch (type) {
    case STRIX_BLOCK_F32: y[0] = strix_quant_bits_to_float(strix_quant_u32_at(b)); break;
    case STRIX_BLOCK_F16: y[0] = strix_half_at(b); break;
    case STRIX_BLOCK_BF16: y[0] = strix_bf16_at(b); break;
    case STRIX_BLOCK_Q4_0: strix_quant_q4_0(b, y); break;
    case STRIX_BLOCK_Q4_1: strix_quant_q4_1(b, y); break;
    case STRIX_BLOCK_Q5_0: strix_quant_q5_0(b, y); break;
    case STRIX_BLOCK_Q5_1: strix_quant_q5_1(b, y); break;
    case STRIX_BLOCK_Q8_0: strix_quant_q8_0(b, y); break;
    case STRIX_BLOCK_Q4_K: strix_quant_q4_k(b, y); break;
    case STRIX_BLOCK_Q6_K: strix_quant_q6_k(b, y); break;
    default: break;
    }
}

/* n values (a multiple of the block size) of `type` at src into dst[0..n) (=), block by block. */
STRIX_HD static inline void strix_quant_decode_row(int type, const uint8_t *src, size_t n,
                                                   float *dst) {
    size_t values = 1, bytes = 0;
    if (!strix_quant_block(type, &values, &bytes)) return;
    switch (type) { /* the one-value types without a call per value */
    case STRIX_BLOCK_F32:
        if (n) memcpy(dst, src, n * sizeof(float)); /* little-endian host (src/io asserts it) */
        return;
    case STRIX_BLOCK_F16:
        for (size_t i = 0; i < n; i++) dst[i] = strix_half_at(src + 2 * i);
        return;
    case STRIX_BLOCK_BF16:
        for (size_t i = 0; i < n; i++) dst[i] = strix_bf16_at(src + 2 * i);
        return;
    default: break;
    }
    for (size_t i = 0; i < n / values; i++)
        strix_quant_decode(type, src + i * bytes, dst + i * values);
}

// ---- the dot product of a row -------------------------------------------------------------------

/* The order of every dot product of a block row with float32 x in strix (strix_gguf_dot,
 * strix_matmul_blocks on every backend): STRIX_QUANT_LANES = 16 partial sums from 0.0f; value i
 * of the row, decoded as above, times x[i] (the float32 product rounded) is added to lane
 * i mod 16, i ascending; then the lanes are folded pairwise: for s = 8, 4, 2, 1, lane k += lane
 * k + s for k < s; the result is lane 0. */

/* The fold above: returns lane 0 (acc is overwritten). */
STRIX_HD static inline float strix_quant_lanes_fold(float *acc) {
    for (int s = STRIX_QUANT_LANES / 2; s >= 1; s /= 2)
        for (int k = 0; k < s; k++) acc[k] += acc[k + s];
    return acc[0];
}

/* acc[(lane0 + i) mod 16] += w[i]·x[i] for i in [0, n) ascending: w[0] is value lane0 of its
 * row (so it goes to lane lane0 mod 16). Whole runs of 16 from a lane-0 start as one vector
 * step. */
STRIX_HD static inline void strix_quant_lanes_add(float *acc, const float *w, const float *x,
                                                  size_t n, size_t lane0) {
    size_t i = 0;
    if (lane0 % STRIX_QUANT_LANES == 0)
        for (; i + STRIX_QUANT_LANES <= n; i += STRIX_QUANT_LANES)
            for (int k = 0; k < STRIX_QUANT_LANES; k++) acc[k] += w[i + k] * x[i + k];
    for (; i < n; i++) acc[(lane0 + i) % STRIX_QUANT_LANES] += w[i] * x[i];
}

/* Σ w[i]·x[i] over i < n in the order above, w being n values (a multiple of the block size) of
 * `type` at row (any alignment); 0 for a type strix does not read. It decodes a block (or a run
 * of up to 256 values of a one-value type) at a time into a local buffer. One GPU thread per
 * output element calls it; the CPU loops and strix_gguf_dot give its bits. */
STRIX_HD static inline float strix_quant_dot(int type, const uint8_t *row, const float *x,
                                             size_t n) {
    float acc[STRIX_QUANT_LANES];
    for (int k = 0; k < STRIX_QUANT_LANES; k++) acc[k] = 0.0f;
    size_t values = 1, bytes = 0;
    if (!strix_quant_block(type, &values, &bytes)) return 0.0f;
    float w[STRIX_QUANT_BLOCK_MAX];
    for (size_t i = 0; i < n;) {
        size_t m = values > 1 ? values : n - i < STRIX_QUANT_BLOCK_MAX ? n - i
                                                                       : STRIX_QUANT_BLOCK_MAX;
        strix_quant_decode_row(type, row + i / values * bytes, m, w);
        strix_quant_lanes_add(acc, w, x + i, m, i);
        i += m;
    }
    return strix_quant_lanes_fold(acc);
}

#endif
