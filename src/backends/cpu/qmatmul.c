/*
 * qmatmul.c - the CPU loops of strix_matmul_blocks: y (rows, out) = x (rows, in) · Wᵀ with W in
 * ggml's block format (kernels/quant.h), never dequantized whole.
 *
 * Every y element is the dot product of kernels/quant.h's strix_quant_dot, in its order: 16 lane
 * sums, value i into lane i mod 16, i ascending, then the pairwise fold. The lanes are one
 * AVX-512 vector (two AVX2 vectors; an array of 16 in the scalar fallback), each product a
 * multiply then an add (no FMA), so all three give the same bits as the kernel function, the GPU
 * launcher and strix_gguf_dot. Two paths, the same sums:
 *   rows <= QM_FEW_ROWS (token generation, memory-bound): four W rows at a time, each block
 *     decoded and multiplied straight away with the x of four tokens (or one), never stored (Q4_0,
 *     Q4_1 and Q8_0 into vector registers by the vector spelling of the kernel's formulas below,
 *     the other types by the kernel functions into a small buffer in L1), the next rows
 *     prefetched; up to 16 independent lane chains share each decoded block and x's loads.
 *   more rows (prompts, compute-bound): a tile of QM_TILE W rows decoded into the thread's
 *     scratch once (kernel functions), then every token against it with a register block of
 *     QM_MR tokens by QM_NR W rows (6 × 4 lane vectors with AVX-512, 2 × 2 otherwise), each
 *     group of tokens against the whole tile (so y is written in whole lines), the lanes folded
 *     in registers (AVX-512: four y at once).
 * Threads split the output features into contiguous ranges (whole tiles); each y element comes
 * from one thread, so the thread count never changes a bit. Not here: the kernel math
 * (kernels/quant.h), argument checks (src/core/backend.c).
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/quant.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#define QM_TILE 16     /* W rows decoded per tile (rows > QM_FEW_ROWS) */
#define QM_FEW_ROWS 12 /* up to this many tokens, W is decoded block by block per token group */
#define QM_GEMV_ROWS 4   /* W rows of the few-rows path at a time */
#define QM_GEMV_TOKENS 4 /* tokens of the few-rows path at a time */
#define QM_CHUNK 256   /* values of a one-value type (F32, F16, BF16) decoded at a time */
/* The register block of rows > 1: QM_MR tokens × QM_NR W rows of 16 lanes (24 of the 32
 * AVX-512 registers, the 4 W and an x vector beside them; AVX2's 16 hold 2 × 2 blocks of two
 * halves), and its lists for the unrolled code. */
#if defined(__AVX512F__)
#define QM_MR 6
#define QM_NR 4
#define QM_ROWS(M) M(0) M(1) M(2) M(3) M(4) M(5)
#define QM_COLS(M, a) M(a, 0) M(a, 1) M(a, 2) M(a, 3)
#else
#define QM_MR 2
#define QM_NR 2
#define QM_ROWS(M) M(0) M(1)
#define QM_COLS(M, a) M(a, 0) M(a, 1)
#endif

#define QM_INLINE static inline __attribute__((always_inline))

// ---- 16 lanes -----------------------------------------------------------------------------------

#if defined(__AVX512F__)
typedef __m512 lanes; /* a plain vector: gcc keeps these in registers, a struct it spilled */
QM_INLINE lanes lanes_zero(void) { return _mm512_setzero_ps(); }
QM_INLINE lanes lanes_load(const float *p) { return _mm512_loadu_ps(p); }
QM_INLINE void lanes_store(float *p, lanes a) { _mm512_storeu_ps(p, a); }
/* acc + a·b per lane: the product rounded, then the sum */
QM_INLINE lanes lanes_muladd(lanes acc, lanes a, lanes b) {
    return _mm512_add_ps(acc, _mm512_mul_ps(a, b));
}
#elif defined(__AVX2__)
typedef struct lanes { __m256 lo, hi; } lanes;
QM_INLINE lanes lanes_zero(void) { return (lanes){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
QM_INLINE lanes lanes_load(const float *p) {
    return (lanes){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
}
QM_INLINE void lanes_store(float *p, lanes a) {
    _mm256_storeu_ps(p, a.lo);
    _mm256_storeu_ps(p + 8, a.hi);
}
QM_INLINE lanes lanes_muladd(lanes acc, lanes a, lanes b) {
    return (lanes){_mm256_add_ps(acc.lo, _mm256_mul_ps(a.lo, b.lo)),
                   _mm256_add_ps(acc.hi, _mm256_mul_ps(a.hi, b.hi))};
}
#else
typedef struct lanes { float v[STRIX_QUANT_LANES]; } lanes;
QM_INLINE lanes lanes_zero(void) { return (lanes){{0}}; }
QM_INLINE lanes lanes_load(const float *p) {
    lanes a;
    memcpy(a.v, p, sizeof a.v);
    return a;
}
QM_INLINE void lanes_store(float *p, lanes a) { memcpy(p, a.v, sizeof a.v); }
QM_INLINE lanes lanes_muladd(lanes acc, lanes a, lanes b) {
    for (int k = 0; k < STRIX_QUANT_LANES; k++) acc.v[k] = acc.v[k] + a.v[k] * b.v[k];
    return acc;
}
#endif

// ---- Q4_0, Q4_1, Q8_0 blocks straight into lanes (AVX-512, AVX2) --------------------------------

/* kernels/quant.h's strix_quant_q4_0, _q4_1 and _q8_0 as vector code: the same operations per
 * value (the quant to float, times d, plus m), values 0-15 of the block into *lo and 16-31 into
 * *hi, the scales converted exactly (block_scales). So the values are the kernel's, bit for bit
 * (tests/ops/cases_quant.c checks the products against strix_gguf_dot). Other types and the
 * scalar build decode through a buffer (decode_step). Products are w·x, w first, as the
 * kernel's. */
#if defined(__AVX512F__) || defined(__AVX2__)
#define QM_VECTOR_BLOCKS 1
#if defined(__AVX512F__)
typedef struct qm_ints { __m512i v; } qm_ints; /* 16 int32 */
QM_INLINE qm_ints ints_u8(const uint8_t *p) {
    return (qm_ints){_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p))};
}
QM_INLINE qm_ints ints_s8(const uint8_t *p) {
    return (qm_ints){_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p))};
}
QM_INLINE qm_ints ints_low4(qm_ints a) {
    return (qm_ints){_mm512_and_si512(a.v, _mm512_set1_epi32(15))};
}
QM_INLINE qm_ints ints_high4(qm_ints a) { return (qm_ints){_mm512_srli_epi32(a.v, 4)}; }
QM_INLINE qm_ints ints_minus(qm_ints a, int c) {
    return (qm_ints){_mm512_sub_epi32(a.v, _mm512_set1_epi32(c))};
}
/* (float)q·d, or d·(float)q + m with `plus` */
QM_INLINE lanes lanes_scaled(qm_ints q, float d, bool plus, float m) {
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(q.v), _mm512_set1_ps(d));
    return plus ? _mm512_add_ps(v, _mm512_set1_ps(m)) : v;
}
#else
typedef struct qm_ints { __m256i lo, hi; } qm_ints;
QM_INLINE qm_ints ints_u8(const uint8_t *p) {
    __m128i q = _mm_loadu_si128((const __m128i *)(const void *)p);
    return (qm_ints){_mm256_cvtepu8_epi32(q), _mm256_cvtepu8_epi32(_mm_srli_si128(q, 8))};
}
QM_INLINE qm_ints ints_s8(const uint8_t *p) {
    __m128i q = _mm_loadu_si128((const __m128i *)(const void *)p);
    return (qm_ints){_mm256_cvtepi8_epi32(q), _mm256_cvtepi8_epi32(_mm_srli_si128(q, 8))};
}
QM_INLINE qm_ints ints_low4(qm_ints a) {
    __m256i mask = _mm256_set1_epi32(15);
    return (qm_ints){_mm256_and_si256(a.lo, mask), _mm256_and_si256(a.hi, mask)};
}
QM_INLINE qm_ints ints_high4(qm_ints a) {
    return (qm_ints){_mm256_srli_epi32(a.lo, 4), _mm256_srli_epi32(a.hi, 4)};
}
QM_INLINE qm_ints ints_minus(qm_ints a, int c) {
    __m256i k = _mm256_set1_epi32(c);
    return (qm_ints){_mm256_sub_epi32(a.lo, k), _mm256_sub_epi32(a.hi, k)};
}
QM_INLINE lanes lanes_scaled(qm_ints q, float d, bool plus, float m) {
    __m256 dv = _mm256_set1_ps(d), mv = _mm256_set1_ps(m);
    __m256 lo = _mm256_mul_ps(_mm256_cvtepi32_ps(q.lo), dv);
    __m256 hi = _mm256_mul_ps(_mm256_cvtepi32_ps(q.hi), dv);
    if (plus) lo = _mm256_add_ps(lo, mv), hi = _mm256_add_ps(hi, mv);
    return (lanes){lo, hi};
}
#endif

/* The binary16 scales at p (two with `two`: d and m) as float32, exactly: F16C's conversion where
 * the build has it, else strix_half_at. (F16C quiets a signaling NaN; every product of it is
 * that quiet NaN with either conversion, so the results keep their bits.) */
QM_INLINE void block_scales(const uint8_t *p, bool two, float *d, float *m) {
#if defined(__F16C__)
    int bits = two ? (int)strix_quant_u32_at(p) : (int)(p[0] | p[1] << 8);
    __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(bits));
    *d = _mm_cvtss_f32(f);
    *m = _mm_cvtss_f32(_mm_movehdup_ps(f));
#else
    *d = strix_half_at(p);
    *m = two ? strix_half_at(p + 2) : 0.0f;
#endif
}

/* Whether `type` has a vector decoder below. */
QM_INLINE bool vector_type(int type) {
    return type == STRIX_BLOCK_Q4_0 || type == STRIX_BLOCK_Q4_1 || type == STRIX_BLOCK_Q8_0;
}

/* Block b of a vector_type: values 0-15 into *lo, 16-31 into *hi. */
QM_INLINE void block_lanes(int type, const uint8_t *b, lanes *lo, lanes *hi) {
    if (type == STRIX_BLOCK_Q4_0) { /* d·(q - 8) */
        float d, unused;
        block_scales(b, false, &d, &unused);
        qm_ints q = ints_u8(b + 2);
        *lo = lanes_scaled(ints_minus(ints_low4(q), 8), d, false, 0.0f);
        *hi = lanes_scaled(ints_minus(ints_high4(q), 8), d, false, 0.0f);
    } else if (type == STRIX_BLOCK_Q4_1) { /* d·q + m */
        float d, m;
        block_scales(b, true, &d, &m);
        qm_ints q = ints_u8(b + 4);
        *lo = lanes_scaled(ints_low4(q), d, true, m);
        *hi = lanes_scaled(ints_high4(q), d, true, m);
    } else { /* Q8_0: q·d */
        float d, unused;
        block_scales(b, false, &d, &unused);
        *lo = lanes_scaled(ints_s8(b + 2), d, false, 0.0f);
        *hi = lanes_scaled(ints_s8(b + 18), d, false, 0.0f);
    }
}
#else
#define QM_VECTOR_BLOCKS 0
#endif

/* The lanes of acc plus w[k]·x[k] for k < count (the values past the last whole run of 16; w[0]
 * is value lane0 of the row), folded: the y element. */
#if defined(__AVX512F__)
/* acc plus w[k]·x[k] in lane k for k < count (< 16), the other lanes untouched. */
QM_INLINE lanes lanes_tail(lanes acc, const float *w, const float *x, size_t count) {
    __mmask16 m = (__mmask16)((1u << count) - 1);
    __m512 p = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w), _mm512_maskz_loadu_ps(m, x));
    return _mm512_mask_add_ps(acc, m, acc, p);
}
/* The kernel's fold in registers: for s = 8, 4, 2, 1 the same additions lane k + lane k + s. */
QM_INLINE float lanes_fold(lanes c) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(c),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(c), 1)));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
}
/* The folds of four lane vectors at once (element b of the result is c<b>'s): the same
 * additions, the vectors paired by shuffles so that each add serves two or four of them. */
QM_INLINE __m128 lanes_fold4(lanes c0, lanes c1, lanes c2, lanes c3) {
    /* s = 8: [c0 lanes k + k+8 (k < 8), c1's], [c2's, c3's] */
    __m512 a01 = _mm512_add_ps(_mm512_shuffle_f32x4(c0, c1, _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(c0, c1, _MM_SHUFFLE(3, 2, 3, 2)));
    __m512 a23 = _mm512_add_ps(_mm512_shuffle_f32x4(c2, c3, _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(c2, c3, _MM_SHUFFLE(3, 2, 3, 2)));
    /* s = 4: quarter b holds c<b>'s four lanes */
    __m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(a01, a23, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(a01, a23, _MM_SHUFFLE(3, 1, 3, 1)));
    u = _mm512_add_ps(u, _mm512_permute_ps(u, _MM_SHUFFLE(3, 2, 3, 2))); /* s = 2 */
    u = _mm512_add_ps(u, _mm512_permute_ps(u, _MM_SHUFFLE(1, 1, 1, 1))); /* s = 1 */
    __m512i lane0s = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(lane0s, u));
}
#endif

QM_INLINE float lanes_finish(lanes acc, const float *w, const float *x, size_t count,
                             size_t lane0) {
#if defined(__AVX512F__)
    if (lane0 % STRIX_QUANT_LANES == 0) /* always so here: runs start at multiples of 16 */
        return lanes_fold(count ? lanes_tail(acc, w, x, count) : acc);
#endif
    float l[STRIX_QUANT_LANES];
    lanes_store(l, acc);
    for (size_t k = 0; k < count && k < STRIX_QUANT_LANES; k++) /* count < 16 */
        l[(lane0 + k) % STRIX_QUANT_LANES] += w[k] * x[k];
    return strix_quant_lanes_fold(l);
}

// ---- decoding -----------------------------------------------------------------------------------

/* Values one decode step yields: a block, or a run of up to QM_CHUNK values of a one-value
 * type (a multiple of 16 except at the row's end). */
QM_INLINE size_t step_values(int type, size_t block, size_t left) {
    (void)type;
    if (block > 1) return block;
    return left < QM_CHUNK ? left : QM_CHUNK;
}

/* `count` values of W starting at value i of a row (its bytes at row) into buf. The callers
 * are inlined with a constant `type`, so the switch leaves one decoder, inlined too. */
QM_INLINE void decode_step(int type, const uint8_t *row, size_t i, size_t block, size_t bytes,
                           size_t count, float *buf) {
    const uint8_t *b = row + i / block * bytes;
    switch (type) {
    case STRIX_BLOCK_Q4_0: strix_quant_q4_0(b, buf); break;
    case STRIX_BLOCK_Q4_1: strix_quant_q4_1(b, buf); break;
    case STRIX_BLOCK_Q5_0: strix_quant_q5_0(b, buf); break;
    case STRIX_BLOCK_Q5_1: strix_quant_q5_1(b, buf); break;
    case STRIX_BLOCK_Q8_0: strix_quant_q8_0(b, buf); break;
    case STRIX_BLOCK_Q4_K: strix_quant_q4_k(b, buf); break;
    case STRIX_BLOCK_Q6_K: strix_quant_q6_k(b, buf); break;
    default: strix_quant_decode_row(type, b, count, buf); break; /* F32, F16, BF16 */
    }
}

// ---- few rows: decode and multiply block by block -----------------------------------------------

/* y[t][j + r] (row stride ldy) = x row t · W row j + r for t < nt (QM_GEMV_TOKENS or 1), r < nr
 * (QM_GEMV_ROWS or 1); x rows ldx apart, W rows row_bytes apart. Each block of the nr W rows is
 * decoded once (into registers, or into buf in L1) and multiplied with the nt tokens' x lanes:
 * nt·nr independent lane chains. */
QM_INLINE void gemv_rows(int type, size_t nt, size_t nr, const uint8_t *w, size_t row_bytes,
                         const float *x, size_t ldx, size_t in, float *y, size_t ldy, size_t j) {
    size_t block = 1, bytes = 0;
    strix_quant_block(type, &block, &bytes);
    lanes acc[QM_GEMV_TOKENS][QM_GEMV_ROWS];
    for (size_t t = 0; t < nt; t++)
        for (size_t r = 0; r < nr; r++) acc[t][r] = lanes_zero();
#if QM_VECTOR_BLOCKS
    if (vector_type(type)) { /* 32 values a block: lane k takes value k, then 16 + k */
        for (size_t i = 0; i < in; i += 32) {
            lanes x0[QM_GEMV_TOKENS], x1[QM_GEMV_TOKENS];
            for (size_t t = 0; t < nt; t++)
                x0[t] = lanes_load(x + t * ldx + i), x1[t] = lanes_load(x + t * ldx + i + 16);
            for (size_t r = 0; r < nr; r++) {
                lanes lo, hi;
                const uint8_t *b = w + (j + r) * row_bytes + i / 32 * bytes;
                __builtin_prefetch(b + QM_GEMV_ROWS * row_bytes); /* the next group's */
                block_lanes(type, b, &lo, &hi);
                for (size_t t = 0; t < nt; t++)
                    acc[t][r] = lanes_muladd(lanes_muladd(acc[t][r], lo, x0[t]), hi, x1[t]);
            }
        }
        for (size_t t = 0; t < nt; t++)
            for (size_t r = 0; r < nr; r++)
                y[t * ldy + j + r] = lanes_finish(acc[t][r], NULL, NULL, 0, 0);
        return;
    }
#endif
    float buf[QM_GEMV_ROWS][QM_CHUNK > STRIX_QUANT_BLOCK_MAX ? QM_CHUNK : STRIX_QUANT_BLOCK_MAX];
    size_t i = 0, tail = in, tail_at = 0; /* values past in - in % 16: at buf[r] + tail_at */
    while (i < in) {
        size_t m = step_values(type, block, in - i), whole = m - m % STRIX_QUANT_LANES;
        for (size_t r = 0; r < nr; r++)
            decode_step(type, w + (j + r) * row_bytes, i, block, bytes, m, buf[r]);
        for (size_t k = 0; k < whole; k += STRIX_QUANT_LANES)
            for (size_t t = 0; t < nt; t++) {
                lanes xv = lanes_load(x + t * ldx + i + k);
                for (size_t r = 0; r < nr; r++)
                    acc[t][r] = lanes_muladd(acc[t][r], lanes_load(buf[r] + k), xv);
            }
        if (whole < m) tail = i + whole, tail_at = whole;
        i += m;
    }
    for (size_t t = 0; t < nt; t++) /* buf[r] still holds the last run, with the tail */
        for (size_t r = 0; r < nr; r++)
            y[t * ldy + j + r] = lanes_finish(acc[t][r], buf[r] + tail_at, x + t * ldx + tail,
                                              in - tail, tail);
}

/* y[t][j] for every token t < rows and j in [j0, j1): groups of QM_GEMV_TOKENS tokens by
 * QM_GEMV_ROWS W rows, then the tokens and rows left one by one. x rows in apart, y rows out. */
QM_INLINE void gemv_range(int type, const uint8_t *w, size_t row_bytes, const float *x,
                          size_t rows, size_t in, float *y, size_t out, size_t j0, size_t j1) {
    for (size_t t = 0; t < rows;) {
        size_t nt = rows - t >= QM_GEMV_TOKENS ? QM_GEMV_TOKENS : 1;
        const float *xt = x + t * in;
        float *yt = y + t * out;
        size_t j = j0;
        if (nt == QM_GEMV_TOKENS) {
            for (; j + QM_GEMV_ROWS <= j1; j += QM_GEMV_ROWS)
                gemv_rows(type, QM_GEMV_TOKENS, QM_GEMV_ROWS, w, row_bytes, xt, in, in, yt, out,
                          j);
            for (; j < j1; j++)
                gemv_rows(type, QM_GEMV_TOKENS, 1, w, row_bytes, xt, in, in, yt, out, j);
        } else {
            for (; j + QM_GEMV_ROWS <= j1; j += QM_GEMV_ROWS)
                gemv_rows(type, 1, QM_GEMV_ROWS, w, row_bytes, xt, in, in, yt, out, j);
            for (; j < j1; j++) gemv_rows(type, 1, 1, w, row_bytes, xt, in, in, yt, out, j);
        }
        t += nt;
    }
}

// ---- rows > 1: a decoded tile against every token -----------------------------------------------

/* y[t][b] (row stride ldy) = x row t · wt row b over in values, for t < mr, b < nr (any sizes up
 * to QM_MR × QM_NR): the edges of the register block. x rows ldx apart, wt rows ldw apart. */
QM_INLINE void micro_edge(size_t mr, size_t nr, const float *x, size_t ldx, const float *wt,
                          size_t ldw, size_t in, float *y, size_t ldy) {
    lanes acc[QM_MR][QM_NR];
    for (size_t a = 0; a < mr; a++)
        for (size_t b = 0; b < nr; b++) acc[a][b] = lanes_zero();
    size_t whole = in - in % STRIX_QUANT_LANES;
    for (size_t i = 0; i < whole; i += STRIX_QUANT_LANES)
        for (size_t b = 0; b < nr; b++) {
            lanes wv = lanes_load(wt + b * ldw + i);
            for (size_t a = 0; a < mr; a++)
                acc[a][b] = lanes_muladd(acc[a][b], wv, lanes_load(x + a * ldx + i));
        }
    for (size_t a = 0; a < mr; a++)
        for (size_t b = 0; b < nr; b++)
            y[a * ldy + b] = lanes_finish(acc[a][b], wt + b * ldw + whole, x + a * ldx + whole,
                                          in - whole, whole);
}

/* The full QM_MR × QM_NR register block, unrolled by hand into named accumulators c<a><b> (gcc
 * reloads operands from memory when they sit in arrays): per run of 16 values, the NR W lanes
 * loaded once, then each token's x lanes once and multiplied with all of them. */
/* An empty asm that needs v in a vector register: gcc would otherwise load the operands again
 * for every product (a memory operand of each multiply), twice the loads. */
#if defined(__AVX512F__)
#define QM_PIN(v) __asm__("" : "+v"(v))
#else
#define QM_PIN(v) (void)0
#endif
#define QM_DECL(a, b) lanes c##a##b = lanes_zero();
#define QM_DECL_ROW(a) QM_COLS(QM_DECL, a)
#define QM_LOAD_W(a, b) lanes w##b = lanes_load(wt + b * ldw + i); QM_PIN(w##b);
#define QM_MULADD(a, b) c##a##b = lanes_muladd(c##a##b, w##b, xa);
#define QM_STEP_ROW(a)                                                                         \
    {                                                                                          \
        lanes xa = lanes_load(x + a * ldx + i);                                                \
        QM_PIN(xa);                                                                            \
        QM_COLS(QM_MULADD, a)                                                                  \
    }
#define QM_FINISH(a, b)                                                                        \
    y[a * ldy + b] = lanes_finish(c##a##b, wt + b * ldw + whole, x + a * ldx + whole,          \
                                  in - whole, whole);
#if defined(__AVX512F__) /* QM_NR == 4: the four y of token a folded together */
#define QM_TAIL(a, b)                                                                          \
    c##a##b = lanes_tail(c##a##b, wt + b * ldw + whole, x + a * ldx + whole, in - whole);
#define QM_FINISH_ROW(a)                                                                       \
    if (whole < in) { QM_COLS(QM_TAIL, a) }                                                    \
    _mm_storeu_ps(y + a * ldy, lanes_fold4(c##a##0, c##a##1, c##a##2, c##a##3));
#else
#define QM_FINISH_ROW(a) QM_COLS(QM_FINISH, a)
#endif
static void micro_full(const float *x, size_t ldx, const float *wt, size_t ldw, size_t in,
                       float *y, size_t ldy) {
    QM_ROWS(QM_DECL_ROW)
    size_t whole = in - in % STRIX_QUANT_LANES;
    for (size_t i = 0; i < whole; i += STRIX_QUANT_LANES) {
        QM_COLS(QM_LOAD_W, 0)
        QM_ROWS(QM_STEP_ROW)
    }
    QM_ROWS(QM_FINISH_ROW)
}
#undef QM_DECL
#undef QM_DECL_ROW
#undef QM_LOAD_W
#undef QM_MULADD
#undef QM_STEP_ROW
#undef QM_FINISH
#undef QM_FINISH_ROW
#undef QM_TAIL

/* y columns [j0, j0 + n) of every token from the tile wt (n <= QM_TILE decoded W rows of in):
 * each group of QM_MR tokens (in L1) against every QM_NR W rows of the tile (L1 or L2), then
 * the edges. Tokens outermost: x streams once per tile, and each y line is written at once. */
static void tile_times_tokens(const float *x, size_t rows, size_t in, const float *wt, size_t n,
                              float *y, size_t out, size_t j0) {
    for (size_t t = 0; t < rows; t += QM_MR) {
        size_t mr = rows - t < QM_MR ? rows - t : QM_MR;
        for (size_t b = 0; b < n; b += QM_NR) {
            size_t nr = n - b < QM_NR ? n - b : QM_NR;
            const float *xt = x + t * in, *wb = wt + b * in;
            float *yt = y + t * out + j0 + b;
            if (mr == QM_MR && nr == QM_NR)
                micro_full(xt, in, wb, in, in, yt, out);
            else
                micro_edge(mr, nr, xt, in, wb, in, in, yt, out);
        }
    }
}

/* Tiles [tile0, tile1) of QM_TILE W rows: each decoded into wt (QM_TILE · in floats), then
 * multiplied with every token. */
QM_INLINE void gemm_tiles(int type, const uint8_t *w, size_t row_bytes, const float *x,
                          size_t rows, size_t in, float *y, size_t out, size_t tile0,
                          size_t tile1, float *wt) {
    for (size_t tile = tile0; tile < tile1; tile++) {
        size_t j0 = tile * QM_TILE, n = out - j0 < QM_TILE ? out - j0 : QM_TILE;
        for (size_t b = 0; b < n; b++)
            strix_quant_decode_row(type, w + (j0 + b) * row_bytes, in, wt + b * in);
        tile_times_tokens(x, rows, in, wt, n, y, out, j0);
    }
}

// ---- the slot -----------------------------------------------------------------------------------

/* Calls call(t) with t the constant of wtype, so that each type gets its own copy of the
 * always-inline loops with its decoder inlined. (The switch sits inside the parallel region's
 * callees: OpenMP outlines a region before inlining, where the type would be a variable.) */
#define QM_SWITCH(wtype, call)                                                                 \
    switch (wtype) {                                                                           \
    case STRIX_BLOCK_F32: call(STRIX_BLOCK_F32); break;                                        \
    case STRIX_BLOCK_F16: call(STRIX_BLOCK_F16); break;                                        \
    case STRIX_BLOCK_BF16: call(STRIX_BLOCK_BF16); break;                                      \
    case STRIX_BLOCK_Q4_0: call(STRIX_BLOCK_Q4_0); break;                                      \
    case STRIX_BLOCK_Q4_1: call(STRIX_BLOCK_Q4_1); break;                                      \
    case STRIX_BLOCK_Q5_0: call(STRIX_BLOCK_Q5_0); break;                                      \
    case STRIX_BLOCK_Q5_1: call(STRIX_BLOCK_Q5_1); break;                                      \
    case STRIX_BLOCK_Q8_0: call(STRIX_BLOCK_Q8_0); break;                                      \
    case STRIX_BLOCK_Q4_K: call(STRIX_BLOCK_Q4_K); break;                                      \
    case STRIX_BLOCK_Q6_K: call(STRIX_BLOCK_Q6_K); break;                                      \
    default: break;                                                                            \
    }

/* Few rows: y[t][j] for j in [j0, j1). */
static void gemv_part(int wtype, const uint8_t *w, size_t row_bytes, const float *x, size_t rows,
                      size_t in, float *y, size_t out, size_t j0, size_t j1) {
#define QM_GEMV(t) gemv_range(t, w, row_bytes, x, rows, in, y, out, j0, j1)
    QM_SWITCH(wtype, QM_GEMV)
#undef QM_GEMV
}

/* rows > 1: tiles [tile0, tile1), wt the thread's scratch. */
static void gemm_part(int wtype, const uint8_t *w, size_t row_bytes, const float *x, size_t rows,
                      size_t in, float *y, size_t out, size_t tile0, size_t tile1, float *wt) {
#define QM_GEMM(t) gemm_tiles(t, w, row_bytes, x, rows, in, y, out, tile0, tile1, wt)
    QM_SWITCH(wtype, QM_GEMM)
#undef QM_GEMM
}

strix_status cpu_matmul_blocks(strix_backend *be, const float *x, size_t rows, size_t in,
                               int wtype, const void *w, size_t out, float *y) {
    if (rows == 0 || out == 0) return STRIX_OK;
    if (in == 0) {
        for (size_t i = 0; i < rows * out; i++) y[i] = 0.0f; /* empty sums */
        return STRIX_OK;
    }
    size_t block = 1, bytes = 0;
    strix_quant_block(wtype, &block, &bytes); /* the entry point checked the type and in */
    size_t row_bytes = in / block * bytes;
    const uint8_t *wb = w;
    cpu_context *ctx = be->ctx;
    /* few rows: values read times tokens; else multiply-adds / 8 (as the GEMM) */
    double weights = (double)in * (double)out;
    double work = rows <= QM_FEW_ROWS ? (double)rows * weights : (double)rows * weights / 8.0;
    int threads = cpu_max_threads();
    bool parallel = threads > 1 && CPU_WORTH(work);
    int parts = parallel ? threads : 1;
    if (rows <= QM_FEW_ROWS) {
        /* each thread a contiguous range of whole groups of QM_GEMV_ROWS features */
        size_t groups = (out + QM_GEMV_ROWS - 1) / QM_GEMV_ROWS;
        CPU_PARALLEL_FOR_IF(parallel)
        for (int part = 0; part < parts; part++) {
            size_t g0 = groups * (size_t)part / (size_t)parts;
            size_t g1 = groups * (size_t)(part + 1) / (size_t)parts;
            size_t j0 = g0 * QM_GEMV_ROWS;
            size_t j1 = g1 * QM_GEMV_ROWS < out ? g1 * QM_GEMV_ROWS : out;
            if (j0 < j1) gemv_part(wtype, wb, row_bytes, x, rows, in, y, out, j0, j1);
        }
        return STRIX_OK;
    }
    STRIX_TRY(cpu_scratch_reserve(ctx, parts, QM_TILE * in));
    size_t tiles = (out + QM_TILE - 1) / QM_TILE;
    CPU_PARALLEL_FOR_IF(parallel)
    for (int part = 0; part < parts; part++) { /* a contiguous range of tiles each */
        size_t t0 = tiles * (size_t)part / (size_t)parts;
        size_t t1 = tiles * (size_t)(part + 1) / (size_t)parts;
        if (t0 < t1)
            gemm_part(wtype, wb, row_bytes, x, rows, in, y, out, t0, t1,
                      ctx->workspaces[parallel ? cpu_thread_index() : 0].scratch);
    }
    return STRIX_OK;
}
