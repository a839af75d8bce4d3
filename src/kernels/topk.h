/*
 * kernels/topk.h - top-k of one row by insertion selection, O(cols·k) (spec §1.1).
 *
 * Rank order: NaN counts as greater than every number (torch.topk): with largest it ranks first,
 * with largest = false it ranks last. Ties (equal numbers, or two NaNs) keep the lower column
 * first (torch leaves tie order unspecified). The result is bit-identical on every backend because it is a
 * selection, not arithmetic. No sorting network, no partial sort of the input.
 */
#ifndef STRIX_KERNELS_TOPK_H
#define STRIX_KERNELS_TOPK_H

#include "kernels/common.h"

/* True if value a (met later in the row) ranks strictly before b (met earlier). NaN is above
 * every number; two NaNs or equal numbers are ties, so the earlier column stays first. */
STRIX_HD static inline bool strix_topk_before(float a, float b, bool largest) {
    bool a_nan = a != a;
    bool b_nan = b != b;
    if (a_nan || b_nan) return largest ? (a_nan && !b_nan) : (b_nan && !a_nan);
    return largest ? a > b : a < b;
}

/* vals/idx[0..k) = the k first-ranked entries of in[0..cols) in rank order. 1 <= k <= cols. */
STRIX_HD static inline void strix_topk_row(const float *in, float *vals, int32_t *idx,
                                           size_t cols, size_t k, bool largest) {
    size_t filled = 0;
    for (size_t j = 0; j < cols; j++) {
        float x = in[j];
        if (filled == k && !strix_topk_before(x, vals[k - 1], largest)) continue;
        size_t pos = filled < k ? filled : k - 1;
        while (pos > 0 && strix_topk_before(x, vals[pos - 1], largest)) {
            vals[pos] = vals[pos - 1];
            idx[pos] = idx[pos - 1];
            pos--;
        }
        vals[pos] = x;
        idx[pos] = (int32_t)j;
        if (filled < k) filled++;
    }
}

#endif
