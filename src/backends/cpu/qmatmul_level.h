/*
 * qmatmul_level.h - the loops of strix_matmul_blocks at one vector level, included by qmatmul.c
 * once per QM_LEVEL (QM_SCALAR, QM_AVX2, QM_AVX512) after the definitions they share. Not a
 * header of its own: no include guard, on purpose.
 */
/* Every function here gets the level's target attribute and a name with its suffix (lanes_zero
 * is lanes_zero_avx512 in the AVX-512 copy): the defines below, undone at the end. */
#if QM_LEVEL == QM_AVX512
#define QM_TARGET CPU_TARGET_AVX512
#define QM_NAME(f) f##_avx512
#elif QM_LEVEL == QM_AVX2
#define QM_TARGET CPU_TARGET_AVX2
#define QM_NAME(f) f##_avx2
#else
#define QM_TARGET
#define QM_NAME(f) f##_scalar
#endif
#define QM_INLINE static inline __attribute__((always_inline)) QM_TARGET
#define QM_KERNEL static QM_TARGET
#define lanes QM_NAME(lanes)
#define lanes_zero QM_NAME(lanes_zero)
#define lanes_load QM_NAME(lanes_load)
#define lanes_store QM_NAME(lanes_store)
#define lanes_muladd QM_NAME(lanes_muladd)
#define qm_ints QM_NAME(qm_ints)
#define ints_u8 QM_NAME(ints_u8)
#define ints_s8 QM_NAME(ints_s8)
#define ints_low4 QM_NAME(ints_low4)
#define ints_high4 QM_NAME(ints_high4)
#define ints_minus QM_NAME(ints_minus)
#define lanes_scaled QM_NAME(lanes_scaled)
#define block_scales QM_NAME(block_scales)
#define block_lanes QM_NAME(block_lanes)
#define values_copy QM_NAME(values_copy)
#define lanes_at QM_NAME(lanes_at)
#define decode_row QM_NAME(decode_row)
#define lanes_tail QM_NAME(lanes_tail)
#define lanes_fold QM_NAME(lanes_fold)
#define lanes_fold4 QM_NAME(lanes_fold4)
#define lanes_finish QM_NAME(lanes_finish)
#define gemv_rows QM_NAME(gemv_rows)
#define gemv_range QM_NAME(gemv_range)
#define micro_edge QM_NAME(micro_edge)
#define micro_full QM_NAME(micro_full)
#define tile_times_tokens QM_NAME(tile_times_tokens)
#define gemm_tiles QM_NAME(gemm_tiles)
#define gemv_groups_range QM_NAME(gemv_groups_range)
#define gemm_tiles_range QM_NAME(gemm_tiles_range)

/* The register block of rows > 1: QM_MR tokens × QM_NR W rows of 16 lanes (24 of the 32
 * AVX-512 registers, the 4 W and an x vector beside them; AVX2's 16 hold 2 × 2 blocks of two
 * halves), and its lists for the unrolled code. */
#if QM_LEVEL == QM_AVX512
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

// ---- 16 lanes -----------------------------------------------------------------------------------

#if QM_LEVEL == QM_AVX512
typedef __m512 lanes; /* a plain vector: gcc keeps these in registers, a struct it spilled */
QM_INLINE lanes lanes_zero(void) { return _mm512_setzero_ps(); }
QM_INLINE lanes lanes_load(const float *p) { return _mm512_loadu_ps(p); }
QM_INLINE void lanes_store(float *p, lanes a) { _mm512_storeu_ps(p, a); }
/* 16 floats at p, any alignment */
QM_INLINE lanes lanes_at(const uint8_t *p) { return _mm512_loadu_ps(p); }
/* acc + a·b per lane: the product rounded, then the sum */
QM_INLINE lanes lanes_muladd(lanes acc, lanes a, lanes b) {
    return _mm512_add_ps(acc, _mm512_mul_ps(a, b));
}
#elif QM_LEVEL == QM_AVX2
typedef struct lanes { __m256 lo, hi; } lanes;
QM_INLINE lanes lanes_zero(void) { return (lanes){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
QM_INLINE lanes lanes_load(const float *p) {
    return (lanes){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
}
QM_INLINE void lanes_store(float *p, lanes a) {
    _mm256_storeu_ps(p, a.lo);
    _mm256_storeu_ps(p + 8, a.hi);
}
QM_INLINE lanes lanes_at(const uint8_t *p) {
    const __m256i *v = (const __m256i *)(const void *)p;
    return (lanes){_mm256_castsi256_ps(_mm256_loadu_si256(v)),
                   _mm256_castsi256_ps(_mm256_loadu_si256(v + 1))};
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
QM_INLINE lanes lanes_at(const uint8_t *p) {
    lanes a;
    memcpy(a.v, p, sizeof a.v);
    return a;
}
QM_INLINE lanes lanes_muladd(lanes acc, lanes a, lanes b) {
    for (int k = 0; k < STRIX_QUANT_LANES; k++) acc.v[k] = acc.v[k] + a.v[k] * b.v[k];
    return acc;
}
#endif

/* An empty asm that needs v in a vector register: gcc would otherwise load the operands again
 * for every product (a memory operand of each multiply), twice the loads. */
#if QM_LEVEL == QM_AVX512
#define QM_PIN(v) __asm__("" : "+v"(v))
#elif QM_LEVEL == QM_AVX2
#define QM_PIN(v) __asm__("" : "+x"((v).lo), "+x"((v).hi))
#else
#define QM_PIN(v) (void)0
#endif

// ---- Q4_0, Q4_1, Q8_0 blocks straight into lanes (AVX-512, AVX2) --------------------------------

/* kernels/quant.h's strix_quant_q4_0, _q4_1 and _q8_0 as vector code: the same operations per
 * value (the quant to float, times d, plus m), values 0-15 of the block into *lo and 16-31 into
 * *hi, the scales converted exactly (block_scales). So the values are the kernel's, bit for bit
 * (tests/ops/cases_quant.c checks the products against strix_gguf_dot). Other types and the
 * scalar level decode through a buffer (decode_step). Products are w·x, w first, as the
 * kernel's. */
#if QM_LEVEL != QM_SCALAR
#define QM_VECTOR_BLOCKS 1
#if QM_LEVEL == QM_AVX512
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

/* The binary16 scales at p (two with `two`: d and m) as float32, exactly, by F16C's conversion
 * (both vector levels have it). F16C quiets a signaling NaN, which strix_half_at keeps; every
 * product of it is that quiet NaN with either conversion, so the results keep their bits. */
QM_INLINE void block_scales(const uint8_t *p, bool two, float *d, float *m) {
    int bits = two ? (int)strix_quant_u32_at(p) : (int)(p[0] | p[1] << 8);
    __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(bits));
    *d = _mm_cvtss_f32(f);
    *m = _mm_cvtss_f32(_mm_movehdup_ps(f));
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

/* n F32 values at src (any alignment) into dst, by the level's vector moves: gcc spells the
 * kernel's memcpy as a slow rep movsq under -mtune=generic (a portable build). */
#if QM_LEVEL == QM_AVX512
QM_INLINE void values_copy(float *dst, const uint8_t *src, size_t n) {
    size_t k = 0;
    for (; k + 16 <= n; k += 16) _mm512_storeu_ps(dst + k, _mm512_loadu_ps(src + 4 * k));
    __mmask16 m = (__mmask16)((1u << (n - k)) - 1);
    if (m) _mm512_mask_storeu_ps(dst + k, m, _mm512_maskz_loadu_ps(m, src + 4 * k));
}
#elif QM_LEVEL == QM_AVX2
QM_INLINE void values_copy(float *dst, const uint8_t *src, size_t n) {
    size_t k = 0;
    for (; k + 8 <= n; k += 8)
        _mm256_storeu_si256((__m256i *)(void *)(dst + k),
                            _mm256_loadu_si256((const __m256i *)(const void *)(src + 4 * k)));
    if (k < n) memcpy(dst + k, src + 4 * k, (n - k) * sizeof(float));
}
#else
QM_INLINE void values_copy(float *dst, const uint8_t *src, size_t n) {
    if (n) memcpy(dst, src, n * sizeof(float));
}
#endif

/* A row of n values of W (its bytes at row) into dst: strix_quant_decode_row's values, the
 * vector_types by block_lanes (gcc left the kernel's loops scalar when it inlined them here),
 * F32 by values_copy. */
QM_INLINE void decode_row(int type, const uint8_t *row, size_t n, float *dst) {
#if QM_VECTOR_BLOCKS
    if (vector_type(type)) {
        size_t block = 1, bytes = 0;
        strix_quant_block(type, &block, &bytes);
        for (size_t i = 0; i < n; i += 32) {
            lanes lo, hi;
            block_lanes(type, row + i / 32 * bytes, &lo, &hi);
            lanes_store(dst + i, lo);
            lanes_store(dst + i + 16, hi);
        }
        return;
    }
#endif
    if (type == STRIX_BLOCK_F32)
        values_copy(dst, row, n);
    else
        strix_quant_decode_row(type, row, n, dst);
}

/* The lanes of acc plus w[k]·x[k] for k < count (the values past the last whole run of 16; w[0]
 * is value lane0 of the row), folded: the y element. */
#if QM_LEVEL == QM_AVX512
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
#if QM_LEVEL == QM_AVX512
    if (lane0 % STRIX_QUANT_LANES == 0) /* always so here: runs start at multiples of 16 */
        return lanes_fold(count ? lanes_tail(acc, w, x, count) : acc);
#endif
    float l[STRIX_QUANT_LANES];
    lanes_store(l, acc);
    for (size_t k = 0; k < count && k < STRIX_QUANT_LANES; k++) /* count < 16 */
        l[(lane0 + k) % STRIX_QUANT_LANES] += w[k] * x[k];
    return strix_quant_lanes_fold(l);
}

// ---- few rows: decode and multiply block by block -----------------------------------------------

/* y[t][j + r] (row stride ldy) = x row t · W row j + r for t < nt (QM_GEMV_TOKENS or 1), r < nr
 * (QM_GEMV_ROWS or 1); x rows ldx apart, W rows row_bytes apart. Each block of the nr W rows is
 * decoded once (into registers, or into buf in L1; F32 is read in place) and multiplied with the
 * nt tokens' x lanes: nt·nr independent lane chains. */
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
            for (size_t t = 0; t < nt; t++) {
                QM_PIN(x0[t]);
                QM_PIN(x1[t]);
            }
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
    if (type == STRIX_BLOCK_F32) { /* W's floats read in place, the last in % 16 copied */
        size_t whole = in - in % STRIX_QUANT_LANES;
        for (size_t i = 0; i < whole; i += STRIX_QUANT_LANES) {
            lanes wv[QM_GEMV_ROWS];
            for (size_t r = 0; r < nr; r++) wv[r] = lanes_at(w + (j + r) * row_bytes + 4 * i);
            for (size_t t = 0; t < nt; t++) {
                lanes xv = lanes_load(x + t * ldx + i);
                for (size_t r = 0; r < nr; r++) acc[t][r] = lanes_muladd(acc[t][r], wv[r], xv);
            }
        }
        float tail[QM_GEMV_ROWS][STRIX_QUANT_LANES];
        for (size_t r = 0; r < nr; r++)
            values_copy(tail[r], w + (j + r) * row_bytes + 4 * whole, in - whole);
        for (size_t t = 0; t < nt; t++)
            for (size_t r = 0; r < nr; r++)
                y[t * ldy + j + r] =
                    lanes_finish(acc[t][r], tail[r], x + t * ldx + whole, in - whole, whole);
        return;
    }
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
#if QM_LEVEL == QM_AVX512 /* QM_NR == 4: the four y of token a folded together */
#define QM_TAIL(a, b)                                                                          \
    c##a##b = lanes_tail(c##a##b, wt + b * ldw + whole, x + a * ldx + whole, in - whole);
#define QM_FINISH_ROW(a)                                                                       \
    if (whole < in) { QM_COLS(QM_TAIL, a) }                                                    \
    _mm_storeu_ps(y + a * ldy, lanes_fold4(c##a##0, c##a##1, c##a##2, c##a##3));
#else
#define QM_FINISH_ROW(a) QM_COLS(QM_FINISH, a)
#endif
QM_KERNEL void micro_full(const float *x, size_t ldx, const float *wt, size_t ldw,
                          size_t in, float *y, size_t ldy) {
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
QM_KERNEL void tile_times_tokens(const float *x, size_t rows, size_t in, const float *wt,
                                 size_t n, float *y, size_t out, size_t j0) {
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
        for (size_t b = 0; b < n; b++) decode_row(type, w + (j0 + b) * row_bytes, in, wt + b * in);
        tile_times_tokens(x, rows, in, wt, n, y, out, j0);
    }
}

// ---- the bodies of the parallel loops (cpu_matmul_blocks) ---------------------------------------

/* Few rows: y[t][j] for the features of groups [g0, g1) of QM_GEMV_ROWS (a qm_args). */
QM_KERNEL void gemv_groups_range(void *args, size_t g0, size_t g1) {
    const qm_args *a = args;
    size_t j0 = g0 * QM_GEMV_ROWS, j1 = g1 * QM_GEMV_ROWS < a->out ? g1 * QM_GEMV_ROWS : a->out;
#define QM_GEMV(t) gemv_range(t, a->w, a->row_bytes, a->x, a->rows, a->in, a->y, a->out, j0, j1)
    QM_SWITCH(a->wtype, QM_GEMV)
#undef QM_GEMV
}

/* rows > QM_FEW_ROWS: tiles [tile0, tile1), decoded into the thread's scratch (a qm_args). */
QM_KERNEL void gemm_tiles_range(void *args, size_t tile0, size_t tile1) {
    const qm_args *a = args;
    float *wt = a->ctx->workspaces[a->parallel ? cpu_thread_index() : 0].scratch;
#define QM_GEMM(t)                                                                             \
    gemm_tiles(t, a->w, a->row_bytes, a->x, a->rows, a->in, a->y, a->out, tile0, tile1, wt)
    QM_SWITCH(a->wtype, QM_GEMM)
#undef QM_GEMM
}

#undef QM_TARGET
#undef QM_NAME
#undef QM_INLINE
#undef QM_KERNEL
#undef QM_MR
#undef QM_NR
#undef QM_ROWS
#undef QM_COLS
#undef QM_PIN
#undef QM_VECTOR_BLOCKS
#undef lanes
#undef lanes_zero
#undef lanes_load
#undef lanes_store
#undef lanes_muladd
#undef qm_ints
#undef ints_u8
#undef ints_s8
#undef ints_low4
#undef ints_high4
#undef ints_minus
#undef lanes_scaled
#undef block_scales
#undef block_lanes
#undef values_copy
#undef lanes_at
#undef decode_row
#undef lanes_tail
#undef lanes_fold
#undef lanes_fold4
#undef lanes_finish
#undef gemv_rows
#undef gemv_range
#undef micro_edge
#undef micro_full
#undef tile_times_tokens
#undef gemm_tiles
#undef gemv_groups_range
#undef gemm_tiles_range
