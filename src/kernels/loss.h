/*
 * kernels/loss.h - per-element math of binary cross-entropy with logits and its gradient
 * (PyTorch BCEWithLogitsLoss, reduction='none').
 *
 * Pure scalar functions; the loops live in the backends. Infinite logits give the limit of the
 * formula, never inf − inf = NaN (docs/SEMANTICS.md, edge cases). Exponentials are
 * strix_kernel_expf (kernels/mathf.h), so every backend evaluates the same expression.
 */
#ifndef STRIX_KERNELS_LOSS_H
#define STRIX_KERNELS_LOSS_H

#include "kernels/common.h"
#include "kernels/mathf.h"

/* BCE with logits of one element: (max(x, 0) − x·y) + log1p(e^−|x|), the overflow-free form.
 * At x = ±inf the first part is its limit x·(h − y) with h = 1 for +inf, 0 for −inf: exactly 0
 * when the target agrees with the sign (y == h), ±inf otherwise; the log1p term is 0 there.
 * NaN x gives NaN. */
STRIX_HD static inline float strix_bce_with_logits_elem(float x, float y) {
    if (isinf(x)) {
        float agree = (x > 0.0f ? 1.0f : 0.0f) - y;
        return agree == 0.0f ? 0.0f : x * agree;
    }
    float pos = x < 0.0f ? 0.0f : x;
    return (pos - x * y) + log1pf(strix_kernel_expf(-fabsf(x)));
}

/* Its gradient: (σ(x) − y)·scale with σ(x) = 1/(1 + e^−x) for x >= 0 and e^x/(1 + e^x)
 * otherwise (neither form overflows; σ(+inf) = 1, σ(−inf) = 0). */
STRIX_HD static inline float strix_bce_with_logits_grad_elem(float x, float y, float scale) {
    float sig;
    if (x >= 0.0f) {
        sig = 1.0f / (1.0f + strix_kernel_expf(-x));
    } else {
        float e = strix_kernel_expf(x);
        sig = e / (1.0f + e);
    }
    return (sig - y) * scale;
}

#endif
