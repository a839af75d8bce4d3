/*
 * gguf_quant.c - ggml's tensor types for strix/gguf.h: their names, the block sizes of the types
 * strix reads, and dequantization to float32. The block layouts are ggml's (ggml-common.h:
 * block_q4_0, block_q4_1, block_q5_0, block_q5_1, block_q8_0, block_q4_K, block_q6_K) and each
 * value is computed as ggml's dequantize_row_* and gguf-py's gguf/quants.py compute it: f16 scales
 * converted exactly, then float32 multiplies and adds in the order written below (the build has
 * -ffp-contract=off, so nothing is fused). Does not quantize, and reads no file (gguf.c does).
 */
#include <string.h>

#include "st_internal.h" /* st_half_to_float_bits */
#include "strix/gguf.h"

// ---- type table --------------------------------------------------------------------------------

/* Names of every type in gguf-py 0.19's GGMLQuantizationType; numbers it skips (4, 5, 31-33,
 * 36-38: types ggml removed) have none. */
static const char *const type_names[] = {
    [0] = "F32",      [1] = "F16",     [2] = "Q4_0",     [3] = "Q4_1",    [6] = "Q5_0",
    [7] = "Q5_1",     [8] = "Q8_0",    [9] = "Q8_1",     [10] = "Q2_K",   [11] = "Q3_K",
    [12] = "Q4_K",    [13] = "Q5_K",   [14] = "Q6_K",    [15] = "Q8_K",   [16] = "IQ2_XXS",
    [17] = "IQ2_XS",  [18] = "IQ3_XXS", [19] = "IQ1_S",  [20] = "IQ4_NL", [21] = "IQ3_S",
    [22] = "IQ2_S",   [23] = "IQ4_XS", [24] = "I8",      [25] = "I16",    [26] = "I32",
    [27] = "I64",     [28] = "F64",    [29] = "IQ1_M",   [30] = "BF16",   [34] = "TQ1_0",
    [35] = "TQ2_0",   [39] = "MXFP4",  [40] = "NVFP4",   [41] = "Q1_0",
};

const char *strix_gguf_type_name(int t) {
    if (t < 0 || (size_t)t >= sizeof type_names / sizeof type_names[0]) return NULL;
    return type_names[t];
}

bool strix_gguf_type_block(strix_gguf_type t, size_t *block_values, size_t *block_bytes) {
    size_t values, bytes;
    switch (t) {
    case STRIX_GGUF_F32: values = 1, bytes = 4; break;
    case STRIX_GGUF_F16:
    case STRIX_GGUF_BF16: values = 1, bytes = 2; break;
    case STRIX_GGUF_Q4_0: values = 32, bytes = 2 + 16; break;
    case STRIX_GGUF_Q4_1: values = 32, bytes = 2 + 2 + 16; break;
    case STRIX_GGUF_Q5_0: values = 32, bytes = 2 + 4 + 16; break;
    case STRIX_GGUF_Q5_1: values = 32, bytes = 2 + 2 + 4 + 16; break;
    case STRIX_GGUF_Q8_0: values = 32, bytes = 2 + 32; break;
    case STRIX_GGUF_Q4_K: values = 256, bytes = 2 + 2 + 12 + 128; break;
    case STRIX_GGUF_Q6_K: values = 256, bytes = 128 + 64 + 16 + 2; break;
    default: return false;
    }
    if (block_values) *block_values = values;
    if (block_bytes) *block_bytes = bytes;
    return true;
}

// ---- blocks ------------------------------------------------------------------------------------

/* The little-endian binary16 at p as float32, exactly. */
static float half_at(const unsigned char *p) {
    uint32_t bits = st_half_to_float_bits((uint16_t)(p[0] | (unsigned)p[1] << 8));
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint32_t u32_at(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Q4_0: d, qs[16]; value j < 16 is the low nibble of qs[j], value 16 + j its high nibble. */
static void block_q4_0(const unsigned char *b, float *y) {
    float d = half_at(b);
    const unsigned char *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((int)(qs[j] & 0x0F) - 8);
        y[j + 16] = d * (float)((int)(qs[j] >> 4) - 8);
    }
}

/* Q4_1: d, m, qs[16]; nibbles as Q4_0, value = d·q + m. */
static void block_q4_1(const unsigned char *b, float *y) {
    float d = half_at(b), m = half_at(b + 2);
    const unsigned char *qs = b + 4;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)(qs[j] & 0x0F) + m;
        y[j + 16] = d * (float)(qs[j] >> 4) + m;
    }
}

/* Q5_0: d, qh (u32: bit j is the fifth bit of value j), qs[16] (nibbles as Q4_0); d·(q - 16). */
static void block_q5_0(const unsigned char *b, float *y) {
    float d = half_at(b);
    uint32_t qh = u32_at(b + 2);
    const unsigned char *qs = b + 6;
    for (int j = 0; j < 16; j++) {
        int lo = (int)((qs[j] & 0x0Fu) | ((qh >> j) & 1u) << 4);
        int hi = (int)((qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4);
        y[j] = d * (float)(lo - 16);
        y[j + 16] = d * (float)(hi - 16);
    }
}

/* Q5_1: d, m, qh, qs[16] (as Q5_0); d·q + m. */
static void block_q5_1(const unsigned char *b, float *y) {
    float d = half_at(b), m = half_at(b + 2);
    uint32_t qh = u32_at(b + 4);
    const unsigned char *qs = b + 8;
    for (int j = 0; j < 16; j++) {
        unsigned lo = (qs[j] & 0x0Fu) | ((qh >> j) & 1u) << 4;
        unsigned hi = (qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4;
        y[j] = d * (float)lo + m;
        y[j + 16] = d * (float)hi + m;
    }
}

/* Q8_0: d, qs[32] (int8); q·d. */
static void block_q8_0(const unsigned char *b, float *y) {
    float d = half_at(b);
    for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q4_K: the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes (ggml's
 * get_scale_min_k4). */
static void scale_min_k4(int j, const unsigned char *s, unsigned *sc, unsigned *m) {
    if (j < 4) {
        *sc = s[j] & 63u;
        *m = s[j + 4] & 63u;
    } else {
        *sc = (s[j + 4] & 0x0Fu) | (unsigned)(s[j - 4] >> 6) << 4;
        *m = (unsigned)(s[j + 4] >> 4) | (unsigned)(s[j] >> 6) << 4;
    }
}

/* Q4_K: d, dmin, scales[12], qs[128]: four chunks of 64 values, chunk c from qs[32c..32c+32):
 * its first 32 values the low nibbles (sub-block 2c), the next 32 the high nibbles (2c + 1);
 * value = (d·sc)·q - (dmin·m). */
static void block_q4_k(const unsigned char *b, float *y) {
    float d = half_at(b), dmin = half_at(b + 2);
    const unsigned char *scales = b + 4, *q = b + 16;
    for (int c = 0; c < 4; c++, q += 32, y += 64) {
        unsigned sc, m;
        scale_min_k4(2 * c, scales, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        scale_min_k4(2 * c + 1, scales, &sc, &m);
        float d2 = d * (float)sc, m2 = dmin * (float)m;
        for (int l = 0; l < 32; l++) y[l] = d1 * (float)(q[l] & 0x0F) - m1;
        for (int l = 0; l < 32; l++) y[32 + l] = d2 * (float)(q[l] >> 4) - m2;
    }
}

/* Q6_K: ql[128], qh[64], scales[16] (int8), d: two halves of 128 values, half h from
 * ql[64h..64h+64), qh[32h..32h+32), scales[8h..8h+8); value l + 32k (k 0..3) of a half is the
 * low (k even) or high nibble of ql[l + 32(k & 1)] with bits 2k, 2k+1 of qh[l] on top, minus 32;
 * value i of a half = (d·scale[i / 16])·q. */
static void block_q6_k(const unsigned char *b, float *y) {
    float d = half_at(b + 208);
    for (int h = 0; h < 2; h++, y += 128) {
        const unsigned char *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        const int8_t *sc = (const int8_t *)(b + 192 + 8 * h);
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = (int)((ql[l] & 0x0Fu) | ((qh[l] >> 0) & 3u) << 4) - 32;
            int q2 = (int)((ql[l + 32] & 0x0Fu) | ((qh[l] >> 2) & 3u) << 4) - 32;
            int q3 = (int)((unsigned)(ql[l] >> 4) | ((qh[l] >> 4) & 3u) << 4) - 32;
            int q4 = (int)((unsigned)(ql[l + 32] >> 4) | ((qh[l] >> 6) & 3u) << 4) - 32;
            y[l] = d * (float)sc[is] * (float)q1;
            y[l + 32] = d * (float)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)sc[is + 6] * (float)q4;
        }
    }
}

// ---- rows --------------------------------------------------------------------------------------

strix_status strix_gguf_dequantize(strix_gguf_type t, const void *src, size_t n, float *dst) {
    size_t bv, bb;
    if (!strix_gguf_type_block(t, &bv, &bb)) {
        const char *name = strix_gguf_type_name((int)t);
        return strix_error(STRIX_ERR_UNSUPPORTED, "gguf: cannot dequantize %s (type %d)",
                           name ? name : "an unknown type", (int)t);
    }
    if (n % bv != 0)
        return strix_error(STRIX_ERR_ARG, "gguf: %zu values of %s are not whole blocks of %zu", n,
                           strix_gguf_type_name((int)t), bv);
    const unsigned char *p = src;
    size_t blocks = n / bv;
    switch (t) {
    case STRIX_GGUF_F32:
        if (n) memcpy(dst, p, n * sizeof(float));
        break;
    case STRIX_GGUF_F16:
        for (size_t i = 0; i < n; i++) dst[i] = half_at(p + 2 * i);
        break;
    case STRIX_GGUF_BF16:
        for (size_t i = 0; i < n; i++) {
            uint32_t bits = ((uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8) << 16;
            memcpy(&dst[i], &bits, sizeof bits);
        }
        break;
    case STRIX_GGUF_Q4_0:
        for (size_t i = 0; i < blocks; i++) block_q4_0(p + i * bb, dst + i * bv);
        break;
    case STRIX_GGUF_Q4_1:
        for (size_t i = 0; i < blocks; i++) block_q4_1(p + i * bb, dst + i * bv);
        break;
    case STRIX_GGUF_Q5_0:
        for (size_t i = 0; i < blocks; i++) block_q5_0(p + i * bb, dst + i * bv);
        break;
    case STRIX_GGUF_Q5_1:
        for (size_t i = 0; i < blocks; i++) block_q5_1(p + i * bb, dst + i * bv);
        break;
    case STRIX_GGUF_Q8_0:
        for (size_t i = 0; i < blocks; i++) block_q8_0(p + i * bb, dst + i * bv);
        break;
    case STRIX_GGUF_Q4_K:
        for (size_t i = 0; i < blocks; i++) block_q4_k(p + i * bb, dst + i * bv);
        break;
    case STRIX_GGUF_Q6_K:
        for (size_t i = 0; i < blocks; i++) block_q6_k(p + i * bb, dst + i * bv);
        break;
    }
    return STRIX_OK;
}

strix_status strix_gguf_tensor_to_f32(const strix_gguf_tensor *t, float *dst, size_t cap) {
    if (cap < t->numel)
        return strix_error(STRIX_ERR_ARG, "gguf: tensor '%s' has %zu values, the buffer room for "
                           "%zu", t->name, t->numel, cap);
    return strix_gguf_dequantize(t->type, t->data, t->numel, dst);
}

// ---- dot products ------------------------------------------------------------------------------

#define DOT_LANES 16
#define DOT_CHUNK 256 /* values dequantized at a time: a multiple of every block size */

/* acc[k] += w[i]·x[i] for i ≡ k (mod 16), i ascending; n a multiple of 16. */
static void lanes_add(float *restrict acc, const float *restrict w, const float *restrict x,
                      size_t n) {
    for (size_t i = 0; i < n; i += DOT_LANES)
        for (int k = 0; k < DOT_LANES; k++) acc[k] += w[i + k] * x[i + k];
}

/* The 16 lanes folded pairwise: for s = 8, 4, 2, 1, lane k += lane k + s (k < s). */
static float lanes_sum(float *acc) {
    for (int s = DOT_LANES / 2; s >= 1; s /= 2)
        for (int k = 0; k < s; k++) acc[k] += acc[k + s];
    return acc[0];
}

float strix_gguf_dot_f32(const float *w, const float *x, size_t n) {
    float acc[DOT_LANES] = {0};
    size_t whole = n - n % DOT_LANES;
    lanes_add(acc, w, x, whole);
    for (size_t i = whole; i < n; i++) acc[i % DOT_LANES] += w[i] * x[i];
    return lanes_sum(acc);
}

/* Fused blocks of the common types: the values of block_q4_1 etc., each block's two halves of 16
 * added to the 16 lanes in ascending order (lane k takes value k, then value 16 + k), which is
 * the order of lanes_add over the dequantized block. */
static void dot_q4_0(float *restrict acc, const unsigned char *p, const float *restrict x,
                     size_t blocks) {
    for (size_t b = 0; b < blocks; b++, p += 18, x += 32) {
        float d = half_at(p);
        const unsigned char *qs = p + 2;
        for (int j = 0; j < 16; j++) acc[j] += d * (float)((int)(qs[j] & 0x0F) - 8) * x[j];
        for (int j = 0; j < 16; j++) acc[j] += d * (float)((int)(qs[j] >> 4) - 8) * x[16 + j];
    }
}

static void dot_q4_1(float *restrict acc, const unsigned char *p, const float *restrict x,
                     size_t blocks) {
    for (size_t b = 0; b < blocks; b++, p += 20, x += 32) {
        float d = half_at(p), m = half_at(p + 2);
        const unsigned char *qs = p + 4;
        for (int j = 0; j < 16; j++) acc[j] += (d * (float)(qs[j] & 0x0F) + m) * x[j];
        for (int j = 0; j < 16; j++) acc[j] += (d * (float)(qs[j] >> 4) + m) * x[16 + j];
    }
}

static void dot_q8_0(float *restrict acc, const unsigned char *p, const float *restrict x,
                     size_t blocks) {
    for (size_t b = 0; b < blocks; b++, p += 34, x += 32) {
        float d = half_at(p);
        const int8_t *qs = (const int8_t *)(p + 2);
        for (int j = 0; j < 16; j++) acc[j] += (float)qs[j] * d * x[j];
        for (int j = 0; j < 16; j++) acc[j] += (float)qs[16 + j] * d * x[16 + j];
    }
}

float strix_gguf_dot(strix_gguf_type t, const void *row, const float *x, size_t n) {
    size_t bv = 1, bb = 0;
    STRIX_ASSERT(strix_gguf_type_block(t, &bv, &bb), "gguf_dot: type %d is not read", (int)t);
    STRIX_ASSERT(n % bv == 0, "gguf_dot: %zu values are not whole blocks of %zu", n, bv);
    float acc[DOT_LANES] = {0}, w[DOT_CHUNK];
    const unsigned char *p = row;
    switch (t) {
    case STRIX_GGUF_Q4_0: dot_q4_0(acc, p, x, n / 32); return lanes_sum(acc);
    case STRIX_GGUF_Q4_1: dot_q4_1(acc, p, x, n / 32); return lanes_sum(acc);
    case STRIX_GGUF_Q8_0: dot_q8_0(acc, p, x, n / 32); return lanes_sum(acc);
    default: break;
    }
    for (size_t i = 0; i < n; i += DOT_CHUNK) {
        size_t m = n - i < DOT_CHUNK ? n - i : DOT_CHUNK; /* a multiple of bv */
        strix_gguf_dequantize(t, p + i / bv * bb, m, w);
        size_t whole = m - m % DOT_LANES; /* i is a multiple of 16: lanes restart at w[0] */
        lanes_add(acc, w, x + i, whole);
        for (size_t j = whole; j < m; j++) acc[j % DOT_LANES] += w[j] * x[i + j];
    }
    return lanes_sum(acc);
}

size_t strix_gguf_row_bytes(strix_gguf_type t, size_t n) {
    size_t bv = 1, bb = 0;
    STRIX_ASSERT(strix_gguf_type_block(t, &bv, &bb), "gguf_row_bytes: type %d is not read",
                 (int)t);
    STRIX_ASSERT(n % bv == 0, "gguf_row_bytes: %zu values are not whole blocks of %zu", n, bv);
    return n / bv * bb;
}

void strix_gguf_matvec(strix_gguf_type t, const void *w, size_t rows, size_t cols,
                       const float *x, float *y) {
    size_t stride = strix_gguf_row_bytes(t, cols);
    for (size_t r = 0; r < rows; r++)
        y[r] = strix_gguf_dot(t, (const unsigned char *)w + r * stride, x, cols);
}
