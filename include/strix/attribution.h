/*
 * strix/attribution.h - gradient explainers of any strix_module classifier, with Captum 0.9's
 * semantics: Saliency, Gradient×Input, Integrated Gradients, SmoothGrad (NoiseTunnel) and
 * Grad-CAM (LayerGradCam). LRP is in strix/lrp.h.
 *
 * Shared contract of every explainer here:
 *   - The model maps x (batch, ...) to logits (batch, classes) (STRIX_ERR_SHAPE otherwise). It
 *     runs in evaluation mode; the training flags of its BatchNorm and Dropout modules are
 *     restored on return.
 *   - The explained quantity of example b is its logit at class target[b]: the gradient is that
 *     of Σ_b f(x)[b, target[b]] (a one-hot seed of 1 per row), as Captum's `target`.
 *   - Parameter gradients are left untouched when cfg->params names the model's parameter block:
 *     every parameter is frozen (requires_grad cleared) for the call and its flag restored after,
 *     so no parameter gradient is even computed. With cfg->params NULL the backward passes ADD
 *     (+=) their parameter gradients into the grads like any backward.
 *   - If the model's first leaf (reached through the `child` slot or Sequential's children) is a
 *     Linear or Conv2d with need_input_grad false, it is set for the call and restored after.
 *     A model that still yields no input gradient is STRIX_ERR_ARG.
 *   - x, the baseline and every model buffer are backend memory; the results are host arrays owned
 *     by the strix_attribution (free with strix_attribution_free). Sums and averages run on the
 *     host in the documented order, so results never depend on the thread count.
 *   - Errors: STRIX_ERR_ARG (bad sizes, a target out of range), STRIX_ERR_SHAPE, STRIX_ERR_ALLOC,
 *     and whatever the model's passes return. On failure *out is zeroed (nothing to free).
 */
#ifndef STRIX_ATTRIBUTION_H
#define STRIX_ATTRIBUTION_H

#include "strix/layers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options shared by every explainer; a NULL config means all defaults (zeros). */
typedef struct strix_attr_config {
    const int32_t *targets;  /* host (batch): the class explained per example; NULL: the predicted
                              * class (argmax of f(x), ties to the lower index) */
    strix_params *params;    /* the model's parameters, frozen for the call (see above); NULL:
                              * parameter grads accumulate */
    int max_rows;            /* Integrated Gradients and SmoothGrad: most rows per forward and
                              * backward pass, rounded down to whole batches (at least one batch);
                              * 0 means 256. Results do not depend on it. */
} strix_attr_config;

/* The result: attributions with the input's shape (Grad-CAM: the layer's shape with one channel),
 * and what was explained. Every pointer is a host array owned by the struct. */
typedef struct strix_attribution {
    int ndim;
    int64_t shape[STRIX_MAX_DIMS];
    float *values;            /* numel(shape) */
    int64_t batch;
    int32_t *target;          /* (batch): the class explained */
    int32_t *predicted;       /* (batch): argmax of f(x), ties to the lower index */
    float *output;            /* (batch): f(x)[b, target[b]] */
    double *example_sum;      /* (batch): Σ of each example's attributions, in index order */
    double attribution_sum;   /* Σ example_sum */
    /* Integrated Gradients only (NULL and 0 otherwise): */
    float *baseline_output;   /* (batch): f(baseline)[b, target[b]] */
    double *output_delta;     /* (batch): f(x) − f(baseline), which example_sum approximates
                               * (completeness, Sundararajan et al. 2017) */
    double output_delta_sum;  /* Σ output_delta */
} strix_attribution;

/* Saliency (Simonyan et al. 2014; Captum Saliency): values = |∂f_target/∂x| with `abs` (Captum's
 * default abs=True), else the signed gradient. */
STRIX_API strix_status strix_attr_saliency(strix_module *model, const strix_tensor *x,
                                           const strix_attr_config *cfg, bool abs,
                                           strix_attribution *out);

/* Gradient × Input (Shrikumar et al. 2016; Captum InputXGradient): values = x ⊙ ∂f_target/∂x. */
STRIX_API strix_status strix_attr_input_x_gradient(strix_module *model, const strix_tensor *x,
                                                   const strix_attr_config *cfg,
                                                   strix_attribution *out);

/* Integral rules of Captum's IntegratedGradients `method` (captum/attr/_utils/
 * approximation_methods.py), n points alpha_k with weights w_k:
 *   GAUSS_LEGENDRE     "gausslegendre" (Captum's default): alpha_k = (1 + t_k)/2, w_k = v_k/2
 *                      for the n-point Gauss-Legendre nodes t_k (ascending) and weights v_k on
 *                      [-1, 1]; Σ w_k = 1. Needs n >= 1.
 *   RIEMANN_TRAPEZOID  "riemann_trapezoid": alpha_k = k/(n−1), w_k = 1/n with w_0 and w_(n−1)
 *                      halved - as Captum has it, the weights sum to 1 − 1/n, not 1.
 *   RIEMANN_LEFT / RIGHT / MIDDLE: alpha_k = k/n, (k+1)/n, (k+½)/n (as float32 linspace),
 *                      w_k = 1/n. The Riemann rules need n >= 2. */
typedef enum strix_ig_method {
    STRIX_IG_GAUSS_LEGENDRE,
    STRIX_IG_RIEMANN_TRAPEZOID,
    STRIX_IG_RIEMANN_LEFT,
    STRIX_IG_RIEMANN_RIGHT,
    STRIX_IG_RIEMANN_MIDDLE
} strix_ig_method;

/* Integrated Gradients (Sundararajan et al. 2017; Captum IntegratedGradients, multiply_by_inputs
 * true): with d = x − x' and the n points of `method`,
 *   values = (Σ_k w_k·g_k) ⊙ d,  g_k = ∂f_target/∂x at x' + alpha_k·d,
 * in float32 as Captum computes it: x' + (float)alpha_k·d per point, w_k·g_k rounded, summed over k
 * ascending from 0. baseline: backend tensor of x's shape, NULL for zeros. The n·batch points go
 * through the model in chunks of whole steps (cfg->max_rows). Also reports f(baseline) and
 * f(x) − f(baseline). STRIX_ERR_ARG for n_steps below the method's minimum or a baseline of
 * another shape. */
STRIX_API strix_status strix_attr_integrated_gradients(strix_module *model, const strix_tensor *x,
                                                       const strix_tensor *baseline, int n_steps,
                                                       strix_ig_method method,
                                                       const strix_attr_config *cfg,
                                                       strix_attribution *out);

/* What SmoothGrad averages per noisy input x̃ (g = ∂f_target/∂x at x̃). */
typedef enum strix_smoothgrad_base {
    STRIX_SMOOTHGRAD_SALIENCY,      /* |g| (Captum NoiseTunnel(Saliency), abs=True) */
    STRIX_SMOOTHGRAD_GRADIENT,      /* g (Saliency with abs=False; the SmoothGrad paper) */
    STRIX_SMOOTHGRAD_INPUT_X_GRADIENT /* x̃ ⊙ g (NoiseTunnel(InputXGradient)) */
} strix_smoothgrad_base;

typedef struct strix_smoothgrad_config {
    int n_samples;               /* noisy copies per example (Captum nt_samples), >= 1 */
    float stdev;                 /* noise standard deviation (Captum stdevs), >= 0 */
    uint64_t seed;               /* the noise stream when `noise` is NULL */
    strix_smoothgrad_base base;
    const float *noise;          /* host (batch, n_samples, features...) added as is (stdev and
                                  * seed unused); NULL: drawn, see strix_attr_smoothgrad */
} strix_smoothgrad_config;

/* SmoothGrad (Smilkov et al. 2017; Captum NoiseTunnel, nt_type "smoothgrad"): values =
 * (Σ_s a(x + n_s)) / n_samples, the per-sample attributions a (see `base`) summed in float over s
 * ascending from 0 and divided by the float n_samples. Captum's layout: the noise of example b,
 * sample s is noise[b][s][...]. Without sg->noise it is drawn from a strix_rng seeded with
 * sg->seed, in that layout's order, one strix_rng_normal per value: n = stdev·(float)normal. The
 * noisy copies go through the model in chunks of whole samples (cfg->max_rows). STRIX_ERR_ARG for
 * n_samples < 1 or a negative or non-finite stdev. */
STRIX_API strix_status strix_attr_smoothgrad(strix_module *model, const strix_tensor *x,
                                             const strix_smoothgrad_config *sg,
                                             const strix_attr_config *cfg,
                                             strix_attribution *out);

/* Grad-CAM (Selvaraju et al. 2017; Captum LayerGradCam with attribute_to_layer_input False and
 * attr_dim_summation True) at the output A (batch, C, spatial...) of child `layer` of `model`,
 * G = ∂f_target/∂A:
 *   weight[b][c] = (Σ_s G[b][c][s]) / S   (spatial mean, s ascending from 0; S = 1 for 2-D A),
 *   values[b][0][s] = Σ_c weight[b][c]·A[b][c][s]   (c ascending from 0), then max(·, 0) with
 *   `relu` (Captum relu_attributions; the Grad-CAM paper applies it).
 * The Sequential's children run one by one (forward 0..count−1, backward count−1..layer+1); the
 * map keeps the layer's resolution (shape (batch, 1, spatial...), or (batch, 1) for 2-D A), so
 * upsampling is the caller's. STRIX_ERR_ARG for a layer index out of range. */
STRIX_API strix_status strix_attr_grad_cam(strix_sequential *model, int layer,
                                           const strix_tensor *x, const strix_attr_config *cfg,
                                           bool relu, strix_attribution *out);

/* Frees the host arrays and zeroes the struct. NULL is a no-op. */
STRIX_API void strix_attribution_free(strix_attribution *a);

#ifdef __cplusplus
}
#endif
#endif
