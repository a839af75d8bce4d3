/*
 * strix/lrp.h - Layer-wise Relevance Propagation of any strix_module model (Bach et al. 2015;
 * Montavon et al. 2019): rule presets, composites (a rule per layer, as Zennit 1.0.0 names them),
 * targets, and the explainer that runs forward, seeds the output and walks the modules' relevance
 * slots back to the input.
 *
 * Rules per module (each module's doc in strix/layers.h and strix/nn.h has a line):
 *   Linear, Conv2d       all four rule kinds (strix/nn.h), built as Zennit 1.0.0 builds them
 *   activations, Flatten, Dropout (eval)   pass the relevance on unchanged
 *   Sequential           children in reverse; an eval-mode BatchNorm right after a Conv2d or a
 *                        Linear is merged into it for the explanation (Zennit's
 *                        SequentialMergeBatchNorm canonizer), the model itself is not changed
 *   BatchNorm (not merged)   the epsilon rule of its per-channel affine map
 *   Residual             epsilon split of y = x + f(x) (lrp_residual_split), then f
 *   AvgPool2d, AdaptiveAvgPool2d   epsilon rule of the window means (Zennit's Norm rule)
 *   MaxPool2d            winner takes all (Zennit 1.0.0 leaves max pools to the gradient)
 *   LayerNorm, GroupNorm, RMSNorm   pass-through, or with rule.layer_norm_detach_std the
 *                        epsilon rule of the map with the std held constant (AttnLRP, LXT)
 * A rule a module does not implement is an error returned before any propagation starts
 * (STRIX_ERR_UNSUPPORTED naming the module), never a silent fallback to epsilon.
 * The GPT's AttnLRP is strix_gpt_explain (strix/gpt.h); gradient explainers are in
 * strix/attribution.h.
 */
#ifndef STRIX_LRP_H
#define STRIX_LRP_H

#include "strix/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- rules -------------------------------------------------------------------------------------

/* Epsilon rule, eps (1e-6 is the default everywhere), bias out of the denominator. The rules
 * below start from the same defaults: epsilon 1e-6, gamma 0.25, alpha 1, beta 0, box [0, 1], bias
 * out of the denominator, LayerNorm pass-through. Set rule.bias_in_denominator for Zennit's and
 * LXT's convention. */
STRIX_API strix_lrp_rule strix_lrp_epsilon(float eps);
/* Gamma rule (Zennit Gamma), epsilon 1e-6 as the stabiliser. */
STRIX_API strix_lrp_rule strix_lrp_gamma(float gamma);
/* Alpha-beta rule; alpha − beta must be 1 with both >= 0 (checked when rules are assigned). */
STRIX_API strix_lrp_rule strix_lrp_alpha_beta(float alpha, float beta);
/* z-plus: alpha-beta with alpha 1, beta 0. */
STRIX_API strix_lrp_rule strix_lrp_zplus(void);
/* z-box with input bounds [low, high]. */
STRIX_API strix_lrp_rule strix_lrp_zbox(float low, float high);

// ---- composites --------------------------------------------------------------------------------

/* A composite picks each module's rule. `index` counts leaf modules (modules without children)
 * in forward order from 0; a custom callback returns the rule for (index, module). The presets
 * (Zennit 1.0.0 names) put the bias in the denominator of Linear and Conv2d:
 *   UNIFORM                every Linear and Conv2d gets `rule`
 *   EPSILON_PLUS           Linear: epsilon; Conv2d: z-plus
 *   EPSILON_ALPHA2_BETA1   Linear: epsilon; Conv2d: alpha 2 beta 1
 *   EPSILON_GAMMA_BOX      Linear: epsilon; first Conv2d: z-box [low, high]; other Conv2d: gamma
 *   CUSTOM                 every leaf gets custom(index, module, user)
 * In every kind except CUSTOM's leaves, the modules without weights (pools, norms, activations,
 * containers such as Residual's split) get the epsilon rule with eps = `stabilizer` and the two
 * flags of `rule` (Zennit's Norm rule for pools and sums uses its `stabilizer` 1e-6 too). */
typedef enum strix_lrp_composite_kind {
    STRIX_COMPOSITE_UNIFORM,
    STRIX_COMPOSITE_EPSILON_PLUS,
    STRIX_COMPOSITE_EPSILON_ALPHA2_BETA1,
    STRIX_COMPOSITE_EPSILON_GAMMA_BOX,
    STRIX_COMPOSITE_CUSTOM
} strix_lrp_composite_kind;

typedef struct strix_lrp_composite {
    strix_lrp_composite_kind kind;
    strix_lrp_rule rule;   /* UNIFORM: the rule; presets: the Linear epsilon (rule.epsilon), the
                            * gamma and the box bounds are taken from it */
    float stabilizer;      /* eps of the presets' Conv2d rules and of the weightless modules;
                            * <= 0 means 1e-6 (Zennit's default) */
    strix_lrp_rule (*custom)(int index, const strix_module *m, void *user); /* CUSTOM */
    void *user;
} strix_lrp_composite;

/* UNIFORM with `rule`, stabilizer 1e-6. */
STRIX_API strix_lrp_composite strix_lrp_composite_uniform(strix_lrp_rule rule);
/* A preset with Zennit's defaults: Linear epsilon 1e-6, gamma 0.25, box [0, 1], stabilizer 1e-6
 * (set c.rule.low/high to the data's bounds for EPSILON_GAMMA_BOX). */
STRIX_API strix_lrp_composite strix_lrp_composite_preset(strix_lrp_composite_kind kind);
/* CUSTOM with the callback; containers get epsilon 1e-6. */
STRIX_API strix_lrp_composite strix_lrp_composite_custom(
    strix_lrp_rule (*fn)(int index, const strix_module *m, void *user), void *user);

/* Walks the model's modules in forward order (through the `child` slot), sets each module's rule
 * from the composite and checks that the module has a relevance slot and supports the rule
 * (STRIX_ERR_UNSUPPORTED naming the module and rule) and that the rule is valid
 * (STRIX_ERR_ARG: alpha − beta != 1, negative alpha/beta/eps/gamma, low > high, a non-finite
 * value). Nothing is changed when it fails. STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_lrp_assign(strix_module *model, const strix_lrp_composite *c);
/* The same checks on the rules the modules hold now (strix_lrp_explain runs it first); a module
 * whose rule was never assigned (all zero, as built) is STRIX_ERR_ARG. */
STRIX_API strix_status strix_lrp_check(strix_module *model);

// ---- targets and the explainer -----------------------------------------------------------------

/* What is explained at the output (batch, classes). */
typedef enum strix_lrp_seed {
    STRIX_LRP_SEED_LOGIT,   /* R_out = the target logit's value (default) */
    STRIX_LRP_SEED_ONE_HOT  /* R_out = 1 at the target (Zennit/LXT convention) */
} strix_lrp_seed;

typedef struct strix_lrp_target {
    strix_lrp_seed seed;
    const int32_t *classes; /* host (batch): the class explained per example; NULL: the predicted
                             * class (argmax, ties to the lower index) */
    int n_extra;            /* further classes explained together for every example (seeded the
                             * same way; one already seeded is not seeded twice) */
    const int32_t *extra;   /* host (n_extra) */
    int32_t contrast;       /* -1: none; else this class is seeded with minus its seed value
                             * (explains class A minus class B). NOTE: 0 is class 0; start from
                             * strix_lrp_target_default() */
} strix_lrp_target;

/* LOGIT seed, predicted class, no extra classes, no contrast. */
STRIX_API strix_lrp_target strix_lrp_target_default(void);

/* The result of an explanation: relevance has the input's shape, in host memory owned by the
 * struct. */
typedef struct strix_lrp_explanation {
    int ndim;
    int64_t shape[STRIX_MAX_DIMS];
    float *relevance;          /* host, numel(shape) */
    int32_t *predicted;        /* host (batch): argmax class per example */
    int64_t batch, classes;    /* the output's shape */
    double relevance_out_sum;  /* Σ of the seeded output relevance */
    double relevance_in_sum;   /* Σ of the input relevance (ascending, in double) */
} strix_lrp_explanation;

/* Explains model(x): eval-mode forward of x (batch, ...), output (batch, classes), seed per
 * `target` (NULL: strix_lrp_target_default()), relevance through every module with the rules set
 * by strix_lrp_assign (call it first; BatchNorm merging as above). The training flags of the
 * model's BatchNorm and Dropout modules are restored on return. Overwrites the modules' cached
 * activations (a later backward needs a new forward). Errors (out is then zeroed): those of
 * strix_lrp_check before anything runs, STRIX_ERR_SHAPE if the output is not (batch, classes),
 * STRIX_ERR_ARG for a class out of range or a contrast equal to a seeded class,
 * STRIX_ERR_NUMERIC for a non-finite seeded logit or input relevance, STRIX_ERR_ALLOC, backend
 * errors. */
STRIX_API strix_status strix_lrp_explain(strix_module *model, const strix_tensor *x,
                                         const strix_lrp_target *target,
                                         strix_lrp_explanation *out);
/* strix_lrp_explain in the general form (strix_module_io, strix/nn.h): the input is either one
 * float tensor (in->in[0], n_in 1) or int32 ids (in->ids, n_in 0; e.g. a Sequential headed by
 * an Embedding), the output the model's one out[0] (batch, classes); the relevance has the
 * input's shape (one value per id for ids; Embedding sums its row's relevance). A mask and a
 * state are passed to the model unchanged. strix_lrp_explain(model, x, ...) is this with
 * strix_module_io_of(x). Statuses as strix_lrp_explain, plus STRIX_ERR_ARG for an io that is
 * neither one float input nor ids, and STRIX_ERR_SHAPE for a model with several outputs. */
STRIX_API strix_status strix_lrp_explain_ex(strix_module *model, const strix_module_io *in,
                                            const strix_lrp_target *target,
                                            strix_lrp_explanation *out);
/* Frees the host arrays and zeroes the struct. NULL is a no-op. */
STRIX_API void strix_lrp_explanation_free(strix_lrp_explanation *e);

#ifdef __cplusplus
}
#endif
#endif
