/*
 * strix/loss.h - training losses (functions, not modules), with PyTorch's semantics and names:
 * MSE (nn.MSELoss), cross-entropy with class indices and label smoothing (nn.CrossEntropyLoss),
 * binary cross-entropy with logits (nn.BCEWithLogitsLoss), KL divergence (nn.KLDivLoss).
 *
 * Every loss returns its reduced value to the host in *loss and, if `grad` is non-NULL, writes
 * (`=`) grad = grad_scale·∂loss/∂input, with the input's shape. grad_scale is the caller's
 * multiplier: 1 for one batch, strix_grad_accum_scale() (strix/optim.h) for the micro-batches of
 * an accumulated one. All math runs on the backend primitives (strix/backend.h); inputs, targets
 * and grad are backend memory. Sums follow the primitives' documented orders (strix_sum and
 * strix_dot ascending in float, strix_sum_squares in double), so results are deterministic and
 * independent of the thread count. Scratch comes from a strix_loss_workspace that grows on first
 * use: a training loop allocates only in its first step.
 *
 * Not here: per-class weights, pos_weight, reduction 'none' (use the primitives), the GPT's fused
 * token cross-entropy (strix/gpt.h), RL losses.
 */
#ifndef STRIX_LOSS_H
#define STRIX_LOSS_H

#include "strix/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reduction of the per-element (per-row for cross-entropy) losses. */
typedef enum strix_reduction {
    STRIX_REDUCTION_MEAN,     /* 'mean': PyTorch's default for every loss here */
    STRIX_REDUCTION_SUM,      /* 'sum' */
    STRIX_REDUCTION_BATCHMEAN /* 'batchmean': sum / rows, KL only - the true KL divergence per
                               * example, and the reduction we recommend for KL */
} strix_reduction;

/* Scratch memory of the losses on one backend (device and host), reused between calls. */
typedef struct strix_loss_workspace {
    strix_backend *be;
    void *dev;   /* backend memory */
    size_t dev_bytes;
    void *host;  /* host memory (copies of targets) */
    size_t host_bytes;
} strix_loss_workspace;

/* An empty workspace on backend `be` (nothing allocated yet). */
STRIX_API void strix_loss_workspace_init(strix_loss_workspace *ws, strix_backend *be);
/* Frees its memory and empties it. NULL is a no-op. */
STRIX_API void strix_loss_workspace_free(strix_loss_workspace *ws);

/* Common contract of the losses below: STRIX_ERR_ARG for a reduction the loss does not take or a
 * bad option; STRIX_ERR_ALLOC when the workspace cannot grow; the primitives' statuses (e.g.
 * STRIX_ERR_UNSUPPORTED). 'mean' over zero elements gives NaN (PyTorch) and a zero gradient. */

/* Mean squared error (torch.nn.MSELoss): per element d = input − target, loss = Σ d² (in double,
 * strix_sum_squares) / n for MEAN, the sum for SUM; grad = (2·grad_scale/n)·d (MEAN) or
 * (2·grad_scale)·d (SUM). Shapes (n). grad may alias input or target. */
STRIX_API strix_status strix_mse_loss(strix_loss_workspace *ws, const float *input,
                                      const float *target, size_t n, strix_reduction reduction,
                                      float *grad, float grad_scale, float *loss);

/* Cross-entropy over class indices (torch.nn.CrossEntropyLoss): logits (rows, classes), targets
 * (rows) int32 in backend memory. A negative target ignores its row (PyTorch's ignore_index, here
 * any negative value): no loss, zero gradient, not counted. MEAN divides by the number M of
 * counted rows. With label smoothing ε in [0, 1] (PyTorch's formula) the row loss is
 *   (1 − ε)·(lse − x_t) + (ε/C)·Σ_c (lse − x_c),   lse = log Σ_c e^{x_c},
 * and the gradient (p − (1 − ε)·onehot(t) − ε/C)·grad_scale/M (MEAN) per counted row. With ε = 0
 * this is strix_softmax_cross_entropy (a -inf logit outside the target gives a finite loss and a
 * zero gradient, docs/SEMANTICS.md); with ε > 0 a -inf logit makes the loss +inf, as in PyTorch.
 * Targets are copied to the host and checked: one >= classes is STRIX_ERR_ARG naming its row
 * (before anything is written). grad may alias logits. */
STRIX_API strix_status strix_cross_entropy_loss(strix_loss_workspace *ws, const float *logits,
                                                const int32_t *targets, size_t rows,
                                                size_t classes, strix_reduction reduction,
                                                float label_smoothing, float *grad,
                                                float grad_scale, float *loss);

/* Binary cross-entropy with logits (torch.nn.BCEWithLogitsLoss): per element
 * max(x,0) − x·y + log1p(e^−|x|) (strix_bce_with_logits: finite at ±large logits, the limit at
 * ±inf), summed ascending (strix_sum) and divided by n for MEAN; grad = (σ(x) − y)·grad_scale/n
 * (MEAN) or ·grad_scale (SUM). Shapes (n); targets are probabilities in [0, 1]. grad may alias
 * logits. */
STRIX_API strix_status strix_bce_with_logits_loss(strix_loss_workspace *ws, const float *logits,
                                                  const float *target, size_t n,
                                                  strix_reduction reduction, float *grad,
                                                  float grad_scale, float *loss);

/* KL divergence (torch.nn.KLDivLoss): input = log-probabilities (rows, cols), target =
 * probabilities (log_target false) or log-probabilities (log_target true). Pointwise
 *   log_target false: t·(log t − x) where t > 0, else 0 (so x = -inf under t = 0 is fine);
 *   log_target true:  e^t·(t − x);
 * summed ascending (strix_dot) and divided by rows for BATCHMEAN (recommended: the KL per
 * example), by rows·cols for MEAN (PyTorch's default, which it warns about), or not for SUM.
 * grad = −t·scale where t > 0 (0 elsewhere), or −e^t·scale, scale = grad_scale over the same
 * divisor. The backend has no log primitive yet, so with log_target false log t is computed on the
 * host from a copy of the target (float, correctly rounded from double) and uploaded; everything
 * that involves the input runs on the backend. grad may alias input. */
STRIX_API strix_status strix_kl_div_loss(strix_loss_workspace *ws, const float *input,
                                         const float *target, size_t rows, size_t cols,
                                         strix_reduction reduction, bool log_target, float *grad,
                                         float grad_scale, float *loss);

#ifdef __cplusplus
}
#endif
#endif
