/*
 * kernels/rope.h - rotary position embedding of one row: adjacent pairs (2i, 2i+1), and the
 * Hugging Face rotate-half layout, pairs (i, i + head_dim/2).
 *
 * The caller picks the position (pos0 + r mod seq_len) and passes that row of the cos/sin tables;
 * it must lie inside the tables (docs/SEMANTICS.md, edge cases: positions are never wrapped past the table).
 */
#ifndef STRIX_KERNELS_ROPE_H
#define STRIX_KERNELS_ROPE_H

#include "kernels/common.h"

/* Rotates pair `pair` of one row: lo' = lo·c − hi·s, hi' = lo·s + hi·c (s negated if inverse).
 * One GPU lane per pair; out may alias in. */
STRIX_HD static inline void strix_rope_pair(const float *in, float *out, const float *cos_row,
                                            const float *sin_row, size_t pair, bool inverse) {
    float c = cos_row[pair];
    float s = inverse ? -sin_row[pair] : sin_row[pair];
    float lo = in[2 * pair];
    float hi = in[2 * pair + 1];
    out[2 * pair] = lo * c - hi * s;
    out[2 * pair + 1] = lo * s + hi * c;
}

/* Rotates one row of head_dim values (head_dim even). out may alias in. */
STRIX_HD static inline void strix_rope_row(const float *in, float *out, const float *cos_row,
                                           const float *sin_row, size_t head_dim, bool inverse) {
    for (size_t pair = 0; pair < head_dim / 2; pair++)
        strix_rope_pair(in, out, cos_row, sin_row, pair, inverse);
}

/* Rotate-half pair `pair` (< half = head_dim/2) of one row: lo = in[pair], hi = in[pair + half];
 * lo' = lo·c − hi·s, hi' = hi·c + lo·s (s negated if inverse). One GPU lane per pair; out may
 * alias in. */
STRIX_HD static inline void strix_rope_half_pair(const float *in, float *out, const float *cos_row,
                                                 const float *sin_row, size_t pair, size_t half,
                                                 bool inverse) {
    float c = cos_row[pair];
    float s = inverse ? -sin_row[pair] : sin_row[pair];
    float lo = in[pair];
    float hi = in[pair + half];
    out[pair] = lo * c - hi * s;
    out[pair + half] = hi * c + lo * s;
}

/* Rotates one row of head_dim values in the rotate-half layout (head_dim even). out may alias
 * in. */
STRIX_HD static inline void strix_rope_half_row(const float *in, float *out, const float *cos_row,
                                                const float *sin_row, size_t head_dim,
                                                bool inverse) {
    for (size_t pair = 0; pair < head_dim / 2; pair++)
        strix_rope_half_pair(in, out, cos_row, sin_row, pair, head_dim / 2, inverse);
}

#endif
