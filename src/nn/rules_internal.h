/*
 * rules_internal.h - the relevance-rule machinery that lives beside the modules (floor nn) and
 * that their relevance functions (src/nn/<module>.c) share: the affine rules of Zennit 1.0.0
 * built from a module's forward/backward maps (lrp_affine.c), rule checks and the supports_rule
 * slots (lrp_rules.c), backend scratch, and the relevance entry points that take explicit
 * tensors (BatchNorm merged into the preceding Conv2d/Linear, lrp_fold.c; attention's c_attn and
 * c_proj). The explainers above (src/explain: composites, the driver, gradient explainers) may
 * use it; nothing here knows them. Internal: not installed, no public names.
 */
#ifndef STRIX_NN_RULES_INTERNAL_H
#define STRIX_NN_RULES_INTERNAL_H

#include "strix/backend.h"
#include "strix/layers.h"

// ---- the affine rules --------------------------------------------------------------------------

/* An affine map z = map(x; W) [+ b per output channel] over `items` independent examples, seen
 * by the rules: a Linear (items = rows) or a Conv2d (items = images; the map is the fused
 * convolution forward, its transpose the fused backward's dx, so the rules' elementwise work
 * stays in image space, as Zennit's autograd on the image). The callbacks run on the backend
 * over `count` consecutive examples whose inputs (count·in_item) and outputs (count·out_item)
 * are contiguous. */
typedef struct lrp_affine {
    strix_backend *be;
    void *ctx;                 /* passed to every callback */
    size_t items;              /* examples */
    size_t chunk;              /* examples per pass (0: all at once); see lrp_chunk_items */
    size_t in_item, out_item;  /* elements of x and of z per example */
    size_t w_n, b_n;           /* elements of W and of b (b_n 0: no bias) */
    const float *x, *w, *b;    /* the input (items·in_item), weight, bias (NULL without bias) */
    /* Optional: the map's outputs for x with w (items·out_item), pre-bias and with the bias,
     * when the module kept them from its forward (NULL: recomputed). */
    const float *z_pre, *z_full;
    /* z = map(in; w), plus b when b != NULL; accumulate: z += map(in; w) (+ b) instead. */
    strix_status (*forward)(void *ctx, size_t count, const float *in, const float *w,
                            const float *b, float *z, bool accumulate);
    /* g (count·in_item) = the transposed map of s: the input gradient of map(·; w) (`=`). */
    strix_status (*backward)(void *ctx, size_t count, const float *s, const float *w, float *g);
} lrp_affine;

/* r_in (items·in_item) = the relevance of x for the relevance r (items·out_item) of z under
 * `rule` (`=`), as Zennit 1.0.0 computes it (rules.py): forward passes with modified inputs and
 * weights, the stabilised divide, then the transposed maps (spec §4):
 *   EPSILON     z = xW (+ b), R = x·Wᵀ(r/stab z)
 *   GAMMA       W± = W + γW^±, b± = b + γb^±; units with xW + b > 0 use z = x⁺W⁺ + b⁺ + x⁻W⁻,
 *               units below 0 use z = x⁺W⁻ + b⁻ + x⁻W⁺, units at 0 get nothing;
 *               R = x⁺·W⁺ᵀs⁺ + x⁻·W⁻ᵀs⁺ + x⁺·W⁻ᵀs⁻ + x⁻·W⁺ᵀs⁻
 *   ALPHA_BETA  R = α(x⁺·W⁺ᵀs⁺ + x⁻·W⁻ᵀs⁺) − β(x⁺·W⁻ᵀs⁻ + x⁻·W⁺ᵀs⁻) with s⁺ = r/stab(x⁺W⁺ +
 *               b⁺ + x⁻W⁻), s⁻ = r/stab(x⁺W⁻ + b⁻ + x⁻W⁺); the β half is skipped when β = 0
 *   ZBOX        z = xW − L·W⁺ − H·W⁻ (the bias cancels), R = x·Wᵀs − L·W⁺ᵀs − H·W⁻ᵀs, with L
 *               and H constant inputs (a Conv2d's padding stays 0)
 * The bias terms appear only with rule->bias_in_denominator (Zennit's default; strix's default
 * leaves them out). Runs in chunks of a->chunk examples; scratch is allocated for the call and
 * freed before it returns. */
strix_status lrp_affine_relevance(const lrp_affine *a, const strix_lrp_rule *rule,
                                  const float *r, float *r_in);
/* Examples per chunk so that one example's largest scratch of `bytes_per_item` bytes times the
 * chunk is about 8 MiB (at least 1). */
size_t lrp_chunk_items(size_t bytes_per_item);

// ---- scratch -----------------------------------------------------------------------------------

/* *out = n floats of uninitialised backend memory (n 0: one float); STRIX_ERR_ALLOC. */
strix_status lrp_scratch(strix_backend *be, size_t n, float **out);

// ---- rules -------------------------------------------------------------------------------------

/* STRIX_OK if `rule` is well formed for its kind, else STRIX_ERR_ARG naming `who`: negative or
 * non-finite eps, negative gamma, alpha/beta negative or alpha − beta != 1, low > high. */
strix_status lrp_rule_check(const strix_lrp_rule *rule, const char *who);
/* supports_rule slots: every kind (affine modules implement all four; weightless modules use
 * only the epsilon and the flags). */
bool lrp_supports_all(const strix_module *m, strix_lrp_kind k);
/* The rule's name ("epsilon", "gamma", ...). */
const char *lrp_kind_name(strix_lrp_kind k);

// ---- relevance with explicit weights (BatchNorm merging) ---------------------------------------

/* Linear's relevance (linear.c) with weight w (out, in) and bias b (out, or NULL) in place of
 * its own: the merged Linear+BatchNorm of fold.c. r has the Linear's output shape. */
strix_status lrp_linear_relevance(strix_linear *m, const float *w, const float *b,
                                  const strix_tensor *r, const strix_tensor **r_in);
/* Linear's rule on explicit tensors: input x (..., in) with the shape of the last forward's (NULL:
 * the kept view), weight w (out, in), bias b (out, or NULL), and z = x·Wᵀ + b for exactly these
 * x, w, b when the caller has it (the forward's output, bit for bit; NULL: recomputed). r has the
 * Linear's output shape; *r_in is the Linear's own buffer. The rule is m->base.rule. Attention
 * uses it for c_attn, whose output the forward rotated in place (RoPE). STRIX_ERR_SHAPE,
 * STRIX_ERR_ARG (a bad rule), STRIX_ERR_ALLOC, backend errors. */
strix_status lrp_linear_relevance_ex(strix_linear *m, const strix_tensor *x, const float *w,
                                     const float *b, const float *z, const strix_tensor *r,
                                     const strix_tensor **r_in);
/* Conv2d's relevance (conv2d.c) with weight w (OC, C, kh, kw) and bias b (OC, or NULL) in place
 * of its own. */
strix_status lrp_conv2d_relevance(strix_conv2d *m, const float *w, const float *b,
                                  const strix_tensor *r, const strix_tensor **r_in);
/* Whether children[i] is an eval-mode BatchNorm that fold.c merges into children[i − 1] (a
 * Conv2d, or a Linear with 2-d output, whose width is the BatchNorm's channel count). */
bool lrp_can_merge(strix_module *prev, strix_module *bn);
/* Relevance of prev's input through prev followed by the BatchNorm bn merged into it (Zennit's
 * SequentialMergeBatchNorm): W' = s·W, b' = s·(b − running_mean) + β with s = γ/sqrt(var + eps),
 * computed by the BatchNorm eval primitive as strix_batchnorm_fold does, then prev's rule. r has
 * bn's output shape. Leaves the model unchanged. */
strix_status lrp_merged_relevance(strix_module *prev, strix_module *bn, const strix_tensor *r,
                                  const strix_tensor **r_in);

#endif
